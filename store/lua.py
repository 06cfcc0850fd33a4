"""The Lua scripts that make multi-key updates atomic, each with its contract."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ACCEPT_LUA", "AFTER_LUA", "CREATE_EVENT_LUA", "EMIT_LUA", "FENCED_BATCH_LUA",
           "FENCED_SEND_LUA", "LOCK_EXTEND_LUA", "LOCK_RELEASE_LUA", "PRESENT_BESIDES_LUA",
           "PRESENT_LUA", "PRESENT_OR_WANT_LUA", "RECORD_LUA", "SANDBOX_FITS_OR_WANT_LUA",
           "SAVE_STEP_LUA", "Command", "batch_args"]

# KEYS: the bot's pending hash, the match's reply list. ARGV: request id, reply JSON
# without its "at_us" field (`store.messages.unstamped`).
# The first answer to a request pending *for this bot* moves to the reply list, stamped
# with Redis's clock (`"at_us"`, the moment the answer counts: the match job charges the
# bot's clock up to it, not up to whenever a busy worker reads it); any other answer
# changes nothing (returns 0). The stamp goes in as the object's first key: the JSON
# the referee hands over has no such key, so the result has exactly one.
ACCEPT_LUA = """
if redis.call('HDEL', KEYS[1], ARGV[1]) == 1 then
  local t = redis.call('TIME')
  local stamped = '{"at_us":' .. t[1] .. string.format('%06d', tonumber(t[2])) .. ',' ..
      string.sub(ARGV[2], 2)
  redis.call('RPUSH', KEYS[2], stamped)
  return 1
end
return 0
"""

# KEYS: the event stream, the set of emitted keys. ARGV: event key, event JSON.
# Appends the event once per key with the next sequence number as its entry id
# (`<seq>-0`); returns that number, or 0 when the key was emitted before.
_EMIT_FN = """
local function emit(stream, emitted, key, event)
  if redis.call('SADD', emitted, key) == 0 then
    return 0
  end
  local last = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)
  local seq = 1
  if last[1] then
    seq = tonumber(string.match(last[1][1], '^(%d+)')) + 1
  end
  redis.call('XADD', stream, seq .. '-0', 'e', event)
  return seq
end
"""
EMIT_LUA = _EMIT_FN + "return emit(KEYS[1], KEYS[2], ARGV[1], ARGV[2])\n"

# KEYS: the event's hash, its step state, the set of live events, its public stream and
# emitted keys, its organiser stream and emitted keys, the ended events the archive awaits,
# the games waiting for the archive.
# ARGV: the step_seq the run read, the new state JSON, games done, games planned, the end
# status ('' for none), when it ended, the error, the event's reference, the end event's
# key and JSON ('' for none), wake_at ('' for none), '1' while the event is live, now,
# then the ids of the games this pass released (queued for the archive with the save
# that folded them: a pass redone after a crash finds them still in Redis).
# One scheduling step's save, all or nothing: only if no other run saved since this one
# read the state (`step_seq` unchanged), the new state, the progress, when to look again
# and whether recovery keeps nudging the event; and, the first time the event ends, its
# status and its end event on both streams. So no crash can leave an event over without
# its end event, nor an end event without the status (a watcher reads either).
SAVE_STEP_LUA = _EMIT_FN + """
local seq = tonumber(redis.call('HGET', KEYS[1], 'step_seq') or '0')
if seq ~= tonumber(ARGV[1]) then
  return 0
end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'step_seq', seq + 1, 'done', ARGV[3], 'total', ARGV[4])
if ARGV[11] == '' then
  redis.call('HDEL', KEYS[1], 'wake_at')
else
  redis.call('HSET', KEYS[1], 'wake_at', ARGV[11])
