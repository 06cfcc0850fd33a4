"""The batch rating fit: inputs, known answers, an independent implementation, invariance."""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import choix
import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import expit

from ratings import (
    ELO_PER_NAT,
    Game,
    RatingError,
    canonical,
    fit,
    games_from_rows,
    provisional_ratings,
    to_nat,
)
from ratings.model import evaluate, pack


def g3(gid: str, bots: str, places: tuple[int, ...], unit: str = "") -> Game:
    """A 3p game between single-letter bots."""
    return Game(gid, unit, tuple((b,) for b in bots), places)


def duel(gid: str, a: str, b: str, places: tuple[int, int], unit: str = "") -> Game:
    """A 2v2 game in which each bot holds both seats of its team."""
    return Game(gid, unit, ((a,), (b,)), places)


def random_pool(seed: int, bots: int = 8, games: int = 300, boards: bool = True) -> list[Game]:
    """Random 3p games with strengths and ties, grouped in boards of four."""
    rng = random.Random(seed)
    names = [f"b{i}" for i in range(bots)]
    strength = {n: rng.gauss(0, 1) for n in names}
    out = []
    for g in range(games):
        table = rng.sample(names, 3)
        perf = [strength[n] + rng.gauss(0, 1) for n in table]
        rounded = [round(p * 2) for p in perf]  # coarse scores give some ties
        places = tuple(1 + sum(q > p for q in rounded) for p in rounded)
        out.append(Game(f"g{g}", f"u{g // 4}" if boards else "", tuple((n,) for n in table),
                        places))
    return out


# --- inputs -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sides", "places", "message"),
    [
        ((("a",), ("b",), ("c",)), (1, 2), "3 sides but 2 places"),
        ((("a",), ("b",), ("c",)), (1, 3, 3), "competition ranking"),
        ((("a",), ("b",), ("c",)), (2, 2, 3), "competition ranking"),
        ((("a",), ("b",), ("c",)), (0, 1, 2), "competition ranking"),
        ((("a", "d"), ("b",), ("c",)), (1, 2, 3), "1 to 1 distinct bots"),
        ((("a", "a"), ("b",)), (1, 2), "distinct bots"),
        ((("a", "b", "c"), ("d",)), (1, 2), "1 to 2 distinct bots"),
        ((("a",),), (1,), "needs 2 sides"),
        ((("a",), ("",)), (1, 2), "non-empty"),
    ],
)
def test_a_bad_game_raises_naming_it(
    sides: tuple[tuple[str, ...], ...], places: tuple[int, ...], message: str
) -> None:
    with pytest.raises(RatingError, match=message) as info:
        Game("bad-7", "", sides, places)
    assert "'bad-7'" in str(info.value)


def test_valid_places_include_every_tie_pattern() -> None:
    for places in [(1, 2, 3), (3, 1, 2), (1, 1, 3), (3, 1, 1), (1, 2, 2), (1, 1, 1)]:
        g3("g", "abc", places)
    duel("g", "a", "b", (1, 1))


def row(mid: str, bots: list[str], placement: list[int], **extra: Any) -> dict[str, Any]:
    """A result row as workers' result_row makes it."""
    return {"match_id": mid, "bot_ids": bots, "players": len(bots), "placement": placement,
            "final": [0] * (3 if len(bots) == 3 else 2), "winner": None, "end": "target",
            "forfeit": None, "seats": [], **extra}


def test_games_from_rows() -> None:
    games = games_from_rows([
        row("m1", ["a", "b", "c"], [2, 1, 3], board="t1-r1"),
        row("m2", ["a", "b", "c", "d"], [2, 1, 2, 1]),
        row("m3", ["x", "y", "x", "y"], [1, 1, 1, 1], board="d7"),
    ])
    assert games == (
        Game("m1", "t1-r1", (("a",), ("b",), ("c",)), (2, 1, 3)),
        Game("m2", "", (("a", "c"), ("b", "d")), (2, 1)),
        Game("m3", "d7", (("x",), ("y",)), (1, 1)),
    )


def test_games_from_bad_rows_name_the_match() -> None:
    with pytest.raises(RatingError, match=r"'m9'.*different places"):
        games_from_rows([row("m9", ["a", "b", "c", "d"], [1, 2, 2, 2])])
    with pytest.raises(RatingError, match=r"'m8'.*malformed"):
        games_from_rows([{"match_id": "m8", "players": 3}])
    with pytest.raises(RatingError, match=r"'m7'.*one place per seat"):
        games_from_rows([row("m7", ["a", "b", "c"], [1, 2])])


