"""Tournament speed: how long schedules take to build, and games/s on the real stack.

Run `python bench/tournament.py [--runs N] [--no-games]`. It prints one figure per
line, `name: value unit`:

- `schedule 3p N bots`: CPU seconds to build a 3p round-robin schedule of N
  bots, the table design (`triple_design`) and its rounds (`rounds_of`);
  `tables 3p N bots` and `rounds 3p N bots` are its size.
- `schedule 2v2 N bots` / `pairings 2v2 N bots`: the same for the 2v2
  round-robin where each bot is a team (`team_pairings(n, False)`), and
  `... rotating` for rotating partners (`team_pairings(n, True)`).
- `games/s 3p round robin W workers` for W = 1, 2, 4 (skip with `--no-games`):
  a 3p round robin of 7 instant bots (the Fano plane: 7 tables, 6 seatings each,
  42 duplicate games of `max_hands` 2) played on the real stack, each part its
  own process as `moonshot up` starts it: a private Redis, a referee, W RQ
  workers, and one `moonshot bot run --bot random --threads 0` process per bot
  over gRPC. Timed from CreateTournament until GetTournament says finished
  (start-up excluded); `decisions/s ...` is the same run's accepted actions per
  second. A fresh stack (and Redis) per W.

- `boards 3p N bots ...`: the 3p round robin on duplicate boards
  (`tournaments.boards.table_schedule`): tables, boards (rounds), the fewest and
  most tables sharing a board, and the CPU seconds of a first (uncached) build.
- `scheduling step 3p N bots`: wall ms of one scheduling step (`workers.scheduler.advance`)
  right after one more game of a 3p round robin of N bots is recorded, on a private
  Redis: the median over `STEPS` steps taken after `WARM` games were already
  recorded. The step reads only what changed, so this should not grow with N.
  `first step 3p N bots` is the one-off step that stores the schedule.

Schedule figures are the median of `--runs` runs of this process's CPU time, so
other load on the machine skews them less; games/s is wall time, one run per W,
and moves with whatever else the machine is doing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import redis

# `python bench/tournament.py` puts bench/ first on the path, where bench/bots.py and
# bench/ratings.py would shadow the packages of those names: the repository root goes
# in front.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from clients.admin import Admin
from clients.redisproc import RedisServer
from clients.sdk import register
from clients.stack import LocalStack
from moon import Rules
from proto.moon.v1 import tournament_pb2
from store import bots as store_bots
from store import keys, steps
from store.records import TournamentSpec
from store.refs import EventRef
from tournaments.boards import clear_cache, table_schedule
from tournaments.design import rounds_of, team_pairings, triple_design
from workers.queues import create_tournament, rq_connection
from workers.scheduler import advance

SIZES = (10, 100, 1000)
WORKERS = (1, 2, 4)
GAME_BOTS = 7  # the Fano plane: every pair at one table, 7 tables x 6 seatings = 42 games
GAME_RULES = {"max_hands": "2"}  # short games, so the figure is mostly the system's cost


def timed(build: Callable[[], int], runs: int) -> tuple[float, int]:
    """Median CPU seconds of `runs` calls of `build`, and what the last call returned."""
    times = []
    size = 0
    for _ in range(runs):
        start = time.process_time()
        size = build()
        times.append(time.process_time() - start)
    return statistics.median(times), size


def schedule_3p(n: int) -> Callable[[], int]:
    """Build the 3p round-robin of n bots: the table design and its rounds; return the tables."""

    def build() -> int:
        tables = triple_design(n)
        rounds_of(tables, n)
        return len(tables)

    return build


def rounds_3p(n: int) -> int:
    """Rounds of the 3p round-robin schedule of n bots."""
    return len(rounds_of(triple_design(n), n))


def schedule_2v2(n: int, rotate: bool) -> Callable[[], int]:
    """Build the 2v2 round-robin of n bots; return its number of games (pairings)."""

    def build() -> int:
        return sum(len(r.games) for r in team_pairings(n, rotate))

    return build


def round_robin_speed(workers: int, bots: int = GAME_BOTS,
                      rules: Mapping[str, str] = GAME_RULES,
                      timeout: float = 900.0) -> tuple[float, float, int]:
    """Play a 3p round robin of instant bots on a fresh stack with `workers` RQ workers;
    return (games/s, decisions/s, games)."""
    with tempfile.TemporaryDirectory(prefix="moonshot-bench-") as tmp, \
            LocalStack(Path(tmp), listen="127.0.0.1:0", workers=workers) as stack:
        admin = Admin(stack.address, stack.admin_token)
        ids = []
        procs = []
        for i in range(bots):
            bot_id, token = register(stack.address, f"bench-{i + 1}", stack.admin_token)
            procs.append(stack.spawn(f"bot-{i + 1}", [
                "bot", "run", "--bot", "random", "--threads", "0",
                "--server", stack.address, "--token", token]))
            ids.append(bot_id)
        for proc in procs:
            proc.wait_for(r"connected to ", timeout=60)
        start = time.perf_counter()
        t = admin.create_tournament(name=f"bench {workers} workers", players=3,
                                    format="round_robin", bot_ids=ids, rules=dict(rules),
                                    seeding="given", seed=2026)
        end = start + timeout
        while True:
            got = admin.get_tournament(t.tournament_id)
            if got.status != tournament_pb2.TOURNAMENT_STATUS_RUNNING:
                break
            if time.perf_counter() > end:
                raise TimeoutError(f"round robin not finished after {timeout:g} s")
            time.sleep(0.02)
        elapsed = time.perf_counter() - start
        admin.close()
        if got.status != tournament_pb2.TOURNAMENT_STATUS_FINISHED:
            raise RuntimeError(f"round robin ended {got.status}: {got.error}")
        assert stack.redis_url is not None
        r = redis.Redis.from_url(stack.redis_url, decode_responses=True)
        played: list[str] = r.zrange(keys.tournament_matches(t.tournament_id), 0, -1)  # type: ignore[assignment]
        decisions = sum(int(r.llen(keys.match_log(m))) for m in played)
        r.close()
        games = got.matches_done
        return games / elapsed, decisions / elapsed, games


WARM = 200  # games recorded before the steps are timed
STEPS = 30


def _finish(r: redis.Redis, tid: str, match_id: str, spec: dict[str, object]) -> None:
    """Record a made-up result for a game, as a match job's bookkeeping does."""
    bots = list(spec["bot_ids"])  # type: ignore[call-overload]
    row = {"match_id": match_id, "bot_ids": bots, "players": 3, "final": [21, 5, 3],
           "winner": 0, "placement": [1, 2, 3], "end": "normal", "forfeit": None,
           "seats": bots, "unit": spec["meta"]["unit"]}  # type: ignore[index]
    r.hset(keys.match(match_id), mapping={"status": "finished", "row": json.dumps(row)})
    steps.record(r, EventRef.tournament(tid), match_id)


