"""Match and tournament specs and their policies (clock, faults): pure values, validated
once, stored as JSON."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from moon import MoonError, Rules
from moon.deal import MAX_SEED
from store import ids
from store.errors import InvalidArgument
from store.pools import Pool
from store.refs import EventKind, EventRef

__all__ = [
    "DEFAULT_CLOCK",
    "DEFAULT_FAULTS",
    "DUPLICATE_MODES",
    "MAX_ROUNDS",
    "SANDBOX_BOUNDS",
    "SEEDINGS",
    "Clock",
    "Faults",
    "MatchSpec",
    "SandboxLimits",
    "StandingsInputs",
    "TournamentSpec",
    "check_seating",
]

SEEDINGS = ("rating", "given")
# How games share deals: "boards" (the default: a board is played once at each of
# several disjoint tables, never twice by one bot), "replay" (the same bots replay one
# deal at every seating: sound only among bots that keep no memory), "fresh" (every
# game its own deal).
DUPLICATE_MODES = ("boards", "replay", "fresh")
MAX_ROUNDS = 100


@dataclass(frozen=True, slots=True)
class Clock:
    """Per-decision limit plus a bank drawn on when a decision runs over it."""

    move_time_ms: int = 2000
    time_bank_ms: int = 30000

    def __post_init__(self) -> None:
        if not 1 <= self.move_time_ms <= 600_000:
            raise InvalidArgument(
                f"clock.move_time_ms must be from 1 to 600000, got {self.move_time_ms}"
            )
        if not 0 <= self.time_bank_ms <= 3_600_000:
            raise InvalidArgument(
                f"clock.time_bank_ms must be from 0 to 3600000, got {self.time_bank_ms}"
            )


@dataclass(frozen=True, slots=True)
class Faults:
    """When a bot forfeits: after `max_strikes` strikes, or a disconnect longer than the grace."""

    max_strikes: int = 3
    disconnect_grace_ms: int = 30000

    def __post_init__(self) -> None:
        if not 1 <= self.max_strikes <= 1000:
            raise InvalidArgument(
                f"faults.max_strikes must be from 1 to 1000, got {self.max_strikes}"
            )
        if not 0 <= self.disconnect_grace_ms <= 3_600_000:
            raise InvalidArgument(
                "faults.disconnect_grace_ms must be from 0 to 3600000, "
                f"got {self.disconnect_grace_ms}"
            )


DEFAULT_CLOCK = Clock()
DEFAULT_FAULTS = Faults()

# What any sandbox limit may be (an event's, a host's): field -> (lowest, highest, unit).
SANDBOX_BOUNDS: dict[str, tuple[float, float, str]] = {
    "memory_mb": (64, 16384, "MB"), "pids": (4, 4096, "processes"),
    "cpu_s": (1, 86400, "CPU seconds"), "cpu_cores": (0.1, 64, "cores"),
    "scratch_mb": (1, 1024, "MB")}


def check_sandbox_limit(where: str, name: str, value: object) -> None:
    """InvalidArgument naming `where.name` unless `value` is within SANDBOX_BOUNDS (an
    integer, but for cpu_cores)."""
    low, high, unit = SANDBOX_BOUNDS[name]
    if name == "cpu_cores":
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and low <= value <= high)
        what = f"a number from {low:g} to {high:g}"
    else:
        ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
        what = f"an integer from {low:g} to {high:g}"
    if not ok:
        raise InvalidArgument(f"{where}.{name} must be {what} ({unit}), got {value!r}")


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """An event's limits on the sandbox of each hosted bot while it plays the event's games
    (docs/hosting.md, "Limits"): None leaves a field to the host's own. A sandbox serving
    several events runs under the tightest of them; no field may be above what the
    stack's hosts allow (`store.hosted.check_within_hosts`)."""

    memory_mb: int | None = None
    pids: int | None = None
    cpu_s: int | None = None
    cpu_cores: float | None = None
    scratch_mb: int | None = None

    def __post_init__(self) -> None:
        for name, value in self.items().items():
            check_sandbox_limit("sandbox", name, value)

    def items(self) -> dict[str, float]:
        """The fields set, by name."""
        return {name: value for name in SANDBOX_BOUNDS
                if (value := getattr(self, name)) is not None}

    def __bool__(self) -> bool:
        return bool(self.items())

    def to_dict(self) -> dict[str, float]:
        """As stored (the fields set only)."""
        return self.items()

    @staticmethod
    def from_dict(d: Mapping[str, Any] | None) -> SandboxLimits | None:
        """Inverse of `to_dict` (None for none, or for no field set); InvalidArgument
        naming an unknown field."""
        if not d:
            return None
        if stray := [k for k in d if k not in SANDBOX_BOUNDS]:
            raise InvalidArgument(f"sandbox.{str(stray[0])[:40]}: not a sandbox limit "
                                  f"(they are {', '.join(SANDBOX_BOUNDS)})")
        limits = SandboxLimits(**{k: d[k] for k in SANDBOX_BOUNDS if k in d})
        return limits or None

    @staticmethod
    def parse(items: Sequence[str]) -> SandboxLimits | None:
        """`memory_mb=256`-style settings (a command line's); InvalidArgument naming a bad
        one; None for none."""
        d: dict[str, Any] = {}
        for item in items:
            name, eq, text = item.partition("=")
            name = name.strip()
            if not eq or name not in SANDBOX_BOUNDS:
                raise InvalidArgument(f"sandbox: {item[:60]!r} is not NAME=VALUE with NAME "
                                      f"one of {', '.join(SANDBOX_BOUNDS)}")
            try:
                d[name] = float(text) if name == "cpu_cores" else int(text.strip())
            except ValueError:
                check_sandbox_limit("sandbox", name, text.strip())
        return SandboxLimits.from_dict(d)


