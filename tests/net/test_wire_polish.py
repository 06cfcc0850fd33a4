"""What a bot author in another language relies on: every accepted answer is confirmed,
watch events carry their time, a disconnect shows as a fault, and a request delivered
again after a reconnect carries the clock as it is then."""

from __future__ import annotations

import time

import grpc
from rawbot import RawBot, first_legal
from stack import Stack
from support import PoolBot, finished

from clients.admin import Admin
from clients.sdk import register
from proto.moon.v1 import match_pb2, match_pb2_grpc

Fault = match_pb2.WatchMatchResponse.Fault


def _watch(address: str, match_id: str) -> list[match_pb2.WatchMatchResponse]:
    with grpc.insecure_channel(address) as ch:
        stub = match_pb2_grpc.MatchServiceStub(ch)
        return list(stub.WatchMatch(match_pb2.WatchMatchRequest(match_id=match_id),
                                    timeout=120))


def _kind(m: object) -> str | None:
    return m.WhichOneof("message")  # type: ignore[attr-defined, no-any-return]


def test_every_accepted_answer_is_confirmed_and_events_carry_time(
        stack: Stack, pool: dict[str, PoolBot], admin: Admin, name: str) -> None:
    bot_id, token = register(stack.address, name)
    bot = RawBot(stack.address, token, first_legal).start()
    try:
        bot.wait_for(lambda m: _kind(m) == "welcome")
        started = time.time()
        m = admin.create_match(3, [bot_id, pool["greedy1"].bot_id, pool["greedy2"].bot_id],
                               seed=5, rules={"max_hands": "4"})
        finished(admin, m.match_id)
        asked = {x.decision_request.request_id for x in bot.received
                 if _kind(x) == "decision_request"}
        accepted = {x.decision_accepted.request_id for x in bot.received
                    if _kind(x) == "decision_accepted"}
        assert asked and accepted == asked
        assert all(x.decision_accepted.match_id == m.match_id for x in bot.received
                   if _kind(x) == "decision_accepted")
    finally:
        bot.close()
    events = _watch(stack.address, m.match_id)
    times = [e.time.ToNanoseconds() / 1e9 for e in events]
    assert all(started - 5 < t < time.time() + 5 for t in times), times
    assert times == sorted(times)


def test_a_disconnect_is_a_fault_and_the_redelivered_request_has_the_time_left(
        stack: Stack, pool: dict[str, PoolBot], admin: Admin, name: str) -> None:
    bot_id, token = register(stack.address, name)
    first = RawBot(stack.address, token, auto=False).start()
    second: RawBot | None = None
    try:
        first.wait_for(lambda m: _kind(m) == "welcome")
        m = admin.create_match(3, [bot_id, pool["greedy1"].bot_id, pool["greedy2"].bot_id],
                               seed=9, rules={"max_hands": "3"}, move_time_ms=20_000,
                               time_bank_ms=10_000)
        req = first.wait_for(lambda x: _kind(x) == "decision_request").decision_request
        time.sleep(1.0)  # some of the decision's time is used
        first.close()
        time.sleep(3.0)  # away: the clock stops
        second = RawBot(stack.address, token, auto=False).start()
        again = second.wait_for(lambda x: _kind(x) == "decision_request"
                                and x.decision_request.request_id == req.request_id
                                ).decision_request
        arrived = time.time()
        # About a second of the 20 s limit was used; the 3 s away were not counted.
        assert 17_000 < again.time_limit_ms < req.time_limit_ms
        assert again.time_bank_ms == req.time_bank_ms
        due = again.deadline.ToNanoseconds() / 1e9
        first_due = req.deadline.ToNanoseconds() / 1e9
        assert due > first_due + 2.0  # later than first promised, by about the time away
        assert abs(due - (arrived + (again.time_limit_ms + again.time_bank_ms) / 1000)) < 2.0
        second.policy, second.auto = first_legal, True
        second.send(again.request_id, again.legal_actions[0].id)
        finished(admin, m.match_id, timeout=120)
    finally:
        first.close()
        if second is not None:
            second.close()
    faults = [(e.fault.seat, e.fault.kind) for e in _watch(stack.address, m.match_id)
              if e.WhichOneof("event") == "fault"]
    assert (0, Fault.KIND_DISCONNECTED) in faults
    assert faults.index((0, Fault.KIND_DISCONNECTED)) < faults.index((0, Fault.KIND_RECONNECTED))
