"""One round of a 3-player Swiss: tables of three from the standings so far.

Bots are indices 0..n-1 in seed order (0 the best seed); a table lists its bots in
seat-position order (every table of a round plays the round's board, which deals
hand p to position p). `pair_tables(points, rounds, seed)` pairs the next round from
each bot's points and the rounds played so far:

1. Byes (`grouping.pick_byes`): n mod 3 bots sit out, those with the fewest byes,
   then the lowest score, then the worst seed; a bye scores `swiss_rules.BYE_POINTS`.
2. Tables: a partition of the others into triples, each seated, at the least cost
   (`grouping.partition`), a table costing, in this order of weight
   (`swiss_rules`): a bot's seat positions spreading by 3 or more (`SPREAD3`); each
   earlier meeting of two of its bots (`REPEAT`); each bot whose positions would
   spread by exactly 2 (`SPREAD2`); then the sum of squared score differences
   between its bots; then, last, the fold (the widest spread of places in the score
   order: a score group's top, middle and bottom thirds meet, so leaders meet late).
   Each table takes the seating of least cost (first in `itertools.permutations`
   order when several tie).

So no two bots meet twice while another partition avoids it, and a bot's counts of
the three positions stay within 1 of each other while that costs no repeat (and
while the byes leave every position enough bots free to take it: Hall's bound,
`swiss_rules.unseatable`), never further apart than 2 while possible; scores are as
close as those allow. The search (`grouping.partition`) is exact in its breaches up
to 25 bots at tables and a seeded local search above, deterministic given the seed
(and the scipy version, whose solvers it calls); the tests check its
breaches against an exact solver on fields up to 30 bots and for no repeats up to
100, and `bench/swiss.py` times it at 1,000 bots.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from store.errors import InvalidArgument
from tournaments import grouping
from tournaments.grouping import IntArray
from tournaments.swiss_rules import (
    LEVELS,
    REPEAT,
    SPREAD2,
    free_masks,
    quarters,
    seat_penalty,
    seatable,
    unseatable,
)

__all__ = ["Round3", "history3", "pair_tables"]

_ORDERS = np.array(list(itertools.permutations(range(3))), dtype=np.int64)  # slot at position
_WHERE = np.argsort(_ORDERS, axis=1)  # per seating, the position of each slot


@dataclass(frozen=True, slots=True)
class Round3:
    """One round: its tables (bots in seat-position order) and the bots with a bye."""

    tables: tuple[tuple[int, int, int], ...]
    byes: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class History3:
    """What the rounds so far leave for the next pairing, as arrays over bots."""

    met: IntArray  # (n, n): times two bots shared a table
    seats: IntArray  # (n, 3): games at each seat position
    byes: IntArray  # (n,)


def history3(n: int, rounds: Sequence[Round3]) -> History3:
    """Meetings, seat counts and byes over `rounds`; InvalidArgument for a malformed round."""
    met = np.zeros((n, n), dtype=np.int64)
    seats = np.zeros((n, 3), dtype=np.int64)
    byes = np.zeros(n, dtype=np.int64)
    for number, rnd in enumerate(rounds, 1):
        flat = [b for t in rnd.tables for b in t] + list(rnd.byes)
        if any(len(t) != 3 for t in rnd.tables) or len(set(flat)) != len(flat) \
                or not all(isinstance(b, int) and 0 <= b < n for b in flat):
            raise InvalidArgument(f"round {number}: tables must be triples of distinct bots "
                                  f"0..{n - 1}, each bot at most once a round")
        if rnd.tables:
            t = np.array(rnd.tables, dtype=np.int64)  # disjoint: no index twice below
            for i, j in itertools.combinations(range(3), 2):
                met[t[:, i], t[:, j]] += 1
                met[t[:, j], t[:, i]] += 1
            for p in range(3):
                seats[t[:, p], p] += 1
        byes[list(rnd.byes)] += 1
    return History3(met, seats, byes)


def pair_tables(points: Sequence[float], rounds: Sequence[Round3], seed: int) -> Round3:
    """The next round's tables and byes (see the module doc); `points[i]` is bot i's."""
    n = len(points)
    if n < 3:
        raise InvalidArgument(f"bot_ids: tables of three need at least 3 bots, got {n}")
    score = quarters(points)
    hist = history3(n, rounds)
    byes = grouping.pick_byes(n % 3, score, [int(b) for b in hist.byes])
    out = set(byes)
    order = sorted((b for b in range(n) if b not in out), key=lambda b: (-score[b], b))
    free = free_masks(hist.seats)
    met = hist.met

    def fits(group: list[int]) -> bool:
        new = group[-1]
        return not any(met[new, b] for b in group[:-1]) \
            and seatable(tuple(sorted(free[b] for b in group)))

    start = grouping.fold(order, score, 3, fits)
    rank = np.zeros(n, dtype=np.int64)
    rank[order] = np.arange(len(order))
    cost = _table_cost(hist, np.array(score, dtype=np.int64), rank)
    part = grouping.partition(start, cost, seed, LEVELS,
                              SPREAD2 * unseatable([free[b] for b in order], 3))
    tables = tuple(
        (g[_ORDERS[a][0]], g[_ORDERS[a][1]], g[_ORDERS[a][2]])
        for g, a in zip(part.groups, part.arrangements, strict=True))
    return Round3(tuple(sorted(tables, key=lambda t: (-max(score[b] for b in t), min(t)))),
                  tuple(byes))


def _table_cost(hist: History3, score: IntArray, rank: IntArray) -> grouping.Cost:
    """The price of tables of three (module doc), each at its best seating."""
    met, pen = hist.met, seat_penalty(hist.seats)
    size = len(score)

    def cost(g: IntArray) -> tuple[IntArray, IntArray, IntArray]:
        a, b, c = g[:, 0], g[:, 1], g[:, 2]
        seat = pen[a][:, _WHERE[:, 0]] + pen[b][:, _WHERE[:, 1]] + pen[c][:, _WHERE[:, 2]]
        best = seat.argmin(axis=1)
        hard = REPEAT * (met[a, b] + met[a, c] + met[b, c]) + seat[np.arange(len(g)), best]
        sa, sb, sc = score[a], score[b], score[c]
        sq = (sa - sb) ** 2 + (sa - sc) ** 2 + (sb - sc) ** 2
        return hard, grouping.soft_key(sq, rank[g], size), best

    return cost
