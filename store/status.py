"""Status enums of stored records (the values are what Redis holds)."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["MatchStatus", "TournamentStatus"]


class MatchStatus(StrEnum):
    """Where a match is in its life."""

    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"

    @property
    def over(self) -> bool:
        """True for a finished or failed match."""
        return self in (MatchStatus.FINISHED, MatchStatus.FAILED)


class TournamentStatus(StrEnum):
    """Where a tournament is in its life."""

    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"

    @property
    def over(self) -> bool:
        """True for a finished or failed tournament."""
        return self is not TournamentStatus.RUNNING
