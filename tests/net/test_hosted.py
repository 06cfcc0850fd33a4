"""Hosted versions end to end: an author submits code over gRPC, a host validates it and
runs it in a sandbox whenever a match needs it, with no process of the author's.

Real processes throughout: a private redis-server, a referee, workers, `moonshot host`
(bubblewrap sandboxes), and the author's CLI with their own credentials file.
"""

from __future__ import annotations

import base64
import json
import re
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
from stack import Author, Proc, Stack, moonshot
from support import wait_until
from test_web_pages import _start_web, browser

from clients.admin import Admin
from clients.redisproc import RedisServer
from clients.sdk import register
from hosting.sandbox import check
from proto.moon.v1 import (
    account_pb2,
    account_pb2_grpc,
    arena_pb2,
    arena_pb2_grpc,
    bot_pb2,
    change_pb2,
    change_pb2_grpc,
    game_pb2,
    match_pb2,
    match_pb2_grpc,
    rating_pb2,
    tournament_pb2,
)

__all__ = ["browser"]  # the shared fixture, used here by name

REPO = Path(__file__).resolve().parents[2]
NODE_BOT = REPO / "examples" / "node_bot"

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


def _script(folder: Path, source: str) -> Path:
    """A package of one Python file, `python bot.py` its command."""
    folder.mkdir(parents=True)
    (folder / "bot.py").write_text(source)
    (folder / "moonshot.toml").write_text('runtime = "python3.11"\n'
                                          'command = ["python", "bot.py"]\n')
    return folder


HOST_FLAGS = ("--idle", "5", "--loosen-after", "3")


def _host(st: Stack, data: Path, *extra: str) -> Proc:
    p = st.start("host", moonshot("host", "--redis", st.redis_url, "--referee", st.address,
                                  "--archive", st.archive, "--data", str(data), *extra))
    p.wait_for(r"running hosted versions", timeout=60)
    return p


def _match(address: str, token: str, match_id: str) -> match_pb2.Match:
    with grpc.insecure_channel(address) as ch:
        return match_pb2_grpc.MatchServiceStub(ch).GetMatch(
            match_pb2.GetMatchRequest(match_id=match_id), timeout=10,
            metadata=(("authorization", f"Bearer {token}"),)).match


@dataclass
class Hosted:
    """A stack of its own with a host, and one author."""

    st: Stack
    r: redis.Redis
    host: Proc
    alice: Author
    tmp: Path

    def submit(self, line: str, folder: Path, ok: bool = True) -> dict[str, Any]:
        res = self.alice.run("bot", "submit", line, str(folder), "--wait", "--json", ok=ok)
        first = json.loads(res.stdout.splitlines()[0])
        return {**first, "exit": res.returncode}

    def show(self, name: str) -> dict[str, Any]:
        return dict(json.loads(self.alice.run("bot", "show", name, "--json").stdout))

    def token(self) -> str:
        """Alice's author token, as `moonshot signup` saved it."""
        saved = json.loads((self.alice.home / "config" / "credentials.json").read_text())
        return str(saved["servers"][self.st.address]["token"])


@pytest.fixture(scope="module")
def hs(tmp_path_factory: pytest.TempPathFactory, admin_token: str) -> Iterator[Hosted]:
    why = check()
    assert why is None, f"the sandbox cannot be built here: {why} (scripts/test.sh installs it)"
    tmp = tmp_path_factory.mktemp("hosted")
    with RedisServer(tmp / "redis", appendonly=False) as srv:
        st = Stack(tmp, srv.url, admin_token=admin_token,
                   archive=f"sqlite:///{tmp / 'archive.sqlite3'}")
        try:
            st.referee()
            st.worker()
            st.worker()
            host = _host(st, tmp / "host-a", *HOST_FLAGS)
            alice = Author(st, tmp / "alice")
            alice.run("signup", "alice")
            yield Hosted(st, redis.Redis.from_url(srv.url, decode_responses=True), host,
                         alice, tmp)
        finally:
            st.stop_all()


