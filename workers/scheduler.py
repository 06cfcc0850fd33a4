"""The scheduling step of a tournament or a test of a change, as an RQ job: load what
changed, call the pure planner, store.

`advance(r, rq_conn, event_id)` runs whenever a game of the event is recorded (and
when recovery nudges it). One step reads only the games recorded since the last
step (a cursor into `ms:tournament:{id}:recorded`), folds them into the planner's
stored state (`workers.planner.Planner.feed`: a tournament format's
`tournaments.registry.Format.feed`, or a test's `tournaments.change.feed`),
creates and queues the games that the planner adds, emits events once each, and
saves the new state with the new cursor, but only if no other run moved the
cursor first. So a step costs what changed, never the size of the event, and a
step killed at any point is simply redone: game creation and events are
idempotent, and the state moves in one compare-and-set.

The step also releases boards: when every game of a board (a unit) has
finished, its games become public (`store.matches.release`), join the public
standings (and, for a tournament, the rating pool), and their results go out on
the public event stream; organisers get every result at once on their own stream.

Runs of one event are serialized by a lock and a dirty flag, so none is lost and
none runs twice at once. What is a planner's own (its spec, how a game is built,
its events and writes) is behind `workers.planner.Planner`: `FormatPlanner` here
for tournaments, `workers.changes.ChangePlanner` for tests.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis

from store import deals, events, ids, messages
from store import matches as store_matches
from store import tournaments as store_t
from store.records import MatchSpec, TournamentSpec
from store.status import TournamentStatus
from tournaments import formats
from tournaments.plan import Game, Step, Unit, board_id
from workers import failpoints, metrics
from workers.changes import ChangePlanner
from workers.planner import Planned, Planner
from workers.queues import enqueue_match, request_fit

__all__ = ["Boards", "FormatPlanner", "RedisSource", "advance", "planner_of"]

log = logging.getLogger("moonshot.tournament")

LOCK_MS = 30_000  # extended after every pass (a first step of 1000 bots takes ~8 s); a dead
# run's lock lapses this soon
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


def advance(r: redis.Redis, rq_conn: redis.Redis, tournament_id: str,
            lock_ms: int = LOCK_MS) -> dict[str, Any]:
    """One scheduling step (idempotent) of a tournament or a test (`tournament_id` names
    either): create what the plan adds, emit events, finish.

    A run that finds its lock lost after a pass (it stalled past `lock_ms` and another
    run may hold the lock now) stops there: the step it took is safe (the state moves by
    compare-and-set), and what is left is the holder's to do."""
    lock = store_t.step_lock(tournament_id, lock_ms)
    store_t.ask_step(r, tournament_id)
    if not lock.acquire(r):
        return {"tournament_id": tournament_id, "skipped": "another run is advancing it"}
    summary: dict[str, Any] = {}
    try:
        while store_t.take_step(r, tournament_id):
            summary = _advance_once(r, rq_conn, tournament_id)
            if not lock.extend(r):
                log.warning("%s: this step's lock lapsed; another run goes on",
                            tournament_id)
                return {"tournament_id": tournament_id, **summary,
                        "skipped": "lost the lock after a pass"}
    finally:
        lock.release(r)
    return summary


