"""Rating benchmark: accuracy and honest intervals on simulated 3p round robins, LOS, speed.

Prints `name: value unit` lines only. `--quick` runs a smaller version.

The simulation: 16 bots with true strengths drawn from N(0, 200 Elo). Tables
are those of the round robin's own schedule on boards
(`tournaments.round_robin.board_rounds3`, the default `duplicate: boards`:
for 16 bots 16 rounds of 5 disjoint tables, every pair twice, each bot at
each seat position equally often); every table of a round plays the same
board (one game per table), and the schedule repeats, seat positions
rotating by one between repetitions as the round robin rotates them, until
the bots average the target number of games. `--schedule greedy` plays the
tables of `triple_design(16)` arranged by `rounds_of` instead, the schedule
before boards (13 rounds of 1 to 4 tables, positions unbalanced).

Luck: a board gives each seat POSITION p a luck value L_p = -log(2 Z_p^2),
Z_p ~ N(0, 1), shared by every table of the round. A game samples its
finishing order from Plackett-Luce with utilities 2 theta + L_p (theta the
true natural-log strength at that position; PL sampling adds its own Gumbel
performance noise). This exact construction is chosen because 2 Gumbel =
Gumbel + (-log 2 Z^2) in law (from E^2 = E' * 2 Z^2 for exponentials, the
duplication formula), so every single game is marginally exactly PL(theta):
the true strengths are the Elo a bot would show over endless fresh deals, and
a rating method can be judged against them without an attenuation bias.
(Luck simply added to theta would make each game marginally PL(k theta) with
k < 1: any consistent fit would be judged against the wrong scale, and the
coverage would fall towards 0 as the games grow.)
Luck is then 3/4 of the noise variance (sd 1.7 times the performance
noise's): a game is mostly decided by the deal, and boards share that luck.
The positions' luck is independent: a ranking sees only differences of
utilities, so this is as general as any exchangeable dependence between the
hands of one deal (they are dealt from one set). Not simulated: a fixed
advantage of a seat (the schedules balance positions, so it would cancel)
and luck that helps strong bots more than weak ones. The fit is not told
this law: it models luck as Gaussian and estimates its size (`luck_sd_30`,
`gain_30`: what it found at 30 games, against the simulation's sd pi/sqrt(2)
= 2.22 and gain 2, see `ratings.luck` for why they differ).

Coverage is the share of bots whose 95% interval holds their centred true
strength; RMSE is in Elo after centring both. `rmse_30_oracle_prior` refits
with the simulation's own spread (200 Elo) as the prior, which no real pool
knows: what the best shrinkage would add, as a reference.

LOS: a bot A 50 Elo above its rival B; each round both play the field (ten
bots from N(0, 200 Elo)) at separate tables, in the same seat position. With
boards both tables share the round's luck (so it cancels between A and B);
with fresh deals each game has its own. The figure is the number of games
each needs for a true 50 Elo lead to show at 95% LOS (50 = 1.645 sd(diff)),
from the fit's sd(diff) at 300 games, averaged over repetitions;
`los_sd_ratio_*` is the spread of the estimated difference over those
repetitions divided by that fitted sd (1 is honest, above 1 overconfident).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.stats import norm, spearmanr

# `python bench/ratings.py` puts bench/ first on the path, where this file would shadow the
# `ratings` package: the repository root goes in front.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ratings import ELO_PER_NAT, PRIOR_SD, Game, GameTable, fit, fit_table
from tournaments.design import rounds_of, triple_design
from tournaments.round_robin import board_rounds3

FloatArray = NDArray[np.float64]
Tables = tuple[tuple[int, int, int], ...]
BOTS = 16
SPREAD = 200.0  # Elo sd of the true strengths
SCHEDULES = ("boards", "greedy")


def schedule(name: str) -> list[Tables]:
    """Each round's tables, in seat-position order (see the module doc)."""
    if name == "boards":
        return [tuple(t) for t in board_rounds3(BOTS, False)]
    return [r.tables for r in rounds_of(triple_design(BOTS), BOTS)]


