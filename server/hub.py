"""The referee's connection hub: bot streams on one side, Redis on the other.

One hub per referee process holds every bot stream connected to it. It keeps a
single pub/sub connection subscribed to the channels of the bots it serves and
fans each message out to that bot's streams; it keeps each stream's presence
alive in Redis (match jobs pause a bot's clock while it has none); and on
attach it delivers what the bot is owed: the events of its event log after the
cursor the bot names (or from the stream's opening on), then every request
still pending for it, so neither is lost to a referee crash or a reconnect.
While it reads those, what arrives on the channel waits, so the bot gets
everything in order. A stream drops duplicate copies of one sending of a request
(it may arrive both from the pending hash and the channel), keyed by request id
and deadline: a match job resumed after a crash sends its current request again,
with a new deadline, and that sending must reach the bot, since the answer to the
first one may have died with the old run. It drops events it has already sent by
their id in the event log. Every Redis read and write is `store.streams`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import secrets
import time

import grpc
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from server import metrics
from server.resp import Reply, RespConnection
from store import ids, messages, streams
from store.bots import stream_prefix
from store.lua import ACCEPT_LUA
from store.messages import (
    DecisionAccepted,
    DecisionRejected,
    DecisionRequest,
    LivenessPing,
    Logged,
    Message,
    Revoked,
    Superseded,
)
from store.streams import accept_args

__all__ = ["PRESENCE_TTL_S", "Hub", "Stream", "accept_args"]

log = logging.getLogger("moonshot.referee")

PRESENCE_TTL_S = 6.0
_PRESENCE_EVERY_S = 2.0


MAX_OUTBOX = 1000  # messages waiting for a bot that does not read: then its stream ends
MAX_OUTBOX_BYTES = 2 << 20  # ... or this many bytes of them, roughly
MAX_SEEN = 4096  # sendings remembered per stream to drop duplicate copies
MAX_ECHO = 8192  # characters of a refused answer's request id sent back
REPLACED_TOKEN = ("this bot's token was replaced (RotateBotToken): connect again with the "
                  "new token")
PONG_DEADLINE_S = 5.0  # a bot that answers pings counts as gone after this long without


class Stream:
    """One bot stream on this referee: an outbox of events and the requests it has seen.

    Both are bounded: a bot that sends and never reads fills its outbox and its
    stream ends with RESOURCE_EXHAUSTED (its pending requests stay pending for its
    next stream); the memory of sendings keeps only the newest MAX_SEEN.
    """

    __slots__ = ("abort_code", "abort_reason", "after", "answers_pings", "bot_id", "closed",
                 "epoch", "frozen", "held", "id", "outbox", "ping_at", "ping_nonce",
                 "queued_bytes", "seen", "sent", "token_hash")

    def __init__(self, bot_id: str, token_hash: str = "") -> None:
        self.bot_id = bot_id
        # The stored hash of the token the stream opened with ('': not checked again): a
        # stream whose bot's token was replaced since ends, whatever message it missed.
        self.token_hash = token_hash
        # Which token opened it shows in its id (`store.bots.connected_besides`).
        self.id = stream_prefix(token_hash) + secrets.token_hex(8)
        self.epoch = 0  # set on attach: a stream ends when a newer epoch of its bot opens
        self.outbox: asyncio.Queue[Message | None] = asyncio.Queue()
        self.seen: dict[tuple[str, int], None] = {}  # (request id, deadline) of each sending
        self.sent: dict[str, float] = {}  # request id -> when it went to the bot (metrics)
        self.closed = False
        self.abort_reason = ""
        self.abort_code = grpc.StatusCode.ABORTED
        self.queued_bytes = 0  # a rough size of what waits in the outbox
        self.ping_nonce = 0  # the ping awaiting its pong (0: none)
        self.ping_at = 0.0
        self.answers_pings = False  # it has answered a ping: from now on it must
        self.frozen = False  # treated as disconnected: it left a ping unanswered
        self.after = (0, 0)  # the id of the newest logged event it was sent (or owed after)
        self.held: list[Message] | None = None  # what arrived while it is owed older things

    def resume_after(self, event_id: str) -> None:
        """The bot has had the logged events up to `event_id`."""
        self.after = ids.parse_event_id(event_id) or (0, 0)

    def hold(self) -> None:
        """From now, what arrives on the channel (requests, logged events) waits
        (`release`): the stream is being sent what it is owed, which is older."""
        if self.held is None:
            self.held = []

    def release(self) -> None:
        """Send what waited, in order (what the owed things repeated is dropped)."""
        held, self.held = self.held or [], None
        for event in held:
            self.push(event)

    def deliver(self, event: Message) -> None:
        """Queue an event for the bot (or hold a request or logged event while the stream is
        sent what it is owed), dropping a request or a logged event it was already sent."""
        if self.held is not None and isinstance(event, (DecisionRequest, Logged)):
            self.held.append(event)
            return
        self.push(event)

    def push(self, event: Message) -> None:
        """Queue an event for the bot now, dropping a request or logged event it already
        has."""
        if self.closed:
            return
        if isinstance(event, Logged):
            at = ids.parse_event_id(event.event_id)
            if at is None or at <= self.after:
                return
            self.after = at
        elif isinstance(event, DecisionRequest):
            sending = (event.request_id, event.deadline_unix_ms)
            if sending in self.seen:
                return
            self.seen[sending] = None
            if len(self.seen) > MAX_SEEN:
                del self.seen[next(iter(self.seen))]
        size = _size(event)
        if self.outbox.qsize() >= MAX_OUTBOX or self.queued_bytes + size > MAX_OUTBOX_BYTES:
            self.close(f"the bot has not read {self.outbox.qsize()} messages sent to it: read "
                       "the Play stream while sending on it", grpc.StatusCode.RESOURCE_EXHAUSTED)
            return
        self.queued_bytes += size
        self.outbox.put_nowait(event)

    def check_alive(self, now: float) -> bool:
        """Ping again if the last ping was answered; True when this call finds the stream
        frozen (it answers pings, and one has waited PONG_DEADLINE_S)."""
        if self.ping_nonce:
            late = self.answers_pings and not self.frozen and now - self.ping_at > PONG_DEADLINE_S
            if late:
                self.frozen = True
            return late
        self.ping_nonce = secrets.randbits(63) or 1
        self.ping_at = now
        self.deliver(LivenessPing(self.ping_nonce))
        return False

    def ponged(self, nonce: int) -> bool:
        """A pong arrived; True when it thaws a frozen stream."""
        if nonce != self.ping_nonce:
            return False
        self.ping_nonce = 0
        self.answers_pings = True
        thawed, self.frozen = self.frozen, False
        return thawed

    def taken(self, event: Message) -> None:
        """The writer took `event` from the outbox."""
        self.queued_bytes = max(0, self.queued_bytes - _size(event))
        if isinstance(event, DecisionRequest):
            self.sent[event.request_id] = time.monotonic()
            if len(self.sent) > MAX_SEEN:  # requests never answered here: forget the oldest
                del self.sent[next(iter(self.sent))]

    def answered(self, request_id: str, accepted: bool) -> None:
        """Count an answer of the bot (and its round trip, when accepted)."""
        sent = self.sent.pop(request_id, None)
        if accepted:
            metrics.DECISIONS.inc()
            if sent is not None:
                metrics.DECISION_SECONDS.observe(time.monotonic() - sent)

    def close(self, abort_reason: str = "",
              code: grpc.StatusCode = grpc.StatusCode.ABORTED) -> None:
        """Wake the writer so the stream ends (with `code` when a reason is given)."""
        if self.closed:
            return
        self.closed = True
        self.abort_reason = abort_reason
        self.abort_code = code
        self.outbox.put_nowait(None)


class Hub:
    """Routes events from Redis to this referee's bot streams, and answers back."""

    def __init__(self, r: aioredis.Redis, url: str) -> None:
        self.r = r  # everything but the hot path
        self.url = url
        self.streams: dict[str, set[Stream]] = {}
        # The hot path (see server.resp): requests arrive on `_sub`, answers leave on `_cmd`.
        self._sub: RespConnection | None = None
        self._cmd: RespConnection | None = None
        self._accept_sha = hashlib.sha1(ACCEPT_LUA.encode()).hexdigest()
        self._tasks: list[asyncio.Task[None]] = []
        self._sub_lock = asyncio.Lock()
        self._detaching: set[asyncio.Future[None]] = set()  # referenced until they finish
        self._cmd_lock = asyncio.Lock()
        self.control_channel = streams.control_channel()

    async def start(self) -> None:
        """Open the pub/sub connection and start the listener and presence tasks."""
        self._sub = await self._subscribe_all()
        self._tasks = [
            asyncio.create_task(self._listen(), name="hub-listen"),
            asyncio.create_task(self._keep_presence(), name="hub-presence"),
        ]

    async def stop(self) -> None:
        """End every stream, withdraw presence, close pub/sub."""
        for group in list(self.streams.values()):
            for s in list(group):
                s.close()
                await self.detach(s)
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        for conn in (self._sub, self._cmd):
            if conn is not None:
                conn.close()

    # ----------------------------------------------------------- streams

    async def attach(self, stream: Stream, after: str = "") -> None:
        """Register a stream: subscribe, mark present, send what the bot is owed (its logged
        events after the id `after`, or from now on; then its pending requests)."""
        bot = stream.bot_id
        # Its epoch before anything can reach it: a stream must never judge a newer one
        # against an epoch it does not have yet.
        stream.epoch = await streams.next_epoch(self.r, bot)
        # Where its events start is read before it subscribes, so none falls between.
        stream.resume_after(after or await streams.last_event_id(self.r, bot))
        stream.hold()
        async with self._sub_lock:
            group = self.streams.setdefault(bot, set())
            if not group and self._sub is not None and self._sub.is_open:
                # If the connection is down, `_listen` subscribes (every bot with a
                # stream here) once it is back, then delivers what is owed again.
                with contextlib.suppress(RedisConnectionError):
                    await self._sub.call("SUBSCRIBE", streams.channel(bot))
            group.add(stream)
        now = await streams.redis_now(self.r)
        await streams.mark_present(self.r, bot, stream.id, now + PRESENCE_TTL_S)
        # A bot has one live stream, the newest: each stream takes the next epoch, and one
        # that sees a higher epoch ends, on this referee or another. Announced, then read
        # back: of two streams opened at once, whichever missed the other's announcement
        # still sees its higher epoch.
        await streams.announce(self.r, bot, stream.id, stream.epoch)
        if await streams.epoch(self.r, bot) > stream.epoch:
            stream.close("a newer stream of this bot replaced this one")
            return
        # Subscribed now, so a rotation from here on reaches it as `Revoked`; one that came
        # between the token's check and the subscription is caught here.
        await self._check_tokens([stream])
        if stream.closed:
            return
        await self._send_owed(stream, now)

    async def _check_tokens(self, group: list[Stream]) -> None:
        """End the streams whose bot's token is no longer the one they opened with."""
        checked = [s for s in group if s.token_hash and not s.closed]
        if not checked:
            return
        bots = sorted({s.bot_id for s in checked})
        now = dict(zip(bots, await streams.token_hashes(self.r, bots), strict=True))
        for s in checked:
            if s.token_hash not in now.get(s.bot_id, frozenset()):
                s.close(REPLACED_TOKEN, grpc.StatusCode.UNAUTHENTICATED)

    async def _send_owed(self, stream: Stream, now: float) -> None:
        """Send a holding stream its logged events after its cursor and its pending
        requests, then what arrived meanwhile. Subscribed first, then read: what was
        published in between arrives twice and the stream drops the copy."""
        for event in await streams.events_after(self.r, stream.bot_id,
                                                "{}-{}".format(*stream.after)):
            stream.push(event)
        for request in await streams.pending_requests(self.r, stream.bot_id, int(now * 1000)):
            stream.push(request)
        stream.release()

    async def detach(self, stream: Stream) -> None:
        """Unregister a stream; unsubscribe when it was the bot's last here.

        Runs to the end even when the caller is cancelled: the RPC of a bot that vanished
        is cancelled while its stream is being detached, and stopping half-way would leave
        the bot marked present (its clock running, its grace not started) until the entry
        expires, and out of the refresh that would otherwise remove it.
        """
        task = asyncio.ensure_future(self._detach(stream))
        self._detaching.add(task)
        task.add_done_callback(self._detaching.discard)
        await asyncio.shield(task)

    async def _detach(self, stream: Stream) -> None:
        bot = stream.bot_id
        stream.closed = True
        async with self._sub_lock:
            group = self.streams.get(bot)
            if group is not None:
                group.discard(stream)
                if not group:
                    del self.streams[bot]
                    if self._sub is not None and self._sub.is_open:
                        with contextlib.suppress(Exception):
                            await self._sub.call("UNSUBSCRIBE", streams.channel(bot))
        with contextlib.suppress(Exception):
            await streams.withdraw(self.r, [(bot, stream.id)])

    # ----------------------------------------------------------- answers

    async def pong(self, stream: Stream, nonce: int) -> None:
        """A bot answered a ping; a stream treated as frozen is live again."""
        if stream.ponged(nonce):
            await streams.mark_present(self.r, stream.bot_id, stream.id,
                                       await streams.redis_now(self.r) + PRESENCE_TTL_S)
            log.info("bot %s stream %s answers again", stream.bot_id, stream.id,
                     extra={"bot_id": stream.bot_id})

    async def answer(
        self, stream: Stream, request_id: str, action_id: int
    ) -> DecisionAccepted | DecisionRejected:
        """Forward an answer; return what the bot is told: accepted, or why not."""
        match_id = ids.match_of_request(request_id)
        if match_id:
            k, argv = accept_args(stream.bot_id, request_id, action_id)
            if await self._run_accept(k, argv) == 1:
                stream.answered(request_id, True)
                return DecisionAccepted(request_id, match_id)
        reason, message = await self._why_refused(stream.bot_id, request_id, match_id)
        stream.answered(request_id, False)
        metrics.REJECTED.labels(reason).inc()
        # No real request id is this long: an echo of a huge one must not fill memory.
        return DecisionRejected(request_id[:MAX_ECHO], match_id, reason, message[:MAX_ECHO * 2])

    async def _run_accept(self, k: list[str], argv: list[str]) -> Reply:
        """ACCEPT on the hot-path connection (opened again if it was lost, retried once)."""
        for attempt in (1, 2):
            conn = self._cmd
            if conn is None or not conn.is_open:
                async with self._cmd_lock:
                    conn = self._cmd
                    if conn is None or not conn.is_open:
                        conn = self._cmd = await RespConnection.open(self.url)
            try:
                try:
                    return await conn.call("EVALSHA", self._accept_sha, 2, *k, *argv)
                except ResponseError as exc:
                    if not str(exc).startswith("NOSCRIPT"):
                        raise
                    return await conn.call("EVAL", ACCEPT_LUA, 2, *k, *argv)
            except RedisConnectionError:
                metrics.REDIS_ERRORS.labels("accept").inc()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def _why_refused(self, bot_id: str, request_id: str, match_id: str) -> tuple[str, str]:
        if not match_id:
            return "unknown_request", f"no such request {request_id!r}"
        bot_ids = await streams.match_bots(self.r, match_id)
        if bot_ids is None:
            return "unknown_request", f"no such request {request_id!r}: unknown match"
        if bot_id not in bot_ids or await self._for_another_seat(
                bot_id, bot_ids, match_id, request_id):
            return (
                "not_yours",
                f"PERMISSION_DENIED: request {request_id!r} is not addressed to bot {bot_id}",
            )
        return (
            "unknown_request",
            f"request {request_id!r} is no longer pending (answered already or timed out)",
        )

    async def _for_another_seat(self, bot_id: str, bot_ids: list[str], match_id: str,
                                request_id: str) -> bool:
        """True when the request is (or was) addressed to a seat of the match that another
        bot holds: a player of the match answering for another one is refused as such."""
        seat = await streams.seat_logged(self.r, match_id, ids.seq_of_request(request_id))
        if seat is not None:
            return bool(bot_ids[seat] != bot_id)
        return await streams.pending_elsewhere(self.r, sorted(set(bot_ids) - {bot_id}),
                                               request_id)

    # ------------------------------------------------------------- tasks

    async def _subscribe_all(self) -> RespConnection:
        """A new pub/sub connection subscribed to the control channel and every bot's here."""
        conn = await RespConnection.open(self.url, on_message=self._on_message)
        try:
            await conn.call("SUBSCRIBE", self.control_channel)
            for bot in list(self.streams):
                await conn.call("SUBSCRIBE", streams.channel(bot))
        except BaseException:
            conn.close()
            raise
        return conn

    async def _listen(self) -> None:
        """Keep the pub/sub connection up; its messages arrive through `_on_message`."""
        while True:
            if self._sub is not None:
                await self._sub.closed
            metrics.REDIS_ERRORS.labels("pubsub").inc()
            log.warning("pub/sub connection to Redis lost; reconnecting")
            try:
                every = [s for group in list(self.streams.values()) for s in group]
                for s in every:
                    s.hold()
                async with self._sub_lock:
                    self._sub = None
                    self._sub = await self._subscribe_all()
                # What was published while we were away is still pending or in the bots'
                # event logs: send it again (each stream drops what it already has).
                now = await streams.redis_now(self.r)
                for s in every:
                    await self._send_owed(s, now)
            except asyncio.CancelledError:
                raise
            except Exception:  # a Redis hiccup must not end the hub
                log.exception("pub/sub reconnect failed; retrying")
                if self._sub is not None:  # owed things not sent: start over, streams held
                    self._sub.close()
                await asyncio.sleep(0.5)

    def _on_message(self, channel: bytes, data: bytes) -> None:
        """A pub/sub message: fan it out to the bot's streams (called as it is parsed)."""
        bot = streams.bot_of_channel(channel)
        group = self.streams.get(bot)
        if not group:
            return
        try:
            event = messages.decode(data, messages.BOT)
            if isinstance(event, Logged):
                event.message()  # the event inside must fit too
        except messages.MessageError:
            log.exception("bot %s: dropped a message that does not fit the schema", bot,
                          extra={"bot_id": bot})
            return
        if isinstance(event, Revoked):
            for s in list(group):
                s.close(event.reason, grpc.StatusCode.UNAUTHENTICATED)
            return
        if isinstance(event, Superseded):
            for s in list(group):
                # Epoch 0: announced by a referee from before epochs; it is the newest.
                older = s.epoch < event.epoch or (event.epoch == 0 and s.id != event.stream)
                if older and s.id != event.stream:
                    s.close("a newer stream of this bot replaced this one")
            return
        for s in list(group):
            s.deliver(event)

    async def _keep_presence(self) -> None:
        """Every few seconds: ping every stream, refresh the presence of the live ones, and
        withdraw it for a stream that answers pings but left the last one unanswered."""
        while True:
            await asyncio.sleep(_PRESENCE_EVERY_S)
            try:
                now = await streams.redis_now(self.r)
                expiry = now + PRESENCE_TTL_S
                refreshed = [s for group in list(self.streams.values()) for s in group]
                frozen = [s for s in refreshed if s.check_alive(time.monotonic())]
                live = {bot: {s.id: expiry for s in group if not s.frozen}
                        for bot, group in list(self.streams.items())}
                for s in frozen:  # counts as disconnected from now: clock stops, grace runs
                    log.warning("bot %s stream %s answers no ping: treated as disconnected",
                                s.bot_id, s.id, extra={"bot_id": s.bot_id})
                await streams.refresh_presence(self.r, live, now,
                                               [(s.bot_id, s.id) for s in frozen])
                # A stream detached while the refresh was on its way may have been
                # written back after its removal: take it out again.
                gone = [(s.bot_id, s.id) for s in refreshed if s.closed]
                if gone:
                    await streams.withdraw(self.r, gone)
                # A `Revoked` this referee missed (its pub/sub was away) still ends the
                # streams of a replaced token, within one refresh.
                await self._check_tokens(refreshed)
            except asyncio.CancelledError:
                raise
            except Exception:
                metrics.REDIS_ERRORS.labels("presence").inc()
                log.exception("presence refresh failed")


def _size(event: Message) -> int:
    """Roughly the bytes an event holds in an outbox."""
    if isinstance(event, DecisionRequest):
        return 2048
    if isinstance(event, Logged):
        return 1024
    return 64 + sum(len(v) for v in (getattr(event, "request_id", ""),
                                     getattr(event, "message", "")))
