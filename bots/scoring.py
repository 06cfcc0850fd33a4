"""What a hand is worth to a seat: the hand's points (RULES.md) turned into one number.

A seat's objective is its side's points for the hand minus the others': in 2v2
its team's points less the other team's; in 3 players twice its own points less
the sum of the other two (its lead over the average of the others, doubled so it
stays an integer). Taking a trick from either opponent, or setting a bidder,
counts; the three seats' objectives sum to zero, as a game's outcome does.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

from bots.solver import won_code
from moon import Rules
from moon.actions import MOON

__all__ = ["hand_points", "utility", "value_table"]


def hand_points(rules: Rules, bidder: int, bid: int, won: Sequence[int]) -> list[int]:
    """Points per side (seat in 3p, team in 4p) of a hand played out, as the engine scores it."""
    need = 7 if bid == MOON else bid
    marks = rules.scoring == "marks"
    if rules.players == 3:
        made = won[bidder] >= need
        if marks:
            points = [0, 0, 0] if made else [1, 1, 1]
            points[bidder] = 1 if made else 0
        else:
            points = list(won)
            points[bidder] = bid if made else -bid
        return points
    team = bidder & 1
    other = 1 - team
    taken = won[team] + won[team + 2]
    made = taken >= need
    points = [0, 0]
    if marks:
        points[team] = 1 if made else 0
        points[other] = 0 if made else 1
    else:
        points[team] = (MOON if bid == MOON else taken) if made else -bid
        points[other] = won[other] + won[other + 2]
    return points


def utility(rules: Rules, seat: int, bidder: int, bid: int, won: Sequence[int]) -> int:
    """The hand's worth to `seat` (see the module's note)."""
    points = hand_points(rules, bidder, bid, won)
    if rules.players == 4:
        return points[seat & 1] - points[1 - (seat & 1)]
    return 3 * points[seat] - sum(points)


def value_table(rules: Rules, seat: int, bidder: int, bid: int) -> list[int]:
    """`utility` for every way seven tricks can fall, indexed by `bots.solver.won_code`."""
    n = rules.players
    table = [0] * (1 << 3 * n)
    for won in product(range(8), repeat=n):
        if sum(won) == 7:
            table[won_code(won)] = utility(rules, seat, bidder, bid, won)
    return table
