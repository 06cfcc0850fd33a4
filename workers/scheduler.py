"""The one scheduling step of every event that owns games, as an RQ job: load what
changed, call the event's planner, store.

`advance(r, rq_conn, ref)` runs whenever the event is asked to look again: a game of
it was recorded (finished, or failed for good), a bot of the arena joined or came
back, an organiser created or stopped it, its last pass asked to be woken at a time,
or recovery nudged it. Asks are coalesced (`store.coalesce`: many asks, one queued
job, which loops while asks keep coming, at most MAX_PASSES passes before it yields
the control queue to other jobs), and runs of one event are serialized by a lock.

One pass (`_advance_once`):

1. reads the step's state and its version, and the games recorded since its cursor
   (their result rows, or the errors of those no run could host);
2. asks the event's planner (`PLANNERS`, by the kind of `store.refs.EventRef`) to
   plan: its first step, or the new games after folding those in;
3. creates what an earlier pass decided and may not have created;
4. releases the boards the recorded games complete (their games become public, join
   the pool's ratings if the planner's games are rated, and go out on the public
   stream) before anything paired from them exists;
5. deals each new unit through the stack's secret, claimed on the stack's record of
   deals (`store.deals`, one round trip for all), and builds the games' match specs;
6. saves the new state, with the games decided, the progress, when to look again and,
   the first time, the event's end (status and end event together), in one atomic
   compare-and-set (`store.steps.save`);
7. only then creates and queues the games.

So a pass killed anywhere is simply redone: before the save nothing it decided
exists (a deal it claimed stays claimed by its board, which a redo within the hour
deals again if it forms that board again: an arena's redo may seat other bots on
another board, and the claim is then never played), after it the games are created by
this pass or the next; events are written once each (by key), and the end of an event
is never half written. A pass costs what changed, never the size of the event.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from store import deals, events, messages, steps
from store import matches as store_matches
from store import tournaments as store_t
from store.records import MatchSpec, TournamentSpec
from store.refs import EventKind, EventRef
from store.status import TournamentStatus
from tournaments import formats
from tournaments.apart import APART_UNIT, apart_note
from tournaments.plan import Game, Step, Unit, board_id, board_label
from workers import failpoints, metrics
from workers.arena import ArenaPlanner
from workers.changes import ChangePlanner
from workers.planner import Planned, Planner
from workers.queues import (
    enqueue_advance,
    enqueue_match,
    request_archive,
    request_fit,
    request_step,
)

__all__ = ["LOCK_MS", "MAX_PASSES", "PLANNERS", "Boards", "FormatPlanner", "RedisSource",
           "advance", "planner_of"]

log = logging.getLogger("moonshot.tournament")

LOCK_MS = 30_000  # extended after every pass (a first step of 1000 bots takes ~8 s); a dead
# run's lock lapses this soon
MAX_PASSES = 8  # passes a job makes before it yields the control queue to other jobs
_RESULT_KEYS = ("final", "winner", "placement", "end", "forfeit", "seats")


@dataclass
class RedisSource:
    """A tournament's fixed schedule, read from Redis a slice at a time."""

    r: redis.Redis
    spec: TournamentSpec

    def units(self, start: int, stop: int) -> list[Unit]:
        """Units `start` to `stop` - 1 of the stored schedule."""
        return [Unit.from_json(self.spec, u)
                for u in store_t.read_schedule(self.r, self.spec.tournament_id, start, stop)]

    def size(self) -> tuple[int, int]:
        """(units, games) of the stored schedule; (0, 0) when there is none."""
        return store_t.schedule_size(self.r, self.spec.tournament_id) or (0, 0)


