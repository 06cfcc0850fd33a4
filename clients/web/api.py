"""The web pages' only source: the referee's public gRPC API, over one asyncio channel.

Every call of the public pages goes without any token, so they show exactly what the
API shows to anyone: a tournament game whose board is still in play is only its existence and
its status (the referee cuts it; nothing here could put it back). The web server
never reads Redis. Its watch streams carry the stack's watch pass when it was given
one (`MOONSHOT_WATCH_PASS`, which `moonshot up` sets): the referee keeps watch slots in
reserve for it, so no client holding many addresses can starve the live pages. The
pass grants nothing else. The private pages (`clients.web.private`) make their calls
with the token the visitor's browser sent with the request, and keep it nowhere.
"""

from __future__ import annotations

from collections.abc import AsyncIterable

import grpc

from clients.channel import Target, target_of
from clients.wire import POOL_CHOICES, pool_to_pb
from proto.moon.v1 import (
    account_pb2,
    account_pb2_grpc,
    arena_pb2,
    arena_pb2_grpc,
    bot_pb2,
    bot_pb2_grpc,
    change_pb2,
    change_pb2_grpc,
    match_pb2,
    match_pb2_grpc,
    rating_pb2,
    rating_pb2_grpc,
    tournament_pb2,
    tournament_pb2_grpc,
)

__all__ = ["CALL_TIMEOUT_S", "POOLS", "PublicApi", "is_gone", "is_unreachable"]

CALL_TIMEOUT_S = 10.0  # seconds for a unary call: a page waits no longer for the referee
POOLS = {p: pool_to_pb(p) for p in POOL_CHOICES}
HISTORY_POINTS = 1000  # all a bot keeps per pool: a chart of its whole rated life
_CHANNEL_OPTIONS = [
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
]
_UNREACHABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                grpc.StatusCode.RESOURCE_EXHAUSTED)


def _bearer(token: str) -> tuple[tuple[str, str], ...]:
    """The metadata of a call made with a visitor's own token (none without one)."""
    return (("authorization", f"Bearer {token}"),) if token else ()


def is_gone(exc: grpc.RpcError) -> bool:
    """An id the referee does not know or refuses (NOT_FOUND, INVALID_ARGUMENT): a 404."""
    code = exc.code() if isinstance(exc, grpc.aio.AioRpcError) else None
    return code in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT)


def is_unreachable(exc: grpc.RpcError) -> bool:
    """The referee did not answer, or is too busy to: a 503, worth retrying."""
    code = exc.code() if isinstance(exc, grpc.aio.AioRpcError) else None
    return code in _UNREACHABLE


