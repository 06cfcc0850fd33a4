"""Swiss: a few rounds, each pairing entrants of equal or near score, on boards.

Options (`SwissOptions`): `rounds` (default `swiss_rules.default_rounds`, ceil(log2 n)
+ 1, at most `swiss_rules.max_rounds`, the rounds in which everyone can still meet
someone new); for 2v2, `teams` (fixed teams of two named bots) or `rotate_partners`.

Kinds (`swiss_rules.Mode`), the entrants a round pairs:

- 3p (`players` 3): bots at tables of three (`swiss_pairing`).
- 2v2 with `teams`: the teams, paired as a two-player Swiss (`swiss_teams.pair_teams`);
  team i holds one seat pair with its two bots.
- 2v2 with `rotate_partners`: bots at tables of four with new partners (`swiss_teams`).
- 2v2 with neither: each bot is a whole team (it plays both seats of its side, as in
  the brackets), paired as fixed teams are.

Entrants are in seed order: the bots as seeded (`spec.seeding`, by pool rating by
default), teams by the mean seed of their two bots.

Every table of round r plays one game on the round's board (unit `r{r}`, game
`<tournament>-r{r}-t{table}-g1`), so no bot is dealt a board twice and each seat of a
board is held at every table. Round r + 1 is paired (its pairing seed derived from
the tournament's) once every game of round r is in; the scheduler releases a board
when its games are all finished, as for every format, so by the time a pairing is
made (and shown) the board it was scored on is public.

The state holds each round's pairing (entrant indices, in seed order), the points
so far, and the games of the round under way; `rounds_of` turns it into the rounds
`swiss_standings.swiss_standings` ranks. The standings (`ranking`) and the rounds'
tables (`rounds`) are made from the results the caller may see, never from the
state's points, which count every recorded result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from store.errors import InvalidArgument
from store.records import MAX_ROUNDS, TournamentSpec
from tournaments.options import Options, option
from tournaments.plan import Game, Step, UnitSource, derive_seed
from tournaments.ranking import (
    Column,
    EntrantRound,
    PlayRound,
    Ranking,
    RankingRow,
    RoundTable,
)
from tournaments.registry import Format
from tournaments.swiss_rules import (
    BYE_POINTS,
    Mode,
    default_rounds,
    least_entries,
    max_rounds,
)
from tournaments.swiss_standings import (
    TIEBREAKS,
    RoundRecord,
    SwissGame,
    side_points,
    swiss_standings,
)

__all__ = ["Swiss", "SwissOptions", "Team", "entrants", "mode_of", "parse_teams", "rounds_of"]

_TITLES = {"points": ("Points", "Pts"), "buchholz": ("Buchholz", "BH"),
           "duplicate": ("Duplicate", "Dup"), "rating": ("Rating", "Rtg")}


def parse_teams(text: str) -> list[dict[str, list[str]]]:
    """`A+B,C+D` (bot names or ids) as the JSON form of `SwissOptions.teams`."""
    out = []
    for i, part in enumerate(text.split(","), 1):
        if not part.strip():
            raise ValueError(f"team {i} is empty; write teams as A+B,C+D")
        out.append({"bot_ids": [b.strip() for b in part.split("+")]})
    return out


@dataclass(frozen=True, slots=True)
class Team(Options):
    """Two bots that play as one team, by id or name (stored as ids, once checked)."""

    bot_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SwissOptions(Options):
    """A Swiss's options (module doc)."""

    rounds: int | None = option(
        None, "rounds to play, from 1 to what the field allows (default: ceil(log2 n) + 1, "
              "n the bots or teams)", metavar="N")
    teams: tuple[Team, ...] = option(
        (), "2v2: fixed teams of two bots, every bot in one (default: each bot is a whole "
            "team)", metavar="A+B,C+D", parse=parse_teams)
    rotate_partners: bool = option(
        False, "2v2: bots with rotating partners, never the same partner twice while the "
               "field allows")

    def __post_init__(self) -> None:
        if self.rounds is not None and not 1 <= self.rounds <= MAX_ROUNDS:
            raise InvalidArgument(f"rounds: must be from 1 to {MAX_ROUNDS} (and at most what "
                                  f"the field allows), got {self.rounds}")
        where: dict[str, int] = {}
        for i, team in enumerate(self.teams, 1):
            if len(team.bot_ids) != 2:
                raise InvalidArgument(f"teams: team {i} names {len(team.bot_ids)} bots; a "
                                      "team is two bots")
            a, b = team.bot_ids
            if a.casefold() == b.casefold():
                raise InvalidArgument(f"teams: team {i} names {a[:64]!r} twice; a team is two "
                                      "different bots")
            for x in team.bot_ids:
                if x.casefold() in where:
                    raise InvalidArgument(f"teams: {x[:64]!r} is in team {where[x.casefold()]} "
                                          f"and in team {i}; a bot plays in one team")
                where[x.casefold()] = i
        if self.teams and self.rotate_partners:
            raise InvalidArgument("rotate_partners: not with teams (a fixed team keeps its "
                                  "partners)")

    def summary(self) -> list[str]:
        """`5 rounds`, `4 fixed teams`, `rotating partners`."""
        out = [f"{self.rounds} round{'s' if self.rounds != 1 else ''}"] if self.rounds else []
        if self.teams:
            out.append(f"{len(self.teams)} fixed teams")
        if self.rotate_partners:
            out.append("rotating partners")
        return out


