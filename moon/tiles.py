"""Domino tiles of a double-six set: values, indices, bitmasks and parsing."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from moon.errors import ParseError

__all__ = [
    "ALL_TILES",
    "BIT",
    "TILE_BY_INDEX",
    "Tile",
    "mask_of",
    "tile_index",
    "tiles_of",
]


@dataclass(frozen=True, slots=True, order=True)
class Tile:
    """One domino, `high-low` with 0 <= low <= high <= 6; prints as `6-4`."""

    high: int
    low: int
    # Stable index 0..27: `0-0` is 0, `1-0` is 1, ..., `6-6` is 27. Stored, not a
    # property: search code reads it in its inner loops. Derived from the two ends,
    # so it takes no part in equality, order, hashing or the repr.
    index: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not (0 <= self.low <= self.high <= 6):
            raise ParseError(f"not a double-six tile: {self.high}-{self.low}")
        object.__setattr__(self, "index", tile_index(self.high, self.low))

    @property
    def is_double(self) -> bool:
        """True for `n-n`."""
        return self.high == self.low

    def has(self, number: int) -> bool:
        """True when either end shows `number`."""
        return number in (self.high, self.low)

    def __str__(self) -> str:
        return f"{self.high}-{self.low}"

    @classmethod
    def parse(cls, text: str) -> Tile:
        """Parse `6-4` (either end first) into a tile."""
        parts = text.strip().split("-")
        if len(parts) != 2 or not all(p.isdigit() and len(p) == 1 for p in parts):
            raise ParseError(f"not a tile: {text!r} (expected a form like '6-4')")
        a, b = int(parts[0]), int(parts[1])
        if a < b:
            a, b = b, a
        if a > 6:
            raise ParseError(f"not a double-six tile: {text!r}")
        return TILE_BY_INDEX[tile_index(a, b)]


def tile_index(high: int, low: int) -> int:
    """Index of tile `high-low` (high >= low) in 0..27."""
    return high * (high + 1) // 2 + low


ALL_TILES: tuple[Tile, ...] = tuple(
    Tile(a, b) for a in range(7) for b in range(a + 1)
)
TILE_BY_INDEX = ALL_TILES
BIT: tuple[int, ...] = tuple(1 << i for i in range(28))


def mask_of(tiles: Iterable[Tile | int]) -> int:
    """Bitmask of an iterable of tiles or tile indices."""
    m = 0
    for t in tiles:
        m |= 1 << (t.index if isinstance(t, Tile) else int(t))
    return m


def tiles_of(mask: int) -> tuple[Tile, ...]:
    """Tiles of a bitmask, highest first (`6-6` before `6-5` before `0-0`)."""
    out = []
    i = 27
    while mask and i >= 0:
        if mask >> i & 1:
            out.append(ALL_TILES[i])
            mask ^= 1 << i
        i -= 1
    return tuple(out)
