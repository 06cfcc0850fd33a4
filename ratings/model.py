"""The likelihood of a pool's games: Plackett-Luce rankings of sides, vectorised with numpy.

A side's natural-log strength is the MEAN of its bots' strengths (a bot that
holds both seats of its team is a side of one, so it has its own strength).
A ranking of the sides in place order has the Plackett-Luce probability
prod_k exp(u_k) / sum_{j >= k} exp(u_j); for two sides that is Bradley-Terry.

Board luck (`ratings.luck` says why and how large): a game on a board, a
unit that holds two or more games, gives the side in seat position p the
utility u = k * strength + lambda[board, p], a luck effect shared by every
game of the board and a gain k >= 1 that keeps the strengths on the scale of
fresh deals; any other game has u = strength. 3p: positions are seats 0, 1,
2; 2v2: the team of seats 0 and 2 and the team of seats 1 and 3. So luck
enters like a strength, and everything below (ties, derivatives) is in u.

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
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.special import expit

from ratings.games import Game
from ratings.table import GameTable

__all__ = [
    "Evaluation",
    "Pool",
    "bot_gradient",
    "bot_hessian",
    "cross_hessian",
    "evaluate",
    "luck_gradient",
    "luck_hessian",
    "pack",
    "pack_table",
    "side_strengths",
    "slot_scores",
    "subpool",
    "to_bots",
    "utility_terms",
]

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
    seat_of: IntArray  # (games, sides): the seat position (index in Game.sides) of each side
    boards: tuple[str, ...]  # sorted labels of the units of two or more games: they get luck
    board_of: IntArray  # (games,): index into `boards`, -1 for a game without board luck
    lucky: IntArray  # the rows of the games on boards
    luck_of: IntArray  # (len(lucky), sides): the luck effect of each side, board * sides + seat
    pair_index: IntArray  # (games, slots, slots): bot_a * bots + bot_b of each pair of slots

    @property
    def games(self) -> int:
        """How many games the pool holds."""
        return int(self.slot_bot.shape[0])

    @property
    def sides(self) -> int:
        """Sides per game: 3 (3p) or 2 (2v2)."""
        return int(self.slot_side.max()) + 1 if self.slot_side.size else 0

    @property
    def luck_count(self) -> int:
        """How many luck effects the pool has: one per board and seat position."""
        return len(self.boards) * self.sides


def pack(games: Sequence[Game]) -> Pool:
    """Arrays for games of one pool (`games.canonical`, one side count): `pack_table` of
    their table."""
    return pack_table(GameTable.from_games(games))


def _bots_of(table: GameTable, rows: IntArray) -> tuple[tuple[str, ...], IntArray]:
    """The ids of the bots that play in these rows, sorted, and each seat's index into them."""
    seat_bot = table.seat_bot[rows]
    used = np.flatnonzero(np.bincount(seat_bot.ravel(), minlength=len(table.bots)))
    names = [table.bots[i] for i in used.tolist()]
    order = sorted(range(len(names)), key=names.__getitem__)
    remap = np.full(len(table.bots), -1, dtype=np.int64)
    remap[used[order]] = np.arange(len(order), dtype=np.int64)
    return tuple(names[i] for i in order), remap[seat_bot]


def _units_of(table: GameTable, rows: IntArray) -> tuple[tuple[str, ...], IntArray]:
    """The sorted unit labels of these rows and each row's index into them.

    A game without a unit is its own: its id after a NUL stands in (so it cannot clash
    with a label, none of which holds a NUL), and those labels sort first, by id.
    """
    unit = table.unit[rows]
    unit_of = np.empty(rows.size, dtype=np.int64)
    alone = np.flatnonzero(unit < 0)
    ids = table.game_id[rows[alone]]
    by_id = np.argsort(ids, kind="stable")  # code point order, as Python's
    unit_of[alone[by_id]] = np.arange(alone.size, dtype=np.int64)
    used = np.flatnonzero(np.bincount(unit[unit >= 0], minlength=len(table.units)))
    names = np.array([table.units[i] for i in used.tolist()], dtype=str)
    by_name = np.argsort(names, kind="stable") if names.size else np.zeros(0, np.int64)
    rank = np.empty(len(table.units), dtype=np.int64)
    rank[used[by_name]] = alone.size + np.arange(used.size, dtype=np.int64)
    shared = unit >= 0
    unit_of[shared] = rank[unit[shared]]
    labels = ["\0" + x for x in ids[by_id].tolist()] + names[by_name].tolist()
    return tuple(labels), unit_of


