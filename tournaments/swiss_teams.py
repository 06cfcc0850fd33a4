"""One round of a 2v2 Swiss: fixed teams paired as a two-player Swiss, or bots at
tables of four with rotating partners.

A 2v2 board deals hands 0 to 3 to seats 0 to 3; a team holds seat pair 0 (seats 0
and 2) or seat pair 1 (seats 1 and 3), the colours of this Swiss.

Fixed teams (`pair_teams`): teams are indices 0..t-1 in seed order; a game is (the
team on seat pair 0, the team on seat pair 1). One team sits out when t is odd. A
pairing costs, in this order of weight (`swiss_rules`): a team's seat pairs spreading
by 3 or more; each earlier meeting of the two teams (`REPEAT`); a team whose seat
pairs would spread by 2 (`SPREAD2`: colours alternate, as a chess Swiss's do); the
squared score difference; the fold (top half of a score group against its bottom
half).

Rotating partners (`pair_partners`): bots are indices 0..n-1 in seed order; a table
lists its four bots in seat order, so partners sit at seats 0 and 2 and at 1 and 3.
n mod 4 bots sit out. A table costs, in this order of weight: a bot's seat positions
(0 to 3) spreading by 3 or more; each earlier partnership of two partners (`REPEAT`);
each bot whose positions would spread by 2 (`SPREAD2`); each earlier meeting of two
opponents as opponents (`OPPONENT`); then the squared score differences between all
four bots plus the squared difference of the two teams' summed scores (so four bots
of one score group split into even teams); then the fold (quarters of a score group);
a table's seating, last, makes its teams even by seed (the best partners the worst).

Byes and the search as for 3p tables (`swiss_pairing`, `grouping`): exact in its
breaches up to 68 teams or 16 partners at tables, a seeded local search above,
deterministic given the seed.
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
    OPPONENT,
    REPEAT,
    SPREAD2,
    free_masks,
    quarters,
    seat_penalty,
    seatable,
    unseatable,
)

__all__ = [
    "PartnerHistory",
    "PartnerRound",
    "TeamHistory",
    "TeamRound",
    "pair_partners",
    "pair_teams",
    "partner_history",
    "team_history",
]

_SIDES = np.array(list(itertools.permutations(range(2))), dtype=np.int64)  # slot per side
_SEATS = np.array(list(itertools.permutations(range(4))), dtype=np.int64)  # slot per seat


@dataclass(frozen=True, slots=True)
class TeamRound:
    """One round of fixed teams: games (team on seat pair 0, team on seat pair 1), byes."""

    games: tuple[tuple[int, int], ...]
    byes: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TeamHistory:
    """What the rounds so far leave for the next pairing of teams."""

    met: IntArray  # (t, t): games between two teams
    sides: IntArray  # (t, 2): games on each seat pair
    byes: IntArray  # (t,)


@dataclass(frozen=True, slots=True)
class PartnerRound:
    """One round of rotating partners: tables (bots in seat order) and byes."""

    tables: tuple[tuple[int, int, int, int], ...]
    byes: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class PartnerHistory:
    """What the rounds so far leave for the next pairing of rotating partners."""

    partners: IntArray  # (n, n): games as partners
    opponents: IntArray  # (n, n): games as opponents
    seats: IntArray  # (n, 4): games at each seat
    byes: IntArray  # (n,)


def _check(number: int, groups: Sequence[Sequence[int]], byes: Sequence[int], k: int,
           n: int, what: str) -> None:
    flat = [x for g in groups for x in g] + list(byes)
    if any(len(g) != k for g in groups) or len(set(flat)) != len(flat) \
            or not all(isinstance(x, int) and 0 <= x < n for x in flat):
        raise InvalidArgument(f"round {number}: {what} must be {k} distinct entrants "
                              f"0..{n - 1}, each at most once a round")


def team_history(t: int, rounds: Sequence[TeamRound]) -> TeamHistory:
    """Meetings, seat pairs and byes of t teams over `rounds`."""
    met = np.zeros((t, t), dtype=np.int64)
    sides = np.zeros((t, 2), dtype=np.int64)
    byes = np.zeros(t, dtype=np.int64)
    for number, rnd in enumerate(rounds, 1):
        _check(number, rnd.games, rnd.byes, 2, t, "games")
        for a, b in rnd.games:
            met[a, b] += 1
            met[b, a] += 1
            sides[a, 0] += 1
            sides[b, 1] += 1
        byes[list(rnd.byes)] += 1
    return TeamHistory(met, sides, byes)


def partner_history(n: int, rounds: Sequence[PartnerRound]) -> PartnerHistory:
    """Partnerships, opponents, seats and byes of n bots over `rounds`."""
    partners = np.zeros((n, n), dtype=np.int64)
    opponents = np.zeros((n, n), dtype=np.int64)
    seats = np.zeros((n, 4), dtype=np.int64)
    byes = np.zeros(n, dtype=np.int64)
    for number, rnd in enumerate(rounds, 1):
        _check(number, rnd.tables, rnd.byes, 4, n, "tables")
        for table in rnd.tables:
            for s, bot in enumerate(table):
                seats[bot, s] += 1
                partners[bot, table[(s + 2) % 4]] += 1
                opponents[bot, table[(s + 1) % 4]] += 1
                opponents[bot, table[(s + 3) % 4]] += 1
        byes[list(rnd.byes)] += 1
    return PartnerHistory(partners, opponents, seats, byes)


def _start(points: Sequence[float], byes_so_far: IntArray, k: int, least: int,
           what: str) -> tuple[list[int], list[int], list[int]]:
    """(scores in quarters, byes, the others in score order)."""
    n = len(points)
    if n < least:
        raise InvalidArgument(f"bot_ids: {what} need at least {least} entrants, got {n}")
    score = quarters(points)
    byes = grouping.pick_byes(n % k, score, [int(b) for b in byes_so_far])
    out = set(byes)
    order = sorted((x for x in range(n) if x not in out), key=lambda x: (-score[x], x))
    return score, byes, order


def _ranks(n: int, order: list[int]) -> IntArray:
    rank = np.zeros(n, dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank


def pair_teams(points: Sequence[float], rounds: Sequence[TeamRound], seed: int) -> TeamRound:
    """The next round of fixed teams (module doc); `points[i]` is team i's."""
    hist = team_history(len(points), rounds)
    score, byes, order = _start(points, hist.byes, 2, 2, "2v2 teams")
    free = free_masks(hist.sides)
    met = hist.met

    def fits(group: list[int]) -> bool:
        return not (len(group) == 2 and met[group[0], group[1]]) \
            and seatable(tuple(sorted(free[x] for x in group)))

    start = grouping.fold(order, score, 2, fits)
    cost = _team_cost(hist, np.array(score, dtype=np.int64), _ranks(len(points), order))
    part = grouping.partition(start, cost, seed, LEVELS,
                              SPREAD2 * unseatable([free[x] for x in order], 2))
    games = tuple((g[_SIDES[a][0]], g[_SIDES[a][1]])
                  for g, a in zip(part.groups, part.arrangements, strict=True))
    return TeamRound(tuple(sorted(games, key=lambda g: (-max(score[x] for x in g), min(g)))),
                     tuple(byes))


