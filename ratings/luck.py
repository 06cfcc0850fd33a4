"""Board luck: how much a deal favours each seat position, estimated with the ratings.

Why: a board (a deal seed) is played at several tables at once, each seat
position by different bots, so a good hand at position p helps every bot in
position p of that board. Read game by game, that luck is noise the fit can
only average away; modelled, it cancels the way duplicate scoring intends:
two bots who held the same position of the same board are compared on the
same hands. So each board b and seat position p (3p: seats 0, 1, 2; 2v2: the
team of seats 0/2 and the team of seats 1/3) gets a luck effect lambda[b, p]
added to the utility of the side there (`ratings.model`):

    u = k * strength + lambda[b, p],    lambda[b, p] ~ N(0, tau^2) independently,

fitted jointly with the strengths (MAP, `ratings.optimize`). Only boards of
two or more games get luck: a board played once (or a game without a unit)
cannot tell its luck from its bots', so its luck stays integrated out and the
game reads as a fresh deal (u = strength). A pool of a single unit, or whose
boards' games are all ties, gets no luck either: the plain fit.

No sum-to-zero constraint: a ranking depends only on differences of
utilities, so the likelihood is flat along lambda[b, .] + c and the prior
alone sets each board's mean luck to 0 at the MAP. tau^2 is the variance of
one position's luck independently of the others'; as only differences
matter, that covers any exchangeable dependence between the hands of a deal.
A Gaussian prior keeps the objective convex.

tau is estimated from the pool (empirical Bayes), by the fixed point of the
Laplace (PQL-type) approximation to the marginal likelihood,

    tau^2 = (|lambda|^2 + tr Cov(lambda) - boards * tau^2) / (boards * (sides - 1)),

with lambda the MAP luck and Cov(lambda) the luck block of the inverse
Hessian of the whole posterior (D^-1 + D^-1 B^T S^-1 B D^-1, so that the
bots' own uncertainty is not taken for luck, as in REML); each board's mean
luck, whose posterior is its prior, is taken out (the `- boards * tau^2` and
the `sides - 1`). The secant method on log tau^2 finds it, tau's steps taken
between Newton steps of the fit. tau below 1/1000 of the performance noise's
sd counts as no luck. With few tables per board this estimate is low, as
PQL's are (bench/ratings.py, 5 tables a board, luck of sd 2.22: tau = 1.4 to
1.6; at 333 tables a board tau^2 = 4.70 for 4.93), but the ratings hardly
depend on it: in that simulation, at 30 games per bot, tau estimated (tau^2
about 2.3) and fixed at 4.93 (the truth) and at 10 gave an RMSE of 49.6, 49.1
and 49.3 Elo. What tau would get wrong is the scale, so it is not taken from
tau:

The scale. Given its luck a game is PL in k * strength + lambda; over fresh
deals it must be PL in the strengths themselves, the scale an Elo rating
promises (win odds over endless new deals) and the scale of the games
without luck. For the luck laws where both hold, Gumbel + lambda is a Gumbel
scaled by k, so k^2 = 1 + tau^2 / (pi^2/6) (for k = 2 the luck is
-log(2 Z^2), Z standard normal, which bench/ratings.py simulates). The fit
uses that gain while it estimates tau, but the MAP strengths it gives are
attenuated by the luck the board's few tables cannot pin down, and tau is
low, so their scale is off by a few percent, differently for each schedule
(simulated: slopes of 0.965 to 0.99 against the truth), enough for the
intervals to miss at 1,000 games per bot (coverage 0.91). So the direction
comes from the luck model and the scale from the games read as fresh deals:
the ratings are c * theta, with c maximising the plain Plackett-Luce /
Bradley-Terry log-posterior of all the games at c * theta (`fresh_scale`),
and c's uncertainty enters the intervals (`ratings.intervals`): coverage
0.94 at 1,000 games per bot in both schedules. `Fit.gain` reports the gain
k / c the ratings then stand for. The price: c is one more
estimate (sd about a tenth of its value at 30 games per bot there), and
along the fitted direction the fresh-deal likelihood again reads luck as
skill, so in a pool of equals c restores much of the plain fit's spread.

Where the search starts. tau is settled to 1e-13 in log tau^2, read at the MAP to
rounding (a change of 1e-6 moves a rating by about 1e-5 Elo, and a bot of one game
by more), so the fit is one function of the games, to 1e-9 Elo, whatever the path
to it; the paths differ in cost only. A refit starts from an earlier fit
(`Start`: its strengths, tau, scale, and the slope of tau's residual, so that its
first step in tau is already a secant's), with each board's luck solved alone
first given those strengths (`luck_given`, all boards at once). A large pool
without one starts from a rough fit of every eighth of its units, boards whole
(itself started so, down to a few tens of thousands of games): its strengths are
close, and its tau within about 1e-2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from ratings.errors import RatingError
from ratings.model import (
    Pool,
    evaluate,
    luck_hessian,
    side_strengths,
    subpool,
    utility_terms,
)
from ratings.optimize import Newton, Solution, inverse_blocks, solve

__all__ = ["NOISE_VAR", "Start", "fresh_scale", "gain", "luck_given", "solve_with_luck"]

FloatArray = NDArray[np.float64]

NOISE_VAR = math.pi**2 / 6  # variance of the Gumbel performance noise of Plackett-Luce
_START = math.log(NOISE_VAR)  # first guess: luck as large as the performance noise
_LOWEST = math.log(1e-6 * NOISE_VAR)  # tau below 1/1000 of the noise's sd: no luck
_HIGHEST = math.log(1e3 * NOISE_VAR)
# In log tau^2: 1e-6 moves a rating by about 1e-5 Elo (1,000 bots, 100,000 games), so tau
# settles far below, where a rating is the same, to 1e-9 Elo, from any start.
_RHO_TOL = 1e-13
_RHO_FLOOR = 1e-10  # a change below this that no longer halves is rounding: settled
_SCALE_TOL = 1e-12  # relative change of the scale c
_SCALE_STEPS = 100
_NO_SPREAD = 1e-9  # strengths (natural log) that differ less are equal but for rounding
_MAX_ITER = 300  # Newton steps in all
# tau takes a step once the fit's gradient is below _TUNE_FIRST, then below _TUNE_RATIO
# times tau's last change: far from tau's value the MAP need not be exact.
_TUNE_FIRST = 1e-2
_TUNE_WARM = 1e-8
_SLOPE_STEP = 1e-7  # tau's steps shorter than this (in log tau^2) do not set the slope
_TUNE_RATIO = 1e-6
_GTOL_FINAL = 1e-12  # below `ratings.optimize`: tau is read at the MAP to rounding
_ACCEPT = 1e-6  # as `ratings.optimize`: a fit that cannot get below this has failed
_SMALL = 1e-2  # a change of log tau^2 after which the old curvature still serves
_MAX_MOVE = 2.0  # largest change of log tau^2 in one step
# Newton steps on the boards' luck alone, from a start, before the joint fit takes over.
_LUCK_STEPS = 4
_ARMIJO = 1e-4  # as `ratings.optimize`
_HALVINGS = 30
# A pool of more games than this starts from the fit of every _SAMPLE_EVERY-th unit.
_SAMPLE_ABOVE = 40_000
_SAMPLE_EVERY = 8
_ROUGH_RHO = 1e-4  # a sample fit's tolerances: it is only a start
_ROUGH_GTOL = 1e-6
# Information on the luck below which the boards' games say nothing of it (a game that is
# not a 3-way tie carries 0.1 or more; a tie's is 0 but for rounding).
_NO_INFORMATION = 1e-9


def gain(luck_var: float) -> float:
    """The variance-matching gain k for a luck variance tau^2 (module doc)."""
    return math.sqrt(1.0 + luck_var / NOISE_VAR)


def _luck_var_update(pool: Pool, solution: Solution) -> float:
    """The right-hand side of the module doc's fixed point for tau^2 at a MAP fit."""
    curv = solution.curvature
    boards, k = len(pool.boards), pool.sides
    trace = float(np.trace(curv.luck_inverse, axis1=1, axis2=2).sum())
    trace += curv.luck_over_bots_trace()
    luck = solution.luck
    total = float(luck @ luck) + trace - boards * solution.luck_sd**2
    return max(total, 0.0) / (boards * (k - 1))


