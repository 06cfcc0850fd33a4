"""The test of a change's math: pair scores, its Elo, the GSPRT against hand-computed cases and
a brute-force maximisation, the fixed-games estimate, and bad input."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import minimize

from ratings import ELO_PER_NAT, RatingError
from ratings.sprt import (
    BINS,
    PAIR_SCORES,
    Sprt,
    Verdict,
    counts_of,
    elo_of_score,
    estimate,
    expected_pair_score,
    game_quarters,
    llr,
    log_ratio,
    pair_eighths,
    pentanomial,
    score_of_elo,
    shared,
)
from store.errors import InvalidArgument

TRI = np.array([0.0, 0.5, 1.0])

# ------------------------------------------------------------------ game and pair scores


@pytest.mark.parametrize(("placement", "quarters"), [
    ([1, 2, 3], [4, 2, 0]),
    ([3, 1, 2], [0, 4, 2]),
    ([1, 2, 2], [4, 1, 1]),  # two share second: (1/2 + 0) / 2 each
    ([1, 1, 3], [3, 3, 0]),  # two share first: (1 + 1/2) / 2 each
    ([1, 1, 1], [2, 2, 2]),
])
def test_3p_game_scores_share_tied_places(placement: list[int], quarters: list[int]) -> None:
    assert [game_quarters(3, placement, s) for s in range(3)] == quarters


def test_2v2_game_scores_are_the_team_result() -> None:
    assert [game_quarters(4, [1, 2, 1, 2], s) for s in range(4)] == [4, 0, 4, 0]
    assert [game_quarters(4, [2, 1, 2, 1], s) for s in range(4)] == [0, 4, 0, 4]
    assert [game_quarters(4, [1, 1, 1, 1], s) for s in range(4)] == [2, 2, 2, 2]


def test_a_forfeit_counts_as_its_stored_placement() -> None:
    # store.results.placement puts a 3p forfeiter last whatever its score, and a 2v2
    # forfeiter's team loses: the pair score reads the placement, nothing else.
    from store.results import placement
    forfeit_3p = placement(3, [25, 3, 10], None, forfeit_seat=0)
    assert game_quarters(3, forfeit_3p, 0) == 0
    forfeit_4p = placement(4, [30, 0], None, forfeit_seat=2)
    assert game_quarters(4, forfeit_4p, 0) == 0
    assert game_quarters(4, forfeit_4p, 1) == 4


def test_pair_scores_in_eighths() -> None:
    assert pair_eighths(3, [1, 2, 3], [3, 2, 1], 0) == 8  # C first, B last
    assert pair_eighths(3, [3, 2, 1], [1, 2, 3], 0) == 0
    assert pair_eighths(3, [2, 1, 3], [2, 3, 1], 0) == 4  # both second
    assert pair_eighths(3, [1, 2, 3], [2, 1, 3], 0) == 6  # first against second
    assert pair_eighths(3, [1, 2, 2], [2, 1, 3], 1) == 1  # 1/4 against 1: (1 + 1/4 - 1) / 2
    assert pair_eighths(3, [1, 2, 2], [2, 3, 1], 1) == 5  # 1/4 against 0
    assert pair_eighths(4, [1, 2, 1, 2], [1, 1, 1, 1], 2) == 6  # a win against a draw
    assert pair_eighths(4, [2, 1, 2, 1], [1, 2, 1, 2], 0) == 0


def test_counts_pentanomial_and_shared_bins() -> None:
    counts = counts_of([0, 2, 2, 4, 8, 3, 5, 5])
    assert counts == (1, 0, 2, 1, 1, 2, 0, 0, 1)
    assert pentanomial(counts) == (1, 2, 1, 0, 1)
    assert shared(counts) == (0, 1, 2, 0)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: game_quarters(5, [1, 2, 3], 0), "players must be 3 or 4"),
    (lambda: game_quarters(3, [1, 2], 0), "need 3 places"),
    (lambda: game_quarters(3, [1, 2, 3], 3), "seat must be"),
    (lambda: game_quarters(3, [1, 3, 3], 0), "competition ranking"),
    (lambda: game_quarters(4, [1, 2, 2, 1], 0), "partners"),
    (lambda: counts_of([9]), "0 to 8"),
])
def test_bad_results_are_clear_errors(call: object, message: str) -> None:
    with pytest.raises((InvalidArgument, RatingError), match=message):
        call()  # type: ignore[operator]


# ------------------------------------------------------------------ the Elo of a test


@pytest.mark.parametrize("players", [3, 4])
def test_elo_and_score_are_inverse(players: int) -> None:
    for elo in (-300.0, -20.0, 0.0, 5.0, 150.0):
        assert elo_of_score(score_of_elo(elo, players), players) == pytest.approx(elo, abs=1e-9)
    assert score_of_elo(0.0, players) == 0.5
    assert elo_of_score(0.25, players) == -math.inf
    assert elo_of_score(0.8, players) == math.inf


def test_the_test_elo_is_the_pool_difference_against_a_field_as_strong_as_b() -> None:
    for d in (-80.0, 10.0, 200.0):
        mu3 = expected_pair_score(3, 1500 + d, 1500, [1500, 1500])
        assert elo_of_score(mu3, 3) == pytest.approx(d, abs=1e-9)
        mu4 = expected_pair_score(4, 1500 + d, 1500, [1500, 1500, 1500])
        assert elo_of_score(mu4, 4) == pytest.approx(d, abs=1e-9)
    # By hand, 3p: C 100 above B and its two equal opponents wins each duel with
    # p = 1 / (1 + 10^(-1/4)) = 0.64006, B 1/2: mu = 1/2 + (p - 1/2) / 2.
    p = 1 / (1 + 10 ** -0.25)
    assert expected_pair_score(3, 100, 0, [0, 0]) == pytest.approx(0.5 + (p - 0.5) / 2)


def test_against_a_distant_field_the_test_elo_is_compressed_with_the_same_sign() -> None:
    far = elo_of_score(expected_pair_score(3, 50, 0, [400, 450]), 3)
    assert 0 < far < 50
    assert elo_of_score(expected_pair_score(3, -50, 0, [-500, 300]), 3) < 0
    assert expected_pair_score(3, 7, 7, [-500, 300]) == 0.5


# ------------------------------------------------------------------ the GSPRT


def _brute_log_ratio(counts: np.ndarray, scores: np.ndarray, mean: float) -> float:
    """log L(empirical) - max log L at the given mean, by SLSQP over the whole simplex."""
    n = counts.astype(float)
    k = len(scores)

    def neg(p: np.ndarray) -> float:
        return -float(np.sum(n * np.log(np.maximum(p, 1e-300))))

    def grad(p: np.ndarray) -> np.ndarray:
        return -n / np.maximum(p, 1e-300)

    cons = [{"type": "eq", "fun": lambda p: p.sum() - 1.0, "jac": lambda p: np.ones(k)},
            {"type": "eq", "fun": lambda p: p @ scores - mean, "jac": lambda p: scores}]
    best = math.inf
    start = (n + 0.5) / (n + 0.5).sum()
    for mix in (0.0, 0.3, 0.7):
        p0 = (1 - mix) * start + mix * np.full(k, 1 / k)
        res = minimize(neg, p0, jac=grad, method="SLSQP", bounds=[(0.0, 1.0)] * k,
                       constraints=cons, options={"ftol": 1e-13, "maxiter": 5000})
        p = res.x
        # SLSQP may stop at its precision limit with a warning; keep any feasible optimum.
        if abs(p.sum() - 1) < 1e-9 and abs(p @ scores - mean) < 1e-9 and p.min() >= -1e-12:
            best = min(best, float(res.fun))
    assert math.isfinite(best), "the brute force found no feasible optimum"
    w = n / n.sum()
    empirical = float(np.sum(np.where(n > 0, n * np.log(np.where(n > 0, w, 1.0)), 0.0)))
    return empirical + best


@pytest.mark.parametrize("seed", range(12))
def test_log_ratio_matches_a_brute_force_maximisation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 30, BINS)
    counts[rng.random(BINS) < 0.3] = 0  # some empty bins, the ends included at times
    counts[4] += 1
    for mean in (0.3, 0.48, 0.5, 0.53, 0.7):
        ours = float(log_ratio(counts, PAIR_SCORES, mean))
        assert ours == pytest.approx(_brute_log_ratio(counts, PAIR_SCORES, mean), abs=2e-6)


def _golden_log_ratio(counts: np.ndarray, mean: float) -> np.ndarray:
    """log_ratio by another road: golden-section search of the concave D(t) over the
    closed range of t, row by row, the ends also tried (an unobserved extreme)."""
    n = counts.astype(np.float64)
    total = n.sum(axis=1)
    w = n / total[:, None]
    d = PAIR_SCORES - mean
    lo, hi = -1.0 / (1.0 - mean), 1.0 / mean

    def value(t: np.ndarray) -> np.ndarray:
        arg = 1.0 + t[:, None] * d
        with np.errstate(divide="ignore", invalid="ignore"):
            out: np.ndarray = np.where(w > 0, w * np.log(np.where(w > 0, arg, 1.0)), 0.0)
        total_d: np.ndarray = np.nan_to_num(out.sum(axis=1), nan=-np.inf)
        return total_d

    a, b = np.full(len(n), lo), np.full(len(n), hi)
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    for _ in range(90):  # 0.618^90 of the range: below rounding
        c, e = b - ratio * (b - a), a + ratio * (b - a)
        left = value(c) > value(e)
        a, b = np.where(left, a, c), np.where(left, e, b)
    best = np.maximum(value((a + b) / 2.0),
                      np.maximum(value(np.full(len(n), lo)), value(np.full(len(n), hi))))
    result: np.ndarray = np.maximum(total * best, 0.0)
    return result


def test_log_ratio_next_to_a_pole_of_the_slope() -> None:
    # A CI run's test accepted H0 at LLR -4.03 with 56 pairs scoring 0.64: at these counts
    # Newton's first step from t = 0 lands a rounding error short of t = 2, where the
    # observed score 0 makes 1 + t (0 - 1/2) vanish; the next step was tiny, taken for
    # convergence, and D there is -inf, so the log ratio at mean 1/2 came out 0, not 7.28.
    counts = np.array([1, 1, 1, 1, 22, 9, 7, 5, 7])
    assert float(log_ratio(counts, PAIR_SCORES, 0.5)) == pytest.approx(
        _brute_log_ratio(counts, PAIR_SCORES, 0.5), abs=2e-6)
    assert float(log_ratio(counts, PAIR_SCORES, 0.5)) == pytest.approx(7.2833124639, abs=1e-8)
    test = Sprt(0.0, 50.0)
    assert test.judge([int(c) for c in counts])[1] is Verdict.H1


@pytest.mark.parametrize("mean", [0.3, 0.5, 0.5357315587041908, 0.7])
def test_log_ratio_of_every_small_count_vector_and_many_large_ones(mean: float) -> None:
    # Every count vector of 1 to 7 pairs (11,439), and 5,000 random ones of up to 500
    # pairs from skewed distributions: the Newton answer is the golden-section one.
    small = [np.bincount(c, minlength=BINS) for n in range(1, 8)
             for c in itertools.combinations_with_replacement(range(BINS), n)]
    rng = np.random.default_rng(7)
    large = [rng.multinomial(int(rng.integers(1, 500)), rng.dirichlet(np.full(BINS, 0.7)))
             for _ in range(5_000)]
    counts = np.array(small + large)
    ours = log_ratio(counts, PAIR_SCORES, mean)
    assert np.abs(ours - _golden_log_ratio(counts, mean)).max() < 1e-9


def test_an_unobserved_extreme_takes_mass_when_the_mean_needs_it() -> None:
    # Only middling pair scores, mean asked above all of them: the brute force agrees.
    counts = np.array([0, 0, 3, 0, 10, 0, 2, 0, 0])
    for mean in (0.62, 0.74, 0.9):
        ours = float(log_ratio(counts, PAIR_SCORES, mean))
        assert ours == pytest.approx(_brute_log_ratio(counts, PAIR_SCORES, mean), abs=2e-6)


def test_two_observed_scores_give_the_binomial_sprt() -> None:
    # Only 0 and 1 seen: the constrained fit is (1 - mu, mu), so the LLR is Wald's.
    n0, n1, mu0, mu1 = 30, 45, 0.5, 0.55
    by_hand = n1 * math.log(mu1 / mu0) + n0 * math.log((1 - mu1) / (1 - mu0))
    assert float(llr([n0, 0, n1], TRI, mu0, mu1)) == pytest.approx(by_hand, rel=1e-12)


def test_all_pairs_drawn() -> None:
    # All scores 1/2, mean 0.51: the best fit puts 2% on score 1 and 98% on 1/2.
    assert float(log_ratio([0, 12, 0], TRI, 0.51)) == pytest.approx(-12 * math.log(0.98))


def test_trinomial_by_hand() -> None:
    # Counts (1, 2, 1) at mean 0.6, d = x - 0.6 = (-0.6, -0.1, 0.4), w = (1/4, 1/2, 1/4):
    # g(t) = -0.15 / (1 - 0.6 t) - 0.05 / (1 - 0.1 t) + 0.1 / (1 + 0.4 t) = 0. Over the common
    # denominator: 0.024 t^2 - 0.105 t - 0.1 = 0, whose root in [-1/0.4, 1/0.6] is
    # t = (0.105 - sqrt(0.020625)) / 0.048.
    t = (0.105 - math.sqrt(0.020625)) / 0.048
    expected = 4 * (0.25 * math.log(1 - 0.6 * t) + 0.5 * math.log(1 - 0.1 * t)
                    + 0.25 * math.log(1 + 0.4 * t))
    assert float(log_ratio([1, 2, 1], TRI, 0.6)) == pytest.approx(expected, abs=1e-12)


def test_log_ratio_is_zero_at_the_empirical_mean_and_vectorises() -> None:
    counts = np.array([[3, 0, 5, 1, 9, 0, 4, 0, 2], [0, 0, 0, 0, 0, 0, 0, 0, 0],
                       [0, 0, 0, 0, 7, 0, 0, 0, 0]])
    mean = float(counts[0] @ PAIR_SCORES / counts[0].sum())
    out = log_ratio(counts, PAIR_SCORES, mean)
    assert out.shape == (3,)
    assert out[0] == pytest.approx(0.0, abs=1e-12)
    assert out[1] == 0.0
    assert float(log_ratio(counts[2], PAIR_SCORES, 0.5)) == 0.0  # all at 1/2, mean 1/2
    rows = log_ratio(counts, PAIR_SCORES, 0.45)
    assert rows[0] == pytest.approx(float(log_ratio(counts[0], PAIR_SCORES, 0.45)))


def test_sprt_bounds_verdicts_and_path() -> None:
    test = Sprt(0.0, 10.0, alpha=0.05, beta=0.1)
    assert test.lower == pytest.approx(math.log(0.1 / 0.95))
    assert test.upper == pytest.approx(math.log(0.9 / 0.05))
    assert test.verdict(test.upper) is Verdict.H1
    assert test.verdict(test.lower) is Verdict.H0
    assert test.verdict(0.0) is Verdict.PENDING
    # Far more wins than losses: H1; far more losses: H0.
    value, verdict = test.judge([0, 0, 100, 0, 400, 0, 300, 0, 0])
    assert verdict is Verdict.H1
    assert value == pytest.approx(test.llr([0, 0, 100, 0, 400, 0, 300, 0, 0]))
    assert test.judge([0, 0, 300, 0, 400, 0, 100, 0, 0])[1] is Verdict.H0
    seq = [4, 6, 2, 8, 4, 5, 4]
    path = test.path(seq)
    assert path.shape == (len(seq),)
    for i in range(len(seq)):
        assert path[i] == pytest.approx(test.llr(counts_of(seq[: i + 1])))
    assert test.path([]).shape == (0,)


def test_the_llr_is_the_same_whatever_elo_names_the_scores() -> None:
    # The GSPRT depends on the two mean scores only: a 3p test at (0, 20) and a 2v2 test at
    # (0, 40) constrain the same means, so they give the same LLR.
    counts = [2, 0, 14, 1, 30, 0, 19, 0, 3]
    assert Sprt(0, 20, players=3).llr(counts) == pytest.approx(Sprt(0, 40, players=4).llr(counts))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"elo0": 5.0, "elo1": 5.0}, "elo0 must be below elo1"),
    ({"elo0": 10.0, "elo1": 0.0}, "elo0 must be below elo1"),
    ({"alpha": 0.0}, r"alpha must be in \(0, 0.5\)"),
    ({"alpha": 0.5}, r"alpha must be in \(0, 0.5\)"),
    ({"beta": -0.1}, r"beta must be in \(0, 0.5\)"),
    ({"beta": 0.7}, r"beta must be in \(0, 0.5\)"),
    ({"elo1": math.inf}, "elo1 must be a finite number"),
    ({"alpha": math.nan}, "alpha must be a finite number"),
    ({"players": 2}, "players must be 3 or 4"),
])
def test_bad_test_arguments_are_clear_errors(kwargs: dict[str, float], message: str) -> None:
    args: dict[str, float] = {"elo0": 0.0, "elo1": 5.0} | kwargs
    with pytest.raises(RatingError, match=message):
        Sprt(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize(("counts", "message"), [
    ([1, 2, 3], "9 bins"),
    ([1, 2, 3, 4, 5, 6, 7, 8, -1], "non-negative"),
    ([1, 2, 3, 4, 5, 6, 7, 8, math.nan], "finite"),
])
def test_bad_counts_are_clear_errors(counts: list[float], message: str) -> None:
    with pytest.raises(RatingError, match=message):
        Sprt(0, 5).llr(counts)


def test_log_ratio_refuses_a_mean_outside_the_scores() -> None:
    with pytest.raises(RatingError, match="strictly between"):
        log_ratio([1, 1, 1], TRI, 1.0)
    with pytest.raises(RatingError, match="increasing"):
        log_ratio([1, 1, 1], [0.0, 1.0, 0.5], 0.5)


# ------------------------------------------------------------------ fixed games


def test_estimate_by_hand() -> None:
    counts = [0, 0, 2, 0, 4, 0, 4, 0, 0]  # scores 1/4 x2, 1/2 x4, 3/4 x4: mean 0.55
    est = estimate(counts, 3)
    mean = (2 * 0.25 + 4 * 0.5 + 4 * 0.75) / 10
    var = (2 * (0.25 - mean) ** 2 + 4 * (0.5 - mean) ** 2 + 4 * (0.75 - mean) ** 2) / 9
    se = math.sqrt(var / 10)
    assert est.pairs == 10
    assert est.score == pytest.approx(mean)
    assert est.sd == pytest.approx(math.sqrt(var))
    p = 2 * mean - 0.5
    assert est.elo == pytest.approx(ELO_PER_NAT * math.log(p / (1 - p)))
    assert est.low == pytest.approx(elo_of_score(mean - 1.959963984540054 * se, 3))
    assert est.high == pytest.approx(elo_of_score(mean + 1.959963984540054 * se, 3))
    assert est.low < est.elo < est.high
    assert 0.5 < est.los < 1


def test_estimate_with_too_few_pairs_says_nothing() -> None:
    empty = estimate([0] * BINS, 3)
    assert (empty.pairs, empty.low, empty.high) == (0, -math.inf, math.inf)
    one = estimate(counts_of([6]), 4)
    assert one.pairs == 1 and one.low == -math.inf and one.high == math.inf
