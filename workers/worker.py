"""The worker process: hosts many matches at once, each still one RQ job.

A match spends nearly all its life waiting for bots, so a process per match (RQ's
forking `Worker`) wastes memory and caps a machine at a few dozen live matches.
`ThreadedWorker` is RQ's `SimpleWorker` (jobs run in the worker process) with a
pool of `concurrency` threads: its loop takes a job whenever a thread is free and
hands it to one, so one process hosts hundreds of matches, each an ordinary RQ
job in RQ's registries (`rq info` shows them started; a failure lands in the
failed registry and is retried by RQ). This is the pattern of rq's own
multi-threaded worker sketch and of CVAT's thread-pool worker, chosen over an
asyncio loop because the match host, the engine and redis-py's blocking client
stay exactly as they are (and testable alone), the GIL is released while a thread
waits on Redis, and the CPU a decision costs is the engine's, as before.

- Resumed first, for real: besides its `concurrency` threads a worker keeps a
  reserve (`reserve_for(concurrency)`: a tenth, at least 2) that takes only resumed
  matches and scheduling steps. A killed worker's matches thus start again on a
  worker whose threads are all busy with new games, however long the queue.
- Redis connections: the job threads share one pool of at most
  `concurrency + reserve + 8` connections (a waiting match holds one while it
  blocks on its reply list); RQ's own client adds a few more.
- Timeouts: RQ's signal-based job timeouts work only on the main thread; match
  jobs need none (a lease, renewed every second, proves a run alive).
- Heartbeats: RQ takes a job whose execution's heartbeat lapses (after 90 s) for
  abandoned and fails it; its forking worker beats for its one work-horse, so this
  loop beats for every job it runs, every `job_monitoring_interval / 3`.
- Redis outages never end the worker: its loop retries with exponential backoff
  and jitter, and each hosted match waits for Redis and resumes from its log
  (`workers.jobs.run_match`).
- A bad job kills nothing: every dequeued job is read and checked first
  (`workers.intake`); one that is not the project's (a pickle, an old version's,
  garbage, a foreign function) goes to its queue's failed registry, logged and
  counted, and the loop takes the next. RQ's housekeeping between jobs is guarded the
  same way: a failed pass is logged and tried again at the next interval.
- Stopping (SIGTERM): no new jobs; every hosted match hands over at its next
  wait (within a second) and releases its lease, so recovery queues it again at
  the front of the queue within seconds; then the worker registers its death.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import redis
from rq import SimpleWorker
from rq.exceptions import StopRequested
from rq.job import Job
from rq.queue import Queue
from rq.serializers import JSONSerializer
from rq.timeouts import BaseDeathPenalty
from rq.utils import now as rq_now
from rq.worker import WorkerStatus

from telemetry import logs
from workers import house, jobs, memory
from workers.intake import VettingQueue
from workers.match import STOPPING
from workers.queues import (
    ADVANCE_JOB,
    ARENA_JOB,
    CONTROL_QUEUE,
    FIT_JOB,
    MATCH_JOB,
    MATCH_QUEUE,
    RESUME_QUEUE,
    MoonshotJob,
)

__all__ = ["DEFAULT_CONCURRENCY", "NameTaken", "ThreadedWorker", "make_worker", "reserve_for"]

log = logging.getLogger("moonshot.worker")

DEFAULT_CONCURRENCY = 100
_HANDOVER_S = 10.0  # how long a stopping worker waits for its matches to hand over
_REDIS_ERRORS = (redis.ConnectionError, redis.TimeoutError)
_PRIORITY = 2  # the first queues (control, resume) may use the reserve


def reserve_for(concurrency: int) -> int:
    """Threads kept for resumed matches and scheduling steps beyond `concurrency`."""
    return max(2, concurrency // 10)


class NoDeathPenalty(BaseDeathPenalty):
    """No job timeout (see the module doc)."""

    def setup_death_penalty(self) -> None:
        """Nothing to arm."""

    def cancel_death_penalty(self) -> None:
        """Nothing to cancel."""


class NameTaken(ValueError):
    """Another live worker is registered under this worker's name."""


