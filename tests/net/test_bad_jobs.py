"""A job no worker can run kills no worker: planted in every queue of a running stack while
matches are in play, each bad job lands in its queue's failed registry with the reason,
logged and counted, and the workers, their matches and the matches queued behind the bad
jobs all carry on as if nothing had been planted."""

from __future__ import annotations

import contextlib
import json
import urllib.request
from pathlib import Path
from typing import Any

import redis
from prometheus_client.parser import text_string_to_metric_families
from rq import Queue
from rq.job import Job
from rq.registry import FailedJobRegistry
from rq.serializers import JSONSerializer
from stack import Proc, Stack
from support import finished, wait_until

from clients.admin import Admin
from clients.redisproc import RedisServer
from clients.sdk import register
from proto.moon.v1 import match_pb2
from store import keys
from workers.queues import CONTROL_QUEUE, MATCH_QUEUE, RESUME_QUEUE

RULES = {"max_hands": "3"}

# What each planted job is, and the reason it must be refused for.
KINDS = {
    "pickle": "unreadable",  # enqueued with RQ's default serializer
    "garbage": "unreadable",  # data that is no serializer's
    "oldjob": "unreadable",  # an older shape of job tuple
    "foreign": "foreign",  # names a function that is not a moonshot job
    "oldargs": "arguments",  # a moonshot job with arguments it does not take
    "nodata": "malformed",  # a hash without its data
    "baddate": "malformed",  # a field RQ cannot parse
    "nohash": "missing",  # an id in the queue, no hash
}


def _plant(rq_conn: redis.Redis, queue: str, tag: str) -> dict[str, str]:
    """Put one job of each kind at the back of `queue`; their ids -> kind."""
    planted: dict[str, str] = {}

    def raw(kind: str, fields: dict[str, Any]) -> None:
        jid = f"bad-{kind}-{queue}-{tag}"
        if fields:
            rq_conn.hset(Job.key_for(jid), mapping=fields)
        rq_conn.rpush(f"rq:queue:{queue}", jid)
        planted[jid] = kind

    jid = f"bad-pickle-{queue}-{tag}"
    Queue(queue, connection=rq_conn).enqueue("workers.jobs.fit_ratings", "3p", job_id=jid)
    planted[jid] = "pickle"
    ours = json.dumps(["workers.jobs.fit_ratings", None, ["3p"], {}])
    raw("garbage", {"data": b"{not json at all", "status": "queued", "origin": queue})
    raw("oldjob", {"data": json.dumps(["workers.jobs.fit_ratings", ["3p"]]),
                   "status": "queued", "origin": queue})
    raw("foreign", {"data": json.dumps(["os.system", None, ["true"], {}]), "status": "queued",
                    "origin": queue})
    raw("oldargs", {"data": json.dumps(["workers.jobs.run_match", None, ["m-x", 3], {}]),
                    "status": "queued", "origin": queue})
    raw("nodata", {"status": "queued", "origin": queue})
    raw("baddate", {"data": ours, "status": "queued", "origin": queue,
                    "created_at": "last tuesday"})
    raw("nohash", {})
    return planted


def _refused(worker: Proc) -> dict[str, float]:
    port = int(worker.wait_for(r"worker metrics listening on 127\.0\.0\.1:(\d+)").group(1))
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {s.labels["reason"]: s.value for family in text_string_to_metric_families(text)
            for s in family.samples if s.name == "moonshot_worker_jobs_refused_total"}


def _failed_ids(rq_conn: redis.Redis, queue: str) -> set[str]:
    return set(FailedJobRegistry(queue, connection=rq_conn,
                                 serializer=JSONSerializer).get_job_ids())


def test_bad_jobs_in_every_queue_are_moved_aside_and_kill_nothing(
        tmp_path: Path, admin_token: str) -> None:
    """Two workers of two general threads each host four matches that wait on a bot not yet
    connected, so only the reserve threads are free: bad jobs planted in the control and
    resume queues are refused there while the matches stay in play. Then bad jobs planted
    in the matches queue, with two new matches behind them: once the bot connects, every
    match ends normally in one run, the bad jobs are in their failed registries with the
    reason (the missing one only counted), and both workers still run."""
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        st = Stack(tmp_path, srv.url, admin_token=admin_token)
        r = redis.Redis.from_url(srv.url, decode_responses=True)
        rq_conn = redis.Redis.from_url(srv.url)
        try:
            st.referee()
            workers = [st.worker("--concurrency", "2", "--metrics-listen", "127.0.0.1:0")
                       for _ in range(2)]
            regs = [register(st.address, f"steady{i}") for i in range(3)]
            st.bots([("greedy", token) for _, token in regs[:2]])
            admin = Admin(st.address, admin_token)
            with contextlib.closing(admin):
                ids = [b for b, _ in regs]

                def match(seed: int) -> str:
                    return admin.create_match(3, ids, seed=seed, rules=RULES,
                                              grace_ms=600_000).match_id

                hosted = [match(s) for s in range(4)]
                wait_until("four matches in play", lambda: all(
                    r.exists(keys.lease(m)) for m in hosted), timeout=60)

                early = {**_plant(rq_conn, CONTROL_QUEUE, "a"),
                         **_plant(rq_conn, RESUME_QUEUE, "a")}
                wait_until("the control and resume queues' bad jobs moved aside", lambda: all(
                    rq_conn.llen(f"rq:queue:{q}") == 0 for q in (CONTROL_QUEUE, RESUME_QUEUE)),
                    timeout=30)
                # Taken by reserve threads: every general one hosts a match still in play.
                assert all(admin.get_match(m).status == match_pb2.MATCH_STATUS_RUNNING
                           for m in hosted)
                assert all(w.alive() for w in workers)

                late = _plant(rq_conn, MATCH_QUEUE, "b")
                queued = [match(s) for s in (10, 11)]
                st.bots([("greedy", regs[2][1])])
                for m in hosted + queued:
                    done = finished(admin, m, timeout=120)
                    assert done.transcript_json
                    assert r.hget(keys.match(m), "runs") == "1", m
                wait_until("the matches queue empty", lambda: rq_conn.llen(
                    f"rq:queue:{MATCH_QUEUE}") == 0, timeout=30)
                assert all(w.alive() for w in workers), [w.text()[-3000:] for w in workers]

                for jid, kind in {**early, **late}.items():
                    queue = jid.split("-", 2)[2].rsplit("-", 1)[0]
                    assert (jid in _failed_ids(rq_conn, queue)) == (kind != "nohash"), jid
                    if kind == "nohash":
                        continue
                    assert r.hget(Job.key_for(jid), "status") == "failed", jid
                    assert any(f"refused job {jid}" in w.text() for w in workers), jid
                    if kind in ("pickle", "garbage", "oldjob", "foreign", "oldargs"):
                        job = Job.fetch(jid, connection=rq_conn, serializer=JSONSerializer)
                        last = job.latest_result()
                        assert last is not None and f"refused job {jid}" in (
                            last.exc_string or ""), jid
                refused: dict[str, float] = {}
                for w in workers:
                    for reason, n in _refused(w).items():
                        refused[reason] = refused.get(reason, 0) + n
                want: dict[str, float] = {}
                for kind in {**early, **late}.values():
                    want[KINDS[kind]] = want.get(KINDS[kind], 0) + 1
                assert {k: v for k, v in refused.items() if v} == want
        finally:
            st.stop_all()
            r.close()
            rq_conn.close()


