"""Tournaments as stored in Redis: the spec and status, the fixed schedule, the games
recorded so far (in recording order), and the scheduler's state.

Every field of a tournament's hash (`ms:tournament:{id}`) is written here and read
back as a `TournamentInfo`."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from store import events, ids, keys
from store import ratings as store_ratings
from store.errors import FailedPrecondition, NotFound
from store.locks import Lock
from store.lua import RECORD_LUA
from store.matches import read_rows
from store.records import StandingsInputs, TournamentSpec
from store.status import MatchStatus, TournamentStatus

__all__ = [
    "SCHEDULE_CHUNK",
    "Scheduling",
    "TournamentInfo",
    "all_ids",
    "ask_step",
    "create",
    "end",
    "failed_games",
    "info",
    "load_spec",
    "mark_failed_game",
    "mark_released",
    "progress",
    "read_schedule",
    "record",
    "recorded_after",
    "results",
    "save_state",
    "schedule_size",
    "scheduling",
    "standings_inputs",
    "state",
    "step_lock",
    "take_step",
    "write_schedule",
]

SCHEDULE_CHUNK = 2000  # units written per round trip


def load_spec(r: redis.Redis, tournament_id: str) -> TournamentSpec:
    """The stored spec, or NotFound (also for a string that is not a tournament id)."""
    if not ids.is_tournament_id(tournament_id):
        raise NotFound(f"no tournament with id {tournament_id!r}")
    raw = r.hget(keys.tournament(tournament_id), "spec")
    if raw is None:
        raise NotFound(f"no tournament with id {tournament_id!r}")
    return TournamentSpec.from_json(str(raw))


@dataclass(frozen=True, slots=True)
class TournamentInfo:
    """A tournament's status as stored: where it is, its progress, when, and why it failed."""

    status: TournamentStatus
    created_at: float | None
    finished_at: float | None
    done: int  # games recorded
    total: int  # games the format plans so far (0 before the first step)
    error: str
    redealt: int = 0  # boards dealt afresh: a bot had been dealt the planned deal

    @staticmethod
    def from_hash(d: dict[str, str], redealt: int = 0) -> TournamentInfo:
        """From the tournament's hash (a missing one reads as a running tournament)."""
        return TournamentInfo(
            status=TournamentStatus(d.get("status", TournamentStatus.RUNNING)),
            created_at=float(d["created_at"]) if d.get("created_at") else None,
            finished_at=float(d["finished_at"]) if d.get("finished_at") else None,
            done=int(d.get("done", 0)), total=int(d.get("total", 0)), error=d.get("error", ""),
            redealt=redealt)


def info(r: redis.Redis, tournament_id: str) -> TournamentInfo:
    """The tournament's status (status, progress, timestamps, error, boards dealt afresh)."""
    pipe = r.pipeline(transaction=False)
    pipe.hgetall(keys.tournament(tournament_id))
    pipe.scard(keys.tournament_redealt(tournament_id))
    d, redealt = pipe.execute()
    return TournamentInfo.from_hash(d, int(redealt))


def all_ids(r: redis.Redis) -> list[str]:
    """Every tournament id, oldest first."""
    found: Any = r.zrange(keys.TOURNAMENTS, 0, -1)
    return [str(t) for t in found]


def progress(r: redis.Redis, tournament_id: str, done: int, total: int) -> None:
    """Games recorded so far, of the total the format plans now."""
    r.hset(keys.tournament(tournament_id), mapping={"total": total, "done": done})


def end(r: redis.Redis, tournament_id: str, status: TournamentStatus, error: str = "",
        when: float | None = None) -> None:
    """The tournament is over: finished, or failed with `error`."""
    r.hset(keys.tournament(tournament_id), mapping={
        "status": status, "finished_at": repr(when or time.time()), "error": error})


def create(r: redis.Redis, spec: TournamentSpec) -> None:
    """Store a new tournament as running; FailedPrecondition if the id is taken."""
    key = keys.tournament(spec.tournament_id)
    if not r.hsetnx(key, "spec", spec.to_json()):
        raise FailedPrecondition(f"tournament {spec.tournament_id} exists already")
    now = time.time()
    pipe = r.pipeline()
    pipe.hset(key, mapping={"status": TournamentStatus.RUNNING, "created_at": repr(now),
                            "name": spec.name})
    pipe.zadd(keys.TOURNAMENTS, {spec.tournament_id: now})
    pipe.execute()


