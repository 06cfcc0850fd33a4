"""Swiss: a few rounds, each pairing entrants of equal or near score, on boards.

Kinds (`swiss_rules.Mode`), from the spec as it is today:

- 3p (`players` 3): tables of three (`swiss_pairing`).
- 2v2 with `rotate_partners`: tables of four with new partners (`swiss_teams`).
- 2v2 without: each bot is a whole team (it plays both seats of its side, as in the
  brackets), paired as a two-player Swiss (`swiss_teams.pair_teams`). Teams of two
  named bots need the spec to carry teams (the per-format options of issue 20).

`spec.rounds` is the number of Swiss rounds (from 1 to `swiss_rules.max_rounds`);
a default of `swiss_rules.default_rounds` needs options that can be left unset, also
part of that refactor. Every table of round r plays one game on the round's board
(unit `r{r}`, game `<tournament>-r{r}-t{table}-g1`), so no bot is dealt a board
twice and each seat of a board is held at every table. Round r + 1 is paired (its
seed derived from the tournament's) once every game of round r is in; the scheduler
releases a board when its games are all finished, as for every format.

The state holds each round's pairing (entrant indices, in seed order), the points
so far, and the games of the round under way; `rounds_of` turns it into the rounds
`swiss_standings.swiss_standings` ranks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from store.errors import InvalidArgument
from store.records import TournamentSpec
from tournaments.plan import Game, Step, UnitSource, derive_seed
from tournaments.registry import Format
from tournaments.swiss_pairing import Round3, pair_tables
from tournaments.swiss_rules import BYE_POINTS, Mode, least_entries, max_rounds
from tournaments.swiss_standings import RoundRecord, SwissGame, side_points
from tournaments.swiss_teams import PartnerRound, TeamRound, pair_partners, pair_teams

__all__ = ["Swiss", "mode_of", "rounds_of"]


def mode_of(spec: TournamentSpec) -> Mode:
    """What the spec's Swiss pairs."""
    if spec.players == 3:
        return Mode.TABLES
    return Mode.PARTNERS if spec.rotate_partners else Mode.TEAMS


