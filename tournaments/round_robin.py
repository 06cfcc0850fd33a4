"""Round robin: everyone meets everyone, on a schedule fixed by the spec.

Options (`RoundRobinOptions`): `rounds`, how many times the whole schedule is played;
`rotate_partners` (2v2), new partners each round so every bot gets a result of its own;
`all_triples` (3p), every triple of bots instead of a balanced design.

Deals (`spec.duplicate`):

- `boards` (the default): rounds of disjoint tables; all tables of a round play
  one board (one deal seed), one game each, and every round has a new board. No
  bot is ever dealt a board twice, and each seat position of a board is held by
  different bots at different tables, so the luck of the deal cancels across
  tables. 3p: `tournaments.boards.table_schedule` (exactly balanced designs
  where they exist); repetitions rotate every table's seat positions. 2v2: the
  rounds of `tournaments.design.team_pairings`, whose orientation alternates
  between the tables of a round, so each side of a board is held by the first
  and by the second team at half of them. A round is one unit.
- `replay`: each 3p table plays one deal at all six seatings, each 2v2 pairing
  one deal with the teams in both seat pairs: the same bots replay a deal, which
  is sound only if they keep no memory between games. A table or pairing is one
  unit.
- `fresh`: one game per table or pairing, each on its own deal.

The schedule is stored once (`schedule`); steps create its units in order,
keeping at most `IN_FLIGHT` games created and unfinished, so a step's cost does
not grow with the tournament.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from store.errors import InvalidArgument
from store.records import MAX_ROUNDS, TournamentSpec
from tournaments import boards, design
from tournaments.options import Options, option
from tournaments.plan import Game, Step, Unit, UnitSource, derive_seed, pair_games, seatings3
from tournaments.registry import Format

__all__ = ["IN_FLIGHT", "RoundRobin", "RoundRobinOptions", "board_rounds3"]

IN_FLIGHT = 1024  # games created ahead of results: enough for every worker to be busy


@dataclass(frozen=True, slots=True)
class RoundRobinOptions(Options):
    """A round robin's options (module doc)."""

    rounds: int = option(1, f"times through the whole schedule, 1 to {MAX_ROUNDS}",
                         metavar="N")
    rotate_partners: bool = option(False, "2v2: rotate partners, so each bot gets a result "
                                          "of its own")
    all_triples: bool = option(False, "3p: every triple of bots, not a balanced design")

    def __post_init__(self) -> None:
        if not 1 <= self.rounds <= MAX_ROUNDS:
            raise InvalidArgument(f"rounds: must be from 1 to {MAX_ROUNDS}, got {self.rounds}")

    def summary(self) -> list[str]:
        """`2 rounds`, `rotating partners`, `every triple`."""
        return [text for text, on in ((f"{self.rounds} rounds", self.rounds > 1),
                                      ("rotating partners", self.rotate_partners),
                                      ("every triple", self.all_triples)) if on]


def board_rounds3(n: int, all_triples: bool) -> list[tuple[tuple[int, int, int], ...]]:
    """The tables of each round of a 3p round robin on boards (seat-position order)."""
    if all_triples:
        return [r.tables for r in design.rounds_of(design.triple_design(n, True), n)]
    sched = boards.table_schedule(n)
    return [sched.round(i).tables for i in range(sched.rounds)]


def _three(spec: TournamentSpec, o: RoundRobinOptions) -> list[Unit]:
    bots = spec.bot_ids
    out: list[Unit] = []
    if spec.duplicate == "boards":
        rounds = board_rounds3(len(bots), o.all_triples)
        for rep in range(o.rounds):
            for r, tables in enumerate(rounds, 1):
                unit = f"x{rep + 1}-r{r}"
                seed = derive_seed(spec.seed, unit)
                out.append(Unit(unit, tuple(
                    Game(f"{spec.tournament_id}-{unit}-t{t}-g1", unit,
                         tuple(bots[table[(p + rep) % 3]] for p in range(3)), seed)
                    for t, table in enumerate(tables, 1))))
        return out
    tables = design.triple_design(len(bots), o.all_triples)
    rounds_ = design.rounds_of(tables, len(bots))
    for rep in range(o.rounds):
        for rnd in rounds_:
            for t, table in enumerate(rnd.tables):
                unit = f"x{rep + 1}-r{rnd.number}-t{t + 1}"
                seed = derive_seed(spec.seed, unit)
                games = tuple(
                    Game(f"{spec.tournament_id}-{unit}-g{k + 1}", unit,
                         tuple(bots[table[p]] for p in perm), seed)
                    for k, perm in enumerate(seatings3(len(out), spec.replay)))
                out.append(Unit(unit, games))
    return out


