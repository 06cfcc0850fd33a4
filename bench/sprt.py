"""Test-of-a-change benchmark: the GSPRT's error rates, its length, and what pairing saves.

Prints `name: value unit` lines only. `--quick` runs fewer repetitions. Run it
under `nice -n 15`; it is numpy throughout (every run of a batch steps at once).

The simulation (the model of bench/ratings.py): each bot has a true
natural-log strength theta; a board gives each seat position p (3p: seats
0, 1, 2; 2v2: the team of seats 0/2 and the team of 1/3) a luck
L_p = -log(2 Z_p^2), Z_p ~ N(0, 1); a game ranks its sides by
2 strength + L_p + Gumbel, a side's strength the mean of its bots' (as in
`ratings.model`). 2 Gumbel has the law of Gumbel - log(2 Z^2), so every game
is, over deals, exactly Plackett-Luce in the true strengths: the test's true
Elo follows from them in closed form (`ratings.sprt.expected_pair_score`),
and the luck is 3/4 of the variance of a side's performance.

A run of the test: baseline B (strength 0), candidate C, two house
opponents (3p; 2v2: a house partner and a house team) of fixed strengths not
equal to B's (`FIELD`), so the test's Elo is not simply the pool difference;
C's strength is solved so that the test's true Elo is elo0, or elo1.

- paired: board k is played by C and by B in the same seat position
  (rotating with k) against the same opponents in the same seats, both games
  on the board's luck with their own performance noise; the pair score goes
  into the nine bins and the GSPRT (`ratings.sprt.llr`, the code the service
  runs) is checked after every pair.
- unpaired (trinomial): C and B alternate games, each on a fresh deal; each
  game is scored from C's side (C's game s_C, B's game 1 - s_B), whose mean
  over a C and a B game is the same mean pair score; the same GSPRT runs on
  the three bins 0, 1/2, 1 after every game. (A C game and a B game are not
  identically distributed; read as one trinomial their spread is a little
  larger than it is, which costs the unpaired test under 2% here.)

Each hypothesis runs `--runs` times (2,000) with no game limit (a run that
reaches `--max-games` without a verdict is counted and printed). Printed per
test: the share of runs that accepted H1 at elo0 (target <= alpha) and at
elo1 (target >= 1 - beta), each with its Monte-Carlo standard error; the
mean games to a verdict; the ratio unpaired/paired at each.

Fixed games: `--fixed-runs` runs of 200 and 2,000 pairs at the true elo1;
the share whose 95% interval (`ratings.sprt.estimate`) holds the true test
Elo, with its Monte-Carlo error; and the mean pair score against the model's
prediction (checks the closed form the true Elo comes from).

Why pairing pays: printed as `board_score_correlation` (the correlation of
s_C and s_B on one board) and `pair_variance_ratio` (the unpaired variance
of a pair score over the paired one): the games to a verdict shrink by about
that ratio.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import brentq

# `python bench/sprt.py` puts bench/ first on the path: the repository root goes in front.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ratings import ELO_PER_NAT
from ratings.sprt import (
    PAIR_SCORES,
    Sprt,
    elo_of_score,
    estimate,
    expected_pair_score,
    llr,
    score_of_elo,
)

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
TRINOMIAL = np.array([0.0, 0.5, 1.0])
# The house field's pool ratings (Elo) around B = 0: 3p the two opponents; 2v2 the partner,
# then the opposing team. Deliberately not B's strength (module doc).
FIELD = {3: (-40.0, 60.0), 4: (50.0, -30.0, 20.0)}


@dataclass(frozen=True, slots=True)
class World:
    """The bots of one simulated test: natural-log strengths, C's solved from the truth."""

    players: int
    candidate: float
    field: tuple[float, ...]

    @property
    def sides(self) -> int:
        """Sides of a game: 3 (3p) or 2 (2v2)."""
        return 3 if self.players == 3 else 2


def world(players: int, true_elo: float) -> World:
    """C's strength such that the test's true Elo (model, module doc) is `true_elo`."""
    field = FIELD[players]
    target = score_of_elo(true_elo, players)
    def gap(c: float) -> float:
        return expected_pair_score(players, c, 0.0, field) - target
    c_elo = float(brentq(gap, -2000.0, 2000.0, xtol=1e-12))
    return World(players, c_elo / ELO_PER_NAT, tuple(f / ELO_PER_NAT for f in field))


