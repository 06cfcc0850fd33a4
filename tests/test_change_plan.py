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


# ------------------------------------------------------------------ void pairs


def forfeit(spec: ChangeSpec, game: Game, who: str, reason: str) -> dict[str, Any]:
    """A result where `who` ("hero", or "opponent": the first other seat) forfeits."""
    board = int(game.match_id.rsplit("-", 2)[1][1:]) - 1
    hero, _ = seating(spec, board)
    seat = hero if who == "hero" else (hero + 1) % spec.players
    places = [1] * spec.players
    if spec.players == 3:
        places = [2 if s != seat else 3 for s in range(3)]
        places[(seat + 1) % 3] = 1
    else:
        places = [2 if s % 2 == seat % 2 else 1 for s in range(4)]
    return {**row(game, places), "forfeit": {"seat": seat, "reason": reason},
            "end": "forfeit"}


def lost(game: Game) -> dict[str, Any]:
    """The row of a game the stack could not host (`store.changes.record_lost`)."""
    return {**row(game, []), "lost": "its job failed after every retry", "end": "lost"}


def settle(spec: ChangeSpec, step: change.ChangeStep, judge: Sprt,
           make: Any) -> change.ChangeStep:
    """Feed both games of every board in flight, `make(game)` giving each game's row (None:
    a normal result)."""
    rows = []
    for key in sorted(step.state["open"], key=int):
        for g in board_games(spec, int(key)):
            got = make(g)
            rows.append(got if got is not None else result_for(spec, g, 0.1))
    return feed(spec, json.loads(json.dumps(step.state)), rows, judge)


def test_a_forfeit_by_anyone_or_a_lost_game_voids_its_pair_and_counts_nowhere() -> None:
    spec = spec3(in_flight=4, void_streak=0, void_share=1.0)
    judge = judge_of(spec)
    step = start(spec, judge)
    why = {1: ("b", "hero", "disconnected for more than 1 s"),
           2: ("c", "hero", "3 strikes (late or illegal answers)"),
           3: ("b", "opponent", "disconnected for more than 1 s")}

    def make(g: Game) -> dict[str, Any] | None:
        board = int(g.match_id.rsplit("-", 2)[1][1:]) - 1
        if board == 0 and g.match_id.endswith("-c"):
            return lost(g)
        if board in why and g.match_id.endswith(f"-{why[board][0]}"):
            return forfeit(spec, g, why[board][1], why[board][2])
        return None

    done = settle(spec, step, judge, make)
    assert [p.board for p in done.counted] == [0, 1, 2, 3]  # settled in board order
    assert all(not p.counted and p.eighths is None for p in done.counted)
    assert [p.voids for p in done.counted] == [
        (("stack", change.LOST, "x-1-p1-c"),),
        (("baseline", "disconnected for more than 1 s", "x-1-p2-b"),),
        (("candidate", "3 strikes (late or illegal answers)", "x-1-p3-c"),),
        (("opponent", "disconnected for more than 1 s", "x-1-p4-b"),)]
    p = done.progress
    assert p.pairs == 0 and p.void == 4 and p.settled == 4 and sum(p.counts) == 0
    assert p.llr == 0.0 and p.verdict == "pending" and p.games == 8
    assert p.voids == (("candidate", "3 strikes (late or illegal answers)", 1),
                       ("baseline", "disconnected for more than 1 s", 1),
                       ("opponent", "disconnected for more than 1 s", 1),
                       ("stack", change.LOST, 1))
    assert sorted(done.released) == [f"x-1/p{k}" for k in range(1, 5)]  # every board freed
    assert len(done.games) == 8  # the next four pairs start
    # A void result given again (a step redone) counts nothing twice.
    again = feed(spec, done.state, [lost(board_games(spec, 0)[0])], judge)
    assert again.unknown == ["x-1-p1-c"] and again.progress.void == 4


def test_void_pairs_leave_the_counted_pairs_and_the_llr_as_they_were() -> None:
    spec = spec3(in_flight=3, void_streak=0, void_share=1.0)
    judge = judge_of(spec)
    plain = settle(spec, start(spec, judge), judge, lambda g: None)
    step = start(spec, judge)
    voided = settle(spec, step, judge, lambda g: forfeit(spec, g, "hero", "x")
                    if g.match_id == "x-1-p2-b" else None)
    assert voided.progress.pairs == 2 and voided.progress.void == 1
    kept = [p for p in plain.counted if p.board != 1]
    assert [(p.board, p.eighths) for p in voided.counted if p.counted] == \
        [(p.board, p.eighths) for p in kept]
    assert voided.progress.counts == counts_of([p.eighths for p in kept if p.eighths is not None])
    assert voided.progress.llr == pytest.approx(judge.llr(voided.progress.counts))


def test_three_void_pairs_in_a_row_by_one_side_stop_the_test_with_its_own_verdict() -> None:
    spec = spec3(in_flight=4)
    judge = judge_of(spec)
    step = settle(spec, start(spec, judge), judge, lambda g: None)  # four counted pairs
    assert step.progress.pairs == 4
    # The baseline forfeits boards 5, 6, 7 (the candidate's game of board 6 too: it counts
    # for both sides); board 8 counts.
    bad = {"x-1-p5-b", "x-1-p6-b", "x-1-p7-b", "x-1-p6-c"}
    done = settle(spec, step, judge, lambda g: forfeit(
        spec, g, "hero", "disconnected for more than 1 s") if g.match_id in bad else None)
    p = done.progress
    assert p.verdict == change.FORFEITS and p.verdict_pairs == 4 and p.halt_side == "baseline"
    assert p.halt == "the baseline forfeited 3 pairs in a row: disconnected for more than 1 s"
    assert p.void == 3 and p.pairs == 5  # board 8 finished after the stop: shown, counted
    assert done.games == [] and p.finished and p.outcome == change.FORFEITS
    assert p.voids == (("candidate", "disconnected for more than 1 s", 1),
                       ("baseline", "disconnected for more than 1 s", 3))


