"""Standings from finished games: per-bot totals, a crosstable, and duplicate-set rankings.

Pure aggregation over game results, each a mapping (or `GameResult`) like
`{"match_id": "t1-r1-g1", "bot_ids": [bot per seat], "players": 3 or 4,
"final": [score per seat (3p) or per team (4p)], "winner": seat or team or
None, "placement": [place per seat, 1 best], "end": "...", "group": "..."}`.
In a 4-player game seat s plays for team s % 2, and a bot that fills both seats
of its team counts once in that game.

Every function depends only on the set of results: their order does not matter,
and a result given twice with the same match id counts once (a result is
recorded once per game id); two different results under one id are an error.

Definitions: a bot *wins* a game when its seat (3p) or team (4p) is the
game's winner; it *draws* when the game has no winner and it shares first
place, nobody having forfeited; it *wins by forfeit, shared* when another bot
forfeited and it shares first place with a third (3p: a forfeit leaves the two
others level, at 0-0 early in a game): never a draw, and half a win, as any
shared first place; otherwise it loses. Its *points* are its seat's or team's
final score.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from store.errors import InvalidArgument

__all__ = [
    "STATS",
    "GameResult",
    "HeadToHead",
    "Standing",
    "Tally",
    "add_tallies",
    "crosstable",
    "crosstable_of",
    "normalize",
    "rank_group",
    "standings",
    "standings_of",
    "tally",
    "totals",
]


@dataclass(frozen=True, slots=True)
class GameResult:
    """One finished game, validated; `sides` maps each bot to its seat (3p) or team (4p)."""

    match_id: str
    bot_ids: tuple[str, ...]
    players: int
    final: tuple[int, ...]
    winner: int | None
    placement: tuple[int, ...]
    end: str = ""
    group: str = ""
    forfeit: int | None = None  # the seat that forfeited, if one did

    def __post_init__(self) -> None:
        where = f"result {self.match_id!r}"
        if self.players not in (3, 4):
            raise InvalidArgument(f"{where}: players must be 3 or 4, got {self.players}")
        sides = 3 if self.players == 3 else 2
        if len(self.bot_ids) != self.players or len(self.placement) != self.players:
            raise InvalidArgument(f"{where}: bot_ids and placement need one entry per seat")
        if len(self.final) != sides:
            raise InvalidArgument(f"{where}: final needs {sides} scores, got {len(self.final)}")
        if self.winner is not None and not 0 <= self.winner < sides:
            raise InvalidArgument(f"{where}: winner must be None or 0..{sides - 1}")
        seen: dict[str, int] = {}
        for seat, bot in enumerate(self.bot_ids):
            if seen.setdefault(bot, self.side_of_seat(seat)) != self.side_of_seat(seat):
                raise InvalidArgument(f"{where}: bot {bot!r} sits on two sides")

    @staticmethod
    def of(raw: GameResult | Mapping[str, Any]) -> GameResult:
        """A validated result from a result mapping (or the result itself)."""
        if isinstance(raw, GameResult):
            return raw
        try:
            winner = raw.get("winner")
            return GameResult(
                match_id=str(raw["match_id"]),
                bot_ids=tuple(str(b) for b in raw["bot_ids"]),
                players=int(raw["players"]),
                final=tuple(int(x) for x in raw["final"]),
                winner=None if winner is None else int(winner),
                placement=tuple(int(x) for x in raw["placement"]),
                end=str(raw.get("end", "")),
                group=str(raw.get("group", "")),
                forfeit=_forfeit_seat(raw.get("forfeit")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidArgument(f"malformed game result {dict(raw)!r}: {exc!r}") from None

    def side_of_seat(self, seat: int) -> int:
        """The seat itself in 3p, the team (seat % 2) in 4p."""
        return seat if self.players == 3 else seat % 2

    @property
    def sides(self) -> dict[str, int]:
        """Each distinct bot and the side (seat or team) it plays for."""
        return {bot: self.side_of_seat(seat) for seat, bot in enumerate(self.bot_ids)}

    def place(self, bot: str) -> int:
        """The bot's place in this game (1 best; shared places are equal)."""
        return self.placement[self.bot_ids.index(bot)]

    def points(self, bot: str) -> int:
        """The final score of the bot's seat or team."""
        return self.final[self.sides[bot]]


def _forfeit_seat(forfeit: Any) -> int | None:
    """The seat of a result's `forfeit` entry ({"seat", "reason"} or None)."""
    return None if not forfeit else int(forfeit["seat"])


def normalize(results: Iterable[GameResult | Mapping[str, Any]]) -> tuple[GameResult, ...]:
    """Validated results sorted by match id, a repeated identical result kept once."""
    by_id: dict[str, GameResult] = {}
    for raw in results:
        res = GameResult.of(raw)
        if by_id.setdefault(res.match_id, res) != res:
            raise InvalidArgument(f"two different results for match {res.match_id!r}")
    return tuple(by_id[k] for k in sorted(by_id))


@dataclass(frozen=True, slots=True)
class Standing:
    """One bot's totals over the results."""

    bot_id: str
    games: int
    wins: int
    draws: int
    losses: int
    points: int
    forfeit_wins: int = 0  # won by another's forfeit, first place shared (not in draws)

    @property
    def score(self) -> float:
        """Wins plus half of each shared first place (the draws and the wins by forfeit
        shared): what the table is ordered by first."""
        return self.wins + (self.draws + self.forfeit_wins) / 2


