"""How sure the fit is: a unit-clustered (sandwich) covariance of the centred ratings.

Games dealt from one board share its luck (a good hand at seat 0 helps every
bot in seat 0 that round), so they are not independent draws; the board-luck
terms (`ratings.luck`) take out what the fit can pin down of it, not all of
it, and the model's own covariance is wrong in both directions where the
rest of the luck cancels or piles up. The cluster-robust sandwich measures it
instead:

    Cov = S^-1 ((G-1)/G * sum_c g~_c g~_c^T + L) S^-1

with G the number of units, L the prior precision, S the Hessian of the
negative log-posterior in the bots with the luck profiled out (the Schur
complement A - B D^-1 B^T of `ratings.optimize`), and g_c the score in the
bots of unit c's games at the fit. The luck terms are nuisance parameters:
each board's luck is at its own MAP there, so to first order g_c is the bots'
part of the joint score with the luck projected out, and this is the bots'
block of the joint sandwich, the luck marginalised. Three small-sample
corrections make the coverage honest where there are few units (measured in
bench/ratings.py, 16 bots, at 10 to 300 games per bot):

- Jackknife (CR3) scores: g~_c = (I - S_c S^-1)^-1 g_c, with S_c unit c's part
  of S (its games' Hessian less what its board's luck takes). A unit's fitted
  score is shrunk by the unit's own weight in the fit, the more so as every
  board also fits its own luck; this undoes it, as leaving the unit out
  would, to first order (Cameron & Miller 2015). S_c lives on the unit's r
  bots, so it costs r^3 a unit; past a bound on that work (units of hundreds
  of bots, where each weighs little) the scores stay as they are and
  G/(G-1) replaces (G-1)/G (CR1). Without it the luck fit's intervals
  covered 0.927 at 30 games per bot.
- The prior's precision L joins the meat. The MAP error is about
  S^-1 (s - L theta): besides the score s it carries the prior's pull L theta,
  whose variance over bots drawn from the prior is L. Without it the interval
  ignores the shrinkage bias; with it, and independent games, the sandwich
  reduces to S^-1, the Laplace posterior covariance.
- Quantiles (and likelihoods of superiority) are Student-t with G - 1 degrees
  of freedom: the meat is estimated from G cluster sums, so a contrast's
  variance is known to about G - 1 degrees of freedom (Cameron & Miller 2015).

With board luck the ratings are r = c theta, c the fresh-deal scale
(`ratings.luck`), which solves psi_c = sum_c psi_c,unit = 0, so r's error is
linearised through both: dr = (c I - theta h^T / j) S^-1 sum g - theta/j sum
psi_c, with h and j the derivatives of psi_c in theta and c; each unit's
psi_c joins its scores in the meat, and the scale's uncertainty (one more
parameter, common to all bots) widens the intervals along theta.

Why not a bootstrap over boards: it would have to refit hundreds of times
(seconds per fit at 100,000 games, against a 10 s budget for everything), it
is random unless seeded, and with few boards it is no better calibrated.

The ratings are reported centred (mean 0), so the covariance is projected
onto the centred space: P Cov P with P = I - 11^T/n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.stats import norm, t

from ratings.model import Pool, evaluate, side_strengths, slot_scores, to_bots
from ratings.optimize import Solution

__all__ = ["Uncertainty", "centred", "quantile", "uncertainty"]

FloatArray = NDArray[np.float64]

# Work (sum over units of r^3, r its bots) up to which the scores are jackknifed (CR3).
_JACKKNIFE_FLOPS = 2e8


@dataclass(frozen=True, slots=True, eq=False)
class Uncertainty:
    """The centred covariance of the strengths (natural-log units) and its t degrees of freedom."""

    covariance: FloatArray
    dof: float  # math.inf: normal quantiles


def centred(cov: FloatArray) -> FloatArray:
    """P cov P with P = I - 11^T/n: the covariance of x - mean(x)."""
    out: FloatArray = cov - cov.mean(axis=0, keepdims=True) - cov.mean(axis=1, keepdims=True)
    out += cov.mean()
    return out


def _unit_scores(pool: Pool, solution: Solution) -> sp.csr_matrix:
    """(units, bots): the score in the bot strengths of each unit's games."""
    n = len(pool.bots)
    scores = slot_scores(pool, solution.evaluation)
    rows = np.repeat(pool.unit_of, scores.shape[1])
    return sp.csr_matrix(
        (scores.ravel(), (rows, pool.slot_bot.ravel())), shape=(len(pool.units), n)
    )


