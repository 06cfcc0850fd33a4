"""A test of a change driven by the scheduling step, on a real Redis: pairs on one deal, a
pair counted once both its games are recorded (in board order, never twice), both games
of a board released together and kept out of the ratings, the verdict and StopTest
ending it, capacity, a redone step, and deals (C and B never see a board twice)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from rq.job import Job, JobStatus

from clients.redisproc import RedisServer
from moon import Rules
from store import bots, deals, events, ids, keys, steps
from store import changes as store_changes
from store import matches as store_matches
from store import tournaments as store_t
from store.changes import ChangeTestSpec
from store.records import Clock, Faults
from store.refs import EventRef
from store.results import result_row
from store.status import TournamentStatus
from tournaments.change import ChangeSpec, board_games, seating
from tournaments.plan import derive_seed
from workers.changes import capacity
from workers.queues import create_test, rq_connection
from workers.recovery import nudge, recover
from workers.scheduler import advance

_URLS = [""]


@pytest.fixture
def r(tmp_path: Path) -> Iterator[redis.Redis]:
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        _URLS[0] = srv.url
        yield bots.connect(srv.url)


def _online(r: redis.Redis, *bot_ids: str, up: bool = True) -> None:
    """Mark bots connected (a live stream's presence, as the referee writes it) or not."""
    for bot in bot_ids:
        if up:
            r.zadd(keys.presence(bot), {"test-stream": time.time() + 3600})
        else:
            r.delete(keys.presence(bot))


def _make(r: redis.Redis, candidate: str = "", baseline: str = "", online: bool = True,
          **plan: Any) -> ChangeSpec:
    """A stored 3p test of two registered bots (or those given) against house opponents,
    its first step taken; the bots connected unless not `online`."""
    c = candidate or bots.register_bot(r, f"c{time.monotonic_ns()}")[0].bot_id
    b = baseline or bots.register_bot(r, f"b{time.monotonic_ns()}")[0].bot_id
    if online:
        _online(r, c, b)
    plan.setdefault("in_flight", 2)
    spec = ChangeSpec(test_id=ids.new_test_id(), players=3, candidate=c, baseline=b,
                      opponents=("house:greedy", "house:random"), seed=plan.pop("seed", 7),
                      **plan)
    test = ChangeTestSpec(test_id=spec.test_id, name="t", plan=spec.to_json(),
                          rules=Rules.make(3, {}), clock=Clock(), faults=Faults(),
                          names=((c, "C"), (b, "B")))
    create_test(r, rq_connection(_URLS[0]), test)
    advance(r, rq_connection(_URLS[0]), EventRef.test(spec.test_id))
    return spec


def _games(r: redis.Redis, spec: ChangeSpec) -> list[str]:
    return [str(m) for m in r.zrange(keys.tournament_matches(spec.test_id), 0, -1)]


def _finish(r: redis.Redis, spec: ChangeSpec, board: int, role: str, place: int,
            step: bool = True, forfeit: str = "") -> None:
    """Record game `role` ("c" or "b") of board `board` (from 1), the hero in `place` (and
    forfeiting for `forfeit`, if given), then take a step (unless not `step`), as the
    match host and the scheduler's job would."""
    mid = f"{spec.test_id}-p{board}-{role}"
    mspec = store_matches.load_spec(r, mid)
    hero, _ = seating(spec, board - 1)
    others = [p for p in (1, 2, 3) if p != place]
    placement = [0, 0, 0]
    placement[hero] = place
    for seat, p in zip([s for s in range(3) if s != hero], others, strict=True):
        placement[seat] = p
    final = [30 - 10 * p for p in placement]
    result = {"final": final, "winner": placement.index(1), "placement": placement,
              "end": "forfeit" if forfeit else "normal",
              "forfeit": {"seat": hero, "reason": forfeit} if forfeit else None,
              "seats": list(mspec.seat_names)}
    row = result_row(mid, mspec.bot_ids, result, str(mspec.meta["board"]),
                     str(mspec.meta["unit"]))
    store_matches.finish(r, mid, mspec.bot_ids, row, time.time())
    steps.record(r, EventRef.test(spec.test_id), mid)
    if step:
        advance(r, rq_connection(_URLS[0]), EventRef.test(spec.test_id))


def _plan(r: redis.Redis, spec: ChangeSpec) -> dict[str, Any]:
    stored = store_t.state(r, spec.test_id)
    assert stored is not None
    return dict(stored["plan"])


def test_each_board_is_two_games_on_one_deal_dealt_through_the_secret(
        r: redis.Redis) -> None:
    spec = _make(r)
    games = _games(r, spec)
    assert games == [f"{spec.test_id}-p{k}-{x}" for k in (1, 2) for x in "cb"]
    secret = deals.board_secret(r)
    for k in (1, 2):
        c = store_matches.load_spec(r, f"{spec.test_id}-p{k}-c")
        b = store_matches.load_spec(r, f"{spec.test_id}-p{k}-b")
        hero, _ = seating(spec, k - 1)
        assert c.seed == b.seed == deals.deal_seed(
            secret, derive_seed(spec.seed, f"{spec.test_id}/p{k}"))
        assert c.bot_ids[hero] == spec.candidate and b.bot_ids[hero] == spec.baseline
        assert [x for i, x in enumerate(c.bot_ids) if i != hero] == \
            [x for i, x in enumerate(b.bot_ids) if i != hero]
        assert c.meta["board"] == b.meta["board"] == f"{spec.test_id}/p{k}"
        assert c.event == EventRef.test(spec.test_id)  # the event that owns it: the test
        # The stack's record holds the deal, for this board: C's and B's game alike.
        assert deals.board_of(r, c.seed) == f"{spec.test_id}/p{k}"
    assert deals.count(r) == 2


def test_a_pair_counts_once_both_games_are_recorded_and_only_once(r: redis.Redis) -> None:
    spec = _make(r)
    _finish(r, spec, 1, "c", 1)
    assert _plan(r, spec)["counted"] == 0
    hidden = store_matches.get_match(r, f"{spec.test_id}-p1-c")
    assert not hidden.released  # its board is in play: nothing of it is public
    assert store_changes.pairs(r, spec.test_id) == []
    _finish(r, spec, 1, "b", 3)
    plan = _plan(r, spec)
    assert plan["counted"] == 1 and plan["counts"][8] == 1  # C first, B third: 1
    assert store_changes.pairs(r, spec.test_id) == [{
        "board": 0, "board_id": f"{spec.test_id}/p1",
        "candidate_match_id": f"{spec.test_id}-p1-c",
        "baseline_match_id": f"{spec.test_id}-p1-b", "eighths": 8,
        "llr": pytest.approx(plan["llr"])}]
    for role in "cb":  # both released together, and kept out of the rating pool
        assert store_matches.get_match(r, f"{spec.test_id}-p1-{role}").released
    assert store_matches.pool_size(r, "3p") == 0
    assert len(_games(r, spec)) == 6  # a pair counted, a new one started (2 in flight)
    # The same game recorded again, and a step redone: nothing counts twice.
    assert steps.record(r, EventRef.test(spec.test_id), f"{spec.test_id}-p1-b") == 0
    advance(r, rq_connection(_URLS[0]), EventRef.test(spec.test_id))
    assert _plan(r, spec)["counted"] == 1
    seen = [e for _, e in events.read_after(r, spec.test_id, 0)]
    assert [e.TYPE for e in seen].count("pair_counted") == 1
    assert [e.TYPE for e in seen].count("match_finished") == 2


def test_pairs_count_in_board_order(r: redis.Redis) -> None:
    spec = _make(r)
    _finish(r, spec, 2, "c", 1)
    _finish(r, spec, 2, "b", 2)
    assert _plan(r, spec)["counted"] == 0  # board 2 waits for board 1
    assert store_matches.get_match(r, f"{spec.test_id}-p2-c").released  # but is public
    _finish(r, spec, 1, "c", 2)
    _finish(r, spec, 1, "b", 2)
    assert [p["board"] for p in store_changes.pairs(r, spec.test_id)] == [0, 1]
    assert [p["eighths"] for p in store_changes.pairs(r, spec.test_id)] == [4, 6]


def test_the_verdict_starts_no_new_pair_and_pairs_in_flight_still_count(
        r: redis.Redis) -> None:
    spec = _make(r, elo0=0.0, elo1=300.0, in_flight=3)
    board = 1
    while _plan(r, spec)["verdict"] == "pending":
        _finish(r, spec, board, "c", 1)
        _finish(r, spec, board, "b", 3)
        board += 1
    plan = _plan(r, spec)
    assert plan["verdict"] == "H1" and plan["verdict_pairs"] == board - 1
    created = len(_games(r, spec))
    flying = list(range(board, created // 2 + 1))
    assert flying  # pairs were in flight when the verdict came
    for k in flying:  # they finish, count and show, the verdict unchanged
        _finish(r, spec, k, "c", 3)
        _finish(r, spec, k, "b", 1)
    plan = _plan(r, spec)
    assert len(_games(r, spec)) == created  # nothing new started
    assert plan["verdict"] == "H1" and plan["counted"] == created // 2
    assert plan["counts"][0] == len(flying)
    info = store_t.info(r, spec.test_id)
    assert info.status == TournamentStatus.FINISHED and info.done == created


def test_stop_starts_no_new_pair(r: redis.Redis) -> None:
    spec = _make(r)
    store_changes.ask_stop(r, spec.test_id)
    advance(r, rq_connection(_URLS[0]), EventRef.test(spec.test_id))
    assert _plan(r, spec)["stopped"]
    for k in (1, 2):
        _finish(r, spec, k, "c", 2)
        _finish(r, spec, k, "b", 2)
    assert len(_games(r, spec)) == 4
    assert _plan(r, spec)["counted"] == 2
    assert store_t.info(r, spec.test_id).status == TournamentStatus.FINISHED


def test_a_fixed_games_test_plays_exactly_its_games(r: redis.Redis) -> None:
    spec = _make(r, fixed_games=6)
    for k in (1, 2, 3):
        _finish(r, spec, k, "c", 1)
        _finish(r, spec, k, "b", 2)
    assert len(_games(r, spec)) == 6
    plan = _plan(r, spec)
    assert plan["counted"] == 3 and plan["llr"] == 0.0 and plan["verdict"] == "pending"
    assert store_t.info(r, spec.test_id).status == TournamentStatus.FINISHED


def test_capacity_counts_each_bots_games_elsewhere(r: redis.Redis) -> None:
    base = {"test_id": "c-x", "players": 3, "candidate": "b-c", "baseline": "b-b", "seed": 1,
            "in_flight": 8}
    spec = ChangeSpec(opponents=("house:greedy", "house:greedy"), **base)  # type: ignore[arg-type]
    assert capacity(spec, {}) == 8
    assert capacity(spec, {"b-c": 5}) == 3
    assert capacity(spec, {"b-b": 20}) == 1  # never below one: a test always moves on
    trusted = ChangeSpec(opponents=("b-o", "house:greedy"), trust_opponents=True, **base)  # type: ignore[arg-type]
    assert capacity(trusted, {}) == 4  # the opponent plays both games of every pair
    assert capacity(trusted, {"b-o": 2}) == 3
    # On the stack: the candidate busy elsewhere, the first step starts fewer pairs.
    c = bots.register_bot(r, "busy")[0].bot_id
    r.sadd(keys.bot_live(c), "m-elsewhere1", "m-elsewhere2", "m-elsewhere3")
    spec2 = _make(r, candidate=c, in_flight=4)
    assert len(_games(r, spec2)) == 2  # one pair: 4 - 3 games elsewhere


def test_a_redone_step_takes_up_every_board_an_earlier_run_created(r: redis.Redis) -> None:
    """A run that created and queued games, then died before saving its state, is redone
    when the bots are busier: the redo must still open those boards, or their games would
    be recorded before any state knew them, and the test would wait for them forever."""
    spec = _make(r, in_flight=4)
    assert len(_games(r, spec)) == 8
    r.delete(keys.tournament_state(spec.test_id))  # the first run died before saving
    r.sadd(keys.bot_live(spec.candidate), "m-a", "m-b", "m-c")  # now capacity is 1
    advance(r, rq_connection(_URLS[0]), EventRef.test(spec.test_id))
    assert _plan(r, spec)["next"] == 4
    for k in (1, 2, 3, 4):
        _finish(r, spec, k, "c", 1)
        _finish(r, spec, k, "b", 1)
    assert _plan(r, spec)["counted"] == 4


def test_a_redone_step_counts_the_lost_runs_games_that_finished_before_it(
        r: redis.Redis) -> None:
    """The step that counted board 1 created board 3's games and died before saving; board
    3's games finish before the redo, whose batch holds board 1's and board 3's results:
    every pair counts once, board 3 is released, and the test ends (a redo that folded
    board 3's results before opening it dropped them, and the test waited forever)."""
    spec = _make(r, in_flight=2)
    before = r.get(keys.tournament_state(spec.test_id))
    _finish(r, spec, 1, "c", 1)
    _finish(r, spec, 1, "b", 2)
    assert len(_games(r, spec)) == 6  # board 3 created by the step that counted board 1
    r.set(keys.tournament_state(spec.test_id), before)  # ... which died before saving
    _finish(r, spec, 3, "c", 2, step=False)
    _finish(r, spec, 3, "b", 1, step=False)
    advance(r, rq_connection(_URLS[0]), EventRef.test(spec.test_id))
    plan = _plan(r, spec)
    assert plan["counted"] == 1 and plan["games"] == 4
    assert min(plan["open"]["2"]) >= 0  # both recorded; it counts after board 2, in order
    for role in "cb":
        assert store_matches.get_match(r, f"{spec.test_id}-p3-{role}").released
    _finish(r, spec, 2, "c", 1)
    _finish(r, spec, 2, "b", 1)
    plan = _plan(r, spec)
    assert plan["counted"] == 3 and plan["games"] == 6
    assert [p["board"] for p in store_changes.pairs(r, spec.test_id)] == [0, 1, 2]


def test_c_and_b_are_never_dealt_a_board_twice(r: redis.Redis) -> None:
    """The same C and B in two tests with one seed share no deal (a test's boards are
    planned from its own id too). And a board whose planned deal another board had is
    dealt afresh, for both C and B."""
    c = bots.register_bot(r, "cand")[0].bot_id
    b = bots.register_bot(r, "base")[0].bot_id
    first = _make(r, c, b, seed=5, in_flight=3)
    second = _make(r, c, b, seed=5, in_flight=3)

    def dealt(spec: ChangeSpec) -> set[int]:
        return {store_matches.load_spec(r, m).seed for m in _games(r, spec)}

    assert len(dealt(first)) == len(dealt(second)) == 3
    assert not dealt(first) & dealt(second)
    for t in (first, second):  # each deal on the stack's record, for its own board
        for m in _games(r, t):
            game = store_matches.load_spec(r, m)
            assert deals.board_of(r, game.seed) == game.meta["board"]
    # A third test whose first board's planned deal an earlier board had (planted).
    third_id = ids.new_test_id()
    planned = derive_seed(9, f"{third_id}/p1")
    deals.claim(r, deals.deal_seed(deals.board_secret(r), planned), "t-old/x1-r1")
    spec = ChangeSpec(test_id=third_id, players=3, candidate=c, baseline=b,
                      opponents=("house:greedy", "house:greedy"), seed=9, in_flight=1)
    create_test(r, rq_connection(_URLS[0]), ChangeTestSpec(
        test_id=third_id, name="t3", plan=spec.to_json(), rules=Rules.make(3, {}),
        clock=Clock(), faults=Faults(), names=()))
    advance(r, rq_connection(_URLS[0]), EventRef.test(third_id))
    cg, bg = (store_matches.load_spec(r, g.match_id) for g in board_games(spec, 0))
    assert cg.seed == bg.seed == deals.deal_seed(deals.board_secret(r), planned, 1)
    assert store_t.info(r, third_id).redealt == 1


def test_a_forfeit_voids_its_pair_which_is_shown_released_and_counted_nowhere(
        r: redis.Redis) -> None:
    spec = _make(r, in_flight=2)
    _finish(r, spec, 1, "c", 1)
    _finish(r, spec, 1, "b", 3, forfeit="disconnected for more than 1 s")
    plan = _plan(r, spec)
    assert plan["counted"] == 0 and plan["void"] == 1 and plan["settled"] == 1
    assert sum(plan["counts"]) == 0 and plan["llr"] == 0.0
    assert plan["voids"] == {"baseline": {"disconnected for more than 1 s": 1}}
    (pair,) = store_changes.pairs(r, spec.test_id)
    assert pair["eighths"] is None and pair["voids"] == [
        ["baseline", "disconnected for more than 1 s", f"{spec.test_id}-p1-b"]]
    for role in "cb":  # the board is released all the same
        assert store_matches.get_match(r, f"{spec.test_id}-p1-{role}").released
    assert len(_games(r, spec)) == 6  # the test goes on: a new pair started
    _finish(r, spec, 2, "c", 1)
    _finish(r, spec, 2, "b", 2)
    advance(r, rq_connection(_URLS[0]), EventRef.test(spec.test_id))  # redone: nothing twice
    plan = _plan(r, spec)
    assert plan["counted"] == 1 and plan["void"] == 1
    assert [(p["board"], p["eighths"]) for p in store_changes.pairs(r, spec.test_id)] == \
        [(0, None), (1, 6)]
    seen = [e for _, e in events.read_after(r, spec.test_id, 0)]
    voided = [e for e in seen if e.TYPE == "pair_voided"]
    assert [(e.board, e.void) for e in voided] == [(1, 1)]
    assert [(e.board, e.pairs) for e in seen if e.TYPE == "pair_counted"] == [(2, 1)]


def test_three_forfeits_in_a_row_stop_the_test_with_its_own_verdict(r: redis.Redis) -> None:
    spec = _make(r, in_flight=3)
    for k in (1, 2, 3):
        _finish(r, spec, k, "c", 2)
        _finish(r, spec, k, "b", 3, forfeit="3 strikes (late or illegal answers)")
    plan = _plan(r, spec)
    assert plan["verdict"] == "forfeits" and plan["halt"]["side"] == "baseline"
    created = len(_games(r, spec))
    for k in range(4, created // 2 + 1):  # the pairs in flight finish and show
        _finish(r, spec, k, "c", 1)
        _finish(r, spec, k, "b", 2)
    assert len(_games(r, spec)) == created
    assert store_t.info(r, spec.test_id).status == TournamentStatus.FINISHED
    assert _plan(r, spec)["verdict"] == "forfeits"


def test_a_game_the_stack_cannot_host_voids_its_pair_and_the_test_goes_on(
        r: redis.Redis) -> None:
    """RQ gave up on B's game of board 1: a tournament would fail; the test records it as
    lost, voids the pair, releases the board once C's game is done, and goes on."""
    spec = _make(r, in_flight=2)
    rq_conn = rq_connection(_URLS[0])
    lost = f"{spec.test_id}-p1-b"
    Job.fetch(f"match-{lost}", connection=rq_conn).set_status(JobStatus.FAILED)
    assert recover(r, rq_conn)["failed"] == [lost]
    advance(r, rq_conn, EventRef.test(spec.test_id))
    assert store_t.info(r, spec.test_id).status == TournamentStatus.RUNNING
    assert r.zscore(keys.tournament_recorded(spec.test_id), lost) is not None
    assert not store_matches.get_match(r, lost).released  # C's game is still in play
    _finish(r, spec, 1, "c", 1)
    plan = _plan(r, spec)
    assert plan["void"] == 1 and plan["counted"] == 0
    assert plan["voids"] == {"stack": {"could not be hosted": 1}}
    for role in "cb":
        assert store_matches.get_match(r, f"{spec.test_id}-p1-{role}").released
    assert len(_games(r, spec)) == 6  # a new pair started
    advance(r, rq_conn, EventRef.test(spec.test_id))  # again: the lost game counts once
    assert _plan(r, spec)["void"] == 1 and _plan(r, spec)["games"] == 2
    assert store_t.info(r, spec.test_id).status == TournamentStatus.RUNNING
    seen = [e for _, e in events.read_after(r, spec.test_id, 0)]
    assert [e.voids for e in seen if e.TYPE == "pair_voided"] == [
        [["stack", "could not be hosted", lost]]]


def test_no_pair_starts_while_the_baseline_is_away_and_recovery_wakes_the_test(
        r: redis.Redis) -> None:
    spec = _make(r, online=False)
    rq_conn = rq_connection(_URLS[0])
    assert _games(r, spec) == []
    assert _plan(r, spec)["waiting"] == sorted([spec.candidate, spec.baseline])
    # Nothing in flight: recovery nudges it (every NUDGE_S on a worker); B still away.
    _online(r, spec.candidate)
    assert f"test:{spec.test_id}" in nudge(r, rq_conn)
    advance(r, rq_conn, EventRef.test(spec.test_id))
    assert _games(r, spec) == [] and _plan(r, spec)["waiting"] == [spec.baseline]
    advance(r, rq_conn, EventRef.test(spec.test_id))
    assert _plan(r, spec)["waits"] == 2
    _online(r, spec.baseline)
    assert f"test:{spec.test_id}" in nudge(r, rq_conn)
    advance(r, rq_conn, EventRef.test(spec.test_id))
    assert len(_games(r, spec)) == 4 and _plan(r, spec)["waiting"] == []
    # Away again mid-test: the pairs in flight finish, none starts, the test waits.
    _online(r, spec.baseline, up=False)
    for k in (1, 2):
        _finish(r, spec, k, "c", 1)
        _finish(r, spec, k, "b", 2)
    assert len(_games(r, spec)) == 4 and _plan(r, spec)["counted"] == 2
    assert _plan(r, spec)["waiting"] == [spec.baseline]
    assert f"test:{spec.test_id}" in nudge(r, rq_conn)
    seen = [e for _, e in events.read_after(r, spec.test_id, 0)]
    assert [e.bot_ids for e in seen if e.TYPE == "waiting_changed"] == [
        sorted([spec.candidate, spec.baseline]), [spec.baseline], [], [spec.baseline]]
