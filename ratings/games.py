"""What the rating math reads: one `Game` per finished game, validated on construction.

A game names the bots on each side and the place each side took. 3-player
games have three sides of one bot each; 2v2 games have two sides (teams) of
one or two distinct bots (a bot that holds both seats of its team is a side
of one). A bot may also sit on several sides of one game: only a house bot
can (the referee seats a remote bot once), and the math takes each of its
seats as its own draw from that bot's strength. `unit` is the unit of
shared luck: games dealt from one board (or one duplicate set) share it, and
the intervals treat them as one cluster; an empty unit means the game is its
own unit.

Ratings depend on the set of games only: `canonical` keeps an identical
repeat once, rejects two different games under one id, and sorts by game id
(digit runs compare as numbers, so `g9` precedes `g10`), and every fit and
update reads games in that order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ratings.errors import RatingError

__all__ = ["Game", "canonical", "game_order", "games_from_rows", "side_count"]

_DIGITS = re.compile(r"(\d+)")


@dataclass(frozen=True, slots=True)
class Game:
    """One finished game: the bots on each side and each side's place (1 best, ties share)."""

    game_id: str
    unit: str
    sides: tuple[tuple[str, ...], ...]
    places: tuple[int, ...]
    # When the game counted in its pool (released; seconds since the epoch), if known: a
    # method may look at a window of time (`ratings.recent`). Not part of the game's
    # identity, so a repeat released twice is still one game.
    at: float | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        where = f"game {self.game_id!r}"
        if not isinstance(self.game_id, str) or not self.game_id:
            raise RatingError(f"{where}: game_id must be a non-empty string")
        if not isinstance(self.unit, str):
            raise RatingError(f"{where}: unit must be a string, got {self.unit!r}")
        if len(self.sides) not in (2, 3):
            raise RatingError(f"{where}: needs 2 sides (2v2) or 3 (3p), got {len(self.sides)}")
        if len(self.places) != len(self.sides):
            raise RatingError(f"{where}: {len(self.sides)} sides but {len(self.places)} places")
        widest = 1 if len(self.sides) == 3 else 2
        for side in self.sides:
            if not 1 <= len(side) <= widest or len(set(side)) != len(side):
                raise RatingError(
                    f"{where}: each side needs 1 to {widest} distinct bots, got {side!r}"
                )
            for bot in side:
                if not isinstance(bot, str) or not bot:
                    raise RatingError(f"{where}: bot ids must be non-empty strings, got {bot!r}")
        expected = [1 + sum(q < p for q in self.places) for p in self.places]
        if list(self.places) != expected:
            raise RatingError(
                f"{where}: places {list(self.places)} are not a competition ranking"
                " (1 best; tied sides share a place and the next place is skipped)"
            )

    @property
    def bots(self) -> tuple[str, ...]:
        """Every seat's bot in the game, side by side (a bot on two sides twice)."""
        return tuple(bot for side in self.sides for bot in side)


def game_order(game_id: str) -> tuple[tuple[tuple[int, int | str], ...], str]:
    """Sort key for game ids: natural order (digit runs as numbers), then the raw id."""
    parts = tuple(
        (1, int(p)) if p.isdigit() else (0, p) for p in _DIGITS.split(game_id) if p
    )
    return parts, game_id


def canonical(games: Iterable[Game]) -> tuple[Game, ...]:
    """The set of games in game-id order: an identical repeat once, a conflicting one rejected."""
    by_id: dict[str, Game] = {}
    for game in games:
        if not isinstance(game, Game):
            raise RatingError(f"expected a Game, got {game!r}")
        if by_id.setdefault(game.game_id, game) != game:
            raise RatingError(f"two different games under id {game.game_id!r}")
    return tuple(by_id[k] for k in sorted(by_id, key=game_order))


def side_count(games: Iterable[Game]) -> int:
    """The pool's number of sides (3 for 3p, 2 for 2v2), 0 when empty; mixing raises."""
    counts = {len(g.sides) for g in games}
    if len(counts) > 1:
        raise RatingError("games mix 3-player and 2v2: fit each pool separately")
    return counts.pop() if counts else 0


def _game_of_row(row: Mapping[str, Any]) -> Game:
    """One result row as a Game (see `games_from_rows`)."""
    mid = str(row["match_id"])
    bots = [str(b) for b in row["bot_ids"]]
    places = [int(p) for p in row["placement"]]
    players = int(row["players"])
    board = row.get("board")
    unit = "" if board is None else str(board)
    released = row.get("released_at")
    at = None if released is None else float(released)
    if players != len(bots) or players != len(places) or players not in (3, 4):
        raise RatingError(
            f"game {mid!r}: players must be 3 or 4 with one bot and one place per seat"
        )
    if players == 3:
        return Game(mid, unit, tuple((b,) for b in bots), tuple(places), at)
    teams: list[list[str]] = [[], []]
    team_place: list[int] = [0, 0]
    for seat, (bot, place) in enumerate(zip(bots, places, strict=True)):
        team = seat % 2
        if team_place[team] not in (0, place):
            raise RatingError(f"game {mid!r}: the seats of team {team} have different places")
        team_place[team] = place
        if bot not in teams[team]:
            teams[team].append(bot)  # a bot holding both seats of its team counts once
    return Game(mid, unit, (tuple(teams[0]), tuple(teams[1])), (team_place[0], team_place[1]),
                at)


def games_from_rows(rows: Iterable[Mapping[str, Any]]) -> tuple[Game, ...]:
    """Games from result rows (`workers.outcome.result_row`, plus an optional `board` and
    `released_at`, the time the game counted in its pool).

    3 players: each seat is a side. 4 players: seat s plays for team s % 2, a
    team's place is its seats' (1/2, or 1/1 on a draw), and a bot holding
    both seats of its team appears once in its side. A forfeiter is already
    placed last by the row. Rows come back in their given order (see
    `canonical` for the set).
    """
    out: list[Game] = []
    for row in rows:
        try:
            out.append(_game_of_row(row))
        except RatingError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            mid = row.get("match_id", "?") if isinstance(row, Mapping) else "?"
            raise RatingError(f"game {mid!r}: malformed result row: {exc!r}") from None
    return tuple(out)
