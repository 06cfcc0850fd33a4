"""A detector of collusion across the tables of a board: pairs of bots that score better
on the boards they share than the deal, their own strength and their opponents' explain.

Two bots at different tables of one board hold two hands of one deal; if they talk,
each plays its own table knowing hidden tiles, and both score above what they score
elsewhere (docs/architecture.md, "Collusion across tables"). The detector looks for
exactly that, pair by pair, in a pool's games:

- **A seat's margin.** A game's final points, as the seat's own less the mean of its
  opponents' (3p), or its side's less the other side's (2v2): far less noise than the
  place, which throws away by how much a game was won.
- **The duplicate fit.** Over every game on a board of two or more tables, least
  squares fits margin[g, s] = deal[board, s] + strength[bot] - mean strength of its
  opponents (2v2: half its side's, less half the other side's): `deal` is what the
  board's hand s is worth, the luck duplicate cancels, read off every table that held
  it; `strength` is each bot's level. The residual is what neither explains: how this
  bot played this deal at this table. Each bot's residuals are standardised by their
  own spread over all its boards (a steady bot and an erratic one weigh alike),
  clipped at +-`CLIP` (Huber: a game's margin has heavy tails, a moon made or lost, and
  a few boards must not decide a pair) and standardised again.
- **Two residuals of one board are not independent.** The deal of hand s is the mean
  of the tables that held it, so the residuals of two bots at different tables of a
  board of T tables are tied by it: in one hand they correlate -1/(T - 1) (on a board
  of two tables they are each other's negative: the board says nothing of the pair);
  in different hands (3p) +1/(2 (T - 1)), since each table's margins sum to zero (on
  two tables +1/2). In 2v2 the side decides: -1/(T - 1) on one side, +1/(T - 1) on
  opposite sides. A pair's boards mix these, by how it happened to be seated: a pool's
  single correlation fits a pair only when its mix is the pool's, and a pair that sat
  mostly in different hands of two-table boards had its spread underestimated by up to
  a third (its z inflated by up to 1.22). So each board's correlation is its own
  (`structure`), scaled by one factor the pool's residuals measure (clipping and very
  unequal bots make them a little less tied than equal bots would).
- **A pair's statistic.** For bots a and b that sat at different tables of n boards
  (their *shared* boards), Z = sum over those boards of w (z_a + z_b), divided by its
  spread under honesty: sum w^2 (2 + 2 rho) over the boards, less what fitting a's and
  b's strengths on those boards takes from it (each bot's scores are centred over its
  N boards: (sum w)^2 (1/N_a + 1/N_b), with the terms of rho that come with it). A
  board weighs what it tells of a shared gain, its signal over its spread (w =
  m / (2 + 2 rho), m what a gain of 1 for both adds to each residual: 1 - 1/(2T) in
  different hands, 1 - 2/T in one); a board of two tables where they held one hand
  weighs nothing. Under honesty Z is about standard normal, whatever the two bots'
  strengths and however they were seated; colluders make it positive. p is one-sided.
- **The pool's correction.** Every pair with at least `min_shared` shared boards is
  tested, by Holm's step-down: the most suspect pair is named when its p-value times
  the number of pairs still in test is at most `alpha`; a named pair's gain on its
  shared boards then joins the fit (a column of its own) and the rest are tested again
  on that fit, one fewer. A pair that colludes is misfitted everywhere else (its
  strength averages two players) and its gain lowers its opponents' margins and raises
  its hands' holders' at the other tables; without the refit that leaks into the
  statistics of the bots beside it (bench/collusion.py, `switch_*`). A pair is
  *suspected* when its adjusted p-value is at most `alpha`. So, when no pair colludes,
  the chance that the audit names any pair at all is at most about `alpha` (the
  family-wise error rate, whatever the pool's size), not alpha per pair.

What the numbers mean, and their proof by simulation calibrated on the engine's games
(power at 10, 30 and 100 shared boards, the false-alarm rate on pools with none):
bench/collusion.py and docs/PERFORMANCE.md, on pools of four-table boards and on pools
of very unequal honest bots (random, greedy and PIMC players, the engine's games) on
two-table boards. A suspected pair is evidence for an organiser to look at (the boards,
the games), never a verdict: a pair of honest bots whose styles happen to pay on the
same deals is possible, at the rate the correction allows, and the fit stays additive
(a bot's strength counts the same against every opponent), so a bot whose play changes
with its company leaks into its neighbours' statistics as a colluder's would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse, stats
from scipy.sparse.linalg import lsqr

from ratings.errors import RatingError

__all__ = ["ALPHA", "MIN_SHARED", "Audit", "PairEvidence", "ScoreTable", "audit", "fit",
           "holm", "structure"]

ALPHA = 0.01  # the pool-wide false-alarm rate an audit is run at by default
MIN_SHARED = 5
CLIP = 2.0  # standardised residuals are clipped here (Huber), then standardised again

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class ScoreTable:
    """A pool's games as columns: unit (board code, -1 none), per seat the bot (code into
    `bots`) and the seat's final points (3p: its own; 2v2: its side's)."""

    ids: tuple[str, ...]
    unit: IntArray  # (games,)
    seat_bot: IntArray  # (games, seats)
    points: FloatArray  # (games, seats)
    bots: tuple[str, ...]
    units: tuple[str, ...]

    def __post_init__(self) -> None:
        g = len(self.ids)
        if self.unit.shape != (g,) or self.seat_bot.shape != self.points.shape \
                or self.seat_bot.shape[:1] != (g,):
            raise RatingError("score table: columns of different lengths")
        if g and self.seat_bot.shape[1] not in (3, 4):
            raise RatingError("score table: 3 or 4 seats a game")
        if g and (self.seat_bot.min() < 0 or self.seat_bot.max() >= len(self.bots)):
            raise RatingError("score table: a seat's bot code out of range")
        if not np.isfinite(self.points).all():
            raise RatingError("score table: points must be finite")

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def of(cls, ids: Sequence[str], boards: Sequence[str], seat_bot: Sequence[Sequence[str]],
           points: Sequence[Sequence[float]]) -> ScoreTable:
        """From labels: a board per game ("" for none), bot ids and points per seat."""
        names = sorted({b for row in seat_bot for b in row})
        code = {b: i for i, b in enumerate(names)}
        unit_names = sorted({b for b in boards if b})
        ucode = {u: i for i, u in enumerate(unit_names)}
        seats = max((len(r) for r in seat_bot), default=3)
        if any(len(r) != seats for r in seat_bot) or len(points) != len(seat_bot):
            raise RatingError("score table: every game needs a bot and points per seat")
        return cls(tuple(ids), np.array([ucode[b] if b else -1 for b in boards], dtype=np.int64),
                   np.array([[code[b] for b in r] for r in seat_bot],
                            dtype=np.int64).reshape(len(ids), seats),
                   np.array(points, dtype=np.float64).reshape(len(ids), seats),
                   tuple(names), tuple(unit_names))

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]]) -> ScoreTable:
        """From result rows (`match_id`, `bot_ids`, `final`, `board`): 3p finals are per
        seat, 2v2 finals per team (seat s plays for team s % 2). A row without a board,
        of another seat count than the first, or malformed, is left out: only boards of
        two or more tables say anything here."""
        ids: list[str] = []
        boards: list[str] = []
        seats: list[list[str]] = []
        points: list[list[float]] = []
        width = 0
        for row in rows:
            try:
                bots = [str(b) for b in row["bot_ids"]]
                final = [float(x) for x in row["final"]]
                board = str(row.get("board") or "")
            except (KeyError, TypeError, ValueError):
                continue
            if not board or len(bots) not in (3, 4) or (width and len(bots) != width):
                continue
            width = len(bots)
            if width == 4:
                if len(final) != 2:
                    continue
                final = [final[s % 2] for s in range(4)]
            elif len(final) != 3:
                continue
            ids.append(str(row["match_id"]))
            boards.append(board)
            seats.append(bots)
            points.append(final)
        return cls.of(ids, boards, seats, points)


@dataclass(frozen=True, slots=True)
class PairEvidence:
    """One pair of bots that sat at different tables of the same boards, tested."""

    bot_a: str
    bot_b: str
    boards: tuple[str, ...]  # the shared boards
    gain: float  # mean residual margin per bot per shared board, in game points
    se: float  # its standard error under honesty
    z: float
    p: float  # one-sided, this pair alone
    p_adjusted: float  # Holm's, over every pair tested in the pool

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
    pairs: tuple[PairEvidence, ...]  # tested, most suspect first (by adjusted p-value)
    untested: int  # pairs that shared a board, but fewer than min_shared
    alpha: float
    min_shared: int
    rho: float  # the pool's correlation of two residuals at different tables of a board

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


def _weights(seats: int) -> FloatArray:
    """w[s, t]: how bot t's strength enters seat s's margin."""
    if seats == 3:
        return np.eye(3) * 1.5 - 0.5
    side = np.arange(4) % 2
    return np.where(side[:, None] == side[None, :], 0.5, -0.5)


def margins(points: FloatArray) -> FloatArray:
    """A seat's points less its opponents' mean (3p), or its side's less the other's."""
    seats = points.shape[1]
    out: FloatArray
    if seats == 3:
        out = points - (points.sum(axis=1, keepdims=True) - points) / 2
    else:
        out = points - points[:, [1, 0, 3, 2]]
    return out


@dataclass(frozen=True, slots=True)
class Fit:
    """The duplicate fit's residuals, one per (game, bot) on a board of 2+ tables."""

    game: IntArray
    unit: IntArray
    bot: IntArray
    residual: FloatArray  # in game points
    z: FloatArray  # standardised by the bot's own spread
    sd: FloatArray  # per bot code (0 for a bot without residuals)
    boards: int
    seat: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # its seat
    tables: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # its board's


