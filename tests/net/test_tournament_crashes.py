"""Tournaments survive crashes: a worker killed mid-match, and everything restarted at once.

Each test runs its own Redis, referee, workers and bots (nothing else consumes its
queues), kills processes with SIGKILL while matches are being played, and checks
that the tournament completes with every match recorded exactly once and its event
log numbered 1..N without a gap or a repeat.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import psutil
import pytest
import redis
from rq import Worker
from rq.exceptions import NoSuchJobError
from rq.job import Job
from stack import Proc, Stack
from support import check_stored, match_log, transcript_of, wait_until
from tourney import (
    Event,
    Watcher,
    check_recorded_once,
    check_sequence,
    check_standings,
    logs_on_failure,
    matches_of,
    wait_finished,
)

from clients.admin import Admin
from clients.redisproc import RedisServer, free_port
from clients.sdk import register
from store import keys
from workers.queues import rq_connection

RULES = {"max_hands": "4"}  # games of a second or two: long enough to be killed in


@dataclass
class Own:
    """A private Redis and a stack on it."""

    redis: RedisServer
    stack: Stack
    r: redis.Redis
    workers: list[Proc]
    bots: list[str]


def _start(tmp_path: Path, admin_token: str) -> Own:
    srv = RedisServer(tmp_path / "redis", appendonly=True).start()
    st = Stack(tmp_path, srv.url, admin_token=admin_token)
    st.referee(listen=f"127.0.0.1:{free_port()}")
    workers = [st.worker(), st.worker()]
    kinds = ["greedy", "random", "greedy", "random"]
    regs = [register(st.address, f"c{i}-{kind}") for i, kind in enumerate(kinds)]
    st.bots([(kind, token) for kind, (_, token) in zip(kinds, regs, strict=True)])
    r = redis.Redis.from_url(srv.url, decode_responses=True)
    return Own(srv, st, r, workers, [b for b, _ in regs])


@pytest.fixture
def own(tmp_path: Path, admin_token: str) -> Iterator[Own]:
    """Redis (append-only file on), a referee on a fixed port, two workers and four bots,
    all this test's own."""
    o = _start(tmp_path, admin_token)
    yield o
    o.stack.stop_all()
    o.r.close()
    o.redis.stop()


def _hosting(rq_conn: redis.Redis, r: redis.Redis, worker: Proc,
             min_actions: int = 10) -> str | None:
    """The match this worker's work-horse is playing, once it is `min_actions` in."""
    for w in Worker.all(connection=rq_conn):
        if w.pid == worker.popen.pid:
            job = w.get_current_job_id() or ""
            mid = job.removeprefix("match-")
            if job.startswith("match-") and r.exists(keys.lease(mid)) \
                    and r.llen(keys.match_log(mid)) >= min_actions:
                return mid
    return None


def _freeze(procs: list[Proc]) -> list[psutil.Process]:
    """SIGSTOP the processes, then everything under them (they fork nothing meanwhile)."""
    family = [psutil.Process(p.popen.pid) for p in procs]
    for p in family:
        p.suspend()
    for child in [c for p in family for c in p.children(recursive=True)]:
        try:
            child.suspend()
            family.append(child)
        except psutil.NoSuchProcess:
            pass  # a work-horse that had just finished
    return family


def _thaw(family: list[psutil.Process]) -> None:
    """SIGCONT what `_freeze` stopped."""
    for p in family:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.resume()


def _freeze_mid_match(rq_conn: redis.Redis, r: redis.Redis, worker: Proc) -> str | None:
    """SIGSTOP the worker and all under it while it hosts a match that has no result yet;
    return that match (or None, everything running again, to try later)."""
    mid = _hosting(rq_conn, r, worker)
    if mid is None:
        return None
    family = _freeze([worker])
    if r.exists(keys.result(mid)) or not r.exists(keys.lease(mid)):
        _thaw(family)  # it finished just now: pick another
        return None
    return mid


def _freeze_all_mid_match(r: redis.Redis, workers: list[Proc]) -> list[str] | None:
    """SIGSTOP every worker and all under them when at least one match is being played
    (leased, no result); return those matches (or None, everything running again)."""
    family = _freeze(workers)
    playing = [mid for mid in r.smembers(keys.OPEN_MATCHES)  # type: ignore[union-attr]
               if r.exists(keys.lease(mid)) and not r.exists(keys.result(mid))
               and r.llen(keys.match_log(mid)) >= 5]
    if not playing:
        _thaw(family)
    return playing or None


def _check_all_recorded(own: Own, admin: Admin, tid: str, events: list[Event]) -> None:
    """Completed, each match recorded once, logs clean, standings agree."""
    check_recorded_once(own.r, tid, "3p", events)
    games = matches_of(admin, tid)
    assert len(games) == 24
    for m in games:
        check_stored(own.r, m, transcript_of(m))  # a log of exactly the actions, once each
        assert m.result.end != "forfeit", (m.match_id, m.result)
    check_standings(admin.standings(tid), games)