def fresh_scale(pool: Pool, theta: FloatArray, precision: float, c: float = 1.0) -> float:
    """The scale c that maximises the fresh-deal log-posterior at c * theta (module doc).

    The fresh-deal model reads every game without luck; the objective is concave in c,
    so Newton's method from c (1, or an earlier fit's; kept within a factor of 2 a step)
    finds its maximum.
    """
    if not (theta.size and float(np.ptp(theta)) > _NO_SPREAD):
        # Equal strengths (luck explains every game of a symmetric schedule, say): no
        # direction for a scale to stretch, so no scale either.
        raise RatingError("the strengths have no spread for the scale of the ratings")
    strength = side_strengths(pool, theta)
    prior = precision * float(theta @ theta)
    for _ in range(_SCALE_STEPS):
        ev = evaluate(pool, c * theta)
        slope = float((strength * ev.grad).sum()) - c * prior
        curve = float(np.einsum("gi,gij,gj->", strength, ev.neg_hess, strength)) + prior
        if not curve > 0:
            return c
        new = min(max(c + slope / curve, c / 2), 2 * c)
        if abs(new - c) <= _SCALE_TOL * c:
            return new
        c = new
    raise RatingError("the scale of the ratings did not converge")


@dataclass(frozen=True, slots=True)
class Start:
    """Where a fit starts: strengths (natural log, in the pool's bot order; 0 for a bot not
    seen before), the luck's sd (0: none known), the fresh-deal scale and the slope of the
    luck's fixed point (`Solution.tau_slope`), and optionally each board's luck (the
    pool's boards * sides; 0 for a board not seen before). Any start leads to the same
    fit, to 1e-9 Elo; a good one (an earlier fit of most of the games) in fewer steps."""

    theta: FloatArray
    luck_sd: float = 0.0
    scale: float = 1.0
    tau_slope: float = math.nan
    luck: FloatArray | None = None

    @classmethod
    def of(cls, solution: Solution) -> Start:
        """The start a solution gives a fit of nearly the same games."""
        return cls(solution.theta, solution.luck_sd, solution.scale, solution.tau_slope)


