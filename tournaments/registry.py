"""The registry of tournament formats: each format is one module that declares itself.

A format is a `Format` subclass registered under its name (`round_robin`, ...). It
declares its options (`options_type`, a `tournaments.options.Options` dataclass),
checks what depends on the format (`least_bots`, `check`) and resolves what the field
decides (`settle`), and plans incrementally (`start`, `feed`; see `tournaments.plan`).
Everything else finds formats here, by the registered name: the referee maps the
protobuf enum `TOURNAMENT_FORMAT_<NAME>` and the spec's `format_options` field
`<name>` (the options message); the CLI the flag `--format <name-with-dashes>` and
one flag per option field. So a new format is one new module, one line in
`tournaments/formats.py`, and in tournament.proto one enum value and one options
message in the `format_options` oneof.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from store.errors import InvalidArgument
from store.records import DUPLICATE_MODES, TournamentSpec
from tournaments import apart as apart_
from tournaments.options import Options
from tournaments.plan import ListSource, Plan, Step, Unit, UnitSource, board_label, derive_seed
from tournaments.ranking import PlayRound, Ranking

__all__ = ["REPLAY_NOTE", "Format", "apart_of", "feed", "get", "groups", "names", "notes", "plan",
           "prepare", "register", "start"]

OptionsT = TypeVar("OptionsT", bound=Options)

REPLAY_NOTE = ("head-to-head duplicate (duplicate=replay): the same bots replay each deal "
               "at every seating, which is fair only among bots that keep no memory between "
               "games; the referee cannot check that and trusts them")


class Format(ABC, Generic[OptionsT]):
    """How one tournament format reads its options, checks a spec and plans its games."""

    name: ClassVar[str]
    title: ClassVar[str]  # for people: "round robin"
    options_type: type[OptionsT]  # the format's options (a frozen `Options` dataclass)
    # Whether the order of the bots (the seeds) shapes the draw, so that `seeding` applies;
    # a round robin seats them in the order given, whatever their ratings.
    seeded: ClassVar[bool] = False
    # The ways of sharing deals (`TournamentSpec.duplicate`) the format offers.
    deals: ClassVar[tuple[str, ...]] = DUPLICATE_MODES

    def read_options(self, data: Mapping[str, Any] | Options) -> OptionsT:
        """Options as asked for (their JSON form, or the options themselves), checked on
        their own; InvalidArgument naming the field as `<format>.<field>`."""
        if isinstance(data, Options):
            data = data.to_json()
        try:
            return self.options_type.from_json(data)
        except InvalidArgument as exc:
            raise InvalidArgument(f"{self.name}.{exc}") from None

    def options(self, spec: TournamentSpec) -> OptionsT:
        """The options of a stored spec (checked when it was made)."""
        return self.read_options(spec.options)

    def least_bots(self, spec: TournamentSpec, options: OptionsT) -> int:
        """The fewest bots this format runs with for this spec."""
        return 3 if spec.players == 3 else 2

    def check(self, spec: TournamentSpec, options: OptionsT) -> None:
        """InvalidArgument naming the field when the options do not suit the spec (its
        pool, its bots); the base has checked the deals and the number of bots."""

    def settle(self, spec: TournamentSpec, options: OptionsT) -> OptionsT:
        """The options with every default the field decides resolved (as stored)."""
        return options

    def prepare(self, spec: TournamentSpec) -> TournamentSpec:
        """A new spec checked against the format, its options settled: what is stored."""
        if spec.duplicate not in self.deals:
            raise InvalidArgument(f"duplicate: a {self.title} offers "
                                  f"{' or '.join(self.deals)}, got {spec.duplicate!r}")
        options = self.options(spec)
        least = self.least_bots(spec, options)
        if len(spec.bot_ids) < least:
            raise InvalidArgument(f"bot_ids: a {spec.pool} {self.title} needs at least "
                                  f"{least} bots, got {len(spec.bot_ids)}")
        self.check(spec, options)
        return dataclasses.replace(spec, options=self.settle(spec, options).to_json())

    def notes(self, spec: TournamentSpec) -> list[str]:
        """What the organiser and the players should know about how this spec deals."""
        out = [REPLAY_NOTE] if spec.replay else []
        if spec.apart:
            out.append(apart_.groups_note(groups(spec), dict(zip(spec.bot_ids, spec.names,
                                                                 strict=True))))
        return out

    def schedule(self, spec: TournamentSpec) -> list[Unit] | None:
        """The whole schedule when it is fixed in advance (stored once), else None."""
        return None

    @abstractmethod
    def start(self, spec: TournamentSpec, units: UnitSource) -> Step:
        """The first step: the state and the games to create at once."""

    @abstractmethod
    def feed(self, spec: TournamentSpec, state: Mapping[str, Any],
             results: Sequence[Mapping[str, Any]], units: UnitSource) -> Step:
        """Fold newly finished results (each exactly once) into the state."""

    def bracket(self, spec: TournamentSpec, state: Mapping[str, Any]) -> Plan:
        """The bracket part of the plan for standings (none for a round robin)."""
        return Plan()

    def ranking(self, spec: TournamentSpec, state: Mapping[str, Any],
                results: Mapping[str, Mapping[str, Any]],
                ratings: Mapping[str, float]) -> Ranking | None:
        """The format's own ranking of its entrants, from the state and the results an
        audience may see (`tournaments.ranking`); None: the common standings say it all."""
        return None

    def rounds(self, spec: TournamentSpec, state: Mapping[str, Any],
               results: Mapping[str, Mapping[str, Any]]) -> list[PlayRound]:
        """The rounds paired so far with their tables, for formats that pair by rounds."""
        return []


_FORMATS: dict[str, Format[Any]] = {}

F = TypeVar("F", bound="Format[Any]")


def register(fmt: F) -> F:
    """Add a format under its name (once)."""
    if fmt.name in _FORMATS:
        raise ValueError(f"format {fmt.name!r} is registered twice")
    _FORMATS[fmt.name] = fmt
    return fmt


def names() -> tuple[str, ...]:
    """Every registered format name, in registration order."""
    return tuple(_FORMATS)


def get(name: str) -> Format[Any]:
    """The format registered as `name`; InvalidArgument listing the others."""
    fmt = _FORMATS.get(name)
    if fmt is None:
        raise InvalidArgument(f"format: must be one of {', '.join(_FORMATS)}, got {name!r}")
    return fmt


def describe(spec: TournamentSpec) -> str:
    """`3p round robin`, `2v2 single elimination`, ..."""
    return f"{spec.pool} {get(spec.format).title}"


def notes(spec: TournamentSpec) -> list[str]:
    """The format's notes on a spec (shown with the tournament, its standings and games)."""
    return get(spec.format).notes(spec)