end
local live = ARGV[12] == '1'
if ARGV[5] ~= '' and redis.call('HGET', KEYS[1], 'status') == 'running' then
  redis.call('HSET', KEYS[1], 'status', ARGV[5], 'finished_at', ARGV[6], 'error', ARGV[7])
  if ARGV[10] ~= '' then
    emit(KEYS[6], KEYS[7], ARGV[9], ARGV[10])
    emit(KEYS[4], KEYS[5], ARGV[9], ARGV[10])
    redis.call('SADD', KEYS[8], ARGV[8])
  end
end
if live then
  redis.call('SADD', KEYS[3], ARGV[8])
else
  redis.call('SREM', KEYS[3], ARGV[8])
end
for i = 14, #ARGV do
  redis.call('ZADD', KEYS[9], 'NX', ARGV[13], ARGV[i])
end
return seq + 1
"""

# KEYS: an event's hash, its kind's index (a zset by creation time), the set of live
# events. ARGV: its spec JSON, now, its name, its id, its reference.
# A new event in one step: its spec (only if the id is free), status, listing and a place
# among the live events that recovery nudges; returns 1, or 0 (and writes nothing) when
# the id was taken. No failure can leave a spec outside the index, unseen by recovery.
CREATE_EVENT_LUA = """
if redis.call('HSETNX', KEYS[1], 'spec', ARGV[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'status', 'running', 'created_at', ARGV[2], 'name', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[4])
redis.call('SADD', KEYS[3], ARGV[5])
return 1
"""

# KEYS: a zset (an index ordered by time). ARGV: a member, "1" for newest first, the
# member's score when the token was made ('' if unknown).
# The members after that one in that order, or false when it is not a member and no score
# was given: one atomic step, so an item added meanwhile cannot shift the position
# between the look-up and the read (a page would then repeat the token's own item). A
# member gone from the index since (a game moved to the archive) is placed by its score:
# what follows it is what has a later place in (score, member) order.
AFTER_LUA = """
local newest = ARGV[2] == '1'
local rank
if newest then
  rank = redis.call('ZREVRANK', KEYS[1], ARGV[1])
else
  rank = redis.call('ZRANK', KEYS[1], ARGV[1])
end
if rank then
  if newest then
    return redis.call('ZREVRANGE', KEYS[1], rank + 1, -1)
  end
  return redis.call('ZRANGE', KEYS[1], rank + 1, -1)
end
if ARGV[3] == '' then
  return false
end
local s = tonumber(ARGV[3])
local found
if newest then
  found = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[3], '-inf', 'WITHSCORES')
else
  found = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[3], '+inf', 'WITHSCORES')
