"""The one error of the rating package: a game or an argument it cannot rate."""

from __future__ import annotations

__all__ = ["RatingError"]


class RatingError(ValueError):
    """A game, a pool or an argument the rating math cannot use; the message names it."""
