"""Round robin: everyone meets everyone, on a schedule fixed by the spec.

3 players: tables of three from `tournaments.design.triple_design`, arranged in
rounds; each table is one unit (a duplicate set of six seatings, or one game).
2v2: the pairings of `tournaments.design.team_pairings`; each pairing is one
unit (a duplicate pair, or one game). The schedule is fixed in advance and
stored once (`schedule`); steps create its units in order, keeping at most
`IN_FLIGHT` games created and unfinished, so a step's cost does not grow with
the tournament.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from store.errors import InvalidArgument
from store.records import TournamentSpec
from tournaments import design
from tournaments.plan import Game, Step, Unit, UnitSource, derive_seed, pair_games, seatings3
from tournaments.registry import Format

__all__ = ["IN_FLIGHT", "RoundRobin"]

IN_FLIGHT = 1024  # games created ahead of results: enough for every worker to be busy


def _three(spec: TournamentSpec) -> list[Unit]:
    bots = spec.bot_ids
    tables = design.triple_design(len(bots), spec.all_triples)
    rounds = design.rounds_of(tables, len(bots))
    out: list[Unit] = []
    for rep in range(spec.rounds):
        for rnd in rounds:
            for t, table in enumerate(rnd.tables):
                unit = f"x{rep + 1}-r{rnd.number}-t{t + 1}"
                seed = derive_seed(spec.seed, unit)
                games = tuple(
                    Game(f"{spec.tournament_id}-{unit}-g{k + 1}", unit,
                         tuple(bots[table[p]] for p in perm), seed)
                    for k, perm in enumerate(seatings3(len(out), spec.duplicate)))
                out.append(Unit(unit, games))
    return out


def _teams(spec: TournamentSpec) -> list[Unit]:
    bots = spec.bot_ids
    out: list[Unit] = []
    for rep in range(spec.rounds):
        for rnd in design.team_pairings(len(bots), spec.rotate_partners):
            for t, g in enumerate(rnd.games):
                unit = f"x{rep + 1}-r{rnd.number}-t{t + 1}"
                team0 = (bots[g.team0[0]], bots[g.team0[1]])
                team1 = (bots[g.team1[0]], bots[g.team1[1]])
                out.append(Unit(unit, tuple(pair_games(spec, unit, team0, team1, len(out)))))
    return out


class RoundRobin(Format):
    """Every pair of bots meets (3p tables, or 2v2 opposing teams)."""

    name: ClassVar[str] = "round_robin"
    title: ClassVar[str] = "round robin"

    def least_bots(self, spec: TournamentSpec) -> int:
        """3 for tables of three; 2 for 2v2 (4 with rotating partners)."""
        if spec.players == 3:
            return 3
        return 4 if spec.rotate_partners else 2

    def check(self, spec: TournamentSpec) -> None:
        """Enough bots; rotate_partners only for 2v2, all_triples only for 3p."""
        least = self.least_bots(spec)
        if len(spec.bot_ids) < least:
            raise InvalidArgument(f"bot_ids: a {spec.pool} round robin needs at least {least} "
                                  f"bots, got {len(spec.bot_ids)}")
        if spec.rotate_partners and spec.players != 4:
            raise InvalidArgument("rotate_partners: only for a 2v2 round robin")
        if spec.all_triples and spec.players != 3:
            raise InvalidArgument("all_triples: only for a 3-player round robin")

    def schedule(self, spec: TournamentSpec) -> list[Unit]:
        """Every unit, in play order."""
        return _three(spec) if spec.players == 3 else _teams(spec)

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
        while state["created"] < state["units"]:
            room = IN_FLIGHT - (state["created_games"] + len(games) - state["done"])
            if room <= 0:
                break
            batch = source.units(state["created"], state["created"] + room // 6 + 1)
            if not batch:
                break
            for unit in batch:
                games.extend(unit.games)
            state["created"] += len(batch)
        state["created_games"] += len(games)
        return Step(state, games, finished=state["done"] >= state["games"], total=state["games"])
