"""BotService: registering bots, and the Play stream that carries their matches."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from proto.moon.v1 import bot_pb2, bot_pb2_grpc
from server import hosted, metrics, wire
from server.access import Caller, Role, caller, check_owner
from server.accounts import Settings, throttle_address
from server.archived import Archived
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
from server.hub import MAX_ECHO, REPLACED_TOKEN, Hub, Stream
from server.lanes import Lane
from store import arena as store_arena
from store import audit, ids, keys, messages, streams
from store import authors as store_authors
from store import bots as store_bots
from store import changes as store_changes
from store import hosted as store_hosted
from store import matches as store_matches
from store.errors import (
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ServiceError,
    Unauthenticated,
)
from store.refs import EventRef
from workers.queues import request_step

__all__ = ["BotServicer", "serialize_play"]

log = logging.getLogger("moonshot.referee")

VERSION = "moonshot/0.1"
_PAGE = 100
LAST_EVENT_ID = "moonshot-last-event-id"  # metadata: the newest logged event the bot handled


class BotServicer(bot_pb2_grpc.BotServiceServicer):
    """Thin: decode, call the store or the hub, encode."""

    def __init__(self, bots: Lane, reads: Lane, hub: Hub, settings: Settings | None = None,
                 rq_conn: redis.Redis | None = None, archived: Archived | None = None
                 ) -> None:
        self.bots = bots  # registration and Play: never queued behind reads or watchers
        self.reads = reads
        self.hub = hub
        self.settings = settings or Settings()
        self.rq_conn = rq_conn  # to ask the arenas a bot joined for a step when it comes back
        self.archived = archived  # where submitted packages are kept (None: nowhere)

    @unary
    async def RegisterBot(
        self, request: bot_pb2.RegisterBotRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bot_pb2.RegisterBotResponse:
        """Register a bot (an author's, or no one's); return its id and its token, once."""
        who = caller()
        mode = self.settings.registration
        if who.role is Role.BOT:
            raise PermissionDenied("RegisterBot needs an author token or the admin token; "
                                   "this is a bot token")
        if who.role is Role.NOBODY and mode != "open":
            raise Unauthenticated("registering a bot on this stack needs an author token "
                                  "(moonshot signup, then moonshot login) or the admin token")
        if mode == "admin" and not who.is_admin:
            raise PermissionDenied("registering a bot on this stack is the admin's call")
        if request.previous and who.author is None:
            raise InvalidArgument("previous: versions are an author's (register with an "
                                  "author token)")
        per_hour = self.settings.per_hour

        def run(r: redis.Redis) -> tuple[store_bots.BotRecord, str]:
            if not who.is_admin:
                throttle_address(r, "bot", who.address, per_hour)
            if who.author_id:
                store_authors.count_change(r, who.author_id)
            record, token = store_bots.register_bot(r, request.name, who.author_id,
                                                    request.previous)
            audit.record(r, who.actor, "register_bot", record.bot_id,
                         f"name {record.name}" + (f", after {record.previous}"
                                                  if record.previous else ""),
                         who.address, [who.author_id] if who.author_id else [])
            return record, token

        record, token = await self.bots.run(run)
        log.info("registered bot %s (%s)", record.name, record.bot_id,
                 extra={"bot_id": record.bot_id})
        return bot_pb2.RegisterBotResponse(bot_id=record.bot_id, token=token)

    @unary
    async def GetBot(
        self, request: bot_pb2.GetBotRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bot_pb2.GetBotResponse:
        """One bot, by id or name, with its owner and its line of versions."""
        if not request.bot_id:
            raise InvalidArgument("bot_id: required")

        who = caller()

        def load(r: redis.Redis) -> bot_pb2.Bot:
            record = store_bots.find_bot(r, request.bot_id)
            line = [b.bot_id for b in store_bots.versions(r, record)] if record.owner else []
            version = store_hosted.get_version(r, record.bot_id)
            return wire.bot_to_pb(record, store_bots.is_connected(r, record.bot_id),
                                  _owner_names(r, [record]).get(record.owner, ""), line,
                                  version, _log_for(r, who, record, version))

        return bot_pb2.GetBotResponse(bot=await self.reads.run(load))

    @unary
    async def ListBots(
        self, request: bot_pb2.ListBotsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bot_pb2.ListBotsResponse:
        """Bots, oldest first, a page at a time: every bot, or one author's."""
        size = min(request.page_size or _PAGE, MAX_PAGE)
        who = caller()
        if request.mine and who.author is None:
            if who.role is Role.NOBODY:
                raise Unauthenticated("mine: lists an author's bots: send the author token "
                                      "(moonshot login)")
            # A known token of another kind: refused, not unknown (account.proto).
            raise PermissionDenied(f"mine: lists an author's bots; this is "
                                   f"{'a bot token' if who.bot else 'the admin token'}, "
                                   "which owns none (list one author's with owner)")

        def load(r: redis.Redis) -> tuple[list[bot_pb2.Bot], str]:
            index = keys.BOTS
            if request.mine:
                index = keys.author_bots(who.author_id)
            elif request.owner:
                index = keys.author_bots(store_authors.find_author(r, request.owner).author_id)
            bot_ids = store_matches.ids_after(r, index, request.page_token, newest_first=False)

            def rows() -> Iterator[tuple[store_bots.BotRecord, bool]]:
                for b in bot_ids:
                    try:
                        record = store_bots.get_bot(r, b)
                    except NotFound:
                        continue
                    if request.active_only and record.retired:
                        continue
                    yield record, store_bots.is_connected(r, b)

            page, more = page_of(rows(), size)
            owners = _owner_names(r, [b for b, _ in page])
            hosted = store_hosted.versions_of(r, [b.bot_id for b, _ in page])
            return ([wire.bot_to_pb(b, c, owners.get(b.owner, ""), (), hosted.get(b.bot_id),
                                    _log_for(r, who, b, hosted.get(b.bot_id)))
                     for b, c in page],
                    page[-1][0].bot_id if more else "")

        page, token = await self.reads.run(load)
        return bot_pb2.ListBotsResponse(bots=page, next_page_token=token)

    @unary
    async def RotateBotToken(
        self, request: bot_pb2.RotateBotTokenRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> bot_pb2.RotateBotTokenResponse:
        """A new token for the bot; the old one stops at once, its streams end."""
        who = caller()

        def run(r: redis.Redis) -> str:
            bot = _owned(r, who, request.bot_id)
            _count(r, who)
            token = store_bots.rotate_token(r, bot.bot_id)
            streams.revoke(r, bot.bot_id, REPLACED_TOKEN)
            audit.record(r, who.actor, "rotate_token", bot.bot_id, f"name {bot.name}",
                         who.address, [bot.owner] if bot.owner else [])
            return token

        return bot_pb2.RotateBotTokenResponse(token=await self.bots.run(run))

    @unary
    async def RetireBot(
        self, request: bot_pb2.RetireBotRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bot_pb2.RetireBotResponse:
        """Retire a bot: it leaves every arena, its running tests stop, it plays no new
        game; its games and ratings stay."""
        who = caller()

        def run(r: redis.Redis) -> tuple[store_bots.BotRecord, list[str], list[str]]:
            owned = _owned(r, who, request.bot_id)
            _count(r, who)
            bot = store_bots.retire_bot(r, owned.bot_id)
            left = [p for p in store_arena.pools_of_bot(r, bot.bot_id)
                    if store_arena.leave(r, p, bot.bot_id)]
            stopped = store_changes.stop_tests_of(r, bot.bot_id, "retired")
            audit.record(r, who.actor, "retire_bot", bot.bot_id, f"name {bot.name}",
                         who.address, [bot.owner] if bot.owner else [])
            return bot, stopped, left

        bot, stopped, left = await self.bots.run(run)
        if self.rq_conn is not None:
            for test_id in stopped:
                await self.reads.run(request_step, self.rq_conn, EventRef.test(test_id))
        connected = await self.reads.run(store_bots.is_connected, bot.bot_id)
        return bot_pb2.RetireBotResponse(bot=wire.bot_to_pb(bot, connected),
                                         stopped_test_ids=stopped, left_pools=left)

    @unary
    async def SetPreviousVersion(
        self, request: bot_pb2.SetPreviousVersionRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> bot_pb2.SetPreviousVersionResponse:
        """Declare a bot the next version of another of the same owner's bots."""
        who = caller()

        def run(r: redis.Redis) -> store_bots.BotRecord:
            bot = _owned(r, who, request.bot_id)
            _count(r, who)
            before = bot.previous
            with store_authors.exclusive(r, bot.owner or "admin"):  # no cycle by two at once
                bot = store_bots.set_previous(r, bot.bot_id, request.previous)
            if bot.previous != before:  # a call that changes nothing writes no entry
                audit.record(r, who.actor, "set_previous", bot.bot_id,
                             f"previous {bot.previous or 'none'}", who.address,
                             [bot.owner] if bot.owner else [])
            return bot

        bot = await self.bots.run(run)
        connected = await self.reads.run(store_bots.is_connected, bot.bot_id)
        return bot_pb2.SetPreviousVersionResponse(bot=wire.bot_to_pb(bot, connected))

    @unary
    async def SubmitVersion(
        self, request_iterator: AsyncIterator[bot_pb2.SubmitVersionRequest | Undecodable],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> bot_pb2.SubmitVersionResponse:
        """Receive an author's package and keep it as a new hosted version (server.hosted)."""
        who = caller()
        done = await hosted.submit(request_iterator, who, self.bots, self.archived,
                                   self.settings.versions_per_day)
        log.info("version %s (%s) submitted: %s, %d bytes", done.bot.name, done.bot.bot_id,
                 done.version.digest, done.version.size, extra={"bot_id": done.bot.bot_id})
        return bot_pb2.SubmitVersionResponse(
            bot=wire.bot_to_pb(done.bot, False, who.author.name if who.author else "",
                               (), done.version),
            token=done.token)

    async def Play(  # type: ignore[override]  # may yield wire bytes: see add_to_server
        self,
        request_iterator: AsyncIterator[bot_pb2.PlayRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[bot_pb2.PlayResponse | bytes]:
        """The bot's bidirectional stream: requests out, decisions in."""
        try:
            bot = caller().bot  # the gate admitted a bot token only
            if bot is None:
                raise Unauthenticated(
                    "Play needs the bot token: send metadata 'authorization: Bearer <token>'"
                )
            after = metadata_value(context, LAST_EVENT_ID) or ""
            if after and ids.parse_event_id(after) is None:
                raise InvalidArgument(f"{LAST_EVENT_ID}: {after[:100]!r} is not an event_id "
                                      "(send the event_id of the newest event handled)")
            live = await streams.live_matches(self.hub.r, bot.bot_id)
            replaced = await self.bots.run(store_bots.is_connected, bot.bot_id)
        except Exception as exc:
            code, message = status_of(exc)
            await fail(context, code, message)
        assert bot is not None  # else the call has ended above
        stream = Stream(bot.bot_id, store_bots.token_hash(bearer_token(context) or ""))
        log.info("bot %s (%s) connected, stream %s", bot.name, bot.bot_id, stream.id,
                 extra={"bot_id": bot.bot_id})
        yield wire.welcome_pb(bot.bot_id, bot.name, VERSION, live, replaced)
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


def _owned(r: redis.Redis, who: Caller, bot: str) -> store_bots.BotRecord:
    """The bot a request names, if the caller owns it (or is the admin)."""
    if not bot:
        raise InvalidArgument("bot_id: required")
    record = store_bots.find_bot(r, bot)
    if record.house:
        raise InvalidArgument(f"bot_id: {record.bot_id} is a house bot: the stack's own, "
                              "with no token, owner or versions")
    check_owner(who, record)
    return record


def _log_for(r: redis.Redis, who: Caller, bot: store_bots.BotRecord,
             version: store_hosted.HostedVersion | None) -> str:
    """A hosted version's log tail, for its owner and the admin only ('' for anyone else:
    a sandbox's stderr may hold what its author would not publish)."""
    if version is None or not (who.is_admin or (who.author_id and who.author_id == bot.owner)):
        return ""
    return store_hosted.log_tail(r, bot.bot_id)


def _count(r: redis.Redis, who: Caller) -> None:
    """An author's change counts against their hourly allowance (the admin's does not)."""
    if who.author_id:
        store_authors.count_change(r, who.author_id)


def _owner_names(r: redis.Redis, bots: list[store_bots.BotRecord]) -> dict[str, str]:
    """Author id -> name, for the owners of these bots."""
    out = {}
    for owner in {b.owner for b in bots if b.owner}:
        try:
            out[owner] = store_authors.get_author(r, owner).name
        except NotFound:
            out[owner] = ""
    return out


def serialize_play(message: bot_pb2.PlayResponse | bytes) -> bytes:
    """Play's response serializer: a decision comes already encoded (`wire.event_to_bytes`,
    the hot path); parsing it into a PlayResponse only for gRPC to serialize it again
    would cost about as much as the encoding."""
    return message if isinstance(message, bytes) else message.SerializeToString()
