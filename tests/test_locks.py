"""The one lock primitive under a race, on a real Redis with real processes: a run that
stalls past its lock while another run takes it must neither take the lock back nor
drop it (the scheduler's lock and the fit's lock, as the match lease always did)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from clients.redisproc import RedisServer
from moon import Rules
from store import bots, keys, messages
from store import tournaments as store_t
from store.locks import Lock
from store.lua import Command
from store.records import TournamentSpec

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        yield srv.url


def _run(code: str, url: str, failpoints: str) -> subprocess.Popen[str]:
    """A separate process running `code` (with `r`, `rq` and `url` defined) that prints
    its result as JSON on its last line."""
    prelude = ("import json, sys, redis\n"
               f"url = {url!r}\n"
               "r = redis.Redis.from_url(url, decode_responses=True)\n"
               "rq = redis.Redis.from_url(url)\n")
    env = dict(os.environ, MOONSHOT_FAILPOINTS=failpoints, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-c", prelude + code], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc: subprocess.Popen[str]) -> dict[str, object]:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return dict(json.loads(out.strip().splitlines()[-1]))


def _wait_for_holder(r: redis.Redis, key: str, ttl_over_ms: int) -> None:
    """Wait until `key` is held with more than `ttl_over_ms` left (a long lock's holder)."""
    end = time.monotonic() + 20
    while int(r.pttl(key)) <= ttl_over_ms:  # type: ignore[arg-type]
        assert time.monotonic() < end, f"nobody took {key}"
        time.sleep(0.02)


def test_a_stalled_scheduler_run_leaves_the_lock_to_the_run_that_took_it(url: str) -> None:
    r = bots.connect(url)
    ids = [bots.register_bot(r, f"lk{i}")[0].bot_id for i in range(3)]
    spec = TournamentSpec(tournament_id="t-race", name="race", players=3,
                          format="round_robin", bot_ids=tuple(ids),
                          names=tuple(f"lk{i}" for i in range(3)), rules=Rules.make(3),
                          seed=5, duplicate="replay", seeding="given")
    store_t.create(r, spec)
    lock = keys.tournament_lock(spec.tournament_id)
    step = ("from store.refs import EventRef\n"
            "from workers.scheduler import advance\n"
            "print(json.dumps(advance(r, rq, EventRef.tournament('t-race'), "
            "lock_ms=int(sys.argv[1]))))\n")
    # Run A holds its lock for 0.4 s and stalls 1.5 s in its step: its lock lapses.
    a = _run(step.replace("sys.argv[1]", "400"), url, "step.before-save=sleep:1.5")
    _wait_for_holder(r, lock, 0)
    time.sleep(0.6)
    assert not r.exists(lock)  # A's lock lapsed while it stalls
    # Run B takes the lapsed lock for 20 s and stalls in its own step.
    b = _run(step.replace("sys.argv[1]", "20000"), url, "step.before-save=sleep:3")
    _wait_for_holder(r, lock, 10_000)
    held_by_b = r.get(lock)
    first = _result(a)  # A wakes up while B holds the lock
    assert "lost the lock" in str(first.get("skipped"))
    assert r.get(lock) == held_by_b  # not taken over, not dropped
    assert int(r.pttl(lock)) > 10_000  # type: ignore[arg-type]
    _result(b)
    assert not r.exists(lock)  # B let go of its own lock


def test_a_stalled_fit_leaves_the_lock_to_the_job_that_took_it(url: str) -> None:
    r = bots.connect(url)
    for i in range(6):  # released 3p results, so a fit has something to do
        seats = [f"b{(i + k) % 4}" for k in range(3)]
        row = {"match_id": f"m-f{i:03d}", "bot_ids": seats, "players": 3,
               "final": [21, 3, 1], "winner": 0, "placement": [1, 2, 3], "end": "normal",
               "forfeit": None, "seats": seats, "board": "", "unit": ""}
        r.hset(keys.match(row["match_id"]), mapping={"row": json.dumps(row), "released": "1"})
        r.zadd(keys.results("3p"), {row["match_id"]: i})
    lock = keys.ratings_lock("3p")
    fit = ("from store import ratings as s\n"
           "from workers.fit import run_fits\n"
           "s.note_request(r, '3p')\n"
           "print(json.dumps(run_fits(r, '3p', lock_ms=int(sys.argv[1]))))\n")
    a = _run(fit.replace("sys.argv[1]", "400"), url, "fit.before-save=sleep:1.5")
    _wait_for_holder(r, lock, 0)
    time.sleep(0.6)
    assert not r.exists(lock)
    b = _run(fit.replace("sys.argv[1]", "20000"), url, "fit.before-save=sleep:3")
    _wait_for_holder(r, lock, 10_000)
    held_by_b = r.get(lock)
    _result(a)
    assert r.get(lock) == held_by_b
    assert int(r.pttl(lock)) > 10_000  # type: ignore[arg-type]
    assert _result(b)["fits"] == 1
    assert not r.exists(lock)


def test_the_lock_is_exclusive_and_only_its_holder_extends_or_releases_it(url: str) -> None:
    r = bots.connect(url)
    a, b = Lock.fresh("ms:test:lock", 300), Lock.fresh("ms:test:lock", 5000)
    assert a.acquire(r) and not b.acquire(r)
    assert a.acquire(r)  # its holder taking it again extends it
    time.sleep(0.4)  # a lapses
    assert not a.extend(r)  # lapsed: lost, even with nobody holding it
    assert b.acquire(r)
    assert not a.extend(r) and not a.release(r)
    assert r.get("ms:test:lock") == b.token
    assert b.extend(r) and b.release(r)
    assert not r.exists("ms:test:lock")


def test_a_fenced_batch_runs_only_for_the_holder_and_stops_at_a_setnx_that_set_nothing(
        url: str) -> None:
    r = bots.connect(url)
    lock, other = Lock.fresh("ms:test:lease", 5000), Lock.fresh("ms:test:lease", 5000)
    assert lock.acquire(r)
    batch = [Command("HSET", "ms:test:h", ("a", "1")),
             Command("SETNX", "ms:test:once", ("first",)),
             Command("RPUSH", "ms:test:after", ("x",))]
    assert other.batch(r, batch) is None  # not the holder: nothing written
    assert not r.exists("ms:test:h", "ms:test:once", "ms:test:after")
    assert lock.batch(r, batch) == [1, 1, 1]
    assert lock.batch(r, batch) == [0, 0]  # the SETNX set nothing: what follows is not owed
    assert r.lrange("ms:test:after", 0, -1) == ["x"]
    assert lock.batch(r, [Command("HSETXX", "ms:test:h", ("a", "2")),
                          Command("HSETXX", "ms:test:h", ("b", "2"))]) == [1, 0]
    assert r.hgetall("ms:test:h") == {"a": "2"}
    sub = r.pubsub()
    sub.subscribe("ms:test:channel")
    assert sub.get_message(timeout=1) is not None  # the subscription's confirmation
    event = messages.MatchEnded("m-000000000001", 2, {"end": "normal"})
    [entry_id] = lock.batch(r, [Command("NOTIFY", "ms:test:inbox",
                                        ("ms:test:channel", messages.encode(event), 60_000))])
    assert r.xrange("ms:test:inbox") == [(entry_id, {"e": messages.encode(event)})]
    assert 0 < int(r.pttl("ms:test:inbox")) <= 60_000  # type: ignore[arg-type]
    published = sub.get_message(timeout=1)
    assert published is not None
    logged = messages.decode_as(published["data"], messages.BOT, messages.Logged)
    assert logged.event_id == entry_id and logged.message() == event
    sub.close()
