"""What every format plans with: games, units (games that share one deal seed), the
incremental step every format takes, and the source of a static schedule.

A format's schedule is incremental: `start` gives the first games, then `feed`
folds in newly finished results (each exactly once) and gives only the games
that must be created now, plus the format's new state (a JSON object the
scheduler stores). So a scheduling step costs what changed, not the size of
the tournament. `tournaments.registry.plan` folds a whole result set through
the same two functions, which is what the tests check the formats with.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from store.records import TournamentSpec
from tournaments import bracket as brk

__all__ = [
    "Game",
    "ListSource",
    "Plan",
    "Step",
    "Unit",
    "UnitSource",
    "board_id",
    "board_label",
    "derive_seed",
    "pair_games",
    "redeal_notes",
    "seatings3",
]


def derive_seed(seed: int, unit: str) -> int:
    """The deal seed of a unit: fixed by the tournament seed and the unit's id."""
    digest = hashlib.sha256(f"{seed}:{unit}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@dataclass(frozen=True, slots=True)
class Game:
    """One game of the plan: its id, duplicate set, seating and deal seed."""

    match_id: str
    unit: str
    bot_ids: tuple[str, ...]
    seed: int
    bracket_match: str = ""


@dataclass(frozen=True, slots=True)
class Unit:
    """Games that share one deal seed, created together."""

    id: str
    games: tuple[Game, ...]

    def to_json(self, spec: TournamentSpec) -> list[Any]:
        """Compact form (ids without the tournament's, bots as seed indices) for a stored
        schedule."""
        index = {b: i for i, b in enumerate(spec.bot_ids)}
        cut = len(spec.tournament_id) + 1
        return [self.id, self.games[0].seed if self.games else 0,
                [[g.match_id[cut:], [index[b] for b in g.bot_ids]] for g in self.games]]

    @staticmethod
    def from_json(spec: TournamentSpec, data: Sequence[Any]) -> Unit:
        """Inverse of `to_json`."""
        uid, seed, games = data
        bots = spec.bot_ids
        return Unit(uid, tuple(
            Game(f"{spec.tournament_id}-{suffix}", uid, tuple(bots[i] for i in seats), seed)
            for suffix, seats in games))


class UnitSource(Protocol):
    """A format's static schedule, read a slice at a time (from Redis, or a list)."""

    def units(self, start: int, stop: int) -> list[Unit]:
        """Units `start` to `stop` - 1 of the schedule (fewer at its end)."""

    def size(self) -> tuple[int, int]:
        """(units, games) in the whole schedule."""


@dataclass
class ListSource:
    """A schedule held in memory."""

    items: list[Unit]

    def units(self, start: int, stop: int) -> list[Unit]:
        """A slice of the schedule."""
        return self.items[start:stop]

    def size(self) -> tuple[int, int]:
        """(units, games) in the schedule."""
        return len(self.items), sum(len(u.games) for u in self.items)


@dataclass
class Step:
    """What one scheduling step decides: the new state and the games to create now."""

    state: dict[str, Any]
    games: list[Game]
    finished: bool
    total: int  # games planned so far plus the fewest still to come


@dataclass
class Plan:
    """What the tournament consists of, given the results so far.

    `games` lists every game created so far when the plan was folded from results
    (`registry.plan`); a plan read back from the scheduler's stored state leaves it
    empty and keeps the bracket part only.
    """

    games: list[Game] = field(default_factory=list)
    finished: bool = False
    total: int = 0  # games planned so far plus the fewest still to come
    bracket: brk.BracketState | None = None
    series: dict[str, brk.SeriesState] = field(default_factory=dict)
    bracket_games: dict[str, list[str]] = field(default_factory=dict)  # in creation order
    state: dict[str, Any] | None = None  # the format's state the plan was read from


_PERMS: tuple[tuple[int, int, int], ...] = tuple(
    (a, b, c) for a, b, c in itertools.permutations(range(3)))


def seatings3(unit_index: int, replay: bool) -> list[tuple[int, int, int]]:
    """The seat orders a table of three plays: all six (replay), or one that rotates by unit."""
    return list(_PERMS) if replay else [_PERMS[unit_index % 6]]


def redeal_notes(redealt: int) -> list[str]:
    """What the tournament's notes say of boards dealt afresh (none: nothing)."""
    if not redealt:
        return []
    return [f"{redealt} board(s) dealt afresh: the planned deal had been dealt before, for "
            "another board of the stack (no deal is ever dealt twice)"]


def board_id(tournament_id: str, unit: str) -> str:
    """The id of the board a unit's games are dealt from, unique across tournaments."""
    return f"{tournament_id}/{unit}"


_ROUND_UNIT = re.compile(r"(?:x(\d+)-)?r(\d+)(?:-t(\d+))?")
_SET_UNIT = re.compile(r"(.+)-([sp])(\d+)")
_APART = re.compile(r"(.+)-a(\d+)")


def board_label(board: str) -> str:
    """A board (`<tournament>/<unit>`, or a unit) for people: `round 3`, `round 3,
    table 2`, `round 3 (pass 2)` for a round robin's units (and `round 3` for a Swiss's
    `r3`), `W2-1 set 1` (or `pair 1`, under replay) for a bracket's; a board dealt apart
    from one of those (`<unit>-a2`, `tournaments.apart`) `round 3, board 2`."""
    unit = board.rpartition("/")[2]
    m = _APART.fullmatch(unit)
    if m:
        return f"{board_label(m.group(1))}, board {m.group(2)}"
    m = _ROUND_UNIT.fullmatch(unit)
    if m:
        text = f"round {m.group(2)}" + (f", table {m.group(3)}" if m.group(3) else "")
        return text + (f" (pass {m.group(1)})" if m.group(1) not in (None, "1") else "")
    m = _SET_UNIT.fullmatch(unit)
    if m:
        return f"{m.group(1)} {'set' if m.group(2) == 's' else 'pair'} {m.group(3)}"
    return unit


def pair_games(spec: TournamentSpec, unit: str, team0: tuple[str, str],
               team1: tuple[str, str], index: int, bracket_match: str = "") -> list[Game]:
    """A duplicate pair: the same deals with the teams in both seat pairs under replay; else
    one game, the teams' seats alternating with `index`."""
    seed = derive_seed(spec.seed, unit)
    a = (team0[0], team1[0], team0[1], team1[1])
    b = (team1[0], team0[0], team1[1], team0[1])
    seatings = [a, b] if spec.replay else [a if index % 2 == 0 else b]
    return [Game(f"{spec.tournament_id}-{unit}-g{k + 1}", unit, s, seed, bracket_match)
            for k, s in enumerate(seatings)]
