"""TournamentService and RatingService: organisers create tournaments; anyone may follow them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import grpc
import redis
import redis.asyncio as aioredis

from proto.moon.v1 import rating_pb2, rating_pb2_grpc, tournament_pb2, tournament_pb2_grpc
from ratings.elo import EloRating, sequential_elo
from server import wire
from server.edge import bearer_token, page_of, streaming, unary
from store import bots as store_bots
from store import events, ids, keys
from store import matches as store_matches
from store import tournaments as store_t
from store.errors import InvalidArgument, NotFound, OutOfRange
from store.messages import StandingsChanged, TournamentFinished
from store.records import Clock, Faults, TournamentSpec
from store.status import TournamentStatus
from tournaments import formats
from tournaments.spec import make_spec
from tournaments.standings import GameResult
from tournaments.view import StandingsView, build_view
from workers.queues import create_tournament

__all__ = ["RatingServicer", "TournamentServicer", "build_spec", "pool_ratings",
           "standings_view"]

log = logging.getLogger("moonshot.referee")

_PAGE = 50
_WATCH_BLOCK_MS = 1000


class TournamentServicer(tournament_pb2_grpc.TournamentServiceServicer):
    """Thin: decode, call `store` and `tournaments`, encode."""

    def __init__(self, r: redis.Redis, ar: aioredis.Redis, rq_conn: redis.Redis) -> None:
        self.r = r
        self.ar = ar
        self.rq_conn = rq_conn

    def _info(self, tournament_id: str) -> dict[str, str]:
        """The tournament's status hash (status, done, total, timestamps, error)."""
        return store_t.info(self.r, tournament_id)

    async def _load(self, tournament_id: str) -> tuple[TournamentSpec, dict[str, str]]:
        if not tournament_id:
            raise InvalidArgument("tournament_id: required")
        spec = await asyncio.to_thread(store_t.load_spec, self.r, tournament_id)
        return spec, await asyncio.to_thread(self._info, tournament_id)

    async def _reveal(self, context: grpc.aio.ServicerContext[Any, Any],
                      info: dict[str, str]) -> bool:
        """The seed fixes every deal: organisers see it, others once the tournament is over."""
        if TournamentStatus(info.get("status", TournamentStatus.RUNNING)).over:
            return True
        return await asyncio.to_thread(store_bots.is_admin, self.r, bearer_token(context))

    @unary
    async def CreateTournament(
        self, request: tournament_pb2.CreateTournamentRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> tournament_pb2.CreateTournamentResponse:
        """Validate everything up front, store, and queue the first scheduling step (admin)."""
        await asyncio.to_thread(store_bots.check_admin, self.r, bearer_token(context))
        if not request.HasField("spec"):
            raise InvalidArgument("spec: required")
        fields = wire.spec_request_from_pb(request.spec)
        spec = await asyncio.to_thread(lambda: build_spec(self.r, **fields))
        await asyncio.to_thread(create_tournament, self.r, self.rq_conn, spec)
        _, info = await self._load(spec.tournament_id)
        return tournament_pb2.CreateTournamentResponse(
            tournament_id=spec.tournament_id,
            tournament=wire.tournament_to_pb(spec, info, reveal=True))

    @unary
    async def GetTournament(
        self, request: tournament_pb2.GetTournamentRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> tournament_pb2.GetTournamentResponse:
        """A tournament with its progress."""
        spec, info = await self._load(request.tournament_id)
        reveal = await self._reveal(context, info)
        return tournament_pb2.GetTournamentResponse(
            tournament=wire.tournament_to_pb(spec, info, reveal))

    @unary
    async def ListTournaments(
        self, request: tournament_pb2.ListTournamentsRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> tournament_pb2.ListTournamentsResponse:
        """Tournaments, newest first, a page at a time."""
        size = request.page_size or _PAGE
        wire.check_enum(tournament_pb2.TournamentStatus, request.status, "status",
                        "tournament status")

        def load() -> tuple[list[tuple[TournamentSpec, dict[str, str]]], bool]:
            found = store_matches.ids_after(self.r, keys.TOURNAMENTS, request.page_token,
                                            newest_first=True)
            loaded = ((store_t.load_spec(self.r, tid), self._info(tid)) for tid in found)
            return page_of(((spec, info) for spec, info in loaded
                            if not request.status
                            or wire.tournament_to_pb(spec, info, False).status == request.status),
                           size)

        page, more = await asyncio.to_thread(load)
        out = [wire.tournament_to_pb(spec, info, await self._reveal(context, info))
               for spec, info in page]
        return tournament_pb2.ListTournamentsResponse(
            tournaments=out, next_page_token=page[-1][0].tournament_id if more else "")

    @unary
    async def GetStandings(
        self, request: tournament_pb2.GetStandingsRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> tournament_pb2.GetStandingsResponse:
        """Standings, crosstable, bracket and progress."""
        spec, _ = await self._load(request.tournament_id)
        view = await asyncio.to_thread(standings_view, self.r, spec)
        return tournament_pb2.GetStandingsResponse(standings=wire.standings_to_pb(view))

    @streaming
    async def WatchTournament(
        self, request: tournament_pb2.WatchTournamentRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[tournament_pb2.WatchTournamentResponse]:
        """Every event after `after_sequence`, then live ones, until the tournament ends."""
        spec, _ = await self._load(request.tournament_id)
        after = request.after_sequence
        stream = keys.tournament_events(spec.tournament_id)
        newest = await self._newest(stream)
        if after > newest:
            raise OutOfRange(f"after_sequence: {after} is past the tournament's last event "
                             f"so far, {newest}")
        while True:
            reply: Any = await self.ar.xread({stream: f"{after}-0"}, count=200,
                                             block=_WATCH_BLOCK_MS)
            batch = events.parse_entries(reply)
            if not batch:
                _, info = await self._load(spec.tournament_id)
                if TournamentStatus(info.get("status", "running")).over and await self._drained(
                        stream, after):
                    return
                continue
            extra: dict[str, Any] = {}
            if any(isinstance(e, (StandingsChanged, TournamentFinished)) for _, e in batch):
                # One view per batch: a replayed StandingsChanged carries the current table.
                view = await asyncio.to_thread(standings_view, self.r, spec)
                extra["standings"] = wire.standings_to_pb(view)
            for seq, event in batch:
                if isinstance(event, TournamentFinished):
                    _, info = await self._load(spec.tournament_id)
                    extra["tournament"] = wire.tournament_to_pb(spec, info, reveal=True)
                yield wire.tournament_event_to_pb(seq, event, extra)
                after = seq
                if isinstance(event, TournamentFinished):
                    return

    async def _drained(self, stream: str, after: int) -> bool:
        return await self._newest(stream) <= after

    async def _newest(self, stream: str) -> int:
        """The sequence of the newest event in the stream (ids are `<seq>-0`), 0 if none."""
        last: Any = await self.ar.xrevrange(stream, count=1)
        return events.entry_seq(last[0][0]) if last else 0


class RatingServicer(rating_pb2_grpc.RatingServiceServicer):
    """Ratings per pool, computed from the stored results."""

    def __init__(self, r: redis.Redis) -> None:
        self.r = r

    @unary
    async def GetRatings(
        self, request: rating_pb2.GetRatingsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> rating_pb2.GetRatingsResponse:
        """Every rated bot of the pool, best first."""
        wire.check_enum(rating_pb2.RatingPool, request.pool, "pool", "rating pool",
                        unset="unset means the 3-player pool")
        pool = "2v2" if request.pool == rating_pb2.RATING_POOL_TWO_VS_TWO else "3p"
        pool_pb = (rating_pb2.RATING_POOL_TWO_VS_TWO if pool == "2v2"
                   else rating_pb2.RATING_POOL_THREE_PLAYER)
        ratings = await asyncio.to_thread(pool_ratings, self.r, pool)
        names = {b.bot_id: b.name for b in await asyncio.to_thread(store_bots.list_bots, self.r)}
        rows = sorted(((b, names.get(b, b), x.rating, x.games) for b, x in ratings.items()),
                      key=lambda row: (-row[2], row[0]))
        games: int = await asyncio.to_thread(self.r.zcard, keys.results(pool))
        return wire.ratings_to_pb(pool_pb, rows, games)


# ----------------------------------------------------- reading and making


def pool_ratings(r: redis.Redis, pool: str) -> dict[str, EloRating]:
    """Current ratings of a pool (`3p` or `2v2`) by bot id; a malformed stored result is
    logged and left out rather than taking the pool's ratings down with it."""
    rows = []
    for row in store_matches.pool_results(r, pool):
        try:
            GameResult.of(row)
        except InvalidArgument as exc:
            log.error("ratings %s: skipping match %s: %s", pool, row.get("match_id"), exc)
            continue
        rows.append(row)
    return sequential_elo(rows)


def build_spec(
    r: redis.Redis, *, name: str, players: int, format: str, bot_ids: Sequence[str],
    rules: Mapping[str, str], clock: Clock, faults: Faults, rounds: int, series_length: int,
    seed: int | None, duplicate: bool, rotate_partners: bool, seeding: str, all_triples: bool,
) -> TournamentSpec:
    """A checked spec from a request: bots resolved by id or name, seeded by pool rating."""
    if players not in (3, 4):
        raise InvalidArgument(f"players: must be 3 or 4, got {players}")
    records = []
    for i, b in enumerate(bot_ids):
        try:
            records.append(store_bots.find_bot(r, b))
        except NotFound:
            raise InvalidArgument(f"bot_ids[{i}]: no bot with id or name {b!r}") from None
    ratings = None
    if seeding == "rating" and records:
        rated = pool_ratings(r, "3p" if players == 3 else "2v2")
        ratings = {b: x.rating for b, x in rated.items()}
    return make_spec(
        tournament_id=ids.new_tournament_id(), name=name, players=players, format=format,
        bots=[(rec.bot_id, rec.name) for rec in records], rules=rules, clock=clock,
        faults=faults, rounds=rounds, series_length=series_length, seed=seed,
        duplicate=duplicate, rotate_partners=rotate_partners, seeding=seeding,
        all_triples=all_triples, ratings=ratings)


def standings_view(r: redis.Redis, spec: TournamentSpec) -> StandingsView:
    """The current view of a stored tournament: its results and the scheduler's state."""
    results = store_t.results(r, spec.tournament_id)
    state = store_t.state(r, spec.tournament_id)
    if state is None:  # before the first scheduling step: nothing planned yet
        plan = formats.plan(spec, {})
    else:
        plan = formats.get(spec.format).bracket(spec, state["plan"])
        plan.total = int(state["total"])
    elo = sequential_elo(results.values())
    return build_view(spec, results, plan, events.newest_seq(r, spec.tournament_id),
                      {bot: x.rating for bot, x in elo.items()})
