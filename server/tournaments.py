"""TournamentService and RatingService: organisers create tournaments; anyone may follow them."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
import redis
from sqlalchemy.exc import SQLAlchemyError

from archive import reads as archive_reads
from archive.errors import ArchiveError
from archive.reads import ArchivedEvent
from proto.moon.v1 import rating_pb2, rating_pb2_grpc, tournament_pb2, tournament_pb2_grpc
from ratings import collusion
from ratings import methods as rating_methods
from server import wire
from server.access import caller
from server.archived import Archived, info_of
from server.edge import (
    ARCHIVE_TOP,
    MAX_PAGE,
    archive_token,
    bearer_token,
    page_of,
    streaming,
    unary,
    watch_pass,
)
from server.follow import follow
from server.lanes import Lane, WatchGate
from store import audit, events, ids, keys, messages
from store import bots as store_bots
from store import groups as store_groups
from store import hosted as store_hosted
from store import matches as store_matches
from store import ratings as store_ratings
from store import tournaments as store_t
from store.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    OutOfRange,
    PermissionDenied,
)
from store.messages import Message, StandingsChanged, TournamentFinished
from store.pools import Pool
from store.rating_tables import RatingTable, StoredMethod
from store.records import StandingsInputs, TournamentSpec
from store.refs import EventKind, EventRef
from store.status import TournamentStatus
from tournaments import apart
from tournaments.spec import make_spec
from tournaments.view import standings
from workers.queues import create_tournament

__all__ = ["RatingServicer", "TournamentServicer"]

log = logging.getLogger("moonshot.referee")

_PAGE = 50
_WATCH_POLL_S = 0.25


class TournamentServicer(tournament_pb2_grpc.TournamentServiceServicer):
    """Thin: decode, call `store` and `tournaments`, encode.

    Organisers (the admin token) follow every result as it is recorded; everyone else
    sees a game's result once its board is released (`store.events`).
    """

    def __init__(self, reads: Lane, watch: Lane, rq_conn: redis.Redis, gate: WatchGate,
                 archived: Archived | None = None) -> None:
        self.reads = reads
        self.watch = watch
        self.rq_conn = rq_conn
        self.gate = gate
        self.archived = archived or Archived("")  # tournaments that ended and left Redis

    async def _load(self, tournament_id: str, lane: Lane | None = None
                    ) -> tuple[TournamentSpec, store_t.TournamentInfo]:
        spec, info, _ = await self._find(tournament_id, lane)
        return spec, info

    async def _find(self, tournament_id: str, lane: Lane | None = None
                    ) -> tuple[TournamentSpec, store_t.TournamentInfo, ArchivedEvent | None]:
        """A tournament from Redis, else from the archive (then with its archived record);
        NotFound from neither."""
        if not tournament_id:
            raise InvalidArgument("tournament_id: required")
        use = lane or self.reads
        try:
            spec = await use.run(store_t.load_spec, tournament_id)
            return spec, await use.run(store_t.info, tournament_id), None
        except NotFound as missing:
            try:  # an id of no possible tournament (`t-abc:events`) is not one: NOT_FOUND
                ref = EventRef.tournament(tournament_id)
            except InvalidArgument:
                raise missing from None
            found = await use.run(lambda _r: self.archived.event(ref))
            if found is None:
                raise
            return TournamentSpec.from_json(found.spec), info_of(found), found

    def _archived_inputs(self, r: redis.Redis, spec: TournamentSpec, e: ArchivedEvent
                         ) -> StandingsInputs:
        """What the standings of an archived tournament are made from: its games' rows
        from the archive, its last state, its own rating; the ratings of its start."""
        rows = self.archived.event_rows(e.ref)
        order = [m for m in e.summary.get("released", []) if m in rows]
        raw_rating = e.summary.get("rating")
        own = None if not raw_rating else RatingTable.from_json(str(raw_rating))
        stream = e.summary.get("stream") or []
        return StandingsInputs(
            results={m: rows[m] for m in order} | rows, state=e.state,
            sequence=int(stream[-1][0]) if stream else 0,
            ratings=store_t.standing_ratings(r, spec),
            own_ratings=None if own is None else {x.bot_id: x.rating for x in own.rows},
            boards=[], redealt=int(e.summary.get("redealt") or 0))

    async def _audience(self, context: grpc.aio.ServicerContext[Any, Any]) -> str:
        admin = caller().is_admin
        return events.ORGANISER if admin else events.PUBLIC

    @staticmethod
    def _reveal(audience: str, info: store_t.TournamentInfo) -> bool:
        """The seed fixes every deal: organisers see it, others once every game is over."""
        return audience == events.ORGANISER or info.status == TournamentStatus.FINISHED

    @unary
    async def CreateTournament(
        self, request: tournament_pb2.CreateTournamentRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> tournament_pb2.CreateTournamentResponse:
        """Validate everything up front, store, and queue the first scheduling step (an
        organiser)."""
        if not request.HasField("spec"):
            raise InvalidArgument("spec: required")
        fields = wire.spec_request_from_pb(request.spec)
        if fields["players"] not in (3, 4):  # before any bot is looked up for its pool
            raise InvalidArgument(f"players: must be 3 or 4, got {fields['players']}")
        who = caller()
        if fields["seed"] is not None and not who.is_admin:  # as CreateMatch's seed
            raise PermissionDenied("spec.seed: the admin's option (whoever picks the deals "
                                   "knows them, and an organiser may own bots that play)")
        bots = await self.reads.run(store_bots.resolve, fields.pop("bot_ids"))
        ratings = await self.reads.run(store_ratings.current_ratings,
                                       Pool.of(fields["players"]))
        keep = {g.name: list(g.bot_ids) for g in request.spec.keep_apart}
        if len(keep) != len(request.spec.keep_apart):
            raise InvalidArgument("keep_apart: two groups of one name")
        named = {name: [b.bot_id for b in await self.reads.run(
            store_bots.resolve, members, f"keep_apart.{name}")] for name, members in keep.items()}
        declared = apart.check_declared(named, [b.bot_id for b in bots])
        stack = await self.reads.run(store_groups.all_groups)
        groups = apart.resolve({b.bot_id: b.owner for b in bots},
                               {apart.stack_name(n): tuple(v) for n, v in stack.items()}
                               | declared)
        await self.reads.run(store_hosted.check_within_hosts, fields["sandbox"],
                             "spec.sandbox")
        spec = make_spec(tournament_id=ids.new_tournament_id(),
                         bots=[(b.bot_id, b.name) for b in bots], ratings=ratings, **fields)
        spec = dataclasses.replace(spec, apart=tuple((g.name, g.bots) for g in groups))
        await self.reads.run(create_tournament, self.rq_conn, spec)
        await self.reads.run(audit.record, who.actor, "create_tournament", spec.tournament_id,
                             spec.name, who.address, [who.author_id] if who.author_id else [])
        _, info = await self._load(spec.tournament_id)
        return tournament_pb2.CreateTournamentResponse(
            tournament_id=spec.tournament_id,
            tournament=wire.tournament_to_pb(spec, info, reveal=who.is_admin))

    @unary
    async def GetTournament(
        self, request: tournament_pb2.GetTournamentRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> tournament_pb2.GetTournamentResponse:
        """A tournament with its progress."""
        spec, info = await self._load(request.tournament_id)
        reveal = self._reveal(await self._audience(context), info)
        return tournament_pb2.GetTournamentResponse(
            tournament=wire.tournament_to_pb(spec, info, reveal))

    @unary
    async def SetGroup(
        self, request: tournament_pb2.SetGroupRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> tournament_pb2.SetGroupResponse:
        """Declare, replace or (no bots) delete a group of the stack (an organiser)."""
        name = request.group.name
        members: list[str] = []
        if request.group.bot_ids:
            field = f"group.{name[:64]}"
            members = [b.bot_id for b in await self.reads.run(
                store_bots.resolve, list(request.group.bot_ids), field)]
            members = list(apart.check_declared({name: members}, None, "group")[name])
        else:
            apart.check_declared({name: ["x", "y"]}, None, "group")  # the name alone
        await self.reads.run(store_groups.set_group, name, members)
        who = caller()
        await self.reads.run(audit.record, who.actor, "set_group", name,
                             ",".join(members) or "deleted", who.address,
                             [who.author_id] if who.author_id else [])
        return tournament_pb2.SetGroupResponse(
            group=tournament_pb2.KeepApart(name=name, bot_ids=members))

    @unary
    async def ListGroups(
        self, request: tournament_pb2.ListGroupsRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> tournament_pb2.ListGroupsResponse:
        """The stack's groups (an organiser)."""
        found = await self.reads.run(store_groups.all_groups)
        if request.bot_id:
            try:
                bot = await self.reads.run(store_bots.find_bot, request.bot_id)
            except NotFound:
                raise NotFound(f"bot_id: no bot with id or name {request.bot_id[:100]!r}"
                               ) from None
            found = {n: b for n, b in found.items() if bot.bot_id in b}
        return tournament_pb2.ListGroupsResponse(groups=[
            tournament_pb2.KeepApart(name=n, bot_ids=b) for n, b in found.items()])

    @unary
    async def ListTournaments(
        self, request: tournament_pb2.ListTournamentsRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> tournament_pb2.ListTournamentsResponse:
        """Tournaments, newest first, a page at a time."""
        size = min(request.page_size or _PAGE, MAX_PAGE)
        wire.check_enum(tournament_pb2.TournamentStatus, request.status, "status",
                        "tournament status")

        def wanted(spec: TournamentSpec, info: store_t.TournamentInfo) -> bool:
            return (not request.status
                    or wire.tournament_to_pb(spec, info, False).status == request.status)

        def load(r: redis.Redis
                 ) -> tuple[list[tuple[TournamentSpec, store_t.TournamentInfo]], str]:
            """Redis's tournaments (running, or ended and not archived yet), newest first,
            then the archive's."""
            token = request.page_token
            out: list[tuple[TournamentSpec, store_t.TournamentInfo]] = []
            before = archive_token(token)
            if before is None:
                found = store_matches.ids_after(r, keys.TOURNAMENTS, token, newest_first=True)
                loaded = ((store_t.load_spec(r, tid), store_t.info(r, tid)) for tid in found)
                page, more = page_of(((spec, info) for spec, info in loaded
                                      if wanted(spec, info)), size)
                if more:
                    return page, store_matches.page_token(r, keys.TOURNAMENTS,
                                                          page[-1][0].tournament_id)
                out = list(page)
            room = size - len(out)
            archived = self.archived.events(EventKind.TOURNAMENT, before, room + 1)
            ended, more = archived[:room], len(archived) > room
            listed = {spec.tournament_id for spec, _ in out}  # in both: a move cut short
            for e in ended:
                spec, info = TournamentSpec.from_json(e.spec), info_of(e)
                if wanted(spec, info) and spec.tournament_id not in listed:
                    out.append((spec, info))
            if not more:
                return out, ""
            return out, f"a:{ended[-1].id if ended else ARCHIVE_TOP}"

        page, token = await self.reads.run(load)
        audience = await self._audience(context)
        out = [wire.tournament_to_pb(spec, info, self._reveal(audience, info))
               for spec, info in page]
        return tournament_pb2.ListTournamentsResponse(tournaments=out, next_page_token=token)

    @unary
    async def GetStandings(
        self, request: tournament_pb2.GetStandingsRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> tournament_pb2.GetStandingsResponse:
        """Standings, crosstable, bracket and progress, over what the caller may see."""
        spec, _, archived = await self._find(request.tournament_id)
        audience = await self._audience(context)
        if archived is None:
            inputs = await self.reads.run(store_t.standings_inputs, spec, audience)
            # Its several reads are no snapshot: an ended tournament that left Redis among
            # them (the move drops it in one transaction, after the archive has it) is read
            # again from the archive, never served half gone.
            if not await self.reads.run(store_t.in_redis, spec.tournament_id):
                spec, _, archived = await self._find(request.tournament_id)
        if archived is not None:
            inputs = await self.reads.run(self._archived_inputs, spec, archived)
        return tournament_pb2.GetStandingsResponse(
            standings=wire.standings_to_pb(standings(spec, inputs)))

    @streaming
    async def WatchTournament(
        self, request: tournament_pb2.WatchTournamentRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[tournament_pb2.WatchTournamentResponse]:
        """Every event after `after_sequence`, then live ones, until the tournament ends."""
        trusted = await self.watch.run(store_bots.trusted_watcher, bearer_token(context),
                                       watch_pass(context))
        with self.gate.enter(context.peer(), trusted):
            async for item in self._watch(request, context):
                yield item

    async def _watch(
        self, request: tournament_pb2.WatchTournamentRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[tournament_pb2.WatchTournamentResponse]:
        spec, _, archived = await self._find(request.tournament_id, self.watch)
        audience = await self._audience(context)
        tid = spec.tournament_id
        after = request.after_sequence
        if archived is not None:  # ended and archived: its public stream, whole
            stream = [(seq, messages.decode(e, messages.TOURNAMENT))
                      for seq, e in archived.stream()]
            newest = stream[-1][0] if stream else 0
        else:
            newest = await self.watch.run(events.newest_seq, tid, audience)
        if after > newest:
            raise OutOfRange(f"after_sequence: {after} is past the tournament's last event "
                             f"so far, {newest}")

        async def read(after: int) -> list[tuple[int, Message]]:
            if archived is not None:
                return [(seq, e) for seq, e in stream if seq > after][:200]
            return await self.watch.run(events.read_after, tid, after, None, 200, audience)

        async def over() -> bool:
            return (await self._load(tid, self.watch))[1].status.over

        async for batch in follow(read, after, _is_end, over, _WATCH_POLL_S):
            extra: dict[str, Any] = {}
            if any(isinstance(e, (StandingsChanged, TournamentFinished)) for _, e in batch):
                # One view per batch: a replayed StandingsChanged carries the current table.
                inputs = await (self.watch.run(self._archived_inputs, spec, archived)
                                if archived is not None else
                                self.watch.run(store_t.standings_inputs, spec, audience))
                extra["standings"] = wire.standings_to_pb(standings(spec, inputs))
            for seq, event in batch:
                if isinstance(event, TournamentFinished):
                    _, info = await self._load(tid, self.watch)
                    extra["tournament"] = wire.tournament_to_pb(
                        spec, info, self._reveal(audience, info))
                yield wire.tournament_event_to_pb(seq, event, extra)


def _is_end(event: Message) -> bool:
    return isinstance(event, TournamentFinished)


class RatingServicer(rating_pb2_grpc.RatingServiceServicer):
    """Ratings per pool, as the fit job stored them."""

    def __init__(self, reads: Lane, archived: Archived | None = None) -> None:
        self.reads = reads
        self.archived = archived or Archived("")

    @unary
    async def GetRatings(
        self, request: rating_pb2.GetRatingsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rating_pb2.GetRatingsResponse:
        """Every rated bot of the pool, best first: the table of the method asked for, or
        by default the fit, or the provisional figure while newer results wait for the
        next fit; with every rating method the pool has (or this referee knows)."""
        pool, pool_pb = _pool(request.pool)
        listed = _methods(await self.reads.run(store_ratings.methods, pool))
        if request.method:
            if request.method not in {m.name for m in listed}:
                raise InvalidArgument(
                    f"method: must be one of {', '.join(m.name for m in listed)}; got "
                    f"{request.method[:40]!r}")
            name = request.method
            table = await self.reads.run(store_ratings.load, pool, name)
        else:
            name, table = await self.reads.run(store_ratings.current_named, pool)
        names = {b.bot_id: b.name for b in await self.reads.run(store_bots.list_bots)}
        games = await self.reads.run(store_matches.pool_size, pool)
        try:
            games += await self.reads.run(
                lambda _r: self.archived.rated_games(Pool.parse(pool)))
        except (ArchiveError, SQLAlchemyError, OSError):  # away: the last fit's count
            games = max(games, table.games if table is not None else 0)
        los = None
        if request.los_matrix and table is not None:
            if table.provisional:
                raise FailedPrecondition("los_matrix: the ratings are provisional until the "
                                         "next fit; ask again in a moment")
            los = await self.reads.run(store_ratings.los_matrix, pool, name)
            if los is None:
                raise FailedPrecondition(
                    f"los_matrix: the {name} method keeps none for this pool (kept for "
                    f"pools of up to {store_ratings.LOS_MAX_BOTS} bots, by methods that "
                    "give it); use each row's los_next")
        return wire.ratings_to_pb(pool_pb, table, names, games, los, name, listed)

    @unary
    async def GetRatingHistory(
        self, request: rating_pb2.GetRatingHistoryRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> rating_pb2.GetRatingHistoryResponse:
        """One bot's points, oldest first: its rating after each fit with new games of it."""
        pool, pool_pb = _pool(request.pool)
        if not request.bot_id:
            raise InvalidArgument("bot_id: required (a bot id or name)")
        try:
            bot = await self.reads.run(store_bots.find_bot, request.bot_id)
        except NotFound:
            raise NotFound(f"no bot with id or name {request.bot_id[:100]!r}") from None
        most = min(request.max_points or _HISTORY, store_ratings.HISTORY_MAX)
        points = await self.reads.run(store_ratings.history, pool, bot.bot_id, most)
        return wire.rating_history_to_pb(pool_pb, bot.bot_id, points)

    @unary
    async def AuditCollusion(
        self, request: rating_pb2.AuditCollusionRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> rating_pb2.AuditCollusionResponse:
        """A pool's collusion audit over its released, rated games (an organiser)."""
        pool, pool_pb = _pool(request.pool)
        alpha = request.alpha or collusion.ALPHA
        if not 0 < alpha < 1:
            raise InvalidArgument(f"alpha: must be in (0, 1), got {alpha}")
        min_shared = request.min_shared or collusion.MIN_SHARED
        if min_shared < 2:
            raise InvalidArgument(f"min_shared: at least 2, got {min_shared}")
        most = min(request.max_pairs or 20, 200)
        # The archive's games too: an archive away answers UNAVAILABLE, never a partial
        # audit that would read as a clean one.
        found = await self.reads.run(lambda _r: self.archived.archive())
        rows = {row["match_id"]: row
                for row in await self.reads.run(store_matches.pool_results, pool)}
        if found is not None:
            for row in await self.reads.run(
                    lambda _r: archive_reads.pool_rows(found, Pool.parse(pool))):
                rows.setdefault(row["match_id"], row)
        result = await self.reads.run(lambda _r: collusion.audit(
            collusion.ScoreTable.from_rows(rows.values()), alpha, min_shared))
        names = {b.bot_id: b.name for b in await self.reads.run(store_bots.list_bots)}
        suspected = result.suspected
        shown = list(suspected) + [p for p in result.pairs
                                   if p.p_adjusted > alpha][:max(most - len(suspected), 0)]
        who = caller()
        await self.reads.run(audit.record, who.actor, "audit_collusion", pool,
                             f"{len(suspected)} suspected of {len(result.pairs)}",
                             who.address, [who.author_id] if who.author_id else [])
        return rating_pb2.AuditCollusionResponse(
            pool=pool_pb, games=result.games, boards=result.boards, bots=result.bots,
            tested=len(result.pairs), untested=result.untested, alpha=alpha,
            min_shared=min_shared, rho=result.rho, suspected=len(suspected),
            meaning=_AUDIT_MEANING, pairs=[rating_pb2.CollusionPair(
                bot_a=p.bot_a, name_a=names.get(p.bot_a, p.bot_a), bot_b=p.bot_b,
                name_b=names.get(p.bot_b, p.bot_b), shared=p.shared, boards=p.boards[:100],
                gain=p.gain, se=p.se, z=p.z, p=p.p, p_adjusted=p.p_adjusted,
                suspected=p.p_adjusted <= alpha) for p in shown])


_HISTORY = 200  # points of a rating history when max_points is unset


def _methods(stored: list[StoredMethod]) -> list[StoredMethod]:
    """The rating methods to list: those this referee knows, in the order the fit runs
    them (with what their stored table covers, if any), then any other with a stored
    table (registered in a worker of another version), by name."""
    have = {m.name: m for m in stored}
    known = [have.get(name) or StoredMethod(name, rating_methods.get(name).title, 0, 0.0)
             for name in rating_methods.names()]
    return known + [m for m in stored if m.name not in set(rating_methods.names())]


_AUDIT_MEANING = (
    "Each pair of bots that sat at different tables of the same boards is tested: their "
    "margins there (points over their opponents') beyond what the deal, their strength "
    "and their opponents' explain, summed over those boards (each board weighed by what "
    "it can tell: none where they held one hand at a board's only two tables). z is about "
    "standard normal for an honest pair; p is one-sided, p_adjusted Holm's step-down over "
    "every pair tested in the pool, each named pair's gain fitted before the rest are "
    "tested again. A pair is suspected when p_adjusted <= alpha: in a pool where no pair "
    "colludes, "
    "an audit names any pair at all at most about alpha of the time. A suspected pair is "
    "evidence to look at (the boards, the games), not a verdict; a colluding pair that "
    "shared few boards may go unseen (power by shared boards: docs/PERFORMANCE.md).")


def _pool(value: int) -> tuple[str, rating_pb2.RatingPool.ValueType]:
    """A request's pool (checked) as the store's name and the enum value it reports."""
    wire.check_enum(rating_pb2.RatingPool, value, "pool", "rating pool",
                    unset="unset means the 3-player pool")
    pool = wire.pool_from_pb(value)
    return pool, wire.pool_to_pb(pool)
