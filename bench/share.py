"""Fair share of the stack between authors: a short test started while another author's long
test fills every game slot starts its pairs within a game length, and both then play at
the same pace.

Run `python bench/share.py [--rounds 3] [--concurrency 16] [--no-share]`. Each round has a
stack of its own, real processes: a redis-server, a referee, one `moonshot worker
--concurrency C` (C game slots for tests: `store.share`), and two authors signed up with
limits that do not bind (100 pairs), each with a candidate and a baseline of their own run
as `moonshot bot run --bot hosting:Think100Bot` (100 ms a decision, so a game's length is
the bots' thinking, not this machine's load), against house:greedy and house:random.

Alice starts a long test (fixed games far beyond the round, `--in-flight` past the
slots: alone, she takes them all); once her games have run for `--warmup` seconds, Bob
starts a short one (`--short-games`). Bob's first pairs start at once (half the slots
are his); Alice's test, asked to look again, starts no pair until her games in play
are down to her half. The round ends when Bob's test does (Alice's is stopped then).

Printed (`name: value unit` lines), over the rounds:

- `share game length`: the mean length of Alice's games before Bob came (seconds);
- `share first game start` / `share first pair start`: from Bob's CreateTest to his first
  game hosted, and to both games of his first pair hosted, in game lengths (mean and max
  over rounds): a worker thread frees when the first of Alice's games ends;
- `share long rate` / `share short rate`: games per minute of each test finished while
  both ran (from one game length after Bob's start, when the share has settled, to Bob's
  last game started), and `share rate ratio` short / long (1 is even; the goal is within
  20%);
- `share long games in play` / `share short games in play`: their means (games created
  and not finished: playing, or queued for a worker thread), sampled in that window (C/2
  each when the slots are split evenly);
- `share total rate`: both tests' games a minute together in that window (what the
  worker's C slots give; compare with `--no-share`, where a queue keeps every slot busy).

`--no-share` is the contrast: the admin sets the slots tests share far past the worker's
(`moonshot admin limits --test-slots 1000000`), so each test has its `--in-flight` pairs in
flight whatever the worker hosts, the surplus waiting in RQ's queue: Bob's first games
wait behind Alice's queued ones.
"""

from __future__ import annotations

import argparse
import math
import secrets
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
for p in (str(BENCH_DIR), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)

import grpc  # noqa: E402
import redis  # noqa: E402

import hosting  # noqa: E402  (the bench folder's own helpers)
from clients.sdk import register  # noqa: E402
from proto.moon.v1 import (  # noqa: E402
    account_pb2,
    account_pb2_grpc,
    change_pb2,
    change_pb2_grpc,
)
from store import keys  # noqa: E402

OPPONENTS = ["house:greedy", "house:random"]


@dataclass
class Author:
    """An author signed up on the round's stack, their two bots running."""

    name: str
    token: str
    bots: list[str] = field(default_factory=list)


def sign_up(stack: hosting.Stack, name: str) -> Author:
    """A new author with limits that do not bind, and two bots of theirs running."""
    with grpc.insecure_channel(stack.address) as channel:
        accounts = account_pb2_grpc.AccountServiceStub(channel)
        made = accounts.SignUp(account_pb2.SignUpRequest(name=name), timeout=30)
        accounts.SetLimits(account_pb2.SetLimitsRequest(
            author=made.author.author_id, limits=account_pb2.Limits(
                tests=4, pairs=100, house_cpu_s=86400.0)),
            metadata=(("authorization", f"Bearer {stack.admin_token}"),), timeout=30)
    author = Author(name, made.token)
    regs = [register(stack.address, f"{name}-{role}", made.token) for role in ("c", "b")]
    author.bots = [b for b, _ in regs]
    hosting.start_bots(stack, regs, f"bot-{name}", "hosting:Think100Bot", 32)
    return author


