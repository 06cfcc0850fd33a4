"""The test of a change: is candidate C better than baseline B, on paired boards?

Pairs. A board is dealt twice: once with C and once with B in the same seat
position, the same opponents in the same seats (in 2v2 the same house
partner against the same house team). C's game score s_C is 1 for first,
1/2 for second, 0 for third, tied sides sharing the places they cover (in
2v2: 1 for the team's win, 1/2 for a draw, 0 for a loss); a forfeit counts
as the stored placement ranks it (`store.results.placement`: the forfeiter
last, in 2v2 its team loses). The pair score is (1 + s_C - s_B) / 2.

Game and pair scores are computed by `store.results.game_quarters` and
`pair_eighths` (re-exported here): the test's planner in `tournaments/`,
which the layout puts above `ratings/`, folds results with them too.

Shared places. The issue's five pair scores 0, 1/4, 1/2, 3/4, 1 (the
pentanomial) assume no shared places. In 3p two seats can share second
place (final scores 21, 5, 5 rank 1, 2, 2): each then scores 1/4, a
shared first (a hand-limit draw) scores 3/4, and a pair with a shared place
in exactly one of its games scores an odd eighth. So a pair score is kept as
an integer k in 0..8 (the score k/8), `counts` has nine bins, the GSPRT
below runs on all nine (it works for any finite set of scores), and what is
shown is the pentanomial (the even bins) plus the few odd ones. 2v2 pairs
only ever land on the five even bins.

The Elo of the test (why this one). The GSPRT constrains only the mean pair
score mu; an Elo is a name for mu. Three were on the table:

- the logistic Elo of mu, 400 log10(mu / (1 - mu)): in 3p, against opponents
  as strong as B, it is about half the pool-rating difference of C and B
  (mu - 1/2 is half the difference of two game scores), a scale nobody
  reads elsewhere in the stack;
- a normalised Elo ((mu - 1/2) over the pair score's sd): it makes a test's
  length depend on its bounds only, but then a hypothesis depends on the
  design's noise, so the same bounds mean a larger true difference on a
  luckier design, and a paired and an unpaired test (bench/sprt.py) would
  not test the same thing;
- chosen: the pool-rating difference that gives mu under the pool's own
  model (`ratings.model`: Plackett-Luce on side strengths, a team the mean
  of its two bots) when every other seat is held by a bot as strong as B.
  There a side with C instead of B is ahead of another side with odds
  10^(d/400) times those of B's, d the difference of the sides' strengths:
  C's pool difference over B in 3p, half of it for a team of two, so

      3p:  elo = 400 log10(p / (1 - p))
      2v2: elo = 800 log10(p / (1 - p)),    p = 2 mu - 1/2 = 1/2 + E[s_C - s_B].

  It is a logistic Elo of the mean score difference, on the scale of the pool
  ratings: +30 in a test is +30 in the pool against such a field.

How it relates to the pool ratings otherwise: the sign is always the pool's
(mu > 1/2 exactly when C's pool strength is above B's, whatever the
opponents), and `expected_pair_score` gives the mu the pool model predicts
from any field's ratings. Against a field much stronger or weaker than B the
logistic curve is flatter, so the test's Elo is smaller than the pool
difference (bench/sprt.py prints the pool difference behind each true test
Elo it runs). Like the pool ratings it is relative to the field: C and B are
compared, not rated.

The GSPRT. The pair scores are draws from an unknown distribution p on the
scores x_1..x_K (K = 9). H0 says mean(p) = mu0, H1 mean(p) = mu1 (the
scores of elo0 and elo1). The generalised SPRT replaces each simple
hypothesis by its best fit: LLR = log L(p1) - log L(p0), with p_j the
maximum-likelihood distribution among those of mean mu_j. Finding p_j
(counts n_i, N pairs, empirical shares w_i = n_i / N): maximise
sum n_i log p_i subject to sum p_i = 1 and sum p_i x_i = mu. Setting the
derivative of the Lagrangian to zero gives n_i / p_i = a + b x_i; summing
p_i (a + b x_i) = N gives a = N - b mu, so with t = b / N

    p_i = w_i / (1 + t (x_i - mu)),

and the mean constraint becomes g(t) = sum w_i (x_i - mu) / (1 + t (x_i - mu)) = 0.
g is the derivative of D(t) = sum w_i log(1 + t (x_i - mu)), which is concave,
so its root is D's maximum and

    log L(p_mu) = sum n_i log w_i - N max_t D(t).

t ranges where every p_i stays a probability for every score the pair could
take, observed or not: 1 + t (x - mu) >= 0 at both ends of the score range,
i.e. -1 / (x_max - mu) <= t <= 1 / (mu - x_min). Inside, the root is the
answer (unobserved scores get no mass). When D still rises at an end, the
maximum is that end: an unobserved extreme score then takes the mass the
observed ones cannot (all pairs drawn, mu = 0.51: 2% at score 1). So the
support's ends matter, not which scores were seen, and there is no need for
fishtest's small regularising counts. Hence

    LLR = N (max D at mu0 - max D at mu1),

computed for many count vectors at once by a safeguarded Newton iteration
(`log_ratio`). The test stops at the first pair after which LLR <= log(beta /
(1 - alpha)) (H0 accepted) or LLR >= log((1 - beta) / alpha) (H1 accepted),
Wald's bounds; their accuracy for this plug-in test is measured by
bench/sprt.py.

Fixed games. Without the sequential test the estimate is the mean pair
score with a normal 95% interval, mean +- z sd / sqrt(N), sd the pair
scores' (from the counts, so the pairing's shared luck is in it), mapped to
Elo; LOS = Phi((mean - 1/2) / se). Its coverage is measured by bench/sprt.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit, logit
from scipy.stats import norm

from ratings.errors import RatingError
from ratings.scale import ELO_PER_NAT
from store.results import game_quarters, pair_eighths

__all__ = [
    "BINS",
    "PAIR_SCORES",
    "Estimate",
    "Sprt",
    "Verdict",
    "counts_of",
    "elo_of_score",
    "estimate",
    "expected_pair_score",
    "game_quarters",
    "llr",
    "log_ratio",
    "pair_eighths",
    "pentanomial",
    "score_of_elo",
    "shared",
]

FloatArray = NDArray[np.float64]

BINS = 9  # a pair score k / 8, k = 0..8
PAIR_SCORES: FloatArray = np.arange(BINS, dtype=np.float64) / 8.0
_NEWTON_STEPS = 200  # safeguarded: bisection when Newton leaves the bracket; ~10 suffice
_TOL = 1e-14  # the bracket's width, relative to t's range, at which t is found
_G_TOL = 1e-13  # |g| relative to its terms' size at which t is a root (rounding)


class Verdict(StrEnum):
    """Where a sequential test stands."""

    PENDING = "pending"  # neither bound crossed
    H0 = "H0"  # the lower bound crossed: no better than elo0
    H1 = "H1"  # the upper bound crossed: at least elo1


# ------------------------------------------------------------------ pair scores


def _check_players(players: int) -> int:
    if isinstance(players, bool) or players not in (3, 4):
        raise RatingError(f"players must be 3 or 4, got {players!r}")
    return players


def counts_of(eighths: Iterable[int]) -> tuple[int, ...]:
    """The nine bins (pair scores 0/8 .. 8/8) of some pair scores in eighths."""
    values = [int(k) for k in eighths]
    if any(not 0 <= k < BINS for k in values):
        raise RatingError(f"pair scores in eighths must be 0 to 8, got {values}")
    return tuple(int(c) for c in np.bincount(np.asarray(values, dtype=np.int64),
                                             minlength=BINS))


def _counts(counts: ArrayLike, size: int = BINS) -> FloatArray:
    """Checked counts: a (..., size) array of finite non-negative numbers."""
    arr = np.asarray(counts, dtype=np.float64)
    if arr.ndim < 1 or arr.shape[-1] != size:
        raise RatingError(f"counts need {size} bins, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise RatingError("counts must be finite and non-negative")
    return arr


def _vector(counts: ArrayLike) -> FloatArray:
    """One checked count vector of nine bins."""
    arr = _counts(counts)
    if arr.ndim != 1:
        raise RatingError(f"expected one count vector of {BINS} bins, got shape {arr.shape}")
    return arr


def pentanomial(counts: ArrayLike) -> tuple[int, ...]:
    """The five usual bins: pair scores 0, 1/4, 1/2, 3/4, 1."""
    return tuple(int(c) for c in _vector(counts)[::2])


def shared(counts: ArrayLike) -> tuple[int, ...]:
    """The bins between them (1/8, 3/8, 5/8, 7/8): pairs with a shared place in one game."""
    return tuple(int(c) for c in _vector(counts)[1::2])


# ------------------------------------------------------------------ the Elo of a test


def _team_factor(players: int) -> float:
    """Elo of the test per unit of logit(p): 1 a bot, 2 in a team of two (module doc)."""
    return ELO_PER_NAT * (1.0 if _check_players(players) == 3 else 2.0)


def score_of_elo(elo: float, players: int) -> float:
    """The mean pair score of a test's Elo (module doc): in (1/4, 3/4)."""
    if not math.isfinite(elo):
        raise RatingError(f"elo must be finite, got {elo!r}")
    return (float(expit(elo / _team_factor(players))) + 0.5) / 2.0


