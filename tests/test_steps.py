"""The one scheduling engine's parts on a real Redis: the typed event reference, a match's
reference read from what older versions stored, coalesced asks, the step's save (its
compare-and-set, and an event's end written whole and once), an event created in one
write, and the one watch loop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from clients.redisproc import RedisServer
from moon import Rules
from server.follow import follow
from store import bots, events, keys, messages, steps
from store import tournaments as store_t
from store.coalesce import Asks
from store.errors import FailedPrecondition, InvalidArgument
from store.pools import Pool
from store.records import MatchSpec, TournamentSpec
from store.refs import EventKind, EventRef
from store.status import TournamentStatus


@pytest.fixture
def r(tmp_path: Path) -> Iterator[redis.Redis]:
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        yield bots.connect(srv.url)


def test_an_event_reference_names_one_kind_and_id_and_refuses_the_rest() -> None:
    assert str(EventRef.tournament("t-1a")) == "tournament:t-1a"
    for ref in (EventRef.tournament("t-1a"), EventRef.test("c-9"), EventRef.arena("2v2")):
        assert EventRef.parse(str(ref)) == ref
    assert EventRef.parse("t-1a") == EventRef.tournament("t-1a")  # a job of an older version
    assert EventRef.parse("c-9").kind is EventKind.TEST
    assert EventRef.arena("3P") == EventRef(EventKind.ARENA, "3p")
    for bad in ("arena:5p", "tournament:c-9", "test:t-1", "cup:t-1", "t-1:x", "", "m-1",
                "tournament:t-1/../x"):
        with pytest.raises(InvalidArgument):
            EventRef.parse(bad)
    assert keys.event(EventRef.arena("3p")) == keys.arena("3p") == "ms:arena:3p"
    assert keys.event_games(EventRef.test("c-9")) == "ms:test:c-9:matches"
    assert [EventKind(k).streams for k in ("tournament", "test", "arena")] == [
        True, True, False]


def test_a_pool_is_one_of_two_names() -> None:
    assert Pool.of(3) is Pool.THREE and Pool.of(4).players == 4
    assert Pool.parse(" 2V2 ") is Pool.TEAMS and str(Pool.THREE) == "3p"
    with pytest.raises(InvalidArgument, match="pool"):
        Pool.parse("4p")
    with pytest.raises(InvalidArgument):
        Pool.of(5)


def _spec(**over: object) -> dict[str, object]:
    d: dict[str, object] = {"match_id": "m-1", "players": 3, "rules": {}, "seed": 5,
                            "bot_ids": ["b-1", "b-2", "b-3"], "seat_names": ["a", "b", "c"],
                            "clock": [2000, 30000], "faults": [3, 30000], "meta": {}}
    d.update(over)
    return d


def test_a_match_carries_one_reference_and_reads_what_older_versions_stored() -> None:
    spec = MatchSpec.from_json(json.dumps(_spec(event="test:c-7")))
    assert spec.event == EventRef.test("c-7") and spec.boarded
    assert spec.event_id(EventKind.TEST) == "c-7" and spec.event_id(EventKind.TOURNAMENT) == ""
    assert MatchSpec.from_json(spec.to_json()) == spec
    # Stored before matches named their event: a tournament's or test's id, an arena's pool.
    assert MatchSpec.from_json(json.dumps(_spec(tournament_id="t-4"))).event == \
        EventRef.tournament("t-4")
    assert MatchSpec.from_json(json.dumps(_spec(tournament_id="c-4"))).event == \
        EventRef.test("c-4")
    assert MatchSpec.from_json(json.dumps(_spec(meta={"arena": "3p"}))).event == \
        EventRef.arena("3p")
    single = MatchSpec.from_json(json.dumps(_spec(tournament_id="")))
    assert single.event is None and not single.boarded


def test_many_asks_queue_one_job_and_a_lost_job_is_owed(r: redis.Redis) -> None:
    asks = Asks("ms:x:dirty", "ms:x:queued", "ms:x:lock", queued_s=30)
    assert asks.ask(r) and not asks.ask(r) and not asks.ask(r)  # one job for three asks
    assert not asks.owed(r)  # a job is queued for the request
    asks.started(r)
    assert asks.ask(r)  # asked while the job runs: that job may be past looking, queue one
    assert asks.take(r) and not asks.take(r)
    asks.started(r)
    asks.ask_again(r)
    assert asks.owed(r)  # a request, no job queued or running: recovery queues one
    r.set("ms:x:lock", "a run")
    assert not asks.owed(r)  # ... unless a run holds the lock (it loops while asked)


def _tournament(r: redis.Redis) -> str:
    spec = TournamentSpec(tournament_id="t-end", name="end", players=3, format="round_robin",
                          bot_ids=("b-1", "b-2", "b-3"), names=("a", "b", "c"),
                          rules=Rules.make(3), seed=1)
    store_t.create(r, spec)
    return spec.tournament_id


def test_an_event_is_created_in_one_write_or_not_at_all(r: redis.Redis) -> None:
    tid = _tournament(r)
    ref = EventRef.tournament(tid)
    assert store_t.info(r, tid).status == TournamentStatus.RUNNING
    assert store_t.all_ids(r) == [tid] and steps.live_events(r) == [ref]
    before = r.hgetall(keys.tournament(tid))
    with pytest.raises(FailedPrecondition, match="exists already"):
        _tournament(r)
    assert r.hgetall(keys.tournament(tid)) == before and store_t.all_ids(r) == [tid]


def test_a_save_moves_the_state_by_compare_and_set(r: redis.Redis) -> None:
    ref = EventRef.tournament(_tournament(r))
    first = steps.state(r, ref)
    assert (first.seq, first.state) == (0, None)
    assert steps.save(r, ref, 0, {"cursor": 1}, done=1, total=6, live=True)
    assert not steps.save(r, ref, 0, {"cursor": 9}, done=9, total=6, live=True)  # stale run
    now = steps.state(r, ref)
    assert (now.seq, now.state) == (1, {"cursor": 1})
    assert r.hmget(keys.event(ref), "done", "total") == ["1", "6"]
    assert steps.save(r, ref, 1, {"cursor": 2}, done=2, total=6, live=True, wake_at=12.5)
    assert steps.scheduling(r, ref).wake_at == 12.5
    assert steps.wake_due(steps.scheduling(r, ref), 13.0)
    assert not steps.wake_due(steps.scheduling(r, ref), 12.0)


def test_an_end_is_written_whole_and_once(r: redis.Redis) -> None:
    tid = _tournament(r)
    ref = EventRef.tournament(tid)
    end = steps.Ending(TournamentStatus.FINISHED, "",
                       messages.TournamentFinished(done=6, time=1.0))
    # A stale run's end writes nothing: neither the status nor the event.
    assert not steps.save(r, ref, 5, {"cursor": 6}, done=6, total=6, live=False, ending=end)
    assert store_t.info(r, tid).status == TournamentStatus.RUNNING
    assert events.newest_seq(r, tid) == 0 and steps.live_events(r) == [ref]
    assert steps.save(r, ref, 0, {"cursor": 6}, done=6, total=6, live=False, ending=end)
    info = store_t.info(r, tid)
    assert info.status == TournamentStatus.FINISHED and info.finished_at is not None
    for audience in (events.PUBLIC, events.ORGANISER):
        got = events.read_after(r, tid, 0, audience=audience)
        assert [type(e) for _, e in got] == [messages.TournamentFinished]
    assert steps.live_events(r) == []
    # A later step of an ended event (a game failed meanwhile) ends nothing twice.
    failed = steps.Ending(TournamentStatus.FAILED, "match x cannot be played",
                          messages.TournamentFinished(done=6, time=2.0))
    assert steps.save(r, ref, 1, {"cursor": 6}, done=6, total=6, live=False, ending=failed)
    assert store_t.info(r, tid).status == TournamentStatus.FINISHED
    assert events.newest_seq(r, tid) == 1


def test_recording_numbers_go_on_after_the_archive_drops_recorded_games(
        r: redis.Redis) -> None:
    """The archive drops an arena's released games from its sets (`store.archiving.drop`):
    the next game recorded is still numbered past the step's cursor, and the counts
    recovery judges by still count the games dropped."""
    ref = EventRef.arena("3p")
    for i in range(3):
        r.zadd(keys.event_games(ref), {f"m-{i}": i})
        assert steps.record(r, ref, f"m-{i}") == i + 1
    assert steps.record(r, ref, "m-1") == 0  # once
    r.hset(keys.event(ref), "done", 3)  # the step folded them; they were released ...
    r.zrem(keys.event_games(ref), "m-0", "m-1", "m-2")  # ... and archived
    r.zrem(keys.event_recorded(ref), "m-0", "m-1", "m-2")
    r.zadd(keys.event_games(ref), {"m-3": 3, "m-4": 4})
    assert steps.record(r, ref, "m-3") == 4
    assert steps.recorded_after(r, ref, 3) == [("m-3", 4)]
    s = steps.scheduling(r, ref)
    assert (s.games, s.recorded, s.done) == (5, 4, 3)  # m-4 in flight, m-3 not folded
    # An event recorded before the counter: from its highest number, else its cursor.
    old = EventRef.tournament("t-1a")
    r.zadd(keys.event_recorded(old), {"m-a": 1, "m-b": 2})
    assert steps.record(r, old, "m-c") == 3
    emptied = EventRef.arena("2v2")
    r.hset(keys.event(emptied), "done", 7)
    assert steps.record(r, emptied, "m-d") == 8


def test_the_watch_loop_reads_once_more_when_the_source_says_it_is_over() -> None:
    """The end is written with the status: a watcher that read nothing new, then finds the
    source over, reads once more and gets the end (no event is ever missed), and stops
    after the last item."""
    stream: list[tuple[int, str]] = [(1, "a"), (2, "b")]
    state = {"over": False, "reads": 0}

    async def read(after: int) -> list[tuple[int, str]]:
        state["reads"] += 1
        return [(s, x) for s, x in stream if s > after]

    async def over() -> bool:
        if not state["over"]:
            # The end lands between a read that saw nothing and the look at the status.
            stream.append((3, "end"))
            state["over"] = True
            return False
        return True

    async def watch(after: int) -> list[list[tuple[int, str]]]:
        return [b async for b in follow(read, after, lambda x: x == "end", over, 0.0)]

    assert asyncio.run(watch(0)) == [[(1, "a"), (2, "b")], [(3, "end")]]
    stream.append((4, "after the end"))  # never read: the last item stops the loop
    assert asyncio.run(watch(2)) == [[(3, "end")]]

    async def ended() -> bool:
        return True

    async def empty(after: int) -> list[tuple[int, str]]:
        return []

    async def quiet() -> list[list[tuple[int, str]]]:
        return [b async for b in follow(empty, 0, lambda x: False, ended, 0.0)]

    assert asyncio.run(quiet()) == []  # over, and nothing more will come
