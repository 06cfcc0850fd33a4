"""ArenaService: organisers start and stop the arena of a pool; bots join and leave it;
anyone may read it."""

from __future__ import annotations

import secrets
from typing import Any

import grpc
import redis

from proto.moon.v1 import arena_pb2, arena_pb2_grpc
from server import wire
from server.access import caller
from server.edge import unary
from server.lanes import Lane
from store import arena as store_arena
from store import audit
from store import hosted as store_hosted
from store.bots import BotRecord
from store.errors import FailedPrecondition, Unauthenticated
from workers.queues import request_arena_step

__all__ = ["ArenaServicer", "wake_arenas_of"]


class ArenaServicer(arena_pb2_grpc.ArenaServiceServicer):
    """Thin: decode, call `store.arena`, encode; a join or a start asks for a step."""

    def __init__(self, reads: Lane, rq_conn: redis.Redis) -> None:
        self.reads = reads
        self.rq_conn = rq_conn

    async def _view(self, pool: str) -> arena_pb2.Arena:
        return wire.arena_to_pb(await self.reads.run(store_arena.view, pool))

    @staticmethod
    def _bot() -> BotRecord:
        """The calling bot (the gate admitted a bot token only)."""
        bot = caller().bot
        if bot is None:
            raise Unauthenticated("a bot joins or leaves with its own token: send metadata "
                                  "'authorization: Bearer <bot token>'")
        return bot

    @unary
    async def StartArena(self, request: arena_pb2.StartArenaRequest,
                         context: grpc.aio.ServicerContext[Any, Any]
                         ) -> arena_pb2.StartArenaResponse:
        """Start the arena of a pool (an organiser); FAILED_PRECONDITION when it runs
        already."""
        pool = wire.arena_pool_from_pb(request.pool)
        spec = wire.arena_settings_from_pb(pool, request.settings, secrets.randbits(63))
        await self.reads.run(store_hosted.check_within_hosts, spec.sandbox, "settings.sandbox")
        await self.reads.run(store_arena.start, spec)
        who = caller()
        await self.reads.run(audit.record, who.actor, "start_arena", pool, "", who.address,
                             [who.author_id] if who.author_id else [])
        await self.reads.run(request_arena_step, self.rq_conn, pool)
        return arena_pb2.StartArenaResponse(arena=await self._view(pool))

    @unary
    async def StopArena(self, request: arena_pb2.StopArenaRequest,
                        context: grpc.aio.ServicerContext[Any, Any]
                        ) -> arena_pb2.StopArenaResponse:
        """Stop the arena of a pool (an organiser); FAILED_PRECONDITION when it does not
        run."""
        pool = wire.arena_pool_from_pb(request.pool)
        await self.reads.run(store_arena.stop, pool)
        who = caller()
        await self.reads.run(audit.record, who.actor, "stop_arena", pool, "", who.address,
                             [who.author_id] if who.author_id else [])
        return arena_pb2.StopArenaResponse(arena=await self._view(pool))

    @unary
    async def GetArena(self, request: arena_pb2.GetArenaRequest,
                       context: grpc.aio.ServicerContext[Any, Any]) -> arena_pb2.GetArenaResponse:
        """The arena of a pool: settings, bots, counts (public)."""
        return arena_pb2.GetArenaResponse(arena=await self._view(
            wire.arena_pool_from_pb(request.pool)))

    @unary
    async def JoinArena(self, request: arena_pb2.JoinArenaRequest,
                        context: grpc.aio.ServicerContext[Any, Any]
                        ) -> arena_pb2.JoinArenaResponse:
        """The calling bot joins the running arena of a pool."""
        bot = self._bot()
        if bot.retired:
            raise FailedPrecondition(f"{bot.name} is retired: it plays no new game")
        pool = wire.arena_pool_from_pb(request.pool)
        joined = await self.reads.run(store_arena.join, pool, bot.bot_id)
        if joined:  # a bot already in asks for nothing: a loop of joins costs no passes
            await self.reads.run(request_arena_step, self.rq_conn, pool)
        return arena_pb2.JoinArenaResponse(bot_id=bot.bot_id, pool=request.pool, joined=joined)

    @unary
    async def LeaveArena(self, request: arena_pb2.LeaveArenaRequest,
                         context: grpc.aio.ServicerContext[Any, Any]
                         ) -> arena_pb2.LeaveArenaResponse:
        """The calling bot leaves the arena of a pool (its games under way finish)."""
        bot = self._bot()
        pool = wire.arena_pool_from_pb(request.pool)
        left = await self.reads.run(store_arena.leave, pool, bot.bot_id)
        return arena_pb2.LeaveArenaResponse(bot_id=bot.bot_id, pool=request.pool, left=left)


def wake_arenas_of(r: redis.Redis, rq_conn: redis.Redis, bot_id: str) -> None:
    """A bot came back (a new stream): ask the arenas it joined for a step."""
    for pool in store_arena.pools_of_bot(r, bot_id):
        request_arena_step(r, rq_conn, pool)
