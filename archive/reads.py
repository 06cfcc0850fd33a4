"""Reading finished games from the archive: one game, a listing, an event's rows, a pool's.

A listing needs no blob: a game's columns (seats, event, board, result, times) and its
template's shared values (rules, clock, fault policy) are what a `Match` shows; the
blob is decoded (`archive.codec`) only for a game's transcript (GetMatch, a replay, an
export). Listings are newest first in archive order (the `games.id` the mover gave
them, which is the order their boards were released), paged by that id.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Row

from archive import codec, schema
from archive.db import Archive
from archive.mover import known_of
from moon import GameState, Rules
from moon.transcript import actions_of
from store import messages
from store.matches import MatchRecord
from store.pools import Pool
from store.records import DEFAULT_CLOCK, DEFAULT_FAULTS, Clock, Faults, MatchSpec
from store.refs import EventKind, EventRef
from store.status import MatchStatus

__all__ = ["ArchivedEvent", "ArchivedGame", "count", "event", "event_rows", "events", "game",
           "games", "log_entries", "pool_rows", "to_record"]

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
        word = _ENDS.get(schema.EndCode(self.end_code))
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
    `before`: a bot's (an index range scan of `plays`), an event's, a pool's (`players`),
    finished in [since, until) if given."""
    with archive.connect() as conn:
        q = _select(with_blob)
        if bot_id:
            bot = _bot_ids(conn, bot_id)
            if bot is None:
                return []
            p = schema.plays
            q = q.where(_G.c.id.in_(sa.select(p.c.game).where(p.c.bot == bot)))
        if event is not None:
            ev = _event_id(conn, event)
            if ev is None:
                return []
            q = q.where(_G.c.event == ev)
        if players is not None:
            q = q.where(_G.c.players == players)
        if before is not None:
            q = q.where(_G.c.id < before)
        if since is not None:
            q = q.where(_G.c.finished_at >= since)
        if until is not None:
            q = q.where(_G.c.finished_at < until)
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
           status: str = "") -> list[ArchivedEvent]:
    """Ended events of a kind the archive holds whole, newest first (archive order)."""
    e = schema.events
    q = sa.select(e).where(e.c.kind == str(kind), e.c.summary.is_not(None))
    if before is not None:
        q = q.where(e.c.id < before)
    if status:
        q = q.where(e.c.status == status)
    with archive.connect() as conn:
        found = conn.execute(q.order_by(e.c.id.desc()).limit(limit)).all()
    return [_event(row) for row in found]
