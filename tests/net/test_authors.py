"""An author's day, as a new user lives it, through the CLI and without the admin token:
sign up, log in, register two versions, run them, test the new against the old to a
verdict, rotate a token mid-match (the old stream ends, its game ends by forfeit,
cleanly), retire the old version; and what another author may not do meanwhile.
"""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import grpc
import pytest
from stack import Author, Stack
from support import wait_until

from proto.moon.v1 import (
    account_pb2,
    account_pb2_grpc,
    bot_pb2,
    bot_pb2_grpc,
    change_pb2,
    change_pb2_grpc,
    match_pb2,
    match_pb2_grpc,
)


def _test(address: str, test_id: str) -> change_pb2.Test:
    with grpc.insecure_channel(address) as ch:
        return change_pb2_grpc.TestServiceStub(ch).GetTest(
            change_pb2.GetTestRequest(test_id=test_id), timeout=10).test


def test_an_authors_day(stack: Stack, name: str, tmp_path: Path) -> None:
    alice = Author(stack, tmp_path / "alice")
    # Sign up without saving, then log in with the token as a user would.
    out = alice.run("signup", f"{name}-alice", "--no-save").stdout
    token = re.search(r"token: (\S+)", out)
    assert token, out
    assert not (alice.home / "config" / "credentials.json").exists()
    res = alice.run("login", "--token", token[1])
    creds = alice.home / "config" / "credentials.json"
    assert stat.S_IMODE(creds.stat().st_mode) == 0o600, "a token file others can read"
    assert stat.S_IMODE(creds.parent.stat().st_mode) == 0o700
    assert f"as {name}-alice" in res.stdout
    who = alice.run("whoami").stdout
    assert f"{name}-alice" in who and "author" in who and "tests running: 0 of" in who

    # Two versions, the second declared the next of the first; both run.
    v1 = json.loads(alice.run("bot", "register", f"{name}-v1", "--json").stdout)
    v2 = json.loads(alice.run("bot", "register", f"{name}-v2", "--previous", f"{name}-v1",
                              "--json").stdout)
    listed = json.loads(alice.run("bot", "list", "--json").stdout)
    assert [b["name"] for b in listed] == [f"{name}-v1", f"{name}-v2"]
    assert listed[1]["previous"] == v1["bot_id"] and listed[0]["owner"] == f"{name}-alice"
    old = stack.bot("random", stack.address, v1["token"])
    stack.bot("greedy", stack.address, v2["token"])

    # Another author may not touch them.
    bob = Author(stack, tmp_path / "bob")
    bob.run("signup", f"{name}-bob")
    for args in (("bot", "rotate", f"{name}-v1"), ("bot", "retire", f"{name}-v1"),
                 ("test", "start", f"{name}-v2", f"{name}-v1")):
        res = bob.run(*args, ok=False)
        assert res.returncode != 0 and "belongs to another author" in res.stderr, res

    # The new against the old, to a verdict: the baseline is the previous version.
    out = alice.run("test", "start", f"{name}-v2", "--elo0", "0", "--elo1", "60",
                    "--rule", "max_hands=2", "--in-flight", "4").stdout
    test_id = re.search(r"test (c-[0-9a-z]+) started", out)
    assert test_id, out
    assert "seed hidden until it ends" in out
    t = wait_until("the test's verdict", lambda: (
        x if (x := _test(stack.address, test_id[1])).status != change_pb2.TEST_STATUS_RUNNING
        else None), timeout=300, every=0.5)
    assert t.progress.outcome == change_pb2.TEST_OUTCOME_H1, t.progress
    assert t.spec.baseline == v1["bot_id"] and t.author_id
    assert f"{name}-alice" not in bob.run("audit").stdout  # each reads their own log

    # Rotate v1's token in the middle of one of its games: its stream ends at once, the
    # game ends by v1's forfeit (it does not come back within the grace), cleanly. v1 now
    # thinks 0.2 s a move, so that a game of it is surely under way when the call lands.
    old.popen.terminate()
    old.popen.wait(timeout=30)
    old = stack.bot("netbots:ThinkingBot", stack.address, v1["token"])
    out = alice.run("test", "start", f"{name}-v1", f"{name}-v2", "--games", "40",
                    "--rule", "max_hands=2", "--in-flight", "2",
                    "--disconnect-grace", "1s").stdout
    second = re.search(r"test (c-[0-9a-z]+) started", out)
    assert second, out
    with grpc.insecure_channel(stack.address) as ch:
        matches = match_pb2_grpc.MatchServiceStub(ch)

        def v1_playing() -> str | None:
            page = matches.ListMatches(match_pb2.ListMatchesRequest(
                test_id=second[1], page_size=100), timeout=10).matches
            live = [m.match_id for m in page if m.status == match_pb2.MATCH_STATUS_RUNNING
                    and v1["bot_id"] in m.bot_ids]
            return live[0] if live else None

        playing = wait_until("a game of v1 under way", v1_playing, timeout=60, every=0.1)
        rotated = json.loads(alice.run("bot", "rotate", f"{name}-v1", "--json").stdout)
        assert rotated["token"] != v1["token"]
        old.popen.wait(timeout=30)  # the old process was told, and stopped
        assert "token was replaced" in old.text()
        admin = (("authorization", f"Bearer {stack.admin_token}"),)
        ended = wait_until("the game to end", lambda: (
            m if (m := matches.GetMatch(match_pb2.GetMatchRequest(match_id=playing),
                                        metadata=admin, timeout=10).match).status
            != match_pb2.MATCH_STATUS_RUNNING else None), timeout=60, every=0.2)
    assert ended.status == match_pb2.MATCH_STATUS_FINISHED
    assert ended.result.end == "forfeit", ended.result
    assert ended.bot_ids[ended.result.forfeit.seat] == v1["bot_id"], ended.result
    # The old token plays no more; the new one does.
    with grpc.insecure_channel(stack.address) as ch:
        call = bot_pb2_grpc.BotServiceStub(ch).Play(
            iter(()), metadata=(("authorization", f"Bearer {v1['token']}"),), timeout=10)
        with pytest.raises(grpc.RpcError) as info:
            next(iter(call))
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    fresh = stack.bot("random", stack.address, rotated["token"])
    assert "connected to" in fresh.text() and "another process" not in fresh.text()
    # A second process with the same token replaces the first, and says so.
    twin = stack.bot("random", stack.address, rotated["token"])
    fresh.popen.wait(timeout=30)
    assert "replaced this one" in fresh.text()
    wait_until("the twin's warning", lambda: "another process was connected" in twin.text(),
               timeout=10)

    # Retire the old version: its test stops, it plays no new game, it is shown retired.
    out = alice.run("bot", "retire", f"{name}-v1").stdout
    assert "is retired" in out
    assert second[1] in out  # the test it was in stopped
    listed = json.loads(alice.run("bot", "list", "--json").stdout)
    assert [b["retired"] for b in listed] == [True, False]
    res = alice.run("test", "start", f"{name}-v1", f"{name}-v2", ok=False)
    assert res.returncode != 0 and "retired" in res.stderr
    wait_until("the stopped test to end", lambda: _test(stack.address, second[1]).status
               != change_pb2.TEST_STATUS_RUNNING, timeout=120, every=0.5)
    assert _test(stack.address, second[1]).stopped_by == "retired"

    # The audit log says who did what; WhoAmI knows the two tests are over.
    log = alice.run("audit").stdout
    for action in ("sign_up", "register_bot", "start_test", "rotate_token", "retire_bot"):
        assert action in log, log
    with grpc.insecure_channel(stack.address) as ch:
        me = account_pb2_grpc.AccountServiceStub(ch).WhoAmI(
            account_pb2.WhoAmIRequest(),
            metadata=(("authorization", f"Bearer {alice.token()}"),), timeout=10)
        bot = bot_pb2_grpc.BotServiceStub(ch).GetBot(
            bot_pb2.GetBotRequest(bot_id=v2["bot_id"]), timeout=10).bot
    assert me.role == account_pb2.ROLE_AUTHOR and me.usage.tests == 0
    assert list(bot.version_ids) == [v1["bot_id"], v2["bot_id"]]
