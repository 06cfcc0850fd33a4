"""The Lua scripts that make multi-key updates atomic, each with its contract."""

from __future__ import annotations

__all__ = ["ACCEPT_LUA", "EMIT_LUA", "RECORD_LUA", "REPLACE_PENDING_LUA"]

# KEYS: the bot's pending hash, the match's reply list. ARGV: request id, reply JSON.
# The first answer to a request pending *for this bot* moves to the reply list, stamped
# with Redis's clock (`"at_us"`, the moment the answer counts: the match job charges the
# bot's clock up to it, not up to whenever a busy worker reads it); any other answer
# changes nothing (returns 0).
ACCEPT_LUA = """
if redis.call('HDEL', KEYS[1], ARGV[1]) == 1 then
  local t = redis.call('TIME')
  local stamped = string.sub(ARGV[2], 1, -2) .. ',"at_us":' .. t[1] ..
      string.format('%06d', tonumber(t[2])) .. '}'
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

# KEYS: a bot's pending hash. ARGV: request id, request JSON.
# Replaces a request only while it is still pending: an answer accepted in the
# meantime must not be followed by a copy that looks pending again.
REPLACE_PENDING_LUA = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  return 1
end
return 0
"""
