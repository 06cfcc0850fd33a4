"""Reading finished games from the archive: one game, a listing, an event's rows, a pool's.

A listing needs no blob: a game's columns (seats, event, board, result, times) and its
template's shared values (rules, clock, fault policy) are what a `Match` shows; the
blob is decoded (`archive.codec`) only for a game's transcript (GetMatch, a replay, an
export). Listings are newest first in archive order (the `games.id` the mover gave
them, which is the order their boards were released), paged by that id.

A bulk read (`stream`, what an export reads) goes the other way, oldest first, in keyset
pages by `games.id`, each page its own short read: no join (bots, events and templates,
a few thousand rows at most, are looked up once each and kept), and no blob unless
transcripts are asked for. It stops at the newest game there when it began, so a busy
stack's archive never keeps it going.
"""

from __future__ import annotations

import functools
import json
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy import Row

from archive import codec, schema
from archive.db import Archive
from archive.errors import ArchiveError
from archive.mover import game_row, known_of
from moon import GameState, Rules
from moon.transcript import actions_of
from store import messages
from store.archiving import Leaving
from store.matches import MatchRecord
from store.pools import Pool
from store.records import DEFAULT_CLOCK, DEFAULT_FAULTS, Clock, Faults, MatchSpec
from store.refs import EventKind, EventRef
from store.status import MatchStatus

__all__ = [
    "PAGE",
    "ArchivedEvent",
    "ArchivedGame",
    "PoolColumns",
    "Selection",
    "archived_of",
    "bot_ids_named",
    "count",
    "count_selected",
    "event",
    "event_rows",
    "events",
    "game",
    "games",
    "has_bot",
    "has_event",
    "log_entries",
    "of_leaving",
    "pool_columns",
    "pool_rows",
    "rating_snapshot",
    "rating_snapshot_times",
    "stream",
    "to_record",
]

_ENDS = {schema.EndCode.NORMAL: "normal", schema.EndCode.HAND_LIMIT: "hand_limit",
         schema.EndCode.FORFEIT: "forfeit"}


@dataclass(frozen=True, slots=True)
class ArchivedGame:
    """A finished game as the archive holds it."""

    id: int  # its place in the archive (archive order)
    match_id: str
    players: int
    bot_ids: tuple[str, ...]
    names: tuple[str, ...]
    event: EventRef | None
    board: str
    unit: str
    seed: int
    created_at: float | None
    finished_at: float
    released_at: float | None
    end_code: int
    winner: int | None
    forfeit_seat: int | None
    forfeit_reason: str | None
    placement: tuple[int, ...]
    final: tuple[int, ...]
    actions: int
    rated: bool
    template: str
    blob: bytes | None  # None when the read left it out

    @property
    def shared(self) -> dict[str, Any]:
        """What the games of its template share: rules, clock, fault policy..."""
        return _shared(self.template)

    def transcript(self) -> dict[str, Any]:
        """Its `moon-transcript/1` record, byte for byte as the referee wrote it."""
        if self.blob is None:
            raise ValueError(f"{self.match_id}: read without its blob")
        return codec.decode(self.template, self.blob, known_of(
            self.match_id, self.seed, self.bot_ids, self.board, self.unit))

    @property
    def end(self) -> str:
        """How it ended: normal, hand_limit, forfeit (or the transcript's own word)."""
        word = _ENDS.get(self.end_code)  # type: ignore[call-overload]
        return word if word is not None else str(self.transcript().get("end", "other"))

    def result(self) -> dict[str, Any]:
        """Its result, as `store.results.result_of` gives it."""
        forfeit = (None if self.forfeit_seat is None
                   else {"seat": self.forfeit_seat, "reason": self.forfeit_reason or ""})
        return {"seats": list(self.names), "final": list(self.final), "winner": self.winner,
                "end": self.end, "forfeit": forfeit, "placement": list(self.placement)}

    def row(self) -> dict[str, Any]:
        """Its standings row, as `store.results.result_row` gives it, with when it counted."""
        res = self.result()
        return {"match_id": self.match_id, "bot_ids": list(self.bot_ids),
                "players": self.players, "final": res["final"], "winner": res["winner"],
                "placement": res["placement"], "end": res["end"], "forfeit": res["forfeit"],
                "seats": res["seats"], "board": self.board, "unit": self.unit,
                "actions": self.actions, "released_at": self.released_at}


