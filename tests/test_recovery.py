"""Recovery and the scheduler against a real Redis, with no worker running: queued jobs
stay queued, so each step can be driven and inspected by hand."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from clients.redisproc import RedisServer
from store import bots, ids, keys, steps
from store import matches as store
from store.records import Clock, Faults
from store.refs import EventRef
from store.results import result_row
from tournaments.spec import make_spec
from workers.queues import create_tournament, rq_connection
from workers.recovery import HUNG_S, STALE_S, recover
from workers.scheduler import advance


@pytest.fixture
def rr(tmp_path: Path) -> Iterator[tuple[redis.Redis, redis.Redis]]:
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        yield bots.connect(srv.url), rq_connection(srv.url)


def _tournament(r: redis.Redis, rq_conn: redis.Redis) -> str:
    named = [(b.bot_id, b.name) for b in (bots.register_bot(r, f"rb{i}")[0] for i in range(3))]
    spec = make_spec(tournament_id=ids.new_tournament_id(), name="t", players=3,
                      format="round_robin", bots=named, rules={},
                      clock=Clock(), faults=Faults(), seed=5, duplicate="replay",
                      seeding="given")
    create_tournament(r, rq_conn, spec)
    advance(r, rq_conn, EventRef.tournament(spec.tournament_id))
    return spec.tournament_id


def _nudged(r: redis.Redis, rq_conn: redis.Redis) -> list[str]:
    """The ids of the events one recovery pass nudged."""
    return [n.partition(":")[2] for n in recover(r, rq_conn)["nudged"]]


def test_the_scheduler_creates_each_game_once(rr: tuple[redis.Redis, redis.Redis]) -> None:
    r, rq_conn = rr
    tid = _tournament(r, rq_conn)
    games = r.zrange(keys.tournament_matches(tid), 0, -1)
    assert len(games) == 6  # one table of three, every seating
    advance(r, rq_conn, EventRef.tournament(tid))
    advance(r, rq_conn, EventRef.tournament(tid))
    assert r.zrange(keys.tournament_matches(tid), 0, -1) == games
    assert r.scard(keys.OPEN_MATCHES) == 6


def test_recovery_requeues_a_lost_job_and_leaves_queued_ones(
        rr: tuple[redis.Redis, redis.Redis]) -> None:
    r, rq_conn = rr
    tid = _tournament(r, rq_conn)
    games = [str(g) for g in r.zrange(keys.tournament_matches(tid), 0, -1)]
    assert recover(r, rq_conn)["requeued"] == []  # every job is still queued
    Job.fetch(f"match-{games[0]}", connection=rq_conn).delete()  # as if lost in a crash
    # Not at first sight: a match is stored a moment before its job is queued.
    assert recover(r, rq_conn)["requeued"] == []
    time.sleep(STALE_S + 0.2)
    assert recover(r, rq_conn)["requeued"] == [games[0]]
    assert Job.fetch(f"match-{games[0]}", connection=rq_conn).get_status() == JobStatus.QUEUED


def test_a_match_rq_gave_up_on_fails_its_tournament(rr: tuple[redis.Redis, redis.Redis]) -> None:
    r, rq_conn = rr
    tid = _tournament(r, rq_conn)
    first = str(r.zrange(keys.tournament_matches(tid), 0, 0)[0])
    job = Job.fetch(f"match-{first}", connection=rq_conn)
    job.set_status(JobStatus.FAILED)  # every retry used up
    out = recover(r, rq_conn)
    assert out["failed"] == [first]
    assert r.hget(keys.match(first), "status") == "failed"
    assert not r.sismember(keys.OPEN_MATCHES, first)
    advance(r, rq_conn, EventRef.tournament(tid))
    info = r.hgetall(keys.tournament(tid))
    assert info["status"] == "failed"
    assert first in info["error"]
    last = r.xrevrange(keys.tournament_events(tid), count=1)
    assert '"tournament_finished"' in last[0][1]["e"]


def test_a_pass_killed_between_failing_a_match_and_recording_it_is_finished_next_time(
        rr: tuple[redis.Redis, redis.Redis]) -> None:
    """Recovery marks a match RQ gave up on failed, then records it in its event, then
    closes it: killed after the first write, the match is still open, and the next pass
    records and closes it (closed first, it was lost to its event for good)."""
    r, rq_conn = rr
    tid = _tournament(r, rq_conn)
    first = str(r.zrange(keys.tournament_matches(tid), 0, 0)[0])
    Job.fetch(f"match-{first}", connection=rq_conn).set_status(JobStatus.FAILED)
    assert store.mark_failed(r, first, "its job failed") is not None  # ... and killed here
    assert r.sismember(keys.OPEN_MATCHES, first)
    assert r.zscore(keys.tournament_recorded(tid), first) is None
    assert recover(r, rq_conn)["failed"] == [first]
    assert r.zscore(keys.tournament_recorded(tid), first) is not None
    assert r.sismember(keys.tournament_failed(tid), first)
    assert not r.sismember(keys.OPEN_MATCHES, first)
    assert recover(r, rq_conn)["failed"] == []  # done once


def test_a_failed_tournament_starts_nothing_and_leaves_recovery_once_its_boards_are_done(
        rr: tuple[redis.Redis, redis.Redis]) -> None:
    """Failed on one game, the tournament folds and releases the games still in play as
    they end, stays failed (its end written once), and leaves the live events once no
    board is open: it is never nudged again."""
    r, rq_conn = rr
    tid = _tournament(r, rq_conn)
    ref = EventRef.tournament(tid)
    games = [str(g) for g in r.zrange(keys.tournament_matches(tid), 0, -1)]
    Job.fetch(f"match-{games[0]}", connection=rq_conn).set_status(JobStatus.FAILED)
    recover(r, rq_conn)
    advance(r, rq_conn, ref)
    assert r.hget(keys.tournament(tid), "status") == "failed"
    assert ref in steps.live_events(r)  # its board is still in play
    for mid in games[1:]:  # the rest of the board finishes
        spec = store.load_spec(r, mid)
        row = result_row(mid, spec.bot_ids, {"final": [21, 5, 3], "winner": 0,
                                             "placement": [1, 2, 3], "end": "normal",
                                             "seats": list(spec.seat_names)},
                         str(spec.meta["board"]), str(spec.meta["unit"]))
        store.finish(r, mid, spec.bot_ids, row, time.time())
        steps.record(r, ref, mid)
        advance(r, rq_conn, ref)
    assert r.hget(keys.tournament(tid), "status") == "failed"
    assert r.zrange(keys.tournament_matches(tid), 0, -1) == games  # nothing new started
    assert ref not in steps.live_events(r)
    assert tid not in _nudged(r, rq_conn)
    ends = [e for _, e in r.xrange(keys.tournament_events(tid)) if "tournament_finished" in e["e"]]
    assert len(ends) == 1


def test_recovery_nudges_a_tournament_whose_step_died(
        rr: tuple[redis.Redis, redis.Redis]) -> None:
    r, rq_conn = rr
    tid = _tournament(r, rq_conn)
    # Games are in flight, so a healthy tournament is left alone ...
    assert tid not in _nudged(r, rq_conn)
    # ... but a step that was asked for while a run held the lock, and that run died,
    # would otherwise wait for the next game to end, which may never come.
    r.set(keys.tournament_dirty(tid), 1)
    r.set(keys.tournament_lock(tid), "dead-run", px=60_000)
    assert tid not in _nudged(r, rq_conn)  # the lock may still be live
    r.delete(keys.tournament_lock(tid))
    assert tid in _nudged(r, rq_conn)


def test_recovery_frees_the_step_lock_of_a_dead_worker_at_once(
        rr: tuple[redis.Redis, redis.Redis]) -> None:
    """A step run killed with its worker holds the event's lock until it lapses (LOCK_MS):
    recovery frees a lock whose worker's liveness key is gone, and queues the step; a lock
    of a live worker, or one that names no worker, is left to lapse."""
    r, rq_conn = rr
    tid = _tournament(r, rq_conn)
    ref = EventRef.tournament(tid)
    r.set(keys.tournament_lock(tid), "w1:1:aa~dead-run", px=60_000)  # its worker is gone
    woken = recover(r, rq_conn)["woken"]
    assert not r.exists(keys.tournament_lock(tid)) and woken == [str(ref)]
    r.set(keys.tournament_lock(tid), "w2:2:bb~live-run", px=60_000)
    r.set(keys.worker_alive("w2:2:bb"), "1", px=60_000)
    r.set(keys.tournament_dirty(tid), 1)
    r.delete(keys.event_queued(ref))
    assert recover(r, rq_conn)["woken"] == [] and r.exists(keys.tournament_lock(tid))
    r.set(keys.tournament_lock(tid), "no-owner", px=60_000)
    assert recover(r, rq_conn)["woken"] == [] and r.exists(keys.tournament_lock(tid))


def test_creating_a_match_twice_changes_nothing(rr: tuple[redis.Redis, redis.Redis]) -> None:
    r, rq_conn = rr
    tid = _tournament(r, rq_conn)
    mid = str(r.zrange(keys.tournament_matches(tid), 0, 0)[0])
    record = store.get_match(r, mid)
    before = r.hgetall(keys.match(mid))
    r.srem(keys.OPEN_MATCHES, mid)  # as if lost between two writes
    assert store.create_match(r, record.spec) is False
    assert r.hgetall(keys.match(mid)) == before
    assert r.sismember(keys.OPEN_MATCHES, mid)
    # Its result stored, its bookkeeping not done (a run that died before `close`): stored
    # again, it stays open, so that recovery still runs what is owed.
    r.set(keys.result(mid), "{}")
    assert store.create_match(r, record.spec) is False
    assert r.sismember(keys.OPEN_MATCHES, mid)


class _DiesAfterTransaction(redis.Redis):
    """A client whose Redis is killed right after its next transaction: every later
    command fails, as if the server went away between two writes."""

    dead = False

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Any:
        pipe = super().pipeline(transaction, shard_hint)
        run = pipe.execute

        def execute(raise_on_error: bool = True) -> Any:
            if self.dead:
                raise redis.ConnectionError("Redis is gone")
            out = run(raise_on_error)
            self.dead = self.dead or transaction
            return out

        pipe.execute = execute  # type: ignore[method-assign]
        return pipe

    def execute_command(self, *args: Any, **options: Any) -> Any:
        if self.dead:
            raise redis.ConnectionError("Redis is gone")
        return super().execute_command(*args, **options)


def test_a_match_stored_as_redis_dies_is_open_and_recovered(
        rr: tuple[redis.Redis, redis.Redis]) -> None:
    """A CI run killed Redis between storing an arena game and marking it open: no pass
    stores it again (it exists), no recovery looked at it, and it stayed queued with no
    job. The mark is in the storing transaction: the game is open, and its missing job is
    queued by recovery."""
    r, rq_conn = rr
    tid = _tournament(r, rq_conn)
    spec = store.get_match(r, str(r.zrange(keys.tournament_matches(tid), 0, 0)[0])).spec
    spec = dataclasses.replace(spec, match_id=ids.new_match_id())
    dying = _DiesAfterTransaction(connection_pool=r.connection_pool)
    with contextlib.suppress(redis.ConnectionError):
        store.create_match(dying, spec)  # the job is never queued: Redis is gone
    assert store.get_match(r, spec.match_id).status == "queued"
    assert r.sismember(keys.OPEN_MATCHES, spec.match_id)
    assert recover(r, rq_conn)["requeued"] == []
    time.sleep(STALE_S + 0.2)
    assert recover(r, rq_conn)["requeued"] == [spec.match_id]


def test_recovery_requeues_a_job_taken_by_a_worker_that_died(
        rr: tuple[redis.Redis, redis.Redis]) -> None:
    r, rq_conn = rr
    tid = _tournament(r, rq_conn)
    mid = str(r.zrange(keys.tournament_matches(tid), 0, 0)[0])
    job_id = f"match-{mid}"
    # A worker moved it to RQ's intermediate list, then died before starting it.
    rq_conn.lrem("rq:queue:moonshot-matches", 0, job_id)
    rq_conn.rpush("rq:queue:moonshot-matches:intermediate", job_id)
    job = Job.fetch(job_id, connection=rq_conn)
    assert job.get_status() == JobStatus.QUEUED
    # A worker whose clock is a year behind wrote its timestamps: they count for nothing.
    job.enqueued_at = job.enqueued_at.replace(year=job.enqueued_at.year - 1)
    job.save()
    assert recover(r, rq_conn)["requeued"] == []  # just seen so: give the worker time
    time.sleep(STALE_S + 0.2)
    # A busy worker may hold a job it took for seconds before it starts it: more than
    # STALE_S is not enough, HUNG_S is.
    assert recover(r, rq_conn)["requeued"] == []
    r.hset(keys.RECOVERY_SUSPECTS, mid, repr(float(r.time()[0]) - HUNG_S - 1))
    assert recover(r, rq_conn)["requeued"] == [mid]
    assert rq_conn.lpos("rq:queue:moonshot-resume", job_id) is not None  # before new ones
    assert not r.hexists(keys.RECOVERY_SUSPECTS, mid)  # requeued: no longer suspect


def test_recovery_requeues_a_job_in_no_queue_after_two_looks(
        rr: tuple[redis.Redis, redis.Redis]) -> None:
    """Marked queued but in no list at all (the push was lost): requeued once two passes
    STALE_S apart found it so."""
    r, rq_conn = rr
    tid = _tournament(r, rq_conn)
    mid = str(r.zrange(keys.tournament_matches(tid), 0, 0)[0])
    rq_conn.lrem("rq:queue:moonshot-matches", 0, f"match-{mid}")
    assert recover(r, rq_conn)["requeued"] == []
    time.sleep(STALE_S / 2)
    assert recover(r, rq_conn)["requeued"] == []
    time.sleep(STALE_S / 2 + 0.2)  # seen so for longer than STALE_S, on Redis's clock
    assert recover(r, rq_conn)["requeued"] == [mid]


def test_recovery_nudges_a_tournament_whose_last_step_was_lost(
        rr: tuple[redis.Redis, redis.Redis]) -> None:
    """Every game played and recorded, but the step queued after the last one was lost
    (its worker killed, or Redis restarted on a file that missed it): nothing is in
    flight to advance the tournament, and no step is asked for; recovery takes one."""
    r, rq_conn = rr
    tid = _tournament(r, rq_conn)
    games = [str(g) for g in r.zrange(keys.tournament_matches(tid), 0, -1)]
    assert tid not in _nudged(r, rq_conn)
    for mid in games[:-1]:
        steps.record(r, EventRef.tournament(tid), mid)
    r.hset(keys.tournament(tid), "done", len(games) - 1)  # every step but the last ran
    steps.record(r, EventRef.tournament(tid), games[-1])  # ... and its step never comes
    assert tid in _nudged(r, rq_conn)


def test_recovery_nudges_a_step_owed_for_a_recorded_game(
        rr: tuple[redis.Redis, redis.Redis]) -> None:
    """Games still in play, one recorded that no step counted: a running step will count
    it; with no step running, recovery takes one (the game's own was lost)."""
    r, rq_conn = rr
    tid = _tournament(r, rq_conn)
    first = str(r.zrange(keys.tournament_matches(tid), 0, 0)[0])
    steps.record(r, EventRef.tournament(tid), first)
    r.set(keys.tournament_lock(tid), "a-live-run", px=60_000)
    assert tid not in _nudged(r, rq_conn)
    r.delete(keys.tournament_lock(tid))
    assert tid in _nudged(r, rq_conn)


def _start(rq_conn: redis.Redis, mid: str, instance: str) -> None:
    """As a worker does: name its instance on the job, then mark it started."""
    job = Job.fetch(f"match-{mid}", connection=rq_conn, serializer=JSONSerializer)
    rq_conn.lrem(f"rq:queue:{job.origin}", 0, job.id)
    job.meta["instance"] = instance
    job.save_meta()
    job.set_status(JobStatus.STARTED)


def test_a_started_match_on_a_live_worker_is_left_alone(
        rr: tuple[redis.Redis, redis.Redis]) -> None:
    """A loaded worker that took a match and has not taken its lease yet is alive: no
    second run of it is queued, however long that takes (the spurious resumes the hosting
    bench counted under load). Only a run that shows no lease for HUNG_S is."""
    r, rq_conn = rr
    tid = _tournament(r, rq_conn)
    mid = str(r.zrange(keys.tournament_matches(tid), 0, 0)[0])
    r.set(keys.worker_alive("w1:1:aa"), "1", px=60_000)
    _start(rq_conn, mid, "w1:1:aa")
    for _ in range(3):
        assert recover(r, rq_conn)["requeued"] == []
        time.sleep(STALE_S / 2 + 0.1)
    assert r.hexists(keys.RECOVERY_SUSPECTS, mid)  # watched, for the hung case
    r.hset(keys.RECOVERY_SUSPECTS, mid, "1")  # as if seen so since long ago
    assert recover(r, rq_conn)["requeued"] == [mid]


def test_a_started_match_whose_worker_is_gone_is_requeued_at_once(
        rr: tuple[redis.Redis, redis.Redis]) -> None:
    """The worker's liveness key lapsed (killed, frozen): its match is queued again on the
    first pass, on the resume queue, without waiting for a second look."""
    r, rq_conn = rr
    tid = _tournament(r, rq_conn)
    mid, other = (str(m) for m in r.zrange(keys.tournament_matches(tid), 0, 1))
    _start(rq_conn, mid, "w2:2:bb")  # no liveness key: that process is gone
    _start(rq_conn, other, "")  # started by a worker from before instances: gone too
    assert sorted(recover(r, rq_conn)["requeued"]) == sorted([mid, other])
    assert rq_conn.lpos("rq:queue:moonshot-resume", f"match-{mid}") is not None