def no_share(stack: hosting.Stack) -> None:
    """The admin's setting of the slots tests share, far past what the worker hosts."""
    with grpc.insecure_channel(stack.address) as channel:
        account_pb2_grpc.AccountServiceStub(channel).SetLimits(
            account_pb2.SetLimitsRequest(test_slots=1_000_000),
            metadata=(("authorization", f"Bearer {stack.admin_token}"),), timeout=30)


def start_test(stack: hosting.Stack, author: Author, games: int, in_flight: int,
               max_hands: int) -> str:
    """The author's test of their candidate against their baseline; its id."""
    with grpc.insecure_channel(stack.address) as channel:
        tests = change_pb2_grpc.TestServiceStub(channel)
        return str(tests.CreateTest(change_pb2.CreateTestRequest(spec=change_pb2.TestSpec(
            name=f"{author.name}-test", candidate=author.bots[0], baseline=author.bots[1],
            opponents=OPPONENTS, fixed_games=games, in_flight=in_flight,
            rules={"max_hands": str(max_hands)})),
            metadata=(("authorization", f"Bearer {author.token}"),), timeout=30).test_id)


def stop_test(stack: hosting.Stack, test_id: str) -> None:
    """StopTest, as the admin."""
    with grpc.insecure_channel(stack.address) as channel:
        change_pb2_grpc.TestServiceStub(channel).StopTest(
            change_pb2.StopTestRequest(test_id=test_id),
            metadata=(("authorization", f"Bearer {stack.admin_token}"),), timeout=30)


def games_of(r: redis.Redis, test_id: str) -> dict[str, tuple[float | None, float | None]]:
    """The test's games: match id -> (started, finished), as the match host wrote them."""
    mids = [str(m) for m in r.zrange(keys.tournament_matches(test_id), 0, -1)]
    pipe = r.pipeline(transaction=False)
    for m in mids:
        pipe.hmget(keys.match(m), "started_at", "finished_at")
    return {m: (float(s) if s else None, float(f) if f else None)
            for m, (s, f) in zip(mids, pipe.execute(), strict=True)}


class Playing(threading.Thread):
    """Samples each test's games created and not finished every 0.2 s: (time, {test:
    games})."""

    def __init__(self, url: str, tests: list[str]) -> None:
        super().__init__(daemon=True)
        self.r = redis.Redis.from_url(url, decode_responses=True)
        self.tests = tests
        self.samples: list[tuple[float, dict[str, int]]] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            now = time.time()
            mids = [str(m) for m in self.r.smembers(keys.OPEN_MATCHES)]  # type: ignore[union-attr]
            pipe = self.r.pipeline(transaction=False)
            for m in mids:
                pipe.hget(keys.match(m), "status")
            count = dict.fromkeys(self.tests, 0)
            for m, status in zip(mids, pipe.execute(), strict=True):
                test = m.split("-p")[0]
                if test in count and status != "finished":
                    count[test] += 1
            self.samples.append((now, count))


@dataclass
class Round:
    """One round's figures."""

    game_s: float
    first_game: float  # game lengths
    first_pair: float
    long_rate: float  # games a minute
    short_rate: float
    long_playing: float
    short_playing: float


