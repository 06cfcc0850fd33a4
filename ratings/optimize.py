"""The MAP of a pool: Newton's method on bot strengths and board luck, analytic derivatives.

The negative log-posterior is the games' negative log-likelihood plus
theta^2 / (2 prior_var) per bot and lambda^2 / (2 luck_var) per luck effect
(`ratings.luck`). Each game's ranking probability is log-concave in its
utilities (it is the probability that Gumbel-perturbed utilities fall in a
convex cone), the utilities are linear in (theta, lambda), and the priors
are Gaussian, so the objective is strictly convex: one minimum, which
Newton's method reaches in a handful of steps from zero.

The Hessian has block structure: bots x bots dense (n, n), luck x luck one
(sides, sides) block per board (a game touches the luck of its own board
only), and a sparse bots x luck part B. A Newton step eliminates the luck
through the Schur complement S = A - B D^-1 B^T, dense (n, n), so a step
costs one Cholesky factorisation of S whatever the number of boards. S is
also the Hessian of the objective with the luck profiled out, the bread of
the intervals (`ratings.intervals`).

Each step is a full Newton step when it decreases the objective enough
(Armijo), else halved; near the minimum, where the objective (~1e5 at
100,000 games) can no longer resolve a decrease, a step is judged by the
gradient alone, which is safe on a strictly convex objective. `Newton` takes
one step at a time so that `ratings.luck` can move the luck's sd between
steps; after a small move the next step reuses the last curvature (still a
descent direction) rather than factorising again. (The fit without luck used
scipy's Newton-CG; with the luck's blocks a direct step through S is
simpler and as fast: 100,000 games among 1,000 bots take about 7 steps.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import cho_factor, cho_solve, solve_triangular

from ratings.errors import RatingError
from ratings.model import (
    Evaluation,
    IntArray,
    Pool,
    bot_gradient,
    bot_hessian,
    evaluate,
    luck_gradient,
    luck_hessian,
)

__all__ = ["Curvature", "LuckLayout", "Newton", "Solution", "luck_layout", "solve"]

FloatArray = NDArray[np.float64]

# Stop when the largest gradient entry is this small: far below what moves a rating by 1e-6 Elo
# (the Hessian's smallest eigenvalue is at least the prior precision).
_GTOL = 1e-10
_MAX_ITER = 200
# A fit whose gradient stays above this is reported as failed rather than returned.
_ACCEPT = 1e-6
_ARMIJO = 1e-4
_HALVINGS = 40
# Cells of the boards' (bots, bots) blocks up to which B D^-1 B^T is summed board by
# board; beyond (boards of hundreds of bots), through a dense B and BLAS.
_BLOCK_CELLS = 5_000_000


@dataclass(frozen=True, slots=True, eq=False)
class LuckLayout:
    """Where the bots x luck block B is non-zero: one row per (board, bot) that met.

    B's row for a bot has entries only in the luck of the boards it played, so B is
    kept as these rows (sorted by board, then bot), each a (sides,) vector. Within a
    board, B D^-1 B^T adds a (bots, bots) block: for small boards the blocks are
    multiplied board by board (boards of one size at once), for large ones through a
    dense B (BLAS).
    """

    row_bot: IntArray  # (rows,)
    row_board: IntArray  # (rows,)
    slot_row: IntArray  # (lucky games, slots): the row of each slot, -1 for padding
    groups: tuple[tuple[IntArray, IntArray], ...]  # boards of r rows: (boards, r) rows, cells
    by_blocks: bool  # True: B D^-1 B^T board by board; False: through a dense B


def luck_layout(pool: Pool) -> LuckLayout:
    """The layout of B for a pool's boards (`LuckLayout`)."""
    n = len(pool.bots)
    lucky = pool.lucky
    real = pool.slot_weight[lucky] > 0
    keys = pool.board_of[lucky][:, None] * n + pool.slot_bot[lucky]
    row_key, inverse = np.unique(keys[real], return_inverse=True)
    slot_row = np.full(real.shape, -1, dtype=np.int64)
    slot_row[real] = inverse.ravel()
    row_bot, row_board = row_key % n, row_key // n
    count = np.bincount(row_board, minlength=len(pool.boards))
    start = np.concatenate([[0], np.cumsum(count)])[:-1]
    by_blocks = float((count.astype(np.float64) ** 2).sum()) <= _BLOCK_CELLS
    groups = []
    if by_blocks:
        for r in np.unique(count[count > 0]):
            rows = start[count == r][:, None] + np.arange(r)  # (boards, r)
            bots = row_bot[rows]
            cells = (bots[:, :, None] * n + bots[:, None, :]).ravel()
            groups.append((rows.astype(np.int64), cells.astype(np.int64)))
    return LuckLayout(row_bot.astype(np.int64), row_board.astype(np.int64), slot_row,
                      tuple(groups), by_blocks)


