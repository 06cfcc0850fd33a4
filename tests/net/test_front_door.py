"""The front door, tried as a new user would, with the real `moonshot` commands on the real
stack: a tournament followed while its boards are in play (games played and in play
counted, what is hidden said, with and without the admin token), tournaments listed and
found by name, web pages linked, bots not connected named, forfeits named and never a
draw, transcripts where the README says, typos answered with the names close to them.

Fair play holds throughout: without the admin token, nothing printed about a game whose
board is in play goes beyond its status and its board's counts.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from stack import ROOT, Proc, Stack, env, moonshot
from support import PoolBot, wait_until
from test_web_pages import _start_web

from clients.admin import Admin
from clients.sdk import register
from proto.moon.v1 import tournament_pb2

RUNNING = tournament_pb2.TOURNAMENT_STATUS_RUNNING


@pytest.fixture(scope="module")
def web(stack: Stack) -> Iterator[str]:
    """`moonshot web` for the session's referee: the pages the commands link to."""
    proc, url = _start_web(stack, stack.address, "web-front-door")
    yield url
    proc.stop()


class Cli:
    """Runs `moonshot ...` against the session's referee in a folder of its own (so that no
    saved admin token is found by accident), with or without the admin token."""

    def __init__(self, stack: Stack, folder: Path) -> None:
        self.stack = stack
        self.folder = folder

    def env(self, admin: bool, web: str = "") -> dict[str, str]:
        e = env(MOONSHOT_DATA=str(self.folder / "moonshot-data"), MOONSHOT_WEB=web)
        if admin:
            e["MOONSHOT_ADMIN_TOKEN"] = self.stack.admin_token
        else:
            e.pop("MOONSHOT_ADMIN_TOKEN", None)
        return e

    def run(self, *args: str, admin: bool = False, web: str = "", timeout: float = 120
            ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(moonshot(*args, "--server", self.stack.address),
                              env=self.env(admin, web), cwd=self.folder, capture_output=True,
                              text=True, timeout=timeout, check=False)

    def start(self, name: str, *args: str, admin: bool = False) -> Proc:
        self.stack.counter += 1
        log = self.stack.workdir / f"{self.stack.counter:03d}-{name}.log"
        with open(log, "wb") as fh:
            popen = subprocess.Popen(moonshot(*args, "--server", self.stack.address),
                                     stdout=fh, stderr=subprocess.STDOUT, cwd=self.folder,
                                     env=self.env(admin))
        proc = Proc(name, popen, log)
        self.stack.procs.append(proc)
        return proc


@pytest.fixture
def cli(stack: Stack, tmp_path: Path) -> Cli:
    return Cli(stack, tmp_path)


def _ok(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    return res.stdout


FIVE = ("greedy1", "greedy2", "greedy3", "random1", "random2")


def test_a_tournament_followed_while_its_boards_are_in_play(
        stack: Stack, cli: Cli, pool: dict[str, PoolBot], admin: Admin, web: str,
        name: str) -> None:
    """Six bots, one of them registered but not running: each round, its table waits for
    it (the grace is long) while the other table finishes, so games are played and none
    is public. The commands count them anyway, and say why the results are hidden."""
    late_id, late_token = register(stack.address, f"{name}-late")
    bots = ",".join([*(pool[k].name for k in FIVE), f"{name}-late"])
    title = f"{name} night"
    out = cli.run("tournament", "create", "--name", title, "--bots", bots, "--rule",
                  "max_hands=3", "--disconnect-grace", "10m", admin=True, web=web)
    created = _ok(out)
    tid = re.search(r"tournament (t-\w+) created", created).group(1)  # type: ignore[union-attr]
    assert f"web page: {web}/t/{tid}" in created
    assert f"warning: 1 bot not connected now: {name}-late" in out.stderr
    assert "--disconnect-grace (10m)" in out.stderr

    anyone = Admin(stack.address, None)
    try:
        total = wait_until("the schedule", lambda: anyone.get_tournament(tid).matches_total)
        assert total == 20  # 10 rounds of 2 tables
        wait_until("a game played", lambda: anyone.get_tournament(tid).matches_done >= 2,
                   timeout=60)
        st = anyone.standings(tid)
        assert st.matches_done == 0 and all(r.games == 0 for r in st.rows)  # nothing public
        in_play = [b for b in st.boards_in_play if b.games_finished]
        assert in_play and all((b.games, b.games_finished) == (2, 1) for b in in_play)
        assert all(b.board.startswith(f"{tid}/x1-r") for b in st.boards_in_play)

        # show, without the token: played of the total, none public, the boards' counts.
        shown = _ok(cli.run("tournament", "show", title)).splitlines()[0]
        played = int(re.search(rf"running, (\d+) of {total} games played", shown)
                     .group(1))  # type: ignore[union-attr]
        assert played >= 2 and "0 public (a result is public once every table" in shown
        assert re.search(r"boards in play \(tables done\): round \d 1 of 2", shown), shown
        # ... with it: the standings count every game played.
        organiser = _ok(cli.run("tournament", "show", tid, admin=True))
        games = [int(g) for g in re.findall(r"^\s+\d+\s+\S+\s+(\d+)\s", organiser, re.M)]
        assert sum(games) >= 3 * played, organiser

        # watch, without the token: a bar of games played and in play, and a note on what
        # is hidden; it follows (the tournament runs on) until stopped.
        watcher = cli.start("watch-public", "tournament", "watch", title)
        bar = watcher.wait_for(rf"(\d+)/{total} games played, (\d+) in play, 0 public",
                               timeout=60)
        assert int(bar.group(1)) >= 2
        assert "note: without the admin token, results are public a board at a time" in \
            watcher.text()
        assert watcher.alive()
        watcher.stop(signal.SIGINT)

        # The late bot comes: the tournament ends, each board released whole.
        cli.stack.bot("greedy", stack.address, late_token)
        wait_until("the tournament to finish",
                   lambda: anyone.get_tournament(tid).status != RUNNING, timeout=120, every=0.2)
    finally:
        anyone.close()

    # watch of a finished tournament: its result at once, no bar replayed.
    start = time.monotonic()
    res = cli.run("tournament", "watch", title)
    text = _ok(res) + res.stderr
    assert "games played" not in text and f"final standings of {title}" in text
    assert time.monotonic() - start < 30
    listed = _ok(cli.run("tournament", "list", "--limit", "50"))
    assert re.search(rf"^{tid}\s+finished\s+20/20\s+3p round robin\s+6 .*{title}$", listed,
                     re.M), listed
    final = anyone_standings(stack, tid)
    assert final.matches_done == 20 and not final.boards_in_play
    assert late_id in [r.bot_id for r in final.rows]


def anyone_standings(stack: Stack, tid: str) -> tournament_pb2.Standings:
    a = Admin(stack.address, None)
    try:
        return a.standings(tid)
    finally:
        a.close()


def test_tournaments_by_name_and_bots_not_connected(
        stack: Stack, cli: Cli, pool: dict[str, PoolBot], name: str) -> None:
    bots = ",".join(pool[k].name for k in ("greedy1", "greedy2", "greedy3"))
    title = f"{name} cup"
    ids = []
    for _ in range(2):
        out = _ok(cli.run("tournament", "create", "--name", title, "--bots", bots, "--rule",
                          "max_hands=1", admin=True))
        ids.append(re.search(r"tournament (t-\w+) created", out).group(1))  # type: ignore[union-attr]
    # The name finds the newest, and says that another has it too; case does not matter.
    res = cli.run("tournament", "show", title.upper())
    assert res.stdout.startswith(f"{title} ({ids[1]})"), res.stdout
    assert f"note: 2 tournaments are named {title.upper()!r}: this is the newest, {ids[1]}" \
        in res.stderr
    a = Admin(stack.address, None)
    try:
        for tid in ids:
            wait_until("the cup to end", lambda tid=tid: a.get_tournament(tid).status != RUNNING,
                       timeout=120, every=0.2)
    finally:
        a.close()
    res = cli.run("tournament", "show", f"{name} cpu")
    assert res.returncode == 1 and res.stderr.count("\n") == 1, res.stderr
    assert f"no tournament with id or name '{name} cpu'; close: '{title}'" in res.stderr

    # A bot that is registered but not running: --require-online creates nothing.
    absent = f"{name}-absent"
    register(stack.address, absent)
    before = _ok(cli.run("tournament", "list", "--limit", "1000")).count("\n")
    res = cli.run("tournament", "create", "--name", f"{name} never", "--bots",
                  f"{bots},{absent}", "--require-online", admin=True)
    assert res.returncode == 1 and res.stderr.count("\n") == 1, res.stderr
    assert f"--require-online: 1 bot not connected now: {absent}; nothing created" in res.stderr
    assert _ok(cli.run("tournament", "list", "--limit", "1000")).count("\n") == before

    # A typo in a bot's name lists the registered names close to it.
    res = cli.run("tournament", "create", "--name", "typo", "--bots",
                  f"{bots},{absent[:-1]}x", admin=True)
    assert res.returncode == 1 and res.stderr.count("\n") == 1, res.stderr
    assert f"registered bots close to it: {absent}" in res.stderr


def test_a_forfeit_is_named_never_a_draw_and_the_transcript_goes_to_the_data_folder(
        stack: Stack, cli: Cli, pool: dict[str, PoolBot], web: str, name: str) -> None:
    """A bot that never connects forfeits after the grace, at 0-0-0: the other two share
    first place, and everything says it was a forfeit."""
    absent = f"{name}-gone"
    register(stack.address, absent)
    res = cli.run("match", "play", "--bots", f"{pool['greedy1'].name},{absent},"
                  f"{pool['greedy2'].name}", "--disconnect-grace", "1s", "--rule",
                  "max_hands=3", admin=True, web=web)
    out = _ok(res)
    mid = re.search(r"match (m-\w+) queued", out).group(1)  # type: ignore[union-attr]
    assert f"web page: {web}/game/{mid}" in out
    assert f"forfeit: seat 1 ({absent}) lost by forfeit: disconnected" in out
    assert (f"won by forfeit: {pool['greedy1'].name} and {pool['greedy2'].name}, level: they "
            "share first place (half a win each)") in out
    assert "draw" not in out
    path = cli.folder / "moonshot-data" / "transcripts" / f"{mid}.jsonl"
    assert f"transcript: {path.relative_to(cli.folder)}" in out or f"transcript: {path}" in out
    assert path.read_text().startswith("{")
    assert not list(cli.folder.glob("*.jsonl"))  # nothing left in the current folder
    # git keeps it out of a checkout, where the README runs these commands.
    ignored = subprocess.run(["git", "check-ignore", "-q",
                              f"moonshot-data/transcripts/{mid}.jsonl"], cwd=ROOT, check=False)
    assert ignored.returncode == 0

    # In a tournament's standings the two level after the forfeit won by it (FW), not D.
    res = cli.run("tournament", "create", "--name", f"{name} ff", "--bots",
                  f"{pool['greedy1'].name},{absent},{pool['greedy2'].name}",
                  "--disconnect-grace", "1s", "--rule", "max_hands=1", "--duplicate", "fresh",
                  "--watch", "--quiet", admin=True)
    table = _ok(res)
    head = next(line for line in table.splitlines() if line.lstrip().startswith("#"))
    assert head.split()[:9] == ["#", "bot", "games", "W", "FW", "D", "L", "pts", "score"], head
    rows = {line.split()[1]: line.split()[2:9] for line in table.splitlines()
            if line.lstrip()[:1].isdigit() and len(line.split()) > 9}
    assert len(rows) == 3, table
    for bot in (pool["greedy1"].name, pool["greedy2"].name):
        games, _, fw, draws, _, points, _ = rows[bot]
        assert fw == games != "0" and draws == "0", table
        assert float(points) == int(games) / 2, table
    assert rows[absent][4] == rows[absent][0], table  # every game lost
    assert "FW: won by forfeit, level with another" in table


def test_a_bracket_seeded_by_rating_with_no_rated_bot_says_so(
        stack: Stack, cli: Cli, name: str) -> None:
    names = [f"{name}-s{i}" for i in range(3)]
    for n in names:
        register(stack.address, n)
    out = _ok(cli.run("tournament", "create", "--name", "seeded", "--players", "4", "--format",
                      "single-elimination", "--bots", ",".join(names), "--disconnect-grace",
                      "0s", admin=True))
    assert ("note: --seeding rating: no bot has a rating in the 2v2 pool yet, so the draw "
            "is seeded in the --bots order") in out
    tid = re.search(r"tournament (t-\w+) created", out).group(1)  # type: ignore[union-attr]
    a = Admin(stack.address, None)
    try:
        t = a.get_tournament(tid)
        assert t.spec.seeding == tournament_pb2.SEEDING_GIVEN_ORDER
        assert list(t.spec.bot_ids) == [a.get_bot(n).bot_id for n in names]
        # Nobody plays: every game is forfeited at once. Let it end here, not under the
        # next tests (a listing paged while a scheduler adds games can shift).
        wait_until("the bracket to end", lambda: a.get_tournament(tid).status != RUNNING,
                   timeout=120, every=0.2)
    finally:
        a.close()
    help_text = _ok(cli.run("tournament", "create", "--help"))
    words = " ".join(help_text.split())  # whatever the width the help was wrapped at
    assert "for single elimination, double elimination, Swiss: seeds" in words
    assert "a round robin always seats its bots in --bots order" in words


def _example(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "examples.register_and_run", *args], cwd=ROOT,
                          env=env(), capture_output=True, text=True, timeout=timeout,
                          check=False)


def test_the_register_and_run_example_says_a_refusal_in_one_line(
        stack: Stack, pool: dict[str, PoolBot], name: str) -> None:
    """A name taken, no referee there: one line each, as the CLI says them; a new name
    registers and plays until Ctrl-C."""
    taken = _example(stack.address, pool["greedy1"].name.upper())
    assert taken.returncode == 1 and "Traceback" not in taken.stderr, taken.stderr
    assert taken.stderr.splitlines() == [
        f"register_and_run: cannot register {pool['greedy1'].name.upper()!r}: name: a bot "
        f"named {pool['greedy1'].name.upper()!r} exists already (names ignore case)"], \
        taken.stderr
    nobody = _example("127.0.0.1:1", f"{name}-x")
    assert nobody.returncode == 1 and len(nobody.stderr.splitlines()) == 1, nobody.stderr
    assert "no referee at 127.0.0.1:1" in nobody.stderr and "moonshot up" in nobody.stderr
    stack.counter += 1
    log = stack.workdir / f"{stack.counter:03d}-example.log"
    with open(log, "wb") as fh:
        popen = subprocess.Popen([sys.executable, "-m", "examples.register_and_run",
                                  stack.address, f"{name}-example"], cwd=ROOT, env=env(),
                                 stdout=fh, stderr=subprocess.STDOUT)
    proc = Proc("example", popen, log)
    stack.procs.append(proc)
    proc.wait_for(rf"registered {name}-example as b-\w+; token \(keep it\): \S+")
    proc.wait_for("connected to ")
    assert proc.stop(signal.SIGINT) == 0 and "Traceback" not in proc.text(), proc.text()


def test_ctrl_c_of_a_bot_finishes_its_games_and_a_second_leaves_naming_the_forfeit(
        stack: Stack, pool: dict[str, PoolBot], admin: Admin, name: str) -> None:
    """Ctrl-C in the middle of a game: the bot says which game it finishes, plays it to its
    end (no forfeit), then stops. Twice: it leaves at once and says what it forfeits, and
    the game is forfeited after the grace."""
    g1, g2 = pool["greedy1"], pool["greedy2"]
    for presses in (1, 2):
        bot_id, token = register(stack.address, f"{name}-ctrlc{presses}")
        proc = stack.bot("netbots:ThinkingBot", stack.address, token)
        mid = admin.create_match(3, [g1.bot_id, bot_id, g2.bot_id], seed=40 + presses,
                                 rules={"max_hands": "2"}, grace_ms=2000).match_id
        proc.wait_for(rf"match {mid} started")
        time.sleep(0.5)  # a decision or two into the game
        proc.popen.send_signal(signal.SIGINT)
        proc.wait_for(rf"Ctrl-C: finishing the game under way \({mid}\) and taking no new "
                      r"arena games; Ctrl-C again to leave now \(it would be forfeited\)")
        if presses == 1:
            assert proc.alive()
            assert proc.popen.wait(120) == 0, proc.text()
            text = proc.text()
            assert f"match {mid} ended" in text and "the games under way at Ctrl-C are " \
                "over: stopping" in text, text
            m = admin.wait_match(mid, timeout=30)
            assert m.result.end != "forfeit", m.result
        else:
            started = time.monotonic()
            proc.popen.send_signal(signal.SIGINT)
            assert proc.popen.wait(30) == 0, proc.text()
            assert time.monotonic() - started < 10
            assert (f"Ctrl-C again: leaving now; the game under way ({mid}) is forfeited "
                    "after its disconnect grace (2 s) unless the bot comes back") \
                in proc.text(), proc.text()
            m = admin.wait_match(mid, timeout=60)
            assert m.result.end == "forfeit" and m.result.forfeit.seat == 1, m.result
            assert "disconnected" in m.result.forfeit.reason
        assert "Traceback" not in proc.text(), proc.text()
