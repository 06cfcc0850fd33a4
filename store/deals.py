"""Deals: the secret that turns a planned board into the deal it is played with, and the
record of every deal the stack has dealt.

Two promises rest here (DESIGN.md, "Threat model"):

- **No released fact predicts a board not yet played.** A format plans each board's
  seed from public facts (the tournament's `--seed` and the board's name), so anyone
  who knows how could compute it. The deal a board is played with is
  `HMAC-SHA256(stack secret, planned seed)`: the secret is made once per Redis and
  never leaves it, so a released board's seed tells nothing about another's, however
  small or memorable the organiser's `--seed`, while the same `--seed` still plans the
  same boards on the same stack.
- **No bot is dealt a deal twice**, across every tournament, test and arena of the
  stack, for the life of its Redis. It follows from a stronger rule, kept stack-wide:
  **no deal serves two boards**, whoever sits at them. A board is dealt only after
  `deal_boards` has claimed its deal on the stack's record in one atomic step; a deal
  the record holds for another board is refused, and the board takes its next deal
  (`deal_seed(..., attempt + 1)`). So a bot seated at two boards is dealt two deals.
  (It also keeps an event planned with a seed an earlier one used, an organiser's
  habitual `--seed 1`, from dealing a released board again to new bots, who may have
  read its transcripts.) A board's own games share its deal (its tables, and under
  `duplicate=replay` its seatings); a single match's seed is the organiser's, noted on
  the record as the match is created (`record`) so that no later board is dealt it
  (the organiser may repeat a deal in a single match: that is their choice, as before).
  Bots' own records are not needed, so there are none; house bots are not special.

The record is two structures, so that it no longer grows by a board id per deal
(issue 25: Redis holds what is live):

- **Every deal ever dealt, exactly** (`keys.DEALS`): a set of 8-byte keys, one per deal
  (`mix64(seed)`, a bijection of the 64-bit seed, so exact: no false positives, and an
  organiser's small seeds spread like the HMAC outputs), grouped by linear hashing into
  buckets of about 256 keys (the hash's fields `0` .. `buckets - 1`, each a packed
  string). A claim reads one bucket (one `HGET` of at most about 4 KB, a search in it);
  a new deal appends to it, and every 256 deals one bucket splits in two, so memory
  grows a bucket at a time: 8.3 bytes a deal (8.9 on jemalloc), flat from 10k to 1M
  deals (bench/deals.py), and no claim does more than a bucket's work. Why not a Bloom
  filter: at a 1e-6 false positive rate one costs 3.6 bytes a deal at best, 5.5 to 6.5
  as a series of filters that doubles (each doubling a step up in memory); its false
  positives redeal boards for no reason (counted as redealt); it can never be read
  back, resized or moved (to the archive, say). This costs about a third more and has
  none of that.
- **Which board holds a recent deal** (`keys.DEALS_RECENT`, then `keys.DEALS_OLD`:
  deal -> board, kept an hour at least, two at most, rotated by the claims on Redis's
  clock): a claim by the same board again (a step redone after its run died before its
  save: one unit's games are decided and claimed in one pass) gives the same deal, and
  a refusal names the board. A deal claimed longer ago is refused to every board,
  its own too: a pass redone hours after its run died deals that board afresh, as
  fair, since nothing of the dead pass was created (the step saves, then creates).

A stack that kept the older records (`ms:deals:boards`, each bot's `ms:bot:{id}:deals`)
moves them into the set once (`migrate`: resumable, each hash deleted once all its deals
are in): no claim is made before that is done.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from collections.abc import Callable, Iterable, Sequence

import redis

from moon.deal import mix64
from store import keys

__all__ = ["BUCKET_LOAD", "DEALS_LUA", "MAX_ATTEMPTS", "WINDOW_S", "board_of", "board_secret",
           "claim", "count", "deal", "deal_boards", "deal_key", "deal_seed", "memory",
           "migrate", "record", "was_dealt", "which_dealt"]

log = logging.getLogger("moonshot.deals")

MAX_ATTEMPTS = 1000  # deals tried for one board before giving up (each a 2^-63 chance)
WINDOW_S = 3600  # a claimed deal's board is kept this long at least (twice at most)
BUCKET_LOAD = 256  # deals per bucket of the record, on average (a split past it)
_FIRST_TRIES = 4  # deals offered per board in the first round trip (then twice as many)

# KEYS: the record (`keys.DEALS`), the recent deals' boards (`keys.DEALS_RECENT`), the
# previous window's (`keys.DEALS_OLD`).
# ARGV: mode, window (ms), load, then per board: its id, n, then n (seed, key) pairs: the
# deal in decimal and its 8-byte key (`deal_key`).
# Mode `claim`: for each board in turn, the first of its deals that is not held by another
# board is its deal: recorded (if new) with the board. Returns {1, then per board: the
# index of its deal among those offered (0: all refused), then the reason of each refusal
# (the board that held it, or '' when that is no longer kept)}.
# Mode `note`: every deal given is recorded, never refused (a recent one keeps its board);
# mode `migrate` the same, without the boards. Return {1}. Mode `has` (one board):
# {1, then for each deal 1 if the record holds it, else 0}; it writes nothing.
# {0} when the record was never migrated (`migrate`), and nothing is done.
DEALS_LUA = """
local rec, recent, old = KEYS[1], KEYS[2], KEYS[3]
local mode, window, load = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
if mode ~= 'migrate' and redis.call('HGET', rec, 'migrated') ~= '1' then
  return {0}
