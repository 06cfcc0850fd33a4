"""The arena's store and matchmaking job on a real Redis (no workers: the games it queues
are finished here by hand): tables from free connected joined bots only, boards of two
tables or more, no deal twice, release by board, a pass lost at any point redone without
creating anything twice, and bad input refused with nothing changed."""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from clients.redisproc import RedisServer
from store import arena as store_arena
from store import bots as store_bots
from store import deals, keys, steps
from store import groups as store_groups
from store import matches as store_matches
from store.coalesce import Asks
from store.errors import FailedPrecondition, InvalidArgument, NotFound
from store.records import MatchSpec
from store.refs import EventRef
from store.results import result_row
from workers import scheduler
from workers.queues import rq_connection


@pytest.fixture
def conns(tmp_path: Path) -> Iterator[tuple[redis.Redis, redis.Redis]]:
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        yield store_bots.connect(srv.url), rq_connection(srv.url)


def _bots(r: redis.Redis, n: int, online: bool = True) -> list[str]:
    out = []
    for i in range(n):
        record, _ = store_bots.register_bot(r, f"bot{i}-{random.randrange(10**6)}")
        if online:
            _connect(r, record.bot_id)
        out.append(record.bot_id)
    return out


def _connect(r: redis.Redis, bot_id: str) -> None:
    r.zadd(keys.presence(bot_id), {"stream": time.time() + 3600})


def _disconnect(r: redis.Redis, bot_id: str) -> None:
    r.delete(keys.presence(bot_id))


def _start(r: redis.Redis, **kw: Any) -> store_arena.ArenaInfo:
    kw.setdefault("max_wait_ms", 0)
    return store_arena.start(r, store_arena.ArenaSpec.build("3p", {"max_hands": "1"}, seed=7,
                                                            **kw))


ARENA = EventRef.arena("3p")


def _step(r: redis.Redis, rq: redis.Redis) -> dict[str, Any]:
    return scheduler.advance(r, rq, ARENA)


def _state(r: redis.Redis) -> dict[str, Any] | None:
    """The step's state of the 3p arena."""
    return steps.state(r, ARENA).state


def _live(r: redis.Redis) -> dict[str, list[str]]:
    st = _state(r) or {"plan": {}}
    return {b: list(x["live"]) for b, x in st["plan"].get("bots", {}).items()}


def _finish(r: redis.Redis, mid: str) -> None:
    """Store a result for an arena game and record it, as the match host does."""
    spec = store_matches.load_spec(r, mid)
    placement = [1, 2, 3]
    random.shuffle(placement)
    result = {"final": [21, 10, 3], "winner": placement.index(1), "placement": placement,
              "end": "target", "seats": list(spec.bot_ids), "forfeit": None}
    r.set(keys.result(mid), json.dumps({"result": result, "transcript": {}}))
    row = result_row(mid, spec.bot_ids, result, str(spec.meta["board"]), str(spec.meta["unit"]))
    store_matches.finish(r, mid, spec.bot_ids, row, time.time())
    steps.record(r, ARENA, mid)


def _games(r: redis.Redis) -> list[str]:
    return [str(m) for m in r.zrange(keys.arena_games("3p"), 0, -1)]


def test_tables_are_formed_from_free_connected_joined_bots_only(
        conns: tuple[redis.Redis, redis.Redis]) -> None:
    r, rq = conns
    _start(r, anchors=["house:greedy"])
    joined = _bots(r, 9)
    offline = _bots(r, 3, online=False)
    stranger = _bots(r, 3)  # connected, never joined
    for b in joined + offline:
        store_arena.join(r, "3p", b)
    _step(r, rq)
    out = store_arena.info(r, "3p").step  # what the pass saw
    assert out["boards"] >= 1 and out["online"] == 10
    games = _games(r)
    seated = {b for m in games for b in store_matches.load_spec(r, m).bot_ids}
    assert seated <= set(joined) | {"house:greedy"}
    assert not seated & (set(offline) | set(stranger))
    boards: dict[str, list[str]] = {}
    for m in games:
        spec = store_matches.load_spec(r, m)
        assert spec.event == ARENA and spec.boarded and spec.rules.max_hands == 1
        boards.setdefault(str(spec.meta["board"]), []).append(m)
    assert all(len(ms) >= 2 for ms in boards.values())
    # Every table of a board plays one deal; each game is queued once.
    for ms in boards.values():
        assert len({store_matches.load_spec(r, m).seed for m in ms}) == 1
    assert r.llen("rq:queue:moonshot-matches") == len(games)