class ThreadedWorker(SimpleWorker):
    """An RQ worker that runs up to `concurrency` jobs at once, one thread each."""

    death_penalty_class = NoDeathPenalty
    queue_class = VettingQueue  # a job that must not run is refused as it is dequeued

    def __init__(self, queues: list[Queue], *, concurrency: int = DEFAULT_CONCURRENCY,
                 **kwargs: Any) -> None:
        memory.one_arena()  # before its threads: a fit on one of them keeps its memory
        super().__init__(queues, **kwargs)
        self.concurrency = concurrency
        self.reserve = reserve_for(concurrency)
        # This process, as the match jobs it starts name it: recovery leaves a started match
        # alone while this instance's liveness key is fresh (workers.recovery).
        self.instance = f"{self.name}:{os.getpid()}:{secrets.token_hex(4)}"
        # Free threads: `general` for any queue, `reserve` for the first _PRIORITY only.
        self._free = {"general": concurrency, "reserve": self.reserve}
        self._freed = threading.Condition()
        self._threads = ThreadPoolExecutor(concurrency + self.reserve,
                                           thread_name_prefix="match")
        self._running = 0
        self._lock = threading.Lock()
        self._live: dict[str, tuple[Job, Any]] = {}  # job id -> (job, RQ execution)
        self._beat_at = time.monotonic()

    def register_birth(self) -> None:
        """Register, taking over the name of a dead process of this machine first.

        RQ keeps a worker's registration for its TTL (minutes) after a kill -9, and
        refuses a second worker of the same name meanwhile: a worker restarted under
        its own `--name` (by `moonshot up`, a service manager, the chaos bench) would
        exit at once. A registration left by a process of this host that is gone is
        ended here; one of another host cannot be judged, and RQ's refusal stands,
        said plainly.
        """
        key = self.key
        conn = self.connection
        if conn.exists(key) and not conn.hexists(key, "death"):
            host, pid = conn.hmget(key, ["hostname", "pid"])
            host = host.decode() if isinstance(host, bytes) else host
            if host == self.hostname and pid and not _alive(int(pid)):
                log.warning("worker %s: the process %s that last had this name is gone; "
                            "taking the name over", self.name, int(pid))
                old = SimpleWorker.find_by_key(key, connection=conn, serializer=JSONSerializer)
                if old is not None:
                    old.register_death()  # type: ignore[no-untyped-call]
            else:
                raise NameTaken(
                    f"a worker named {self.name!r} is running (host {host}, pid "
                    f"{int(pid) if pid else '?'}); give this one another --name")
        super().register_birth()  # type: ignore[no-untyped-call]

    # -------------------------------------------------------------- jobs

    @property
    def running(self) -> int:
        """Jobs running now."""
        return self._running

    def execute_job(self, job: Job, queue: Queue, slot: str = "general") -> None:
        """Start the job on a free thread (the loop took a slot for it) and return."""
        job.meta["instance"] = self.instance  # a fit's lock names it (workers.fit)
        if job.func_name == MATCH_JOB:  # recovery reads a match job's from Redis
            job.save_meta()  # type: ignore[no-untyped-call]
        execution = self.prepare_execution(job)
        with self._lock:
            self._running += 1
            self._live[job.id] = (job, execution)
        self._threads.submit(self._perform, job, queue, execution, slot)

    def _perform(self, job: Job, queue: Queue, execution: Any, slot: str = "general") -> None:
        try:
            with logs.context(**_job_fields(job)):  # RQ's own lines about the job too
                self.perform_job(job, queue, execution)
        except Exception:  # RQ's own bookkeeping failed (Redis away): recovery sees to it
            log.exception("job %s: RQ could not record its end", job.id)
        finally:
            with self._lock:
                self._running -= 1
                self._live.pop(job.id, None)
                idle = self._running == 0
            self._give_back(slot)
            if idle:
                with contextlib.suppress(*_REDIS_ERRORS):
                    self.set_state(WorkerStatus.IDLE)

    # -------------------------------------------------------------- loop

    def work(self, burst: bool = False,  # type: ignore[override]  # a loop of its own
             logging_level: str | None = "INFO", **_: Any) -> bool:
        """Take jobs while threads are free, until stopped (or, in burst mode, until the
        queues are empty and every job has ended); Redis outages are waited out."""
        self.bootstrap(logging_level)
        self._install_signal_handlers()  # type: ignore[no-untyped-call]
        worked = False
        backoff = 0.5
        try:
            while not self._stop_requested:
                try:
                    self._beat_for_jobs()
                    if self.should_run_maintenance_tasks:
                        self._maintain()
                    slot = self._take_slot()
                    if slot is None:
                        continue
                    try:
                        result = self._dequeue(slot, burst)
                    except BaseException:
                        self._give_back(slot)
                        raise
                    if result is None:
                        self._give_back(slot)
                        if burst and not self.running:
                            break
                        if slot == "general":
                            time.sleep(0.2)
                        continue
                    self.execute_job(*result, slot=slot)
                    worked = True
                    backoff = 0.5
                except StopRequested:
                    break
                except _REDIS_ERRORS as exc:
                    wait = backoff * random.uniform(0.5, 1.5)
                    log.warning("Redis unreachable (%s); retrying in %.1f s", exc, wait)
                    time.sleep(wait)
                    backoff = min(backoff * 2, 30.0)
        finally:
            self._hand_over()
            try:
                self.teardown()  # type: ignore[no-untyped-call]
            except _REDIS_ERRORS:
                log.warning("Redis unreachable: could not register this worker's end")
        return worked

    def _maintain(self) -> None:
        """RQ's housekeeping, run from this loop (see `run_maintenance_tasks`)."""
        self.run_maintenance_tasks()

    def run_maintenance_tasks(self) -> None:
        """RQ's housekeeping (registries, intermediate lists); a pass that raises on
        something it cannot read is logged and tried again next interval, never fatal.
        Guarded here, where RQ defines it, because RQ also calls it itself from inside
        its dequeue (`dequeue_job_and_maintain_ttl`) whenever it is due: a guard at this
        loop's call alone left that path to end the worker."""
        try:
            super().run_maintenance_tasks()  # type: ignore[no-untyped-call]
        except (StopRequested, *_REDIS_ERRORS):
            raise
        except Exception:
            log.exception("RQ's maintenance pass failed; trying again in %d s",
                          self.maintenance_interval)
            self.last_cleaned_at = rq_now()  # type: ignore[assignment]  # RQ's own type is off

    def _take_slot(self) -> str | None:
        """Wait for a free thread, keeping the worker's heartbeat meanwhile: "general" (any
        job), else "reserve" (resumed matches and scheduling steps only); None when a stop
        was asked for."""
        while True:
            with self._freed:
                for slot in ("general", "reserve"):
                    if self._free[slot]:
                        self._free[slot] -= 1
                        return slot
                self._freed.wait(timeout=5.0)
            if self._stop_requested:
                return None
            with contextlib.suppress(*_REDIS_ERRORS):
                self.heartbeat()
            self._beat_for_jobs()

    def _give_back(self, slot: str) -> None:
        with self._freed:
            self._free[slot] += 1
            self._freed.notify()

    def _dequeue(self, slot: str, burst: bool) -> tuple[Job, Queue] | None:
        """A job for a thread of `slot`: from every queue, or (a reserve thread) from the
        control and resume queues only, for a second at a time so that a general thread
        that frees up meanwhile is used for new matches."""
        if slot == "general":
            return self.dequeue_job_and_maintain_ttl(None if burst else 5)
        every = self._ordered_queues
        self._ordered_queues = every[:_PRIORITY]
        try:
            return self.dequeue_job_and_maintain_ttl(None if burst else 1)
        finally:
            self._ordered_queues = every

    def _beat_for_jobs(self) -> None:
        """Renew the heartbeat of every job running here, every third of RQ's interval."""
        now = time.monotonic()
        if now - self._beat_at < self.job_monitoring_interval / 3:
            return
        self._beat_at = now
        with self._lock:
            live = list(self._live.values())
        for job, execution in live:
            try:
                self.maintain_heartbeats(job, execution)
            except _REDIS_ERRORS:
                return  # Redis away: the next pass beats again

    def dequeue_job_and_maintain_ttl(self, timeout: int | None,
                                     max_idle_time: int | None = None
                                     ) -> tuple[Job, Queue] | None:
        """RQ's dequeue, but a wait that times out returns None (the loop heartbeats and
        looks for a free thread again) instead of waiting on indefinitely."""
        if timeout is None:
            return super().dequeue_job_and_maintain_ttl(None, max_idle_time)
        return super().dequeue_job_and_maintain_ttl(timeout, max_idle_time=timeout)

    def _hand_over(self) -> None:
        """Stop hosting: each match releases its lease at its next wait; wait for them."""
        STOPPING.set()
        end = time.monotonic() + _HANDOVER_S
        while self.running and time.monotonic() < end:
            time.sleep(0.1)
        if self.running:
            log.warning("%d matches did not hand over in %.0f s; recovery will requeue them",
                        self.running, _HANDOVER_S)
        self._threads.shutdown(wait=False, cancel_futures=True)
        house.shutdown()

    def unsubscribe(self) -> None:
        """RQ's end of its command channel, without its wait of up to a minute.

        RQ sends UNSUBSCRIBE and then stops the listening thread, and redis-py (8.x) stops
        it by joining it with no timeout. The thread reads with a 60 s timeout; when it
        reads the UNSUBSCRIBE's reply before the stop flag is set, it loops into a 60 s wait
        for a subscription that never comes, and a stopping worker hung that long (a CI
        run's SIGTERM met it, then SIGKILL). Here the flag goes first, so the reply that
        wakes the thread ends its loop, and the join is bounded either way.
        """
        thread: Any = self.pubsub_thread  # RQ declares it None until it subscribes
        pubsub = self.pubsub
        if not thread or pubsub is None:
            return
        self.log.info("Worker %s: unsubscribing from channel %s", self.name,
                      self.pubsub_channel_name)
        try:
            thread.stop(timeout=0)  # the flag, no wait (redis-py >= 8)
        except TypeError:
            thread.stop()  # an older redis-py: sets the flag only
        with contextlib.suppress(*_REDIS_ERRORS):
            pubsub.unsubscribe()  # type: ignore[no-untyped-call]
        thread.join(timeout=1)
        with contextlib.suppress(*_REDIS_ERRORS):
            pubsub.close()

    def _shutdown(self) -> None:
        """A stop request: take no new job (the running ones hand over as the loop ends)."""
        self._stop_requested = True
        if not self.running:
            raise StopRequested()