@functools.lru_cache(maxsize=4096)
def _shared_text(template: str) -> str:
    return json.dumps(codec.shared(template))


def _shared(template: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(_shared_text(template))
    return out


_G = schema.games


def _select(with_blob: bool) -> sa.Select[Any]:
    seats = [schema.bots.alias(f"s{s}") for s in range(4)]
    cols: list[Any] = [_G.c.id, _G.c.match_id, _G.c.players, _G.c.board, _G.c.unit,
                       _G.c.seed, _G.c.created_at, _G.c.finished_at, _G.c.released_at,
                       _G.c.end_code, _G.c.winner, _G.c.forfeit_seat, _G.c.forfeit_reason,
                       _G.c.places, _G.c.final, _G.c.actions, _G.c.rated,
                       schema.templates.c.body.label("template"),
                       schema.events.c.kind, schema.events.c.event_id]
    for s, b in enumerate(seats):
        cols += [b.c.bot_id.label(f"bot{s}"), b.c.name.label(f"name{s}")]
    if with_blob:
        cols.append(_G.c.blob)
    joined: Any = _G.join(schema.templates, schema.templates.c.id == _G.c.template)
    joined = joined.outerjoin(schema.events, schema.events.c.id == _G.c.event)
    for s, b in enumerate(seats):
        joined = joined.outerjoin(b, b.c.id == _G.c[f"seat{s}"])
    return sa.select(*cols).select_from(joined)


def _game(row: Row[Any], with_blob: bool) -> ArchivedGame:
    m = row._mapping
    n = int(m["players"])
    event = (None if m["kind"] is None
             else EventRef(EventKind(str(m["kind"])), str(m["event_id"])))
    return ArchivedGame(
        id=int(m["id"]), match_id=str(m["match_id"]), players=n,
        bot_ids=tuple(str(m[f"bot{s}"]) for s in range(n)),
        names=tuple(str(m[f"name{s}"]) for s in range(n)), event=event,
        board=str(m["board"]), unit=str(m["unit"]), seed=int(m["seed"]),
        created_at=m["created_at"], finished_at=float(m["finished_at"]),
        released_at=m["released_at"], end_code=int(m["end_code"]), winner=m["winner"],
        forfeit_seat=m["forfeit_seat"], forfeit_reason=m["forfeit_reason"],
        placement=tuple(schema.unpack_places(int(m["places"]), n)),
        final=tuple(int(x) for x in str(m["final"]).split(",") if x != ""),
        actions=int(m["actions"]), rated=bool(m["rated"]), template=str(m["template"]),
        blob=bytes(m["blob"]) if with_blob else None)


def game(archive: Archive, match_id: str, with_blob: bool = True) -> ArchivedGame | None:
    """One archived game by its match id; None when it is not archived."""
    with archive.connect() as conn:
        found = conn.execute(_select(with_blob).where(_G.c.match_id == match_id)).first()
    return None if found is None else _game(found, with_blob)


def _bot_ids(conn: sa.Connection, bot_id: str) -> int | None:
    return conn.execute(sa.select(schema.bots.c.id).where(
        schema.bots.c.bot_id == bot_id)).scalar_one_or_none()


def _event_id(conn: sa.Connection, ref: EventRef) -> int | None:
    e = schema.events
    return conn.execute(sa.select(e.c.id).where(
        e.c.kind == str(ref.kind), e.c.event_id == ref.id)).scalar_one_or_none()


def games(archive: Archive, *, bot_id: str = "", event: EventRef | None = None,
          players: int | None = None, before: int | None = None, limit: int = 50,
          since: float | None = None, until: float | None = None,
          with_blob: bool = False) -> list[ArchivedGame]:
    """Archived games newest first (archive order), at most `limit`, before archive id
    `before`: a bot's (range scans of the seats' indexes, merged), an event's, a pool's
    (`players`), finished in [since, until) if given."""
    with archive.connect() as conn:
        where: list[Any] = []
        if event is not None:
            ev = _event_id(conn, event)
            if ev is None:
                return []
            where.append(_G.c.event == ev)
        if players is not None:
            where.append(_G.c.players == players)
        if before is not None:
            where.append(_G.c.id < before)
        if since is not None:
            where.append(_G.c.finished_at >= since)
        if until is not None:
            where.append(_G.c.finished_at < until)
        q = _select(with_blob).where(*where)
        if bot_id:
            bot = _bot_ids(conn, bot_id)
            if bot is None:
                return []
            # The bot's newest `limit` games of each seat, each one range scan of that
            # seat's index from `before` down, whatever the page's depth; the page is the
            # newest `limit` of their union (a bot in two seats of a game counts once).
            arms = [sa.select(_G.c.id).where(seat == bot, *where)
                    .order_by(_G.c.id.desc()).limit(limit).subquery()
                    for seat in schema.SEATS]
            ids = sa.union(*(sa.select(a.c.id) for a in arms)).subquery()
            q = q.where(_G.c.id.in_(sa.select(ids.c.id)))
        found = conn.execute(q.order_by(_G.c.id.desc()).limit(limit)).all()
    return [_game(row, with_blob) for row in found]


def count(archive: Archive, pool: Pool | None = None, rated: bool = False) -> int:
    """How many games the archive holds (of a pool; only its rated ones if asked)."""
    with archive.connect() as conn:
        q = sa.select(sa.func.count()).select_from(_G)
        if pool is not None:
            q = q.where(_G.c.players == pool.players)
        if rated:
            q = q.where(_G.c.rated.is_(True))
        return int(conn.execute(q).scalar_one())


def event_rows(archive: Archive, ref: EventRef) -> list[dict[str, Any]]:
    """The standings rows of an event's archived games, in archive order."""
    with archive.connect() as conn:
        ev = _event_id(conn, ref)
        if ev is None:
            return []
        found = conn.execute(_select(False).where(_G.c.event == ev).order_by(_G.c.id)).all()
    return [_game(row, False).row() for row in found]


def pool_rows(archive: Archive, pool: Pool, since: float | None = None
              ) -> list[dict[str, Any]]:
    """The standings rows of a pool's rated games (what a rating fit reads), released at
    or after `since` if given."""
    with archive.connect() as conn:
        q = _select(False).where(_G.c.players == pool.players, _G.c.rated.is_(True))
        if since is not None:
            q = q.where(_G.c.released_at >= since)
        found = conn.execute(q.order_by(_G.c.id)).all()
    return [_game(row, False).row() for row in found]


@dataclass(frozen=True, slots=True)
class PoolColumns:
    """A pool's rated games as columns, row by row: what `ratings.GameTable` takes."""

    ids: Any  # (games,) str
    unit: Any  # (games,) int: a game's board, a code into `units`; -1 for none
    units: tuple[str, ...]  # the boards, in the order first met
    seat_bot: Any  # (games, seats) int: codes into `bots`
    place: Any  # (games, seats) int
    bots: tuple[str, ...]
    released_at: Any  # (games,) float, NaN unknown


# Between the values of a text column in the joined read (`_joined_columns`): no id or
# board label holds it (a read that finds one falls back to rows).
_SEP = "\x1f"


def pool_columns(archive: Archive, pool: Pool) -> PoolColumns:
    """A pool's rated games as columns (what the fit reads), in one pass over the games
    table (no join, no blob): the same games as `pool_rows`, without a dict, a tuple or
    an object per game.

    The database hands each column over as one text (`_joined_columns`: SQLite's
    `group_concat`, PostgreSQL's `string_agg`, in one scan, so every column lists the
    games in one order) that numpy parses in C: a million games in 2.3 s (SQLite) and
    1.6 s (PostgreSQL), where the driver's tuples and a pass of Python over every row
    took 3.3 s (SQLite). Boards are coded with a dict as they come (no sort of a million strings),
    bots by their small archive keys (a bincount, no sort). Where a value would not
    survive the joining (a separator inside an id or a label), the rows are read
    instead (`_row_columns`), to the same columns, and where a column's text would be
    longer than the database allows."""
    with archive.connect() as conn:
        names = dict(conn.execute(sa.select(schema.bots.c.id, schema.bots.c.bot_id)).all())
        try:
            joined = _joined_columns(conn, pool)
        except sa.exc.DBAPIError:
            # A text past the database's largest (1 GB: tens of millions of games).
            conn.rollback()
            joined = None
        if joined is None:
            joined = _row_columns(conn, pool)
    ids, boards, places, released, seat = joined
    n = len(ids)
    if not n:
        empty = np.zeros((0, pool.players), dtype=np.int64)
        return PoolColumns(np.zeros(0, dtype=str), np.zeros(0, dtype=np.int64), (), empty,
                           empty, (), np.zeros(0, dtype=np.float64))
    # Each label's code in the order first met ("", no board, is -1), looked up in C.
    board_code = {b: i for i, b in enumerate(dict.fromkeys(boards))}
    unit = np.fromiter(map(board_code.__getitem__, boards), dtype=np.int64, count=n)
    if (none := board_code.pop("", None)) is not None:
        unit = np.where(unit == none, -1, unit - (unit > none))
    present = np.bincount(seat.ravel()) > 0
    code = np.flatnonzero(present)
    rank = np.cumsum(present) - 1
    return PoolColumns(
        np.array(ids, dtype=str), unit, tuple(board_code), rank[seat],
        np.column_stack([(places >> (4 * s)) & 0xF for s in range(pool.players)]),
        tuple(names[int(c)] for c in code.tolist()), released)


# (ids, board labels ("" for none), packed places, release times (NaN unknown), seats'
# archive keys (games, players)).
_Columns = tuple[list[str], list[str], Any, Any, Any]


def _pool_filter(pool: Pool) -> Any:
    return sa.and_(_G.c.players == pool.players, _G.c.rated.is_(True))


def _joined_columns(conn: sa.Connection, pool: Pool) -> _Columns | None:
    """The pool's columns, each read as one text; None when a text value holds the
    separator (the counts then disagree)."""
    postgres = conn.dialect.name == "postgresql"

    def joined(value: Any, sep: str) -> Any:
        if postgres:
            return sa.func.string_agg(sa.cast(value, sa.Text), sep)
        return sa.func.group_concat(value, sep)

    if postgres:
        # A float's text then reads back to the same double (before PostgreSQL 12, the
        # default gave 15 digits).
        conn.execute(sa.text("SET LOCAL extra_float_digits = 3"))
        when: Any = sa.func.coalesce(sa.cast(_G.c.released_at, sa.Text), "nan")
    else:
        # SQLite's printf with "!" and 20 digits reads back to the same double (and
        # prints NULL as 0).
        when = sa.case((_G.c.released_at.is_(None), "nan"),
                       else_=sa.func.printf("%!.20e", _G.c.released_at))
    seats = [_G.c[f"seat{s}"] for s in range(pool.players)]
    q = sa.select(sa.func.count(), joined(_G.c.match_id, _SEP),
                  joined(sa.func.coalesce(_G.c.board, ""), _SEP), joined(_G.c.places, ","),
                  joined(when, ","), *[joined(c, ",") for c in seats]
                  ).where(_pool_filter(pool))
    n, ids_text, boards_text, places_text, when_text, *seat_texts = conn.execute(q).one()
    if not n:
        return [], [], None, None, None
    ids, boards = ids_text.split(_SEP), boards_text.split(_SEP)
    if len(ids) != n or len(boards) != n:
        return None

    def numbers(text: str | None, dtype: Any) -> Any:
        out = np.fromstring(text or "", dtype=dtype, sep=",")
        if out.size != n:
            raise ArchiveError(f"the pool read found {out.size} values for {n} games")
        return out

    seat = np.column_stack([numbers(t, np.int64) for t in seat_texts])
    return ids, boards, numbers(places_text, np.int64), numbers(when_text, np.float64), seat


def _row_columns(conn: sa.Connection, pool: Pool) -> _Columns:
    """The pool's columns from the driver's rows."""
    seats = [_G.c[f"seat{s}"] for s in range(pool.players)]
    q = (sa.select(_G.c.match_id, _G.c.board, _G.c.places, _G.c.released_at, *seats)
         .where(_pool_filter(pool)))
    found = conn.execute(q).all()
    n = len(found)
    if not n:
        return [], [], None, None, None
    ids, boards, packed, released, *by_seat = zip(*found, strict=True)
    del found
    seat = np.column_stack([np.fromiter(col, dtype=np.int64, count=n) for col in by_seat])
    return (list(ids), [b or "" for b in boards], np.fromiter(packed, dtype=np.int64, count=n),
            np.array(released, dtype=np.float64), seat)


def archived_of(archive: Archive, match_ids: Sequence[str]) -> set[str]:
    """Which of these games the archive holds (those Redis still holds too, when a move
    was cut short between its write and its drop)."""
    out: set[str] = set()
    with archive.connect() as conn:
        for i in range(0, len(match_ids), 500):
            chunk = list(match_ids[i:i + 500])
            out.update(str(m) for (m,) in conn.execute(
                sa.select(_G.c.match_id).where(_G.c.match_id.in_(chunk))))
    return out


# ----------------------------------------------------------------- bulk reads

PAGE = 2000  # games a page of `stream` reads


@dataclass(frozen=True, slots=True)
class Selection:
    """Which games a bulk read takes: a bot's (by its id), an event's, a pool's (by its
    `players`), finished in [since, until): any of them together; every game when empty."""

    bot_id: str = ""
    event: EventRef | None = None
    players: int | None = None
    since: float | None = None
    until: float | None = None


# The columns a bulk read selects, in the order `_Names.game` unpacks them (then the blob).
_COLUMNS = ("id", "match_id", "players", "board", "unit", "seed", "created_at",
            "finished_at", "released_at", "end_code", "winner", "forfeit_seat",
            "forfeit_reason", "places", "final", "actions", "rated", "event", "template",
            "seat0", "seat1", "seat2", "seat3")
_EVENT, _TEMPLATE, _SEAT0 = (_COLUMNS.index(c) for c in ("event", "template", "seat0"))


def _selected(conn: sa.Connection, sel: Selection, with_blob: bool, top: int
              ) -> sa.Select[Any] | None:
    """The query of a selection's games up to archive id `top`, in archive order (without
    its page's bounds); None when it names a bot or an event the archive does not hold."""
    cols: list[Any] = [_G.c[name] for name in _COLUMNS]
    # The blob only for transcripts; or for a game whose end word only its transcript has.
    cols.append(_G.c.blob if with_blob else sa.case(
        (_G.c.end_code == int(schema.EndCode.OTHER), _G.c.blob), else_=sa.null()
    ).label("blob"))
    q = sa.select(*cols)
    if sel.bot_id:
        bot = _bot_ids(conn, sel.bot_id)
        if bot is None:
            return None
        q = q.where(sa.or_(*(seat == bot for seat in schema.SEATS)))
    if sel.event is not None:
        ev = _event_id(conn, sel.event)
        if ev is None:
            return None
        q = q.where(_G.c.event == ev)
    if sel.players is not None:
        q = q.where(_G.c.players == sel.players)
    if sel.since is not None:
        q = q.where(_G.c.finished_at >= sel.since)
    if sel.until is not None:
        q = q.where(_G.c.finished_at < sel.until)
    return q.where(_G.c.id <= top)


def _top(conn: sa.Connection) -> int:
    return int(conn.execute(sa.select(sa.func.max(_G.c.id))).scalar() or 0)


@dataclass
class _Names:
    """What a bulk read looks up by id (bots, events, templates), each looked up once."""

    bots: dict[int, tuple[str, str]] = field(default_factory=dict)
    events: dict[int, EventRef] = field(default_factory=dict)
    templates: dict[int, str] = field(default_factory=dict)

    def fill(self, conn: sa.Connection, rows: Iterable[Sequence[Any]]) -> None:
        """Look up what `rows` (of `_selected`) name and is not known yet."""
        bots: set[int] = set()
        events: set[int] = set()
        templates: set[int] = set()
        for row in rows:
            bots.update(b for b in row[_SEAT0:_SEAT0 + 4] if b is not None)
            if row[_EVENT] is not None:
                events.add(row[_EVENT])
            templates.add(row[_TEMPLATE])
        b, e, t = schema.bots, schema.events, schema.templates
        for i, bot_id, name in _in(conn, sa.select(b.c.id, b.c.bot_id, b.c.name), b.c.id,
                                   bots - self.bots.keys()):
            self.bots[int(i)] = (str(bot_id), str(name))
        for i, kind, event_id in _in(conn, sa.select(e.c.id, e.c.kind, e.c.event_id),
                                     e.c.id, events - self.events.keys()):
            self.events[int(i)] = EventRef(EventKind(str(kind)), str(event_id))
        for i, body in _in(conn, sa.select(t.c.id, t.c.body), t.c.id,
                           templates - self.templates.keys()):
            self.templates[int(i)] = str(body)

    def game(self, row: Sequence[Any]) -> ArchivedGame:
        """A row of `_selected` as a game (by position: a bulk read's hot loop)."""
        (gid, match_id, n, board, unit, seed, created_at, finished_at, released_at,
         end_code, winner, forfeit_seat, forfeit_reason, places, final, actions, rated,
         event, template, *seats, blob) = row
        bots = self.bots
        seated = [bots[seats[s]] for s in range(n)]
        return ArchivedGame(
            id=gid, match_id=match_id, players=n,
            bot_ids=tuple([b for b, _ in seated]), names=tuple([name for _, name in seated]),
            event=None if event is None else self.events[event], board=board, unit=unit,
            seed=seed, created_at=created_at, finished_at=finished_at,
            released_at=released_at, end_code=end_code, winner=winner,
            forfeit_seat=forfeit_seat, forfeit_reason=forfeit_reason,
            placement=tuple([(places >> (4 * s)) & 0xF for s in range(n)]),
            final=tuple(map(int, final.split(","))) if final else (),
            actions=actions, rated=bool(rated), template=self.templates[template],
            blob=None if blob is None else bytes(blob))


def _in(conn: sa.Connection, q: sa.Select[Any], col: Any, wanted: set[int]
        ) -> list[tuple[Any, ...]]:
    """The rows of `q` whose `col` is one of `wanted`, a chunk of ids at a time."""
    ids = sorted(wanted)
    out: list[tuple[Any, ...]] = []
    for i in range(0, len(ids), 500):
        out += [tuple(row) for row in conn.execute(q.where(col.in_(ids[i:i + 500])))]
    return out


def count_selected(archive: Archive, sel: Selection) -> int:
    """How many archived games `stream` would give for `sel` now."""
    with archive.connect() as conn:
        q = _selected(conn, sel, False, _top(conn))
        if q is None:
            return 0
        return int(conn.execute(sa.select(sa.func.count()).select_from(
            q.with_only_columns(_G.c.id).subquery())).scalar_one())


def stream(archive: Archive, sel: Selection | None = None, *, with_blob: bool = False,
           page: int = PAGE) -> Iterator[list[ArchivedGame]]:
    """A selection's archived games, oldest first (archive order), a page at a time: keyset
    pages by `games.id`, each its own short read (no transaction held open for a whole
    export), up to the newest game archived when it began. Blobs only `with_blob` (the
    transcripts); bots, events and templates looked up once each."""
    sel = sel or Selection()
    names = _Names()
    with archive.connect() as conn:
        top = _top(conn)
        base = _selected(conn, sel, with_blob, top)
    if base is None or top == 0:
        return
    key = _G.c.id
    after = 0
    while True:
        with archive.connect() as conn:
            rows = conn.execute(base.where(key > after).order_by(key).limit(page)).all()
            if not rows:
                return
            names.fill(conn, rows)
        yield [names.game(row) for row in rows]
        if len(rows) < page:
            return
        after = int(rows[-1][0])


def has_bot(archive: Archive, bot_id: str) -> bool:
    """True when the archive holds a game of this bot."""
    with archive.connect() as conn:
        return _bot_ids(conn, bot_id) is not None


def bot_ids_named(archive: Archive, name: str) -> list[str]:
    """The ids of the archived bots named `name` (ignoring case, as names are)."""
    b = schema.bots
    with archive.connect() as conn:
        found = conn.execute(sa.select(b.c.bot_id).where(
            sa.func.lower(b.c.name) == name.lower()).order_by(b.c.id)).scalars().all()
    return [str(x) for x in found]


def has_event(archive: Archive, ref: EventRef) -> bool:
    """True when the archive holds this event (a game of it, or the event itself)."""
    with archive.connect() as conn:
        return _event_id(conn, ref) is not None


def of_leaving(g: Leaving) -> ArchivedGame:
    """A finished, public game Redis still holds, as the archive will hold it (its template
    and blob encoded now; no archive id yet: 0): how a reader of both stores, an export,
    reads a game that waits to be archived."""
    spec = g.spec
    board, unit = str(spec.meta.get("board", "")), str(spec.meta.get("unit", ""))
    packed = codec.encode(g.transcript, known_of(g.match_id, spec.seed, spec.bot_ids,
                                                 board, unit))
    row = game_row(g, packed)
    n = spec.players
    return ArchivedGame(
        id=0, match_id=g.match_id, players=n, bot_ids=tuple(spec.bot_ids),
        names=tuple(spec.seat_names), event=spec.event, board=board, unit=unit,
        seed=spec.seed, created_at=g.created_at, finished_at=g.finished_at,
        released_at=g.released_at, end_code=int(row["end_code"]), winner=row["winner"],
        forfeit_seat=row["forfeit_seat"], forfeit_reason=row["forfeit_reason"],
        placement=tuple(schema.unpack_places(int(row["places"]), n)),
        final=tuple(int(x) for x in str(row["final"]).split(",") if x != ""),
        actions=int(row["actions"]), rated=g.rated, template=packed.template,
        blob=packed.blob)


def to_record(g: ArchivedGame, with_transcript: bool = True) -> MatchRecord:
    """An archived game as the stack's `MatchRecord` (finished, released): what GetMatch,
    ListMatches and WatchMatch serve, whichever store holds the game. A record made
    without its blob has no transcript."""
    transcript = g.transcript() if with_transcript and g.blob is not None else None
    shared = g.shared or (transcript or {})
    clock = shared.get("clock")
    policy = shared.get("fault_policy")
    spec = MatchSpec(
        match_id=g.match_id, rules=Rules.make(g.players, dict(shared.get("rules") or {})),
        seed=g.seed, bot_ids=g.bot_ids,
        seat_names=tuple(transcript["seats"]) if transcript else g.names,
        clock=Clock(**clock) if clock else DEFAULT_CLOCK,
        faults=Faults(**policy) if policy else DEFAULT_FAULTS, event=g.event,
        meta={} if g.event is None else {
            "board": g.board, "unit": g.unit,
            "duplicate": str(shared.get("duplicate", "boards")),
            "notes": list(shared.get("notes") or [])})
    return MatchRecord(spec=spec, status=MatchStatus.FINISHED,
                       created_at=float(g.created_at or g.finished_at), started_at=None,
                       finished_at=g.finished_at, actions=g.actions, error="",
                       result=g.result(), transcript=transcript, released=True)


def log_entries(transcript: dict[str, Any]) -> list[str]:
    """The game's action log as a match's log holds it (`store.messages.ActionEntry`, JSON),
    rebuilt from its transcript: each action by its seat, a referee's replacement marked
    with its fault. What a watcher of an archived game is replayed (times and the bots'
    connection changes are not archived)."""
    record = dict(transcript)
    rules = Rules.make(int(record["players"]), record["rules"])
    faults = {int(f["seq"]): f for f in record.get("faults") or []}
    st = GameState.new(rules, int(record["seed"]))
    out = []
    for seq, aid in enumerate(actions_of(record)):
        fault = faults.get(seq)
        out.append(messages.encode(messages.ActionEntry(
            seq=seq, seat=st.to_act, action=aid,
            by=str(fault["kind"]) if fault else "bot", ms=0, bank=0,
            note=str(fault.get("reason", "")) if fault else "")))
        st.apply_id(aid)
    return out


# ---------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class ArchivedEvent:
    """An ended tournament or test as the archive holds it."""

    id: int  # its place in the archive
    ref: EventRef
    name: str
    spec: str  # its spec as the stack stored it (JSON)
    status: str
    created_at: float | None
    finished_at: float | None
    summary: dict[str, Any]  # `archive.mover.write_event`'s

    @property
    def state(self) -> dict[str, Any] | None:
        """The scheduling step's last state."""
        raw = self.summary.get("state")
        return None if raw is None else dict(json.loads(raw))

    def stream(self, after: int = 0) -> list[tuple[int, str]]:
        """Its public events after sequence `after`: (sequence, the event's JSON)."""
        return [(int(seq), str(e)) for seq, e in self.summary.get("stream", []) if seq > after]


def _event(row: Row[Any]) -> ArchivedEvent:
    m = row._mapping
    return ArchivedEvent(
        id=int(m["id"]), ref=EventRef(EventKind(str(m["kind"])), str(m["event_id"])),
        name=str(m["name"] or ""), spec=str(m["spec"]), status=str(m["status"] or ""),
        created_at=m["created_at"], finished_at=m["finished_at"],
        summary=json.loads(m["summary"]))


def event(archive: Archive, ref: EventRef) -> ArchivedEvent | None:
    """An ended event the archive holds whole; None otherwise (still in Redis, or unknown:
    an event row without a summary only names the event of archived games)."""
    e = schema.events
    with archive.connect() as conn:
        found = conn.execute(sa.select(e).where(
            e.c.kind == str(ref.kind), e.c.event_id == ref.id,
            e.c.summary.is_not(None))).first()
    return None if found is None else _event(found)


def events(archive: Archive, kind: EventKind, *, before: int | None = None, limit: int = 50,
           status: str = "", author: str = "") -> list[ArchivedEvent]:
    """Ended events of a kind the archive holds whole, newest first (archive order); with
    `author`, only those whose spec names that author (a test an author started: its spec,
    stored compact, has `"author":"u-..."`; the database picks the rows that hold those
    characters, and each is then checked)."""
    e = schema.events
    q = sa.select(e).where(e.c.kind == str(kind), e.c.summary.is_not(None))
    if before is not None:
        q = q.where(e.c.id < before)
    if status:
        q = q.where(e.c.status == status)
    if author:
        q = q.where(e.c.spec.contains(f'"author":{json.dumps(author)}', autoescape=True))
    with archive.connect() as conn:
        found = conn.execute(q.order_by(e.c.id.desc()).limit(limit)).all()
    out = [_event(row) for row in found]
    return [x for x in out if not author or _spec_author(x.spec) == author]


def _spec_author(spec: str) -> str:
    """The author an event's spec names ('' for none, or for a spec that is not JSON)."""
    try:
        d = json.loads(spec)
    except ValueError:
        return ""
    return str(d.get("author") or "") if isinstance(d, dict) else ""


def rating_snapshot(archive: Archive, pool: Pool, method: str, at: float | None = None
                    ) -> tuple[float, str] | None:
    """(when, the table's JSON) of a pool's latest rating snapshot of `method` taken at or
    before `at` (the latest of all without it); None when there is none."""
    t = schema.rating_snapshots
    q = sa.select(t.c.at, t.c.body).where(t.c.pool == str(pool), t.c.method == method)
    if at is not None:
        q = q.where(t.c.at <= at)
    with archive.connect() as conn:
        row = conn.execute(q.order_by(t.c.at.desc()).limit(1)).first()
    return None if row is None else (float(row[0]), zlib.decompress(row[1]).decode())


def rating_snapshot_times(archive: Archive, pool: Pool, method: str) -> list[float]:
    """When each of a pool's snapshots of `method` was taken, oldest first."""
    t = schema.rating_snapshots
    with archive.connect() as conn:
        return [float(a) for (a,) in conn.execute(
            sa.select(t.c.at).where(t.c.pool == str(pool), t.c.method == method)
            .order_by(t.c.at))]
