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
from server import wire
from server.edge import bearer_token, page_of, status_of, unary
from server.hub import Hub, Stream
from store import bots as store_bots
from store import keys, messages
from store.errors import InvalidArgument, ServiceError, Unauthenticated
from store.matches import ids_after

__all__ = ["BotServicer", "add_to_server"]

log = logging.getLogger("moonshot.referee")

VERSION = "moonshot/0.1"
_PAGE = 100


class BotServicer(bot_pb2_grpc.BotServiceServicer):
    """Thin: decode, call the store or the hub, encode."""

    def __init__(self, r: redis.Redis, hub: Hub, open_registration: bool = True) -> None:
        self.r = r
        self.hub = hub
        self.open_registration = open_registration

    @unary
    async def RegisterBot(
        self, request: bot_pb2.RegisterBotRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bot_pb2.RegisterBotResponse:
        """Register a bot; return its id and its token, once."""
        if not self.open_registration:
            await asyncio.to_thread(store_bots.check_admin, self.r, bearer_token(context))
        record, token = await asyncio.to_thread(store_bots.register_bot, self.r, request.name)
        log.info("registered bot %s (%s)", record.name, record.bot_id)
        return bot_pb2.RegisterBotResponse(bot_id=record.bot_id, token=token)

    @unary
    async def GetBot(
        self, request: bot_pb2.GetBotRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bot_pb2.GetBotResponse:
        """One bot, by id or name."""
        if not request.bot_id:
            raise InvalidArgument("bot_id: required")
        record = await asyncio.to_thread(store_bots.find_bot, self.r, request.bot_id)
        connected = await asyncio.to_thread(store_bots.is_connected, self.r, record.bot_id)
        return bot_pb2.GetBotResponse(bot=wire.bot_to_pb(record, connected))

    @unary
    async def ListBots(
        self, request: bot_pb2.ListBotsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bot_pb2.ListBotsResponse:
        """Bots, oldest first, a page at a time."""
        size = request.page_size or _PAGE

        def load() -> tuple[list[tuple[store_bots.BotRecord, bool]], bool]:
            ids = ids_after(self.r, keys.BOTS, request.page_token, newest_first=False)
            return page_of(((store_bots.get_bot(self.r, b), store_bots.is_connected(self.r, b))
                            for b in ids), size)

        page, more = await asyncio.to_thread(load)
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
            bot = await asyncio.to_thread(store_bots.authenticate_bot, self.r, token)
        except Exception as exc:
            code, message = status_of(exc)
            await context.abort(code, message)
        stream = Stream(bot.bot_id)
        log.info("bot %s (%s) connected, stream %s", bot.name, bot.bot_id, stream.id)
        yield bot_pb2.PlayResponse(
            welcome=bot_pb2.PlayResponse.Welcome(
                bot_id=bot.bot_id, name=bot.name, server_version=VERSION
            )
        )
        reader: asyncio.Task[None] | None = None
        try:
            # Inside the try: a stream that joined the hub must leave it, even when attach
            # fails half-way or the RPC is cancelled during it (else it stays marked present).
            try:
                await self.hub.attach(stream)
            except Exception as exc:
                code, message = status_of(exc)
                await context.abort(code, message)
            reader = asyncio.create_task(self._read(request_iterator, stream))
            while True:
                event = await stream.outbox.get()
                if event is None:
                    if stream.abort_reason:
                        await context.abort(grpc.StatusCode.ABORTED, stream.abort_reason)
                    break
                yield wire.event_to_bytes(event)
        finally:
            if reader is not None:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await reader
            await self.hub.detach(stream)
            log.info("bot %s stream %s closed", bot.bot_id, stream.id)

    async def _read(self, requests: AsyncIterator[bot_pb2.PlayRequest], stream: Stream) -> None:
        """Handle what the bot sends until it closes its side."""
        try:
            async for msg in requests:
                kind = msg.WhichOneof("message")
                if kind == "decision":
                    d = msg.decision
                    reply: messages.Message
                    try:
                        reply = await self.hub.answer(stream, d.request_id, d.action_id)
                    except (RedisConnectionError, RedisTimeoutError):
                        raise
                    except Exception:
                        # One odd answer must not end a stream that carries other matches.
                        log.exception("bot %s: answer to %r failed", stream.bot_id,
                                      d.request_id[:200])
                        reply = messages.DecisionRejected(
                            d.request_id, "", "unknown_request",
                            "the referee could not handle this answer (see its log); if the "
                            "request is still pending it will be sent again")
                    stream.deliver(reply)
                elif kind == "ping":
                    stream.outbox.put_nowait(messages.Pong(msg.ping.nonce))
        except (asyncio.CancelledError, grpc.aio.AioRpcError):
            pass
        except ServiceError as exc:
            log.warning("bot %s: %s", stream.bot_id, exc)
        finally:
            stream.close()


def _serialize_play(message: bot_pb2.PlayResponse | bytes) -> bytes:
    return message if isinstance(message, bytes) else message.SerializeToString()


class _Captured:
    """Stands in for a server to catch the method handlers the generated code registers."""

    handlers: dict[str, Any]

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        """Ignored: the same handlers come to add_registered_method_handlers."""

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        """Keep them."""
        self.handlers = dict(handlers)


def add_to_server(servicer: BotServicer, server: grpc.aio.Server) -> None:
    """Register BotService as the generated code does, except that Play may yield bytes.

    A decision is encoded straight to wire bytes (`wire.event_to_bytes`, the hot
    path); parsing them into a PlayResponse only for gRPC to serialize it again
    would cost about as much as the encoding.
    """
    captured = _Captured()
    bot_pb2_grpc.add_BotServiceServicer_to_server(servicer, captured)  # type: ignore[arg-type]
    handlers = captured.handlers
    handlers["Play"] = handlers["Play"]._replace(response_serializer=_serialize_play)
    service = bot_pb2.DESCRIPTOR.services_by_name["BotService"].full_name
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
    server.add_registered_method_handlers(service, handlers)