end
local buckets = tonumber(redis.call('HGET', rec, 'buckets') or '1')
local dealt = tonumber(redis.call('HGET', rec, 'deals') or '0')

local function low32(k)
  local a, b, c, d = string.byte(k, 5, 8)
  return ((a * 256 + b) * 256 + c) * 256 + d
end
local function level(n)
  local l = 0
  while 2 ^ (l + 1) <= n do l = l + 1 end
  return l
end
local function bucket(k)
  local l = level(buckets)
  local h = low32(k)
  local a = h % 2 ^ (l + 1)
  if a >= buckets then a = h % 2 ^ l end
  return tostring(a)
end
local function holds(s, k)
  local from = 1
  while true do
    local i = string.find(s, k, from, true)
    if not i then return false end
    if (i - 1) % 8 == 0 then return true end
    from = i + 1
  end
end
-- Linear hashing: bucket p = buckets - 2^l splits into p and p + 2^l by bit l of the key.
local function split()
  local l = level(buckets)
  local p = buckets - 2 ^ l
  local s = redis.call('HGET', rec, tostring(p)) or ''
  local stay, move = {}, {}
  for i = 1, #s, 8 do
    local k = string.sub(s, i, i + 7)
    if math.floor(low32(k) / 2 ^ l) % 2 == 1 then move[#move + 1] = k
    else stay[#stay + 1] = k end
  end
  redis.call('HSET', rec, tostring(p), table.concat(stay), tostring(buckets),
             table.concat(move))
  buckets = buckets + 1
end
-- Adds the key unless present: whether it was new.
local function add(k)
  local b = bucket(k)
  local s = redis.call('HGET', rec, b) or ''
  if holds(s, k) then return false end
  redis.call('HSET', rec, b, s .. k)
  dealt = dealt + 1
  if dealt > load * buckets then split() end
  return true
end
local function keep(seed, board)
  redis.call('HSET', recent, seed, board)
  redis.call('PEXPIRE', recent, 2 * window)
end

if mode == 'has' then
  local out = {1}
  for j = 1, tonumber(ARGV[5]) do
    local k = ARGV[5 + 2 * j]
    out[j + 1] = holds(redis.call('HGET', rec, bucket(k)) or '', k) and 1 or 0
  end
  return out
end
-- Rotate the windows of recent boards on Redis's clock.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local since = tonumber(redis.call('HGET', rec, 'since') or '0')
if now - since >= window then
  if redis.call('EXISTS', recent) == 1 then
    redis.call('RENAME', recent, old)
    redis.call('PEXPIRE', old, window)
  else
    redis.call('DEL', old)
  end
  redis.call('HSET', rec, 'since', now)
end

local out = {1}
local i = 4
while i <= #ARGV do
  local board, n = ARGV[i], tonumber(ARGV[i + 1])
  local chosen, reasons = 0, {}
  for j = 1, n do
    local seed, k = ARGV[i + 2 * j], ARGV[i + 2 * j + 1]
    if mode == 'migrate' then
      add(k)
    else
      local held = redis.call('HGET', recent, seed) or redis.call('HGET', old, seed)
      if mode == 'note' then
        if add(k) and not held then keep(seed, board) end
      elseif held == board then
        chosen = j
      elseif held then
        reasons[#reasons + 1] = held
      elseif add(k) then
        keep(seed, board)
        chosen = j
      else
        reasons[#reasons + 1] = ''
      end
      if chosen > 0 then break end
    end
  end
  if mode == 'claim' then
    out[#out + 1] = chosen
    for _, why in ipairs(reasons) do out[#out + 1] = why end
  end
  i = i + 2 + 2 * n
end
redis.call('HSET', rec, 'buckets', buckets, 'deals', dealt)
return out
"""


def board_secret(r: redis.Redis) -> bytes:
    """The stack's secret for deals: made once (the first caller wins), then read."""
    pipe = r.pipeline(transaction=False)
    pipe.set(keys.DEAL_SECRET, secrets.token_hex(32), nx=True)
    pipe.get(keys.DEAL_SECRET)
    return bytes.fromhex(str(pipe.execute()[1]))


def deal_seed(secret: bytes, planned: int, attempt: int = 0) -> int:
    """The deal a board planned with seed `planned` is played with (63 bits); `attempt`
    counts the deals refused before because another board had been dealt them."""
    digest = hmac.new(secret, f"{planned}:{attempt}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def deal_key(seed: int) -> bytes:
    """A deal's key in the record: 8 bytes, one to one with the 64-bit seed, uniform."""
    return mix64(seed).to_bytes(8, "big")


def _run(r: redis.Redis, mode: str, groups: Sequence[tuple[str, Sequence[int]]]) -> list[object]:
    """DEALS_LUA on `groups` (board, deals), migrating an older record first if need be."""
    argv: list[str | bytes | int] = [mode, WINDOW_S * 1000, BUCKET_LOAD]
    for board, seeds in groups:
        argv += [board, len(seeds)]
        for seed in seeds:
            argv += [str(seed), deal_key(seed)]
    for _ in range(2):
        out: list[object] = r.eval(
            DEALS_LUA, 3, keys.DEALS, keys.DEALS_RECENT, keys.DEALS_OLD, *argv)
        if out[0] == 1:
            return out[1:]
        migrate(r)
    raise RuntimeError("the record of deals is not migrated")  # pragma: no cover


def deal_boards(r: redis.Redis, boards: Sequence[tuple[int, str]]) -> list[tuple[int, int]]:
    """The deals `boards` ((planned seed, board id), distinct boards) are played with, each
    claimed on the stack's record, in one round trip for all (rarely more): the planned
    seed through the stack's secret, or the board's next deal while another board holds
    that one. Returns (deal seed, deals refused first) for each board, in order. Called
    again for a board (a step redone after its run died), it gives the same deal while the
    board's claim is recent (`WINDOW_S`)."""
    secret = board_secret(r) if boards else b""
    done: dict[int, tuple[int, int]] = {}
    todo = list(range(len(boards)))
    start, tries = 0, _FIRST_TRIES
    while todo:
        if start >= MAX_ATTEMPTS:
            raise RuntimeError(f"board {boards[todo[0]][1]}: no deal in {MAX_ATTEMPTS} that "
                               "no other board had")
        stop = min(start + tries, MAX_ATTEMPTS)
        offered = {i: [deal_seed(secret, boards[i][0], a) for a in range(start, stop)]
                   for i in todo}
        out = iter(_run(r, "claim", [(boards[i][1], offered[i]) for i in todo]))
        left = []
        for i in todo:
            chosen = int(str(next(out)))
            refused = (chosen or len(offered[i]) + 1) - 1
            for _ in range(refused):
                next(out)
            if chosen:
                done[i] = offered[i][chosen - 1], start + chosen - 1
            else:
                left.append(i)
        todo, start, tries = left, stop, tries * 2
    return [done[i] for i in range(len(boards))]


def deal(r: redis.Redis, planned: int, board: str) -> tuple[int, int]:
    """`deal_boards` for one board."""
    return deal_boards(r, [(planned, board)])[0]


def claim(r: redis.Redis, seed: int, board: str) -> str | None:
    """Claim `seed` as `board`'s deal; None when done (or the board had it already), else
    why not (nothing is written): `board <id>` that holds it, or `an earlier board`."""
    chosen, *why = _run(r, "claim", [(board, [seed])])
    if chosen:
        return None
    return f"board {why[0]}" if why[0] else "an earlier board"


def record(r: redis.Redis, seed: int, board: str) -> None:
    """Note a deal the organiser chose (a single match's seed) as dealt, unless it was:
    later boards are then dealt around it."""
    _run(r, "note", [(board, [seed])])


def was_dealt(r: redis.Redis, seed: int) -> bool:
    """Whether the stack has dealt `seed` (exactly: the record has no false positives)."""
    return which_dealt(r, [seed]) == [True]


def which_dealt(r: redis.Redis, seeds: Sequence[int]) -> list[bool]:
    """`was_dealt` for each of `seeds`, in one round trip."""
    return [flag == 1 for flag in _run(r, "has", [("", seeds)])] if seeds else []


def board_of(r: redis.Redis, seed: int) -> str | None:
    """The board a recent deal was dealt for (`WINDOW_S`), None when not kept or not dealt."""
    pipe = r.pipeline(transaction=False)
    pipe.hget(keys.DEALS_RECENT, str(seed))
    pipe.hget(keys.DEALS_OLD, str(seed))
    recent, old = pipe.execute()
    found = recent or old
    return None if found is None else (found.decode() if isinstance(found, bytes) else found)


def count(r: redis.Redis) -> int:
    """Deals the stack has dealt (recorded since the record was made, migrated ones too)."""
    return int(r.hget(keys.DEALS, "deals") or 0)


def memory(r: redis.Redis) -> dict[str, int]:
    """Bytes of Redis the record takes (`MEMORY USAGE`, every field counted), by key."""
    out = {}
    for key in (keys.DEALS, keys.DEALS_RECENT, keys.DEALS_OLD):
        used = r.memory_usage(key, samples=0)
        out[key] = int(used or 0)
    return out


def migrate(r: redis.Redis, batch: int = 2000,
            progress: Callable[[int, int], None] | None = None) -> int:
    """Move the older records of deals (the stack's `ms:deals:boards` and each bot's
    `ms:bot:{id}:deals`) into the record, then mark it migrated; returns the deals read.
    Resumable: a hash is deleted only once all its deals are in, and noting a deal again
    changes nothing, so a run killed anywhere is simply run again (a concurrent run too).
    `progress(hashes done, deals read)` after each hash."""
    if r.hget(keys.DEALS, "migrated") in ("1", b"1"):
        return 0
    legacy: Iterable[str | bytes] = [keys.DEALT_BOARDS, *r.scan_iter(
        match=keys.bot_deals("*"), count=1000)]
    read = hashes = 0
    for key in legacy:
        chunk: list[int] = []
        for field, _board in r.hscan_iter(key, count=batch):
            chunk.append(int(field))
            if len(chunk) >= batch:
                _run(r, "migrate", [("", chunk)])
                read, chunk = read + len(chunk), []
        if chunk:
            _run(r, "migrate", [("", chunk)])
            read += len(chunk)
        r.delete(key)
        hashes += 1
        if progress is not None:
            progress(hashes, read)
        elif hashes % 1000 == 0:
            log.info("deals: %d older record(s) moved so far, %d deal(s)", hashes, read)
    r.hset(keys.DEALS, "migrated", "1")
    if read:
        log.info("deals: %d deal(s) of %d older record(s) moved into %s", read, hashes,
                 keys.DEALS)
    return read
