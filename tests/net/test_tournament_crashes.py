"""Tournaments survive crashes: a worker killed mid-match, and everything restarted at once.

Each test runs its own Redis, referee, workers and bots (nothing else consumes its
queues), kills processes with SIGKILL while matches are being played, and checks
that the tournament completes with every match recorded exactly once and its event
log numbered 1..N without a gap or a repeat.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator
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
from support import check_stored, finished, match_log, transcript_of, wait_until
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


def _start(tmp_path: Path, admin_token: str, failpoints: str = "",
           referees: tuple[int, ...] = (), server: str = "") -> Own:
    """The stack; `failpoints` arms the first worker (see workers.failpoints); a referee
    on each of the `referees` ports (one on a free port if none); the bots connect to
    `server` (a gRPC target) if given, else to the first referee."""
    srv = RedisServer(tmp_path / "redis", appendonly=True).start()
    st = Stack(tmp_path, srv.url, admin_token=admin_token)
    try:
        for port in referees or (free_port(),):
            st.referee(listen=f"127.0.0.1:{port}")
        workers = [st.worker(MOONSHOT_FAILPOINTS=failpoints), st.worker()]
        kinds = ["greedy", "random", "greedy", "random"]
        regs = [register(st.address, f"c{i}-{kind}") for i, kind in enumerate(kinds)]
        st.bots([(kind, token) for kind, (_, token) in zip(kinds, regs, strict=True)],
                server=server)
    except BaseException:
        st.stop_all()  # nothing may outlive a start that failed half-way
        srv.stop()
        raise
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


def _check_all_recorded(own: Own, admin: Admin, tid: str, events: list[Event],
                        count: int = 24, pool: str = "3p") -> None:
    """Completed, each of the `count` matches recorded once, logs clean, standings agree."""
    check_recorded_once(own.r, tid, pool, events)
    games = matches_of(admin, tid)
    assert len(games) == count
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


@pytest.mark.parametrize(("players", "field", "options", "tables", "byes"), [
    (3, 13, {"rounds": 3}, 4, 1),  # four tables and a bye a round
    (4, 8, {"rounds": 3, "rotate_partners": True}, 2, 0),  # two tables of new partners
], ids=["3p-of-13", "2v2-of-8"])
def test_a_swiss_survives_a_worker_killed_mid_match(own: Own, players: int, field: int,
                                                    options: dict[str, object], tables: int,
                                                    byes: int) -> None:
    """A Swiss (3p of 13; 2v2 of 8 with rotating partners): SIGKILL a worker while it hosts
    a game; the game resumes from its log, the next round is paired once the round's
    games are all in, and every game is recorded once."""
    st = own.stack
    extra = [register(st.address, f"sw{i}") for i in range(field - len(own.bots))]
    many = st.start("manybots", [sys.executable, str(Path(__file__).with_name("manybots.py")),
                                 st.address, "greedy", *(token for _, token in extra)])
    many.wait_for(rf"connected {len(extra)} bots", timeout=60)
    admin = Admin(st.address, st.admin_token)
    rq_conn = rq_connection(own.redis.url)
    with logs_on_failure(st), contextlib.closing(admin), contextlib.closing(rq_conn):
        t = admin.create_tournament(name="kill a worker in a Swiss", players=players,
                                    format="swiss", bot_ids=[*own.bots, *(b for b, _ in extra)],
                                    rules=RULES, options=options)
        tid = t.tournament_id
        watch = Watcher(admin, tid).start()
        victim, mid = wait_until(
            "a worker frozen mid-match",
            lambda: next(((w, m) for w in own.workers
                          if (m := _freeze_mid_match(rq_conn, own.r, w)) is not None), None),
            timeout=60)
        log_at_kill = match_log(own.r, mid)
        victim.kill_tree()
        wait_finished(admin, tid, timeout=150)
        events = watch.join()
        assert match_log(own.r, mid)[: len(log_at_kill)] == log_at_kill
        _check_all_recorded(own, admin, tid, events, count=3 * tables,
                            pool="3p" if players == 3 else "2v2")
        st_ = admin.standings(tid)
        assert [len(r.tables) for r in st_.rounds] == [tables] * 3
        assert all(len(r.bye_bot_ids) == byes for r in st_.rounds)
        assert len({b for r in st_.rounds for b in r.bye_bot_ids}) == 3 * byes
        assert len(st_.ranking.rows) == field


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


@pytest.fixture
def armed(request: pytest.FixtureRequest, tmp_path: Path, admin_token: str) -> Iterator[Own]:
    """Like `own`, with the first worker's failpoints armed by the test's parameter."""
    o = _start(tmp_path, admin_token, failpoints=request.param)
    yield o
    o.stack.stop_all()
    o.r.close()
    o.redis.stop()


def _play_through(own: Own, name: str, during: Callable[[str], None]) -> None:
    """Run the 24-game tournament; call `during(tid)` while it plays; then check that it
    completed with every game recorded once."""
    st = own.stack
    admin = Admin(st.address, st.admin_token)
    with logs_on_failure(st), contextlib.closing(admin):
        t = admin.create_tournament(name=name, players=3, format="round_robin",
                                    bot_ids=own.bots, rules=RULES, duplicate="replay")
        tid = t.tournament_id
        watch = Watcher(admin, tid).start()
        during(tid)
        try:
            wait_finished(admin, tid, timeout=180)
        except TimeoutError:
            _dump_unfinished(own, tid)
            raise
        _check_all_recorded(own, admin, tid, watch.join())


def _died_at(worker: Proc, point: str) -> None:
    """Wait for the armed worker to kill itself at `point`."""
    wait_until(f"the worker killed at {point}", lambda: not worker.alive(), timeout=120)
    assert worker.popen.returncode == -signal.SIGKILL
    assert f"failpoint {point}: kill" in worker.text()


@pytest.mark.parametrize("armed", ["match.after-result@3=kill"], indirect=True)
def test_kill_9_between_a_result_and_its_bookkeeping(armed: Own) -> None:
    """The worker dies the instant its third result is stored, before the game is marked
    finished, recorded in its tournament or released: whichever run comes next (queued by
    recovery, since the game is still open) finds the result and does the rest, once."""
    def during(tid: str) -> None:
        _died_at(armed.workers[0], "match.after-result")
        half_done = [mid for mid in armed.r.smembers(keys.OPEN_MATCHES)  # type: ignore[union-attr]
                     if armed.r.exists(keys.result(mid))]
        assert half_done, "no stored result was left without its bookkeeping"
    _play_through(armed, "kill after a result", during)


@pytest.mark.parametrize("armed", ["step.before-save@2=kill"], indirect=True)
def test_kill_9_in_the_middle_of_a_scheduling_step(armed: Own) -> None:
    """The worker dies in its second scheduling step, after creating games and emitting
    events but before saving the tournament's new state: the step is redone by the other
    worker once the dead run's lock lapses, creating and announcing nothing twice."""
    _play_through(armed, "kill in a step",
                  lambda tid: _died_at(armed.workers[0], "step.before-save"))


