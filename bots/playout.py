"""The greedy policy on masks, fast enough to play out thousands of hands a second.

`greedy_tile` is `bots.greedy`'s play rule and `greedy_bid`, `greedy_discard`,
`greedy_contract` its auction, widow and trump rules, restated on 28-bit masks
(the tests check they choose what `greedy_action` chooses). `playout` plays the
rest of a hand with every seat following the greedy play rule and returns the
tricks each seat took: the rollout evaluator of `bots.pimc`.
"""

from __future__ import annotations

from bots.tables import BEATS, COST, DOUBLES, LEAD_ORDER, PIPS, TRUMP_ORDER, TRUMPS, tiles_of
from moon.actions import MOON
from moon.contracts import FOLLOW, NO_TRUMP, POWER
from moon.tiles import ALL_TILES

__all__ = [
    "best_contract",
    "bid_estimate",
    "bid_on",
    "estimate",
    "greedy_bid",
    "greedy_contract",
    "greedy_discard",
    "greedy_tile",
    "playout",
]

_HIGH = tuple(t.high for t in ALL_TILES)
_DOUBLE_OF = tuple(n * (n + 1) // 2 + n for n in range(7))  # the index of n-n


def estimate(held: int, contract: int, gone: int = 0) -> float:
    """`bots.greedy.estimate_tricks` of a mask (same sums in the same order)."""
    est = 0.0
    if contract != NO_TRUMP:
        run = True
        for i in TRUMP_ORDER[contract]:
            if gone >> i & 1:
                continue
            if held >> i & 1:
                est += 1.0 if run else 0.6
            else:
                run = False
    for t in reversed(tiles_of(held & ~TRUMPS[contract])):
        if DOUBLES >> t & 1:
            est += 0.8
        elif _HIGH[t] >= 5 and held >> _DOUBLE_OF[_HIGH[t]] & 1:
            est += 0.4
    return est


def best_contract(held: int) -> tuple[int, float]:
    """`bots.greedy.best_contract` of a mask: longest trumps, then estimate, then lowest."""
    best = max(range(9), key=lambda c: ((held & TRUMPS[c]).bit_count(), estimate(held, c), -c))
    return best, estimate(held, best)


def greedy_bid(held: int, high: int, min_bid: int, can_pass: bool, widow: bool,
               partner: bool) -> int:
    """The greedy bid (0 for a pass) of a 7-tile hand when the highest bid so far is `high`."""
    return bid_on(bid_estimate(held, widow, partner), high, min_bid, can_pass)


def bid_estimate(held: int, widow: bool, partner: bool) -> float:
    """What the greedy player expects to take with a 7-tile hand, widow and partner in."""
    return best_contract(held)[1] + (0.3 if widow else 0.0) + (1.0 if partner else 0.0)


def bid_on(est: float, high: int, min_bid: int, can_pass: bool) -> int:
    """The greedy bid (0 for a pass) on an estimate, when the highest bid so far is `high`."""
    if est >= 7.5:
        return MOON
    want = min(int(est), 7)
    options = [b for b in range(max(min_bid, high + 1), 8) if b <= want]
    if options:
        return options[-1]
    if can_pass:
        return 0
    return max(min_bid, high + 1) if high < 7 else MOON


def greedy_discard(held: int, contract: int | None) -> int:
    """The tile the greedy player discards from its eight (`contract` once named)."""
    def score(t: int) -> tuple[float, int]:
        rest = held & ~(1 << t)
        est = estimate(rest, contract) if contract is not None else best_contract(rest)[1]
        return est, -PIPS[t]

    return max(tiles_of(held), key=score)


def greedy_contract(held: int) -> int:
    """The contract the greedy player names."""
    return best_contract(held)[0]


def greedy_tile(n: int, contract: int, hand: int, leader: int, trick: list[int],
                gone: int) -> int:
    """The greedy player's play from `hand`: `trick` holds the tiles played so far in the
    trick (led by `leader`), `gone` every tile played this hand."""
    if not trick:
        return _lead(contract, hand, gone)
    led = trick[0]
    legal = hand & FOLLOW[contract][led] or hand
    tiles = tiles_of(legal)
    if len(tiles) == 1:
        return tiles[0]
    pw = POWER[contract][led]
    best = 0
    for j in range(1, len(trick)):
        if pw[trick[j]] > pw[trick[best]]:
            best = j
    bp = pw[trick[best]]
    if n == 4 and best % 2 == len(trick) % 2 and (
        len(trick) == 3 or bp >= 100 or DOUBLES >> trick[best] & 1
    ):  # the partner is winning: throw the cheapest tile
        return min(tiles, key=COST[contract].__getitem__)
    winners = [t for t in tiles if pw[t] > bp]
    if winners:
        return min(winners, key=pw.__getitem__)
    return min(tiles, key=COST[contract].__getitem__)


def _lead(contract: int, hand: int, gone: int) -> int:
    if contract != NO_TRUMP:
        for i in TRUMP_ORDER[contract]:
            if gone >> i & 1:
                continue
            if hand >> i & 1:
                return i  # the top trump left: draw trumps with it
            break
    doubles = hand & DOUBLES & ~TRUMPS[contract]
    if doubles:
        return doubles.bit_length() - 1  # the highest double
    beats = BEATS[contract]
    for t in LEAD_ORDER[contract]:  # a tile that heads its suit among what is left
        if hand >> t & 1 and not beats[t] & ~gone:
            return t
    return min(tiles_of(hand), key=COST[contract].__getitem__)


def playout(n: int, contract: int, hands: list[int], leader: int, trick: list[int],
            won: list[int], gone: int, stop: int = 0) -> tuple[list[int], list[int], int, int]:
    """Play on with the greedy rule for every seat until `stop` tricks are left (0: the
    hand's end); return the tricks each seat took, the hands, the leader and `gone`.

    `hands`, `won` and `trick` are not changed; `trick` is the trick in progress (tiles
    in order, led by `leader`), `gone` every tile played so far this hand.
    """
    hands = hands[:]
    won = won[:]
    trick = trick[:]
    power = POWER[contract]
    left = 7 - sum(won)
    while True:
        k = len(trick)
        if not k and left <= stop:
            return won, hands, leader, gone
        seat = (leader + k) % n
        hand = hands[seat]
        t = greedy_tile(n, contract, hand, leader, trick, gone) if (
            k or hand & (hand - 1)) else hand.bit_length() - 1
        hands[seat] = hand ^ 1 << t
        gone |= 1 << t
        trick.append(t)
        if k + 1 == n:
            pw = power[trick[0]]
            best = 0
            for j in range(1, n):
                if pw[trick[j]] > pw[trick[best]]:
                    best = j
            leader = (leader + best) % n
            won[leader] += 1
            left -= 1
            trick = []