@dataclass
class FormatPlanner:
    """A tournament, planned by its format (`tournaments.formats`)."""

    spec: TournamentSpec
    rated: bool = True
    streams: bool = True

    @property
    def ref(self) -> EventRef:
        """The tournament."""
        return EventRef.tournament(self.spec.tournament_id)

    @property
    def players(self) -> int:
        """3 or 4."""
        return self.spec.players

    @staticmethod
    def load(r: redis.Redis, ref: EventRef) -> FormatPlanner:
        """The planner of a stored tournament."""
        return FormatPlanner(store_t.load_spec(r, ref.id))

    def first(self, r: redis.Redis) -> Planned:
        """Store the fixed schedule (if the format has one), then the format's first step."""
        spec = self.spec
        fmt = formats.get(spec.format)
        schedule = fmt.schedule(spec)
        if schedule is not None:
            store_t.write_schedule(r, spec.tournament_id, (u.to_json(spec) for u in schedule),
                                   sum(len(u.games) for u in schedule))
        return self._planned(formats.start(spec, RedisSource(r, spec)))

    def feed(self, r: redis.Redis, state: dict[str, Any], rows: Sequence[dict[str, Any]],
             failed: Mapping[str, str]) -> Planned:
        """The format folds the new results in; a game no run can host fails the
        tournament (its standings would not mean what they say)."""
        planned = self._planned(formats.feed(self.spec, state, list(rows),
                                             RedisSource(r, self.spec)))
        if failed:
            mid = min(failed)
            return Planned(planned.state, [], planned.total, planned.finished,
                           error=f"match {mid} cannot be played: {failed[mid]}")
        return planned

    @staticmethod
    def _planned(step: Step) -> Planned:
        return Planned(step.state, step.games, step.total, step.finished)

    def board_of(self, unit: str) -> str:
        """`<tournament id>/<unit>`."""
        return board_id(self.spec.tournament_id, unit)

    def match_spec(self, game: Game, seed: int) -> MatchSpec:
        """A tournament game, with its board and the tournament's notes."""
        spec = self.spec
        names = dict(zip(spec.bot_ids, spec.names, strict=True))
        return MatchSpec(
            match_id=game.match_id, rules=spec.rules, seed=seed, bot_ids=game.bot_ids,
            seat_names=tuple(names[b] for b in game.bot_ids), clock=spec.clock,
            faults=spec.faults, event=self.ref, sandbox=spec.sandbox,
            meta={"unit": game.unit, "bracket_match": game.bracket_match,
                  "board": self.board_of(game.unit), "duplicate": spec.duplicate,
                  "notes": formats.notes(spec) + _apart_note(game.unit)},
        )

    def recorded(self, r: redis.Redis, fresh: Sequence[tuple[str, dict[str, Any]]],
                 cursor: int, planned: Planned) -> None:
        """Organisers see each result as it is recorded."""
        tid = self.spec.tournament_id
        for mid, row in fresh:
            events.emit(r, tid, f"finished:{mid}",
                        _finished_event(mid, row, cursor, planned.total), events.ORGANISER)
        if fresh:
            events.emit(r, tid, f"standings:{cursor}", messages.StandingsChanged(
                done=cursor, total=planned.total, time=time.time()), events.ORGANISER)

    def released(self, r: redis.Redis, rq_conn: redis.Redis, count: int,
                 planned: Planned) -> None:
        """The public standings changed, and the pool is owed a fit."""
        tid = self.spec.tournament_id
        events.emit(r, tid, f"standings:{count}", messages.StandingsChanged(
            done=count, total=planned.total, time=time.time()))
        request_fit(r, rq_conn, self.spec.pool, tid)

    def bookkeep(self, r: redis.Redis, planned: Planned) -> None:
        """Nothing of its own: the format's state is all a tournament keeps."""


def _apart_note(unit: str) -> list[str]:
    """A game of a board dealt apart says so (`tournaments.apart`)."""
    m = APART_UNIT.fullmatch(unit)
    if m is None:
        return []
    return [apart_note(board_label(unit), board_label(m.group(1)))]


