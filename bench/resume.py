"""Resume after a worker kill, behind a long queue: how soon a killed worker's matches run
again when every thread of every worker is busy and many games wait.

Run `python bench/resume.py [--kills 4] [--queued 40] [--concurrency 2]`. The stack is
real processes (a redis-server, a referee, two `moonshot worker --concurrency C` and
`think100` bots: 100 ms a decision, from bench/hosting.py). Each round creates enough
3p matches that every thread is busy and at least `--queued` wait in the queue, waits
until the first worker hosts `C` matches, SIGKILLs it with everything under it, and
times until each of its matches logs a new action (or finishes): lease lapse,
detection, requeue and start included; the other worker, all of whose threads are busy,
resumes them. Each round has a stack of its own. It prints `name: value unit` lines:

- `resume after kill p50` / `max`: seconds from the kill to a match running again;
- `resume queued at kill`: the fewest games waiting in the queue at a kill;
- `resume rounds`: kills timed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
for p in (str(BENCH_DIR), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)

import redis  # noqa: E402

import hosting  # noqa: E402  (the bench folder's own helpers)
from store import keys  # noqa: E402


def _hosted_by(r: redis.Redis, name: str, least_actions: int = 3) -> list[str]:
    """Open matches whose lease names worker `name` and that are a few actions in."""
    out = []
    for m in r.smembers(keys.OPEN_MATCHES):  # type: ignore[union-attr]
        lease = r.get(keys.lease(m)) or ""
        if f":{name}:" in lease and r.llen(keys.match_log(m)) >= least_actions:
            out.append(str(m))
    return out


def one_round(stack: hosting.Stack, r: redis.Redis, bots: list[str], victim: str,
              concurrency: int, queued: int, seed: int) -> tuple[list[float], int]:
    """Fill the queue, kill the victim worker while it hosts `concurrency` matches; the
    seconds each took to run again, and the queue's length at the kill."""
    busy = 2 * concurrency + queued + 4
    seats = [[bots[(i + k) % len(bots)] for k in range(3)] for i in range(busy)]
    hosting.create_matches(stack, seats, {"max_hands": "12"}, seed)
    end = time.monotonic() + 120
    while len(hosted := _hosted_by(r, stack.workers[victim])) < concurrency:
        if time.monotonic() > end:
            raise TimeoutError(f"{victim} never hosted {concurrency} matches")
        time.sleep(0.1)
    waiting = int(r.llen("rq:queue:moonshot-matches"))  # type: ignore[arg-type]
    child = next(c for c in stack.procs.procs if c.name == victim and c.popen.poll() is None)
    import psutil

    family = [psutil.Process(child.popen.pid)]
    family += family[0].children(recursive=True)
    for p in family:
        p.kill()
    killed = time.monotonic()
    logs = {m: r.llen(keys.match_log(m)) for m in hosted}  # where the dead runs left them
    took: dict[str, float] = {}
    while len(took) < len(hosted):
        for m in hosted:
            if m not in took and (r.llen(keys.match_log(m)) > logs[m]
                                  or r.exists(keys.result(m))):
                took[m] = time.monotonic() - killed
        if time.monotonic() - killed > 300:
            raise TimeoutError("the killed worker's matches did not resume in 300 s")
        time.sleep(0.05)
    return list(took.values()), waiting


def main(argv: list[str] | None = None) -> int:
    """Run the rounds and print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=4, help="rounds, one kill each (4)")
    ap.add_argument("--queued", type=int, default=40, help="games waiting at a kill (40)")
    ap.add_argument("--concurrency", type=int, default=2, help="threads per worker (2)")
    args = ap.parse_args(argv)
    started = time.monotonic()
    times: list[float] = []
    queued: list[int] = []
    for k in range(args.kills):  # a stack of its own each round: a queue of new games
        with tempfile.TemporaryDirectory(prefix="moonshot-resume-") as tmp:
            stack = hosting.start_stack(Path(tmp), 2, args.concurrency, appendonly=True)
            r = redis.Redis.from_url(stack.srv.url, decode_responses=True)
            try:
                regs = hosting.register_bots(stack.address, "resume", 6)
                hosting.start_bots(stack, regs, "think", "hosting:Think100Bot", 32)
                took, waiting = one_round(stack, r, [b for b, _ in regs], "worker-1",
                                          args.concurrency, args.queued, 1000 * (k + 1))
                times += took
                queued.append(waiting)
                print(f"# round {k + 1}: resumed after {[round(t, 1) for t in took]} s, "
                      f"{waiting} games queued", flush=True)
            finally:
                stack.procs.stop_all()
                stack.srv.stop()
    hosting.show("resume after kill p50", statistics.median(times), "s", ".1f")
    hosting.show("resume after kill max", max(times), "s", ".1f")
    hosting.show("resume queued at kill", min(queued), "games")
    hosting.show("resume rounds", len(queued), "kills")
    hosting.show("resume bench time", time.monotonic() - started, "s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