def test_a_match_whose_job_no_longer_reads_is_hosted_by_a_fresh_job(
        tmp_path: Path, admin_token: str) -> None:
    """A match queued while no worker runs, its job rewritten in an older shape (as a job
    left by an older version would be): the worker refuses the job, and recovery, seeing
    a refused job rather than one that failed, queues the match again with a job of this
    version, which hosts it to its end. Before, the match was marked failed."""
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        st = Stack(tmp_path, srv.url, admin_token=admin_token)
        rq_conn = redis.Redis.from_url(srv.url)
        try:
            st.referee()
            admin = Admin(st.address, admin_token)
            with contextlib.closing(admin):
                mid = admin.create_match(3, ["house:greedy", "house:random", "house:greedy"],
                                         seed=3, rules=RULES).match_id
                jid = f"match-{mid}"
                assert rq_conn.exists(Job.key_for(jid))
                rq_conn.hset(Job.key_for(jid), "data",
                             json.dumps(["workers.jobs.run_match", [mid]]))
                worker = st.worker()
                done = finished(admin, mid, timeout=60)
                assert done.status == match_pb2.MATCH_STATUS_FINISHED
                assert f"refused job {jid}" in worker.text()
                assert worker.alive()
        finally:
            st.stop_all()
            rq_conn.close()


def test_rqs_housekeeping_that_meets_a_bad_job_kills_no_worker(
        tmp_path: Path, admin_token: str) -> None:
    """A job hash RQ cannot parse, left in a queue's started registry past its time: RQ's
    own housekeeping raises on it between jobs. The worker logs that, goes on taking jobs,
    and tries the housekeeping again at its next interval."""
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        st = Stack(tmp_path, srv.url, admin_token=admin_token)
        rq_conn = redis.Redis.from_url(srv.url)
        try:
            rq_conn.hset(Job.key_for("bad-started"), mapping={
                "data": b"[]", "status": "started", "origin": CONTROL_QUEUE,
                "created_at": "the day before"})
            rq_conn.zadd(f"rq:wip:{CONTROL_QUEUE}", {"bad-started:run1": 1})
            st.referee()
            worker = st.worker()
            worker.wait_for("RQ's maintenance pass failed", timeout=30)
            admin = Admin(st.address, admin_token)
            with contextlib.closing(admin):
                mid = admin.create_match(3, ["house:greedy", "house:random", "house:greedy"],
                                         seed=5, rules=RULES).match_id
                finished(admin, mid, timeout=60)
            assert worker.alive()
        finally:
            st.stop_all()
            rq_conn.close()


def test_rqs_housekeeping_inside_its_dequeue_is_guarded_too(tmp_path: Path) -> None:
    """RQ runs its housekeeping itself from inside its dequeue whenever it is due (a busy
    worker's loop may not have run it for a while): that path meets the same unreadable job
    and must not end the worker either."""
    from workers.worker import make_worker

    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        conn = redis.Redis.from_url(srv.url)
        try:
            conn.hset(Job.key_for("bad-started"), mapping={
                "data": b"[]", "status": "started", "origin": CONTROL_QUEUE,
                "created_at": "the day before"})
            conn.zadd(f"rq:wip:{CONTROL_QUEUE}", {"bad-started:run1": 1})
            worker = make_worker(conn, name="guarded", concurrency=2)
            worker.register_birth()
            worker.last_cleaned_at = None  # housekeeping is due: the dequeue runs it itself
            assert worker.should_run_maintenance_tasks
            assert worker.dequeue_job_and_maintain_ttl(1) is None  # raised before the guard
            assert not worker.should_run_maintenance_tasks  # tried, and put off to next time
            worker.register_death()
        finally:
            conn.close()
