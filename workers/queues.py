"""RQ queues and job ids: every job is enqueued here, with the JSON serializer.

Jobs take only ids and plain values (never pickles). A match's job id derives from
the match (`store.ids.match_job_id`), so queueing the same match twice cannot create
a second, different job; the match lease and the write-once result make even a
duplicated run harmless. A scheduling step's and a fit's jobs are asked for far more
often than they run, so their asks are coalesced (`store.coalesce`: many asks, one
queued job) and each job gets a fresh id: a job asked for while one runs must not
overwrite the running job's record. This module imports no job code: the gateway
imports it to enqueue, and the worker (`workers.worker`) imports the jobs.
"""

from __future__ import annotations

import secrets
from typing import Any

import redis
from rq import Queue, Retry
from rq.job import Job
from rq.registry import FinishedJobRegistry
from rq.results import Result
from rq.serializers import JSONSerializer

from store import archiving as store_archiving
from store import changes as store_changes
from store import ids, steps
from store import ratings as store_ratings
from store import tournaments as store_t
from store.records import TournamentSpec
from store.refs import EventRef

__all__ = [
    "ADVANCE_JOB",
    "ARCHIVE_JOB",
    "ARENA_JOB",
    "CONTROL_QUEUE",
    "FIT_JOB",
    "JOB_FUNCTIONS",
    "MATCH_JOB",
    "MATCH_QUEUE",
    "RESUME_QUEUE",
    "ForeignJobError",
    "MoonshotJob",
    "create_test",
    "create_tournament",
    "enqueue_advance",
    "enqueue_archive",
    "enqueue_fit",
    "enqueue_match",
    "queue",
    "request_archive",
    "request_arena_step",
    "request_fit",
    "request_step",
    "rq_connection",
    "taken",
    "waiting",
]

MATCH_QUEUE = "moonshot-matches"
CONTROL_QUEUE = "moonshot-control"
RESUME_QUEUE = "moonshot-resume"  # interrupted matches: taken before any new one
MATCH_RETRIES = 20  # a match killed mid-game is run again and resumes from its log
MATCH_RESULT_TTL = 300  # seconds RQ keeps a finished match job (and its result)

MATCH_JOB = "workers.jobs.run_match"
ADVANCE_JOB = "workers.jobs.advance_tournament"
FIT_JOB = "workers.jobs.fit_ratings"
ARENA_JOB = "workers.jobs.arena_step"  # jobs queued before the arena was a planner
ARCHIVE_JOB = "workers.jobs.archive_games"
# The only functions a worker will run.
JOB_FUNCTIONS = (MATCH_JOB, ADVANCE_JOB, FIT_JOB, ARENA_JOB, ARCHIVE_JOB)


class ForeignJobError(Exception):
    """A job names a function (or a callback) that is not one of the project's jobs."""


class MoonshotJob(Job):
    """An RQ job that resolves only the project's job functions, and no callbacks.

    Redis is trusted, but a job hash planted there must not become code that every
    worker runs: the check comes before RQ imports anything the job names.
    """

    @property
    def func(self) -> Any:
        """The job function, if it is one of `JOB_FUNCTIONS`; else ForeignJobError."""
        name = self.func_name
        if name not in JOB_FUNCTIONS or self.instance is not None:
            raise ForeignJobError(f"refused job {self.id}: {name!r} is not a moonshot job")
        return super().func

    def _no_callback(self, name: str | None) -> None:
        if name:
            raise ForeignJobError(f"refused job {self.id}: it names callback {name!r}")

    @property
    def success_callback(self) -> None:
        """Never a callback: the project sets none."""
        self._no_callback(self._success_callback_name)

    @property
    def failure_callback(self) -> None:
        """Never a callback: the project sets none."""
        self._no_callback(self._failure_callback_name)

    @property
    def stopped_callback(self) -> None:
        """Never a callback: the project sets none."""
        self._no_callback(self._stopped_callback_name)


def rq_connection(url: str) -> redis.Redis:
    """A bytes-mode client, as RQ requires."""
    return redis.Redis.from_url(url)


def queue(conn: redis.Redis, name: str) -> Queue:
    """One of the project's queues, with the JSON serializer."""
    return Queue(name, connection=conn, serializer=JSONSerializer, job_class=MoonshotJob)


def waiting(conn: redis.Redis, name: str) -> set[str]:
    """The ids of the jobs waiting in the RQ queue `name` (not merely marked queued)."""
    return set(queue(conn, name).get_job_ids())


def taken(conn: redis.Redis, name: str) -> set[str]:
    """The ids of the jobs a worker has taken from queue `name` and not started yet (RQ's
    intermediate list: a busy worker may hold one there for seconds)."""
    return set(queue(conn, name).intermediate_queue.get_job_ids())


def enqueue_match(conn: redis.Redis, match_id: str, resume: bool = False) -> Job:
    """Queue the job that hosts `match_id`; `resume` for a match that was interrupted, so
    that it starts again before any new match (RQ's retries go to the front too)."""
    return queue(conn, RESUME_QUEUE if resume else MATCH_QUEUE).enqueue(
        MATCH_JOB,
        match_id,
        job_id=ids.match_job_id(match_id),
        retry=Retry(max=MATCH_RETRIES, enqueue_at_front=True),
        job_timeout=7 * 24 * 3600,
        # The result is the match's own (its record, then the archive): RQ keeps its copy
        # only a few minutes, so finished games leave nothing of theirs in Redis.
        result_ttl=MATCH_RESULT_TTL,
        failure_ttl=30 * 24 * 3600,
        description=f"host match {match_id}",
    )


