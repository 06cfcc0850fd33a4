"""The archive through faults, on real processes with a real PostgreSQL: an arena and a
round robin play and their games move to the archive while a worker, the referee, Redis
and PostgreSQL are each taken down once. Play never stops; while PostgreSQL is down the
finished games wait in Redis and move once it is back. At the end every game is in the
archive once and nowhere else, every transcript is the one that was played, and the
served ratings are a fit over the archived games."""

from __future__ import annotations

import contextlib
import json
import math
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import redis
from stack import Proc, Stack, env, moonshot
from support import wait_until

from archive import reads
from archive.db import open_archive
from clients.admin import Admin
from clients.redisproc import RedisServer, free_port
from clients.sdk import register
from proto.moon.v1 import arena_pb2, arena_pb2_grpc, rating_pb2, tournament_pb2
from ratings import games_from_rows, methods
from store import archiving, ids, keys
from store.pools import Pool
from store.refs import EventRef
from tests.pg import Postgres, binaries
from workers.queues import CONTROL_QUEUE, MATCH_QUEUE, RESUME_QUEUE, taken, waiting
from workers.recovery import _job_state, _Queues

RULES = {"max_hands": "1"}


def _capture(r: redis.Redis, stop: threading.Event, seen: dict[str, str]) -> None:
    """Each finished game's transcript as Redis held it before it left (Redis restarts
    meanwhile: a failed look is tried again)."""
    while not stop.is_set():
        try:
            for key in r.scan_iter("ms:match:*:result", count=1000):
                mid = key.split(":")[2]
                if mid not in seen:
                    raw = r.get(key)
                    if raw:
                        seen[mid] = json.dumps(json.loads(raw)["transcript"],
                                               separators=(",", ":"))
        except redis.RedisError:
            time.sleep(0.2)
        time.sleep(0.02)


def _arena_dump(r: redis.Redis) -> str:
    """What the arena's step holds of its open boards, for a failure's message."""
    st = json.loads(r.get(keys.arena_state("3p")) or "{}")
    out = [f"cursor {st.get('cursor')}, recorded {r.hget('ms:arena:3p', 'recorded')}, "
           f"creating {len(st.get('creating', []))}, live "
           f"{r.smembers(keys.LIVE_EVENTS)}, dirty {r.get(keys.arena_dirty('3p'))}, "
           f"queued {r.get(keys.arena_queued('3p'))}, lock {r.get(keys.arena_lock('3p'))}"]
    rq_conn = redis.Redis(connection_pool=r.connection_pool.__class__(
        **{**r.connection_pool.connection_kwargs, "decode_responses": False}))
    for unit, (n, done, mids) in st.get("open", {}).items():
        for m in mids:
            try:  # what recovery makes of it: its job, where that job is, its lease
                state = _job_state(r, rq_conn, ids.match_job_id(m), _Queues(rq_conn))
            except Exception as exc:
                state = ("?", repr(exc))
            out.append(f"{unit} {n}/{done} {m}: {r.hget(keys.match(m), 'status')} recorded "
                       f"{r.zscore(keys.arena_recorded('3p'), m)} result "
                       f"{r.exists(keys.result(m))} failed "
                       f"{r.sismember(keys.event_failed(EventRef.arena('3p')), m)} open "
                       f"{r.sismember(keys.OPEN_MATCHES, m)} lease "
                       f"{r.exists(keys.lease(m))} job {state}")
    out.append("queues " + ", ".join(f"{q}: {len(waiting(rq_conn, q))} waiting, "
                                     f"{len(taken(rq_conn, q))} taken"
                                     for q in (CONTROL_QUEUE, RESUME_QUEUE, MATCH_QUEUE)))
    return "\n".join(out)


def _cli(st: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*moonshot(*args), "--server", st.address], check=False,
                          capture_output=True, text=True,
                          env=env(MOONSHOT_ADMIN_TOKEN=st.admin_token), cwd=st.workdir,
                          timeout=60)


