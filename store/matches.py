"""Matches as stored in Redis: create, read, list, and their result rows.

Every field of a match's hash (`ms:match:{id}`) is written here: at creation; by a
run that starts hosting it (`running`, fenced by the run's lease, see
`store.runs`) or fails (`errored`, fenced too); by whichever run finds the result
stored (`finish`, idempotent); when its board is released (`release`); and by
recovery when no run can host it (`mark_failed`, under the match's lease).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis

from store import deals, ids, keys
from store.errors import InvalidArgument, NotFound
from store.locks import Lock
from store.lua import AFTER_LUA, Command
from store.pools import Pool
from store.records import MatchSpec
from store.refs import EventRef
from store.results import result_row
from store.status import MatchStatus

__all__ = [
    "MatchRecord",
    "close",
    "create_match",
    "errored",
    "exist",
    "finish",
    "get_match",
    "hosted",
    "ids_after",
    "index",
    "load_spec",
    "mark_failed",
    "open_count",
    "open_ids",
    "page_token",
    "pool_results",
    "pool_size",
    "read_logs",
    "read_rows",
    "release",
    "running",
    "stored_result",
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
    and an event's game its event's, in the same transaction (at `listed_at`,
    which orders the games of one step): a reader never meets an id in an index whose
    record is not there yet.
    """
    if spec.event is None:
        # Every deal the stack deals is on its record (store.deals): an event's game's was
        # claimed by the step already; a single match's seed is the organiser's, noted
        # first, so that no later board is dealt it, whoever sits there.
        deals.record(r, spec.seed, spec.match_id)
    now = time.time()
    key = keys.match(spec.match_id)
    pipe = r.pipeline(transaction=True)
    pipe.hsetnx(key, "spec", spec.to_json())
    pipe.hsetnx(key, "status", MatchStatus.QUEUED)
    pipe.hsetnx(key, "created_at", repr(now))
    pipe.zadd(keys.MATCHES, {spec.match_id: now}, nx=True)
    at = now if listed_at is None else listed_at
    if spec.event is not None:
        pipe.zadd(keys.event_games(spec.event), {spec.match_id: at}, nx=True)
    for bot_id in set(spec.bot_ids):
        pipe.zadd(keys.bot_matches(bot_id), {spec.match_id: at}, nx=True)
    # Open (recovery's list) in the same transaction: a match stored but not open, left by
    # a run killed (or a Redis killed) between two writes, would be re-created by no pass
    # (it exists) and looked at by no recovery: queued for ever, with no job. An id stored
    # again whose result is in stays open too: open means "owed something after its
    # result" as well (`close`), and a run that finds the result does what is missing.
    pipe.sadd(keys.OPEN_MATCHES, spec.match_id)
    created, *_ = pipe.execute()
    return bool(created)


def exist(r: Redis, match_ids: Sequence[str]) -> list[bool]:
    """Whether each match is stored, in one round trip."""
    pipe = r.pipeline(transaction=False)
    for match_id in match_ids:
        pipe.exists(keys.match(match_id))
    return [bool(n) for n in pipe.execute()]


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


def load_spec(r: Redis, match_id: str) -> MatchSpec:
    """A match's spec; LookupError when there is no such match."""
    raw = r.hget(keys.match(match_id), "spec")
    if raw is None:
        raise LookupError(f"no match {match_id!r}")
    return MatchSpec.from_json(str(raw))


def running(match_id: str, now: float) -> list[Command]:
    """A run starts hosting the match: running, first started now, one run more (the
    resumes count). Commands for the run's fenced batch."""
    key = keys.match(match_id)
    return [Command("HSET", key, ("status", MatchStatus.RUNNING)),
            Command("HSETNX", key, ("started_at", repr(now))),
            Command("HINCRBY", key, ("runs", 1))]


def errored(match_id: str, error: str) -> Command:
    """A run ended with `error` (kept on the match). A command for the run's fenced batch."""
    return Command("HSET", keys.match(match_id), ("error", error))


def stored_result(r: Redis, match_id: str) -> dict[str, Any] | None:
    """The written-once result and transcript ({"result", "transcript"}), or None."""
    stored = r.get(keys.result(match_id))
    return None if stored is None else dict(json.loads(str(stored)))


def finish(r: Redis, match_id: str, bot_ids: Sequence[str], row: dict[str, Any],
           now: float) -> None:
    """The match's result is stored: finished, with its standings row. Idempotent (every
    run that ends with the result does it again); the match stays open (see `close`)."""
    key = keys.match(match_id)
    pipe = r.pipeline(transaction=True)
    pipe.hset(key, mapping={"status": MatchStatus.FINISHED,
                            "row": json.dumps(row, separators=(",", ":"))})
    pipe.hsetnx(key, "finished_at", repr(now))
    for bot_id in sorted(set(bot_ids)):  # the run that stored the result did it already
        pipe.srem(keys.bot_live(bot_id), match_id)
    pipe.execute()


def close(r: Redis, match_id: str) -> None:
    """Everything owed after the match's result is done: recovery stops looking at it."""
    r.srem(keys.OPEN_MATCHES, match_id)


