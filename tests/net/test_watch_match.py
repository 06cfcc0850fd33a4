"""WatchMatch: a match's public events, numbered, resumable, ending with the result."""

from __future__ import annotations

import json

import grpc
import pytest
from stack import Stack
from support import PoolBot

from clients.admin import Admin
from moon.transcript import actions_of
from proto.moon.v1 import game_pb2, match_pb2, match_pb2_grpc


def _watch(address: str, match_id: str, after: int = 0) -> list[match_pb2.WatchMatchResponse]:
    with grpc.insecure_channel(address) as ch:
        stub = match_pb2_grpc.MatchServiceStub(ch)
        return list(stub.WatchMatch(match_pb2.WatchMatchRequest(match_id=match_id,
                                                                after_sequence=after),
                                    timeout=120))


def test_watch_match_streams_public_events_and_resumes(
        stack: Stack, pool: dict[str, PoolBot], admin: Admin) -> None:
    m = admin.create_match(3, [pool["greedy1"].bot_id, pool["greedy2"].bot_id,
                               pool["random1"].bot_id], seed=11, rules={"max_hands": "8"})
    events = _watch(stack.address, m.match_id)  # from the start, live, to the end
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert events[0].WhichOneof("event") == "match_started"
    assert events[-1].WhichOneof("event") == "match_finished"
    assert events[-1].match_finished.status == match_pb2.MATCH_STATUS_FINISHED

    final = admin.get_match(m.match_id)
    record = json.loads(final.transcript_json)
    taken = [e.action_taken for e in events if e.WhichOneof("event") == "action_taken"]
    assert len(taken) == len(actions_of(record))
    for at, aid in zip(taken, actions_of(record), strict=True):
        if at.kind == game_pb2.ACTION_KIND_DISCARD:
            assert not at.HasField("action")  # the discard stays hidden
        else:
            assert at.action.id == aid
    hands = [e.hand_ended for e in events if e.WhichOneof("event") == "hand_ended"]
    assert [list(h.scores) for h in hands] == [h["scores"] for h in record["hands"]]
    assert list(events[-1].match_finished.result.final_scores) == record["final"]

    k = len(events) // 2
    tail = _watch(stack.address, m.match_id, after=k)
    assert tail == events[k:]
    assert _watch(stack.address, m.match_id, after=len(events)) == []
    for past in (len(events) + 1, 2**64 - 1):  # never sent: refused, not an empty stream
        with pytest.raises(grpc.RpcError) as err:
            _watch(stack.address, m.match_id, after=past)
        assert err.value.code() == grpc.StatusCode.OUT_OF_RANGE
        assert f"last event so far, {len(events)}" in err.value.details()


def test_watch_unknown_match_is_not_found(stack: Stack) -> None:
    with pytest.raises(grpc.RpcError) as err:
        _watch(stack.address, "m-nope")
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
