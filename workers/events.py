"""Tournament events: numbered, written once, readable from any point.

Each event gets the next sequence number of its tournament and is stored in a
Redis stream under the id `<sequence>-0`, so a watcher that reconnects asks for
everything after the last sequence it saw and misses or repeats nothing. An
event carries a key (`finished:<match_id>`, ...); emitting the same key twice
is a no-op, which makes every emitter safe to re-run after a crash.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from workers import keys

__all__ = ["EMIT_LUA", "emit", "read_after"]

EMIT_LUA = """
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then
  return 0
end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local seq = 1
if last[1] then
  seq = tonumber(string.match(last[1][1], '^(%d+)')) + 1
end
redis.call('XADD', KEYS[1], seq .. '-0', 'e', ARGV[2])
return seq
"""


def emit(r: redis.Redis, tournament_id: str, key: str, event: dict[str, Any]) -> int:
    """Append an event once per key; return its sequence number, or 0 if emitted before."""
    seq: Any = r.eval(EMIT_LUA, 2, keys.tournament_events(tournament_id),
                      keys.tournament_emitted(tournament_id), key,
                      json.dumps(event, separators=(",", ":")))
    return int(seq)


def read_after(r: redis.Redis, tournament_id: str, after: int, block_ms: int | None = None,
               count: int = 500) -> list[tuple[int, dict[str, Any]]]:
    """Events with a sequence above `after`, oldest first; waits up to `block_ms` for one."""
    key = keys.tournament_events(tournament_id)
    reply: Any = r.xread({key: f"{after}-0"}, count=count, block=block_ms)
    out: list[tuple[int, dict[str, Any]]] = []
    for _stream, entries in reply or []:
        for entry_id, fields in entries:
            seq = int(str(entry_id).split("-", 1)[0])
            out.append((seq, json.loads(fields["e"])))
    return out
