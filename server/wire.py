"""The referee's protobuf boundary: engine values and bus events in, `moon.v1` messages out.

This module and `clients/wire.py` are the only places that convert between
protobuf messages and the engine's (and the store's) values. Match jobs publish
plain JSON events on Redis (a decision request, match started/ended, a rejected
decision; the referee adds pongs); `event_to_pb` turns each into the
`PlayResponse` a bot receives. The servicers use the rest: rules, clocks,
results, bot and match records.

Wire enums are the engine's numbers plus one (zero is `*_UNSPECIFIED`): phase,
contract (`Trump`) and action kind.

Decisions are the hot path (one per move of every match), and building a deep
message field by field through the protobuf API costs 50-100 us for a late
trick. So a decision event is encoded straight to protobuf wire bytes from
tables of pre-encoded tiles, plays, bids and actions, then parsed once in C
(`event_to_bytes` skips even that, for a servicer that sends raw bytes). Field
keys come from the generated descriptors, never typed in by hand, and the tests
check on thousands of observations that the fast path gives exactly the message
`observation_to_pb` builds through the ordinary API.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.timestamp_pb2 import Timestamp

from moon import Action, Observation, Rules, Tile
from moon.actions import ACTIONS, BID_IDS, PASS, ActionKind
from moon.contracts import CONTRACTS, contract_name, parse_contract
from moon.tiles import ALL_TILES
from proto.moon.v1 import arena_pb2, bot_pb2, game_pb2, match_pb2, rating_pb2, tournament_pb2
from store import messages
from store.arena import ArenaSpec, ArenaStatus, ArenaView
from store.bots import BotRecord
from store.errors import InvalidArgument
from store.hosted import HostedVersion, VersionStatus, number_of
from store.match_events import ActionTaken, Fault, HandEnded, MatchFinished, Sight, WatchEvent
from store.matches import MatchRecord
from store.messages import (
    DecisionAccepted,
    DecisionRejected,
    DecisionRequest,
    LivenessPing,
    Logged,
    MatchEnded,
    MatchStarted,
    Message,
    Pong,
    TournamentMatchFinished,
    TournamentMatchStarted,
)
from store.pools import Pool
from store.ratings import RatingPoint, RatingTable, StoredMethod
from store.records import (
    DEFAULT_CLOCK,
    DEFAULT_FAULTS,
    DUPLICATE_MODES,
    SANDBOX_BOUNDS,
    Clock,
    Faults,
    SandboxLimits,
    TournamentSpec,
)
from store.refs import EventKind, EventRef
from store.status import MatchStatus, TournamentStatus
from store.tournaments import TournamentInfo
from tournaments import formats
from tournaments.plan import board_id, redeal_notes
from tournaments.ranking import Ranking
from tournaments.spec import OLD_DEFAULTS, flat_options
from tournaments.view import StandingsView

__all__ = [
    "action_to_pb",
    "bot_to_pb",
    "check_enum",
    "clock_from_pb",
    "clock_to_pb",
    "event_to_bytes",
    "event_to_pb",
    "faults_from_pb",
    "faults_to_pb",
    "match_status_name",
    "match_to_pb",
    "observation_json_to_pb",
    "observation_to_pb",
    "result_to_pb",
    "rules_from_map",
    "rules_options_to_pb",
    "rules_to_pb",
    "sandbox_from_pb",
    "sandbox_to_pb",
    "seconds_of",
    "tile_to_pb",
    "timestamp",
    "welcome_pb",
]

_Rejected = bot_pb2.PlayResponse.DecisionRejected
_ALL_PASS: dict[str, game_pb2.AllPass.ValueType] = {
    "redeal": game_pb2.ALL_PASS_REDEAL,
    "forced": game_pb2.ALL_PASS_FORCED,
}
_SCORING: dict[str, game_pb2.Scoring.ValueType] = {
    "points": game_pb2.SCORING_POINTS,
    "marks": game_pb2.SCORING_MARKS,
}
_REASON: dict[str, _Rejected.Reason.ValueType] = {
    "illegal_action": _Rejected.REASON_ILLEGAL_ACTION,
    "late": _Rejected.REASON_LATE,
    "not_yours": _Rejected.REASON_NOT_YOURS,
    "unknown_request": _Rejected.REASON_UNKNOWN_REQUEST,
}

# ---------------------------------------------------------------- values


# What a Timestamp may hold (0001-01-01 to 9999-12-31, as its own documentation says).
_TIMESTAMP_SECONDS = (-62_135_596_800, 253_402_300_799)


def seconds_of(ts: Timestamp, field: str) -> float:
    """A request's timestamp as unix seconds (UTC, whatever the referee's time zone);
    InvalidArgument for one outside the range a Timestamp may hold."""
    lo, hi = _TIMESTAMP_SECONDS
    if not lo <= ts.seconds <= hi or not 0 <= ts.nanos < 1_000_000_000:
        raise InvalidArgument(f"{field}: not a time from year 1 to 9999 (seconds "
                              f"{ts.seconds}, nanos {ts.nanos})")
    return ts.seconds + ts.nanos / 1e9


def tile_to_pb(tile: Tile) -> game_pb2.Tile:
    """A tile as a message."""
    return game_pb2.Tile(high=tile.high, low=tile.low)


def action_to_pb(action: Action) -> game_pb2.Action:
    """An action with its id, label, kind and the bid, contract or tile it names."""
    pb = game_pb2.Action(id=action.id, label=action.label,
                         kind=game_pb2.ActionKind.ValueType(action.kind + 1))
    if action.kind is ActionKind.BID:
        pb.bid = action.value
    elif action.kind is ActionKind.TRUMP:
        pb.trump = game_pb2.Trump.ValueType(action.value + 1)
    elif action.kind in (ActionKind.DISCARD, ActionKind.PLAY):
        pb.tile.CopyFrom(tile_to_pb(action.tile))
    return pb


def rules_options_to_pb(players: int, options: Mapping[str, Any]) -> game_pb2.Rules:
    """Rules from a complete `Rules.options()` dict (as in bus events) and the player count."""
    return game_pb2.Rules(
        players=players,
        target=options["target"],
        min_bid=options["min_bid"],
        all_pass=_ALL_PASS[options["all_pass"]],
        double_blank=options["double_blank"],
        trump_before_widow=options["trump_before_widow"],
        scoring=_SCORING[options["scoring"]],
        marks_target=options["marks_target"],
        moon_wins=options["moon_wins"],
        max_hands=options["max_hands"],
    )


def rules_to_pb(rules: Rules) -> game_pb2.Rules:
    """A complete rule set as a message."""
    return rules_options_to_pb(rules.players, rules.options())


def rules_from_map(players: int, options: Mapping[str, str]) -> Rules:
    """Validated rules from a request's option map; raises moon.RulesError naming the option."""
    return Rules.make(players, dict(options))