def _pair_columns(bots: IntArray, u: IntArray, w: FloatArray, modelled: Sequence[tuple[int, int]],
                  first: int) -> tuple[list[IntArray], list[IntArray], list[FloatArray]]:
    """Design entries (rows, columns, values) of one gain column per modelled pair (bot codes
    a, b): on each game of a board where a and b sat at different tables, the pair's bot
    there gains as its strength would count (its seat's margin +1, its opponents' -1/2)."""
    seats = bots.shape[1]
    rows: list[IntArray] = []
    cols: list[IntArray] = []
    vals: list[FloatArray] = []
    for c, (a, b) in enumerate(modelled):
        has_a, has_b = (bots == a).any(axis=1), (bots == b).any(axis=1)
        on = np.intersect1d(u[has_a & ~has_b], u[has_b & ~has_a])
        for bot, has in ((a, has_a), (b, has_b)):
            games = np.flatnonzero(has & ~(has_a & has_b) & np.isin(u, on))
            seat = (bots[games] == bot).argmax(axis=1)
            rows.append((games[:, None] * seats + np.arange(seats)[None, :]).reshape(-1))
            cols.append(np.full(games.size * seats, first + c, dtype=np.int64))
            vals.append(w[:, seat].T.reshape(-1))
    return rows, cols, vals


