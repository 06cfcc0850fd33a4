"""The RQ entry points: thin wrappers that open Redis and call the real code.

Jobs take only ids (JSON serializer); everything else is read from Redis.
The names of these functions are `workers.queues.JOB_FUNCTIONS`: a worker runs
nothing else.
"""

from __future__ import annotations

import functools
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import redis
from rq import get_current_job

from archive.db import Archive, open_archive
from store import matches as store_matches
from store.refs import EventRef
from telemetry import logs
from workers import metrics
from workers.archiving import run_archive
from workers.fit import run_fits
from workers.match import STOPPING, HandedOver, LostLease, MatchHost
from workers.scheduler import advance

__all__ = ["OUTAGE_S", "advance_tournament", "archive_games", "arena_step", "fit_ratings",
           "job_redis", "open_archive_once", "run_match", "share_redis", "use_archive"]

log = logging.getLogger("moonshot.match")

OUTAGE_S = 600.0  # how long a hosted match waits for Redis to come back before giving up
_SHARED: list[redis.Redis] = []  # the worker process's client for every job thread
_ARCHIVE_URL: list[str] = []  # the stack's archive (`use_archive`), opened on first use
_ARCHIVE: list[Archive] = []
_ARCHIVE_LOCK = threading.Lock()


def _str_client(conn: redis.Redis, max_connections: int | None) -> redis.Redis:
    """A str-mode client on the same server as `conn` (bounded when asked)."""
    pool = conn.connection_pool
    kwargs = dict(pool.connection_kwargs)
    kwargs["decode_responses"] = True
    if max_connections is None:
        return redis.Redis(connection_pool=redis.ConnectionPool(
            connection_class=pool.connection_class, **kwargs))
    return redis.Redis(connection_pool=redis.BlockingConnectionPool(  # type: ignore[no-untyped-call]
        connection_class=pool.connection_class, max_connections=max_connections, timeout=60,
        **kwargs))


def share_redis(conn: redis.Redis, max_connections: int) -> None:
    """Give every job of this process one client of at most `max_connections` connections."""
    _SHARED[:] = [_str_client(conn, max_connections)]


def use_archive(url: str) -> None:
    """Archive finished games at `url` (the worker's `--archive`, or the stack's)."""
    _ARCHIVE_URL[:] = [url]


def open_archive_once() -> Archive:
    """The worker process's archive, opened (and migrated) on first use; ArchiveError when
    it cannot be reached, which a job survives (the games wait in Redis)."""
    with _ARCHIVE_LOCK:
        if not _ARCHIVE:
            _ARCHIVE.append(open_archive(_ARCHIVE_URL[0]))
        return _ARCHIVE[0]


def job_redis() -> tuple[redis.Redis, redis.Redis, str]:
    """A str-mode client on the job's Redis, RQ's own client, and an id for this run."""
    job = get_current_job()
    if job is None:
        raise RuntimeError("this function runs inside an RQ job")
    r = _SHARED[0] if _SHARED else _str_client(job.connection, None)
    return r, job.connection, f"{job.id}:{job.worker_name or ''}:{time.time()}"


def _match_fields(match_id: str) -> dict[str, Any]:
    """The ids a match's log lines carry: its bots and event (none if unreadable)."""
    try:
        spec = store_matches.load_spec(job_redis()[0], match_id)
    except Exception:  # Redis away, no such match: the run itself will say so
        return {}
    fields: dict[str, Any] = {"bot_ids": list(spec.bot_ids)}
    if spec.event is not None:
        fields["event"] = str(spec.event)
    return fields


def _hosting(fn: Callable[[str], dict[str, Any]]) -> Callable[[str], dict[str, Any]]:
    """While `fn` hosts a match: count it live, and tag every log line with its ids."""

    @functools.wraps(fn)
    def host(match_id: str) -> dict[str, Any]:
        with logs.context(match_id=match_id, **_match_fields(match_id)), \
                metrics.LIVE_MATCHES.track_inprogress():
            log.info("hosting match %s", match_id)
            out = fn(match_id)
            if "end" in out:
                log.info("match %s ended: %s", match_id, out["end"])
            else:
                log.info("match %s: this run stops (%s)", match_id, ", ".join(out))
            return out

    return host


@_hosting
def run_match(match_id: str) -> dict[str, Any]:
    """Host match `match_id` to its end and return its result.

    Redis going away does not end the job: it waits (backoff with jitter, up to
    OUTAGE_S) and resumes the match from its log, as a new run would. Any other error
    fails the job (RQ retries it) after the run noted it on the match.
    """
    r, rq_conn, run_id = job_redis()
    waited, backoff = 0.0, 0.5
    while True:
        try:
            return MatchHost(r, match_id, run_id, rq_conn=rq_conn).host()
        except HandedOver:
            return {"handed_over": True}  # the worker stops; recovery queues it again
        except LostLease as exc:
            # This run stalled past its lease and another took the match over: it stops,
            # and the fenced writes saw to it that it wrote nothing meanwhile.
            log.warning("%s; this run stops", exc)
            return {"lost_lease": True}
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            metrics.fault("redis_outage")
            if STOPPING.is_set() or waited > OUTAGE_S:
                raise
            pause = backoff * random.uniform(0.5, 1.5)
            log.warning("match %s: Redis unreachable (%s); resuming in %.1f s", match_id,
                        exc, pause)
            time.sleep(pause)
            waited += pause
            backoff = min(backoff * 2, 15.0)


def advance_tournament(event: str) -> dict[str, Any]:
    """Passes of an event's scheduling step (`<kind>:<id>`; a bare tournament or test id, as
    jobs queued before events had kinds named them)."""
    r, rq_conn, _ = job_redis()
    ref = EventRef.parse(event)
    job = get_current_job()
    with logs.context(event=str(ref)):
        return advance(r, rq_conn, ref,
                       instance=str(job.meta.get("instance", "")) if job else "")


def fit_ratings(pool: str) -> dict[str, Any]:
    """Fit a rating pool (coalesced: see `workers.fit`)."""
    r, _, _ = job_redis()
    job = get_current_job()
    return run_fits(r, pool, instance=str(job.meta.get("instance", "")) if job else "",
                    archive=open_archive_once if _ARCHIVE_URL else None)


def arena_step(pool: str) -> dict[str, Any]:
    """Passes of a pool's arena's step (what jobs queued before the arena was one of the
    step's planners call)."""
    return advance_tournament(str(EventRef.arena(pool)))


def archive_games() -> dict[str, Any]:
    """Move finished, public games to the archive (coalesced: see `workers.archiving`)."""
    r, rq_conn, _ = job_redis()
    if not _ARCHIVE_URL:
        return {"skipped": "this worker has no archive"}
    job = get_current_job()
    return run_archive(r, rq_conn, open_archive_once,
                       instance=str(job.meta.get("instance", "")) if job else "")