def _play_to_pb(seat: int, tile: Tile) -> game_pb2.Play:
    return game_pb2.Play(seat=seat, tile=tile_to_pb(tile))


def observation_to_pb(obs: Observation) -> game_pb2.Observation:
    """What one seat may see, as a message; never more than the observation holds.

    Built through the ordinary protobuf API: the reference the hot path is tested against.
    """
    pb = game_pb2.Observation(
        seat=obs.seat,
        rules=rules_to_pb(obs.rules),
        hand_number=obs.hand_number,
        phase=game_pb2.Phase.ValueType(obs.phase + 1),
        to_act=obs.to_act,
        first_bidder=obs.first_bidder,
        hand=[tile_to_pb(t) for t in obs.hand],
        bids=[game_pb2.Bid(seat=b.seat, bid=b.bid) for b in obs.bids],
        trump=game_pb2.Trump.ValueType(0 if obs.contract is None else obs.contract + 1),
        tricks=[
            game_pb2.Trick(leader=t.leader, winner=t.winner,
                           plays=[_play_to_pb(p.seat, p.tile) for p in t.plays])
            for t in obs.tricks
        ],
        current=[_play_to_pb(p.seat, p.tile) for p in obs.current],
        tricks_won=obs.tricks_won,
        scores=obs.scores,
        hand_sizes=obs.hand_sizes,
    )
    if obs.bidder is not None:
        pb.bidder = obs.bidder
    if obs.bid is not None:
        pb.bid = obs.bid
    if obs.widow is not None:
        pb.widow.CopyFrom(tile_to_pb(obs.widow))
    if obs.discard is not None:
        pb.discard.CopyFrom(tile_to_pb(obs.discard))
    return pb


def result_to_pb(result: Mapping[str, Any]) -> game_pb2.MatchResult:
    """A match result dict {seats, final, winner, end, forfeit?, placement} as a message."""
    pb = game_pb2.MatchResult(
        seats=result["seats"],
        final_scores=result["final"],
        end=result["end"],
        placement=result["placement"],
    )
    if result.get("winner") is not None:
        pb.winner = result["winner"]
    forfeit = result.get("forfeit")
    if forfeit:
        pb.forfeit.seat = forfeit["seat"]
        pb.forfeit.reason = forfeit["reason"]
    return pb


# ------------------------------------------------- wire encoding (hot path)

_SMALL: tuple[bytes, ...] = tuple(bytes([i]) for i in range(128))


def _uv(v: int) -> bytes:
    """Varint of a non-negative int."""
    if v < 0x80:
        return _SMALL[v]
    if v < 0x4000:
        return bytes((v & 0x7F | 0x80, v >> 7))
    out = []
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _keys(desc: Descriptor) -> dict[str, bytes]:
    """Each field's encoded key (number and wire type), from the generated descriptor."""
    def wire_type(f: FieldDescriptor) -> int:
        length_delimited = f.is_repeated or f.type in (f.TYPE_MESSAGE, f.TYPE_STRING)
        return 2 if length_delimited else 0
    return {f.name: _uv(f.number << 3 | wire_type(f)) for f in desc.fields}


def _ld(key: bytes, body: bytes) -> bytes:
    """A length-delimited field."""
    return key + _uv(len(body)) + body


def _packed(key: bytes, values: Iterable[int]) -> bytes:
    body = b"".join([_uv(v) for v in values])
    return _ld(key, body) if body else b""


_OBS = _keys(game_pb2.Observation.DESCRIPTOR)
_TRICK = _keys(game_pb2.Trick.DESCRIPTOR)
_REQ = _keys(bot_pb2.PlayResponse.DecisionRequest.DESCRIPTOR)
_TS = _keys(Timestamp.DESCRIPTOR)
_DECISION_KEY = _keys(bot_pb2.PlayResponse.DESCRIPTOR)["decision_request"]

_TILE_BODY = {str(t): tile_to_pb(t).SerializeToString() for t in ALL_TILES}
_HAND = {t: _ld(_OBS["hand"], b) for t, b in _TILE_BODY.items()}
_WIDOW = {t: _ld(_OBS["widow"], b) for t, b in _TILE_BODY.items()}
_DISCARD = {t: _ld(_OBS["discard"], b) for t, b in _TILE_BODY.items()}
# [seat][tile] -> a Play as an element of Trick.plays, and of Observation.current.
_PLAY_BODY = [{str(t): _play_to_pb(s, t).SerializeToString() for t in ALL_TILES} for s in range(4)]
_TRICK_PLAY = [{t: _ld(_TRICK["plays"], b) for t, b in row.items()} for row in _PLAY_BODY]
_CURRENT = [{t: _ld(_OBS["current"], b) for t, b in row.items()} for row in _PLAY_BODY]
# [seat][bid] -> an element of Observation.bids (bid 0 is a pass).
_BID = [
    {b: _ld(_OBS["bids"], game_pb2.Bid(seat=s, bid=b).SerializeToString())
     for b in (PASS, *BID_IDS)}
    for s in range(4)
]
_PHASE = {p: _OBS["phase"] + _uv(i) for i, p in enumerate(
    ("bid", "discard", "trump", "play", "over"), start=1)}
_TRUMP = {contract_name(c): _OBS["trump"] + _uv(c + 1) for c in CONTRACTS}
_LEGAL = {i: _ld(_REQ["legal_actions"], action_to_pb(a).SerializeToString())
          for i, a in ACTIONS.items()}
_RULES: dict[tuple[object, ...], bytes] = {}


def _rules_field(players: int, options: Mapping[str, Any]) -> bytes:
    """The encoded `rules` field; one per distinct rule set, cached."""
    key = (players, *options.items())
    field = _RULES.get(key)
    if field is None:
        if len(_RULES) >= 256:
            _RULES.clear()
        body = rules_options_to_pb(players, options).SerializeToString()
        field = _RULES[key] = _ld(_OBS["rules"], body)
    return field