def _luck(rng: np.random.Generator, n: int, sides: int) -> FloatArray:
    z = rng.normal(size=(n, sides))
    out: FloatArray = -np.log(2.0 * z * z)
    return out


def _hero_quarters(rng: np.random.Generator, w: World, hero: float, luck: FloatArray,
                   board: int) -> IntArray:
    """The hero's game score in quarters, one game per row of `luck` (no ties: continuous).

    Seat positions rotate with the board: 3p the hero sits in position board % 3 with the
    opponents in the other two, their order swapped every third board; 2v2 the hero's team
    takes position board % 2. The rotation changes nothing in law (the positions' luck is
    exchangeable) but is what the planner does.
    """
    n = luck.shape[0]
    if w.players == 3:
        pos = board % 3
        first, second = ((pos + 1) % 3, (pos + 2) % 3)
        if (board // 3) % 2:
            first, second = second, first
        strength = np.empty(3)
        strength[pos], strength[first], strength[second] = hero, w.field[0], w.field[1]
        u = 2.0 * strength + luck + rng.gumbel(size=(n, 3))
        beaten = (u[:, [first, second]] < u[:, [pos]]).sum(axis=1)
        out: IntArray = (2 * beaten).astype(np.int64)
        return out
    pos = board % 2
    partner, team = w.field[0], (w.field[1] + w.field[2]) / 2.0
    strength = np.empty(2)
    strength[pos], strength[1 - pos] = (hero + partner) / 2.0, team
    u = 2.0 * strength + luck + rng.gumbel(size=(n, 2))
    won: IntArray = (4 * (u[:, pos] > u[:, 1 - pos])).astype(np.int64)
    return won


def paired_pairs(rng: np.random.Generator, w: World, n: int, board: int) -> IntArray:
    """n pair scores (eighths) of board number `board`: C and B on the same luck."""
    luck = _luck(rng, n, w.sides)
    c = _hero_quarters(rng, w, w.candidate, luck, board)
    b = _hero_quarters(rng, w, 0.0, luck, board)
    out: IntArray = 4 + c - b
    return out


def unpaired_game(rng: np.random.Generator, w: World, n: int, game: int) -> IntArray:
    """n trinomial bins (0, 1/2, 1 from C's side) of game number `game` on fresh deals: C's
    game when `game` is even, B's when odd."""
    board = game // 2
    luck = _luck(rng, n, w.sides)
    if game % 2 == 0:
        out: IntArray = _hero_quarters(rng, w, w.candidate, luck, board) // 2
        return out
    b: IntArray = 2 - _hero_quarters(rng, w, 0.0, luck, board) // 2
    return b


@dataclass(frozen=True, slots=True)
class Outcome:
    """Runs of one test at one truth: who accepted H1, and games to a verdict."""

    h1: FloatArray  # 1.0 where H1 was accepted
    games: FloatArray
    undecided: int


def run_test(rng: np.random.Generator, w: World, test: Sprt, runs: int, paired: bool,
             max_games: int) -> Outcome:
    """`runs` sequential tests, all stepped at once; each stops at its first crossing."""
    mu0, mu1 = test.scores
    scores = PAIR_SCORES if paired else TRINOMIAL
    counts = np.zeros((runs, scores.size))
    active = np.arange(runs)
    h1 = np.zeros(runs)
    games = np.zeros(runs)
    step = 0
    per_step = 2 if paired else 1
    while active.size and (step + 1) * per_step <= max_games:
        if paired:
            bins = paired_pairs(rng, w, active.size, step)
        else:
            bins = unpaired_game(rng, w, active.size, step)
        counts[active, bins] += 1.0
        step += 1
        value = llr(counts[active], scores, mu0, mu1)
        up, down = value >= test.upper, value <= test.lower
        done = up | down
        h1[active[up]] = 1.0
        games[active[done]] = step * per_step
        active = active[~done]
    decided = np.ones(runs, dtype=bool)
    decided[active] = False
    return Outcome(h1[decided], games[decided], int(active.size))


def board_figures(rng: np.random.Generator, w: World, n: int) -> tuple[float, float]:
    """The correlation of s_C and s_B on one board, and var(unpaired pair) / var(paired)."""
    luck = _luck(rng, n, w.sides)
    boards = np.arange(n) % 6
    c = np.empty(n)
    b = np.empty(n)
    for k in range(6):
        rows = boards == k
        c[rows] = _hero_quarters(rng, w, w.candidate, luck[rows], k) / 4.0
        b[rows] = _hero_quarters(rng, w, 0.0, luck[rows], k) / 4.0
    rho = float(np.corrcoef(c, b)[0, 1])
    paired = float(np.var(c - b))
    unpaired = float(np.var(c) + np.var(b))
    return rho, unpaired / paired


def fixed_games(rng: np.random.Generator, w: World, runs: int, pairs: int,
                players: int) -> tuple[float, float]:
    """Coverage of the 95% interval of the test's Elo, and the mean pair score, over runs."""
    truth = elo_of_score(expected_pair_score(players, w.candidate * ELO_PER_NAT, 0.0,
                                             FIELD[players]), players)
    counts = np.zeros((runs, PAIR_SCORES.size))
    for k in range(pairs):
        bins = paired_pairs(rng, w, runs, k)
        np.add.at(counts, (np.arange(runs), bins), 1.0)
    hits = 0
    for row in counts:
        est = estimate(row, players)
        hits += est.low <= truth <= est.high
    mean = float((counts @ PAIR_SCORES).sum() / counts.sum())
    return hits / runs, mean


def _rate(x: FloatArray) -> tuple[float, float]:
    p = float(x.mean()) if x.size else math.nan
    return p, math.sqrt(p * (1 - p) / x.size) if x.size else math.nan


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 runs instead of 2,000")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--players", type=int, choices=(3, 4), default=3)
    parser.add_argument("--elo0", type=float, default=0.0)
    parser.add_argument("--elo1", type=float, default=None,
                        help="default 20 (3p) or 40 (2v2): the test's Elo (ratings.sprt)")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--beta", type=float, default=0.05)
    parser.add_argument("--max-games", type=int, default=400_000)
    parser.add_argument("--fixed-runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=2025)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    runs = 200 if args.quick else args.runs
    fixed_runs = 200 if args.quick else args.fixed_runs
    players = args.players
    elo1 = args.elo1 if args.elo1 is not None else (20.0 if players == 3 else 40.0)
    test = Sprt(args.elo0, elo1, args.alpha, args.beta, players)
    tag = "3p" if players == 3 else "2v2"
    print(f"{tag}_elo0: {test.elo0:g} elo")
    print(f"{tag}_elo1: {test.elo1:g} elo")
    print(f"{tag}_runs_per_test: {runs} runs")
    mean_games: dict[tuple[str, str], float] = {}
    for which, true_elo in (("elo0", test.elo0), ("elo1", test.elo1)):
        w = world(players, true_elo)
        print(f"{tag}_pool_difference_at_{which}: {w.candidate * ELO_PER_NAT:.2f} elo")
        for design, paired in (("paired", True), ("unpaired", False)):
            out = run_test(rng, w, test, runs, paired, args.max_games)
            rate, err = _rate(out.h1)
            name = f"{tag}_{design}_at_{which}"
            print(f"{name}_h1_accepted: {rate:.4f} fraction")
            print(f"{name}_h1_accepted_mc_error: {err:.4f} fraction")
            print(f"{name}_mean_games: {out.games.mean():.0f} games")
            print(f"{name}_median_games: {np.median(out.games):.0f} games")
            print(f"{name}_undecided: {out.undecided} runs")
            mean_games[(design, which)] = float(out.games.mean())
    for which in ("elo0", "elo1"):
        ratio = mean_games[("unpaired", which)] / mean_games[("paired", which)]
        print(f"{tag}_unpaired_over_paired_games_at_{which}: {ratio:.2f} ratio")
    w1 = world(players, test.elo1)
    rho, var_ratio = board_figures(rng, w1, 400_000)
    print(f"{tag}_board_score_correlation: {rho:.3f} rho")
    print(f"{tag}_pair_variance_ratio: {var_ratio:.2f} unpaired/paired")
    predicted = expected_pair_score(players, w1.candidate * ELO_PER_NAT, 0.0, FIELD[players])
    for pairs in (200, 2000):
        coverage, mean = fixed_games(rng, w1, fixed_runs, pairs, players)
        err = math.sqrt(0.95 * 0.05 / fixed_runs)
        print(f"{tag}_fixed_{pairs}_pairs_coverage95: {coverage:.4f} fraction")
        print(f"{tag}_fixed_{pairs}_pairs_coverage95_mc_error: {err:.4f} fraction")
        if pairs == 2000:
            print(f"{tag}_mean_pair_score_simulated: {mean:.5f} score")
            print(f"{tag}_mean_pair_score_model: {predicted:.5f} score")
    print(f"{tag}_run_time: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