def _sides(mode: Mode, group: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """The entrants of each side of a game, in board order."""
    if mode is Mode.TABLES:
        return tuple((x,) for x in group)
    if mode is Mode.TEAMS:
        return (group[0],), (group[1],)
    return (group[0], group[2]), (group[1], group[3])


def _seats(mode: Mode, group: Sequence[int]) -> tuple[int, ...]:
    """The entrant at each seat: a whole team holds both seats of its side."""
    if mode is Mode.TEAMS:
        return group[0], group[1], group[0], group[1]
    return tuple(group)


def _match_id(spec: TournamentSpec, rnd: int, table: int) -> str:
    return f"{spec.tournament_id}-r{rnd}-t{table}-g1"


def rounds_of(spec: TournamentSpec, state: Mapping[str, Any]) -> list[RoundRecord]:
    """The rounds paired so far, as the standings take them."""
    mode = mode_of(spec)
    return [RoundRecord(tuple(SwissGame(_match_id(spec, r, t), _sides(mode, group))
                              for t, group in enumerate(rnd["groups"], 1)),
                        tuple(rnd["byes"]))
            for r, rnd in enumerate(state["rounds"], 1)]


class Swiss(Format):
    """Rounds of tables (or team games) among near scores, each round on one board."""

    name: ClassVar[str] = "swiss"
    title: ClassVar[str] = "Swiss"

    def least_bots(self, spec: TournamentSpec) -> int:
        """3 bots for tables of three, 2 for whole-bot teams, 4 for rotating partners."""
        return least_entries(mode_of(spec))

    def check(self, spec: TournamentSpec) -> None:
        """Enough bots, rounds the field allows, boards, no options of other formats."""
        mode = mode_of(spec)
        least = least_entries(mode)
        if len(spec.bot_ids) < least:
            raise InvalidArgument(f"bot_ids: a {spec.pool} Swiss needs at least {least} bots, "
                                  f"got {len(spec.bot_ids)}")
        most = max_rounds(mode, len(spec.bot_ids))
        if spec.rounds > most:
            raise InvalidArgument(f"rounds: {len(spec.bot_ids)} bots allow at most {most} "
                                  f"Swiss rounds (each meeting someone new), got {spec.rounds}")
        if spec.duplicate != "boards":
            raise InvalidArgument("duplicate: a Swiss deals every table of a round the "
                                  "round's board ('boards'); replay and fresh are not offered")
        if spec.all_triples:
            raise InvalidArgument("all_triples: only for a 3-player round robin")
        if spec.series_length != 1:
            raise InvalidArgument("series_length: only for elimination brackets")

    def notes(self, spec: TournamentSpec) -> list[str]:
        """How byes score, and whole-bot teams."""
        out = [f"a bot that sits a round out (a bye) scores {BYE_POINTS:g}"]
        if mode_of(spec) is Mode.TEAMS:
            out.append("each bot is a whole team: it plays both seats of its side")
        return out

    def start(self, spec: TournamentSpec, units: UnitSource) -> Step:
        """Pair round 1."""
        state: dict[str, Any] = {"rounds": [], "points": [0.0] * len(spec.bot_ids),
                                 "live": {}, "done": 0, "created": 0}
        games = self._pair(spec, state)
        return self._step(spec, state, games)

    def feed(self, spec: TournamentSpec, state: Mapping[str, Any],
             results: Sequence[Mapping[str, Any]], units: UnitSource) -> Step:
        """Score the results of the round under way; pair the next once all are in."""
        st = {**state, "points": list(state["points"]), "live": dict(state["live"])}
        mode = mode_of(spec)
        groups = st["rounds"][-1]["groups"] if st["rounds"] else []
        for row in results:
            table = st["live"].pop(row["match_id"], None)
            if table is None:
                continue  # not a game of the round under way (or counted already)
            for side, pts in zip(_sides(mode, groups[table]), side_points(row), strict=True):
                for x in side:
                    st["points"][x] += pts
            st["done"] += 1
        games: list[Game] = []
        if not st["live"] and len(st["rounds"]) < spec.rounds:
            games = self._pair(spec, st)
        return self._step(spec, st, games)

    def _pair(self, spec: TournamentSpec, st: dict[str, Any]) -> list[Game]:
        """Pair the next round into `st`; its games."""
        mode = mode_of(spec)
        number = len(st["rounds"]) + 1
        seed = derive_seed(spec.seed, f"pairing-r{number}")
        groups: list[Sequence[int]]
        if mode is Mode.TABLES:
            past3 = [Round3(tuple((g[0], g[1], g[2]) for g in r["groups"]), tuple(r["byes"]))
                     for r in st["rounds"]]
            r3 = pair_tables(st["points"], past3, seed)
            groups, byes = list(r3.tables), r3.byes
        elif mode is Mode.TEAMS:
            past2 = [TeamRound(tuple((g[0], g[1]) for g in r["groups"]), tuple(r["byes"]))
                     for r in st["rounds"]]
            r2 = pair_teams(st["points"], past2, seed)
            groups, byes = list(r2.games), r2.byes
        else:
            past4 = [PartnerRound(tuple((g[0], g[1], g[2], g[3]) for g in r["groups"]),
                                  tuple(r["byes"])) for r in st["rounds"]]
            r4 = pair_partners(st["points"], past4, seed)
            groups, byes = list(r4.tables), r4.byes
        for x in byes:
            st["points"][x] += BYE_POINTS
        st["rounds"] = [*st["rounds"], {"groups": [list(g) for g in groups],
                                        "byes": list(byes)}]
        unit = f"r{number}"
        board = derive_seed(spec.seed, unit)
        bots = spec.bot_ids
        games = [Game(_match_id(spec, number, t), unit,
                      tuple(bots[x] for x in _seats(mode, g)), board)
                 for t, g in enumerate(groups, 1)]
        st["live"] = {g.match_id: t for t, g in enumerate(games)}
        st["created"] += len(games)
        return games

    def _step(self, spec: TournamentSpec, st: dict[str, Any], games: list[Game]) -> Step:
        per_round = len(st["rounds"][0]["groups"]) if st["rounds"] else 0
        to_come = (spec.rounds - len(st["rounds"])) * per_round
        finished = len(st["rounds"]) >= spec.rounds and not st["live"]
        return Step(st, games, finished=finished, total=st["created"] + to_come)
