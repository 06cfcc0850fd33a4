"""Sequential Elo over game results: a pure function of the set of results.

Games are taken in match-id order (natural order: digit runs compare as
numbers, so `g9` precedes `g10`), never in arrival order, so the same results
always give the same ratings. Within a game every contest uses the ratings from
before the game, and each contest moves its two bots by equal and opposite
amounts, so the total rating is conserved.

- 3 players: the game is three pairwise contests by placement (ahead scores
  1, a shared place 0.5, behind 0), each with K/2, so a bot's two contests move
  it about as far as one two-player game would.
- 4 players (2v2): each bot plays each opposing bot with the teams' average
  ratings; a bot that fills both seats of its team counts once. The contest
  K is K divided by the larger team's number of distinct bots, so in every
  game a bot moves by at most K times its surprise, as in a 2-player game.

3p and 2v2 are separate pools: rate each with its own call (mixing raises).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from store.errors import InvalidArgument
from tournaments.standings import GameResult, normalize

__all__ = ["DEFAULT_K", "INITIAL", "EloRating", "expected_score", "game_order", "sequential_elo"]

DEFAULT_K = 32.0
INITIAL = 1500.0
_DIGITS = re.compile(r"(\d+)")


@dataclass(frozen=True, slots=True)
class EloRating:
    """A bot's rating after the games it played, and how many those were."""

    rating: float
    games: int


def expected_score(rating: float, opponent: float) -> float:
    """The Elo expectation of scoring against an opponent: 1 / (1 + 10^((opp - own)/400))."""
    return 1.0 / (1.0 + float(10.0 ** ((opponent - rating) / 400.0)))


def game_order(match_id: str) -> tuple[tuple[tuple[int, int | str], ...], str]:
    """Sort key for match ids: natural order (digit runs as numbers), then the raw id."""
    parts = tuple(
        (1, int(p)) if p.isdigit() else (0, p) for p in _DIGITS.split(match_id) if p
    )
    return parts, match_id


def _three(res: GameResult, r: Mapping[str, float], k: float) -> dict[str, float]:
    """Rating changes from a 3p game: three pairwise contests by placement, K/2 each."""
    delta = dict.fromkeys(res.bot_ids, 0.0)
    for a, b in ((0, 1), (0, 2), (1, 2)):
        x, y = res.bot_ids[a], res.bot_ids[b]
        pa, pb = res.placement[a], res.placement[b]
        score = 1.0 if pa < pb else 0.5 if pa == pb else 0.0
        change = k / 2 * (score - expected_score(r[x], r[y]))
        delta[x] += change
        delta[y] -= change
    return delta


def _four(res: GameResult, r: Mapping[str, float], k: float) -> dict[str, float]:
    """Rating changes from a 2v2 game: each bot against each opposing bot, team averages."""
    teams: tuple[list[str], list[str]] = ([], [])
    for bot, side in res.sides.items():
        teams[side].append(bot)
    avg = [sum(r[b] for b in t) / len(t) for t in teams]
    score = 0.5 if res.winner is None else 1.0 if res.winner == 0 else 0.0
    change = k / max(len(teams[0]), len(teams[1])) * (score - expected_score(avg[0], avg[1]))
    delta = dict.fromkeys(res.sides, 0.0)
    for a in teams[0]:
        for b in teams[1]:
            delta[a] += change
            delta[b] -= change
    return delta


def sequential_elo(
    results: Iterable[GameResult | Mapping[str, Any]],
    k: float = DEFAULT_K,
    initial: float = INITIAL,
) -> dict[str, EloRating]:
    """Ratings of every bot after all games in match-id order (see the module doc)."""
    if not k > 0:
        raise InvalidArgument(f"k must be positive, got {k}")
    games = sorted(normalize(results), key=lambda res: game_order(res.match_id))
    if len({res.players for res in games}) > 1:
        raise InvalidArgument("results mix 3-player and 2v2 games: rate each pool separately")
    rating: dict[str, float] = {}
    played: dict[str, int] = {}
    for res in games:
        for bot in res.sides:
            rating.setdefault(bot, initial)
            played[bot] = played.get(bot, 0) + 1
        delta = _three(res, rating, k) if res.players == 3 else _four(res, rating, k)
        for bot, d in delta.items():
            rating[bot] += d
    return {bot: EloRating(rating[bot], played[bot]) for bot in sorted(rating)}
