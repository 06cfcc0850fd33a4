"""Ratings as stored in Redis: each rating method's table of each pool (and its LOS
matrix, for pools of up to LOS_MAX_BOTS bots), the list of methods stored, a tournament's
own table, each bot's rating history, and the coalescing of fit requests.

The fit job writes; the referee reads. A table is a typed record
(`store.rating_tables.RatingTable`, what every rating method returns), one JSON value,
stored under its method's name (`keys.rating_table`). Two methods have roles
(`store.rating_tables`): the official one (`batch`) is the pool's rating, and only its
fits add to the bots' histories; the provisional one stands in for it while newer
results wait for the next fit (`current`). Any other method's table is stored and served
by name, the same way, with nothing here that names it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import redis

from store import keys
from store.coalesce import Asks
from store.locks import Lock
from store.lua import Command
from store.rating_tables import (
    LOS_MAX_BOTS,
    OFFICIAL,
    PROVISIONAL,
    RatingPoint,
    RatingRow,
    RatingTable,
    StoredMethod,
    check_method_name,
)

__all__ = [
    "HISTORY_MAX",
    "LOS_MAX_BOTS",
    "OFFICIAL",
    "PROVISIONAL",
    "QUEUED_S",
    "RatingPoint",
    "RatingRow",
    "RatingTable",
    "StoredMethod",
    "asks",
    "claim_queue",
    "current",
    "current_named",
    "current_ratings",
    "fit_lock",
    "fit_requested",
    "history",
    "load",
    "load_tournament",
    "los_matrix",
    "methods",
    "note_request",
    "requests",
    "restore_request",
    "save",
    "save_tournament",
    "snapshot_due",
    "snapshot_taken",
    "take_request",
    "unqueue",
]

HISTORY_MAX = 1000  # points of rating history kept per bot and pool, the newest


def snapshot_due(r: redis.Redis, pool: str, now: float, every_s: float) -> bool:
    """Whether the pool's tables are owed a snapshot in the archive (none kept for
    `every_s`); the caller writes it, then `snapshot_taken`."""
    last = r.get(keys.rating_snapshot_at(pool))
    return last is None or now - float(str(last)) >= every_s


def snapshot_taken(r: redis.Redis, pool: str, at: float) -> None:
    """Note that the pool's tables as of `at` are in the archive."""
    r.set(keys.rating_snapshot_at(pool), repr(at))


def save(r: redis.Redis, pool: str, method: str, table: RatingTable, title: str = "") -> None:
    """Store a pool's table of rating method `method` (with its LOS matrix, if it has one,
    in the table's order), and list the method with `title` (for people).

    The official method's table also adds a point to the history of every bot whose games
    it counts and the fit before did not (the fit job is the only writer of a pool: it
    holds the pool's lock). A bot whose games did not change keeps its last point, though
    its rating moves a little with the others' games.
    """
    check_method_name(method)
    official = method == OFFICIAL
    before = {row.bot_id: row.games for row in (load(r, pool) or _EMPTY).rows} \
        if official else {}
    pipe = r.pipeline(transaction=True)
    pipe.set(keys.rating_table(pool, method), table.to_json())
    pipe.hset(keys.rating_methods(pool), method,
              StoredMethod(method, title or method, table.games, table.as_of).to_json())
    if official:
        for row in table.rows:
            if before.get(row.bot_id) == row.games:
                continue
            point = RatingPoint(table.as_of, row.rating, row.ci_low, row.ci_high, row.games,
                                table.games)
            key = keys.rating_history(pool, row.bot_id)
            pipe.rpush(key, point.to_json())
            pipe.ltrim(key, -HISTORY_MAX, -1)
    if table.los is not None and len(table.los) <= LOS_MAX_BOTS:
        pipe.set(keys.rating_los(pool, method), json.dumps(table.los))
    else:
        pipe.delete(keys.rating_los(pool, method))
    pipe.execute()


_EMPTY = RatingTable(method="", as_of=0.0, games=0, boards=0, provisional=False, level=0.0)


def history(r: redis.Redis, pool: str, bot_id: str, most: int = HISTORY_MAX
            ) -> list[RatingPoint]:
    """A bot's newest `most` points in a pool, oldest first."""
    raw: list[str] = r.lrange(keys.rating_history(pool, bot_id), -most, -1)  # type: ignore[assignment]
    return [RatingPoint.from_json(x) for x in raw]


