"""Recovery: put back to work whatever a crash left behind.

A match job that died with its worker, or a scheduling step lost in a full
restart, is found here and queued again. Running anything twice is harmless
(the match lease, the write-once result and the idempotent scheduler see to
that), so recovery may be generous.

Every `moonshot worker` runs it at start and then every second, in a background
thread of the worker process (`start_recovery_thread`); a lock in Redis that
lapses after one period makes it about one pass per period across all workers
(tournaments and fits are looked at every NUDGE_S only). The same thread keeps the
worker's liveness key (`store.recovery.keep_alive`, ALIVE_MS) fresh, and every
match job a worker starts names that instance: a started match whose worker is
gone is queued again at once (its next run waits for the dead run's lease to
lapse), while one whose worker lives is left alone, however busy that worker is.
So a killed worker's matches run again within seconds, and a loaded worker's
never get a second, wasted run. It deliberately does not ride on RQ's scheduler (a job that
re-queues itself with `enqueue_in`): that scheduler runs in one worker only, so
when the worker that dies is that one, no pass would run again until an idle
worker's RQ maintenance takes the scheduler lock over, which takes minutes
(RQ checks only when its blocking dequeue times out, after 405 s).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any

import redis
from rq.exceptions import NoSuchJobError
from rq.job import JobStatus
from rq.serializers import JSONSerializer

from store import archiving as store_archiving
from store import clock, deals, ids, steps
from store import matches as store_matches
from store import ratings as store_ratings
from store import recovery as store_recovery
from store import share as store_share
from store.pools import Pool
from workers.intake import REFUSED
from workers.queues import (
    MoonshotJob,
    enqueue_advance,
    enqueue_fit,
    enqueue_match,
    request_archive,
    request_step,
    taken,
    waiting,
)

__all__ = ["ALIVE_MS", "EVERY_S", "HUNG_S", "NUDGE_S", "STALE_S", "nudge", "recover",
           "recover_matches", "start_recovery_thread", "wake"]

log = logging.getLogger("moonshot.recovery")

EVERY_S = 1.0  # a pass over the open matches
NUDGE_S = 5.0  # a pass over running tournaments and rating pools
ALIVE_MS = 3000  # a worker's liveness key lapses this long after its last renewal
STALE_S = 2.0  # a job queued in no queue, seen so this long apart (two passes): requeued
HUNG_S = 10.0  # a started match on a live worker, with no lease this long: requeued


class _Queues:
    """The job ids waiting in each queue, read once per pass."""

    def __init__(self, rq_conn: redis.Redis) -> None:
        self.rq_conn = rq_conn
        self.seen: dict[str, tuple[set[str], set[str]]] = {}

    def where(self, queue_name: str, job_id: str) -> str:
        """"waiting" in the queue's list, "taken" by a worker that has not started it yet
        (RQ's intermediate list), or "" (in neither)."""
        if queue_name not in self.seen:
            self.seen[queue_name] = (waiting(self.rq_conn, queue_name),
                                     taken(self.rq_conn, queue_name))
        lists = self.seen[queue_name]
        return "waiting" if job_id in lists[0] else "taken" if job_id in lists[1] else ""


def _job_state(r: redis.Redis, rq_conn: redis.Redis, job_id: str,
               queues: _Queues) -> tuple[str, str]:
    """What to do with an open match's job: ("requeue"|"wait"|"failed", detail); "stale"
    is to requeue once it stays so for STALE_S, "hung" once it stays so for HUNG_S (see
    `recover_matches`)."""
    try:
        # The JSON serializer, always: the default one unpickles whatever the hash holds.
        job = MoonshotJob.fetch(job_id, connection=rq_conn, serializer=JSONSerializer)
        status = job.get_status()
    except NoSuchJobError:
        # Created a moment ago and its job not queued yet (CreateMatch stores, then queues),
        # or lost: looked at twice before it is queued again.
        return "stale", "no job"
    except (redis.ConnectionError, redis.TimeoutError):
        raise
    except Exception as exc:  # a hash RQ cannot parse: a new job replaces it, as for a lost one
        return "stale", f"its job does not read ({type(exc).__name__})"
    if status == JobStatus.QUEUED:
        # Queued means waiting in the queue's list, unless a worker died right after
        # taking it (RQ parks it in an intermediate list and cleans that up only in a
        # maintenance pass, minutes later) or the push was lost: then queue it again.
        found = queues.where(job.origin, job_id)
        if found == "waiting":
            return "wait", "queued"
        if found == "taken":
            # A busy worker may take seconds between taking a job and starting it; one
            # killed in between leaves it here.
            return "hung", "taken by a worker, not started"
        return "stale", "queued but in no queue"
    if status in (JobStatus.DEFERRED, JobStatus.SCHEDULED):
        return "wait", str(status)
    if status == JobStatus.STARTED:
        # Started, yet no run holds the lease: its worker died (queue it again now: the
        # next run waits for the lease to lapse), or it is starting on a live worker (its
        # thread is about to take the lease, however loaded the worker is).
        instance = str(job.meta.get("instance", ""))
        if instance and store_recovery.is_alive(r, instance):
            return "hung", "started on a live worker, but no run holds its lease"
        return "requeue", "its worker is gone"
    if status in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
        # RQ gave up after every retry: the match cannot be hosted. Say so rather than
        # retrying forever; the error is on the match and its tournament.
        try:
            last = job.latest_result()
            why = (last.exc_string or "")[-300:] if last is not None else ""
        except Exception:  # a result entry RQ cannot read: the match is failed all the same
            why = "its last result could not be read"
        if why.startswith(REFUSED):  # a worker would not run that job (workers.intake): the
            return "requeue", why[:200]  # match is fine; a job of this version hosts it
        return "failed", f"its job {status} after every retry: {why}".rstrip(": ")
    return "requeue", "finished without a result"  # cannot happen normally


def _suspect_for(r: redis.Redis, mid: str, now: float, limit: float) -> bool:
    """True once `mid` has been found with no live host for `limit` s, by Redis's clock:
    the machines' clocks may disagree, and RQ's timestamps are each worker's own."""
    since = store_recovery.suspected_since(r, mid, now)
    return since is not None and now - since > limit


def recover(r: redis.Redis, rq_conn: redis.Redis) -> dict[str, Any]:
    """Queue again every open match with no live host, and nudge running tournaments."""
    out = recover_matches(r, rq_conn)
    out["nudged"] = nudge(r, rq_conn)
    return out


def recover_matches(r: redis.Redis, rq_conn: redis.Redis) -> dict[str, Any]:
    """Queue again every open match with no live host (and fail those RQ gave up on)."""
    requeued: list[str] = []
    failed: list[str] = []
    open_ids = store_matches.open_ids(r)
    now = clock.now(r)
    live = set(open_ids)
    cleared = [mid for mid in store_recovery.suspects(r) if mid not in live]
    queues = _Queues(rq_conn)
    for mid, held in zip(open_ids, store_matches.hosted_many(r, open_ids), strict=True):
        # A match with a result is still open when the run that stored it died before its
        # bookkeeping was done (recorded in its tournament, released, ...): run it again,
        # and that run, finding the result, does what is missing.
        if held:
            cleared.append(mid)
            continue  # a live run hosts it
        what, detail = _job_state(r, rq_conn, ids.match_job_id(mid), queues)
        if what in ("stale", "hung"):
            limit = STALE_S if what == "stale" else HUNG_S
            what = "requeue" if _suspect_for(r, mid, now, limit) else "wait"
        else:
            cleared.append(mid)
        if what == "requeue":
            cleared.append(mid)
            # Looked at again just before: a run that ended (or began) since this pass
            # read the open matches and their leases needs no second run.
            if not store_matches.abandoned(r, mid):
                continue
            enqueue_match(rq_conn, mid, resume=True)
            requeued.append(f"{mid} ({detail})")
        elif what == "failed":
            spec = store_matches.mark_failed(r, mid, detail)
            if spec is None:
                continue  # a run took it up meanwhile
            failed.append(mid)
            if spec.event is not None:  # its planner says what a failed game means
                steps.mark_failed(r, spec.event, mid)
                request_step(r, rq_conn, spec.event)
            # Closed only once its event has it: a pass killed before this finds the match
            # open and failed, and does all of it again (each write is idempotent).
            store_matches.close(r, mid)
    store_recovery.clear(r, cleared)
    woken = wake(r, rq_conn, now)
    if requeued:
        log.warning("recovery queued %d abandoned matches: %s", len(requeued), requeued[:10])
    if failed:
        log.error("matches that cannot be hosted (RQ gave up): %s", failed[:10])
    return {"requeued": [x.split(" ", 1)[0] for x in requeued], "failed": failed,
            "at": time.time(), "woken": woken}


def wake(r: redis.Redis, rq_conn: redis.Redis, now: float) -> list[str]:
    """Queue a step job of each live event that is owed one with no job queued or running
    to take it: asked for and its job lost (its worker died between taking it and starting
    it, or it found the lock held as the holder let go; a lock held by a dead worker is
    freed first), or its last pass asked to be looked at again by `now` (an arena holding
    for a batch). The events woken."""
    woken = []
    for ref in steps.live_events(r):
        s = steps.scheduling(r, ref)
        if s.stepping:
            # A run whose worker died holds the lock until it lapses (LOCK_MS): free it now
            # and ask again (the dead run may have taken the ask).
            holder = steps.lock_holder(r, ref)
            if holder and holder[1] and not store_recovery.is_alive(r, holder[1]) \
                    and steps.free_lock(r, ref, holder[0]):
                log.warning("%s: the step of dead worker %s asked again", ref, holder[1])
                s = steps.scheduling(r, ref)
        lost = s.asked and not s.queued and not s.stepping
        if (lost or steps.wake_due(s, now)) and steps.asks(ref).claim(r):
            steps.asks(ref).ask_again(r)
            enqueue_advance(rq_conn, ref)
            woken.append(str(ref))
    return woken


def nudge(r: redis.Redis, rq_conn: redis.Redis) -> list[str]:
    """Ask for a step of every live event that needs one, and a fit of every pool that was
    asked for one with no job to do it; what was nudged."""
    nudged: list[str] = []
    store_recovery.list_live_once(r)
    deals.migrate(r)  # an older stack's records of deals, once (claims wait for it)
    for ref in steps.live_events(r):
        # Games in flight ask for a step as each one ends. Nudge the event when nothing is
        # in flight (a step lost in a full restart), when a step was asked for but no run
        # holds the lock (its run died mid-step), or when a game is recorded that no step
        # has counted and no step runs (the ask after it was lost: its worker killed, or
        # Redis restarted on a file that missed it).
        s = steps.scheduling(r, ref)
        in_flight = s.games > max(s.done, s.recorded)
        idle = not s.stepping
        if not in_flight or (idle and s.asked) or (idle and s.recorded > s.done):
            request_step(r, rq_conn, ref)
            nudged.append(str(ref))
    nudged += _archive(r, rq_conn)
    for pool in Pool:
        # A fit whose worker died mid-fit: its lock would stand for LOCK_MS and the
        # request it took would be lost; free the one and ask the other again.
        holder = store_ratings.fit_holder(r, pool)
        if holder and holder[1] and not store_recovery.is_alive(r, holder[1]) \
                and store_ratings.free_fit(r, pool, holder[0]):
            log.warning("ratings %s: the fit of dead worker %s asked again", pool, holder[1])
        # A fit asked for with no job to do it: that job died, or failed and asked again.
        if store_ratings.fit_requested(r, pool) and store_ratings.claim_queue(r, pool):
            enqueue_fit(rq_conn, pool)
            nudged.append(f"ratings {pool}")
    return nudged


def _archive(r: redis.Redis, rq_conn: redis.Redis) -> list[str]:
    """Archiving, for a stack with an archive: an upgraded stack's finished games queued a
    chunk a pass (logged with its progress), the archiving job freed from a dead worker's
    lock, and asked for while games wait (a job lost, or the archive away: it tries
    again every pass)."""
    if not store_archiving.url(r):
        return []
    queued, done = store_archiving.backfill(r)
    if queued:
        log.warning("archive: %d finished games of an earlier version queued to move out "
                    "of Redis (%d wait in all)", queued, store_archiving.pending_count(r))
    elif not done:
        log.info("archive: walking the earlier version's games (nothing to move yet)")
    holder = store_archiving.lock_holder(r)
    if holder and holder[1] and not store_recovery.is_alive(r, holder[1]) \
            and store_archiving.free_lock(r, holder[0]):
        log.warning("archive: the job of dead worker %s asked again", holder[1])
    if store_archiving.pending_count(r) or store_archiving.ended_events(r):
        request_archive(r, rq_conn)  # queues a job only if none is queued
        return ["archive"]
    return []


def _recovery_loop(url: str, stop: threading.Event, every: float) -> None:
    r = redis.Redis.from_url(url, decode_responses=True)
    rq_conn = redis.Redis.from_url(url)
    while True:
        try:
            # Whoever takes a lock does that period's pass; it lapses before the next one.
            if store_recovery.pass_lock(int(every * 900)).acquire(r):
                recover_matches(r, rq_conn)
            if store_recovery.nudge_lock(int(NUDGE_S * 900)).acquire(r):
                nudge(r, rq_conn)
        except redis.RedisError as exc:
            log.warning("recovery pass skipped: %s", exc)  # Redis away: try next period
        except Exception:
            log.exception("recovery pass failed")
        if stop.wait(every):
            return


def _alive_loop(url: str, instance: str, stop: threading.Event, slots: int = 0) -> None:
    """Keep the worker's liveness key fresh (a thread of its own: a long recovery pass
    must not make a live worker look dead), and its note of the games it hosts at once
    (`slots`: what the tests' fair share of the stack counts, `store.share`)."""
    r = redis.Redis.from_url(url, decode_responses=True)
    while True:
        try:
            store_recovery.keep_alive(r, instance, ALIVE_MS)
            if slots:
                store_share.note_worker(r, instance, slots, ALIVE_MS)
        except redis.RedisError as exc:
            log.warning("could not renew this worker's liveness: %s", exc)
        if stop.wait(ALIVE_MS / 3000):
            with contextlib.suppress(redis.RedisError):
                store_recovery.keep_alive(r, instance, 0)
                store_share.note_worker(r, instance, 0, 0)
            return


def start_recovery_thread(url: str, every: float = EVERY_S, instance: str = "",
                          recovery: bool = True, slots: int = 0) -> threading.Event:
    """Run the recovery passes (unless not `recovery`) now and every `every` s in a daemon
    thread, and keep the liveness key of worker `instance` (if given) fresh, with the games
    it hosts at once (`slots`); set the event to stop both."""
    stop = threading.Event()
    if recovery:
        threading.Thread(target=_recovery_loop, args=(url, stop, every),
                         name="moonshot-recovery", daemon=True).start()
    if instance:
        threading.Thread(target=_alive_loop, args=(url, instance, stop, slots),
                         name="moonshot-alive", daemon=True).start()
    return stop
