"""A detector of collusion across the tables of a board: pairs of bots that score better
on the boards they share than on the rest of their games.

Two bots at different tables of one board hold two hands of one deal; if they talk,
each plays its own table knowing hidden tiles, and both score above what they score
elsewhere (docs/architecture.md, "Collusion across tables"). The detector looks for
exactly that, pair by pair, in a pool's games:

- **A game's duplicate score.** A seat scores 1, 1/2, 0 for first, second, third (2v2:
  1 and 0, win and loss; tied sides share), and its *residual* is that score less the
  mean score of the same seat position over every table of the board: the deal's luck
  cancels, what is left is how the bot played the deal against the others who held
  that hand. Only boards of two or more tables give residuals.
- **A pair's statistic.** For bots a and b that sat at different tables of n boards
  (their *shared* boards), y_i = (r_a,i - mu_a) + (r_b,i - mu_b) on each shared board i,
  where mu_a is a's mean residual on its other boards (its baseline, m_a boards). Under
  honesty E[y] = 0; colluders make it positive. The test is one-sided: z = mean(y) /
  se, se^2 = s_y^2 / n + v_a / m_a + v_b / m_b (y's own spread, which holds whatever
  the two residuals' correlation on one board, plus the baselines' uncertainty), read
  on Student's t with n - 1 degrees of freedom.
- **The pool's correction.** Every pair with at least `min_shared` shared boards and
  `min_baseline` other boards each is tested, and Holm's step-down adjusts the p-values
  over all of them: a pair is *suspected* when its adjusted p-value is at most `alpha`.
  So, when no pair colludes, the chance that the audit names any pair at all is at most
  `alpha` (the family-wise error rate, whatever the pool's size), not alpha per pair.

What the numbers mean, and their proof by simulation (power at 10, 30 and 100 shared
boards, the false-alarm rate on pools with no colluders): bench/collusion.py and
docs/PERFORMANCE.md. A suspected pair is evidence for an organiser to look at (the
boards, the games), never a verdict: a pair of honest bots whose style happens to pay
on the same deals is possible, at the rate the correction allows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from ratings.errors import RatingError
from ratings.table import GameTable

__all__ = ["ALPHA", "Audit", "PairEvidence", "audit", "holm", "residuals"]

ALPHA = 0.01  # the pool-wide false-alarm rate an audit is run at by default
MIN_SHARED = 5
MIN_BASELINE = 10

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class PairEvidence:
    """One pair of bots that sat at different tables of the same boards, tested."""

    bot_a: str
    bot_b: str
    boards: tuple[str, ...]  # the shared boards
    gain: float  # mean residual gain per bot per shared board, against their baselines
    se: float  # its standard error (of the pair's sum, halved)
    z: float
    p: float  # one-sided, this pair alone
    p_adjusted: float  # Holm's, over every pair tested in the pool
    baseline: tuple[int, int]  # boards each bot played apart from the other

    @property
    def shared(self) -> int:
        """Shared boards."""
        return len(self.boards)


@dataclass(frozen=True, slots=True)
class Audit:
    """A pool's collusion audit: every pair tested, most suspect first."""

    games: int  # games read
    boards: int  # boards of two or more tables among them
    bots: int
    pairs: tuple[PairEvidence, ...]  # tested, by p-value
    untested: int  # pairs that shared a board but too few, or with too short a baseline
    alpha: float
    min_shared: int
    min_baseline: int

    @property
    def suspected(self) -> tuple[PairEvidence, ...]:
        """The pairs whose adjusted p-value is at most alpha."""
        return tuple(p for p in self.pairs if p.p_adjusted <= self.alpha)


def holm(p: Sequence[float] | FloatArray) -> FloatArray:
    """Holm's step-down adjusted p-values (same order as given)."""
    pv = np.asarray(p, dtype=np.float64)
    m = pv.size
    if m == 0:
        return pv.copy()
    order = np.argsort(pv, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * pv[order])
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


