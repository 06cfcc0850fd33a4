"""A bot's Play streams as Redis holds them, for the referee's hub (asyncio): stream
epochs, presence, and what a new stream is owed (the requests pending for the bot and
the events of its event log it has not had).

The bot's channel (`ms:bot:{id}:events`) carries what match runs send the bot
(`store.runs` writes it: requests, and logged events wrapped in `Logged`) and the
announcements of the bot's new streams, which only the hubs read (`announce`). The
hot path's answer script (ACCEPT) runs on the hub's own connection, with the keys and
arguments `accept_args` builds.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import redis
import redis.asyncio as aioredis

from store import ids, keys, messages
from store.messages import DecisionRequest, Logged, Revoked, Superseded
from store.records import MatchSpec

__all__ = [
    "MAX_REPLAY",
    "accept_args",
    "announce",
    "bot_of_channel",
    "channel",
    "control_channel",
    "epoch",
    "events_after",
    "last_event_id",
    "live_matches",
    "mark_present",
    "match_bots",
    "next_epoch",
    "pending_elsewhere",
    "pending_requests",
    "redis_now",
    "refresh_presence",
    "revoke",
    "seat_logged",
    "token_hashes",
    "withdraw",
]

MAX_REPLAY = 500  # kept events sent to a reconnecting stream at most: the newest ones

AR = aioredis.Redis


def channel(bot_id: str) -> str:
    """The pub/sub channel of a bot's requests, events and stream announcements."""
    return keys.events(bot_id)


def bot_of_channel(name: bytes) -> str:
    """The bot whose channel this is (the inverse of `channel`)."""
    return name[len(keys.P) + 4 : -len(":events")].decode()


def control_channel() -> str:
    """A new channel of one referee's own (subscribed first, to test the connection)."""
    return f"{keys.P}referee:{secrets.token_hex(6)}"


async def redis_now(ar: AR) -> float:
    """Redis's clock, in Unix seconds. Presence is scored on it and deadlines restart on
    it: the referees and workers that read them may sit on machines whose clocks
    disagree, and Redis's is the clock they all share."""
    sec, usec = await ar.time()
    return int(sec) + int(usec) / 1e6


# ---------------------------------------------------------- epochs, presence


async def next_epoch(ar: AR, bot_id: str) -> int:
    """Take the bot's next stream epoch (the newest stream holds the highest)."""
    return int(await ar.incr(keys.bot_epoch(bot_id)))


async def epoch(ar: AR, bot_id: str) -> int:
    """The highest epoch any stream of the bot has taken."""
    return int(await ar.get(keys.bot_epoch(bot_id)) or 0)


async def announce(ar: AR, bot_id: str, stream_id: str, stream_epoch: int) -> None:
    """Tell every referee that a new stream of the bot opened: older ones end."""
    await ar.publish(channel(bot_id), messages.encode(Superseded(stream_id, stream_epoch)))


async def token_hashes(ar: AR, bot_ids: Sequence[str]) -> list[frozenset[str]]:
    """The stored hashes of each bot's tokens that may play now (its own and, for a hosted
    version, its sandbox's; empty for a bot that is gone), in one round trip."""
    pipe = ar.pipeline(transaction=False)
    for b in bot_ids:
        pipe.hmget(keys.bot(b), ["token", "host_token"])
    return [frozenset(str(h) for h in got if h) for got in await pipe.execute()]


def revoke(r: redis.Redis, bot_id: str, reason: str) -> None:
    """End every live stream of the bot, on every referee, with `reason`."""
    r.publish(channel(bot_id), messages.encode(Revoked(reason)))


async def mark_present(ar: AR, bot_id: str, stream_id: str, until: float) -> None:
    """The stream is live until `until` (Redis's clock) unless refreshed."""
    await ar.zadd(keys.presence(bot_id), {stream_id: until})