def _job_fields(job: Job) -> dict[str, str]:
    """The id a job's log lines carry: its match, event or rating pool."""
    try:
        field = {MATCH_JOB: "match_id", ADVANCE_JOB: "event", FIT_JOB: "pool",
                 ARENA_JOB: "pool"}.get(job.func_name or "")
        args = job.args
    except Exception:  # never here: workers.intake refuses such a job before it runs
        return {}
    return {field: str(args[0])} if field and args else {}


def _alive(pid: int) -> bool:
    """Whether another process of this machine has that id (a zombie counts as gone)."""
    if pid == os.getpid():
        return False  # the id is ours now: whoever had it has gone
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except (OSError, IndexError):  # no /proc here: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def make_worker(conn: redis.Redis, name: str | None = None,
                concurrency: int = DEFAULT_CONCURRENCY) -> ThreadedWorker:
    """A worker on the project's queues: scheduling first, then resumed matches, then new
    ones."""
    jobs.share_redis(conn, concurrency + reserve_for(concurrency) + 8)
    return ThreadedWorker(
        [VettingQueue(name, connection=conn, serializer=JSONSerializer, job_class=MoonshotJob)
         for name in (CONTROL_QUEUE, RESUME_QUEUE, MATCH_QUEUE)],
        concurrency=concurrency,
        connection=conn,
        serializer=JSONSerializer,
        job_class=MoonshotJob,
        name=name,
        # RQ's own clean-up of abandoned jobs runs only when an idle worker's dequeue times
        # out; `workers.recovery` is what re-queues a killed worker's match within seconds.
        maintenance_interval=30,
        job_monitoring_interval=5,
    )
