"""The official rating: a batch MAP fit of the whole pool, with honest intervals.

3p: Plackett-Luce over the three seats' finishing order; 2v2: Bradley-Terry
between the teams, a team's strength being the mean of its bots' (see
`ratings.model` for both, and for ties: a tied 3p ranking has the exact
likelihood of all orderings consistent with it, a drawn 2v2 game counts as
half a win for each side). Ratings are on the Elo scale (400 log10 gamma) and
centred on the pool mean, which is then exactly 0.

Boards: games dealt from one board share its luck, so each board and seat
position gets a luck effect, fitted with the ratings, so that bots who held
the same position of a board are compared on the same hands, as duplicate
scoring intends (`ratings.luck`: the model, how large the luck is estimated
to be, and why the ratings stay on the scale of fresh deals). A pool without
boards (no unit of two or more games), or one whose luck cannot be
estimated (the luck explains every game, e.g. one seat position always
wins), is fitted exactly as plain Plackett-Luce / Bradley-Terry. The method string says which:
"Plackett-Luce MAP with board luck, board-clustered sandwich 95% CI (t46)".

The prior: every rating starts as N(0, 400 Elo). It exists so that an
unbeaten (or winless) bot stays finite, and it is weak: its precision,
(ln 10)^-2 ≈ 0.19 in natural-log units, is about half the Fisher information
of a single 3-player game between equals (7/18 ≈ 0.39 per bot), so from a
handful of games on the data decide. 400 Elo allows bots to differ by well
over 1,000 Elo, the spread between a random and a strong bot.

The fit is a function of the set of games: they are deduplicated and sorted
by id before anything is summed, and bots and units are indexed in sorted
order, so the order of the input does not change a single bit of the result,
nor does its form: `fit` of `Game`s and `fit_table` of the same games as columns
(`ratings.table.GameTable`, what a bulk reader fills) are the same fit to the
last bit. A refit may start from an earlier fit (`start=`, its `Fit.state`): the
same optimum, to 1e-9 Elo, in fewer steps (`ratings.luck`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ratings.errors import RatingError
from ratings.games import Game
from ratings.intervals import quantile, uncertainty
from ratings.los import los, los_matrix, los_pairs
from ratings.luck import Start, solve_with_luck
from ratings.model import pack_table
from ratings.optimize import solve
from ratings.registry import Method
from ratings.scale import ELO_PER_NAT, to_nat
from ratings.table import GameTable
from store.rating_tables import LOS_MAX_BOTS, RatingRow, RatingTable, los_rows

__all__ = ["LEVEL", "PRIOR_SD", "BatchFit", "Fit", "FitState", "Rating", "fit", "fit_table"]

FloatArray = NDArray[np.float64]

PRIOR_SD = 400.0  # Elo; why this width: see the module doc
LEVEL = 0.95  # of every interval a rating method gives


@dataclass(frozen=True, slots=True)
class Rating:
    """One bot's fitted rating (Elo, pool mean 0), its interval, games, and LOS over the next."""

    bot_id: str
    rating: float
    ci_low: float
    ci_high: float
    games: int
    los_next: float | None  # LOS over the bot ranked just below; None for the last


@dataclass(frozen=True, slots=True, eq=False)
class FitState:
    """Where a later fit of nearly the same games may start (`fit_table(start=...)`): each
    bot's MAP strength in the fit's own terms (natural log, before the scale), the luck's
    sd, the fresh-deal scale and the slope of the luck's fixed point (`ratings.luck`)."""

    strengths: dict[str, float]
    luck_sd: float
    scale: float
    tau_slope: float
    boards: tuple[str, ...] = ()  # the boards whose luck the fit estimated, sorted
    luck: FloatArray | None = None  # (boards, sides): their luck (natural log utility)


