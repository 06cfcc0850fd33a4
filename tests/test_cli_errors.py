"""Bad flags, bad settings and misbehaving bots: one clear line naming the culprit, no traceback.

Every case runs the real command as a subprocess. The cases that need nothing running
start together (each process pays the CLI's import time; two cores). The few that need
a live referee or Redis use a real redis-server and a real `moonshot referee`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from clients import flags
from clients.commands import rules_options
from clients.format_options import parse_flag
from clients.parser import UsageError
from clients.redisproc import RedisServer, free_port
from clients.stack import LocalStack, start_child
from moon import Rules
from moon.deal import MAX_SEED
from store.errors import InvalidArgument
from store.records import Clock, Faults, TournamentSpec
from tournaments import formats

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "adm.test-" + uuid.uuid4().hex


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MOONSHOT_") and k != "REDIS_URL"}
    env["PYTHONPATH"] = str(ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def _start(args: list[str], cwd: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "clients.cli", *args], cwd=cwd,
                            env=_env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str, str]:
    """Its exit code and output; one still running at `timeout` (a bug: say, a stack that
    started) is stopped with everything it started, and reported as exit code -1."""
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        kids = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGINT)  # `up` and `demo` stop their stack on SIGINT
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        _, alive = psutil.wait_procs(kids, timeout=30)
        for p in alive:
            p.kill()
        return -1, out, err


def _run(args: list[str], cwd: Path, timeout: float = 60, **env: str) -> tuple[int, str, str]:
    return _finish(_start(args, cwd, **env), timeout)


def _check_one_line(result: tuple[int, str, str], code: int, *needles: str) -> str:
    rc, _, err = result
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert rc == code, (rc, err)
    assert lines[0].startswith("moonshot"), err
    for needle in needles:
        assert needle in lines[0], (needle, err)
    return lines[0]


MP = ["match", "play", "--bots", "a,b,c"]
TC = ["tournament", "create", "--name", "t", "--bots", "a,b,c"]
SE = ["--format", "single-elimination"]
BR = ["bot", "run", "--bot", "random", "--token", "tok"]
SP = ["selfplay", "--quiet", "--games", "3", "--seed", "7"]

# name -> (argv, extra environment, cwd under the work folder, exit code, needles)
Case = tuple[list[str], dict[str, str], str, int, tuple[str, ...]]
CASES: dict[str, Case] = {
    # 1: numbers the referee would refuse, or protobuf could not even hold
    "play seed -1": ([*MP, "--seed", "-1"], {}, "", 2, ("--seed", f"0 to {MAX_SEED}")),
    "play seed huge": ([*MP, "--seed", "99999999999999999999999"], {}, "", 2, ("--seed",)),
    "play strikes -1": ([*MP, "--max-strikes", "-1"], {}, "", 2, ("--max-strikes", "1 to 1000")),
    "play move huge": ([*MP, "--time-per-move", "999999999999999999999999"], {}, "", 2,
                       ("--time-per-move", "1ms to 10m")),
    "play move 0": ([*MP, "--time-per-move", "0"], {}, "", 2, ("--time-per-move",)),
    "play move 0.0001s": ([*MP, "--time-per-move", "0.0001s"], {}, "", 2, ("--time-per-move",)),
    "play move 11m": ([*MP, "--time-per-move", "11m"], {}, "", 2, ("--time-per-move",)),
    "play bank 61m": ([*MP, "--time-bank", "61m"], {}, "", 2, ("--time-bank", "0s to 60m")),
    "play grace text": ([*MP, "--disconnect-grace", "soon"], {}, "", 2, ("--disconnect-grace",)),
    "tour seed -1": ([*TC, "--seed", "-1"], {}, "", 2, ("--seed",)),
    "tour rounds -1": ([*TC, "--rounds", "-1"], {}, "", 2, ("--rounds", "1 to 100")),
    "tour rounds 0": ([*TC, "--rounds", "0"], {}, "", 2, ("--rounds",)),
    "tour rounds 101": ([*TC, "--rounds", "101"], {}, "", 2, ("--rounds",)),
    "tour series -3": ([*TC, *SE, "--series", "-3"], {}, "", 2, ("--series", "odd", "1 to 99")),
    "tour series 0": ([*TC, *SE, "--series", "0"], {}, "", 2, ("--series",)),
    "tour series even": ([*TC, *SE, "--series", "4"], {}, "", 2, ("--series", "odd")),
    "tour series rr": ([*TC, "--series", "3"], {}, "", 2,
                       ("--series", "not an option of --format round-robin")),
    # every format is named, in any case: the error lists them all, swiss too
    "tour format typo": ([*TC, "--format", "swis"], {}, "", 2,
                         ("--format 'swis' is not a format", "round-robin, single-elimination, "
                          "double-elimination, swiss", "rr (round-robin)")),
    "tour format Swiss": ([*TC, "--format", " Swiss"], {}, "", 2, ("needs the admin token",)),
    "tour format SINGLE": ([*TC, "--format", "Single_Elimination", "--series", "3"], {}, "", 2,
                           ("needs the admin token",)),
    "tour strikes -1": ([*TC, "--max-strikes", "-1"], {}, "", 2, ("--max-strikes",)),
    "tour move huge": ([*TC, "--time-per-move", "999999999999999999999999"], {}, "", 2,
                       ("--time-per-move",)),
    # 2: --timeout must be above 0
    "timeout 0": ([*MP, "--timeout", "0"], {}, "", 2, ("--timeout", "above 0")),
    "timeout nan": ([*MP, "--timeout", "nan"], {}, "", 2, ("--timeout",)),
    # 3: --out that cannot be written, refused before any request
    "show out no folder": (["match", "show", "m-1", "--out", "/nonexistent/x"], {}, "", 2,
                           ("--out", "/nonexistent")),
    "show out a folder": (["match", "show", "m-1", "--out", "."], {}, "", 2,
                          ("--out", "folder")),
    "play out no folder": ([*MP, "--out", "/nonexistent/x"], {}, "", 2, ("--out",)),
    "list since words": (["match", "list", "--since", "yesterday"], {}, "", 2,
                         ("--since", "ISO date")),
    "list event kind": (["match", "list", "--event", "league:x"], {}, "", 2, ("--event",)),
    "list backwards": (["match", "list", "--since", "2026-02-01", "--until", "2026-01-01"],
                       {}, "", 2, ("--until", "not after")),
    "list limit 0": (["match", "list", "--limit", "0"], {}, "", 2, ("--limit",)),
    # 4
    "threads -1": ([*BR, "--threads", "-1"], {}, "", 2, ("--threads", "0 to")),
    "bot run arena 4p": ([*BR, "--arena", "4p"], {}, "", 2, ("--arena", "'4p'")),
    # the arena's pool: by position or --pool, one of the two pools, once
    "arena no pool": (["arena", "show"], {}, "", 2, ("arena show", "no pool", "3p or 2v2")),
    "arena two pools": (["arena", "watch", "3p", "--pool", "2v2"], {}, "", 2,
                        ("two different pools",)),
    "arena pool 5p": (["arena", "stop", "5p"], {}, "", 2, ("'5p'", "3p")),
    "arena concurrency 0": (["arena", "start", "3p", "--concurrency", "0"], {}, "", 2,
                            ("--concurrency", "1 to 100")),
    "arena max-wait 2h": (["arena", "start", "2v2", "--max-wait", "2h"], {}, "", 2,
                          ("--max-wait",)),
    # 5: not a Redis URL
    "worker redis": (["worker", "--redis", "notaurl"], {}, "", 2, ("--redis", "redis://")),
    "referee redis": (["referee", "--redis", "notaurl"], {}, "", 2, ("--redis",)),
    "up redis": (["up", "--redis", "notaurl", "--data", "d"], {}, "", 2, ("--redis",)),
    "up REDIS_URL": (["up", "--data", "d"], {"REDIS_URL": "redis://h:99999/0"}, "", 2,
                     ("$REDIS_URL", "Port out of range")),
    # metrics addresses, refused before anything starts
    "referee metrics listen": (["referee", "--metrics-listen", "nope"], {}, "", 2,
                               ("--metrics-listen", "HOST:PORT")),
    "worker metrics listen": (["worker", "--metrics-listen", "h:70000"], {}, "", 2,
                              ("--metrics-listen", "0 to 65535")),
    "up metrics listen": (["up", "--metrics-listen", ":9100", "--data", "d"], {}, "", 2,
                          ("--metrics-listen",)),
    # fsync applies to the Redis `up` starts; a choice among two
    "up fsync own redis": (["up", "--redis", "redis://127.0.0.1:1/0", "--redis-fsync",
                            "always", "--data", "d"], {}, "", 2, ("--redis-fsync", "appendfsync")),
    "up fsync choice": (["up", "--redis-fsync", "never", "--data", "d"], {}, "", 2,
                        ("--redis-fsync", "everysec", "always")),
    # a host where sandboxes cannot be built (no cgroups where it looks): refused at once
    "host no sandbox": (["host", "--redis", "redis://127.0.0.1:1/0", "--data", "d"],
                        {"MOONSHOT_CGROUP_ROOT": "/nonexistent-cgroups"}, "", 1,
                        ("moonshot host: cannot build sandboxes here: no cgroup controllers "
                         "for memory, pids and cpu under /nonexistent-cgroups",)),
    # 6: data folders that cannot be used
    "up data": (["up", "--data", "/proc/nope"], {}, "", 2, ("--data", "/proc/nope")),
    "token is a folder": (MP, {}, "tokdir", 2, ("admin-token", "Is a directory")),
    "up token is a folder": (["up", "--data", "tokdir/moonshot-data"], {}, "", 1,
                             ("admin-token", "Is a directory")),
    # 8
    "up workers 0": (["up", "--workers", "0"], {}, "", 2, ("--workers", "1 to")),
    "demo workers 0": (["demo", "--workers", "0"], {}, "", 2, ("--workers",)),
    "demo workers -1": (["demo", "--workers", "-1"], {}, "", 2, ("--workers",)),
    # 10: referee addresses
    "server garbage": ([*BR, "--server", "garbage!!"], {}, "", 2, ("--server", "HOST:PORT")),
    "server empty": ([*BR, "--server", ""], {"MOONSHOT_SERVER": "127.0.0.1:1"}, "", 2,
                     ("--server",)),
    "server port 0": (["match", "show", "m-1", "--server", "host:0"], {}, "", 2, ("--server",)),
    "server no host": (["tournament", "watch", "t-1", "--server", ":50051"], {}, "", 2,
                       ("--server",)),
    "server env": (["ratings"], {"MOONSHOT_SERVER": "garbage!!"}, "", 2,
                   ("$MOONSHOT_SERVER", "HOST:PORT")),
    "server env bot run": (BR, {"MOONSHOT_SERVER": "host:99999"}, "", 2, ("$MOONSHOT_SERVER",)),
    # 11: tokens that cannot travel in gRPC metadata
    "admin token flag": ([*MP, "--admin-token", "adm\nx"], {}, "", 2,
                         ("--admin-token", "'\\n'", "printable ASCII")),
    "admin token env": (MP, {"MOONSHOT_ADMIN_TOKEN": "adm x"}, "", 2,
                        ("$MOONSHOT_ADMIN_TOKEN", "' '")),
    "admin token file": (MP, {}, "badtok", 2, ("admin-token", "' '")),
    "referee admin token": (["referee", "--admin-token", "a\tb"], {}, "", 2,
                            ("--admin-token",)),
    "bot token flag": ([*BR[:-1], "to\nk"], {}, "", 2, ("--token", "'\\n'")),
    "bot token env": (BR[:-2], {"MOONSHOT_BOT_TOKEN": "tök"}, "", 2, ("$MOONSHOT_BOT_TOKEN",)),
    # 12
    "games huge": (["selfplay", "--games", "999999999999999999999999"], {}, "", 2,
                   ("--games", "1 to 1000000000")),
    "seed past the end": (["selfplay", "--seed", str(MAX_SEED), "--games", "2"], {}, "", 2,
                          ("--seed", "--games", str(MAX_SEED - 1))),
    # 14: a bot class that is not there; typos get the nearest flag or command
    "bot class missing": (["bot", "run", "--bot", "examples.highest_bot:Nope", "--token", "t"],
                          {}, "", 2, ("has no class 'Nope'", "its bot classes: HighestBot")),
    "bot cannot be built": (["bot", "run", "--bot", "badbots:InitRaises", "--token", "t"],
                            {}, "", 1, ("badbots:InitRaises could not be built: "
                                        "RuntimeError: no memory",)),
    "flag typo": ([*TC, "--tiem-per-move", "2s"], {}, "", 2, ("--tiem-per-move",
                                                              "did you mean --time-per-move?")),
    "command typo": (["tournamnet", "list"], {}, "", 2, ("did you mean tournament?",)),
    # 15: no referee where one is looked for: one line saying so, from every command; a bot
    # that never connected stops instead of retrying in silence
    "bot run no referee": ([*BR, "--server", "127.0.0.1:1"], {}, "", 1,
                           ("no referee at 127.0.0.1:1", "moonshot up")),
    "ratings no referee": (["ratings", "--server", "127.0.0.1:1"], {}, "", 1,
                           ("no referee at 127.0.0.1:1",)),
    "show no referee": (["tournament", "show", "cup", "--server", "127.0.0.1:1"], {}, "", 1,
                        ("no referee at 127.0.0.1:1",)),
    "register no referee": (["bot", "register", "x", "--server", "127.0.0.1:1"], {}, "", 1,
                            ("no referee at 127.0.0.1:1",)),
    # 13: bots that break the interface (seat 1; game seed 7; every seat bids in hand 1)
    "bot returns None": ([*SP, "--bots", "greedy,badbots:ReturnsNone,greedy"], {}, "", 1,
                         ("bot 'badbots:ReturnsNone' in seat 1 (game seed 7, hand 1) "
                          "returned None", "legal were: pass")),
    "bot returns illegal": ([*SP, "--bots", "greedy,badbots:ReturnsIllegal,greedy"], {}, "", 1,
                            ("'badbots:ReturnsIllegal' in seat 1", "'play 6-6', which is "
                             "not legal here", "legal were:")),
    "bot returns text": ([*SP, "--bots", "greedy,badbots:ReturnsText,greedy"], {}, "", 1,
                         ("'badbots:ReturnsText' in seat 1", "'pass' (a str)")),
}

BADBOTS = '''\
from clients.bot import Bot
from moon.actions import ACTIONS


class ReturnsNone(Bot):
    def act(self, obs, legal):
        return None


class ReturnsIllegal(Bot):
    def act(self, obs, legal):
        return ACTIONS[97]  # play 6-6: never legal while bidding


class ReturnsText(Bot):
    def act(self, obs, legal):
        return "pass"


class InitRaises(Bot):
    def __init__(self, seed=None):
        raise RuntimeError("no memory")


class Raises(Bot):
    def act(self, obs, legal):
        return self.think(obs)

    def think(self, obs):
        raise ValueError(f"no idea in hand {obs.hand_number}")
'''


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-errors")
    (root / "badbots.py").write_text(BADBOTS)
    (root / "tokdir" / "moonshot-data" / "admin-token").mkdir(parents=True)
    (root / "badtok" / "moonshot-data").mkdir(parents=True)
    (root / "badtok" / "moonshot-data" / "admin-token").write_text("adm with space\n")
    return root


@pytest.fixture(scope="module")
def results(work: Path) -> dict[str, tuple[int, str, str]]:
    procs = {name: _start(argv, work / cwd, **env)
             for name, (argv, env, cwd, _, _) in CASES.items()}
    # Some 80 processes start at once, each paying the CLI's import time, on 2 cores
    # that other work may share.
    end = time.monotonic() + 300
    return {name: _finish(p, max(1.0, end - time.monotonic())) for name, p in procs.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_clear_line(name: str, results: dict[str, tuple[int, str, str]]) -> None:
    _, _, _, code, needles = CASES[name]
    _check_one_line(results[name], code, *needles)


def test_nothing_was_started_or_left_behind(work: Path,
                                            results: dict[str, tuple[int, str, str]]) -> None:
    assert not (work / "d").exists()  # refused before `up` made its data folder
    assert not (work / "tokdir" / "moonshot-data" / "redis").exists()  # nor started Redis


@pytest.mark.parametrize(("bots", "first", "frame"), [
    ("greedy,badbots:Raises,greedy", "bot 'badbots:Raises' in seat 1 (game seed 7, hand 1) "
     "raised ValueError: no idea in hand 1", "in think"),
    ("greedy,greedy,badbots:InitRaises", "bot 'badbots:InitRaises' in seat 2 (game seed 7): "
     "creating it raised RuntimeError: no memory", "in __init__"),
])
def test_a_raising_bot_is_named_then_its_own_traceback_shown(work: Path, bots: str, first: str,
                                                             frame: str) -> None:
    rc, _, err = _run([*SP, "--bots", bots], work)
    assert rc == 1, err
    line, *rest = err.splitlines()
    assert line == f"moonshot selfplay: {first}", err
    assert rest[0] == "Traceback (most recent call last):", err
    tb = "\n".join(rest)
    assert "badbots.py" in tb and frame in tb and rest[-1] == first.split(" raised ")[1]
    assert "clients/" not in tb  # only the bot's own frames, not self-play's


# ----------------------------------------------------------- in-process checks


@pytest.mark.parametrize(("text", "ok"), [
    ("127.0.0.1:50051", True), ("localhost:1", True), ("[::1]:65535", True),
    ("my-host.example.com:443", True), ("host:65536", False), ("host", False),
    ("[::1]", False), ("::1:50051", False), ("host:5x", False), ("", False),
    ("dns:///referee.example:50051", True), ("unix:/run/moonshot.sock", True),
    ("unix:///tmp/s", True), ("ipv4:127.0.0.1:50051", True), ("dns:", False),
    ("unix:///", False),
])
def test_address_forms(text: str, ok: bool) -> None:
    assert (flags.address_problem(text) is None) == ok


def test_local_rules_match_what_is_sent() -> None:
    """--rule ' target=5' is checked stripped, so it must be sent stripped (see also the
    live test below, where the referee accepts it)."""
    assert rules_options(3, [" target = 5", "max_hands=9 "], "x") == {
        "target": "5", "max_hands": "9"}


def _takes(check: Callable[[Any], object], value: Any, error: type[Exception]) -> bool:
    try:
        check(value)
    except error:
        return False
    return True


def _tournament(**kw: Any) -> TournamentSpec:
    """A spec as the referee makes it (its format's options checked too)."""
    kw.setdefault("seed", 0)
    kw.setdefault("format", "round_robin")
    return formats.prepare(TournamentSpec(
        tournament_id="t", name="t", players=3, bot_ids=("a", "b", "c"),
        names=("a", "b", "c"), rules=Rules.make(3), **kw))


@pytest.mark.parametrize("field", ["move", "bank", "strikes", "grace", "rounds", "series",
                                   "seed"])
def test_cli_bounds_are_the_referees(field: str) -> None:
    """The CLI refuses exactly what the referee refuses, at and around each edge."""
    parse, lo, hi, server = {
        "move": (flags.duration_ms(*flags.MOVE_TIME_MS), *flags.MOVE_TIME_MS,
                 lambda v: Clock(move_time_ms=v)),
        "bank": (flags.duration_ms(*flags.TIME_BANK_MS), *flags.TIME_BANK_MS,
                 lambda v: Clock(time_bank_ms=v)),
        "strikes": (flags.int_in(*flags.MAX_STRIKES), *flags.MAX_STRIKES,
                    lambda v: Faults(max_strikes=v)),
        "grace": (flags.duration_ms(*flags.GRACE_MS), *flags.GRACE_MS,
                  lambda v: Faults(disconnect_grace_ms=v)),
        "rounds": (lambda t: parse_flag("round_robin", "rounds", t, "x"), 1, 100,
                   lambda v: _tournament(options={"rounds": v})),
        "series": (lambda t: parse_flag("single_elimination", "series", t, "x"), 1, 99,
                   lambda v: _tournament(format="single_elimination",
                                         options={"series_length": v})),
        "seed": (flags.int_in(*flags.SEED), *flags.SEED, lambda v: _tournament(seed=v)),
    }[field]
    unit = "ms" if field in ("move", "bank", "grace") else ""
    refused = UsageError if field in ("rounds", "series") else argparse.ArgumentTypeError
    for v in {lo - 1, lo, lo + 1, lo + 2, hi - 1, hi, hi + 1, hi + 2}:
        cli = _takes(parse, f"{v}{unit}", refused)
        assert cli == _takes(server, v, InvalidArgument), (field, v, cli)


# ---------------------------------------------------- with a live Redis and referee


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    srv = RedisServer(tmp_path_factory.mktemp("redis"), appendonly=False).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def referee(redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[str, list[str]]]:
    """A referee with no workers (so matches stay queued) and three registered bots."""
    logs = tmp_path_factory.mktemp("referee")
    child = start_child("referee", [sys.executable, "-m", "clients.cli", "referee", "--listen",
                                    "127.0.0.1:0", "--redis", redis_server.url,
                                    "--admin-token", TOKEN], logs / "referee.log", _env())
    try:
        port = child.wait_for(r"referee listening on [^\s:]+:(\d+)").group(1)
        address = f"127.0.0.1:{port}"
        names = [f"cli-{uuid.uuid4().hex[:8]}" for _ in range(3)]
        for name in names:
            rc, _, err = _run(["bot", "register", name, "--server", address], logs)
            assert rc == 0, err
        yield address, names
    finally:
        child.stop()


@pytest.mark.parametrize("rules", [[], ["--rule", " target=5", "--rule", "max_hands = 9"]])
def test_a_timeout_says_the_match_runs_on(referee: tuple[str, list[str]], tmp_path: Path,
                                          rules: list[str]) -> None:
    """No worker plays it, so the match is queued and still waiting at --timeout; with
    spaced --rule keys, the referee takes the same (stripped) options the CLI checked."""
    address, names = referee
    result = _run(["match", "play", "--bots", ",".join(names), "--timeout", "0.5",
                   "--server", address, *rules], tmp_path, MOONSHOT_ADMIN_TOKEN=TOKEN)
    assert "queued" in result[1], result
    line = _check_one_line(result, 1, "is still running after --timeout 0.5 s")
    match_id = result[1].split()[1]
    assert line.endswith(f"follow it with: moonshot match show {match_id} --server {address}")


def test_a_refusal_by_the_referee_is_its_message_not_a_status_code(
        referee: tuple[str, list[str]], tmp_path: Path) -> None:
    """What the referee refuses is said in its words, without gRPC's code; a rejected admin
    token says where this command's token came from (flag, variable, the file `moonshot up`
    saved) and where the right one is."""
    address, names = referee
    server = ["--server", address]
    taken = _check_one_line(_run(["bot", "register", names[0].upper(), *server], tmp_path), 1)
    assert "ALREADY_EXISTS" not in taken and names[0].upper() in taken, taken
    bad = _check_one_line(_run(["tournament", "create", "--name", "x", "--format", "swiss",
                                "--rounds", "50", "--bots", ",".join(names), *server],
                               tmp_path, MOONSHOT_ADMIN_TOKEN=TOKEN), 1)
    assert bad.startswith("moonshot: swiss.rounds"), bad  # not INVALID_ARGUMENT: ...
    play = ["match", "play", "--bots", ",".join(names), "--timeout", "0.5", *server]
    line = _check_one_line(_run([*play, "--admin-token", "adm.wrong"], tmp_path), 1)
    assert "UNAUTHENTICATED" not in line
    assert "the referee rejected the admin token given by --admin-token" in line, line
    assert "moonshot up` prints it and saves it in <data folder>/admin-token" in line, line
    line = _check_one_line(_run(play, tmp_path, MOONSHOT_ADMIN_TOKEN="adm.wrong"), 1)
    assert "rejected the admin token in $MOONSHOT_ADMIN_TOKEN" in line, line
    (tmp_path / "moonshot-data").mkdir()
    (tmp_path / "moonshot-data" / "admin-token").write_text("adm.old-stack\n")
    line = _check_one_line(_run(play, tmp_path), 1)
    assert "rejected the admin token saved in moonshot-data/admin-token (by a `moonshot " \
           "up`, perhaps of another stack)" in line, line


@pytest.mark.parametrize("command", ["worker", "referee", "up"])
def test_a_redis_database_that_does_not_exist(command: str, redis_server: RedisServer,
                                              tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{redis_server.port}/99"
    result = _run([command, "--redis", url, *(["--data", "d"] if command == "up" else [])],
                  tmp_path)
    _check_one_line(result, 1, "--redis", url, "DB index is out of range")
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("command", ["worker", "referee"])
def test_a_part_started_before_its_redis_waits_for_it(command: str, tmp_path: Path) -> None:
    """Redis down (restarting, loading its file) when a referee or worker starts: it waits
    (one line says so) and comes up with Redis; with --redis-wait 0 it refuses at once."""
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    extra = ["--listen", "127.0.0.1:0", "--admin-token", TOKEN] if command == "referee" else []
    _check_one_line(_run([command, "--redis", url, "--redis-wait", "0", *extra], tmp_path), 1,
                    "cannot reach Redis", url)
    log = tmp_path / f"{command}.log"
    child = start_child(command, [sys.executable, "-m", "clients.cli", command, "--redis", url,
                                  *extra], log, _env())
    try:
        child.wait_for(f"moonshot {command}: waiting up to 60 s for Redis at {url}")
        time.sleep(2)
        assert child.popen.poll() is None  # still waiting, not given up
        srv = RedisServer(tmp_path / "redis", port=port, appendonly=False).start()
        try:
            child.wait_for(r"referee listening on|Listening on|moonshot-matches", timeout=30)
        finally:
            child.stop()
            srv.stop()
    finally:
        child.stop()


def test_a_second_up_on_the_same_data_folder_is_refused(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    up = ["up", "--data", data, "--listen", "127.0.0.1:0", "--workers", "1"]
    with open(tmp_path / "first.out", "w") as out:
        first = subprocess.Popen([sys.executable, "-m", "clients.cli", *up], cwd=tmp_path,
                                 env=_env(), stdout=out, stderr=subprocess.STDOUT, text=True)
    kids: list[psutil.Process] = []
    try:
        end = time.monotonic() + 120
        while "moonshot is up" not in (tmp_path / "first.out").read_text():
            assert first.poll() is None and time.monotonic() < end, \
                (tmp_path / "first.out").read_text()
            time.sleep(0.1)
        kids = psutil.Process(first.pid).children(recursive=True)
        assert len(kids) >= 3  # redis-server, the referee, a worker

        result = _run(up, tmp_path)
        _check_one_line(result, 1, f"{data} is in use by another `moonshot up` "
                                   f"(pid {first.pid}) or by the Redis it started")
    finally:
        first.send_signal(signal.SIGINT)
        rc = first.wait(60)
        _, alive = psutil.wait_procs(kids, timeout=30)
        for p in alive:
            p.kill()
    assert rc == 0, (tmp_path / "first.out").read_text()
    assert not alive, alive
    # The folder is free again once the first has stopped.
    stack = LocalStack(Path(data))
    stack.lock()
    stack.unlock()


def _up(tmp_path: Path, data: str, name: str, *extra: str, **env: str) -> subprocess.Popen[str]:
    """`moonshot up` on `data`, its output in `<name>.out`; returned once it is up."""
    args = ["up", "--data", data, "--listen", "127.0.0.1:0", "--workers", "1", *extra]
    out_path = tmp_path / f"{name}.out"
    with open(out_path, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "clients.cli", *args], cwd=tmp_path,
                                env=_env(**env), stdout=out, stderr=subprocess.STDOUT,
                                text=True)
    end = time.monotonic() + 120
    while "moonshot is up" not in out_path.read_text():
        assert proc.poll() is None and time.monotonic() < end, out_path.read_text()
        time.sleep(0.1)
    return proc


def _stop_up(proc: subprocess.Popen[str], sig: int = signal.SIGINT) -> int:
    kids = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(sig)
    rc = proc.wait(60)
    _, alive = psutil.wait_procs(kids, timeout=30)
    for p in alive:
        p.kill()
    assert not alive, alive
    return rc


def test_up_restarts_keep_the_admin_token_the_redis_has(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    assert _stop_up(_up(tmp_path, data, "first", MOONSHOT_ADMIN_TOKEN="adm.mine")) == 0
    assert (tmp_path / "data" / "admin-token").read_text().strip() == "adm.mine"  # saved
    second = _up(tmp_path, data, "second")  # no variable: the saved token, which Redis has
    assert "admin token: adm.mine" in (tmp_path / "second.out").read_text()
    assert _stop_up(second) == 0
    # A different token would lock the organiser out: refused before anything starts.
    refused = _run(["up", "--data", data, "--listen", "127.0.0.1:0"], tmp_path,
                   MOONSHOT_ADMIN_TOKEN="adm.other")
    _check_one_line(refused, 1, "MOONSHOT_ADMIN_TOKEN differs", "--replace-admin-token")
    rotated = _up(tmp_path, data, "third", "--replace-admin-token",
                  MOONSHOT_ADMIN_TOKEN="adm.other")
    assert "admin token: adm.other" in (tmp_path / "third.out").read_text()
    assert _stop_up(rotated) == 0
    assert (tmp_path / "data" / "admin-token").read_text().strip() == "adm.other"


def test_a_killed_up_leaves_its_folder_locked_while_its_redis_lives(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    first = _up(tmp_path, data, "first")
    kids = psutil.Process(first.pid).children(recursive=True)
    first.kill()  # no clean-up at all: its Redis, referee and worker live on
    first.wait(30)
    try:
        result = _run(["up", "--data", data, "--listen", "127.0.0.1:0"], tmp_path)
        _check_one_line(result, 1, "is in use by another `moonshot up`")
    finally:
        for p in kids:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        psutil.wait_procs(kids, timeout=30)
    stack = LocalStack(Path(data))  # free again once its Redis is gone
    stack.lock()
    stack.unlock()