# The planner of each kind of event: a new kind is one planner and one entry here.
PLANNERS: dict[EventKind, Callable[[redis.Redis, EventRef], Planner]] = {
    EventKind.TOURNAMENT: FormatPlanner.load,
    EventKind.TEST: ChangePlanner.load,
    EventKind.ARENA: ArenaPlanner.load,
}


def planner_of(r: redis.Redis, ref: EventRef) -> Planner:
    """The planner of a stored event (NotFound when it is not stored)."""
    return PLANNERS[ref.kind](r, ref)


def advance(r: redis.Redis, rq_conn: redis.Redis, ref: EventRef,
            lock_ms: int = LOCK_MS, instance: str = "") -> dict[str, Any]:
    """The job: passes of the event's step while asks keep coming (at least one).

    A run that finds its lock lost after a pass (it stalled past `lock_ms` and another
    run may hold the lock now) stops there: the pass it made is safe (the state moves by
    compare-and-set), and what is left is the holder's to do. The lock names the worker
    `instance` running the job: when that worker dies, recovery frees the lock at once
    (`workers.recovery.wake`) rather than after `lock_ms`."""
    if not steps.exists(r, ref):  # archived whole (or never made): no step, no keys made
        return {"event": str(ref), "skipped": "no such event in Redis"}
    asks = steps.asks(ref)
    asks.started(r)  # asks from now on queue another job
    asks.ask_again(r)  # this job makes a pass, whoever queued it
    lock = steps.step_lock(ref, lock_ms, instance)
    if not lock.acquire(r):
        return {"event": str(ref), "skipped": "another run is advancing it"}
    summary: dict[str, Any] = {"event": str(ref)}
    passes = 0
    try:
        while passes < MAX_PASSES and asks.take(r):
            passes += 1
            started = time.perf_counter()
            summary = _advance_once(r, rq_conn, ref)
            metrics.stepped(ref.kind, ref.id, time.perf_counter() - started,
                            "skipped" if "skipped" in summary else "done")
            if not lock.extend(r):
                log.warning("%s: this step's lock lapsed; another run goes on", ref)
                return {**summary, "skipped": "lost the lock after a pass"}
    finally:
        lock.release_patiently(r)
    # An ask left standing (asks that kept coming past MAX_PASSES, or a job that found this
    # run's lock and gave up) gets a job of its own, behind the other jobs on the queue.
    if asks.owed(r) and asks.claim(r):
        enqueue_advance(rq_conn, ref)
    return summary