def test_a_bot_plays_at_most_its_concurrency_and_games_are_released_by_board(
        conns: tuple[redis.Redis, redis.Redis]) -> None:
    r, rq = conns
    _start(r, concurrency=2)
    for b in _bots(r, 12):
        store_arena.join(r, "3p", b)
    seen_games: set[str] = set()
    for _ in range(12):
        _step(r, rq)
        live = _live(r)
        assert all(len(ms) <= 2 for ms in live.values())
        games = _games(r)
        assert len(games) == len(set(games))
        fresh = [m for m in games if m not in seen_games]
        seen_games.update(games)
        # Finish half of what is under way: a board is released only once all its
        # tables are done.
        under_way = sorted({m for ms in live.values() for m in ms})
        for m in under_way[: max(1, len(under_way) // 2)]:
            _finish(r, m)
        assert fresh or under_way
    _step(r, rq)
    st = _state(r)
    assert st is not None
    released = set(r.zrange(keys.results("3p"), 0, -1))
    for board, (n, done, ms) in st["open"].items():
        assert done < n and not released & set(ms), board  # still in play: none released
    by_board: dict[str, list[str]] = {}
    for m in _games(r):
        by_board.setdefault(str(store_matches.load_spec(r, m).meta["board"]), []).append(m)
    for board, ms in by_board.items():
        finished = [m for m in ms if r.exists(keys.result(m))]
        if board.rpartition("/")[2] not in st["open"]:
            assert set(finished) == set(ms) and set(ms) <= released  # whole board released
    # No bot was dealt a deal twice: its games' seeds are all different.
    for bot in _live(r):
        seeds = [store_matches.load_spec(r, m).seed for m in _games(r)
                 if bot in store_matches.load_spec(r, m).bot_ids]
        assert len(seeds) == len(set(seeds))
        assert all(deals.was_dealt(r, s) for s in seeds)


def test_a_disconnected_bot_leaves_matchmaking_and_a_left_bot_too(
        conns: tuple[redis.Redis, redis.Redis]) -> None:
    r, rq = conns
    _start(r, concurrency=1)
    bots = _bots(r, 9)
    for b in bots:
        store_arena.join(r, "3p", b)
    _disconnect(r, bots[0])
    assert store_arena.leave(r, "3p", bots[1])
    assert not store_arena.leave(r, "3p", bots[1])  # nothing changes the second time
    _step(r, rq)
    seated = {b for m in _games(r) for b in store_matches.load_spec(r, m).bot_ids}
    assert bots[0] not in seated and bots[1] not in seated
    assert seated == set(bots[2:8]) or len(seated) == 6


def test_one_authors_bots_never_share_a_table_or_a_board(
        conns: tuple[redis.Redis, redis.Redis]) -> None:
    r, rq = conns
    _start(r, anchors=["house:greedy"], concurrency=1)
    alice = [store_bots.register_bot(r, f"alice-{i}", owner="alice")[0].bot_id
             for i in range(2)]
    for b in alice + _bots(r, 6):
        _connect(r, b)
        store_arena.join(r, "3p", b)
    for _ in range(12):  # every game finished between passes
        _step(r, rq)
        for m in _games(r):
            if not r.exists(keys.result(m)):
                _finish(r, m)
    games = [store_matches.load_spec(r, m) for m in _games(r)]
    assert len(games) >= 24
    for board in {str(g.meta["board"]) for g in games}:
        seated = {b for g in games if g.meta["board"] == board for b in g.bot_ids}
        assert not set(alice) <= seated, board  # never at one table, nor at one board
    # Nine bots, one free slot each: every pass forms one board of three tables, which
    # must be split for alice's two; each board dealt apart says so, and is counted.
    split = _check_split(games, set(alice), "one author's bots")
    assert split >= 12
    assert (_state(r) or {})["plan"]["apart"] == split
    assert store_arena.info(r, "3p").step["apart"] == split
    assert (_state(r) or {})["plan"].get("together", 0) == 0


_APART_NOTE = re.compile(r"this board \((arena-3p/b\d+)\) was dealt apart from "
                         r"(arena-3p/b\d+): its tables would otherwise have seated two bots "
                         r"of one group "
                         r"\(([^)]*)\) at tables of one board")


def _check_split(games: list[MatchSpec], group: set[str], kind: str) -> int:
    """Every game of a board dealt apart says so, naming its own board, the board it left
    (dealt in the same pass: the number before its own or earlier) and the kind of group
    that would have met; the group's bots sit at the two boards; a game of a board kept
    whole has no such note. The number of boards dealt apart."""
    seated: dict[str, set[str]] = {}
    for g in games:
        seated.setdefault(str(g.meta["board"]), set()).update(g.bot_ids)
    split = set()
    for g in games:
        said = [m for n in g.meta.get("notes", []) if (m := _APART_NOTE.fullmatch(n))]
        assert len(said) <= 1 and len(said) == len([
            n for n in g.meta.get("notes", []) if "dealt apart" in n]), g.meta
        if not said:
            continue
        own, left, why = said[0].groups()
        assert own == g.meta["board"] and why == kind, said[0].group(0)
        assert int(left.rpartition("b")[2]) < int(own.rpartition("b")[2])
        assert seated[own] & group and seated[left] & group, (own, left)
        split.add(own)
    return len(split)


def test_a_table_one_author_cannot_be_kept_from_is_dealt_counted_and_noted(
        conns: tuple[redis.Redis, redis.Redis]) -> None:
    # Only bob's bots online: two tables of three must seat his bots together. The arena
    # deals them rather than starve (docs/architecture.md, "Collusion across tables"),
    # each table a board of its own, and counts and notes it.
    r, rq = conns
    _start(r, concurrency=1)
    bob = [store_bots.register_bot(r, f"bob-{i}", owner="bob")[0].bot_id for i in range(6)]
    for b in bob:
        _connect(r, b)
        store_arena.join(r, "3p", b)
    _step(r, rq)
    games = [store_matches.load_spec(r, m) for m in _games(r)]
    assert len(games) == 2 and len({g.meta["board"] for g in games}) == 2
    for g in games:
        assert any("this table seats two bots of one group (one author's bots)" in n
                   for n in g.meta["notes"]), g.meta["notes"]
    assert (_state(r) or {})["plan"]["together"] == 2
    assert store_arena.info(r, "3p").step["together"] == 2
    # The second table's board was dealt apart from the first's, and says so too.
    assert _check_split(games, set(bob), "one author's bots") == 1
    assert store_arena.info(r, "3p").step["apart"] == 1


def test_a_group_declared_for_the_stack_never_shares_a_board(
        conns: tuple[redis.Redis, redis.Redis]) -> None:
    """Two bots of two authors, grouped by an organiser for the whole stack
    (`store.groups`, SetGroup): every pass after the declaration deals them apart, counted
    but said in no game's notes: who is grouped with whom is not public, and a note
    naming the two boards of each split, pass after pass, would tell a watcher."""
    r, rq = conns
    _start(r, anchors=["house:greedy"], concurrency=1)
    pair = [store_bots.register_bot(r, f"{who}-0", owner=who)[0].bot_id
            for who in ("alice", "bob")]
    for b in pair + _bots(r, 6):
        _connect(r, b)
        store_arena.join(r, "3p", b)

    def play(passes: int) -> list[MatchSpec]:
        before = set(_games(r))
        for _ in range(passes):  # every game finished between passes
            _step(r, rq)
            for m in _games(r):
                if not r.exists(keys.result(m)):
                    _finish(r, m)
        return [store_matches.load_spec(r, m) for m in _games(r) if m not in before]

    def boards_with_both(games: list[MatchSpec]) -> int:
        return sum(set(pair) <= {b for g in games if g.meta["board"] == board
                                 for b in g.bot_ids}
                   for board in {str(g.meta["board"]) for g in games})

    # Undeclared, nine bots with one free slot each share one board every pass.
    assert boards_with_both(play(2)) == 2
    store_groups.set_group(r, "lab-secret", pair)
    games = play(12)
    assert len(games) >= 36 and boards_with_both(games) == 0
    assert _check_split(games, set(pair), "a declared group") == 0  # none noted
    assert store_arena.info(r, "3p").step["apart"] >= 12  # one split a pass, counted
    assert not any("lab-secret" in n or "stack:" in n or "group" in n
                   for g in games for n in g.meta.get("notes", []))
    store_groups.set_group(r, "lab-secret", [])  # deleted: they may share a board again
    assert boards_with_both(play(2)) == 2


@pytest.mark.parametrize("point", ["step.before-save", "step.after-save"])
def test_a_pass_lost_at_any_point_is_redone_creating_nothing_twice(
        conns: tuple[redis.Redis, redis.Redis], point: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    r, rq = conns
    _start(r)
    bots = _bots(r, 9)
    for b in bots:
        store_arena.join(r, "3p", b)

    def die(name: str) -> None:
        if name == point:
            raise SystemExit("killed")

    monkeypatch.setattr(scheduler.failpoints, "reached", die)
    with pytest.raises(SystemExit):
        _step(r, rq)
    r.delete(keys.arena_lock("3p"))  # the dead run's lock lapses
    assert _games(r) == []  # nothing created either way
    monkeypatch.undo()
    _step(r, rq)
    games = _games(r)
    assert games and len(set(games)) == len(games)
    assert r.llen("rq:queue:moonshot-matches") == len(games)
    st = _state(r)
    assert st is not None  # what the state still lists to create exists, once
    assert {json.loads(text)["match_id"] for text in st["creating"]} <= set(games)
    dealt = {b for m in games for b in store_matches.load_spec(r, m).bot_ids}
    assert sum(len(x["live"]) for x in st["plan"]["bots"].values()) == 3 * len(games)
    assert dealt <= set(bots)


def test_bad_input_is_refused_and_changes_nothing(conns: tuple[redis.Redis, redis.Redis]
                                                  ) -> None:
    r, _ = conns
    bot = _bots(r, 1)[0]
    with pytest.raises(FailedPrecondition, match="no 3p arena is running"):
        store_arena.join(r, "3p", bot)
    with pytest.raises(NotFound, match="no 3p arena"):
        store_arena.info(r, "3p")
    with pytest.raises(InvalidArgument, match="concurrency"):
        store_arena.ArenaSpec.build("3p", concurrency=0)
    with pytest.raises(InvalidArgument, match="not a house bot"):
        store_arena.ArenaSpec.build("3p", anchors=["b-123"])
    with pytest.raises(InvalidArgument, match="unknown house bot"):
        store_arena.ArenaSpec.build("3p", anchors=["house:nobody"])
    with pytest.raises(InvalidArgument, match="rules"):
        store_arena.ArenaSpec.build("3p", {"target": "0"})
    with pytest.raises(InvalidArgument, match="pool"):
        store_arena.ArenaSpec.build("5p")
    assert not r.exists(keys.arena("3p")) and not r.exists(keys.arena_joined("3p"))
    _start(r, concurrency=3)
    before = r.hgetall(keys.arena("3p"))
    with pytest.raises(FailedPrecondition, match="running already"):
        _start(r, concurrency=5)
    with pytest.raises(FailedPrecondition, match="no 2v2 arena is running; the 3p arena runs"):
        store_arena.join(r, "2v2", bot)
    assert r.hgetall(keys.arena("3p")) == before
    assert not r.exists(keys.arena_joined("2v2"))
    store_arena.stop(r, "3p")
    with pytest.raises(FailedPrecondition, match="not running"):
        store_arena.stop(r, "3p")


def _recover_step(r: redis.Redis, rq: redis.Redis) -> list[str]:
    """What recovery does for the arenas (a nudge, then the owed step queued), and the
    step jobs it queued, run here as a worker would run them."""
    from workers.queues import CONTROL_QUEUE, queue
    from workers.recovery import nudge, wake

    nudge(r, rq)
    wake(r, rq, time.time() + 3600)
    control = queue(rq, CONTROL_QUEUE)
    ran = []
    for job in control.jobs:
        if job.id.startswith("advance-arena-3p-"):
            control.remove(job)
            ran.append(job.id)
            scheduler.advance(r, rq, EventRef.parse(job.args[0]))
    return ran


@pytest.mark.parametrize("running", [True, False])
def test_a_step_lost_with_its_worker_is_taken_again_by_recovery(
        conns: tuple[redis.Redis, redis.Redis], running: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A step dies after it took the ask (its worker killed): nothing asks again by itself,
    its lock holds until it lapses, and then recovery queues the step, which does what the
    lost one owed: while the arena runs, deal the boards; once stopped, release the last
    board (the last game's end was the only ask)."""
    r, rq = conns
    _start(r)
    for b in _bots(r, 6):
        store_arena.join(r, "3p", b)
    if not running:
        _step(r, rq)
        board = _games(r)
        assert len(board) == 2
        store_arena.stop(r, "3p")
        for mid in board:
            _finish(r, mid)

    def die(name: str) -> None:
        if name == "step.before-save":
            raise SystemExit("killed")

    monkeypatch.setattr(scheduler.failpoints, "reached", die)
    with pytest.raises(SystemExit):
        _step(r, rq)
    monkeypatch.undo()
    # Killed, it released nothing: its lock stands until it lapses (here the raise ran
    # the job's `finally`, which a SIGKILL does not).
    r.set(keys.arena_lock("3p"), "the dead run's token", px=scheduler.LOCK_MS)
    before = _games(r)
    assert not r.exists(keys.arena_dirty("3p"))  # the lost step had taken the ask
    # Each nudge asks and queues a job; while the dead run's lock holds, the job steps
    # aside, leaving the ask standing and creating nothing.
    for _ in range(2):
        assert len(_recover_step(r, rq)) == 1
        assert r.exists(keys.arena_dirty("3p")) and _games(r) == before
    r.delete(keys.arena_lock("3p"))  # the dead run's lock lapses
    assert len(_recover_step(r, rq)) == 1
    st = _state(r)
    assert st is not None
    if running:
        assert len(_games(r)) == 2 and not before  # the board it owed, dealt once
    else:
        assert _games(r) == before and st["open"] == {}  # released, nothing new dealt
        assert set(r.zrange(keys.results("3p"), 0, -1)) == set(before)


def test_a_job_makes_a_bounded_number_of_passes_while_asks_never_stop(
        conns: tuple[redis.Redis, redis.Redis], monkeypatch: pytest.MonkeyPatch) -> None:
    """Asks that never stop (a bot joining or reconnecting in a loop) cost MAX_PASSES
    passes a job, not a job that loops until its timeout: the control queue's other jobs
    (steps, fits) take their turns, and the ask left standing waits for the next job."""
    r, rq = conns
    _start(r)
    _bots(r, 6)
    asks: list[int] = []

    def asking(self: Asks, r_: redis.Redis) -> bool:
        self.ask(r_)  # every pass finds another ask standing
        asks.append(1)
        return True

    monkeypatch.setattr(Asks, "take", asking)
    scheduler.advance(r, rq, ARENA)
    assert len(asks) == scheduler.MAX_PASSES


def test_a_stopped_arena_leaves_recovery_once_its_last_board_is_released(
        conns: tuple[redis.Redis, redis.Redis]) -> None:
    """Stopped, the arena deals nothing; once its last board is released it leaves the live
    events, with no wake left standing: recovery queues nothing for it (it used to find the
    running arena's last wake due and queue a job every second, forever)."""
    from workers.recovery import wake

    r, rq = conns
    _start(r)
    for b in _bots(r, 6):
        store_arena.join(r, "3p", b)
    _step(r, rq)
    board = _games(r)
    assert len(board) == 2 and ARENA in steps.live_events(r)
    assert steps.scheduling(r, ARENA).wake_at is not None  # running: it looks again
    store_arena.stop(r, "3p")
    _step(r, rq)
    assert ARENA in steps.live_events(r)  # its board is in play
    for mid in board:
        _finish(r, mid)
    _step(r, rq)
    assert ARENA not in steps.live_events(r)
    assert steps.scheduling(r, ARENA).wake_at is None
    assert wake(r, rq, time.time() + 3600) == []
    _step(r, rq)  # a stray pass changes nothing
    assert _games(r) == board and ARENA not in steps.live_events(r)


def test_an_arena_stopped_with_no_board_in_play_leaves_recovery_at_once(
        conns: tuple[redis.Redis, redis.Redis]) -> None:
    """Stopped while no board is in play, the first pass after the stop finds the state as
    it was: it must still say the arena is no longer live and drop the running arena's
    wake, or recovery queues a pass every second, forever."""
    from workers.recovery import wake

    r, rq = conns
    _start(r, concurrency=1)
    for b in _bots(r, 6):
        store_arena.join(r, "3p", b)
    _step(r, rq)
    for mid in _games(r):
        _finish(r, mid)
    for b in store_arena.joined(r, "3p"):  # nobody online: nothing new is dealt
        _disconnect(r, b)
    _step(r, rq)
    assert not (steps.state(r, ARENA).state or {}).get("open")
    assert steps.scheduling(r, ARENA).wake_at is not None
    store_arena.stop(r, "3p")
    _step(r, rq)
    assert ARENA not in steps.live_events(r)
    assert steps.scheduling(r, ARENA).wake_at is None
    assert wake(r, rq, time.time() + 3600) == []


def test_recording_numbers_never_repeat_when_the_arenas_games_leave_for_the_archive(
        conns: tuple[redis.Redis, redis.Redis]) -> None:
    """The arena's recorded set is trimmed as its games are archived: a number taken from
    the set's size would be given again, below the step's cursor, and the step would never
    fold those games (their bots busy for good)."""
    r, _ = conns
    assert [steps.record(r, ARENA, f"m-a3pb1t{i}") for i in range(3)] == [1, 2, 3]
    r.zrem(keys.arena_recorded("3p"), "m-a3pb1t0", "m-a3pb1t1")  # archived
    assert steps.record(r, ARENA, "m-a3pb2t0") == 4
    assert steps.record(r, ARENA, "m-a3pb2t0") == 0  # once
    assert steps.recorded_after(r, ARENA, 3) == [("m-a3pb2t0", 4)]
    # A set recorded before the counter existed goes on from its highest number.
    r.hdel(keys.event(ARENA), "recorded")
    assert steps.record(r, ARENA, "m-a3pb3t0") == 5
