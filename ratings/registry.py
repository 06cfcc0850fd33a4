"""The registry of rating methods: each method is one module that declares itself.

A method is a `Method` subclass registered under its name: games in, a
`RatingTable` out (`store.rating_tables`, the one result type: rows best first,
intervals and LOS when the method gives them, how it was made, when, what it
covers). The fit job (`workers.fit`) rates each pool with every registered method and
stores each table under the method's name (`store.ratings.save`); the referee serves
any stored method by name (`GetRatings.method`) and lists them
(`GetRatingsResponse.methods`), and the CLI and the pages offer that list. So a new
method (a per-test figure, an arena figure, `ratings.recent`) is one new module and
one line in `ratings/methods.py`; nothing between it and the wire changes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import ClassVar

from ratings.errors import RatingError
from ratings.games import Game
from ratings.table import GameTable
from store.rating_tables import MethodError, RatingTable, check_method_name

__all__ = ["Method", "get", "names", "register"]


class Method(ABC):
    """How one rating method turns a pool's games into a table."""

    name: ClassVar[str]  # the registry's key: "batch", "provisional", ... (`check_method_name`)
    title: ClassVar[str]  # for people: "batch fit"

    @abstractmethod
    def rate(self, games: Iterable[Game], as_of: float) -> RatingTable:
        """The table of one pool (all 3p or all 2v2) after these games, dated `as_of`."""

    def rate_table(self, table: GameTable, as_of: float) -> RatingTable:
        """The same table from the pool's games as columns (what the fit job reads from
        the archive); a method that works on columns overrides it, the others get one
        `Game` a row."""
        return self.rate(table.games(), as_of)


_METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add a method under its name (once); ValueError for a name taken or unfit for a key."""
    try:
        check_method_name(method.name)
    except MethodError as exc:
        raise ValueError(f"rating method {method.name!r}: {exc}") from None
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