def _teams(spec: TournamentSpec, o: RoundRobinOptions) -> list[Unit]:
    bots = spec.bot_ids
    out: list[Unit] = []
    for rep in range(o.rounds):
        for rnd in design.team_pairings(len(bots), o.rotate_partners):
            if spec.duplicate == "boards":
                unit = f"x{rep + 1}-r{rnd.number}"
                seed = derive_seed(spec.seed, unit)
                games = []
                for t, g in enumerate(rnd.games, 1):
                    team0 = (bots[g.team0[0]], bots[g.team0[1]])
                    team1 = (bots[g.team1[0]], bots[g.team1[1]])
                    if rep % 2:  # a repetition swaps every table's sides
                        team0, team1 = team1, team0
                    games.append(Game(f"{spec.tournament_id}-{unit}-t{t}-g1", unit,
                                      (team0[0], team1[0], team0[1], team1[1]), seed))
                out.append(Unit(unit, tuple(games)))
                continue
            for t, g in enumerate(rnd.games):
                unit = f"x{rep + 1}-r{rnd.number}-t{t + 1}"
                team0 = (bots[g.team0[0]], bots[g.team0[1]])
                team1 = (bots[g.team1[0]], bots[g.team1[1]])
                out.append(Unit(unit, tuple(pair_games(spec, unit, team0, team1, len(out)))))
    return out


class RoundRobin(Format[RoundRobinOptions]):
    """Every pair of bots meets (3p tables, or 2v2 opposing teams)."""

    name: ClassVar[str] = "round_robin"
    title: ClassVar[str] = "round robin"
    options_type = RoundRobinOptions

    def least_bots(self, spec: TournamentSpec, options: RoundRobinOptions) -> int:
        """3 for tables of three; 2 for 2v2 (4 with rotating partners)."""
        if spec.players == 3:
            return 3
        return 4 if options.rotate_partners else 2

    def check(self, spec: TournamentSpec, options: RoundRobinOptions) -> None:
        """rotate_partners only for 2v2, all_triples only for 3p."""
        if options.rotate_partners and spec.players != 4:
            raise InvalidArgument("round_robin.rotate_partners: only for a 2v2 round robin")
        if options.all_triples and spec.players != 3:
            raise InvalidArgument("round_robin.all_triples: only for a 3-player round robin")

    def notes(self, spec: TournamentSpec) -> list[str]:
        """Replay's trust, or boards played at one table only (too few bots)."""
        out = super().notes(spec)
        if spec.duplicate != "boards":
            return out
        n = len(spec.bot_ids)
        least = 6 if spec.players == 3 else 8 if self.options(spec).rotate_partners else 4
        if n < least:
            out.append(f"duplicate scoring needs at least {least} bots: with {n}, no two "
                       "tables can play at once, so every table plays a board of its own "
                       "and the luck of the deal does not cancel")
        return out

    def schedule(self, spec: TournamentSpec) -> list[Unit]:
        """Every unit, in play order."""
        o = self.options(spec)
        return _three(spec, o) if spec.players == 3 else _teams(spec, o)

    def start(self, spec: TournamentSpec, units: UnitSource) -> Step:
        """Nothing played: create the first units."""
        count, games = units.size()
        state = {"done": 0, "created": 0, "created_games": 0, "units": count, "games": games}
        return self._fill(state, units)

    def feed(self, spec: TournamentSpec, state: Mapping[str, Any],
             results: Sequence[Mapping[str, Any]], units: UnitSource) -> Step:
        """Count the results, then top the games in flight up again."""
        new = dict(state)
        new["done"] = int(state["done"]) + len(results)
        return self._fill(new, units)

    def _fill(self, state: dict[str, Any], source: UnitSource) -> Step:
        games: list[Game] = []
        per_unit = 0  # games a unit holds, as seen so far (units of one schedule are alike)
        while state["created"] < state["units"]:
            room = IN_FLIGHT - (state["created_games"] + len(games) - state["done"])
            if room <= 0:
                break
            want = max(1, room // per_unit) if per_unit else 1
            batch = source.units(state["created"], state["created"] + want)
            if not batch:
                break
            for unit in batch:
                games.extend(unit.games)
                per_unit = max(per_unit, len(unit.games))
            state["created"] += len(batch)
        state["created_games"] += len(games)
        return Step(state, games, finished=state["done"] >= state["games"], total=state["games"])