@pytest.mark.parametrize("armed", ["step.before-end=kill"], indirect=True)
def test_kill_9_in_the_step_that_ends_the_tournament(armed: Own) -> None:
    """The only worker dies in the step that ends the tournament, just before its save:
    the end (status and TournamentFinished together) is written whole by the worker that
    redoes the step, once, and a watcher from the start sees it as the last event. (When
    the status and the end event were two writes, a kill between them left a tournament
    over with no end event, and its watchers waiting forever.)"""
    st = armed.stack
    armed.workers[1].kill_tree()  # the armed worker runs every step
    admin = Admin(st.address, st.admin_token)
    with logs_on_failure(st), contextlib.closing(admin):
        t = admin.create_tournament(name="kill at the end", players=3, format="round_robin",
                                    bot_ids=armed.bots, rules=RULES, duplicate="replay")
        tid = t.tournament_id
        watch = Watcher(admin, tid).start()
        _died_at(armed.workers[0], "step.before-end")
        assert armed.r.hget(keys.tournament(tid), "status") == "running"  # nothing of the end
        armed.workers.append(st.worker())
        wait_finished(admin, tid, timeout=120)
        _check_all_recorded(armed, admin, tid, watch.join())
        for stream in (keys.tournament_events(tid), keys.tournament_live(tid)):
            ends = [e for _, e in armed.r.xrange(stream) if '"tournament_finished"' in e["e"]]
            assert len(ends) == 1, stream
        again = Watcher(admin, tid).start().join()  # a watcher of the ended tournament
        assert again[-1].WhichOneof("event") == "tournament_finished"