def luck_given(pool: Pool, theta: FloatArray, luck_sd: float, k: float,
               luck: FloatArray | None = None, steps: int = _LUCK_STEPS) -> FloatArray:
    """The MAP of every board's luck with the strengths held at theta (a starting point).

    Each board's luck is then its own small problem (its sides' effects, the board's
    games), so Newton's method runs on all boards at once: a (sides, sides) system and a
    step halved where it does not decrease the board's objective, per board.
    """
    kk, boards = pool.sides, len(pool.boards)
    lucky = pool.lucky
    precision = 1.0 / luck_sd**2
    base = k * side_strengths(pool, theta)[lucky]
    board = pool.board_of[lucky]
    at = pool.luck_of
    cells = (board[:, None, None] * kk + pool.seat_of[lucky][:, :, None]) * kk + (
        pool.seat_of[lucky][:, None, :])
    x = np.zeros(boards * kk) if luck is None else luck.astype(np.float64).copy()

    def objective(x: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        loglik, grad, neg = utility_terms(pool, base + x[at], lucky)
        value = (0.5 * precision * (x.reshape(boards, kk) ** 2).sum(axis=1)
                 - np.bincount(board, weights=loglik, minlength=boards))
        return value, grad, neg

    value, grad, neg = objective(x)
    for _ in range(steps):
        g = precision * x - np.bincount(at.ravel(), weights=grad.ravel(), minlength=boards * kk)
        if not float(np.abs(g).max(initial=0.0)) > _GTOL_FINAL:
            break
        d = np.bincount(cells.ravel(), weights=neg.ravel(), minlength=boards * kk * kk
                        ).reshape(boards, kk, kk) + precision * np.eye(kk)
        step = np.matmul(inverse_blocks(d), g.reshape(boards, kk, 1))[:, :, 0]
        slope = (g.reshape(boards, kk) * step).sum(axis=1)
        t = np.ones(boards)
        trial = x - step.ravel()
        new_value, new_grad, new_neg = objective(trial)
        resolution = 1e-12 * np.maximum(1.0, np.abs(value))
        for _ in range(_HALVINGS):
            # A board's step is taken when it decreases its objective enough, or changes
            # it by less than the objective's resolution (a board already at its optimum).
            bad = (new_value > value - _ARMIJO * t * slope) & (new_value - value > resolution)
            if not bool(bad.any()):
                break
            # Halve the step of the boards that did not gain enough, the others' kept.
            t[bad] /= 2
            trial = x - (t[:, None] * step).ravel()
            new_value, new_grad, new_neg = objective(trial)
        x, value, grad, neg = trial, new_value, new_grad, new_neg
    return x


def _sample_start(pool: Pool, prior_sd: float) -> Start | None:
    """A start for a large pool: the fit of every _SAMPLE_EVERY-th of its units (boards
    whole), far cheaper and close to the fit of all (None when that fit fails)."""
    part = subpool(pool, np.flatnonzero(pool.unit_of % _SAMPLE_EVERY == 0))
    try:
        sol = solve_with_luck(part, prior_sd, rough=True)
    except (RatingError, np.linalg.LinAlgError):
        return None
    return Start.of(sol)


def solve_with_luck(pool: Pool, prior_sd: float, start: Start | None = None,
                    rough: bool = False) -> Solution:
    """The fit with board luck at the estimated tau, and its fresh-deal scale (module doc).

    A pool without boards (or of a single unit), or whose boards show no luck,
    gets the plain fit. `start` (an earlier fit of most of these games, say) sets the
    first point; a large pool without one starts from the fit of a sample of its units.
    The optimum is the same from any start, to the tolerances below. `rough`: a start
    for a larger fit only (tau within _ROUGH_RHO, the gradient below _ROUGH_GTOL, no
    last step and no scale).
    """
    rho_tol, gtol = (_ROUGH_RHO, _ROUGH_GTOL) if rough else (_RHO_TOL, _GTOL_FINAL)
    theta = None if start is None else start.theta
    if not pool.luck_count or len(pool.units) < 2:
        return solve(pool, prior_sd, theta=theta)
    if start is None and pool.games > _SAMPLE_ABOVE:
        start = _sample_start(pool, prior_sd)
        theta = None if start is None else start.theta
    rho = _START
    if start is not None and start.luck_sd > 0:
        rho = min(max(math.log(start.luck_sd**2), _LOWEST), _HIGHEST)
    tau, k = math.exp(rho / 2), gain(math.exp(rho))
    if start is not None and theta is not None and not start.luck_sd > 0:
        theta = theta / k  # a plain fit's strengths: utilities k theta on the boards
    known = None if start is None or not start.luck_sd > 0 else start.luck
    if known is not None and known.size != pool.luck_count:
        known = None
    # With the boards' luck known, one step on it takes in the games that came since.
    luck = None if theta is None else luck_given(pool, theta, tau, k, known,
                                                 _LUCK_STEPS if known is None else 1)
    newton = Newton(pool, prior_sd, tau, k, theta, luck)
    if not float(np.abs(luck_hessian(pool, newton.ev)).max(initial=0.0)) > _NO_INFORMATION:
        return solve(pool, prior_sd, theta=theta)  # the boards' games say nothing of luck
    scale = 1.0 if start is None else start.scale
    slope = math.nan if start is None else start.tau_slope
    history: list[tuple[float, float]] = []
    last = math.inf  # tau's last change
    # From a start that knew tau, tau is near: its first step is read at the MAP.
    tune_at = _TUNE_FIRST if start is None or not start.luck_sd > 0 else _TUNE_WARM
    stalled = False  # no step decreases the objective: as converged as it gets
    while newton.iterations < _MAX_ITER:
        if newton.gradient_size <= tune_at:
            # Close to the MAP at this tau: a step in tau.
            here = newton.solution()
            update = _luck_var_update(pool, here)
            r = (math.log(update) if update > 0 else -math.inf) - rho
            move = r
            if history and math.isfinite(r):
                prev_rho, prev_r = history[-1]
                if abs(rho - prev_rho) > _SLOPE_STEP or not math.isfinite(slope):
                    # The secant's slope, from steps long enough to read it (the last
                    # ones are at rounding's scale: the slope kept is that of an earlier).
                    slope = (r - prev_r) / (rho - prev_rho) if rho != prev_rho else math.nan
            if math.isfinite(r) and math.isfinite(slope):
                # r falls with rho around a stable fixed point; else a fixed-point step.
                move = -r / slope if slope < 0 else r
            move = max(min(move, _MAX_MOVE), -_MAX_MOVE) if math.isfinite(move) else -_MAX_MOVE
            history.append((rho, r))
            new_rho = min(max(rho + move, _LOWEST), _HIGHEST)
            if rho <= _LOWEST and new_rho <= _LOWEST:
                return solve(pool, prior_sd, theta=here.theta)  # no luck to speak of
            change = abs(new_rho - rho)
            # Settled: tau's step is below the tolerance, or below the floor and no longer
            # shrinking (the noise of rounding, not a step towards the fixed point).
            settled = change <= rho_tol or (change <= _RHO_FLOOR and change >= last / 2)
            last = change
            if settled and (newton.gradient_size <= gtol or stalled):
                if rough:
                    scale = fresh_scale(pool, here.theta, 1.0 / prior_sd**2, scale)
                    return replace(here, scale=scale, tau_slope=slope)
                here = newton.polished()
                scale = fresh_scale(pool, here.theta, 1.0 / prior_sd**2, scale)
                return replace(here, scale=scale, tau_slope=slope)
            if not settled:
                # The closer tau gets, the closer to the MAP its next step is taken.
                tune_at = min(_TUNE_FIRST, max(gtol, _TUNE_RATIO * change))
                rho, stalled = new_rho, False
                newton.retune(math.exp(rho / 2), gain(math.exp(rho)), small=change <= _SMALL)
                continue
            tune_at = gtol
        if not newton.step():
            if newton.gradient_size > _ACCEPT:
                break
            stalled, tune_at = True, newton.gradient_size
    raise RatingError("the board luck estimate did not converge")