def save_tournament(r: redis.Redis, tournament_id: str, table: RatingTable, lock: Lock,
                    pool: str) -> bool:
    """Store the fit over one tournament's own released games and end its "being fitted"
    mark, in one write, only while `lock` (the pool's fit lock) is held by this job;
    False when it is not (nothing is written)."""
    return lock.batch(r, [
        Command("SET", keys.tournament_rating(tournament_id), (table.to_json(),)),
        Command("SREM", keys.ratings_fitting(pool), (tournament_id,))]) is not None


def load(r: redis.Redis, pool: str, method: str = OFFICIAL) -> RatingTable | None:
    """A pool's stored table of rating method `method` (the official one by default), or
    None before its first."""
    raw = r.get(keys.rating_table(pool, method))
    return None if raw is None else RatingTable.from_json(str(raw))


def methods(r: redis.Redis, pool: str) -> list[StoredMethod]:
    """The rating methods with a table of the pool, by name."""
    raw: dict[str, str] = r.hgetall(keys.rating_methods(pool))  # type: ignore[assignment]
    return [StoredMethod.from_json(name, raw[name]) for name in sorted(raw)]


def load_tournament(r: redis.Redis, tournament_id: str) -> RatingTable | None:
    """The fit over a tournament's own games, or None before its first."""
    raw = r.get(keys.tournament_rating(tournament_id))
    return None if raw is None else RatingTable.from_json(str(raw))


def los_matrix(r: redis.Redis, pool: str, method: str = OFFICIAL) -> list[list[float]] | None:
    """The LOS matrix of a method's stored table (M[i][j]: row i over row j), if kept."""
    raw = r.get(keys.rating_los(pool, method))
    return None if raw is None else list(json.loads(raw))


# ------------------------------------------------------- coalesced requests

# A queued fit job unheard of this long counts as lost: the marker lapses and recovery
# queues another (`fit_requested`). A worker killed after it took the job and before it
# started it leaves the marker behind; with an hour's lapse, ratings went stale for an
# hour after such a kill. A job merely slow to start costs one spare job, which finds
# the request taken or the lock held and does nothing.
QUEUED_S = 60


def asks(pool: str) -> Asks:
    """The coalesced asks for a pool's fit (`store.coalesce`: many asks, one job); what a
    fit is asked for besides the pool (tournaments' own fits) is a set of its own."""
    return Asks(keys.ratings_dirty(pool), keys.ratings_queued(pool), keys.ratings_lock(pool),
                QUEUED_S)


def note_request(r: redis.Redis, pool: str, tournament_id: str = "") -> bool:
    """Ask for a fit of `pool` (and of the tournament's own games); True when no fit job is
    queued for it yet, so the caller should queue one. Many requests, one job."""
    if tournament_id:
        r.sadd(keys.ratings_tournaments(pool), tournament_id)  # before the ask that covers it
    return asks(pool).ask(r)


def take_request(r: redis.Redis, pool: str) -> tuple[bool, list[str]]:
    """(a fit was asked for, the tournaments to fit too), taking both. The tournaments
    taken stay marked as being fitted (`ratings_fitting`) until `save_tournament` or
    `restore_request`: an ended tournament does not move to the archive between the
    taking of its fit and the writing of its rating."""
    asked = asks(pool).take(r)
    wanted, fitting = keys.ratings_tournaments(pool), keys.ratings_fitting(pool)
    pipe = r.pipeline(transaction=True)
    pipe.smembers(wanted)
    pipe.sunionstore(fitting, [fitting, wanted])
    pipe.delete(wanted)
    tids: Any = pipe.execute()[0]
    return asked, sorted(str(t) for t in (tids or []))


def reclaim_fitting(r: redis.Redis, pool: str) -> int:
    """Ask again for the tournaments a dead fit job had taken (called by a fit job once it
    holds the pool's lock: a job that lost the lock may still be fitting them, but its
    write is fenced by the lock and lands nowhere); how many."""
    fitting, wanted = keys.ratings_fitting(pool), keys.ratings_tournaments(pool)
    pipe = r.pipeline(transaction=True)
    pipe.scard(fitting)
    pipe.sunionstore(wanted, [wanted, fitting])
    pipe.delete(fitting)
    return int(pipe.execute()[0])


def restore_request(r: redis.Redis, pool: str, tournament_ids: Sequence[str] = (),
                    pool_too: bool = True) -> None:
    """Ask again for what a failed fit job had taken (without queueing a job: recovery
    queues one for a request that has none, see `fit_requested`)."""
    if tournament_ids:
        pipe = r.pipeline(transaction=True)
        pipe.sadd(keys.ratings_tournaments(pool), *tournament_ids)
        pipe.srem(keys.ratings_fitting(pool), *tournament_ids)
        pipe.execute()
    if pool_too:
        asks(pool).ask_again(r)


