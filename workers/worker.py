"""The worker process: an RQ worker on the project's queues that runs only the
project's own job functions (`workers.queues.MoonshotJob`)."""

from __future__ import annotations

import redis
from rq import Worker
from rq.serializers import JSONSerializer

from workers import jobs
from workers.queues import CONTROL_QUEUE, MATCH_QUEUE, MoonshotJob, queue

__all__ = ["make_worker"]

# Imported here so that every forked work-horse starts with the job code loaded
# (RQ forks a horse per job and the horse's imports die with it: ~0.1 s a job).
PRELOADED = (jobs.run_match, jobs.advance_tournament)


def make_worker(conn: redis.Redis, name: str | None = None) -> Worker:
    """A worker on the project's queues (control first, then matches)."""
    return Worker(
        [queue(conn, CONTROL_QUEUE), queue(conn, MATCH_QUEUE)],
        connection=conn,
        serializer=JSONSerializer,
        job_class=MoonshotJob,
        name=name,
        # RQ's own clean-up of abandoned jobs runs only when an idle worker's dequeue times
        # out; `workers.recovery` is what re-queues a killed worker's match within seconds.
        maintenance_interval=30,
        job_monitoring_interval=5,
    )