def fit(table: ScoreTable, clip: float = CLIP,
        modelled: Sequence[tuple[int, int]] = ()) -> Fit:
    """The duplicate fit (module doc) over the games on boards of two or more tables;
    standardised residuals clipped at +-`clip` (0: not clipped). Each pair of bot codes in
    `modelled` gets a gain of its own on the boards it shared (a pair already named: its
    gain explained, it does not leak into the residuals of the bots beside it)."""
    seats = table.seat_bot.shape[1] if len(table) else 3
    unit = table.unit
    on = unit >= 0
    counts = np.bincount(unit[on], minlength=len(table.units))
    keep = np.flatnonzero(on & (counts[np.maximum(unit, 0)] >= 2))
    nb = len(table.bots)
    empty_i = np.zeros(0, dtype=np.int64)
    if keep.size == 0:
        return Fit(empty_i, empty_i, empty_i, np.zeros(0), np.zeros(0), np.zeros(nb), 0,
                   empty_i, empty_i)
    used_units, u = np.unique(unit[keep], return_inverse=True)
    bots = table.seat_bot[keep]
    x = margins(table.points[keep]).reshape(-1)
    k, nu = keep.size, used_units.size
    row = np.arange(k * seats)
    w = _weights(seats)
    # Columns: deal[unit, seat], then strength[bot], then a gain per modelled pair.
    deal_col = (u[:, None] * seats + np.arange(seats)[None, :]).reshape(-1)
    r_idx = [row]
    c_idx = [deal_col]
    vals = [np.ones(k * seats)]
    for t in range(seats):
        r_idx.append(row)
        c_idx.append(nu * seats + np.repeat(bots[:, t], seats))
        vals.append(np.tile(w[:, t], k))
    pr, pc, pv = _pair_columns(bots, u, w, modelled, nu * seats + nb)
    design = sparse.csr_matrix((np.concatenate(vals + pv), (np.concatenate(r_idx + pr),
                                                             np.concatenate(c_idx + pc))),
                               shape=(k * seats, nu * seats + nb + len(modelled)))
    coef = lsqr(design, x, atol=1e-10, btol=1e-10, iter_lim=5000)[0]
    res = x - design @ coef
    # One residual per (game, bot): a bot holding both seats of a 2v2 side, once.
    games = np.repeat(keep, seats)
    flat_bots = bots.reshape(-1)
    key = games * (nb + 1) + flat_bots
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    r = np.bincount(inv, weights=res) / np.bincount(inv)
    g, b = games[first], flat_bots[first]
    seat = first % seats
    n = np.bincount(b, minlength=nb)
    mean = np.bincount(b, weights=r, minlength=nb) / np.maximum(n, 1)
    var = np.bincount(b, weights=(r - mean[b]) ** 2, minlength=nb) / np.maximum(n - 1, 1)
    sd = np.sqrt(var)
    floor = max(float(np.median(sd[n >= 2])) * 0.1 if (n >= 2).any() else 1.0, 1e-9)
    z = r / np.maximum(sd[b], floor)
    if clip:
        # Huber's clipping: a game's margin has heavy tails (a moon, a collapse); a few
        # boards must not decide a pair. Clipped, each bot's scores are centred and
        # scaled again, so that they have mean 0 and spread 1 over its boards.
        z = np.clip(z, -clip, clip)
        zm = np.bincount(b, weights=z, minlength=nb) / np.maximum(n, 1)
        zv = np.bincount(b, weights=(z - zm[b]) ** 2, minlength=nb) / np.maximum(n - 1, 1)
        z = (z - zm[b]) / np.maximum(np.sqrt(zv[b]), 1e-3)
    tables = np.bincount(u, minlength=nu)[u[first // seats]]
    return Fit(g, unit[g], b, r, z, sd, nu, seat, tables)


def _slot_pairs(f: Fit) -> tuple[IntArray, IntArray]:
    """Every pair of (game, bot) slots at different games (tables) of one board, as two
    index arrays into the fit's rows, bot a's code below bot b's."""
    order = np.lexsort((f.game, f.unit))
    units = f.unit[order]
    starts = np.flatnonzero(np.r_[True, units[1:] != units[:-1]])
    sizes = np.diff(np.r_[starts, units.size])
    left: list[IntArray] = []
    right: list[IntArray] = []
    for size in np.unique(sizes):
        at = starts[sizes == size]
        i, j = np.triu_indices(int(size), 1)
        li = order[(at[:, None] + i[None, :]).reshape(-1)]
        rj = order[(at[:, None] + j[None, :]).reshape(-1)]
        left.append(li)
        right.append(rj)
    li, rj = np.concatenate(left), np.concatenate(right)
    ok = (f.game[li] != f.game[rj]) & (f.bot[li] != f.bot[rj])
    li, rj = li[ok], rj[ok]
    swap = f.bot[li] > f.bot[rj]
    return np.where(swap, rj, li), np.where(swap, li, rj)


def structure(seats: int, tables: IntArray, same: NDArray[np.bool_]
              ) -> tuple[FloatArray, FloatArray]:
    """For two bots at different tables of a board of `tables` tables, in the same hand or
    not (3p: the same seat; 2v2: the same side), the correlation of their residuals when
    every table plays alike (`rho`), and what a shared gain of 1 adds to each's residual
    (`signal`): the board's deal is read off its tables, so each residual is its table's
    score less the mean of the tables that held that hand (module doc)."""
    t = tables.astype(np.float64)
    if seats == 3:
        rho = np.where(same, -1 / (t - 1), 1 / (2 * (t - 1)))
        signal = np.where(same, 1 - 2 / t, 1 - 1 / (2 * t))
    else:
        rho = np.where(same, -1 / (t - 1), 1 / (t - 1))
        signal = np.where(same, 1 - 2 / t, 1.0)
    return rho, signal


@dataclass(frozen=True, slots=True)
class _Tested:
    """Every pair's evidence from one fit (arrays by pair, keys a * bots + b)."""

    keys: IntArray
    n: IntArray
    z: FloatArray
    p: FloatArray
    gain: FloatArray
    se: FloatArray
    boards: list[tuple[str, ...]]
    rho: float


def _pairs(table: ScoreTable, f: Fit) -> _Tested:
    """Each pair's statistic from one fit (module doc, "A pair's statistic")."""
    nb = len(table.bots)
    seats = table.seat_bot.shape[1]
    a_rows, b_rows = _slot_pairs(f)
    empty = np.zeros(0)
    if a_rows.size == 0:
        return _Tested(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), empty, empty,
                       empty, empty, [], 0.0)
    za, zb = f.z[a_rows], f.z[b_rows]
    rho_pool = float(np.mean(za * zb))
    hands = 2 if seats == 4 else 3  # 2v2: a side's two hands count as one
    rho, signal = structure(seats, f.tables[a_rows],
                            f.seat[a_rows] % hands == f.seat[b_rows] % hands)
    # The structure's correlations, scaled to what the pool's residuals show (unequal
    # bots, clipping): one factor for the pool, by least squares through the origin.
    scale = float(np.sum(za * zb * rho) / np.sum(rho * rho))
    rho = np.clip(max(0.0, scale) * rho, -1.0, 1.0)
    # One entry per (pair, board): a pair met twice on one board (not on fair boards) once.
    pair = f.bot[a_rows] * nb + f.bot[b_rows]
    _, first = np.unique(pair * (len(table.units) + 1) + f.unit[a_rows], return_index=True)
    a_rows, b_rows, pair, rho, signal = (a_rows[first], b_rows[first], pair[first], rho[first],
                                         signal[first])
    keys, inv, n = np.unique(pair, return_inverse=True, return_counts=True)
    # Each board weighs what it tells (GLS): its signal over its spread; a board that tells
    # nothing (the same hand at two tables of two: the residuals cancel) weighs nothing.
    spread = 2 + 2 * rho
    weight = np.where((signal > 1e-9) & (spread > 0.1), signal / np.maximum(spread, 0.1), 0.0)
    total = np.bincount(inv, weights=weight * (f.z[a_rows] + f.z[b_rows]))
    var = np.bincount(inv, weights=weight ** 2 * spread)
    # Each bot's strength is fitted on the shared boards too (its scores are centred over
    # its N boards), which takes from the statistic's variance (module doc).
    per_bot = np.bincount(f.bot, minlength=nb)
    inv_n = 1 / per_bot[keys // nb] + 1 / per_bot[keys % nb]
    wsum = np.bincount(inv, weights=weight)
    wrho = np.bincount(inv, weights=weight * rho)
    rsum = np.bincount(inv, weights=rho)
    var = np.maximum(var - wsum ** 2 * inv_n - 2 * wsum * wrho * inv_n
                     + 2 * wsum ** 2 * rsum / (per_bot[keys // nb] * per_bot[keys % nb]),
                     0.05 * var)
    zstat = np.where(var > 1e-12, total / np.sqrt(np.maximum(var, 1e-12)), 0.0)
    p = stats.norm.sf(zstat)
    sd_a, sd_b = f.sd[keys // nb], f.sd[keys % nb]
    gain = np.bincount(inv, weights=f.residual[a_rows] + f.residual[b_rows]) / (2 * n)
    se = np.sqrt(np.maximum(np.bincount(inv, weights=sd_a[inv] ** 2 + sd_b[inv] ** 2 + 2 * rho
                                        * sd_a[inv] * sd_b[inv]), 0.0)) / (2 * n)
    by_pair = np.argsort(inv, kind="stable")
    ends = np.cumsum(n)
    boards = [tuple(sorted(table.units[x] for x in f.unit[a_rows[by_pair[e - c:e]]].tolist()))
              for e, c in zip(ends.tolist(), n.tolist(), strict=True)]
    return _Tested(keys, n, zstat, p, gain, se, boards, rho_pool)


MAX_NAMED = 50  # the step-down stops naming after this many pairs (a refit each)


def audit(table: ScoreTable, alpha: float = ALPHA, min_shared: int = MIN_SHARED,
          clip: float = CLIP) -> Audit:
    """Test every pair of bots that sat at different tables of the same boards (module
    doc); RatingError for an alpha outside (0, 1) or a minimum below 2."""
    if not 0 < alpha < 1:
        raise RatingError(f"alpha: must be in (0, 1), got {alpha}")
    if min_shared < 2:
        raise RatingError(f"min_shared: at least 2, got {min_shared}")
    f = fit(table, clip)
    nb = len(table.bots)
    if f.game.size == 0:
        return Audit(len(table), 0, 0, (), 0, alpha, min_shared, 0.0)
    names = table.bots
    first = tested = _pairs(table, f)
    candidates = {int(k) for k, n in zip(tested.keys, tested.n, strict=True) if n >= min_shared}
    out: list[PairEvidence] = []
    named: list[tuple[int, int]] = []
    running = 0.0

    def evidence(t: _Tested, i: int, adjusted: float) -> PairEvidence:
        key = int(t.keys[i])
        return PairEvidence(bot_a=names[key // nb], bot_b=names[key % nb], boards=t.boards[i],
                            gain=float(t.gain[i]), se=float(t.se[i]), z=float(t.z[i]),
                            p=float(t.p[i]), p_adjusted=float(adjusted))

    # Holm's step-down, each named pair's gain then fitted before the rest are tested.
    while candidates:
        idx = np.flatnonzero(np.isin(tested.keys, list(candidates)))
        best = idx[np.lexsort((tested.keys[idx], tested.p[idx]))[0]]
        adjusted = min(1.0, max(running, len(idx) * float(tested.p[best])))
        if adjusted > alpha or len(named) >= MAX_NAMED:
            holm_adj = holm(tested.p[idx])
            out.extend(evidence(tested, int(i), max(running, float(a)))
                       for i, a in zip(idx.tolist(), holm_adj.tolist(), strict=True))
            break
        out.append(evidence(tested, int(best), adjusted))
        running = adjusted
        key = int(tested.keys[best])
        candidates.discard(key)
        named.append((key // nb, key % nb))
        if candidates:
            tested = _pairs(table, fit(table, clip, named))
    out.sort(key=lambda e: (e.p_adjusted, e.p, e.bot_a, e.bot_b))
    return Audit(games=len(table), boards=f.boards, bots=int((np.bincount(
        f.bot, minlength=nb) > 0).sum()), pairs=tuple(out),
        untested=int((first.n < min_shared).sum()), alpha=alpha, min_shared=min_shared,
        rho=first.rho)