def _team_cost(hist: TeamHistory, score: IntArray, rank: IntArray) -> grouping.Cost:
    met, pen = hist.met, seat_penalty(hist.sides)
    size = len(score)
    where = np.argsort(_SIDES, axis=1)

    def cost(g: IntArray) -> tuple[IntArray, IntArray, IntArray]:
        a, b = g[:, 0], g[:, 1]
        seat = pen[a][:, where[:, 0]] + pen[b][:, where[:, 1]]
        best = seat.argmin(axis=1)
        hard = REPEAT * met[a, b] + seat[np.arange(len(g)), best]
        return hard, grouping.soft_key((score[a] - score[b]) ** 2, rank[g], size), best

    return cost


def pair_partners(points: Sequence[float], rounds: Sequence[PartnerRound],
                  seed: int) -> PartnerRound:
    """The next round of rotating partners (module doc); `points[i]` is bot i's."""
    hist = partner_history(len(points), rounds)
    score, byes, order = _start(points, hist.byes, 4, 4, "2v2 rotating partners")
    free = free_masks(hist.seats)
    met = hist.partners + hist.opponents

    def fits(group: list[int]) -> bool:
        # stricter than the rules (a past opponent could still be a new partner), which
        # only makes the start better
        new = group[-1]
        return not any(met[new, x] for x in group[:-1]) \
            and seatable(tuple(sorted(free[x] for x in group)))

    start = grouping.fold(order, score, 4, fits)
    cost = _partner_cost(hist, np.array(score, dtype=np.int64), _ranks(len(points), order))
    part = grouping.partition(start, cost, seed, LEVELS,
                              SPREAD2 * unseatable([free[x] for x in order], 4))
    tables = tuple(tuple(g[int(slot)] for slot in _SEATS[a])
                   for g, a in zip(part.groups, part.arrangements, strict=True))
    return PartnerRound(
        tuple(sorted(((t[0], t[1], t[2], t[3]) for t in tables),
                     key=lambda t: (-max(score[x] for x in t), min(t)))),
        tuple(byes))


