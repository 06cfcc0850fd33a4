"""Writing finished games to the archive: a batch of `store.archiving.Leaving` games as
rows, in one transaction.

Each game becomes one `games` row (its columns: who sat where, its event, board, seed,
times, result, and the compact transcript, `archive.codec`, whose template the games of
one event share; a bot's games, newest last, are range scans of the seats' indexes).
Bot ids, events and templates are interned to small integers.

Idempotent: a game written before (a batch redone after its job died between the
commit and Redis's drop) is left as it is (`insert_ignore` on `match_id`): writing a
batch twice writes it once.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Connection

from archive import codec, schema
from archive.db import Archive, insert_ignore, intern
from store.archiving import Leaving
from store.refs import EventRef

__all__ = ["KNOWN", "game_row", "known_of", "write", "write_event", "write_rating_snapshot"]

# What the archive keeps in columns anyway, so the codec leaves it out of the blob.
KNOWN = ("match_id", "seed", "bot_ids", "board", "unit")


def known_of(match_id: str, seed: int, bot_ids: Sequence[str], board: str,
             unit: str) -> dict[str, Any]:
    """The values `codec.decode` takes back from a game's columns."""
    return {"match_id": match_id, "seed": seed, "bot_ids": list(bot_ids), "board": board,
            "unit": unit}


def _known(g: Leaving) -> dict[str, Any]:
    meta = g.spec.meta
    return known_of(g.match_id, g.spec.seed, g.spec.bot_ids, str(meta.get("board", "")),
                    str(meta.get("unit", "")))


def game_row(g: Leaving, packed: codec.Packed) -> dict[str, Any]:
    """A game's `games` columns (without its ids: bots, event and template)."""
    row, res = g.row, g.result
    forfeit = res.get("forfeit") or {}
    return {
        "match_id": g.match_id, "players": g.spec.players, "seed": g.spec.seed,
        "board": str(g.spec.meta.get("board", "")), "unit": str(g.spec.meta.get("unit", "")),
        "created_at": g.created_at, "finished_at": g.finished_at,
        "released_at": g.released_at,
        "end_code": schema.EndCode.of(str(res.get("end", ""))),
        "winner": res.get("winner"),
        "forfeit_seat": forfeit.get("seat"), "forfeit_reason": forfeit.get("reason"),
        "places": schema.pack_places([int(p) for p in res["placement"]]),
        "final": ",".join(str(int(x)) for x in res["final"]),
        "actions": int(row.get("actions") or 0), "rated": g.rated, "blob": packed.blob,
    }


def _events(conn: Connection, refs: set[EventRef]) -> dict[EventRef, int]:
    """The archive's id of each event, inserting those not there yet (name, spec and
    status come when the event is archived whole)."""
    if not refs:
        return {}
    insert_ignore(conn, schema.events, [{"kind": str(e.kind), "event_id": e.id}
                                        for e in sorted(refs, key=str)])
    t = schema.events
    found = conn.execute(sa.select(t.c.kind, t.c.event_id, t.c.id).where(
        sa.tuple_(t.c.kind, t.c.event_id).in_([(str(e.kind), e.id) for e in refs])))
    return {EventRef.parse(f"{kind}:{event_id}"): int(i) for kind, event_id, i in found}


def write(archive: Archive, games: Sequence[Leaving]) -> int:
    """Write a batch of games in one transaction; how many were new."""
    if not games:
        return 0
    packed = [codec.encode(g.transcript, _known(g)) for g in games]
    names: dict[str, str] = {}
    for g in games:
        for bot_id, name in zip(g.spec.bot_ids, g.spec.seat_names, strict=True):
            names.setdefault(bot_id, name)
    with archive.begin() as conn:
        bots = intern(conn, schema.bots, "bot_id",
                      [{"bot_id": b, "name": n} for b, n in sorted(names.items())])
        events = _events(conn, {g.spec.event for g in games if g.spec.event is not None})
        templates = intern(conn, schema.templates, "hash", [
            {"hash": codec.template_id(p.template), "body": p.template} for p in packed])
        rows = []
        for g, p in zip(games, packed, strict=True):
            seats = [bots[b] for b in g.spec.bot_ids]
            rows.append({**game_row(g, p),
                         **{f"seat{s}": seats[s] if s < len(seats) else None
                            for s in range(4)},
                         "event": None if g.spec.event is None else events[g.spec.event],
                         "template": templates[codec.template_id(p.template)]})
        new = insert_ignore(conn, schema.games, rows)
    return new


def write_event(archive: Archive, ref: EventRef, snapshot: Mapping[str, Any]) -> None:
    """Write an ended event (`store.archiving.event_snapshot`): its name, spec, status and
    times in its `events` row, everything else a reader needs in its `summary` (the step's
    state, the public event stream, a test's pairs, the event's own rating, its failed
    games, its games in creation and release order). Idempotent: written again, it is the
    same row."""
    h = snapshot["hash"]
    summary = {k: snapshot[k] for k in ("state", "stream", "pairs", "rating", "redealt",
                                        "failed", "games", "released")}
    summary["info"] = {k: h.get(k) for k in ("done", "total", "error", "stop", "stopped_by")}
    values = {"name": h.get("name"), "spec": h["spec"], "status": h.get("status"),
              "created_at": float(h["created_at"]) if h.get("created_at") else None,
              "finished_at": float(h["finished_at"]) if h.get("finished_at") else None,
              "summary": json.dumps(summary, separators=(",", ":"))}
    with archive.begin() as conn:
        eid = _events(conn, {ref})[ref]
        conn.execute(sa.update(schema.events).where(schema.events.c.id == eid).values(**values))


def write_rating_snapshot(archive: Archive, pool: str, method: str, at: float,
                          table_json: str) -> None:
    """Keep a pool's rating table of one method as it stood at `at` (its JSON,
    compressed). Idempotent: a snapshot of the same instant is kept once."""
    with archive.begin() as conn:
        insert_ignore(conn, schema.rating_snapshots, [{
            "pool": pool, "method": method, "at": at,
            "body": zlib.compress(table_json.encode(), 9)}])