def check_seating(players: int, bot_ids: Sequence[str]) -> None:
    """InvalidArgument unless every bot plays on one side only: in 3p each bot once, in 2v2
    a bot may take both seats of its team (seats 0+2 or 1+3) but never both teams. House
    bots are exempt: a house bot may hold several seats, on both sides.

    Checked when a match is made, not when a stored one is read back: a match stored
    before this rule must stay readable.
    """
    for seat, bot in enumerate(bot_ids):
        if ids.is_house_bot(bot):
            continue  # the stack's own player keeps nothing: it may hold any seats
        for other in range(seat):
            same_team = players == 4 and (seat - other) % 2 == 0
            if bot_ids[other] == bot and not same_team:
                where = "the other team" if players == 4 else f"seat {other}"
                raise InvalidArgument(
                    f"bot_ids[{seat}]: {bot} already plays {where}; a bot may not play "
                    "against itself"
                )


@dataclass(frozen=True, slots=True)
class MatchSpec:
    """Everything that defines a match; the match job needs nothing else."""

    match_id: str
    rules: Rules
    seed: int
    bot_ids: tuple[str, ...]
    seat_names: tuple[str, ...]
    clock: Clock = DEFAULT_CLOCK
    faults: Faults = DEFAULT_FAULTS
    event: EventRef | None = None  # the event that made it; None for a single match
    meta: Mapping[str, Any] = field(default_factory=dict)
    sandbox: SandboxLimits | None = None  # its event's limits on hosted bots' sandboxes

    def __post_init__(self) -> None:
        n = self.rules.players
        if len(self.bot_ids) != n:
            raise InvalidArgument(
                f"bot_ids: a {n}-player match needs {n} bots, got {len(self.bot_ids)}"
            )
        if len(self.seat_names) != n:
            raise InvalidArgument(f"seat_names: expected {n}, got {len(self.seat_names)}")
        if isinstance(self.seed, bool) or not 0 <= self.seed <= MAX_SEED:
            raise InvalidArgument(f"seed must be from 0 to {MAX_SEED}, got {self.seed}")

    @property
    def players(self) -> int:
        """3 or 4."""
        return self.rules.players

    def event_id(self, kind: EventKind) -> str:
        """The id of the event that made this game if it is of `kind`, else ''."""
        return self.event.id if self.event is not None and self.event.kind is kind else ""

    @property
    def boarded(self) -> bool:
        """True for a game of an event (a tournament's, a test's or an arena's): it shares
        its board with other tables, so it is hidden from the public until every game of
        its board has finished."""
        return self.event is not None

    @staticmethod
    def build(
        match_id: str,
        players: int,
        bot_ids: Sequence[str],
        seat_names: Sequence[str],
        rules: Mapping[str, object] | None = None,
        seed: int | None = None,
        clock: Clock = DEFAULT_CLOCK,
        faults: Faults = DEFAULT_FAULTS,
        event: EventRef | None = None,
        meta: Mapping[str, Any] | None = None,
        sandbox: SandboxLimits | None = None,
    ) -> MatchSpec:
        """Validate raw request values into a spec; errors name the field."""
        if players not in (3, 4):
            raise InvalidArgument(f"players must be 3 or 4, got {players}")
        check_seating(players, bot_ids)
        try:
            parsed = Rules.make(players, dict(rules or {}))
        except MoonError as exc:
            raise InvalidArgument(f"rules: {exc}") from None
        return MatchSpec(
            match_id=match_id,
            rules=parsed,
            seed=secrets.randbits(63) if seed is None else seed,
            bot_ids=tuple(bot_ids),
            seat_names=tuple(seat_names),
            clock=clock,
            faults=faults,
            event=event,
            meta=dict(meta or {}),
            sandbox=sandbox or None,
        )

    def to_json(self) -> str:
        """The spec as a JSON string."""
        return json.dumps(
            {
                "match_id": self.match_id,
                "players": self.players,
                "rules": self.rules.options(),
                "seed": self.seed,
                "bot_ids": list(self.bot_ids),
                "seat_names": list(self.seat_names),
                "clock": [self.clock.move_time_ms, self.clock.time_bank_ms],
                "faults": [self.faults.max_strikes, self.faults.disconnect_grace_ms],
                "event": "" if self.event is None else str(self.event),
                "meta": dict(self.meta),
                **({"sandbox": self.sandbox.to_dict()} if self.sandbox else {}),
            },
            separators=(",", ":"),
        )

    @staticmethod
    def from_json(text: str) -> MatchSpec:
        """Inverse of `to_json`."""
        d = json.loads(text)
        return MatchSpec(
            match_id=d["match_id"],
            rules=Rules.make(int(d["players"]), d["rules"]),
            seed=int(d["seed"]),
            bot_ids=tuple(d["bot_ids"]),
            seat_names=tuple(d["seat_names"]),
            clock=Clock(*d["clock"]),
            faults=Faults(*d["faults"]),
            event=_event_of(d),
            meta=d.get("meta", {}),
            sandbox=SandboxLimits.from_dict(d.get("sandbox")),
        )


