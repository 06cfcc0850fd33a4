"""What the bracket formats share: planning a bracket match by match, incrementally.

Options (`BracketOptions`): `series_length`, N of a best-of-N series (odd).

A bracket match is played in stages: a 3p table plays all its `series_length`
duplicate sets at once and is ranked by `standings.rank_group` over them; a 2v2
match plays one duplicate pair at a time until one side has won a majority of
`series_length` pairs. The state (a JSON object) holds each decided match's
ranking, each series' pair winners, and the results of stages under way; a step
looks only at the results it is given, and re-resolves the bracket only when a
match was decided.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from store.errors import InvalidArgument
from store.records import TournamentSpec
from tournaments import bracket as brk
from tournaments.options import Options, option
from tournaments.plan import Game, Plan, Step, UnitSource, derive_seed, pair_games, seatings3
from tournaments.registry import Format
from tournaments.standings import rank_group

__all__ = ["MAX_SERIES", "BracketFormat", "BracketOptions"]

MAX_SERIES = 99


@dataclass(frozen=True, slots=True)
class BracketOptions(Options):
    """A bracket's options (module doc)."""

    series_length: int = option(
        1, f"best of N duplicate sets per match (N odd, 1 to {MAX_SERIES})",
        flag="series", metavar="N")

    def __post_init__(self) -> None:
        n = self.series_length
        if n < 1 or n % 2 == 0 or n > MAX_SERIES:
            raise InvalidArgument(
                f"series_length: must be an odd number from 1 to {MAX_SERIES}, got {n}")

    def summary(self) -> list[str]:
        """`best of 3`."""
        return [f"best of {self.series_length}"] if self.series_length > 1 else []

_ROW_KEYS = ("match_id", "bot_ids", "players", "final", "winner", "placement", "end", "forfeit")


