"""Round-robin designs: pair balance, table counts, rounds, and 2v2 pairings."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import pytest

from store.errors import InvalidArgument
from tournaments.design import (
    Round,
    TeamGame,
    design_stats,
    rounds_of,
    steiner_triples,
    team_pairings,
    team_stats,
    triple_design,
)

SIZES = [*range(3, 61), 100, 1000]


@pytest.mark.parametrize("n", SIZES)
def test_every_pair_meets_once_or_twice_and_tables_per_bot_differ_by_at_most_one(n: int) -> None:
    tables = triple_design(n)
    assert all(len(set(t)) == 3 and all(0 <= b < n for b in t) for t in tables)
    s = design_stats(tables, n)
    if n % 6 in (1, 3):  # a Steiner triple system: every pair exactly once
        assert (s.pair_min, s.pair_max) == (1, 1)
        assert s.tables == n * (n - 1) // 6
    elif n == 4:  # all four triples: every pair exactly twice
        assert (s.pair_min, s.pair_max) == (2, 2)
    else:
        assert (s.pair_min, s.pair_max) == (1, 2)
    assert s.appear_max - s.appear_min <= 1
    assert s.tables <= n * (n - 1) // 3 + n
    assert s.tables <= n * (n + 1) // 6 + 1  # the documented O(n²/6) count


@pytest.mark.parametrize("n", [8, 10, 14, 16, 100])
def test_one_point_extensions_use_the_fewest_tables_a_covering_can(n: int) -> None:
    # n ≡ 2, 4 (mod 6): the Schönheim bound ceil(n/3 * ceil((n-1)/2)) is met.
    assert len(triple_design(n)) == math.ceil(n / 3 * math.ceil((n - 1) / 2))


@pytest.mark.parametrize("v", [3, 7, 9, 13, 15, 19, 21, 25, 27, 31, 33, 37])
def test_steiner_triple_systems_cover_each_pair_exactly_once(v: int) -> None:
    tables = steiner_triples(v)
    pairs = Counter(p for t in tables for p in itertools.combinations(t, 2))
    assert set(pairs.values()) == {1}
    assert len(pairs) == v * (v - 1) // 2


def test_steiner_rejects_impossible_orders() -> None:
    with pytest.raises(InvalidArgument, match="1 or 3"):
        steiner_triples(11)


def test_design_is_deterministic_and_sorted() -> None:
    for n in (5, 6, 11, 12, 22):
        first = triple_design(n)
        assert first == triple_design(n)
        assert list(first) == sorted(first)
        assert all(list(t) == sorted(t) for t in first)


def test_all_triples_only_when_asked() -> None:
    assert len(triple_design(9, all_triples=True)) == math.comb(9, 3)
    assert len(triple_design(9)) == 12


@pytest.mark.parametrize("bad", [2, 0, -5, True])
def test_too_few_bots_is_an_invalid_argument(bad: int) -> None:
    with pytest.raises(InvalidArgument, match="at least 3"):
        triple_design(bad)


def _check_rounds(rounds: tuple[Round, ...], tables: tuple[tuple[int, int, int], ...],
                  n: int) -> None:
    seen: list[tuple[int, int, int]] = []
    for i, r in enumerate(rounds):
        assert r.number == i + 1
        seated = [b for t in r.tables for b in t]
        assert len(seated) == len(set(seated)), f"a bot sits twice in round {r.number}"
        assert sorted(seated + list(r.byes)) == list(range(n))
        seen.extend(r.tables)
    assert sorted(seen) == sorted(tables)


@pytest.mark.parametrize("n", [*range(3, 31), 45, 100])
def test_rounds_seat_each_table_once_and_each_bot_once_per_round(n: int) -> None:
    tables = triple_design(n)
    rounds = rounds_of(tables, n)
    _check_rounds(rounds, tables, n)
    byes = Counter(b for r in rounds for b in r.byes)
    counts = [byes[b] for b in range(n)]
    assert max(counts) - min(counts) <= 1  # byes are as even as tables per bot
    s = design_stats(tables, n)
    bound = max(s.appear_max, math.ceil(s.tables / (n // 3)))
    assert len(rounds) <= 1.25 * bound + 3


def test_rounds_depend_on_the_set_of_tables_not_their_order() -> None:
    tables = triple_design(25)
    shuffled = list(tables)
    random.Random(7).shuffle(shuffled)
    assert rounds_of(shuffled, 25) == rounds_of(tables, 25)


def test_rounds_of_a_steiner_system_of_nine_is_a_resolution() -> None:
    rounds = rounds_of(triple_design(9), 9)
    assert len(rounds) == 4 and all(not r.byes for r in rounds)


def test_rounds_reject_bad_tables() -> None:
    with pytest.raises(InvalidArgument, match="distinct"):
        rounds_of([(0, 0, 1)], 3)
    with pytest.raises(InvalidArgument, match="distinct"):
        rounds_of([(0, 1, 5)], 4)


# --- 2v2 --------------------------------------------------------------------


def _check_team_rounds(n: int, rotate: bool) -> list[TeamGame]:
    games: list[TeamGame] = []
    for r in team_pairings(n, rotate):
        seated = [b for g in r.games for b in g.bots]
        assert len(seated) == len(set(seated))
        assert sorted(seated + list(r.byes)) == list(range(n))
        games.extend(r.games)
    return games


@pytest.mark.parametrize("n", range(2, 31))
def test_head_to_head_round_robin_meets_every_pair_once(n: int) -> None:
    games = _check_team_rounds(n, rotate=False)
    pairs = Counter(tuple(sorted((g.team0[0], g.team1[0]))) for g in games)
    assert all(g.team0[0] == g.team0[1] and g.team1[0] == g.team1[1] for g in games)
    assert len(pairs) == n * (n - 1) // 2 and set(pairs.values()) == {1}
    rounds = team_pairings(n, False)
    assert len(rounds) == (n if n % 2 else n - 1)
    assert all(len(r.byes) == n % 2 for r in rounds)


@pytest.mark.parametrize("n", range(2, 30))
def test_head_to_head_gives_each_bot_team_zero_about_half_the_time(n: int) -> None:
    first = Counter(g.team0[0] for r in team_pairings(n, False) for g in r.games)
    counts = [first[b] for b in range(n)]
    assert max(counts) - min(counts) <= 1


PERFECT_WHIST = {4, 5, 13, 17, 25, 28, 29, 37}


@pytest.mark.parametrize("n", range(4, 41))
def test_rotating_partners_pair_everyone_once(n: int) -> None:
    games = _check_team_rounds(n, rotate=True)
    assert all(len(g.bots) == 4 for g in games)
    s = team_stats(team_pairings(n, True), n)
    odd_pairs = (n * (n - 1) // 2) % 2
    assert s.partner_min == 1
    assert s.partner_max == 1 + odd_pairs
    assert (s.games_min, s.games_max) == (n - 1, n - 1 + odd_pairs)
    assert s.games == math.ceil(n * (n - 1) / 4)
    partners = Counter(tuple(sorted(t)) for g in games for t in (g.team0, g.team1))
    assert sum(1 for c in partners.values() if c == 2) == odd_pairs
    if n in PERFECT_WHIST:
        assert (s.opponent_min, s.opponent_max) == (2, 2)
    else:
        assert s.opponent_max - s.opponent_min <= 4


def test_four_bots_rotate_through_the_three_splits() -> None:
    games = [g for r in team_pairings(4, True) for g in r.games]
    splits = {frozenset({frozenset(g.team0), frozenset(g.team1)}) for g in games}
    assert len(games) == 3 and len(splits) == 3


def test_team_game_seats_alternate_teams() -> None:
    g = TeamGame((0, 2), (1, 3))
    assert g.seats == (0, 1, 2, 3)
    assert TeamGame((5, 5), (7, 7)).seats == (5, 7, 5, 7)


def test_team_pairings_reject_too_few_bots() -> None:
    with pytest.raises(InvalidArgument, match="at least 4"):
        team_pairings(3, True)
    with pytest.raises(InvalidArgument, match="at least 2"):
        team_pairings(1, False)


def test_team_pairings_are_deterministic() -> None:
    assert team_pairings(23, True) == team_pairings(23, True)
    assert team_pairings(9, False) == team_pairings(9, False)
