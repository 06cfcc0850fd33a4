"""Tournament events: numbered, written once, readable from any point.

Each event gets the next sequence number of its tournament and is stored in a
Redis stream under the id `<sequence>-0`, so a watcher that reconnects asks for
everything after the last sequence it saw and misses or repeats nothing. An
event carries a key (`finished:<match_id>`, ...); emitting the same key twice
is a no-op, which makes every emitter safe to re-run after a crash. Events are
typed messages of the `TOURNAMENT` family (`store.messages`).

Two audiences, two streams: organisers follow every result as it is recorded;
the public stream carries a game's result only once its board is released
(every game of the board has finished), so no watcher learns anything of a
deal that a bot at another table is still playing.
"""

from __future__ import annotations

from typing import Any

import redis

from store import keys, messages
from store.lua import EMIT_LUA

__all__ = [
    "ORGANISER",
    "PUBLIC",
    "emit",
    "emit_both",
    "entry_seq",
    "newest_seq",
    "parse_entries",
    "read_after",
    "stream_key",
]


PUBLIC = "public"
ORGANISER = "organiser"


def stream_key(tournament_id: str, audience: str = PUBLIC) -> str:
    """The stream of events an audience follows: public (results released with their
    board) or organiser (results as recorded)."""
    return (keys.tournament_live(tournament_id) if audience == ORGANISER
            else keys.tournament_events(tournament_id))


def emit(r: redis.Redis, tournament_id: str, key: str, event: messages.Message,
         audience: str = PUBLIC) -> int:
    """Append an event to an audience's stream once per key; return its sequence number,
    or 0 if emitted before."""
    emitted = (keys.tournament_live_emitted(tournament_id) if audience == ORGANISER
               else keys.tournament_emitted(tournament_id))
    seq: Any = r.eval(EMIT_LUA, 2, stream_key(tournament_id, audience), emitted, key,
                      messages.encode(event))
    return int(seq)


def emit_both(r: redis.Redis, tournament_id: str, key: str, event: messages.Message) -> None:
    """Append an event that every audience sees, to both streams."""
    for audience in (ORGANISER, PUBLIC):
        emit(r, tournament_id, key, event, audience)


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
               count: int = 500, audience: str = PUBLIC) -> list[tuple[int, messages.Message]]:
    """Events with a sequence above `after`, oldest first; waits up to `block_ms` for one."""
    key = stream_key(tournament_id, audience)
    return parse_entries(r.xread({key: f"{after}-0"}, count=count, block=block_ms))


def newest_seq(r: redis.Redis, tournament_id: str, audience: str = PUBLIC) -> int:
    """The sequence of the newest event of an audience's stream, 0 if none."""
    last: Any = r.xrevrange(stream_key(tournament_id, audience), count=1)
    return entry_seq(last[0][0]) if last else 0
