"""Swiss standings: points, then three tiebreaks, each with a line a page can show.

Entrants are indices 0..n-1 in seed order: bots (3p, rotating partners) or teams
(fixed 2v2 teams). A game lists its sides in board order (`SwissGame.sides`): 3p,
one bot per seat position; 2v2, the entrants on seat pair 0 (seats 0 and 2) and on
seat pair 1. Every game of a round is dealt from the round's board, so the same
side of the same round held the same cards at every table.

Order (`TIEBREAKS`, best first):

1. points: game points (`swiss_rules`: 1, 1/2, 0 by place in 3p, shared when tied;
   1, 1/2, 0 for a 2v2 win, draw, loss) plus 1/2 per bye.
2. buchholz: the sum, over an entrant's games, of its opponents' points (3p: both
   table-mates; 2v2: the two opponents of rotating partners, the other team of fixed
   teams), so a score made against stronger opposition ranks first. A bye round adds
   what an average one of its real rounds added (nothing if it has none), so a bye
   neither helps nor hurts here.
3. duplicate: for every game, the points the entrant's side made minus the mean of
   what the same side of the same board made at the round's other tables (0 when it
   was played at one table), summed: how much more it made of the cards it held than
   the others who held them.
4. rating: the pool rating when the event was made (the mean of a team's bots'); then
   the seed.

Only finished games count; a game of a round under way counts once its result is in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from store.errors import InvalidArgument
from tournaments.standings import GameResult
from tournaments.swiss_rules import BYE_POINTS, place_points, team_points

__all__ = [
    "TIEBREAKS",
    "RoundRecord",
    "SwissGame",
    "SwissRow",
    "side_points",
    "swiss_standings",
]

TIEBREAKS: tuple[tuple[str, str], ...] = (
    ("points", "game points: 1 / ½ / 0 for first / second / third (2v2: win / draw / loss), "
               "shared when tied; a bye scores ½"),
    ("buchholz", "the sum of the opponents' points over the games played (a bye counts as "
                 "an average one of the entrant's rounds): the strength of the opposition"),
    ("duplicate", "points made minus the mean that the same seats of the same board made at "
                  "the round's other tables: how much more was made of the same cards"),
    ("rating", "the pool rating when the event was made (a team's: its bots' mean), "
               "then the seed"),
)


@dataclass(frozen=True, slots=True)
class SwissGame:
    """One game of a round: its match id and the entrants of each side, in board order."""

    match_id: str
    sides: tuple[tuple[int, ...], ...]


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """A round as played: its games (all on the round's board) and the entrants with a bye."""

    games: tuple[SwissGame, ...]
    byes: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class SwissRow:
    """One entrant's line of the standings."""

    entry: int
    rank: int
    points: float
    buchholz: float
    duplicate: float
    rating: float
    games: int
    byes: int


def side_points(result: GameResult | Mapping[str, Any]) -> tuple[float, ...]:
    """Each side's game points: per seat in 3p, per team (seat pair) in 2v2."""
    res = GameResult.of(result)
    return place_points(res.placement) if res.players == 3 else team_points(res.winner)


def swiss_standings(n: int, rounds: Sequence[RoundRecord],
                    points_by_match: Mapping[str, Sequence[float]],
                    ratings: Sequence[float] | None = None,
                    bye_points: float = BYE_POINTS) -> list[SwissRow]:
    """The standings of n entrants, best first (module doc). `points_by_match` holds each
    finished game's side points (`side_points`); games not in it are not finished."""
    rating = list(ratings) if ratings is not None else [0.0] * n
    if len(rating) != n:
        raise InvalidArgument(f"ratings: need one per entrant ({n}), got {len(rating)}")
    points = [0.0] * n
    games = [0] * n
    byes = [0] * n
    faced: list[list[int]] = [[] for _ in range(n)]  # opponents, once per game
    duplicate = [0.0] * n
    for number, rnd in enumerate(rounds, 1):
        for e in rnd.byes:
            _entry(e, n, number)
            points[e] += bye_points
            byes[e] += 1
        played = [(g, _side_points(g, points_by_match, number))
                  for g in rnd.games if g.match_id in points_by_match]
        by_side: dict[int, list[float]] = {}
        for _, pts in played:
            for s, p in enumerate(pts):
                by_side.setdefault(s, []).append(p)
        for g, pts in played:
            for s, side in enumerate(g.sides):
                others = by_side[s]
                mean = (sum(others) - pts[s]) / (len(others) - 1) if len(others) > 1 else pts[s]
                rivals = [x for t, o in enumerate(g.sides) if t != s for x in o]
                for e in side:
                    _entry(e, n, number)
                    points[e] += pts[s]
                    games[e] += 1
                    duplicate[e] += pts[s] - mean
                    faced[e].extend(rivals)
    buchholz = []
    for e in range(n):
        real = sum(points[x] for x in faced[e])
        per_round = real / games[e] if games[e] else 0.0
        buchholz.append(real + per_round * byes[e])
    order = sorted(range(n), key=lambda e: (-round(points[e], 9), -round(buchholz[e], 9),
                                            -round(duplicate[e], 9), -rating[e], e))
    return [SwissRow(e, rank, points[e], buchholz[e], duplicate[e], float(rating[e]),
                     games[e], byes[e]) for rank, e in enumerate(order, 1)]


def _entry(e: int, n: int, number: int) -> None:
    if not 0 <= e < n:
        raise InvalidArgument(f"round {number}: entrant {e} is not one of 0..{n - 1}")


def _side_points(game: SwissGame, points_by_match: Mapping[str, Sequence[float]],
                 number: int) -> tuple[float, ...]:
    pts = tuple(float(p) for p in points_by_match[game.match_id])
    if len(pts) != len(game.sides):
        raise InvalidArgument(f"round {number}: game {game.match_id!r} has {len(game.sides)} "
                              f"sides but {len(pts)} side points")
    return pts
