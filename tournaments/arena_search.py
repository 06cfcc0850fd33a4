"""How the arena groups seated bots into tables: each table's value, and a search over groupings.

A table's value (`Scorer.values`) is its objective less a cost for every pair
of its bots that sat together recently (`REPEAT_COST` each, far above any
objective, so the search first avoids repeats wherever it can, then weighs the
objective), and a cost for every pair of one group (`Scorer.kin`: one author's
bots, or a declared group's, `tournaments.apart`) at one table, partners or
opponents (`GROUP_COST` each, far above every repeat a table can hold, so the
search first keeps groups apart, then avoids repeats). The objectives
(`tournaments.arena` says why the first):

- `variance` (the default): the expected fall of the sum of the table's
  rating variances, tr(Sigma_T J_T (I + Sigma_T J_T)^-1 Sigma_T), natural-log
  units squared (the A-optimal criterion, greedily, on the table's block).
- `information`: the expected information the game gives about the ratings,
  0.5 log det(I + Sigma_T J_T) nats, with Sigma_T the table's block of the
  rating covariance and J_T the game's Fisher information at the current
  ratings (below). It is the mutual information between the result and the
  ratings under a Gaussian posterior (the D-optimal criterion, greedily).
- `similar`: minus the spread of the table's ratings (the Kaggle rule); 2v2
  teams as even as the four allow.
- `random`: nothing, so a random grouping stands except where it repeats pairs.

In 2v2 a group of four takes its best split into teams, each pair of recent
partners a split puts together again costing `PARTNER_COST`.

Fisher information of one game in its bots' natural-log strengths (the
fresh-deal models of `ratings.model`, luck integrated out, ties ignored):

- 3p (Plackett-Luce): with p the softmax of the strengths, the first place
  gives diag(p) - p p^T, and the order of the other two, given who won, a
  Bradley-Terry term q(1 - q)(e_j - e_k)(e_j - e_k)^T weighted by p_i.
- 2v2 (Bradley-Terry between team means): c w w^T, c = p(1 - p), w = +1/2 on
  one team and -1/2 on the other, so the information is
  0.5 log(1 + c Var(team difference)) and the variance fall
  c |Sigma w|^2 / (1 + c w^T Sigma w).

Both reduce to elementwise arithmetic on the table's block: 3p J has zero
row sums, J = D K D^T with D the differences to the third bot, so the 3 x 3
determinants and inverses become 2 x 2 ones (Sylvester, Woodbury).

The search (`search`): from a random grouping (seeded), rounds of exchanges:
each round pairs the tables (a round robin of the tables, so a cycle of
rounds pairs every two tables once) and, for every pair at once, tries each
exchange of one bot of one table with one of the other, and takes the best
exchange of each pair if it raises the pair's value. It stops at a local
optimum (a whole cycle without a gain) or after a number of rounds. All in
numpy: a round over 333 tables costs about a millisecond. Where that start
seats two bots of one group at one table, it is not left to chance: the random
order (or the sorted one) is dealt to tables greedily, the bots with the most
kin first and a group's bots one after another, each to the table with room
where it meets the fewest of its kin (of those, the emptiest, then the first).
When no group holds more bots than there are tables and no bot is in two
groups, that is a round robin of the groups, so the start seats no two bots of
one group together, and no exchange the search takes brings two together again
(each would cost `GROUP_COST`). A start that keeps its groups apart already,
and every start without groups, stands.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "GROUP_COST",
    "OBJECTIVES",
    "PARTNER_COST",
    "REPEAT_COST",
    "Scorer",
    "fisher3",
    "gain3",
    "reduction3",
    "search",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

OBJECTIVES = ("information", "variance", "similar", "random")
# Per pair of recent table-mates, in nats: a table of three new bots gains about 1.3, so one
# avoided repeat outweighs any objective and the search minimises repeats first.
REPEAT_COST = 100.0
# 2v2, per pair of recent partners a split makes: below a repeat of table-mates, above any gain.
PARTNER_COST = 10.0
# Per pair of one group (an author's bots, a declared group) at one table, whatever the
# teams: a table holds at most 6 pairs of recent table-mates and 2 of partners (620), so one
# pair of a group kept apart outweighs every repeat and every objective.
GROUP_COST = 10_000.0
_SPLITS = np.array([[0, 1, 2, 3], [0, 2, 1, 3], [0, 3, 1, 2]])  # 2v2 teams: (a, b) vs (c, d)
# Slot pairs a < b of a table of k, as index arrays, in itertools.combinations order.
_PAIRS = {k: tuple(np.array(x, dtype=np.int64) for x in
                   zip(*itertools.combinations(range(k), 2), strict=True)) for k in (3, 4)}
# A 4 x 4 block, row-major, from (4 variances, then the 6 pair covariances).
_BLOCK4 = np.array([i if i == j else 4 + list(itertools.combinations(range(4), 2)).index(
    (min(i, j), max(i, j))) for i in range(4) for j in range(4)], dtype=np.int64)
# (4, splits): w of each split, +1/2 on the team of its first two slots, -1/2 on the other.
_TEAM_WEIGHTS = np.array([[0.5 if i in o[:2] else -0.5 for o in _SPLITS] for i in range(4)])


def _team_maps() -> tuple[FloatArray, FloatArray]:
    """Linear maps from a block's ten entries to Sigma w (4 x splits, flat) and w' Sigma w."""
    to_sw = np.zeros((10, 4 * len(_SPLITS)))
    to_spread = np.zeros((10, len(_SPLITS)))
    for i, j, s in itertools.product(range(4), range(4), range(len(_SPLITS))):
        entry = _BLOCK4[i * 4 + j]
        to_sw[entry, i * len(_SPLITS) + s] += _TEAM_WEIGHTS[j, s]
        to_spread[entry, s] += _TEAM_WEIGHTS[i, s] * _TEAM_WEIGHTS[j, s]
    return to_sw, to_spread


_TO_SW, _TO_SPREAD = _team_maps()
_SUM_SLOTS = np.tile(np.eye(len(_SPLITS)), (4, 1))  # (4 x splits, splits): sums over the slots
_TOL = 1e-12  # an exchange must gain more than rounding to be taken


def _sigmoid(x: FloatArray) -> FloatArray:
    """The logistic function, elementwise."""
    out: FloatArray = 1.0 / (1.0 + np.exp(-x))
    return out


def _fisher_k(mu: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """K (its entries 00, 01, 11) with J = D K D^T: the Fisher information of 3p games at
    strengths mu (m, 3) in the differences to the third bot (D = [e0 - e2, e1 - e2])."""
    top = mu.max(axis=1, keepdims=True)
    e = np.exp(mu - top)
    p = e / e.sum(axis=1, keepdims=True)
    p0, p1, p2 = p[:, 0], p[:, 1], p[:, 2]

    def pair(i: FloatArray, j: int, k: int) -> FloatArray:
        q = _sigmoid(mu[:, j] - mu[:, k])
        out: FloatArray = i * q * (1.0 - q)
        return out

    c0, c1, c2 = pair(p0, 1, 2), pair(p1, 0, 2), pair(p2, 0, 1)
    # The first place: diag(p) - p p^T; the order of the others: c_i on the pair without i.
    # J's rows sum to 0, so its top-left 2 x 2 block is K.
    return p0 - p0 * p0 + c1 + c2, -p0 * p1 - c2, p1 - p1 * p1 + c0 + c2


def _differences(x: dict[tuple[int, int], FloatArray]
                 ) -> tuple[FloatArray, FloatArray, FloatArray]:
    """D^T X D (entries 00, 01, 11) of symmetric 3 x 3 matrices X given by x[(i, j)], i <= j."""
    return (x[0, 0] + x[2, 2] - 2.0 * x[0, 2], x[0, 1] - x[0, 2] - x[1, 2] + x[2, 2],
            x[1, 1] + x[2, 2] - 2.0 * x[1, 2])


def _block3(var: FloatArray, cov: dict[tuple[int, int], FloatArray]
            ) -> dict[tuple[int, int], FloatArray]:
    """The entries (i <= j) of each table's 3 x 3 covariance."""
    out = {(i, i): var[:, i] for i in range(3)}
    out.update(cov)
    return out


