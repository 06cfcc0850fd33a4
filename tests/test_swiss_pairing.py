"""3p Swiss pairing: tables, byes, repeats, seat positions and score groups, on fields of
3 to 100 bots; the breaches checked against an exact optimum counted independently."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from swiss_sim import optimum, play3, table_breaches, total

from store.errors import InvalidArgument
from tournaments.swiss_pairing import Round3, history3, pair_tables
from tournaments.swiss_rules import Mode, default_rounds, max_rounds, unseatable


def _check_round(n: int, rnd: Round3, hist: list[Round3], points: list[float]) -> None:
    """Every bot once; n mod 3 byes to the fewest byes, then the lowest score."""
    seen = [b for t in rnd.tables for b in t] + list(rnd.byes)
    assert sorted(seen) == list(range(n))
    assert len(rnd.byes) == n % 3
    byes = history3(n, hist).byes
    for b in rnd.byes:
        others = [x for x in range(n) if x not in rnd.byes]
        assert all((byes[b], points[b]) <= (byes[x], points[x]) for x in others)


@pytest.mark.parametrize("n", range(3, 31))
def test_breaches_are_the_fewest_any_pairing_allows(n: int) -> None:
    """Repeats while avoidable, seat positions within 1 while that costs no repeat, never
    beyond 2: every round's counts equal an exact solver's optimum."""
    rounds = max(default_rounds(Mode.TABLES, n), min(max_rounds(Mode.TABLES, n), 6))
    for step in play3(n, rounds, seed=n):
        rnd = step.round
        assert isinstance(rnd, Round3)
        _check_round(n, rnd, step.before, step.points)
        h = history3(n, step.before)
        ours = total([table_breaches(t, h.met, h.seats) for t in rnd.tables])
        best = optimum(sorted(b for t in rnd.tables for b in t), 3,
                       lambda t, h=h: table_breaches(t, h.met, h.seats))
        assert ours == best, (len(step.before) + 1, ours, best)


@pytest.mark.parametrize("n", [31, 37, 45, 50, 64, 73, 81, 99, 100])
def test_large_fields_meet_no_one_twice_and_keep_seats_within_what_byes_allow(n: int) -> None:
    for step in play3(n, default_rounds(Mode.TABLES, n), seed=n):
        rnd = step.round
        assert isinstance(rnd, Round3)
        _check_round(n, rnd, step.before, step.points)
        h = history3(n, step.before)
        beyond, repeats, two = total([table_breaches(t, h.met, h.seats) for t in rnd.tables])
        assert (beyond, repeats) == (0, 0)
        # bots free at only some positions: those the positions cannot all take (Hall)
        free = [sum(1 << p for p in range(3) if h.seats[b][p] == min(h.seats[b]))
                for t in rnd.tables for b in t]
        if all(h.seats[b].max() - h.seats[b].min() <= 1 for t in rnd.tables for b in t):
            assert two == unseatable(free, 3)


def test_the_field_decides_when_repeats_start() -> None:
    # Six bots have no new table-mates after one round; nine have a resolution of four.
    six = list(play3(6, 2, seed=1))
    assert total([table_breaches(t, history3(6, six[1].before).met,
                                 history3(6, six[1].before).seats)
                  for t in six[1].round.tables])[1] > 0  # type: ignore[attr-defined]
    nine = list(play3(9, 3, seed=1))
    for step in nine:
        h = history3(9, step.before)
        assert all(h.met[a, b] == 0 for t in step.round.tables  # type: ignore[attr-defined]
                   for a, b in itertools.combinations(t, 2))


@pytest.mark.parametrize("n", [4, 5, 7, 8, 10, 11, 20, 100])
def test_byes_rotate_fairly(n: int) -> None:
    counts: Counter[int] = Counter()
    for step in play3(n, min(max_rounds(Mode.TABLES, n), 8) + 3, seed=3):
        rnd = step.round
        assert isinstance(rnd, Round3)
        counts.update(rnd.byes)
        got = [counts[b] for b in range(n)]
        assert max(got) - min(got) <= 1


def _mean_gap(tables: list[tuple[int, ...]], points: list[float]) -> float:
    gaps = [abs(points[a] - points[b]) for t in tables for a, b in itertools.combinations(t, 2)]
    return sum(gaps) / len(gaps)


@pytest.mark.parametrize(("low", "high", "bound"), [(9, 20, 0.95), (24, 36, 0.7), (48, 100, 0.4)])
def test_score_groups_against_a_random_pairing(low: int, high: int, bound: float) -> None:
    """The mean score gap at a table, rounds 2 on, over the same gap of a random split of
    the same bots; lower is better (small fields spend their freedom on avoiding repeats)."""
    rng = random.Random(5)
    ours = rand = 0.0
    for n in range(low, high + 1, 3):
        for step in list(play3(n, default_rounds(Mode.TABLES, n), seed=n))[1:]:
            tables = list(step.round.tables)  # type: ignore[attr-defined]
            bots = [b for t in tables for b in t]
            rng.shuffle(bots)
            ours += _mean_gap(tables, step.points)
            rand += _mean_gap([tuple(bots[i:i + 3]) for i in range(0, len(bots), 3)],
                              step.points)
    assert ours < bound * rand


def test_round_one_folds_the_seeds() -> None:
    rnd = pair_tables([0.0] * 12, [], seed=0)
    assert sorted(tuple(sorted(t)) for t in rnd.tables) == [
        (0, 4, 8), (1, 5, 9), (2, 6, 10), (3, 7, 11)]


def test_equal_scores_meet_first() -> None:
    # 0..5 on 2 points, 6..11 on 0: two score groups of six, so no table mixes them
    rnd = pair_tables([2.0] * 6 + [0.0] * 6, [], seed=0)
    for t in rnd.tables:
        assert len({b < 6 for b in t}) == 1


def test_a_seat_position_already_held_twice_is_avoided() -> None:
    # bots 0..2 sat at positions 0, 1, 2 in round one and 1, 2, 0 in round two
    hist = [Round3(((0, 1, 2),)), Round3(((2, 0, 1),))]
    rnd = pair_tables([1.0, 0.5, 0.0], hist, seed=0)
    assert rnd.tables == ((1, 2, 0),)


def test_same_inputs_same_round() -> None:
    steps = list(play3(40, 4, seed=9))
    last = steps[-1]
    again = pair_tables(last.points, last.before, seed=3)
    assert again == last.round


@given(n=st.integers(3, 45), rounds=st.integers(1, 5), seed=st.integers(0, 10**6))
@settings(max_examples=40, deadline=None)
def test_any_field_pairs_every_bot_once_and_seats_within_two(n: int, rounds: int,
                                                              seed: int) -> None:
    steps = list(play3(n, rounds, seed))
    for step in steps:
        assert isinstance(step.round, Round3)
        _check_round(n, step.round, step.before, step.points)
    h = history3(n, [s.round for s in steps])  # type: ignore[misc]
    assert int((h.seats.max(axis=1) - h.seats.min(axis=1)).max()) <= 2


def test_bad_input_is_an_invalid_argument() -> None:
    with pytest.raises(InvalidArgument, match="at least 3"):
        pair_tables([0.0, 0.0], [], seed=0)
    with pytest.raises(InvalidArgument, match="multiple of 1/4"):
        pair_tables([0.1, 0.0, 0.0], [], seed=0)
    with pytest.raises(InvalidArgument, match="round 1"):
        pair_tables([0.0] * 4, [Round3(((0, 1, 1),))], seed=0)
    with pytest.raises(InvalidArgument, match="round 1"):
        pair_tables([0.0] * 4, [Round3(((0, 1, 2),), (2,))], seed=0)
    with pytest.raises(InvalidArgument, match="round 1"):
        pair_tables([0.0] * 4, [Round3(((0, 1, 7),))], seed=0)
    assert np.array_equal(history3(3, []).met, np.zeros((3, 3)))
