"""What a worker takes from the queues: every job is read and checked before a thread gets
it, and a job that is not one of the project's is moved aside, never run and never fatal.

A queue may hold what no worker of this version can run: a job pickled by RQ's default
serializer (a script that enqueued without the project's queues), one written by an
older version of the project, garbage, a hash with fields missing or unparseable, an id
whose hash is gone, or a job naming a function that is not one of `JOB_FUNCTIONS`. RQ
reads a job's data lazily, so before this check such a job raised in the worker's loop
(`job.func_name` -> `DeserializationError`) and the whole process went down with every
match it hosted. Now `VettingQueue` (the worker's `queue_class`) reads each dequeued job
and `refusal` judges it before the worker sees it; a refused job is

- moved into its queue's failed registry (RQ's `rq:failed:<queue>`), its hash marked
  failed with the reason, and the reason as the job's latest result (what `rq info` and
  `Job.latest_result()` show), kept `REFUSED_TTL`;
- logged (an error line naming the job, its queue and why) and counted in
  `moonshot_worker_jobs_refused_total{reason}`;

and the dequeue goes on to the next job, on the general and the reserve path alike.
Nothing else changes: no other job, match or lease is touched. An id with no hash at all
is only logged and counted (`missing`): there is nothing to move. Redis being away is
not a refusal: those errors go up to the worker's loop, which waits for Redis.

Reasons (the metric's label): `unreadable` (the data is not the project's JSON job
tuple), `foreign` (another function, an instance method, or a callback), `arguments`
(a project function with arguments it does not take: ids, as strings), `malformed`
(the hash lacks its data, or RQ cannot parse one of its fields), `missing` (no hash);
`workers.metrics.REFUSAL_REASONS`.
"""

from __future__ import annotations

import inspect
import logging
import zlib
from collections.abc import Callable
from typing import Any

import redis
from rq.exceptions import DeserializationError, NoSuchJobError
from rq.job import Job, JobStatus
from rq.queue import Queue
from rq.registry import FailedJobRegistry
from rq.results import Result
from rq.serializers import JSONSerializer
from rq.utils import current_timestamp, now, utcformat

from workers import jobs, metrics
from workers.queues import JOB_FUNCTIONS, ForeignJobError

__all__ = ["REFUSED", "REFUSED_TTL", "VettingQueue", "refusal", "refuse"]

log = logging.getLogger("moonshot.worker")

REFUSED = "refused job "  # how a refusal's text begins (and MoonshotJob's own refusals)
REFUSED_TTL = 30 * 24 * 3600  # as long as a failed match job is kept
_REDIS_AWAY = (redis.ConnectionError, redis.TimeoutError)
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    name: getattr(jobs, name.rsplit(".", 1)[1]) for name in JOB_FUNCTIONS}


def refusal(job: Job) -> tuple[str, str] | None:
    """Why this job must not run, as (reason, a line for people); None for a job of ours."""
    try:
        read: tuple[Any, ...] = (job.func_name, job.instance, job.args, job.kwargs)
    except DeserializationError as exc:
        if job.data[:1] == b"\x80":  # pickle protocol 2 and later
            return "unreadable", ("its data is a pickle (RQ's default serializer), not a "
                                  "moonshot job's JSON; never unpickled here")
        cause = exc.__cause__
        why = f"{type(cause).__name__}: {str(cause)[:160]}" if cause else "unreadable"
        return "unreadable", f"its data is not a moonshot job's JSON ({why})"
    name, instance, args, kwargs = read
    if name not in _FUNCTIONS or instance is not None:
        return "foreign", f"{str(name)[:200]!r} is not a moonshot job"
    try:
        _ = job.success_callback, job.failure_callback, job.stopped_callback
    except ForeignJobError as exc:
        return "foreign", str(exc)
    if not isinstance(args, list | tuple) or not isinstance(kwargs, dict):
        return "unreadable", "its arguments are not a list and a mapping"
    try:
        inspect.signature(_FUNCTIONS[name]).bind(*args, **kwargs)
    except TypeError as exc:
        return "arguments", f"{name} does not take {_shown(args, kwargs)}: {exc}"
    if not all(isinstance(v, str) for v in (*args, *kwargs.values())):
        return "arguments", f"{name} takes ids (strings), not {_shown(args, kwargs)}"
    return None


