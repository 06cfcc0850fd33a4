"""The rating fit, as the body of an RQ job: load a pool's released results, rate them with
every registered rating method, store each table under its method's name.

Fits are coalesced: every release asks for one (`workers.queues.request_fit`), and a
job queued once serves every request made until it starts; while it runs, it loops
as long as new requests came in, so a burst of results costs a few fits, not one a
result. Methods run in the registry's order (`ratings.methods.METHODS`), each table
stored as soon as it is made: the provisional figure comes first, so while a large
pool's batch fit runs, GetRatings serves it. The official method's failure fails the
fit (the request stands, see `run_fits`); any other method's is logged and leaves its
previous table, so a new method cannot take the pool's rating down. No method is named
here but the official one, whose table is also a tournament's own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import redis
from sqlalchemy.exc import SQLAlchemyError

from archive import mover, reads
from archive.db import Archive
from archive.errors import ArchiveError
from ratings import Game, RatingError, games_from_rows, methods
from ratings.table import GameTable
from store import matches as store_matches
from store import ratings as store_ratings
from store import tournaments as store_t
from store.locks import patiently
from store.pools import Pool
from store.rating_tables import OFFICIAL, RatingTable
from workers import failpoints, metrics
from workers.memory import fit_memory

__all__ = ["OFFICIAL", "POOLS", "run_fits"]

log = logging.getLogger("moonshot.ratings")

POOLS = tuple(str(p) for p in Pool)
LOCK_MS = 600_000  # extended after every fit; a dead job's lock is freed by recovery
SNAPSHOT_EVERY_S = 3600.0  # a pool's tables are kept in the archive about once an hour


def _games(rows: Iterable[Mapping[str, Any]], where: str) -> list[Game]:
    """The rows as rating games; a malformed stored row is logged and left out rather than
    taking every rating down with it."""
    out: list[Game] = []
    for row in rows:
        try:
            out.extend(games_from_rows([row]))
        except (RatingError, KeyError, TypeError, ValueError) as exc:
            log.error("ratings %s: skipping match %s: %s", where, row.get("match_id"), exc)
    return out


def pool_rows(r: redis.Redis, pool: str, archive: Callable[[], Archive] | None = None
              ) -> list[dict[str, Any]]:
    """Every released, rated result of a pool: the archive's, and those Redis holds still
    (not archived yet); a game in both (a crash between the two stores) counts once."""
    rows = {row["match_id"]: row for row in store_matches.pool_results(r, pool)}
    if archive is not None:
        for row in reads.pool_rows(archive(), Pool.parse(pool)):
            rows.setdefault(row["match_id"], row)
    return list(rows.values())


def pool_table(r: redis.Redis, pool: str, archive: Callable[[], Archive] | None = None
               ) -> GameTable:
    """Every released, rated result of a pool as columns: the archive's read in bulk
    (`archive.reads.pool_columns`), then those Redis holds still; a game in both (a move
    cut short between its write and its drop) counts once. Redis is read first: a game
    that moves meanwhile is then in the archive when it is read."""
    rows = store_matches.pool_results(r, pool)
    tables = []
    if archive is not None:
        a = archive()
        cols = reads.pool_columns(a, Pool.parse(pool))
        tables.append(GameTable(cols.ids, cols.unit, cols.seat_bot, cols.place, cols.bots,
                                cols.units, cols.released_at))
        held = reads.archived_of(a, [str(row["match_id"]) for row in rows])
        rows = [row for row in rows if row["match_id"] not in held]
    tables.append(GameTable.from_games(_games(rows, pool)))
    return GameTable.concat(tables)


def fit_pool(r: redis.Redis, pool: str, archive: Callable[[], Archive] | None = None
             ) -> RatingTable:
    """Rate a pool over its released results with every method, storing each table as it
    is made; the official method's table."""
    now = time.time()
    official: RatingTable | None = None
    tables: dict[str, RatingTable] = {}
    with fit_memory():  # a large pool's read and fits keep their freed memory meanwhile
        games = pool_table(r, pool, archive)
        for name in methods.names():
            method = methods.get(name)
            try:
                table = method.rate_table(games, now)
            except Exception:
                if name == OFFICIAL:
                    raise
                log.exception("ratings %s: method %s failed; its last table stands", pool,
                              name)
                continue
            if name == OFFICIAL:
                failpoints.reached("fit.before-save")
                official = table
            store_ratings.save(r, pool, name, table, method.title)
            tables[name] = table
    assert official is not None, "the official method is registered"
    if archive is not None and store_ratings.snapshot_due(r, pool, now, SNAPSHOT_EVERY_S):
        _snapshot(r, pool, archive, now, tables)
    return official


