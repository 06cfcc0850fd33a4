"""What a hostile review of the authors' change found, each kept found: a saved admin
token never travels to another referee; a stream of a replaced token ends even when the
`Revoked` message never reached its referee; an author's limit of tests at once holds
under concurrent CreateTest calls; a call that changes nothing writes no audit entry."""

from __future__ import annotations

import hashlib
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis
from stack import Stack, env, moonshot

from proto.moon.v1 import (
    account_pb2,
    account_pb2_grpc,
    bot_pb2,
    bot_pb2_grpc,
    change_pb2,
    change_pb2_grpc,
)
from store import keys

Code = grpc.StatusCode


def _md(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


def _sign_up(ch: grpc.Channel, name: str) -> tuple[str, str]:
    resp = account_pb2_grpc.AccountServiceStub(ch).SignUp(
        account_pb2.SignUpRequest(name=name), timeout=10)
    return resp.author.author_id, resp.token


def test_a_saved_admin_token_goes_to_its_own_referee_only(stack: Stack, tmp_path: Path
                                                         ) -> None:
    data = tmp_path / "moonshot-data"
    data.mkdir()
    (data / "admin-token").write_text(stack.admin_token + "\n")
    (data / "referee").write_text("127.0.0.1:1\n")  # the stack `moonshot up` runs there
    e = env(MOONSHOT_DATA=str(data), MOONSHOT_CONFIG=str(tmp_path / "c.json"))
    for var in ("MOONSHOT_ADMIN_TOKEN", "MOONSHOT_TOKEN"):
        e.pop(var, None)
    name = f"lone-{uuid.uuid4().hex[:8]}"
    res = subprocess.run(moonshot("bot", "register", name, "--server", stack.address),
                         env=e, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr  # registered without a token: no one's
    res = subprocess.run(moonshot("whoami", "--server", stack.address), env=e,
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode != 0 and "needs an author token" in res.stderr, res
    res = subprocess.run(moonshot("admin", "invite", "--server", stack.address), env=e,
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode != 0 and "never sent elsewhere" in res.stderr, res
    with grpc.insecure_channel(stack.address) as ch:
        entries = account_pb2_grpc.AccountServiceStub(ch).ListAudit(
            account_pb2.ListAuditRequest(page_size=200), metadata=_md(stack.admin_token),
            timeout=10).entries
    mine = [e for e in entries if e.action == "register_bot" and name in e.detail]
    assert [e.actor for e in mine] == ["anonymous"]


def test_a_stream_of_a_replaced_token_ends_though_no_message_said_so(
        stack: Stack, r: redis.Redis) -> None:
    with grpc.insecure_channel(stack.address) as ch:
        reg = bot_pb2_grpc.BotServiceStub(ch).RegisterBot(
            bot_pb2.RegisterBotRequest(name=f"quiet-{uuid.uuid4().hex[:8]}"), timeout=10)
        done = threading.Event()

        def quiet() -> Iterator[bot_pb2.PlayRequest]:  # sends nothing until the end
            done.wait(30)
            yield from ()

        call = bot_pb2_grpc.BotServiceStub(ch).Play(quiet(), metadata=_md(reg.token),
                                                     timeout=30)
        assert next(iter(call)).HasField("welcome")
        # What a rotation writes, without the pub/sub message a referee might miss.
        r.hset(keys.bot(reg.bot_id), "token", hashlib.sha256(b"another").hexdigest())
        with pytest.raises(grpc.RpcError) as info:
            for _ in call:
                pass
        done.set()
        assert info.value.code() == Code.UNAUTHENTICATED
        assert "token was replaced" in (info.value.details() or "")


def test_tests_at_once_holds_under_concurrent_calls(stack: Stack) -> None:
    with grpc.insecure_channel(stack.address) as ch:
        author_id, token = _sign_up(ch, f"racer-{uuid.uuid4().hex[:8]}")
        account_pb2_grpc.AccountServiceStub(ch).SetLimits(account_pb2.SetLimitsRequest(
            author=author_id, limits=account_pb2.Limits(tests=1, pairs=2, house_cpu_s=60)),
            metadata=_md(stack.admin_token), timeout=10)
        bots = bot_pb2_grpc.BotServiceStub(ch)
        cand = bots.RegisterBot(bot_pb2.RegisterBotRequest(
            name=f"racer-c-{uuid.uuid4().hex[:6]}"), metadata=_md(token), timeout=10)
        tests = change_pb2_grpc.TestServiceStub(ch)
        codes: list[Code] = []
        start = threading.Barrier(8)

        def create() -> None:
            start.wait()
            try:
                tests.CreateTest(change_pb2.CreateTestRequest(spec=change_pb2.TestSpec(
                    candidate=cand.bot_id, baseline="house:random", in_flight=50,
                    fixed_games=2, rules={"max_hands": "1"})), metadata=_md(token),
                    timeout=30)
                codes.append(Code.OK)
            except grpc.RpcError as exc:
                codes.append(exc.code())

        threads = [threading.Thread(target=create) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(c.name for c in codes) == ["OK"] + ["RESOURCE_EXHAUSTED"] * 7
        made = list(tests.ListTests(change_pb2.ListTestsRequest(
            author=author_id, page_size=100), timeout=10).tests)
        assert len(made) == 1 and made[0].spec.in_flight == 2  # capped at the pairs limit
        for t in made:
            tests.StopTest(change_pb2.StopTestRequest(test_id=t.test_id), metadata=_md(token),
                           timeout=10)


def test_a_call_that_changes_nothing_writes_no_audit_entry(stack: Stack) -> None:
    with grpc.insecure_channel(stack.address) as ch:
        _, token = _sign_up(ch, f"quiet-{uuid.uuid4().hex[:8]}")
        bots = bot_pb2_grpc.BotServiceStub(ch)
        b = bots.RegisterBot(bot_pb2.RegisterBotRequest(name=f"q-{uuid.uuid4().hex[:8]}"),
                             metadata=_md(token), timeout=10)
        accounts = account_pb2_grpc.AccountServiceStub(ch)

        def entries() -> int:
            return len(accounts.ListAudit(account_pb2.ListAuditRequest(page_size=1000),
                                          metadata=_md(token), timeout=10).entries)

        before = entries()
        for _ in range(20):
            bots.SetPreviousVersion(bot_pb2.SetPreviousVersionRequest(bot_id=b.bot_id),
                                    metadata=_md(token), timeout=10)
        assert entries() == before
