"""Helpers for the Swiss tests: simulated events, and the pairing rules counted again
independently (plain Python) with their exact optimum (an integer program)."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import csc_array

from tournaments.swiss_pairing import Round3, pair_tables
from tournaments.swiss_rules import place_points
from tournaments.swiss_teams import PartnerRound, TeamRound, pair_partners, pair_teams

Breaches = tuple[int, ...]  # counts, most serious first


@dataclass
class Step:
    """One round as paired, with what the pairing saw."""

    points: list[float]
    before: list  # the rounds played before it
    round: object


def _places(rng: random.Random, strength: Sequence[float]) -> list[int]:
    perf = [s + rng.gauss(0, 1) for s in strength]
    order = sorted(range(len(perf)), key=lambda i: -perf[i])
    out = [0] * len(perf)
    for place, seat in enumerate(order, 1):
        out[seat] = place
    return out


def play3(n: int, rounds: int, seed: int) -> Iterator[Step]:
    """A 3p Swiss with random results (bot strength falls with its seed)."""
    rng = random.Random(seed)
    points = [0.0] * n
    hist: list[Round3] = []
    for r in range(rounds):
        rnd = pair_tables(points, hist, seed=r)
        yield Step(list(points), list(hist), rnd)
        hist.append(rnd)
        for table in rnd.tables:
            for bot, p in zip(table, place_points(_places(rng, [-b / n for b in table])),
                              strict=True):
                points[bot] += p
        for bot in rnd.byes:
            points[bot] += 0.5


def play_teams(t: int, rounds: int, seed: int) -> Iterator[Step]:
    """A Swiss of fixed 2v2 teams with random results."""
    rng = random.Random(seed)
    points = [0.0] * t
    hist: list[TeamRound] = []
    for r in range(rounds):
        rnd = pair_teams(points, hist, seed=r)
        yield Step(list(points), list(hist), rnd)
        hist.append(rnd)
        for a, b in rnd.games:
            first = _places(rng, [-a / t, -b / t])[0] == 1
            points[a if first else b] += 1
        for x in rnd.byes:
            points[x] += 0.5


def play_partners(n: int, rounds: int, seed: int) -> Iterator[Step]:
    """A Swiss of rotating partners with random results."""
    rng = random.Random(seed)
    points = [0.0] * n
    hist: list[PartnerRound] = []
    for r in range(rounds):
        rnd = pair_partners(points, hist, seed=r)
        yield Step(list(points), list(hist), rnd)
        hist.append(rnd)
        for s0, s1, s2, s3 in rnd.tables:
            first = _places(rng, [-(s0 + s2) / n, -(s1 + s3) / n])[0] == 1
            for bot in ((s0, s2) if first else (s1, s3)):
                points[bot] += 1
        for bot in rnd.byes:
            points[bot] += 0.5


# ------------------------------------------------------------------ the rules, again


def spread_units(counts: Sequence[int], position: int) -> tuple[int, int]:
    """(units beyond a spread of 2, 1 if the spread becomes exactly 2) after one more game
    at `position`."""
    after = list(counts)
    after[position] += 1
    spread = max(after) - min(after)
    return max(0, spread - 2), int(spread == 2)


def table_breaches(seated: Sequence[int], met: np.ndarray, seats: np.ndarray) -> Breaches:
    """3p: (seat units beyond 2, repeats, seats at exactly 2) of a seated table."""
    beyond = two = 0
    for pos, bot in enumerate(seated):
        b, t = spread_units(seats[bot].tolist(), pos)
        beyond, two = beyond + b, two + t
    repeats = sum(int(met[a, b]) for a, b in itertools.combinations(seated, 2))
    return beyond, repeats, two


def team_breaches(game: Sequence[int], met: np.ndarray, sides: np.ndarray) -> Breaches:
    """Fixed teams: (side units beyond 2, rematches, sides at exactly 2) of a game."""
    beyond = two = 0
    for side, team in enumerate(game):
        b, t = spread_units(sides[team].tolist(), side)
        beyond, two = beyond + b, two + t
    return beyond, int(met[game[0], game[1]]), two


def partner_breaches(seated: Sequence[int], partners: np.ndarray, opponents: np.ndarray,
                     seats: np.ndarray) -> Breaches:
    """Rotating partners: (seat units beyond 2, partners again, seats at exactly 2,
    opponents again) of a seated table."""
    beyond = two = 0
    for pos, bot in enumerate(seated):
        b, t = spread_units(seats[bot].tolist(), pos)
        beyond, two = beyond + b, two + t
    again = int(partners[seated[0], seated[2]] + partners[seated[1], seated[3]])
    opp = sum(int(opponents[seated[s], seated[(s + 1) % 4]]) for s in range(4))
    return beyond, again, two, opp


def total(parts: Sequence[Breaches]) -> Breaches:
    """Counts summed over groups."""
    return tuple(sum(col) for col in zip(*parts, strict=True))


def optimum(members: Sequence[int], k: int,
            price: Callable[[tuple[int, ...]], Breaches]) -> Breaches:
    """The least breaches (lexicographic) of any partition of `members` into groups of k,
    each group at its best seating (`price` takes a seated group): by integer program."""
    groups = list(itertools.combinations(members, k))
    best = [min(price(tuple(p)) for p in itertools.permutations(g)) for g in groups]
    levels = len(best[0])
    weight = 1
    cost = np.zeros(len(groups))
    for level in reversed(range(levels)):
        col = np.array([b[level] for b in best], dtype=float)
        cost += weight * col
        weight *= int(len(members) // k * col.max()) + 1
    index = {x: i for i, x in enumerate(members)}
    rows = [index[x] for g in groups for x in g]
    cols = [j for j in range(len(groups)) for _ in range(k)]
    cover = csc_array((np.ones(len(rows)), (rows, cols)), shape=(len(members), len(groups)))
    res = milp(cost, constraints=LinearConstraint(cover, 1, 1),
               integrality=np.ones(len(groups)), bounds=Bounds(0, 1),
               options={"mip_rel_gap": 0.0})
    assert res.status == 0, res.message
    chosen = [best[j] for j in np.flatnonzero(np.rint(res.x) == 1)]
    return total(chosen)
