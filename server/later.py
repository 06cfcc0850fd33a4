"""Services whose RPCs are defined in the protocol but not built yet: they say so."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc

from proto.moon.v1 import rating_pb2_grpc, tournament_pb2_grpc

__all__ = ["RatingServicer", "TournamentServicer"]


async def _later(context: grpc.aio.ServicerContext[Any, Any], what: str) -> None:
    """End the call with UNIMPLEMENTED (abort raises)."""
    await context.abort(
        grpc.StatusCode.UNIMPLEMENTED,
        f"{what} is part of the protocol but not built in this release of moonshot yet",
    )


class TournamentServicer(tournament_pb2_grpc.TournamentServiceServicer):
    """TournamentService: every RPC answers UNIMPLEMENTED for now."""

    async def CreateTournament(self, request: Any, context: Any) -> Any:
        """Not built yet."""
        await _later(context, "TournamentService.CreateTournament")

    async def GetTournament(self, request: Any, context: Any) -> Any:
        """Not built yet."""
        await _later(context, "TournamentService.GetTournament")

    async def ListTournaments(self, request: Any, context: Any) -> Any:
        """Not built yet."""
        await _later(context, "TournamentService.ListTournaments")

    async def GetStandings(self, request: Any, context: Any) -> Any:
        """Not built yet."""
        await _later(context, "TournamentService.GetStandings")

    async def WatchTournament(self, request: Any, context: Any) -> AsyncIterator[Any]:
        """Not built yet."""
        await _later(context, "TournamentService.WatchTournament")
        yield None


class RatingServicer(rating_pb2_grpc.RatingServiceServicer):
    """RatingService: answers UNIMPLEMENTED for now."""

    async def GetRatings(self, request: Any, context: Any) -> Any:
        """Not built yet."""
        await _later(context, "RatingService.GetRatings")
