"""The registry of rating methods: each method is one module that declares itself.

A method is a `Method` subclass registered under its name: games in, a
`RatingTable` out (`store.rating_tables`, the one result type: rows best first,
intervals and LOS when the method gives them, how it was made, when, what it
covers). The fit job stores what a method returns and the referee serves it, so a
new method (a per-test figure, an arena figure) is one new module and one line in
`ratings/methods.py`; nothing between it and the wire changes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import ClassVar

from ratings.errors import RatingError
from ratings.games import Game
from store.rating_tables import RatingTable

__all__ = ["Method", "get", "names", "register"]


class Method(ABC):
    """How one rating method turns a pool's games into a table."""

    name: ClassVar[str]  # the registry's key: "batch", "provisional", ...
    title: ClassVar[str]  # for people: "batch fit"

    @abstractmethod
    def rate(self, games: Iterable[Game], as_of: float) -> RatingTable:
        """The table of one pool (all 3p or all 2v2) after these games, dated `as_of`."""


_METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add a method under its name (once)."""
    if method.name in _METHODS:
        raise ValueError(f"rating method {method.name!r} is registered twice")
    _METHODS[method.name] = method
    return method


def names() -> tuple[str, ...]:
    """Every registered method name, in registration order."""
    return tuple(_METHODS)


def get(name: str) -> Method:
    """The method registered as `name`; RatingError listing the others."""
    method = _METHODS.get(name)
    if method is None:
        raise RatingError(f"rating method: must be one of {', '.join(_METHODS)}, got {name!r}")
    return method
