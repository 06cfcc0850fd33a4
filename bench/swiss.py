"""Swiss benchmark: does a 3p Swiss find the strongest bots better than a random pairing
or a partial round robin at the same number of games? And how long does a pairing take?

Prints `name: value unit` lines only. `--quick` runs fewer repetitions and skips the
2v2 timings.

The simulation (the game model of bench/ratings.py): 64 bots with true strengths
drawn from N(0, 200 Elo) afresh for every repetition and given to the seed order at
random (so a seed says nothing: the three methods start equal). Each round every
table plays the round's board: seat position p gets luck L_p = -log(2 Z_p^2),
Z_p ~ N(0, 1), shared by every table of the round, and a game's finishing order is
Plackett-Luce with utilities 2 theta + L_p (so each game is marginally PL(theta)),
sampled as 2 theta + L_p + G_b with Gumbel form G_b drawn per bot and round. The
three methods play each repetition with the same strengths, luck and form (common
random numbers), so their differences are measured on the same events.
7 rounds (`default_rounds` for 64 bots), each with 21 tables and one bye, so every
method plays 147 games, 6.9 per bot:

- swiss: `pair_tables` from the points so far;
- random: random tables each round, the bye to a bot with the fewest byes;
- round_robin: the first 7 rounds of the 3p round robin on boards
  (`round_robin.board_rounds3(64)`: every pair of bots meets twice over its 64
  rounds, so 7 rounds are a partial round robin with each pair meeting at most once).

All three are ranked alike, by `swiss_standings` (points, Buchholz, duplicate; no
ratings). Figures per method, each with its Monte-Carlo standard error (`_se`): how
often the strongest bot finishes first (`top1`), the Spearman correlation of the
final order with the true strengths (`spearman`), and the share of the true top 8
among the final top 8 (`top8`); plus the Swiss's edge over random pairing on the
same strengths (paired differences). `table_gap_ratio` is the mean score gap between
table-mates in rounds 2 to 7 over that of a random split of the same bots (lower is
better).

Timing: a 1,000-bot 3p Swiss of 11 rounds (`default_rounds`), results from the same
game model; the slowest and the median pairing of a round (wall clock), and the
slowest in CPU time of this process (what the pairing costs on a machine it shares).
Then 1,000 bots with rotating partners and 1,000 fixed teams (2v2), 11 and 10 rounds.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.stats import spearmanr

# `python bench/swiss.py` puts bench/ first on the path, where bench/ratings.py would shadow
# the `ratings` package: the repository root goes in front.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ratings import ELO_PER_NAT
from tournaments.round_robin import board_rounds3
from tournaments.swiss_pairing import Round3, pair_tables
from tournaments.swiss_rules import Mode, default_rounds
from tournaments.swiss_standings import RoundRecord, SwissGame, swiss_standings
from tournaments.swiss_teams import PartnerRound, TeamRound, pair_partners, pair_teams

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BOTS = 64
SPREAD = 200.0  # Elo sd of the true strengths
PLACE_POINTS = np.array([1.0, 0.5, 0.0])
METHODS = ("swiss", "random", "round_robin")
Pairer = Callable[[list[float], list[Round3], np.random.Generator, int], Round3]


def _luck(rng: np.random.Generator, seats: int) -> FloatArray:
    """A board's luck per seat position (bench/ratings.py)."""
    z = rng.normal(size=seats)
    out: FloatArray = -np.log(2.0 * z * z)
    return out


def _play(theta: FloatArray, tables: IntArray, luck: FloatArray, form: FloatArray
          ) -> FloatArray:
    """Points (m, 3) of one round's tables (seat order) on one board: `luck` per seat
    position, `form` (Gumbel) per bot."""
    u = 2.0 * theta[tables] + luck[None, :] + form[tables]
    places = np.argsort(np.argsort(-u, axis=1), axis=1)
    out: FloatArray = PLACE_POINTS[places]
    return out


def _swiss(points: list[float], hist: list[Round3], rng: np.random.Generator,
           r: int) -> Round3:
    return pair_tables(points, hist, seed=r)