def test_a_house_bot_on_two_sides_is_rated_once_a_game() -> None:
    """A house bot may hold seats on both teams or two seats of a 3p table; its games count
    once each, and the game still says how the others did against it."""
    games = games_from_rows([
        row("m1", ["house:greedy", "a", "house:greedy"], [1, 3, 2]),
        row("m2", ["a", "house:greedy", "b", "house:greedy"], [2, 1, 2, 1]),
    ])
    assert games[0].sides == (("house:greedy",), ("a",), ("house:greedy",))
    assert games[1].sides == (("a", "b"), ("house:greedy",))
    h = "house:greedy"
    rows = [row(f"n{i}", [h, "a", h], [1, 2, 3] if i % 2 else [3, 2, 1]) for i in range(10)]
    rows += [row(f"w{i}", ["a", h, h], [1, 2, 3]) for i in range(6)]
    table = fit(games_from_rows(rows))
    assert table.rating("house:greedy").games == 16 and table.rating("a").games == 16
    assert table.rating("a").rating > table.rating("house:greedy").rating  # a won 6 of 16 outright
    live = {r.bot_id: r for r in provisional_ratings(games_from_rows(rows))}
    assert live["house:greedy"].games == 16


def test_canonical_dedupes_sorts_naturally_and_rejects_conflicts() -> None:
    a, b, c = g3("g10", "abc", (1, 2, 3)), g3("g9", "abc", (1, 2, 3)), g3("g2", "abc", (3, 2, 1))
    assert canonical([a, b, a, c, b]) == (c, b, a)
    with pytest.raises(RatingError, match="two different games under id 'g9'"):
        canonical([b, g3("g9", "abc", (2, 1, 3))])


def test_mixed_pools_raise() -> None:
    with pytest.raises(RatingError, match="mix 3-player and 2v2"):
        fit([g3("g1", "abc", (1, 2, 3)), duel("g2", "a", "b", (1, 2))])


# --- the likelihood ---------------------------------------------------------------


def pl(theta: dict[str, float], order: tuple[str, ...]) -> float:
    """Brute-force Plackett-Luce probability of a strict order."""
    p = 1.0
    for k in range(len(order) - 1):
        p *= math.exp(theta[order[k]]) / sum(math.exp(theta[o]) for o in order[k:])
    return p


@pytest.mark.parametrize("places", [(1, 2, 3), (3, 1, 1), (1, 1, 3), (3, 1, 2), (1, 1, 1)])
def test_tied_ranking_is_the_sum_over_consistent_orderings(places: tuple[int, int, int]) -> None:
    pool = pack([g3("g", "abc", places)])
    theta = np.array([0.7, -0.2, 0.4])
    named = dict(zip("abc", theta, strict=True))
    expected = sum(
        pl(named, order) for order in itertools.permutations("abc")
        if all(places["abc".index(x)] <= places["abc".index(y)]
               for x, y in itertools.pairwise(order))
    )
    assert evaluate(pool, theta).loglik[0] == pytest.approx(math.log(expected), abs=1e-12)


@pytest.mark.parametrize(
    "game",
    [g3("g", "abc", (1, 2, 3)), g3("g", "abc", (3, 1, 1)), g3("g", "abc", (1, 1, 3)),
     Game("g", "", (("a", "b"), ("c",)), (2, 1)), Game("g", "", (("a", "b"), ("c",)), (1, 1))],
)
def test_gradient_and_hessian_match_finite_differences(game: Game) -> None:
    from ratings.model import bot_gradient, bot_hessian

    pool = pack([game])
    theta = np.array([0.3, -0.5, 0.9])
    ev = evaluate(pool, theta)
    h = 1e-6
    num_grad, num_hess = np.zeros(3), np.zeros((3, 3))
    for i in range(3):
        step = np.eye(3)[i] * h
        up, down = evaluate(pool, theta + step), evaluate(pool, theta - step)
        num_grad[i] = (up.loglik[0] - down.loglik[0]) / (2 * h)
        num_hess[i] = -(bot_gradient(pool, up) - bot_gradient(pool, down)) / (2 * h)
    assert bot_gradient(pool, ev) == pytest.approx(num_grad, abs=1e-7)
    assert bot_hessian(pool, ev) == pytest.approx(num_hess, abs=1e-6)


# --- known answers ------------------------------------------------------------------


