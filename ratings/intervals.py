"""How sure the fit is: a unit-clustered (sandwich) covariance of the centred ratings.

Games dealt from one board share its luck (a good hand at seat 0 helps every
bot in seat 0 that round), so they are not independent draws and the model's
own covariance, the inverse Hessian H^-1, is wrong in both directions: too
wide for two bots who met the same luck (in duplicate, luck cancels), too
narrow where luck piles up. The cluster-robust sandwich measures it instead:

    Cov = H^-1 (G/(G-1) * sum_c g_c g_c^T + L) H^-1

with g_c the score (gradient of the log-likelihood) of all games of unit c at
the fit, G the number of units, H the Hessian of the negative log-posterior
and L the prior precision. Two small-sample corrections make the coverage
honest where there are few units (measured in bench/ratings.py, 16 bots, at
10 to 300 games per bot; without them the 95% intervals cover 91% at 10):

- The prior's precision L joins the meat. The MAP error is about
  H^-1 (s - L theta): besides the score s it carries the prior's pull L theta,
  whose variance over bots drawn from the prior is L. Without it the interval
  ignores the shrinkage bias; with it, and independent games, the sandwich
  reduces to H^-1, the Laplace posterior covariance.
- Quantiles (and likelihoods of superiority) are Student-t with G - 1 degrees
  of freedom: the meat is estimated from G cluster sums, so a contrast's
  variance is known to about G - 1 degrees of freedom (Cameron & Miller 2015).

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
from scipy.linalg import cho_factor, cho_solve
from scipy.stats import norm, t

from ratings.model import Pool, slot_scores
from ratings.optimize import Solution

__all__ = ["Uncertainty", "centred", "quantile", "uncertainty"]

FloatArray = NDArray[np.float64]

# Units x bots up to which the per-unit scores are multiplied as a dense matrix (~400 MB).
_DENSE_CELLS = 50_000_000


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


def _meat(pool: Pool, solution: Solution) -> FloatArray:
    """The sum over units of the outer product of each unit's score vector."""
    n = len(pool.bots)
    scores = slot_scores(pool, solution.evaluation)
    rows = np.repeat(pool.unit_of, scores.shape[1])
    per_unit = sp.csr_matrix(
        (scores.ravel(), (rows, pool.slot_bot.ravel())), shape=(len(pool.units), n)
    )
    if len(pool.units) * n <= _DENSE_CELLS:
        dense = per_unit.toarray()  # few units: a dense product runs on BLAS
        meat: FloatArray = dense.T @ dense
    else:
        meat = np.asarray((per_unit.T @ per_unit).toarray(), dtype=np.float64)
    return meat


def uncertainty(pool: Pool, solution: Solution, precision: float) -> Uncertainty:
    """The covariance of the module doc: clustered sandwich plus prior, on the centred space."""
    n = len(pool.bots)
    if n == 0:
        return Uncertainty(np.zeros((0, 0)), math.inf)
    inverse = cho_solve(cho_factor(solution.hessian), np.eye(n))
    units = len(pool.units)
    if units < 2:
        # One unit cannot show how luck varies between units: keep the model's covariance.
        return Uncertainty(centred(inverse), math.inf)
    meat = _meat(pool, solution) * (units / (units - 1))
    meat[np.diag_indices_from(meat)] += precision
    cov = inverse @ meat @ inverse
    cov = (cov + cov.T) / 2  # exact symmetry, so that contrasts do not depend on the order
    return Uncertainty(centred(cov), float(units - 1))


def quantile(level: float, dof: float) -> float:
    """The two-sided quantile for a central interval of `level`: normal or Student-t."""
    p = 0.5 + level / 2
    return float(norm.ppf(p) if math.isinf(dof) else t.ppf(p, dof))
