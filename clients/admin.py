"""A small synchronous client for organiser calls, used by the CLI and the tests."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

from google.protobuf import json_format

from clients.channel import Target, target_of
from clients.wire import pool_to_pb
from proto.moon.v1 import (
    bot_pb2,
    bot_pb2_grpc,
    game_pb2,
    match_pb2,
    match_pb2_grpc,
    rating_pb2,
    rating_pb2_grpc,
    tournament_pb2,
    tournament_pb2_grpc,
)

__all__ = ["Admin", "options_to_pb"]


class _Options(Protocol):
    """A format's options (`tournaments.options.Options`): what is sent is their JSON form."""

    def to_json(self) -> dict[str, Any]:
        """The JSON form (the proto3 JSON of the format's options message)."""


def options_to_pb(spec: tournament_pb2.TournamentSpec, fmt: str,
                  options: Mapping[str, Any] | _Options | None) -> None:
    """Set the spec's options message for format `fmt` (`format_options.<fmt>`) from the
    options' JSON form, or the options themselves; ValueError for a format or an option
    this client's wire contract does not know (the referee checks the values)."""
    if options is None:
        return
    data = dict(options) if isinstance(options, Mapping) else options.to_json()
    known = {f.name for f in spec.DESCRIPTOR.oneofs_by_name["format_options"].fields}
    if fmt not in known:
        raise ValueError(f"format {fmt!r} has no options message in this client's protocol "
                         f"(it knows {', '.join(sorted(known))})")
    message = getattr(spec, fmt)
    message.SetInParent()
    try:
        json_format.ParseDict(data, message)
    except json_format.ParseError as exc:
        raise ValueError(f"options of {fmt}: {exc}") from None


