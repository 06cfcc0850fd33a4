"""The protobuf boundary: engine values -> messages -> bytes -> messages -> engine values."""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from clients import wire as cw
from moon import Action, GameState, Observation, ParseError, Phase, Rules, RulesError
from moon.actions import ACTIONS, DISCARD_BASE, PLAY_BASE, ActionKind
from moon.tiles import ALL_TILES
from proto.moon.v1 import bot_pb2, game_pb2, match_pb2
from server import wire as sw
from store.bots import BotRecord
from store.errors import InvalidArgument
from store.match_events import Sight
from store.matches import MatchRecord
from store.records import DEFAULT_CLOCK, DEFAULT_FAULTS, Clock, Faults, MatchSpec
from store.refs import EventRef

# name -> (players, options, games): small max_hands so random games reach OVER.
VARIANTS: dict[str, tuple[int, dict[str, object]]] = {
    "3p": (3, {"max_hands": 4}),
    "4p": (4, {"max_hands": 4}),
    "3p-no-0-0": (3, {"double_blank": False, "max_hands": 4}),
    "3p-trump-before-widow": (3, {"trump_before_widow": True, "max_hands": 4}),
    "3p-marks-forced": (3, {"scoring": "marks", "all_pass": "forced", "min_bid": 3,
                            "moon_wins": True, "marks_target": 2, "max_hands": 6}),
    "4p-min-5": (4, {"min_bid": 5, "target": 11, "all_pass": "forced", "max_hands": 4}),
}
GAMES = 6


def _games(players: int, options: dict[str, object]) -> Iterator[tuple[GameState, int]]:
    """(state, game number) before every action of a few random games, and at each end."""
    rules = Rules.make(players, options)
    for g in range(GAMES):
        st = GameState.new(rules, seed=1000 * g + 7)
        rng = random.Random(g)
        while True:
            yield st, g
            if st.is_over:
                break
            st.apply_id(rng.choice(st.legal_ids()))


def _roundtrip(obs: Observation) -> Observation:
    data = sw.observation_to_pb(obs).SerializeToString()
    return cw.observation_from_pb(game_pb2.Observation.FromString(data))


def _decision_event(st: GameState, seat: int, n: int) -> dict[str, Any]:
    """A decision event as a match job publishes it (through JSON, as on Redis)."""
    return json.loads(json.dumps({
        "type": "decision", "request_id": f"m-1/{n}", "match_id": "m-1", "seat": seat,
        "observation": st.observation(seat).to_json(), "legal": list(st.legal_ids()),
        "time_limit_ms": 2000, "time_bank_ms": 30000 + n,
        "deadline_unix_ms": 1_700_000_000_123 + n, "strikes": n % 3,
    }))


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_observations_round_trip_in_every_phase(variant: str) -> None:
    players, options = VARIANTS[variant]
    phases: set[Phase] = set()
    count = 0
    for st, _ in _games(players, options):
        for seat in range(players):
            obs = st.observation(seat)
            phases.add(obs.phase)
            pb = sw.observation_to_pb(obs)
            assert _roundtrip(obs) == obs
            # The hot path (from the JSON form) gives exactly the reference message.
            fast = sw.observation_json_to_pb(json.loads(json.dumps(obs.to_json())))
            assert fast == pb, f"{variant}: fast encoder differs for {obs}"
            if seat != obs.bidder:
                assert not pb.HasField("widow") and not pb.HasField("discard")
            count += 1
    expected = set(Phase)
    if players == 4 or options.get("double_blank") is False:
        expected.discard(Phase.DISCARD)
    assert phases == expected, f"{variant}: phases seen {sorted(phases)}"
    assert count > 500


def test_extreme_values_round_trip() -> None:
    st = GameState.new(Rules.make(3), seed=3)
    while st.current_phase is not Phase.PLAY:
        st.apply_id(st.legal_ids()[-1])
    st.apply_id(st.legal_ids()[0])
    obs = dataclasses.replace(st.observation(st.to_act), scores=(-6000, 250, 0),
                              hand_number=100_000)
    assert _roundtrip(obs) == obs
    assert sw.observation_json_to_pb(obs.to_json()) == sw.observation_to_pb(obs)