@pytest.mark.parametrize("armed", ["match.before-send@30=sleep:20"], indirect=True)
def test_a_stalled_run_and_its_successor_race_for_the_lease(armed: Own) -> None:
    """A run stalls 20 s just before logging an action and sending the next request, as
    a process frozen by its host would. Its lease lapses, recovery queues the match
    again, a second run takes it over and plays on. When the first run wakes, its fenced
    write is refused: it stops having written nothing, and the log holds each action once."""
    worker = armed.workers[0]

    def during(tid: str) -> None:
        wait_until("the stall", lambda: "failpoint match.before-send: sleep" in worker.text(),
                   timeout=90)
        stopped = wait_until("the stalled run to stop", lambda: re.search(
            r"match (\S+): another run holds the lease; this run stops", worker.text()),
                             timeout=60)
        mid = stopped.group(1)
        assert armed.r.hget(keys.match(mid), "runs") == "2"
        assert worker.alive()  # a stall, not a crash: the worker went on with the rest
    _play_through(armed, "a stalled run", during)


def test_strikes_and_the_time_bank_survive_a_kill(tmp_path: Path, admin_token: str) -> None:
    """A bot with two strikes and part of its bank spent when its match's worker is
    killed: the run that resumes the match counts both strikes (the third forfeits, as
    `strike 3 of 3`) and charges the bank from where it was, not from full."""
    srv = RedisServer(tmp_path / "redis", appendonly=True).start()
    st = Stack(tmp_path, srv.url, admin_token=admin_token)
    r = redis.Redis.from_url(srv.url, decode_responses=True)
    try:
        st.referee()
        worker = st.worker()
        regs = [register(st.address, f"s{i}") for i in range(3)]
        flaky = st.bot("netbots:FlakyBot", st.address, regs[1][1])
        st.bots([("greedy", regs[0][1]), ("greedy", regs[2][1])])
        admin = Admin(st.address, admin_token)
        m = admin.create_match(3, [b for b, _ in regs], seed=5, rules={"max_hands": "6"},
                               move_time_ms=1000, time_bank_ms=10_000, max_strikes=3)
        mid = m.match_id
        flaky.wait_for(r"FLAKY 8\b", timeout=60)  # two strikes in, thinking 3 s on this one
        before = [e for e in match_log(r, mid) if e.get("seat") == 1 and "action" in e]
        assert [e["by"] for e in before].count("illegal") == 2
        assert before[-1]["bank"] < 10_000  # the slow 4th decision drew on the bank
        worker.kill_tree()
        st.worker()
        done = finished(admin, mid, timeout=120)
        record = transcript_of(done)
        assert record["end"] == "forfeit" and record["forfeit"]["seat"] == 1
        assert "3 strikes" in record["forfeit"]["reason"]
        assert r.hget(keys.match(mid), "runs") == "2"
        assert [f["kind"] for f in record["faults"] if f["seat"] == 1] == ["illegal"] * 3
        flaky.wait_for(rf"decision {mid}/\d+ rejected: .*strike 3 of 3", timeout=10)
        # The bank, entry by entry across the kill: each decision charges what it took over
        # the move time, from the bank the one before left.
        bank = 10_000
        for e in (e for e in match_log(r, mid) if e.get("seat") == 1 and "action" in e):
            bank = max(0, bank - max(0, e["ms"] - 1000))
            assert e["bank"] == bank, e
        check_stored(r, done, record)
        admin.close()
    finally:
        st.stop_all()
        r.close()
        srv.stop()