def forget_match_jobs(conn: redis.Redis, match_ids: list[str]) -> None:
    """Delete what RQ keeps of finished match jobs (the job hash and its result stream,
    about 5 KB a game on Redis 6.2 and 7.0, which give a one-entry stream a whole 4 KB
    node) once their games are in the archive: a game leaves Redis with its job, and
    what RQ holds is bounded by the games not archived yet, not by `MATCH_RESULT_TTL`
    times the rate of play. One pipeline; a job that is gone already costs nothing
    (RQ's registries drop ids of missing jobs when they clean up)."""
    if not match_ids:
        return
    finished = [FinishedJobRegistry(name, connection=conn).key
                for name in (MATCH_QUEUE, RESUME_QUEUE)]
    pipe = conn.pipeline(transaction=False)
    for mid in match_ids:
        job_id = ids.match_job_id(mid)
        pipe.delete(Job.key_for(job_id), Result.get_key(job_id))  # type: ignore[no-untyped-call]
        for key in finished:
            pipe.zrem(key, job_id)
    pipe.execute()


def enqueue_advance(conn: redis.Redis, ref: EventRef) -> Job:
    """Queue a job of the event's scheduling step (`request_step` makes one job serve many
    asks; runs serialize on the event's lock)."""
    return queue(conn, CONTROL_QUEUE).enqueue(
        ADVANCE_JOB,
        str(ref),
        job_id=f"{ids.advance_job_id(f'{ref.kind}-{ref.id}')}-{secrets.token_hex(4)}",
        retry=Retry(max=MATCH_RETRIES),
        job_timeout=3600,
        result_ttl=0,  # nothing reads it: the step's work is in the stack's own keys
        failure_ttl=30 * 24 * 3600,
        description=f"scheduling step of {ref}",
    )


def request_step(r: redis.Redis, rq_conn: redis.Redis, ref: EventRef) -> None:
    """Ask the event's scheduling step to look again (a game of it was recorded, a bot of the
    arena came back, it was created or stopped). Many asks, one job (`store.coalesce`)."""
    if steps.asks(ref).ask(r):
        enqueue_advance(rq_conn, ref)


def enqueue_fit(conn: redis.Redis, pool: str) -> Job:
    """Queue a rating fit of a pool (`request_fit` makes sure one job serves many asks)."""
    return queue(conn, CONTROL_QUEUE).enqueue(
        FIT_JOB,
        pool,
        job_id=f"{ids.fit_job_id(pool)}-{secrets.token_hex(4)}",
        retry=Retry(max=MATCH_RETRIES),
        job_timeout=3600,
        result_ttl=0,  # nothing reads it: the tables are in the stack's own keys
        failure_ttl=30 * 24 * 3600,
        description=f"fit ratings of pool {pool}",
    )


def request_fit(r: redis.Redis, rq_conn: redis.Redis, pool: str, tournament_id: str = "") -> None:
    """Ask for a fit of `pool` (and of the tournament's own games) after a release."""
    if store_ratings.note_request(r, pool, tournament_id):
        enqueue_fit(rq_conn, pool)


def enqueue_archive(conn: redis.Redis) -> Job:
    """Queue a job that moves finished, public games to the archive (`request_archive`
    makes one job serve many asks)."""
    return queue(conn, CONTROL_QUEUE).enqueue(
        ARCHIVE_JOB,
        job_id=f"archive-{secrets.token_hex(4)}",
        retry=Retry(max=MATCH_RETRIES),
        job_timeout=3600,
        result_ttl=0,  # nothing reads it: the games moved are in the archive
        failure_ttl=7 * 24 * 3600,
        description="move finished games to the archive",
    )


def request_archive(r: redis.Redis, rq_conn: redis.Redis) -> None:
    """Ask for games to be moved to the archive (a board was released, a single match
    ended). Many asks, one job (`store.coalesce`)."""
    if store_archiving.asks().ask(r):
        enqueue_archive(rq_conn)


def request_arena_step(r: redis.Redis, rq_conn: redis.Redis, pool: str) -> None:
    """Ask for a matchmaking step of a pool's arena: a bot joined or came back."""
    request_step(r, rq_conn, EventRef.arena(pool))


def create_tournament(r: redis.Redis, rq_conn: redis.Redis, spec: TournamentSpec) -> None:
    """Store a new tournament (one transaction: spec, status, listing, live) and ask for its
    first scheduling step."""
    store_t.create(r, spec)
    request_step(r, rq_conn, EventRef.tournament(spec.tournament_id))


def create_test(r: redis.Redis, rq_conn: redis.Redis, spec: store_changes.ChangeTestSpec) -> None:
    """Store a new test of a change (one transaction) and ask for its first scheduling step."""
    store_changes.create(r, spec)
    request_step(r, rq_conn, EventRef.test(spec.test_id))