@dataclass(frozen=True, slots=True)
class HeadToHead:
    """Two bots (a < b) as opponents: games, and how often each finished ahead of the other."""

    games: int
    a_ahead: int
    b_ahead: int


def _outcome(res: GameResult, bot: str) -> int:
    """1 win, 0 draw, -1 loss for this bot in this game."""
    if res.winner is None:
        return 0 if res.place(bot) == 1 else -1
    return 1 if res.sides[bot] == res.winner else -1


STATS = ("games", "wins", "draws", "losses", "points", "forfeits", "forfeit_wins")


@dataclass(frozen=True, slots=True)
class Tally:
    """What one game adds to the running totals: per-bot stats and per-pair counts.

    `bots[bot]` holds the increments of `STATS`; `pairs[(a, b)]` (a < b, opponents
    only) holds (games, a ahead, b ahead). Totals are sums of tallies, so a
    scheduler can keep them up to date one game at a time.
    """

    bots: dict[str, tuple[int, ...]]
    pairs: dict[tuple[str, str], tuple[int, int, int]]


def tally(raw: GameResult | Mapping[str, Any]) -> Tally:
    """The increments one finished game makes."""
    res = GameResult.of(raw)
    forfeiter = None if res.forfeit is None else res.bot_ids[res.forfeit]
    bots: dict[str, tuple[int, ...]] = {}
    for bot in res.sides:
        outcome = _outcome(res, bot)
        shared = outcome == 0 and forfeiter is not None  # level at the top after a forfeit
        bots[bot] = (1, int(outcome == 1), int(outcome == 0 and not shared),
                     int(outcome == -1), res.points(bot), int(bot == forfeiter), int(shared))
    pairs: dict[tuple[str, str], tuple[int, int, int]] = {}
    sides = res.sides
    for a, b in itertools.combinations(sorted(sides), 2):
        if sides[a] == sides[b]:
            continue  # partners are not opponents
        pa, pb = res.place(a), res.place(b)
        pairs[(a, b)] = (1, int(pa < pb), int(pb < pa))
    return Tally(bots, pairs)


def add_tallies(tallies: Iterable[Tally]) -> Tally:
    """The sum of several tallies (the totals over their games)."""
    bots: dict[str, list[int]] = {}
    pairs: dict[tuple[str, str], list[int]] = {}
    for t in tallies:
        for bot, inc in t.bots.items():
            row = bots.setdefault(bot, [0] * len(STATS))
            for i, v in enumerate(inc):
                row[i] += v
        for pair, cnt in t.pairs.items():
            cell = pairs.setdefault(pair, [0, 0, 0])
            for i, v in enumerate(cnt):
                cell[i] += v
    return Tally({b: tuple(v) for b, v in bots.items()},
                 {p: (c[0], c[1], c[2]) for p, c in pairs.items()})


def totals(results: Iterable[GameResult | Mapping[str, Any]]) -> Tally:
    """The totals over a set of results (each match id once; see the module doc)."""
    return add_tallies(tally(res) for res in normalize(results))


def standings_of(total: Tally) -> tuple[Standing, ...]:
    """Per-bot totals, best first: by score (wins + shared firsts/2), then points, then
    bot id."""
    fw = STATS.index("forfeit_wins")
    rows = [Standing(bot, row[0], row[1], row[2], row[3], row[4], forfeit_wins=row[fw])
            for bot, row in total.bots.items()]
    rows.sort(key=lambda s: (-(2 * s.wins + s.draws + s.forfeit_wins), -s.points, s.bot_id))
    return tuple(rows)


def standings(results: Iterable[GameResult | Mapping[str, Any]]) -> tuple[Standing, ...]:
    """Per-bot totals, best first: by score (wins + shared firsts/2), then points, then
    bot id."""
    return standings_of(totals(results))


def crosstable_of(total: Tally) -> dict[tuple[str, str], HeadToHead]:
    """The head-to-head counts of a total, by pair (a < b)."""
    return {key: HeadToHead(*total.pairs[key]) for key in sorted(total.pairs)}


def crosstable(
    results: Iterable[GameResult | Mapping[str, Any]],
) -> dict[tuple[str, str], HeadToHead]:
    """Every pair of bots that met as opponents (other seats in 3p, the other team in 4p)."""
    return crosstable_of(totals(results))


def rank_group(
    results: Iterable[GameResult | Mapping[str, Any]], seeds: Sequence[str] | Mapping[str, int]
) -> tuple[str, ...]:
    """The bots of one duplicate set (3p table, 2v2 pair) ranked, its winner first.

    Most game wins over the set, ties broken by the larger total score (for a
    2v2 pair: the better score difference), then by the better seed. `seeds`
    lists bots in seed order, or maps each bot to its seed (lower is better).
    """
    rank = seeds if isinstance(seeds, Mapping) else {b: i for i, b in enumerate(seeds)}
    wins: dict[str, int] = {}
    points: dict[str, int] = {}
    for res in normalize(results):
        for bot in res.sides:
            wins[bot] = wins.get(bot, 0) + (_outcome(res, bot) == 1)
            points[bot] = points.get(bot, 0) + res.points(bot)
    missing = sorted(b for b in wins if b not in rank)
    if missing:
        raise InvalidArgument(f"seeds: no seed for {', '.join(missing)}")
    return tuple(sorted(wins, key=lambda b: (-wins[b], -points[b], rank[b])))