def _block_products(lay: LuckLayout, left: FloatArray, right: FloatArray
                    ) -> list[tuple[FloatArray, IntArray]]:
    """Each board's left_b right_b^T, (boards, r, r) per group, with its cells in (n, n)."""
    out = []
    for rows, cells in lay.groups:
        out.append((np.matmul(left[rows], right[rows].transpose(0, 2, 1)), cells))
    return out


@dataclass(frozen=True, slots=True, eq=False)
class Curvature:
    """The negative log-posterior's Hessian in blocks, and its Schur complement in the bots."""

    bots: FloatArray  # A: (n, n), likelihood plus prior precision
    layout: LuckLayout | None  # where B lives; None without luck
    cross_rows: FloatArray  # B by rows of the layout: (rows, sides)
    luck_inverse: FloatArray  # D^-1: (boards, sides, sides), D with the luck prior's precision
    schur: FloatArray  # S = A - B D^-1 B^T: (n, n)
    factor: tuple[FloatArray, bool]  # S's Cholesky factor (scipy's cho_factor)

    def luck_solve(self, rhs: FloatArray) -> FloatArray:
        """D^-1 rhs for a luck vector (boards * sides,)."""
        m, k, _ = self.luck_inverse.shape
        out: FloatArray = np.matmul(self.luck_inverse, rhs.reshape(m, k, 1)).ravel()
        return out

    def schur_solve(self, rhs: FloatArray) -> FloatArray:
        """S^-1 rhs (a vector or a matrix of columns)."""
        out: FloatArray = cho_solve(self.factor, rhs, check_finite=False)
        return out

    def cross_dot(self, luck: FloatArray) -> FloatArray:
        """B luck: (n,) for a luck vector (boards * sides,)."""
        lay = self.layout
        n = self.bots.shape[0]
        if lay is None:
            return np.zeros(n)
        m, k, _ = self.luck_inverse.shape
        per_row = (self.cross_rows * luck.reshape(m, k)[lay.row_board]).sum(axis=1)
        return np.bincount(lay.row_bot, weights=per_row, minlength=n).astype(np.float64)

    def cross_t_dot(self, bots: FloatArray) -> FloatArray:
        """B^T bots: (boards * sides,) for a bot vector (n,)."""
        lay = self.layout
        m, k, _ = self.luck_inverse.shape
        if lay is None:
            return np.zeros(m * k)
        values = self.cross_rows * bots[lay.row_bot][:, None]
        cells = lay.row_board[:, None] * k + np.arange(k)
        out = np.bincount(cells.ravel(), weights=values.ravel(), minlength=m * k)
        result: FloatArray = out.astype(np.float64)
        return result

    def luck_over_bots_trace(self) -> float:
        """tr(S^-1 V V^T) with V = B D^-1: what the bots' uncertainty adds to the luck's."""
        lay = self.layout
        if lay is None:
            return 0.0
        w = _rows_times_blocks(self.cross_rows, self.luck_inverse, lay.row_board)
        n = self.bots.shape[0]
        if lay.by_blocks:
            inverse = self.schur_solve(np.eye(n)).ravel()
            return float(sum((block.ravel() * inverse[cells]).sum()
                             for block, cells in _block_products(lay, w, w)))
        v = _dense_rows(w, lay, n, self.luck_inverse.shape[0])
        c, lower = self.factor
        half = solve_triangular(c, v, lower=lower, trans=0 if lower else 1, check_finite=False)
        return float(np.sum(half**2))