@pytest.mark.timeout(900)
def test_games_reach_the_archive_once_through_every_kill(tmp_path: Path,
                                                         admin_token: str) -> None:
    bin_dir = binaries()
    assert bin_dir is not None, "PostgreSQL is not installed (scripts/test.sh installs it)"
    pg = Postgres(bin_dir).init().start()
    srv = RedisServer(tmp_path / "redis", appendonly=True, fsync="always").start()
    url = pg.url(pg.create_database("archive"))
    st = Stack(tmp_path, srv.url, admin_token=admin_token, archive=url)
    r = redis.Redis.from_url(srv.url, decode_responses=True)
    seen: dict[str, str] = {}
    stop = threading.Event()
    try:
        port = free_port()
        referee, _ = st.referee(listen=f"127.0.0.1:{port}")
        workers: list[Proc] = [st.worker(), st.worker()]
        admin = Admin(st.address, admin_token)
        stub = arena_pb2_grpc.ArenaServiceStub(admin.channel)
        res = _cli(st, "arena", "start", "3p", "--anchor", "house:greedy", "--anchor",
                   "house:random", "--rule", "max_hands=1", "--max-wait", "1s",
                   "--disconnect-grace", "20s")
        assert res.returncode == 0, res.stderr
        regs = [register(st.address, f"af{i}") for i in range(6)]
        for i, (_, token) in enumerate(regs):
            st.bot("greedy" if i % 2 else "random", st.address, token, "--arena", "3p",
                   wait=False)
        threading.Thread(target=_capture, args=(r, stop, seen), daemon=True).start()
        t = admin.create_tournament(name="through the kills", players=3,
                                    format="round_robin", bot_ids=[b for b, _ in regs[:4]],
                                    rules=RULES, options={"rounds": 3})
        tid = t.tournament_id

        def games() -> int:
            return stub.GetArena(arena_pb2.GetArenaRequest(
                pool=rating_pb2.RATING_POOL_THREE_PLAYER), timeout=10).arena.released

        def more(n: int) -> None:
            start = games()
            wait_until(f"{n} more arena games", lambda: games() >= start + n or None,
                       timeout=120)

        more(15)
        # A worker killed mid-play: its matches and any archiving batch resume elsewhere.
        workers[0].kill_tree()
        workers.append(st.worker())
        more(10)
        # The referee killed and started again on its port.
        referee.kill()
        time.sleep(0.5)
        referee, _ = st.referee(listen=f"127.0.0.1:{port}")
        more(10)
        # PostgreSQL stopped: play goes on, finished games wait in Redis ...
        pg.stop()
        waiting = archiving.pending_count(r)
        more(10)
        wait_until("games to pile up in Redis", lambda: archiving.pending_count(r) > waiting
                   or None, timeout=60)
        pg.start()  # ... and move once it is back.
        wait_until("the archive to catch up", lambda: archiving.pending_count(r) < 20 or None,
                   timeout=120)
        # Redis killed (its append-only file synced at every write) and started again.
        srv.proc.send_signal(signal.SIGKILL)  # type: ignore[union-attr]
        srv.proc.wait()  # type: ignore[union-attr]
        time.sleep(0.5)
        srv = RedisServer(srv.data_dir, port=srv.port, appendonly=True, fsync="always").start()
        more(10)
        wait_until("the tournament to finish", lambda: admin.get_tournament(tid).status
                   == tournament_pb2.TOURNAMENT_STATUS_FINISHED or None, timeout=240)
        assert _cli(st, "arena", "stop", "3p").returncode == 0
        try:
            wait_until("every board released", lambda: (
                a if not (a := stub.GetArena(arena_pb2.GetArenaRequest(
                    pool=rating_pb2.RATING_POOL_THREE_PLAYER), timeout=10).arena
                    ).boards_in_play else None), timeout=120)
        except TimeoutError:
            raise AssertionError(_arena_dump(r)) from None
        wait_until("every game archived", lambda: (
            archiving.pending_count(r) == 0 and not r.keys("ms:match:*")) or None,
            timeout=120)
        stop.set()
        archive = open_archive(url)
        try:
            archived = reads.games(archive, limit=100_000, with_blob=True)
            ids = [g.match_id for g in archived]
            assert len(ids) == len(set(ids)), "a game archived twice"
            assert set(seen) <= set(ids), "a game played and never archived"
            assert not r.keys("ms:match:*") and not r.zrange(keys.MATCHES, 0, -1)
            for g in archived:  # every replay is the game that was played
                if g.match_id in seen:
                    assert json.dumps(g.transcript(), separators=(",", ":")) == seen[g.match_id]
            assert len(seen) >= len(ids) * 0.8, (len(seen), len(ids))
            # The ratings served are a fit over the archived games.
            rows = reads.pool_rows(archive, Pool.THREE)
            try:
                wait_until("the fit to catch up", lambda: (
                    (x := admin.get_ratings("3p")).fitted_games == len(rows)
                    and not x.provisional) or None, timeout=120)
            except TimeoutError:
                x = admin.get_ratings("3p")
                raise AssertionError(f"fitted {x.fitted_games} of {x.games}, provisional "
                                     f"{x.provisional}; archived rated 3p games {len(rows)}; "
                                     f"in Redis {r.zcard(keys.results('3p'))}") from None
            served = {x.bot_id: x.rating for x in admin.get_ratings("3p").ratings}
            mine = methods.get("batch").rate(games_from_rows(rows), time.time())
            for row in mine.rows:
                assert math.isclose(served[row.bot_id], row.rating, abs_tol=1.0), row
        finally:
            archive.close()
        admin.close()
    finally:
        stop.set()
        st.stop_all()
        with contextlib.suppress(Exception):
            r.close()
        srv.stop()
        pg.remove()
