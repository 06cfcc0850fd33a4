"""The plan of a test of a change: paired boards, pairs in flight, counting in board order,
stopping at the verdict or the limit, and bad specs."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest

from ratings.sprt import Sprt, counts_of
from store.errors import InvalidArgument
from store.results import game_quarters
from tournaments import change
from tournaments.change import ChangeSpec, board_games, feed, seating, start, stop
from tournaments.plan import Game, board_id, derive_seed

H1, H2, H3 = "house:greedy", "house:pimc?samples=64", "house:random"


def spec3(**kw: Any) -> ChangeSpec:
    args: dict[str, Any] = {"test_id": "x-1", "players": 3, "candidate": "b-new",
                            "baseline": "b-old", "opponents": (H1, H2), "seed": 99,
                            "elo0": 0.0, "elo1": 40.0, "in_flight": 4} | kw
    return ChangeSpec(**args)


def spec4(**kw: Any) -> ChangeSpec:
    return spec3(**({"players": 4, "opponents": (H3, H1, H2)} | kw))


def judge_of(spec: ChangeSpec) -> Sprt:
    return Sprt(spec.elo0, spec.elo1, spec.alpha, spec.beta, spec.players)


def row(game: Game, placement: list[int]) -> dict[str, Any]:
    return {"match_id": game.match_id, "bot_ids": list(game.bot_ids),
            "players": len(game.bot_ids), "placement": placement}


def result_for(spec: ChangeSpec, game: Game, edge: float, seed: int = 0) -> dict[str, Any]:
    """A result: the hero (C or B) wins with a probability that C's `edge` raises."""
    board = int(game.match_id.rsplit("-", 2)[1][1:]) - 1
    hero, _ = seating(spec, board)
    rng = random.Random(f"{seed}:{game.match_id}")
    is_c = game.match_id.endswith("-c")
    p = 0.5 + (edge if is_c else 0.0)
    if spec.players == 3:
        order = [s for s in range(3) if s != hero]
        rng.shuffle(order)
        order.insert(0 if rng.random() < p / 1.5 else 1 + (rng.random() < 0.5), hero)
        placement = [0, 0, 0]
        for place, seat in enumerate(order, 1):
            placement[seat] = place
        return row(game, placement)
    won = rng.random() < p
    placement = [1 if (s % 2 == hero % 2) == won else 2 for s in range(4)]
    return row(game, placement)


def results_of(spec: ChangeSpec, games: list[Game], edge: float, seed: int = 0
               ) -> dict[str, dict[str, Any]]:
    return {g.match_id: result_for(spec, g, edge, seed) for g in games}


def drive(spec: ChangeSpec, edge: float, seed: int, shuffle: bool,
          max_steps: int = 100_000) -> tuple[list[Game], change.ChangeStep, list[change.Pair]]:
    """Run a whole test: each step feeds some of the finished games (in a random order when
    `shuffle`), the state crossing JSON between steps as the scheduler stores it."""
    rng = random.Random(seed)
    judge = judge_of(spec)
    step = start(spec, judge)
    created = list(step.games)
    waiting = list(step.games)
    counted: list[change.Pair] = []
    for _ in range(max_steps):
        if not waiting:
            break
        if shuffle:
            rng.shuffle(waiting)
        take = waiting[: rng.randint(1, len(waiting))] if shuffle else waiting[:2]
        waiting = waiting[len(take):]
        state = json.loads(json.dumps(step.state))
        step = feed(spec, state, [result_for(spec, g, edge) for g in take], judge)
        created += step.games
        waiting += step.games
        counted += step.counted
        assert step.progress.in_flight <= spec.in_flight
    return created, step, counted


# ------------------------------------------------------------------ boards


