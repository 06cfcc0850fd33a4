"""The likelihood of a pool's games: Plackett-Luce rankings of sides, vectorised with numpy.

A side's natural-log strength is the MEAN of its bots' strengths (a bot that
holds both seats of its team is a side of one, so it has its own strength).
A ranking of the sides in place order has the Plackett-Luce probability
prod_k exp(u_k) / sum_{j >= k} exp(u_j); for two sides that is Bradley-Terry.

Ties: the exact likelihood of a tied ranking is the sum of the PL
probabilities of every strict ordering consistent with it (at most 3! = 6),
which is the probability that the sides' latent performances fall in that
order pattern. So 3p (1, 1, 3) is "both ahead of the third", (1, 2, 2) "the
first ahead of both", and (1, 1, 1) carries no information. A drawn 2v2 game
instead counts as half a win for each side (log-likelihood
(log p + log(1 - p)) / 2, the chess convention), so that draws between two
teams pull their strengths together rather than being ignored.

Orderings are precomputed per tie pattern (the sizes of the groups of tied
sides in place order) and every game of a pattern is evaluated at once.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ratings.games import Game

__all__ = ["Evaluation", "Pool", "bot_gradient", "bot_hessian", "evaluate", "pack", "slot_scores"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class _Pattern:
    """How one tie pattern scores: its consistent orderings, summed or log-averaged."""

    orderings: tuple[tuple[int, ...], ...]
    log_average: bool  # True: mean of the orderings' log-probabilities (a 2v2 draw)


def _pattern_of(groups: tuple[int, ...]) -> _Pattern:
    """The orderings of positions 0..K-1 that keep each tied group's block in place."""
    blocks: list[list[int]] = []
    start = 0
    for size in groups:
        blocks.append(list(range(start, start + size)))
        start += size
    perms = [list(itertools.permutations(b)) for b in blocks]
    orderings = tuple(
        tuple(i for part in combo for i in part) for combo in itertools.product(*perms)
    )
    return _Pattern(orderings, log_average=groups == (2,))


@dataclass(frozen=True, slots=True, eq=False)
class Pool:
    """A pool's games as arrays; sides are stored in place order (position 0 is best)."""

    bots: tuple[str, ...]  # sorted: index i is bots[i]
    units: tuple[str, ...]  # sorted unit labels; a game without a unit is its own
    slot_bot: IntArray  # (games, sides * width): the bot in each slot (0 when padding)
    slot_weight: FloatArray  # (games, sides * width): 1 / side size, 0 for padding
    slot_side: IntArray  # (sides * width,): the side (position) of each slot
    unit_of: IntArray  # (games,): index into `units`
    pattern_of: IntArray  # (games,): index into `patterns`
    patterns: tuple[tuple[int, ...], ...]  # group sizes per pattern
    played: IntArray  # (bots,): games each bot played

    @property
    def games(self) -> int:
        """How many games the pool holds."""
        return int(self.slot_bot.shape[0])

    @property
    def sides(self) -> int:
        """Sides per game: 3 (3p) or 2 (2v2)."""
        return int(self.slot_side.max()) + 1 if self.slot_side.size else 0


def pack(games: Sequence[Game]) -> Pool:
    """Arrays for canonical games of one pool (`games.canonical`, one side count)."""
    bots = tuple(sorted({b for g in games for b in g.bots}))
    index = {b: i for i, b in enumerate(bots)}
    # A game without a unit is its own: its id (unique) stands in, marked so it cannot clash.
    labels = [g.unit if g.unit else "\0" + g.game_id for g in games]
    units = tuple(sorted(set(labels)))
    unit_index = {u: i for i, u in enumerate(units)}
    k = len(games[0].sides) if games else 3
    width = max((len(s) for g in games for s in g.sides), default=1)
    slot_bot = np.zeros((len(games), k * width), dtype=np.int64)
    slot_weight = np.zeros((len(games), k * width), dtype=np.float64)
    pattern_ids: dict[tuple[int, ...], int] = {}
    pattern_of = np.zeros(len(games), dtype=np.int64)
    played = np.zeros(len(bots), dtype=np.int64)
    for row, game in enumerate(games):
        places_of = game.places
        order = sorted(range(k), key=lambda s: (places_of[s], s))
        for pos, s in enumerate(order):
            side = game.sides[s]
            for j, bot in enumerate(side):
                slot_bot[row, pos * width + j] = index[bot]
                slot_weight[row, pos * width + j] = 1.0 / len(side)
                played[index[bot]] += 1
        places = [game.places[s] for s in order]
        groups = tuple(places.count(p) for p in sorted(set(places)))
        pattern_of[row] = pattern_ids.setdefault(groups, len(pattern_ids))
    return Pool(
        bots=bots,
        units=units,
        slot_bot=slot_bot,
        slot_weight=slot_weight,
        slot_side=np.repeat(np.arange(k, dtype=np.int64), width),
        unit_of=np.array([unit_index[u] for u in labels], dtype=np.int64),
        pattern_of=pattern_of,
        patterns=tuple(pattern_ids),
        played=played,
    )