@dataclass
class FormatPlanner:
    """A tournament, planned by its format (`tournaments.formats`)."""

    spec: TournamentSpec
    rated: bool = True

    @property
    def event_id(self) -> str:
        """The tournament's id."""
        return self.spec.tournament_id

    @property
    def players(self) -> int:
        """3 or 4."""
        return self.spec.players

    @property
    def voids_failed(self) -> bool:
        """A game that cannot be hosted fails the tournament."""
        return False

    @staticmethod
    def load(r: redis.Redis, tournament_id: str) -> FormatPlanner:
        """The planner of a stored tournament."""
        return FormatPlanner(store_t.load_spec(r, tournament_id))

    def first(self, r: redis.Redis) -> Planned:
        """Store the fixed schedule (if the format has one), then the format's first step."""
        spec = self.spec
        fmt = formats.get(spec.format)
        schedule = fmt.schedule(spec)
        if schedule is not None:
            store_t.write_schedule(r, spec.tournament_id, (u.to_json(spec) for u in schedule),
                                   sum(len(u.games) for u in schedule))
        return self._planned(fmt.start(spec, RedisSource(r, spec)))

    def feed(self, r: redis.Redis, state: dict[str, Any],
             rows: Sequence[dict[str, Any]]) -> Planned:
        """The format folds the new results in."""
        fmt = formats.get(self.spec.format)
        return self._planned(fmt.feed(self.spec, state, list(rows), RedisSource(r, self.spec)))

    @staticmethod
    def _planned(step: Step) -> Planned:
        return Planned(step.state, step.games, step.total, step.finished)

    def match_spec(self, game: Game, seed: int) -> MatchSpec:
        """A tournament game, with its board and the tournament's notes."""
        spec = self.spec
        names = dict(zip(spec.bot_ids, spec.names, strict=True))
        tid = spec.tournament_id
        return MatchSpec(
            match_id=game.match_id, rules=spec.rules, seed=seed, bot_ids=game.bot_ids,
            seat_names=tuple(names[b] for b in game.bot_ids), clock=spec.clock,
            faults=spec.faults, tournament_id=tid,
            meta={"unit": game.unit, "bracket_match": game.bracket_match,
                  "board": board_id(tid, game.unit), "duplicate": spec.duplicate,
                  "notes": formats.notes(spec)},
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


def planner_of(r: redis.Redis, event_id: str) -> Planner:
    """The planner of a stored tournament or test (NotFound for neither)."""
    if ids.is_test_id(event_id):
        return ChangePlanner.load(r, event_id)
    return FormatPlanner.load(r, event_id)


def _advance_once(r: redis.Redis, rq_conn: redis.Redis, tid: str) -> dict[str, Any]:
    planner = planner_of(r, tid)
    status = store_t.info(r, tid).status
    stored = store_t.state(r, tid)
    fresh: list[tuple[str, dict[str, Any]]] = []
    if stored is None:
        expected, cursor = None, 0
        boards = Boards({}, 0)
        step = planner.first(r)
    else:
        expected = cursor = int(stored["cursor"])
        boards = Boards(dict(stored.get("open", {})), int(stored.get("released", 0)))
        recorded = store_t.recorded_after(r, tid, cursor)
        rows = store_matches.read_rows(r, [mid for mid, _ in recorded])
        # A game is recorded only after its row is stored, so every row is there.
        fresh = [(mid, rows[mid]) for mid, _ in recorded if mid in rows]
        if recorded:
            cursor = recorded[-1][1]
        step = planner.feed(r, stored["plan"], [row for _, row in fresh])
    boards.add(step.games)
    planner.recorded(r, fresh, cursor, step)
    done_boards = boards.finish([(mid, str(row.get("unit", ""))) for mid, row in fresh])
    _release(r, rq_conn, planner, boards, done_boards, step)
    planner.bookkeep(r, step)
    # Created after the release: games paired from these results (a Swiss round) become
    # public only once the results they were paired on are.
    created = _create_games(r, rq_conn, planner, step.games)
    new_state = {"cursor": cursor, "plan": step.state, "total": step.total,
                 "finished": step.finished, "open": boards.open, "released": boards.released}
    changed = (stored is None or cursor != expected or bool(step.games)
               or step.state != stored["plan"])
    failpoints.reached("step.before-save")
    if changed and not store_t.save_state(r, tid, expected, new_state):
        return {"tournament_id": tid, "skipped": "another run moved the cursor first"}
    store_t.progress(r, tid, cursor, step.total)
    # A test voids the pair of a game that cannot be hosted (its planner's business).
    failed = [] if planner.voids_failed else store_t.failed_games(r, tid)
    if failed and status == TournamentStatus.RUNNING:
        mid, error = failed[0]
        store_t.end(r, tid, TournamentStatus.FAILED, f"match {mid} cannot be played: {error}")
        events.emit_both(r, tid, "finished", messages.TournamentFinished(done=cursor,
                                                                          time=time.time()))
        log.error("%s failed: match %s: %s", tid, mid, error)
    elif step.finished and status == TournamentStatus.RUNNING:
        store_t.end(r, tid, TournamentStatus.FINISHED)
        events.emit_both(r, tid, "finished", messages.TournamentFinished(done=cursor,
                                                                          time=time.time()))
        log.info("%s finished", tid)
    return {"tournament_id": tid, "created": created, "done": cursor, "total": step.total,
            "finished": step.finished, "released": boards.released}


@dataclass
class Boards:
    """The boards in play: unit -> [games, finished, match ids], and games released so far.

    A board (a unit: its games share one deal) is released when all its games have
    finished: only then may anyone but an organiser see their plays or results.
    """

    open: dict[str, list[Any]]
    released: int

    def add(self, games: list[Game]) -> None:
        """Count newly created games into their boards."""
        for g in games:
            board = self.open.setdefault(g.unit, [0, 0, []])
            board[0] += 1
            board[2].append(g.match_id)

    def finish(self, finished: list[tuple[str, str]]) -> list[str]:
        """Count finished (match id, unit) games; the units this completes, in order."""
        done = []
        for mid, named in finished:
            unit = named if named in self.open else next(  # a row from before rows named it
                (u for u, b in self.open.items() if mid in b[2]), "")
            board = self.open.get(unit)
            if board is None:
                continue
            board[1] += 1
            if board[1] >= board[0]:
                done.append(unit)
        return done


def _release(r: redis.Redis, rq_conn: redis.Redis, planner: Planner, boards: Boards,
             units: list[str], planned: Planned) -> None:
    """Make the games of finished boards public: watchable, in the public standings and
    events (and, if the planner's games are rated, the ratings). Idempotent, so a step
    redone after a crash releases nothing twice."""
    if not units:
        return
    tid = planner.event_id
    now = time.time()
    for unit in units:
        ids = list(boards.open.pop(unit)[2])
        rows = store_matches.read_rows(r, ids)
        for mid in ids:
            boards.released += 1
            store_matches.release(r, mid, planner.players, now, rated=planner.rated)
            metrics.finished(str(rows[mid].get("end", "")), int(rows[mid].get("actions", 0)))
            store_t.mark_released(r, tid, mid, boards.released)
            events.emit(r, tid, f"finished:{mid}",
                        _finished_event(mid, rows[mid], boards.released, planned.total))
    planner.released(r, rq_conn, boards.released, planned)


def _finished_event(mid: str, row: dict[str, Any], done: int,
                    total: int) -> messages.TournamentMatchFinished:
    return messages.TournamentMatchFinished(
        match_id=mid, result={k: row.get(k) for k in _RESULT_KEYS}, done=done, total=total,
        time=time.time())


def _deals(r: redis.Redis, event_id: str, games: list[Game]) -> dict[str, int]:
    """The deal of each unit of `games`: its planned seed through the stack's secret, claimed
    for every remote bot of the unit, or a fresh deal of the board where one of them was
    dealt that one before (noted on the event). See store.deals."""
    units: dict[str, set[str]] = {}
    planned: dict[str, int] = {}
    for g in games:
        units.setdefault(g.unit, set()).update(b for b in g.bot_ids if not ids.is_house_bot(b))
        planned[g.unit] = g.seed
    out = {}
    for unit, bots in units.items():
        out[unit], refused = deals.deal(r, planned[unit], board_id(event_id, unit), bots)
        if refused:
            store_t.note_redealt(r, event_id, unit)
            log.info("%s: board %s dealt afresh (%d deal(s) refused: a bot had been dealt "
                     "them)", event_id, unit, refused)
    return out


def _create_games(r: redis.Redis, rq_conn: redis.Redis, planner: Planner,
                  games: list[Game]) -> int:
    """Store and queue new games, each dealt its unit's deal; a game that exists already
    is left as it is."""
    dealt = _deals(r, planner.event_id, games)
    created = 0
    now = time.time()
    for i, g in enumerate(games):
        if store_matches.create_match(r, planner.match_spec(g, dealt[g.unit]),
                                      listed_at=now + i * 1e-6):
            # A run killed between storing and queueing leaves a match with no job;
            # recovery queues it (see workers.recovery).
            enqueue_match(rq_conn, g.match_id)
            created += 1
    return created
