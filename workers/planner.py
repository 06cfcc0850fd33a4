"""What the scheduling step drives: a planner, behind one small interface.

`workers.scheduler` owns the machinery every event that creates games needs: one
run at a time (a lock and a dirty flag), a cursor over the games recorded, the
planner's state saved by compare-and-set, games created idempotently and dealt
through the stack's secret and each bot's record (`store.deals`), boards released
once all their games have finished, events emitted once each, and the recovery
nudges. A planner says only what is its own: how to plan (first step, then feed
it the new results), how to build a game's match spec, and what else to write or
announce. Two planners exist: a tournament format (`workers.scheduler.FormatPlanner`)
and a test of a change (`workers.changes.ChangePlanner`); the arena is meant to be
a third.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import redis

from store.records import MatchSpec
from tournaments.plan import Game

__all__ = ["Planned", "Planner"]


@dataclass(frozen=True, slots=True)
class Planned:
    """What one planning call gives: the planner's new state (JSON), the games to create
    now, the games planned so far (for progress) and whether the event is over."""

    state: dict[str, Any]
    games: list[Game]
    total: int
    finished: bool


class Planner(Protocol):
    """A tournament format or a test of a change, as the scheduling step drives it."""

    @property
    def event_id(self) -> str:
        """The tournament's or test's id."""

    @property
    def players(self) -> int:
        """3 or 4."""

    @property
    def rated(self) -> bool:
        """True when released games join the pool's ratings."""

    @property
    def voids_failed(self) -> bool:
        """True when a game that cannot be hosted (RQ gave up on it) is the planner's to
        take in (a test voids its pair), False when it fails the event."""

    def first(self, r: redis.Redis) -> Planned:
        """The first step: nothing recorded yet."""

    def feed(self, r: redis.Redis, state: dict[str, Any],
             rows: Sequence[dict[str, Any]]) -> Planned:
        """Fold newly recorded result rows (each once) into the stored state."""

    def match_spec(self, game: Game, seed: int) -> MatchSpec:
        """The match a planned game is created as, dealt `seed`."""

    def recorded(self, r: redis.Redis, fresh: Sequence[tuple[str, dict[str, Any]]],
                 cursor: int, planned: Planned) -> None:
        """Newly recorded results, before their boards are released (organisers' events)."""

    def released(self, r: redis.Redis, rq_conn: redis.Redis, count: int,
                 planned: Planned) -> None:
        """Games were released this step (`count` released in all so far)."""

    def bookkeep(self, r: redis.Redis, planned: Planned) -> None:
        """The planner's own idempotent writes of this step, before its state is saved."""