def _done(st: Stack, match_id: str) -> match_pb2.Match:
    return wait_until("the match to end", lambda: (
        m if (m := _match(st.address, st.admin_token, match_id)).status
        == match_pb2.MATCH_STATUS_FINISHED else None), timeout=180, every=0.5)


def test_versions_in_two_languages_validate_and_the_newer_wins_a_test(hs: Hosted) -> None:
    """Python and Node versions are validated in the sandbox; a test of lark@2 (greedy)
    against lark@1 (random) reaches its verdict with no process of alice's running, and
    one that names both versions plays its 2 games; a tournament seats both hosted bots
    with a remote bot's process."""
    v1 = hs.submit("lark", _package(hs.tmp / "v1", "random"))
    assert v1["name"] == "lark@1" and v1["exit"] == 0, v1
    v2 = hs.submit("lark", _package(hs.tmp / "v2", "greedy"))
    assert v2["name"] == "lark@2" and v2["exit"] == 0, v2
    shown = hs.show("lark@2")
    assert shown["hosted"]["status"] == "active" and shown["hosted"]["runtime"] == "python3.11"
    assert shown["previous"] == v1["bot_id"]
    node = NODE_BOT / "node_modules" / "@grpc" / "grpc-js"
    assert node.is_dir(), "run `npm ci --omit=dev` in examples/node_bot (scripts/test.sh does)"
    js = hs.submit("wren", NODE_BOT)
    assert js["exit"] == 0 and hs.show("wren@1")["hosted"]["runtime"] == "node", js

    out = hs.alice.run("test", "start", "lark@2", "--elo0", "0", "--elo1", "60",
                       "--rule", "max_hands=2", "--in-flight", "4").stdout
    test_id = re.search(r"test (c-[0-9a-z]+) started", out)
    assert test_id, out
    # Meanwhile: a test of the two versions named both, and a tournament that seats both
    # hosted bots with a remote bot's process.
    out = hs.alice.run("test", "start", "lark@2", "lark@1", "--games", "2",
                       "--rule", "max_hands=1").stdout
    named = re.search(r"test (c-[0-9a-z]+) started", out)
    assert named, out
    remote_id, remote_token = register(hs.st.address, "lark-remote", hs.st.admin_token)
    remote = hs.st.bot("greedy", hs.st.address, remote_token)
    admin = Admin(hs.st.address, hs.st.admin_token)
    cup = admin.create_tournament(name="mixed cup", players=3, format="round_robin",
                                  bot_ids=[v2["bot_id"], js["bot_id"], remote_id],
                                  rules={"max_hands": "1"}, grace_ms=30_000)
    (game,) = _tournament_games(admin, hs.st, cup.tournament_id)
    assert game.status == match_pb2.MATCH_STATUS_FINISHED, game
    assert not game.result.HasField("forfeit"), game.result
    assert sorted(game.bot_ids) == sorted([v2["bot_id"], js["bot_id"], remote_id])
    remote.stop()
    with grpc.insecure_channel(hs.st.address) as ch:
        tests = change_pb2_grpc.TestServiceStub(ch)
        t = wait_until("the named test to end", lambda: (
            x if (x := tests.GetTest(change_pb2.GetTestRequest(test_id=named[1]),
                                     timeout=10).test).status != change_pb2.TEST_STATUS_RUNNING
            else None), timeout=300, every=1.0)
        assert t.status == change_pb2.TEST_STATUS_FINISHED, t.error
        assert (t.spec.candidate, t.spec.baseline) == (v2["bot_id"], v1["bot_id"]), t.spec
        assert t.progress.games == 2, t.progress
        t = wait_until("the test's verdict", lambda: (
            x if (x := tests.GetTest(change_pb2.GetTestRequest(test_id=test_id[1]),
                                     timeout=10).test).status != change_pb2.TEST_STATUS_RUNNING
            else None), timeout=600, every=1.0)
    # A verdict, which is what the issue asks; greedy over random in 2-hand games is not
    # so far above H1's +60 that a wrong H0 is out of reach (a CI run met one).
    assert t.status == change_pb2.TEST_STATUS_FINISHED, t.error
    assert t.progress.outcome in (change_pb2.TEST_OUTCOME_H1, change_pb2.TEST_OUTCOME_H0), \
        t.progress
    assert t.spec.baseline == v1["bot_id"]


