"""Tournaments as stored in Redis: the spec and status, the fixed schedule, and what a
standings view reads. What the scheduling step keeps (games, recording, release, its
state) is every event's alike: `store.steps`.

Every field of a tournament's hash (`ms:tournament:{id}`) is written here and read
back as a `TournamentInfo`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from store import events, ids, keys, steps
from store import ratings as store_ratings
from store.errors import FailedPrecondition, NotFound
from store.matches import read_rows
from store.records import StandingsInputs, TournamentSpec
from store.refs import EventRef
from store.status import MatchStatus, TournamentStatus

__all__ = [
    "SCHEDULE_CHUNK",
    "TournamentInfo",
    "all_ids",
    "create",
    "in_redis",
    "info",
    "load_spec",
    "read_schedule",
    "results",
    "schedule_size",
    "standing_ratings",
    "standings_inputs",
    "state",
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
    redealt: int = 0  # boards dealt afresh: another board had the planned deal

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


def in_redis(r: redis.Redis, tournament_id: str) -> bool:
    """True while the tournament is live in Redis (an ended one leaves for the archive)."""
    return bool(r.exists(keys.tournament(tournament_id)))


def all_ids(r: redis.Redis) -> list[str]:
    """Every tournament id, oldest first."""
    found: Any = r.zrange(keys.TOURNAMENTS, 0, -1)
    return [str(t) for t in found]


def create(r: redis.Redis, spec: TournamentSpec) -> None:
    """Store a new tournament as running, in one atomic step; FailedPrecondition if the id
    is taken (nothing written)."""
    if not steps.create(r, EventRef.tournament(spec.tournament_id), keys.TOURNAMENTS,
                        spec.to_json(), spec.name):
        raise FailedPrecondition(f"tournament {spec.tournament_id} exists already")


def results(r: redis.Redis, tournament_id: str,
            released_only: bool = False) -> dict[str, dict[str, Any]]:
    """Finished results of a tournament's games (only the released ones if asked), by
    match id, as standings rows."""
    ref = EventRef.of_id(tournament_id)
    index = (keys.tournament_released(tournament_id) if released_only
             else keys.tournament_matches(tournament_id))
    match_ids: list[str] = r.zrange(index, 0, -1)  # type: ignore[assignment]
    # Games archived already keep their row in the event's `:rows` (store.archiving); the
    # others are read from their own records. Archived games are released ones.
    archived: dict[str, str] = r.hgetall(keys.event_rows(ref))  # type: ignore[assignment]
    out = read_rows(r, [m for m in match_ids if m not in archived])
    out.update({m: json.loads(raw) for m, raw in archived.items()})
    return {m: out[m] for m in match_ids if m in out}  # in the index's order


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
    """The scheduling step's stored state of a tournament or test (its cursor, the boards
    open, the planner's state as `plan`), or None before its first step."""
    return steps.state(r, EventRef.of_id(tournament_id)).state


# ------------------------------------------------------------ standings


def standing_ratings(r: redis.Redis, spec: TournamentSpec) -> dict[str, float]:
    """The ratings a tournament's standings show and break their last tie with: those of
    its start, kept in its spec; the pool's now for a spec stored before it kept them."""
    if spec.ratings is not None:
        return dict(spec.ratings)
    return store_ratings.current_ratings(r, spec.pool)


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
        ratings=standing_ratings(r, spec),
        own_ratings=None if own is None else {x.bot_id: x.rating for x in own.rows},
        boards=[(unit, int(b[0]), int(b[1]), running[unit]) for unit, b in opened.items()],
        redealt=int(r.scard(keys.tournament_redealt(tid))),
    )