def residuals(table: GameTable) -> tuple[NDArray[np.int64], NDArray[np.int64],
                                         NDArray[np.int64], FloatArray]:
    """(bot code, unit code, game row, residual) for every bot of every game on a board
    of two or more tables (a bot holding two seats of a game, both of a 2v2 side, once)."""
    seats = table.seat_bot.shape[1]
    sides = 3 if seats == 3 else 2
    score = (sides - table.place).astype(np.float64) / (sides - 1)
    unit = table.unit
    on_board = unit >= 0
    counts = np.bincount(unit[on_board], minlength=len(table.units))
    keep = np.flatnonzero(on_board & (counts[np.maximum(unit, 0)] >= 2))
    if keep.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, np.zeros(0)
    u = unit[keep]
    sums = np.zeros((len(table.units), seats))
    np.add.at(sums, u, score[keep])
    mean = sums[u] / counts[u][:, None]
    res = score[keep] - mean  # (kept games, seats)
    rows = np.repeat(keep, seats)
    bots = table.seat_bot[keep].reshape(-1)
    units = np.repeat(u, seats)
    r = res.reshape(-1)
    # A bot holding several seats of one game (a 2v2 side of one bot): its mean, once.
    key = rows * (len(table.bots) + 1) + bots
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    r_mean = np.bincount(inv, weights=r) / np.bincount(inv)
    return bots[first], units[first], rows[first], r_mean


def audit(table: GameTable, alpha: float = ALPHA, min_shared: int = MIN_SHARED,
          min_baseline: int = MIN_BASELINE) -> Audit:
    """Test every pair of bots that sat at different tables of the same boards (module
    doc); RatingError for an alpha outside (0, 1) or minimums below 2."""
    if not 0 < alpha < 1:
        raise RatingError(f"alpha: must be in (0, 1), got {alpha}")
    if min_shared < 2 or min_baseline < 2:
        raise RatingError("min_shared and min_baseline: at least 2")
    bots, units, rows, r = residuals(table)
    # Per bot: residual by board (a bot at two tables of one board, which fair boards
    # never do, averages them).
    by_bot: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    at: dict[int, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    for b, u, g, x in zip(bots.tolist(), units.tolist(), rows.tolist(), r.tolist(),
                          strict=True):
        by_bot[b][u].append(x)
        at[u][g].add(b)
    board_r = {b: {u: sum(xs) / len(xs) for u, xs in d.items()} for b, d in by_bot.items()}
    total = {b: (sum(d.values()), sum(v * v for v in d.values()), len(d))
             for b, d in board_r.items()}
    shared: dict[tuple[int, int], list[int]] = defaultdict(list)
    for u, games in at.items():
        tables = list(games.values())
        for i, ta in enumerate(tables):
            for tb in tables[i + 1:]:
                for a in ta:
                    for b in tb:
                        if a != b and a not in tb and b not in ta:
                            shared[(min(a, b), max(a, b))].append(u)
    tested: list[tuple[int, int, list[int], float, float, float, float, int, int]] = []
    untested = 0
    for (a, b), found in shared.items():
        us = sorted(set(found))
        n = len(us)
        ra = np.array([board_r[a][u] for u in us])
        rb = np.array([board_r[b][u] for u in us])
        sa, qa, ma = total[a]
        sb, qb, mb = total[b]
        ma, mb = ma - n, mb - n
        if n < min_shared or ma < min_baseline or mb < min_baseline:
            untested += 1
            continue
        mua = (sa - ra.sum()) / ma
        mub = (sb - rb.sum()) / mb
        va = max((qa - (ra * ra).sum() - ma * mua * mua) / (ma - 1), 0.0)
        vb = max((qb - (rb * rb).sum() - mb * mub * mub) / (mb - 1), 0.0)
        y = (ra - mua) + (rb - mub)
        se = float(np.sqrt(y.var(ddof=1) / n + va / ma + vb / mb))
        mean = float(y.mean())
        z = mean / se if se > 0 else (np.inf if mean > 0 else 0.0)
        p = float(stats.t.sf(z, df=n - 1))
        tested.append((a, b, us, mean / 2, se / 2, float(z), p, ma, mb))
    adjusted = holm([t[6] for t in tested])
    names, unit_names = table.bots, table.units
    pairs = [PairEvidence(
        bot_a=min(names[a], names[b]), bot_b=max(names[a], names[b]),
        boards=tuple(unit_names[u] for u in us), gain=gain, se=se, z=z, p=p,
        p_adjusted=float(adj),
        baseline=(ma, mb) if names[a] <= names[b] else (mb, ma))
        for (a, b, us, gain, se, z, p, ma, mb), adj in zip(tested, adjusted, strict=True)]
    pairs.sort(key=lambda e: (e.p, e.bot_a, e.bot_b))
    return Audit(games=len(table), boards=len(at), bots=len(board_r), pairs=tuple(pairs),
                 untested=untested, alpha=alpha, min_shared=min_shared,
                 min_baseline=min_baseline)