class BracketFormat(Format[BracketOptions]):
    """A knock-out bracket of `kind` for 2v2 series, or tables of three (3p)."""

    kind: ClassVar[brk.Kind]
    seeded: ClassVar[bool] = True
    options_type = BracketOptions

    def _series(self, spec: TournamentSpec) -> int:
        return self.options(spec).series_length

    def _kind(self, spec: TournamentSpec) -> brk.Kind:
        return brk.Kind.TABLES if spec.players == 3 else self.kind

    def _bracket(self, spec: TournamentSpec) -> brk.Bracket:
        return brk.build(self._kind(spec), spec.bot_ids)

    # ------------------------------------------------------------- steps

    def start(self, spec: TournamentSpec, units: UnitSource) -> Step:
        """Create the games of every match ready at the start."""
        state: dict[str, Any] = {"done": 0, "created": 0, "outcomes": {}, "pairs": {},
                                 "stage": {}, "live": {}, "games": {}}
        games: list[Game] = []
        self._open_ready(spec, state, self._resolve(spec, state), games)
        return self._step(spec, state, games)

    def feed(self, spec: TournamentSpec, state: Mapping[str, Any],
             results: Sequence[Mapping[str, Any]], units: UnitSource) -> Step:
        """Fold in results; decide finished stages; open newly ready matches."""
        st: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v)
                              for k, v in state.items()}
        games: list[Game] = []
        decided = False
        for row in results:
            bm = st["live"].pop(row["match_id"], None)
            if bm is None:
                continue  # not a game of this bracket (or counted already)
            st["done"] += 1
            stage = st["stage"][bm] = dict(st["stage"][bm])
            stage["rows"] = {**stage["rows"], row["match_id"]: {k: row.get(k) for k in _ROW_KEYS}}
            if len(stage["rows"]) == stage["need"]:
                decided |= self._finish_stage(spec, st, bm, games)
        if decided:
            self._open_ready(spec, st, self._resolve(spec, st), games)
        return self._step(spec, st, games)

    def _finish_stage(self, spec: TournamentSpec, st: dict[str, Any], bm: str,
                      games: list[Game]) -> bool:
        """A stage is complete: rank the match, or score the pair; True if the match is
        decided."""
        seeds = {b: i for i, b in enumerate(spec.bot_ids)}
        stage = st["stage"].pop(bm)
        rows = list(stage["rows"].values())
        if spec.players == 3:
            st["outcomes"] = {**st["outcomes"], bm: list(rank_group(rows, seeds))}
            return True
        a, b = stage["who"]
        winners = [*st["pairs"].get(bm, []), rank_group(rows, seeds)[0]]
        st["pairs"] = {**st["pairs"], bm: winners}
        series = brk.series_state(a, b, winners, self._series(spec))
        if series.decided:
            assert series.winner is not None
            st["outcomes"] = {**st["outcomes"],
                              bm: [series.winner, b if series.winner == a else a]}
            return True
        self._open_pair(spec, st, bm, (a, b), len(winners) + 1, games)
        return False

    def _open_ready(self, spec: TournamentSpec, st: dict[str, Any], state: brk.BracketState,
                    games: list[Game]) -> None:
        """Create the first stage of every ready match that has none yet."""
        for ms in state.ready():
            bm = ms.match.id
            if bm in st["games"]:
                continue
            if spec.players == 3:
                self._open_table(spec, st, bm, ms.participants, games)
            else:
                a, b = ms.participants
                self._open_pair(spec, st, bm, (a, b), 1, games)

    def _open_table(self, spec: TournamentSpec, st: dict[str, Any], bm: str,
                    who: tuple[str, ...], games: list[Game]) -> None:
        seeds = {b: i for i, b in enumerate(spec.bot_ids)}
        new: list[Game] = []
        for s in range(self._series(spec)):
            unit = f"{bm}-s{s + 1}"
            seed = derive_seed(spec.seed, unit)
            for k, perm in enumerate(seatings3(seeds[who[0]] + s, spec.replay)):
                seats = tuple(who[p] for p in perm)
                new.append(Game(f"{spec.tournament_id}-{unit}-g{k + 1}", unit, seats, seed, bm))
        self._add(st, bm, who, new, games)

    def _open_pair(self, spec: TournamentSpec, st: dict[str, Any], bm: str,
                   who: tuple[str, str], pair: int, games: list[Game]) -> None:
        a, b = who
        new = pair_games(spec, f"{bm}-p{pair}", (a, a), (b, b), pair - 1, bm)
        self._add(st, bm, who, new, games)

    def _add(self, st: dict[str, Any], bm: str, who: tuple[str, ...], new: list[Game],
             games: list[Game]) -> None:
        st["stage"] = {**st["stage"], bm: {"need": len(new), "rows": {}, "who": list(who)}}
        st["live"].update({g.match_id: bm for g in new})
        st["games"] = {**st["games"], bm: [*st["games"].get(bm, []), *(g.match_id for g in new)]}
        st["created"] += len(new)
        games.extend(new)

    def _resolve(self, spec: TournamentSpec, st: Mapping[str, Any]) -> brk.BracketState:
        return brk.resolve(self._bracket(spec), {k: tuple(v) for k, v in st["outcomes"].items()})

    def _step(self, spec: TournamentSpec, st: dict[str, Any], games: list[Game]) -> Step:
        state = self._resolve(spec, st)
        total = int(st["created"]) + self._fewest_to_come(spec, st, state)
        return Step(st, games, finished=state.finished, total=total)

    def _fewest_to_come(self, spec: TournamentSpec, st: Mapping[str, Any],
                        state: brk.BracketState) -> int:
        """Games not created yet that the bracket needs at the least, for progress bars.

        A 3p table creates all its sets at once, so a planned table needs nothing more;
        a 2v2 series under way needs the pairs its leader still lacks, beyond the pair
        being played.
        """
        series = self._series(spec)
        if spec.players == 3:
            per_match = (6 if spec.replay else 1) * series
            per_pair = 0
        else:
            per_pair = 2 if spec.replay else 1
            per_match = per_pair * (series // 2 + 1)
        certain = state.bracket.certain_matches()
        fewest = 0
        for m in state.matches:
            bm = m.match.id
            if not (m.status is brk.Status.READY
                    or (m.status is brk.Status.PENDING and bm in certain)):
                continue
            if bm not in st["games"]:
                fewest += per_match
            elif spec.players == 4:
                wins = st["pairs"].get(bm, [])
                lead = max((wins.count(w) for w in set(wins)), default=0)
                under_way = 1 if bm in st["stage"] else 0
                lacking = series // 2 + 1 - lead - under_way
                fewest += per_pair * max(0, lacking)
        return fewest

    # -------------------------------------------------------------- view

    def bracket(self, spec: TournamentSpec, state: Mapping[str, Any]) -> Plan:
        """The bracket as it stands, and each 2v2 series' score."""
        bracket_state = self._resolve(spec, state)
        out = Plan(bracket=bracket_state,
                   bracket_games={bm: list(ids) for bm, ids in state["games"].items()})
        if spec.players == 4:
            series = self._series(spec)
            for bm in state["games"]:
                a, b = bracket_state.match(bm).participants
                out.series[bm] = brk.series_state(a, b, state["pairs"].get(bm, []), series)
        return out
