"""Splitting participants into groups of one size at the least cost: the search behind
every Swiss pairing (3p tables, 2v2 tables of rotating partners, team against team).

A pairing rule prices a group with two integers compared in order (`Cost`): `hard`,
its breaches of the pairing rules weighted by severity (a repeat, a seat imbalance, ...),
then `soft`, the score differences, with the seed fold as the last tiebreak (`soft_key`);
both are already minimised over the group's arrangements (its seatings), whose best
index comes back with them. A partition costs the sum over its groups.

The search (`partition`), in stages, each only while the breaches still cost more
than a lower bound the caller knows (`floor`, e.g. seats that cannot all be free):

1. At most `EXACT_LIMIT` participants: exact, by dynamic programming over subsets.
2. Otherwise start from the fold of the score order (`fold`) and descend: for one
   group at a time, every swap of two participants with the groups nearby (`WINDOW`;
   with all groups while it breaches a rule) is priced at once with numpy, and the best
   improving one is taken.
3. Reassignment: for each slot of the groups in turn, the members holding it are
   reassigned to the groups by an exact assignment (scipy's `linear_sum_assignment`),
   a move that rotates many groups at once; then slots are shuffled within groups and
   it is done again (`RELABELS` times), each time followed by descent.
4. Up to `MILP_LIMIT` candidate groups (3p: 25 bots, 2v2 teams: 68, rotating
   partners: 16): the exact optimum by integer programming (`_milp`). Above: a tabu
   search on the breaching groups (`TABU_STEPS`), then descent from the best seen.

Randomness (the slot shuffles, the tabu's ties) comes from a generator seeded by the
caller, and the solvers are deterministic, so the same inputs and seed give the same
groups. `bench/swiss.py` times it; the tests check the breaches against an exact
solver on fields up to 40 bots.
"""

from __future__ import annotations

import collections
import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import Bounds, LinearConstraint, linear_sum_assignment, milp
from scipy.sparse import csc_array

__all__ = [
    "EXACT_LIMIT",
    "MILP_LIMIT",
    "REACH",
    "RELABELS",
    "TABU_STEPS",
    "WINDOW",
    "Cost",
    "IntArray",
    "Partition",
    "best_of",
    "fold",
    "partition",
    "pick_byes",
    "soft_key",
]

IntArray = NDArray[np.int64]
# groups (m, k) -> (hard (m,), soft (m,), best arrangement index (m,))
Cost = Callable[[IntArray], tuple[IntArray, IntArray, IntArray]]

EXACT_LIMIT = 12  # participants: above this the local search takes over
MILP_LIMIT = 2300  # candidate groups up to which a missed floor is settled exactly
REACH = 24  # rows on either side of a breaching group that a reassignment takes in
RELABELS = 3  # rounds of slot reassignment (each with slots shuffled after it)
TABU_STEPS = 400  # steps of the tabu search on breaches (fewer above 20 groups)
WINDOW = 216  # swaps a group prices first: the groups on either side of it, k*k swaps each


@dataclass(frozen=True, slots=True)
class Partition:
    """Groups (participant indices, in slot order), each one's best arrangement, the cost."""

    groups: tuple[tuple[int, ...], ...]
    arrangements: tuple[int, ...]
    hard: int
    soft: int


def soft_key(score_sq: IntArray, ranks: IntArray, size: int) -> IntArray:
    """Score differences first, then the fold: the wider the spread of seed ranks (score
    order) inside a group, the better (top, middle and bottom of a score group together).

    `score_sq` is each group's sum of squared score differences, (m,) or (m, seatings);
    `ranks` its members' places in the score order (m, k); `size` bounds the ranks, so a
    unit of score outweighs any change of spread a swap can make.
    """
    # elementwise over the k columns: numpy's reductions along a short axis are slow
    high, low = ranks[:, 0], ranks[:, 0]
    for col in range(1, ranks.shape[1]):
        high, low = np.maximum(high, ranks[:, col]), np.minimum(low, ranks[:, col])
    spread = high - low
    out: IntArray = score_sq * (4 * size + 4) - (spread if score_sq.ndim == 1
                                                 else spread[:, None])
    return out