def _luck(rng: np.random.Generator) -> FloatArray:
    """A board's luck per seat position (see the module doc)."""
    z = rng.normal(size=3)
    out: FloatArray = -np.log(2.0 * z * z)
    return out


def _play(rng: np.random.Generator, theta: FloatArray, luck: FloatArray) -> tuple[int, ...]:
    """Places (1 best) of one game by seat, utilities 2 theta + luck, PL sampling."""
    u = 2.0 * theta + luck + rng.gumbel(size=len(theta))
    places = [0] * len(theta)
    for pos, seat in enumerate(np.argsort(-u)):
        places[int(seat)] = pos + 1
    return tuple(places)


def round_robin(rng: np.random.Generator, target: int, theta: FloatArray,
                rounds: Sequence[Tables]) -> list[Game]:
    """Games of the repeated round robin until the bots average `target` games."""
    games: list[Game] = []
    played = np.zeros(BOTS)
    k = 0
    while played.mean() < target:
        rep, rnd = divmod(k, len(rounds))
        luck = _luck(rng)
        for table in rounds[rnd]:
            r = rep % 3
            seats = table[r:] + table[:r]
            places = _play(rng, theta[list(seats)], luck)
            games.append(Game(f"g{len(games):06d}", f"b{k}",
                              tuple((f"bot{s:02d}",) for s in seats), places))
            played[list(seats)] += 1
        k += 1
    return games


def accuracy(
    rng: np.random.Generator, target: int, reps: int, rounds: Sequence[Tables],
    prior_sd: float = PRIOR_SD,
) -> tuple[float, float, float, float, float]:
    """Mean Spearman rho, RMSE (Elo, root of the mean square), 95% coverage, and the mean
    fitted luck sd and gain, over reps."""
    rhos, sq, hits, total, lucks, gains = [], 0.0, 0, 0, [], []
    for _ in range(reps):
        true = rng.normal(0.0, SPREAD, BOTS)
        result = fit(round_robin(rng, target, true / ELO_PER_NAT, rounds), prior_sd=prior_sd)
        lucks.append(result.luck_sd)
        gains.append(result.gain)
        truth = {f"bot{i:02d}": t - true.mean() for i, t in enumerate(true)}
        est = np.array([r.rating for r in result.ratings])
        tru = np.array([truth[r.bot_id] for r in result.ratings])
        rhos.append(float(spearmanr(est, tru)[0]))
        sq += float(((est - tru) ** 2).sum())
        hits += sum(r.ci_low <= truth[r.bot_id] <= r.ci_high for r in result.ratings)
        total += len(result.ratings)
    return (float(np.mean(rhos)), math.sqrt(sq / total), hits / total,
            float(np.mean(lucks)), float(np.mean(gains)))


def duel(rng: np.random.Generator, rounds: int, boards: bool) -> tuple[float, float]:
    """A (+50) and B (0) against a field: the fit's var(diff) and the estimated diff (Elo)."""
    field = rng.normal(0.0, SPREAD, 10)
    strength = {"A": 50.0, "B": 0.0} | {f"f{i}": s for i, s in enumerate(field)}
    games: list[Game] = []
    for r in range(rounds):
        luck = _luck(rng)
        opponents = rng.choice(10, size=4, replace=False)
        for hero, pair in (("A", opponents[:2]), ("B", opponents[2:])):
            seats = [f"f{pair[0]}", f"f{pair[1]}"]
            seats.insert(r % 3, hero)  # both heroes sit in the same position this round
            theta = np.array([strength[s] for s in seats]) / ELO_PER_NAT
            places = _play(rng, theta, luck if boards else _luck(rng))
            games.append(Game(f"g{len(games):06d}", f"b{r}" if boards else "",
                              tuple((s,) for s in seats), places))
    result = fit(games)
    a, b = result.rating("A"), result.rating("B")
    ids = [x.bot_id for x in result.ratings]
    i, j = ids.index("A"), ids.index("B")
    v = result.covariance
    return float(v[i, i] + v[j, j] - 2 * v[i, j]), a.rating - b.rating