def board_schedule(n: int) -> tuple[int, int, int, int, float]:
    """(tables, boards, fewest and most tables a board, CPU s of a first build) of the 3p
    round robin on duplicate boards of n bots."""
    clear_cache()  # a first build: nothing of this or a smaller design cached
    start = time.process_time()
    s = table_schedule(n)
    seconds = time.process_time() - start
    per = [len(s.round(i).tables) for i in range(s.rounds)]
    return sum(per), s.rounds, min(per), max(per), seconds


def scheduling_step(n: int, tmp: Path) -> tuple[float, float]:
    """(first step ms, median ms of a step after one more recorded game) for n bots."""
    with RedisServer(tmp / f"redis-{n}", appendonly=False) as srv:
        r = store_bots.connect(srv.url)
        rq_conn = rq_connection(srv.url)
        bots = tuple(f"b-{i:06d}" for i in range(n))
        spec = TournamentSpec(tournament_id=f"t-bench{n}", name="bench", players=3,
                              format="round_robin", bot_ids=bots, names=bots,
                              rules=Rules.make(3), seed=1)  # on boards, the default
        create_tournament(r, rq_conn, spec)
        start = time.perf_counter()
        advance(r, rq_conn, EventRef.tournament(spec.tournament_id))
        first = (time.perf_counter() - start) * 1000
        games: list[str] = r.zrange(keys.tournament_matches(spec.tournament_id), 0, -1)  # type: ignore[assignment]
        warm = min(WARM, len(games) // 2)
        steps = min(STEPS, len(games) - warm - 1)
        seats = {g: r.hget(keys.match(g), "spec") for g in games[: warm + steps]}
        order = iter(games)
        for _ in range(warm):
            g = next(order)
            _finish(r, spec.tournament_id, g, json.loads(str(seats[g])))
        advance(r, rq_conn, EventRef.tournament(spec.tournament_id))
        times = []
        for _ in range(steps):
            g = next(order)
            _finish(r, spec.tournament_id, g, json.loads(str(seats[g])))
            start = time.perf_counter()
            advance(r, rq_conn, EventRef.tournament(spec.tournament_id))
            times.append((time.perf_counter() - start) * 1000)
        return first, statistics.median(times)


def games_per_second(workers: int) -> float:
    """Games/s of a 3p round robin of instant bots on the real stack with this many RQ workers."""
    return round_robin_speed(workers)[0]


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and print the schedule figures, then games/s (unless --no-games)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--runs", type=int, default=3, help="runs per figure; the median is shown")
    p.add_argument("--no-games", action="store_true",
                   help="skip games/s on the full stack (1, 2 and 4 workers; about a minute)")
    p.add_argument("--workers", type=int, nargs="+", default=list(WORKERS),
                   help="worker counts for games/s (default 1 2 4)")
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES),
                   help="bot counts to schedule (default 10 100 1000)")
    args = p.parse_args(argv)
    if args.runs < 1 or min(args.sizes) < 4:
        p.error("--runs must be at least 1 and every size at least 4")

    def show(name: str, value: float, unit: str, fmt: str = ",.0f") -> None:
        print(f"{name}: {value:{fmt}} {unit}", flush=True)

    for n in args.sizes:
        seconds, tables = timed(schedule_3p(n), args.runs)
        show(f"schedule 3p {n} bots", seconds, "s", ".3f")
        show(f"tables 3p {n} bots", tables, "tables")
        show(f"rounds 3p {n} bots", rounds_3p(n), "rounds")
    for n in args.sizes:
        for rotate, label in ((False, ""), (True, " rotating")):
            seconds, games = timed(schedule_2v2(n, rotate), args.runs)
            show(f"schedule 2v2{label} {n} bots", seconds, "s", ".3f")
            show(f"pairings 2v2{label} {n} bots", games, "games")
    for n in args.sizes:
        tables, boards, least, most, seconds = board_schedule(n)
        show(f"boards 3p {n} bots tables", tables, "tables")
        show(f"boards 3p {n} bots boards", boards, "boards")
        show(f"boards 3p {n} bots tables per board min", least, "tables")
        show(f"boards 3p {n} bots tables per board max", most, "tables")
        show(f"boards 3p {n} bots build", seconds, "s", ".3f")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            first, step = scheduling_step(n, Path(tmp))
            show(f"first step 3p {n} bots", first, "ms", ".0f")
            show(f"scheduling step 3p {n} bots", step, "ms", ".2f")
    if not args.no_games:
        for w in args.workers:
            games_s, decisions_s, played = round_robin_speed(w)
            show(f"games/s 3p round robin {w} workers", games_s, "games/s", ".2f")
            show(f"decisions/s 3p round robin {w} workers", decisions_s, "decisions/s")
        show(f"games 3p round robin {GAME_BOTS} bots", played, "games")
    return 0


if __name__ == "__main__":
    sys.exit(main())
