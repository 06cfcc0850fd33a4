"""A small synchronous client for organiser calls, used by the CLI and the tests."""

from __future__ import annotations

import time
from collections.abc import Mapping

import grpc

from proto.moon.v1 import game_pb2, match_pb2, match_pb2_grpc

__all__ = ["Admin"]


class Admin:
    """Organiser calls against one referee, with the admin token in metadata."""

    def __init__(self, server: str, token: str | None) -> None:
        self.channel = grpc.insecure_channel(server)
        self.token = token
        self.matches = match_pb2_grpc.MatchServiceStub(self.channel)

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
        """One match."""
        resp = self.matches.GetMatch(match_pb2.GetMatchRequest(match_id=match_id), timeout=30)
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
