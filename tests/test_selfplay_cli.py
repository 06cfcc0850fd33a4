"""`moonshot selfplay`: the summary, one-line usage errors, transcripts, determinism;
and the built-in greedy bot beating the random one.

Every usage error is checked in-process through `clients.cli.main` (fast); a
representative few, and the determinism runs, go through the installed
`moonshot` entry point as real subprocesses, started together to keep the suite
quick on two cores (each process pays the CLI's import time).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_transcript import assert_transcript_shape

from clients.builtin import GreedyBot, RandomBot
from clients.cli import main
from clients.selfplay import selfplay
from moon import Rules
from moon.transcript import read_jsonl, replay

ROOT = Path(__file__).resolve().parent.parent
MOONSHOT = Path(sys.executable).parent / "moonshot"


def _start(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([str(MOONSHOT), *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


BAD: dict[str, tuple[list[str], str]] = {
    "players": (["selfplay", "--players", "5"], "--players"),
    "games zero": (["selfplay", "--games", "0"], "--games"),
    "games not a number": (["selfplay", "--games", "ten"], "--games"),
    "games missing value": (["selfplay", "--games"], "--games"),
    "negative seed": (["selfplay", "--seed", "-1"], "--seed"),
    "too few bots": (["selfplay", "--bots", "random,greedy"], "--bots"),
    "unknown bot": (["selfplay", "--bots", "random,clever,greedy"], "clever"),
    "bot module missing": (["selfplay", "--bots", "no_such_mod:Bot,greedy,greedy"],
                           "no_such_mod"),
    "not a bot class": (["selfplay", "--bots", "os:path,greedy,greedy"], "os:path"),
    "bad option value": (["selfplay", "--rule", "min_bid=6"], "min_bid"),
    "unknown option": (["selfplay", "--rule", "trumps=6"], "trumps"),
    "option without value": (["selfplay", "--rule", "min_bid"], "KEY=VALUE"),
    "max_hands zero": (["selfplay", "--rule", "max_hands=0"], "max_hands"),
    "4p without 0-0": (["selfplay", "--players", "4", "--rule", "double_blank=false"],
                       "double_blank"),
    "trump before no widow": (["selfplay", "--rule", "double_blank=false", "--rule",
                               "trump_before_widow=true"], "trump_before_widow"),
    "unwritable out": (["selfplay", "--out", "/nonexistent-dir/x/games.jsonl"], "--out"),
    "unknown flag": (["selfplay", "--frobnicate"], "--frobnicate"),
    "no command": ([], "command"),
    "unknown command": (["dance"], "dance"),
}


# The cases that also run as real processes, to see the entry point print no traceback.
BAD_IN_A_PROCESS = ["players", "unknown option", "no command"]


@pytest.fixture(scope="module")
def bad_runs() -> dict[str, tuple[int, str, str]]:
    procs = {name: _start(BAD[name][0]) for name in BAD_IN_A_PROCESS}
    return {name: _finish(p) for name, p in procs.items()}


def _check_usage_error(code: int, out: str, err: str, needle: str) -> None:
    assert code == 2, (code, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and lines[0].startswith("moonshot")
    assert needle in lines[0]


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_flags_give_one_line_and_exit_code_2(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args, needle = BAD[name]
    code = main([*args, "--quiet"] if args[:1] == ["selfplay"] and args[-1] != "--games"
                else args)
    captured = capsys.readouterr()
    _check_usage_error(code, captured.out, captured.err, needle)


@pytest.mark.parametrize("name", BAD_IN_A_PROCESS)
def test_bad_flags_in_a_real_process(name: str,
                                     bad_runs: dict[str, tuple[int, str, str]]) -> None:
    _check_usage_error(*bad_runs[name], BAD[name][1])


def test_bad_option_lists_what_is_allowed(bad_runs: dict[str, tuple[int, str, str]],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(BAD["bad option value"][0]) == 2
    assert "3, 4, 5" in capsys.readouterr().err
    err = bad_runs["unknown option"][2]
    for option in ("target", "min_bid", "all_pass", "double_blank", "max_hands"):
        assert option in err


def _summary_rows(out: str) -> dict[int, tuple[str, int, int, float]]:
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^(\d)\s+(\S+)\s+(\d+)\s+[\d.]+%\s+(\d+)\s+(-?[\d.]+)$", line)
        if m:
            rows[int(m[1])] = (m[2], int(m[3]), int(m[4]), float(m[5]))
    return rows


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("selfplay")
    common = ["selfplay", "--games", "5", "--seed", "40", "--bots", "random,greedy,greedy"]
    procs = {
        "a": _start([*common, "--quiet", "--out", str(d / "a.jsonl")]),
        "b": _start([*common, "--out", str(d / "b.jsonl")]),  # no --quiet, not a tty
        "other seed": _start(["selfplay", "--games", "5", "--seed", "41", "--bots",
                              "random,greedy,greedy", "--quiet", "--out", str(d / "c.jsonl")]),
    }
    return {"dir": d, **{k: _finish(p) for k, p in procs.items()}}


def test_summary(runs: dict[str, Any]) -> None:
    code, out, err = runs["a"]
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert re.match(r"^games: 5 +hands/game: [\d.]+ +hand-limit ends: \d+ +games/s: [\d.]+$",
                    lines[0]), lines[0]
    assert "wins" in lines[1] and "mean final" in lines[1]
    rows = _summary_rows(out)
    assert [rows[s][0] for s in range(3)] == ["random", "greedy", "greedy"]
    assert any(line.startswith("per bot") for line in lines)  # greedy sits twice
    assert lines[-1] == f"transcripts: {runs['dir'] / 'a.jsonl'}"
    # The summary agrees with the transcripts it wrote.
    records = list(read_jsonl(runs["dir"] / "a.jsonl"))
    for seat in range(3):
        wins = sum(r["winner"] == seat for r in records)
        draws = sum(r["winner"] is None for r in records)
        mean = sum(r["final"][seat] for r in records) / len(records)
        assert rows[seat][1:] == (wins, draws, pytest.approx(mean, abs=0.05))
    hands = sum(len(r["hands"]) for r in records) / len(records)
    assert f"hands/game: {hands:.1f}" in lines[0]


def test_out_writes_one_valid_transcript_per_game(runs: dict[str, Any]) -> None:
    records = list(read_jsonl(runs["dir"] / "a.jsonl"))
    assert [r["seed"] for r in records] == [40, 41, 42, 43, 44]
    for r in records:
        assert_transcript_shape(r)
        assert r["seats"] == ["random", "greedy", "greedy"]
        replay(r)



def test_four_players(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "4p.jsonl"
    assert main(["selfplay", "--players", "4", "--games", "3", "--seed", "2", "--bots",
                 "greedy,random,greedy,random", "--rule", "scoring=marks", "--quiet",
                 "--out", str(out)]) == 0
    four = list(read_jsonl(out))
    assert len(four) == 3
    for r in four:
        assert_transcript_shape(r)
        assert r["rules"]["scoring"] == "marks" and r["players"] == 4
        replay(r)
    rows = _summary_rows(capsys.readouterr().out)
    # Partners share a result: seats 0 and 2 win the games team 0 wins.
    assert rows[0][1] == rows[2][1] == sum(r["winner"] == 0 for r in four)
    assert rows[1][1] == rows[3][1] == sum(r["winner"] == 1 for r in four)


def test_same_seed_same_files(runs: dict[str, Any]) -> None:
    a = (runs["dir"] / "a.jsonl").read_bytes()
    assert a == (runs["dir"] / "b.jsonl").read_bytes()
    assert a != (runs["dir"] / "c.jsonl").read_bytes()
    # Game k of seed 40 is game k-1 of seed 41.
    assert a.splitlines()[1:] == (runs["dir"] / "c.jsonl").read_bytes().splitlines()[:4]
    code, out, err = runs["b"]
    assert code == 0 and err == "", "no progress bar when stderr is not a terminal"
    assert out.splitlines()[1:-1] == runs["a"][1].splitlines()[1:-1]


def test_help_lists_the_rules_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["selfplay", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for option in ("target", "min_bid", "all_pass", "double_blank", "trump_before_widow",
                   "scoring", "marks_target", "moon_wins", "max_hands"):
        assert option in out


def test_out_appends(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "games.jsonl"
    args = ["selfplay", "--games", "1", "--seed", "9", "--quiet", "--out", str(out)]
    assert main(args) == 0
    assert main(args) == 0
    capsys.readouterr()
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and lines[0] == lines[1]


def test_greedy_beats_random_clearly() -> None:
    # 60 three-player games, the random bot sitting in each seat for 20 of them.
    rules = Rules()
    random_wins = greedy_wins = 0
    for seat in range(3):
        classes: list[type[RandomBot] | type[GreedyBot]] = [GreedyBot] * 3
        classes[seat] = RandomBot
        names = ["random" if s == seat else "greedy" for s in range(3)]
        report = selfplay(rules, classes, names, 20, 500 + 20 * seat)
        random_wins += report.seats[seat].wins
        greedy_wins += sum(st.wins for s, st in enumerate(report.seats) if s != seat)
    # A fair seat would win 1/3 of the games (20); greedy seats, two per game, 40.
    assert random_wins <= 6, random_wins
    assert greedy_wins >= 50, greedy_wins
    # And one greedy against two random bots wins most games.
    report = selfplay(rules, [RandomBot, GreedyBot, RandomBot], ["random", "greedy", "random"],
                      15, 900)
    assert report.seats[1].wins >= 12, report.lines()