def _random(points: list[float], hist: list[Round3], rng: np.random.Generator,
            r: int) -> Round3:
    n = len(points)
    byes = np.zeros(n, dtype=np.int64)
    for rnd in hist:
        byes[list(rnd.byes)] += 1
    fewest = np.flatnonzero(byes == byes.min())
    out = rng.choice(fewest, size=n % 3, replace=False).tolist()
    rest = rng.permutation([b for b in range(n) if b not in out]).reshape(-1, 3)
    return Round3(tuple((int(a), int(b), int(c)) for a, b, c in rest), tuple(out))


def _round_robin(rounds: Sequence[Sequence[tuple[int, int, int]]]) -> Pairer:
    def pair(points: list[float], hist: list[Round3], rng: np.random.Generator,
             r: int) -> Round3:
        tables = tuple(rounds[r])
        seated = {b for t in tables for b in t}
        return Round3(tables, tuple(b for b in range(len(points)) if b not in seated))
    return pair


def _event(rng: np.random.Generator, theta: FloatArray, luck: FloatArray, form: FloatArray,
           pair: Pairer) -> tuple[list[int], float, float]:
    """One event (rounds of `luck`, `form`): the final order (best first), and the summed
    score gaps between table-mates in rounds 2 on, ours and a random split's."""
    n = len(theta)
    points = [0.0] * n
    hist: list[Round3] = []
    records: list[RoundRecord] = []
    side_points: dict[str, tuple[float, ...]] = {}
    gap = gap_random = 0.0
    for r in range(len(luck)):
        rnd = pair(points, hist, rng, r)
        hist.append(rnd)
        tables = np.array(rnd.tables, dtype=np.int64)
        if r:
            pts = np.array(points)
            gap += _gap(pts, tables)
            gap_random += _gap(pts, rng.permutation(tables.ravel()).reshape(-1, 3))
        won = _play(theta, tables, luck[r], form[r])
        games = []
        for t, (table, got) in enumerate(zip(rnd.tables, won, strict=True)):
            mid = f"r{r}-t{t}"
            side_points[mid] = tuple(float(x) for x in got)
            games.append(SwissGame(mid, tuple((b,) for b in table)))
            for b, x in zip(table, got, strict=True):
                points[b] += float(x)
        for b in rnd.byes:
            points[b] += 0.5
        records.append(RoundRecord(tuple(games), rnd.byes))
    rows = swiss_standings(n, records, side_points)
    return [row.entry for row in rows], gap, gap_random


def _gap(points: FloatArray, tables: IntArray) -> float:
    p = points[tables]
    return float((np.abs(p[:, 0] - p[:, 1]) + np.abs(p[:, 0] - p[:, 2])
                  + np.abs(p[:, 1] - p[:, 2])).sum())


def compare(rng: np.random.Generator, reps: int, rounds: int) -> dict[str, FloatArray]:
    """Per method and repetition: top1, spearman, top8 (arrays of length reps), and the
    table gap ratio's two sums for the Swiss."""
    design = board_rounds3(BOTS, False)
    pairers: dict[str, Pairer] = {"swiss": _swiss, "random": _random,
                                  "round_robin": _round_robin(design)}
    out: dict[str, list[float]] = {}
    for _ in range(reps):
        theta = rng.normal(0.0, SPREAD, BOTS) / ELO_PER_NAT
        # the same luck and form for every method: only who meets whom differs
        luck = np.array([_luck(rng, 3) for _ in range(rounds)])
        form = rng.gumbel(size=(rounds, BOTS))
        truth = np.argsort(-theta)
        for name, pair in pairers.items():
            order, gap, gap_random = _event(rng, theta, luck, form, pair)
            place = np.empty(BOTS)
            place[order] = np.arange(BOTS)
            out.setdefault(f"top1_{name}", []).append(float(order[0] == truth[0]))
            out.setdefault(f"spearman_{name}", []).append(float(spearmanr(-place, theta)[0]))
            out.setdefault(f"top8_{name}", []).append(len(set(order[:8]) & set(truth[:8])) / 8)
            if name == "swiss":
                out.setdefault("gap", []).append(gap)
                out.setdefault("gap_random", []).append(gap_random)
    return {k: np.array(v) for k, v in out.items()}