def elo_of_score(score: float, players: int) -> float:
    """The test's Elo of a mean pair score; -inf at or below 1/4, +inf at or above 3/4."""
    factor = _team_factor(players)
    if math.isnan(score):
        raise RatingError("score is NaN")
    p = 2.0 * score - 0.5
    if p <= 0:
        return -math.inf
    if p >= 1:
        return math.inf
    return factor * float(logit(p))


def expected_pair_score(players: int, candidate: float, baseline: float,
                        others: Sequence[float]) -> float:
    """The mean pair score the pool model predicts from pool ratings (Elo).

    3p: `others` are the two opponents' ratings; 2v2: the partner's, then the two
    opponents'. In the model P(side a ahead of side b) = expit(strength_a - strength_b),
    a team's strength the mean of its bots' (module doc).
    """
    _check_players(players)
    need = 2 if players == 3 else 3
    if len(others) != need:
        raise RatingError(f"others: {players} players need {need} ratings, got {len(others)}")
    nat = np.asarray([candidate, baseline, *others], dtype=np.float64) / ELO_PER_NAT
    if not np.all(np.isfinite(nat)):
        raise RatingError("ratings must be finite")
    c, b, rest = nat[0], nat[1], nat[2:]
    if players == 3:
        diff = expit(c - rest) - expit(b - rest)
        return float(0.5 + diff.mean() / 2.0)
    partner, team = rest[0], rest[1:].mean()
    diff = expit((c + partner) / 2 - team) - expit((b + partner) / 2 - team)
    return float(0.5 + diff / 2.0)