@dataclass(frozen=True, slots=True, eq=False)
class Fit:
    """A pool's ratings, best first, with the covariance behind their intervals."""

    method: str
    games: int
    units: int
    level: float
    ratings: tuple[Rating, ...]
    covariance: FloatArray  # Elo^2, rows and columns in `ratings` order
    dof: float  # Student-t degrees of freedom of the intervals (inf: normal)
    luck_sd: float = 0.0  # estimated sd of a seat position's board luck (natural log); 0: none
    gain: float = 1.0  # given their luck, games on boards read the ratings times this
    iterations: int = 0  # Newton steps of the fit (a large pool's sample fit not counted)
    state: FitState | None = None  # where a refit may start

    def rating(self, bot_id: str) -> Rating:
        """The rating of one bot (RatingError when it played no game here)."""
        for r in self.ratings:
            if r.bot_id == bot_id:
                return r
        raise RatingError(f"bot {bot_id!r} has no rating in this pool")

    def _index(self, bot_id: str) -> int:
        """Position of a bot in `ratings` (and in the covariance)."""
        return self.ratings.index(self.rating(bot_id))

    def los(self, a: str, b: str) -> float:
        """Likelihood that bot a is stronger than bot b."""
        i, j = self._index(a), self._index(b)
        v = self.covariance
        diff = self.ratings[i].rating - self.ratings[j].rating
        return los(diff, float(v[i, i] + v[j, j] - 2 * v[i, j]), self.dof)

    def los_matrix(self) -> tuple[tuple[str, ...], FloatArray]:
        """Bot ids best first, and M[i, j] = LOS(i over j) in that order."""
        ids = tuple(r.bot_id for r in self.ratings)
        values = np.array([r.rating for r in self.ratings], dtype=np.float64)
        return ids, los_matrix(values, self.covariance, self.dof)


def _method(sides: int, level: float, dof: float, luck: bool = False) -> str:
    """The short human description of how the fit was made."""
    model = "Plackett-Luce" if sides == 3 else "Bradley-Terry"
    spread = "normal" if math.isinf(dof) else f"t{dof:.0f}"
    with_luck = " with board luck" if luck else ""
    return f"{model} MAP{with_luck}, board-clustered sandwich {level:.0%} CI ({spread})"


def fit(games: Iterable[Game], *, prior_sd: float = PRIOR_SD, level: float = LEVEL,
        start: Fit | None = None) -> Fit:
    """Fit one pool (all 3p or all 2v2; mixing raises): ratings, intervals, LOS (module doc).

    The fit of the games' table (`fit_table`, `GameTable.from_games`), to the last bit.
    """
    _check(prior_sd, level)
    return fit_table(GameTable.from_games(games), prior_sd=prior_sd, level=level, start=start)


def _check(prior_sd: float, level: float) -> None:
    if not 0 < level < 1:
        raise RatingError(f"level must be between 0 and 1, got {level}")
    if not prior_sd > 0 or not math.isfinite(prior_sd):
        raise RatingError(f"prior_sd must be a positive number of Elo, got {prior_sd}")


