"""The live figure: a provisional rating updated game by game, between official fits.

Weng & Lin's (2011) Bayesian approximation for the Plackett-Luce model (their
Algorithm 4, the one OpenSkill implements), with ties as they define them
(tied sides share their place and split the comparison, so a tie pulls the
sides together). Each bot has a Gaussian belief (mu, sigma) in natural-log
strength, and a game moves it by one closed-form step.

Written here (about 40 lines) instead of using the `openskill` package: its
team strength is the SUM of the members' (and its weights do not change
that), so a bot holding both seats of its team, a team of one, would be half
as strong as a pair of equals; here, as in the batch fit, a team's strength
is the MEAN of its bots'. The prior matches the fit's (N(0, 400 Elo)), beta
is chosen so that exp(mu) is a PL strength once sigma is small, and there is
no drift (tau = 0): a bot is a fixed program, not a player whose form changes.

Games are taken in game-id order, deduplicated (`games.canonical`), so the
figure too is a function of the set of games; unlike the fit it depends on
that order, which is why it is only provisional.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from ratings.batch import LEVEL, PRIOR_SD
from ratings.games import Game, canonical, side_count
from ratings.registry import Method
from ratings.scale import ELO_PER_NAT, to_nat
from ratings.table import GameTable
from store.rating_tables import RatingRow, RatingTable

__all__ = ["WINDOW", "Provisional", "ProvisionalRating", "provisional_ratings"]

WINDOW = 100_000  # games the provisional figure of a large pool is taken over (newest)

# A variance never shrinks below this fraction of itself in one game (Weng-Lin's kappa).
_KAPPA = 1e-4


@dataclass(frozen=True, slots=True)
class ProvisionalRating:
    """A bot's provisional (live) rating: Elo, pool mean 0, its sd, and games played."""

    bot_id: str
    rating: float
    sd: float
    games: int


def _update(game: Game, mu: dict[str, float], var: dict[str, float], beta2: float) -> None:
    """One Weng-Lin Plackett-Luce step for a game, in place."""
    k = len(game.sides)
    t_mu = [sum(mu[b] for b in s) / len(s) for s in game.sides]
    t_var = [sum(var[b] for b in s) / len(s) ** 2 for s in game.sides]
    c = math.sqrt(sum(v + beta2 for v in t_var))
    e = [math.exp((m - max(t_mu)) / c) for m in t_mu]  # shifted: only ratios matter
    places = game.places
    # sum_q: strengths of the sides placed no better than q; a_q: sides sharing q's place.
    sum_q = [sum(e[s] for s in range(k) if places[s] >= places[q]) for q in range(k)]
    a_q = [places.count(places[q]) for q in range(k)]
    for i, side in enumerate(game.sides):
        omega = delta = 0.0
        for q in range(k):
            if places[q] > places[i]:
                continue
            p = e[i] / sum_q[q]
            omega += ((1.0 if q == i else 0.0) - p) / a_q[q]
            delta += p * (1 - p) / a_q[q]
        gamma = math.sqrt(t_var[i]) / c
        omega *= t_var[i] / c
        delta *= gamma * t_var[i] / c**2
        w = 1.0 / len(side)  # d(team mu) / d(bot mu) for a team that is the mean of its bots
        for b in side:
            share = var[b] * w / t_var[i]
            mu[b] += share * omega
            var[b] *= max(1.0 - share * w * delta, _KAPPA)


def provisional_ratings(games: Iterable[Game]) -> tuple[ProvisionalRating, ...]:
    """Provisional ratings of one pool after its games in id order, best first."""
    ordered = canonical(games)
    sides = side_count(ordered)
    # With sigma -> 0, c -> sqrt(sides) * beta; beta = 1/sqrt(sides) makes c = 1 there.
    beta2 = 1.0 / sides if sides else 1.0
    prior_var = to_nat(PRIOR_SD) ** 2
    mu: dict[str, float] = {}
    var: dict[str, float] = {}
    played: dict[str, int] = {}
    for game in ordered:
        for b in dict.fromkeys(game.bots):  # a house bot on two sides played it once
            mu.setdefault(b, 0.0)
            var.setdefault(b, prior_var)
            played[b] = played.get(b, 0) + 1
        _update(game, mu, var, beta2)
    mean = math.fsum(mu.values()) / len(mu) if mu else 0.0
    rows = [
        ProvisionalRating(b, (mu[b] - mean) * ELO_PER_NAT, math.sqrt(var[b]) * ELO_PER_NAT,
                          played[b])
        for b in mu
    ]
    rows.sort(key=lambda r: (-r.rating, r.bot_id))
    return tuple(rows)


class Provisional(Method):
    """The live figure as a table: no intervals (the update's sd is not one), provisional."""

    name = "provisional"
    title = "provisional figure"

    def rate_table(self, table: GameTable, as_of: float) -> RatingTable:
        """Over columns: the update runs one game at a time, so a pool past WINDOW games
        gets the figure of its newest WINDOW (by release) and says so; the batch fit,
        which follows at once, counts them all."""
        if len(table) <= WINDOW:
            return self.rate(table.games(), as_of)
        at = np.zeros(len(table)) if table.at is None else np.nan_to_num(table.at, nan=-np.inf)
        newest = np.sort(np.argsort(at, kind="stable")[-WINDOW:])
        out = self.rate(table.take(newest).games(), as_of)
        return replace(out, method=f"{out.method}, over the pool's newest {WINDOW:,} games")

    def rate(self, games: Iterable[Game], as_of: float) -> RatingTable:
        """`provisional_ratings` over the pool's games (module doc)."""
        pool = canonical(games)
        return RatingTable(
            method="provisional: Weng-Lin Plackett-Luce update in game-id order",
            as_of=as_of, games=len(pool), boards=len({g.unit or g.game_id for g in pool}),
            provisional=True, level=LEVEL,
            rows=tuple(RatingRow(bot_id=x.bot_id, rating=x.rating, games=x.games)
                       for x in provisional_ratings(pool)))