def _rows_times_blocks(rows: FloatArray, blocks: FloatArray, board: IntArray) -> FloatArray:
    """Each row (sides,) times its board's (sides, sides) block."""
    mine = blocks[board]
    out: FloatArray = rows[:, 0, None] * mine[:, 0, :]
    for j in range(1, rows.shape[1]):
        out += rows[:, j, None] * mine[:, j, :]
    return out


def _dense_rows(rows: FloatArray, lay: LuckLayout, n: int, boards: int) -> FloatArray:
    """The (n, boards * sides) matrix whose rows the layout lists."""
    k = rows.shape[1]
    out = np.zeros((n, boards * k))
    out[lay.row_bot[:, None], lay.row_board[:, None] * k + np.arange(k)] = rows
    return out


@dataclass(frozen=True, slots=True, eq=False)
class Solution:
    """The MAP strengths (natural log) and luck, the games' terms there, and the curvature."""

    theta: FloatArray
    luck: FloatArray  # (boards * sides,): zeros when the luck's sd is 0
    luck_sd: float  # the luck prior's sd (natural log utility); 0: no board luck
    gain: float  # the luck gain k of games on boards (1 when luck_sd is 0)
    evaluation: Evaluation
    curvature: Curvature
    iterations: int
    scale: float = 1.0  # the ratings are scale * theta (`ratings.luck`: the fresh-deal scale)


def _cross_rows(pool: Pool, ev: Evaluation, lay: LuckLayout) -> FloatArray:
    """B (the negative Hessian between bots and luck) by the layout's rows: (rows, sides)."""
    k = pool.sides
    lucky = pool.lucky
    w = (pool.slot_weight * ev.gain[:, None])[lucky]
    values = ev.neg_hess[lucky][:, pool.slot_side, :] * w[:, :, None]  # (games, slots, sides)
    real = lay.slot_row >= 0
    cells = lay.slot_row[:, :, None] * k + pool.seat_of[lucky][:, None, :]  # luck by seat
    out = np.bincount(cells[real].ravel(), weights=values[real].ravel(),
                      minlength=len(lay.row_bot) * k)
    result: FloatArray = out.reshape(len(lay.row_bot), k).astype(np.float64)
    return result


def _inverse_blocks(d: FloatArray) -> FloatArray:
    """The inverses of symmetric positive definite (boards, k, k) blocks, k = 2 or 3 in
    closed form (the adjugate; LAPACK's batched inverse is slow on tiny blocks)."""
    k = d.shape[1]
    out: NDArray[np.floating[Any]]
    if k == 2:
        a, b, c = d[:, 0, 0], d[:, 0, 1], d[:, 1, 1]
        det = a * c - b * b
        out = np.stack([np.stack([c, -b], 1), np.stack([-b, a], 1)], 1) / det[:, None, None]
    elif k == 3:
        a, b, c = d[:, 0, 0], d[:, 0, 1], d[:, 0, 2]
        e, f, i = d[:, 1, 1], d[:, 1, 2], d[:, 2, 2]
        co = np.stack([np.stack([e * i - f * f, c * f - b * i, b * f - c * e], 1),
                       np.stack([c * f - b * i, a * i - c * c, b * c - a * f], 1),
                       np.stack([b * f - c * e, b * c - a * f, a * e - b * b], 1)], 1)
        det = a * co[:, 0, 0] + b * co[:, 0, 1] + c * co[:, 0, 2]
        out = co / det[:, None, None]
    else:
        out = np.linalg.inv(d)
        out = (out + out.transpose(0, 2, 1)) / 2
    result: FloatArray = out.astype(np.float64)
    return result