def test_worker_killed_mid_tournament(own: Own) -> None:
    """SIGKILL a worker (with its work-horse) while it hosts a match; the other worker's
    recovery queues the match again, the new run resumes it from its log, and the
    tournament completes. Either worker may be the victim: every worker runs recovery."""
    st = own.stack
    admin = Admin(st.address, st.admin_token)
    rq_conn = rq_connection(own.redis.url)
    with logs_on_failure(st), contextlib.closing(admin), contextlib.closing(rq_conn):
        t = admin.create_tournament(name="kill a worker", players=3, format="round_robin",
                                    bot_ids=own.bots, rules=RULES, duplicate="replay")
        tid = t.tournament_id
        watch = Watcher(admin, tid).start()
        wait_until("a few games done", lambda: own.r.hget(keys.tournament(tid), "done")
                   not in (None, "0"), timeout=60)
        victim, mid = wait_until(
            "a worker frozen mid-match",
            lambda: next(((w, m) for w in own.workers
                          if (m := _freeze_mid_match(rq_conn, own.r, w)) is not None), None),
            timeout=60)
        log_at_kill = match_log(own.r, mid)
        victim.kill_tree()
        killed_at = time.monotonic()
        # Picked up again: the log grows past where the dead run left it.
        wait_until("the match to resume", lambda: len(match_log(own.r, mid)) > len(log_at_kill)
                   or own.r.exists(keys.result(mid)), timeout=90, every=0.1)
        resumed_after = time.monotonic() - killed_at
        wait_finished(admin, tid, timeout=150)
        events = watch.join()
        assert match_log(own.r, mid)[: len(log_at_kill)] == log_at_kill
        _check_all_recorded(own, admin, tid, events)
        print(f"\nkilled worker's match {mid} resumed {resumed_after:.1f} s after the kill")


def _dump_unfinished(own: Own, tid: str) -> None:
    """Print what holds up a tournament: each unfinished game's state in Redis and RQ."""
    rq_conn = rq_connection(own.redis.url)
    print("---- unfinished games ----")
    print("tournament", own.r.hgetall(keys.tournament(tid)),
          "dirty", own.r.exists(keys.tournament_dirty(tid)),
          "lock", own.r.get(keys.tournament_lock(tid)))
    for mid in own.r.zrange(keys.tournament_matches(tid), 0, -1):
        if own.r.exists(keys.result(mid)):
            continue
        try:
            job = Job.fetch(f"match-{mid}", connection=rq_conn)
            status = f"{job.get_status()} started_at={job.started_at}"
        except NoSuchJobError:
            status = "no job"
        print(mid, own.r.hget(keys.match(mid), "status"), "open",
              own.r.sismember(keys.OPEN_MATCHES, mid), "lease",
              own.r.pttl(keys.lease(mid)), "log", own.r.llen(keys.match_log(mid)), "job", status)
    print("queued:", rq_conn.lrange("rq:queue:moonshot-matches", 0, -1),
          rq_conn.lrange("rq:queue:moonshot-control", 0, -1))
    rq_conn.close()


def test_full_restart_mid_tournament(own: Own) -> None:
    """Referee, both workers and Redis all SIGKILLed while games are in play, then started
    again on the same data folder and ports: the tournament carries on where it was and
    completes; the bots (left running) reconnect; a watcher that lost its stream resumes
    after its last event and misses nothing."""
    st = own.stack
    admin = Admin(st.address, st.admin_token)
    with logs_on_failure(st), contextlib.closing(admin):
        # A long disconnect grace: the bots are away while everything restarts, and how
        # long that takes on a busy machine is not what this test is about.
        t = admin.create_tournament(name="restart all", players=3, format="round_robin",
                                    bot_ids=own.bots, rules=RULES, grace_ms=120_000,
                                    duplicate="replay")
        tid = t.tournament_id
        watch = Watcher(admin, tid).start()
        wait_until("a quarter of the games done", lambda: int(
            own.r.hget(keys.tournament(tid), "done") or 0) >= 6, timeout=90)
        in_play = wait_until("the workers frozen with a match in play",
                             lambda: _freeze_all_mid_match(own.r, own.workers), timeout=60)
        logs_at_kill = {mid: match_log(own.r, mid) for mid in in_play}
        done_before = int(own.r.hget(keys.tournament(tid), "done") or 0)
        own.r.close()
        for p in st.procs:
            if p.name in ("worker", "referee"):
                p.kill_tree()
        assert own.redis.proc is not None
        own.redis.proc.kill()
        own.redis.proc.wait()
        with pytest.raises(grpc.RpcError) as info:
            watch.join()  # its referee died under it
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE  # type: ignore[attr-defined]
        seen = watch.events
        check_sequence(seen)

        # Same data folder, same ports: nothing else needs telling.
        own.redis = RedisServer(own.redis.data_dir, port=own.redis.port, appendonly=True).start()
        own.r = redis.Redis.from_url(own.redis.url, decode_responses=True)
        assert int(own.r.hget(keys.tournament(tid), "done") or 0) >= done_before
        st.referee(listen=st.address)
        own.workers = [st.worker(), st.worker()]
        rest = Watcher(admin, tid, after=seen[-1].sequence if seen else 0).start()
        try:
            wait_finished(admin, tid, timeout=150)
        except TimeoutError:
            _dump_unfinished(own, tid)
            raise
        events = seen + rest.join()
        _check_all_recorded(own, admin, tid, events)
        for mid, log in logs_at_kill.items():  # resumed where they were, not replayed anew
            assert match_log(own.r, mid)[: len(log)] == log