def pack_table(table: GameTable) -> Pool:
    """Arrays for a table's set of games (`GameTable.canonical_rows`), one pool.

    The arrays of the same games' `pack` to the last bit: games in game-id order,
    bots and units indexed in sorted order.
    """
    rows = table.canonical_rows()
    count = rows.size
    k = table.sides
    bots, seat_bot = _bots_of(table, rows)
    units, unit_of = _units_of(table, rows)
    size = np.bincount(unit_of, minlength=len(units))
    board_units = np.flatnonzero(size >= 2)  # a board played once: no luck term
    board_index = np.full(len(units), -1, dtype=np.int64)
    board_index[board_units] = np.arange(board_units.size, dtype=np.int64)
    boards = tuple(map(units.__getitem__, board_units.tolist()))
    seat_place = table.place[rows]
    # Side by side: each side's bots (padded with -1) and place. 2v2: team t holds seats
    # t and t + 2, a bot holding both seats of its team once.
    if k == 3:
        side_bots = seat_bot[:, :, None]
        places = seat_place
    else:
        second = np.where(seat_bot[:, 2:] != seat_bot[:, :2], seat_bot[:, 2:], -1)
        width = 2 if bool((second >= 0).any()) else 1
        side_bots = np.stack([seat_bot[:, :2], second], axis=2)[:, :, :width]
        places = seat_place[:, :2]
    width = side_bots.shape[2]
    # Place order, ties by seat: position 0 is the best side. The keys place * k + seat
    # are distinct, so a side's position is the count of keys below its own.
    key = places * k + np.arange(k)
    position = (key[:, None, :] < key[:, :, None]).sum(axis=2)
    seat_of = np.empty((count, k), dtype=np.int64)
    np.put_along_axis(seat_of, position, np.arange(k, dtype=np.int64)[None, :], axis=1)
    ranked = np.take_along_axis(side_bots, seat_of[:, :, None], axis=1).reshape(count, k * width)
    real = ranked >= 0
    side_size = real.reshape(count, k, width).sum(axis=2)
    slot_weight = np.where(real, 1.0 / np.repeat(np.maximum(side_size, 1), width, axis=1), 0.0)
    slot_bot = np.where(real, ranked, 0)
    # Games each bot played: a bot on two sides of a game (a house bot) played it once.
    again = np.zeros(real.shape, dtype=bool)
    for i in range(1, k * width):
        again[:, i] = (ranked[:, :i] == ranked[:, i : i + 1]).any(axis=1)
    played = np.bincount(slot_bot[real & ~again], minlength=len(bots)).astype(np.int64)
    # Tie pattern: which neighbours in place order are tied, numbered by first appearance.
    ordered = np.take_along_axis(places, seat_of, axis=1)
    code = ((ordered[:, 1:] == ordered[:, :-1]) * (1 << np.arange(k - 1))).sum(axis=1)
    distinct = np.flatnonzero(np.bincount(code, minlength=1 << (k - 1)))
    first_row = np.array([int(np.argmax(code == c)) for c in distinct.tolist()], dtype=np.int64)
    lookup = np.zeros(1 << (k - 1), dtype=np.int64)
    lookup[distinct] = np.arange(distinct.size)
    inverse = lookup[code]
    appearance = np.argsort(first_row, kind="stable")
    renumber = np.empty(len(distinct), dtype=np.int64)
    renumber[appearance] = np.arange(len(distinct))
    patterns = []
    for d in appearance:
        ranks = list(ordered[first_row[d]])
        patterns.append(tuple(ranks.count(p) for p in sorted(set(ranks))))
    board_of = board_index[unit_of]
    lucky = np.flatnonzero(board_of >= 0).astype(np.int64)
    luck_of = (board_of[lucky][:, None] * k + seat_of[lucky]).astype(np.int64)
    n = len(bots)
    return Pool(
        bots=bots,
        units=units,
        slot_bot=slot_bot.astype(np.int64),
        slot_weight=slot_weight.astype(np.float64),
        slot_side=np.repeat(np.arange(k, dtype=np.int64), width),
        unit_of=unit_of,
        pattern_of=(renumber[inverse.ravel()].astype(np.int64) if count
                    else np.zeros(0, np.int64)),
        patterns=tuple(patterns),
        played=played,
        seat_of=seat_of,
        boards=boards,
        board_of=board_of,
        lucky=lucky,
        luck_of=luck_of,
        pair_index=slot_bot[:, :, None] * n + slot_bot[:, None, :],
    )


