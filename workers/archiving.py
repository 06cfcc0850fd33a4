"""Moving finished, public games from Redis to the archive, as an RQ job.

Every release asks for it (`workers.queues.request_archive`: many asks, one job, as for
the fit and the step); the job takes the games waiting (`store.archiving.pending`,
oldest first) in batches of BATCH: reads them from Redis, writes them to the archive in
one transaction (`archive.mover.write`), then drops them from Redis in one transaction
(`store.archiving.drop`; their RQ jobs keep a finished job a few minutes only,
`workers.queues.MATCH_RESULT_TTL`); it goes on while games wait, up to
MAX_BATCHES a job (then it yields the control queue and the ask left standing gets a
job of its own).

Faults: the archive away (PostgreSQL stopped, a full disk, a locked SQLite) fails the
batch's transaction: nothing is dropped, the games wait in Redis (their count is the
`moonshot_archive_pending` gauge, and the job logs it), the ask stands, and recovery
asks again every few seconds until the archive is back. A job killed between the
archive's commit and Redis's drop leaves the batch in both places; the next job writes
it again (a no-op: `match_id` is unique) and drops it. So a game is always readable from
Redis or the archive, and counted once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import redis
from sqlalchemy.exc import InterfaceError, OperationalError, SQLAlchemyError

from archive import mover
from archive.db import Archive
from archive.errors import ArchiveError
from store import archiving, steps
from workers import failpoints, metrics
from workers.queues import enqueue_archive, forget_match_jobs

__all__ = ["BATCH", "LOCK_MS", "MAX_BATCHES", "run_archive"]

log = logging.getLogger("moonshot.archive")

BATCH = 500  # games a transaction
MAX_BATCHES = 40  # batches a job makes before it yields the control queue
LOCK_MS = 120_000  # extended after every batch; a dead job's lock is freed by recovery
_WARN_EVERY_S = 60.0
_last_warning = [0.0]


def run_archive(r: redis.Redis, rq_conn: redis.Redis, archive: Callable[[], Archive],
                instance: str = "") -> dict[str, Any]:
    """The job: batches while games wait. `archive` opens (or gives the open) archive: it
    raises when the archive cannot be reached, which this job survives."""
    asks = archiving.asks()
    asks.started(r)
    asks.ask_again(r)
    lock = archiving.job_lock(LOCK_MS, instance)
    if not lock.acquire(r):
        return {"skipped": "another archiving job is running"}
    moved = batches = moved_events = 0
    try:
        while batches < MAX_BATCHES and asks.take(r):
            while batches < MAX_BATCHES:
                ids = archiving.pending(r, BATCH)
                if not ids:
                    break
                moved += _batch(r, rq_conn, archive(), ids)
                batches += 1
                if not lock.extend(r):
                    log.warning("archive: this job's lock lapsed; another job goes on")
                    return {"moved": moved, "skipped": "lost the lock"}
            if batches >= MAX_BATCHES and archiving.pending(r, 1):
                asks.ask_again(r)  # more wait: the job queued below takes them
            else:
                moved_events += _events(r, archive(), instance)
    except (ArchiveError, SQLAlchemyError, OSError) as exc:
        asks.ask_again(r)  # the games wait in Redis; recovery asks again
        metrics.ARCHIVE_ERRORS.inc()
        _warn(r, exc)
        return {"moved": moved, "failed": str(exc).splitlines()[0][:300]}
    finally:
        lock.release_patiently(r)
    if asks.owed(r) and asks.claim(r):
        enqueue_archive(rq_conn)
    return {"moved": moved, "batches": batches, "events": moved_events}


# Errors that say the archive (or Redis) is away, not that a game is one it cannot take:
# the whole batch waits for them to pass.
_AWAY = (OperationalError, InterfaceError, ArchiveError, OSError, redis.RedisError)


def _batch(r: redis.Redis, rq_conn: redis.Redis, archive: Archive, ids: list[str]) -> int:
    """One batch: read, write in one transaction, then drop from Redis. A batch the
    archive refuses for what is in it (not for being away) is split until the game it
    refuses is found, which is set aside (`store.archiving.park`): one bad record never
    holds up the stack's archiving."""
    started = time.perf_counter()
    try:
        leaving, gone = archiving.read(r, ids)
        new = mover.write(archive, leaving)
    except _AWAY:
        raise
    except Exception as exc:
        if len(ids) > 1:
            half = len(ids) // 2
            return (_batch(r, rq_conn, archive, ids[:half])
                    + _batch(r, rq_conn, archive, ids[half:]))
        why = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
        archiving.park(r, ids[0], why)
        metrics.ARCHIVE_PARKED.inc()
        log.error("archive: game %s set aside, the archive cannot take it (it stays in "
                  "Redis; queued again at a worker's start): %s", ids[0], why)
        return 0
    failpoints.reached("archive.before-drop")
    archiving.drop(r, leaving, gone)
    forget_match_jobs(rq_conn, [g.spec.match_id for g in leaving])
    metrics.ARCHIVE_MOVED.inc(len(leaving))
    metrics.ARCHIVE_SECONDS.observe(time.perf_counter() - started)
    if new < len(leaving):
        log.info("archive: %d of %d games were archived already (a batch redone)",
                 len(leaving) - new, len(leaving))
    return len(leaving)


def _events(r: redis.Redis, archive: Archive, instance: str = "") -> int:
    """Move the ended tournaments and tests whose games are all archived; how many.

    Each under its step's lock, and only when no step is owed (not live, not asked for):
    a last step folding its final games must not run while the event is copied and
    deleted (its writes would be lost, or left behind as keys of an event gone)."""
    moved = 0
    live = set(steps.live_events(r))
    for ref in archiving.ended_events(r):
        if ref in live:
            continue
        lock = steps.step_lock(ref, LOCK_MS, instance)
        if not lock.acquire(r):
            continue  # its step is running: a later job
        try:
            s = steps.scheduling(r, ref)
            if s.asked or s.queued:
                continue  # a step is owed first
            snapshot = archiving.event_snapshot(r, ref)
            if snapshot is None:
                continue  # a game of it still to archive, or its own fit owed: a later job
            mover.write_event(archive, ref, snapshot)
            failpoints.reached("archive.before-drop")
            archiving.drop_event(r, ref, snapshot)
            moved += 1
            log.info("archive: %s moved out of Redis", ref)
        finally:
            lock.release_patiently(r)  # (gone with the event when it moved)
    return moved


def _warn(r: redis.Redis, exc: BaseException) -> None:
    """Say, at most once a minute, that the archive is away and how many games wait."""
    now = time.monotonic()
    if now - _last_warning[0] < _WARN_EVERY_S:
        return
    _last_warning[0] = now
    try:
        waiting = archiving.pending_count(r)
    except redis.RedisError:
        waiting = -1
    first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
    log.warning("archive unavailable (%s): %d finished games wait in Redis; trying again",
                first, waiting)