def _jackknifed_scores(pool: Pool, solution: Solution, inverse: FloatArray
                       ) -> sp.csr_matrix | None:
    """(units, bots): each unit's score g_c as (I - S_c S^-1)^-1 g_c (module doc), or None
    when that would cost too much (many bots per unit in a large pool).

    S_c is unit c's share of the Schur complement: the Hessian of its games in the
    bots, less what its own board's luck takes (B_c D_c^-1 B_c^T). S_c and g_c live on
    the unit's r bots, so the system is r x r; units of one r are solved together.
    """
    n, k = len(pool.bots), pool.sides
    ev, curv = solution.evaluation, solution.curvature
    real = pool.slot_weight > 0
    slot_unit = np.broadcast_to(pool.unit_of[:, None], real.shape)
    # The bots of each unit, sorted, and each slot's place among them.
    keys, local = np.unique(slot_unit[real] * n + pool.slot_bot[real], return_inverse=True)
    unit_of_key, bot_of_key = keys // n, keys % n
    units = len(pool.units)
    size = np.bincount(unit_of_key, minlength=units)
    if float((size.astype(np.float64) ** 3).sum()) > _JACKKNIFE_FLOPS:
        return None
    start = np.concatenate([[0], np.cumsum(size)])
    local_slot = np.zeros(real.shape, dtype=np.int64)
    local_slot[real] = local.ravel() - start[slot_unit[real]]
    # S_c in one flat buffer, unit after unit: block c is size[c]^2 long.
    block = np.concatenate([[0], np.cumsum(size * size)])
    w = pool.slot_weight * ev.gain[:, None]
    side = pool.slot_side
    neg = ev.neg_hess[:, side[:, None], side[None, :]] * w[:, :, None] * w[:, None, :]
    r_of = size[pool.unit_of][:, None, None]
    flat = (block[pool.unit_of][:, None, None] + local_slot[:, :, None] * r_of
            + local_slot[:, None, :])
    share = np.bincount(flat.ravel(), weights=neg.ravel(), minlength=int(block[-1]))
    scores_local = np.bincount((start[slot_unit] + local_slot)[real],
                               weights=slot_scores(pool, ev)[real], minlength=int(start[-1]))
    # Each board's luck part, B_c (r x sides) per unit, for the units with luck.
    lucky = pool.lucky if solution.luck_sd > 0 else np.zeros(0, dtype=np.int64)
    cross: FloatArray = np.zeros(int(start[-1]) * k)
    if lucky.size:
        values = ev.neg_hess[lucky][:, side, :] * w[lucky][:, :, None]
        seat = pool.seat_of[lucky]
        at = ((start[pool.unit_of[lucky]][:, None] + local_slot[lucky])[:, :, None] * k
              + seat[:, None, :])
        keep = np.broadcast_to(real[lucky][:, :, None], values.shape)
        cross = np.bincount(at[keep], weights=values[keep],
                            minlength=int(start[-1]) * k).astype(np.float64)
    board_of_unit = np.full(units, -1, dtype=np.int64)
    board_of_unit[pool.unit_of[lucky]] = pool.board_of[lucky]
    out_rows, out_cols, out_vals = [], [], []
    for r in np.unique(size[size > 0]):
        group = np.flatnonzero(size == r)
        m = share[block[group][:, None] + np.arange(r * r)].reshape(len(group), r, r)
        bots = bot_of_key[start[group][:, None] + np.arange(r)]
        g = scores_local[start[group][:, None] + np.arange(r)]
        boards = board_of_unit[group]
        with_luck = boards >= 0
        if with_luck.any():
            b = cross[(start[group][with_luck][:, None] + np.arange(r))[:, :, None] * k
                      + np.arange(k)].reshape(-1, r, k)
            d_inv = curv.luck_inverse[boards[with_luck]]
            m[with_luck] -= b @ d_inv @ b.transpose(0, 2, 1)
        p = inverse[bots[:, :, None], bots[:, None, :]]
        x = np.linalg.solve(np.eye(r)[None] - m @ p, g[:, :, None])[:, :, 0]
        out_rows.append(np.repeat(group, r))
        out_cols.append(bots.ravel())
        out_vals.append(x.ravel())
    if not out_rows:
        return sp.csr_matrix((units, n))
    return sp.csr_matrix((np.concatenate(out_vals),
                          (np.concatenate(out_rows), np.concatenate(out_cols))),
                         shape=(units, n))