# A bot that starts and connects, then answers each request, after a moment, with an
# action that is not legal.
ILLEGAL_PY = """\
import time

from clients.bot import Bot
from clients.sdk import run_bot
from moon.actions import ACTIONS


class Illegal(Bot):
    def act(self, obs, legal):
        time.sleep(0.5)
        ok = {a.id for a in legal}
        return next(a for i, a in sorted(ACTIONS.items()) if i not in ok)


run_bot(Illegal)
"""


def test_bad_versions_fail_with_one_clear_reason(hs: Hosted) -> None:
    """A command that exits at once, a bot that never connects, and one that answers
    illegally: each fails validation with its reason and its log (the last one seen
    validating first, its reason the validation game's forfeit); the versions before
    keep playing."""
    quits = _script(hs.tmp / "quits", "import sys\nprint('no luck today', file=sys.stderr)\n"
                    "sys.exit(3)\n")
    got = hs.submit("quits", quits, ok=False)
    assert got["exit"] == 1
    h = hs.show("quits@1")["hosted"]
    assert h["status"] == "failed" and "before connecting" in h["reason"], h
    assert "exited with status 3" in h["reason"] and "no luck today" in h["log_tail"], h

    sleeps = _script(hs.tmp / "sleeps", "import time\nwhile True:\n    time.sleep(60)\n")
    got = hs.submit("sleeps", sleeps, ok=False)
    assert got["exit"] == 1
    h = hs.show("sleeps@1")["hosted"]
    assert h["status"] == "failed" and "did not connect" in h["reason"], h

    illegal = _script(hs.tmp / "illegal", ILLEGAL_PY)
    res = hs.alice.run("bot", "submit", "illegal", str(illegal), "--json")  # no --wait
    bot_id = json.loads(res.stdout.splitlines()[0])["bot_id"]
    admin = Admin(hs.st.address, hs.st.admin_token)
    seen: list[int] = []

    def failed() -> bot_pb2.HostedVersion | None:
        x = admin.get_bot(bot_id).hosted
        if not seen or seen[-1] != x.status:
            seen.append(x.status)
        return x if x.status == bot_pb2.VERSION_STATUS_FAILED else None

    got_pb = wait_until("the illegal version to fail", failed, timeout=120, every=0.05)
    assert bot_pb2.VERSION_STATUS_VALIDATING in seen, seen
    assert re.fullmatch(r"validation game m-\S+: forfeit: 1 strikes \(late or illegal "
                        r"answers\)", got_pb.reason), got_pb.reason
    assert hs.show("illegal@1")["hosted"]["status"] == "failed"


def test_the_authors_own_process_replaces_the_sandbox_and_hands_back(hs: Hosted) -> None:
    """Never both at once: the author's process (the version's token) takes the bot's
    stream and the sandbox stops for good while it stays; when it leaves mid-match, the
    host starts the sandbox again and the match ends without forfeit."""
    v = hs.submit("finch", _package(hs.tmp / "finch", "greedy"))
    assert v["exit"] == 0, v
    admin = Admin(hs.st.address, hs.st.admin_token)
    first = admin.create_match(3, [v["bot_id"], "house:greedy", "house:random"]).match_id
    _done(hs.st, first)
    own = hs.st.bot("netbots:ThinkingBot", hs.st.address, v["token"])
    bot = v["bot_id"]
    wait_until("the sandbox to step aside (or to have stopped, idle)", lambda: (
        f"{bot} ended" in hs.host.text() and "another stream of it plays" in hs.host.text())
        or f"stopped {bot}: idle" in hs.host.text(), timeout=30)
    if "another stream of it plays" in hs.host.text():  # its log says which one plays
        assert "[host] another stream of this bot is connected" in hs.show("finch@1")[
            "hosted"]["log_tail"]
    slow = admin.create_match(3, [v["bot_id"], "house:greedy", "house:random"],
                              grace_ms=60_000).match_id
    wait_until("a game of the author's process", lambda: hs.r.scard(
        f"ms:bot:{v['bot_id']}:live"), timeout=30, every=0.1)
    assert hs.host.text().count(f"started {v['bot_id']}") == 1  # not while it plays
    time.sleep(1.0)
    own.popen.send_signal(signal.SIGKILL)  # gone without a word, mid-match
    done = _done(hs.st, slow)
    assert not done.result.HasField("forfeit"), done.result
    assert hs.host.text().count(f"started {v['bot_id']}") == 2