def _observation_bytes(d: Mapping[str, Any]) -> bytes:
    """An `Observation.to_json()` dict encoded as an Observation message.

    Fields go out in field-number order, as protobuf writes them. `scores` is
    sint32 (zigzag); the other integers are unsigned.
    """
    k, small = _OBS, _SMALL  # seats and bids are < 128: one byte, no call
    out = [
        k["seat"], small[d["seat"]],
        _rules_field(d["players"], d["rules"]),
        k["hand_number"], _uv(d["hand_number"]),
        _PHASE[d["phase"]],
        k["to_act"], small[d["to_act"]],
        k["first_bidder"], small[d["first_bidder"]],
    ]
    out += [_HAND[t] for t in d["hand"]]
    out += [_BID[s][b] for s, b in d["bids"]]
    if d["bidder"] is not None:
        out += (k["bidder"], small[d["bidder"]])
    if d["bid"] is not None:
        out += (k["bid"], small[d["bid"]])
    if d["contract"] is not None:
        out.append(_TRUMP[d["contract"]])
    if d["widow"] is not None:
        out.append(_WIDOW[d["widow"]])
    if d["discard"] is not None:
        out.append(_DISCARD[d["discard"]])
    leader_key, winner_key, tricks_key = _TRICK["leader"], _TRICK["winner"], k["tricks"]
    for leader, plays, winner in d["tricks"]:
        body = b"".join([leader_key, small[leader], *[_TRICK_PLAY[s][t] for s, t in plays],
                         winner_key, small[winner]])
        out.append(_ld(tricks_key, body))
    out += [_CURRENT[s][t] for s, t in d["current"]]
    out.append(_packed(k["tricks_won"], d["tricks_won"]))
    out.append(_packed(k["scores"], [2 * v if v >= 0 else -2 * v - 1 for v in d["scores"]]))
    out.append(_packed(k["hand_sizes"], d["hand_sizes"]))
    return b"".join(out)


def _decision_bytes(e: DecisionRequest) -> bytes:
    """A decision request encoded as a PlayResponse holding a DecisionRequest."""
    k = _REQ
    seconds, ms = divmod(e.deadline_unix_ms, 1000)
    deadline = _TS["seconds"] + _uv(seconds) + _TS["nanos"] + _uv(ms * 1_000_000)
    body = b"".join([
        _ld(k["request_id"], e.request_id.encode()),
        _ld(k["match_id"], e.match_id.encode()),
        k["seat"], _SMALL[e.seat],
        _ld(k["observation"], _observation_bytes(e.observation)),
        *[_LEGAL[i] for i in e.legal],
        k["time_limit_ms"], _uv(e.time_limit_ms),
        k["time_bank_ms"], _uv(e.time_bank_ms),
        _ld(k["deadline"], deadline),
        k["strikes"], _uv(e.strikes),
    ])
    return _ld(_DECISION_KEY, body)


def observation_json_to_pb(d: Mapping[str, Any]) -> game_pb2.Observation:
    """An observation from its `Observation.to_json()` form (the fast encoder)."""
    return game_pb2.Observation.FromString(_observation_bytes(d))


_EVENT_KIND = {EventKind.TOURNAMENT: game_pb2.EVENT_KIND_TOURNAMENT,
               EventKind.TEST: game_pb2.EVENT_KIND_TEST,
               EventKind.ARENA: game_pb2.EVENT_KIND_ARENA}


def event_ref_to_pb(ref: EventRef) -> game_pb2.EventRef:
    """The event that scheduled a game, as the wire names it."""
    return game_pb2.EventRef(kind=_EVENT_KIND[ref.kind], id=ref.id)


# ---------------------------------------------------------------- events


def _match_started(e: MatchStarted) -> bot_pb2.PlayResponse:
    started = bot_pb2.PlayResponse.MatchStarted(
        match_id=e.match_id,
        seat=e.seat,
        players=e.players,
        rules=rules_options_to_pb(e.players, e.rules),
        seat_names=e.seat_names,
        tournament_id=e.tournament_id,
    )
    if e.event:
        started.event.CopyFrom(event_ref_to_pb(EventRef.parse(e.event)))
    if e.clock:  # {"move_time_ms", "time_bank_ms"}
        started.clock.CopyFrom(game_pb2.ClockPolicy(**e.clock))
    if e.faults:  # {"max_strikes", "disconnect_grace_ms"}
        started.faults.CopyFrom(game_pb2.FaultPolicy(**e.faults))
    return bot_pb2.PlayResponse(match_started=started)


def _match_ended(e: MatchEnded) -> bot_pb2.PlayResponse:
    return bot_pb2.PlayResponse(match_ended=bot_pb2.PlayResponse.MatchEnded(
        match_id=e.match_id, seat=e.seat, result=result_to_pb(e.result)))


def _decision_rejected(e: DecisionRejected) -> bot_pb2.PlayResponse:
    rejected = _Rejected(
        request_id=e.request_id,
        match_id=e.match_id,
        reason=_REASON[e.reason],
        message=e.message,
        strikes=e.strikes,
    )
    if e.replacement_action_id is not None:
        rejected.replacement_action_id = e.replacement_action_id
    return bot_pb2.PlayResponse(decision_rejected=rejected)


def _decision_accepted(e: DecisionAccepted) -> bot_pb2.PlayResponse:
    return bot_pb2.PlayResponse(decision_accepted=bot_pb2.PlayResponse.DecisionAccepted(
        request_id=e.request_id, match_id=e.match_id))


def _pong(e: Pong) -> bot_pb2.PlayResponse:
    return bot_pb2.PlayResponse(pong=bot_pb2.PlayResponse.Pong(nonce=e.nonce))


def _typed(event: Message | Mapping[str, Any]) -> Message:
    """A bot event as its typed message (a mapping is read as the bus would read it)."""
    return event if isinstance(event, Message) else messages.from_dict(event, messages.BOT)


def event_to_bytes(event: Message | Mapping[str, Any]) -> bytes:
    """A bot event as a serialized PlayResponse; MessageError for one that is not."""
    msg = _typed(event)
    if isinstance(msg, DecisionRequest):
        return _decision_bytes(msg)
    return event_to_pb(msg).SerializeToString()


