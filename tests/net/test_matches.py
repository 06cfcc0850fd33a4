"""Whole matches between bot processes over the network, hosted by RQ workers.

Real Redis, a real referee, real workers and real bot processes, started the
way a user starts them. A match killed with SIGKILL mid-game resumes from its
log and finishes the very game it was playing.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import psutil
import redis
from netbots import SlowGreedyBot
from rawbot import DecisionRequest, RawBot
from rq.job import Job
from rq.serializers import JSONSerializer
from stack import Stack, env, moonshot
from support import (
    PoolBot,
    check_stored,
    finished,
    match_log,
    pending_ids,
    transcript_of,
    wait_until,
)

from clients.admin import Admin
from clients.builtin import GreedyBot
from clients.sdk import register
from clients.selfplay import play_game
from clients.wire import actions_from_pb, observation_from_pb
from moon import Rules
from moon.transcript import actions_of
from proto.moon.v1 import match_pb2
from store import keys
from workers.match import LEASE_MS
from workers.queues import rq_connection


def _placement_ok(players: int, result: match_pb2.MatchResult) -> None:
    """Places follow the final scores: 3p by score, 4p by team."""
    final = list(result.final_scores)
    if players == 3:
        for s in range(3):
            assert result.placement[s] == 1 + sum(1 for v in final if v > final[s])
    elif result.HasField("winner"):
        assert [p == 1 for p in result.placement] == [s % 2 == result.winner for s in range(4)]


def test_full_3p_match_with_the_cli(stack: Stack, pool: dict[str, PoolBot], admin: Admin,
                                    r: redis.Redis, tmp_path: Path) -> None:
    seats = [pool["greedy1"], pool["greedy2"], pool["random1"]]
    out = tmp_path / "m3.jsonl"
    res = subprocess.run(
        moonshot("match", "play", "--players", "3", "--seed", "11",
                 "--bots", ",".join(b.bot_id for b in seats), "--server", stack.address,
                 "--time-per-move", "5s", "--out", str(out)),
        env=env(MOONSHOT_ADMIN_TOKEN=stack.admin_token), capture_output=True, text=True,
        timeout=120, check=False, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    match_id = re.search(r"match (m-[0-9a-f]+) queued", res.stdout).group(1)  # type: ignore[union-attr]
    assert f"transcript: {out}" in res.stdout
    for s, b in enumerate(seats):
        assert re.search(rf"seat {s} {re.escape(b.name)}\s", res.stdout), res.stdout

    record = json.loads(out.read_text())
    assert record["seats"] == [b.name for b in seats]
    assert record["seed"] == 11 and record["players"] == 3
    assert record["end"] in ("normal", "hand_limit") and record["faults"] == []

    m = finished(admin, match_id)
    assert transcript_of(m) == record
    assert list(m.seat_names) == [b.name for b in seats]
    assert list(m.bot_ids) == [b.bot_id for b in seats]
    assert list(m.result.seats) == [b.name for b in seats]
    assert m.result.end == record["end"] and list(m.result.final_scores) == record["final"]
    assert m.actions_played == len(actions_of(record))
    _placement_ok(3, m.result)
    check_stored(r, m, record)

    # `match show` reads it back, for anyone (no admin token).
    shown = tmp_path / "shown.jsonl"
    res = subprocess.run(moonshot("match", "show", match_id, "--server", stack.address,
                                  "--out", str(shown)),
                         env=env(), capture_output=True, text=True, timeout=60, check=False,
                         cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"match {match_id}: {record['end']}" in res.stdout
    assert json.loads(shown.read_text()) == record


def test_full_4p_match(pool: dict[str, PoolBot], admin: Admin, r: redis.Redis) -> None:
    seats = [pool["greedy1"], pool["random1"], pool["greedy2"], pool["random2"]]
    m = admin.create_match(4, [b.bot_id for b in seats], seed=5, move_time_ms=5000)
    assert m.status == match_pb2.MATCH_STATUS_QUEUED and m.seed == 5
    m = finished(admin, m.match_id)
    record = transcript_of(m)
    assert record["players"] == 4 and record["seats"] == [b.name for b in seats]
    assert record["end"] in ("normal", "hand_limit") and record["faults"] == []
    assert list(m.result.seats) == [b.name for b in seats]
    assert len(m.result.final_scores) == 2  # per team
    _placement_ok(4, m.result)
    check_stored(r, m, record)


# ------------------------------------------------------------ kill -9


def _horse_of(rq_conn: redis.Redis, match_id: str) -> psutil.Process:
    """The process running the match's job right now: the worker hosting it (a worker
    runs its jobs on threads of its own process)."""
    job = Job.fetch(f"match-{match_id}", connection=rq_conn, serializer=JSONSerializer)
    assert job.worker_name, "the match job is not being worked on"
    pid = int(rq_conn.hget(f"rq:worker:{job.worker_name}", "pid"))  # type: ignore[arg-type]
    return psutil.Process(pid)


def _stop_inside_blpop(r: redis.Redis, horse: psutil.Process, timeout: float = 10.0) -> None:
    """SIGSTOP the horse at a moment when Redis holds it blocked in BLPOP, waiting for a
    reply: Redis then hands the next reply to the stopped process, where it dies with it."""
    ports = {f":{c.laddr.port}" for c in horse.net_connections(kind="tcp") if c.laddr}
    end = time.monotonic() + timeout
    while True:
        horse.suspend()
        if any(c["cmd"] == "blpop" and "b" in c["flags"] and c["addr"][c["addr"].rfind(":"):]
               in ports for c in r.client_list()):
            return
        horse.resume()
        assert time.monotonic() < end, "the match job never blocked in BLPOP"
        time.sleep(0.02)


def test_kill_9_of_the_match_job_resumes_the_same_game(
        stack: Stack, admin: Admin, r: redis.Redis, name: str) -> None:
    """Seat 0 is an in-process proto client playing GreedyBot's moves; seats 1 and 2 are
    SlowGreedyBot processes. All are deterministic given the observation and take ~15 ms a
    move, so the game lasts seconds. The work-horse is killed with SIGKILL twice while
    seat 0 holds a request:

    1. stopped inside BLPOP first, so that seat 0's answer goes to the stopped horse and
       dies with it: the resumed run must ask again and the referee deliver it again,
       though the stream has seen that request id;
    2. killed outright, seat 0 answering after: the answer waits in the reply list and
       the resumed run takes it; seat 0 ignores the request sent again (it answered
       already), and the run leaves nothing pending all the same.

    Each time the job runs again (queued by recovery), resuming from the log; the game is
    the very one the same bots play without any network."""
    names = [f"{name}-g{i}" for i in range(3)]
    regs = [register(stack.address, n) for n in names]
    stack.bots([("netbots:SlowGreedyBot", token) for _, token in regs[1:]])
    seed = 3
    expected = play_game(Rules.make(3), seed, [GreedyBot(None) for _ in range(3)], names)
    total = len(actions_of(expected))
    rq_conn = rq_connection(stack.redis_url)

    held: list[tuple[str, int]] = []  # (request id, lease ms left when it arrived)
    started: list[float] = []

    def greedy(req: DecisionRequest) -> int | None:
        seq = int(req.request_id.rpartition("/")[2])
        if not started:
            started.append(float(r.hget(keys.match(req.match_id), "started_at") or 0))
        first = not held and time.time() - started[0] > 2.2 and seq < total - 80
        second = len(held) == 1 and int(held[0][0].rpartition("/")[2]) + 30 < seq < total - 10
        if first or second:
            held.append((req.request_id, int(r.pttl(keys.lease(req.match_id)))))  # type: ignore[arg-type]
            return None  # hold it: the job waits for seat 0 now
        if len(held) == 2 and req.request_id == held[1][0]:
            return None  # answered once already, which is enough (see kill_while_held)
        time.sleep(SlowGreedyBot.DELAY_S)
        return choose(req)

    def choose(req: DecisionRequest) -> int:
        obs = observation_from_pb(req.observation)
        return GreedyBot(None).act(obs, actions_from_pb(req.legal_actions)).id

    def answer(rid: str) -> None:
        req = next(msg.decision_request for msg in seat0.received
                   if msg.decision_request.request_id == rid)
        seat0.send(rid, choose(req))
        wait_until("the answer to be taken", lambda: rid not in pending_ids(r, regs[0][0]))

    def kill_while_held(n: int, mid: str, stop_first: bool) -> list[dict[str, object]]:
        """Kill the run while seat 0 holds its n-th held request; the log at the kill."""
        rid, _ = wait_until(f"seat 0 to hold request {n}",
                            lambda: len(held) > n and held[n])
        assert rid in pending_ids(r, regs[0][0])
        horse = _horse_of(rq_conn, mid)
        if stop_first:
            _stop_inside_blpop(r, horse)
            answer(rid)
        horse.kill()
        horse.wait(10)
        stack.worker()  # the session keeps its two workers
        log = match_log(r, mid)  # nothing of the dead run can be added after this
        assert len(log) == int(rid.rpartition("/")[2])
        received = len(seat0.received)
        if not stop_first:
            answer(rid)
            assert r.llen(keys.replies(mid)) == 1  # waiting for the next run
        # The resumed run sends the same request again, and the referee delivers it
        # though this stream has seen that request id (the first answer may be lost).
        wait_until("the request sent again", lambda: any(
            msg.decision_request.request_id == rid for msg in seat0.received[received:]),
            timeout=30)
        return log

    seat0 = RawBot(stack.address, regs[0][1], greedy).start()
    try:
        mid = admin.create_match(3, [bot_id for bot_id, _ in regs], seed=seed,
                                 move_time_ms=10_000, time_bank_ms=0).match_id
        first_log = kill_while_held(0, mid, stop_first=True)
        # The run renews its lease as it goes, though every answer before the hold came
        # quickly (the timeout path is not the only one): 2.2 s in, it was still fresh.
        assert held[0][1] > LEASE_MS - 2000
        second_log = kill_while_held(1, mid, stop_first=False)
        m = finished(admin, mid, timeout=60)
    finally:
        seat0.close()
    record = transcript_of(m)
    # The same game, resumed: exactly what the same bots play without any network.
    for key, value in expected.items():
        assert record[key] == value, (key, record["faults"])
    assert record["faults"] == [] and "forfeit" not in record
    after = match_log(r, mid)
    assert after[: len(first_log)] == first_log
    assert after[: len(second_log)] == second_log
    assert len(after) == total == len({e["seq"] for e in after})
    check_stored(r, m, record)  # including: nothing left pending
    assert r.hget(keys.match(mid), "runs") == "3"  # hosted by three runs in turn
    # The result was recorded once: the match ended once for seat 0.
    ended = [msg for msg in seat0.received if msg.WhichOneof("message") == "match_ended"]
    assert len(ended) == 1 and ended[0].match_ended.match_id == mid
