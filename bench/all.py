"""Every benchmark of the project in one go, and one table of their figures.

Run `python bench/all.py [--quick] [--only NAME,...] [--chaos-minutes M] [--markdown FILE]`.
Each benchmark runs as its own process, one after the other (they would skew each
other side by side), its output streamed as it comes; at the end one table gathers
every `name: value unit` line they printed, by benchmark:

- engine: hands/s of the rules engine beside the bare loop (bench/engine.py);
- latency: the decision round trip against its floors, gRPC and Redis hops measured
  alone (bench/decision_latency.py);
- hosting: matches held at once, the decision ceiling, games/s by worker count
  (bench/hosting_scale.py);
- hosted: a hosted version's cold start, its decision round trip against a remote
  process's, warm sandboxes and their memory (bench/hosted.py); hosted_hostile: the
  sandbox's hostile attempts and the relay's cost (bench/hosted_hostile.py);
- tournament: schedule build times, scheduling step time at 10/100/1000 bots
  (bench/tournament.py; its games/s are in hosting's table);
- ratings: accuracy, interval coverage, games to separate bots, fit time
  (bench/ratings.py);
- fit_scale: the batch fit of 100,000 and 1,000,000 games, old and new, warm starts
  (bench/fit_scale.py);
- sprt: the test of a change's error rates, games to a verdict, paired against unpaired,
  and the fixed-games interval's coverage (bench/sprt.py);
- share: two authors' tests sharing a worker's game slots: how soon a newcomer's pairs
  start, each test's games a minute while both run (bench/share.py);
- swiss: how often a 3p Swiss, a random pairing and a partial round robin find the
  strongest of 64 bots, and the pairing time for 1,000 bots (bench/swiss.py);
- arena: matchmaking rules against bots of known strength, the step's time
  (bench/arena.py);
- arena_service: a whole matchmaking pass of the job on Redis, 1,000 bots online
  (bench/arena_service.py);
- fsync: what `appendfsync always` costs in decisions/s (bench/fsync.py);
- chaos: faults injected, games lost and doubled, the longest stall (bench/chaos.py);
- bots: the PIMC house bot against greedy and random players on duplicate boards, its
  decision time, the search curve (bench/bots.py);
- deals: Redis bytes per deal of the record of every deal dealt at 10k, 100k and 1M
  deals, false positives, claims/s (bench/deals.py);
- codec: bytes of an archived game against its JSON and the entropy bound, encode and
  decode speed (bench/codec.py);
- archive: Redis memory per finished game over an arena soak, archive bytes per game,
  GetMatch and a bot's game list with a million games archived, games moved to the
  archive per second (bench/archive.py).

`--quick` runs each in its small mode (minutes, not an hour) for a smoke check; the
figures in docs/PERFORMANCE.md are from a full run. The exit status is the number of
benchmarks that failed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# name -> (script, full arguments, quick arguments)
BENCHES: dict[str, tuple[str, list[str], list[str]]] = {
    "engine": ("engine.py", [], ["--seconds", "0.5", "--runs", "3"]),
    "latency": ("decision_latency.py", [], ["--decisions", "400", "--floor-samples", "400",
                                            "--rounds", "1"]),
    "hosting": ("hosting_scale.py", [], ["--quick"]),
    "tournament": ("tournament.py", ["--no-games"], ["--no-games", "--runs", "1"]),
    "ratings": ("ratings.py", [], ["--quick"]),
    "fit_scale": ("fit_scale.py", [], ["--quick"]),
    "sprt": ("sprt.py", [], ["--quick"]),
    "share": ("share.py", [], ["--rounds", "1", "--short-games", "60", "--warmup", "10"]),
    "swiss": ("swiss.py", [], ["--quick"]),
    "arena": ("arena.py", [], ["--quick"]),
    "arena_service": ("arena_service.py", [], ["--passes", "5"]),
    "fsync": ("fsync.py", [], ["--matches", "20", "--runs", "1"]),
    "chaos": ("chaos.py", [], []),
    "bots": ("bots.py", [], ["--quick"]),
    "deals": ("deals.py", [], ["--quick"]),
    "codec": ("codec.py", [], ["--games", "30"]),
    "archive": ("archive.py", [], ["--quick"]),
    "hosted": ("hosted.py", [], ["--cold", "5", "--matches", "2", "--warm", "4"]),
    "hosted_hostile": ("hosted_hostile.py", [], ["--calls", "200"]),
    "learn": ("learn.py", [], ["--quick"]),
}


def parse(text: str) -> list[tuple[str, str, str]]:
    """The `name: value unit` lines of a benchmark's output, as (name, value, unit)."""
    rows = []
    for raw in text.splitlines():
        if raw.startswith((" ", "\t", "Traceback")) or ": " not in raw:
            continue
        name, _, rest = raw.strip().partition(": ")
        if not name or len(name) > 120 or any(c in name for c in "[]()'\""):
            continue
        value, _, unit = rest.partition(" ")
        rows.append((name, value, unit))
    return rows


def run(name: str, argv: list[str]) -> tuple[int, str, float]:
    """Run one benchmark, echoing its output; (exit status, output, seconds)."""
    print(f"=== {name}: python bench/{' '.join(argv)}", flush=True)
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, str(HERE / argv[0]), *argv[1:]], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    out = []
    for line in proc.stdout:
        out.append(line)
        print(f"  {line}", end="", flush=True)
    return proc.wait(), "".join(out), time.monotonic() - start


def table(results: dict[str, tuple[int, list[tuple[str, str, str]], float]]) -> str:
    """A Markdown table of every figure."""
    lines = ["| benchmark | figure | value | unit |", "|---|---|---|---|"]
    for bench, (status, rows, seconds) in results.items():
        state = "" if status == 0 else f" (FAILED, exit {status})"
        lines.append(f"| **{bench}**{state} | run time | {seconds:.0f} | s |")
        for name, value, unit in rows:
            lines.append(f"| {bench} | {name} | {value} | {unit} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="each benchmark's small mode")
    ap.add_argument("--only", default="", metavar="NAME,...",
                    help=f"some of {','.join(BENCHES)} (default all)")
    ap.add_argument("--chaos-minutes", type=float, default=None,
                    help="minutes of faults in the chaos run (default 10, quick 1)")
    ap.add_argument("--markdown", type=Path, default=None, help="also write the table here")
    args = ap.parse_args(argv)
    only = [n for n in args.only.split(",") if n] or list(BENCHES)
    unknown = [n for n in only if n not in BENCHES]
    if unknown:
        ap.error(f"--only: no benchmark {', '.join(unknown)}; they are {', '.join(BENCHES)}")
    minutes = args.chaos_minutes or (1.0 if args.quick else 10.0)
    results: dict[str, tuple[int, list[tuple[str, str, str]], float]] = {}
    for name in only:
        script, full, quick = BENCHES[name]
        extra = quick if args.quick else full
        if name == "chaos":
            extra = [*extra, "--minutes", f"{minutes:g}"]
        status, out, seconds = run(name, [script, *extra])
        results[name] = (status, parse(out), seconds)
    text = table(results)
    print("\n" + text)
    if args.markdown is not None:
        args.markdown.write_text(text + "\n")
    return sum(1 for status, _, _ in results.values() if status != 0)


if __name__ == "__main__":
    sys.exit(main())