@pytest.mark.parametrize(("wins", "n"), [(7, 10), (1, 3), (5, 5)])
def test_two_bots_match_the_one_dimensional_map(wins: int, n: int) -> None:
    games = [duel(f"g{i}", "a", "b", (1, 2) if i < wins else (2, 1)) for i in range(n)]
    result = fit(games)
    s2 = to_nat(400.0) ** 2
    # theta_a = -theta_b = d/2; the posterior's stationary point: n sigma(d) - w + d/(2 s2) = 0.
    d = brentq(lambda d: n * expit(d) - wins + d / (2 * s2), -50, 50, xtol=1e-14)
    assert result.rating("a").rating - result.rating("b").rating == pytest.approx(
        d * ELO_PER_NAT, abs=1e-6
    )
    assert result.rating("a").rating == pytest.approx(-result.rating("b").rating, abs=1e-9)


def test_with_a_flat_prior_two_bots_give_the_logit() -> None:
    games = [duel(f"g{i}", "a", "b", (1, 2) if i < 30 else (2, 1)) for i in range(40)]
    result = fit(games, prior_sd=1e6)
    diff = result.rating("a").rating - result.rating("b").rating
    assert diff == pytest.approx(math.log(30 / 10) * ELO_PER_NAT, abs=1e-4)
    assert diff == pytest.approx(400 * math.log10(3), abs=1e-4)  # odds 3:1 on the Elo scale


def test_symmetric_data_gives_equal_ratings() -> None:
    games = [g3(f"g{i}", "abc", p) for i, p in enumerate(itertools.permutations((1, 2, 3)))]
    result = fit(games)
    for r in result.ratings:
        assert r.rating == pytest.approx(0.0, abs=1e-9)
        assert r.games == 6


def test_an_unbeaten_bot_stays_finite() -> None:
    games = [g3(f"g{i}", "abc" if i % 2 else "acb", (1, 2, 3)) for i in range(40)]
    result = fit(games)
    top = result.ratings[0]
    assert top.bot_id == "a"
    assert 300 < top.rating < 3000
    assert math.isfinite(top.ci_low) and math.isfinite(top.ci_high)
    assert top.ci_low < top.rating < top.ci_high
    assert top.los_next is not None and top.los_next > 0.99


def test_a_bot_holding_both_seats_has_its_own_strength_against_a_team_mean() -> None:
    # Solo holds both seats against the team (x, y), winning 6 of 9: the model sees only
    # solo - mean(x, y), the prior splits x and y equally and centres the pool.
    games = [Game(f"g{i}", "", (("solo",), ("x", "y")), (1, 2) if i < 6 else (2, 1))
             for i in range(9)]
    result = fit(games)
    x, y, solo = (result.rating(b).rating for b in ("x", "y", "solo"))
    assert x == pytest.approx(y, abs=1e-9)
    s2 = to_nat(400.0) ** 2
    # theta_solo = 2d/3, theta_x = theta_y = -d/3: stationary at 9 sigma(d) - 6 + 2d/(3 s2) = 0.
    d = brentq(lambda d: 9 * expit(d) - 6 + 2 * d / (3 * s2), -50, 50, xtol=1e-14)
    assert solo - (x + y) / 2 == pytest.approx(d * ELO_PER_NAT, abs=1e-6)


def test_equal_team_and_solo_bot_stay_level_when_they_split_the_games() -> None:
    games = [Game(f"g{i}", "", (("solo",), ("x", "y")), (1, 2) if i % 2 else (2, 1))
             for i in range(10)]
    assert all(abs(r.rating) < 1e-9 for r in fit(games).ratings)


def test_a_2v2_draw_counts_as_half_a_win_each() -> None:
    drawn = [duel("g1", "a", "b", (1, 2)), duel("g2", "a", "b", (1, 1)),
             duel("g3", "a", "b", (1, 1))]
    halves = [duel("g1", "a", "b", (1, 2)), duel("g2", "a", "b", (1, 2)),
              duel("g3", "a", "b", (2, 1))]
    assert fit(drawn).rating("a").rating == pytest.approx(fit(halves).rating("a").rating, abs=1e-9)
    assert fit([duel("g1", "a", "b", (1, 1))]).rating("a").rating == pytest.approx(0, abs=1e-12)


def test_an_all_tied_3p_game_carries_no_information() -> None:
    games = random_pool(3, games=60, boards=False)
    base = fit(games)
    more = fit([*games, Game("tie", "", (("b0",), ("b1",), ("b2",)), (1, 1, 1))])
    for r in base.ratings:
        assert more.rating(r.bot_id).rating == pytest.approx(r.rating, abs=1e-6)
    assert more.games == base.games + 1


# --- against an independent implementation ---------------------------------------