def _event_of(d: Mapping[str, Any]) -> EventRef | None:
    """The event a stored match spec names: `event`, or as stored before matches carried one
    (a tournament's or test's id in `tournament_id`, an arena's pool in `meta.arena`)."""
    if d.get("event"):
        return EventRef.parse(str(d["event"]))
    if d.get("tournament_id"):
        return EventRef.of_id(str(d["tournament_id"]))
    arena = dict(d.get("meta") or {}).get("arena")
    return EventRef.arena(str(arena)) if arena else None


@dataclass(frozen=True, slots=True)
class TournamentSpec:
    """A tournament as stored; `bot_ids` are in seed order (seeding already applied).

    Construction checks each common field on its own. `options` are the format's own
    (`tournaments.options`), in their JSON form: what they hold and how they combine
    with the pool and the bots is the format's to check, when a tournament is made
    (`tournaments.registry.prepare`), so a stored spec always reads back.
    """

    tournament_id: str
    name: str
    players: int
    format: str
    bot_ids: tuple[str, ...]
    names: tuple[str, ...]
    rules: Rules
    seed: int
    clock: Clock = DEFAULT_CLOCK
    faults: Faults = DEFAULT_FAULTS
    duplicate: str = "boards"  # one of DUPLICATE_MODES (a bool means replay or fresh)
    seeding: str = "rating"
    options: Mapping[str, Any] = field(default_factory=dict)
    # Groups kept apart on boards (`tournaments.apart`): (name, bot ids) each, resolved when
    # the tournament was made from the bots' authors and the groups declared.
    apart: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # The pool ratings of its bots when it was made (a bot without one: none): the standings'
    # rating column and the ranking's last tiebreak, fixed for the event as a rating list
    # at an event's start is, so that a finished event's order never moves with later fits.
    # None: a spec stored before (its standings read the pool's ratings now).
    ratings: Mapping[str, float] | None = None
    sandbox: SandboxLimits | None = None  # limits on its hosted bots' sandboxes

    def __post_init__(self) -> None:
        n = len(self.bot_ids)
        if self.duplicate not in DUPLICATE_MODES:
            raise InvalidArgument(f"duplicate: must be one of {', '.join(DUPLICATE_MODES)}, "
                                  f"got {self.duplicate!r}")
        if not self.name.strip() or len(self.name) > 200:
            raise InvalidArgument("name: must be 1 to 200 characters")
        if not self.name.isprintable():  # no newlines, escapes or other control characters
            raise InvalidArgument(f"name: {self.name!r} holds a control character")
        if self.players not in (3, 4):
            raise InvalidArgument(f"players: must be 3 or 4, got {self.players}")
        if self.seeding not in SEEDINGS:
            raise InvalidArgument(f"seeding: must be one of {', '.join(SEEDINGS)}")
        if len(set(self.bot_ids)) != n:
            raise InvalidArgument("bot_ids: a bot may appear only once")
        if not 0 <= self.seed <= MAX_SEED:
            raise InvalidArgument(f"seed: must be from 0 to {MAX_SEED}")
        entered = set(self.bot_ids)
        if self.ratings is not None and (stray := [b for b in self.ratings if b not in entered]):
            raise InvalidArgument(f"ratings: {stray[0][:100]!r} is not a bot of this tournament")
        for name, members in self.apart:
            if stray := [b for b in members if b not in entered]:
                raise InvalidArgument(f"keep_apart.{name}: {stray[0][:100]!r} is not a bot of "
                                      "this tournament")

    @property
    def pool(self) -> Pool:
        """The rating pool: `3p` or `2v2`."""
        return Pool.of(self.players)

    @property
    def replay(self) -> bool:
        """True for head-to-head duplicate: the same bots replay one deal at every seating."""
        return self.duplicate == "replay"

    def to_json(self) -> str:
        """The spec as stored."""
        return json.dumps({
            "tournament_id": self.tournament_id, "name": self.name, "players": self.players,
            "format": self.format, "bot_ids": list(self.bot_ids), "names": list(self.names),
            "rules": self.rules.options(), "seed": self.seed,
            "clock": [self.clock.move_time_ms, self.clock.time_bank_ms],
            "faults": [self.faults.max_strikes, self.faults.disconnect_grace_ms],
            "duplicate": self.duplicate, "seeding": self.seeding,
            "options": dict(self.options),
            **({"apart": [[n, list(b)] for n, b in self.apart]} if self.apart else {}),
            **({"ratings": dict(self.ratings)} if self.ratings is not None else {}),
            **({"sandbox": self.sandbox.to_dict()} if self.sandbox else {}),
        }, separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> TournamentSpec:
        """Inverse of `to_json`; also reads a spec stored before formats owned their
        options (`_legacy_options`)."""
        d = json.loads(text)
        return TournamentSpec(
            tournament_id=d["tournament_id"], name=d["name"], players=d["players"],
            format=d["format"], bot_ids=tuple(d["bot_ids"]), names=tuple(d["names"]),
            rules=Rules.make(d["players"], d["rules"]), seed=d["seed"],
            clock=Clock(*d["clock"]), faults=Faults(*d["faults"]),
            duplicate=_duplicate_mode(d["duplicate"]), seeding=d["seeding"],
            options=d["options"] if "options" in d else _legacy_options(d),
            apart=tuple((str(n), tuple(b)) for n, b in d.get("apart", ())),
            ratings=({str(b): float(v) for b, v in d["ratings"].items()}
                     if "ratings" in d else None),
            sandbox=SandboxLimits.from_dict(d.get("sandbox")),
        )


# The options each format had while the spec was one flat union of them (every key was
# stored for every format, whatever it used): what such a stored spec's format takes.
_LEGACY_OPTIONS = {
    "round_robin": ("rounds", "rotate_partners", "all_triples"),
    "single_elimination": ("series_length",),
    "double_elimination": ("series_length",),
}


def _legacy_options(d: Mapping[str, Any]) -> dict[str, Any]:
    """The options of a spec stored with flat fields: those of its format."""
    return {k: d[k] for k in _LEGACY_OPTIONS.get(d["format"], ()) if k in d}


def _duplicate_mode(stored: str | bool) -> str:
    """The mode of a stored spec: before boards, `duplicate` was a bool (True: replay)."""
    if isinstance(stored, bool):
        return "replay" if stored else "fresh"
    return stored


@dataclass(frozen=True, slots=True)
class StandingsInputs:
    """What a tournament's standings are made from, as one audience may see them.

    `results` are standings rows by match id (for the public, released games only);
    `state` is the scheduler's stored state (None before its first step); `boards` the
    boards in play as (unit, games, finished, running), in the order they were created;
    `ratings` each bot's pool rating now, `own_ratings` its rating over this
    tournament's games (None before the first fit of them).
    """

    results: Mapping[str, Mapping[str, Any]]
    state: Mapping[str, Any] | None
    sequence: int
    ratings: Mapping[str, float]
    own_ratings: Mapping[str, float] | None
    boards: Sequence[tuple[str, int, int, int]] = ()
    redealt: int = 0  # boards dealt afresh (another board had the planned deal)
