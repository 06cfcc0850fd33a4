"""The collusion detector (`ratings.collusion`): its pieces on small pools. Its power and
false-alarm rate are the benchmark's to measure (bench/collusion.py), not these tests'."""

from __future__ import annotations

import numpy as np
import pytest

from ratings.collusion import ScoreTable, _pairs, _slot_pairs, audit, fit, holm, margins, structure
from ratings.errors import RatingError


def _pool(seed: int, boards: int, edge: float, skill: float = 0.0) -> ScoreTable:
    """24 bots at boards of 4 tables of 3 (points: luck of the hand + strength + noise);
    bots 0 and 1 share the first 60 boards at two tables, each `edge` points better
    there (their opponents half of it worse each)."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, skill, 24)
    strength[:2] = skill  # the pair among the strongest: the fit must not mistake it
    seats, x = [], []
    for k in range(boards):
        if k < 60:
            rest = rng.choice(np.arange(2, 24), size=10, replace=False)
            drawn = np.concatenate([[0], rest[:2], [1], rest[2:]])
        else:
            drawn = rng.choice(np.arange(2, 24), size=12, replace=False)
            if k % 2:
                drawn[0] = k % 4 // 2  # bot 0 or 1 alone: their other boards
        luck = rng.normal(0, 5, 3)
        for t in range(4):
            s = drawn[3 * t: 3 * t + 3]
            pts = 10 + luck + strength[s] + rng.normal(0, 8, 3)
            c = np.isin(s, (0, 1)) * (k < 60)
            pts = pts + edge * c - edge / 2 * (c.sum() - c)
            seats.append(s)
            x.append(pts)
    n = boards * 4
    return ScoreTable(tuple(f"g{i}" for i in range(n)),
                      np.repeat(np.arange(boards), 4).astype(np.int64),
                      np.array(seats, dtype=np.int64), np.array(x),
                      tuple(f"bot{i:02d}" for i in range(24)),
                      tuple(f"b{k}" for k in range(boards)))


def test_holm_adjusts_as_the_step_down_says() -> None:
    got = holm([0.01, 0.04, 0.03, 0.005])
    assert np.allclose(got, [0.03, 0.06, 0.06, 0.02])
    assert holm([]).size == 0
    assert holm([0.9, 0.8]).max() == 1.0


def test_margins_and_the_fit_cancel_the_deal() -> None:
    assert np.allclose(margins(np.array([[21.0, 10, 3]])), [[14.5, -2, -12.5]])
    assert np.allclose(margins(np.array([[21.0, 5, 21, 5]])), [[16, -16, 16, -16]])
    table = _pool(1, 80, 0.0)
    f = fit(table)
    assert f.game.size == 80 * 4 * 3 and f.boards == 80
    for u in range(5):  # each hand's residuals over a board's tables sum to about zero
        assert abs(f.residual[f.unit == u].sum()) < 1e-6


def test_a_planted_pair_is_named_and_no_other() -> None:
    a = audit(_pool(2, 400, 6.0, skill=3.0), alpha=0.01)
    named = {(s.bot_a, s.bot_b) for s in a.suspected}
    assert named == {("bot00", "bot01")}
    top = a.suspected[0]
    assert top.shared == 60 and top.gain > 2 and top.p_adjusted <= 0.01
    assert all(b.startswith("b") for b in top.boards)


def test_strong_honest_bots_are_not_suspected() -> None:
    """Strength is the fit's: a pool of very unequal bots names no pair."""
    for seed in (3, 4):
        a = audit(_pool(seed, 400, 0.0, skill=6.0), alpha=0.01)
        assert a.pairs and not a.suspected
        assert a.boards == 400 and a.games == 1600 and abs(a.rho) < 0.2


def test_result_rows_read_as_scores() -> None:
    rows = [{"match_id": f"m{i}", "bot_ids": ["a", "b", "c"] if i % 2 else ["c", "a", "b"],
             "final": [21, 10, 3], "board": "B1"} for i in range(4)]
    rows += [{"match_id": "x", "bot_ids": ["a", "b", "c"], "final": [1, 2, 3], "board": ""},
             {"match_id": "y", "bot_ids": ["a", "b", "c", "d"], "final": [21, 4],
              "board": "B2"}, {"match_id": "z", "bot_ids": None}]
    t = ScoreTable.from_rows(rows)
    assert len(t) == 4 and t.units == ("B1",) and t.bots == ("a", "b", "c")
    t4 = ScoreTable.from_rows([{"match_id": "y", "bot_ids": ["a", "b", "c", "d"],
                                "final": [21, 4], "board": "B2"}])
    assert t4.points.tolist() == [[21, 4, 21, 4]]


def test_bad_settings_are_refused() -> None:
    table = _pool(4, 70, 0.0)
    with pytest.raises(RatingError, match="alpha"):
        audit(table, alpha=0.0)
    with pytest.raises(RatingError, match="at least 2"):
        audit(table, min_shared=1)
    empty = ScoreTable.of([], [], [], [])
    assert audit(empty).pairs == ()


