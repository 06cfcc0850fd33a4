"""Hosted versions end to end: an author submits code over gRPC, a host validates it and
runs it in a sandbox whenever a match needs it, with no process of the author's.

Real processes throughout: a private redis-server, a referee, workers, `moonshot host`
(bubblewrap sandboxes), and the author's CLI with their own credentials file.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
from pathlib import Path

import grpc
import pytest
import redis
from stack import Stack, env, moonshot
from support import wait_until

from clients.admin import Admin
from clients.redisproc import RedisServer
from hosting.sandbox import check
from proto.moon.v1 import change_pb2, change_pb2_grpc, match_pb2, match_pb2_grpc

REPO = Path(__file__).resolve().parents[2]

# A bot of the SDK, as an author writes it: where to connect and its token come from
# the environment the host gives its sandbox.
BOT_PY = """\
import sys

from clients.builtin import GreedyBot, RandomBot
from clients.sdk import run_bot

run_bot({"greedy": GreedyBot, "random": RandomBot}[sys.argv[1]])
"""


def _package(folder: Path, play: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "bot.py").write_text(BOT_PY)
    (folder / "moonshot.toml").write_text(
        f'runtime = "python3.11"\ncommand = ["python", "bot.py", "{play}"]\n')
    return folder


class Author:
    """One user: their own credentials file, no admin token in reach."""

    def __init__(self, stack: Stack, home: Path) -> None:
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self.env = env(MOONSHOT_CONFIG=str(home / "config" / "credentials.json"),
                       MOONSHOT_DATA=str(home / "no-data"), MOONSHOT_SERVER=stack.address)
        for var in ("MOONSHOT_ADMIN_TOKEN", "MOONSHOT_TOKEN"):
            self.env.pop(var, None)

    def run(self, *args: str, ok: bool = True, timeout: float = 300
            ) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(moonshot(*args), env=self.env, cwd=self.home,
                             capture_output=True, text=True, timeout=timeout, check=False)
        if ok:
            assert res.returncode == 0, (args, res.stdout, res.stderr)
        return res


def _host(st: Stack, data: Path, *extra: str):  # type: ignore[no-untyped-def]
    p = st.start("host", moonshot("host", "--redis", st.redis_url, "--referee", st.address,
                                  "--archive", st.archive, "--data", str(data), *extra))
    p.wait_for(r"running hosted versions", timeout=60)
    return p


def _match(address: str, token: str, match_id: str) -> match_pb2.Match:
    with grpc.insecure_channel(address) as ch:
        return match_pb2_grpc.MatchServiceStub(ch).GetMatch(
            match_pb2.GetMatchRequest(match_id=match_id), timeout=10,
            metadata=(("authorization", f"Bearer {token}"),)).match


@pytest.fixture
def hosted_stack(tmp_path: Path, admin_token: str):  # type: ignore[no-untyped-def]
    why = check()
    assert why is None, f"the sandbox cannot be built here: {why} (.ci/run installs it)"
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        st = Stack(tmp_path, srv.url, admin_token=admin_token,
                   archive=f"sqlite:///{tmp_path / 'archive.sqlite3'}")
        try:
            st.referee()
            st.worker()
            st.worker()
            yield st
        finally:
            st.stop_all()


def test_submitted_versions_validate_play_a_test_and_survive_a_host_killed_mid_match(
        hosted_stack: Stack, tmp_path: Path) -> None:
    st = hosted_stack
    host_a = _host(st, tmp_path / "host-a", "--idle", "5")
    alice = Author(st, tmp_path / "alice")
    alice.run("signup", "alice")

    # Two versions of one line; each is validated against house bots in the sandbox.
    v1 = _package(tmp_path / "v1", "random")
    v2 = _package(tmp_path / "v2", "greedy")
    out = alice.run("bot", "submit", "lark", str(v1), "--wait").stdout
    assert "lark@1" in out and "active" in out, out
    out = alice.run("bot", "submit", "lark", str(v2), "--wait").stdout
    assert "lark@2" in out and "active" in out, out
    shown = alice.run("bot", "show", "lark@2").stdout
    assert "active" in shown and "python3.11" in shown, shown

    # The newer against the one before, to a verdict, with no process of alice's.
    out = alice.run("test", "start", "lark@2", "--elo0", "0", "--elo1", "60",
                    "--rule", "max_hands=2", "--in-flight", "4").stdout
    test_id = re.search(r"test (c-[0-9a-z]+) started", out)
    assert test_id, out
    with grpc.insecure_channel(st.address) as ch:
        tests = change_pb2_grpc.TestServiceStub(ch)
        t = wait_until("the test's verdict", lambda: (
            x if (x := tests.GetTest(change_pb2.GetTestRequest(test_id=test_id[1]),
                                     timeout=10).test).status != change_pb2.TEST_STATUS_RUNNING
            else None), timeout=600, every=1.0)
    assert t.progress.outcome == change_pb2.TEST_OUTCOME_H1, t.progress

    # A host killed mid-match: its sandboxes die with it, the match waits (its clock
    # stopped, its grace running), and another host starts the bot again.
    r = redis.Redis.from_url(st.redis_url, decode_responses=True)
    v2_id = json.loads(alice.run("bot", "show", "lark@2", "--json").stdout)["bot_id"]
    admin = Admin(st.address, st.admin_token)
    made = admin.create_match(3, [v2_id, "house:greedy", "house:random"],
                              grace_ms=45_000).match_id
    wait_until("a game of lark@2 under way", lambda: r.scard(f"ms:bot:{v2_id}:live")
               and r.zcard(f"ms:bot:{v2_id}:presence"), timeout=60, every=0.1)
    host_a.popen.send_signal(signal.SIGKILL)
    host_a.popen.wait(timeout=10)
    _host(st, tmp_path / "host-b", "--idle", "5")
    done = wait_until("the match to end", lambda: (
        m if (m := _match(st.address, st.admin_token, made)).status
        == match_pb2.MATCH_STATUS_FINISHED else None), timeout=180, every=0.5)
    assert not done.result.HasField("forfeit"), done.result
    shutil.rmtree(tmp_path / "host-a", ignore_errors=True)
