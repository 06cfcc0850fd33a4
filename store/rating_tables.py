"""Rating tables: the one result type of every rating method (`ratings.registry`), as
stored and served (pure values; `store.ratings` reads and writes them).

A table says how it was made (`method`), when (`as_of`), what it covers (`games`,
`boards`), whether it is the provisional figure, the level and spread of its
intervals, and one row per bot, best first. A method that gives likelihoods of
superiority between every pair adds the matrix (`los`): it is stored beside the
table, not in it (a table is read on every GetRatings, the matrix only when asked).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LOS_MAX_BOTS", "OFFICIAL", "PROVISIONAL", "MethodError", "RatingPoint",
           "RatingRow", "RatingTable", "StoredMethod", "check_method_name"]

LOS_MAX_BOTS = 400  # the LOS matrix is made and kept for pools up to this many bots (~3 MB)

# Two methods have roles beyond their own table (`ratings.methods` registers both):
OFFICIAL = "batch"  # the pool's rating: its history, seeding, standings, a tournament's own
PROVISIONAL = "provisional"  # served in the official's place while newer results wait for it

_METHOD_NAME = re.compile(r"[a-z][a-z0-9-]{0,31}")


class MethodError(ValueError):
    """A rating method name that cannot be one (it becomes part of a Redis key)."""


def check_method_name(name: str) -> str:
    """`name` if it can name a rating method (lower-case letters, digits and dashes, a
    letter first, at most 32); MethodError otherwise."""
    if not isinstance(name, str) or not _METHOD_NAME.fullmatch(name):
        raise MethodError(f"rating method names are a lower-case letter, then letters, "
                          f"digits or dashes, at most 32 in all; got {str(name)[:40]!r}")
    return name


@dataclass(frozen=True, slots=True)
class StoredMethod:
    """A rating method with a table stored for a pool: its name, its title, and what its
    latest table covers (so a listing reads no table)."""

    name: str
    title: str
    games: int
    as_of: float

    def to_json(self) -> str:
        """The entry as stored (the name is the hash field)."""
        return json.dumps({"title": self.title, "games": self.games, "as_of": self.as_of},
                          separators=(",", ":"))

    @staticmethod
    def from_json(name: str, text: str) -> StoredMethod:
        """Inverse of `to_json`."""
        d = json.loads(text)
        return StoredMethod(name, str(d["title"]), int(d["games"]), float(d["as_of"]))


@dataclass(frozen=True, slots=True)
class RatingRow:
    """One bot's rating (Elo, pool mean 0); interval and LOS when the method gives them."""

    bot_id: str
    rating: float
    games: int
    ci_low: float | None = None
    ci_high: float | None = None
    los_next: float | None = None


@dataclass(frozen=True, slots=True)
class RatingTable:
    """A pool's (or a tournament's) ratings at one moment, best first."""

    method: str
    as_of: float
    games: int
    boards: int
    provisional: bool
    level: float  # of the intervals (and of the LOS a reader compares with 1 - level / 2)
    rows: tuple[RatingRow, ...] = field(default_factory=tuple)
    dof: float | None = None  # Student-t degrees of freedom of intervals and LOS
    # LOS[i][j]: row i stronger than row j, in row order; not part of the stored table.
    los: tuple[tuple[float, ...], ...] | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> str:
        """The table as stored (without `los`)."""
        d: dict[str, Any] = {
            "method": self.method, "as_of": self.as_of, "games": self.games,
            "boards": self.boards, "provisional": self.provisional, "level": self.level,
            "rows": [_row(r) for r in self.rows], "dof": self.dof, "v": 1}
        return json.dumps(d, separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> RatingTable:
        """Inverse of `to_json`."""
        d = json.loads(text)
        d.pop("v", None)
        rows = tuple(RatingRow(**row) for row in d.pop("rows"))
        return RatingTable(rows=rows, **d)

    def by_bot(self) -> dict[str, RatingRow]:
        """Rows by bot id."""
        return {row.bot_id: row for row in self.rows}


def _row(r: RatingRow) -> dict[str, Any]:
    return {"bot_id": r.bot_id, "rating": r.rating, "games": r.games, "ci_low": r.ci_low,
            "ci_high": r.ci_high, "los_next": r.los_next}


def los_rows(matrix: Sequence[Sequence[float]]) -> tuple[tuple[float, ...], ...]:
    """A LOS matrix as a table holds it (rounded to 6 places, as stored)."""
    return tuple(tuple(round(float(x), 6) for x in row) for row in matrix)


@dataclass(frozen=True, slots=True)
class RatingPoint:
    """A bot's official rating as one fit left it."""

    as_of: float
    rating: float
    ci_low: float | None
    ci_high: float | None
    games: int  # the bot's rated games then
    pool_games: int  # games the fit covered

    def to_json(self) -> str:
        """The point as stored: a compact array, since a bot may keep a thousand."""
        return json.dumps([self.as_of, self.rating, self.ci_low, self.ci_high, self.games,
                           self.pool_games], separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> RatingPoint:
        """Inverse of `to_json`."""
        as_of, rating, lo, hi, games, pool_games = json.loads(text)
        return RatingPoint(float(as_of), float(rating), lo, hi, int(games), int(pool_games))
