"""What the scheduling step drives: a planner, behind one small interface.

`workers.scheduler` owns the machinery every event that creates games needs: one
run at a time (a lock, and coalesced asks: `store.coalesce`), a cursor over the
games recorded, the state saved by compare-and-set with the event's end in the same
atomic write, games decided in the saved state and only then created (so a run lost
anywhere creates nothing twice and loses nothing), every board dealt through the
stack's secret and each bot's record (`store.deals`), boards released once all
their games have finished, events emitted once each, when to look again, and the
recovery nudges. A planner says only what is its own: how to plan (first step, then
feed it the new results), how to build a game's match spec, and what else to write
or announce.

Three planners exist, one per `store.refs.EventKind`, registered in
`workers.scheduler.PLANNERS`: a tournament (`workers.scheduler.FormatPlanner`, its
format plans), a test of a change (`workers.changes.ChangePlanner`) and the arena of
a pool (`workers.arena.ArenaPlanner`). A new kind of event is one planner, one kind
and one registry entry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import redis

from store.records import MatchSpec
from store.refs import EventRef
from tournaments.plan import Game

__all__ = ["Planned", "Planner"]


@dataclass(frozen=True, slots=True)
class Planned:
    """What one planning call gives.

    - `state`: the planner's new state (JSON);
    - `games`: the games to create now (their seeds are the planned ones: the step deals
      each unit through the stack's secret);
    - `total`: the games planned so far (for progress), `finished`: the event is over;
    - `error`: the event cannot go on (it ends FAILED with this);
    - `wake_at`: look again then (Redis's clock) even if nothing asks;
    - `dormant`: the event wants no step unless asked (a stopped arena): once its boards
      are all released, recovery stops nudging it;
    - `asks`: other events to ask to look again after this pass (a test of a change that
      starts or stops wanting pairs changes the others' share of the stack).
    """

    state: dict[str, Any]
    games: list[Game]
    total: int
    finished: bool
    error: str = ""
    wake_at: float | None = None
    dormant: bool = False
    asks: tuple[EventRef, ...] = ()


class Planner(Protocol):
    """An event that owns games, as the scheduling step drives it."""

    @property
    def ref(self) -> EventRef:
        """The event."""

    @property
    def players(self) -> int:
        """3 or 4."""

    @property
    def rated(self) -> bool:
        """True when released games join the pool's ratings."""

    @property
    def streams(self) -> bool:
        """True when the event keeps event streams (results released, its end)."""

    def first(self, r: redis.Redis) -> Planned:
        """The first step: nothing recorded yet."""

    def feed(self, r: redis.Redis, state: dict[str, Any], rows: Sequence[dict[str, Any]],
             failed: Mapping[str, str]) -> Planned:
        """Fold newly recorded games (each once) into the stored state: the result rows of
        those that finished, and `failed` (match id -> error) for those no run could host."""

    def board_of(self, unit: str) -> str:
        """The board id of a unit (what its games' deal is claimed for and shown as)."""

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
