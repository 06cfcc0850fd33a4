"""The batch rating fit at scale: seconds to fit 100,000 and 1,000,000 games, old and new.

Prints `name: value unit` lines only. `--quick` fits 20,000 and 100,000 games instead.

Pools: `bench.ratings.big_table`, 3p games among 1,000 bots (strengths N(0, 200 Elo)),
each round a random split of the bots into tables, every 3 tables sharing a board
whose seat positions have luck (as bench/ratings.py simulates it), so 100,000 games
are 33,334 boards. The fit reads them as columns (`ratings.fit_table`), cold: the time
is the whole fit (canonical order, pack, the luck's sd, the ratings, the intervals),
not the making of the table, which the archive's bulk read does
(`table_100k_wall` says what building the table from a cursor's rows costs).

The old path is the fit as of commit OLD_REV (before the columnar input and the faster
solver): it runs in a child process from `git archive` of that commit, on the same
games as `Game` objects (made outside its timing; `old_games_100k_wall` is what making
them costs), at 100,000 games, and at 1,000,000 only with `--old-1m` (minutes). The
machine is shared, so old and new run in the same invocation and the figures to read
are their ratios (`speedup_*`); CPU seconds (`time.process_time`) are printed beside
wall seconds, and each fit runs `--repeat` times, the fastest kept.

`warm_1m`: the fit of 1% more games (1,010,000) started from the 1,000,000-game fit
(`fit_table(start=...)`), as the stack refits a pool when results arrive; it is the
same fit as a cold one (checked: `warm_cold_diff_1m`, Elo).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.ratings import big_table  # noqa: E402
from ratings import Fit, GameTable, fit_table  # noqa: E402

OLD_REV = "9990c6a"
BOTS = 1000
TABLES = 3
T = TypeVar("T")

# The old fit, in a child process: argv = (old tree, table .npz); prints one JSON line.
_OLD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
from ratings import Game, fit
d = np.load(sys.argv[2])
bots, units = d["bots"].tolist(), d["units"].tolist()
t = time.perf_counter()
games = [Game(i, units[u] if u >= 0 else "", tuple((bots[b],) for b in s), tuple(p))
         for i, u, s, p in zip(d["game_id"].tolist(), d["unit"].tolist(),
                                d["seat_bot"].tolist(), d["place"].tolist())]
build = time.perf_counter() - t
best = None
for _ in range(int(sys.argv[3])):
    t, c = time.perf_counter(), time.process_time()
    f = fit(games)
    took = (time.perf_counter() - t, time.process_time() - c)
    best = took if best is None or took[0] < best[0] else best
print(json.dumps({"build": build, "wall": best[0], "cpu": best[1],
                  "ratings": {r.bot_id: r.rating for r in f.ratings}}))
"""


def timed(run: Callable[[], T], repeat: int) -> tuple[T, float, float]:
    """The result of the fastest of `repeat` runs, its wall and CPU seconds."""
    best: tuple[T, float, float] | None = None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        out = run()
        took = (out, time.perf_counter() - wall, time.process_time() - cpu)
        best = took if best is None or took[1] < best[1] else best
    assert best is not None
    return best


def old_fit(table: GameTable, repeat: int) -> dict[str, Any]:
    """The fit of OLD_REV on the table's games, in a child process."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "old"
        tree.mkdir()
        archive = subprocess.run(["git", "archive", OLD_REV, "ratings", "store"], cwd=ROOT,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        data = Path(tmp) / "table.npz"
        np.savez(data, game_id=table.game_id, unit=table.unit, seat_bot=table.seat_bot,
                 place=table.place, bots=np.array(table.bots), units=np.array(table.units))
        out = subprocess.run([sys.executable, "-c", _OLD, str(tree), str(data), str(repeat)],
                             capture_output=True, text=True, check=True).stdout
    result: dict[str, Any] = json.loads(out.splitlines()[-1])
    return result


def max_diff(new: Fit, old: dict[str, float]) -> float:
    """The largest difference between two fits' ratings (Elo)."""
    return max(abs(r.rating - old[r.bot_id]) for r in new.ratings)


def label(games: int) -> str:
    """100k, 1m."""
    return f"{games // 1_000_000}m" if games % 1_000_000 == 0 else f"{games // 1000}k"


def from_cursor_rows(table: GameTable) -> float:
    """Seconds to build the table again from rows as a cursor returns them (tuples)."""
    rows = list(zip(table.game_id.tolist(), [table.units[u] for u in table.unit.tolist()],
                    *table.seat_bot.T.tolist(), *table.place.T.tolist(), strict=True))
    start = time.perf_counter()
    ids, boards, *seats = zip(*rows, strict=True)
    GameTable.of(ids, boards, np.column_stack(seats[:3]), np.column_stack(seats[3:]),
                 table.bots)
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20k and 100k games")
    parser.add_argument("--old-1m", action="store_true", help="the old fit at 1M games too")
    parser.add_argument("--no-old", action="store_true", help="skip the old fit")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each fit, best kept")
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)
    small, large = (20_000, 100_000) if args.quick else (100_000, 1_000_000)
    rng = np.random.default_rng(args.seed)
    # One pool: its first `small` games are a pool of their own (whole boards of 3 tables,
    # as `small` is a multiple of 3 tables), its 1% more the warm start's new games.
    whole = big_table(rng, large + large // 100, BOTS, TABLES)
    for size in (small, large):
        table = whole.take(np.arange(size))
        name = label(size)
        if size == small:
            print(f"table_{name}_wall: {from_cursor_rows(table):.2f} s")
        new, wall, cpu = timed(lambda table=table: fit_table(table), args.repeat)
        print(f"fit_{name}_wall: {wall:.2f} s")
        print(f"fit_{name}_cpu: {cpu:.2f} s")
        print(f"fit_{name}_iterations: {new.iterations} steps")
        print(f"fit_{name}_luck_sd: {new.luck_sd:.4f} nat")
        if not args.no_old and (size == small or args.old_1m):
            old = old_fit(table, args.repeat)
            print(f"old_games_{name}_wall: {old['build']:.2f} s")
            print(f"old_fit_{name}_wall: {old['wall']:.2f} s")
            print(f"old_fit_{name}_cpu: {old['cpu']:.2f} s")
            print(f"speedup_{name}_wall: {old['wall'] / wall:.1f} x")
            print(f"speedup_{name}_cpu: {old['cpu'] / cpu:.1f} x")
            print(f"old_new_max_diff_{name}: {max_diff(new, old['ratings']):.1e} elo")
        if size == large:
            warm, wall, cpu = timed(lambda new=new: fit_table(whole, start=new), args.repeat)
            print(f"warm_{name}_wall: {wall:.2f} s")
            print(f"warm_{name}_cpu: {cpu:.2f} s")
            print(f"warm_{name}_iterations: {warm.iterations} steps")
            cold = fit_table(whole)
            diff = max(abs(a.rating - b.rating) for a, b in
                       zip(warm.ratings, cold.ratings, strict=True))
            print(f"warm_cold_diff_{name}: {diff:.1e} elo")


if __name__ == "__main__":
    main()
