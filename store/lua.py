"""The Lua scripts that make multi-key updates atomic, each with its contract."""

from __future__ import annotations

__all__ = ["ACCEPT_LUA", "EMIT_LUA", "FENCED_CALL_LUA", "FENCED_SEND_LUA", "FENCED_WRITE_LUA",
           "LOCK_EXTEND_LUA", "LOCK_RELEASE_LUA", "PRESENT_LUA", "RECORD_LUA",
           "REPLACE_PENDING_LUA"]

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

# KEYS: a tournament's `recorded` zset. ARGV: match id.
# Gives a finished game the next recording number, once; returns it (0 if it had one).
RECORD_LUA = """
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
local n = redis.call('ZCARD', KEYS[1]) + 1
redis.call('ZADD', KEYS[1], n, ARGV[1])
return n
"""

# KEYS: the match's lease, a bot's pending hash. ARGV: run id, request id,
# request JSON. Replaces a request only while this run holds the lease (-1
# otherwise) and the request is still pending: an answer accepted in the
# meantime must not be followed by a copy that looks pending again.
REPLACE_PENDING_LUA = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
  return 1
end
return 0
"""

# KEYS: the match's lease, the key (or channel) one command touches. ARGV: run
# id, the command (HDEL, RPUSH or PUBLISH), its other arguments. The command
# runs only while this run holds the lease; -1 otherwise. Every write of a
# match run outside its log goes through here, so a run that stalled past its
# lease cannot touch what its successor now owns.
FENCED_CALL_LUA = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
return redis.call(ARGV[2], KEYS[2], unpack(ARGV, 3))
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

# KEYS: the match's lease, its action log, its result. ARGV: run id, result JSON ('' for
# none), log entries... If the run holds the lease: appends the entries, then stores the
# result unless one is stored; returns 1 if it stored it, else 0. Without the lease it
# writes nothing and returns -1.
FENCED_WRITE_LUA = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
for i = 3, #ARGV do
  redis.call('RPUSH', KEYS[2], ARGV[i])
end
if ARGV[2] ~= '' and redis.call('SET', KEYS[3], ARGV[2], 'NX') then
  return 1
end
return 0
"""

# KEYS: a bot's presence zset (stream ids scored by their expiry, on Redis's clock).
# Returns how many of its streams have not expired yet, read on Redis's clock too: the
# referee that wrote an entry and the worker or referee that reads it may disagree
# about the time, Redis never disagrees with itself.
PRESENT_LUA = """
local t = redis.call('TIME')
return redis.call('ZCOUNT', KEYS[1], t[1] + t[2] / 1000000, '+inf')
"""
