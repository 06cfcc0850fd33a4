"""What an outside probe found, each as a test that failed before its fix: watchers that
starve bots, code planted in Redis, a stream that never reads, two streams at once, ids
that name other keys, guessing tokens at full speed, and bodies that do not parse."""

from __future__ import annotations

import pickle
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import psutil
import pytest
import redis
from rawbot import RawBot, first_legal
from rq.job import Job
from rq.serializers import JSONSerializer
from stack import Proc, Stack, moonshot
from support import PoolBot, SourceProxy, finished, wait_until

from clients.admin import Admin
from clients.sdk import register
from proto.moon.v1 import (
    bot_pb2,
    bot_pb2_grpc,
    change_pb2,
    change_pb2_grpc,
    match_pb2,
    match_pb2_grpc,
    tournament_pb2,
    tournament_pb2_grpc,
)
from server.lanes import WATCH_PER_PEER, WATCH_PER_RANGE, WATCH_RESERVE, WATCH_TOTAL
from store import keys
from store.bots import watch_pass
from workers.queues import CONTROL_QUEUE, queue, rq_connection
from workers.recovery import recover


def _code(fn: object) -> grpc.StatusCode:
    try:
        fn()  # type: ignore[operator]
    except grpc.RpcError as exc:
        return exc.code()  # type: ignore[no-any-return]
    raise AssertionError("the call succeeded")


# 1 ---------------------------------------------------------------- watchers


def test_watchers_are_capped_and_never_starve_bots(stack: Stack, pool: dict[str, PoolBot],
                                                   admin: Admin, name: str) -> None:
    """Watch streams past the per-address cap end RESOURCE_EXHAUSTED at once; with the cap
    full, a new bot connects and plays, and health stays SERVING."""
    offline = [register(stack.address, f"{name}-{i}")[0] for i in range(3)]
    t = admin.create_tournament(name="watched", players=3, format="round_robin",
                                bot_ids=offline, grace_ms=60_000)  # waits on absent bots
    channel = grpc.insecure_channel(stack.address)
    stub = tournament_pb2_grpc.TournamentServiceStub(channel)
    req = tournament_pb2.WatchTournamentRequest(tournament_id=t.tournament_id)
    held = [stub.WatchTournament(req) for _ in range(WATCH_PER_PEER)]
    try:
        time.sleep(1.5)  # the held streams are in place
        extra = stub.WatchTournament(req, timeout=10)
        with pytest.raises(grpc.RpcError) as err:
            next(extra)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err.value
        assert "watch streams per address" in err.value.details()
        # Bots are served as usual: a new bot registers, connects and plays a match.
        bot_id, token = register(stack.address, f"{name}-live")
        bot = RawBot(stack.address, token, first_legal).start()
        try:
            bot.wait_for(lambda m: m.WhichOneof("message") == "welcome")
            m = admin.create_match(3, [bot_id, pool["greedy1"].bot_id, pool["greedy2"].bot_id],
                                   seed=3, rules={"max_hands": "2"})
            finished(admin, m.match_id)
        finally:
            bot.close()
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(),
                                                           timeout=10)
        assert health.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        for call in held:
            call.cancel()
        channel.close()
    # Closed streams give their places back.
    with grpc.insecure_channel(stack.address) as ch:
        again = tournament_pb2_grpc.TournamentServiceStub(ch).WatchTournament(
            req, timeout=2)
        try:
            next(again)  # admitted: an event, or a wait for one
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED, exc


def _watch_from(address: str, tid: str, n: int,
                metadata: tuple[tuple[str, str], ...] = ()) -> list[Any]:
    """`n` watch streams of one tournament over one channel to `address`."""
    channel = grpc.insecure_channel(address)
    stub = tournament_pb2_grpc.TournamentServiceStub(channel)
    req = tournament_pb2.WatchTournamentRequest(tournament_id=tid)
    calls: list[Any] = [stub.WatchTournament(req, metadata=metadata) for _ in range(n)]
    _CHANNELS.append(channel)
    return calls


_CHANNELS: list[grpc.Channel] = []


def _settle(calls: list[Any]) -> tuple[int, int]:
    """(admitted, refused) once every refusal has arrived: a refused stream ends at once
    with RESOURCE_EXHAUSTED, an admitted one waits for events."""
    time.sleep(2.0)
    refused = [c for c in calls if c.done()]
    for c in refused:
        assert c.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, (c.code(), c.details())
    return len(calls) - len(refused), len(refused)


