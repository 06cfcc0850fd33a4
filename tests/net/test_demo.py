"""`moonshot demo --quick`, the README's first command, end to end as a user runs it."""

from __future__ import annotations

import re
import socket
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from stack import env, moonshot


@pytest.mark.slow
def test_demo_quick_runs_end_to_end(tmp_path: Path) -> None:
    """It brings up its own stack and bot processes, plays a round robin and a bracket, prints
    the standings, the bracket with its champion and both ratings tables, exits 0 and leaves
    nothing running behind it."""
    start = time.monotonic()
    res = subprocess.run(moonshot("demo", "--quick"), env=env(), capture_output=True, text=True,
                         timeout=300, check=False, cwd=tmp_path)
    took = time.monotonic() - start
    out = res.stdout.replace("\r", "\n")
    assert res.returncode == 0, out[-3000:] + res.stderr[-3000:]
    print(f"\nmoonshot demo --quick took {took:.0f} s")

    bots = ["greedy-1", "greedy-2", "greedy-3", "highest-1", "highest-2", "random-1",
            "random-2"]
    # 3p round robin of 7 bots on boards: 7 rounds of 2 disjoint tables (each bot at 6).
    table = re.search(r"standings \(14 games\)\n(.*?)\n\n", out, re.S)
    assert table, out
    rows = re.findall(r"^\s+\d+\s+(\S+)\s+(\d+)\s", table.group(1), re.M)
    assert sorted(b for b, _ in rows) == bots and {g for _, g in rows} == {"6"}, rows
    # Head to head: every bot a row, "x" against itself, each pair's games ahead-behind.
    h2h = re.search(r"head to head [^\n]*\n[^\n]*\n(.*?)\n\n", out, re.S)
    assert h2h, out
    cells = [line.split()[2:] for line in h2h.group(1).splitlines()]
    assert len(cells) == 7 and all(row[i] == "x" for i, row in enumerate(cells)), h2h.group(0)
    for i in range(7):
        for j in range(7):
            if i != j:  # every pair met at two tables
                ahead, behind = map(int, cells[i][j].split("-"))
                assert (behind, ahead) == tuple(map(int, cells[j][i].split("-")))
                assert ahead + behind <= 2  # two meetings; a shared place counts for neither
    # The bracket: a bye for the top seed, then a champion who is one of the bots.
    assert out.count("(bye)") == 1 and out.count("bye ->") == 1, out
    champion = re.search(r"^champion: (\S+)$", out, re.M)
    assert champion and champion.group(1) in bots, out
    for title, model in (("ratings, 3p pool", "Plackett-Luce"),
                         ("ratings, 2v2 pool", "Bradley-Terry")):
        block = out[out.index(title):].split("\n\n")[0]
        rated = re.findall(r"^\s+\d+\s+(\S+)\s+-?\d+\s+(?:\[|not enough games yet)", block,
                           re.M)
        assert sorted(rated) == bots, block
        assert f"({model} MAP" in block and "provisional" not in block, block
    assert "; 14 games, 7 boards at " in out
    # It ends with what to do next, not with dead links: the pages went with the demo.
    ending = out[out.rindex("\nstopped\n"):]
    assert "The demo's pages went with it" in ending
    for step in ("moonshot demo --keep", "examples/highest_bot.py", "moonshot selfplay",
                 "moonshot up", "moonshot bot register"):
        assert step in ending, ending

    # Nothing left behind: its Redis (data under the temp folder) and its referee are gone.
    data = re.search(r"data in (\S+)\)", out)
    address = re.search(r"referee listening on (\S+):(\d+)", out)
    assert data and address, out
    assert not Path(data.group(1)).exists()
    stray = [p.pid for p in psutil.process_iter(["cmdline"])
             if any(data.group(1) in part for part in p.info["cmdline"] or ())]
    assert not stray, f"processes of the demo still running: {stray}"
    with pytest.raises(OSError):
        socket.create_connection((address.group(1), int(address.group(2))), timeout=2).close()
