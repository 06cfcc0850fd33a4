"""Deterministic deals: the seed alone fixes every hand's deal and the first bidder.

The generator is our own (SplitMix64 and a mixed-radix shuffle), so deals never
depend on the Python version's `random` module: a seed deals the same tiles on
every machine, forever. Hand `k`'s deal depends only on the seed and `k`, never
on play, which is what lets duplicate tournaments replay a deal for every
seating.

The shuffle is a Fisher-Yates whose swap indices are the mixed-radix digits of
one 128-bit number `r`: position `i` (from the last down to 1) swaps with
`r mod (i+1)`, then `r //= i+1`. Golden transcripts pin its output, so the
digits must never change; only how they are computed may (see `_PLANS`).
"""

from __future__ import annotations

from moon.errors import RulesError

__all__ = ["MAX_SEED", "check_seed", "deal_masks", "deal_order", "first_bidder", "mix64"]

_M = (1 << 64) - 1
MAX_SEED = _M
_FIRST_BIDDER_STREAM = 0xF1B5_D00D_0000_0001
_SECOND_HALF_STREAM = 0x5851F42D4C957F2D


def mix64(x: int) -> int:
    """SplitMix64's finaliser: a strong 64-bit to 64-bit mix."""
    x = (x + 0x9E3779B97F4A7C15) & _M
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M
    return x ^ (x >> 31)


def check_seed(seed: object) -> int:
    """The seed as an int in 0..2**64-1, or a RulesError saying what is allowed."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise RulesError(f"bad seed {seed!r}: a seed is an integer from 0 to {MAX_SEED}")
    return seed


# How to draw the swap digits of a shuffle, in order.
#
# Peeling digits off the 128-bit `r` one at a time makes every step a
# multi-digit big-int division. Instead the radices are grouped so that each
# group's product stays below 2**30 (one CPython int digit): one big division
# by the product yields the group's digits as a small number `c`, and the
# digits come off `c` with fast single-digit arithmetic. Mixed-radix digits are
# the same whichever way they are grouped, so this deals exactly what digit by
# digit division deals. A plan is a tuple of (product, ((i, i+1), ...)).
_Plan = tuple[tuple[int, tuple[tuple[int, int], ...]], ...]


def _plan(length: int, keep: int) -> _Plan:
    """The steps i = length-1 down to `keep`+1 (all of them when keep is 0)."""
    groups = []
    i = length - 1
    while i > keep:
        steps: list[tuple[int, int]] = []
        product = 1
        while i > keep and product * (i + 1) < 1 << 30:
            steps.append((i, i + 1))
            product *= i + 1
            i -= 1
        groups.append((product, tuple(steps)))
    return tuple(groups)


_PLANS: dict[tuple[int, int], _Plan] = {
    (n, keep): _plan(n, keep) for n in range(29) for keep in (0, 6)
}

# mix64(hand) for the first hands of a game: a constant of the generator, like
# the tables in `moon.contracts`, that saves one of a deal's four mixes.
_HAND_KEYS: tuple[int, ...] = tuple(mix64(hand) for hand in range(256))


def _shuffle(seed: int, hand: int, items: list[int], keep: int = 0) -> None:
    """Permute `items` in place: the shuffle of hand `hand` of game `seed`.

    Fisher-Yates fixes the last position first; with `keep` > 0 it stops once
    only positions 0..keep remain, leaving them in an unspecified order.
    """
    h = mix64(seed ^ (_HAND_KEYS[hand] if 0 <= hand < 256 else mix64(hand)))
    r = (mix64(h) << 64) | mix64(h ^ _SECOND_HALF_STREAM)
    plan = _PLANS.get((len(items), keep)) or _plan(len(items), keep)
    for product, steps in plan:
        c = r % product
        r //= product
        for i, radix in steps:
            j = c % radix
            c //= radix
            items[i], items[j] = items[j], items[i]


def deal_order(seed: int, hand: int, tiles: tuple[int, ...]) -> list[int]:
    """A permutation of `tiles` for hand number `hand` (0-based) of game `seed`."""
    out = list(tiles)
    _shuffle(seed, hand, out)
    return out


def deal_masks(
    seed: int, hand: int, tile_bits: tuple[int, ...], players: int
) -> tuple[list[int], int]:
    """`deal_order`'s deal as the engine holds it: hand masks per seat and the widow.

    `tile_bits` is `1 << t` for each tile `t` of the tiles `deal_order` would
    get, in the same order. Seat `s` (of 3 or 4) gets the tiles at positions
    7s..7s+6 of `deal_order`; the widow is the tile at position 7*players, or -1
    when there is none. Shuffling the bits makes each hand the sum of a slice,
    and as seat 0's hand is a set, the last six swaps (which only reorder
    positions 0..6) are skipped.
    """
    bits = list(tile_bits)
    _shuffle(seed, hand, bits, keep=6)
    hands = [sum(bits[0:7]), sum(bits[7:14]), sum(bits[14:21])]
    if players == 4:
        hands.append(sum(bits[21:28]))
    widow = bits[7 * players].bit_length() - 1 if len(bits) > 7 * players else -1
    return hands, widow


def first_bidder(seed: int, players: int) -> int:
    """The seat that bids first in hand 0."""
    return mix64(seed ^ _FIRST_BIDDER_STREAM) % players