def test_an_answer_taken_by_a_stalled_run_reaches_its_successor(tmp_path: Path,
                                                                 admin_token: str) -> None:
    """A run stalls 20 s just after taking a bot's answer from the match's replies. Its
    lease lapses and a second run resumes the match, sending the same request again; the
    bots answer each request once only (`OnceBot`). When the stalled run wakes and finds
    the lease gone, the answer it holds goes back to the replies, so the run that holds
    the lease gets it: nobody is charged a late move or a strike for the stall."""
    srv = RedisServer(tmp_path / "redis", appendonly=True).start()
    st = Stack(tmp_path, srv.url, admin_token=admin_token)
    r = redis.Redis.from_url(srv.url, decode_responses=True)
    try:
        st.referee()
        stalled = st.worker(MOONSHOT_FAILPOINTS="match.after-answer@6=sleep:20")
        regs = [register(st.address, f"o{i}") for i in range(3)]
        bots = [st.bot("netbots:OnceBot", st.address, token) for _, token in regs]
        admin = Admin(st.address, admin_token)
        with logs_on_failure(st), contextlib.closing(admin):
            mid = admin.create_match(3, [b for b, _ in regs], seed=9,
                                     rules={"max_hands": "3"}).match_id
            wait_until("the stall", lambda: "failpoint match.after-answer: sleep"
                       in stalled.text(), timeout=60)
            st.worker()  # its recovery pass finds the match without a live host
            done = finished(admin, mid, timeout=120)
            wait_until("the stalled run to stop", lambda: re.search(
                rf"match {mid}: another run holds the lease; this run stops", stalled.text()),
                       timeout=60)
            assert r.hget(keys.match(mid), "runs") == "2"
            assert any("ONCE AGAIN" in b.text() for b in bots)  # the request came again
            entries = [e for e in match_log(r, mid) if "action" in e]
            assert {e["by"] for e in entries} == {"bot"}  # no late move, no stand-in
            record = transcript_of(done)
            assert record["end"] != "forfeit" and not record["faults"]
            check_stored(r, done, record)
    finally:
        st.stop_all()
        r.close()
        srv.stop()