# A greedy bot that, in a game of 3 hands (validation's are longer), thinks 0.1 s a move
# and ends its process half a second after its first answer: its one crash, mid-match.
CRASHY_PY = """\
import os
import threading
import time

from clients.builtin import GreedyBot
from clients.sdk import run_bot
from moon.observation import Phase


class Crashy(GreedyBot):
    def act(self, obs, legal):
        if obs.rules.max_hands == 3:
            mine = obs.seat in {b.seat for b in obs.bids} | {p.seat for p in obs.current}
            first = obs.phase == Phase.BID or (obs.phase == Phase.PLAY and not obs.tricks)
            if obs.hand_number == 1 and first and not mine:
                threading.Timer(0.5, os._exit, (7,)).start()
            time.sleep(0.1)
        return super().act(obs, legal)


run_bot(Crashy)
"""


def test_a_crashed_sandbox_is_started_again_and_an_idle_one_stopped(hs: Hosted) -> None:
    """A hosted bot whose process ends mid-match is started again by the host (the end
    and its reason in the bot's log) and the match ends without forfeit; once the match
    is over, the sandbox is stopped after the host's --idle 5 s, the host and the bot's
    log say so, and it stays stopped (the wants its match made while it reconnected once
    started it again)."""
    folder = _script(hs.tmp / "crashy", CRASHY_PY)
    v = hs.submit("crashy", folder)
    assert v["exit"] == 0, v
    bot = v["bot_id"]
    admin = Admin(hs.st.address, hs.st.admin_token)
    made = admin.create_match(3, [bot, "house:greedy", "house:random"],
                              rules={"max_hands": "3"}, grace_ms=30_000).match_id
    done = _done(hs.st, made)
    over = time.monotonic()
    assert not done.result.HasField("forfeit"), done.result
    text = hs.host.text()
    crash = text.find(f"{bot} ended: exited with status 7")
    assert crash >= 0, text
    assert f"started {bot}" in text[crash:], text[crash:]  # started again after the crash
    assert "[host] the sandbox ended: exited with status 7" in hs.show("crashy@1")[
        "hosted"]["log_tail"]
    after = text.index(f"started {bot}", crash)
    wait_until("the sandbox stopped, idle", lambda: (
        f"stopped {bot}: idle for 5 s" in hs.host.text()[after:]), timeout=30, every=0.1)
    assert 4.0 <= time.monotonic() - over <= 15.0, time.monotonic() - over
    assert hs.show("crashy@1")["hosted"]["log_tail"].endswith("[host] stopped: idle for 5 s\n")
    stop = hs.host.text().index(f"stopped {bot}: idle", after)
    assert f"started {bot}" not in hs.host.text()[stop:]  # nothing wants it: not again


def _arena(address: str, token: str, call: str, req: Any) -> Any:
    with grpc.insecure_channel(address) as ch:
        return getattr(arena_pb2_grpc.ArenaServiceStub(ch), call)(
            req, timeout=30, metadata=(("authorization", f"Bearer {token}"),))