def subpool(pool: Pool, rows: IntArray) -> Pool:
    """The pool of some of its games (rows ascending): the same bots (a bot without a game
    there keeps its index) and tie patterns; units and boards those of the rows."""
    k = pool.sides
    used, unit_of = np.unique(pool.unit_of[rows], return_inverse=True)
    units = tuple(map(pool.units.__getitem__, used.tolist()))
    size = np.bincount(unit_of, minlength=len(units))
    board_units = np.flatnonzero(size >= 2)
    board_index = np.full(len(units), -1, dtype=np.int64)
    board_index[board_units] = np.arange(board_units.size, dtype=np.int64)
    board_of = board_index[unit_of]
    lucky = np.flatnonzero(board_of >= 0).astype(np.int64)
    seat_of = pool.seat_of[rows]
    slot_bot, slot_weight = pool.slot_bot[rows], pool.slot_weight[rows]
    sorted_slots = np.sort(np.where(slot_weight > 0, slot_bot, -1), axis=1)
    first = sorted_slots >= 0
    first[:, 1:] &= sorted_slots[:, 1:] != sorted_slots[:, :-1]
    return Pool(
        bots=pool.bots, units=units, slot_bot=slot_bot, slot_weight=slot_weight,
        slot_side=pool.slot_side, unit_of=unit_of.astype(np.int64),
        pattern_of=pool.pattern_of[rows], patterns=pool.patterns,
        played=np.bincount(sorted_slots[first], minlength=len(pool.bots)).astype(np.int64),
        seat_of=seat_of, boards=tuple(map(units.__getitem__, board_units.tolist())),
        board_of=board_of, lucky=lucky,
        luck_of=(board_of[lucky][:, None] * k + seat_of[lucky]).astype(np.int64),
        pair_index=pool.pair_index[rows],
    )


@dataclass(frozen=True, slots=True, eq=False)
class Evaluation:
    """Per-game log-likelihood with its gradient and negative Hessian in side utilities."""

    loglik: FloatArray  # (games,)
    grad: FloatArray  # (games, sides): d loglik / d u
    neg_hess: FloatArray  # (games, sides, sides): -d2 loglik / du du
    gain: FloatArray  # (games,): d u / d (side strength): the luck gain k on boards, else 1


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


