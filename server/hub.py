"""The referee's connection hub: bot streams on one side, Redis on the other.

One hub per referee process holds every bot stream connected to it. It keeps a
single pub/sub connection subscribed to the channels of the bots it serves and
fans each message out to that bot's streams; it keeps each stream's presence
alive in Redis (match jobs pause a bot's clock while it has none); and on
attach it delivers every request still pending for the bot, so a request is
never lost to a referee crash or a reconnect. A stream drops duplicate copies
of one sending of a request (it may arrive both from the pending hash and the
channel), keyed by request id and deadline: a match job resumed after a crash
sends its current request again, with a new deadline, and that sending must
reach the bot, since the answer to the first one may have died with the old run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from typing import Any

import redis.asyncio as aioredis

from workers import keys
from workers.bus import ACCEPT_LUA, accept_args, match_of_request

__all__ = ["PRESENCE_TTL_S", "Hub", "Stream"]

log = logging.getLogger("moonshot.referee")

PRESENCE_TTL_S = 6.0
_PRESENCE_EVERY_S = 2.0


class Stream:
    """One bot stream on this referee: an outbox of events and the requests it has seen."""

    __slots__ = ("abort_reason", "bot_id", "closed", "id", "outbox", "seen")

    def __init__(self, bot_id: str) -> None:
        self.bot_id = bot_id
        self.id = secrets.token_hex(8)
        self.outbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.seen: set[tuple[str, int]] = set()  # (request id, deadline) of each sending
        self.closed = False
        self.abort_reason = ""

    def deliver(self, event: dict[str, Any]) -> None:
        """Queue an event for the bot, dropping a request it was already sent."""
        if self.closed:
            return
        if event.get("type") == "decision":
            sending = (event["request_id"], int(event.get("deadline_unix_ms", 0)))
            if sending in self.seen:
                return
            self.seen.add(sending)
        self.outbox.put_nowait(event)

    def close(self, abort_reason: str = "") -> None:
        """Wake the writer so the stream ends (with ABORTED when a reason is given)."""
        if self.closed:
            return
        self.closed = True
        self.abort_reason = abort_reason
        self.outbox.put_nowait(None)


class Hub:
    """Routes events from Redis to this referee's bot streams, and answers back."""

    def __init__(self, r: aioredis.Redis) -> None:
        self.r = r
        self.pubsub = r.pubsub(ignore_subscribe_messages=True)
        self.streams: dict[str, set[Stream]] = {}
        self._accept = r.register_script(ACCEPT_LUA)
        self._tasks: list[asyncio.Task[None]] = []
        self._sub_lock = asyncio.Lock()
        self.control_channel = f"{keys.P}referee:{secrets.token_hex(6)}"

    async def start(self) -> None:
        """Open the pub/sub connection and start the listener and presence tasks."""
        await self.pubsub.subscribe(self.control_channel)
        self._tasks = [
            asyncio.create_task(self._listen(), name="hub-listen"),
            asyncio.create_task(self._keep_presence(), name="hub-presence"),
        ]

    async def stop(self) -> None:
        """End every stream, withdraw presence, close pub/sub."""
        for streams in list(self.streams.values()):
            for s in list(streams):
                s.close()
                await self.detach(s)
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        with contextlib.suppress(Exception):
            await self.pubsub.aclose()  # type: ignore[no-untyped-call]

    # ----------------------------------------------------------- streams

    async def attach(self, stream: Stream) -> None:
        """Register a stream: subscribe, mark present, deliver what is pending."""
        bot = stream.bot_id
        async with self._sub_lock:
            group = self.streams.setdefault(bot, set())
            if not group:
                await self.pubsub.subscribe(keys.events(bot))
            group.add(stream)
        await self.r.zadd(keys.presence(bot), {stream.id: time.time() + PRESENCE_TTL_S})
        # A bot has one live stream: older ones, on this referee or another, end now.
        await self.r.publish(keys.events(bot), json.dumps({"type": "superseded",
                                                            "stream": stream.id}))
        # Subscribed first, then read: a request published in between arrives twice
        # and the stream drops the copy; none can fall between the two.
        pending: dict[str, str] = await self.r.hgetall(keys.pending(bot))  # type: ignore[assignment]
        for rid in sorted(pending, key=_request_order):
            stream.deliver(json.loads(pending[rid]))

    async def detach(self, stream: Stream) -> None:
        """Unregister a stream; unsubscribe when it was the bot's last here."""
        bot = stream.bot_id
        stream.closed = True
        async with self._sub_lock:
            group = self.streams.get(bot)
            if group is not None:
                group.discard(stream)
                if not group:
                    del self.streams[bot]
                    with contextlib.suppress(Exception):
                        await self.pubsub.unsubscribe(keys.events(bot))
        with contextlib.suppress(Exception):
            await self.r.zrem(keys.presence(bot), stream.id)

    # ----------------------------------------------------------- answers

    async def answer(
        self, stream: Stream, request_id: str, action_id: int
    ) -> dict[str, Any] | None:
        """Forward an answer; return a `decision_rejected` event when it is refused."""
        k, argv = accept_args(stream.bot_id, request_id, action_id)
        match_id = match_of_request(request_id)
        if match_id and await self._accept(keys=k, args=argv) == 1:
            return None
        reason, message = await self._why_refused(stream.bot_id, request_id, match_id)
        return {
            "type": "decision_rejected",
            "request_id": request_id,
            "match_id": match_id,
            "reason": reason,
            "message": message,
            "replacement_action_id": None,
            "strikes": 0,
        }

    async def _why_refused(self, bot_id: str, request_id: str, match_id: str) -> tuple[str, str]:
        if not match_id:
            return "unknown_request", f"no such request {request_id!r}"
        raw = await self.r.hget(keys.match(match_id), "spec")
        if raw is None:
            return "unknown_request", f"no such request {request_id!r}: unknown match"
        if bot_id not in json.loads(raw)["bot_ids"]:
            return (
                "not_yours",
                f"PERMISSION_DENIED: request {request_id!r} is not addressed to bot {bot_id}",
            )
        return (
            "unknown_request",
            f"request {request_id!r} is no longer pending (answered already or timed out)",
        )

    # ------------------------------------------------------------- tasks

    async def _listen(self) -> None:
        while True:
            try:
                msg = await self.pubsub.get_message(timeout=1.0)
            except asyncio.CancelledError:
                raise
            except Exception:  # a Redis hiccup must not end the hub
                log.exception("pub/sub read failed; retrying")
                await asyncio.sleep(0.5)
                continue
            if msg is None or msg.get("type") != "message":
                continue
            channel = msg["channel"]
            bot = channel[len(keys.P) + 4 : -len(":events")]
            group = self.streams.get(bot)
            if not group:
                continue
            event = json.loads(msg["data"])
            if event.get("type") == "superseded":
                for s in list(group):
                    if s.id != event["stream"]:
                        s.close("a newer stream of this bot replaced this one")
                continue
            for s in list(group):
                s.deliver(event)

    async def _keep_presence(self) -> None:
        while True:
            await asyncio.sleep(_PRESENCE_EVERY_S)
            try:
                expiry = time.time() + PRESENCE_TTL_S
                pipe = self.r.pipeline(transaction=False)
                for bot, group in list(self.streams.items()):
                    if group:
                        pipe.zadd(keys.presence(bot), {s.id: expiry for s in group})
                        pipe.zremrangebyscore(keys.presence(bot), "-inf", time.time())
                await pipe.execute()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("presence refresh failed")


def _request_order(rid: str) -> tuple[str, int]:
    """Pending requests in match order, oldest first."""
    match_id, _, seq = rid.rpartition("/")
    return match_id, int(seq) if seq.isdigit() else 0
