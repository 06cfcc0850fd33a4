"""The numbers a Swiss is played by: game points, byes, rounds, and the weights of its
pairing rules.

Points. A 3p game gives 1, 1/2 and 0 to first, second and third; bots tied for a
place share the points of the places they span (two tied first get 3/4 each, all
three tied 1/2). A 2v2 game gives the winning team 1 and the other 0, 1/2 each
when it has no winner. So every score is a multiple of a quarter point.

Byes. When the field does not divide into tables (3p: n mod 3 bots; 2v2 teams: one
team of an odd number; rotating partners: n mod 4 bots), the rest sit out the
round. A bye scores `BYE_POINTS` = 1/2, the mean a game gives a seat in both pools,
so sitting out neither gains nor loses in expectation. Byes go to the fewest byes so
far, then the lowest score, then the worst seed: no one sits out twice while another
has not sat out at all.

Rounds. `default_rounds` is ceil(log2 n) + 1 (the chess habit: enough rounds for
the score groups to single out one leader, and one more), at most `max_rounds`.
`max_rounds` is the most rounds in which every entrant could still meet only new
opponents: a 3p bot meets two new table-mates a round, so (n - 1) // 2; a team one
new team, so teams - 1; a bot of rotating partners one new partner, so n - 1 (its
opponents may repeat sooner); never more than `MAX_ROUNDS`. It is an upper bound:
a Swiss pairs one round at a time by score, and a small field can run out of new
meetings sooner (6 bots at tables of three have none left after one round); then the
pairing repeats the fewest meetings it can.

Weights. The pairing's objective, per group, compared in order: `hard` (weighted
counts of rule breaches, a unit of each weight outweighing everything below it in
any one swap) then `soft` (score differences, then the fold; `grouping.soft_key`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING

from store.errors import InvalidArgument
from store.records import MAX_ROUNDS

if TYPE_CHECKING:
    from tournaments.grouping import IntArray

__all__ = [
    "BYE_POINTS",
    "LEVELS",
    "OPPONENT",
    "PLACE_POINTS_3P",
    "REPEAT",
    "SPREAD2",
    "SPREAD3",
    "Mode",
    "default_rounds",
    "free_masks",
    "least_entries",
    "max_rounds",
    "place_points",
    "quarters",
    "seat_penalty",
    "seatable",
    "team_points",
    "unseatable",
]

PLACE_POINTS_3P = (1.0, 0.5, 0.0)
BYE_POINTS = 0.5

# Pairing weights (hard part), strongest first.
SPREAD3 = 10**12  # a bot's seat positions spread by 3 or more: per unit beyond 2
REPEAT = 10**6  # two bots at one table again (2v2 teams: two teams again; partners: a
# partner again): per earlier meeting
SPREAD2 = 10**3  # a bot whose seat positions would spread by exactly 2
OPPONENT = 1  # rotating partners: two bots who were opponents meet as opponents again
LEVELS = (SPREAD3, REPEAT, SPREAD2, OPPONENT)  # a group's counts stay below each ratio


class Mode(StrEnum):
    """What a Swiss pairs: 3p tables, fixed 2v2 teams, or bots with rotating partners."""

    TABLES = "tables"
    TEAMS = "teams"
    PARTNERS = "partners"


def least_entries(mode: Mode) -> int:
    """The fewest entrants (bots, or teams for `TEAMS`) a Swiss of this kind pairs."""
    return {Mode.TABLES: 3, Mode.TEAMS: 2, Mode.PARTNERS: 4}[mode]


def max_rounds(mode: Mode, n: int) -> int:
    """The most rounds a field of n entrants allows (module doc)."""
    least = least_entries(mode)
    if n < least:
        raise InvalidArgument(f"bot_ids: a Swiss of {mode.value} needs at least {least} "
                              f"entrants, got {n}")
    per_round = {Mode.TABLES: 2, Mode.TEAMS: 1, Mode.PARTNERS: 1}[mode]
    return max(1, min(MAX_ROUNDS, (n - 1) // per_round))


def default_rounds(mode: Mode, n: int) -> int:
    """ceil(log2 n) + 1 rounds, at most `max_rounds` (module doc)."""
    return min(math.ceil(math.log2(n)) + 1, max_rounds(mode, n))


def place_points(placement: Sequence[int]) -> tuple[float, ...]:
    """Each seat's points in a 3p game from its places (1 best, equal when tied)."""
    if len(placement) != len(PLACE_POINTS_3P):
        raise InvalidArgument(f"placement: a 3p game has 3 places, got {list(placement)}")
    out = []
    for mine in placement:
        above = sum(p < mine for p in placement)
        tied = sum(p == mine for p in placement)
        out.append(sum(PLACE_POINTS_3P[above:above + tied]) / tied)
    return tuple(out)


def team_points(winner: int | None) -> tuple[float, float]:
    """Each team's points in a 2v2 game: 1 and 0, or 1/2 each without a winner."""
    if winner is None:
        return 0.5, 0.5
    if winner not in (0, 1):
        raise InvalidArgument(f"winner: must be team 0, 1 or none, got {winner!r}")
    return (1.0, 0.0) if winner == 0 else (0.0, 1.0)


def quarters(points: Sequence[float]) -> list[int]:
    """Scores in quarter points (exact integers); InvalidArgument for any other score."""
    out = []
    for p in points:
        q = p * 4
        if not math.isfinite(q) or q != round(q):
            raise InvalidArgument(f"points: a Swiss score is a multiple of 1/4, got {p!r}")
        out.append(round(q))
    return out


def seat_penalty(counts: IntArray) -> IntArray:
    """What placing each entrant at each position costs (n, positions): `SPREAD2` when its
    position counts would then spread by 2, `SPREAD3` per unit beyond, else 0."""
    import numpy as np  # here, not above: the registry imports these rules, numpy stays
    # unloaded (with scipy, 0.5 s) in a process that never pairs, such as the CLI

    after = counts[:, None, :] + np.eye(counts.shape[1], dtype=np.int64)[None, :, :]
    spread = after.max(axis=2) - after.min(axis=2)
    out: IntArray = np.where(spread >= 3, SPREAD3 * (spread - 2),
                             np.where(spread == 2, SPREAD2, 0)).astype(np.int64)
    return out


def free_masks(counts: IntArray) -> list[int]:
    """Per entrant, the positions it can take without a seat penalty, as a bit mask."""
    import numpy as np  # see seat_penalty

    weights = 1 << np.arange(counts.shape[1])
    return [int(x) for x in ((seat_penalty(counts) == 0) * weights).sum(axis=1)]


@functools.cache
def seatable(masks: tuple[int, ...]) -> bool:
    """Whether entrants with these free-position masks can take distinct positions
    (give the masks sorted, so the cache is shared)."""
    if not masks:
        return True
    first, rest = masks[0], masks[1:]
    return any(first >> p & 1 and seatable(tuple(sorted(m & ~(1 << p) for m in rest)))
               for p in range(first.bit_length()))


def unseatable(masks: Sequence[int], k: int) -> int:
    """The fewest entrants that cannot take a free position (Hall's bound), given each
    one's free-position mask, when they fill groups that each open all k positions once.

    For every set of positions, the entrants free only within it must fit the
    places it offers; the largest excess over all sets is a lower bound on the
    entrants seated where their positions spread by 2.
    """
    per = len(masks) // k  # groups: the places each position offers
    worst = 0
    for subset in range(1 << k):
        inside = sum(1 for m in masks if m & ~subset == 0)
        worst = max(worst, inside - bin(subset).count("1") * per)
    return worst