def owes_tournament(r: redis.Redis, pool: str, tournament_id: str) -> bool:
    """True while a tournament's own fit is asked for or under way."""
    pipe = r.pipeline(transaction=True)  # one instant: a move between the sets is seen
    pipe.sismember(keys.ratings_tournaments(pool), tournament_id)
    pipe.sismember(keys.ratings_fitting(pool), tournament_id)
    return any(pipe.execute())


def fit_lock(pool: str, ttl_ms: int, owner: str = "") -> Lock:
    """A new fit job's lock on the pool (one job fits a pool at a time), naming the worker
    instance that runs it (`owner`)."""
    return Lock.fresh(keys.ratings_lock(pool), ttl_ms, owner)


def fit_holder(r: redis.Redis, pool: str) -> tuple[str, str] | None:
    """(the token, its owner) of the lock a fit of `pool` holds now; None when free."""
    token = r.get(keys.ratings_lock(pool))
    return None if token is None else (str(token), Lock.owner_of(str(token)))


def free_fit(r: redis.Redis, pool: str, token: str) -> bool:
    """Drop a dead fit job's lock (only while `token` still holds it) and ask for the fit
    again: the dead job had taken the request. True when the lock was dropped."""
    if not Lock(keys.ratings_lock(pool), token, 0).release(r):
        return False
    restore_request(r, pool)
    return True


def unqueue(r: redis.Redis, pool: str) -> None:
    """A fit job of `pool` has started: requests from now on queue another one."""
    asks(pool).started(r)


def claim_queue(r: redis.Redis, pool: str) -> bool:
    """Mark a fit job of `pool` as queued; False when one is already (queue none then)."""
    return asks(pool).claim(r)


def requests(r: redis.Redis, pools: Sequence[str]) -> dict[str, tuple[bool, int]]:
    """For each pool: whether a fit is asked for, and how many tournaments wait for one of
    their own games (one round trip)."""
    pipe = r.pipeline(transaction=False)
    for pool in pools:
        pipe.exists(keys.ratings_dirty(pool))
        pipe.scard(keys.ratings_tournaments(pool))
    got = pipe.execute()
    return {pool: (bool(got[2 * i]), int(got[2 * i + 1])) for i, pool in enumerate(pools)}


def fit_requested(r: redis.Redis, pool: str) -> bool:
    """True when a fit was asked for and no job is queued or running for it (a job died or
    failed)."""
    if r.scard(keys.ratings_tournaments(pool)) and not r.exists(keys.ratings_queued(pool)):
        asks(pool).ask_again(r)  # a tournament's fit asked alone: the pool's request covers it
    if r.scard(keys.ratings_fitting(pool)) and not r.exists(keys.ratings_lock(pool)):
        asks(pool).ask_again(r)  # taken by a job that died: the next job reclaims them
    return asks(pool).owed(r)


FIT_SHARE = 0.9  # the fit is served while it covers this share of the provisional's games


def current(r: redis.Redis, pool: str) -> RatingTable | None:
    """What a pool's ratings are now: the fit, unless the provisional figure covers a tenth
    more games than it (results arrived since the fit) or a bot it does not rate.

    A pool whose results never stop (the arena) always has a few games waiting for the
    next fit: the fit, with its intervals, stands while it lags by that little."""
    return current_named(r, pool)[1]


def current_named(r: redis.Redis, pool: str) -> tuple[str, RatingTable | None]:
    """`current`, with the name of the method whose table it is (the official one's name
    when there is none yet)."""
    fitted = load(r, pool)
    live = load(r, pool, PROVISIONAL)
    if fitted is None:
        return (OFFICIAL, None) if live is None else (PROVISIONAL, live)
    if live is None:
        return OFFICIAL, fitted
    rated = {x.bot_id for x in fitted.rows}
    if live.games > fitted.games and (
            fitted.games < FIT_SHARE * live.games or any(x.bot_id not in rated
                                                         for x in live.rows)):
        return PROVISIONAL, live
    return OFFICIAL, fitted


def current_ratings(r: redis.Redis, pool: str) -> dict[str, float]:
    """Each rated bot's current rating in a pool (Elo, pool mean 0)."""
    table = current(r, pool)
    return {} if table is None else {row.bot_id: row.rating for row in table.rows}