def test_seat_zero_and_bid_zero_are_present_not_default() -> None:
    """`bidder` 0 and a pass (bid 0) must survive: presence, not the zero default."""
    for st, _ in _games(3, {"max_hands": 2}):
        obs = st.observation(0)
        if obs.bidder == 0:
            pb = game_pb2.Observation.FromString(sw.observation_to_pb(obs).SerializeToString())
            assert pb.HasField("bidder") and pb.bidder == 0
            assert cw.observation_from_pb(pb).bidder == 0
            return
    pytest.fail("no game with seat 0 as bidder")


@pytest.mark.parametrize("variant", ["3p", "4p", "3p-no-0-0", "3p-trump-before-widow"])
def test_decision_events_carry_observation_and_legal_actions(variant: str) -> None:
    players, options = VARIANTS[variant]
    for n, (st, _) in enumerate(_games(players, options)):
        if st.is_over:
            continue
        seat = st.to_act
        event = _decision_event(st, seat, n)
        msg = sw.event_to_pb(event)
        assert msg.WhichOneof("message") == "decision_request"
        assert bot_pb2.PlayResponse.FromString(sw.event_to_bytes(event)) == msg
        req = msg.decision_request
        assert (req.request_id, req.match_id, req.seat) == (f"m-1/{n}", "m-1", seat)
        assert (req.time_limit_ms, req.time_bank_ms, req.strikes) == (2000, 30000 + n, n % 3)
        assert req.deadline.ToMilliseconds() == 1_700_000_000_123 + n
        assert req.observation == sw.observation_to_pb(st.observation(seat))
        assert cw.observation_from_pb(req.observation) == st.observation(seat)
        assert cw.actions_from_pb(req.legal_actions) == st.legal_actions()
        assert [a.label for a in req.legal_actions] == [a.label for a in st.legal_actions()]


# ------------------------------------------------------------------ actions

_TRUMP_NAMES = ["TRUMP_ZERO", "TRUMP_ONE", "TRUMP_TWO", "TRUMP_THREE", "TRUMP_FOUR",
                "TRUMP_FIVE", "TRUMP_SIX", "TRUMP_DOUBLES", "TRUMP_NONE"]


@pytest.mark.parametrize("action", list(ACTIONS.values()), ids=lambda a: a.label)
def test_every_action_round_trips(action: Action) -> None:
    pb = game_pb2.Action.FromString(sw.action_to_pb(action).SerializeToString())
    assert (pb.id, pb.label) == (action.id, action.label)
    assert game_pb2.ActionKind.Name(pb.kind) == f"ACTION_KIND_{action.kind.name}"
    assert cw.actions_from_pb([pb]) == (action,)
    has_tile = action.kind in (ActionKind.DISCARD, ActionKind.PLAY)
    assert pb.HasField("tile") == has_tile
    assert pb.bid == (action.value if action.kind is ActionKind.BID else 0)
    if action.kind is ActionKind.TRUMP:
        assert game_pb2.Trump.Name(pb.trump) == _TRUMP_NAMES[action.value]
    else:
        assert pb.trump == game_pb2.TRUMP_UNSPECIFIED
    if has_tile:
        tile = cw.tile_from_pb(pb.tile)
        assert tile == action.tile
        base = DISCARD_BASE if action.kind is ActionKind.DISCARD else PLAY_BASE
        assert pb.id == base + tile.high * (tile.high + 1) // 2 + tile.low


