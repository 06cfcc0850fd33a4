"""What the one scheduling step keeps in Redis, for every kind of event alike.

The step (`workers.scheduler`) drives a tournament, a test of a change and an arena
on the same keys (`store.keys.event_*`, under the event's own prefix): the games it
created, the games recorded (finished or failed) in recording order, the games
released, its state with a version (`step_seq` in the event's hash) for the
compare-and-set, its lock, its coalesced asks, when to look again (`wake_at`), and
the set of events still live, which recovery nudges. Nothing here knows a kind: the
planner registry does (`workers.scheduler.PLANNERS`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis

from store import keys, messages
from store.coalesce import Asks
from store.locks import Lock
from store.lua import CREATE_EVENT_LUA, RECORD_LUA, SAVE_STEP_LUA
from store.refs import EventRef

__all__ = [
    "ENDED",
    "QUEUED_S",
    "Ending",
    "Scheduling",
    "Stored",
    "add_live",
    "asks",
    "create",
    "exists",
    "failed_errors",
    "free_lock",
    "live_events",
    "lock_holder",
    "mark_failed",
    "mark_released",
    "note_redealt",
    "record",
    "recorded_after",
    "save",
    "scheduling",
    "state",
    "step_lock",
    "wake_due",
]

QUEUED_S = 30  # a queued step job unheard of this long counts as lost (recovery queues one)


def asks(ref: EventRef) -> Asks:
    """The coalesced asks for the event's step: many asks, one job (`store.coalesce`)."""
    return Asks(keys.event_dirty(ref), keys.event_queued(ref), keys.event_lock(ref), QUEUED_S)


def exists(r: redis.Redis, ref: EventRef) -> bool:
    """Whether Redis holds the event (an ended one leaves whole for the archive)."""
    return bool(r.exists(keys.event(ref)))


def step_lock(ref: EventRef, ttl_ms: int, owner: str = "") -> Lock:
    """A new run's lock on the event's step (one run at a time), naming the worker instance
    that runs it (`owner`), so that recovery can free a dead worker's lock at once."""
    return Lock.fresh(keys.event_lock(ref), ttl_ms, owner)


def lock_holder(r: redis.Redis, ref: EventRef) -> tuple[str, str] | None:
    """(the token, its owner) of the lock a step of the event holds now; None when free."""
    token = r.get(keys.event_lock(ref))
    return None if token is None else (str(token), Lock.owner_of(str(token)))


def free_lock(r: redis.Redis, ref: EventRef, token: str) -> bool:
    """Drop a dead run's lock (only while `token` still holds it) and ask for a step again:
    the dead run may have taken the ask. True when the lock was dropped."""
    if not Lock(keys.event_lock(ref), token, 0).release(r):
        return False
    asks(ref).ask_again(r)
    return True


# ------------------------------------------------------------ recording


def record(r: redis.Redis, ref: EventRef, match_id: str) -> int:
    """Give a finished game its recording number, once; 0 if it had one already."""
    n: Any = r.eval(RECORD_LUA, 2, keys.event_recorded(ref), keys.event(ref), match_id)
    return int(n)


def mark_failed(r: redis.Redis, ref: EventRef, match_id: str) -> int:
    """A game no run can host (recovery gave up on it): noted, then recorded like a finished
    one, so the step folds it in once (its planner says what a failed game means)."""
    r.sadd(keys.event_failed(ref), match_id)
    return record(r, ref, match_id)


def recorded_after(r: redis.Redis, ref: EventRef, cursor: int,
                   limit: int = 5000) -> list[tuple[str, int]]:
    """(match id, recording number) of games recorded after number `cursor`, oldest first."""
    got: Any = r.zrangebyscore(keys.event_recorded(ref), f"({cursor}", "+inf", start=0,
                               num=limit, withscores=True)
    return [(str(mid), int(score)) for mid, score in got]


def failed_errors(r: redis.Redis, ref: EventRef, match_ids: Sequence[str]) -> dict[str, str]:
    """Of `match_ids`, those marked failed, each with the error on its match."""
    if not match_ids:
        return {}
    pipe = r.pipeline(transaction=False)
    for mid in match_ids:
        pipe.sismember(keys.event_failed(ref), mid)
        pipe.hget(keys.match(mid), "error")
    got = pipe.execute()
    return {mid: str(got[2 * i + 1] or "") for i, mid in enumerate(match_ids) if got[2 * i]}


def mark_released(r: redis.Redis, ref: EventRef, match_ids: Sequence[str], first: int) -> None:
    """Add released games to the event's public list, numbered from `first`."""
    if match_ids:
        r.zadd(keys.event_released(ref), {m: first + i for i, m in enumerate(match_ids)},
               nx=True)


def note_redealt(r: redis.Redis, ref: EventRef, unit: str) -> None:
    """Unit `unit` was dealt afresh: another board had been dealt the planned deal."""
    r.sadd(keys.event_redealt(ref), unit)


# ---------------------------------------------------------------- state


@dataclass(frozen=True, slots=True)
class Stored:
    """The step's stored state and its version (0 and None before the first save), with
    what else the last save wrote: the event's status, when to look again, and whether
    recovery nudges it."""

    seq: int
    state: dict[str, Any] | None
    status: str = ""
    wake_at: float | None = None
    live: bool = False

    @property
    def ended(self) -> bool:
        """True once the event finished or failed (a tournament's or a test's status): its
        step starts nothing new, whatever its planner says."""
        return self.status in ENDED


