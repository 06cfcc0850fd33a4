"""Tournament events: numbered, written once, readable from any point.

Each event gets the next sequence number of its tournament and is stored in a
Redis stream under the id `<sequence>-0`, so a watcher that reconnects asks for
everything after the last sequence it saw and misses or repeats nothing. An
event carries a key (`finished:<match_id>`, ...); emitting the same key twice
is a no-op, which makes every emitter safe to re-run after a crash. Events are
typed messages of the `TOURNAMENT` family (`store.messages`).
"""

from __future__ import annotations

from typing import Any

import redis

from store import keys, messages
from store.lua import EMIT_LUA

__all__ = ["emit", "entry_seq", "newest_seq", "parse_entries", "read_after"]


def emit(r: redis.Redis, tournament_id: str, key: str, event: messages.Message) -> int:
    """Append an event once per key; return its sequence number, or 0 if emitted before."""
    seq: Any = r.eval(EMIT_LUA, 2, keys.tournament_events(tournament_id),
                      keys.tournament_emitted(tournament_id), key, messages.encode(event))
    return int(seq)


def entry_seq(entry_id: str | bytes) -> int:
    """The sequence number of a stream entry id `<seq>-0`."""
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(text.split("-", 1)[0])


def parse_entries(reply: Any) -> list[tuple[int, messages.Message]]:
    """(sequence, event) pairs of an XREAD reply, oldest first."""
    out: list[tuple[int, messages.Message]] = []
    for _stream, entries in reply or []:
        for entry_id, fields in entries:
            out.append((entry_seq(entry_id), messages.decode(fields["e"], messages.TOURNAMENT)))
    return out


def read_after(r: redis.Redis, tournament_id: str, after: int, block_ms: int | None = None,
               count: int = 500) -> list[tuple[int, messages.Message]]:
    """Events with a sequence above `after`, oldest first; waits up to `block_ms` for one."""
    key = keys.tournament_events(tournament_id)
    return parse_entries(r.xread({key: f"{after}-0"}, count=count, block=block_ms))


def newest_seq(r: redis.Redis, tournament_id: str) -> int:
    """The sequence of the tournament's newest event, 0 if none."""
    last: Any = r.xrevrange(keys.tournament_events(tournament_id), count=1)
    return entry_seq(last[0][0]) if last else 0
