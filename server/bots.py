"""BotService: registering bots, and the Play stream that carries their matches."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from proto.moon.v1 import bot_pb2, bot_pb2_grpc
from server import metrics, wire
from server.arena import wake_arenas_of
from server.edge import (
    MAX_PAGE,
    Undecodable,
    bearer_token,
    fail,
    metadata_value,
    page_of,
    status_of,
    unary,
)
from server.hub import MAX_ECHO, Hub, Stream
from server.lanes import Lane
from store import bots as store_bots
from store import ids, messages, streams
from store.errors import InvalidArgument, ServiceError, Unauthenticated

__all__ = ["BotServicer", "serialize_play"]

log = logging.getLogger("moonshot.referee")

VERSION = "moonshot/0.1"
_PAGE = 100
LAST_EVENT_ID = "moonshot-last-event-id"  # metadata: the newest logged event the bot handled


class BotServicer(bot_pb2_grpc.BotServiceServicer):
    """Thin: decode, call the store or the hub, encode."""

    def __init__(self, bots: Lane, reads: Lane, hub: Hub, open_registration: bool = True,
                 rq_conn: redis.Redis | None = None) -> None:
        self.bots = bots  # registration and Play: never queued behind reads or watchers
        self.reads = reads
        self.hub = hub
        self.open_registration = open_registration
        self.rq_conn = rq_conn  # to ask the arenas a bot joined for a step when it comes back

    @unary
    async def RegisterBot(
        self, request: bot_pb2.RegisterBotRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bot_pb2.RegisterBotResponse:
        """Register a bot; return its id and its token, once."""
        if not self.open_registration:
            await self.bots.run(store_bots.check_admin, bearer_token(context))
        record, token = await self.bots.run(store_bots.register_bot, request.name)
        log.info("registered bot %s (%s)", record.name, record.bot_id,
                 extra={"bot_id": record.bot_id})
        return bot_pb2.RegisterBotResponse(bot_id=record.bot_id, token=token)

    @unary
    async def GetBot(
        self, request: bot_pb2.GetBotRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bot_pb2.GetBotResponse:
        """One bot, by id or name."""
        if not request.bot_id:
            raise InvalidArgument("bot_id: required")
        record = await self.reads.run(store_bots.find_bot, request.bot_id)
        connected = await self.reads.run(store_bots.is_connected, record.bot_id)
        return bot_pb2.GetBotResponse(bot=wire.bot_to_pb(record, connected))

    @unary
    async def ListBots(
        self, request: bot_pb2.ListBotsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bot_pb2.ListBotsResponse:
        """Bots, oldest first, a page at a time."""
        size = min(request.page_size or _PAGE, MAX_PAGE)

        def load(r: redis.Redis) -> tuple[list[tuple[store_bots.BotRecord, bool]], bool]:
            ids = store_bots.ids_after(r, request.page_token)
            return page_of(((store_bots.get_bot(r, b), store_bots.is_connected(r, b))
                            for b in ids), size)

        page, more = await self.reads.run(load)
        return bot_pb2.ListBotsResponse(
            bots=[wire.bot_to_pb(b, c) for b, c in page],
            next_page_token=page[-1][0].bot_id if more else "",
        )

    async def Play(  # type: ignore[override]  # may yield wire bytes: see add_to_server
        self,
        request_iterator: AsyncIterator[bot_pb2.PlayRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[bot_pb2.PlayResponse | bytes]:
        """The bot's bidirectional stream: requests out, decisions in."""
        try:
            token = bearer_token(context)
            if token is None:
                raise Unauthenticated(
                    "Play needs the bot token: send metadata 'authorization: Bearer <token>'"
                )
            bot = await self.bots.run(store_bots.authenticate_bot, token)
            after = metadata_value(context, LAST_EVENT_ID) or ""
            if after and ids.parse_event_id(after) is None:
                raise InvalidArgument(f"{LAST_EVENT_ID}: {after[:100]!r} is not an event_id "
                                      "(send the event_id of the newest event handled)")
            live = await streams.live_matches(self.hub.r, bot.bot_id)
        except Exception as exc:
            code, message = status_of(exc)
            await fail(context, code, message)
        stream = Stream(bot.bot_id)
        log.info("bot %s (%s) connected, stream %s", bot.name, bot.bot_id, stream.id,
                 extra={"bot_id": bot.bot_id})
        yield wire.welcome_pb(bot.bot_id, bot.name, VERSION, live)
        reader: asyncio.Task[None] | None = None
        metrics.PLAY_STREAMS.inc()
        try:
            # Inside the try: a stream that joined the hub must leave it, even when attach
            # fails half-way or the RPC is cancelled during it (else it stays marked present).
            try:
                await self.hub.attach(stream, after)
            except Exception as exc:
                code, message = status_of(exc)
                await context.abort(code, message)
            if self.rq_conn is not None:
                try:  # a bot of an arena that comes back is free for its matchmaking
                    await self.reads.run(wake_arenas_of, self.rq_conn, bot.bot_id)
                except Exception:  # the recovery pass asks every few seconds anyway
                    log.warning("could not ask the arenas of bot %s for a step", bot.bot_id,
                                exc_info=True)
            reader = asyncio.create_task(self._read(request_iterator, stream))
            while True:
                event = await stream.outbox.get()
                if event is None:
                    if stream.abort_reason:
                        await context.abort(stream.abort_code, stream.abort_reason)
                    break
                stream.taken(event)
                yield wire.event_to_bytes(event)
        finally:
            metrics.PLAY_STREAMS.dec()  # first: a cancelled RPC may not get past the awaits
            if reader is not None:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await reader
            await self.hub.detach(stream)
            log.info("bot %s stream %s closed", bot.bot_id, stream.id,
                     extra={"bot_id": bot.bot_id})

    async def _read(self, requests: AsyncIterator[bot_pb2.PlayRequest | Undecodable],
                    stream: Stream) -> None:
        """Handle what the bot sends until it closes its side."""
        try:
            async for msg in requests:
                if isinstance(msg, Undecodable):
                    metrics.REJECTED.labels("undecodable").inc()
                    stream.close(msg.problem().args[0], grpc.StatusCode.INVALID_ARGUMENT)
                    return
                kind = msg.WhichOneof("message")
                if kind == "decision":
                    d = msg.decision
                    reply: messages.Message
                    try:
                        reply = await self.hub.answer(stream, d.request_id, d.action_id)
                    except (RedisConnectionError, RedisTimeoutError):
                        metrics.REDIS_ERRORS.labels("play").inc()
                        raise
                    except Exception:
                        # One odd answer must not end a stream that carries other matches.
                        metrics.REJECTED.labels("error").inc()
                        log.exception("bot %s: answer to %r failed", stream.bot_id,
                                      d.request_id[:200], extra={"bot_id": stream.bot_id})
                        reply = messages.DecisionRejected(
                            d.request_id[:MAX_ECHO], "", "unknown_request",
                            "the referee could not handle this answer (see its log); if the "
                            "request is still pending it will be sent again")
                    stream.deliver(reply)
                elif kind == "ping":
                    stream.deliver(messages.Pong(msg.ping.nonce))
                elif kind == "pong":
                    await self.hub.pong(stream, msg.pong.nonce)
        except (asyncio.CancelledError, grpc.aio.AioRpcError):
            pass
        except ServiceError as exc:
            log.warning("bot %s: %s", stream.bot_id, exc, extra={"bot_id": stream.bot_id})
        finally:
            stream.close()


def serialize_play(message: bot_pb2.PlayResponse | bytes) -> bytes:
    """Play's response serializer: a decision comes already encoded (`wire.event_to_bytes`,
    the hot path); parsing it into a PlayResponse only for gRPC to serialize it again
    would cost about as much as the encoding."""
    return message if isinstance(message, bytes) else message.SerializeToString()
