"""Duplicate-board schedules: disjoint tables per round, pair balance per residue class, seats."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.errors import InvalidArgument
from tournaments import boards
from tournaments.boards import BoardRound, TableSchedule, schedule_stats, table_schedule

SIZES = [*range(3, 61), 100]
ROOT = Path(__file__).resolve().parents[1]


def _rounds(s: TableSchedule) -> tuple[BoardRound, ...]:
    """Every round of a schedule, in order."""
    return tuple(s.round(i) for i in range(s.rounds))


def check_rounds(s: TableSchedule) -> None:
    """Every round: 3 distinct bots a table, no bot at two tables, byes the rest."""
    n = s.n
    for i in range(s.rounds):
        r = s.round(i)
        assert r.number == i + 1
        seated = [b for t in r.tables for b in t]
        assert all(len(t) == 3 for t in r.tables)
        assert len(seated) == len(set(seated)), f"n={n} round {r.number}: a bot at two tables"
        assert sorted(seated + list(r.byes)) == list(range(n))


@pytest.mark.parametrize("n", SIZES)
def test_rounds_hold_disjoint_tables(n: int) -> None:
    s = table_schedule(n)
    check_rounds(s)
    assert [r.number for r in _rounds(s)] == list(range(1, s.rounds + 1))
    assert s.duplicate is (n >= 6)


@pytest.mark.parametrize("n", SIZES)
def test_pair_balance_as_promised_per_residue_class(n: int) -> None:
    s = table_schedule(n)
    st_ = schedule_stats(s)
    assert st_.pair_min >= 1
    assert st_.pair_max - st_.pair_min <= 1
    assert st_.tables <= max(n * (n - 1) // 3, 20)
    if n < 6:  # one table a round, today's triple_design
        assert st_.per_round_max == 1
        assert (st_.pair_min, st_.pair_max) == {3: (1, 1), 4: (2, 2), 5: (1, 2)}[n]
    elif n == 6:  # all ten splits
        assert (st_.pair_min, st_.pair_max, st_.rounds) == (4, 4, 10)
    elif n % 3 == 1:  # near-resolvable, every pair twice, one bye a round
        assert (st_.pair_min, st_.pair_max) == (2, 2)
        assert st_.rounds == n
        assert (st_.per_round_min, st_.per_round_max) == ((n - 1) // 3, (n - 1) // 3)
    elif n % 3 == 0:
        if "Kirkman" in s.method:  # every pair once
            assert (st_.pair_min, st_.pair_max, st_.rounds) == (1, 1, (n - 1) // 2)
        else:
            assert (st_.pair_min, st_.pair_max, st_.rounds) == (2, 2, n - 1)
        assert (st_.per_round_min, st_.per_round_max) == (n // 3, n // 3)
    else:  # two byes a round, every pair once or twice
        assert (st_.pair_min, st_.pair_max) == (1, 2)
        assert (st_.per_round_min, st_.per_round_max) == ((n - 2) // 3, (n - 2) // 3)


@pytest.mark.parametrize("n", [9, 15, 27, 33, 45, 51, 57, 81, 99])
def test_kirkman_systems_where_promised(n: int) -> None:
    s = table_schedule(n)
    assert "Kirkman" in s.method
    st_ = schedule_stats(s)
    assert (st_.pair_min, st_.pair_max, st_.rounds) == (1, 1, (n - 1) // 2)


@pytest.mark.parametrize("n", SIZES)
def test_seat_positions_and_byes_are_level(n: int) -> None:
    st_ = schedule_stats(table_schedule(n))
    assert st_.seat_spread <= 2
    assert st_.appear_max - st_.appear_min <= 1
    assert st_.bye_max - st_.bye_min <= 1


def test_cyclic_base_tables_balance_seats_exactly() -> None:
    # No ∞ and no extra round: each bot holds each position exactly (n-1)/3 times.
    for n in (7, 13, 16, 25, 28, 40, 100):
        st_ = schedule_stats(table_schedule(n))
        assert st_.seat_min == st_.seat_max == (n - 1) // 3


@pytest.mark.parametrize("n", [998, 999, 1000])
def test_large_schedules_build_and_stay_balanced(n: int) -> None:
    s = table_schedule(n)
    check_rounds(s)
    st_ = schedule_stats(s)
    want = {998: (1, 2), 999: (2, 2), 1000: (2, 2)}[n]
    assert (st_.pair_min, st_.pair_max) == want
    assert st_.per_round_min == st_.per_round_max == n // 3
    assert st_.seat_spread <= 2


def test_same_schedule_in_a_fresh_process() -> None:
    sizes = [10, 12, 25, 36, 49, 62, 63, 87]
    code = (
        "from tournaments.boards import table_schedule\n"
        f"for n in {sizes}:\n"
        "    s = table_schedule(n)\n"
        "    print(n, hash(tuple(s.round(i) for i in range(s.rounds))), s.method)\n"
    )
    runs = [
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2")
    ]
    assert runs[0] == runs[1]
    here = "".join(f"{n} {hash(_rounds(table_schedule(n)))} {table_schedule(n).method}\n"
                   for n in sizes)
    # hash() of tuples of ints does not depend on PYTHONHASHSEED.
    assert runs[0] == here


def test_search_is_deterministic() -> None:
    pb = boards._plain(40, [1] + [3] * 13, [False] + [True] * 13, {20: 1})
    assert boards._anneal(pb, 0, 100_000) == boards._anneal(pb, 0, 100_000) is not None


def test_stored_designs() -> None:
    # Kirkman's schoolgirls: 7 parallel classes of 15 girls, every pair once.
    pairs = [frozenset(p) for r in boards._KTS15 for t in r for p in itertools.combinations(t, 2)]
    assert len(pairs) == len(set(pairs)) == 105
    assert all(sorted(b for t in r for b in t) == list(range(15)) for r in boards._KTS15)
    # NRB(10,3,2): round i leaves out bot i, every pair twice, no table repeated.
    tables = [frozenset(t) for r in boards._NR10 for t in r]
    assert len(set(tables)) == 30
    for i, r in enumerate(boards._NR10):
        assert sorted(b for t in r for b in t) == [b for b in range(10) if b != i]


def test_n_below_six_is_one_table_a_round() -> None:
    for n in (3, 4, 5):
        s = table_schedule(n)
        assert not s.duplicate
        assert all(len(r.tables) == 1 for r in _rounds(s))
        assert sorted(tuple(sorted(r.tables[0])) for r in _rounds(s)) == sorted(
            boards.triple_design(n))


def test_bad_arguments() -> None:
    for bad in (2, 0, -5, True, 7.0, "9"):
        with pytest.raises(InvalidArgument, match="n must be"):
            table_schedule(bad)  # type: ignore[arg-type]
    s = table_schedule(7)
    for bad_i in (-1, 7, True, 1.0):
        with pytest.raises(InvalidArgument, match="round index i"):
            s.round(bad_i)  # type: ignore[arg-type]


def test_cached() -> None:
    assert table_schedule(31) is table_schedule(31)


@settings(max_examples=40, deadline=None)
@given(n=st.sampled_from(SIZES), data=st.data())
def test_any_round_is_its_own_derivation(n: int, data: st.DataObject) -> None:
    s = table_schedule(n)
    i = data.draw(st.integers(0, s.rounds - 1))
    r = s.round(i)
    assert isinstance(r, BoardRound)
    assert r == _rounds(s)[i]
    assert len({b for t in r.tables for b in t}) == 3 * len(r.tables)