def games_to_lead(rng: np.random.Generator, reps: int, boards: bool) -> tuple[float, float]:
    """Games each needs for a true 50 Elo lead to reach 95% LOS, and empirical/fitted sd."""
    rounds = 300
    out = [duel(rng, rounds, boards) for _ in range(reps)]
    var = float(np.mean([o[0] for o in out]))
    needed = rounds * var * (norm.ppf(0.95) / 50.0) ** 2
    honesty = float(np.std([o[1] for o in out], ddof=1)) / math.sqrt(var)
    return needed, honesty


def big_table(rng: np.random.Generator, games: int, bots: int, tables: int = 3) -> GameTable:
    """A large 3p pool as columns: each round a random split of the bots into disjoint
    tables, every `tables` of them sharing a board (its luck as in the module doc)."""
    theta = rng.normal(0.0, SPREAD, bots) / ELO_PER_NAT
    per_round = bots // 3
    rounds = -(-games // per_round)
    per_board = -(-per_round // tables)
    seats = rng.permuted(np.tile(np.arange(bots), (rounds, 1)), axis=1)[:, : per_round * 3]
    seats = seats.reshape(rounds, per_round, 3)
    z = rng.normal(size=(rounds, per_board, 3))
    luck = np.repeat(-np.log(2.0 * z * z), tables, axis=1)[:, :per_round]
    u = 2.0 * theta[seats] + luck + rng.gumbel(size=seats.shape)
    places = np.argsort(np.argsort(-u, axis=2), axis=2) + 1
    board = (np.arange(rounds)[:, None] * per_board + np.arange(per_round)[None, :] // tables)
    ids = np.strings.add("g", np.strings.zfill(np.arange(games).astype(str), 7))
    return GameTable(ids, board.ravel()[:games], seats.reshape(-1, 3)[:games],
                     places.reshape(-1, 3)[:games], tuple(f"bot{i:04d}" for i in range(bots)),
                     tuple(f"b{i}" for i in range(rounds * per_board)))


def big_pool(rng: np.random.Generator, games: int, bots: int, tables: int = 3) -> list[Game]:
    """`big_table` as `Game`s."""
    return list(big_table(rng, games, bots, tables).games())


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, a smaller pool")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--schedule", choices=SCHEDULES, default="boards",
                        help="the round robin's tables (module doc)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    reps = 8 if args.quick else 40
    rounds = schedule(args.schedule)
    for target in (10, 30, 100, 300):
        rho, rmse, coverage, luck, gain = accuracy(rng, target, reps, rounds)
        print(f"spearman_{target}: {rho:.3f} rho")
        print(f"rmse_{target}: {rmse:.1f} elo")
        print(f"coverage_{target}: {coverage:.3f} fraction")
        if target == 30:
            print(f"luck_sd_30: {luck:.2f} nat")
            print(f"gain_30: {gain:.2f} ratio")
    # The same fit with the simulation's own spread as its prior: what the best shrinkage adds.
    _, floor, _, _, _ = accuracy(rng, 30, reps, rounds, prior_sd=SPREAD)
    print(f"rmse_30_oracle_prior: {floor:.1f} elo")
    duels = 20 if args.quick else 400
    for boards in (True, False):
        needed, honesty = games_to_lead(rng, duels, boards)
        name = "boards" if boards else "fresh"
        print(f"los95_games_{name}: {needed:.0f} games")
        print(f"los_sd_ratio_{name}: {honesty:.2f} empirical/fitted")
    # The fit at scale (bench/fit_scale.py has more): boards of 3 tables, as columns.
    size, bots = (20_000, 300) if args.quick else (100_000, 1000)
    table = big_table(rng, size, bots)
    start = time.perf_counter()
    result = fit_table(table)
    elapsed = time.perf_counter() - start
    assert len(result.ratings) == bots
    print(f"fit_{size // 1000}k_3p_{bots}_bots: {elapsed:.2f} s")


if __name__ == "__main__":
    main()