def gain3(mu: FloatArray, var: FloatArray, cov: dict[tuple[int, int], FloatArray]
          ) -> FloatArray:
    """0.5 log det(I + Sigma J) of 3p tables: strengths mu (m, 3), variances var (m, 3) and
    covariances cov[(a, b)] (m,), natural log.

    J has zero row sums, so J = D K D^T with D the differences to the third bot, and
    det(I + Sigma J) = det(I + K V), V = D^T Sigma D (Sylvester): 2 x 2 and elementwise.
    """
    k00, k01, k11 = _fisher_k(mu)
    v00, v01, v11 = _differences(_block3(var, cov))
    a, b = 1.0 + k00 * v00 + k01 * v01, k00 * v01 + k01 * v11
    c, d = k01 * v00 + k11 * v01, 1.0 + k01 * v01 + k11 * v11
    out: FloatArray = 0.5 * np.log(np.maximum(a * d - b * c, 1.0))
    return out


def reduction3(mu: FloatArray, var: FloatArray, cov: dict[tuple[int, int], FloatArray]
               ) -> FloatArray:
    """The expected fall of the sum of a 3p table's three rating variances (natural log^2).

    Sigma' = Sigma - Sigma J (I + Sigma J)^-1 Sigma on the table's block, whose trace falls
    by tr(K (I + V K)^-1 W), W = D^T Sigma^2 D (as `gain3`: J = D K D^T, V = D^T Sigma D).
    """
    k00, k01, k11 = _fisher_k(mu)
    x = _block3(var, cov)
    v00, v01, v11 = _differences(x)
    def at(i: int, j: int) -> FloatArray:
        return x[min(i, j), max(i, j)]

    sq = {(i, j): at(i, 0) * at(0, j) + at(i, 1) * at(1, j) + at(i, 2) * at(2, j)
          for i in range(3) for j in range(i, 3)}
    w00, w01, w11 = _differences(sq)
    # M = I + V K and its inverse by the adjugate.
    m00, m01 = 1.0 + v00 * k00 + v01 * k01, v00 * k01 + v01 * k11
    m10, m11 = v01 * k00 + v11 * k01, 1.0 + v01 * k01 + v11 * k11
    det = m00 * m11 - m01 * m10
    i00, i01, i10, i11 = m11 / det, -m01 / det, -m10 / det, m00 / det
    # N = K M^-1, then tr(N W).
    n00, n01 = k00 * i00 + k01 * i10, k00 * i01 + k01 * i11
    n10, n11 = k01 * i00 + k11 * i10, k01 * i01 + k11 * i11
    out: FloatArray = n00 * w00 + n01 * w01 + n10 * w01 + n11 * w11
    return out


