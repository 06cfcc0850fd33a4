"""MatchService: organisers create single matches; anyone may read them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import redis
from sqlalchemy.exc import SQLAlchemyError

from archive import reads
from archive.errors import ArchiveError
from proto.moon.v1 import match_pb2, match_pb2_grpc, rating_pb2
from server import wire
from server.access import caller
from server.archived import Archived
from server.edge import (
    ARCHIVE_TOP,
    MAX_PAGE,
    archive_token,
    bearer_token,
    streaming,
    unary,
    watch_pass,
)
from server.follow import follow
from server.lanes import Lane, WatchGate
from store import audit, ids
from store import bots as store_bots
from store import matches as store_matches
from store import tournaments as store_t
from store.errors import InvalidArgument, NotFound, OutOfRange, PermissionDenied
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

    def __init__(self, reads: Lane, watch: Lane, rq_conn: redis.Redis, gate: WatchGate,
                 archived: Archived | None = None) -> None:
        self.reads = reads
        self.watch = watch  # watch streams poll here, never in front of other calls
        self.rq_conn = rq_conn
        self.gate = gate
        self.archived = archived or Archived("")  # finished games that left Redis

    @unary
    async def CreateMatch(
        self, request: match_pb2.CreateMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> match_pb2.CreateMatchResponse:
        """Validate, store and queue one match (an organiser)."""
        players = request.players
        if players not in (3, 4):
            raise InvalidArgument(f"players: must be 3 or 4, got {players}")
        if len(request.bot_ids) != players:
            raise InvalidArgument(
                f"bot_ids: a {players}-player match needs {players} bot ids, "
                f"got {len(request.bot_ids)}"
            )
        who = caller()
        if request.HasField("seed") and not who.is_admin:
            raise PermissionDenied("seed: the admin's option (whoever picks a deal knows it)")
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
        await self.reads.run(audit.record, who.actor, "create_match", spec.match_id,
                             " ".join(spec.bot_ids), who.address,
                             [who.author_id] if who.author_id else [])
        sight = Sight.ALL if who.is_admin else await self._sight(Audience.PUBLIC, record)
        return match_pb2.CreateMatchResponse(
            match_id=spec.match_id, match=wire.match_to_pb(record, sight=sight)
        )

    @unary
    async def GetMatch(
        self, request: match_pb2.GetMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> match_pb2.GetMatchResponse:
        """A match with its status and, once finished, result and transcript."""
        if not request.match_id:
            raise InvalidArgument("match_id: required")
        record = await self._record(self.reads, request.match_id)
        audience = await self._audience(context)
        return match_pb2.GetMatchResponse(
            match=wire.match_to_pb(record, sight=await self._sight(audience, record)))

    async def _record(self, lane: Lane, match_id: str) -> MatchRecord:
        """A match from Redis (under way, or finished and not archived yet), else from the
        archive; NotFound from neither."""
        try:
            return await lane.run(store_matches.get_match, match_id)
        except NotFound:
            if not ids.is_match_id(match_id):
                raise
            found = await lane.run(lambda _r: self.archived.match(match_id))
            if found is None:
                raise
            return found

    async def _audience(self, context: grpc.aio.ServicerContext[Any, Any]) -> Audience:
        admin = caller().is_admin
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
        wire.check_enum(rating_pb2.RatingPool, request.pool, "pool", "rating pool",
                        unset="unset for any")
        players = (None if request.pool == rating_pb2.RATING_POOL_UNSPECIFIED
                   else wire.pool_from_pb(request.pool).players)
        since = (wire.seconds_of(request.finished_after, "finished_after")
                 if request.HasField("finished_after") else None)
        until = (wire.seconds_of(request.finished_before, "finished_before")
                 if request.HasField("finished_before") else None)
        token = request.page_token
        before = archive_token(token)

        def wanted(rec: MatchRecord) -> bool:
            done = rec.finished_at or 0.0
            return ((not status or rec.status == status)
                    and (not bot_id or bot_id in rec.spec.bot_ids)
                    and (event is None or rec.spec.event == event)
                    and (players is None or rec.spec.players == players)
                    and (since is None or (rec.finished_at is not None and done >= since))
                    and (until is None or (rec.finished_at is not None and done < until)))

        def load(r: redis.Redis) -> tuple[list[MatchRecord], str]:
            """Redis's part (its index, newest first), then the archive's."""
            out: list[MatchRecord] = []
            seen: set[str] = set()
            index = store_matches.index(event, bot_id)
            if before is None:
                for mid in store_matches.ids_after(r, index, token, newest_first=True):
                    rec = _from_redis(r, mid)
                    if rec is None or not wanted(rec):
                        continue  # (gone: archived, and the archive's part lists it)
                    out.append(rec)
                    seen.add(mid)
                    if len(out) > size:
                        return out[:size], store_matches.page_token(
                            r, index, out[size - 1].spec.match_id)
            if status and status != MatchStatus.FINISHED:
                return out, ""  # the archive holds finished games only
            room = size - len(out)
            try:
                found = self.archived.matches(
                    bot_id=bot_id, event=event, players=players, before=before,
                    limit=room + 1, since=since, until=until)
            except (ArchiveError, SQLAlchemyError, OSError):
                if not out:
                    raise  # UNAVAILABLE: nothing to answer with
                # What Redis holds, and a token that goes on into the archive's part.
                return out, f"a:{before or ARCHIVE_TOP}"
            page, more = found[:room], len(found) > room
            out += [rec for _, rec in page if rec.spec.match_id not in seen]  # both stores
            if not more:
                return out, ""
            return out, f"a:{page[-1][0] if page else ARCHIVE_TOP}"

        records, next_token = await self.reads.run(load)
        audience = await self._audience(context)
        sights = [await self._sight(audience, r) for r in records]
        return match_pb2.ListMatchesResponse(
            matches=[wire.match_to_pb(r, with_transcript=False, sight=v)
                     for r, v in zip(records, sights, strict=True)],
            next_page_token=next_token,
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
        record = await self._record(self.watch, request.match_id)
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
                record = await self._record(self.watch, request.match_id)
                seen = await self._sight(audience, record)
        pb_match = wire.match_to_pb(record, with_transcript=False, sight=seen)
        mid = request.match_id

        async def logs() -> None:
            """Feed what was logged since the last look (none once the game left Redis:
            `over` then takes the rest from the archive)."""
            events.feed(*await self.watch.run(_read_logs, mid, events))

        async def over() -> bool:
            if isinstance(events.events[-1], MatchFinished):
                return True  # its end is among the events already
            try:
                done = await self.watch.run(store_matches.get_match, mid)
            except NotFound:  # archived meanwhile (or before): its log is the archive's
                done = await self._record(self.watch, mid)
                assert done.transcript is not None, "an archived game has its transcript"
                events.feed(reads.log_entries(done.transcript)[events.consumed:])
            else:
                if not done.status.over:
                    return False
                await logs()  # anything logged before the end comes first, then the end
            events.finish(done.status, done.result, done.error, done.finished_at or 0.0)
            return True

        await logs()
        if record.released and record.transcript is not None and not events.consumed:
            await over()  # an archived game: all of it at once
        coming = record.status.over and not isinstance(events.events[-1], MatchFinished)
        if sent > len(events.events) + coming:
            raise OutOfRange(f"after_sequence: {sent} is past the match's last event so far, "
                             f"{len(events.events) + coming}")

        async def read(after: int) -> list[tuple[int, WatchEvent]]:
            if not isinstance(events.events[-1], MatchFinished):
                await logs()
            return [(seq, for_audience(events.events[seq - 1], audience))
                    for seq in range(after + 1, len(events.events) + 1)]

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


def _from_redis(r: redis.Redis, match_id: str) -> MatchRecord | None:
    """A match Redis holds, or None (archived since it was listed, or never there)."""
    try:
        return store_matches.get_match(r, match_id)
    except NotFound:
        return None