def _advance_once(r: redis.Redis, rq_conn: redis.Redis, ref: EventRef) -> dict[str, Any]:
    planner = planner_of(r, ref)
    stored = steps.state(r, ref)
    st = _current(stored.state)
    fresh: list[tuple[str, dict[str, Any]]] = []
    failed: dict[str, str] = {}
    if st is None:
        cursor, boards, creating = 0, Boards({}, 0), []
        planned = planner.first(r)
    else:
        cursor = int(st["cursor"])
        boards = Boards(dict(st["open"]), int(st["released"]))
        creating = list(st["creating"])
        recorded = steps.recorded_after(r, ref, cursor)
        mids = [mid for mid, _ in recorded]
        rows = store_matches.read_rows(r, mids)
        # A game is recorded after its row is stored, or marked failed: one or the other.
        failed = steps.failed_errors(r, ref, [m for m in mids if m not in rows])
        fresh = [(mid, rows[mid]) for mid in mids if mid in rows]
        if recorded:
            cursor = recorded[-1][1]
        planned = planner.feed(r, st["plan"], [row for _, row in fresh], failed)
    _create(r, rq_conn, creating)  # what an earlier pass decided and may not have created
    if stored.ended:
        # Over (finished, or failed on a game no run could host): games still in play are
        # folded and released as they end, but nothing new starts, and it stays out of the
        # live events. A planner that fails an event says so once: this holds it.
        planned = dataclasses.replace(planned, games=[], finished=True, error="")
    boards.add(planned.games)
    planner.recorded(r, fresh, cursor, planned)
    done_boards = boards.finish([(mid, str(row.get("unit", ""))) for mid, row in fresh]
                                + [(mid, "") for mid in failed])
    public = _release(r, rq_conn, planner, boards, done_boards, planned)
    planner.bookkeep(r, planned)
    # Decided after the release: games paired from these results (a Swiss round) become
    # public only once the results they were paired on are.
    decided = _decide(r, planner, planned.games)
    new_state = {"v": 2, "cursor": cursor, "plan": planned.state, "total": planned.total,
                 "finished": planned.finished, "open": boards.open,
                 "released": boards.released, "creating": decided}
    ending = None if stored.ended else _ending(planner, planned, cursor)
    # Recovery nudges an event while it may start games, and while boards are still open
    # (their last games must be folded and released even after the event ended).
    live = bool(boards.open) or bool(decided) or not (
        planned.dormant or planned.finished or planned.error)
    if (new_state == st and ending is None and planned.wake_at == stored.wake_at
            and live == stored.live):
        _ask_others(r, rq_conn, planned)
        return {"event": str(ref), "unchanged": True, "done": cursor, "total": planned.total}
    failpoints.reached("step.before-save")
    if ending is not None:
        failpoints.reached("step.before-end")  # the pass that ends the event, before its save
    if not steps.save(r, ref, stored.seq, new_state, done=cursor, total=planned.total,
                      live=live, wake_at=planned.wake_at, ending=ending, archive=public):
        return {"event": str(ref), "skipped": "another run saved first"}
    failpoints.reached("step.after-save")
    _ask_others(r, rq_conn, planned)
    if public:
        request_archive(r, rq_conn)  # public and folded: the games may leave Redis
    created = _create(r, rq_conn, decided)
    if ending is not None:
        log.log(logging.ERROR if planned.error else logging.INFO, "%s %s%s", ref,
                ending.status, f": {planned.error}" if planned.error else "")
    return {"event": str(ref), "created": created, "done": cursor, "total": planned.total,
            "finished": planned.finished, "released": boards.released}


def _ask_others(r: redis.Redis, rq_conn: redis.Redis, planned: Planned) -> None:
    """Ask the other events the planner named to look again (`Planned.asks`)."""
    for other in planned.asks:
        request_step(r, rq_conn, other)


def _current(state: dict[str, Any] | None) -> dict[str, Any] | None:
    """The stored state in the step's present form: a state saved before games were
    decided in it (no `creating`) reads with none left to create."""
    if state is None:
        return None
    return {**state, "open": state.get("open", {}), "released": state.get("released", 0),
            "creating": state.get("creating", [])}


def _ending(planner: Planner, planned: Planned, cursor: int) -> steps.Ending | None:
    """The event's end, if this pass ends it: failed (a planner's error) or finished."""
    if not planned.error and not planned.finished:
        return None
    event = (messages.TournamentFinished(done=cursor, time=time.time())
             if planner.streams else None)
    if planned.error:
        return steps.Ending(TournamentStatus.FAILED, planned.error, event)
    return steps.Ending(TournamentStatus.FINISHED, "", event)


@dataclass
class Boards:
    """The boards in play: unit -> [games, finished, match ids], and games released so far.

    A board (a unit: its games share one deal) is released when all its games have
    finished (or failed): only then may anyone but an organiser see their plays or
    results.
    """

    open: dict[str, list[Any]]
    released: int

    def add(self, games: list[Game]) -> None:
        """Count newly planned games into their boards."""
        for g in games:
            board = self.open.setdefault(g.unit, [0, 0, []])
            board[0] += 1
            board[2].append(g.match_id)

    def finish(self, finished: list[tuple[str, str]]) -> list[str]:
        """Count finished (match id, unit) games; the units this completes, in order."""
        done = []
        for mid, named in finished:
            unit = named if named in self.open else next(  # a failed game, or an old row
                (u for u, b in self.open.items() if mid in b[2]), "")
            board = self.open.get(unit)
            if board is None:
                continue
            board[1] += 1
            if board[1] >= board[0]:
                done.append(unit)
        return done