def results(r: redis.Redis, tournament_id: str,
            released_only: bool = False) -> dict[str, dict[str, Any]]:
    """Finished results of a tournament's games (only the released ones if asked), by
    match id, as standings rows."""
    index = (keys.tournament_released(tournament_id) if released_only
             else keys.tournament_matches(tournament_id))
    match_ids: list[str] = r.zrange(index, 0, -1)  # type: ignore[assignment]
    return read_rows(r, match_ids)


def note_redealt(r: redis.Redis, tournament_id: str, unit: str) -> None:
    """Unit `unit` was dealt afresh: one of its bots had been dealt the planned deal."""
    r.sadd(keys.tournament_redealt(tournament_id), unit)


def mark_released(r: redis.Redis, tournament_id: str, match_id: str, number: int) -> None:
    """Add a released game to the tournament's public list (its `number`-th)."""
    r.zadd(keys.tournament_released(tournament_id), {match_id: number}, nx=True)


# ------------------------------------------------------------ scheduling


def step_lock(tournament_id: str, ttl_ms: int) -> Lock:
    """A new run's lock on the tournament's scheduling (one run advances it at a time)."""
    return Lock.fresh(keys.tournament_lock(tournament_id), ttl_ms)


@dataclass(frozen=True, slots=True)
class Scheduling:
    """What recovery reads to judge whether a tournament's scheduler is owed a step."""

    games: int  # games created
    recorded: int  # games recorded
    stepping: bool  # a scheduler run holds the lock
    asked: bool  # a step was asked for and has not been taken


def scheduling(r: redis.Redis, tournament_id: str) -> Scheduling:
    """The tournament's scheduling, in one round trip."""
    pipe = r.pipeline(transaction=False)
    pipe.zcard(keys.tournament_matches(tournament_id))
    pipe.zcard(keys.tournament_recorded(tournament_id))
    pipe.exists(keys.tournament_lock(tournament_id))
    pipe.exists(keys.tournament_dirty(tournament_id))
    games, recorded, locked, dirty = pipe.execute()
    return Scheduling(int(games), int(recorded), bool(locked), bool(dirty))


def ask_step(r: redis.Redis, tournament_id: str) -> None:
    """Note that the scheduler should look at the tournament again."""
    r.set(keys.tournament_dirty(tournament_id), 1)


def take_step(r: redis.Redis, tournament_id: str) -> bool:
    """Clear the note (the scheduler's run looks now); True when there was one."""
    return bool(r.delete(keys.tournament_dirty(tournament_id)))


# ------------------------------------------------------------ recording


def record(r: redis.Redis, tournament_id: str, match_id: str) -> int:
    """Give a finished game its recording number, once; 0 if it had one already."""
    n: Any = r.eval(RECORD_LUA, 1, keys.tournament_recorded(tournament_id), match_id)
    return int(n)


def recorded_after(r: redis.Redis, tournament_id: str, cursor: int,
                   limit: int = 5000) -> list[tuple[str, int]]:
    """(match id, recording number) of games recorded after number `cursor`, oldest first."""
    got: list[tuple[str, float]] = r.zrangebyscore(  # type: ignore[assignment]
        keys.tournament_recorded(tournament_id), f"({cursor}", "+inf", start=0, num=limit,
        withscores=True)
    return [(mid, int(score)) for mid, score in got]


def mark_failed_game(r: redis.Redis, tournament_id: str, match_id: str) -> None:
    """Note a game that cannot be hosted, for the scheduler to fail the tournament."""
    r.sadd(keys.tournament_failed(tournament_id), match_id)


def failed_games(r: redis.Redis, tournament_id: str) -> list[tuple[str, str]]:
    """(match id, error) of the tournament's games marked failed, by id."""
    failed: Any = r.smembers(keys.tournament_failed(tournament_id))
    match_ids = sorted(str(m) for m in failed)
    pipe = r.pipeline(transaction=False)
    for mid in match_ids:
        pipe.hget(keys.match(mid), "error")
    return [(mid, str(err or "")) for mid, err in zip(match_ids, pipe.execute(), strict=True)]


