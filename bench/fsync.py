"""What `appendfsync always` costs: decisions/s with Redis syncing its append-only file
once a second (the default) and before every answer.

Run `python bench/fsync.py [--matches N] [--runs R]`. Each run starts a fresh stack as
`moonshot up --redis-fsync MODE` does (a private Redis with its append-only file in a
temporary folder on this machine's disk, a referee, two workers) and six instant bots
(`random --threads 0`), creates `--matches` 3p matches at once and times them from the
first creation to the last result; decisions/s = actions logged / that time. The modes
alternate (everysec, always, everysec, ...) so drift in the machine's load hits both.
It prints `name: value unit` lines: each mode's median decisions/s and matches/s, and
`fsync always cost`, the share of throughput `always` loses.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import redis

# `python bench/fsync.py` puts bench/ first on the path, where bench/bots.py and
# bench/ratings.py would shadow the packages of those names: the repository root goes
# in front.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from clients.admin import Admin
from clients.sdk import register
from clients.stack import LocalStack
from proto.moon.v1 import match_pb2
from store import keys

BOTS = 6
RULES = {"max_hands": "3"}


def run(mode: str, matches: int) -> tuple[float, float]:
    """(decisions/s, matches/s) of `matches` matches at once on a fresh stack."""
    with tempfile.TemporaryDirectory(prefix="moonshot-fsync-") as tmp, \
            LocalStack(Path(tmp), listen="127.0.0.1:0", workers=2, web_listen=None,
                       redis_fsync=mode) as stack:
        admin = Admin(stack.address, stack.admin_token)
        ids, procs = [], []
        for i in range(BOTS):
            bot_id, token = register(stack.address, f"fsync-{i + 1}", stack.admin_token)
            procs.append(stack.spawn(f"bot-{i + 1}", [
                "bot", "run", "--bot", "random", "--threads", "0",
                "--server", stack.address, "--token", token]))
            ids.append(bot_id)
        for proc in procs:
            proc.wait_for(r"connected to ", timeout=60)
        start = time.perf_counter()
        mids = [admin.create_match(3, [ids[(k + j) % BOTS] for j in range(3)], seed=k,
                                   rules=RULES).match_id for k in range(matches)]
        for mid in mids:
            m = admin.wait_match(mid, timeout=600, poll=0.05)
            if m.status != match_pb2.MATCH_STATUS_FINISHED:
                raise RuntimeError(f"match {mid} ended {m.status}: {m.error}")
        elapsed = time.perf_counter() - start
        admin.close()
        assert stack.redis_url is not None
        r = redis.Redis.from_url(stack.redis_url)
        assert r.config_get("appendfsync")["appendfsync"] == mode
        decisions = sum(int(r.llen(keys.match_log(mid))) for mid in mids)
        r.close()
        return decisions / elapsed, matches / elapsed


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matches", type=int, default=40, help="matches at once per run")
    ap.add_argument("--runs", type=int, default=3, help="runs per mode")
    args = ap.parse_args(argv)
    got: dict[str, list[tuple[float, float]]] = {"everysec": [], "always": []}
    for _ in range(args.runs):
        for mode, runs in got.items():
            runs.append(run(mode, args.matches))
    rate = {}
    for mode, runs in got.items():
        rate[mode] = statistics.median(d for d, _ in runs)
        print(f"fsync {mode} decisions/s: {rate[mode]:.0f} decisions/s")
        print(f"fsync {mode} matches/s: {statistics.median(m for _, m in runs):.2f} matches/s")
    print(f"fsync always cost: {100 * (1 - rate['always'] / rate['everysec']):.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
