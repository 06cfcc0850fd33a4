"""How a finished match ranks its seats, and the small row standings and ratings read.

Pure functions, tested on their own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["forfeit_winner", "placement", "result_of", "result_row"]


def _rank(values: Sequence[float]) -> list[int]:
    """Competition ranking, highest value first: [9, 5, 9] -> [1, 3, 1]."""
    return [1 + sum(1 for w in values if w > v) for v in values]


def placement(players: int, final: Sequence[int], winner: int | None,
              forfeit_seat: int | None) -> list[int]:
    """Place per seat (1 = best; ties share a place).

    3 players: by final score, except that a forfeiting seat is last.
    4 players: the winning team's seats are 1, the others 2; a draw puts all at 1;
    a forfeit loses for the forfeiter's team.
    """
    if players == 4:
        if forfeit_seat is not None:
            winner = 1 - forfeit_seat % 2
        if winner is None:
            return [1, 1, 1, 1]
        return [1 if s % 2 == winner else 2 for s in range(4)]
    if forfeit_seat is None:
        return _rank(final)
    keyed = [float(final[s]) if s != forfeit_seat else float("-inf") for s in range(3)]
    return _rank(keyed)


def result_of(record: dict[str, Any]) -> dict[str, Any]:
    """The result summary of a transcript: seats, final, winner, end, forfeit, placement."""
    players = int(record["players"])
    forfeit = record.get("forfeit")
    seat = int(forfeit["seat"]) if forfeit else None
    winner = record.get("winner")
    places = placement(players, record["final"], winner, seat)
    return {
        "seats": list(record["seats"]),
        "final": list(record["final"]),
        "winner": winner,
        "end": record["end"],
        "forfeit": forfeit,
        "placement": places,
    }


def forfeit_winner(players: int, final: Sequence[int], forfeit_seat: int) -> int | None:
    """The winner when `forfeit_seat` forfeits: the other team, or the best other seat."""
    if players == 4:
        return 1 - forfeit_seat % 2
    others = [s for s in range(3) if s != forfeit_seat]
    best = max(final[s] for s in others)
    tops = [s for s in others if final[s] == best]
    return tops[0] if len(tops) == 1 else None


def result_row(match_id: str, bot_ids: Sequence[str], result: Mapping[str, Any],
               board: str = "", unit: str = "") -> dict[str, Any]:
    """A finished match as a small standings row (what standings and ratings read).

    `board` names the deal the game was played on (games that share it share their
    luck: ratings treat it as one unit of variance); `unit` is the schedule's unit of
    a tournament game. Seat s held position s of the board.
    """
    return {
        "match_id": match_id, "bot_ids": list(bot_ids), "players": len(bot_ids),
        "final": result["final"], "winner": result["winner"],
        "placement": result["placement"], "end": result["end"],
        "forfeit": result.get("forfeit"), "seats": result["seats"],
        "board": board, "unit": unit,
    }