def best_of(hard: IntArray, soft: IntArray,
            last: IntArray | None = None) -> tuple[IntArray, IntArray, IntArray]:
    """Per row of (m, seatings) prices, the cheapest seating (hard, then soft, then `last`
    if given, then the first): its hard and soft price and its index."""
    top = np.iinfo(np.int64).max
    keep = hard == hard.min(axis=1)[:, None]
    keep &= np.where(keep, soft, top) == np.where(keep, soft, top).min(axis=1)[:, None]
    if last is not None:
        keep &= np.where(keep, last, top) == np.where(keep, last, top).min(axis=1)[:, None]
    pick = keep.argmax(axis=1)
    rows = np.arange(len(hard))
    return hard[rows, pick], soft[rows, pick], pick


def fold(order: Sequence[int], scores: Sequence[int], k: int,
         fits: Callable[[list[int]], bool] | None = None) -> list[list[int]]:
    """Groups of `k` from participants in score order (best first): each score group is
    cut into k parts and group j takes the j-th of each part (the Swiss fold: leaders
    meet the middle and the bottom of their score group, not each other); the lowest
    participants of a score group that does not divide by k float down to the next.

    `fits(members)` says whether a partial group can still be seated without a breach:
    with it, group j takes from each part the first participant left that keeps it
    fitting (the first left if none does), so the search starts near a seatable
    partition. `len(order)` must be a multiple of k; `scores` are by participant.
    """
    groups: list[list[int]] = []
    carry: list[int] = []
    for _, members in itertools.groupby(order, key=lambda p: scores[p]):
        pool = carry + list(members)
        whole = len(pool) // k * k
        carry = pool[whole:]
        m = whole // k
        parts = [pool[q * m:(q + 1) * m] for q in range(k)]
        for _ in range(m):
            group: list[int] = []
            for part in parts:
                pick = 0
                if fits is not None:
                    pick = next((x for x, p in enumerate(part) if fits([*group, p])), 0)
                group.append(part.pop(pick))
            groups.append(group)
    if carry:
        raise ValueError(f"fold: {len(order)} participants do not divide into groups of {k}")
    return groups


def pick_byes(count: int, scores: Sequence[int], byes: Sequence[int]) -> list[int]:
    """The participants who sit out: the fewest byes so far, then the lowest score, then
    the worst seed (the highest index). So no one has a second bye while another has none."""
    ranked = sorted(range(len(scores)), key=lambda p: (byes[p], scores[p], -p))
    return sorted(ranked[:count])


def partition(start: Sequence[Sequence[int]], cost: Cost, seed: int,
              levels: Sequence[int], floor: int = 0) -> Partition:
    """The cheapest partition found into groups like `start` (see the module doc).

    `levels` are the weights the hard price is made of, heaviest first, each a multiple
    of the next; `floor` is a lower bound on the hard price the caller knows: the search
    for fewer breaches stops there.
    """
    g = np.array(start, dtype=np.int64).reshape(len(start), -1)
    m, k = g.shape
    if m * k <= EXACT_LIMIT and m > 1:
        g = _exact(np.sort(g.ravel()), k, cost)
    elif m > 1:
        settle = math.comb(m * k, k) <= MILP_LIMIT  # a missed floor is settled exactly
        g = _search(g, cost, np.random.default_rng(seed), floor, tabu=not settle)
        if settle and int(cost(g)[0].sum()) > floor:
            g = _milp(g, cost, levels)
    hard, soft, arr = cost(g)
    return Partition(tuple(tuple(int(x) for x in row) for row in g),
                     tuple(int(a) for a in arr), int(hard.sum()), int(soft.sum()))