def _largest(v: FloatArray) -> float:
    return float(np.abs(v).max(initial=0.0))


class Newton:
    """Damped Newton's method on the negative log-posterior (module doc), one step at a time.

    `retune` changes the luck's sd and gain between steps (`ratings.luck` estimates
    them alongside); `solution` is the state with its curvature.
    """

    def __init__(self, pool: Pool, prior_sd: float, luck_sd: float = 0.0, gain: float = 1.0,
                 start: Solution | None = None) -> None:
        if not prior_sd > 0 or not np.isfinite(prior_sd):
            raise RatingError(f"prior_sd must be positive and finite, got {prior_sd}")
        self.pool = pool
        self.precision = 1.0 / prior_sd**2
        self.n = len(pool.bots)
        self.iterations = 0
        self._layout: LuckLayout | None = None
        self._set(luck_sd, gain)
        self.x = np.zeros(self.n + self.m)
        if start is not None:
            self.x[: self.n] = start.theta
            if self.m and start.luck.size == self.m:
                self.x[self.n :] = start.luck
        self._refresh()

    def _set(self, luck_sd: float, gain: float) -> None:
        if not luck_sd >= 0 or not np.isfinite(luck_sd) or not gain > 0 or not np.isfinite(gain):
            raise RatingError(f"luck needs a finite sd >= 0 and a positive gain, "
                              f"got {luck_sd}, {gain}")
        self.with_luck = luck_sd > 0 and self.pool.luck_count > 0
        self.luck_sd = luck_sd if self.with_luck else 0.0
        self.luck_precision = 1.0 / luck_sd**2 if self.with_luck else 0.0
        self.gain = gain if self.with_luck else 1.0
        self.m = self.pool.luck_count if self.with_luck else 0

    def _evaluate(self, x: FloatArray) -> tuple[Evaluation, float, FloatArray]:
        """The games' terms, the objective and its gradient at x = (theta, luck)."""
        n = self.n
        theta, luck = x[:n], x[n:]
        ev = evaluate(self.pool, theta, luck if self.with_luck else None, self.gain)
        value = (-float(ev.loglik.sum()) + 0.5 * self.precision * float(theta @ theta)
                 + 0.5 * self.luck_precision * float(luck @ luck))
        grad = -bot_gradient(self.pool, ev) + self.precision * theta
        if self.m:
            g_luck = -luck_gradient(self.pool, ev) + self.luck_precision * luck
            grad = np.concatenate([grad, g_luck])
        return ev, value, grad

    def _refresh(self) -> None:
        self.ev, self.value, self.grad = self._evaluate(self.x)
        self._curvature: Curvature | None = None
        self._stale: Curvature | None = None

    def retune(self, luck_sd: float, gain: float, small: bool = False) -> None:
        """New luck sd and gain, from the current point: the strengths are divided by the
        gain's change, so that the games on boards keep their utilities, the luck kept.

        `small`: the change is small, so the next step may reuse the curvature of the
        point before it (a descent direction all the same; the line search keeps it safe).
        """
        luck = self.x[self.n :]
        before = self._curvature if small and self.m else None
        old_gain = self.gain
        self._set(luck_sd, gain)
        theta = self.x[: self.n] * (old_gain / self.gain if self.m else 1.0)
        self.x = np.concatenate([theta, luck if luck.size == self.m else np.zeros(self.m)])
        self._refresh()
        if before is not None and before.luck_inverse.shape[0] * self.pool.sides == self.m:
            self._stale = before

    @property
    def gradient_size(self) -> float:
        """The largest entry of the gradient."""
        return _largest(self.grad)

    @property
    def converged(self) -> bool:
        """Whether the gradient is small enough to stop."""
        return self.gradient_size <= _GTOL

    def curvature(self) -> Curvature:
        """The Hessian's blocks and Schur complement at the current point (computed once)."""
        if self._curvature is None:
            self._curvature = self._compute_curvature()
        return self._curvature

    def _compute_curvature(self) -> Curvature:
        ev, n, m = self.ev, self.n, self.m
        a = bot_hessian(self.pool, ev)
        a[np.diag_indices_from(a)] += self.precision
        k = max(self.pool.sides, 1)
        if not m:
            return Curvature(a, None, np.zeros((0, k)), np.zeros((0, k, k)), a,
                             cho_factor(a, lower=True, check_finite=False))
        d = luck_hessian(self.pool, ev)
        d += self.luck_precision * np.eye(k)[None, :, :]
        d_inv = _inverse_blocks(d)
        if self._layout is None:
            self._layout = luck_layout(self.pool)
        lay = self._layout
        rows = _cross_rows(self.pool, ev, lay)
        w = _rows_times_blocks(rows, d_inv, lay.row_board)  # B D^-1 by rows
        taken: FloatArray
        if lay.by_blocks:
            summed = np.zeros(n * n)
            for block, cells in _block_products(lay, w, rows):
                summed += np.bincount(cells, weights=block.ravel(), minlength=n * n)
            taken = summed.reshape(n, n)
        else:
            boards = len(self.pool.boards)
            taken = _dense_rows(w, lay, n, boards) @ _dense_rows(rows, lay, n, boards).T
        schur = a - taken
        schur = (schur + schur.T) / 2
        return Curvature(a, lay, rows, d_inv, schur,
                         cho_factor(schur, lower=True, check_finite=False))

    def _direction(self) -> FloatArray:
        """The Newton step H^-1 grad, the luck eliminated through the Schur complement."""
        curv = self._stale if self._stale is not None else self.curvature()
        self._stale = None
        g_bots, g_luck = self.grad[: self.n], self.grad[self.n :]
        if not self.m:
            return curv.schur_solve(g_bots)
        d_inv_g = curv.luck_solve(g_luck)
        d_bots = curv.schur_solve(g_bots - curv.cross_dot(d_inv_g))
        d_luck = curv.luck_solve(g_luck - curv.cross_t_dot(d_bots))
        return np.concatenate([d_bots, d_luck])

    def step(self) -> bool:
        """One damped Newton step; False when no step along it decreases the objective."""
        direction = self._direction()
        slope = float(self.grad @ direction)  # the decrease a unit step promises (> 0)
        size = _largest(self.grad)
        t = 1.0
        for _ in range(_HALVINGS):
            trial = self.x - t * direction
            ev, value, grad = self._evaluate(trial)
            if value <= self.value - _ARMIJO * t * slope:
                break
            # Below the objective's resolution a step is judged by the gradient alone.
            if value - self.value <= 1e-12 * max(1.0, abs(self.value)) and _largest(grad) < size:
                break
            t /= 2
        else:
            return False
        self.iterations += 1
        self.x, self.ev, self.value, self.grad = trial, ev, value, grad
        self._curvature = None
        self._stale = None
        return True

    def run(self) -> None:
        """Steps until the gradient is small (RatingError when it does not get small)."""
        while not self.converged and self.iterations < _MAX_ITER:
            if not self.step():
                break
        if not np.all(np.isfinite(self.x)) or self.gradient_size > _ACCEPT:
            raise RatingError("the rating fit did not converge")

    def solution(self) -> Solution:
        """The current point with its terms and curvature."""
        n = self.n
        luck = self.x[n:] if self.m else np.zeros(self.pool.luck_count)
        return Solution(self.x[:n].copy(), luck.copy(), self.luck_sd, self.gain, self.ev,
                        self.curvature(), self.iterations)


def solve(pool: Pool, prior_sd: float, luck_sd: float = 0.0, gain: float = 1.0,
          start: Solution | None = None) -> Solution:
    """MAP strengths (N(0, prior_sd^2) priors) and luck (N(0, luck_sd^2)), natural-log units.

    luck_sd = 0 fits no luck (every game as if dealt fresh); `start` warm-starts
    from an earlier solution of the same pool.
    """
    newton = Newton(pool, prior_sd, luck_sd, gain, start)
    newton.run()
    return newton.solution()