def test_documented_action_ids() -> None:
    """The id table in game.proto, spot-checked against the engine."""
    assert [Action.parse(x).id for x in ("pass", "bid 3", "bid 7", "bid 21")] == [0, 3, 7, 21]
    assert [Action.parse(f"trump {x}").id for x in ("0", "6", "doubles", "none")] == [30, 36, 37,
                                                                                       38]
    assert Action.parse("discard 0-0").id == 40 and Action.parse("play 6-6").id == 97
    assert Action.parse("play 6-4").id == 95 and Action.parse("discard 6-4").id == 65
    assert sorted(ACTIONS) == [0, 3, 4, 5, 6, 7, 21, *range(30, 39), *range(40, 68),
                               *range(70, 98)]


def test_unknown_or_inconsistent_actions_are_refused() -> None:
    with pytest.raises(ParseError, match="unknown action id 99"):
        cw.actions_from_pb([game_pb2.Action(id=99, label="play 7-7")])
    with pytest.raises(ParseError, match="unknown action id 1 "):
        cw.action_from_pb(game_pb2.Action(id=1))
    with pytest.raises(ParseError, match="disagree"):
        cw.action_from_pb(game_pb2.Action(id=0, label="bid 4", kind=game_pb2.ACTION_KIND_BID))
    # A bare id (kind left unset) is enough.
    assert cw.action_from_pb(game_pb2.Action(id=95)) == Action.parse("play 6-4")


def test_tiles() -> None:
    for t in ALL_TILES:
        assert cw.tile_from_pb(sw.tile_to_pb(t)) == t
    for high, low in ((3, 4), (7, 0)):
        with pytest.raises(ParseError, match="not a double-six tile"):
            cw.tile_from_pb(game_pb2.Tile(high=high, low=low))


def test_bad_enum_values_are_refused() -> None:
    obs = sw.observation_to_pb(GameState.new(Rules.make(3), seed=1).observation(0))
    obs.phase = game_pb2.PHASE_UNSPECIFIED
    with pytest.raises(ParseError, match="phase"):
        cw.observation_from_pb(obs)
    obs.phase = game_pb2.PHASE_BID
    obs.trump = game_pb2.Trump.ValueType(12)
    with pytest.raises(ParseError, match="trump"):
        cw.observation_from_pb(obs)


# -------------------------------------------------------------------- rules

RULE_SETS = [
    Rules.make(3),
    Rules.make(4),
    Rules.make(3, {"double_blank": False, "min_bid": 3, "all_pass": "forced"}),
    Rules.make(3, {"trump_before_widow": True, "scoring": "marks", "marks_target": 5}),
    Rules.make(4, {"target": 31, "moon_wins": True, "max_hands": 12345, "min_bid": 5}),
]


@pytest.mark.parametrize("rules", RULE_SETS, ids=str)
def test_rules_round_trip(rules: Rules) -> None:
    data = sw.rules_to_pb(rules).SerializeToString()
    assert cw.rules_from_pb(game_pb2.Rules.FromString(data)) == rules
    as_text = {k: str(v).lower() for k, v in rules.options().items()}
    assert sw.rules_from_map(rules.players, as_text) == rules


def test_rules_errors() -> None:
    with pytest.raises(RulesError, match="min_bid"):
        sw.rules_from_map(3, {"min_bid": "9"})
    with pytest.raises(RulesError, match="unknown rules option"):
        sw.rules_from_map(3, {"minbid": "4"})
    pb = sw.rules_to_pb(Rules.make(3))
    pb.all_pass = game_pb2.ALL_PASS_UNSPECIFIED
    with pytest.raises(RulesError, match="all_pass"):
        cw.rules_from_pb(pb)
    pb = sw.rules_to_pb(Rules.make(3))
    pb.players = 5
    with pytest.raises(RulesError, match="player count"):
        cw.rules_from_pb(pb)


# ------------------------------------------------------------------- events

