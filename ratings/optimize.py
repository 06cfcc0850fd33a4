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
the intervals (`ratings.intervals`). S is summed board by board
(`LuckLayout`): a board's games, read in seat-position order, make one small
block of B D^-1 B^T on the board's slots, and boards of one size are summed
at once (batched 3 x 9 products and one bincount), so a curvature costs a few
passes over the games, about 0.5 s at a million games on this machine; a
board of hundreds of games goes through a dense B and BLAS instead.

Each step is a full Newton step when it decreases the objective enough
(Armijo), else halved; near the minimum, where the objective (~1e5 at
100,000 games) can no longer resolve a decrease, a step is judged by the
gradient alone, which is safe on a strictly convex objective. A full step
that cut the gradient twentyfold leaves its curvature for the next step
(the chord variant of Newton's method: near the minimum the Hessian hardly
changes, and such a step costs one evaluation of the games, a fifth of a new
curvature), and so does a small move of the luck's sd. `Newton` takes one
step at a time so that `ratings.luck` can move the luck's sd between steps.
The solution is one more full Newton step on from the converged point
(`Newton.polished`), so that it is the optimum to rounding whatever the path
to it: a warm start, a sample's start and a cold one give the same fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import cho_factor, cho_solve
from scipy.linalg.lapack import dpotri

from ratings.errors import RatingError
from ratings.model import (
    Evaluation,
    IntArray,
    Pool,
    bot_gradient,
    evaluate,
    luck_gradient,
    side_strengths,
    utility_terms,
)

__all__ = ["Curvature", "LuckLayout", "Newton", "Solution", "inverse_blocks", "luck_layout",
           "solve"]

FloatArray = NDArray[np.float64]

# Stop when the largest gradient entry is this small: far below what moves a rating by 1e-6 Elo
# (the Hessian's smallest eigenvalue is at least the prior precision).
_GTOL = 1e-10
_MAX_ITER = 200
# A fit whose gradient stays above this is reported as failed rather than returned.
_ACCEPT = 1e-6
_ARMIJO = 1e-4
_HALVINGS = 40
# A step whose gradient fell at least this much (twentyfold) leaves its curvature for the next.
_REUSE = 0.05
# The last step below which the solution keeps the curvature of the point before it.
_KEEP = 1e-12
# A board's part of B D^-1 B^T is summed cell by cell into S while that is cheaper than
# a dense product over all bots: a scattered cell costs about this many flops.
_DENSE_COST = 20.0
# Cells of the boards' blocks summed at once (their products and indices stay in cache).
_CHUNK_CELLS = 1 << 24


