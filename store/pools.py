"""Rating pools: `3p` (three players, each for themselves) and `2v2` (two teams of two).

A pool is where a game is rated, which arena plays it, and what the wire calls
RATING_POOL_*; it follows from the number of players at a table and nothing else.
Every place that needs one of the two names asks this type.
"""

from __future__ import annotations

from enum import StrEnum

from store.errors import InvalidArgument

__all__ = ["Pool"]


class Pool(StrEnum):
    """A rating pool, named as stored and shown (`3p`, `2v2`)."""

    THREE = "3p"
    TEAMS = "2v2"

    @property
    def players(self) -> int:
        """Players at a table of the pool: 3 or 4."""
        return 3 if self is Pool.THREE else 4

    @staticmethod
    def of(players: int) -> Pool:
        """The pool of a table of `players` (3 or 4); InvalidArgument otherwise."""
        if players == 3:
            return Pool.THREE
        if players == 4:
            return Pool.TEAMS
        raise InvalidArgument(f"players must be 3 or 4, got {players}")

    @staticmethod
    def parse(text: str, field: str = "pool") -> Pool:
        """The pool named `text` (`3p` or `2v2`, any case); InvalidArgument naming `field`
        otherwise."""
        try:
            return Pool(text.strip().lower())
        except ValueError:
            raise InvalidArgument(f"{field}: must be 3p or 2v2, got {text[:40]!r}") from None