def _outer(per_unit: sp.csr_matrix | FloatArray) -> FloatArray:
    """sum over units of the outer product of each unit's score vector (a sparse product:
    each unit's scores live on its few bots; a dense units x bots product cost 30 GFLOP
    at 100,000 games)."""
    if isinstance(per_unit, np.ndarray):
        dense_meat: FloatArray = per_unit.T @ per_unit
        return dense_meat
    rows = sp.csr_matrix(per_unit)
    return np.asarray((rows.T @ rows).toarray(), dtype=np.float64)


def _scale_terms(pool: Pool, solution: Solution, precision: float
                 ) -> tuple[FloatArray, float, FloatArray]:
    """The fresh-deal scale equation, linearised (module doc).

    Returns h = d psi_c / d theta (n,), j = d psi_c / d c, and each unit's term of psi_c.
    """
    theta, c = solution.theta, solution.scale
    strength = side_strengths(pool, theta)
    fresh = evaluate(pool, c * theta)  # the scale equation reads every game as a fresh deal
    pushed = np.einsum("gij,gj->gi", fresh.neg_hess, strength)
    h = to_bots(pool, fresh.grad - c * pushed) - 2 * c * precision * theta
    j = -float((strength * pushed).sum()) - precision * float(theta @ theta)
    per_unit = np.bincount(pool.unit_of, weights=(strength * fresh.grad).sum(axis=1),
                           minlength=len(pool.units))
    return h, j, per_unit.astype(np.float64)


def uncertainty(pool: Pool, solution: Solution, precision: float) -> Uncertainty:
    """The covariance of the module doc: clustered sandwich plus prior, on the centred space."""
    n = len(pool.bots)
    if n == 0:
        return Uncertainty(np.zeros((0, 0)), math.inf)
    units = len(pool.units)
    inverse = solution.curvature.schur_solve(np.eye(n))
    if units < 2:
        # One unit cannot show how luck varies between units: keep the model's covariance.
        return Uncertainty(centred(inverse), math.inf)
    bot_scores = _jackknifed_scores(pool, solution, inverse)
    if bot_scores is None:
        bot_scores, factor = _unit_scores(pool, solution), units / (units - 1)
    else:
        factor = (units - 1) / units
    h, j, scale_per_unit = (_scale_terms(pool, solution, precision) if solution.luck_sd > 0
                            else (np.zeros(n), 0.0, np.zeros(units)))
    if not j < 0:
        # No fitted scale (no luck, or no spread for a scale to stretch): c is a constant.
        meat = _outer(bot_scores) * factor
        meat[np.diag_indices_from(meat)] += precision
        cov = solution.scale**2 * (inverse @ meat @ inverse)
    else:
        # ratings r = c theta: dr = (c I - theta h^T / j) S^-1 (bot scores) - theta psi_c / j.
        theta, c = solution.theta, solution.scale
        lead = np.zeros((n, n + 1))
        lead[:, :n] = c * inverse - np.outer(theta, h @ inverse) / j
        lead[:, n] = -theta / j
        scores = sp.hstack([bot_scores, sp.csr_matrix(scale_per_unit[:, None])]).tocsr()
        meat = _outer(scores) * factor
        meat[np.arange(n), np.arange(n)] += precision
        cov = lead @ meat @ lead.T
    cov = (cov + cov.T) / 2  # exact symmetry, so that contrasts do not depend on the order
    return Uncertainty(centred(cov), float(units - 1))


def quantile(level: float, dof: float) -> float:
    """The two-sided quantile for a central interval of `level`: normal or Student-t."""
    p = 0.5 + level / 2
    return float(norm.ppf(p) if math.isinf(dof) else t.ppf(p, dof))