class PublicApi:
    """The calls the pages make, as a caller without any token."""

    def __init__(self, server: str | Target, watch_pass: str | None = None) -> None:
        target = target_of(server)
        self.watch_metadata = (("x-moonshot-watch-pass", watch_pass),) if watch_pass else ()
        self.server = target.address
        self.channel = target.aio_channel(_CHANNEL_OPTIONS)
        self.matches = match_pb2_grpc.MatchServiceStub(self.channel)
        self.tournaments = tournament_pb2_grpc.TournamentServiceStub(self.channel)
        self.ratings = rating_pb2_grpc.RatingServiceStub(self.channel)
        self.bots = bot_pb2_grpc.BotServiceStub(self.channel)
        self.tests = change_pb2_grpc.TestServiceStub(self.channel)
        self.arenas = arena_pb2_grpc.ArenaServiceStub(self.channel)
        self.accounts = account_pb2_grpc.AccountServiceStub(self.channel)

    async def close(self) -> None:
        """Close the channel (open streams end CANCELLED)."""
        await self.channel.close(grace=None)

    # ------------------------------------------------------------ tournaments

    async def list_tournaments(self, page_token: str = "", page_size: int = 50
                               ) -> tournament_pb2.ListTournamentsResponse:
        """One page of tournaments, newest first."""
        return await self.tournaments.ListTournaments(
            tournament_pb2.ListTournamentsRequest(page_size=page_size, page_token=page_token),
            timeout=CALL_TIMEOUT_S)

    async def tournament(self, tournament_id: str) -> tournament_pb2.Tournament:
        """One tournament."""
        resp = await self.tournaments.GetTournament(
            tournament_pb2.GetTournamentRequest(tournament_id=tournament_id),
            timeout=CALL_TIMEOUT_S)
        return resp.tournament

    async def standings(self, tournament_id: str) -> tournament_pb2.Standings:
        """Its standings, crosstable and bracket now (released games only)."""
        resp = await self.tournaments.GetStandings(
            tournament_pb2.GetStandingsRequest(tournament_id=tournament_id),
            timeout=CALL_TIMEOUT_S)
        return resp.standings

    def watch_tournament(self, tournament_id: str, after: int
                         ) -> AsyncIterable[tournament_pb2.WatchTournamentResponse]:
        """Its public events after sequence `after`, until it finishes."""
        return self.tournaments.WatchTournament(tournament_pb2.WatchTournamentRequest(
            tournament_id=tournament_id, after_sequence=after), metadata=self.watch_metadata)

    # ------------------------------------------------------------------ tests

    async def list_tests(self, page_token: str = "", page_size: int = 50, author: str = ""
                         ) -> change_pb2.ListTestsResponse:
        """One page of tests of a change, newest first (only those `author` started, an
        author's id or name)."""
        return await self.tests.ListTests(
            change_pb2.ListTestsRequest(page_size=page_size, page_token=page_token,
                                        author=author),
            timeout=CALL_TIMEOUT_S)

    async def test(self, test_id: str, with_pairs: bool = False, pairs_after: int = 0
                   ) -> change_pb2.GetTestResponse:
        """One test, with a page of its counted pairs if asked."""
        return await self.tests.GetTest(
            change_pb2.GetTestRequest(test_id=test_id, with_pairs=with_pairs,
                                      pairs_after=pairs_after), timeout=CALL_TIMEOUT_S)

    def watch_test(self, test_id: str, after: int
                   ) -> AsyncIterable[change_pb2.WatchTestResponse]:
        """Its events after sequence `after`, until it ends."""
        return self.tests.WatchTest(change_pb2.WatchTestRequest(
            test_id=test_id, after_sequence=after), metadata=self.watch_metadata)

    # ---------------------------------------------------------------- matches

    async def match(self, match_id: str) -> match_pb2.Match:
        """One match, as the public sees it."""
        resp = await self.matches.GetMatch(match_pb2.GetMatchRequest(match_id=match_id),
                                           timeout=CALL_TIMEOUT_S)
        return resp.match

    async def list_matches(self, *, tournament_id: str = "", bot_id: str = "",
                           page_token: str = "", page_size: int = 50, test_id: str = "",
                           arena: str = ""
                           ) -> match_pb2.ListMatchesResponse:
        """One page of matches, newest first, without transcripts."""
        return await self.matches.ListMatches(
            match_pb2.ListMatchesRequest(tournament_id=tournament_id, bot_id=bot_id,
                                         page_token=page_token, page_size=page_size,
                                         test_id=test_id, arena=arena),
            timeout=CALL_TIMEOUT_S)

    async def arena(self, pool: str) -> arena_pb2.Arena:
        """The arena of a pool (NOT_FOUND when it never started)."""
        resp = await self.arenas.GetArena(arena_pb2.GetArenaRequest(pool=POOLS[pool]),
                                          timeout=CALL_TIMEOUT_S)
        return resp.arena

    def watch_match(self, match_id: str, after: int
                    ) -> AsyncIterable[match_pb2.WatchMatchResponse]:
        """Its public events after sequence `after`, until it ends."""
        return self.matches.WatchMatch(
            match_pb2.WatchMatchRequest(match_id=match_id, after_sequence=after),
            metadata=self.watch_metadata)

    # ------------------------------------------------------------ bots, ratings

    async def bot(self, bot_id_or_name: str, token: str = "") -> bot_pb2.Bot:
        """One bot, by id or name; with the visitor's own `token` (a private page's: see
        `who_am_i`), what the referee shows that caller (a hosted version's log, to its
        author)."""
        resp = await self.bots.GetBot(bot_pb2.GetBotRequest(bot_id=bot_id_or_name),
                                      metadata=_bearer(token), timeout=CALL_TIMEOUT_S)
        return resp.bot

    async def list_bots(self, page_token: str = "", page_size: int = 100, owner: str = ""
                        ) -> bot_pb2.ListBotsResponse:
        """One page of bots, oldest first (only the bots of `owner`, an author's id or
        name)."""
        return await self.bots.ListBots(
            bot_pb2.ListBotsRequest(page_size=page_size, page_token=page_token, owner=owner),
            timeout=CALL_TIMEOUT_S)

    # ---------------------------------------------------------------- authors

    async def author(self, author_id_or_name: str) -> account_pb2.Author:
        """One author's public record (name, role, since when, bots), by id or name."""
        resp = await self.accounts.GetAuthor(
            account_pb2.GetAuthorRequest(author=author_id_or_name), timeout=CALL_TIMEOUT_S)
        return resp.author

    async def list_authors(self, page_token: str = "", page_size: int = 100
                           ) -> account_pb2.ListAuthorsResponse:
        """One page of authors, oldest first."""
        return await self.accounts.ListAuthors(
            account_pb2.ListAuthorsRequest(page_size=page_size, page_token=page_token),
            timeout=CALL_TIMEOUT_S)

    async def get_ratings(self, pool: str, method: str = "") -> rating_pb2.GetRatingsResponse:
        """The ratings of a pool, `3p` or `2v2`: the official rating, or rating method
        `method`'s table."""
        return await self.ratings.GetRatings(
            rating_pb2.GetRatingsRequest(pool=POOLS[pool], method=method),
            timeout=CALL_TIMEOUT_S)

    async def audit_collusion(self, pool: str, token: str
                              ) -> rating_pb2.AuditCollusionResponse:
        """A pool's collusion audit with the token the organiser's browser sent (the web
        server holds none of its own)."""
        return await self.ratings.AuditCollusion(
            rating_pb2.AuditCollusionRequest(pool=POOLS[pool], max_pairs=50),
            metadata=_bearer(token), timeout=300)

    async def who_am_i(self, token: str) -> account_pb2.WhoAmIResponse:
        """Whom the token a visitor's browser sent names (UNAUTHENTICATED: no one)."""
        return await self.accounts.WhoAmI(account_pb2.WhoAmIRequest(),
                                          metadata=_bearer(token), timeout=CALL_TIMEOUT_S)

    async def rating_history(self, pool: str, bot_id: str
                             ) -> rating_pb2.GetRatingHistoryResponse:
        """A bot's rating after each fit with new games of it, oldest first."""
        return await self.ratings.GetRatingHistory(
            rating_pb2.GetRatingHistoryRequest(pool=POOLS[pool], bot_id=bot_id,
                                               max_points=HISTORY_POINTS),
            timeout=CALL_TIMEOUT_S)