end
local out = {}
for i = 1, #found, 2 do
  local m = found[i]
  local tie = tonumber(found[i + 1]) == s
  if not (tie and ((newest and m >= ARGV[1]) or ((not newest) and m <= ARGV[1]))) then
    out[#out + 1] = m
  end
end
return out
"""

# KEYS: an event's `recorded` zset, the event's hash. ARGV: match id.
# Gives a finished game the next recording number, once; returns it (0 if it had one).
# The last number given is the hash's `recorded` field, not the set's size: the archive
# drops an arena's released games from the set (`store.archiving.drop`), and a number
# taken from the set's size would then go back below the step's cursor, where the step
# never looks (the arena stopped after its first archived batch). An event recorded
# before the field existed starts from its highest number, or from the step's cursor
# (`done`) if the set is empty.
RECORD_LUA = """
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
local n = tonumber(redis.call('HGET', KEYS[2], 'recorded'))
if not n then
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  n = math.max(tonumber(last[2] or 0), tonumber(redis.call('HGET', KEYS[2], 'done') or 0))
end
n = n + 1
redis.call('HSET', KEYS[2], 'recorded', n)
redis.call('ZADD', KEYS[1], n, ARGV[1])
return n
"""

# The writes of a match run are fenced by its lease: each checks, in the same atomic step,
# that the run still holds it. A run that stalled (a frozen process, a long GC pause, a
# partition) past its lease's lapse while another run took the match over can then write
# nothing: not a second entry for an action the new run logged, not a result of its own.

# KEYS: a lock (`store.locks.Lock`: a match lease, a scheduler's or a fit's lock).
# ARGV: token, ttl ms. Extends the lock if this token holds it (1); otherwise changes
# nothing (0). A lapsed lock is lost too: another holder may have taken it and already
# let go of it.
LOCK_EXTEND_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

# KEYS: a lock. ARGV: token. Drops the lock if this token holds it (1), else 0.
LOCK_RELEASE_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

# KEYS: the match's lease, its action log, the bot's pending hash.
# ARGV: run id, lease ms, log entry ('' for none), request id, request JSON, the bot's
# event channel. If the run holds the lease: extends it, logs the entry, makes the request
# pending and publishes it; returns Redis's TIME as the request goes out. Otherwise
# returns false and writes nothing.
FENCED_SEND_LUA = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return false
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if ARGV[3] ~= '' then
  redis.call('RPUSH', KEYS[2], ARGV[3])
end
redis.call('HSET', KEYS[3], ARGV[4], ARGV[5])
redis.call('PUBLISH', ARGV[6], ARGV[5])
return redis.call('TIME')
"""

# KEYS: a lock (a match's lease), then one key per command. ARGV: the lock's token, then
# for each command its verb, the number of its arguments, and those arguments (built by
# `Command`). If the token holds the lock, runs the commands in order and returns their
# replies; otherwise writes nothing and returns -1. A verb is a Redis command on its
# key (HSET, HSETNX, HINCRBY, HDEL, RPUSH, SADD, SREM, ...) or one of:
#   SETNX value                  SET NX; when it sets nothing, the batch stops there
#                                (what follows is owed only by the write that set it)
#   HSETXX field value           HSET over a field that is there only (1), else 0
#   NOTIFY channel event ms      a bot event, durable: appended to the bot's event log
#                                (the key: a stream trimmed to its last `ms`, and
#                                lapsing `ms` after its last event) and published on the
#                                bot's channel as {"type":"logged","event_id":...,
#                                "event":<the event>}; replies the entry id
FENCED_BATCH_LUA = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
local out = {}
local a = 2
for k = 2, #KEYS do
  local verb, n = ARGV[a], tonumber(ARGV[a + 1])
  local args = {unpack(ARGV, a + 2, a + 1 + n)}
  a = a + 2 + n
  local reply
  if verb == 'NOTIFY' then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    reply = redis.call('XADD', KEYS[k], 'MINID', '~', now - tonumber(args[3]), '*',
                       'e', args[2])
    redis.call('PEXPIRE', KEYS[k], args[3])
    redis.call('PUBLISH', args[1], '{"v":1,"type":"logged","event_id":"' .. reply ..
               '","event":' .. args[2] .. '}')
  elseif verb == 'SETNX' then
    reply = redis.call('SET', KEYS[k], args[1], 'NX') and 1 or 0
  elseif verb == 'HSETXX' then
    reply = redis.call('HEXISTS', KEYS[k], args[1])
    if reply == 1 then
      redis.call('HSET', KEYS[k], args[1], args[2])
    end
  else
    reply = redis.call(verb, KEYS[k], unpack(args))
  end
  out[#out + 1] = reply
  if verb == 'SETNX' and reply == 0 then
    break
  end
end
return out
"""


@dataclass(frozen=True, slots=True)
class Command:
    """One command of a fenced batch (FENCED_BATCH_LUA): a verb, its key, its arguments."""

    verb: str
    key: str
    args: tuple[str | int, ...] = ()


def batch_args(lock_key: str, token: str, commands: Sequence[Command]
               ) -> tuple[list[str], list[str | int]]:
    """KEYS and ARGV of FENCED_BATCH_LUA for these commands under this lock."""
    argv: list[str | int] = [token]
    for c in commands:
        argv += [c.verb, len(c.args), *c.args]
    return [lock_key, *(c.key for c in commands)], argv


# KEYS: a bot's presence zset (stream ids scored by their expiry, on Redis's clock).
# Returns how many of its streams have not expired yet, read on Redis's clock too: the
# referee that wrote an entry and the worker or referee that reads it may disagree
# about the time, Redis never disagrees with itself.
# Whether a bot has a live stream; if not and it is a hosted version that may play
# (validating or active), it is wanted: a host starts its sandbox. KEYS: presence,
# the hosted record, the wanted set; ARGV: the bot id.
PRESENT_OR_WANT_LUA = """
local t = redis.call('TIME')
local now = t[1] + t[2] / 1000000
local n = redis.call('ZCOUNT', KEYS[1], now, '+inf')
if n == 0 then
  local status = redis.call('HGET', KEYS[2], 'status')
  if status == 'active' or status == 'validating' then
    redis.call('ZADD', KEYS[3], now, ARGV[1])
  end
end
return n
"""

# Whether a match whose event limits hosted bots' sandboxes may send the bot requests:
# yes (1) for a bot that is no hosted version that may play; for a live sandbox whose
# host published limits each at most the match's (ARGV[2], JSON of the fields it sets;
# the host's liveness from the hosts zset, so a dead host's entry counts for nothing);
# and for a stream with no live sandbox behind it (its author's own process, which runs
# on the author's machine like any remote bot). Otherwise (no sandbox yet, limits not
# worked out yet, or a sandbox looser than the match allows) the bot is wanted, and
# the match's limits are merged, field by field the lowest, into what its want asks of
# the host (0). KEYS: the hosted record, the bot's presence, the wanted zset, the
# want-limits hash, the hosts zset; ARGV: the bot id, the limits.
SANDBOX_FITS_OR_WANT_LUA = """
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'active' and status ~= 'validating' then
  return 1
end
local t = redis.call('TIME')
local now = t[1] + t[2] / 1000000
local mine = cjson.decode(ARGV[2])
local live_sandbox = false
local published = redis.call('HGET', KEYS[1], 'sandbox')
if published then
  local p = cjson.decode(published)
  local until_ = redis.call('ZSCORE', KEYS[5], p['host'] or '')
  if until_ and tonumber(until_) > now then
    live_sandbox = true
    local limits = p['limits']
    if limits then
      local fits = true
      for k, v in pairs(mine) do
        if limits[k] == nil or tonumber(limits[k]) > tonumber(v) then
          fits = false
        end
      end
      if fits then
        return 1
      end
    end
  end
end
if not live_sandbox and redis.call('ZCOUNT', KEYS[2], now, '+inf') > 0 then
  return 1
end
redis.call('ZADD', KEYS[3], now, ARGV[1])
local old = redis.call('HGET', KEYS[4], ARGV[1])
if old then
  for k, v in pairs(cjson.decode(old)) do
    if mine[k] == nil or tonumber(v) < tonumber(mine[k]) then
      mine[k] = v
    end
  end
end
redis.call('HSET', KEYS[4], ARGV[1], cjson.encode(mine))
return 0
"""

PRESENT_LUA = """
local t = redis.call('TIME')
return redis.call('ZCOUNT', KEYS[1], t[1] + t[2] / 1000000, '+inf')
"""

# KEYS: the bot's presence. ARGV: the prefix of the streams opened with one token
# (`store.bots.stream_prefix`). 1 if a live stream of the bot has another prefix, else 0.
PRESENT_BESIDES_LUA = """
local t = redis.call('TIME')
local live = redis.call('ZRANGEBYSCORE', KEYS[1], t[1] + t[2] / 1000000, '+inf')
local n = #ARGV[1]
for _, id in ipairs(live) do
  if string.sub(id, 1, n) ~= ARGV[1] then
    return 1
  end
end
return 0
"""