RESULTS: list[dict[str, Any]] = [
    {"seats": ["a", "b", "c"], "final": [21, -8, 4], "winner": 0, "end": "normal",
     "forfeit": None, "placement": [1, 3, 2]},
    {"seats": ["a", "b", "c", "d"], "final": [15, 15], "winner": None, "end": "hand_limit",
     "forfeit": None, "placement": [1, 1, 1, 1]},
    {"seats": ["a", "b", "c"], "final": [3, 9, 9], "winner": None, "end": "forfeit",
     "forfeit": {"seat": 0, "reason": "3 strikes (late or illegal answers)"},
     "placement": [3, 1, 1]},
]


@pytest.mark.parametrize("result", RESULTS, ids=lambda r: r["end"])
def test_match_ended(result: dict[str, Any]) -> None:
    event = {"type": "match_ended", "match_id": "m-9", "seat": 2, "result": result}
    msg = sw.event_to_pb(event)
    assert msg.WhichOneof("message") == "match_ended"
    ended = msg.match_ended
    assert (ended.match_id, ended.seat) == ("m-9", 2)
    assert ended.result.HasField("winner") == (result["winner"] is not None)
    assert cw.result_from_pb(ended.result) == result
    assert bot_pb2.PlayResponse.FromString(sw.event_to_bytes(event)) == msg
    without = {k: v for k, v in result.items() if k != "forfeit"}  # `forfeit` may be absent
    assert cw.result_from_pb(sw.result_to_pb(without)) == {**without, "forfeit": None}


@pytest.mark.parametrize("with_policies", [False, True])
def test_match_started(with_policies: bool) -> None:
    rules = Rules.make(4, {"min_bid": 5})
    event: dict[str, Any] = {
        "type": "match_started", "match_id": "m-2", "seat": 3, "players": 4,
        "rules": rules.options(), "seat_names": ["a", "b", "a", "b"], "tournament_id": "",
    }
    if with_policies:
        event["clock"] = {"move_time_ms": 500, "time_bank_ms": 0}
        event["faults"] = {"max_strikes": 2, "disconnect_grace_ms": 1000}
    started = sw.event_to_pb(json.loads(json.dumps(event))).match_started
    assert (started.match_id, started.seat, started.players) == ("m-2", 3, 4)
    assert list(started.seat_names) == ["a", "b", "a", "b"] and started.tournament_id == ""
    assert cw.rules_from_pb(started.rules) == rules
    assert started.HasField("clock") == started.HasField("faults") == with_policies
    if with_policies:
        assert started.clock.move_time_ms == 500 and started.faults.max_strikes == 2


@pytest.mark.parametrize("reason", ["illegal_action", "late", "not_yours", "unknown_request"])
@pytest.mark.parametrize("replacement", [None, 0, 95])
def test_decision_rejected(reason: str, replacement: int | None) -> None:
    event = {"type": "decision_rejected", "request_id": "m-1/4", "match_id": "m-1",
             "reason": reason, "message": "why", "replacement_action_id": replacement,
             "strikes": 2}
    msg = sw.event_to_pb(event)
    rej = msg.decision_rejected
    assert bot_pb2.PlayResponse.DecisionRejected.Reason.Name(rej.reason) == (
        f"REASON_{reason.upper()}")
    assert (rej.request_id, rej.match_id, rej.message, rej.strikes) == ("m-1/4", "m-1", "why", 2)
    # 0 (pass) is a real replacement: presence, not the zero default.
    assert rej.HasField("replacement_action_id") == (replacement is not None)
    if replacement is not None:
        assert rej.replacement_action_id == replacement
    assert bot_pb2.PlayResponse.FromString(sw.event_to_bytes(event)) == msg


def test_pong_welcome_and_unknown_events() -> None:
    assert sw.event_to_pb({"type": "pong", "nonce": 2**63}).pong.nonce == 2**63
    welcome = sw.welcome_pb("b-1", "alice", "moonshot/0.1").welcome
    assert (welcome.bot_id, welcome.name, welcome.server_version) == ("b-1", "alice",
                                                                     "moonshot/0.1")
    with pytest.raises(ValueError, match="not a bot event"):
        sw.event_to_pb({"type": "gossip"})
    with pytest.raises(ValueError, match="not a bot event"):
        sw.event_to_bytes({})


