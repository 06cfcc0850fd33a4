"""Which event owns a game: one typed reference, `EventRef` (kind and id).

Three kinds of event create games, and the one scheduling step (`workers.scheduler`)
drives each through its planner: a tournament (`t-...`), a test of a change
(`c-...`) and the arena of a rating pool (named by the pool, `3p` or `2v2`). A match
carries the reference of the event that made it (`store.records.MatchSpec.event`);
whatever must happen when one of its games is recorded, fails or is released is
found by the reference's kind, in one registry, never by parsing the id.

Its text form, `<kind>:<id>` (`tournament:t-0a1b2c3d4e`, `arena:3p`), is what jobs
and stored specs carry; a bare tournament or test id still parses (what was stored
before the reference existed).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from store import ids
from store.errors import InvalidArgument
from store.pools import Pool

__all__ = ["EventKind", "EventRef"]


class EventKind(StrEnum):
    """The kinds of event that own games (the values are what Redis holds)."""

    TOURNAMENT = "tournament"
    TEST = "test"  # a test of a change
    ARENA = "arena"

    @property
    def streams(self) -> bool:
        """True for the kinds whose watchers follow an event stream (tournaments and tests:
        `store.events`); the arena's page reads its state instead, so a ladder that never
        ends keeps no stream that grows with every game."""
        return self is not EventKind.ARENA

    @property
    def transcript_field(self) -> str:
        """The field of a `moon-transcript/1` record that names an event of this kind."""
        return {EventKind.TOURNAMENT: "tournament_id", EventKind.TEST: "test_id",
                EventKind.ARENA: "arena"}[self]


def _valid(kind: EventKind, event_id: str) -> bool:
    if kind is EventKind.TOURNAMENT:
        return ids.is_tournament_id(event_id)
    if kind is EventKind.TEST:
        return ids.is_test_id(event_id)
    return event_id in set(Pool)


@dataclass(frozen=True, slots=True)
class EventRef:
    """The event that owns a game: its kind and its id (an arena's id is its pool)."""

    kind: EventKind
    id: str

    def __post_init__(self) -> None:
        if not _valid(self.kind, self.id):
            raise InvalidArgument(f"{self.id[:100]!r} is not the id of a {self.kind}")

    def __str__(self) -> str:
        return f"{self.kind}:{self.id}"

    @staticmethod
    def tournament(tournament_id: str) -> EventRef:
        """A tournament's reference."""
        return EventRef(EventKind.TOURNAMENT, tournament_id)

    @staticmethod
    def test(test_id: str) -> EventRef:
        """A test of a change's reference."""
        return EventRef(EventKind.TEST, test_id)

    @staticmethod
    def arena(pool: str) -> EventRef:
        """The reference of a pool's arena."""
        return EventRef(EventKind.ARENA, str(Pool.parse(pool)))

    @staticmethod
    def of_id(event_id: str) -> EventRef:
        """The reference of a tournament or test id (their forms differ); InvalidArgument
        for anything else."""
        if ids.is_test_id(event_id):
            return EventRef.test(event_id)
        if ids.is_tournament_id(event_id):
            return EventRef.tournament(event_id)
        raise InvalidArgument(f"{event_id[:100]!r} is not a tournament or test id")

    @staticmethod
    def parse(text: str) -> EventRef:
        """Inverse of `str`; a bare tournament or test id reads too. InvalidArgument for
        anything else."""
        kind, sep, event_id = text.partition(":")
        if not sep:
            return EventRef.of_id(text)
        try:
            return EventRef(EventKind(kind), event_id)
        except ValueError:
            raise InvalidArgument(f"{kind[:40]!r} is not a kind of event") from None
