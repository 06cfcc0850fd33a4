"""Where the fit starts does not change where it ends: a refit started from an earlier fit
(a warm start), a large pool started from the fit of a sample of its units, and a cold
fit give the same ratings, intervals and luck, to 1e-9 Elo."""

from __future__ import annotations

import numpy as np
import pytest
from rating_pools import CASES, lucky, make

from ratings import Fit, Game, fit, luck

POOLS = {
    "lucky-3p": lucky(11, 15, 40, 3, 0.6),
    "lucky-2v2": lucky(12, 16, 40, 2, 0.6),
    "3p-house-singles": make(CASES[5]),
    "2v2-house": make(CASES[13]),
    "3p-no-boards": make(CASES[1]),
}


def _same(a: Fit, b: Fit, elo: float = 1e-9) -> None:
    assert (a.method, a.games, a.units, a.dof) == (b.method, b.games, b.units, b.dof)
    assert [r.bot_id for r in a.ratings] == [r.bot_id for r in b.ratings]
    assert [r.games for r in a.ratings] == [r.games for r in b.ratings]
    for x, y in zip(a.ratings, b.ratings, strict=True):
        assert abs(x.rating - y.rating) <= elo
        # The interval's ends to 1e-10 of its width: tau's tolerance moves them so much.
        width = y.ci_high - y.ci_low
        assert abs(x.ci_low - y.ci_low) <= elo + 1e-10 * width
        assert abs(x.ci_high - y.ci_high) <= elo + 1e-10 * width
    scale = float(np.abs(b.covariance).max())
    assert np.abs(a.covariance - b.covariance).max() <= 2e-10 * scale
    assert abs(a.luck_sd - b.luck_sd) <= 1e-10 and abs(a.gain - b.gain) <= 1e-10


@pytest.mark.parametrize("name", list(POOLS))
def test_a_refit_from_an_earlier_fit_reaches_the_same_fit(name: str) -> None:
    games = sorted(POOLS[name], key=lambda g: g.game_id)
    cold = fit(games)
    earlier = fit(games[: len(games) * 9 // 10])  # a tenth of the games came since
    warm = fit(games, start=earlier)
    _same(warm, cold)
    assert warm.state is not None and set(warm.state.strengths) == {
        r.bot_id for r in warm.ratings}
    # From a fit of the same games: nothing left to do but to check it.
    again = fit(games, start=cold)
    _same(again, cold)
    assert again.iterations <= cold.iterations


def test_a_refit_from_a_plain_fit_or_with_new_bots_reaches_the_same_fit() -> None:
    games = POOLS["lucky-3p"]
    cold = fit(games)
    plain = fit([Game(g.game_id, "", g.sides, g.places) for g in games])
    assert plain.luck_sd == 0.0 and cold.luck_sd > 0
    _same(fit(games, start=plain), cold)
    newcomer = [Game(f"z{i}", f"zb{i // 2}", (("new1",), ("b00",), ("new2",)),
                     ((1, 2, 3), (3, 2, 1))[i % 2]) for i in range(6)]
    _same(fit([*games, *newcomer], start=cold), fit([*games, *newcomer]))


@pytest.mark.parametrize("name", ["lucky-3p", "lucky-2v2", "3p-house-singles"])
def test_a_large_pool_started_from_a_sample_reaches_the_same_fit(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    games = POOLS[name]
    cold = fit(games)
    monkeypatch.setattr(luck, "_SAMPLE_ABOVE", 50)  # every pool here is "large"
    monkeypatch.setattr(luck, "_SAMPLE_EVERY", 3)
    _same(fit(games), cold)
