"""A bot written from the .proto alone plays whole matches; nothing sent to it leaks a tile.

`rawbot.py` uses only grpc and the generated stubs (no `moon`, no `clients`): it
registers, connects, plays and records every PlayResponse it receives. Afterwards
this test audits each message against the finished game's transcript: a decision
request's observation is exactly what the engine says that seat may see at that
moment, and every Tile anywhere in any message is one the seat may see: its own,
one already played this hand, or (as the bidder, once taken) the widow and its discard.
"""

from __future__ import annotations

import sys
from typing import Any

from google.protobuf.message import Message
from rawbot import read_records
from stack import BOTS_DIR, Proc, Stack
from support import PoolBot, finished, state_at, transcript_of

from clients.admin import Admin
from clients.wire import observation_from_pb
from moon import GameState
from moon.actions import ACTIONS
from moon.transcript import actions_of
from proto.moon.v1 import bot_pb2, game_pb2, match_pb2

_TILE = game_pb2.Tile.DESCRIPTOR


def _tiles(msg: Message) -> list[str]:
    """Every Tile anywhere inside a message, as `high-low`."""
    out: list[str] = []
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        items = value if field.is_repeated else [value]
        if field.message_type is _TILE:
            out += [f"{t.high}-{t.low}" for t in items]
        elif not (field.message_type.GetOptions().map_entry):
            for item in items:
                out += _tiles(item)
    return out


def _states(record: dict[str, Any]) -> list[GameState]:
    """The game before each action of a transcript (and after the last)."""
    st = state_at(record, 0)
    out = [st.copy()]
    for aid in actions_of(record):
        st.apply_id(aid)
        out.append(st.copy())
    return out


def _may_see(record: dict[str, Any], st: GameState, seat: int) -> set[str]:
    """Tiles `seat` may see in state `st`: its own deal, the tiles played so far this
    hand, and, when it is the bidder and has taken it, the widow (its discard comes from
    its deal or the widow). Taken from the transcript, not from the observation code."""
    hand = record["hands"][st.hand_index]
    allowed = set(hand["deal"][seat])
    played = [p["tile"] for trick in hand.get("tricks", []) for p in trick["plays"]]
    allowed |= set(played[: len(st.plays)])
    if hand.get("bidder") == seat and st.widow_taken and hand.get("widow"):
        allowed.add(hand["widow"])
    return allowed


def _audit(bot_id: str, msgs: list[bot_pb2.PlayResponse], matches: dict[str, match_pb2.Match],
           seen: dict[str, int]) -> None:
    """Check every message one bot received; count what the checks covered in `seen`."""
    records = {mid: transcript_of(m) for mid, m in matches.items()}
    states = {mid: _states(record) for mid, record in records.items()}
    kinds = [m.WhichOneof("message") for m in msgs]
    assert kinds[0] == "welcome" and msgs[0].welcome.bot_id == bot_id
    for msg, kind in zip(msgs, kinds, strict=True):
        if kind != "decision_request":
            assert _tiles(msg) == [], msg  # no other message carries a tile at all
            if kind in ("match_started", "match_ended"):
                body = getattr(msg, kind)
                assert matches[body.match_id].bot_ids[body.seat] == bot_id
            continue
        req = msg.decision_request
        m = matches[req.match_id]
        record = records[req.match_id]
        prefix, _, seq_text = req.request_id.rpartition("/")
        assert prefix == req.match_id
        seq = int(seq_text)
        seat = req.seat
        assert m.bot_ids[seat] == bot_id, "a request for a seat this bot does not hold"
        st = states[req.match_id][seq]
        assert st.to_act == seat == req.observation.seat
        assert observation_from_pb(req.observation) == st.observation(seat), req.request_id
        assert [(a.id, a.label) for a in req.legal_actions] == [
            (i, ACTIONS[i].label) for i in st.legal_ids()]
        allowed = _may_see(record, st, seat)
        leaked = set(_tiles(msg)) - allowed
        assert not leaked, f"{req.request_id} shows seat {seat} {leaked}"
        seen["requests"] += 1
        seen["widow"] += req.observation.HasField("widow")
        seen["discard"] += req.observation.HasField("discard")
        seen["tricks"] += len(req.observation.tricks) > 0


def test_proto_only_bot_plays_and_sees_nothing_hidden(stack: Stack, pool: dict[str, PoolBot],
                                                     admin: Admin, name: str) -> None:
    procs: dict[str, Proc] = {}
    ids: dict[str, str] = {}
    for policy in ("first", "high"):
        out = stack.workdir / f"{name}-{policy}.rec"
        procs[policy] = stack.start(f"raw-{policy}", [
            sys.executable, str(BOTS_DIR / "rawbot.py"), "--server", stack.address,
            "--name", f"{name}-raw-{policy}", "--out", str(out), "--matches", "3",
            "--policy", policy])
    for policy, p in procs.items():
        ids[policy] = p.wait_for(r"registered (b-[0-9a-f]+); connected", timeout=30).group(1)
    first, high, g1, g2, r1 = (ids["first"], ids["high"], pool["greedy1"].bot_id,
                               pool["greedy2"].bot_id, pool["random1"].bot_id)
    created = [
        admin.create_match(3, [first, high, g1], seed=71),
        admin.create_match(3, [high, g2, first], seed=72, rules={"trump_before_widow": "true"}),
        admin.create_match(4, [high, first, g1, r1], seed=73),
    ]
    # An open read (no token, as a bot would call it) shows no one the seed, which fixes
    # every deal, before the end.
    unfinished = [m for m in map(admin.get_match, (c.match_id for c in created))
                  if m.status != match_pb2.MATCH_STATUS_FINISHED]
    assert unfinished
    assert all(m.seed == 0 and m.transcript_json == "" for m in unfinished)
    matches = {c.match_id: finished(admin, c.match_id) for c in created}
    for m in matches.values():
        record = transcript_of(m)
        assert m.seed == record["seed"] != 0  # shown to all once over
        assert record["end"] in ("normal", "hand_limit") and record["faults"] == []
    for p in procs.values():
        p.wait_for(r"done: 3 matches", timeout=30)  # its record file is complete

    seen = {"requests": 0, "widow": 0, "discard": 0, "tricks": 0}
    for policy in ("first", "high"):
        msgs = read_records(stack.workdir / f"{name}-{policy}.rec")
        _audit(ids[policy], msgs, matches, seen)
        ended = {m.match_ended.match_id for m in msgs if m.WhichOneof("message") == "match_ended"}
        assert ended == set(matches)
    # The audit covered what matters: the bidder's widow and discard, and trick play.
    assert seen["requests"] > 100 and seen["widow"] > 0 and seen["discard"] > 0
    assert seen["tricks"] > 0