def _shown(args: Any, kwargs: Any) -> str:
    return f"{args!r} {kwargs!r}"[:200]


def refuse(conn: redis.Redis, queue: Queue, job_id: str, reason: str, why: str,
           worker_name: str = "") -> None:
    """Move a job aside: out of the queue's intermediate list, into its failed registry with
    the reason (unless it has no hash: `missing`); log it and count it."""
    text = f"{REFUSED}{job_id}: {why}"
    log.error("%s; %s", text, "its id had no job: dropped" if reason == "missing"
              else f"moved to the failed registry of {queue.name}",
              extra={"job_id": job_id, "queue": queue.name, "reason": reason})
    metrics.refused(reason)
    try:
        _move_aside(conn, queue, job_id, reason, text, worker_name, hash_too=True)
    except redis.ResponseError:  # the key is not a hash (planted so): the registry only
        _move_aside(conn, queue, job_id, reason, text, worker_name, hash_too=False)


def _move_aside(conn: redis.Redis, queue: Queue, job_id: str, reason: str, text: str,
                worker_name: str, *, hash_too: bool) -> None:
    pipe = conn.pipeline(transaction=True)
    pipe.lrem(queue.intermediate_queue.key, 0, job_id)
    if reason != "missing":
        if hash_too:
            key = Job.key_for(job_id)
            pipe.hset(key, mapping={"status": JobStatus.FAILED.value,
                                    "ended_at": utcformat(now()),
                                    "exc_info": zlib.compress(text.encode()),
                                    "worker_name": worker_name})
            pipe.expire(key, REFUSED_TTL)
            bare = Job(job_id, connection=conn, serializer=JSONSerializer)
            Result.create_failure(bare, REFUSED_TTL, text, worker_name, pipeline=pipe)
        registry = FailedJobRegistry(queue.name, connection=conn, serializer=JSONSerializer)
        pipe.zadd(registry.key, {job_id: current_timestamp() + REFUSED_TTL})
    pipe.execute()


class VettingQueue(Queue):
    """RQ's queue, but a dequeued job that cannot or must not run is refused (see the
    module doc) and the dequeue goes on, instead of raising into the worker's loop."""

    @classmethod
    def _fetch_dequeued_job(cls, connection: redis.Redis, queue_key: str, job_id: str,
                            job_class: type[Job] | None = None, serializer: Any = None,
                            death_penalty_class: Any = None) -> tuple[Job, Queue] | None:
        """The job and its queue, or None when it was refused (the dequeue loops on)."""
        job_cls: type[Job] = job_class or Job
        queue = cls.from_queue_key(queue_key, connection=connection, job_class=job_cls,
                                   serializer=serializer,
                                   death_penalty_class=death_penalty_class)
        try:
            job = job_cls.fetch(job_id, connection=connection, serializer=serializer)
        except _REDIS_AWAY:
            raise
        except NoSuchJobError as exc:
            if connection.exists(Job.key_for(job_id)):
                refuse(connection, queue, job_id, "malformed", f"its hash has no data ({exc})")
            else:
                refuse(connection, queue, job_id, "missing", "no job hash has this id")
            return None
        except Exception as exc:  # RQ could not parse a field of the hash
            refuse(connection, queue, job_id, "malformed",
                   f"its hash does not parse ({type(exc).__name__}: {str(exc)[:160]})")
            return None
        found = refusal(job)
        if found is not None:
            refuse(connection, queue, job_id, *found)
            return None
        return job, queue
