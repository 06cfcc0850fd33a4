"""The events of a match, derived from its log: what WatchMatch streams, and to whom.

The events are a pure function of the spec, the action log and the connection
log (`ms:match:{id}:conn`), so their sequence numbers never change and a
watcher can resume after any of them. They are built whole, hidden tiles
included; `for_audience` is the one place that decides what each audience may
see of each kind of event:

| event          | public (no token)                        | organiser |
|----------------|------------------------------------------|-----------|
| match_started  | all                                      | all       |
| action_taken   | all but the tile of a discard            | all       |
| fault          | all but a replacement that is a discard  | all       |
| hand_ended     | all (bids, contract, tricks, points)     | all       |
| match_finished | all (the result)                         | all       |

A seat's own bot learns its hidden tiles from its own decision requests, never
from this stream.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from moon import GameState
from moon.actions import ACTIONS, ActionKind
from store import messages
from store.messages import ActionEntry, ConnectionEntry, ForfeitEntry
from store.records import MatchSpec

__all__ = [
    "ActionTaken",
    "Audience",
    "Fault",
    "HandEnded",
    "MatchEvents",
    "MatchFinished",
    "Sight",
    "Started",
    "WatchEvent",
    "for_audience",
    "sight",
]


class Audience(StrEnum):
    """Who is watching."""

    PUBLIC = "public"
    ORGANISER = "organiser"


class Sight(StrEnum):
    """How much of a match a caller may see (see the module doc)."""

    ALL = "all"  # seed, transcript, every event in full for organisers
    LIVE = "live"  # public events as they happen; no seed, no transcript yet
    STATUS = "status"  # that it exists and its status, nothing of its plays


def sight(audience: Audience, *, tournament_game: bool, over: bool, released: bool) -> Sight:
    """How much of a match `audience` may see now (`over`: finished or failed)."""
    if audience is Audience.ORGANISER or released:
        return Sight.ALL
    if tournament_game:
        return Sight.STATUS
    return Sight.ALL if over else Sight.LIVE


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """Base of the events of a match; `time` is unix seconds (0 when not recorded)."""

    time: float


@dataclass(frozen=True, slots=True)
class Started(WatchEvent):
    """The match started."""


@dataclass(frozen=True, slots=True)
class ActionTaken(WatchEvent):
    """A seat acted (or the referee for it); `action` None when hidden from the audience."""

    seat: int
    hand_number: int
    kind: ActionKind
    action: int | None
    actions_played: int


@dataclass(frozen=True, slots=True)
class Fault(WatchEvent):
    """A strike (`late`, `illegal`) or a connection change (`disconnected`,
    `reconnected`) of a seat's bot; `replacement` is the action played instead."""

    seat: int
    kind: str
    replacement: int | None
    strikes: int
    message: str


@dataclass(frozen=True, slots=True)
class HandEnded(WatchEvent):
    """A hand was scored (or redealt after every seat passed)."""

    hand_number: int
    bidder: int | None
    bid: int | None
    trump: str | None
    made: bool | None
    tricks_won: list[int]
    points: list[int]
    scores: list[int]


@dataclass(frozen=True, slots=True)
class MatchFinished(WatchEvent):
    """The match is over (finished or failed)."""

    status: str
    result: dict[str, Any] | None
    error: str


def _hidden(action: int | None) -> bool:
    return action is not None and ACTIONS[action].kind is ActionKind.DISCARD


def for_audience(event: WatchEvent, audience: Audience) -> WatchEvent:
    """The event as `audience` may see it (see the module's table)."""
    if audience is Audience.ORGANISER:
        return event
    if isinstance(event, ActionTaken) and _hidden(event.action):
        return dataclasses.replace(event, action=None)
    if isinstance(event, Fault) and _hidden(event.replacement):
        return dataclasses.replace(event, replacement=None)
    return event


class MatchEvents:
    """Turns log entries into numbered events, incrementally."""

    def __init__(self, spec: MatchSpec, started_at: float = 0.0) -> None:
        self.spec = spec
        self.state = GameState.new(spec.rules, spec.seed, record=True)
        self.consumed = 0  # log entries read so far
        self.conn_consumed = 0  # connection entries read so far
        self.events: list[WatchEvent] = [Started(started_at)]
        self.strikes = [0] * spec.players
        self._waiting: list[ConnectionEntry] = []  # read, not yet placed among the actions

    def feed(self, entries: Sequence[str], conn: Sequence[str] = ()) -> None:
        """Add the events of the next log and connection entries (JSON, in order).

        Read both in one snapshot: a connection entry names the action the match
        waited on, and goes out just before it (or now, if that action is not logged).
        """
        self.conn_consumed += len(conn)
        self._waiting += [messages.decode_as(c, messages.LOG, ConnectionEntry) for c in conn]
        st = self.state
        for raw in entries:
            self.consumed += 1
            e = messages.decode(raw, messages.LOG)
            if isinstance(e, ForfeitEntry):
                continue  # the finish event carries the forfeit
            assert isinstance(e, ActionEntry)
            self._place_connections(e.seq)
            seat, action, when = e.seat, ACTIONS[e.action], e.t / 1000
            if e.by != "bot":
                self.strikes[seat] += 1
                self.events.append(Fault(when, seat,
                                         "late" if e.by == "late" else "illegal",
                                         action.id, self.strikes[seat], e.note))
            hand = st.hand_index
            st.apply_id(action.id)
            self.events.append(ActionTaken(when, seat, hand + 1, action.kind, action.id,
                                           len(st.actions)))
            if st.hand_index > hand or (st.is_over and len(st.hand_log) > hand):
                rec = st.hand_log[hand]
                self.events.append(HandEnded(
                    when, hand + 1, rec["bidder"], rec["bid"], rec["trump"], rec.get("made"),
                    list(rec["tricks_won"]), list(rec.get("points", ())),
                    list(rec.get("scores", ()))))
        self._place_connections(len(st.actions))

    def _place_connections(self, seq: int) -> None:
        """Emit the connection changes that happened while the match waited on action `seq`
        (or an earlier one)."""
        while self._waiting and self._waiting[0].seq <= seq:
            c = self._waiting.pop(0)
            self.events.append(Fault(
                c.t / 1000, c.seat, c.kind, None, self.strikes[c.seat],
                f"the bot of seat {c.seat} {'lost' if c.kind == 'disconnected' else 'regained'}"
                " its connection" + (": the disconnect grace runs"
                                     if c.kind == "disconnected" else "")))

    def finish(self, status: str, result: dict[str, Any] | None, error: str,
               when: float = 0.0) -> None:
        """Add the last event once the match is over."""
        self.events.append(MatchFinished(when, status, result, error))
