"""MatchService: organisers create single matches; anyone may read them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import redis

from proto.moon.v1 import match_pb2, match_pb2_grpc
from server import wire
from server.edge import bearer_token, page_of, streaming, unary
from store import bots as store_bots
from store import ids, keys
from store import matches as store_matches
from store.errors import InvalidArgument, NotFound, OutOfRange
from store.match_events import Audience, MatchEvents, MatchFinished, for_audience
from store.matches import MatchRecord
from store.records import MatchSpec
from store.status import MatchStatus
from workers.queues import enqueue_match

__all__ = ["MatchServicer"]

_PAGE = 50
_WATCH_POLL_S = 0.1


class MatchServicer(match_pb2_grpc.MatchServiceServicer):
    """Thin: decode, call the store and the queue, encode."""

    def __init__(self, r: redis.Redis, rq_conn: redis.Redis) -> None:
        self.r = r
        self.rq_conn = rq_conn

    @unary
    async def CreateMatch(
        self, request: match_pb2.CreateMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> match_pb2.CreateMatchResponse:
        """Validate, store and queue one match (admin)."""
        await asyncio.to_thread(store_bots.check_admin, self.r, bearer_token(context))
        players = request.players
        if players not in (3, 4):
            raise InvalidArgument(f"players: must be 3 or 4, got {players}")
        if len(request.bot_ids) != players:
            raise InvalidArgument(
                f"bot_ids: a {players}-player match needs {players} bot ids, "
                f"got {len(request.bot_ids)}"
            )
        records = []
        for i, bot_id in enumerate(request.bot_ids):
            try:
                records.append(await asyncio.to_thread(store_bots.find_bot, self.r, bot_id))
            except NotFound:
                raise InvalidArgument(f"bot_ids[{i}]: no bot with id or name {bot_id!r}") from None
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
        await asyncio.to_thread(store_matches.create_match, self.r, spec)
        await asyncio.to_thread(enqueue_match, self.rq_conn, spec.match_id)
        record = await asyncio.to_thread(store_matches.get_match, self.r, spec.match_id)
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
        record = await asyncio.to_thread(store_matches.get_match, self.r, request.match_id)
        reveal = await self._reveal(context, record)
        return match_pb2.GetMatchResponse(match=wire.match_to_pb(record, reveal=reveal))

    async def _reveal(self, context: grpc.aio.ServicerContext[Any, Any],
                      record: MatchRecord) -> bool:
        """May this caller see the seed and transcript? Organisers always; others once the
        match is over and no other game can still be dealt from the same seed."""
        if await asyncio.to_thread(store_bots.is_admin, self.r, bearer_token(context)):
            return True
        if record.status != MatchStatus.FINISHED:
            return False
        if record.spec.tournament_id:
            return await asyncio.to_thread(store_matches.tournament_over, self.r,
                                           record.spec.tournament_id)
        return True

    @unary
    async def ListMatches(
        self, request: match_pb2.ListMatchesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> match_pb2.ListMatchesResponse:
        """Matches, newest first, a page at a time, optionally filtered."""
        size = request.page_size or _PAGE
        status = wire.match_status_name(request.status) if request.status else ""
        index = (keys.tournament_matches(request.tournament_id) if request.tournament_id
                 else keys.MATCHES)
        bot_id = request.bot_id
        if bot_id:  # an id or a name, as everywhere else
            try:
                bot_id = (await asyncio.to_thread(store_bots.find_bot, self.r, bot_id)).bot_id
            except NotFound:
                raise InvalidArgument(f"bot_id: no bot with id or name {bot_id!r}") from None

        def load() -> tuple[list[MatchRecord], bool]:
            ids = store_matches.ids_after(self.r, index, request.page_token, newest_first=True)
            records = (store_matches.get_match(self.r, mid) for mid in ids)
            return page_of((rec for rec in records
                            if (not status or rec.status == status)
                            and (not bot_id or bot_id in rec.spec.bot_ids)),
                           size)

        records, more = await asyncio.to_thread(load)
        reveal = [await self._reveal(context, r) for r in records]
        return match_pb2.ListMatchesResponse(
            matches=[wire.match_to_pb(r, with_transcript=False, reveal=v)
                     for r, v in zip(records, reveal, strict=True)],
            next_page_token=records[-1].spec.match_id if more else "",
        )

    @streaming
    async def WatchMatch(
        self, request: match_pb2.WatchMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[match_pb2.WatchMatchResponse]:
        """The match's events after `after_sequence`, live, until it ends, as the caller's
        audience may see them."""
        if not request.match_id:
            raise InvalidArgument("match_id: required")
        record = await asyncio.to_thread(store_matches.get_match, self.r, request.match_id)
        audience = (Audience.ORGANISER if await asyncio.to_thread(
            store_bots.is_admin, self.r, bearer_token(context)) else Audience.PUBLIC)
        events = MatchEvents(record.spec, record.started_at or record.created_at)
        sent = request.after_sequence
        check_resume = True
        pb_match = wire.match_to_pb(record, with_transcript=False,
                                    reveal=await self._reveal(context, record))
        while True:
            log, conn = await asyncio.to_thread(self._read_logs, request.match_id, events)
            events.feed(log, conn)
            if not log:
                record = await asyncio.to_thread(store_matches.get_match, self.r,
                                                 request.match_id)
                if record.status.over:
                    # Anything logged between the two reads comes first.
                    events.feed(*await asyncio.to_thread(self._read_logs, request.match_id,
                                                         events))
                    events.finish(record.status, record.result, record.error,
                                  record.finished_at or 0.0)
            if check_resume:
                check_resume = False
                coming = record.status.over and not isinstance(events.events[-1],
                                                               MatchFinished)
                last = len(events.events) + coming
                if sent > last:
                    raise OutOfRange(f"after_sequence: {sent} is past the match's last event "
                                     f"so far, {last}")
            for seq in range(sent + 1, len(events.events) + 1):
                event = for_audience(events.events[seq - 1], audience)
                yield wire.match_event_to_pb(seq, event, pb_match)
                sent = seq
            if isinstance(events.events[-1], MatchFinished):
                return
            await asyncio.sleep(_WATCH_POLL_S)

    def _read_logs(self, match_id: str, events: MatchEvents) -> tuple[list[str], list[str]]:
        """The log and connection entries past what `events` has read, in one snapshot."""
        pipe = self.r.pipeline(transaction=True)
        pipe.lrange(keys.match_log(match_id), events.consumed, -1)
        pipe.lrange(keys.conn(match_id), events.conn_consumed, -1)
        log, conn = pipe.execute()
        return list(log), list(conn)