def mode_of(spec: TournamentSpec, options: SwissOptions) -> Mode:
    """What the spec's Swiss pairs."""
    if spec.players == 3:
        return Mode.TABLES
    return Mode.PARTNERS if options.rotate_partners else Mode.TEAMS


def entrants(spec: TournamentSpec, options: SwissOptions) -> list[tuple[str, ...]]:
    """The bots of each entrant, in seed order: a team's two, or one bot."""
    if options.teams:
        return [tuple(t.bot_ids) for t in options.teams]
    return [(b,) for b in spec.bot_ids]


def _sides(mode: Mode, group: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """The entrants of each side of a game, in board order."""
    if mode is Mode.TABLES:
        return tuple((x,) for x in group)
    if mode is Mode.TEAMS:
        return (group[0],), (group[1],)
    return (group[0], group[2]), (group[1], group[3])


def _seats(mode: Mode, group: Sequence[int], ents: Sequence[tuple[str, ...]]
           ) -> tuple[str, ...]:
    """The bot at each seat: a team's bots hold the seats of its side (a whole-bot team,
    both of them)."""
    if mode is Mode.TEAMS:
        first, second = ents[group[0]], ents[group[1]]
        return first[0], second[0], first[-1], second[-1]
    return tuple(ents[x][0] for x in group)


def _match_id(spec: TournamentSpec, rnd: int, table: int) -> str:
    return f"{spec.tournament_id}-r{rnd}-t{table}-g1"


def rounds_of(spec: TournamentSpec, state: Mapping[str, Any],
              options: SwissOptions | None = None) -> list[RoundRecord]:
    """The rounds paired so far, as the standings take them."""
    mode = mode_of(spec, options or SwissOptions.from_json(spec.options))
    return [RoundRecord(tuple(SwissGame(_match_id(spec, r, t), _sides(mode, group))
                              for t, group in enumerate(rnd["groups"], 1)),
                        tuple(rnd["byes"]))
            for r, rnd in enumerate(state["rounds"], 1)]


class Swiss(Format[SwissOptions]):
    """Rounds of tables (or team games) among near scores, each round on one board."""

    name: ClassVar[str] = "swiss"
    title: ClassVar[str] = "Swiss"
    options_type = SwissOptions
    seeded: ClassVar[bool] = True  # the seeds fold the first round and break the last tie
    deals: ClassVar[tuple[str, ...]] = ("boards",)

    def least_bots(self, spec: TournamentSpec, options: SwissOptions) -> int:
        """3 bots for tables of three, 2 for whole-bot teams, 4 for two teams of two or
        rotating partners."""
        if options.teams and spec.players == 4:
            return 4
        return least_entries(mode_of(spec, options))

    def check(self, spec: TournamentSpec, options: SwissOptions) -> None:
        """2v2 options only for 2v2, teams of the tournament's bots, rounds the field
        allows."""
        if spec.players == 3 and (options.teams or options.rotate_partners):
            field = "teams" if options.teams else "rotate_partners"
            raise InvalidArgument(f"swiss.{field}: only for 2v2 (players 4)")
        n = len(_team_ids(spec, options)) if options.teams else len(spec.bot_ids)
        most = max_rounds(mode_of(spec, options), n)
        if options.rounds is not None and options.rounds > most:
            what = "teams" if options.teams else "bots"
            rounds = "round" if most == 1 else "rounds"
            raise InvalidArgument(f"swiss.rounds: {n} {what} allow at most {most} Swiss "
                                  f"{rounds} (each meeting someone new), got {options.rounds}")

    def settle(self, spec: TournamentSpec, options: SwissOptions) -> SwissOptions:
        """Teams as bot ids in seed order; the default number of rounds for the field."""
        teams = options.teams
        if teams:
            seed = {b: i for i, b in enumerate(spec.bot_ids)}
            ids = sorted(_team_ids(spec, options),
                         key=lambda t: (seed[t[0]] + seed[t[1]], min(seed[t[0]], seed[t[1]])))
            teams = tuple(Team(t) for t in ids)
        n = len(teams) if teams else len(spec.bot_ids)
        rounds = options.rounds or default_rounds(mode_of(spec, options), n)
        return SwissOptions(rounds=rounds, teams=teams, rotate_partners=options.rotate_partners)

    def notes(self, spec: TournamentSpec) -> list[str]:
        """How byes score (when the field has them), whole-bot teams, groups kept apart."""
        options = self.options(spec)
        mode = mode_of(spec, options)
        n = len(entrants(spec, options))
        per_table = {Mode.TABLES: 3, Mode.TEAMS: 2, Mode.PARTNERS: 4}[mode]
        out = super().notes(spec)
        if n % per_table:
            sit = "sits" if n % per_table == 1 else "sit"
            out.append(f"{n % per_table} of the {n} entrants {sit} each round out (a bye), "
                       f"never twice while another has not; a bye scores {BYE_POINTS:g}")
        if mode is Mode.TEAMS and not options.teams:
            out.append("each bot is a whole team: it plays both seats of its side")
        return out

    # ------------------------------------------------------------- steps

    def start(self, spec: TournamentSpec, units: UnitSource) -> Step:
        """Pair round 1."""
        options = self.options(spec)
        state: dict[str, Any] = {"rounds": [], "points": [0.0] * len(entrants(spec, options)),
                                 "live": {}, "done": 0, "created": 0}
        games = self._pair(spec, options, state)
        return self._step(spec, options, state, games)

    def feed(self, spec: TournamentSpec, state: Mapping[str, Any],
             results: Sequence[Mapping[str, Any]], units: UnitSource) -> Step:
        """Score the results of the round under way; pair the next once all are in."""
        options = self.options(spec)
        st = {**state, "points": list(state["points"]), "live": dict(state["live"])}
        mode = mode_of(spec, options)
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
        if not st["live"] and len(st["rounds"]) < _rounds(spec, options):
            games = self._pair(spec, options, st)
        return self._step(spec, options, st, games)

    def _pair(self, spec: TournamentSpec, options: SwissOptions,
              st: dict[str, Any]) -> list[Game]:
        """Pair the next round into `st`; its games."""
        # Imported here: the pairing's search needs numpy and scipy (0.5 s to load), which
        # a process that only reads the registry (the CLI) should not pay for.
        from tournaments.swiss_pairing import Round3, pair_tables
        from tournaments.swiss_teams import PartnerRound, TeamRound, pair_partners, pair_teams

        mode = mode_of(spec, options)
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
        ents = entrants(spec, options)
        games = [Game(_match_id(spec, number, t), unit, _seats(mode, g, ents), board)
                 for t, g in enumerate(groups, 1)]
        st["live"] = {g.match_id: t for t, g in enumerate(games)}
        st["created"] += len(games)
        return games

    def _step(self, spec: TournamentSpec, options: SwissOptions, st: dict[str, Any],
              games: list[Game]) -> Step:
        rounds = _rounds(spec, options)
        per_round = len(st["rounds"][0]["groups"]) if st["rounds"] else 0
        to_come = (rounds - len(st["rounds"])) * per_round
        finished = len(st["rounds"]) >= rounds and not st["live"]
        return Step(st, games, finished=finished, total=st["created"] + to_come)

    # -------------------------------------------------------------- view

    def ranking(self, spec: TournamentSpec, state: Mapping[str, Any],
                results: Mapping[str, Mapping[str, Any]],
                ratings: Mapping[str, float]) -> Ranking:
        """Points, then Buchholz, duplicate and rating (`swiss_standings.TIEBREAKS`), with
        each entrant's rounds: over the results given (what the caller may see)."""
        options = self.options(spec)
        ents = entrants(spec, options)
        rounds = rounds_of(spec, state, options)
        points = {g.match_id: side_points(results[g.match_id])
                  for rnd in rounds for g in rnd.games if g.match_id in results}
        mean = [sum(ratings.get(b, 0.0) for b in e) / len(e) for e in ents]
        per: list[list[EntrantRound]] = [[] for _ in ents]
        for rnd in rounds:
            for t, g in enumerate(rnd.games, 1):
                got = points.get(g.match_id)
                for s, side in enumerate(g.sides):
                    for e in side:
                        per[e].append(EntrantRound(t, None if got is None else got[s]))
            for e in rnd.byes:
                per[e].append(EntrantRound(0, BYE_POINTS))
        rows = swiss_standings(len(ents), rounds, points, mean)
        columns = tuple(Column(key, _TITLES[key][0], text, _TITLES[key][1])
                        for key, text in TIEBREAKS)
        return Ranking(columns, tuple(
            RankingRow(row.rank, ents[row.entry],
                       (row.points, row.buchholz, round(row.duplicate, 4), round(row.rating, 1)),
                       row.games, row.byes, tuple(per[row.entry]))
            for row in rows))

    def rounds(self, spec: TournamentSpec, state: Mapping[str, Any],
               results: Mapping[str, Mapping[str, Any]]) -> list[PlayRound]:
        """Every round paired so far: its tables (each side's points once public) and
        byes."""
        options = self.options(spec)
        mode = mode_of(spec, options)
        ents = entrants(spec, options)
        out = []
        for r, rnd in enumerate(state["rounds"], 1):
            tables = []
            for t, group in enumerate(rnd["groups"], 1):
                mid = _match_id(spec, r, t)
                row = results.get(mid)
                tables.append(RoundTable(mid, _seats(mode, group, ents),
                                         side_points(row) if row is not None else ()))
            out.append(PlayRound(r, f"r{r}", tuple(tables),
                                 tuple(ents[e] for e in rnd["byes"])))
        return out


def _rounds(spec: TournamentSpec, options: SwissOptions) -> int:
    """The rounds to play (settled when the spec was made; the default if not)."""
    if options.rounds is not None:
        return options.rounds
    n = len(options.teams) if options.teams else len(spec.bot_ids)
    return default_rounds(mode_of(spec, options), n)


def _team_ids(spec: TournamentSpec, options: SwissOptions) -> list[tuple[str, str]]:
    """The teams as bot ids (named by id or name); InvalidArgument naming the field when a
    team names a bot not in the tournament, or one twice, or a bot is in no team."""
    index: dict[str, str] = {}
    for bot_id, name in zip(spec.bot_ids, spec.names, strict=True):
        index[bot_id.casefold()] = bot_id
        index.setdefault(name.casefold(), bot_id)
    names = dict(zip(spec.bot_ids, spec.names, strict=True))
    where: dict[str, int] = {}
    out = []
    for t, team in enumerate(options.teams, 1):
        ids = []
        for x in team.bot_ids:
            found = index.get(x.casefold())
            if found is None:
                raise InvalidArgument(f"swiss.teams: team {t} names {x[:64]!r}, which is not "
                                      "one of the tournament's bots (bot_ids)")
            bot_id = found
            if where.get(bot_id) == t:
                raise InvalidArgument(f"swiss.teams: team {t} names {names[bot_id]} twice; a "
                                      "team is two different bots")
            if bot_id in where:
                raise InvalidArgument(f"swiss.teams: {x[:64]!r} is in team {where[bot_id]} "
                                      f"and in team {t}; a bot plays in one team")
            where[bot_id] = t
            ids.append(bot_id)
        out.append((ids[0], ids[1]))
    for bot_id in spec.bot_ids:
        if bot_id not in where:
            raise InvalidArgument(f"swiss.teams: {names[bot_id]} is in bot_ids but in no team; "
                                  "with teams, every bot plays in one")
    return out