def _exact(members: IntArray, k: int, cost: Cost) -> IntArray:
    """The cheapest partition of `members` into groups of k, by DP over subsets."""
    n = len(members)
    combos = np.array(list(itertools.combinations(range(n), k)), dtype=np.int64)
    hard, soft, _ = cost(members[combos])
    by_first: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for c, combo in enumerate(combos):
        by_first[int(combo[0])].append((sum(1 << int(x) for x in combo), c))
    full = (1 << n) - 1

    @functools.cache
    def best(taken: int) -> tuple[int, int, tuple[int, ...]]:
        if taken == full:
            return 0, 0, ()
        low = (~taken & (taken + 1)).bit_length() - 1  # the lowest member not yet grouped
        out: tuple[int, int, tuple[int, ...]] | None = None
        for mask, c in by_first[low]:
            if mask & taken:
                continue
            h, s, rest = best(taken | mask)
            cand = (h + int(hard[c]), s + int(soft[c]), (c, *rest))
            if out is None or cand[:2] < out[:2]:
                out = cand
        assert out is not None
        return out

    chosen = best(0)[2]
    out: IntArray = members[combos[list(chosen)]]
    return out


def _milp(g: IntArray, cost: Cost, levels: Sequence[int]) -> IntArray:
    """The exact optimum by integer programming (scipy's HiGHS) over every candidate
    group: the least hard price, then the least soft price among those; `g` if the
    solver does not prove one.

    The hard price is rewritten in small integers first (its count at each level, in a
    base that no sum over a partition can overflow), which the solver handles exactly.
    """
    m, k = g.shape
    members = np.sort(g.ravel())
    combos = np.array(list(itertools.combinations(range(m * k), k)), dtype=np.int64)
    hard, soft, _ = cost(members[combos])
    compact = np.zeros(len(combos), dtype=np.int64)
    rest = hard.copy()
    for weight in levels:
        count, rest = rest // weight, rest % weight
        compact = compact * (m * int(count.max()) + 1) + count
    cover = LinearConstraint(csc_array((np.ones(combos.size), (combos.ravel(), np.repeat(
        np.arange(len(combos)), k))), shape=(m * k, len(combos))), 1, 1)
    ones, box = np.ones(len(combos)), Bounds(0, 1)
    first = milp(compact.astype(np.float64), constraints=cover, integrality=ones, bounds=box,
                 options={"mip_rel_gap": 0.0})
    if first.status != 0:
        return g
    least = float(np.rint(first.fun))
    second = milp(soft.astype(np.float64), integrality=ones, bounds=box,
                  constraints=[cover, LinearConstraint(compact[None, :].astype(np.float64),
                                                       -np.inf, least + 0.5)],
                  options={"mip_rel_gap": 0.0})
    if second.status != 0:
        return g
    chosen = np.flatnonzero(np.rint(second.x) == 1)
    out: IntArray = members[combos[chosen]]
    return out if len(out) == m else g


def _search(g: IntArray, cost: Cost, rng: np.random.Generator, floor: int,
            tabu: bool) -> IntArray:
    """Swap descent from `g`, with reassignments by slot; then, while breaches cost more
    than `floor`, a tabu search on them (if `tabu`) and descent again from the best
    partition it saw (module doc)."""
    hard, soft, _ = cost(g)
    _descend(g, hard, soft, cost, np.flatnonzero((hard > 0) | (soft > 0)).tolist())
    if int(hard.sum()) <= floor:
        return g
    for _ in range(RELABELS):
        _reassign(g, hard, soft, cost)
        _descend(g, hard, soft, cost, np.flatnonzero((hard > 0) | (soft > 0)).tolist())
        if int(hard.sum()) <= floor:
            return g
        # members keep their slot in a reassignment: shuffle slots so others can meet
        g[:] = np.take_along_axis(g, rng.permuted(np.tile(np.arange(g.shape[1]), (len(g), 1)),
                                                   axis=1), axis=1)
    if not tabu:
        return g
    g = _tabu(g, hard, soft, cost, rng, floor)
    hard, soft, _ = cost(g)
    _descend(g, hard, soft, cost, np.flatnonzero((hard > 0) | (soft > 0)).tolist())
    return g