# ------------------------------------------------------------------ the GSPRT


def _support(scores: ArrayLike) -> FloatArray:
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 1 or x.size < 2 or not np.all(np.isfinite(x)) or np.any(np.diff(x) <= 0):
        raise RatingError("scores must be at least two finite values in increasing order")
    return x


def _slope(w: FloatArray, d: FloatArray, t: FloatArray) -> FloatArray:
    """g(t) = sum w_i d_i / (1 + t d_i), row by row; zero-weight scores add nothing."""
    arg = 1.0 + t[..., None] * d
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, w * d / np.where(w > 0, arg, 1.0), 0.0)
    out: FloatArray = terms.sum(axis=-1)
    return out


def _maximiser(w: FloatArray, d: FloatArray, lo: float, hi: float) -> FloatArray:
    """The t in [lo, hi] maximising D(t) = sum w_i log(1 + t d_i), for each row of w."""
    top, bottom = int(np.argmax(d)), int(np.argmin(d))
    shape = w.shape[:-1]
    # An end is the maximum when the extreme score there is unobserved (so D is finite
    # there) and D still rises towards it. Else D -> -inf at that end, or falls: interior.
    at_lo = (w[..., top] == 0) & (_slope(w, d, np.full(shape, lo)) <= 0)
    at_hi = (w[..., bottom] == 0) & (_slope(w, d, np.full(shape, hi)) >= 0) & ~at_lo
    a, b = np.full(shape, lo), np.full(shape, hi)
    t = np.zeros(shape)
    width = b - a
    active = ~(at_lo | at_hi)
    for _ in range(_NEWTON_STEPS):
        if not active.any():
            break
        arg = 1.0 + t[..., None] * d
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            terms = np.where(w > 0, w * d / arg, 0.0)
            g = terms.sum(axis=-1)
            curve = np.where(w > 0, w * (d / arg) ** 2, 0.0).sum(axis=-1)
            size = np.abs(terms).sum(axis=-1)
        a = np.where(active & (g > 0), t, a)  # g falls in t: the root is above t
        b = np.where(active & (g < 0), t, b)
        # Converged when g is zero to rounding or the bracket is closed. A small Newton
        # step is no proof: next to a pole of g (an observed score's 1 + t d near 0) Newton
        # crawls by the distance to the pole, so a step can be tiny far from the root.
        done = (np.abs(g) <= _G_TOL * size) | (b - a <= _TOL * (hi - lo))
        with np.errstate(divide="ignore", invalid="ignore"):
            new = np.where(curve > 0, t + g / curve, t)
        # Bisect when Newton leaves the bracket, or when the last step did not halve it
        # (the crawl above): the bracket then shrinks at least geometrically.
        slow = (b - a) > 0.5 * width
        new = np.where(~((new > a) & (new < b)) | slow, (a + b) / 2.0, new)
        width = b - a
        t = np.where(active & ~done, new, t)
        active &= ~done
    t = np.where(at_lo, lo, np.where(at_hi, hi, t))
    return t