def test_an_arena_of_hosted_versions_plays_and_takes_each_new_version(hs: Hosted) -> None:
    """Three hosted bots join the 3p arena with their version tokens and play there
    (with three house anchors: a board is dealt to two tables) with no process of their
    author's; a new version, once active, takes its predecessor's place and plays."""
    pool = rating_pb2.RATING_POOL_THREE_PLAYER
    subs = [hs.submit(line, _package(hs.tmp / line, play))
            for line, play in (("owl", "random"), ("kite", "greedy"), ("crow", "greedy"))]
    assert all(v["exit"] == 0 for v in subs), subs
    _arena(hs.st.address, hs.st.admin_token, "StartArena", arena_pb2.StartArenaRequest(
        pool=pool, settings=arena_pb2.ArenaSettings(
            rules={"max_hands": "2"}, concurrency=2,
            anchors=["house:greedy", "house:random", "house:pimc?samples=4"])))
    for v in subs:
        _arena(hs.st.address, v["token"], "JoinArena", arena_pb2.JoinArenaRequest(pool=pool))

    def arena() -> arena_pb2.Arena:
        return _arena(hs.st.address, hs.st.admin_token, "GetArena",
                      arena_pb2.GetArenaRequest(pool=pool)).arena

    mine = {v["bot_id"] for v in subs}
    seen: list[arena_pb2.Arena] = []

    def played() -> bool:
        seen[:] = [arena()]
        return sum(b.games for b in seen[0].bots if b.bot_id in mine) >= 9

    try:
        wait_until("arena games of the hosted bots", played, timeout=240, every=1.0)
    except TimeoutError:
        raise AssertionError(f"the arena as it stands: {seen}") from None
    assert all(b.online for b in arena().bots if b.bot_id in mine)
    assert not any(b.playing for b in arena().bots if not b.house and b.bot_id not in mine)

    owl2 = hs.submit("owl", _package(hs.tmp / "owl-2", "greedy"))
    assert owl2["name"] == "owl@2" and owl2["exit"] == 0, owl2
    members = {b.bot_id for b in arena().bots}
    assert owl2["bot_id"] in members and subs[0]["bot_id"] not in members, members
    wait_until("a game of owl@2 in the arena", lambda: any(
        b.games for b in arena().bots if b.bot_id == owl2["bot_id"]), timeout=240, every=1.0)
    _arena(hs.st.address, hs.st.admin_token, "StopArena", arena_pb2.StopArenaRequest(pool=pool))


def test_a_host_killed_mid_match_hands_its_bots_to_another(hs: Hosted) -> None:
    """Its sandboxes die with it; the match waits (its clock stopped, its grace running)
    and another host starts the bot once the dead host's lease lapses."""
    v = hs.submit("heron", _package(hs.tmp / "heron", "greedy"))
    assert v["exit"] == 0, v
    admin = Admin(hs.st.address, hs.st.admin_token)
    made = admin.create_match(3, [v["bot_id"], "house:pimc", "house:greedy"],
                              grace_ms=45_000).match_id
    wait_until("a game of heron under way", lambda: hs.r.scard(
        f"ms:bot:{v['bot_id']}:live") and hs.r.zcard(f"ms:bot:{v['bot_id']}:presence"),
        timeout=60, every=0.1)
    hs.host.popen.send_signal(signal.SIGKILL)
    hs.host.popen.wait(timeout=10)
    hs.host = _host(hs.st, hs.tmp / "host-b", *HOST_FLAGS)
    done = _done(hs.st, made)
    assert not done.result.HasField("forfeit"), done.result
    assert f"started {v['bot_id']}" in hs.host.text()


# A bot whose stderr is a stranger's markup, a terminal sequence and reversed text.
LOUD_PY = """\
import sys

from clients.builtin import GreedyBot
from clients.sdk import run_bot

print("stderr-7f3a <script>document.title='owned'</script><img src=x onerror=alert(1)>"
      " \\x1b[31mred \\u202eevil", file=sys.stderr, flush=True)
run_bot(GreedyBot)
"""