class Admin:
    """Organiser calls against one referee, with the admin token in metadata."""

    def __init__(self, server: str | Target, token: str | None) -> None:
        self.channel = target_of(server).channel()
        self.token = token
        self.matches = match_pb2_grpc.MatchServiceStub(self.channel)
        self.tournaments = tournament_pb2_grpc.TournamentServiceStub(self.channel)
        self.ratings = rating_pb2_grpc.RatingServiceStub(self.channel)
        self.bots = bot_pb2_grpc.BotServiceStub(self.channel)

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        """The authorization metadata (empty without a token)."""
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()

    def close(self) -> None:
        """Close the channel."""
        self.channel.close()

    def create_match(self, players: int, bot_ids: list[str], seed: int | None = None,
                     rules: Mapping[str, str] | None = None, move_time_ms: int = 2000,
                     time_bank_ms: int = 30000, max_strikes: int = 3,
                     grace_ms: int = 30000) -> match_pb2.Match:
        """Queue one match; return it as stored."""
        req = match_pb2.CreateMatchRequest(
            players=players, bot_ids=bot_ids, rules=dict(rules or {}),
            clock=game_pb2.ClockPolicy(move_time_ms=move_time_ms, time_bank_ms=time_bank_ms),
            faults=game_pb2.FaultPolicy(max_strikes=max_strikes, disconnect_grace_ms=grace_ms),
        )
        if seed is not None:
            req.seed = seed
        resp = self.matches.CreateMatch(req, metadata=self.metadata, timeout=30)
        return resp.match

    def get_match(self, match_id: str) -> match_pb2.Match:
        """One match, as anyone may see it."""
        resp = self.matches.GetMatch(match_pb2.GetMatchRequest(match_id=match_id), timeout=30)
        return resp.match

    def get_match_as_organiser(self, match_id: str) -> match_pb2.Match:
        """One match with everything (the admin token's view)."""
        resp = self.matches.GetMatch(match_pb2.GetMatchRequest(match_id=match_id),
                                     metadata=self.metadata, timeout=30)
        return resp.match

    def wait_match(self, match_id: str, timeout: float = 3600.0,
                   poll: float = 0.2) -> match_pb2.Match:
        """Poll until the match is finished or failed; TimeoutError after `timeout` s."""
        end = time.monotonic() + timeout
        done = (match_pb2.MATCH_STATUS_FINISHED, match_pb2.MATCH_STATUS_FAILED)
        while True:
            match = self.get_match(match_id)
            if match.status in done:
                return match
            if time.monotonic() > end:
                raise TimeoutError(f"match {match_id} not finished after {timeout:g} s")
            time.sleep(poll)

    def create_tournament(self, *, name: str, players: int, format: str, bot_ids: Sequence[str],
                          rules: Mapping[str, str] | None = None,
                          options: Mapping[str, Any] | _Options | None = None,
                          seed: int | None = None, duplicate: str | bool = "boards",
                          seeding: str = "rating",
                          move_time_ms: int = 2000, time_bank_ms: int = 30000,
                          max_strikes: int = 3, grace_ms: int = 30000,
                          keep_apart: Mapping[str, Sequence[str]] | None = None,
                          sandbox: game_pb2.SandboxLimits | None = None,
                          ) -> tournament_pb2.Tournament:
        """Create a tournament (admin); `format` is a registered format name (round_robin,
        swiss, ...), `options` the format's own (their JSON form, e.g. `{"rounds": 2}`, or
        the format's options dataclass), `seeding` rating or given, `duplicate` boards,
        replay or fresh (False: fresh, True: the default, boards)."""
        if isinstance(duplicate, bool):
            duplicate = "boards" if duplicate else "fresh"
        spec = tournament_pb2.TournamentSpec(
            name=name, players=players,
            format=_format_pb(format),
            bot_ids=list(bot_ids), rules=dict(rules or {}),
            duplicate=tournament_pb2.DuplicateMode.Value(f"DUPLICATE_MODE_{duplicate.upper()}"),
            seeding=(tournament_pb2.SEEDING_GIVEN_ORDER if seeding == "given"
                     else tournament_pb2.SEEDING_RATING),
            clock=game_pb2.ClockPolicy(move_time_ms=move_time_ms, time_bank_ms=time_bank_ms),
            faults=game_pb2.FaultPolicy(max_strikes=max_strikes, disconnect_grace_ms=grace_ms),
            sandbox=sandbox,
        )
        if seed is not None:
            spec.seed = seed
        for group, members in (keep_apart or {}).items():
            spec.keep_apart.add(name=group, bot_ids=list(members))
        options_to_pb(spec, format, options)
        resp = self.tournaments.CreateTournament(
            tournament_pb2.CreateTournamentRequest(spec=spec), metadata=self.metadata, timeout=60)
        return resp.tournament

    def get_tournament(self, tournament_id: str) -> tournament_pb2.Tournament:
        """One tournament."""
        return self.tournaments.GetTournament(
            tournament_pb2.GetTournamentRequest(tournament_id=tournament_id),
            metadata=self.metadata, timeout=30).tournament

    def list_tournaments(self, status: tournament_pb2.TournamentStatus.ValueType =
                         tournament_pb2.TOURNAMENT_STATUS_UNSPECIFIED,
                         page_size: int = 200) -> Iterator[tournament_pb2.Tournament]:
        """Every tournament (in `status`, if given), newest first, a page at a time."""
        token = ""
        while True:
            resp = self.tournaments.ListTournaments(tournament_pb2.ListTournamentsRequest(
                page_size=page_size, page_token=token, status=status),
                metadata=self.metadata, timeout=60)
            yield from resp.tournaments
            token = resp.next_page_token
            if not token:
                return

    def standings(self, tournament_id: str, organiser: bool = False
                  ) -> tournament_pb2.Standings:
        """Standings, crosstable and bracket, as the public sees them (released games);
        `organiser`: with the token, over every recorded game."""
        return self.tournaments.GetStandings(
            tournament_pb2.GetStandingsRequest(tournament_id=tournament_id),
            metadata=self.metadata if organiser else (), timeout=60).standings

    def watch(self, tournament_id: str, after: int = 0
              ) -> Iterator[tournament_pb2.WatchTournamentResponse]:
        """The tournament's public events after sequence `after`, until it finishes."""
        yield from self.watch_call(tournament_id, after)

    def watch_call(self, tournament_id: str, after: int = 0, organiser: bool = False) -> Any:
        """The WatchTournament call itself (an iterator of events that can be cancelled);
        `organiser`: with the token, the organiser's stream (each result as recorded)."""
        return self.tournaments.WatchTournament(
            tournament_pb2.WatchTournamentRequest(tournament_id=tournament_id,
                                                  after_sequence=after),
            metadata=self.metadata if organiser else ())

    def list_matches(self, request: match_pb2.ListMatchesRequest, limit: int
                     ) -> Iterator[match_pb2.Match]:
        """Up to `limit` matches of a listing (`request`'s filters), newest first, page by
        page."""
        got = 0
        while got < limit:
            request.page_size = min(limit - got, 1000)
            resp = self.matches.ListMatches(request, metadata=self.metadata, timeout=60)
            for m in resp.matches[:limit - got]:
                got += 1
                yield m
            if not resp.next_page_token or not resp.matches:
                return
            request.page_token = resp.next_page_token

    def get_bot(self, bot: str) -> bot_pb2.Bot:
        """One bot, by id or name."""
        return self.bots.GetBot(bot_pb2.GetBotRequest(bot_id=bot), timeout=30).bot

    def get_ratings(self, pool: str = "3p", method: str = "") -> rating_pb2.GetRatingsResponse:
        """Ratings of a pool (`3p` or `2v2`): the official rating, or the table of rating
        method `method` (as the response's `methods` name them)."""
        return self.ratings.GetRatings(rating_pb2.GetRatingsRequest(pool=_pool(pool),
                                                                    method=method),
                                       timeout=60)

    def audit_collusion(self, pool: str = "3p", alpha: float = 0.0, min_shared: int = 0,
                        max_pairs: int = 0) -> rating_pb2.AuditCollusionResponse:
        """A pool's collusion audit (an organiser's token); 0 for a default."""
        return self.ratings.AuditCollusion(rating_pb2.AuditCollusionRequest(
            pool=_pool(pool), alpha=alpha, min_shared=min_shared, max_pairs=max_pairs),
            metadata=self.metadata, timeout=300)

    def set_group(self, name: str, bot_ids: Sequence[str]) -> tournament_pb2.KeepApart:
        """Declare (no bots: delete) a group of the stack kept apart on boards."""
        return self.tournaments.SetGroup(tournament_pb2.SetGroupRequest(
            group=tournament_pb2.KeepApart(name=name, bot_ids=list(bot_ids))),
            metadata=self.metadata, timeout=30).group

    def list_groups(self) -> list[tournament_pb2.KeepApart]:
        """The stack's groups."""
        return list(self.tournaments.ListGroups(tournament_pb2.ListGroupsRequest(),
                                                metadata=self.metadata, timeout=30).groups)

    def rating_history(self, bot: str, pool: str = "3p",
                       max_points: int = 1000) -> rating_pb2.GetRatingHistoryResponse:
        """A bot's (id or name) rating after each fit with new games of it, oldest first."""
        return self.ratings.GetRatingHistory(rating_pb2.GetRatingHistoryRequest(
            pool=_pool(pool), bot_id=bot, max_points=max_points), timeout=60)


def _format_pb(name: str) -> tournament_pb2.TournamentFormat.ValueType:
    """The enum value of a format (TOURNAMENT_FORMAT_<NAME>), UNSPECIFIED for an unknown one
    (the referee then says which formats exist)."""
    try:
        return tournament_pb2.TournamentFormat.Value(f"TOURNAMENT_FORMAT_{name.upper()}")
    except ValueError:
        return tournament_pb2.TOURNAMENT_FORMAT_UNSPECIFIED


def _pool(name: str) -> rating_pb2.RatingPool.ValueType:
    """A pool's name (`3p`, `2v2`) as the wire's enum."""
    return pool_to_pb(name)
