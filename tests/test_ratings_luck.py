"""Board luck in the batch fit: derivatives, which games get luck, known structure, intervals."""

from __future__ import annotations

import math
import random

import choix
import numpy as np
import pytest

from ratings import ELO_PER_NAT, Game, canonical, fit, games_from_rows, to_nat
from ratings.intervals import _jackknifed_scores, _scale_terms, _unit_scores
from ratings.luck import solve_with_luck
from ratings.model import (
    Evaluation,
    bot_gradient,
    bot_hessian,
    cross_hessian,
    evaluate,
    luck_gradient,
    luck_hessian,
    pack,
    side_strengths,
)
from ratings.optimize import solve

PRIOR = to_nat(400.0)


def lucky_pool(seed: int, bots: int = 15, boards: int = 40, sides: int = 3) -> list[Game]:
    """Equal bots on boards of disjoint tables; each seat position's luck -log(2 Z^2) is shared
    by the board's tables (as in bench/ratings.py), so the deal decides most games."""
    rng = np.random.default_rng(seed)
    names = [f"b{i:02d}" for i in range(bots)]
    per_table = 3 if sides == 3 else 4
    games: list[Game] = []
    for b in range(boards):
        seats = rng.permutation(bots)
        z = rng.normal(size=sides)
        luck = -np.log(2 * z * z)
        for t in range(bots // per_table):
            table = [names[i] for i in seats[t * per_table:(t + 1) * per_table]]
            u = luck + rng.gumbel(size=sides)
            places = tuple(int(1 + (u > x).sum()) for x in u)
            if sides == 3:
                side_list = tuple((x,) for x in table)
            else:  # seats 0/2 against 1/3
                side_list = ((table[0], table[2]), (table[1], table[3]))
            games.append(Game(f"g{b:03d}-{t}", f"board{b:03d}", side_list, places))
    return games


def plain(games: list[Game]) -> list[Game]:
    """The same games, each dealt fresh (no unit)."""
    return [Game(g.game_id, "", g.sides, g.places) for g in games]


# --- the likelihood with luck ---------------------------------------------------


@pytest.mark.parametrize("house", [False, True])
def test_luck_derivatives_match_finite_differences(house: bool) -> None:
    """With `house`, some tables seat one bot twice (a house bot may sit on two sides)."""
    rng = random.Random(1)
    games = []
    for g in range(30):
        table = rng.sample("abcdefg", 3)
        if house and g % 3 == 0:
            table[2] = table[0]
        places = rng.choice([(1, 2, 3), (3, 1, 2), (1, 1, 3), (2, 1, 2)])
        games.append(Game(f"g{g}", f"u{g // 4}" if g < 28 else "", tuple((x,) for x in table),
                          places))
    pool = pack(canonical(games))
    n, q = len(pool.bots), pool.luck_count
    draw = np.random.default_rng(0)
    theta, luck, gain = draw.normal(size=n) * 0.5, draw.normal(size=q) * 0.5, 1.7
    ev = evaluate(pool, theta, luck, gain)
    h = 1e-6
    num_grad, num_hess, num_cross = np.zeros(q), np.zeros((q, q)), np.zeros((n, q))
    for j in range(q):
        step = np.eye(q)[j] * h
        up = evaluate(pool, theta, luck + step, gain)
        down = evaluate(pool, theta, luck - step, gain)
        num_grad[j] = (up.loglik.sum() - down.loglik.sum()) / (2 * h)
        num_hess[:, j] = -(luck_gradient(pool, up) - luck_gradient(pool, down)) / (2 * h)
        num_cross[:, j] = -(bot_gradient(pool, up) - bot_gradient(pool, down)) / (2 * h)
    blocks = luck_hessian(pool, ev)
    full = np.zeros((q, q))
    for b in range(len(pool.boards)):
        full[b * 3:(b + 1) * 3, b * 3:(b + 1) * 3] = blocks[b]
    assert luck_gradient(pool, ev) == pytest.approx(num_grad, abs=1e-7)
    assert full == pytest.approx(num_hess, abs=1e-6)
    assert cross_hessian(pool, ev, dense=True) == pytest.approx(num_cross, abs=1e-6)
    assert cross_hessian(pool, ev).toarray() == pytest.approx(num_cross, abs=1e-6)
    num_bots = np.zeros((n, n))
    for i in range(n):
        step = np.eye(n)[i] * h
        up = evaluate(pool, theta + step, luck, gain)
        down = evaluate(pool, theta - step, luck, gain)
        num_bots[:, i] = -(bot_gradient(pool, up) - bot_gradient(pool, down)) / (2 * h)
    assert bot_hessian(pool, ev) == pytest.approx(num_bots, abs=1e-6)


def test_only_boards_of_two_or_more_games_get_luck() -> None:
    games = canonical([
        Game("g1", "b1", (("a",), ("b",), ("c",)), (2, 1, 3)),
        Game("g2", "b1", (("d",), ("e",), ("f",)), (1, 2, 3)),
        Game("g3", "once", (("a",), ("d",), ("e",)), (1, 2, 3)),
        Game("g4", "", (("b",), ("c",), ("f",)), (1, 2, 3)),
    ])
    pool = pack(games)
    assert pool.boards == ("b1",)
    assert list(pool.board_of) == [0, 0, -1, -1]
    assert list(pool.lucky) == [0, 1]
    # Sides are stored best first; their luck is that of their seat position.
    assert pool.seat_of[0].tolist() == [1, 0, 2]
    assert pool.luck_of.tolist() == [[1, 0, 2], [0, 1, 2]]


def test_2v2_luck_is_per_team_position() -> None:
    # Seats 0 and 2 are team 0, seats 1 and 3 team 1, whatever the places.
    games = games_from_rows([
        {"match_id": f"m{i}", "bot_ids": bots, "players": 4, "placement": places,
         "board": "d1"}
        for i, (bots, places) in enumerate([
            (["a", "b", "c", "d"], [2, 1, 2, 1]),
            (["e", "f", "g", "h"], [1, 2, 1, 2]),
        ])
    ])
    pool = pack(canonical(games))
    assert pool.luck_count == 2
    assert pool.seat_of.tolist() == [[1, 0], [0, 1]]
    assert pool.luck_of.tolist() == [[1, 0], [0, 1]]


# --- without boards: plain Plackett-Luce ------------------------------------------


def test_boards_played_once_leave_the_plain_fit_agreeing_with_choix() -> None:
    rng = random.Random(11)
    names = [f"b{i}" for i in range(7)]
    strength = [rng.gauss(0, 1) for _ in names]
    games, rankings = [], []
    for g in range(300):
        table = rng.sample(range(7), 3)
        perf = [strength[i] - math.log(-math.log(rng.random())) for i in table]
        order = [table[k] for k in sorted(range(3), key=lambda k: -perf[k])]
        rankings.append(tuple(order))
        games.append(Game(f"g{g}", f"deal{g}", tuple((names[i],) for i in table),
                          tuple(1 + order.index(i) for i in table)))
    theirs = choix.opt_rankings(7, rankings, alpha=1 / (2 * PRIOR**2), tol=1e-12)
    theirs = (theirs - theirs.mean()) * ELO_PER_NAT
    result = fit(games)
    assert result.method == "Plackett-Luce MAP, board-clustered sandwich 95% CI (t299)"
    assert (result.luck_sd, result.gain) == (0.0, 1.0)
    for i, name in enumerate(names):
        assert result.rating(name).rating == pytest.approx(theirs[i], abs=1e-6)


def test_boards_whose_games_are_all_tied_get_no_luck() -> None:
    games = [Game(f"g{i}", f"b{i // 2}", tuple((x,) for x in order), (1, 1, 1))
             for i, order in enumerate(["abc", "def"] * 4)]
    games.append(Game("x", "", (("a",), ("d",), ("b",)), (1, 2, 3)))
    result = fit(games)
    assert "board luck" not in result.method
    assert all(math.isfinite(r.ci_low) and math.isfinite(r.ci_high) for r in result.ratings)


# --- known structure ----------------------------------------------------------------


@pytest.mark.parametrize("sides", [3, 2])
def test_a_board_whose_position_wins_at_every_table_is_luck_not_skill(sides: int) -> None:
    # Equal bots whose games the deal decides; then one more board on which seat position 0
    # (2v2: the team of seats 0 and 2) wins at every table. Read game by game, its holders
    # gained; with board luck the position takes most of the credit.
    base = lucky_pool(3, bots=15 if sides == 3 else 24, sides=sides)
    per_table = 3 if sides == 3 else 4
    names = sorted({b for g in base for b in g.bots})
    extra, winners = [], []
    for t in range(len(names) // per_table):
        table = names[t * per_table:(t + 1) * per_table]
        if sides == 3:
            side_list = tuple((x,) for x in table)
            places: tuple[int, ...] = (1, 2, 3)
        else:
            side_list = ((table[0], table[2]), (table[1], table[3]))
            places = (1, 2)
        extra.append(Game(f"z{t}", "all-to-position-0", side_list, places))
        winners.extend(side_list[0])

    def gained(games_of: object) -> float:
        assert callable(games_of)
        before, after = fit(games_of(base)), fit(games_of(base + extra))
        return float(np.mean([after.rating(w).rating - before.rating(w).rating
                              for w in winners]))

    with_luck, read_fresh = gained(lambda g: g), gained(plain)
    assert read_fresh > 4
    assert 0 <= with_luck < 0.5 * read_fresh
    luck = fit(base + extra)
    assert "with board luck" in luck.method and luck.luck_sd > 0.5


def test_skill_that_beats_the_deal_is_still_skill() -> None:
    # One bot wins wherever it sits; every other game goes to the board's lucky position.
    rng = random.Random(5)
    names = [f"x{i}" for i in range(9)]
    games = []
    for b in range(40):
        seats, lucky = rng.sample(names, 9), rng.randrange(3)
        for t in range(3):
            table = seats[3 * t:3 * t + 3]
            first = table.index("x0") if "x0" in table else lucky
            order = [first, *rng.sample([p for p in range(3) if p != first], 2)]
            places = tuple(1 + order.index(p) for p in range(3))
            games.append(Game(f"g{b}-{t}", f"b{b}", tuple((x,) for x in table), places))
    result = fit(games)
    assert result.ratings[0].bot_id == "x0"
    assert result.ratings[0].ci_low > result.ratings[1].ci_high
    assert result.luck_sd > 0


# --- the scale and the intervals --------------------------------------------------


def test_the_ratings_sit_on_the_fresh_deal_scale() -> None:
    # At the fit, the plain log-posterior of all games is stationary along the ratings.
    games = canonical(lucky_pool(7))
    result = fit(games)
    assert result.luck_sd > 0
    pool = pack(games)
    theta = np.array([to_nat(result.rating(b).rating) for b in pool.bots])
    ev = evaluate(pool, theta)
    slope = float((side_strengths(pool, theta) * ev.grad).sum()) - float(theta @ theta) / PRIOR**2
    assert abs(slope) < 1e-6
    assert result.gain > 0


def test_the_scale_equation_derivatives_match_finite_differences() -> None:
    pool = pack(canonical(lucky_pool(2, bots=9, boards=12)))
    sol = solve_with_luck(pool, PRIOR)
    precision = 1 / PRIOR**2
    h_vec, j, per_unit = _scale_terms(pool, sol, precision)

    def psi(theta: np.ndarray, c: float) -> float:
        ev = evaluate(pool, c * theta)
        return (float((side_strengths(pool, theta) * ev.grad).sum())
                - c * precision * float(theta @ theta))

    step = 1e-6
    n = len(pool.bots)
    num_h = [(psi(sol.theta + step * np.eye(n)[i], sol.scale)
              - psi(sol.theta - step * np.eye(n)[i], sol.scale)) / (2 * step) for i in range(n)]
    num_j = (psi(sol.theta, sol.scale + step) - psi(sol.theta, sol.scale - step)) / (2 * step)
    assert h_vec == pytest.approx(num_h, abs=1e-6)
    assert j == pytest.approx(num_j, abs=1e-6)
    total = per_unit.sum() - sol.scale * precision * float(sol.theta @ sol.theta)
    assert abs(total) < 1e-8  # the scale solves its equation


@pytest.mark.parametrize("with_luck", [True, False])
def test_jackknifed_scores_match_leaving_each_unit_out_to_first_order(with_luck: bool) -> None:
    fresh = Game("f1", "", (("b00",), ("b01",), ("b02",)), (1, 2, 3))
    games = canonical([*lucky_pool(4, bots=9, boards=10), fresh])
    pool = pack(games)
    sol = solve_with_luck(pool, PRIOR) if with_luck else solve(pool, PRIOR)
    assert (sol.luck_sd > 0) == with_luck
    n, k = len(pool.bots), pool.sides
    inverse = sol.curvature.schur_solve(np.eye(n))
    fast = _jackknifed_scores(pool, sol, inverse)
    assert fast is not None
    raw = _unit_scores(pool, sol).toarray()
    ev = sol.evaluation
    for unit in range(len(pool.units)):
        mask = pool.unit_of == unit
        own = Evaluation(ev.loglik, ev.grad, np.where(mask[:, None, None], ev.neg_hess, 0.0),
                         ev.gain)
        share = bot_hessian(pool, own)
        board = pool.board_of[np.flatnonzero(mask)[0]]
        if with_luck and board >= 0:
            cols = slice(board * k, board * k + k)
            d = luck_hessian(pool, own)[board] + np.eye(k) / sol.luck_sd**2
            b = cross_hessian(pool, own, dense=True)[:, cols]
            share -= b @ np.linalg.solve(d, b.T)
        expected = np.linalg.solve(np.eye(n) - share @ inverse, raw[unit])
        assert fast.toarray()[unit] == pytest.approx(expected, abs=1e-10)


def test_the_luck_fit_reports_centred_ratings_and_a_proper_covariance() -> None:
    result = fit(lucky_pool(9))
    assert result.method == (
        "Plackett-Luce MAP with board luck, board-clustered sandwich 95% CI (t39)"
    )
    assert (result.games, result.units) == (200, 40)
    values = [r.rating for r in result.ratings]
    assert abs(math.fsum(values)) < 1e-9
    cov = result.covariance
    assert np.allclose(cov, cov.T) and np.allclose(cov.sum(axis=0), 0, atol=1e-6)
    assert np.all(np.linalg.eigvalsh(cov) > -1e-6)
    for r in result.ratings:
        assert r.ci_low < r.rating < r.ci_high


def test_order_and_repeats_do_not_change_the_luck_fit() -> None:
    games = lucky_pool(6, bots=12, boards=15)
    base = fit(games)
    rng = random.Random(3)
    shuffled = games + rng.sample(games, 20)
    rng.shuffle(shuffled)
    other = fit(shuffled)
    assert "board luck" in base.method and other.method == base.method
    assert (other.luck_sd, other.gain) == (base.luck_sd, base.gain)
    for a, b in zip(base.ratings, other.ratings, strict=True):
        assert a.bot_id == b.bot_id
        for x, y in ((a.rating, b.rating), (a.ci_low, b.ci_low), (a.ci_high, b.ci_high)):
            assert abs(x - y) < 1e-6
    assert np.abs(base.covariance - other.covariance).max() < 1e-6


@pytest.mark.parametrize(("cost", "dense"), [(0.0, 0), (10.0, 3), (1e12, 5)])
def test_the_schur_complement_and_its_products_match_the_dense_blocks(
    cost: float, dense: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Boards of 2 and 3 games: each board's block summed cell by cell, through a dense B
    (cost 1e12), or the boards of 3 games dense and those of 2 by cells (cost 10)."""
    from ratings import optimize

    monkeypatch.setattr(optimize, "_DENSE_COST", cost)
    games = lucky_pool(3, bots=9, boards=5)
    games = [g for g in games
             if not (g.unit in ("board001", "board003") and g.game_id.endswith("-2"))]
    pool = pack(canonical(games))
    newton = optimize.Newton(pool, PRIOR, 1.0, 1.4)
    newton.retune(1.2, 1.5)  # any point will do: move off zero
    newton.step()
    curv = newton.curvature()
    assert curv.layout is not None and curv.layout.dense.size == dense
    ev = newton.ev
    a = bot_hessian(pool, ev) + np.eye(len(pool.bots)) / PRIOR**2
    b = cross_hessian(pool, ev, dense=True)
    k, boards = pool.sides, len(pool.boards)
    d_inv = np.zeros((boards * k, boards * k))
    for i in range(boards):
        d_inv[i * k:(i + 1) * k, i * k:(i + 1) * k] = curv.luck_inverse[i]
    assert curv.schur == pytest.approx(a - b @ d_inv @ b.T, abs=1e-12)
    x, y = np.linspace(-1, 1, boards * k), np.linspace(2, -1, len(pool.bots))
    assert curv.cross_dot(x) == pytest.approx(b @ x, abs=1e-12)
    assert curv.cross_t_dot(y) == pytest.approx(b.T @ y, abs=1e-12)
    v = b @ d_inv
    expected = np.trace(np.linalg.solve(curv.schur, v @ v.T))
    assert curv.luck_over_bots_trace() == pytest.approx(expected, rel=1e-10)
    assert curv.schur_inverse() == pytest.approx(np.linalg.inv(curv.schur), rel=1e-10)


def test_luck_that_explains_every_game_leaves_the_plain_fit() -> None:
    """Seat position 0 wins every game of every board: luck accounts for all of it and the
    fresh-deal scale has no bound, so the pool gets the plain fit instead of no rating."""
    games = [Game(f"g{i:03d}", f"board{i // 2}",
                  tuple((f"b{(i + k) % 4}",) for k in range(3)), (1, 2, 3)) for i in range(12)]
    result = fit(games)
    assert "board luck" not in result.method and result.luck_sd == 0.0
    want = fit(plain(games))
    assert [(r.bot_id, round(r.rating, 6)) for r in result.ratings] == [
        (r.bot_id, round(r.rating, 6)) for r in want.ratings]
