"""Matches as stored in Redis: create, read, list, and their result rows."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis

from store import ids, keys
from store.errors import InvalidArgument, NotFound
from store.records import MatchSpec
from store.results import result_row
from store.status import MatchStatus, TournamentStatus

__all__ = [
    "MatchRecord",
    "create_match",
    "get_match",
    "ids_after",
    "pool_results",
    "read_rows",
    "release",
    "tournament_over",
]

Redis = redis.Redis

@dataclass(frozen=True, slots=True)
class MatchRecord:
    """A match as stored: its spec, status and (once finished) result and transcript."""

    spec: MatchSpec
    status: MatchStatus
    created_at: float
    started_at: float | None
    finished_at: float | None
    actions: int
    error: str
    result: dict[str, Any] | None
    transcript: dict[str, Any] | None
    released: bool = False  # its board is finished everywhere: anyone may see its plays


def create_match(r: Redis, spec: MatchSpec, listed_at: float | None = None) -> bool:
    """Store a new match as queued; False when that id existed already.

    Everything is written in one transaction, and only if absent, so creating the same
    match again (a scheduler re-run) changes nothing. The match joins its bots' indexes,
    and a tournament game its tournament's, in the same transaction (at `listed_at`,
    which orders the games of one step): a reader never meets an id in an index whose
    record is not there yet.
    """
    now = time.time()
    key = keys.match(spec.match_id)
    pipe = r.pipeline(transaction=True)
    pipe.hsetnx(key, "spec", spec.to_json())
    pipe.hsetnx(key, "status", MatchStatus.QUEUED)
    pipe.hsetnx(key, "created_at", repr(now))
    pipe.hsetnx(key, "tournament_id", spec.tournament_id)
    pipe.zadd(keys.MATCHES, {spec.match_id: now}, nx=True)
    at = now if listed_at is None else listed_at
    if spec.tournament_id:
        pipe.zadd(keys.tournament_matches(spec.tournament_id), {spec.match_id: at}, nx=True)
    for bot_id in set(spec.bot_ids):
        pipe.zadd(keys.bot_matches(bot_id), {spec.match_id: at}, nx=True)
    pipe.exists(keys.result(spec.match_id))
    created, *_, finished = pipe.execute()
    if not finished:
        r.sadd(keys.OPEN_MATCHES, spec.match_id)
    return bool(created)


def get_match(r: Redis, match_id: str) -> MatchRecord:
    """The stored match, or NotFound (also for a string that is not a match id)."""
    if not ids.is_match_id(match_id):
        raise NotFound(f"no match with id {match_id!r}")
    pipe = r.pipeline()
    pipe.hgetall(keys.match(match_id))
    pipe.llen(keys.match_log(match_id))
    pipe.get(keys.result(match_id))
    d, n_actions, stored = pipe.execute()
    if not d:
        raise NotFound(f"no match with id {match_id!r}")
    done = json.loads(stored) if stored else None
    return MatchRecord(
        spec=MatchSpec.from_json(d["spec"]),
        status=MatchStatus(d.get("status", MatchStatus.QUEUED)),
        created_at=float(d.get("created_at", 0)),
        started_at=float(d["started_at"]) if d.get("started_at") else None,
        finished_at=float(d["finished_at"]) if d.get("finished_at") else None,
        actions=int(n_actions),
        error=d.get("error", ""),
        result=done["result"] if done else None,
        transcript=done["transcript"] if done else None,
        released=bool(d.get("released")),
    )


def release(r: Redis, match_id: str, players: int, when: float) -> None:
    """Make a finished game public: its plays may be watched, and it counts in ratings."""
    pipe = r.pipeline(transaction=True)
    pipe.hset(keys.match(match_id), "released", repr(when))
    pipe.zadd(keys.results("3p" if players == 3 else "2v2"), {match_id: when}, nx=True)
    pipe.execute()


def ids_after(r: Redis, index: str, after: str, newest_first: bool) -> list[str]:
    """Ids of a time-ordered index (a zset) that come after the id `after` ('' from the top).

    The position of `after` is looked up now, so a page token stays right while new
    items arrive: nothing repeats or goes missing between pages.
    """
    start = 0
    if after:
        rank = r.zrevrank(index, after) if newest_first else r.zrank(index, after)
        if rank is None:
            raise InvalidArgument("page_token: not a token this server issued")
        start = int(rank) + 1  # type: ignore[arg-type]
    ids = r.zrevrange(index, start, -1) if newest_first else r.zrange(index, start, -1)
    return list(ids)  # type: ignore[arg-type]


def tournament_over(r: Redis, tournament_id: str) -> bool:
    """True once a tournament has finished (its seeds can no longer help anyone)."""
    status = r.hget(keys.tournament(tournament_id), "status")
    return status is not None and TournamentStatus(str(status)).over


def read_rows(r: redis.Redis, match_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The standings rows of those matches that have finished, by match id.

    Rows are kept beside each match so that standings never parse transcripts; a
    match whose run died between storing its result and its row is read from the
    result itself.
    """
    pipe = r.pipeline(transaction=False)
    for mid in match_ids:
        pipe.hget(keys.match(mid), "row")
    rows = pipe.execute()
    out: dict[str, dict[str, Any]] = {}
    missing = []
    for mid, raw in zip(match_ids, rows, strict=True):
        if raw:
            out[mid] = json.loads(raw)
        else:
            missing.append(mid)
    if missing:
        pipe = r.pipeline(transaction=False)
        for mid in missing:
            pipe.get(keys.result(mid))
        for mid, raw in zip(missing, pipe.execute(), strict=True):
            if raw:
                done = json.loads(raw)
                record = done["transcript"]
                out[mid] = result_row(mid, record["bot_ids"], done["result"],
                                      record.get("board", ""), record.get("unit", ""))
    return out


def pool_results(r: redis.Redis, pool: str) -> list[dict[str, Any]]:
    """Every finished match of a rating pool (`3p` or `2v2`) as a result row."""
    match_ids: list[str] = r.zrange(keys.results(pool), 0, -1)  # type: ignore[assignment]
    return list(read_rows(r, match_ids).values())
