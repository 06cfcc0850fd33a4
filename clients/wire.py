"""The bot side's protobuf boundary: `moon.v1` messages in, engine values out.

This module and `server/wire.py` are the only places that convert between
protobuf messages and the engine's values, so a bot built on the SDK sees the
same `Observation` and `Action` values as one run by `moonshot selfplay`.

Wire enums are the engine's numbers plus one (zero is `*_UNSPECIFIED`). A value
the engine does not know (an action id, a tile, an enum number from a newer
protocol) raises moon.ParseError naming it; a rule set the engine refuses
raises moon.RulesError.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from moon import Action, Observation, ParseError, Rules, RulesError, Tile
from moon.actions import ACTIONS
from moon.observation import BidMade, Phase, Play, Trick
from moon.tiles import TILE_BY_INDEX
from proto.moon.v1 import bot_pb2, game_pb2, rating_pb2
from store.pools import Pool

__all__ = [
    "POOL_CHOICES",
    "action_from_pb",
    "actions_from_pb",
    "decision_pb",
    "observation_from_pb",
    "pool_from_pb",
    "pool_to_pb",
    "result_from_pb",
    "rules_from_pb",
    "tile_from_pb",
]

_ALL_PASS: dict[int, str] = {game_pb2.ALL_PASS_REDEAL: "redeal", game_pb2.ALL_PASS_FORCED: "forced"}
_SCORING: dict[int, str] = {game_pb2.SCORING_POINTS: "points", game_pb2.SCORING_MARKS: "marks"}
_PHASES = tuple(Phase)
_POOL_PB = {Pool.THREE: rating_pb2.RATING_POOL_THREE_PLAYER,
            Pool.TEAMS: rating_pb2.RATING_POOL_TWO_VS_TWO}
POOL_CHOICES = tuple(str(p) for p in Pool)  # what a --pool flag takes


def pool_to_pb(pool: str) -> rating_pb2.RatingPool.ValueType:
    """A pool (`3p`, `2v2`) as the wire names it."""
    return _POOL_PB[Pool.parse(pool)]


def pool_from_pb(value: int) -> Pool:
    """The pool a wire value names (unset reads as the 3-player pool)."""
    return Pool.TEAMS if value == rating_pb2.RATING_POOL_TWO_VS_TWO else Pool.THREE


def tile_from_pb(pb: game_pb2.Tile) -> Tile:
    """The tile a message names; ParseError if it is not a double-six tile."""
    high, low = pb.high, pb.low
    if not low <= high <= 6:
        raise ParseError(f"not a double-six tile: {high}-{low} (expected 0 <= low <= high <= 6)")
    return TILE_BY_INDEX[high * (high + 1) // 2 + low]


def action_from_pb(pb: game_pb2.Action) -> Action:
    """The engine's action with this message's id; ParseError for an id it does not know."""
    action = ACTIONS.get(pb.id)
    if action is None:
        raise ParseError(
            f"unknown action id {pb.id} (label {pb.label!r}): moon.v1 numbers actions "
            "0 pass, 3..7 and 21 bids, 30..38 trumps, 40..67 discards, 70..97 plays; "
            "is this client older than the referee?"
        )
    if pb.kind and pb.kind != action.kind + 1:
        raise ParseError(
            f"action id {pb.id} is {action.label!r} here but the referee sent kind "
            f"{pb.kind} ({pb.label!r}); the two sides disagree on the protocol"
        )
    return action


def actions_from_pb(pbs: Iterable[game_pb2.Action]) -> tuple[Action, ...]:
    """The engine's actions for a list of action messages, in the same order."""
    return tuple(action_from_pb(pb) for pb in pbs)


@lru_cache(maxsize=64)
def _rules(players: int, target: int, min_bid: int, all_pass: int, double_blank: bool,
           trump_before_widow: bool, scoring: int, marks_target: int, moon_wins: bool,
           max_hands: int) -> Rules:
    if all_pass not in _ALL_PASS:
        raise RulesError(f"rules.all_pass is {all_pass}: expected ALL_PASS_REDEAL or "
                         "ALL_PASS_FORCED")
    if scoring not in _SCORING:
        raise RulesError(f"rules.scoring is {scoring}: expected SCORING_POINTS or SCORING_MARKS")
    return Rules(players=players, target=target, min_bid=min_bid, all_pass=_ALL_PASS[all_pass],
                 double_blank=double_blank, trump_before_widow=trump_before_widow,
                 scoring=_SCORING[scoring], marks_target=marks_target, moon_wins=moon_wins,
                 max_hands=max_hands)


def rules_from_pb(pb: game_pb2.Rules) -> Rules:
    """The rule set a complete Rules message gives; RulesError for a value the engine refuses."""
    return _rules(pb.players, pb.target, pb.min_bid, pb.all_pass, pb.double_blank,
                  pb.trump_before_widow, pb.scoring, pb.marks_target, pb.moon_wins,
                  pb.max_hands)


def _plays(pbs: Iterable[game_pb2.Play]) -> tuple[Play, ...]:
    return tuple(Play(p.seat, tile_from_pb(p.tile)) for p in pbs)


def observation_from_pb(pb: game_pb2.Observation) -> Observation:
    """The engine's observation a message carries; ParseError if a value is out of range."""
    if not 1 <= pb.phase <= len(_PHASES):
        raise ParseError(f"observation.phase is {pb.phase}: expected PHASE_BID..PHASE_OVER")
    if not 0 <= pb.trump <= 9:
        raise ParseError(f"observation.trump is {pb.trump}: expected TRUMP_UNSPECIFIED.."
                         "TRUMP_NONE")
    return Observation(
        seat=pb.seat,
        rules=rules_from_pb(pb.rules),
        hand_number=pb.hand_number,
        phase=_PHASES[pb.phase - 1],
        to_act=pb.to_act,
        first_bidder=pb.first_bidder,
        hand=tuple(tile_from_pb(t) for t in pb.hand),
        bids=tuple(BidMade(b.seat, b.bid) for b in pb.bids),
        bidder=pb.bidder if pb.HasField("bidder") else None,
        bid=pb.bid if pb.HasField("bid") else None,
        contract=pb.trump - 1 if pb.trump else None,
        widow=tile_from_pb(pb.widow) if pb.HasField("widow") else None,
        discard=tile_from_pb(pb.discard) if pb.HasField("discard") else None,
        tricks=tuple(Trick(t.leader, _plays(t.plays), t.winner) for t in pb.tricks),
        current=_plays(pb.current),
        tricks_won=tuple(pb.tricks_won),
        scores=tuple(pb.scores),
        hand_sizes=tuple(pb.hand_sizes),
    )


def result_from_pb(pb: game_pb2.MatchResult) -> dict[str, Any]:
    """A result as the dict the referee side uses: seats, final, winner, end, forfeit, placement."""
    return {
        "seats": list(pb.seats),
        "final": list(pb.final_scores),
        "winner": pb.winner if pb.HasField("winner") else None,
        "end": pb.end,
        "forfeit": ({"seat": pb.forfeit.seat, "reason": pb.forfeit.reason}
                    if pb.HasField("forfeit") else None),
        "placement": list(pb.placement),
    }


def decision_pb(request_id: str, action: Action | int) -> bot_pb2.PlayRequest:
    """The PlayRequest answering decision request `request_id` with `action`."""
    action_id = action if isinstance(action, int) else action.id
    return bot_pb2.PlayRequest(
        decision=bot_pb2.PlayRequest.Decision(request_id=request_id, action_id=action_id))