def _release(r: redis.Redis, rq_conn: redis.Redis, planner: Planner, boards: Boards,
             units: list[str], planned: Planned) -> list[str]:
    """Make the games of finished boards public: watchable, in the public standings and
    events (and, if the planner's games are rated, the ratings). A failed game has no
    result: only its plays become watchable. Idempotent, so a pass redone after a crash
    releases nothing twice. The games released, which the step's save queues for the
    archive: never before the save, or a pass redone after a crash would find games it
    must fold already gone from Redis."""
    if not units:
        return []
    released: list[str] = []
    ref = planner.ref
    now = time.time()
    for unit in units:
        match_ids = list(boards.open.pop(unit)[2])
        rows = store_matches.read_rows(r, match_ids)
        shown = [mid for mid in match_ids if mid in rows]
        for mid in match_ids:
            if mid not in rows:  # failed: its plays so far are public with its board
                store_matches.release(r, mid, planner.players, now, rated=False,
                                      archive=False)
                released.append(mid)
        first = boards.released + 1
        for mid in shown:
            boards.released += 1
            store_matches.release(r, mid, planner.players, now, rated=planner.rated,
                                  archive=False)
            released.append(mid)
            metrics.finished(str(rows[mid].get("end", "")), int(rows[mid].get("actions", 0)))
            if planner.streams:
                events.emit(r, ref.id, f"finished:{mid}",
                            _finished_event(mid, rows[mid], boards.released, planned.total))
        steps.mark_released(r, ref, shown, first)
    planner.released(r, rq_conn, boards.released, planned)
    return released


def _finished_event(mid: str, row: dict[str, Any], done: int,
                    total: int) -> messages.TournamentMatchFinished:
    return messages.TournamentMatchFinished(
        match_id=mid, result={k: row.get(k) for k in _RESULT_KEYS}, done=done, total=total,
        time=time.time())


def _decide(r: redis.Redis, planner: Planner, games: list[Game]) -> list[str]:
    """The match specs (JSON) of new games, each unit dealt its deal: its planned seed
    through the stack's secret, claimed on the stack's record of deals, or a fresh deal of
    the board where another board had that one (noted on the event). Every unit of the
    pass is claimed in one round trip. See store.deals."""
    planned: dict[str, int] = {}
    for g in games:
        planned[g.unit] = g.seed
    units = list(planned)
    dealt = {}
    for unit, (seed, refused) in zip(units, deals.deal_boards(
            r, [(planned[u], planner.board_of(u)) for u in units]), strict=True):
        dealt[unit] = seed
        if refused:
            steps.note_redealt(r, planner.ref, unit)
            log.info("%s: board %s dealt afresh (%d deal(s) refused: another board had "
                     "been dealt them)", planner.ref, unit, refused)
    return [planner.match_spec(g, dealt[g.unit]).to_json() for g in games]


def _create(r: redis.Redis, rq_conn: redis.Redis, specs: Sequence[str]) -> int:
    """Store and queue the games decided; a game that exists already is left as it is. Each
    pass is handed the previous pass's decisions again (the crash-safe way), and most
    exist by then: one round trip finds which."""
    if not specs:
        return 0
    decided = [MatchSpec.from_json(text) for text in specs]
    there = store_matches.exist(r, [m.match_id for m in decided])
    created = 0
    now = time.time()
    for i, (mspec, found) in enumerate(zip(decided, there, strict=True)):
        if not found and store_matches.create_match(r, mspec, listed_at=now + i * 1e-6):
            # A run killed between storing and queueing leaves a match with no job;
            # recovery queues it (see workers.recovery).
            enqueue_match(rq_conn, mspec.match_id)
            created += 1
    return created
