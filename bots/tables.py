"""Per-contract tables for search: what a tile costs, what beats it, tiles of a mask.

Search code works on 28-bit masks (bit i is tile i, as in `moon.tiles`) and reads
these tables instead of `Tile` values, so a play costs a few lookups.
"""

from __future__ import annotations

from moon.contracts import FOLLOW, NO_TRUMP, POWER, TRUMP_MASK
from moon.tiles import ALL_TILES

__all__ = [
    "BEATS",
    "COST",
    "DOUBLES",
    "LEAD_ORDER",
    "PIPS",
    "TRUMPS",
    "TRUMP_ORDER",
    "tiles_of",
]

PIPS: tuple[int, ...] = tuple(t.high + t.low for t in ALL_TILES)
DOUBLES: int = sum(1 << t.index for t in ALL_TILES if t.is_double)
# The trumps of each contract as a mask (none for no trump).
TRUMPS: tuple[int, ...] = tuple(TRUMP_MASK[c] if c != NO_TRUMP else 0 for c in range(9))


def _trump_order(contract: int) -> tuple[int, ...]:
    """Trump tile indices of a contract, highest first."""
    lead = POWER[contract]
    return tuple(sorted((i for i in range(28) if TRUMPS[contract] >> i & 1),
                        key=lambda i: -lead[i][i]))


TRUMP_ORDER: tuple[tuple[int, ...], ...] = tuple(_trump_order(c) for c in range(9))
# How much giving a tile away hurts (the greedy player's measure): pips, +100 for a
# trump, +20 for a double.
COST: tuple[tuple[int, ...], ...] = tuple(
    tuple(PIPS[t] + (100 if TRUMPS[c] >> t & 1 else 0) + (20 if DOUBLES >> t & 1 else 0)
          for t in range(28))
    for c in range(9)
)
# BEATS[c][t]: the other tiles of the suit `t` leads that would beat it. A led tile
# heads its suit once all of these are gone.
BEATS: tuple[tuple[int, ...], ...] = tuple(
    tuple(sum(1 << i for i in range(28)
              if i != t and FOLLOW[c][t] >> i & 1 and POWER[c][t][i] >= POWER[c][t][t])
          for t in range(28))
    for c in range(9)
)
# The non-trump tiles of a contract, most pips first (ties by index): the order in
# which the greedy player looks for a tile that heads its suit.
LEAD_ORDER: tuple[tuple[int, ...], ...] = tuple(
    tuple(sorted((t for t in range(28) if not TRUMPS[c] >> t & 1), key=lambda t: (-PIPS[t], t)))
    for c in range(9)
)

_T0, _T7, _T14, _T21 = (
    tuple(tuple(lo + i for i in range(7) if m >> i & 1) for m in range(128))
    for lo in (0, 7, 14, 21)
)


def tiles_of(mask: int) -> tuple[int, ...]:
    """The tile indices of a mask, ascending."""
    return _T0[mask & 0x7F] + _T7[mask >> 7 & 0x7F] + _T14[mask >> 14 & 0x7F] + _T21[mask >> 21]