def _strict_terms(u: FloatArray) -> tuple[FloatArray, ...]:
    """`_ordering_terms` of the place order (0, 1, ..., k-1) for k = 2 or 3, column by
    column (most games are strict rankings: this is the fit's inner loop)."""
    g, k = u.shape
    if k == 2:
        grad = np.empty((g, k))
        neg = np.empty((g, k, k))
        d = u[:, 0] - u[:, 1]
        logp = -np.logaddexp(0.0, -d)
        lose = expit(-d)  # the probability the order were the other way
        grad[:, 0] = lose
        grad[:, 1] = -lose
        info = lose * (1.0 - lose)
        neg[:, 0, 0] = neg[:, 1, 1] = info
        neg[:, 0, 1] = neg[:, 1, 0] = -info
        return logp, grad, neg
    u0, u1, u2 = np.ascontiguousarray(u.T)  # columns, contiguous: each pass streams
    top = np.maximum(np.maximum(u0, u1), u2)
    e0, e1, e2 = np.exp(u0 - top), np.exp(u1 - top), np.exp(u2 - top)
    total = e0 + e1 + e2
    p0, p1, p2 = e0 / total, e1 / total, e2 / total
    d = u1 - u2  # the second stage: side 1 ahead of side 2
    q1, q2 = expit(d), expit(-d)
    # log q1 = -log(1 + exp(-d)), but for a second stage beyond rounding (q1 = 0).
    second_log = np.log(q1) if float(d.min(initial=0.0)) > -700.0 else -np.logaddexp(0.0, -d)
    logp = u0 - top - np.log(total) + second_log
    second = q1 * q2
    # Entry by entry into contiguous rows, then one transposing copy.
    rows = np.empty((3 + 9, g))
    np.subtract(1.0, p0, out=rows[0])
    np.subtract(q2, p1, out=rows[1])
    np.add(p2, q2, out=rows[2])
    np.negative(rows[2], out=rows[2])
    h = rows[3:]
    np.multiply(p0, rows[0], out=h[0])
    np.multiply(p0, p1, out=h[1])
    np.negative(h[1], out=h[1])
    np.multiply(p0, p2, out=h[2])
    np.negative(h[2], out=h[2])
    np.multiply(p1, 1.0 - p1, out=h[4])
    h[4] += second
    np.multiply(p1, p2, out=h[5])
    h[5] += second
    np.negative(h[5], out=h[5])
    np.multiply(p2, 1.0 - p2, out=h[8])
    h[8] += second
    h[3], h[6], h[7] = h[1], h[2], h[5]
    grad = np.ascontiguousarray(rows[:3].T)
    neg = np.ascontiguousarray(rows[3:].T).reshape(g, k, k)
    return logp, grad, neg


def _pattern_terms(u: FloatArray, pattern: _Pattern) -> tuple[FloatArray, ...]:
    """Log-likelihood, gradient and negative Hessian of games sharing one tie pattern."""
    if pattern.orderings == (tuple(range(u.shape[1])),) and u.shape[1] in (2, 3):
        return _strict_terms(u)
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


def evaluate(
    pool: Pool, theta: FloatArray, luck: FloatArray | None = None, gain: float = 1.0
) -> Evaluation:
    """Every game's log-likelihood terms at bot strengths `theta` (natural log).

    With `luck` (one effect per board and seat position, `Pool.luck_of`), the
    games on boards have utilities gain * strength + luck; without it, none has luck.
    """
    u = side_strengths(pool, theta)
    gains = np.ones(pool.games)
    if luck is not None and pool.luck_count:
        lucky = pool.lucky
        gains[lucky] = gain
        u[lucky] = gain * u[lucky] + luck[pool.luck_of]
    loglik, grad, neg = utility_terms(pool, u)
    return Evaluation(loglik, grad, neg, gains)


def utility_terms(pool: Pool, u: FloatArray, rows: IntArray | None = None
                  ) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Log-likelihood, gradient and negative Hessian in the side utilities u (games, sides)
    of some games (all: None; else u holds those rows only)."""
    k = pool.sides
    count = u.shape[0]
    pattern_of = pool.pattern_of if rows is None else pool.pattern_of[rows]
    if len(pool.patterns) == 1:
        ll, gr, ng = _pattern_terms(u, _pattern_of(pool.patterns[0]))
        return ll, gr, ng
    loglik = np.zeros(count)
    grad = np.zeros((count, k))
    neg = np.zeros((count, k, k))
    for pid, groups in enumerate(pool.patterns):
        at = np.flatnonzero(pattern_of == pid)
        ll, gr, ng = _pattern_terms(u[at], _pattern_of(groups))
        loglik[at] = ll
        grad[at] = gr
        neg[at] = ng
    return loglik, grad, neg


def slot_scores(pool: Pool, ev: Evaluation) -> FloatArray:
    """Each slot's share of its game's score: d loglik / d theta of the slot's bot."""
    scores: FloatArray = ev.grad[:, pool.slot_side] * (pool.slot_weight * ev.gain[:, None])
    return scores


