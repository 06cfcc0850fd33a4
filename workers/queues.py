"""RQ queues, job ids and the worker: every job is enqueued here, with the JSON serializer.

Jobs take only ids and plain values (never pickles). Job ids derive from what
the job is for (`match-<match_id>`), so enqueueing the same thing twice cannot
create a second, different job; the match lease and the write-once result make
even a duplicated run harmless.
"""

from __future__ import annotations

import redis
from rq import Queue, Retry, Worker
from rq.job import Job
from rq.serializers import JSONSerializer

__all__ = [
    "CONTROL_QUEUE",
    "MATCH_QUEUE",
    "enqueue_advance",
    "enqueue_match",
    "make_worker",
    "rq_connection",
]

MATCH_QUEUE = "moonshot-matches"
CONTROL_QUEUE = "moonshot-control"
MATCH_RETRIES = 20  # a match killed mid-game is run again and resumes from its log


def rq_connection(url: str) -> redis.Redis:
    """A bytes-mode client, as RQ requires."""
    return redis.Redis.from_url(url)


def _queue(conn: redis.Redis, name: str) -> Queue:
    return Queue(name, connection=conn, serializer=JSONSerializer)


def enqueue_match(conn: redis.Redis, match_id: str) -> Job:
    """Queue the job that hosts `match_id` (id `match-<match_id>`)."""
    return _queue(conn, MATCH_QUEUE).enqueue(
        "workers.jobs.run_match",
        match_id,
        job_id=f"match-{match_id}",
        retry=Retry(max=MATCH_RETRIES),
        job_timeout=7 * 24 * 3600,
        result_ttl=7 * 24 * 3600,
        failure_ttl=30 * 24 * 3600,
        description=f"host match {match_id}",
    )


def enqueue_advance(conn: redis.Redis, tournament_id: str) -> Job:
    """Queue a scheduling step of a tournament (idempotent; runs serialize on a lock)."""
    return _queue(conn, CONTROL_QUEUE).enqueue(
        "workers.jobs.advance_tournament",
        tournament_id,
        job_id=f"advance-{tournament_id}",
        retry=Retry(max=MATCH_RETRIES),
        job_timeout=3600,
        result_ttl=3600,
        failure_ttl=30 * 24 * 3600,
        description=f"advance tournament {tournament_id}",
    )


def make_worker(conn: redis.Redis, name: str | None = None) -> Worker:
    """A worker on the project's queues (control first, then matches)."""
    # RQ forks a work-horse per job and the horse's imports die with it: import the job
    # code here, once, so every horse starts with it loaded (saves ~0.1 s per job).
    import workers.jobs
    import workers.match
    import workers.standings_view
    import workers.tournament  # noqa: F401

    return Worker(
        [_queue(conn, CONTROL_QUEUE), _queue(conn, MATCH_QUEUE)],
        connection=conn,
        serializer=JSONSerializer,
        name=name,
        # RQ's own clean-up of abandoned jobs runs only when an idle worker's dequeue times
        # out; `workers.recovery` is what re-queues a killed worker's match within seconds.
        maintenance_interval=30,
        job_monitoring_interval=5,
    )
