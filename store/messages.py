"""Every message that crosses Redis, typed: one schema, one version field, one codec.

Four families travel through Redis, each with its own key:

| family       | where                         | writer -> reader              |
|--------------|-------------------------------|-------------------------------|
| `BOT`        | `ms:bot:{id}:events` (pub/sub), `:pending`, `:inbox` | match job -> referee |
| `REPLY`      | `ms:match:{id}:replies`       | referee -> match job          |
| `LOG`        | `ms:match:{id}:log`, `ms:match:{id}:conn` | match job -> job runs, watchers |
| `TOURNAMENT` | `ms:tournament:{id}:events`, and a test's | match job, scheduler -> watchers |

A message is a frozen dataclass; `encode` writes it as one JSON object with
`"v"` (the schema version) and `"type"`; `decode` reads it back into the same
class and refuses anything that does not fit: a missing field, a field of the
wrong type, or, at the reader's own version, a field it does not know. So a
writer and a reader that disagree fail loudly at the first message, never by a
silent `KeyError` three modules away. `python scripts/bus_schema.py` writes the
schema as JSON Schema (docs/bus-schema.json); a test fails when it drifts.

Compatibility: fields are only ever added. A reader accepts a message of a
newer version (it ignores the fields it does not know) and one with no `"v"`
(written before versioning). Two legacy shapes stay readable: log entries
without `"type"` (an action, or `{"forfeit": seat, ...}`).
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

__all__ = [
    "BOT",
    "LOG",
    "REPLY",
    "TOURNAMENT",
    "VERSION",
    "ActionEntry",
    "ConnectionEntry",
    "DecisionAccepted",
    "DecisionRejected",
    "DecisionRequest",
    "ForfeitEntry",
    "LivenessPing",
    "Logged",
    "MatchEnded",
    "MatchStarted",
    "Message",
    "MessageError",
    "PairCounted",
    "PairVoided",
    "Pong",
    "Reply",
    "Revoked",
    "StandingsChanged",
    "Superseded",
    "TournamentFinished",
    "TournamentMatchFinished",
    "TournamentMatchStarted",
    "WaitingChanged",
    "decode",
    "encode",
    "families",
    "unstamped",
]

VERSION = 1


class MessageError(ValueError):
    """A message that does not fit its schema; the text names the field."""


@dataclass(frozen=True, slots=True)
class Message:
    """Base of every message; `TYPE` is its `"type"` on the wire."""

    TYPE: ClassVar[str] = ""


M = TypeVar("M", bound=Message)

# ------------------------------------------------------------------ BOT


@dataclass(frozen=True, slots=True)
class DecisionRequest(Message):
    """The match job asks a bot to act for one seat (stored as pending, and published).

    `paused_ms` is set while the seat's bot is away: the clock stopped with that
    much of the decision's time used, so whoever delivers the request later
    computes the deadline from the moment of delivery.
    """

    TYPE: ClassVar[str] = "decision"
    request_id: str
    match_id: str
    seat: int
    observation: Mapping[str, Any]
    legal: list[int]
    time_limit_ms: int
    time_bank_ms: int
    deadline_unix_ms: int
    strikes: int
    paused_ms: int | None = None

    def resumed(self, now_ms: int) -> DecisionRequest:
        """The request as delivered now: a paused clock restarts with the time it had
        left (it restarts at the match job a moment later, so the bot's deadline errs early)."""
        if self.paused_ms is None:
            return self
        used = self.paused_ms
        limit = max(0, self.time_limit_ms - used)
        bank = max(0, self.time_bank_ms - max(0, used - self.time_limit_ms))
        return dataclasses.replace(self, time_limit_ms=limit, time_bank_ms=bank,
                                   deadline_unix_ms=now_ms + limit + bank, paused_ms=None)


@dataclass(frozen=True, slots=True)
class MatchStarted(Message):
    """A match with this bot in it started; one per seat the bot holds."""

    TYPE: ClassVar[str] = "match_started"
    match_id: str
    seat: int
    players: int
    rules: Mapping[str, Any]
    seat_names: list[str]
    tournament_id: str = ""  # a tournament's game only (`event` names any event)
    clock: Mapping[str, int] | None = None
    faults: Mapping[str, int] | None = None
    event: str = ""  # the event that made the match (`store.refs.EventRef`, text form)


@dataclass(frozen=True, slots=True)
class MatchEnded(Message):
    """A match with this bot in it ended; one per seat the bot held."""

    TYPE: ClassVar[str] = "match_ended"
    match_id: str
    seat: int
    result: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class DecisionRejected(Message):
    """An answer was refused; `reason` is illegal_action, late, not_yours or unknown_request:
    the wire's `DecisionRejected.Reason` names, lower case (the fault itself, in logs,
    transcripts, metrics and watch events, is spelled `late` or `illegal`)."""

    TYPE: ClassVar[str] = "decision_rejected"
    REASONS: ClassVar[tuple[str, ...]] = ("illegal_action", "late", "not_yours",
                                          "unknown_request")
    request_id: str
    match_id: str
    reason: str
    message: str
    replacement_action_id: int | None = None
    strikes: int = 0

    @staticmethod
    def reason_of(fault: str) -> str:
        """The reason that a strike of this fault (`late` or `illegal`) is sent with."""
        return {"late": "late", "illegal": "illegal_action"}[fault]

    def __post_init__(self) -> None:
        if self.reason not in self.REASONS:
            raise MessageError(f"decision_rejected.reason: {self.reason!r} is not one of "
                               f"{', '.join(self.REASONS)}")


@dataclass(frozen=True, slots=True)
class DecisionAccepted(Message):
    """The referee accepted an answer: it is now the match's, first and only."""

    TYPE: ClassVar[str] = "decision_accepted"
    request_id: str
    match_id: str


@dataclass(frozen=True, slots=True)
class Logged(Message):
    """A bot event kept in the bot's event log, as its channel carries it: the log entry's
    id (what the bot resumes after) and the event (a MatchStarted, a MatchEnded or a
    DecisionRejected for a strike). Written by the fenced batch script's NOTIFY."""

    TYPE: ClassVar[str] = "logged"
    event_id: str
    event: Mapping[str, Any]

    def message(self) -> Message:
        """The event, typed; MessageError when it is not one a log keeps."""
        msg = from_dict(self.event, BOT)
        if not isinstance(msg, (MatchStarted, MatchEnded, DecisionRejected)):
            raise MessageError(f"logged: a {msg.TYPE!r} is not kept in a bot's event log")
        return msg


@dataclass(frozen=True, slots=True)
class Superseded(Message):
    """A newer stream of the bot opened (epoch `epoch`): every older stream ends."""

    TYPE: ClassVar[str] = "superseded"
    stream: str
    epoch: int = 0


@dataclass(frozen=True, slots=True)
class Revoked(Message):
    """The bot's token was replaced: every live stream of it ends,
    saying why (never stored)."""

    TYPE: ClassVar[str] = "revoked"
    reason: str


@dataclass(frozen=True, slots=True)
class LivenessPing(Message):
    """The referee asks a bot's stream whether it is alive (never stored)."""

    TYPE: ClassVar[str] = "ping"
    nonce: int


@dataclass(frozen=True, slots=True)
class Pong(Message):
    """The referee's answer to a bot's ping (never stored; typed for the outbox)."""

    TYPE: ClassVar[str] = "pong"
    nonce: int


# ---------------------------------------------------------------- REPLY


@dataclass(frozen=True, slots=True)
class Reply(Message):
    """An accepted answer, forwarded by the referee to the match job."""

    TYPE: ClassVar[str] = "reply"
    request_id: str
    action_id: int
    bot_id: str
    at_us: int = 0  # Redis's clock when the referee accepted it (ACCEPT adds it)


# ------------------------------------------------------------------ LOG


@dataclass(frozen=True, slots=True)
class ActionEntry(Message):
    """One accepted action: entry `seq` of the match log is action `seq`.

    `by` is `bot`, or `late`/`illegal` when the referee played a replacement;
    `bank` is the seat's time bank after it; `us` the round trip in microseconds;
    `t` the unix time in ms when it was decided.
    """

    TYPE: ClassVar[str] = "action"
    seq: int
    seat: int
    action: int
    by: str
    ms: int
    bank: int
    note: str = ""
    us: float = 0.0
    t: int = 0


@dataclass(frozen=True, slots=True)
class ForfeitEntry(Message):
    """The seat `forfeit` forfeited the match at action `seq` (the log's last entry)."""

    TYPE: ClassVar[str] = "forfeit"
    forfeit: int
    reason: str
    seq: int
    t: int = 0


@dataclass(frozen=True, slots=True)
class ConnectionEntry(Message):
    """A seat's bot lost (`disconnected`) or regained (`reconnected`) its stream while the
    match waited on it for action `seq` (kept beside the log, in `ms:match:{id}:conn`)."""

    TYPE: ClassVar[str] = "connection"
    KINDS: ClassVar[tuple[str, ...]] = ("disconnected", "reconnected")
    seat: int
    kind: str
    seq: int
    t: int

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise MessageError(f"connection.kind: {self.kind!r} is not one of "
                               f"{', '.join(self.KINDS)}")


# ----------------------------------------------------------- TOURNAMENT


@dataclass(frozen=True, slots=True)
class TournamentMatchStarted(Message):
    """A game of the tournament started."""

    TYPE: ClassVar[str] = "match_started"
    match_id: str
    bot_ids: list[str]
    seat_names: list[str]
    bracket_match_id: str = ""
    time: float = 0.0


@dataclass(frozen=True, slots=True)
class TournamentMatchFinished(Message):
    """A game of the tournament was recorded (for the public stream: and released)."""

    TYPE: ClassVar[str] = "match_finished"
    match_id: str
    result: Mapping[str, Any]
    done: int
    total: int
    time: float = 0.0


@dataclass(frozen=True, slots=True)
class StandingsChanged(Message):
    """The standings changed after one or more recorded results."""

    TYPE: ClassVar[str] = "standings_changed"
    done: int
    total: int
    time: float = 0.0


@dataclass(frozen=True, slots=True)
class PairCounted(Message):
    """A test of a change counted a pair: both games of its board recorded (and released).

    `board` counts from 1; `eighths` is the pair score times 8 (0 to 8); `llr` the
    sequential test's log-likelihood ratio after it (0 in a fixed-games test); `pairs`
    the pairs counted so far, this one included."""

    TYPE: ClassVar[str] = "pair_counted"
    board: int
    board_id: str
    candidate_match_id: str
    baseline_match_id: str
    eighths: int
    llr: float
    pairs: int
    time: float = 0.0


@dataclass(frozen=True, slots=True)
class PairVoided(Message):
    """A test of a change settled a void pair: one of its games was forfeited (by the
    candidate, the baseline or an opponent) or lost to the stack; it counts in no statistic.

    `board` counts from 1; `voids` holds one [side, reason, match id] per game that voids it
    (side: "candidate", "baseline", "opponent" or "stack"); `void` the void pairs so far,
    this one included; `llr` the sequential test's, which it leaves as it was."""

    TYPE: ClassVar[str] = "pair_voided"
    board: int
    board_id: str
    candidate_match_id: str
    baseline_match_id: str
    voids: list[list[str]]
    void: int
    llr: float = 0.0
    time: float = 0.0


@dataclass(frozen=True, slots=True)
class WaitingChanged(Message):
    """The remote bots a test of a change waits for changed: while any is not connected no
    new pair starts (`bot_ids` empty: it waits for nobody now); or why its author's limits
    or share of the stack hold it below what it could take changed (`held`)."""

    TYPE: ClassVar[str] = "waiting_changed"
    bot_ids: list[str]
    time: float = 0.0
    held: str = ""  # why fewer pairs start than the test could take (its author's limits)


@dataclass(frozen=True, slots=True)
class TournamentFinished(Message):
    """The tournament (or test) finished or failed: the stream's last event."""

    TYPE: ClassVar[str] = "tournament_finished"
    done: int
    time: float = 0.0


# ---------------------------------------------------------------- codec

BOT = "bot"
REPLY = "reply"
LOG = "log"
TOURNAMENT = "tournament"

_FAMILIES: dict[str, tuple[type[Message], ...]] = {
    BOT: (DecisionRequest, MatchStarted, MatchEnded, DecisionRejected, DecisionAccepted,
          Superseded, Revoked, Pong, LivenessPing, Logged),
    REPLY: (Reply,),
    LOG: (ActionEntry, ForfeitEntry, ConnectionEntry),
    TOURNAMENT: (TournamentMatchStarted, TournamentMatchFinished, StandingsChanged,
                 TournamentFinished, PairCounted, PairVoided, WaitingChanged),
}
_BY_TYPE = {fam: {cls.TYPE: cls for cls in classes} for fam, classes in _FAMILIES.items()}


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    kinds: tuple[type, ...]  # accepted JSON types
    required: bool


def _kinds(hint: Any) -> tuple[type, ...]:
    """The JSON types a field's annotation allows (int also for float, never bool for int)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return tuple(k for arg in typing.get_args(hint) for k in _kinds(arg))
    base = origin or hint
    if base is type(None):
        return (type(None),)
    if base in (Mapping, dict):
        return (dict,)
    if base is list:
        return (list,)
    if base is float:
        return (float, int)
    if base in (int, str, bool):
        return (base,)
    raise TypeError(f"no JSON kind for {hint!r}")


def _schema(cls: type[Message]) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls)
    return tuple(
        _Field(f.name, _kinds(hints[f.name]),
               f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
        for f in dataclasses.fields(cls)
    )


_SCHEMAS: dict[type[Message], tuple[_Field, ...]] = {
    cls: _schema(cls) for classes in _FAMILIES.values() for cls in classes
}


def families() -> dict[str, tuple[type[Message], ...]]:
    """Every family and its message classes (for the schema and the tests)."""
    return dict(_FAMILIES)


def schema_of(cls: type[Message]) -> tuple[tuple[str, tuple[str, ...], bool], ...]:
    """(field, JSON type names, required) for each field of a message class."""
    return tuple((f.name, tuple(k.__name__ for k in f.kinds), f.required)
                 for f in _SCHEMAS[cls])


def to_dict(msg: Message) -> dict[str, Any]:
    """The message as the JSON object it is stored as."""
    out: dict[str, Any] = {"v": VERSION, "type": msg.TYPE}
    for f in _SCHEMAS[type(msg)]:
        value = getattr(msg, f.name)
        out[f.name] = dict(value) if isinstance(value, Mapping) else value
    return out


def encode(msg: Message) -> str:
    """The message as compact JSON."""
    return json.dumps(to_dict(msg), separators=(",", ":"))


def unstamped(reply: Reply) -> str:
    """A reply as the referee hands it to the ACCEPT script: without `at_us`, which the
    script adds (on Redis's clock), so the stored JSON holds that key once."""
    d = to_dict(reply)
    del d["at_us"]
    return json.dumps(d, separators=(",", ":"))


def _legacy_log(d: dict[str, Any]) -> None:
    """Give a log entry written before typed messages its type."""
    if "type" not in d:
        d["type"] = ForfeitEntry.TYPE if "forfeit" in d else ActionEntry.TYPE


def from_dict(d: Mapping[str, Any], family: str, expect: type[M] | None = None) -> Message:
    """A message from its JSON object; MessageError naming what does not fit."""
    data = dict(d)
    if family == LOG:
        _legacy_log(data)
    kind = data.pop("type", None)
    version = data.pop("v", 1)
    cls = _BY_TYPE[family].get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise MessageError(f"not a {family} event: unknown type {kind!r}; expected one of "
                           f"{', '.join(_BY_TYPE[family])}")
    if expect is not None and cls is not expect:
        raise MessageError(f"{family} message: expected {expect.TYPE!r}, got {kind!r}")
    if not isinstance(version, int) or isinstance(version, bool):
        raise MessageError(f"{kind}: version {version!r} is not an integer")
    kwargs: dict[str, Any] = {}
    for f in _SCHEMAS[cls]:
        if f.name not in data:
            if f.required:
                raise MessageError(f"{kind}: missing field {f.name!r}")
            continue
        value = data.pop(f.name)
        if not isinstance(value, f.kinds) or (isinstance(value, bool) and bool not in f.kinds):
            raise MessageError(f"{kind}.{f.name}: {type(value).__name__} is not "
                               f"{' or '.join(k.__name__ for k in f.kinds)}")
        kwargs[f.name] = value
    if data and version <= VERSION:
        raise MessageError(f"{kind}: unknown field(s) {', '.join(sorted(data))} at version "
                           f"{version}: the writer and this reader disagree on the schema")
    return cls(**kwargs)


def decode(text: str | bytes, family: str, expect: type[M] | None = None) -> Message:
    """Read one message of `family` from JSON (bytes or str)."""
    try:
        d = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MessageError(f"{family} message: not JSON: {exc}") from None
    if not isinstance(d, dict):
        raise MessageError(f"{family} message: not a JSON object")
    return from_dict(d, family, expect)


def decode_as(text: str | bytes, family: str, cls: type[M]) -> M:
    """Read one message that must be of class `cls`."""
    msg = decode(text, family, cls)
    assert isinstance(msg, cls)
    return msg



_JSON_TYPES = {"int": "integer", "float": "number", "str": "string", "bool": "boolean",
               "list": "array", "dict": "object", "NoneType": "null"}


def json_schema() -> dict[str, Any]:
    """Every message as JSON Schema, by family (what docs/bus-schema.json holds)."""
    defs: dict[str, Any] = {}
    fams: dict[str, Any] = {}
    for family, classes in _FAMILIES.items():
        refs = []
        for cls in classes:
            name = f"{family}.{cls.TYPE}"
            props: dict[str, Any] = {"v": {"type": "integer", "const": VERSION},
                                     "type": {"const": cls.TYPE}}
            required = ["type"]
            for fname, kinds, req in schema_of(cls):
                types_ = sorted({_JSON_TYPES[k] for k in kinds} - {"integer"}
                                if "float" in kinds else {_JSON_TYPES[k] for k in kinds})
                props[fname] = {"type": types_[0] if len(types_) == 1 else types_}
                if req:
                    required.append(fname)
            defs[name] = {"type": "object", "description": (cls.__doc__ or "").split("\n")[0],
                          "properties": props, "required": required}
            refs.append({"$ref": f"#/$defs/{name}"})
        fams[family] = {"oneOf": refs}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "moonshot bus messages", "version": VERSION,
            "families": fams, "$defs": defs}