def test_strict_3p_rankings_agree_with_choix() -> None:
    rng = random.Random(11)
    names = [f"b{i}" for i in range(7)]
    strength = [rng.gauss(0, 1) for _ in names]
    games: list[Game] = []
    rankings: list[tuple[int, ...]] = []
    for g in range(400):
        table = rng.sample(range(7), 3)
        perf = [strength[i] - math.log(-math.log(rng.random())) for i in table]  # + Gumbel
        order = [table[k] for k in sorted(range(3), key=lambda k: -perf[k])]
        rankings.append(tuple(order))
        places = tuple(1 + order.index(i) for i in table)
        sides = tuple((names[i],) for i in table)
        games.append(Game(f"g{g}", "", sides, places))
    sd = to_nat(400.0)
    # choix penalises alpha * sum(theta^2); our prior adds sum(theta^2) / (2 sd^2).
    theirs = choix.opt_rankings(7, rankings, alpha=1 / (2 * sd**2), tol=1e-12)
    theirs = (theirs - theirs.mean()) * ELO_PER_NAT
    result = fit(games)
    for i, name in enumerate(names):
        assert result.rating(name).rating == pytest.approx(theirs[i], abs=1e-6)


def test_two_sided_games_agree_with_choix_pairwise() -> None:
    rng = random.Random(5)
    strength = [rng.gauss(0, 1) for _ in range(6)]
    games, pairs = [], []
    for g in range(300):
        a, b = rng.sample(range(6), 2)
        win = rng.random() < expit(strength[a] - strength[b])
        pairs.append((a, b) if win else (b, a))
        games.append(duel(f"g{g}", f"b{a}", f"b{b}", (1, 2) if win else (2, 1)))
    sd = to_nat(400.0)
    theirs = choix.opt_pairwise(6, pairs, alpha=1 / (2 * sd**2), tol=1e-12)
    theirs = (theirs - theirs.mean()) * ELO_PER_NAT
    result = fit(games)
    for i in range(6):
        assert result.rating(f"b{i}").rating == pytest.approx(theirs[i], abs=1e-6)


# --- the result ---------------------------------------------------------------


def test_the_fit_reports_centred_ratings_intervals_and_los() -> None:
    result = fit(random_pool(1))
    assert result.method == (
        "Plackett-Luce MAP with board luck, board-clustered sandwich 95% CI (t74)"
    )
    assert (result.games, result.units) == (300, 75)
    values = [r.rating for r in result.ratings]
    assert values == sorted(values, reverse=True)
    assert abs(math.fsum(values)) < 1e-9
    assert sum(r.games for r in result.ratings) == 900
    cov = result.covariance
    assert np.allclose(cov, cov.T) and np.allclose(cov.sum(axis=0), 0, atol=1e-6)
    assert np.all(np.linalg.eigvalsh(cov) > -1e-6)
    for upper, lower in itertools.pairwise(result.ratings):
        assert upper.ci_low < upper.rating < upper.ci_high
        assert upper.los_next == pytest.approx(result.los(upper.bot_id, lower.bot_id))
        assert upper.los_next is not None and upper.los_next >= 0.5
    assert result.ratings[-1].los_next is None
    ids, matrix = result.los_matrix()
    assert ids == tuple(r.bot_id for r in result.ratings)
    assert np.allclose(matrix + matrix.T, 1.0)
    assert matrix[0, 1] == pytest.approx(result.ratings[0].los_next)
    with pytest.raises(RatingError, match="'nobody'"):
        result.rating("nobody")


def test_games_without_a_unit_are_each_their_own_unit() -> None:
    result = fit(random_pool(2, games=90, boards=False))
    assert result.units == 90


def test_empty_pool() -> None:
    result = fit([])
    assert (result.ratings, result.games, result.units) == ((), 0, 0)


def test_order_and_repeats_do_not_change_the_fit() -> None:
    games = random_pool(4)
    base = fit(games)
    rng = random.Random(9)
    shuffled = games + rng.sample(games, 50)
    rng.shuffle(shuffled)
    other = fit(shuffled)
    assert (other.games, other.units, other.method) == (base.games, base.units, base.method)
    for a, b in zip(base.ratings, other.ratings, strict=True):
        assert a.bot_id == b.bot_id and a.games == b.games
        for x, y in ((a.rating, b.rating), (a.ci_low, b.ci_low), (a.ci_high, b.ci_high)):
            assert abs(x - y) < 1e-6
        assert abs((a.los_next or 0) - (b.los_next or 0)) < 1e-9
    assert np.abs(base.covariance - other.covariance).max() < 1e-6


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_bad_prior_raises(bad: float) -> None:
    with pytest.raises(RatingError, match="prior_sd"):
        fit([g3("g1", "abc", (1, 2, 3))], prior_sd=bad)


def test_bad_level_raises() -> None:
    with pytest.raises(RatingError, match="level"):
        fit([g3("g1", "abc", (1, 2, 3))], level=1.5)
