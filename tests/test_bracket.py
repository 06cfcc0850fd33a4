"""Elimination brackets: shapes, byes, resolution as results arrive, grand-final reset, series."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence

import pytest

from store.errors import InvalidArgument
from tournaments.bracket import (
    BYE,
    Bracket,
    BracketState,
    FromMatch,
    FromSeed,
    Kind,
    Status,
    _placement,
    build,
    render,
    resolve,
    seed_order,
    series_state,
)

Picker = Callable[[Sequence[str]], list[str]]


def bots(n: int) -> list[str]:
    return [f"b{i}" for i in range(1, n + 1)]


def by_seed(field: Sequence[str]) -> Picker:
    seed = {p: i for i, p in enumerate(field)}
    return lambda players: sorted(players, key=seed.__getitem__)


def at_random(seed: int) -> Picker:
    rng = random.Random(seed)
    return lambda players: rng.sample(list(players), len(players))


def play(bracket: Bracket, pick: Picker) -> tuple[BracketState, dict[str, list[str]]]:
    """Play every ready match, round after round, until a champion is known."""
    outcomes: dict[str, list[str]] = {}
    state = resolve(bracket, outcomes)
    while not state.finished:
        ready = state.ready()
        assert ready, "no champion and nothing to play"
        busy = [p for m in ready for p in m.participants]
        assert len(busy) == len(set(busy)), "a participant is in two ready matches"
        for m in ready:
            outcomes[m.match.id] = pick(m.participants)
        state = resolve(bracket, outcomes)
    return state, outcomes


def test_standard_placement() -> None:
    assert _placement(2) == [1, 2]
    assert _placement(4) == [1, 4, 2, 3]
    assert _placement(8) == [1, 8, 4, 5, 2, 7, 3, 6]
    order = _placement(16)
    assert order[0] == 1 and order[1] == 16 and 2 in order[8:]
    # Every first-round pairing sums to size + 1: 1 v 16, 2 v 15, ...
    assert {order[i] + order[i + 1] for i in range(0, 16, 2)} == {17}


def test_single_elimination_of_five_gives_the_top_three_seeds_byes() -> None:
    b = build("single", bots(5))
    first = [m for m in b.matches if m.round == 1]
    assert [m.id for m in first] == ["W1-1", "W1-2", "W1-3", "W1-4"]
    state = resolve(b, {})
    byes = {m.match.id: m.winner for m in state.matches if m.status is Status.BYE}
    assert byes == {"W1-1": "b1", "W1-3": "b2", "W1-4": "b3"}
    assert [m.match.id for m in state.ready()] == ["W1-2", "W2-2"]
    assert state.match("W1-2").slots == ("b4", "b5")
    assert state.match("W2-1").status is Status.PENDING
    assert state.match("W2-1").slots == ("b1", None)
    assert state.match("W2-2").status is Status.READY  # b2 and b3 both came through byes
    assert b.destinations("W1-2") == ((1, "W2-1", 1),)


@pytest.mark.parametrize("n", range(2, 34))
def test_single_elimination_plays_n_minus_one_matches_and_top_seed_wins(n: int) -> None:
    field = bots(n)
    state, outcomes = play(build(Kind.SINGLE, field), by_seed(field))
    assert state.champion == "b1"
    assert len(outcomes) == n - 1
    state, outcomes = play(build(Kind.SINGLE, field), at_random(n))
    assert len(outcomes) == n - 1 and state.champion in field


@pytest.mark.parametrize("n", range(2, 34))
def test_double_elimination_eliminates_on_the_second_loss(n: int) -> None:
    field = bots(n)
    for pick in (by_seed(field), at_random(n), at_random(100 + n)):
        state, outcomes = play(build(Kind.DOUBLE, field), pick)
        losses = Counter(r[1] for r in outcomes.values())
        champ = state.champion
        assert champ is not None
        assert losses[champ] <= 1
        assert all(losses[p] == 2 for p in field if p != champ)
        reset = "GF2" in outcomes
        assert len(outcomes) == 2 * n - 2 + reset


def test_grand_final_reset_only_when_the_losers_bracket_champion_wins() -> None:
    field = bots(4)
    b = build("double", field)
    outcomes = {"W1-1": "b1", "W1-2": "b2", "W2-1": "b1", "L1-1": "b4", "L2-1": "b2"}
    state = resolve(b, outcomes)
    assert state.match("GF").slots == ("b1", "b2")
    assert state.match("GF2").status is Status.PENDING
    won = resolve(b, {**outcomes, "GF": "b1"})
    assert won.match("GF2").status is Status.SKIPPED and won.champion == "b1"
    upset = resolve(b, {**outcomes, "GF": "b2"})
    assert upset.champion is None
    assert upset.match("GF2").status is Status.READY
    assert upset.match("GF2").slots == ("b1", "b2")
    final = resolve(b, {**outcomes, "GF": "b2", "GF2": "b1"})
    assert final.champion == "b1"
    with pytest.raises(InvalidArgument, match="GF2"):
        resolve(b, {**outcomes, "GF": "b1", "GF2": "b2"})


def test_double_elimination_drops_losers_into_the_losers_bracket() -> None:
    b = build("double", bots(8))
    assert b.destinations("W1-1") == ((1, "W2-1", 0), (2, "L1-1", 0))
    assert b.match("L2-1").sources == (FromMatch("L1-1", 1), FromMatch("W2-2", 2))
    assert b.match("L4-1").sources == (FromMatch("L3-1", 1), FromMatch("W3-1", 2))
    assert b.match("GF").sources == (FromMatch("W3-1", 1), FromMatch("L4-1", 1))
    ids = [m.id for m in b.matches]
    assert len(ids) == len(set(ids)) == 7 + 6 + 2


def test_double_elimination_with_byes_skips_empty_losers_matches() -> None:
    state = resolve(build("double", bots(5)), {})
    assert state.match("L1-2").status is Status.SKIPPED
    assert state.match("L1-2").slots == (BYE, BYE)
    assert state.match("L1-1").status is Status.PENDING  # waits for the loser of W1-2


@pytest.mark.parametrize("n", range(3, 41))
def test_table_elimination_plays_only_full_tables(n: int) -> None:
    field = bots(n)
    b = build(Kind.TABLES, field)
    assert all(len(m.sources) == 3 for m in b.matches)
    assert sum(m.advance == 2 for m in b.matches) == (1 if n % 2 == 0 else 0)
    for pick in (by_seed(field), at_random(n)):
        state, _ = play(b, pick)
        assert all(m.status is Status.DONE for m in state.matches)
        assert all(len(set(m.participants)) == 3 for m in state.matches)
        assert state.champion in field
        # Every table removes two bots, or one when it advances two.
        removed = sum(3 - m.match.advance for m in state.matches)
        assert removed == n - 1
        per_round = Counter((m.match.round, p) for m in state.matches for p in m.participants)
        assert max(per_round.values()) == 1
    state, _ = play(b, by_seed(field))
    assert state.champion == "b1"


def test_table_byes_go_to_the_top_seeds() -> None:
    b = build("tables", bots(7))
    first = [m for m in b.matches if m.round == 1]
    seeds = sorted(s.seed for m in first for s in m.sources if isinstance(s, FromSeed))
    assert seeds == [2, 3, 4, 5, 6, 7]  # seed 1 waits in the final
    assert len(first) == 2
    final = b.matches[-1]
    assert FromSeed(1) in final.sources


def test_a_table_that_advances_two_needs_its_top_two() -> None:
    b = build("tables", bots(4))
    assert [(m.id, m.advance) for m in b.matches] == [("T1-1", 2), ("T2-1", 1)]
    with pytest.raises(InvalidArgument, match="top 2"):
        resolve(b, {"T1-1": "b2"})
    state = resolve(b, {"T1-1": ["b3", "b2"]})
    assert set(state.match("T2-1").participants) == {"b1", "b2", "b3"}


def test_bad_outcomes_are_invalid_arguments() -> None:
    b = build("single", bots(4))
    with pytest.raises(InvalidArgument, match="unknown match"):
        resolve(b, {"W9-9": "b1"})
    with pytest.raises(InvalidArgument, match="pending"):
        resolve(b, {"W2-1": "b1"})
    with pytest.raises(InvalidArgument, match="participants"):
        resolve(b, {"W1-1": "b2"})
    with pytest.raises(InvalidArgument, match="bye"):
        resolve(build("single", bots(3)), {"W1-1": "b1"})


def test_build_validates_its_input() -> None:
    with pytest.raises(InvalidArgument, match="format"):
        build("swiss", bots(4))
    with pytest.raises(InvalidArgument, match="at least 2"):
        build("single", bots(1))
    with pytest.raises(InvalidArgument, match="at least 3"):
        build("tables", bots(2))
    with pytest.raises(InvalidArgument, match="twice"):
        build("double", ["a", "b", "a"])


def test_shape_is_fixed_before_play() -> None:
    assert build("double", bots(11)) == build("double", bots(11))
    state = resolve(build("double", bots(6)), {})
    text = render(state)
    assert "W1-1" in text and "L1-1" in text and "GF2" in text
    assert "b1 (1) vs bye" in text
    assert text.endswith("Champion: to be decided")


def test_render_shows_results_and_the_champion() -> None:
    field = bots(4)
    state, _ = play(build("tables", field), by_seed(field))
    text = render(state)
    assert "-> b2, b3 (top two advance)" in text and text.endswith("Champion: b1")


def test_series_best_of_three() -> None:
    s = series_state("a", "b", [], 3)
    assert s.winner is None and not s.decided and s.wins == (0, 0)
    assert series_state("a", "b", ["a"], 3).winner is None
    assert series_state("a", "b", ["a", "a"], 3).winner == "a"
    done = series_state("a", "b", ["a", "b", "b"], 3)
    assert done.winner == "b" and done.wins == (1, 2) and done.pairs_played == 3
    assert series_state("a", "b", ["b"], 1).winner == "b"


def test_series_rejects_bad_input() -> None:
    with pytest.raises(InvalidArgument, match="odd"):
        series_state("a", "b", [], 2)
    with pytest.raises(InvalidArgument, match="after it was decided"):
        series_state("a", "b", ["a", "a", "b"], 3)
    with pytest.raises(InvalidArgument, match="not a player"):
        series_state("a", "b", ["c"], 3)


def test_seed_order_by_rating_keeps_the_given_order_on_ties() -> None:
    ids = ["a", "b", "c", "d"]
    assert seed_order(ids) == ("a", "b", "c", "d")
    assert seed_order(ids, {"c": 1600, "b": 1400, "d": 1600}) == ("c", "d", "a", "b")