def log_ratio(counts: ArrayLike, scores: ArrayLike, mean: float) -> FloatArray:
    """log L(empirical) - max log L over distributions of the scores with this mean (>= 0).

    `counts` is (..., K) for the K `scores`; the result has the leading shape. `mean`
    must lie strictly inside the scores' range (module doc for the derivation).
    """
    x = _support(scores)
    n = _counts(counts, x.size)
    if not x[0] < mean < x[-1]:
        raise RatingError(f"mean {mean!r} must lie strictly between {x[0]} and {x[-1]}")
    total = n.sum(axis=-1)
    w = n / np.where(total > 0, total, 1.0)[..., None]
    d = x - mean
    t = _maximiser(w, d, -1.0 / (x[-1] - mean), 1.0 / (mean - x[0]))
    arg = 1.0 + t[..., None] * d
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, w * np.log(np.where(w > 0, arg, 1.0)), 0.0)
    out: FloatArray = np.maximum(total * terms.sum(axis=-1), 0.0)
    return out


def llr(counts: ArrayLike, scores: ArrayLike, mean0: float, mean1: float) -> FloatArray:
    """The GSPRT's log-likelihood ratio of mean1 against mean0, for each count vector."""
    out: FloatArray = log_ratio(counts, scores, mean0) - log_ratio(counts, scores, mean1)
    return out


# ------------------------------------------------------------------ estimates


@dataclass(frozen=True, slots=True)
class Estimate:
    """What a set of pairs says about the test's Elo: a 95% interval and the LOS."""

    pairs: int
    score: float  # mean pair score
    sd: float  # sd of one pair's score
    elo: float
    low: float  # -inf / +inf when too few pairs to say
    high: float
    los: float  # P(C better than B), normal approximation