def mark_failed(r: Redis, match_id: str, error: str) -> MatchSpec | None:
    """Mark a match that no run can host failed, with why: only if no run holds its lease
    (this takes the lease for the write). Its spec, or None when a run holds the lease
    (nothing is written then). The match stays open: the caller closes it (`close`) once
    its event has recorded it, so a crash in between leaves it for recovery to finish."""
    spec = load_spec(r, match_id)
    lease = Lock.fresh(keys.lease(match_id), 5000)
    if not lease.acquire(r):
        return None
    try:
        key = keys.match(match_id)
        done = lease.batch(r, [
            Command("HSET", key, ("status", MatchStatus.FAILED, "error", error)),
            *(Command("SREM", keys.bot_live(b), (match_id,)) for b in sorted(set(spec.bot_ids))),
        ])
    finally:
        lease.release(r)
    return spec if done is not None else None


def release(r: Redis, match_id: str, players: int, when: float, rated: bool = True,
            archive: bool = True) -> None:
    """Make a finished game public: its plays may be watched, (`rated`) it counts in its
    pool's ratings (a test of a change's games are released unrated), and (`archive`) it
    waits to move to the archive (`store.archiving`). An event's step queues its games
    for the archive itself, with the save that folds them (`store.steps.save`)."""
    pipe = r.pipeline(transaction=True)
    pipe.hset(keys.match(match_id), "released", repr(when))
    if rated:
        pipe.zadd(keys.results(Pool.of(players)), {match_id: when}, nx=True)
    if archive:
        pipe.zadd(keys.ARCHIVE_PENDING, {match_id: when}, nx=True)  # public: it may leave
    pipe.execute()


def index(event: EventRef | None = None, bot_id: str = "") -> str:
    """The narrowest time-ordered index holding a listing's matches: an event's (a
    tournament's, a test's, an arena's), a bot's, or every match's."""
    return (keys.event_games(event) if event is not None
            else keys.bot_matches(bot_id) if bot_id else keys.MATCHES)


def read_logs(r: Redis, match_id: str, log_from: int, conn_from: int
              ) -> tuple[list[str], list[str]]:
    """The match's log entries from `log_from` and its connection entries from
    `conn_from` (JSON), read in one snapshot."""
    pipe = r.pipeline(transaction=True)
    pipe.lrange(keys.match_log(match_id), log_from, -1)
    pipe.lrange(keys.conn(match_id), conn_from, -1)
    log, conn = pipe.execute()
    return list(log), list(conn)


def ids_after(r: Redis, index: str, after: str, newest_first: bool) -> list[str]:
    """Ids of a time-ordered index (a zset) that come after the page token `after` ('' from
    the top; `page_token` makes one).

    The position of `after` is looked up in the same atomic step as the read
    (`store.lua.AFTER_LUA`), so a page token stays right while new items arrive: nothing
    repeats or goes missing between pages. A token carries its item's score, so it stays
    right when the item itself leaves the index (a game moved to the archive).
    """
    if not after:
        ids = r.zrevrange(index, 0, -1) if newest_first else r.zrange(index, 0, -1)
        return list(ids)  # type: ignore[arg-type]
    member, _, score = after.rpartition("@") if "@" in after else (after, "", "")
    if score:
        try:
            if not math.isfinite(float(score)):
                raise ValueError(score)
        except ValueError:
            raise InvalidArgument("page_token: not a token this server issued") from None
    found: Any = r.eval(AFTER_LUA, 1, index, member, "1" if newest_first else "0", score)
    if found is None:
        raise InvalidArgument("page_token: not a token this server issued")
    return [str(i) for i in found]


def page_token(r: Redis, index: str, last: str) -> str:
    """The token of a page of `index` that ends with `last`: its id and score."""
    score = r.zscore(index, last)
    return last if score is None else f"{last}@{score!r}"


def open_ids(r: Redis) -> list[str]:
    """Matches without everything owed after their result done yet (recovery's list)."""
    found: Any = r.smembers(keys.OPEN_MATCHES)
    return sorted(str(m) for m in found)


def open_count(r: Redis) -> int:
    """How many matches are open (see `open_ids`)."""
    return int(r.scard(keys.OPEN_MATCHES))


def hosted(r: Redis, match_id: str) -> bool:
    """True while a run holds the match's lease."""
    return bool(r.exists(keys.lease(match_id)))


def abandoned(r: Redis, match_id: str) -> bool:
    """True while the match is open and no run holds its lease (read in one step)."""
    pipe = r.pipeline(transaction=True)
    pipe.sismember(keys.OPEN_MATCHES, match_id)
    pipe.exists(keys.lease(match_id))
    is_open, held = pipe.execute()
    return bool(is_open) and not held


def hosted_many(r: Redis, match_ids: Sequence[str]) -> list[bool]:
    """`hosted` of each match, in one round trip."""
    pipe = r.pipeline(transaction=False)
    for m in match_ids:
        pipe.exists(keys.lease(m))
    return [bool(x) for x in pipe.execute()]


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


def pool_size(r: redis.Redis, pool: str) -> int:
    """How many released matches a rating pool holds."""
    return int(r.zcard(keys.results(pool)))


def pool_results(r: redis.Redis, pool: str) -> list[dict[str, Any]]:
    """Every finished match of a rating pool (`3p` or `2v2`) as a result row, with the time
    it was released into the pool (`released_at`)."""
    scored: list[tuple[str, float]] = r.zrange(  # type: ignore[assignment]
        keys.results(pool), 0, -1, withscores=True)
    when = dict(scored)
    rows = read_rows(r, [mid for mid, _ in scored])
    return [{**row, "released_at": when[mid]} for mid, row in rows.items()]
