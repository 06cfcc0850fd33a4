"""The fit against its recorded results: random pools of every shape (3p and 2v2, boards
or none, ties, a house bot on several sides, bots with one game, repeats), packed bit for
bit as before and fitted to the same figures (tests/golden/rating_fits.json, recorded
by scripts/record_rating_fits.py before the columnar fit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rating_pools import CASES, POOL_FIELDS, digest, extra_pools, make

from ratings import Game, canonical, fit
from ratings.model import pack

GOLDEN = json.loads((Path(__file__).parent / "golden" / "rating_fits.json").read_text())
POOLS: list[tuple[str, list[Game]]] = [(c.name, make(c)) for c in CASES] + extra_pools()
# How far today's figures may be from the recorded ones (Elo, and Elo^2 for the covariance).
ELO_TOL = 1e-9


def _digests(games: list[Game]) -> dict[str, str]:
    pool = pack(canonical(games))
    return {name: digest(getattr(pool, name)) for name in POOL_FIELDS}


@pytest.mark.parametrize(("name", "games"), POOLS, ids=[p[0] for p in POOLS])
def test_the_pool_packs_as_recorded(name: str, games: list[Game]) -> None:
    assert _digests(games) == GOLDEN["cases"][name]["pool"]


def _close(got: Any, want: Any, tol: float) -> bool:
    return bool(np.allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float),
                            rtol=0.0, atol=tol))


@pytest.mark.parametrize(("name", "games"), POOLS, ids=[p[0] for p in POOLS])
def test_the_fit_gives_the_recorded_figures(name: str, games: list[Game]) -> None:
    want = GOLDEN["cases"][name]
    got = fit(games)
    assert (got.method, got.games, got.units, got.dof) == (
        want["method"], want["games"], want["units"], want["dof"])
    assert [r.bot_id for r in got.ratings] == [r[0] for r in want["ratings"]]
    assert [r.games for r in got.ratings] == [r[4] for r in want["ratings"]]
    values = [[r.rating, r.ci_low, r.ci_high] for r in got.ratings]
    assert _close(values, [r[1:4] for r in want["ratings"]], ELO_TOL)
    nxt = [r.los_next for r in got.ratings]
    assert nxt[-1] is None and want["ratings"][-1][5] is None
    assert _close(nxt[:-1], [r[5] for r in want["ratings"]][:-1], ELO_TOL)
    assert _close(got.covariance.ravel(), want["covariance"], ELO_TOL)
    assert _close([got.luck_sd, got.gain], [want["luck_sd"], want["gain"]], ELO_TOL)