def _reassign(g: IntArray, hard: IntArray, soft: IntArray, cost: Cost) -> None:
    """For each slot in turn, the best reassignment of the members in that slot to the
    groups, the rest fixed (an assignment problem, solved exactly by scipy), while one
    improves; in place. Above `2 * REACH + 1` groups only the groups within `REACH` rows
    of a breaching one take part, which keeps it local and cheap.

    It prices breaches exactly and score differences only as a tiebreak (scaled below
    one unit of breach), so a result is kept only if it is better, breaches then soft.
    """
    m, k = g.shape
    improved = True
    while improved:
        improved = False
        rows = np.arange(m)
        if m > 2 * REACH + 1:
            near = np.zeros(m, dtype=bool)
            for t in np.flatnonzero(hard > 0):
                near[max(0, t - REACH):t + REACH + 1] = True
            rows = np.flatnonzero(near)
        w = len(rows)
        for q in range(k):
            members = g[rows, q].copy()
            trial = np.repeat(g[rows][:, None, :], w, axis=1)  # (group, member placed, slot)
            trial[:, :, q] = members[None, :]
            h, s, _ = cost(trial.reshape(-1, k))
            h, s = h.reshape(w, w), s.reshape(w, w)
            scale = 1.0 / (w * (float(np.abs(s).max()) + 1.0) + 1.0)
            at, to = linear_sum_assignment(h.astype(np.float64) + s * scale)
            nh, ns = h[at, to], s[at, to]
            if (int(nh.sum()), int(ns.sum())) < (int(hard[rows].sum()), int(soft[rows].sum())):
                g[rows[at], q] = members[to]
                hard[rows[at]], soft[rows[at]] = nh, ns
                improved = True