def bot_gradient(pool: Pool, ev: Evaluation) -> FloatArray:
    """The gradient of the total log-likelihood in bot strengths."""
    n = len(pool.bots)
    total = np.bincount(pool.slot_bot.ravel(), weights=slot_scores(pool, ev).ravel(), minlength=n)
    return total.astype(np.float64)


def bot_hessian(pool: Pool, ev: Evaluation) -> FloatArray:
    """The negative Hessian of the total log-likelihood in bot strengths, dense (n, n)."""
    n = len(pool.bots)
    side = pool.slot_side
    w = pool.slot_weight * ev.gain[:, None]
    neg = ev.neg_hess if len(side) == pool.sides else ev.neg_hess[:, side[:, None], side[None, :]]
    blocks = neg * w[:, :, None] * w[:, None, :]
    dense = np.bincount(pool.pair_index.ravel(), weights=blocks.ravel(), minlength=n * n)
    return dense.reshape(n, n).astype(np.float64)


def luck_gradient(pool: Pool, ev: Evaluation) -> FloatArray:
    """The gradient of the total log-likelihood in the luck effects."""
    total = np.bincount(pool.luck_of.ravel(), weights=ev.grad[pool.lucky].ravel(),
                        minlength=pool.luck_count)
    return total.astype(np.float64)


def luck_hessian(pool: Pool, ev: Evaluation) -> FloatArray:
    """The negative Hessian in the luck effects: one (sides, sides) block per board."""
    k = pool.sides
    lucky = pool.lucky
    seat = pool.seat_of[lucky]
    flat = (pool.board_of[lucky][:, None, None] * k + seat[:, :, None]) * k + seat[:, None, :]
    blocks = np.bincount(flat.ravel(), weights=ev.neg_hess[lucky].ravel(),
                         minlength=len(pool.boards) * k * k)
    out: FloatArray = blocks.reshape(len(pool.boards), k, k).astype(np.float64)
    return out


def cross_hessian(pool: Pool, ev: Evaluation, dense: bool = False) -> sp.csr_matrix | FloatArray:
    """The negative Hessian between bot strengths (rows) and luck effects (columns).

    Sparse (CSR) by default, or a dense array. The fit keeps this block by rows of
    (board, bot) instead (`ratings.optimize.LuckLayout`); this is the plain matrix.
    """
    n, q = len(pool.bots), pool.luck_count
    lucky = pool.lucky
    w = (pool.slot_weight * ev.gain[:, None])[lucky]  # (g, slots)
    neg = ev.neg_hess[lucky][:, pool.slot_side, :]  # (g, slots, sides): slot's side vs luck
    values = (neg * w[:, :, None]).ravel()
    rows = np.broadcast_to(pool.slot_bot[lucky][:, :, None], neg.shape).ravel()
    cols = np.broadcast_to(pool.luck_of[:, None, :], neg.shape).ravel()
    if dense:
        flat = np.bincount(rows * q + cols, weights=values, minlength=n * q)
        out: FloatArray = flat.reshape(n, q).astype(np.float64)
        return out
    return sp.csr_matrix((values, (rows, cols)), shape=(n, q))


def side_strengths(pool: Pool, theta: FloatArray) -> FloatArray:
    """(games, sides): each side's strength, the mean of its bots' (no gain, no luck)."""
    weighted = theta[pool.slot_bot] * pool.slot_weight
    out = np.zeros((pool.games, pool.sides))
    for pos in range(pool.sides):
        out[:, pos] = weighted[:, pool.slot_side == pos].sum(axis=1)
    return out


def to_bots(pool: Pool, per_side: FloatArray) -> FloatArray:
    """Per-game per-side values (games, sides) summed onto the bots, each slot by its weight."""
    n = len(pool.bots)
    values = per_side[:, pool.slot_side] * pool.slot_weight
    total = np.bincount(pool.slot_bot.ravel(), weights=values.ravel(), minlength=n)
    return total.astype(np.float64)