# ------------------------------------------------------------- schedule


def write_schedule(r: redis.Redis, tournament_id: str, units: Iterable[Any],
                   games: int) -> int:
    """Store a fixed schedule (JSON-able units, in order) once; returns the unit count."""
    key = keys.tournament_units(tournament_id)
    r.delete(key)  # a step that died half-way through writing it starts over
    count = 0
    chunk: list[str] = []
    for unit in units:
        chunk.append(json.dumps(unit, separators=(",", ":")))
        if len(chunk) == SCHEDULE_CHUNK:
            r.rpush(key, *chunk)
            count += len(chunk)
            chunk = []
    if chunk:
        r.rpush(key, *chunk)
        count += len(chunk)
    r.hset(keys.tournament(tournament_id), mapping={"units": count, "unit_games": games})
    return count


def schedule_size(r: redis.Redis, tournament_id: str) -> tuple[int, int] | None:
    """(units, games) of the stored schedule, or None when none is stored."""
    units, games = r.hmget(keys.tournament(tournament_id), "units", "unit_games")
    if units is None or games is None:
        return None
    return int(units), int(games)


def read_schedule(r: redis.Redis, tournament_id: str, start: int, stop: int) -> list[Any]:
    """Units `start` to `stop` - 1 of the stored schedule, parsed."""
    if stop <= start:
        return []
    raw: Sequence[str] = r.lrange(keys.tournament_units(tournament_id), start, stop - 1)  # type: ignore[assignment]
    return [json.loads(x) for x in raw]


# ---------------------------------------------------------------- state


def state(r: redis.Redis, tournament_id: str) -> dict[str, Any] | None:
    """The scheduler's stored state ({"cursor": n, "plan": {...}}), or None before its first
    step."""
    raw = r.get(keys.tournament_state(tournament_id))
    return None if raw is None else dict(json.loads(raw))


def save_state(r: redis.Redis, tournament_id: str, expected_cursor: int | None,
               new_state: dict[str, Any]) -> bool:
    """Replace the state if its cursor is still `expected_cursor` (None: no state yet);
    False when another run moved it first, so nothing is folded in twice."""
    key = keys.tournament_state(tournament_id)
    with r.pipeline(transaction=True) as pipe:
        try:
            pipe.watch(key)  # type: ignore[no-untyped-call]
            raw = pipe.get(key)
            now = None if raw is None else int(json.loads(raw)["cursor"])
            if now != expected_cursor:
                return False
            pipe.multi()
            pipe.set(key, json.dumps(new_state, separators=(",", ":")))
            pipe.execute()
        except redis.WatchError:
            return False
    return True


# ------------------------------------------------------------ standings


def standings_inputs(r: redis.Redis, spec: TournamentSpec,
                     audience: str = events.ORGANISER) -> StandingsInputs:
    """Everything a standings view of the tournament reads, for an audience: organisers
    over every recorded result, the public over released ones. The boards in play are
    counts only (games, finished, running), which the public may see: the status of every
    game is public, its result is not until its board is released."""
    tid = spec.tournament_id
    stored = state(r, tid)
    own = store_ratings.load_tournament(r, tid)
    opened = dict(stored.get("open", {})) if stored is not None else {}
    pipe = r.pipeline(transaction=False)
    for b in opened.values():
        for mid in b[2]:
            pipe.hget(keys.match(mid), "status")
    statuses = iter(pipe.execute())
    running = {unit: sum(1 for _ in b[2] if next(statuses) == MatchStatus.RUNNING)
               for unit, b in opened.items()}
    return StandingsInputs(
        results=results(r, tid, released_only=audience != events.ORGANISER),
        state=stored,
        sequence=events.newest_seq(r, tid, audience),
        ratings=store_ratings.current_ratings(r, spec.pool),
        own_ratings=None if own is None else {x.bot_id: x.rating for x in own.rows},
        boards=[(unit, int(b[0]), int(b[1]), running[unit]) for unit, b in opened.items()],
        redealt=int(r.scard(keys.tournament_redealt(tid))),
    )