def _tabu(g: IntArray, hard: IntArray, soft: IntArray, cost: Cost, rng: np.random.Generator,
          floor: int) -> IntArray:
    """Tabu search on the breaches: each step takes the best swap of a breaching group,
    worsening or not, except one that moves a participant moved in the last few steps
    (unless it beats the best seen); the best partition seen, once breaches reach
    `floor` or after `TABU_STEPS` (fewer for many groups)."""
    m, k = g.shape
    best, best_total = g.copy(), (int(hard.sum()), int(soft.sum()))
    last_move = np.full(int(g.max()) + 1, -(10**9), dtype=np.int64)
    tenure = max(2, min(10, m * k // 4))
    for step in range(max(20, min(TABU_STEPS, 20 * TABU_STEPS // m))):
        breaching = np.flatnonzero(hard > 0)
        if best_total[0] <= floor or not len(breaching):
            break
        total = (int(hard.sum()), int(soft.sum()))
        options: list[tuple[int, int, int, int, int]] = []  # (dh, ds, tiebreak, t, pick)
        found: dict[int, _Deltas] = {}
        for t in breaching.tolist():
            d = _deltas(g, hard, soft, cost, t, 0, m)
            tabu = (step - last_move[g[t]] < tenure)[:, None, None] \
                | (step - last_move[g] < tenure)[None, :, :]
            beats = (total[0] + d.dh < best_total[0]) \
                | ((total[0] + d.dh == best_total[0]) & (total[1] + d.ds < best_total[1]))
            allowed = ~tabu | beats
            allowed[:, t, :] = False  # a group does not swap with itself
            allowed = allowed.ravel()
            if not allowed.any():
                continue
            flat_h = np.where(allowed, d.dh.ravel(), np.iinfo(np.int64).max)
            low = flat_h.min()
            flat_s = np.where(flat_h == low, d.ds.ravel(), np.iinfo(np.int64).max)
            ties = np.flatnonzero(flat_s == flat_s.min())
            pick = int(ties[rng.integers(len(ties))])
            options.append((int(low), int(flat_s[pick]), int(rng.integers(1 << 30)), t, pick))
            found[t] = d
        if not options:
            break
        _, _, _, t, pick = min(options)
        i, u, j = (int(x) for x in np.unravel_index(pick, (k, m, k)))
        last_move[[g[t, i], g[u, j]]] = step
        found[t].apply(g, hard, soft, t, pick)
        now = (int(hard.sum()), int(soft.sum()))
        if now < best_total:
            best, best_total = g.copy(), now
    return best


@dataclass(frozen=True, slots=True)
class _Deltas:
    """The prices of every swap of one group with the groups lo..hi-1, as (k, w, k) arrays
    over (my slot, other group, its slot)."""

    lo: int
    dh: IntArray
    ds: IntArray
    ht: IntArray
    st: IntArray
    hu: IntArray
    su: IntArray

    def apply(self, g: IntArray, hard: IntArray, soft: IntArray, t: int, pick: int) -> int:
        """Make swap `pick` (a flat index) in place; the other group's row."""
        k, w, _ = self.dh.shape
        i, u, j = (int(x) for x in np.unravel_index(pick, (k, w, k)))
        u += self.lo
        g[t, i], g[u, j] = g[u, j], g[t, i]
        hard[t], soft[t] = self.ht[pick], self.st[pick]
        hard[u], soft[u] = self.hu[pick], self.su[pick]
        return u


def _deltas(g: IntArray, hard: IntArray, soft: IntArray, cost: Cost, t: int, lo: int,
            hi: int) -> _Deltas:
    """Price every swap of group t with a group in lo..hi-1 (swaps with itself: 0)."""
    k = g.shape[1]
    near = g[lo:hi]
    w = hi - lo
    mine = g[t]
    slots = np.arange(k)
    # candidate (i, u, j): my slot i swaps with slot j of group lo + u
    new_t = np.broadcast_to(mine, (k, w, k, k)).copy()
    new_u = np.broadcast_to(near[None, :, None, :], (k, w, k, k)).copy()
    for i in range(k):
        new_t[i, :, :, i] = near
    new_u[:, :, slots, slots] = mine[:, None, None]
    ht, st, _ = cost(new_t.reshape(-1, k))
    hu, su, _ = cost(new_u.reshape(-1, k))
    dh = (ht + hu).reshape(k, w, k) - hard[t] - hard[None, lo:hi, None]
    ds = (st + su).reshape(k, w, k) - soft[t] - soft[None, lo:hi, None]
    if lo <= t < hi:
        dh[:, t - lo, :] = 0
        ds[:, t - lo, :] = 0
    return _Deltas(lo, dh, ds, ht, st, hu, su)


def _descend(g: IntArray, hard: IntArray, soft: IntArray, cost: Cost, work: list[int]) -> None:
    """Take improving swaps until none is left, starting from the groups in `work`; in place.

    Only a group that breaches a rule or mixes scores (soft > 0, see `soft_key`) can gain;
    both groups of a swap are looked at again. A group is first tried against the
    groups on either side of it, about `WINDOW` swaps (rows stay in score order, so those
    are the near scores), and against all only if it still breaches a rule.
    """
    m, k = g.shape
    near = max(2, WINDOW // (k * k))
    queue = collections.deque(sorted(set(work), key=lambda t: (-hard[t], -soft[t], t)))
    queued = set(queue)
    while queue:
        t = queue.popleft()
        queued.discard(t)
        if hard[t] <= 0 and soft[t] <= 0:
            continue
        # score differences mend with the next groups: a narrower look suffices
        reach = near if hard[t] > 0 else max(2, near // 3)
        u = _best_swap(g, hard, soft, cost, t, max(0, t - reach), min(m, t + reach + 1))
        if u is None and hard[t] > 0 and m > 2 * near + 1:
            u = _best_swap(g, hard, soft, cost, t, 0, m)
        if u is None:
            continue
        for x in (t, u):
            if x not in queued:
                queue.append(x)
                queued.add(x)


def _best_swap(g: IntArray, hard: IntArray, soft: IntArray, cost: Cost, t: int,
               lo: int, hi: int) -> int | None:
    """Make the best improving swap of group t with a group in lo..hi-1; the other group,
    or None when no swap there improves."""
    d = _deltas(g, hard, soft, cost, t, lo, hi)
    flat_h, flat_s = d.dh.ravel(), d.ds.ravel()
    lowest = flat_h.min()
    pick = int(np.argmin(np.where(flat_h == lowest, flat_s, np.iinfo(np.int64).max)))
    if (flat_h[pick], flat_s[pick]) >= (0, 0):
        return None
    return d.apply(g, hard, soft, t, pick)
