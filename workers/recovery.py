"""Recovery: put back to work whatever a crash left behind.

A match job that died with its worker, or a scheduling step lost in a full
restart, is found here and queued again. Running anything twice is harmless
(the match lease, the write-once result and the idempotent scheduler see to
that), so recovery may be generous.

Every `moonshot worker` runs it at start and then every few seconds, in a
background thread of the worker process (`start_recovery_thread`); a lock in
Redis that lapses after one period makes it about one pass per period across
all workers. It deliberately does not ride on RQ's scheduler (a job that
re-queues itself with `enqueue_in`): that scheduler runs in one worker only, so
when the worker that dies is that one, no pass would run again until an idle
worker's RQ maintenance takes the scheduler lock over, which takes minutes
(RQ checks only when its blocking dequeue times out, after 405 s).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import redis
from rq.exceptions import NoSuchJobError
from rq.job import JobStatus
from rq.serializers import JSONSerializer

from store import ids
from store import matches as store_matches
from store import ratings as store_ratings
from store import recovery as store_recovery
from store import tournaments as store_t
from store.status import TournamentStatus
from workers.queues import MoonshotJob, enqueue_advance, enqueue_fit, enqueue_match, in_queue

__all__ = ["EVERY_S", "STALE_S", "recover", "start_recovery_thread"]

log = logging.getLogger("moonshot.recovery")

EVERY_S = 5
STALE_S = 3.0  # an open match seen with no live host this long apart (two passes) is requeued


def _job_state(rq_conn: redis.Redis, job_id: str) -> tuple[str, str]:
    """What to do with an open match's job: ("requeue"|"wait"|"failed", detail); "stale"
    is to requeue once it stays so for STALE_S (see `recover`)."""
    try:
        # The JSON serializer, always: the default one unpickles whatever the hash holds.
        job = MoonshotJob.fetch(job_id, connection=rq_conn, serializer=JSONSerializer)
        status = job.get_status()
    except NoSuchJobError:
        return "requeue", "no job"
    if status == JobStatus.QUEUED:
        # Queued means waiting in the queue's list, unless a worker died right after
        # taking it (RQ parks it in an intermediate list and cleans that up only in a
        # maintenance pass, minutes later) or the push was lost: then queue it again.
        if in_queue(rq_conn, job.origin, job_id):
            return "wait", "queued"
        return "stale", "queued but in no queue"
    if status in (JobStatus.DEFERRED, JobStatus.SCHEDULED):
        return "wait", str(status)
    if status == JobStatus.STARTED:
        # Started, yet no run holds the lease: its worker died, or it is just starting.
        return "stale", "started, but no run holds its lease"
    if status in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
        # RQ gave up after every retry: the match cannot be hosted. Say so rather than
        # retrying forever; the error is on the match and its tournament.
        last = job.latest_result()
        why = (last.exc_string or "")[-300:] if last is not None else ""
        return "failed", f"its job {status} after every retry: {why}".rstrip(": ")
    return "requeue", "finished without a result"  # cannot happen normally


def _stale(r: redis.Redis, mid: str, now: float) -> bool:
    """True once `mid` has been found with no live host for STALE_S, by Redis's clock:
    the machines' clocks may disagree, and RQ's timestamps are each worker's own."""
    since = store_recovery.suspected_since(r, mid, now)
    return since is not None and now - since > STALE_S


def recover(r: redis.Redis, rq_conn: redis.Redis) -> dict[str, Any]:
    """Queue again every open match with no live host, and nudge running tournaments."""
    requeued: list[str] = []
    failed: list[str] = []
    nudged: list[str] = []
    open_ids = store_matches.open_ids(r)
    now = store_recovery.now(r)
    cleared = [mid for mid in store_recovery.suspects(r) if mid not in set(open_ids)]
    for mid in open_ids:
        # A match with a result is still open when the run that stored it died before its
        # bookkeeping was done (recorded in its tournament, released, ...): run it again,
        # and that run, finding the result, does what is missing.
        if store_matches.hosted(r, mid):
            cleared.append(mid)
            continue  # a live run hosts it
        what, detail = _job_state(rq_conn, ids.match_job_id(mid))
        if what == "stale":
            what = "requeue" if _stale(r, mid, now) else "wait"
        else:
            cleared.append(mid)
        if what == "requeue":
            cleared.append(mid)
            enqueue_match(rq_conn, mid, resume=True)
            requeued.append(mid)
        elif what == "failed":
            spec = store_matches.mark_failed(r, mid, detail)
            if spec is None:
                continue  # a run took it up meanwhile
            failed.append(mid)
            if spec.tournament_id:
                store_t.mark_failed_game(r, spec.tournament_id, mid)
                enqueue_advance(rq_conn, spec.tournament_id)
    store_recovery.clear(r, cleared)
    for tid in store_t.all_ids(r):
        info = store_t.info(r, tid)
        if info.status != TournamentStatus.RUNNING:
            continue
        # Games in flight advance the tournament as each one ends. Nudge it when nothing
        # is in flight (a scheduling step lost in a full restart), when a step was asked
        # for (dirty) but no run holds the lock (its run died mid-step), or when a game is
        # recorded that no step has counted and no step runs (the step queued after it
        # was lost: its worker killed, or Redis restarted on a file that missed it).
        steps = store_t.scheduling(r, tid)
        in_flight = steps.games > max(info.done, steps.recorded)
        idle = not steps.stepping
        lost = idle and steps.asked
        owed = idle and steps.recorded > info.done
        if not in_flight or lost or owed:
            enqueue_advance(rq_conn, tid)
            nudged.append(tid)
    for pool in ("3p", "2v2"):
        # A fit asked for with no job to do it: that job died, or failed and asked again.
        if store_ratings.fit_requested(r, pool) and store_ratings.claim_queue(r, pool):
            enqueue_fit(rq_conn, pool)
            nudged.append(f"ratings {pool}")
    if requeued:
        log.warning("recovery queued %d abandoned matches: %s", len(requeued), requeued[:10])
    if failed:
        log.error("matches that cannot be hosted (RQ gave up): %s", failed[:10])
    return {"requeued": requeued, "failed": failed, "nudged": nudged, "at": time.time()}


def _recovery_loop(url: str, stop: threading.Event, every: float) -> None:
    r = redis.Redis.from_url(url, decode_responses=True)
    rq_conn = redis.Redis.from_url(url)
    while True:
        try:
            # Whoever takes the lock does this period's pass; it lapses before the next one.
            if store_recovery.pass_lock(int(every * 900)).acquire(r):
                recover(r, rq_conn)
        except redis.RedisError as exc:
            log.warning("recovery pass skipped: %s", exc)  # Redis away: try next period
        except Exception:
            log.exception("recovery pass failed")
        if stop.wait(every):
            return


def start_recovery_thread(url: str, every: float = EVERY_S) -> threading.Event:
    """Run `recover` now and every `every` s in a daemon thread; set the event to stop it."""
    stop = threading.Event()
    threading.Thread(target=_recovery_loop, args=(url, stop, every), name="moonshot-recovery",
                     daemon=True).start()
    return stop