def event_to_pb(event: Message | Mapping[str, Any]) -> bot_pb2.PlayResponse:
    """The PlayResponse for a bot event; MessageError for one that is not a bot event.
    A logged event carries its id in the bot's event log (`event_id`)."""
    msg = _typed(event)
    if isinstance(msg, DecisionRequest):
        return bot_pb2.PlayResponse.FromString(_decision_bytes(msg))
    if isinstance(msg, Logged):
        pb = event_to_pb(msg.message())
        pb.event_id = msg.event_id
        return pb
    if isinstance(msg, MatchStarted):
        return _match_started(msg)
    if isinstance(msg, MatchEnded):
        return _match_ended(msg)
    if isinstance(msg, DecisionRejected):
        return _decision_rejected(msg)
    if isinstance(msg, Pong):
        return _pong(msg)
    if isinstance(msg, DecisionAccepted):
        return _decision_accepted(msg)
    if isinstance(msg, LivenessPing):
        return bot_pb2.PlayResponse(ping=bot_pb2.PlayResponse.Ping(nonce=msg.nonce))
    raise messages.MessageError(f"{msg.TYPE!r} is not sent to bots")


def welcome_pb(bot_id: str, name: str, server_version: str,
               live_match_ids: Iterable[str] = (), replaced: bool = False
               ) -> bot_pb2.PlayResponse:
    """The first message of every play stream."""
    return bot_pb2.PlayResponse(welcome=bot_pb2.PlayResponse.Welcome(
        bot_id=bot_id, name=name, server_version=server_version,
        live_matches=bot_pb2.PlayResponse.LiveMatches(match_ids=sorted(live_match_ids)),
        replaced_another=replaced))


# ------------------------------------------------------- service records

_STATUS: dict[str, match_pb2.MatchStatus.ValueType] = {
    s: match_pb2.MatchStatus.Value(f"MATCH_STATUS_{s.name}") for s in MatchStatus}
_STATUS_NAME: dict[int, str] = {v: k for k, v in _STATUS.items()}


