"""The nine contracts and the precomputed tables that decide following and winning.

A contract is an int: 0..6 names a trump number, 7 is doubles, 8 is no trump.
For every contract and every led tile the tables give the bitmask of tiles that
follow it and a power per tile: the highest power in a trick wins. Computing
these once keeps the hot path of play to a few list lookups.
"""

from __future__ import annotations

from moon.errors import ParseError
from moon.tiles import ALL_TILES, Tile

__all__ = [
    "CONTRACTS",
    "DOUBLES",
    "FOLLOW",
    "NO_TRUMP",
    "POWER",
    "TRUMP_MASK",
    "contract_name",
    "is_trump",
    "led_suit",
    "parse_contract",
]

DOUBLES = 7
NO_TRUMP = 8
CONTRACTS: tuple[int, ...] = tuple(range(9))


def contract_name(contract: int) -> str:
    """`0`..`6`, `doubles` or `none`, as the transcript writes it."""
    if contract == DOUBLES:
        return "doubles"
    if contract == NO_TRUMP:
        return "none"
    if 0 <= contract <= 6:
        return str(contract)
    raise ParseError(f"not a contract: {contract!r}")


def parse_contract(text: str) -> int:
    """Inverse of `contract_name`."""
    t = text.strip().lower()
    if t == "doubles":
        return DOUBLES
    if t in ("none", "no trump", "notrump", "follow me"):
        return NO_TRUMP
    if len(t) == 1 and t.isdigit() and int(t) <= 6:
        return int(t)
    raise ParseError(f"not a contract: {text!r} (expected 0..6, doubles or none)")


def is_trump(contract: int, tile: Tile) -> bool:
    """True when `tile` is a trump under `contract`."""
    if contract == DOUBLES:
        return tile.is_double
    if contract == NO_TRUMP:
        return False
    return tile.has(contract)


def led_suit(contract: int, tile: Tile) -> int | None:
    """The suit a led tile calls for: None when it is a trump, else its higher end."""
    return None if is_trump(contract, tile) else tile.high


def _follows(contract: int, led: Tile, tile: Tile) -> bool:
    if is_trump(contract, led):
        return is_trump(contract, tile)
    suit = led.high
    return tile.has(suit) and not is_trump(contract, tile)


def _rank_in(number: int, tile: Tile) -> int:
    """Rank of a tile holding `number` within that number's suit: double 7, else other end."""
    if tile.is_double:
        return 7
    return tile.low if tile.high == number else tile.high


def _power(contract: int, led: Tile, tile: Tile) -> int:
    if is_trump(contract, tile):
        return 100 + (tile.high if contract == DOUBLES else _rank_in(contract, tile))
    if not is_trump(contract, led) and _follows(contract, led, tile):
        return 10 + _rank_in(led.high, tile)
    return 0


TRUMP_MASK: tuple[int, ...] = tuple(
    sum(1 << t.index for t in ALL_TILES if is_trump(c, t)) for c in CONTRACTS
)
# FOLLOW[c][led] -> mask of tiles that follow a led tile under contract c.
FOLLOW: tuple[tuple[int, ...], ...] = tuple(
    tuple(sum(1 << t.index for t in ALL_TILES if _follows(c, led, t)) for led in ALL_TILES)
    for c in CONTRACTS
)
# POWER[c][led][tile] -> strength of `tile` in a trick led by `led`; 0 cannot win.
POWER: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
    tuple(tuple(_power(c, led, t) for t in ALL_TILES) for led in ALL_TILES) for c in CONTRACTS
)
