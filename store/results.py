"""How a finished match ranks its seats, what a seat scores (the game score a test of a
change counts), and the small row standings and ratings read.

Pure functions, tested on their own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from store.errors import InvalidArgument
from store.records import MatchSpec

__all__ = ["forfeit_winner", "game_quarters", "pair_eighths", "placement", "result_of",
           "result_row", "transcript_extra"]


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


def transcript_extra(spec: MatchSpec, faults: Sequence[Mapping[str, Any]],
                     forfeit: tuple[int, str] | None, scores: Sequence[int]) -> dict[str, Any]:
    """What the referee adds to a game's `moon-transcript/1` record (`moon.transcript`'s
    `extra`), in this order: its match id and bots, its clock and fault policy, its
    faults; for an event's game the event, its kind's id field, the board and unit, how
    it deals and the event's notes; for a forfeit (`forfeit`: seat and reason, `scores`
    the scores when it came) the end, the forfeit and the adjudicated winner. One place,
    so that the archive's codec (`archive.codec`) is tested against what games carry."""
    extra: dict[str, Any] = {
        "match_id": spec.match_id,
        "bot_ids": list(spec.bot_ids),
        "clock": {"move_time_ms": spec.clock.move_time_ms,
                  "time_bank_ms": spec.clock.time_bank_ms},
        "fault_policy": {"max_strikes": spec.faults.max_strikes,
                         "disconnect_grace_ms": spec.faults.disconnect_grace_ms},
        "faults": list(faults),
    }
    if spec.event is not None:
        extra.update({"event": str(spec.event), spec.event.kind.transcript_field:
                      spec.event.id, "board": str(spec.meta.get("board", "")),
                      "unit": str(spec.meta.get("unit", "")),
                      "duplicate": str(spec.meta.get("duplicate", "boards")),
                      "notes": list(spec.meta.get("notes", []))})
    if forfeit is not None:
        extra["end"] = "forfeit"
        extra["forfeit"] = {"seat": forfeit[0], "reason": forfeit[1]}
        extra["winner"] = forfeit_winner(spec.players, scores, forfeit[0])
    return extra


def result_row(match_id: str, bot_ids: Sequence[str], result: Mapping[str, Any],
               board: str = "", unit: str = "", actions: int = 0) -> dict[str, Any]:
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
        "board": board, "unit": unit, "actions": actions,
    }


def game_quarters(players: int, placement: Sequence[int], seat: int) -> int:
    """The game score of `seat` in quarters: 4 first (a 2v2 win), 2 second (a draw), 0 last;
    tied sides share the places they cover (3p places 1, 2, 2 score 4, 1, 1).

    It is (sides beaten + sides tied / 2) / (sides - 1): a 3p seat against the two
    others, a 2v2 seat's team against the other team. A forfeit counts as `placement`
    ranks it. InvalidArgument for a placement that is not a competition ranking of the
    sides.
    """
    if isinstance(players, bool) or players not in (3, 4):
        raise InvalidArgument(f"players must be 3 or 4, got {players!r}")
    places = [int(p) for p in placement]
    if len(places) != players:
        raise InvalidArgument(f"placement: {players} players need {players} places, "
                              f"got {places}")
    if isinstance(seat, bool) or not 0 <= seat < players:
        raise InvalidArgument(f"seat must be from 0 to {players - 1}, got {seat!r}")
    if players == 4:
        if places[0] != places[2] or places[1] != places[3]:
            raise InvalidArgument(f"placement {places}: partners (seats 0/2, 1/3) differ")
        places, seat = places[:2], seat % 2
    if places != [1 + sum(q < p for q in places) for p in places]:
        raise InvalidArgument(f"placement {places} is not a competition ranking (1 best)")
    mine = places[seat]
    others = places[:seat] + places[seat + 1:]
    worse = sum(p > mine for p in others)
    tied = sum(p == mine for p in others)
    # Exact in quarters for two and three sides.
    return (4 * worse + 2 * tied) // len(others)


def pair_eighths(players: int, c_placement: Sequence[int], b_placement: Sequence[int],
                 seat: int) -> int:
    """A pair's score in eighths, 8 (1 + s_C - s_B) / 2 (0 to 8), from the placements of C's
    game and B's game on one board, both held at `seat`."""
    return 4 + game_quarters(players, c_placement, seat) - game_quarters(players, b_placement,
                                                                         seat)