def fisher3(mu: FloatArray) -> FloatArray:
    """(m, 3, 3): the Fisher information of a 3p Plackett-Luce game at strengths mu (m, 3)."""
    top = mu.max(axis=1, keepdims=True)
    e = np.exp(mu - top)
    p = e / e.sum(axis=1, keepdims=True)
    info: FloatArray = -p[:, :, None] * p[:, None, :]
    info[:, [0, 1, 2], [0, 1, 2]] += p
    for i, (j, k) in ((0, (1, 2)), (1, (0, 2)), (2, (0, 1))):
        q = _sigmoid(mu[:, j] - mu[:, k])
        c = p[:, i] * q * (1.0 - q)
        info[:, j, j] += c
        info[:, k, k] += c
        info[:, j, k] -= c
        info[:, k, j] -= c
    return info


@dataclass(frozen=True, slots=True, eq=False)
class Scorer:
    """Values tables of seated bots (indices 0..s-1) for one objective."""

    players: int  # 3 (3p) or 4 (2v2)
    objective: str
    mu: FloatArray  # (s,) ratings, natural log
    var: FloatArray  # (s,) their variances, natural log squared
    recent: BoolArray  # (s, s) True where two bots sat together recently
    partners: BoolArray | None = None  # 2v2, (s, s): True where two bots were partners lately
    # The fit's covariance (any units, times `unit` gives natural log squared) and each seated
    # bot's row in it (-1: not in it, so independent of the others); None: all independent.
    matrix: FloatArray | None = None
    row: IntArray | None = None
    unit: float = 1.0
    kin: BoolArray | None = None  # (s, s): True where two bots share a group; None: no groups

    def kin_pairs(self, groups: IntArray) -> FloatArray:
        """(m,): pairs of one group at each table (partners or opponents alike)."""
        m, k = groups.shape
        out = np.zeros(m)
        if self.kin is not None:
            for a, b in itertools.combinations(range(k), 2):
                out += self.kin[groups[:, a], groups[:, b]]
        return out

    def pair_covariances(self, groups: IntArray) -> FloatArray:
        """(m, pairs): Cov(bot a, bot b) for each pair of slots a < b of each group, in
        `itertools.combinations` order."""
        m, k = groups.shape
        first, second = _PAIRS[k]
        if self.matrix is None or self.row is None:
            return np.zeros((m, len(first)))
        rows = self.row[groups]
        ra, rb = rows[:, first], rows[:, second]
        # One gather from the flat matrix: several times faster than 2-d fancy indexing.
        out: FloatArray = self.matrix.reshape(-1).take(ra * len(self.matrix) + rb) * self.unit
        if (self.row < 0).any():
            out[(ra < 0) | (rb < 0)] = 0.0
        return out

    def covariances(self, groups: IntArray) -> dict[tuple[int, int], FloatArray]:
        """Cov(bot a, bot b) for each pair of slots a < b of each group."""
        values = self.pair_covariances(groups)
        pairs = itertools.combinations(range(groups.shape[1]), 2)
        return {pair: values[:, i] for i, pair in enumerate(pairs)}

    def values(self, groups: IntArray) -> tuple[FloatArray, IntArray]:
        """Each group's value and, for 2v2, the index of its best split (0 for 3p)."""
        m, k = groups.shape
        repeats = np.zeros(m)
        for a, b in itertools.combinations(range(k), 2):
            repeats += self.recent[groups[:, a], groups[:, b]]
        if self.kin is not None:
            repeats += GROUP_COST / REPEAT_COST * self.kin_pairs(groups)
        if k == 4:
            value, split = self._best_split(self._split_objective(groups), groups)
            return value - REPEAT_COST * repeats, split
        if self.objective == "random":
            objective = np.zeros(m)
        elif self.objective == "similar":
            objective = -self.mu[groups].var(axis=1)
        elif self.objective == "variance":
            objective = reduction3(self.mu[groups], self.var[groups], self.covariances(groups))
        else:
            objective = self.information(groups)
        return objective - REPEAT_COST * repeats, np.zeros(m, dtype=np.int64)

    def _team_moments(self, groups: IntArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """For each split of each group of four (m, 3 each): the information c = p (1 - p) of
        its result, Var(team difference) = w' Sigma w, and |Sigma w|^2."""
        # Sigma w and w' Sigma w are linear in the block's ten entries: two 2-d products
        # (batched 4 x 4 products of numpy are several times slower).
        entries = np.concatenate([self.var[groups], self.pair_covariances(groups)], axis=1)
        sw = entries @ _TO_SW
        spread = np.maximum(entries @ _TO_SPREAD, 0.0)
        p = _sigmoid(self.mu[groups] @ _TEAM_WEIGHTS)
        return p * (1.0 - p), spread, (sw * sw) @ _SUM_SLOTS

    def _team_reductions(self, groups: IntArray) -> FloatArray:
        """(m, 3): the fall of the four rating variances, c |Sigma w|^2 / (1 + c w' Sigma w)
        (Sherman-Morrison), for each split of each group."""
        info, spread, norm = self._team_moments(groups)
        out: FloatArray = info * norm / (1.0 + info * spread)
        return out

    def _split_objective(self, groups: IntArray) -> FloatArray:
        """(m, 3): the objective of each split of each group of four."""
        if self.objective == "information":
            return self._team_gains(groups)
        if self.objective == "variance":
            return self._team_reductions(groups)
        if self.objective == "random":
            return np.zeros((len(groups), len(_SPLITS)))
        mu = self.mu[groups]
        gaps = np.stack([np.abs(mu[:, o[:2]].sum(axis=1) - mu[:, o[2:]].sum(axis=1))
                         for o in _SPLITS], axis=1)
        # The most similar four, then the evenest teams among them (a tie-breaker's weight).
        out: FloatArray = -mu.var(axis=1)[:, None] - 1e-3 * gaps
        return out

    def _best_split(self, scores: FloatArray, groups: IntArray) -> tuple[FloatArray, IntArray]:
        """Each group's best split (its value, which) of `scores` (m, 3), less PARTNER_COST for
        each pair of recent partners a split puts together again."""
        value = scores.copy()
        if self.partners is not None:
            for s, (a, b, c, d) in enumerate(_SPLITS):
                again = (self.partners[groups[:, a], groups[:, b]].astype(np.float64)
                         + self.partners[groups[:, c], groups[:, d]])
                value[:, s] -= PARTNER_COST * again
        split = value.argmax(axis=1).astype(np.int64)
        return value[np.arange(len(groups)), split], split

    def information(self, tables: IntArray) -> FloatArray:
        """The expected information of each table's game, 2v2 tables split (a, b) vs (c, d)."""
        if tables.shape[1] == 3:
            return gain3(self.mu[tables], self.var[tables], self.covariances(tables))
        return self._team_gains(tables)[:, 0]

    def reduction(self, tables: IntArray) -> FloatArray:
        """The expected fall of each table's rating variances, 2v2 split (a, b) vs (c, d)."""
        if tables.shape[1] == 3:
            return reduction3(self.mu[tables], self.var[tables], self.covariances(tables))
        return self._team_reductions(tables)[:, 0]

    def _team_gains(self, groups: IntArray) -> FloatArray:
        """(m, 3): 0.5 log(1 + p(1 - p) Var(team difference)) of each split of each group."""
        info, spread, _ = self._team_moments(groups)
        out: FloatArray = 0.5 * np.log1p(info * spread)
        return out


def _spread(order: IntArray, kin: BoolArray, t: int, k: int) -> IntArray:
    """`order`'s bots dealt to t tables of k, keeping bots of one group apart (module doc):
    the bots with the most kin among them first, each group's together (by where its first
    bot stands in `order`, then in order), each to the table with room where it meets the
    fewest of its kin, of those the one with the most room, then the first."""
    among = kin[np.ix_(order, order)]
    degree = among.sum(axis=1)
    # Where the first of each bot's kin (or itself) stands: one key for a whole group.
    first = np.where(among | np.eye(len(order), dtype=np.bool_), np.arange(len(order)),
                     len(order)).min(axis=1)
    tables = np.full((t, k), -1, dtype=np.int64)
    filled = np.zeros(t, dtype=np.int64)
    for bot in order[np.lexsort((np.arange(len(order)), first, -degree))]:
        meets = (kin[bot][np.maximum(tables, 0)] & (tables >= 0)).sum(axis=1)
        cost = np.where(filled < k, meets * (k + 1) + filled, np.iinfo(np.int64).max)
        at = int(np.argmin(cost))
        tables[at, filled[at]] = bot
        filled[at] += 1
    return tables


def _exchanges(k: int) -> tuple[IntArray, IntArray]:
    """For every exchange (i of table A for j of table B): the slot indices of A' and B'.

    A pair's 2k bots are laid out A's then B's; A' is A with slot i taken by B's j.
    """
    moves = list(itertools.product(range(k), range(k)))
    left = np.array([[k + j if s == i else s for s in range(k)] for i, j in moves])
    right = np.array([[i if s == j else k + s for s in range(k)] for i, j in moves])
    return left.astype(np.int64), right.astype(np.int64)


def _rounds_of_pairs(t: int, rng: np.random.Generator, rounds: int
                     ) -> list[tuple[IntArray, IntArray]]:
    """The pairs of tables each round tries: a round robin of the tables (the circle method,
    on a random order), so that one cycle of rounds tries every pair of tables once."""
    m = t + t % 2  # an odd count gets a dummy: its partner rests that round
    order = rng.permutation(t)
    ring = np.arange(1, m)
    out = []
    for r in range(min(rounds, m - 1)):
        arr = np.concatenate([[0], np.roll(ring, r)])
        a, b = arr[: m // 2], arr[::-1][: m // 2]
        real = (a < t) & (b < t)
        out.append((order[a[real]], order[b[real]]))
    return out


def search(scorer: Scorer, seated: int, rng: np.random.Generator, rounds: int
           ) -> tuple[IntArray, FloatArray, IntArray]:
    """Group bots 0..seated-1 into tables of `scorer.players`: (tables, values, splits).

    Stops after `rounds` rounds, or once a whole cycle of rounds (every pair of tables
    tried) found no exchange that helps: a local optimum.
    """
    k = scorer.players
    t = seated // k
    tables = rng.permutation(seated).reshape(t, k).astype(np.int64)
    if scorer.objective == "similar":
        # Start from the sorted grouping the rule describes; exchanges then only fix repeats.
        tables = np.argsort(scorer.mu[:seated], kind="stable")[: t * k].reshape(t, k)
    if scorer.kin is not None and scorer.kin_pairs(tables).any():
        tables = _spread(tables.reshape(-1), scorer.kin, t, k)
    value, split = scorer.values(tables)
    if t < 2:
        return tables, value, split
    left, right = _exchanges(k)
    cycle = _rounds_of_pairs(t, rng, rounds)
    stale = 0
    for r in range(rounds):
        if stale >= len(cycle):
            break
        pa, pb = cycle[r % len(cycle)]
        both = np.concatenate([tables[pa], tables[pb]], axis=1)  # (pairs, 2k)
        new_a, new_b = both[:, left], both[:, right]  # (pairs, moves, k)
        n_pairs, n_moves = len(pa), len(left)
        # Both sides of every exchange in one call: the fixed cost of a call is paid once.
        v, sp = scorer.values(np.concatenate([new_a.reshape(-1, k), new_b.reshape(-1, k)]))
        half = n_pairs * n_moves
        va, vb, sa, sb = v[:half], v[half:], sp[:half], sp[half:]
        delta = (va + vb).reshape(n_pairs, n_moves) - (value[pa] + value[pb])[:, None]
        best = delta.argmax(axis=1)
        rows = np.arange(n_pairs)
        take = delta[rows, best] > _TOL * (1.0 + np.abs(value[pa] + value[pb]))
        if not take.any():
            stale += 1
            continue
        stale = 0
        pick = rows[take] * n_moves + best[take]
        tables[pa[take]] = new_a.reshape(-1, k)[pick]
        tables[pb[take]] = new_b.reshape(-1, k)[pick]
        value[pa[take]], split[pa[take]] = va[pick], sa[pick]
        value[pb[take]], split[pb[take]] = vb[pick], sb[pick]
    return tables, value, split