def timestamp(unix_s: float) -> Timestamp:
    """A time (Unix seconds) as a Timestamp."""
    seconds = int(unix_s // 1)
    return Timestamp(seconds=seconds, nanos=int((unix_s - seconds) * 1e9))


def clock_to_pb(clock: Clock) -> game_pb2.ClockPolicy:
    """A clock as a message."""
    return game_pb2.ClockPolicy(move_time_ms=clock.move_time_ms, time_bank_ms=clock.time_bank_ms)


def clock_from_pb(pb: game_pb2.ClockPolicy | None) -> Clock:
    """The clock a request asks for (None: the default); InvalidArgument naming a bad field."""
    return DEFAULT_CLOCK if pb is None else Clock(pb.move_time_ms, pb.time_bank_ms)


def faults_to_pb(faults: Faults) -> game_pb2.FaultPolicy:
    """A fault policy as a message."""
    return game_pb2.FaultPolicy(max_strikes=faults.max_strikes,
                                disconnect_grace_ms=faults.disconnect_grace_ms)


def faults_from_pb(pb: game_pb2.FaultPolicy | None) -> Faults:
    """The fault policy a request asks for (None: the default); InvalidArgument if bad."""
    return DEFAULT_FAULTS if pb is None else Faults(pb.max_strikes, pb.disconnect_grace_ms)


def sandbox_from_pb(pb: game_pb2.SandboxLimits | None, where: str) -> SandboxLimits | None:
    """The sandbox limits a request sets (None: none, or no field set); InvalidArgument
    naming `where`'s field that is out of bounds."""
    if pb is None:
        return None
    try:
        return SandboxLimits.from_dict({name: getattr(pb, name) for name in SANDBOX_BOUNDS
                                        if pb.HasField(name)})  # type: ignore[arg-type]
    except InvalidArgument as exc:
        raise InvalidArgument(f"{where}.{exc}") from None


def sandbox_to_pb(limits: SandboxLimits | None) -> game_pb2.SandboxLimits | None:
    """An event's sandbox limits as a message (None: none set)."""
    if not limits:
        return None
    return game_pb2.SandboxLimits(**limits.items())  # type: ignore[arg-type]


# ---------------------------------------------------------------- arena

_POOL_PB = {Pool.THREE: rating_pb2.RATING_POOL_THREE_PLAYER,
            Pool.TEAMS: rating_pb2.RATING_POOL_TWO_VS_TWO}


def pool_to_pb(pool: str) -> rating_pb2.RatingPool.ValueType:
    """A pool as the wire names it."""
    return _POOL_PB[Pool(pool)]


def pool_from_pb(value: int) -> Pool:
    """The pool a (checked) enum value names; unset is the 3-player pool."""
    return Pool.TEAMS if value == rating_pb2.RATING_POOL_TWO_VS_TWO else Pool.THREE
_ARENA_STATUS = {ArenaStatus.RUNNING: arena_pb2.ARENA_STATUS_RUNNING,
                 ArenaStatus.STOPPED: arena_pb2.ARENA_STATUS_STOPPED}


def arena_pool_from_pb(value: int) -> str:
    """The pool an arena request names: required, and one of the two."""
    if value == rating_pb2.RATING_POOL_UNSPECIFIED:
        raise InvalidArgument("pool: required (RATING_POOL_THREE_PLAYER or "
                              "RATING_POOL_TWO_VS_TWO)")
    check_enum(rating_pb2.RatingPool, value, "pool", "rating pool")
    return pool_from_pb(value)


def arena_settings_from_pb(pool: str, pb: arena_pb2.ArenaSettings, seed: int) -> ArenaSpec:
    """The spec a StartArena asks for; InvalidArgument naming a bad field."""
    return ArenaSpec.build(
        pool, dict(pb.rules), seed,
        clock_from_pb(pb.clock if pb.HasField("clock") else None),
        faults_from_pb(pb.faults if pb.HasField("faults") else None),
        concurrency=pb.concurrency if pb.HasField("concurrency") else 2,
        anchors=list(pb.anchors),
        max_wait_ms=pb.max_wait_ms if pb.HasField("max_wait_ms") else 10_000,
        sandbox=sandbox_from_pb(pb.sandbox if pb.HasField("sandbox") else None,
                                "settings"))


def arena_to_pb(v: ArenaView) -> arena_pb2.Arena:
    """An arena as GetArena serves it (public: nothing of a board in play but counts)."""
    spec, step = v.info.spec, v.info.step
    pb = arena_pb2.Arena(
        pool=pool_to_pb(spec.pool), status=_ARENA_STATUS[v.info.status],
        settings=arena_pb2.ArenaSettings(
            rules={k: str(x).lower() if isinstance(x, bool) else str(x)
                   for k, x in spec.rules.options().items()},
            clock=clock_to_pb(spec.clock), faults=faults_to_pb(spec.faults),
            concurrency=spec.concurrency, anchors=spec.anchors, max_wait_ms=spec.max_wait_ms,
            sandbox=sandbox_to_pb(spec.sandbox)),
        started_at=timestamp(v.info.started_at),
        bots=[arena_pb2.ArenaBot(bot_id=b.bot_id, name=b.name, house=b.house, online=b.online,
                                 playing=b.playing, games=b.games, waiting=b.waiting)
              for b in v.bots],
        boards=v.boards, games=v.games, released=v.released,
        boards_in_play=[arena_pb2.ArenaBoard(board=board, games=g, finished=f)
                        for board, g, f in v.boards_in_play],
        online=sum(b.online for b in v.bots),
        playing=sum(g - f for _, g, f in v.boards_in_play),
        waiting=int(step.get("waiting", 0)),
        holding=str(step.get("holding", "")))
    if v.info.stopped_at is not None:
        pb.stopped_at.CopyFrom(timestamp(v.info.stopped_at))
    if step.get("step_at"):
        pb.step_at.CopyFrom(timestamp(float(step["step_at"])))
    return pb


def _not_in_enum(enum: Any, value: int, field: str, what: str, unset: str = "") -> str:
    names = ", ".join(n for n, _ in enum.items() if not n.endswith("_UNSPECIFIED"))
    return (f"{field}: {value} is not a {what}; expected one of {names}"
            + (f" ({unset})" if unset else ""))


def check_enum(enum: Any, value: int, field: str, what: str, unset: str = "") -> None:
    """InvalidArgument naming `field` unless `value` is one of the protobuf `enum`'s values
    (the UNSPECIFIED zero included: `unset` says what it means)."""
    if value not in enum.values():
        raise InvalidArgument(_not_in_enum(enum, value, field, what, unset))


def match_status_name(status: int) -> str:
    """The store's name (`queued`, ...) for a MatchStatus; InvalidArgument for another value."""
    if status not in _STATUS_NAME:
        raise InvalidArgument(_not_in_enum(match_pb2.MatchStatus, status, "status",
                                           "match status"))
    return _STATUS_NAME[status]


def bot_to_pb(record: BotRecord, connected: bool, owner_name: str = "",
              versions: Sequence[str] = (), hosted: HostedVersion | None = None,
              log_tail: str = "") -> bot_pb2.Bot:
    """A stored bot as a message (never its token hash); `hosted` for a hosted version,
    with its log's tail only when the caller may read it (its owner, the admin)."""
    pb = bot_pb2.Bot(bot_id=record.bot_id, name=record.name, connected=connected,
                     house=record.house, owner_id=record.owner, owner_name=owner_name,
                     previous_id=record.previous, version_ids=list(versions))
    if not record.house:  # a house bot was never registered
        pb.created_at.CopyFrom(timestamp(record.created_at))
    if record.retired:
        pb.retired_at.CopyFrom(timestamp(record.retired_at))
    if hosted is not None:
        pb.hosted.CopyFrom(hosted_to_pb(hosted, number_of(record.name), log_tail))
    return pb


_VERSION_STATUS = {
    VersionStatus.BUILDING: bot_pb2.VERSION_STATUS_BUILDING,
    VersionStatus.VALIDATING: bot_pb2.VERSION_STATUS_VALIDATING,
    VersionStatus.ACTIVE: bot_pb2.VERSION_STATUS_ACTIVE,
    VersionStatus.FAILED: bot_pb2.VERSION_STATUS_FAILED,
}


def hosted_to_pb(v: HostedVersion, number: int, log_tail: str = "") -> bot_pb2.HostedVersion:
    """A hosted version's record as a message."""
    pb = bot_pb2.HostedVersion(
        line=v.line, number=number, digest=v.digest, size=v.size, runtime=v.runtime,
        command=list(v.command), reason=v.reason, log_tail=log_tail,
        status=_VERSION_STATUS.get(v.status, bot_pb2.VERSION_STATUS_UNSPECIFIED))
    if v.updated_at:
        pb.updated_at.CopyFrom(timestamp(v.updated_at))
    return pb


def match_to_pb(record: MatchRecord, *, with_transcript: bool = True,
                sight: Sight = Sight.ALL) -> match_pb2.Match:
    """A stored match as a message, as much of it as `sight` allows: the seed and the
    transcript (which fix and show every deal) only with Sight.ALL, and nothing of the
    plays (the result, the action count) with Sight.STATUS."""
    spec = record.spec
    reveal = sight is Sight.ALL
    pb = match_pb2.Match(
        match_id=spec.match_id,
        status=_STATUS.get(record.status, match_pb2.MATCH_STATUS_UNSPECIFIED),
        players=spec.players,
        bot_ids=spec.bot_ids,
        seat_names=spec.seat_names,
        seed=spec.seed if reveal else 0,
        rules=rules_to_pb(spec.rules),
        clock=clock_to_pb(spec.clock),
        faults=faults_to_pb(spec.faults),
        # The event that scheduled it, by kind, and as one reference.
        tournament_id=spec.event_id(EventKind.TOURNAMENT),
        test_id=spec.event_id(EventKind.TEST),
        actions_played=record.actions if sight is not Sight.STATUS else 0,
        created_at=timestamp(record.created_at),
        error=record.error,
        board=str(spec.meta.get("board", "")) if spec.boarded else "",
        arena=spec.event_id(EventKind.ARENA),
    )
    if spec.event is not None:
        pb.event.CopyFrom(event_ref_to_pb(spec.event))
    if record.result is not None and sight is not Sight.STATUS:
        pb.result.CopyFrom(result_to_pb(record.result))
    if record.transcript is not None and with_transcript and reveal:
        pb.transcript_json = json.dumps(record.transcript, separators=(",", ":"))
    if record.started_at is not None:
        pb.started_at.CopyFrom(timestamp(record.started_at))
    if record.finished_at is not None:
        pb.finished_at.CopyFrom(timestamp(record.finished_at))
    return pb


# ------------------------------------------------------------ tournaments

# Each registered format is the enum value TOURNAMENT_FORMAT_<NAME> (see tournaments.registry).
_FORMATS: dict[tournament_pb2.TournamentFormat.ValueType, str] = {
    tournament_pb2.TournamentFormat.Value(f"TOURNAMENT_FORMAT_{name.upper()}"): name
    for name in formats.names()
}
_FORMAT_PB = {v: k for k, v in _FORMATS.items()}
_SEEDINGS: dict[tournament_pb2.Seeding.ValueType, str] = {
    tournament_pb2.SEEDING_UNSPECIFIED: "rating",
    tournament_pb2.SEEDING_RATING: "rating",
    tournament_pb2.SEEDING_GIVEN_ORDER: "given",
}
_T_STATUS: dict[str, tournament_pb2.TournamentStatus.ValueType] = {
    s: tournament_pb2.TournamentStatus.Value(f"TOURNAMENT_STATUS_{s.name}")
    for s in TournamentStatus}
_SECTIONS: dict[str, tournament_pb2.BracketSide.ValueType] = {
    "W": tournament_pb2.BRACKET_SIDE_WINNERS,
    "T": tournament_pb2.BRACKET_SIDE_WINNERS,
    "L": tournament_pb2.BRACKET_SIDE_LOSERS,
    "GF": tournament_pb2.BRACKET_SIDE_GRAND_FINAL,
}


# The flat option fields of the spec from before formats owned their options (deprecated):
# a request may still set them instead of `format_options`; responses mirror them.
_LEGACY_OPTIONS = ("rounds", "series_length", "rotate_partners", "all_triples")
_ONEOF: Literal["format_options"] = "format_options"


def _options_from_pb(pb: tournament_pb2.TournamentSpec, fmt: str) -> dict[str, Any]:
    """The format's options a request asks for, in their JSON form: the format's message
    in `format_options` (the proto3 JSON of it is the options' JSON form, see
    `tournaments.options`), or else the deprecated flat fields the format takes."""
    legacy = {f: getattr(pb, f) for f in _LEGACY_OPTIONS if getattr(pb, f)}  # not zero
    which: str | None = pb.WhichOneof(_ONEOF)
    if which is None:
        return flat_options(fmt, legacy)
    if which != fmt:
        raise InvalidArgument(f"spec.{which}: options of the {which} format, but spec.format "
                              f"is {fmt}; set spec.{fmt} (or nothing) instead")
    stray = [name for name, value in legacy.items() if value != OLD_DEFAULTS.get(name)]
    if stray:
        raise InvalidArgument(f"spec.{stray[0]}: deprecated; with spec.{which} set, give "
                              f"every option there")
    return json_format.MessageToDict(getattr(pb, which), preserving_proto_field_name=True)


def spec_request_from_pb(pb: tournament_pb2.TournamentSpec) -> dict[str, Any]:
    """The fields of a CreateTournament spec as `tournaments.spec.make_spec` takes them."""
    if pb.format not in _FORMATS:
        raise InvalidArgument("spec.format: choose " + ", ".join(
            n.upper() for n in _FORMATS.values()))
    if pb.seeding not in _SEEDINGS:
        raise InvalidArgument(f"spec.seeding: unknown value {pb.seeding}")
    fmt = _FORMATS[pb.format]
    return {
        "name": pb.name,
        "players": pb.players,
        "format": fmt,
        "bot_ids": list(pb.bot_ids),
        "rules": dict(pb.rules),
        "clock": clock_from_pb(pb.clock if pb.HasField("clock") else None),
        "faults": faults_from_pb(pb.faults if pb.HasField("faults") else None),
        "seed": pb.seed if pb.HasField("seed") else None,
        "duplicate": _duplicate_from_pb(pb),
        "seeding": _SEEDINGS[pb.seeding],
        "options": _options_from_pb(pb, fmt),
        "sandbox": sandbox_from_pb(pb.sandbox if pb.HasField("sandbox") else None, "spec"),
    }


_DUPLICATE: dict[str, tournament_pb2.DuplicateMode.ValueType] = {
    mode: tournament_pb2.DuplicateMode.Value(f"DUPLICATE_MODE_{mode.upper()}")
    for mode in DUPLICATE_MODES}
_DUPLICATE_NAME = {v: k for k, v in _DUPLICATE.items()}


def _duplicate_from_pb(pb: tournament_pb2.TournamentSpec) -> str:
    """The duplicate mode a spec asks for (`duplicate_deals: false` is fresh deals)."""
    if pb.HasField("duplicate_deals") and not pb.duplicate_deals:
        return "fresh"
    if pb.duplicate == tournament_pb2.DUPLICATE_MODE_UNSPECIFIED:
        return "boards"
    if pb.duplicate not in _DUPLICATE_NAME:
        raise InvalidArgument(_not_in_enum(tournament_pb2.DuplicateMode, pb.duplicate,
                                           "spec.duplicate", "duplicate mode",
                                           "unset means boards"))
    return _DUPLICATE_NAME[pb.duplicate]


def spec_to_pb(spec: TournamentSpec, reveal: bool) -> tournament_pb2.TournamentSpec:
    """A stored tournament spec as a message; the seed only when `reveal`."""
    pb = tournament_pb2.TournamentSpec(
        name=spec.name, players=spec.players, format=_FORMAT_PB[spec.format],
        bot_ids=spec.bot_ids, rules={k: _option_text(v) for k, v in spec.rules.options().items()},
        clock=clock_to_pb(spec.clock), faults=faults_to_pb(spec.faults),
        duplicate_deals=spec.duplicate != "fresh", duplicate=_DUPLICATE[spec.duplicate],
        seeding=(tournament_pb2.SEEDING_RATING if spec.seeding == "rating"
                 else tournament_pb2.SEEDING_GIVEN_ORDER),
        sandbox=sandbox_to_pb(spec.sandbox),
    )
    options = formats.get(spec.format).options(spec).to_json()  # every field, defaults too
    message = getattr(pb, spec.format)
    message.SetInParent()
    json_format.ParseDict(options, message)
    for name in _LEGACY_OPTIONS:  # mirrored for clients that read the flat fields
        if isinstance(options.get(name), (bool, int)):
            setattr(pb, name, options[name])
    if reveal:
        pb.seed = spec.seed
    return pb


def _option_text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def tournament_to_pb(spec: TournamentSpec, info: TournamentInfo,
                     reveal: bool) -> tournament_pb2.Tournament:
    """A stored tournament (spec + status) as a message."""
    pb = tournament_pb2.Tournament(
        tournament_id=spec.tournament_id, spec=spec_to_pb(spec, reveal),
        status=_T_STATUS.get(info.status, tournament_pb2.TOURNAMENT_STATUS_UNSPECIFIED),
        matches_total=info.total, matches_done=info.done,
        error=info.error, notes=formats.notes(spec) + redeal_notes(info.redealt),
    )
    if info.created_at:
        pb.created_at.CopyFrom(timestamp(info.created_at))
    if info.finished_at:
        pb.finished_at.CopyFrom(timestamp(info.finished_at))
    return pb


def standings_to_pb(view: StandingsView) -> tournament_pb2.Standings:
    """A tournament's standings, crosstable and bracket as a message."""
    pb = tournament_pb2.Standings(
        tournament_id=view.tournament_id, sequence=view.sequence,
        matches_done=view.done, matches_total=view.total, notes=view.notes,
    )
    for row in view.rows:
        pb.rows.append(tournament_pb2.StandingRow(
            rank=row["rank"], bot_id=row["bot_id"], name=row["name"], games=row["games"],
            wins=row["wins"], draws=row["draws"], losses=row["losses"], points=row["points"],
            score=row["score"], rating=row.get("rating", 0.0), forfeits=row["forfeits"],
            eliminated=row.get("eliminated", False),
            tournament_rating=row.get("tournament_rating"),
            forfeit_wins=row.get("forfeit_wins", 0),
        ))
    for bot, cells in view.crosstable.items():
        pb.crosstable.append(tournament_pb2.CrosstableRow(bot_id=bot, cells=[
            tournament_pb2.CrosstableCell(opponent_bot_id=o, games=c[0], wins=c[1], draws=c[2],
                                          losses=c[3])
            for o, c in sorted(cells.items())
        ]))
    if view.bracket is not None:
        pb.bracket.CopyFrom(_bracket_to_pb(view))
    pb.boards_in_play.extend(
        tournament_pb2.BoardProgress(board=board_id(view.tournament_id, unit), games=games,
                                     games_finished=done, games_running=running)
        for unit, games, done, running in view.boards)
    if view.ranking is not None:
        pb.ranking.CopyFrom(_ranking_to_pb(view.ranking))
    pb.rounds.extend(tournament_pb2.Round(
        number=r.number, board=board_id(view.tournament_id, r.unit),
        tables=[tournament_pb2.RoundTable(match_id=t.match_id, bot_ids=t.bot_ids,
                                          points=t.points) for t in r.tables],
        bye_bot_ids=[b for entrant in r.byes for b in entrant])
        for r in view.rounds)
    return pb


def _ranking_to_pb(ranking: Ranking) -> tournament_pb2.Ranking:
    """A format's own ranking (`tournaments.ranking`) as a message."""
    return tournament_pb2.Ranking(
        columns=[tournament_pb2.RankingColumn(key=c.key, title=c.title,
                                              explanation=c.explanation, short_title=c.short)
                 for c in ranking.columns],
        rows=[tournament_pb2.RankingRow(
            rank=row.rank, bot_ids=row.bot_ids, values=row.values, games=row.games,
            byes=row.byes, rounds=[tournament_pb2.EntrantRound(table=e.table, points=e.points)
                                   for e in row.rounds])
              for row in ranking.rows])


def _bracket_to_pb(view: StandingsView) -> tournament_pb2.Bracket:
    state = view.bracket
    assert state is not None
    seeds = {b: i + 1 for i, b in enumerate(state.bracket.participants)}
    out = tournament_pb2.Bracket(champion_bot_id=state.champion or "")
    rounds: dict[tuple[str, int], tournament_pb2.BracketRound] = {}
    for ms in state.matches:
        m = ms.match
        key = (m.section, m.round)
        if key not in rounds:
            name = "grand final" if m.section == "GF" else (
                f"{'losers' if m.section == 'L' else 'round'} {m.round}")
            side = _SECTIONS.get(m.section, tournament_pb2.BRACKET_SIDE_UNSPECIFIED)
            rounds[key] = tournament_pb2.BracketRound(side=side,
                                                       number=m.round, name=name)
        status = ms.status.value
        state_pb = {
            "pending": tournament_pb2.BracketMatch.STATE_WAITING,
            "ready": tournament_pb2.BracketMatch.STATE_PLAYING,
            "done": tournament_pb2.BracketMatch.STATE_DECIDED,
            "bye": tournament_pb2.BracketMatch.STATE_BYE,
            "skipped": tournament_pb2.BracketMatch.STATE_BYE,
        }[status]
        bm = tournament_pb2.BracketMatch(
            bracket_match_id=m.id, state=state_pb, winner_bot_id=ms.winner or "",
            match_ids=view.bracket_games.get(m.id, []),
        )
        for slot, (who, src) in enumerate(zip(ms.slots, m.sources, strict=True)):
            wins, score = view.slot_scores.get((m.id, who or ""), (0, 0))
            bm.slots.append(tournament_pb2.BracketSlot(
                bot_id=who or "", seed=seeds.get(who or "", 0), source=_source_text(src),
                wins=wins, score=score))
            del slot
        for rank, nxt, _slot in state.bracket.destinations(m.id):
            if rank == 1:
                bm.winner_to = nxt
            elif rank == 2 and not bm.loser_to:
                bm.loser_to = nxt
        rounds[key].matches.append(bm)
    out.rounds.extend(rounds.values())
    return out


def _source_text(src: object) -> str:
    seed = getattr(src, "seed", None)
    if seed is not None:
        return f"seed {seed}"
    rank = getattr(src, "rank", 1)
    what = "winner" if rank == 1 else "loser" if rank == 2 else f"place {rank}"
    return f"{what} of {getattr(src, 'match_id', '?')}"


def tournament_event_to_pb(sequence: int, event: Message,
                           extra: Mapping[str, Any]) -> tournament_pb2.WatchTournamentResponse:
    """One stored tournament event as a watch message; `extra` carries the messages the
    servicer attaches (`standings`, `tournament`)."""
    pb = tournament_pb2.WatchTournamentResponse(sequence=sequence)
    when = getattr(event, "time", 0.0)
    if when:
        pb.time.CopyFrom(timestamp(float(when)))
    W = tournament_pb2.WatchTournamentResponse
    if isinstance(event, TournamentMatchStarted):
        pb.match_started.CopyFrom(W.MatchStarted(
            match_id=event.match_id, bot_ids=event.bot_ids, seat_names=event.seat_names,
            bracket_match_id=event.bracket_match_id))
    elif isinstance(event, TournamentMatchFinished):
        pb.match_finished.CopyFrom(W.MatchFinished(
            match_id=event.match_id, result=result_to_pb(event.result),
            matches_done=event.done, matches_total=event.total))
    elif isinstance(event, messages.StandingsChanged):
        pb.standings_changed.standings.CopyFrom(extra["standings"])
    elif isinstance(event, messages.TournamentFinished):
        pb.tournament_finished.tournament.CopyFrom(extra["tournament"])
        pb.tournament_finished.standings.CopyFrom(extra["standings"])
    return pb


def ratings_to_pb(pool: rating_pb2.RatingPool.ValueType, table: RatingTable | None,
                  names: Mapping[str, str], games: int,
                  los: Sequence[Sequence[float]] | None = None, method_name: str = "",
                  methods: Sequence[StoredMethod] = ()) -> rating_pb2.GetRatingsResponse:
    """A stored rating table (None: nothing rated yet) of rating method `method_name` as
    the GetRatings response; `los` is the LOS matrix in the table's order, when asked
    for; `methods` the methods to list (as_of 0: no table yet)."""
    pb = rating_pb2.GetRatingsResponse(pool=pool, games=games, method_name=method_name)
    for m in methods:
        listed = pb.methods.add(name=m.name, title=m.title, fitted_games=m.games)
        if m.as_of:
            listed.as_of.CopyFrom(timestamp(m.as_of))
    if table is None:
        pb.method = "no rated games yet"
        return pb
    pb.method = table.method
    pb.as_of.CopyFrom(timestamp(table.as_of))
    pb.fitted_games = table.games
    pb.boards = table.boards
    pb.provisional = table.provisional
    pb.level = table.level
    for row in table.rows:
        rating = rating_pb2.Rating(bot_id=row.bot_id, name=names.get(row.bot_id, row.bot_id),
                                   rating=row.rating, games=row.games,
                                   provisional=table.provisional)
        if row.ci_low is not None and row.ci_high is not None:
            rating.ci_low, rating.ci_high = row.ci_low, row.ci_high
        if row.los_next is not None:
            rating.los_next = row.los_next
        pb.ratings.append(rating)
    for row, values in zip(table.rows, los or (), strict=False):
        pb.los.append(rating_pb2.LosRow(bot_id=row.bot_id, los=list(values)))
    return pb


def rating_history_to_pb(pool: rating_pb2.RatingPool.ValueType, bot_id: str,
                         points: Sequence[RatingPoint]) -> rating_pb2.GetRatingHistoryResponse:
    """A bot's stored rating points as the GetRatingHistory response."""
    pb = rating_pb2.GetRatingHistoryResponse(pool=pool, bot_id=bot_id)
    for p in points:
        point = rating_pb2.RatingPoint(rating=p.rating, games=p.games, pool_games=p.pool_games)
        point.as_of.CopyFrom(timestamp(p.as_of))
        if p.ci_low is not None and p.ci_high is not None:
            point.ci_low, point.ci_high = p.ci_low, p.ci_high
        pb.points.append(point)
    return pb


_FAULT_KIND = {
    "late": match_pb2.WatchMatchResponse.Fault.KIND_LATE,
    "illegal": match_pb2.WatchMatchResponse.Fault.KIND_ILLEGAL_ACTION,
    "disconnected": match_pb2.WatchMatchResponse.Fault.KIND_DISCONNECTED,
    "reconnected": match_pb2.WatchMatchResponse.Fault.KIND_RECONNECTED,
}


def match_event_to_pb(sequence: int, event: WatchEvent,
                      match: match_pb2.Match) -> match_pb2.WatchMatchResponse:
    """One match event (`store.match_events`, already cut to its audience) as a message."""
    W = match_pb2.WatchMatchResponse
    pb = W(sequence=sequence)
    if event.time:
        pb.time.CopyFrom(timestamp(event.time))
    if isinstance(event, ActionTaken):
        at = W.ActionTaken(seat=event.seat, hand_number=event.hand_number,
                           kind=game_pb2.ActionKind.ValueType(event.kind + 1),
                           actions_played=event.actions_played)
        if event.action is not None:
            at.action.CopyFrom(action_to_pb(ACTIONS[event.action]))
        pb.action_taken.CopyFrom(at)
    elif isinstance(event, Fault):
        fault = W.Fault(seat=event.seat, kind=_FAULT_KIND[event.kind], strikes=event.strikes,
                        message=event.message)
        if event.replacement is not None:
            fault.replacement_action_id = event.replacement
        pb.fault.CopyFrom(fault)
    elif isinstance(event, HandEnded):
        he = W.HandEnded(hand_number=event.hand_number, tricks_won=event.tricks_won,
                         points=event.points, scores=event.scores)
        if event.bidder is not None:
            he.bidder = event.bidder
            he.bid = event.bid or 0
            he.trump = game_pb2.Trump.ValueType(
                parse_contract(event.trump) + 1 if event.trump else 0)
            he.made = bool(event.made)
        pb.hand_ended.CopyFrom(he)
    elif isinstance(event, MatchFinished):
        mf = W.MatchFinished(status=_STATUS.get(event.status,
                                                match_pb2.MATCH_STATUS_UNSPECIFIED),
                             error=event.error)
        if event.result is not None:
            mf.result.CopyFrom(result_to_pb(event.result))
        pb.match_finished.CopyFrom(mf)
    else:  # Started
        pb.match_started.match.CopyFrom(match)
    return pb