def test_more_than_the_share_of_void_pairs_stops_once_enough_pairs_settled() -> None:
    spec = spec3(in_flight=1, void_streak=0, fixed_games=60)  # no H0 or H1 in the way
    judge = judge_of(spec)
    step = start(spec, judge)
    for board in range(30):
        step = settle(spec, step, judge, lambda g, b=board: lost(g)
                      if b in (4, 11) and g.match_id.endswith("-c") else None)
        if step.progress.verdict != "pending":
            break
    # 2 of 19 settled is over 5%, but the share counts from 20 pairs on: the 20th stops it.
    p = step.progress
    assert p.settled == 20 and p.verdict == change.FORFEITS and p.pairs == 18
    assert p.halt == f"the stack lost 2 of 20 pairs: a game {change.LOST}"
    assert p.finished and step.games == []
    # One void pair in 20 (5%) is not more than 5%.
    spec2 = spec3(in_flight=1, void_streak=0, fixed_games=60)
    step = start(spec2, judge)
    for board in range(30):
        step = settle(spec2, step, judge, lambda g, b=board: lost(g)
                      if b == 4 and g.match_id.endswith("-c") else None)
    assert step.progress.verdict == "pending" and step.progress.settled == 30


def test_a_verdict_reached_first_stays_and_thresholds_can_be_switched_off() -> None:
    spec = spec3(in_flight=2, elo0=0.0, elo1=40.0)
    judge = judge_of(spec)
    _, last, _ = drive(spec, edge=0.35, seed=1, shuffle=False)
    assert last.progress.verdict == "H1"
    assert last.progress.verdict_llr >= judge.upper
    state = json.loads(json.dumps(last.state))
    state["open"] = {"99": [-1, -1], "100": [-1, -1], "101": [-1, -1]}  # as if in flight
    state["settled"] = state["next"] = 99
    rows = [forfeit(spec, g, "hero", "gone") for b in (99, 100, 101)
            for g in board_games(spec, b)]
    after = feed(spec, state, rows, judge)
    assert after.progress.verdict == "H1" and after.progress.void == 3 and not after.games
    never = spec3(void_streak=0, void_share=1.0)
    assert "for no number of void pairs" in change.notes(never)[-1]
    assert "after 3 void pairs in a row by one side or once one side voided more than 5% " \
        "of the pairs, from 20 pairs on" in change.notes(spec3())[-1]


def test_no_pair_starts_while_a_bot_is_away_and_the_state_says_whom_it_waits_for() -> None:
    spec = spec3(in_flight=2)
    judge = judge_of(spec)
    step = start(spec, judge, offline=["b-old"])
    assert step.games == [] and step.progress.waiting == ("b-old",)
    assert step.state["waits"] == 1
    same = feed(spec, step.state, [], judge, offline=["b-old"])
    assert same.games == [] and same.state == step.state  # nothing changed: nothing to save
    back = feed(spec, same.state, [], judge)
    assert len(back.games) == 4 and back.progress.waiting == () and back.state["waits"] == 2
    # Away with pairs in flight: they finish and settle; no new one starts.
    away = feed(spec, back.state, [result_for(spec, g, 0.0) for g in back.games[:2]], judge,
                offline=["b-new", "b-old"])
    assert away.progress.pairs == 1 and away.games == []
    assert away.progress.waiting == ("b-new", "b-old")
    # A test that starts nothing any more waits for nobody.
    stopped = stop(spec, away.state, judge)
    assert stopped.progress.waiting == ()


def test_a_state_stored_before_void_pairs_reads_and_steps() -> None:
    spec = spec3(in_flight=2)
    judge = judge_of(spec)
    step = settle(spec, start(spec, judge), judge, lambda g: None)
    old = {k: v for k, v in step.state.items() if k in (
        "next", "counted", "open", "counts", "games", "llr", "verdict", "verdict_pairs",
        "stopped")}
    assert change.progress(spec, old, judge).pairs == 2
    again = settle(spec, feed(spec, old, [], judge), judge, lambda g: None)
    assert again.progress.pairs == 4 and [p.board for p in again.counted] == [2, 3]


def test_void_thresholds_are_checked() -> None:
    with pytest.raises(InvalidArgument, match="void_share must be in"):
        spec3(void_share=0.0)
    with pytest.raises(InvalidArgument, match="void_after"):
        spec3(void_after=0)
    with pytest.raises(InvalidArgument, match="void_streak"):
        spec3(void_streak=-1)
    assert ChangeSpec.from_json(spec3(void_streak=5, void_share=0.1).to_json()) == \
        spec3(void_streak=5, void_share=0.1)
    old = json.loads(spec3().to_json())
    for k in ("void_streak", "void_share", "void_after"):
        del old[k]
    assert ChangeSpec.from_json(json.dumps(old)) == spec3()


@pytest.mark.parametrize("make", [spec3, spec4])
def test_roles_name_every_seat_as_seating_places_it(make: Any) -> None:
    spec = make(opponents=("house:a", "house:b") if make is spec3 else
                ("house:a", "house:b", "house:c"))
    names = dict(zip(("opponent 1", "opponent 2") if make is spec3 else
                     ("partner", "opponent 1", "opponent 2"), spec.opponents, strict=True))
    for board in range(12):
        hero, seats = seating(spec, board)
        got = change.roles(spec, board)
        assert got[hero] == "hero"
        assert all(names[got[s]] == seats[s] for s in range(spec.players) if s != hero)
