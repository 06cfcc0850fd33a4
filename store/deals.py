"""Deals: the secret that turns a planned board into the deal it is played with, and the
record of every deal each bot has been dealt.

Two promises rest here (DESIGN.md, "Threat model"):

- **No released fact predicts a board not yet played.** A format plans each board's
  seed from public facts (the tournament's `--seed` and the board's name), so anyone
  who knows how could compute it. The deal a board is played with is
  `HMAC-SHA256(stack secret, planned seed)`: the secret is made once per Redis and
  never leaves it, so a released board's seed tells nothing about another's, however
  small or memorable the organiser's `--seed`, while the same `--seed` still plans the
  same boards on the same stack.
- **No bot is dealt a deal twice**, across every tournament, test and arena of the
  stack, for the life of its Redis. Each bot has a hash `deal seed -> board id`; a
  board is dealt only after `claim` has written its seed for every remote bot of it in
  one atomic step, and a bot that holds the seed for another board refuses it. The
  planner then takes the next deal of the same board (`deal_seed(..., attempt + 1)`).
  A board's own games may share the seed (its tables, and under `duplicate=replay`
  its seatings), so a claim by the same board again, a step redone after a crash,
  changes nothing. House bots are trusted to keep nothing and are not recorded.
- **No deal serves two boards**, whoever sits at them. The stack keeps one more hash,
  `deal seed -> board id` (`keys.DEALT_BOARDS`), claimed in the same step: an event
  planned with a seed an earlier one used (an organiser's habitual `--seed 1`) would
  otherwise deal its first board again to new bots, who may have read the first
  one's released transcripts. Such a board, too, takes its next deal.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable

import redis

from store import keys

__all__ = ["CLAIM_LUA", "MAX_ATTEMPTS", "board_secret", "claim", "deal", "deal_seed", "dealt",
           "record"]

MAX_ATTEMPTS = 1000  # deals tried for one board before giving up (each a 2^-63 chance)

# KEYS: the stack's record of deals by board, then the deal hashes of the board's bots.
# ARGV: deal seed, board id. If the seed serves no other board and none of the bots holds
# it for another board, records it in all of them and returns 0; otherwise writes nothing
# and returns the other board's id (a string), or the 1-based index of the first bot
# (after KEYS[1]) that holds it.
CLAIM_LUA = """
local owner = redis.call('HGET', KEYS[1], ARGV[1])
if owner and owner ~= ARGV[2] then
  return owner
end
for i = 2, #KEYS do
  local held = redis.call('HGET', KEYS[i], ARGV[1])
  if held and held ~= ARGV[2] then
    return i - 1
  end
end
for _, key in ipairs(KEYS) do
  redis.call('HSET', key, ARGV[1], ARGV[2])
end
return 0
"""


def board_secret(r: redis.Redis) -> bytes:
    """The stack's secret for deals: made once (the first caller wins), then read."""
    r.set(keys.DEAL_SECRET, secrets.token_hex(32), nx=True)
    return bytes.fromhex(str(r.get(keys.DEAL_SECRET)))


def deal_seed(secret: bytes, planned: int, attempt: int = 0) -> int:
    """The deal a board planned with seed `planned` is played with (63 bits); `attempt`
    counts the boards refused because one of its bots had been dealt the earlier ones."""
    digest = hmac.new(secret, f"{planned}:{attempt}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def claim(r: redis.Redis, bot_ids: Iterable[str], seed: int, board: str) -> str | None:
    """Record `seed` as dealt for `board`, to every bot of it; None when done, else why
    not (nothing is written): the bot that was dealt it for another board, or
    `board <id>` when another board was dealt it."""
    bots = sorted(set(bot_ids))
    found = r.eval(CLAIM_LUA, len(bots) + 1, keys.DEALT_BOARDS,
                   *(keys.bot_deals(b) for b in bots), str(seed), board)
    if isinstance(found, bytes | str):
        return f"board {found.decode() if isinstance(found, bytes) else found}"
    return bots[int(found) - 1] if found else None


def deal(r: redis.Redis, planned: int, board: str, bot_ids: Iterable[str]) -> tuple[int, int]:
    """The deal `board` is played with, claimed for every bot of it: the planned seed through
    the stack's secret, or the next deal of the board while one of the bots was dealt that
    one for another board, or another board was dealt it. Returns (deal seed, deals
    refused first). Called again for the same board (its other tables, a step redone after
    a crash), it gives the same deal."""
    secret = board_secret(r)
    bots = list(bot_ids)
    for attempt in range(MAX_ATTEMPTS):
        seed = deal_seed(secret, planned, attempt)
        if claim(r, bots, seed, board) is None:
            return seed, attempt
    raise RuntimeError(f"board {board}: no deal in {MAX_ATTEMPTS} that no bot or board had")


def record(r: redis.Redis, bot_ids: Iterable[str], seed: int, board: str) -> None:
    """Note a deal the organiser chose (a single match's seed) as dealt to each bot and to
    the stack, unless already noted: later boards are then dealt around it."""
    pipe = r.pipeline(transaction=False)
    pipe.hsetnx(keys.DEALT_BOARDS, str(seed), board)
    for b in set(bot_ids):
        pipe.hsetnx(keys.bot_deals(b), str(seed), board)
    pipe.execute()


def dealt(r: redis.Redis, bot_id: str) -> dict[int, str]:
    """Every deal seed the bot has been dealt, with the board it was dealt for."""
    raw: dict[str, str] = r.hgetall(keys.bot_deals(bot_id))  # type: ignore[assignment]
    return {int(seed): board for seed, board in raw.items()}