@pytest.mark.parametrize("make", [spec3, spec4])
def test_a_board_is_played_by_c_and_by_b_in_the_same_seat_against_the_same_bots(
        make: Any) -> None:
    spec = make()
    seen = Counter()
    for board in range(24):
        c_game, b_game = board_games(spec, board)
        hero, seats = seating(spec, board)
        assert c_game.seed == b_game.seed and c_game.unit == b_game.unit == f"p{board + 1}"
        assert c_game.bot_ids[hero] == spec.candidate and b_game.bot_ids[hero] == spec.baseline
        for s in range(spec.players):
            if s != hero:
                assert c_game.bot_ids[s] == b_game.bot_ids[s] == seats[s]
        assert sorted(b for b in seats if b) == sorted(spec.opponents)
        if spec.players == 4:
            assert seats[(hero + 2) % 4] == spec.opponents[0]  # the partner sits opposite
        seen[seats] += 1
        assert (c_game.match_id, b_game.match_id) == (f"x-1-p{board + 1}-c", f"x-1-p{board + 1}-b")
    # Every seating of C/B and the opponents comes round equally often.
    expected = 6 if spec.players == 3 else 8
    assert len(seen) == expected and set(seen.values()) == {24 // expected}


def test_board_seeds_differ_by_board_and_test_and_the_seam_is_used() -> None:
    spec = spec3()
    seeds = {board_games(spec, b)[0].seed for b in range(50)}
    assert len(seeds) == 50
    assert board_games(spec, 0)[0].seed == derive_seed(99, board_id("x-1", "p1"))
    other = spec3(test_id="x-2")
    assert board_games(other, 0)[0].seed != board_games(spec, 0)[0].seed
    asked: list[str] = []

    def keyed(board: str) -> int:
        asked.append(board)
        return 1234

    step = start(spec, judge_of(spec), seeds=keyed)
    assert {g.seed for g in step.games} == {1234}
    assert asked == [f"x-1/p{k}" for k in range(1, 5)]


# ------------------------------------------------------------------ the state machine


def test_start_fills_the_pairs_in_flight_and_each_result_tops_them_up() -> None:
    spec = spec3(in_flight=3)
    judge = judge_of(spec)
    step = start(spec, judge)
    assert len(step.games) == 6 and step.progress.in_flight == 3
    # One game of a pair: still in flight, nothing new.
    first = step.games[0]
    step2 = feed(spec, step.state, [result_for(spec, first, 0.0)], judge)
    assert step2.games == [] and step2.counted == [] and step2.released == []
    assert step2.progress.games == 1
    # Its partner game: the pair counts and the next board starts.
    step3 = feed(spec, step2.state, [result_for(spec, step.games[1], 0.0)], judge)
    assert [p.board for p in step3.counted] == [0]
    assert step3.released == ["x-1/p1"]
    assert [g.match_id for g in step3.games] == ["x-1-p4-c", "x-1-p4-b"]
    assert step3.progress.pairs == 1 and step3.progress.in_flight == 3
    # The capacity can change from step to step.
    step4 = feed(spec, step3.state, [], judge, in_flight=5)
    assert len(step4.games) == 4 and step4.progress.in_flight == 5


def test_pairs_count_in_board_order_and_never_twice() -> None:
    spec = spec3(in_flight=3)
    judge = judge_of(spec)
    step = start(spec, judge)
    games = {g.match_id: g for g in step.games}
    later = [result_for(spec, games[f"x-1-p2-{r}"], 0.2) for r in "cb"]
    step2 = feed(spec, step.state, later, judge)
    assert step2.counted == [] and step2.released == ["x-1/p2"]  # waits for board 1
    # Board 2 is no longer in flight, so board 4 starts (within the window) before board 2
    # counts.
    assert [g.match_id for g in step2.games] == ["x-1-p4-c", "x-1-p4-b"]
    step3 = feed(spec, step2.state, [result_for(spec, games[f"x-1-p1-{r}"], 0.2) for r in "cb"]
                 + later, judge)
    assert [p.board for p in step3.counted] == [0, 1]
    assert step3.unknown == ["x-1-p2-c", "x-1-p2-b"]  # recorded already: ignored
    assert step3.progress.pairs == 2 and step3.progress.games == 4
    again = feed(spec, step3.state, [*later, {"match_id": "t-other-x1-r1-t1-g1"}], judge)
    assert again.progress.counts == step3.progress.counts and again.counted == []
    assert len(again.unknown) == 3


def test_the_pair_score_reads_the_hero_seat_of_each_game() -> None:
    spec = spec3(in_flight=1)
    judge = judge_of(spec)
    step = start(spec, judge)
    c_game, b_game = step.games
    hero, _ = seating(spec, 0)
    c_places = [2, 2, 2]
    c_places[hero] = 1  # C first, the others share second
    b_places = [1, 1, 1]
    b_places[hero] = 3  # B last behind two sharing first
    done = feed(spec, step.state, [row(c_game, [1 if p == 1 else 2 for p in c_places]),
                                   row(b_game, b_places)], judge)
    (pair,) = done.counted
    assert pair.eighths == 8
    assert pair.llr == pytest.approx(judge.llr(counts_of([8])))
    assert game_quarters(3, b_places, hero) == 0


@pytest.mark.parametrize("make", [spec3, spec4])
def test_a_strong_candidate_stops_the_test_at_the_first_crossing(make: Any) -> None:
    spec = make(in_flight=6)
    created, last, counted = drive(spec, edge=0.35, seed=1, shuffle=True)
    progress = last.progress
    assert progress.finished and progress.outcome == "H1" and progress.verdict == "H1"
    scores = [p.eighths for p in counted]
    assert [p.board for p in counted] == list(range(len(counted)))
    path = judge_of(spec).path(scores)
    first = next(i for i, v in enumerate(path) if v >= judge_of(spec).upper)
    assert progress.verdict_pairs == first + 1
    # Pairs in flight at the crossing finished and counted; none started after it.
    assert len(counted) - progress.verdict_pairs < spec.in_flight * change.WINDOW
    assert len(created) == 2 * len(counted)
    assert progress.counts == counts_of(scores)
    assert progress.games == len(created) and progress.in_flight == 0
    assert [p.llr for p in counted] == pytest.approx(list(path))
    assert progress.elo_low < progress.elo < progress.elo_high


def test_equal_bots_accept_h0() -> None:
    spec = spec3()
    _, last, _ = drive(spec, edge=0.0, seed=2, shuffle=True)
    assert last.progress.outcome == "H0"


@pytest.mark.parametrize("seed", range(4))
def test_the_outcome_does_not_depend_on_the_order_games_finish(seed: int) -> None:
    spec = spec3(in_flight=5, elo1=25.0)
    _, in_order, pairs_in_order = drive(spec, edge=0.08, seed=seed, shuffle=False)
    _, shuffled, pairs_shuffled = drive(spec, edge=0.08, seed=seed, shuffle=True)
    # The same pairs up to the verdict, in the same order, with the same LLR path.
    n = in_order.progress.verdict_pairs
    assert n and shuffled.progress.verdict_pairs == n
    assert shuffled.progress.verdict == in_order.progress.verdict
    assert pairs_shuffled[:n] == pairs_in_order[:n]


def test_the_game_limit_ends_a_test_without_a_verdict() -> None:
    spec = spec3(max_games=10, in_flight=2)
    created, last, counted = drive(spec, edge=0.05, seed=3, shuffle=True)
    assert len(created) == 10 and len(counted) == 5
    assert last.progress.finished and last.progress.outcome == "limit"
    assert last.progress.verdict == "pending"


def test_a_fixed_games_test_plays_its_games_and_estimates() -> None:
    spec = spec4(fixed_games=40, in_flight=3)
    created, last, counted = drive(spec, edge=0.2, seed=4, shuffle=True)
    assert len(created) == 40 and len(counted) == 20
    p = last.progress
    assert p.finished and p.outcome == "done" and p.llr == 0.0 and p.verdict == "pending"
    est = judge_of(spec).estimate(p.counts)
    assert (p.elo, p.elo_low, p.elo_high) == (est.elo, est.low, est.high)


def test_stop_starts_nothing_new_and_lets_pairs_in_flight_finish() -> None:
    spec = spec3(in_flight=3)
    judge = judge_of(spec)
    step = start(spec, judge)
    stopped = stop(spec, step.state, judge)
    assert stopped.games == [] and not stopped.progress.finished
    rows = [result_for(spec, g, 0.0) for g in step.games]
    done = feed(spec, stopped.state, rows, judge)
    assert done.games == [] and len(done.counted) == 3
    assert done.progress.finished and done.progress.outcome == "stopped"


def test_feed_leaves_the_given_state_alone_and_a_bad_row_changes_nothing() -> None:
    spec = spec3()
    judge = judge_of(spec)
    step = start(spec, judge)
    before = json.dumps(step.state, sort_keys=True)
    good = result_for(spec, step.games[0], 0.0)
    feed(spec, step.state, [good], judge)
    assert json.dumps(step.state, sort_keys=True) == before
    wrong_seats = dict(good, bot_ids=list(reversed(good["bot_ids"])))
    with pytest.raises(InvalidArgument, match="planned"):
        feed(spec, step.state, [wrong_seats], judge)
    with pytest.raises(InvalidArgument, match="competition ranking"):
        feed(spec, step.state, [dict(good, placement=[1, 3, 3])], judge)
    with pytest.raises(InvalidArgument, match="needs bot_ids and placement"):
        feed(spec, step.state, [{"match_id": good["match_id"]}], judge)
    assert json.dumps(step.state, sort_keys=True) == before


def test_plan_folds_a_whole_result_set() -> None:
    spec = spec3(fixed_games=12, in_flight=2)
    judge = judge_of(spec)
    everything = [g for b in range(6) for g in board_games(spec, b)]
    games, last = change.plan(spec, results_of(spec, everything, 0.1), judge)
    assert [g.match_id for g in games] == [g.match_id for g in everything]
    assert last.progress.outcome == "done" and last.progress.pairs == 6


def test_spec_json_round_trip() -> None:
    spec = spec4(trust_opponents=True, opponents=("b-friend", H1, H1), fixed_games=8)
    assert ChangeSpec.from_json(spec.to_json()) == spec


# ------------------------------------------------------------------ bad specs


@pytest.mark.parametrize(("kw", "message"), [
    ({"elo0": 5.0, "elo1": 5.0}, "elo0 must be below elo1"),
    ({"elo0": 10.0, "elo1": -10.0}, "elo0 must be below elo1"),
    ({"elo1": float("nan")}, "elo1 must be a finite number"),
    ({"alpha": 0.0}, r"alpha must be in \(0, 0.5\)"),
    ({"alpha": 0.5}, r"alpha must be in \(0, 0.5\)"),
    ({"beta": 1.2}, r"beta must be in \(0, 0.5\)"),
    ({"baseline": "b-new"}, "candidate and baseline are the same bot"),
    ({"candidate": ""}, "candidate must be a bot id"),
    ({"opponents": (H1,)}, "needs two opponents"),
    ({"opponents": (H1, "b-stranger")}, "b-stranger is not a house bot"),
    ({"opponents": (H1, "b-new"), "trust_opponents": True}, "C and B may see a board only once"),
    ({"opponents": ("b-x", "b-x"), "trust_opponents": True}, "may not play against itself"),
    ({"players": 5}, "players must be 3 or 4"),
    ({"max_games": 11}, "max_games must be even"),
    ({"max_games": 0}, "max_games must be a whole number"),
    ({"fixed_games": 7}, "fixed_games must be even"),
    ({"in_flight": 0}, "in_flight must be a whole number"),
    ({"seed": -1}, "seed must be a whole number"),
    ({"test_id": ""}, "test_id must be a non-empty string"),
])
def test_bad_specs_are_one_clear_error_each(kw: Mapping[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        spec3(**kw)


def test_2v2_opponents() -> None:
    with pytest.raises(InvalidArgument, match="a partner and two opponents"):
        spec3(players=4, opponents=(H1, H2))
    with pytest.raises(InvalidArgument, match="cannot partner C/B and play on the other team"):
        spec3(players=4, opponents=("b-x", "b-x", H1), trust_opponents=True)
    # A house bot may hold every other seat, and a trusted remote team both its seats.
    assert spec3(players=4, opponents=(H1, H1, H1)).pool == "2v2"
    assert spec3(players=4, opponents=(H1, "b-y", "b-y"), trust_opponents=True).players == 4
    # The candidate may be a house bot that also sits among the opponents.
    assert spec3(candidate=H1, opponents=(H1, H1)).candidate == H1


def test_a_redone_step_opens_the_lost_runs_boards_before_folding_their_results() -> None:
    """A step counts board 1 and starts board 4, creates its games and dies before saving;
    board 4's games finish, and the redo gets board 1's and board 4's results in one batch.
    Told that four boards exist, it opens board 4 first, so its results count (without
    `created` they are dropped and the test waits for them forever); and it does so even
    when the batch brings the verdict (those games are in flight, they must count)."""
    spec = spec3(in_flight=3)
    judge = judge_of(spec)
    step = start(spec, judge)
    games = {g.match_id: g for g in step.games}
    games |= {g.match_id: g for g in board_games(spec, 3)}
    batch = [result_for(spec, games[f"x-1-p{k}-{r}"], 0.0) for k in (1, 4) for r in "cb"]
    lost = feed(spec, step.state, batch, judge)  # what a redo without `created` does
    assert lost.unknown == ["x-1-p4-c", "x-1-p4-b"] and lost.progress.games == 2
    redo = feed(spec, step.state, batch, judge, created=4)
    assert redo.unknown == [] and redo.progress.games == 4
    assert [g.match_id for g in redo.games][:2] == ["x-1-p4-c", "x-1-p4-b"]
    assert redo.released == ["x-1/p1", "x-1/p4"] and [p.board for p in redo.counted] == [0]
    # Boards 2 and 3 count, then board 4 at once: all four in order.
    rest = [result_for(spec, games[f"x-1-p{k}-{r}"], 0.0) for k in (2, 3) for r in "cb"]
    after = feed(spec, redo.state, rest, judge)
    assert [p.board for p in after.counted] == [1, 2, 3] and after.progress.pairs == 4
    # Stopped (or past the verdict) before the redo: the lost run's boards still open.
    stopped = stop(spec, step.state, judge).state
    late = feed(spec, stopped, batch, judge, created=4)
    assert late.unknown == [] and [g.match_id for g in late.games] == ["x-1-p4-c", "x-1-p4-b"]
    assert late.progress.in_flight == 2 and not late.progress.finished
    # A first step redone: its lost run's boards open whatever the capacity now.
    first = start(spec, judge, in_flight=1, created=3)
    assert len(first.games) == 6 and first.progress.in_flight == 3
