"""The archive's tables, as SQLAlchemy Core `MetaData` (no ORM), and the small codes and
packings its columns use.

The schema is compact on purpose: the target is at most 400 bytes for an archived 3p
game in SQLite, its row, its indexes and its compact transcript (`blob`) together. So:
bot ids, events and what games of one event share (`templates`, from the codec) are
interned to small integers; a game's end is a small code; places are packed in one
integer; a bot's games, newest first, are range scans of one index per seat. JSON is stored as TEXT
(not PostgreSQL's JSONB): nothing queries inside it, and one type serves both engines.

Columns are declared widest first (8-byte, 4-byte, 2-byte, 1-byte, then variable), the
order that wastes no alignment padding in a PostgreSQL row; SQLite does not care.

This module is the schema as the code sees it now; `migrations/versions/` is how a
database gets there, each revision frozen as written. tests/test_archive_db.py checks
that the two agree on both engines.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Dialect,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy import text as sa_text

__all__ = [
    "NAMING",
    "SEATS",
    "EndCode",
    "Seed",
    "bots",
    "events",
    "games",
    "meta",
    "metadata",
    "pack_places",
    "packages",
    "rating_snapshots",
    "templates",
    "unpack_places",
]

# Constraint names follow one pattern, so a later migration can name what it alters
# (SQLite's batch mode recreates a table and needs names for its constraints).
NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

_SIGN = 1 << 63


class Seed(TypeDecorator[int]):
    """A deal seed, 0 to 2^64 - 1 (moon.deal.MAX_SEED), kept in a signed 64-bit BIGINT
    (both engines' widest integer) by two's complement: seeds of 2^63 and above read
    back as they were written. Equality works; ordering by seed does not."""

    impl = BigInteger
    cache_ok = True

    def process_bind_param(self, value: int | None, dialect: Dialect) -> int | None:
        """Unsigned to signed."""
        return None if value is None else value - 2 * _SIGN if value >= _SIGN else value

    def process_result_value(self, value: int | None, dialect: Dialect) -> int | None:
        """Signed to unsigned."""
        return None if value is None else value + 2 * _SIGN if value < 0 else value


class EndCode(enum.IntEnum):
    """How a game ended, as `games.end_code` stores it (the transcript's `end`)."""

    NORMAL = 0
    HAND_LIMIT = 1
    FORFEIT = 2
    OTHER = 3  # anything else (a lost game, say); the transcript keeps the exact word

    @classmethod
    def of(cls, end: str) -> EndCode:
        """The code of a transcript's `end` word."""
        return {"normal": cls.NORMAL, "hand_limit": cls.HAND_LIMIT,
                "forfeit": cls.FORFEIT}.get(end, cls.OTHER)


def pack_places(places: Sequence[int]) -> int:
    """Each seat's place in 4 bits, seat 0 lowest: [1, 3, 2] -> 0x231."""
    out = 0
    for seat, place in enumerate(places):
        if not 0 <= place < 16:
            raise ValueError(f"place {place} of seat {seat} does not fit in 4 bits")
        out |= place << (4 * seat)
    return out


def unpack_places(packed: int, players: int) -> list[int]:
    """The places `pack_places` packed, one per seat."""
    return [(packed >> (4 * seat)) & 0xF for seat in range(players)]


metadata = MetaData(naming_convention=NAMING)

bots = Table(
    "bots", metadata,
    Column("id", Integer, primary_key=True),
    Column("bot_id", Text, nullable=False),  # `b-...` or `house:...`
    Column("name", Text, nullable=False),
    UniqueConstraint("bot_id"),
)

events = Table(
    "events", metadata,
    Column("id", Integer, primary_key=True),
    Column("created_at", Double),
    Column("finished_at", Double),
    Column("kind", Text, nullable=False),  # store.refs.EventKind: tournament, test, arena
    Column("event_id", Text, nullable=False),
    Column("name", Text),
    Column("spec", Text),  # JSON: what the event was asked to be
    Column("status", Text),
    Column("summary", Text),  # JSON, when it finishes: standings, or pairs and verdict
    UniqueConstraint("kind", "event_id"),
)

templates = Table(
    "templates", metadata,
    Column("id", Integer, primary_key=True),
    Column("hash", Text, nullable=False),
    Column("body", Text, nullable=False),  # what the games of one event share (the codec's)
    UniqueConstraint("hash"),
)

_SEATS: list[Column[Any]] = [
    Column(f"seat{s}", Integer, ForeignKey("bots.id"), nullable=s == 3) for s in range(4)]

games = Table(
    "games", metadata,
    Column("id", Integer, primary_key=True),  # archive order; INTEGER: SQLite's rowid
    Column("seed", Seed, nullable=False),
    Column("created_at", Double),
    Column("finished_at", Double, nullable=False),
    Column("released_at", Double),  # when its board became public (and it left Redis)
    Column("event", Integer, ForeignKey("events.id")),  # NULL: a single match
    *_SEATS,  # bots.id of each seat; seat3 NULL in a 3p game
    Column("places", Integer, nullable=False),  # pack_places
    Column("template", Integer, ForeignKey("templates.id"), nullable=False),
    Column("players", SmallInteger, nullable=False),
    Column("end_code", SmallInteger, nullable=False),  # EndCode
    Column("winner", SmallInteger),
    Column("forfeit_seat", SmallInteger),
    Column("actions", SmallInteger, nullable=False),
    Column("rated", Boolean, nullable=False),
    Column("match_id", Text, nullable=False),
    Column("board", Text, nullable=False, server_default=""),
    Column("unit", Text, nullable=False, server_default=""),
    Column("final", Text, nullable=False),  # scores by seat (3p) or team (2v2): "21,10,3"
    Column("forfeit_reason", Text),  # a forfeit's reason, as the referee gave it
    Column("blob", LargeBinary, nullable=False),  # the compact transcript (archive.codec)
    UniqueConstraint("match_id"),
    Index(None, "event", "id"),  # an event's games, in order
    # A bot's games, newest first: one index a seat, each (bot, game) in archive order, so
    # a bot's listing merges four range scans. (A table of (bot, game) rows cost
    # PostgreSQL 176 bytes a game, a heap tuple and a key entry for each of three bots; the
    # indexes cost about 23 bytes an entry. Seat 3 is empty in a 3p game: not indexed.)
    Index("ix_games_seat0_id", "seat0", "id"),
    Index("ix_games_seat1_id", "seat1", "id"),
    Index("ix_games_seat2_id", "seat2", "id"),
    Index("ix_games_seat3_id", "seat3", "id", postgresql_where=sa_text("seat3 IS NOT NULL"),
          sqlite_where=sa_text("seat3 IS NOT NULL")),
    # No index for the rating fit's bulk read: it reads nearly every row of its pool.
)

SEATS = tuple(games.c[f"seat{s}"] for s in range(4))  # a bot's games: any of these is it

rating_snapshots = Table(
    "rating_snapshots", metadata,
    Column("pool", Text, nullable=False),
    Column("method", Text, nullable=False),
    Column("at", Double, nullable=False),
    Column("body", LargeBinary, nullable=False),  # zlib-compressed JSON of the fit
    PrimaryKeyConstraint("pool", "method", "at"),
)

meta = Table(
    "meta", metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),  # what the stack notes: an upgrade's progress
)

packages = Table(
    "packages", metadata,
    Column("digest", Text, primary_key=True),  # SHA-256 hex of `data`: its content id
    Column("size", BigInteger, nullable=False),
    Column("created_at", Double, nullable=False),
    Column("data", LargeBinary, nullable=False),  # a hosted version's tar.gz (hosting.package)
)
