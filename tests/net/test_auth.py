"""Who may do what: tokens, organiser calls, request validation, answering for another bot."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import grpc
import pytest
import redis
from rawbot import RawBot, first_legal
from stack import Stack, env, moonshot
from support import PoolBot, finished, match_log, pending_ids, transcript_of, wait_until

from clients.admin import Admin
from clients.sdk import register
from proto.moon.v1 import bot_pb2, bot_pb2_grpc, game_pb2, match_pb2, match_pb2_grpc
from store import keys

Rejected = bot_pb2.PlayResponse.DecisionRejected


def _play_status(address: str, metadata: tuple[tuple[str, str], ...]) -> grpc.RpcError:
    """Open Play with `metadata` and return the error it ends with."""
    with grpc.insecure_channel(address) as channel:
        call = bot_pb2_grpc.BotServiceStub(channel).Play(iter(()), metadata=metadata,
                                                         timeout=10)
        with pytest.raises(grpc.RpcError) as info:
            next(iter(call))
    return info.value  # type: ignore[return-value]


def test_play_needs_the_bot_token(stack: Stack, name: str) -> None:
    bot_id, token = register(stack.address, f"{name}-tok")
    unauth, denied = grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED
    for metadata, code, says in [
        ((), unauth, "needs the bot token"),
        ((("authorization", f"Bearer {bot_id}.wrong-secret"),), unauth, "wrong secret"),
        ((("authorization", "Bearer not-a-token"),), unauth, "not a token of this stack"),
        # A known token of another role: the call is not its to make.
        ((("authorization", f"Bearer {stack.admin_token}"),), denied, "needs the bot token"),
        ((("authorization", token),), unauth, "needs the bot token"),  # no `Bearer `
    ]:
        err = _play_status(stack.address, metadata)
        assert err.code() == code, (metadata, err)
        assert says in err.details(), err.details()
    # The CLI bot gives up at once with the referee's reason, rather than retrying.
    res = subprocess.run(moonshot("bot", "run", "--bot", "random", "--server", stack.address,
                                  "--token", f"{bot_id}.wrong-secret"),
                         env=env(), capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode != 0
    assert "refused the token" in res.stderr + res.stdout


def test_organiser_calls_need_the_admin_token(stack: Stack, pool: dict[str, PoolBot]) -> None:
    bots = [pool["greedy1"].bot_id, pool["greedy2"].bot_id, pool["random1"].bot_id]
    req = match_pb2.CreateMatchRequest(players=3, bot_ids=bots)
    with grpc.insecure_channel(stack.address) as channel:
        stub = match_pb2_grpc.MatchServiceStub(channel)
        for token, code in [
            (None, grpc.StatusCode.UNAUTHENTICATED),
            ("adm.not-the-admin-token", grpc.StatusCode.UNAUTHENTICATED),
            (pool["greedy1"].token, grpc.StatusCode.PERMISSION_DENIED),
        ]:
            metadata = (("authorization", f"Bearer {token}"),) if token else ()
            with pytest.raises(grpc.RpcError) as info:
                stub.CreateMatch(req, metadata=metadata, timeout=10)
            assert info.value.code() == code, (token, info.value)
            assert "admin token" in info.value.details()


Change = Callable[[match_pb2.CreateMatchRequest], object]
BAD_REQUESTS: list[tuple[str, Change]] = [
    ("players", lambda q: setattr(q, "players", 5)),
    ("bot_ids", lambda q: q.bot_ids.pop()),
    ("bot_ids", lambda q: q.bot_ids.append(q.bot_ids[0])),
    ("bot_ids[1]", lambda q: q.bot_ids.__setitem__(1, "b-000000000000")),
    ("bot_ids[2]", lambda q: q.bot_ids.__setitem__(2, q.bot_ids[0])),  # against itself
    ("bot_ids[2]", lambda q: (setattr(q, "players", 4), q.bot_ids.insert(2, q.bot_ids[1]))),
    ("no_such_option", lambda q: q.rules.__setitem__("no_such_option", "1")),
    ("min_bid", lambda q: q.rules.__setitem__("min_bid", "9")),
    ("double_blank", lambda q: q.rules.__setitem__("double_blank", "maybe")),
    ("clock.move_time_ms", lambda q: q.clock.CopyFrom(game_pb2.ClockPolicy(move_time_ms=0))),
    ("faults.max_strikes", lambda q: q.faults.CopyFrom(game_pb2.FaultPolicy(max_strikes=0))),
]


@pytest.mark.parametrize(("field", "change"), BAD_REQUESTS,
                         ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD_REQUESTS)])
def test_bad_match_requests_name_the_field(stack: Stack, pool: dict[str, PoolBot],
                                           field: str, change: Change) -> None:
    bots = [pool["greedy1"].bot_id, pool["greedy2"].bot_id, pool["random1"].bot_id]
    req = match_pb2.CreateMatchRequest(players=3, bot_ids=bots)
    change(req)
    with grpc.insecure_channel(stack.address) as channel, pytest.raises(grpc.RpcError) as info:
        match_pb2_grpc.MatchServiceStub(channel).CreateMatch(
            req, metadata=(("authorization", f"Bearer {stack.admin_token}"),), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value
    assert field in info.value.details(), info.value.details()


def test_register_bot_names(stack: Stack, name: str) -> None:
    with grpc.insecure_channel(stack.address) as channel:
        stub = bot_pb2_grpc.BotServiceStub(channel)
        for bad in ["", "has space", "x" * 65, "semi;colon", "ünicode", "newline\n",
                    "y" * 1_000_000]:  # echoed in the message: it must still fit
            with pytest.raises(grpc.RpcError) as info:
                stub.RegisterBot(bot_pb2.RegisterBotRequest(name=bad), timeout=10)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, bad
            assert "name" in info.value.details()
        ok = stub.RegisterBot(bot_pb2.RegisterBotRequest(name=f"{name}-Dup.1_x"), timeout=10)
        assert ok.bot_id and ok.token
        for dup in [f"{name}-Dup.1_x", f"{name}-dup.1_X".upper()]:
            with pytest.raises(grpc.RpcError) as info:
                stub.RegisterBot(bot_pb2.RegisterBotRequest(name=dup), timeout=10)
            assert info.value.code() == grpc.StatusCode.ALREADY_EXISTS, dup
        with pytest.raises(grpc.RpcError) as info:
            match_pb2_grpc.MatchServiceStub(channel).GetMatch(
                match_pb2.GetMatchRequest(match_id="m-nosuchmatch"), timeout=10)
        assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_a_bot_cannot_answer_for_another(stack: Stack, pool: dict[str, PoolBot], admin: Admin,
                                         r: redis.Redis, name: str) -> None:
    """B (a player of the same match) and O (a bot outside it) answer a request pending for
    A: each is refused with REASON_NOT_YOURS, no strike, and nothing changes: the request
    stays pending for A, no answer reaches the match, and A's own answer then counts."""
    regs = {k: register(stack.address, f"{name}-{k}") for k in "ABO"}
    bot_a = RawBot(stack.address, regs["A"][1], auto=False).start()
    bot_b = RawBot(stack.address, regs["B"][1], first_legal).start()
    bot_o = RawBot(stack.address, regs["O"][1], first_legal).start()
    try:
        for b in (bot_a, bot_b, bot_o):
            b.wait_for(lambda m: m.WhichOneof("message") == "welcome")
        mid = admin.create_match(3, [regs["A"][0], regs["B"][0], pool["greedy1"].bot_id],
                                 seed=61, move_time_ms=20_000).match_id
        req = bot_a.wait_for(lambda m: m.WhichOneof("message") == "decision_request"
                             ).decision_request
        rid = req.request_id
        seq = int(rid.rpartition("/")[2])
        assert req.match_id == mid and rid in pending_ids(r, regs["A"][0])
        assert len(match_log(r, mid)) == seq

        for thief in (bot_b, bot_o):
            start = len(thief.received)
            thief.send(rid, req.legal_actions[0].id)
            msg = thief.wait_for(lambda m: m.WhichOneof("message") == "decision_rejected"
                                 and m.decision_rejected.request_id == rid, start=start)
            rej = msg.decision_rejected
            assert rej.reason == Rejected.REASON_NOT_YOURS, rej
            assert rej.match_id == mid and rej.strikes == 0
            assert not rej.HasField("replacement_action_id")
            assert "PERMISSION_DENIED" in rej.message
        # Malformed ids are refused one by one; the stream (B plays on) stays up.
        for bad in (f"{mid}/99999999999999999999", f"{mid}/\u00b2", f"{mid}/-1", "", "x" * 5000):
            start = len(bot_b.received)
            bot_b.send(bad, req.legal_actions[0].id)
            msg = bot_b.wait_for(lambda m, bad=bad: m.WhichOneof("message") == "decision_rejected"
                                 and m.decision_rejected.request_id == bad, start=start)
            assert msg.decision_rejected.reason == Rejected.REASON_UNKNOWN_REQUEST, bad[:40]
        # Nothing changed.
        assert rid in pending_ids(r, regs["A"][0])
        assert r.llen(keys.replies(mid)) == 0
        assert len(match_log(r, mid)) == seq

        # A answers its request (not the first legal action: B's "answer" must not stick).
        choice = req.legal_actions[-1].id
        bot_a.policy, bot_a.auto = first_legal, True
        bot_a.send(rid, choice)
        entry = wait_until("A's answer logged", lambda: (
            match_log(r, mid)[seq] if len(match_log(r, mid)) > seq else None))
        assert entry == {**entry, "seat": 0, "action": choice, "by": "bot"}
        # Answered now: B is still refused as NOT_YOURS (the log says whose it was); A
        # answering again is told the request is no longer pending.
        for bot, reason in ((bot_b, Rejected.REASON_NOT_YOURS),
                            (bot_a, Rejected.REASON_UNKNOWN_REQUEST)):
            start = len(bot.received)
            bot.send(rid, choice)
            msg = bot.wait_for(lambda m: m.WhichOneof("message") == "decision_rejected"
                               and m.decision_rejected.request_id == rid, start=start)
            assert msg.decision_rejected.reason == reason, msg
        m = finished(admin, mid)
    finally:
        for b in (bot_a, bot_b, bot_o):
            b.close()
    record = transcript_of(m)
    assert record["faults"] == [] and "forfeit" not in record
    rejected = [msg for msg in bot_a.received if msg.WhichOneof("message") == "decision_rejected"]
    assert [msg.decision_rejected.request_id for msg in rejected] == [rid]  # the re-answer
