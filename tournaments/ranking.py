"""What a format may show beside the common standings: its own ranking (entrants ranked
by its measures, each explained) and its rounds (each round's tables, on one board).

Formats give these through `Format.ranking` and `Format.rounds` (none by default); the
referee encodes them as `Standings.ranking` and `Standings.rounds` and the pages draw
them without knowing the format. Both are made from the results one audience may see
(`store.tournaments.standings_inputs`): a result or score of a board not yet released
never reaches them; a pairing is public from the moment it is made.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Column", "EntrantRound", "PlayRound", "Ranking", "RankingRow", "RoundTable"]


@dataclass(frozen=True, slots=True)
class Column:
    """One measure of a ranking: a key, a title (and a short one, for a narrow screen) and
    a sentence that explains it."""

    key: str
    title: str
    explanation: str
    short: str = ""


@dataclass(frozen=True, slots=True)
class EntrantRound:
    """An entrant's round: its table (0 for a bye) and the points it made there, None
    while that is not public (or not played yet)."""

    table: int
    points: float | None


@dataclass(frozen=True, slots=True)
class RankingRow:
    """One entrant (a bot, or a team's bots) with its rank and a value per column."""

    rank: int
    bot_ids: tuple[str, ...]
    values: tuple[float, ...]
    games: int
    byes: int
    rounds: tuple[EntrantRound, ...] = ()


@dataclass(frozen=True, slots=True)
class Ranking:
    """Entrants best first, ranked by the columns in order (each breaks the ties of the
    ones before it)."""

    columns: tuple[Column, ...]
    rows: tuple[RankingRow, ...]


@dataclass(frozen=True, slots=True)
class RoundTable:
    """One table of a round: its game, the bot at each seat, and each side's points once
    the result is public (sides in seat order: 3p one per seat, 2v2 seats 0+2, 1+3)."""

    match_id: str
    bot_ids: tuple[str, ...]
    points: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class PlayRound:
    """A round as paired: its number, its unit (every table plays the unit's board), its
    tables and the entrants sitting it out."""

    number: int
    unit: str
    tables: tuple[RoundTable, ...]
    byes: tuple[tuple[str, ...], ...] = ()