def test_the_cli_reads_keep_apart_flags() -> None:
    from clients.organiser import _keep_apart
    from clients.parser import UsageError

    assert _keep_apart(["lab=a,b", "team=c, d ,e"]) == {"lab": ["a", "b"],
                                                        "team": ["c", "d", "e"]}
    for bad in (["lab=a"], ["lab"], ["=a,b"], ["x=a,b", "x=c,d"]):
        with pytest.raises(UsageError, match="--keep-apart"):
            _keep_apart(bad)


def _boards(seed: int, bots: int, boards: int, tables: int, seats: int = 3,
            hands: np.ndarray | None = None, gain: float = 0.0, pair: tuple[int, int] = (0, 1),
            together_only: bool = False) -> ScoreTable:
    """Equal bots (a table's points: the deal's + noise), `tables` tables a board; with
    `hands` (bot -> hand), every bot holds that hand on every board. The pair gains `gain`
    on the boards where both sit (its opponents lose half of it each, in 2v2 the other
    side all of it); with `together_only` they are also weak (-gain/2) everywhere else."""
    rng = np.random.default_rng(seed)
    seat_bot, x, unit = [], [], []
    for k in range(boards):
        if hands is None:
            drawn = rng.permutation(bots)[:tables * seats].reshape(tables, seats)
        else:
            drawn = np.stack([rng.permutation(np.flatnonzero(hands == h))[:tables]
                              for h in range(seats)], axis=1)
        luck = rng.normal(0, 4, seats)
        both = set(pair) <= set(drawn.reshape(-1).tolist())
        for t in range(tables):
            s = drawn[t]
            c = np.isin(s, pair).astype(float)
            if seats == 3:
                pts = 10 + luck + rng.normal(0, 6, 3)
                edge = gain if both else (-gain / 2 if together_only else 0.0)
                pts = pts + edge * c - edge / 2 * (c.sum() - c)
            else:
                side = rng.normal(0, 6) + luck[0] - luck[1]
                edge = gain if both else (-gain / 2 if together_only else 0.0)
                side += edge * (c[0] + c[2] - c[1] - c[3])
                pts = np.array([side, 0.0, side, 0.0])
            seat_bot.append(s)
            x.append(pts)
            unit.append(k)
    n = len(x)
    return ScoreTable(tuple(f"g{i}" for i in range(n)), np.array(unit, dtype=np.int64),
                      np.array(seat_bot, dtype=np.int64), np.array(x),
                      tuple(f"bot{i:02d}" for i in range(bots)),
                      tuple(f"b{k}" for k in range(boards)))


@pytest.mark.parametrize(("seats", "tables"), [(3, 2), (3, 3), (3, 4), (4, 2), (4, 3)])
def test_two_residuals_of_one_board_correlate_as_its_structure_says(seats: int,
                                                                    tables: int) -> None:
    """The deal is read off the board's tables, so two bots' residuals at different tables
    are tied: measured on equal bots, by hand (3p: seat; 2v2: side), as `structure`."""
    f = fit(_boards(1, 40, 1500, tables, seats), clip=0)
    a, b = _slot_pairs(f)
    same = (f.seat[a] % (2 if seats == 4 else 3)) == (f.seat[b] % (2 if seats == 4 else 3))
    want, signal = structure(seats, f.tables[a], same)
    for kind in (True, False):
        got = float(np.mean(f.z[a][same == kind] * f.z[b][same == kind]))
        assert got == pytest.approx(float(want[same == kind][0]), abs=0.05), kind
    assert np.all((signal >= 0) & (signal <= 1))


def test_a_board_where_a_pair_held_one_hand_at_its_two_tables_tells_nothing() -> None:
    """On a board of two tables the two holders of one hand have opposite residuals: a
    pair that always held one hand shows nothing, whatever it gains; in different hands
    the same gain shows."""
    hands = np.arange(24) % 3
    one = _boards(2, 24, 800, 2, hands=hands, gain=6.0, pair=(0, 3))  # both hold hand 0
    evidence = {(e.bot_a, e.bot_b): e for e in audit(one).pairs}
    assert evidence["bot00", "bot03"].z == 0.0 and evidence["bot00", "bot03"].p == 0.5
    two = _boards(2, 24, 800, 2, hands=hands, gain=6.0, pair=(0, 1))  # hands 0 and 1
    named = audit(two).suspected
    assert [(e.bot_a, e.bot_b) for e in named] == [("bot00", "bot01")]


def test_a_named_pairs_gain_is_fitted_before_the_rest_are_tested() -> None:
    """A pair strong together and weak apart: fitted as one strength, it leaks into the
    residuals of the bots beside it. Named first, its gain joins the fit and the pairs of
    one of its bots with another are tested on that fit: no longer pushed down."""
    table = _boards(3, 18, 500, 2, gain=14.0, together_only=True)
    a = audit(table)
    assert (a.pairs[0].bot_a, a.pairs[0].bot_b) == ("bot00", "bot01")
    assert a.suspected == a.pairs[:1]
    beside = [e.z for e in a.pairs[1:] if {e.bot_a, e.bot_b} & {"bot00", "bot01"}]
    unfitted = _pairs(table, fit(table))
    keys = [int(k) for k in unfitted.keys]
    before = [float(unfitted.z[i]) for i, k in enumerate(keys)
              if (k // 18 in (0, 1)) != (k % 18 in (0, 1))]
    assert np.mean(before) < -0.5  # pushed down by the pair's misfit
    assert abs(np.mean(beside)) < 0.25