def _snapshot(r: redis.Redis, pool: str, archive: Callable[[], Archive], now: float,
              tables: Mapping[str, RatingTable]) -> None:
    """Keep the pool's tables in the archive: how the ratings stood through a season. An
    archive away costs the snapshot, never the fit (the next fit tries again)."""
    try:
        for name, table in tables.items():
            mover.write_rating_snapshot(archive(), pool, name, now, table.to_json())
    except (ArchiveError, SQLAlchemyError, OSError) as exc:
        log.warning("ratings %s: no snapshot kept in the archive: %s", pool,
                    str(exc).splitlines()[0][:200])
        return
    store_ratings.snapshot_taken(r, pool, now)


def rate_tournament(r: redis.Redis, tournament_id: str) -> RatingTable:
    """The official method's table over a tournament's own released games."""
    rows = store_t.results(r, tournament_id, released_only=True).values()
    return methods.get(OFFICIAL).rate(_games(rows, tournament_id), time.time())


def run_fits(r: redis.Redis, pool: str, lock_ms: int = LOCK_MS,
             instance: str = "", archive: Callable[[], Archive] | None = None
             ) -> dict[str, Any]:
    """The job: fit the pool (and the tournaments asked for) while requests keep coming;
    `archive` gives the stack's archive (its games count), None for a stack without one.

    A job that finds its lock lost after a fit (it stalled past `lock_ms`; another job
    may be fitting now) stops there and leaves the rest to the holder. The lock names the
    worker `instance` running the job: when that worker dies, recovery frees the lock and
    asks again at once (`workers.recovery.nudge`) rather than after `lock_ms`."""
    store_ratings.unqueue(r, pool)  # requests from now on queue another job
    lock = store_ratings.fit_lock(pool, lock_ms, instance)
    if not lock.acquire(r):
        return {"pool": pool, "skipped": "another fit of this pool is running"}
    try:
        if reclaimed := store_ratings.reclaim_fitting(r, pool):
            log.warning("ratings %s: %d tournament fit(s) of a job that died, asked again",
                        pool, reclaimed)
    except BaseException:
        lock.release_patiently(r)
        raise
    fits = 0
    games = 0
    # What this job took from the requests and has not fitted: asked again if it fails,
    # so a fit that raises (or a worker killed mid-fit) leaves the request standing and
    # recovery queues a new job for it, rather than ratings stale until the next result.
    pool_owed, tids_owed = False, set[str]()
    failed: list[str] = []
    lost = False
    try:
        while True:
            asked, tids = store_ratings.take_request(r, pool)
            if not asked and not tids:
                break
            pool_owed, tids_owed = True, tids_owed | set(tids)
            with metrics.FIT_SECONDS.labels(pool).time():
                games = fit_pool(r, pool, archive).games
            pool_owed = False
            metrics.FITS.labels(pool).inc()
            for tid in tids:
                try:
                    table = rate_tournament(r, tid)
                except Exception:  # one tournament's failure must not cost the others theirs
                    log.exception("ratings %s: the fit of tournament %s failed", pool, tid)
                    failed.append(tid)  # asked again below (and no longer being fitted)
                    tids_owed.discard(tid)
                    continue
                # The rating and the end of its "being fitted" mark, in one write fenced
                # by this job's lock: a job that lost it writes nothing (the job that
                # holds it now reclaimed this tournament and fits it itself).
                if not store_ratings.save_tournament(r, tid, table, lock, pool):
                    lost = True
                    break
                tids_owed.discard(tid)
            if lost:
                log.warning("ratings %s: this fit's lock was lost; the job holding it "
                            "fits what is left", pool)
                break
            fits += 1
            if not lock.extend(r):
                log.warning("ratings %s: this fit's lock lapsed; another job goes on", pool)
                break
    finally:
        try:
            if pool_owed or tids_owed or failed:
                patiently(lambda: store_ratings.restore_request(
                    r, pool, sorted(tids_owed | set(failed)), pool_too=pool_owed))
        finally:
            lock.release_patiently(r)
    if failed:
        raise RatingError(f"the fits of tournament(s) {', '.join(failed)} failed; asked again")
    log.info("ratings %s: %d fit(s), %d games", pool, fits, games)
    return {"pool": pool, "fits": fits, "games": games}