@dataclass(frozen=True, slots=True, eq=False)
class Evaluation:
    """Per-game log-likelihood with its gradient and negative Hessian in side utilities."""

    loglik: FloatArray  # (games,)
    grad: FloatArray  # (games, sides): d loglik / d u
    neg_hess: FloatArray  # (games, sides, sides): -d2 loglik / du du


def _ordering_terms(u: FloatArray, order: tuple[int, ...]) -> tuple[FloatArray, ...]:
    """Log-probability, gradient and negative Hessian of one strict PL ordering, per game."""
    g, k = u.shape
    logp = np.zeros(g)
    grad = np.zeros((g, k))
    neg = np.zeros((g, k, k))
    for stage in range(k - 1):
        rest = list(order[stage:])
        ur = u[:, rest]
        top = ur.max(axis=1, keepdims=True)
        e = np.exp(ur - top)
        total = e.sum(axis=1, keepdims=True)
        p = e / total
        logp += u[:, order[stage]] - (top[:, 0] + np.log(total[:, 0]))
        grad[:, order[stage]] += 1.0
        grad[:, rest] -= p
        # The softmax's negative Hessian diag(p) - p p^T, entry by entry (K <= 3 keeps it cheap).
        for a, i in enumerate(rest):
            neg[:, i, i] += p[:, a]
            for b, j in enumerate(rest):
                neg[:, i, j] -= p[:, a] * p[:, b]
    return logp, grad, neg


def _pattern_terms(u: FloatArray, pattern: _Pattern) -> tuple[FloatArray, ...]:
    """Log-likelihood, gradient and negative Hessian of games sharing one tie pattern."""
    terms = [_ordering_terms(u, o) for o in pattern.orderings]
    logps = np.stack([t[0] for t in terms], axis=1)  # (g, m)
    grads = np.stack([t[1] for t in terms], axis=1)  # (g, m, k)
    negs = np.stack([t[2] for t in terms], axis=1)  # (g, m, k, k)
    m = len(terms)
    if m == 1:
        return logps[:, 0], grads[:, 0], negs[:, 0]
    if pattern.log_average:
        return logps.mean(axis=1), grads.mean(axis=1), negs.mean(axis=1)
    top = logps.max(axis=1, keepdims=True)
    e = np.exp(logps - top)
    total = e.sum(axis=1, keepdims=True)
    w = e / total  # each consistent ordering's share of the tied ranking's probability
    loglik = top[:, 0] + np.log(total[:, 0])
    grad = np.einsum("gm,gmk->gk", w, grads)
    # Hessian of log sum exp(l_m): sum w H_m + (sum w g g^T - grad grad^T).
    second = np.einsum("gm,gmk,gml->gkl", w, grads, grads) - grad[:, :, None] * grad[:, None, :]
    neg = np.einsum("gm,gmkl->gkl", w, negs) - second
    return loglik, grad, neg


def evaluate(pool: Pool, theta: FloatArray) -> Evaluation:
    """Every game's log-likelihood terms at bot strengths `theta` (natural log)."""
    k = pool.sides
    weighted = theta[pool.slot_bot] * pool.slot_weight
    u = np.zeros((pool.games, k))
    for pos in range(k):
        u[:, pos] = weighted[:, pool.slot_side == pos].sum(axis=1)
    loglik = np.zeros(pool.games)
    grad = np.zeros((pool.games, k))
    neg = np.zeros((pool.games, k, k))
    for pid, groups in enumerate(pool.patterns):
        rows = np.flatnonzero(pool.pattern_of == pid)
        ll, gr, ng = _pattern_terms(u[rows], _pattern_of(groups))
        loglik[rows] = ll
        grad[rows] = gr
        neg[rows] = ng
    return Evaluation(loglik, grad, neg)


def slot_scores(pool: Pool, ev: Evaluation) -> FloatArray:
    """Each slot's share of its game's score: d loglik / d theta of the slot's bot."""
    scores: FloatArray = ev.grad[:, pool.slot_side] * pool.slot_weight
    return scores


def bot_gradient(pool: Pool, ev: Evaluation) -> FloatArray:
    """The gradient of the total log-likelihood in bot strengths."""
    n = len(pool.bots)
    total = np.bincount(pool.slot_bot.ravel(), weights=slot_scores(pool, ev).ravel(), minlength=n)
    return total.astype(np.float64)


def bot_hessian(pool: Pool, ev: Evaluation) -> FloatArray:
    """The negative Hessian of the total log-likelihood in bot strengths, dense (n, n)."""
    n = len(pool.bots)
    side, w, bot = pool.slot_side, pool.slot_weight, pool.slot_bot
    blocks = ev.neg_hess[:, side[:, None], side[None, :]] * w[:, :, None] * w[:, None, :]
    flat = bot[:, :, None] * n + bot[:, None, :]
    dense = np.bincount(flat.ravel(), weights=blocks.ravel(), minlength=n * n)
    return dense.reshape(n, n).astype(np.float64)