def test_the_log_is_on_the_bots_page_for_its_author_only(hs: Hosted, browser: Any) -> None:
    """`/bot/<id>/log` in a real browser: its author (their own token as Basic's
    password) sees the status and the stderr tail, the markup in it as text; another
    author, a bad token and an anonymous visitor get a refusal that says nothing of the
    log; the admin reads it; nothing of it is cached; the public page has only a link."""
    folder = _script(hs.tmp / "loud", LOUD_PY)
    v = hs.submit("loud", folder)
    assert v["exit"] == 0, v
    bot = v["bot_id"]
    wait_until("the log in Redis", lambda: "stderr-7f3a" in hs.show("loud@1")["hosted"][
        "log_tail"], timeout=30, every=0.5)
    proc, web = _start_web(hs.st, hs.st.address)  # holds no token: the visitor sends one
    alice = hs.token()
    with grpc.insecure_channel(hs.st.address) as ch:
        bob = account_pb2_grpc.AccountServiceStub(ch).SignUp(
            account_pb2.SignUpRequest(name="bob"), timeout=30).token

    def visit(path: str, password: str | None) -> tuple[int, dict[str, str], Any, Any]:
        """Status, headers, the page and its context (closed by the caller)."""
        ctx = browser.new_context(**({"http_credentials": {
            "username": "whoever", "password": password}} if password is not None else {}))
        page = ctx.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: errors.append(str(e)))
        resp = page.goto(web + path, wait_until="load")
        return resp.status, resp.all_headers(), page, ctx

    dialogs: list[str] = []
    errors: list[str] = []
    log_page = f"/bot/{bot}/log"
    status, headers, page, ctx = visit(log_page, bob)  # another author
    html = page.content()
    ctx.close()
    assert status == 403 and headers["cache-control"] == "no-store", (status, headers)
    assert "stderr-7f3a" not in html and "owned" not in html
    assert "16 KiB" not in html and "Nothing logged" not in html
    # A 401 makes a person's browser ask for the token; a headless one without any (or
    # refused again) stops there (Chromium's ERR_INVALID_AUTH_CREDENTIALS): anonymous, a
    # token the referee does not know, or an empty one, as raw requests.
    for who, password in (("anonymous", None), ("no token of this stack", "u-nobody.x"),
                          ("no password", "")):
        basic = base64.b64encode(f"whoever:{password}".encode()).decode()
        req = urllib.request.Request(web + log_page, headers={} if password is None else {
            "Authorization": f"Basic {basic}"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(req, timeout=30)
        html = refused.value.read().decode()
        assert refused.value.code == 401 and "Basic" in refused.value.headers[
            "WWW-Authenticate"], who
        assert refused.value.headers["Cache-Control"] == "no-store", who
        assert "stderr-7f3a" not in html and "16 KiB" not in html, who

    status, headers, page, ctx = visit(log_page, alice)
    try:
        assert status == 200, status
        assert headers["cache-control"] == "no-store" and headers["x-frame-options"] == "DENY"
        shown = page.locator(f'section.hosted-version[data-id="{bot}"]')
        assert shown.get_attribute("data-status") == "active"
        text = shown.locator("pre.log").inner_text()
        assert ("stderr-7f3a <script>document.title='owned'</script><img src=x "
                "onerror=alert(1)>") in text, text
        assert "\\x1b[31mred \\u202eevil" in text, text  # shown as escapes
        assert page.locator("pre.log script, pre.log img").count() == 0
        assert page.title() != "owned" and "Log of loud@1" in page.title()
    finally:
        ctx.close()
    status, _, page, ctx = visit(log_page, hs.st.admin_token)
    assert status == 200 and "stderr-7f3a" in page.locator("pre.log").inner_text()
    ctx.close()
    # The public page: the link, nothing of the log.
    status, headers, page, ctx = visit(f"/bot/{bot}", None)
    assert status == 200 and page.locator("#bot-log-link").get_attribute("href") == log_page
    assert "stderr-7f3a" not in page.content()
    ctx.close()
    assert not dialogs and not errors, (dialogs, errors)
    # A Bearer header works as well (a script's way); the token is in no log of the server.
    req = urllib.request.Request(web + log_page, headers={"Authorization": f"Bearer {alice}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200 and "stderr-7f3a" in resp.read().decode()
    assert alice not in proc.text() and bob not in proc.text()


# A bot that takes 200 MB at its first decision and keeps it: within the host's 512 MB,
# over an event's 128.
HUNGRY_PY = """\
from clients.builtin import GreedyBot
from clients.sdk import run_bot

HELD = []


class Hungry(GreedyBot):
    def act(self, obs, legal):
        if not HELD:
            HELD.append(b"x" * (200 << 20))
        return super().act(obs, legal)


run_bot(Hungry)
"""


def _tournament(admin: Admin, name: str, bot: str, grace_ms: int,
                **limits: float) -> tournament_pb2.Tournament:
    """One table of `bot` and two house bots, one hand, under these sandbox limits."""
    return admin.create_tournament(
        name=name, players=3, format="round_robin",
        bot_ids=[bot, "house:greedy", "house:random"], rules={"max_hands": "1"},
        grace_ms=grace_ms, sandbox=game_pb2.SandboxLimits(**limits))  # type: ignore[arg-type]


def _tournament_games(admin: Admin, st: Stack, tournament_id: str) -> list[match_pb2.Match]:
    """Its games, once it has finished."""
    wait_until("the tournament to finish", lambda: admin.get_tournament(
        tournament_id).status == tournament_pb2.TOURNAMENT_STATUS_FINISHED,
        timeout=240, every=0.5)
    return [_match(st.address, st.admin_token, m.match_id) for m in admin.list_matches(
        match_pb2.ListMatchesRequest(tournament_id=tournament_id), 10)]


def test_an_events_sandbox_limits_bind_its_hosted_bots(hs: Hosted) -> None:
    """A warm sandbox serving a game without limits is started again under a
    tournament's lower ones before the tournament's game asks it anything, and under the
    host's again once that game is over (`--loosen-after 3`), the other game going on,
    without forfeit; a bot that takes 200 MB (which the host's 512 MB allowed in its
    validation) is stopped in a tournament of 128 MB, the reason in its log; settings
    out of bounds or above what the hosts give are one clear error each."""
    admin = Admin(hs.st.address, hs.st.admin_token)
    calm = hs.submit("calm", _package(hs.tmp / "calm", "greedy"))
    assert calm["exit"] == 0, calm
    bot = calm["bot_id"]
    slow_id, slow_token = register(hs.st.address, "calm-slow", hs.st.admin_token)
    slow = hs.st.bot("netbots:ThinkingBot", hs.st.address, slow_token)  # a long game
    single = admin.create_match(3, [bot, "house:greedy", slow_id], rules={"max_hands": "10"},
                                grace_ms=60_000).match_id
    wait_until("calm playing its single match", lambda: hs.r.scard(
        f"ms:bot:{bot}:live") and hs.r.zcard(f"ms:bot:{bot}:presence"), timeout=60,
        every=0.1)
    cup = _tournament(admin, "calm cup", bot, 30_000, memory_mb=128, pids=48)
    assert cup.spec.sandbox.memory_mb == 128 and cup.spec.sandbox.pids == 48
    assert not cup.spec.sandbox.HasField("cpu_s")
    (game,) = _tournament_games(admin, hs.st, cup.tournament_id)
    assert not game.result.HasField("forfeit"), game.result
    log = wait_until("the sandbox under the host's limits again, the single game going on",
                     lambda: (x if "allow it more" in (x := hs.show("calm@1")["hosted"][
                         "log_tail"]) else None), timeout=60, every=0.5)
    assert _match(hs.st.address, hs.st.admin_token, single).status == \
        match_pb2.MATCH_STATUS_RUNNING  # it was loosened while a game was under way
    done = _done(hs.st, single)
    assert not done.result.HasField("forfeit"), done.result
    slow.stop()
    lines = [x for x in log.splitlines() if x.startswith("[host] ")]
    host_s = "[host] limits: memory 512 MB, 64 processes, 3600 CPU s, 1 core, scratch 16 MB"
    at = lines.index("[host] started again: a game under way allows it less "
                     "(memory_mb, pids)")
    assert lines[at - 2:at] == [host_s, "[host] stopped: to start it again under other "
                                        "limits"], log  # the single game's sandbox
    assert lines[at + 1:at + 5] == [
        "[host] limits: memory 128 MB, 48 processes, 3600 CPU s, 1 core, scratch 16 MB",
        "[host] stopped: to start it again under other limits",
        "[host] started again: the games under way allow it more", host_s], log

    folder = _script(hs.tmp / "hungry", HUNGRY_PY)
    hungry = hs.submit("hungry", folder)
    assert hungry["exit"] == 0, hungry  # 200 MB within the host's 512: validated
    lean = _tournament(admin, "lean cup", hungry["bot_id"], 8_000, memory_mb=128)
    (game,) = _tournament_games(admin, hs.st, lean.tournament_id)
    seat = list(game.bot_ids).index(hungry["bot_id"])
    assert game.result.HasField("forfeit") and game.result.forfeit.seat == seat, game.result
    shown = hs.show("hungry@1")["hosted"]
    assert "killed: memory limit 128 MB exceeded" in shown["log_tail"], shown["log_tail"]
    assert shown["status"] == "active"  # an event's limit is the event's, not a failure

    def refused(call: Any) -> str:
        with pytest.raises(grpc.RpcError) as info:
            call()
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value
        return str(info.value.details())

    pool = rating_pb2.RATING_POOL_TWO_VS_TWO
    text = refused(lambda: _arena(hs.st.address, hs.st.admin_token, "StartArena",
                                  arena_pb2.StartArenaRequest(pool=pool, settings=(
                                      arena_pb2.ArenaSettings(sandbox=game_pb2.SandboxLimits(
                                          memory_mb=10))))))
    assert text == ("settings.sandbox.memory_mb must be an integer from 64 to 16384 (MB), "
                    "got 10"), text
    text = refused(lambda: _tournament(admin, "big cup", bot, 30_000, memory_mb=1024))
    assert text.startswith("spec.sandbox.memory_mb: 1024 MB is more than the stack's hosts "
                           "give a sandbox (512 MB: `moonshot host --memory-mb`)"), text
    text = refused(lambda: _tournament(admin, "big cup", bot, 30_000, pids=0))
    assert text.startswith("spec.sandbox.pids must be an integer from 4 to 4096"), text
    with grpc.insecure_channel(hs.st.address) as ch:
        tests = change_pb2_grpc.TestServiceStub(ch)
        md = (("authorization", f"Bearer {hs.token()}"),)
        for limits, error in (({"cpu_cores": 0.0}, "spec.sandbox.cpu_cores must be a number "
                                                    "from 0.1 to 64"),
                              ({"scratch_mb": 2048}, "spec.sandbox.scratch_mb must be an "
                                                     "integer from 1 to 1024"),
                              ({"cpu_s": 7200}, "spec.sandbox.cpu_s: 7200 CPU seconds is "
                                                "more than the stack's hosts give")):
            text = refused(lambda limits=limits: tests.CreateTest(change_pb2.CreateTestRequest(
                spec=change_pb2.TestSpec(candidate="hungry@1", baseline="calm@1",
                                         sandbox=game_pb2.SandboxLimits(**limits))),
                metadata=md, timeout=30))
            assert text.startswith(error), text
    # A good one is kept and shown (arena settings are public).
    _arena(hs.st.address, hs.st.admin_token, "StartArena", arena_pb2.StartArenaRequest(
        pool=pool, settings=arena_pb2.ArenaSettings(sandbox=game_pb2.SandboxLimits(
            memory_mb=256, cpu_cores=0.5))))
    got = _arena(hs.st.address, hs.st.admin_token, "GetArena",
                 arena_pb2.GetArenaRequest(pool=pool)).arena
    assert (got.settings.sandbox.memory_mb, got.settings.sandbox.cpu_cores) == (256, 0.5)
    assert not got.settings.sandbox.HasField("pids")
    _arena(hs.st.address, hs.st.admin_token, "StopArena", arena_pb2.StopArenaRequest(pool=pool))