def _time_rounds(n: int, rounds: int, mode: Mode, rng: np.random.Generator
                 ) -> tuple[list[float], list[float]]:
    """Seconds per pairing over a simulated event of n entrants: wall clock, and this
    process's CPU time (the machine may be shared)."""
    theta = rng.normal(0.0, SPREAD, n) / ELO_PER_NAT
    points = [0.0] * n
    spent: list[float] = []
    cpu: list[float] = []
    h3: list[Round3] = []
    h2: list[TeamRound] = []
    h4: list[PartnerRound] = []
    for r in range(rounds):
        start, start_cpu = time.perf_counter(), time.process_time()
        if mode is Mode.TABLES:
            r3 = pair_tables(points, h3, seed=r)
            h3.append(r3)
            groups, byes = np.array(r3.tables), r3.byes
        elif mode is Mode.TEAMS:
            r2 = pair_teams(points, h2, seed=r)
            h2.append(r2)
            groups, byes = np.array(r2.games), r2.byes
        else:
            r4 = pair_partners(points, h4, seed=r)
            h4.append(r4)
            groups, byes = np.array(r4.tables), r4.byes
        spent.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        if mode is Mode.TABLES:
            won = _play(theta, groups, _luck(rng, 3), rng.gumbel(size=n))
            for table, got in zip(groups, won, strict=True):
                for b, x in zip(table, got, strict=True):
                    points[int(b)] += float(x)
        else:
            strength = theta[groups]
            if mode is Mode.PARTNERS:
                strength = strength[:, [0, 1]] + strength[:, [2, 3]]
            first = (strength[:, 0] + rng.logistic(size=len(groups))
                     > strength[:, 1] + rng.logistic(size=len(groups)))
            for row, side in zip(groups, np.where(first, 0, 1), strict=True):
                for s in range(side, len(row), 2):
                    points[int(row[s])] += 1.0
        for b in byes:
            points[b] += 0.5
    return spent, cpu


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, no 2v2 timing")
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 1000)")
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    reps = args.reps or (60 if args.quick else 1000)
    rounds = default_rounds(Mode.TABLES, BOTS)
    print(f"bots: {BOTS} count")
    print(f"rounds: {rounds} rounds")
    print(f"games_per_bot: {rounds * (BOTS // 3) * 3 / BOTS:.2f} games")
    print(f"repetitions: {reps} count")
    figures = compare(rng, reps, rounds)
    for stat in ("top1", "spearman", "top8"):
        for name in METHODS:
            x = figures[f"{stat}_{name}"]
            unit = "rho" if stat == "spearman" else "fraction"
            print(f"{stat}_{name}: {x.mean():.3f} {unit}")
            print(f"{stat}_{name}_se: {x.std(ddof=1) / math.sqrt(len(x)):.3f} {unit}")
        edge = figures[f"{stat}_swiss"] - figures[f"{stat}_random"]
        print(f"{stat}_swiss_minus_random: {edge.mean():.3f} difference")
        print(f"{stat}_swiss_minus_random_se: {edge.std(ddof=1) / math.sqrt(len(edge)):.3f} "
              "difference")
    print(f"table_gap_ratio_swiss: {figures['gap'].sum() / figures['gap_random'].sum():.3f} "
          "ratio")
    kinds = [(Mode.TABLES, 1000, default_rounds(Mode.TABLES, 1000))]
    if not args.quick:
        kinds += [(Mode.PARTNERS, 1000, default_rounds(Mode.PARTNERS, 1000)),
                  (Mode.TEAMS, 1000, default_rounds(Mode.TEAMS, 1000))]
    for mode, n, count in kinds:
        spent, cpu = _time_rounds(n, count, mode, rng)
        print(f"pair_{mode.value}_{n}_max: {max(spent):.3f} s")
        print(f"pair_{mode.value}_{n}_median: {float(np.median(spent)):.3f} s")
        print(f"pair_{mode.value}_{n}_max_cpu: {max(cpu):.3f} s")


if __name__ == "__main__":
    main()
