"""The registry of tournament formats: each format is one module that declares itself.

A format is a `Format` subclass registered under its name (`round_robin`, ...):
it checks what depends on the format (`check`, `least_bots`), and plans
incrementally (`start`, `feed`; see `tournaments.plan`). Everything else finds
formats here: the referee maps the protobuf enum `TOURNAMENT_FORMAT_<NAME>` and
the CLI the flag `--format <name-with-dashes>` by the registered name, so a new
format is one new module, one line in `tournaments/formats.py` and one enum
value in tournament.proto.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from store.errors import InvalidArgument
from store.records import TournamentSpec
from tournaments.plan import ListSource, Plan, Step, Unit, UnitSource

__all__ = ["REPLAY_NOTE", "Format", "check", "get", "names", "notes", "plan", "register"]

REPLAY_NOTE = ("head-to-head duplicate (duplicate=replay): the same bots replay each deal "
               "at every seating, which is fair only among bots that keep no memory between "
               "games; the referee cannot check that and trusts them")


class Format(ABC):
    """How one tournament format checks a spec and plans its games."""

    name: ClassVar[str]
    title: ClassVar[str]  # for people: "round robin"
    # Whether the order of the bots (the seeds) shapes the draw, so that `seeding` applies;
    # a round robin seats them in the order given, whatever their ratings.
    seeded: ClassVar[bool] = False

    def least_bots(self, spec: TournamentSpec) -> int:
        """The fewest bots this format runs with for this spec."""
        return 3 if spec.players == 3 else 2

    def check(self, spec: TournamentSpec) -> None:
        """InvalidArgument naming the field when the spec does not suit the format."""
        least = self.least_bots(spec)
        if len(spec.bot_ids) < least:
            raise InvalidArgument(f"bot_ids: a {describe(spec)} needs at least {least} bots, "
                                  f"got {len(spec.bot_ids)}")
        if spec.rotate_partners:
            raise InvalidArgument("rotate_partners: only for a 2v2 round robin")
        if spec.all_triples:
            raise InvalidArgument("all_triples: only for a 3-player round robin")

    def notes(self, spec: TournamentSpec) -> list[str]:
        """What the organiser and the players should know about how this spec deals."""
        return [REPLAY_NOTE] if spec.replay else []

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


_FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    """Add a format under its name (once)."""
    if fmt.name in _FORMATS:
        raise ValueError(f"format {fmt.name!r} is registered twice")
    _FORMATS[fmt.name] = fmt
    return fmt


def names() -> tuple[str, ...]:
    """Every registered format name, in registration order."""
    return tuple(_FORMATS)


def get(name: str) -> Format:
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


def check(spec: TournamentSpec) -> None:
    """Everything about a new spec that depends on its format."""
    get(spec.format).check(spec)


def plan(spec: TournamentSpec, results: Mapping[str, Mapping[str, Any]]) -> Plan:
    """Every game the tournament has or needs now, given finished results by match id.

    Folds the results through the same incremental steps the scheduler takes.
    """
    fmt = get(spec.format)
    source = ListSource(fmt.schedule(spec) or [])
    step = fmt.start(spec, source)
    games = list(step.games)
    seen = 0
    while True:
        batch = [results[g.match_id] for g in games[seen:] if g.match_id in results]
        seen = len(games)
        if not batch:
            break
        step = fmt.feed(spec, step.state, batch, source)
        games += step.games
    out = fmt.bracket(spec, step.state)
    out.games = games
    out.finished = step.finished
    out.total = step.total
    return out