async def withdraw(ar: AR, pairs: Iterable[tuple[str, str]]) -> None:
    """The streams (bot id, stream id) are gone: their bots' clocks stop if no other."""
    pipe = ar.pipeline(transaction=False)
    for bot_id, stream_id in pairs:
        pipe.zrem(keys.presence(bot_id), stream_id)
    await pipe.execute()


async def refresh_presence(ar: AR, live: Mapping[str, Mapping[str, float]], now: float,
                           gone: Iterable[tuple[str, str]] = ()) -> None:
    """Keep the live streams of each bot present until their expiry, drop every expired
    entry of those bots, and withdraw the `gone` streams, in one round trip."""
    pipe = ar.pipeline(transaction=False)
    for bot_id, streams in live.items():
        if streams:
            pipe.zadd(keys.presence(bot_id), dict(streams))
        pipe.zremrangebyscore(keys.presence(bot_id), "-inf", now)
    for bot_id, stream_id in gone:
        pipe.zrem(keys.presence(bot_id), stream_id)
    await pipe.execute()


# --------------------------------------------------------------- owed


def _request_order(rid: str) -> tuple[str, int]:
    """Pending requests in match order, oldest first."""
    return ids.match_of_request(rid), ids.seq_of_request(rid)


async def pending_requests(ar: AR, bot_id: str, now_ms: int) -> list[DecisionRequest]:
    """Every request pending for the bot, oldest first, as delivered now (a paused clock
    restarts with the time it had left)."""
    pending: Any = await ar.hgetall(keys.pending(bot_id))
    return [messages.decode_as(pending[rid], messages.BOT, DecisionRequest).resumed(now_ms)
            for rid in sorted(pending, key=_request_order)]


async def last_event_id(ar: AR, bot_id: str) -> str:
    """The id of the newest event in the bot's event log ("0-0" when it has none)."""
    last: Any = await ar.xrevrange(keys.inbox(bot_id), count=1)
    return str(last[0][0]) if last else "0-0"


async def events_after(ar: AR, bot_id: str, after: str, most: int = MAX_REPLAY
                       ) -> list[Logged]:
    """The events of the bot's log after the id `after`, oldest first: the newest `most`
    of them when there are more."""
    got: Any = await ar.xrevrange(keys.inbox(bot_id), "+", f"({after}", count=most)
    return [Logged(str(entry_id), dict(json.loads(fields["e"])))
            for entry_id, fields in reversed(got)]


async def live_matches(ar: AR, bot_id: str) -> list[str]:
    """The matches under way with the bot in a seat."""
    found: Any = await ar.smembers(keys.bot_live(bot_id))
    return sorted(str(m) for m in found)


# ------------------------------------------------------------ answers


def accept_args(bot_id: str, request_id: str, action_id: int) -> tuple[list[str], list[str]]:
    """KEYS and ARGV of `store.lua.ACCEPT_LUA` for a well-formed request id."""
    reply = messages.unstamped(messages.Reply(request_id, action_id, bot_id))
    return [keys.pending(bot_id), keys.replies(ids.match_of_request(request_id))], [request_id,
                                                                                     reply]


async def match_bots(ar: AR, match_id: str) -> list[str] | None:
    """The bots of a match by seat, or None when there is no such match."""
    raw = await ar.hget(keys.match(match_id), "spec")
    return None if raw is None else list(MatchSpec.from_json(str(raw)).bot_ids)


async def seat_logged(ar: AR, match_id: str, seq: int) -> int | None:
    """The seat whose action is entry `seq` of the match's log, if it is logged."""
    raw = await ar.lindex(keys.match_log(match_id), seq)  # entry i has seq i
    entry = None if raw is None else messages.decode(raw, messages.LOG)
    return entry.seat if isinstance(entry, messages.ActionEntry) else None


async def pending_elsewhere(ar: AR, bot_ids: Sequence[str], request_id: str) -> bool:
    """True when the request is pending for one of these bots."""
    pipe = ar.pipeline(transaction=False)
    for bot_id in bot_ids:
        pipe.hexists(keys.pending(bot_id), request_id)
    return any(await pipe.execute())