def estimate(counts: ArrayLike, players: int, scores: ArrayLike = PAIR_SCORES,
             level: float = 0.95) -> Estimate:
    """The test's Elo from pair counts, with its interval (normal, sd from the counts)."""
    x = _support(scores)
    n = _counts(counts, x.size)
    if n.ndim != 1:
        raise RatingError("estimate takes one count vector")
    if not 0 < level < 1:
        raise RatingError(f"level must be in (0, 1), got {level!r}")
    _check_players(players)
    total = float(n.sum())
    if total < 1:
        return Estimate(0, 0.5, 0.0, 0.0, -math.inf, math.inf, 0.5)
    mean = float(n @ x) / total
    elo = elo_of_score(mean, players)
    if total < 2:
        return Estimate(int(total), mean, 0.0, elo, -math.inf, math.inf, 0.5)
    sd = math.sqrt(float(n @ (x - mean) ** 2) / (total - 1.0))
    se = sd / math.sqrt(total)
    z = float(norm.ppf(0.5 + level / 2.0))
    if se > 0:
        los = float(norm.cdf((mean - 0.5) / se))
    else:
        los = 0.5 if mean == 0.5 else float(mean > 0.5)
    return Estimate(int(total), mean, sd, elo, elo_of_score(mean - z * se, players),
                    elo_of_score(mean + z * se, players), los)


# ------------------------------------------------------------------ the test


@dataclass(frozen=True, slots=True)
class Sprt:
    """A GSPRT of elo0 against elo1 (the test's Elo, module doc) on pair counts."""

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05
    players: int = 3

    def __post_init__(self) -> None:
        _check_players(self.players)
        for name in ("elo0", "elo1", "alpha", "beta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value):
                raise RatingError(f"{name} must be a finite number, got {value!r}")
        if not self.elo0 < self.elo1:
            raise RatingError(f"elo0 must be below elo1, got elo0={self.elo0}, elo1={self.elo1}")
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            if not 0 < value < 0.5:
                raise RatingError(f"{name} must be in (0, 0.5), got {value}")

    @property
    def lower(self) -> float:
        """log(beta / (1 - alpha)): at or below it H0 is accepted."""
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper(self) -> float:
        """log((1 - beta) / alpha): at or above it H1 is accepted."""
        return math.log((1.0 - self.beta) / self.alpha)

    @property
    def bounds(self) -> tuple[float, float]:
        """(lower, upper)."""
        return self.lower, self.upper

    @property
    def scores(self) -> tuple[float, float]:
        """The mean pair scores of elo0 and elo1."""
        return score_of_elo(self.elo0, self.players), score_of_elo(self.elo1, self.players)

    def llr(self, counts: ArrayLike) -> float:
        """The LLR of one count vector (nine bins)."""
        mu0, mu1 = self.scores
        return float(llr(_vector(counts), PAIR_SCORES, mu0, mu1))

    def verdict(self, value: float) -> Verdict:
        """The verdict an LLR gives."""
        if value >= self.upper:
            return Verdict.H1
        if value <= self.lower:
            return Verdict.H0
        return Verdict.PENDING

    def judge(self, counts: Sequence[int]) -> tuple[float, Verdict]:
        """The LLR of the counts and its verdict."""
        value = self.llr(counts)
        return value, self.verdict(value)

    def path(self, eighths: Sequence[int]) -> FloatArray:
        """The LLR after each pair of a sequence of pair scores (eighths), in that order."""
        values = np.asarray([int(k) for k in eighths], dtype=np.int64)
        if values.size and (values.min() < 0 or values.max() >= BINS):
            raise RatingError("pair scores in eighths must be 0 to 8")
        cumulative = np.cumsum(np.eye(BINS)[values], axis=0) if values.size else \
            np.zeros((0, BINS))
        mu0, mu1 = self.scores
        out: FloatArray = llr(cumulative, PAIR_SCORES, mu0, mu1)
        return out

    def estimate(self, counts: Sequence[int]) -> Estimate:
        """The test's Elo with its 95% interval (`estimate`)."""
        return estimate(counts, self.players)