def prepare(spec: TournamentSpec) -> TournamentSpec:
    """A new spec checked against its format, its options settled (see `Format.prepare`)."""
    return get(spec.format).prepare(spec)


def groups(spec: TournamentSpec) -> tuple[apart_.Group, ...]:
    """The groups a tournament keeps apart on boards."""
    return tuple(apart_.Group(name, bots) for name, bots in spec.apart)


def _kept_apart(spec: TournamentSpec, step: Step) -> Step:
    """The step with every board that would seat two bots of one group at two of its tables
    split (`tournaments.apart.separate`), the boards dealt apart noted in the state
    (`apart`): whatever the format, a table that cannot be kept apart gets its own deal."""
    if not spec.apart or not step.games:
        return step
    games, split = apart_.separate(step.games, groups(spec),
                                   lambda unit: derive_seed(spec.seed, unit))
    if not split:
        return step
    state = {**step.state, "apart": [*step.state.get("apart", []),
                                     *(a.to_json() for a in split)]}
    return Step(state, games, step.finished, step.total)


def start(spec: TournamentSpec, units: UnitSource) -> Step:
    """The format's first step, its groups kept apart."""
    return _kept_apart(spec, get(spec.format).start(spec, units))


def feed(spec: TournamentSpec, state: Mapping[str, Any], results: Sequence[Mapping[str, Any]],
         units: UnitSource) -> Step:
    """The format's next step, its groups kept apart."""
    return _kept_apart(spec, get(spec.format).feed(spec, state, results, units))


def apart_of(state: Mapping[str, Any] | None) -> list[apart_.Apart]:
    """The boards a tournament dealt apart so far (from its stored state)."""
    return [apart_.Apart.from_json(a) for a in (state or {}).get("apart", [])]


def apart_notes(spec: TournamentSpec, state: Mapping[str, Any] | None) -> list[str]:
    """A note per board dealt apart so far, naming it."""
    return apart_.apart_notes(apart_of(state), board_label)


def plan(spec: TournamentSpec, results: Mapping[str, Mapping[str, Any]]) -> Plan:
    """Every game the tournament has or needs now, given finished results by match id.

    Folds the results through the same incremental steps the scheduler takes.
    """
    fmt = get(spec.format)
    source = ListSource(fmt.schedule(spec) or [])
    step = start(spec, source)
    games = list(step.games)
    seen = 0
    while True:
        batch = [results[g.match_id] for g in games[seen:] if g.match_id in results]
        seen = len(games)
        if not batch:
            break
        step = feed(spec, step.state, batch, source)
        games += step.games
    out = fmt.bracket(spec, step.state)
    out.state = step.state
    out.games = games
    out.finished = step.finished
    out.total = step.total
    return out