def test_a_referee_killed_under_its_bots(tmp_path: Path, admin_token: str) -> None:
    """Two referees; the bots are given both addresses (one gRPC target) and all play
    through the first. It is SIGKILLed while a decision waits on a bot: the bots move to
    the second and the pending decision is delivered there. The first comes back on its
    port, the second is killed: they move back. No decision is lost or late (the bank is
    too small to hide one), and the tournament completes with every game once."""
    # Enough games that a quiet machine does not finish them all between the first kill
    # and the second (120 did: games of these bots take well under a second there).
    GAMES = 240
    port_a, port_b = free_port(), free_port()
    both = f"ipv4:127.0.0.1:{port_a},127.0.0.1:{port_b}"
    own = _start(tmp_path, admin_token, referees=(port_a, port_b), server=both)
    st = own.stack
    try:
        ref_a, ref_b = (p for p in st.procs if p.name == "referee")
        st.address = both  # the organiser uses both too
        admin = Admin(both, admin_token)
        with logs_on_failure(st), contextlib.closing(admin):
            t = admin.create_tournament(name="kill a referee", players=3,
                                        format="round_robin", bot_ids=own.bots, rules=RULES,
                                        options={"rounds": GAMES // 24},
                                        duplicate="replay",
                                        time_bank_ms=2000,
                                        grace_ms=60_000)
            tid = t.tournament_id

            def kill_with_a_decision_pending(ref: Proc) -> None:
                wait_until("a decision pending", lambda: any(
                    own.r.hlen(keys.pending(b)) for b in own.bots), timeout=60, every=0.01)
                ref.kill()

            def done() -> int:
                return int(own.r.hget(keys.tournament(tid), "done") or 0)

            wait_until("a game done", lambda: done() >= 1, timeout=60)
            kill_with_a_decision_pending(ref_a)
            after_a = done()
            # One game through the second is proof enough; the games are quick, and the
            # first referee's restart must not find the tournament over.
            wait_until("a game done through the second referee", lambda: done() > after_a,
                       timeout=90)
            st.referee(listen=f"127.0.0.1:{port_a}")
            kill_with_a_decision_pending(ref_b)
            assert done() < GAMES, "the tournament ended before the second kill"
            wait_finished(admin, tid, timeout=240)
            events = Watcher(admin, tid).start().join()  # the whole history, replayed
            _check_all_recorded(own, admin, tid, events, count=GAMES)
            for m in matches_of(admin, tid):
                assert json.loads(m.transcript_json)["faults"] == [], m.match_id
            bots = [p for p in st.procs if p.name.startswith("bot-")]
            assert all(p.text().count("connected to ") >= 2 for p in bots)
    finally:
        st.stop_all()
        own.r.close()
        own.redis.stop()


def _durable(r: redis.Redis, tid: str) -> dict[str, object]:
    """What must outlive a crash of Redis: registered bots, stored results, both event
    streams of the tournament (as stored)."""
    mids: list[str] = r.zrange(keys.tournament_matches(tid), 0, -1)  # type: ignore[assignment]
    return {
        "bots": {b: r.hgetall(keys.bot(b)) for b in r.zrange(keys.BOTS, 0, -1)},
        "results": {mid: r.get(keys.result(mid)) for mid in mids
                    if r.exists(keys.result(mid))},
        "public": r.xrange(keys.tournament_events(tid)),
        "organiser": r.xrange(keys.tournament_live(tid)),
    }


def test_redis_killed_and_restarted_on_its_append_only_file(own: Own) -> None:
    """SIGKILL of Redis alone mid-tournament (the referee, workers and bots stay up and
    wait for it), restarted on its append-only file (appendfsync everysec): every bot,
    every stored result and every event from before the kill is still there, as it
    was, and the tournament completes with every game once."""
    st = own.stack
    admin = Admin(st.address, st.admin_token)
    with logs_on_failure(st), contextlib.closing(admin):
        t = admin.create_tournament(name="kill redis", players=3, format="round_robin",
                                    bot_ids=own.bots, rules=RULES, duplicate="replay",
                                    grace_ms=120_000)
        tid = t.tournament_id
        wait_until("a few games done", lambda: int(
            own.r.hget(keys.tournament(tid), "done") or 0) >= 4, timeout=90)
        before = _durable(own.r, tid)
        assert before["results"] and before["public"] and before["organiser"]
        own.r.close()
        assert own.redis.proc is not None
        own.redis.proc.kill()
        own.redis.proc.wait()
        time.sleep(2)  # the parts notice and back off
        own.redis = RedisServer(own.redis.data_dir, port=own.redis.port, appendonly=True).start()
        own.r = redis.Redis.from_url(own.redis.url, decode_responses=True)
        after = _durable(own.r, tid)
        assert after["bots"] == before["bots"]
        results: dict[str, str] = after["results"]  # type: ignore[assignment]
        for mid, stored in before["results"].items():  # type: ignore[attr-defined]
            assert results.get(mid) == stored, mid
        for stream in ("public", "organiser"):
            old: list[object] = before[stream]  # type: ignore[assignment]
            assert after[stream][: len(old)] == old, stream  # type: ignore[index]
        wait_finished(admin, tid, timeout=180)
        events = Watcher(admin, tid).start().join()
        _check_all_recorded(own, admin, tid, events)


def test_a_killed_workers_matches_resume_ahead_of_a_long_queue(tmp_path: Path,
                                                                admin_token: str) -> None:
    """Two workers of `--concurrency 2`, every thread busy, 40 and more games queued: kill
    one while it hosts two matches. Its matches run again on the other worker's reserve
    threads as soon as the dead runs' leases lapse, not once a thread frees up: the queue
    has hardly moved when they resume. (bench/resume.py measures the time it takes.)"""
    srv = RedisServer(tmp_path / "redis", appendonly=True).start()
    st = Stack(tmp_path, srv.url, admin_token=admin_token)
    r = redis.Redis.from_url(srv.url, decode_responses=True)
    try:
        st.referee()
        victim = st.worker("--concurrency", "2", "--name", "victim")
        st.worker("--concurrency", "2", "--name", "survivor")
        regs = [register(st.address, f"think{i}") for i in range(4)]
        st.bots([("netbots:ThinkingBot", token) for _, token in regs])
        admin = Admin(st.address, st.admin_token)
        bots = [b for b, _ in regs]
        with logs_on_failure(st), contextlib.closing(admin):
            for i in range(48):
                admin.create_match(3, [bots[(i + k) % 4] for k in range(3)], seed=i,
                                   rules={"max_hands": "12"})

            def victims() -> list[str] | None:
                hosted = [m for m in r.smembers(keys.OPEN_MATCHES)  # type: ignore[union-attr]
                          if ":victim:" in (r.get(keys.lease(m)) or "")
                          and r.llen(keys.match_log(m)) >= 3]
                return hosted if len(hosted) == 2 else None

            hosted = wait_until("the victim hosting two matches", victims, timeout=60)
            logs = {m: r.llen(keys.match_log(m)) for m in hosted}
            queued = r.llen("rq:queue:moonshot-matches")
            assert queued >= 40, queued
            victim.kill_tree()
            killed = time.monotonic()
            took: dict[str, float] = {}
            most = [0]  # the most matches the survivor hosted at once since the kill

            def resumed() -> bool:
                leases = [r.get(keys.lease(m)) or ""
                          for m in r.smembers(keys.OPEN_MATCHES)]  # type: ignore[union-attr]
                most[0] = max(most[0], sum(":survivor:" in x for x in leases))
                for m in hosted:
                    if m not in took and (r.llen(keys.match_log(m)) > logs[m]
                                          or r.exists(keys.result(m))):
                        took[m] = time.monotonic() - killed
                return len(took) == len(hosted)

            wait_until("the killed worker's matches to resume", resumed, timeout=120,
                       every=0.1)
            # Resumed beside the survivor's own matches, on threads beyond its concurrency,
            # not once one of them ended; and ahead of the queue, which hardly moved.
            assert most[0] > 2, most
            assert r.llen("rq:queue:moonshot-matches") >= queued - 6
            for m in hosted:
                assert ":survivor:" in (r.get(keys.lease(m)) or ":survivor:")
            print(f"\nresumed {sorted(round(t, 1) for t in took.values())} s after the kill, "
                  f"{queued} games queued, the survivor hosting {most[0]} at once")
    finally:
        st.stop_all()
        r.close()
        srv.stop()


def test_a_worker_killed_mid_fit_leaves_no_stale_ratings(tmp_path: Path,
                                                          admin_token: str) -> None:
    """The only worker dies in its first rating fit, holding the pool's fit lock (which
    lapses only after ten minutes) and the request it took. A new worker's recovery sees
    the lock's holder is dead, frees it and asks for the fit again: the ratings cover
    every released game within a minute, not ten."""
    srv = RedisServer(tmp_path / "redis", appendonly=True).start()
    st = Stack(tmp_path, srv.url, admin_token=admin_token)
    r = redis.Redis.from_url(srv.url, decode_responses=True)
    try:
        st.referee()
        armed = st.worker(MOONSHOT_FAILPOINTS="fit.before-save=kill")
        regs = [register(st.address, f"f{i}") for i in range(3)]
        st.bots([("greedy", token) for _, token in regs])
        admin = Admin(st.address, st.admin_token)
        with logs_on_failure(st), contextlib.closing(admin):
            admin.create_match(3, [b for b, _ in regs], seed=5, rules=RULES)
            _died_at(armed, "fit.before-save")
            assert r.exists(keys.ratings_lock("3p"))
            heir = st.worker()
            covered = wait_until("the fit to cover the released game", lambda: (
                x if (x := admin.get_ratings("3p")).fitted_games == x.games >= 1
                and not x.provisional else None), timeout=60)
            assert {row.bot_id for row in covered.ratings} == {b for b, _ in regs}
            assert "the fit of dead worker" in heir.text()
    finally:
        st.stop_all()
        r.close()
        srv.stop()