ENDED = ("finished", "failed")  # store.status.TournamentStatus's values that end an event


def state(r: redis.Redis, ref: EventRef) -> Stored:
    """The step's state, with the version a save must find unchanged."""
    pipe = r.pipeline(transaction=True)  # one snapshot: the version of this very state
    pipe.hmget(keys.event(ref), "step_seq", "status", "wake_at")
    pipe.get(keys.event_state(ref))
    pipe.sismember(keys.LIVE_EVENTS, str(ref))
    (seq, status, wake_at), raw, live = pipe.execute()
    return Stored(int(seq or 0), None if raw is None else dict(json.loads(raw)),
                  str(status or ""), float(wake_at) if wake_at else None, bool(live))


@dataclass(frozen=True, slots=True)
class Ending:
    """How an event ends, written with the step's save: its status (a `TournamentStatus`
    value), the error of a failed event, and the end event both audiences get."""

    status: str
    error: str = ""
    event: messages.Message | None = None


def save(r: redis.Redis, ref: EventRef, expected: int, new_state: dict[str, Any], *,
         done: int, total: int, live: bool, wake_at: float | None = None,
         ending: Ending | None = None, archive: Sequence[str] = ()) -> bool:
    """Save the step's state if its version is still `expected`, with the progress, when to
    look again, whether the event is still live, (the first time) its end, and the games
    it released, queued for the archive (`archive`), all in one atomic script
    (`store.lua.SAVE_STEP_LUA`); False when another run saved first (then nothing is
    written)."""
    out: Any = r.eval(
        SAVE_STEP_LUA, 9, keys.event(ref), keys.event_state(ref), keys.LIVE_EVENTS,
        keys.event_stream(ref), keys.event_emitted(ref), keys.event_live(ref),
        keys.event_live_emitted(ref), keys.ARCHIVE_EVENTS, keys.ARCHIVE_PENDING,
        expected, json.dumps(new_state, separators=(",", ":")), done, total,
        ending.status if ending else "", repr(time.time()), ending.error if ending else "",
        str(ref), "finished", messages.encode(ending.event) if ending and ending.event else "",
        "" if wake_at is None else repr(wake_at), "1" if live else "0", repr(time.time()),
        *archive)
    return bool(out)


# ------------------------------------------------------------ creation


def create(r: redis.Redis, ref: EventRef, index: str, spec_json: str, name: str) -> bool:
    """Store a new event, running: its spec, status, listing in `index` and place among the
    live events, in one atomic script; False (nothing written) when the id is taken."""
    return bool(r.eval(CREATE_EVENT_LUA, 3, keys.event(ref), index, keys.LIVE_EVENTS,
                       spec_json, repr(time.time()), name, ref.id, str(ref)))


# ------------------------------------------------------------ recovery


def add_live(r: redis.Redis | Any, ref: EventRef) -> None:
    """The event is live: recovery nudges its step until a save says it is not (`r` may be
    a pipeline, so that an event is created and listed in one transaction)."""
    r.sadd(keys.LIVE_EVENTS, str(ref))


def live_events(r: redis.Redis) -> list[EventRef]:
    """Every event whose step is still owed work (running, or with boards to release)."""
    found: Any = r.smembers(keys.LIVE_EVENTS)
    out = []
    for text in sorted(str(t) for t in found):
        try:
            out.append(EventRef.parse(text))
        except ValueError:
            continue  # not one of ours: never a key
    return out


@dataclass(frozen=True, slots=True)
class Scheduling:
    """What recovery reads to judge whether an event's step is owed a run."""

    games: int  # games created (those the archive dropped from Redis included)
    recorded: int  # games recorded (the last recording number)
    done: int  # games the last save had folded in
    stepping: bool  # a run holds the lock
    asked: bool  # a step was asked for and has not been taken
    queued: bool  # a step job is queued
    wake_at: float | None  # the last save asked to be looked at again then (Redis's clock)


def scheduling(r: redis.Redis, ref: EventRef) -> Scheduling:
    """The event's scheduling, in one round trip."""
    pipe = r.pipeline(transaction=False)
    pipe.zcard(keys.event_games(ref))
    pipe.zcard(keys.event_recorded(ref))
    pipe.hmget(keys.event(ref), "done", "wake_at", "recorded")
    pipe.exists(keys.event_lock(ref))
    pipe.exists(keys.event_dirty(ref))
    pipe.exists(keys.event_queued(ref))
    games, in_set, (done, wake_at, last), locked, dirty, queued = pipe.execute()
    # Games the archive dropped left both sets (`store.archiving.drop`), each of them
    # recorded: the counts are the sets' sizes plus what left.
    recorded = max(int(in_set), int(last or 0))
    gone = recorded - int(in_set)
    return Scheduling(int(games) + gone, recorded, int(done or 0), bool(locked),
                      bool(dirty), bool(queued), float(wake_at) if wake_at else None)


def wake_due(s: Scheduling, now: float) -> bool:
    """True when the event asked to be looked at by `now` and no step is queued or running."""
    return s.wake_at is not None and s.wake_at <= now and not s.queued and not s.stepping
