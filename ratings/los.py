"""Likelihood of superiority: how sure the fit is that one bot is stronger than another.

LOS(a over b) = F(diff / sd(diff)), with diff the rating difference and
sd(diff)^2 = V_aa + V_bb - 2 V_ab from the fit's covariance, so that two bots
that met the same luck (and whose difference is therefore better known) get
the credit. F is the normal CDF, or Student-t with the covariance's degrees
of freedom when that was estimated from few units (see `ratings.intervals`),
so that LOS >= 97.5% exactly when the 95% interval of the difference is
above zero.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy.stats import norm, t

__all__ = ["los", "los_matrix", "los_pairs"]

FloatArray = NDArray[np.float64]


def _cdf(z: FloatArray, dof: float) -> FloatArray:
    """Normal or Student-t CDF, elementwise."""
    out: FloatArray = np.asarray(norm.cdf(z) if math.isinf(dof) else t.cdf(z, dof))
    return out


def los(diff: float, var: float, dof: float = math.inf) -> float:
    """P(the true difference is above zero) for an estimated difference and its variance."""
    if not var > 0:
        return 0.5 if diff == 0 else float(diff > 0)
    return float(_cdf(np.array(diff / math.sqrt(var)), dof))


def los_pairs(diffs: FloatArray, variances: FloatArray, dof: float = math.inf) -> FloatArray:
    """`los` of many differences and their variances at once."""
    d = np.asarray(diffs, dtype=np.float64)
    v = np.asarray(variances, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(v > 0, d / np.sqrt(np.where(v > 0, v, 1.0)), 0.0)
    out = _cdf(z, dof)
    known = np.where(d > 0, 1.0, np.where(d < 0, 0.0, 0.5))
    result: FloatArray = np.where(v > 0, out, known).astype(np.float64)
    return result


def los_matrix(ratings: FloatArray, covariance: FloatArray, dof: float = math.inf) -> FloatArray:
    """M[i, j] = LOS(i over j) for ratings and their covariance (same units), 0.5 diagonal."""
    r = np.asarray(ratings, dtype=np.float64)
    v = np.asarray(covariance, dtype=np.float64)
    diag = np.diag(v)
    var = diag[:, None] + diag[None, :] - 2 * v
    diff = r[:, None] - r[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(var > 0, diff / np.sqrt(np.where(var > 0, var, 1.0)), 0.0)
    out = _cdf(z, dof)
    # No variance: the difference is known exactly (0.5 when there is none).
    degenerate = ~(var > 0)
    out = np.where(degenerate, np.where(diff > 0, 1.0, np.where(diff < 0, 0.0, 0.5)), out)
    np.fill_diagonal(out, 0.5)
    result: FloatArray = out.astype(np.float64)
    return result
