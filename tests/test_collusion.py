"""The collusion detector (`ratings.collusion`): its pieces on small pools. Its power and
false-alarm rate are the benchmark's to measure (bench/collusion.py), not these tests'."""

from __future__ import annotations

import numpy as np
import pytest

from ratings.collusion import audit, holm, residuals
from ratings.errors import RatingError
from ratings.table import GameTable


def _pool(seed: int, boards: int, edge: float) -> GameTable:
    """24 bots at boards of 4 tables of 3; bots 0 and 1 share 60 boards at two tables,
    each playing `edge` better there."""
    rng = np.random.default_rng(seed)
    ids, units, seats, perf = [], [], [], []
    for k in range(boards):
        if k < 60:
            rest = rng.choice(np.arange(2, 24), size=10, replace=False)
            drawn = np.concatenate([[0], rest[:2], [1], rest[2:]])
        else:
            drawn = rng.choice(np.arange(2, 24), size=12, replace=False)
            if k % 2:
                drawn[0] = k % 4 // 2  # bot 0 or 1 alone: their baseline
        luck = rng.normal(0, 1, 3)
        for t in range(4):
            s = drawn[3 * t: 3 * t + 3]
            x = luck + rng.normal(0, 1, 3) + edge * np.isin(s, (0, 1)) * (k < 60)
            ids.append(f"g{k}-{t}")
            units.append(f"b{k}")
            seats.append(s)
            perf.append(x)
    p = np.array(perf)
    place = 1 + (p[:, None, :] > p[:, :, None]).sum(axis=2)
    return GameTable.of(ids, units, np.array(seats), place, [f"bot{i}" for i in range(24)])


def test_holm_adjusts_as_the_step_down_says() -> None:
    got = holm([0.01, 0.04, 0.03, 0.005])
    assert np.allclose(got, [0.03, 0.06, 0.06, 0.02])
    assert holm([]).size == 0
    assert holm([0.9, 0.8]).max() == 1.0


def test_residuals_cancel_the_deal() -> None:
    table = _pool(1, 80, 0.0)
    bots, units, _, r = residuals(table)
    assert bots.size == 80 * 4 * 3
    for u in range(5):  # every board's residuals sum to zero
        assert abs(r[units == u].sum()) < 1e-9


def test_a_planted_pair_is_named_and_no_other() -> None:
    a = audit(_pool(2, 400, 1.5), alpha=0.01)
    named = {(s.bot_a, s.bot_b) for s in a.suspected}
    assert named == {("bot0", "bot1")}
    top = a.suspected[0]
    assert top.shared == 60 and top.gain > 0 and top.p_adjusted <= 0.01
    assert all(b.startswith("b") for b in top.boards)


def test_an_honest_pool_names_no_pair() -> None:
    a = audit(_pool(3, 400, 0.0), alpha=0.01)
    assert a.pairs and not a.suspected
    assert a.boards == 400 and a.games == 1600


def test_bad_settings_are_refused() -> None:
    table = _pool(4, 70, 0.0)
    with pytest.raises(RatingError, match="alpha"):
        audit(table, alpha=0.0)
    with pytest.raises(RatingError, match="at least 2"):
        audit(table, min_shared=1)