def test_decision_answer() -> None:
    play = Action.parse("play 6-4")
    for answer in (play, play.id):
        msg = bot_pb2.PlayRequest.FromString(cw.decision_pb("m-1/7", answer).SerializeToString())
        assert msg.WhichOneof("message") == "decision"
        assert (msg.decision.request_id, msg.decision.action_id) == ("m-1/7", 95)


# --------------------------------------------------------- service records


def test_policies() -> None:
    assert sw.clock_from_pb(None) == DEFAULT_CLOCK and sw.faults_from_pb(None) == DEFAULT_FAULTS
    clock, faults = Clock(700, 0), Faults(1, 500)
    assert sw.clock_from_pb(sw.clock_to_pb(clock)) == clock
    assert sw.faults_from_pb(sw.faults_to_pb(faults)) == faults
    with pytest.raises(InvalidArgument, match="move_time_ms"):
        sw.clock_from_pb(game_pb2.ClockPolicy(move_time_ms=0))
    with pytest.raises(InvalidArgument, match="max_strikes"):
        sw.faults_from_pb(game_pb2.FaultPolicy())


def test_bot_and_match_records() -> None:
    bot = sw.bot_to_pb(BotRecord("b-1", "alice", 1_700_000_000.25), True)
    assert (bot.bot_id, bot.name, bot.connected) == ("b-1", "alice", True)
    assert bot.created_at == Timestamp(seconds=1_700_000_000, nanos=250_000_000)

    spec = MatchSpec.build("m-1", 3, ["b-1", "b-2", "b-3"], ["a", "b", "c"],
                           rules={"min_bid": "5"}, seed=42,
                           event=EventRef.tournament("t-1"))
    queued = MatchRecord(spec=spec, status="queued", created_at=1.5, started_at=None,
                         finished_at=None, actions=0, error="", result=None, transcript=None)
    pb = sw.match_to_pb(queued)
    assert pb.status == match_pb2.MATCH_STATUS_QUEUED and pb.seed == 42
    assert cw.rules_from_pb(pb.rules) == spec.rules and pb.tournament_id == "t-1"
    assert (pb.event.kind, pb.event.id) == (game_pb2.EVENT_KIND_TOURNAMENT, "t-1")
    assert not pb.test_id and not pb.arena
    for ref, field in ((EventRef.test("c-1"), "test_id"), (EventRef.arena("2v2"), "arena")):
        other = sw.match_to_pb(dataclasses.replace(
            queued, spec=dataclasses.replace(spec, event=ref)))
        assert getattr(other, field) == ref.id and not other.tournament_id
        assert other.event.id == ref.id
    assert not pb.HasField("result") and not pb.HasField("started_at")

    done = dataclasses.replace(queued, status="finished", started_at=2.0, finished_at=3.0,
                               actions=80, result=RESULTS[0], transcript={"format": "x"})
    pb = sw.match_to_pb(done)
    assert pb.status == match_pb2.MATCH_STATUS_FINISHED and pb.actions_played == 80
    assert cw.result_from_pb(pb.result) == RESULTS[0]
    assert json.loads(pb.transcript_json) == {"format": "x"}
    assert sw.match_to_pb(done, with_transcript=False).transcript_json == ""
    hidden = sw.match_to_pb(done, sight=Sight.LIVE)
    assert hidden.seed == 0 and hidden.transcript_json == ""
    status_only = sw.match_to_pb(done, sight=Sight.STATUS)
    assert status_only.seed == 0 and status_only.transcript_json == ""
    assert not status_only.HasField("result") and status_only.actions_played == 0

    assert sw.match_status_name(match_pb2.MATCH_STATUS_RUNNING) == "running"
    with pytest.raises(InvalidArgument, match="status"):
        sw.match_status_name(match_pb2.MATCH_STATUS_UNSPECIFIED)
