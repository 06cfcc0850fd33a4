"""The numbers a Swiss is played by: points, rounds, seat penalties, and the Hall bound."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.errors import InvalidArgument
from store.records import MAX_ROUNDS
from tournaments.grouping import fold, pick_byes
from tournaments.swiss_rules import (
    SPREAD2,
    SPREAD3,
    Mode,
    default_rounds,
    free_masks,
    max_rounds,
    place_points,
    quarters,
    seat_penalty,
    seatable,
    team_points,
    unseatable,
)


@pytest.mark.parametrize(("placement", "points"), [
    ((1, 2, 3), (1.0, 0.5, 0.0)),
    ((3, 1, 2), (0.0, 1.0, 0.5)),
    ((1, 1, 3), (0.75, 0.75, 0.0)),
    ((1, 2, 2), (1.0, 0.25, 0.25)),
    ((2, 2, 1), (0.25, 0.25, 1.0)),
    ((1, 1, 1), (0.5, 0.5, 0.5)),
])
def test_places_give_points_and_ties_share(placement: tuple[int, ...],
                                           points: tuple[float, ...]) -> None:
    assert place_points(placement) == points
    assert sum(points) == 1.5


def test_team_points() -> None:
    assert team_points(0) == (1.0, 0.0)
    assert team_points(1) == (0.0, 1.0)
    assert team_points(None) == (0.5, 0.5)
    with pytest.raises(InvalidArgument):
        team_points(2)
    with pytest.raises(InvalidArgument):
        place_points((1, 2))


@pytest.mark.parametrize(("mode", "n", "default", "most"), [
    (Mode.TABLES, 3, 1, 1), (Mode.TABLES, 4, 1, 1), (Mode.TABLES, 9, 4, 4),
    (Mode.TABLES, 13, 5, 6), (Mode.TABLES, 64, 7, 31), (Mode.TABLES, 1000, 11, MAX_ROUNDS),
    (Mode.TEAMS, 2, 1, 1), (Mode.TEAMS, 5, 4, 4), (Mode.TEAMS, 16, 5, 15),
    (Mode.PARTNERS, 4, 3, 3), (Mode.PARTNERS, 8, 4, 7), (Mode.PARTNERS, 100, 8, 99),
])
def test_rounds(mode: Mode, n: int, default: int, most: int) -> None:
    assert default_rounds(mode, n) == default
    assert max_rounds(mode, n) == most
    assert default <= most
    assert default == min(math.ceil(math.log2(n)) + 1, most)


@pytest.mark.parametrize(("mode", "n"), [(Mode.TABLES, 2), (Mode.TEAMS, 1), (Mode.PARTNERS, 3)])
def test_a_field_too_small_is_named(mode: Mode, n: int) -> None:
    with pytest.raises(InvalidArgument, match="bot_ids"):
        max_rounds(mode, n)


def test_quarters() -> None:
    assert quarters([0.0, 0.25, 1.5, 7.75]) == [0, 1, 6, 31]
    for bad in (0.1, float("nan"), float("inf")):
        with pytest.raises(InvalidArgument, match="points"):
            quarters([bad])


def test_seat_penalty() -> None:
    counts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [2, 1, 0], [2, 0, 0]])
    assert seat_penalty(counts).tolist() == [
        [0, 0, 0],
        [SPREAD2, 0, 0],
        [SPREAD2, SPREAD2, 0],
        [SPREAD3, SPREAD2, 0],
        [SPREAD3, SPREAD2, SPREAD2],
    ]
    assert free_masks(counts) == [7, 6, 4, 4, 0]


@given(st.lists(st.integers(0, 7), min_size=1, max_size=4))
def test_seatable_is_a_system_of_distinct_positions(masks: list[int]) -> None:
    brute = any(all(m >> p & 1 for m, p in zip(masks, perm, strict=False))
                for perm in itertools.permutations(range(3), len(masks)))
    assert seatable(tuple(sorted(masks))) == (brute and len(masks) <= 3)


@given(st.integers(1, 2), st.data())
@settings(max_examples=60)
def test_unseatable_is_the_fewest_left_without_a_free_position(m: int, data: st.DataObject
                                                               ) -> None:
    masks = data.draw(st.lists(st.integers(0, 7), min_size=3 * m, max_size=3 * m))
    # brute force: the most entrants that take distinct free places (m per position)
    best = 0
    for places in itertools.product(range(4), repeat=len(masks)):  # 3 = no free place
        used = [places.count(p) for p in range(3)]
        if all(u <= m for u in used) and all(p == 3 or masks[i] >> p & 1
                                             for i, p in enumerate(places)):
            best = max(best, sum(p != 3 for p in places))
    assert unseatable(masks, 3) == len(masks) - best


def test_fold_and_floaters() -> None:
    # scores (by participant): 0..3 on 8, 4..8 on 4; the lowest of the first group floats
    scores = [8, 8, 8, 8, 4, 4, 4, 4, 4]
    groups = fold(list(range(9)), scores, 3)
    assert groups == [[0, 1, 2], [3, 5, 7], [4, 6, 8]]
    with pytest.raises(ValueError, match="groups of 3"):
        fold([0, 1], [0, 0], 3)


def test_byes_go_to_the_fewest_then_the_lowest_then_the_worst_seed() -> None:
    assert pick_byes(1, [4, 0, 0, 4], [0, 0, 0, 0]) == [2]
    assert pick_byes(2, [4, 0, 0, 4], [0, 1, 0, 0]) == [2, 3]
    assert pick_byes(0, [1, 2], [0, 0]) == []
