"""Ratings as stored in Redis: a pool's fitted table (and its LOS matrix, for pools of
up to LOS_MAX_BOTS bots), the provisional table, a tournament's own table, and the
coalescing of fit requests.

The fit job writes; the referee reads. A table is a typed record, one JSON value:
how it was made (`method`), when (`as_of`), what it covers (`games`, `boards`),
whether it is the provisional figure, and one row per bot, best first.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import redis

from store import keys

__all__ = [
    "LOS_MAX_BOTS",
    "RatingRow",
    "RatingTable",
    "fit_requested",
    "load",
    "load_tournament",
    "los_matrix",
    "note_request",
    "save",
    "save_tournament",
    "take_request",
]

LOS_MAX_BOTS = 400  # the LOS matrix is kept for pools up to this many bots (~3 MB)


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
    level: float
    rows: tuple[RatingRow, ...] = field(default_factory=tuple)
    dof: float | None = None  # Student-t degrees of freedom of intervals and LOS

    def to_json(self) -> str:
        """The table as stored."""
        d = asdict(self)
        d["v"] = 1
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


def _key(pool: str, kind: str) -> str:
    return {"fit": keys.ratings(pool), "live": keys.ratings_live(pool)}[kind]


def save(r: redis.Redis, pool: str, table: RatingTable,
         los: Sequence[Sequence[float]] | None = None) -> None:
    """Store a pool's fit (with its LOS matrix, in the table's order, if small enough) or
    its provisional table."""
    pipe = r.pipeline(transaction=True)
    pipe.set(_key(pool, "live" if table.provisional else "fit"), table.to_json())
    if not table.provisional:
        if los is not None and len(los) <= LOS_MAX_BOTS:
            pipe.set(keys.ratings_los(pool), json.dumps(
                [[round(float(x), 6) for x in row] for row in los]))
        else:
            pipe.delete(keys.ratings_los(pool))
    pipe.execute()


def save_tournament(r: redis.Redis, tournament_id: str, table: RatingTable) -> None:
    """Store the fit over one tournament's own released games."""
    r.set(keys.tournament_rating(tournament_id), table.to_json())


def load(r: redis.Redis, pool: str, kind: str = "fit") -> RatingTable | None:
    """A pool's stored table (`fit` or `live`), or None."""
    raw = r.get(_key(pool, kind))
    return None if raw is None else RatingTable.from_json(str(raw))


def load_tournament(r: redis.Redis, tournament_id: str) -> RatingTable | None:
    """The fit over a tournament's own games, or None before its first."""
    raw = r.get(keys.tournament_rating(tournament_id))
    return None if raw is None else RatingTable.from_json(str(raw))


def los_matrix(r: redis.Redis, pool: str) -> list[list[float]] | None:
    """The LOS matrix of the stored fit (M[i][j]: row i over row j), if kept."""
    raw = r.get(keys.ratings_los(pool))
    return None if raw is None else list(json.loads(raw))


# ------------------------------------------------------- coalesced requests


def note_request(r: redis.Redis, pool: str, tournament_id: str = "") -> bool:
    """Ask for a fit of `pool` (and of the tournament's own games); True when no fit job is
    queued for it yet, so the caller should queue one. Many requests, one job."""
    pipe = r.pipeline(transaction=True)
    pipe.set(keys.ratings_dirty(pool), 1)
    if tournament_id:
        pipe.sadd(keys.ratings_tournaments(pool), tournament_id)
    pipe.set(keys.ratings_queued(pool), 1, nx=True, ex=3600)
    return bool(pipe.execute()[-1])


def take_request(r: redis.Redis, pool: str) -> tuple[bool, list[str]]:
    """(a fit was asked for, the tournaments to fit too), clearing both."""
    pipe = r.pipeline(transaction=True)
    pipe.delete(keys.ratings_dirty(pool))
    pipe.spop(keys.ratings_tournaments(pool), 10_000)
    dirty, tids = pipe.execute()
    return bool(dirty), sorted(str(t) for t in (tids or []))


def fit_requested(r: redis.Redis, pool: str) -> bool:
    """True when a fit was asked for and no job is queued for it (a job died)."""
    return bool(r.exists(keys.ratings_dirty(pool))) and not r.exists(
        keys.ratings_queued(pool)) and not r.exists(keys.ratings_lock(pool))