@dataclass(frozen=True, slots=True, eq=False)
class _Boards:
    """Boards of one number of games T, their slots laid out game by game in seat-position
    order (S slots a game): each board's part of S is a (T S, T S) block of cells."""

    boards: IntArray  # (nb,): board indices
    rows: IntArray  # (nb, T): the games, as indices into `Pool.lucky`
    bots: IntArray  # (nb, T S): the bot of each slot
    weight: FloatArray  # (nb, T S): its weight (1 / side size; 0 for padding)
    cells: IntArray  # (nb, (T S)^2): bot_s * n + bot_t of each pair of the board's slots

    def chunks(self) -> list[slice]:
        """Runs of boards small enough that a run's blocks stay in cache (a few MB)."""
        step = max(1, _CHUNK_CELLS // max(1, self.bots.shape[1] ** 2))
        return [slice(i, i + step) for i in range(0, self.boards.size, step)]


@dataclass(frozen=True, slots=True, eq=False)
class LuckLayout:
    """How the luck's blocks are laid out for a pool's boards.

    Every game on a board has its negative Hessian read in seat-position order (the
    order of its luck effects), its slots too. Most boards have a few games: each
    board's part of B D^-1 B^T is a small block on the board's slots, summed into S cell
    by cell (boards of one number of games at once). A board of hundreds of games,
    whose block would cost more than a product over every bot, goes through a dense B
    instead (`dense`, BLAS).
    """

    seat_neg: IntArray  # (lucky, k, k): flat index into the games' negative Hessians
    slot_seat: IntArray  # (S,): the seat position of each slot in seat order
    seat_slot: IntArray  # (lucky, S): the pool's slot of each slot in seat order
    small: tuple[_Boards, ...]
    dense: IntArray  # the boards summed through a dense B
    dense_rows: IntArray  # their games, as indices into `Pool.lucky`


def luck_layout(pool: Pool) -> LuckLayout:
    """The layout of the luck's blocks for a pool's boards (`LuckLayout`)."""
    n, k = len(pool.bots), pool.sides
    slots = pool.slot_bot.shape[1]
    width = slots // k if k else 1
    lucky = pool.lucky
    # rank[g, p]: the place position of the side in seat position p.
    rank = np.argsort(pool.seat_of[lucky], axis=1).astype(np.int64)
    base = lucky[:, None, None] * (k * k)
    seat_neg = base + rank[:, :, None] * k + rank[:, None, :]
    seat_slot = (rank[:, :, None] * width + np.arange(width)).reshape(len(lucky), slots)
    slot_seat = np.repeat(np.arange(k, dtype=np.int64), width)
    bots = np.take_along_axis(pool.slot_bot[lucky], seat_slot, axis=1)
    weight = np.take_along_axis(pool.slot_weight[lucky], seat_slot, axis=1)
    board = pool.board_of[lucky]
    order = np.argsort(board, kind="stable")  # games of a board together, in game order
    count = np.bincount(board, minlength=len(pool.boards))
    start = np.concatenate([[0], np.cumsum(count)])[:-1]
    side = count * slots
    dense_board = side.astype(np.float64) ** 2 * _DENSE_COST > 2.0 * k * n * n
    small = []
    for t in np.unique(count[(count > 0) & ~dense_board]).tolist():
        which = np.flatnonzero((count == t) & ~dense_board)
        rows = order[start[which][:, None] + np.arange(t)]  # (nb, T)
        b = bots[rows].reshape(len(which), t * slots)
        cells = (b[:, :, None] * n + b[:, None, :]).reshape(len(which), -1)
        small.append(_Boards(which.astype(np.int64), rows.astype(np.int64), b,
                             weight[rows].reshape(len(which), t * slots), cells))
    dense = np.flatnonzero(dense_board).astype(np.int64)
    dense_rows = np.flatnonzero(dense_board[board]).astype(np.int64)
    return LuckLayout(seat_neg, slot_seat, seat_slot, tuple(small), dense, dense_rows)


@dataclass(frozen=True, slots=True, eq=False)
class Curvature:
    """The negative log-posterior's Hessian in blocks, and its Schur complement in the bots.

    B is kept as the parts the layout makes: per group of small boards, each slot's row
    E (the slot's (sides,) part of B) and E D^-1; for the dense boards, B's columns.
    """

    layout: LuckLayout | None  # where B lives; None without luck
    luck_inverse: FloatArray  # D^-1: (boards, sides, sides), D with the luck prior's precision
    schur: FloatArray  # S = A - B D^-1 B^T: (n, n)
    factor: tuple[FloatArray, bool]  # S's Cholesky factor (scipy's cho_factor)
    rows: tuple[tuple[FloatArray, FloatArray], ...] = ()  # per small group: E, E D^-1
    dense_cross: FloatArray | None = None  # (n, dense boards * sides): B's dense columns

    def luck_solve(self, rhs: FloatArray) -> FloatArray:
        """D^-1 rhs for a luck vector (boards * sides,)."""
        m, k, _ = self.luck_inverse.shape
        out: FloatArray = np.matmul(self.luck_inverse, rhs.reshape(m, k, 1)).ravel()
        return out

    def schur_solve(self, rhs: FloatArray) -> FloatArray:
        """S^-1 rhs (a vector or a matrix of columns)."""
        out: FloatArray = cho_solve(self.factor, rhs, check_finite=False)
        return out

    def schur_inverse(self) -> FloatArray:
        """S^-1, from the Cholesky factor (LAPACK potri)."""
        c, lower = self.factor
        inv, info = dpotri(c, lower=lower)
        if info:
            raise np.linalg.LinAlgError("the Schur complement is singular")
        out: FloatArray = np.tril(inv) if lower else np.triu(inv)
        out = out + out.T - np.diag(np.diag(out))
        return out

    def cross_dot(self, luck: FloatArray) -> FloatArray:
        """B luck: (n,) for a luck vector (boards * sides,)."""
        lay = self.layout
        n = self.schur.shape[0]
        out = np.zeros(n)
        if lay is None:
            return out
        m, k, _ = self.luck_inverse.shape
        per_board = luck.reshape(m, k)
        for group, (e, _) in zip(lay.small, self.rows, strict=True):
            per_slot = np.matmul(e, per_board[group.boards][:, :, None])[:, :, 0]
            out += _scatter(group.bots, per_slot, n)
        if self.dense_cross is not None:
            out += self.dense_cross @ per_board[lay.dense].ravel()
        return out

    def cross_t_dot(self, bots: FloatArray) -> FloatArray:
        """B^T bots: (boards * sides,) for a bot vector (n,)."""
        lay = self.layout
        m, k, _ = self.luck_inverse.shape
        out = np.zeros((m, k))
        if lay is None:
            return out.ravel()
        for group, (e, _) in zip(lay.small, self.rows, strict=True):
            out[group.boards] = np.matmul(bots[group.bots][:, None, :], e)[:, 0, :]
        if self.dense_cross is not None:
            out[lay.dense] = (bots @ self.dense_cross).reshape(-1, k)
        return out.ravel()

    def luck_over_bots_trace(self) -> float:
        """tr(S^-1 V V^T) with V = B D^-1: what the bots' uncertainty adds to the luck's."""
        lay = self.layout
        if lay is None:
            return 0.0
        inverse = self.schur_inverse()
        flat = inverse.ravel()
        total = 0.0
        for group, (_, ed) in zip(lay.small, self.rows, strict=True):
            for run in group.chunks():
                block = np.matmul(ed[run], ed[run].transpose(0, 2, 1))
                total += float(block.ravel() @ flat[group.cells[run].ravel()])
        if self.dense_cross is not None:
            v = _times_blocks(self.dense_cross, self.luck_inverse[lay.dense])
            total += float(np.sum(v * (inverse @ v)))
        return total


def _scatter(index: IntArray, weights: FloatArray, size: int) -> FloatArray:
    """Sums of weights by index (np.bincount), float64 of length size."""
    out: FloatArray = np.bincount(index.ravel(), weights=weights.ravel(),
                                  minlength=size).astype(np.float64, copy=False)
    return out


def _times_blocks(cols: FloatArray, blocks: FloatArray) -> FloatArray:
    """(n, q k) columns times the block diagonal of (q, k, k) blocks."""
    n = cols.shape[0]
    q, k, _ = blocks.shape
    out: FloatArray = np.einsum("nqk,qkl->nql", cols.reshape(n, q, k), blocks).reshape(n, q * k)
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
    # How the luck's fixed-point residual fell with log tau^2 at the end (`ratings.luck`;
    # nan: unknown): a later fit of nearly these games starts its search for tau with it.
    tau_slope: float = math.nan


def _plain_hessian(pool: Pool, ev: Evaluation, rows: IntArray | None) -> FloatArray:
    """A's part from some games (all: None), summed game by game: (n * n,)."""
    n = len(pool.bots)
    side = pool.slot_side
    pick = slice(None) if rows is None else rows
    neg = ev.neg_hess[pick]
    gain = ev.gain[pick]
    if len(side) == pool.sides:  # one bot a side, each of weight 1
        blocks = neg * (gain * gain)[:, None, None]
    else:
        w = pool.slot_weight[pick] * gain[:, None]
        blocks = neg[:, side[:, None], side[None, :]] * w[:, :, None] * w[:, None, :]
    return _scatter(pool.pair_index[pick], blocks, n * n)


def inverse_blocks(d: FloatArray) -> FloatArray:
    """The inverses of symmetric positive definite (boards, k, k) blocks, k = 2 or 3 in
    closed form (the adjugate; LAPACK's batched inverse is slow on tiny blocks)."""
    k = d.shape[1]
    if k not in (2, 3):
        inv = np.linalg.inv(d)
        sym: FloatArray = ((inv + inv.transpose(0, 2, 1)) / 2).astype(np.float64)
        return sym
    flat = np.ascontiguousarray(d.reshape(-1, k * k).T)  # entries as contiguous rows
    co = np.empty((k * k, d.shape[0]))
    if k == 2:
        a, b, c = flat[0], flat[1], flat[3]
        co[0], co[1], co[2], co[3] = c, -b, -b, a
        det = a * c - b * b
    else:
        a, b, c, e, f, i = flat[0], flat[1], flat[2], flat[4], flat[5], flat[8]
        co[0] = e * i - f * f
        co[1] = co[3] = c * f - b * i
        co[2] = co[6] = b * f - c * e
        co[4] = a * i - c * c
        co[5] = co[7] = b * c - a * f
        co[8] = a * e - b * b
        det = a * co[0] + b * co[1] + c * co[2]
    co /= det
    out: FloatArray = np.ascontiguousarray(co.T).reshape(d.shape)
    return out


def _largest(v: FloatArray) -> float:
    return float(np.abs(v).max(initial=0.0))


class Newton:
    """Damped Newton's method on the negative log-posterior (module doc), one step at a time.

    `retune` changes the luck's sd and gain between steps (`ratings.luck` estimates
    them alongside); `solution` is the state with its curvature.
    """

    def __init__(self, pool: Pool, prior_sd: float, luck_sd: float = 0.0, gain: float = 1.0,
                 theta: FloatArray | None = None, luck: FloatArray | None = None) -> None:
        if not prior_sd > 0 or not np.isfinite(prior_sd):
            raise RatingError(f"prior_sd must be positive and finite, got {prior_sd}")
        self.pool = pool
        self.precision = 1.0 / prior_sd**2
        self.n = len(pool.bots)
        self.iterations = 0
        self._layout: LuckLayout | None = None
        self._set(luck_sd, gain)
        self.x = np.zeros(self.n + self.m)
        if theta is not None:
            self.x[: self.n] = theta
        if luck is not None and self.m and luck.size == self.m:
            self.x[self.n :] = luck
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

    def _evaluate(self, x: FloatArray, ev: Evaluation | None = None
                  ) -> tuple[Evaluation, float, FloatArray]:
        """The games' terms (unless given), the objective and its gradient at x."""
        n = self.n
        theta, luck = x[:n], x[n:]
        if ev is None:
            ev = evaluate(self.pool, theta, luck if self.with_luck else None, self.gain)
        value = (-float(ev.loglik.sum()) + 0.5 * self.precision * float(theta @ theta)
                 + 0.5 * self.luck_precision * float(luck @ luck))
        grad = -bot_gradient(self.pool, ev) + self.precision * theta
        if self.m:
            g_luck = -luck_gradient(self.pool, ev) + self.luck_precision * luck
            grad = np.concatenate([grad, g_luck])
        return ev, value, grad

    def _refresh(self, ev: Evaluation | None = None) -> None:
        self.ev, self.value, self.grad = self._evaluate(self.x, ev)
        self._curvature: Curvature | None = None
        self._stale: Curvature | None = None

    def _retuned_terms(self, before: Evaluation, was_lucky: bool) -> Evaluation:
        """The games' terms after a retune: the games on boards keep their utilities (and
        so their terms, with the new gain); the others are evaluated again."""
        pool = self.pool
        gains = np.ones(pool.games)
        gains[pool.lucky] = self.gain
        if not was_lucky:
            return evaluate(pool, self.x[: self.n], self.x[self.n :], self.gain)
        rest = np.setdiff1d(np.arange(pool.games), pool.lucky, assume_unique=True)
        loglik, grad, neg = before.loglik.copy(), before.grad.copy(), before.neg_hess.copy()
        if rest.size:
            u = side_strengths(pool, self.x[: self.n])[rest]
            loglik[rest], grad[rest], neg[rest] = utility_terms(pool, u, rest)
        return Evaluation(loglik, grad, neg, gains)

    def retune(self, luck_sd: float, gain: float, small: bool = False) -> None:
        """New luck sd and gain, from the current point: the strengths are divided by the
        gain's change, so that the games on boards keep their utilities, the luck kept.

        `small`: the change is small, so the next step may reuse the curvature of the
        point before it (a descent direction all the same; the line search keeps it safe).
        """
        luck = self.x[self.n :]
        before = self._curvature if small and self.m else None
        old_gain, was_lucky = self.gain, self.m > 0
        self._set(luck_sd, gain)
        theta = self.x[: self.n] * (old_gain / self.gain if self.m else 1.0)
        self.x = np.concatenate([theta, luck if luck.size == self.m else np.zeros(self.m)])
        self._refresh(self._retuned_terms(self.ev, was_lucky) if self.m else None)
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
        pool, ev, n, m = self.pool, self.ev, self.n, self.m
        k = max(pool.sides, 1)
        if not m:
            a = _plain_hessian(pool, ev, None).reshape(n, n)
            a[np.diag_indices_from(a)] += self.precision
            return Curvature(None, np.zeros((0, k, k)), a,
                             cho_factor(a, lower=True, check_finite=False))
        if self._layout is None:
            self._layout = luck_layout(pool)
        lay = self._layout
        seat_neg = ev.neg_hess.ravel()[lay.seat_neg]  # (lucky, k, k), seat-position order
        gain = self.gain
        # D board by board (the small boards' games are laid out board by board), then
        # A game by game, and each small board's - B_b D_b^-1 B_b^T as one block.
        d = np.empty((len(pool.boards), k, k))
        negs = []
        for group in lay.small:
            neg = seat_neg[group.rows]  # (nb, T, k, k)
            d[group.boards] = neg.sum(axis=1)
            negs.append(neg)
        if lay.dense.size:
            board = pool.board_of[pool.lucky[lay.dense_rows]]
            d[lay.dense] = _scatter(board[:, None] * (k * k) + np.arange(k * k),
                                    seat_neg[lay.dense_rows], len(pool.boards) * k * k
                                    ).reshape(-1, k, k)[lay.dense]
        d += self.luck_precision * np.eye(k)[None, :, :]
        d_inv = inverse_blocks(d)
        summed = _plain_hessian(pool, ev, None)
        rows = []
        seat = lay.slot_seat
        slots = len(seat)
        for group, neg in zip(lay.small, negs, strict=True):
            nb, t = group.rows.shape
            if slots == k:  # one bot a side: a slot is its seat position, of weight 1
                e = (gain * neg).reshape(nb, t * slots, k)
            else:
                w = group.weight.reshape(nb, t, slots)
                e = (gain * w[:, :, :, None] * neg[:, :, seat, :]).reshape(nb, t * slots, k)
            ed = np.matmul(e, d_inv[group.boards])
            for run in group.chunks():
                block = np.matmul(ed[run], e[run].transpose(0, 2, 1))
                summed -= _scatter(group.cells[run], block, n * n)
            rows.append((e, ed))
        dense_cross = None
        schur = summed.reshape(n, n)
        if lay.dense.size:
            q = lay.dense.size
            local = np.full(len(pool.boards), -1, dtype=np.int64)
            local[lay.dense] = np.arange(q)
            g = lay.dense_rows
            w = pool.slot_weight[pool.lucky[g]]
            w = np.take_along_axis(w, lay.seat_slot[g], axis=1)
            bots = np.take_along_axis(pool.slot_bot[pool.lucky[g]], lay.seat_slot[g], axis=1)
            e = gain * w[:, :, None] * seat_neg[g][:, seat, :]  # (games, S, k)
            col = local[pool.board_of[pool.lucky[g]]][:, None, None] * k + np.arange(k)
            cells = bots[:, :, None] * (q * k) + col
            dense_cross = _scatter(cells, e, n * q * k).reshape(n, q * k)
            schur -= _times_blocks(dense_cross, d_inv[lay.dense]) @ dense_cross.T
        schur[np.diag_indices_from(schur)] += self.precision
        schur = (schur + schur.T) / 2
        return Curvature(lay, d_inv, schur, cho_factor(schur, lower=True, check_finite=False),
                         tuple(rows), dense_cross)

    def _direction(self) -> tuple[FloatArray, Curvature]:
        """The Newton step H^-1 grad, the luck eliminated through the Schur complement, and
        the curvature it used (an earlier point's while that one still serves)."""
        curv = self._stale if self._stale is not None else self.curvature()
        self._stale = None
        g_bots, g_luck = self.grad[: self.n], self.grad[self.n :]
        if not self.m:
            return curv.schur_solve(g_bots), curv
        d_inv_g = curv.luck_solve(g_luck)
        d_bots = curv.schur_solve(g_bots - curv.cross_dot(d_inv_g))
        d_luck = curv.luck_solve(g_luck - curv.cross_t_dot(d_bots))
        return np.concatenate([d_bots, d_luck]), curv

    def step(self) -> bool:
        """One damped Newton step; False when no step along it decreases the objective.

        A full step that cut the gradient at least _REUSE-fold leaves its curvature for
        the next step (Newton's chord variant: near the minimum the Hessian hardly
        changes, and a step then costs one evaluation instead of a new factorisation).
        """
        direction, curv = self._direction()
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
            if curv is not self._curvature:
                return self.step()  # an earlier point's curvature failed: this point's own
            return False
        self.iterations += 1
        self.x, self.ev, self.value, self.grad = trial, ev, value, grad
        self._curvature = None
        self._stale = curv if t == 1.0 and _largest(grad) <= _REUSE * size else None
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

    def polished(self) -> Solution:
        """The solution one more full Newton step on, with this point's own curvature.

        From a converged point (a gradient of 1e-10, which chord steps reach only just)
        that step lands on the optimum to rounding, so that every path to it (any start,
        any sequence of steps and luck sds) gives the same fit to 1e-10 Elo and less.
        The solution keeps the curvature of the point it stepped from when the step was
        below _KEEP (the intervals then move by less than 1e-10 Elo), else its own.
        """
        curv = self.curvature()
        self._stale = None
        direction, _ = self._direction()
        trial = self.x - direction
        ev, value, grad = self._evaluate(trial)
        if np.all(np.isfinite(trial)) and _largest(grad) <= self.gradient_size:
            self.x, self.ev, self.value, self.grad = trial, ev, value, grad
            self._curvature = curv if _largest(direction) <= _KEEP else None
        return self.solution()


def solve(pool: Pool, prior_sd: float, luck_sd: float = 0.0, gain: float = 1.0,
          theta: FloatArray | None = None, luck: FloatArray | None = None) -> Solution:
    """MAP strengths (N(0, prior_sd^2) priors) and luck (N(0, luck_sd^2)), natural-log units.

    luck_sd = 0 fits no luck (every game as if dealt fresh); `theta` and `luck` are a
    starting point (the optimum is the same from any).
    """
    newton = Newton(pool, prior_sd, luck_sd, gain, theta, luck)
    newton.run()
    return newton.polished()