_PAIRS = tuple(itertools.combinations(range(4), 2))  # slot pairs, indexed 0..5
# per seating: the slot pairs that are partners (seats 0 and 2, seats 1 and 3)
_MATES = np.array([[_PAIRS.index(tuple(sorted((int(q[0]), int(q[2]))))),
                    _PAIRS.index(tuple(sorted((int(q[1]), int(q[3])))))] for q in _SEATS])
_WHERE4 = np.argsort(_SEATS, axis=1)  # per seating, the seat of each slot


def _team_gap(values: IntArray) -> IntArray:
    """Per group (m, 4 slots) and seating: team 0's sum of `values` minus team 1's."""
    out: IntArray = (values[:, _SEATS[:, 0]] + values[:, _SEATS[:, 2]]
                     - values[:, _SEATS[:, 1]] - values[:, _SEATS[:, 3]])
    return out


def _partner_cost(hist: PartnerHistory, score: IntArray, rank: IntArray) -> grouping.Cost:
    mate, opp, pen = hist.partners, hist.opponents, seat_penalty(hist.seats)
    size = len(score)

    def cost(g: IntArray) -> tuple[IntArray, IntArray, IntArray]:
        # per slot pair (m, 6), then per seating by picking columns: cheaper than
        # looking every seating up in the n x n matrices
        mates = np.stack([mate[g[:, i], g[:, j]] for i, j in _PAIRS], axis=1)
        opps = np.stack([opp[g[:, i], g[:, j]] for i, j in _PAIRS], axis=1)
        m0, m1 = _MATES[:, 0], _MATES[:, 1]
        seat = sum(pen[g[:, s]][:, _WHERE4[:, s]] for s in range(4))
        hard = (REPEAT * (mates[:, m0] + mates[:, m1])
                + OPPONENT * (opps.sum(axis=1)[:, None] - opps[:, m0] - opps[:, m1]) + seat)
        sc = score[g]
        pairs = np.zeros(len(g), dtype=np.int64)
        for i, j in _PAIRS:
            pairs += (sc[:, i] - sc[:, j]) ** 2
        soft = grouping.soft_key(pairs[:, None] + _team_gap(sc) ** 2, rank[g], size)
        # last, teams even by seed: the best partners the worst
        return grouping.best_of(hard, soft, _team_gap(rank[g]) ** 2)

    return cost
