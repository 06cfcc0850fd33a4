"""The RQ entry points: thin wrappers that open Redis and call the real code.

Jobs take only ids (JSON serializer); everything else is read from Redis.
The names of these functions are `workers.queues.JOB_FUNCTIONS`: a worker runs
nothing else.
"""

from __future__ import annotations

import time
from typing import Any

import redis
from rq import get_current_job

from store import keys
from workers.match import MatchHost
from workers.scheduler import advance

__all__ = ["advance_tournament", "job_redis", "run_match"]


def job_redis() -> tuple[redis.Redis, redis.Redis, str]:
    """A str-mode client on the job's Redis, RQ's own client, and an id for this run."""
    job = get_current_job()
    if job is None:
        raise RuntimeError("this function runs inside an RQ job")
    pool = job.connection.connection_pool
    kwargs = dict(pool.connection_kwargs)
    kwargs["decode_responses"] = True
    r = redis.Redis(connection_pool=redis.ConnectionPool(connection_class=pool.connection_class,
                                                         **kwargs))
    return r, job.connection, f"{job.id}:{job.worker_name or ''}:{time.time()}"


def run_match(match_id: str) -> dict[str, Any]:
    """Host match `match_id` to its end and return its result."""
    r, rq_conn, run_id = job_redis()
    try:
        return MatchHost(r, match_id, run_id, rq_conn=rq_conn).run()
    except Exception as exc:
        r.hset(keys.match(match_id), mapping={"error": f"{type(exc).__name__}: {exc}"})
        raise


def advance_tournament(tournament_id: str) -> dict[str, Any]:
    """One scheduling step of a tournament."""
    r, rq_conn, _ = job_redis()
    return advance(r, rq_conn, tournament_id)