def one_round(args: argparse.Namespace, k: int) -> Round:
    """A fresh stack; Alice's long test, then Bob's short one; the figures."""
    with tempfile.TemporaryDirectory(prefix="moonshot-share-") as tmp:
        stack = hosting.start_stack(Path(tmp), 1, args.concurrency, appendonly=False)
        r = redis.Redis.from_url(stack.srv.url, decode_responses=True)
        try:
            tag = secrets.token_hex(2)
            if args.no_share:
                no_share(stack)
            alice, bob = sign_up(stack, f"alice{tag}"), sign_up(stack, f"bob{tag}")
            long_id = start_test(stack, alice, 100_000, args.in_flight, args.max_hands)
            playing = Playing(stack.srv.url, [long_id])
            playing.start()
            time.sleep(args.warmup)
            before = [f - s for s, f in games_of(r, long_id).values() if s and f]
            if not before:
                raise RuntimeError(f"no game of the long test finished in {args.warmup} s")
            game_s = statistics.mean(before)
            t0 = time.time()
            short_id = start_test(stack, bob, args.short_games, args.in_flight, args.max_hands)
            playing.tests.append(short_id)
            end = time.monotonic() + 600
            while str(r.hget(keys.tournament(short_id), "status")) == "running":
                if time.monotonic() > end:
                    raise TimeoutError("the short test did not end in 600 s")
                time.sleep(0.5)
            playing.done.set()
            stop_test(stack, long_id)
            short = games_of(r, short_id)
            long = games_of(r, long_id)
            starts = {m: s for m, (s, _) in short.items() if s}
            first_game = min(starts.values()) - t0
            first_pair = max(starts[f"{short_id}-p1-c"], starts[f"{short_id}-p1-b"]) - t0
            w0, w1 = t0 + game_s, max(starts.values())

            def rate(games: dict[str, tuple[float | None, float | None]]) -> float:
                done = sum(1 for _, f in games.values() if f and w0 <= f <= w1)
                return 60.0 * done / (w1 - w0)

            window = [s for t, s in playing.samples if w0 <= t <= w1]
            out = Round(game_s, first_game / game_s, first_pair / game_s, rate(long),
                        rate(short), statistics.mean(s[long_id] for s in window),
                        statistics.mean(s.get(short_id, 0) for s in window))
            print(f"# round {k + 1}: game {game_s:.2f} s, first game after "
                  f"{first_game:.2f} s, first pair after {first_pair:.2f} s; "
                  f"{out.long_rate:.1f} vs {out.short_rate:.1f} games/min over "
                  f"{w1 - w0:.0f} s, games in play {out.long_playing:.1f} vs "
                  f"{out.short_playing:.1f}", flush=True)
            return out
        finally:
            stack.procs.stop_all()
            stack.srv.stop()


def main(argv: list[str] | None = None) -> int:
    """Run the rounds and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds, a stack each (3)")
    ap.add_argument("--concurrency", type=int, default=16,
                    help="the worker's game slots: all the slots tests share (16)")
    ap.add_argument("--in-flight", type=int, default=32,
                    help="pairs each test asks for: past the slots (32)")
    ap.add_argument("--no-share", action="store_true",
                    help="the contrast: no bound of the slots on the tests (see above)")
    ap.add_argument("--short-games", type=int, default=160, help="the short test's games")
    ap.add_argument("--max-hands", type=int, default=2, help="hands a game (2)")
    ap.add_argument("--warmup", type=float, default=20.0,
                    help="seconds the long test runs alone first (20)")
    args = ap.parse_args(argv)
    started = time.monotonic()
    rounds = [one_round(args, k) for k in range(args.rounds)]
    hosting.show("share game length", statistics.mean(x.game_s for x in rounds), "s", ".2f")
    for label, values in (("first game start", [x.first_game for x in rounds]),
                          ("first pair start", [x.first_pair for x in rounds])):
        hosting.show(f"share {label} mean", statistics.mean(values), "game lengths", ".2f")
        hosting.show(f"share {label} max", max(values), "game lengths", ".2f")
    long_rate = statistics.mean(x.long_rate for x in rounds)
    short_rate = statistics.mean(x.short_rate for x in rounds)
    hosting.show("share long rate", long_rate, "games/min", ".1f")
    hosting.show("share short rate", short_rate, "games/min", ".1f")
    ratios = [x.short_rate / x.long_rate for x in rounds]
    hosting.show("share rate ratio mean", statistics.mean(ratios), "short/long", ".2f")
    hosting.show("share rate ratio worst", max(ratios, key=lambda q: abs(math.log(q))),
                 "short/long (the round farthest from 1)", ".2f")
    hosting.show("share total rate", long_rate + short_rate, "games/min", ".1f")
    hosting.show("share long games in play",
                 statistics.mean(x.long_playing for x in rounds), "games", ".1f")
    hosting.show("share short games in play",
                 statistics.mean(x.short_playing for x in rounds), "games", ".1f")
    hosting.show("share rounds", len(rounds), "rounds")
    hosting.show("share bench time", time.monotonic() - started, "s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
