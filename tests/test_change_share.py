"""Tests of a change sharing the stack, driven by the scheduling step on a real Redis: an
author's limit of pairs in flight over all their tests, their house-bot CPU of the day, the
game slots shared between authors, the words a held test shows, and the steps a test asks of
the others when it starts or stops wanting pairs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from clients.redisproc import RedisServer
from moon import Rules
from store import authors, bots, ids, keys, steps
from store import changes as store_changes
from store import matches as store_matches
from store import share as store_share
from store import tournaments as store_t
from store.authors import Limits
from store.changes import ChangeTestSpec
from store.records import Clock, Faults
from store.refs import EventRef
from store.results import result_row
from tournaments.change import ChangeSpec, seating
from workers.queues import create_test, rq_connection
from workers.scheduler import advance

_URLS = [""]


@pytest.fixture
def r(tmp_path: Path) -> Iterator[redis.Redis]:
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        _URLS[0] = srv.url
        yield bots.connect(srv.url)


def _author(r: redis.Redis, name: str, pairs: int = 8, cpu: float = 7200.0) -> str:
    record, _ = authors.sign_up(r, name, "", "open")
    authors.set_limits(r, record.author_id, Limits(tests=10, pairs=pairs, house_cpu_s=cpu))
    return record.author_id


def _make(r: redis.Redis, author: str, in_flight: int = 4) -> ChangeSpec:
    """A stored 3p test of the author's two connected bots against house opponents, its
    first step taken."""
    c = bots.register_bot(r, f"c{time.monotonic_ns()}")[0].bot_id
    b = bots.register_bot(r, f"b{time.monotonic_ns()}")[0].bot_id
    for bot in (c, b):
        r.zadd(keys.presence(bot), {"test-stream": time.time() + 3600})
    spec = ChangeSpec(test_id=ids.new_test_id(), players=3, candidate=c, baseline=b,
                      opponents=("house:greedy", "house:random"), seed=7, in_flight=in_flight)
    test = ChangeTestSpec(test_id=spec.test_id, name="t", plan=spec.to_json(),
                          rules=Rules.make(3, {}), clock=Clock(), faults=Faults(),
                          names=((c, "C"), (b, "B")), author=author)
    create_test(r, rq_connection(_URLS[0]), test)
    _step(r, spec)
    return spec


def _step(r: redis.Redis, spec: ChangeSpec) -> None:
    advance(r, rq_connection(_URLS[0]), EventRef.test(spec.test_id))


def _plan(r: redis.Redis, spec: ChangeSpec) -> dict[str, Any]:
    stored = store_t.state(r, spec.test_id)
    assert stored is not None
    return dict(stored["plan"])


def _boards(r: redis.Redis, spec: ChangeSpec) -> int:
    return len(r.zrange(keys.tournament_matches(spec.test_id), 0, -1)) // 2


def _finish_board(r: redis.Redis, spec: ChangeSpec, board: int) -> None:
    """Record both games of board `board` (from 1), C first, B second, then take a step."""
    for role, place in (("c", 1), ("b", 2)):
        mid = f"{spec.test_id}-p{board}-{role}"
        mspec = store_matches.load_spec(r, mid)
        hero, _ = seating(spec, board - 1)
        placement = [0, 0, 0]
        placement[hero] = place
        rest = [p for p in (1, 2, 3) if p != place]
        for seat, p in zip([s for s in range(3) if s != hero], rest, strict=True):
            placement[seat] = p
        result = {"final": [30 - 10 * p for p in placement], "winner": placement.index(1),
                  "placement": placement, "end": "normal", "forfeit": None,
                  "seats": list(mspec.seat_names)}
        row = result_row(mid, mspec.bot_ids, result, str(mspec.meta["board"]),
                         str(mspec.meta["unit"]))
        store_matches.finish(r, mid, mspec.bot_ids, row, time.time())
        steps.record(r, EventRef.test(spec.test_id), mid)
    _step(r, spec)


def _in_flight(r: redis.Redis, *specs: ChangeSpec) -> int:
    """The tests' pairs in flight as their steps count them (what the limit holds), checked
    against what is really in play: boards with a game created and not finished."""
    counted = store_changes.pairs_in_flight(r, [s.test_id for s in specs])
    mids = [str(m) for m in r.smembers(keys.OPEN_MATCHES)
            if any(str(m).startswith(f"{s.test_id}-") for s in specs)]
    playing = {m.rsplit("-", 1)[0] for m in mids
               if r.hget(keys.match(m), "status") != "finished"}
    assert len(playing) <= counted
    return counted


def test_an_authors_pairs_in_flight_stay_within_their_limit_over_all_their_tests(
        r: redis.Redis) -> None:
    alice = _author(r, "alice", pairs=3)
    first = _make(r, alice, in_flight=4)
    assert _boards(r, first) == 3
    assert _plan(r, first)["held"] == "alice's limit: 3 pairs in flight over all their tests"
    second = _make(r, alice, in_flight=4)
    assert _boards(r, second) == 0  # the first test's three pairs must finish first
    assert "alice's limit" in _plan(r, second)["held"]
    asks = steps.asks(EventRef.test(second.test_id))
    assert not r.exists(asks.dirty)
    _finish_board(r, first, 1)  # room under the limit: the first test asks the second to look
    assert r.exists(asks.dirty)
    _step(r, second)
    assert _boards(r, second) == 1 and _in_flight(r, first, second) == 3
    done = {first.test_id: 1, second.test_id: 0}
    for _ in range(12):  # finish the oldest pair in flight, alternately, a dozen times
        for spec in (first, second):
            if done[spec.test_id] < _boards(r, spec):
                done[spec.test_id] += 1
                _finish_board(r, spec, done[spec.test_id])
            _step(r, first)
            _step(r, second)
            assert _in_flight(r, first, second) <= 3
    assert done[second.test_id] > 0  # the second test got pairs too
    assert authors.cpu_today(r, alice) == 0.0


def test_an_admins_test_is_not_limited_by_an_authors_limit(r: redis.Redis) -> None:
    _author(r, "alice", pairs=1)
    spec = _make(r, "", in_flight=4)
    assert _boards(r, spec) == 4 and _plan(r, spec)["held"] == ""


def test_used_up_house_cpu_starts_no_pair_until_the_day_ends(r: redis.Redis) -> None:
    alice = _author(r, "alice", cpu=10.0)
    authors.add_cpu(r, alice, 10.5)
    spec = _make(r, alice)
    assert _boards(r, spec) == 0
    held = _plan(r, spec)["held"]
    assert "alice's house-bot CPU of the day is used up (10 s)" in held
    wake = steps.scheduling(r, EventRef.test(spec.test_id)).wake_at
    now = time.time()
    assert wake is not None and wake == (authors.day_of(now) + 1) * 86400.0
    # A new day (here: the count cleared) and the test's wake-up start its pairs.
    r.delete(keys.author_cpu(alice, authors.day_of(now)))
    _step(r, spec)
    assert _boards(r, spec) == 4 and _plan(r, spec)["held"] == ""


def test_the_slots_are_shared_between_authors_and_a_newcomer_rebalances_them(
        r: redis.Redis) -> None:
    store_share.set_slots(r, 16)  # 8 pairs
    alice, bob = _author(r, "alice", pairs=100), _author(r, "bob", pairs=100)
    long = _make(r, alice, in_flight=12)
    assert _boards(r, long) == 8
    assert _plan(r, long)["held"] == ("alice's fair share of the stack: 16 game slots for "
                                      "tests, shared by 1 author testing")
    short = _make(r, bob, in_flight=12)
    assert _boards(r, short) == 4  # bob's half, at once
    # Bob's test starting asked alice's to look again (her share shrank).
    assert r.exists(steps.asks(EventRef.test(long.test_id)).dirty)
    _step(r, long)
    assert "shared by 2 authors testing" in _plan(r, long)["held"]
    for board in range(1, 5):  # alice's pairs finish: she is over her share, none starts
        _finish_board(r, long, board)
        assert _boards(r, long) == 8
    for board in range(5, 9):  # then under it: she starts pairs again, up to four
        _finish_board(r, long, board)
    assert _boards(r, long) == 12 and _in_flight(r, long) == 4
    # Bob's test ends (stopped, its pairs finished): alice's share grows back.
    store_changes.ask_stop(r, short.test_id)
    _step(r, short)
    for board in range(1, 5):
        _finish_board(r, short, board)
    assert store_t.info(r, short.test_id).status.value == "finished"
    assert r.hget(keys.SHARE_CLAIMS, short.test_id) is None
    _step(r, long)
    assert _in_flight(r, long) == 8 and "1 author testing" in _plan(r, long)["held"]


def test_the_workers_slots_count_while_they_live(r: redis.Redis) -> None:
    assert store_share.test_slots(r) is None
    store_share.note_worker(r, "w1", 10, 3000)
    store_share.note_worker(r, "w2", 6, 3000)
    assert store_share.test_slots(r) == 16
    store_share.note_worker(r, "w2", 6, 0)
    assert store_share.test_slots(r) == 10
    store_share.set_slots(r, 4)
    assert store_share.test_slots(r) == 4
    store_share.set_slots(r, 0)
    assert store_share.test_slots(r) == 10
    r.hset(keys.SHARE_WORKERS, "w1", f"10 {time.time() - 5}")  # its note lapsed
    assert store_share.test_slots(r) is None and not r.exists(keys.SHARE_WORKERS)
