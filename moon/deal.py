"""Deterministic deals: the seed alone fixes every hand's deal and the first bidder.

The generator is our own (SplitMix64 and a mixed-radix shuffle), so deals never
depend on the Python version's `random` module: a seed deals the same tiles on
every machine, forever. Hand `k`'s deal depends only on the seed and `k`, never
on play, which is what lets duplicate tournaments replay a deal for every
seating.
"""

from __future__ import annotations

from moon.errors import RulesError

__all__ = ["MAX_SEED", "check_seed", "deal_order", "first_bidder", "mix64"]

_M = (1 << 64) - 1
MAX_SEED = _M
_FIRST_BIDDER_STREAM = 0xF1B5_D00D_0000_0001


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


def deal_order(seed: int, hand: int, tiles: tuple[int, ...]) -> list[int]:
    """A permutation of `tiles` for hand number `hand` (0-based) of game `seed`."""
    h = mix64(seed ^ mix64(hand))
    r = (mix64(h) << 64) | mix64(h ^ 0x5851F42D4C957F2D)
    out = list(tiles)
    for i in range(len(out) - 1, 0, -1):
        r, j = divmod(r, i + 1)
        out[i], out[j] = out[j], out[i]
    return out


def first_bidder(seed: int, players: int) -> int:
    """The seat that bids first in hand 0."""
    return mix64(seed ^ _FIRST_BIDDER_STREAM) % players