def test_watch_slots_are_not_for_one_client_of_many_addresses(
        stack: Stack, admin: Admin, name: str, admin_token: str) -> None:
    """A client holding 32 addresses of one range gets the range's share, not the referee's
    512 slots; addresses spread over many ranges get the public slots but never the
    reserve, which a web server's watch pass (and an organiser) still gets."""
    offline = [register(stack.address, f"{name}-{i}")[0] for i in range(3)]
    tid = admin.create_tournament(name="watched", players=3, format="round_robin",
                                  bot_ids=offline, grace_ms=600_000).tournament_id
    proxies: list[SourceProxy] = []
    calls: list[Any] = []
    try:
        # 32 addresses in one /24.
        for i in range(2, 34):
            proxies.append(SourceProxy(stack.address, f"127.0.9.{i}"))
            calls += _watch_from(proxies[-1].address, tid, WATCH_PER_PEER)
        assert _settle(calls) == (WATCH_PER_RANGE, 32 * WATCH_PER_PEER - WATCH_PER_RANGE)
        # Addresses in ranges of their own: every public slot, never the reserve.
        public = WATCH_TOTAL - WATCH_RESERVE - WATCH_PER_RANGE
        spread: list[Any] = []
        for i in range(public // WATCH_PER_PEER + 2):
            proxies.append(SourceProxy(stack.address, f"127.1.{i}.2"))
            spread += _watch_from(proxies[-1].address, tid, WATCH_PER_PEER)
        admitted, refused = _settle(spread)
        assert admitted == public and refused == 2 * WATCH_PER_PEER
        calls += spread
        # The reserve: a web server with the watch pass, and an organiser, still watch.
        trusted = _watch_from(stack.address, tid, 4,
                              (("x-moonshot-watch-pass", watch_pass(admin_token)),))
        trusted += _watch_from(stack.address, tid, 2,
                               (("authorization", f"Bearer {admin_token}"),))
        wrong = _watch_from(stack.address, tid, 1, (("x-moonshot-watch-pass", "watch.nope"),))
        assert _settle(trusted + wrong) == (6, 1)
        calls += trusted
        assert "public watch streams at most" in wrong[0].details()
        # Each trusted stream gets the tournament's events.
        first = next(trusted[0])
        assert first.sequence == 1
    finally:
        for c in calls:
            c.cancel()
        for ch in _CHANNELS:
            ch.close()
        _CHANNELS.clear()
        for p in proxies:
            p.close()
    # Closed streams give their places back to the range.
    proxy = SourceProxy(stack.address, "127.0.9.40")
    try:
        again = _watch_from(proxy.address, tid, WATCH_PER_PEER)
        wait_until("the places given back", lambda: _settle(again)[1] == 0, timeout=20,
                   every=0.1)
    finally:
        for c in again:
            c.cancel()
        for ch in _CHANNELS:
            ch.close()
        _CHANNELS.clear()
        proxy.close()


# 2 ---------------------------------------------------------- planted code


class _Marker:
    """Unpickling this makes a file: what a planted pickle would do."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.path, "w"))


def test_nothing_in_redis_is_ever_unpickled_or_run(tmp_path: Path, r: redis.Redis,
                                                   redis_server: object) -> None:
    """A job hash with a pickled `meta`, read by recovery, runs nothing; a JSON job naming a
    function that is not one of ours, taken by a real worker, fails without running."""
    url = redis_server.url  # type: ignore[attr-defined]
    rq_conn = rq_connection(url)
    marker = tmp_path / "pickled"
    mid = "m-planted0000"
    r.sadd(keys.OPEN_MATCHES, mid)
    rq_conn.hset(f"rq:job:match-{mid}", mapping={
        "status": "started", "meta": pickle.dumps(_Marker(str(marker))),
        "data": b"", "origin": "moonshot-matches", "created_at": "2026-01-01T00:00:00Z"})
    try:
        recover(r, rq_conn)
        time.sleep(0.5)
        assert not marker.exists()
    finally:
        r.srem(keys.OPEN_MATCHES, mid)
        rq_conn.delete(f"rq:job:match-{mid}")
        r.delete(keys.match(mid))

    ran = tmp_path / "ran"
    job = queue(rq_conn, CONTROL_QUEUE).enqueue("io.open", str(ran), "w", job_id="planted-io")
    own = Stack(tmp_path, url, admin_token="x")
    try:
        # Burst: it quits once the queues are empty, unless jobs of the module's stack
        # (a real match) keep it busy: what is awaited is the planted job's end.
        own.start("worker", moonshot("worker", "--redis", url, "--burst"))
        wait_until("the planted job taken and failed", lambda: Job.fetch(
            job.id, connection=rq_conn, serializer=JSONSerializer).get_status() in (
                "failed", "finished") or None, timeout=180)
    finally:
        own.stop_all()
    fetched = Job.fetch(job.id, connection=rq_conn, serializer=JSONSerializer)
    assert fetched.get_status() == "failed"
    assert not ran.exists()
    assert "not a moonshot job" in (fetched.latest_result().exc_string or "")  # type: ignore[union-attr]


# 3 ------------------------------------------------------- a stream that never reads


def test_a_stream_that_never_reads_is_cut_off_and_memory_stays_bounded(
        stack: Stack, pool: dict[str, PoolBot], admin: Admin, name: str) -> None:
    _bot_id, token = register(stack.address, name)
    referee = psutil.Process(stack.procs[0].popen.pid)
    before = referee.memory_info().rss
    big = "r" * 4096
    sent = threading.Event()

    def flood() -> object:
        for _ in range(6000):
            yield bot_pb2.PlayRequest(decision=bot_pb2.PlayRequest.Decision(
                request_id=big, action_id=70))
        sent.set()
        time.sleep(30)

    with grpc.insecure_channel(stack.address) as ch:
        call = bot_pb2_grpc.BotServiceStub(ch).Play(
            flood(), metadata=(("authorization", f"Bearer {token}"),), timeout=120)
        sent.wait(60)
        time.sleep(1.0)
        grown = referee.memory_info().rss - before
        with pytest.raises(grpc.RpcError) as err:
            for _ in call:  # read at last: what was queued, then the status
                pass
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err.value
    assert "read the Play stream" in err.value.details()
    assert grown < 20 << 20, f"the referee grew by {grown >> 20} MB"
    # Everyone else is served as usual.
    m = admin.create_match(3, [pool["greedy1"].bot_id, pool["greedy2"].bot_id,
                               pool["random1"].bot_id], seed=4, rules={"max_hands": "2"})
    finished(admin, m.match_id)


# 4 -------------------------------------------------- two streams at once


@pytest.mark.parametrize("two_referees", [False, True])
def test_of_two_streams_opened_at_once_exactly_one_survives(
        stack: Stack, name: str, two_referees: bool) -> None:
    other = stack.address
    if two_referees:
        if len([p for p in stack.procs if p.name == "referee"]) < 2:
            stack.referee()
        other = next(a for a in _referee_addresses(stack) if a != stack.address)
    _bot_id, token = register(stack.address, f"{name}-{int(two_referees)}")
    for trial in range(10):
        bots = [RawBot(addr, token, auto=False) for addr in (stack.address, other)]
        go = threading.Barrier(2)

        def start(b: RawBot, go: threading.Barrier = go) -> None:
            go.wait()
            b.start()

        threads = [threading.Thread(target=start, args=(b,)) for b in bots]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        try:
            time.sleep(1.5)
            alive = [not b.ended for b in bots]
            assert sum(alive) == 1, (trial, [b.error for b in bots])
            dead = bots[alive.index(False)]
            assert dead.error is not None and dead.error.code() == grpc.StatusCode.ABORTED
        finally:
            for b in bots:
                b.close()


def _referee_addresses(stack: Stack) -> list[str]:
    out = []
    for p in stack.procs:
        if p.name == "referee" and p.alive():
            port = p.wait_for(r"referee listening on 127\.0\.0\.1:(\d+)").group(1)
            out.append(f"127.0.0.1:{port}")
    return out


# 5 ------------------------------------------------- ids that name other keys


def test_ids_that_name_other_keys_are_refused_for_what_they_are(
        stack: Stack, admin: Admin, pool: dict[str, PoolBot], r: redis.Redis) -> None:
    mid = admin.create_match(3, [pool["greedy1"].bot_id, pool["greedy2"].bot_id,
                                 pool["random1"].bot_id], seed=5,
                             rules={"max_hands": "2"}).match_id
    finished(admin, mid)
    bot = pool["greedy1"].bot_id
    tid = r.zrange(keys.TOURNAMENTS, 0, 0)
    with grpc.insecure_channel(stack.address) as ch:
        matches = match_pb2_grpc.MatchServiceStub(ch)
        tours = tournament_pb2_grpc.TournamentServiceStub(ch)
        bots = bot_pb2_grpc.BotServiceStub(ch)
        for suffix in (":log", ":result", ":lease", ":replies"):
            assert _code(lambda s=suffix: matches.GetMatch(
                match_pb2.GetMatchRequest(match_id=mid + s), timeout=10)) == \
                grpc.StatusCode.NOT_FOUND
        for t in [*tid, "t-abc"]:
            for suffix in (":events", ":matches", ":lock"):
                assert _code(lambda s=suffix, t=t: tours.GetTournament(
                    tournament_pb2.GetTournamentRequest(tournament_id=t + s), timeout=10)) == \
                    grpc.StatusCode.NOT_FOUND
                assert _code(lambda s=suffix, t=t: matches.ListMatches(
                    match_pb2.ListMatchesRequest(tournament_id=t + s), timeout=10)) == \
                    grpc.StatusCode.INVALID_ARGUMENT
        changes = change_pb2_grpc.TestServiceStub(ch)
        for suffix in (":events", ":pairs", ":lock"):  # and of tests, Redis's or archived
            assert _code(lambda s=suffix: changes.GetTest(
                change_pb2.GetTestRequest(test_id="c-abc" + s), timeout=10)) == \
                grpc.StatusCode.NOT_FOUND
        for suffix in (":presence", ":pending", ":events"):
            assert _code(lambda s=suffix: bots.GetBot(
                bot_pb2.GetBotRequest(bot_id=bot + s), timeout=10)) == grpc.StatusCode.NOT_FOUND
        play = bots.Play(iter(()), metadata=(("authorization",
                                              f"Bearer {bot}:presence.secret"),), timeout=10)
        assert _code(lambda: next(iter(play))) == grpc.StatusCode.UNAUTHENTICATED


# 6 ------------------------------------------------------ guessing tokens


def test_repeated_failures_from_one_address_slow_down_others_do_not(
        fresh_stack: Stack) -> None:
    proc: Proc = fresh_stack.start("referee", moonshot(
        "referee", "--listen", "[::]:0", "--redis", fresh_stack.redis_url))
    port = proc.wait_for(r"referee listening on \[::\]:(\d+)").group(1)
    v4, v6 = f"127.0.0.1:{port}", f"[::1]:{port}"

    def wrong_admin(addr: str) -> float:
        with grpc.insecure_channel(addr) as ch:
            stub = match_pb2_grpc.MatchServiceStub(ch)
            start = time.monotonic()
            code = _code(lambda: stub.CreateMatch(
                match_pb2.CreateMatchRequest(players=3, bot_ids=["a", "b", "c"]),
                metadata=(("authorization", "Bearer adm.wrong"),), timeout=30))
            assert code == grpc.StatusCode.UNAUTHENTICATED
            return time.monotonic() - start

    took = [wrong_admin(v4) for _ in range(10)]
    assert max(took[:5]) < 1.0, took  # the first failures are answered at once
    assert took[9] >= 1.5, took  # then each waits longer: 0.1 s doubling, up to 5 s
    assert wrong_admin(v6) < 1.0  # another address is not slowed
    # The right token from the slowed address is answered at once too.
    with grpc.insecure_channel(v4) as ch:
        start = time.monotonic()
        match_pb2_grpc.MatchServiceStub(ch).ListMatches(match_pb2.ListMatchesRequest(),
                                                        timeout=30)
        assert time.monotonic() - start < 1.0
    # Wrong bot secrets on Play count the same way.
    bot_id, _ = register(v6, "throttled")
    with grpc.insecure_channel(v4) as ch:
        start = time.monotonic()
        call = bot_pb2_grpc.BotServiceStub(ch).Play(
            iter(()), metadata=(("authorization", f"Bearer {bot_id}.nope"),), timeout=30)
        assert _code(lambda: next(iter(call))) == grpc.StatusCode.UNAUTHENTICATED
        assert time.monotonic() - start >= 1.5


# 7 ------------------------------------------------------ bodies that do not parse


def test_a_body_that_does_not_parse_is_invalid_argument(stack: Stack) -> None:
    with grpc.insecure_channel(stack.address) as ch:
        raw = ch.unary_unary("/moon.v1.MatchService/GetMatch",
                             request_serializer=lambda b: b, response_deserializer=lambda b: b)
        with pytest.raises(grpc.RpcError) as err:
            raw(b"\xff\xff\xff\xff", timeout=10)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "not a valid moon.v1.GetMatchRequest" in err.value.details()
        _bot, token = register(stack.address, f"garbage-{time.monotonic_ns()}")
        stream = ch.stream_stream("/moon.v1.BotService/Play", request_serializer=lambda b: b,
                                  response_deserializer=lambda b: b)
        call = stream(iter([b"\x0a\xff\xff"]),
                      metadata=(("authorization", f"Bearer {token}"),), timeout=10)
        with pytest.raises(grpc.RpcError) as err:
            for _ in call:
                pass
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "moon.v1.PlayRequest" in err.value.details()

