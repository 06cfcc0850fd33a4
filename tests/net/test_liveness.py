"""Hosting for real: a frozen bot counts as disconnected within seconds, and a worker
process hosting many matches at once is killed mid-way without a game lost or doubled."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from pathlib import Path

import grpc
import psutil
import redis
from stack import Stack, env, moonshot
from support import PoolBot, finished, wait_until

from clients.admin import Admin
from clients.redisproc import RedisServer
from clients.sdk import register
from proto.moon.v1 import match_pb2, match_pb2_grpc
from store import keys


def test_a_frozen_bot_is_disconnected_and_forfeits_by_the_grace(
        stack: Stack, pool: dict[str, PoolBot], admin: Admin, name: str) -> None:
    """SIGSTOP a bot process mid-match: it still holds its stream (the kernel keeps the
    socket), but it answers no ping, so within seconds it counts as disconnected: its
    clock stops and it forfeits when the grace is over, not by the clock; a match of
    other bots meanwhile goes on as usual."""
    bot_id, token = register(stack.address, name)
    proc = stack.bot("greedy", stack.address, token)
    frozen = psutil.Process(proc.popen.pid)
    time.sleep(4.5)  # pings come every 2 s: it has answered some by now
    mid = admin.create_match(3, [bot_id, pool["greedy1"].bot_id, pool["greedy2"].bot_id],
                             seed=12, move_time_ms=20_000, time_bank_ms=20_000,
                             grace_ms=3_000, rules={"target": "150"}).match_id
    wait_until("a few actions", lambda: admin.get_match_as_organiser(mid).actions_played >= 3,
               timeout=30, every=0.01)
    frozen.suspend()
    stopped = time.monotonic()
    try:
        other = admin.create_match(3, [pool["greedy3"].bot_id, pool["random1"].bot_id,
                                       pool["random2"].bot_id], seed=2, rules={"max_hands": "3"})
        finished(admin, other.match_id)  # a stuck bot delays only its own matches
        m = finished(admin, mid, timeout=60)
        took = time.monotonic() - stopped
    finally:
        frozen.resume()
    record = json.loads(admin.get_match_as_organiser(mid).transcript_json)
    assert record["end"] == "forfeit" and record["forfeit"]["seat"] == 0
    assert "disconnected for more than 3 s" in record["forfeit"]["reason"]
    assert m.result.placement[0] == 3
    # Not the clock (40 s a decision): the ping (5 s), then the grace (3 s).
    assert took < 30, took
    with grpc.insecure_channel(stack.address) as ch:
        events = list(match_pb2_grpc.MatchServiceStub(ch).WatchMatch(
            match_pb2.WatchMatchRequest(match_id=mid), timeout=60))
    kinds = [(e.fault.seat, e.fault.kind) for e in events if e.WhichOneof("event") == "fault"]
    assert (0, match_pb2.WatchMatchResponse.Fault.KIND_DISCONNECTED) in kinds


def test_the_worker_keeps_rq_s_heartbeat_of_every_match_it_hosts(
        stack: Stack, admin: Admin, name: str) -> None:
    """RQ fails a job as abandoned once its execution's heartbeat (90 s) lapses; the
    threaded worker renews it for every match it hosts, so a long match is never taken
    for a dead one."""
    regs = [register(stack.address, f"{name}-{i}") for i in range(3)]
    procs = stack.bots([("netbots:ThinkingBot", token) for _, token in regs])
    mid = admin.create_match(3, [b for b, _ in regs], seed=3, rules={"max_hands": "3"}).match_id
    rq = redis.Redis.from_url(stack.redis_url, decode_responses=True)
    wip = "rq:wip:moonshot-matches"

    def expiry() -> float | None:
        return next((score for member, score in rq.zrange(wip, 0, -1, withscores=True)
                     if member.startswith(f"match-{mid}:")), None)

    first = wait_until("the match's execution", expiry, timeout=30, every=0.05)
    renewed = wait_until("a renewed heartbeat",
                         lambda: e if (e := expiry()) and e > first + 5 else None,
                         timeout=25, every=0.5)
    assert renewed > first + 5
    finished(admin, mid, timeout=120)
    for p in procs:
        p.stop()
    rq.close()


def test_a_worker_hosting_a_hundred_matches_is_killed_and_every_game_completes_once(
        tmp_path: Path, admin_token: str) -> None:
    """One worker process hosts 100 matches at once (bots that think 0.2 s a move); it is
    killed with SIGKILL mid-way; a second worker takes them over from their logs; every
    match ends with one result, none played twice."""
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        st = Stack(tmp_path, srv.url, admin_token=admin_token)
        client = redis.Redis.from_url(srv.url, decode_responses=True)
        try:
            _, address = st.referee()
            worker = st.start("worker", moonshot("worker", "--redis", srv.url,
                                                 "--concurrency", "120"))
            worker.wait_for(r"Listening on|moonshot-matches", timeout=30)
            tokens = [register(address, f"hundred-{i}") for i in range(6)]
            bots = [st.bot("netbots:ThinkingBot", address, tok, "--threads", "48", wait=False)
                    for _, tok in tokens]
            for b in bots:
                b.wait_for(r"connected to ", timeout=30)
            a = Admin(address, admin_token)
            ids = [b for b, _ in tokens]
            mids = [a.create_match(3, [ids[i % 6], ids[(i + 1) % 6], ids[(i + 2) % 6]],
                                   seed=i, rules={"max_hands": "2"}).match_id
                    for i in range(100)]
            wait_until("all 100 hosted at once by the one worker", lambda: sum(
                bool(client.exists(keys.lease(m))) for m in mids) >= 95, timeout=90)
            assert all(client.llen(keys.match_log(m)) < 200 for m in mids)
            worker.kill()
            st.worker()  # its recovery finds the orphans and resumes them from their logs
            for m in mids:
                assert finished(a, m, timeout=300).status == match_pb2.MATCH_STATUS_FINISHED
            for m in mids:
                stored = json.loads(str(client.get(keys.result(m))))
                assert stored["transcript"]["match_id"] == m
                log = [json.loads(e) for e in client.lrange(keys.match_log(m), 0, -1)]
                moves = [e for e in log if "action" in e]
                assert [e["seq"] for e in moves] == list(range(len(moves)))  # none twice
                assert int(client.hget(keys.match(m), "runs") or 0) >= 1
            assert sum(int(client.hget(keys.match(m), "runs") or 0) > 1 for m in mids) >= 50
            a.close()
        finally:
            st.stop_all()
            client.close()


def test_moonshot_up_starts_again_what_dies_and_gives_up_on_what_keeps_dying(
        tmp_path: Path) -> None:
    """`moonshot up`: a worker killed is started again (and says so); Redis killed is
    started again on its data; a part that keeps dying is given up on, and everything
    stops with an error, rather than looping forever."""
    data = tmp_path / "data"
    up = Stack(tmp_path, "", admin_token="adm.uptest").start("up", moonshot(
        "up", "--data", str(data), "--listen", "127.0.0.1:0", "--workers", "1"))
    try:
        up.wait_for(r"moonshot is up", timeout=90)
        me = psutil.Process(up.popen.pid)

        def part(word: str) -> psutil.Process:
            for child in me.children(recursive=True):
                cmd = " ".join(child.cmdline())
                if word in cmd:
                    return child
            raise AssertionError(f"no {word} under moonshot up")

        part("clients.cli host")  # with its archive, `up` runs a host of hosted versions too
        assert "hosting:     bots submitted as code run here" in up.text(), up.text()
        part("clients.cli worker").kill()
        up.wait_for(r"worker-1 stopped unexpectedly and was started again", timeout=30)
        part("redis-server").kill()
        up.wait_for(r"redis stopped unexpectedly and was started again", timeout=30)
        def worker_back() -> bool:
            with contextlib.suppress(psutil.Error):  # a child may vanish while listed
                return any("clients.cli worker" in " ".join(c.cmdline())
                           for c in me.children(recursive=True))
            return False

        for _ in range(6):  # keeps dying: after five restarts in ten minutes, no more
            # The worker may also have died on its own while Redis was away (a death
            # that counts too), so `up` may give up before this loop's fifth kill.
            wait_until("the worker back (or moonshot up giving up)", lambda: (
                up.popen.poll() is not None or worker_back()), timeout=60)
            if up.popen.poll() is not None:
                break
            with contextlib.suppress(psutil.Error, AssertionError):
                part("clients.cli worker").kill()
            time.sleep(1.5)
        up.wait_for(r"worker-1 died 5 times within 10 minutes: not starting it again", timeout=30)
        assert up.popen.wait(60) == 1
    finally:
        up.stop()


def test_workers_outlive_a_redis_restart_and_their_matches_resume(
        tmp_path: Path, admin_token: str) -> None:
    """Redis is killed mid-match and started again on its append-only file five seconds
    later: the worker never exits, it waits, and the matches it hosted carry on from
    their logs to their end."""
    srv = RedisServer(tmp_path / "redis", appendonly=True).start()
    st = Stack(tmp_path, srv.url, admin_token=admin_token)
    try:
        _, address = st.referee()
        worker = st.worker()
        tokens = [register(address, f"outage-{i}") for i in range(3)]
        for _, tok in tokens:
            st.bot("netbots:ThinkingBot", address, tok)
        a = Admin(address, admin_token)
        ids = [b for b, _ in tokens]
        mids = [a.create_match(3, [ids[i % 3], ids[(i + 1) % 3], ids[(i + 2) % 3]],
                               seed=i, rules={"max_hands": "2"}).match_id for i in range(6)]
        client = redis.Redis.from_url(srv.url, decode_responses=True)
        wait_until("matches in play", lambda: sum(
            client.llen(keys.match_log(m)) > 3 for m in mids) >= 3, timeout=60)
        client.close()
        assert srv.proc is not None
        srv.proc.kill()
        srv.proc.wait()
        time.sleep(5.0)
        srv.start()
        for m in mids:
            assert finished(a, m, timeout=180).status == match_pb2.MATCH_STATUS_FINISHED
        assert worker.alive(), worker.text()[-2000:]
        assert "Redis unreachable" in worker.text()
        a.close()
    finally:
        st.stop_all()
        srv.stop()


def test_a_worker_killed_and_started_again_under_its_name_takes_it_back(
        tmp_path: Path, admin_token: str) -> None:
    """RQ keeps a killed worker's registration for minutes and refuses its name meanwhile:
    a worker started again under its `--name` takes over the name of its dead
    predecessor and hosts; a second live worker of that name is refused in one line."""
    srv = RedisServer(tmp_path / "redis", appendonly=False).start()
    st = Stack(tmp_path, srv.url, admin_token=admin_token)
    try:
        st.referee()
        first = st.worker("--name", "night-shift")
        first.kill_tree()
        second = st.worker("--name", "night-shift")
        second.wait_for("taking the name over", timeout=10)
        regs = [register(st.address, f"n{i}") for i in range(3)]
        st.bots([("greedy", token) for _, token in regs])
        admin = Admin(st.address, admin_token)
        mid = admin.create_match(3, [b for b, _ in regs], seed=4,
                                 rules={"max_hands": "2"}).match_id
        finished(admin, mid, timeout=60)
        admin.close()
        rival = subprocess.run(moonshot("worker", "--redis", srv.url, "--name", "night-shift"),
                               env=env(), capture_output=True, text=True, timeout=60,
                               check=False)
        assert rival.returncode != 0
        assert "a worker named 'night-shift' is running" in rival.stderr
        assert "Traceback" not in rival.stderr
        assert second.alive()
    finally:
        st.stop_all()
        srv.stop()
