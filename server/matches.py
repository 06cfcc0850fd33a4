"""MatchService: organisers create single matches; anyone may read them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import redis

from proto.moon.v1 import match_pb2, match_pb2_grpc
from server import wire
from server.edge import MAX_PAGE, bearer_token, page_of, streaming, unary, watch_pass
from server.follow import follow
from server.lanes import Lane, WatchGate
from store import bots as store_bots
from store import ids
from store import matches as store_matches
from store import tournaments as store_t
from store.errors import InvalidArgument, NotFound, OutOfRange
from store.match_events import (
    Audience,
    MatchEvents,
    MatchFinished,
    Sight,
    WatchEvent,
    for_audience,
    sight,
)
from store.matches import MatchRecord
from store.pools import Pool
from store.records import MatchSpec
from store.refs import EventKind, EventRef
from store.status import MatchStatus, TournamentStatus
from workers.queues import enqueue_match

__all__ = ["MatchServicer"]

_PAGE = 50
_WATCH_POLL_S = 0.1
_EMBARGO_POLL_S = 1.0  # how often a public watcher of an embargoed game looks again


class MatchServicer(match_pb2_grpc.MatchServiceServicer):
    """Thin: decode, call the store and the queue, encode."""

    def __init__(self, reads: Lane, watch: Lane, rq_conn: redis.Redis, gate: WatchGate
                 ) -> None:
        self.reads = reads
        self.watch = watch  # watch streams poll here, never in front of other calls
        self.rq_conn = rq_conn
        self.gate = gate

    @unary
    async def CreateMatch(
        self, request: match_pb2.CreateMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> match_pb2.CreateMatchResponse:
        """Validate, store and queue one match (admin)."""
        await self.reads.run(store_bots.check_admin, bearer_token(context))
        players = request.players
        if players not in (3, 4):
            raise InvalidArgument(f"players: must be 3 or 4, got {players}")
        if len(request.bot_ids) != players:
            raise InvalidArgument(
                f"bot_ids: a {players}-player match needs {players} bot ids, "
                f"got {len(request.bot_ids)}"
            )
        records = await self.reads.run(store_bots.resolve, list(request.bot_ids))
        spec = MatchSpec.build(
            match_id=ids.new_match_id(),
            players=players,
            bot_ids=[b.bot_id for b in records],
            seat_names=[b.name for b in records],
            rules=dict(request.rules),
            seed=request.seed if request.HasField("seed") else None,
            clock=wire.clock_from_pb(request.clock if request.HasField("clock") else None),
            faults=wire.faults_from_pb(request.faults if request.HasField("faults") else None),
        )
        await self.reads.run(store_matches.create_match, spec)
        await self.reads.run(lambda _r: enqueue_match(self.rq_conn, spec.match_id))
        record = await self.reads.run(store_matches.get_match, spec.match_id)
        return match_pb2.CreateMatchResponse(
            match_id=spec.match_id, match=wire.match_to_pb(record)
        )

    @unary
    async def GetMatch(
        self, request: match_pb2.GetMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> match_pb2.GetMatchResponse:
        """A match with its status and, once finished, result and transcript."""
        if not request.match_id:
            raise InvalidArgument("match_id: required")
        record = await self.reads.run(store_matches.get_match, request.match_id)
        audience = await self._audience(context)
        return match_pb2.GetMatchResponse(
            match=wire.match_to_pb(record, sight=await self._sight(audience, record)))

    async def _audience(self, context: grpc.aio.ServicerContext[Any, Any]) -> Audience:
        admin = await self.reads.run(store_bots.is_admin, bearer_token(context))
        return Audience.ORGANISER if admin else Audience.PUBLIC

    async def _sight(self, audience: Audience, record: MatchRecord) -> Sight:
        """How much of this match the caller may see (`store.match_events.sight`)."""
        released = record.released
        tid = record.spec.event_id(EventKind.TOURNAMENT)
        if not released and tid and record.status == MatchStatus.FINISHED:
            # Finished before games were released board by board: the tournament being
            # finished (every game of it played) releases it.
            released = await self.reads.run(_tournament_finished, tid)
        return sight(audience, tournament_game=record.spec.boarded,
                     over=record.status.over, released=released)

    @unary
    async def ListMatches(
        self, request: match_pb2.ListMatchesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> match_pb2.ListMatchesResponse:
        """Matches, newest first, a page at a time, optionally filtered."""
        size = min(request.page_size or _PAGE, MAX_PAGE)
        status = wire.match_status_name(request.status) if request.status else ""
        if request.tournament_id and not ids.is_tournament_id(request.tournament_id):
            raise InvalidArgument(f"tournament_id: {request.tournament_id[:100]!r} is not a "
                                  "tournament id")
        if request.test_id and not ids.is_test_id(request.test_id):
            raise InvalidArgument(f"test_id: {request.test_id[:100]!r} is not a test id")
        if request.test_id and request.tournament_id:
            raise InvalidArgument("test_id: a match belongs to a tournament or a test, not "
                                  "both; give one of them")
        bot_id = request.bot_id
        if bot_id:  # an id or a name, as everywhere else
            try:
                bot_id = (await self.reads.run(store_bots.find_bot, bot_id)).bot_id
            except NotFound:
                raise InvalidArgument(f"bot_id: no bot with id or name {bot_id!r}") from None
        if request.arena and request.arena not in set(Pool):
            raise InvalidArgument(f"arena: {request.arena[:40]!r} is not a pool; expected "
                                  "3p, 2v2 or empty")
        # The narrowest index that holds every match asked for (then filtered).
        event = (EventRef.tournament(request.tournament_id) if request.tournament_id
                 else EventRef.test(request.test_id) if request.test_id
                 else EventRef.arena(request.arena) if request.arena else None)
        index = store_matches.index(event, bot_id)

        def load(r: redis.Redis) -> tuple[list[MatchRecord], bool]:
            found = store_matches.ids_after(r, index, request.page_token, newest_first=True)
            records = (store_matches.get_match(r, mid) for mid in found)
            return page_of((rec for rec in records
                            if (not status or rec.status == status)
                            and (not bot_id or bot_id in rec.spec.bot_ids)
                            and (event is None or rec.spec.event == event)),
                           size)

        records, more = await self.reads.run(load)
        audience = await self._audience(context)
        sights = [await self._sight(audience, r) for r in records]
        return match_pb2.ListMatchesResponse(
            matches=[wire.match_to_pb(r, with_transcript=False, sight=v)
                     for r, v in zip(records, sights, strict=True)],
            next_page_token=records[-1].spec.match_id if more else "",
        )

    @streaming
    async def WatchMatch(
        self, request: match_pb2.WatchMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[match_pb2.WatchMatchResponse]:
        """The match's events after `after_sequence`, live, until it ends, as the caller's
        audience may see them: a tournament game whose board is still in play shows only
        that it started, and the rest once the board is released."""
        if not request.match_id:
            raise InvalidArgument("match_id: required")
        trusted = await self.watch.run(store_bots.trusted_watcher, bearer_token(context),
                                       watch_pass(context))
        with self.gate.enter(context.peer(), trusted):
            async for item in self._watch(request, context):
                yield item

    async def _watch(
        self, request: match_pb2.WatchMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[match_pb2.WatchMatchResponse]:
        record = await self.watch.run(store_matches.get_match, request.match_id)
        audience = await self._audience(context)
        seen = await self._sight(audience, record)
        events = MatchEvents(record.spec, record.started_at or record.created_at)
        sent = request.after_sequence
        if sent == 0 or seen is Sight.STATUS:
            if sent > 1:
                raise OutOfRange(f"after_sequence: {sent} is past the match's last event "
                                 "so far, 1 (its board is still in play)")
            if sent == 0:
                yield wire.match_event_to_pb(1, events.events[0], wire.match_to_pb(
                    record, with_transcript=False, sight=seen))
                sent = 1
            while seen is Sight.STATUS:  # nothing more until the board is released
                await asyncio.sleep(_EMBARGO_POLL_S)
                record = await self.watch.run(store_matches.get_match, request.match_id)
                seen = await self._sight(audience, record)
        pb_match = wire.match_to_pb(record, with_transcript=False, sight=seen)
        mid = request.match_id
        events.feed(*await self.watch.run(_read_logs, mid, events))
        coming = record.status.over and not isinstance(events.events[-1], MatchFinished)
        if sent > len(events.events) + coming:
            raise OutOfRange(f"after_sequence: {sent} is past the match's last event so far, "
                             f"{len(events.events) + coming}")

        async def read(after: int) -> list[tuple[int, WatchEvent]]:
            events.feed(*await self.watch.run(_read_logs, mid, events))
            return [(seq, for_audience(events.events[seq - 1], audience))
                    for seq in range(after + 1, len(events.events) + 1)]

        async def over() -> bool:
            done = await self.watch.run(store_matches.get_match, mid)
            if not done.status.over:
                return False
            # Anything logged before the end comes first, then the end itself.
            events.feed(*await self.watch.run(_read_logs, mid, events))
            events.finish(done.status, done.result, done.error, done.finished_at or 0.0)
            return True

        async for batch in follow(read, sent, _is_end, over, _WATCH_POLL_S):
            for seq, event in batch:
                yield wire.match_event_to_pb(seq, event, pb_match)


def _tournament_finished(r: redis.Redis, tournament_id: str) -> bool:
    return store_t.info(r, tournament_id).status == TournamentStatus.FINISHED


def _read_logs(r: redis.Redis, match_id: str, events: MatchEvents) -> tuple[list[str], list[str]]:
    """The log and connection entries past what `events` has read, in one snapshot."""
    return store_matches.read_logs(r, match_id, events.consumed, events.conn_consumed)


def _is_end(event: WatchEvent) -> bool:
    return isinstance(event, MatchFinished)