def fit_table(table: GameTable, *, prior_sd: float = PRIOR_SD, level: float = LEVEL,
              start: Fit | None = None) -> Fit:
    """Fit one pool given as columns (`ratings.table`): the fit of the same games, `fit`.

    `start`: an earlier fit of this pool (most of these games): the fit starts from its
    strengths, luck sd and scale, and reaches the same optimum in fewer steps (the same
    fit to 1e-9 Elo; not to the last bit, as the steps differ).
    """
    _check(prior_sd, level)
    if not len(table):
        empty = np.zeros((0, 0))
        empty.setflags(write=False)
        return Fit(_method(3, level, math.inf), 0, 0, level, (), empty, math.inf)
    sides = table.sides
    pool = pack_table(table)
    precision = 1.0 / to_nat(prior_sd) ** 2
    begin = None
    if start is not None and start.state is not None:
        state = start.state
        known = state.strengths
        luck: FloatArray | None = None
        if state.luck is not None and state.boards:
            # The earlier fit's luck of each board it knew (boards sorted in both).
            old = np.array(state.boards)
            new = np.array(pool.boards)
            at = np.minimum(np.searchsorted(old, new), len(old) - 1)
            seen = old[at] == new
            per_board = np.zeros((len(new), pool.sides))
            if state.luck.shape[1] == pool.sides:
                per_board[seen] = state.luck[at[seen]]
            luck = per_board.ravel()
        begin = Start(np.array([known.get(b, 0.0) for b in pool.bots]), state.luck_sd,
                      state.scale, state.tau_slope, luck)
    try:
        solution = solve_with_luck(pool, to_nat(prior_sd), begin)
    except (RatingError, np.linalg.LinAlgError):
        # Luck that explains the games better than any strengths do (a seat position
        # that always wins, say) leaves the fresh-deal scale unbounded: such a pool is
        # fitted plainly, and the method says so, rather than left unrated.
        solution = solve(pool, to_nat(prior_sd))
    spread = uncertainty(pool, solution, precision)
    theta = solution.scale * (solution.theta - solution.theta.mean())
    q = quantile(level, spread.dof)
    elo = [float(t * ELO_PER_NAT) for t in theta]
    # Centring makes the mean 0 up to rounding; subtracting the float mean pins it.
    mean = math.fsum(elo) / len(elo)
    served = [v - mean for v in elo]
    # Best first by the rating served, ties by id: two strengths a bit apart may round to
    # one served figure, and a reader checks the order against what it is shown.
    order = sorted(range(len(pool.bots)), key=lambda i: (-served[i], pool.bots[i]))
    cov = spread.covariance[np.ix_(order, order)] * ELO_PER_NAT**2
    cov.setflags(write=False)
    values = [served[i] for i in order]
    # LOS over the next bot, all at once (one t CDF call for the pool).
    diag = np.diag(cov)
    next_var = diag[:-1] + diag[1:] - 2 * np.diag(cov, 1)
    ahead = np.array(values[:-1]) - np.array(values[1:])
    next_los = los_pairs(ahead, next_var, spread.dof)
    ratings = []
    for k, i in enumerate(order):
        half = q * math.sqrt(max(float(cov[k, k]), 0.0))
        nxt = float(next_los[k]) if k + 1 < len(order) else None
        ratings.append(
            Rating(pool.bots[i], values[k], values[k] - half, values[k] + half,
                   int(pool.played[i]), nxt)
        )
    return Fit(
        method=_method(sides, level, spread.dof, solution.luck_sd > 0),
        games=pool.games,
        units=len(pool.units),
        level=level,
        ratings=tuple(ratings),
        covariance=cov,
        dof=spread.dof,
        luck_sd=solution.luck_sd,
        gain=solution.gain / solution.scale,
        iterations=solution.iterations,
        state=FitState(dict(zip(pool.bots, solution.theta.tolist(), strict=True)),
                       solution.luck_sd, solution.scale, solution.tau_slope,
                       pool.boards if solution.luck_sd > 0 else (),
                       solution.luck.reshape(-1, max(pool.sides, 1))
                       if solution.luck_sd > 0 else None),
    )


class BatchFit(Method):
    """The official rating: `fit` over the pool's games, as a table (with the LOS matrix for
    pools of up to LOS_MAX_BOTS bots)."""

    name = "batch"
    title = "batch fit"

    def __init__(self) -> None:
        # The last fit of each kind of pool (3 or 2 sides): the next fit of that pool,
        # mostly the same games, starts from it (the same fit, in fewer steps).
        self._last: dict[int, Fit] = {}

    def rate(self, games: Iterable[Game], as_of: float) -> RatingTable:
        """The fit's table (module doc)."""
        return self._table(fit(games), as_of)

    def rate_table(self, table: GameTable, as_of: float) -> RatingTable:
        """The fit of the games as columns, started from this pool's last fit."""
        f = fit_table(table, start=self._last.get(table.sides))
        if len(table):
            self._last[table.sides] = f
        return self._table(f, as_of)

    def _table(self, f: Fit, as_of: float) -> RatingTable:
        los = los_rows(f.los_matrix()[1].tolist()) if len(f.ratings) <= LOS_MAX_BOTS else None
        return RatingTable(
            method=f.method, as_of=as_of, games=f.games, boards=f.units, provisional=False,
            level=f.level, dof=None if math.isinf(f.dof) else f.dof, los=los,
            rows=tuple(RatingRow(bot_id=x.bot_id, rating=x.rating, games=x.games,
                                 ci_low=x.ci_low, ci_high=x.ci_high, los_next=x.los_next)
                       for x in f.ratings))
