"""SubmitVersion end to end: a real Redis, a real referee (with a SQLite archive) on a free
port, real gRPC and the `moonshot` command as a user runs it.

An author submits a folder and sees the version in GetBot (building, its line, number and
previous version); two submissions of one folder are two versions and one package row;
who may submit (and read a version's log) is the table's; the per-author allowance
answers RESOURCE_EXHAUSTED; every bad upload gets one clear status and leaves nothing
behind (no bot, no package row, no number of the line burnt, no submission counted).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
import redis
import sqlalchemy as sa
from stack import Stack, env, moonshot

from archive import schema
from clients.hosted import requests
from clients.redisproc import RedisServer
from hosting.package import pack
from proto.moon.v1 import account_pb2, account_pb2_grpc, bot_pb2, bot_pb2_grpc
from store import hosted as store_hosted
from store import keys

PER_DAY = 4
MANIFEST = 'runtime = "python3.11"\ncommand = ["python", "bot.py"]\n'
Req = bot_pb2.SubmitVersionRequest
Header = bot_pb2.SubmitVersionRequest.Header


@dataclass
class Hosting:
    """A stack of its own (its archive is noted in its Redis) and a channel to it."""

    stack: Stack
    address: str
    r: redis.Redis
    archive: str
    channel: grpc.Channel
    admin_token: str

    @property
    def stub(self) -> bot_pb2_grpc.BotServiceStub:
        return bot_pb2_grpc.BotServiceStub(self.channel)

    def sign_up(self, name: str) -> tuple[str, str]:
        resp = account_pb2_grpc.AccountServiceStub(self.channel).SignUp(
            account_pb2.SignUpRequest(name=name), timeout=10)
        return resp.author.author_id, resp.token

    def packages(self) -> dict[str, int]:
        engine = sa.create_engine(self.archive)
        with engine.connect() as conn:
            rows = conn.execute(sa.select(schema.packages.c.digest, schema.packages.c.size))
            out = {str(d): int(s) for d, s in rows}
        engine.dispose()
        return out


@pytest.fixture(scope="module")
def hosting(tmp_path_factory: pytest.TempPathFactory, admin_token: str) -> Iterator[Hosting]:
    tmp = tmp_path_factory.mktemp("submit")
    archive = f"sqlite:///{tmp / 'archive.sqlite3'}"
    with RedisServer(tmp / "redis", appendonly=False) as srv:
        st = Stack(tmp, srv.url, admin_token=admin_token, archive=archive)
        p = st.start("referee", moonshot(
            "referee", "--listen", "127.0.0.1:0", "--redis", srv.url,
            "--auth-free-failures", "100000", "--registrations-per-hour", "0",
            "--versions-per-day", str(PER_DAY), "--archive", archive))
        port = p.wait_for(r"referee listening on 127\.0\.0\.1:(\d+)").group(1)
        address = f"127.0.0.1:{port}"
        st.address = address
        r = redis.Redis.from_url(srv.url, decode_responses=True)
        channel = grpc.insecure_channel(address)
        try:
            yield Hosting(st, address, r, archive, channel, admin_token)
        finally:
            channel.close()
            r.close()
            st.stop_all()


def _md(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


def _folder(path: Path, manifest: str = MANIFEST, body: str = "print('hi')\n") -> Path:
    path.mkdir(parents=True)
    (path / "moonshot.toml").write_text(manifest)
    (path / "bot.py").write_text(body)
    return path


def _submit(h: Hosting, token: str | None, line: str, data: bytes
            ) -> bot_pb2.SubmitVersionResponse:
    return h.stub.SubmitVersion(requests(line, data), metadata=_md(token), timeout=30)


def _refused(call: Callable[[], object]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value


def _get(h: Hosting, bot: str, token: str | None = None) -> bot_pb2.Bot:
    return h.stub.GetBot(bot_pb2.GetBotRequest(bot_id=bot), metadata=_md(token),
                         timeout=10).bot


def test_an_author_submits_and_sees_the_version_in_get_bot(
        hosting: Hosting, name: str, tmp_path: Path) -> None:
    author_id, token = hosting.sign_up(f"{name}-a")
    data = pack(_folder(tmp_path / "bot"))
    digest = hashlib.sha256(data).hexdigest()

    # A new line: version 1, the next version of nothing.
    first = _submit(hosting, token, f"{name}-new", data)
    assert first.bot.name == f"{name}-new@1" and first.bot.owner_id == author_id
    assert first.bot.previous_id == ""
    h = first.bot.hosted
    assert (h.line, h.number, h.digest, h.size, h.runtime, list(h.command), h.status) == (
        f"{name}-new", 1, digest, len(data), "python3.11", ["python", "bot.py"],
        bot_pb2.VERSION_STATUS_BUILDING)
    assert h.log_tail == "" and h.HasField("updated_at")
    # Its token is a bot token of the version (shown once, for debugging).
    who = account_pb2_grpc.AccountServiceStub(hosting.channel).WhoAmI(
        account_pb2.WhoAmIRequest(), metadata=_md(first.token), timeout=10)
    assert who.role == account_pb2.ROLE_BOT and who.bot_id == first.bot.bot_id

    # A line with the author's own bot of that name: version 1 follows it.
    reg = hosting.stub.RegisterBot(bot_pb2.RegisterBotRequest(name=f"{name}-line"),
                                   metadata=_md(token), timeout=10)
    v1 = _submit(hosting, token, f"{name}-line", data).bot
    v2 = _submit(hosting, token, f"{name}-LINE", data).bot  # names ignore case
    assert v1.name == f"{name}-line@1" and v1.previous_id == reg.bot_id
    assert v2.name == f"{name}-LINE@2" and v2.previous_id == v1.bot_id
    assert v2.hosted.number == 2 and v2.hosted.digest == v1.hosted.digest == digest

    # GetBot, by id or by the version's name, from anyone.
    got = _get(hosting, f"{name}-line@2")
    assert got.bot_id == v2.bot_id and list(got.version_ids) == [reg.bot_id, v1.bot_id,
                                                                v2.bot_id]
    assert got.hosted.status == bot_pb2.VERSION_STATUS_BUILDING
    assert got.hosted.line == f"{name}-LINE" and got.hosted.number == 2
    assert not _get(hosting, reg.bot_id).HasField("hosted")  # a remote bot
    mine = hosting.stub.ListBots(bot_pb2.ListBotsRequest(mine=True), metadata=_md(token),
                                 timeout=10).bots
    assert {b.name: b.HasField("hosted") for b in mine} == {
        f"{name}-new@1": True, f"{name}-line": False, f"{name}-line@1": True,
        f"{name}-LINE@2": True}

    # The same bytes are kept once; every version waits for a host's check.
    assert hosting.packages() == {digest: len(data)}
    waiting = store_hosted.waiting_validation(hosting.r)
    assert {first.bot.bot_id, v1.bot_id, v2.bot_id} <= set(waiting)
    assert hosting.r.get(store_hosted.line_key(author_id, f"{name}-line")) == "2"


def test_the_log_tail_is_for_the_owner_and_the_admin_only(
        hosting: Hosting, name: str, tmp_path: Path) -> None:
    _, token = hosting.sign_up(f"{name}-owner")
    _, other = hosting.sign_up(f"{name}-other")
    resp = _submit(hosting, token, f"{name}-bot", pack(_folder(tmp_path / "b")))
    bot_id = resp.bot.bot_id
    store_hosted.append_log(hosting.r, bot_id, "Traceback: my secret strategy\n")
    store_hosted.set_status(hosting.r, bot_id, store_hosted.VersionStatus.FAILED,
                            "exited at once (status 1)")
    for caller, sees in ((token, True), (hosting.admin_token, True), (other, False),
                         (None, False), (resp.token, False)):
        got = _get(hosting, bot_id, caller).hosted
        assert got.status == bot_pb2.VERSION_STATUS_FAILED
        assert got.reason == "exited at once (status 1)"
        assert ("my secret strategy" in got.log_tail) is sees, caller
        listed = hosting.stub.ListBots(bot_pb2.ListBotsRequest(owner=f"{name}-owner"),
                                       metadata=_md(caller), timeout=10).bots
        assert [("my secret strategy" in b.hosted.log_tail) for b in listed] == [sees]


def _nothing_left(h: Hosting, author_id: str, line: str, packages: dict[str, int],
                  counted: str | None) -> None:
    assert h.r.get(keys.bot_name(f"{line}@1".lower())) is None, "a version was registered"
    assert h.r.get(store_hosted.line_key(author_id, line)) is None, "the line's number burnt"
    assert h.packages() == packages, "a package row was written"
    day = int(time.time() // 86400)
    assert h.r.get(store_hosted.submitted_key(author_id, day)) == counted, "counted"


def test_who_may_submit(hosting: Hosting, name: str, tmp_path: Path) -> None:
    owner_id, token = hosting.sign_up(f"{name}-owner")
    other_id, other = hosting.sign_up(f"{name}-other")
    data = pack(_folder(tmp_path / "b"))
    before = hosting.packages()
    bot = hosting.stub.RegisterBot(bot_pb2.RegisterBotRequest(name=f"{name}-mine"),
                                   metadata=_md(token), timeout=10)
    line = f"{name}-mine"
    for caller, code, said in (
        (None, grpc.StatusCode.UNAUTHENTICATED, "SubmitVersion needs the token of the author"),
        ("u-000000000000.nope", grpc.StatusCode.UNAUTHENTICATED, ""),
        (bot.token, grpc.StatusCode.PERMISSION_DENIED, "this is a bot token"),
        (hosting.admin_token, grpc.StatusCode.PERMISSION_DENIED, "only an author owns"),
        (other, grpc.StatusCode.PERMISSION_DENIED, f"the bot {line} belongs to another "
                                                   "author"),
    ):
        err = _refused(lambda c=caller: _submit(hosting, c, line, data))  # type: ignore[misc]
        assert err.code() == code, (caller, err.details())
        assert said in err.details(), err.details()
    _nothing_left(hosting, other_id, line, before, None)
    _nothing_left(hosting, owner_id, line, before, None)
    # A line named by a bot of no one is no author's either; '@' names are versions'.
    anon = hosting.stub.RegisterBot(bot_pb2.RegisterBotRequest(name=f"{name}-anon"),
                                    timeout=10)
    assert anon.bot_id
    err = _refused(lambda: _submit(hosting, token, f"{name}-anon", data))
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED and "no one" in err.details()
    err = _refused(lambda: hosting.stub.RegisterBot(
        bot_pb2.RegisterBotRequest(name=f"{name}-mine@7"), metadata=_md(token), timeout=10))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    err = _refused(lambda: _submit(hosting, token, f"{name}-mine@1", data))
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "not a valid bot name" in \
        err.details()


def test_an_author_past_the_days_allowance_is_refused_saying_when_it_frees(
        hosting: Hosting, name: str, tmp_path: Path) -> None:
    author_id, token = hosting.sign_up(f"{name}-busy")
    data = pack(_folder(tmp_path / "b"))
    for n in range(1, PER_DAY + 1):
        assert _submit(hosting, token, f"{name}-x", data).bot.name == f"{name}-x@{n}"
    err = _refused(lambda: _submit(hosting, token, f"{name}-y", data))
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert f"you submitted {PER_DAY} versions today" in err.details()
    assert "the next is allowed at" in err.details() and "00:00 UTC" in err.details()
    _nothing_left(hosting, author_id, f"{name}-y", hosting.packages(), str(PER_DAY))


MiB = 1 << 20


def _raw_package(files: dict[str, bytes]) -> bytes:
    """A tar.gz `pack` would refuse to make (the server must refuse it too)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for path, data in files.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue())


def _bad_cases(tmp: Path) -> dict[str, tuple[list[Req], grpc.StatusCode, str]]:
    good = pack(_folder(tmp / "good"))
    java = _raw_package({"moonshot.toml": b'runtime = "java"\ncommand = ["java", "Bot"]\n'})
    garbage = os.urandom(5000)
    big = os.urandom(MiB + 1)

    def header(data: bytes, size: int | None = None, sha: str | None = None) -> Req:
        return Req(header=Header(line="LINE", size=len(data) if size is None else size,
                                 sha256=sha or hashlib.sha256(data).hexdigest()))

    ok = grpc.StatusCode
    return {
        "over the size limit": ([header(good, size=9 * MiB), Req(chunk=good)],
                                ok.RESOURCE_EXHAUSTED, "a package is at most 8388608 bytes"),
        "hash mismatch": ([header(good, sha="0" * 64), Req(chunk=good)],
                          ok.INVALID_ARGUMENT, "the header said 0000"),
        "size mismatch": ([header(good, size=len(good) + 10), Req(chunk=good)],
                          ok.INVALID_ARGUMENT, f"the stream ended after {len(good)} bytes"),
        "more than the size": ([header(good, size=10), Req(chunk=good)],
                               ok.INVALID_ARGUMENT, "more bytes than the header's size (10)"),
        "chunk over 1 MiB": ([header(big), Req(chunk=big)], ok.INVALID_ARGUMENT,
                             "a chunk of 1048577 bytes (1.00 MiB): at most 1048576"),
        "header missing": ([Req(chunk=good)], ok.INVALID_ARGUMENT,
                           "the first message carries the header"),
        "two headers": ([header(good), header(good)], ok.INVALID_ARGUMENT,
                        "only the first message carries a header"),
        "no message": ([], ok.INVALID_ARGUMENT, "the stream ended before its header"),
        "bad digest": ([header(good, sha="XYZ")], ok.INVALID_ARGUMENT,
                       "header.sha256: 64 lowercase hex digits"),
        "garbage bytes": ([header(garbage), Req(chunk=garbage)], ok.INVALID_ARGUMENT,
                          "the package: the package is not a tar.gz"),
        "unknown runtime": ([header(java), Req(chunk=java)], ok.INVALID_ARGUMENT,
                            "runtime 'java' is not one this stack offers: python3.11, node, "
                            "static"),
    }


NAMES = ["over the size limit", "hash mismatch", "size mismatch", "more than the size",
         "chunk over 1 MiB", "header missing", "two headers", "no message", "bad digest",
         "garbage bytes", "unknown runtime"]


@pytest.mark.parametrize("case", NAMES)
def test_bad_input_gets_one_clear_status_and_leaves_nothing_behind(
        hosting: Hosting, name: str, tmp_path: Path, case: str) -> None:
    author_id, token = hosting.sign_up(f"{name}-bad")
    line = f"{name}-line"
    sent, code, said = _bad_cases(tmp_path)[case]
    for msg in sent:
        if msg.WhichOneof("part") == "header":
            msg.header.line = line
    before = hosting.packages()
    err = _refused(lambda: hosting.stub.SubmitVersion(iter(sent), metadata=_md(token),
                                                      timeout=30))
    assert err.code() == code, (case, err.code(), err.details())
    assert said in err.details(), err.details()
    _nothing_left(hosting, author_id, line, before, None)
    # ... and the author's next good submission is version 1, counted once.
    ok = _submit(hosting, token, line, pack(_folder(tmp_path / "after")))
    assert ok.bot.name == f"{line}@1"


def test_a_stack_without_an_archive_refuses_before_the_bytes(
        stack: Stack, name: str, tmp_path: Path) -> None:
    """The session's stack keeps finished games in Redis only: no package can be kept."""
    with grpc.insecure_channel(stack.address) as ch:
        token = account_pb2_grpc.AccountServiceStub(ch).SignUp(
            account_pb2.SignUpRequest(name=f"{name}-na"), timeout=10).token
        err = _refused(lambda: bot_pb2_grpc.BotServiceStub(ch).SubmitVersion(
            requests(f"{name}-l", pack(_folder(tmp_path / "b"))), metadata=_md(token),
            timeout=30))
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "no archive" in err.details() and "--archive" in err.details()


# ------------------------------------------------------------------ the CLI


class User:
    """One user of the command line: their own config file, no admin token in reach."""

    def __init__(self, h: Hosting, home: Path) -> None:
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self.env = env(MOONSHOT_CONFIG=str(home / "config" / "credentials.json"),
                       MOONSHOT_DATA=str(home / "no-data"), MOONSHOT_SERVER=h.address)
        for var in ("MOONSHOT_ADMIN_TOKEN", "MOONSHOT_TOKEN"):
            self.env.pop(var, None)

    def run(self, *args: str, code: int = 0) -> tuple[str, str]:
        import subprocess

        res = subprocess.run(moonshot(*args), env=self.env, cwd=self.home,
                             capture_output=True, text=True, timeout=120, check=False)
        assert res.returncode == code, (args, res.returncode, res.stdout, res.stderr)
        return res.stdout, res.stderr


def test_bot_submit_and_bot_show_as_a_user_runs_them(
        hosting: Hosting, name: str, tmp_path: Path) -> None:
    alice, bob = User(hosting, tmp_path / "alice"), User(hosting, tmp_path / "bob")
    alice.run("signup", f"{name}-alice")
    bob.run("signup", f"{name}-bob")
    folder = _folder(tmp_path / "mybot")
    digest = hashlib.sha256(pack(folder)).hexdigest()

    # Refused before a byte is sent: no folder, no manifest, over a limit.
    _, err = alice.run("bot", "submit", f"{name}-a", str(tmp_path / "nowhere"), code=1)
    assert "no such folder" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    _, err = alice.run("bot", "submit", f"{name}-a", str(empty), code=1)
    assert "no moonshot.toml in it" in err
    crowded = _folder(tmp_path / "crowded")
    for i in range(4000):
        (crowded / f"f{i}").touch()
    _, err = alice.run("bot", "submit", f"{name}-a", str(crowded), code=1)
    assert "4002 files and folders; a package holds at most 4000" in err

    out, _ = alice.run("bot", "submit", f"{name}-a", str(folder))
    assert f"version: {name}-a@1 (b-" in out and f"sha256 {digest}" in out
    assert "status:  building" in out and "token:   b-" in out
    assert f"moonshot bot show {name}-a@1" in out
    bot_id = out.split("(", 1)[1].split(")", 1)[0]
    out, _ = alice.run("bot", "submit", f"{name}-a", str(folder), "--json")
    second = json.loads(out)
    assert second["name"] == f"{name}-a@2" and second["digest"] == digest

    store_hosted.append_log(hosting.r, bot_id, "ImportError: no module named torch\n")
    store_hosted.set_status(hosting.r, bot_id, store_hosted.VersionStatus.FAILED,
                            "exited at once (status 1)")
    out, _ = alice.run("bot", "show", f"{name}-a@1")
    assert f"bot:      {name}-a@1 ({bot_id})" in out and f"owner:    {name}-alice" in out
    assert "hosted:   version 1 of" in out and "python3.11: python bot.py" in out
    assert "status:   failed (exited at once (status 1))" in out and digest in out
    assert "ImportError: no module named torch" in out
    out, _ = bob.run("bot", "show", f"{name}-a@1")
    assert "status:   failed" in out and "ImportError" not in out
    out, _ = bob.run("bot", "show", f"{name}-a@2", "--json")
    shown = json.loads(out)["hosted"]
    assert shown["status"] == "building" and shown["number"] == 2 and shown["log_tail"] == ""
    _, err = bob.run("bot", "submit", f"{name}-a", str(folder), code=1)
    assert "belongs to another author" in err

    # --wait: until a host says how it went (here, the host's record written by hand).
    def activate() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = hosting.r.get(keys.bot_name(f"{name}-a@3".lower()))
            if found:
                time.sleep(1.5)
                store_hosted.set_status(hosting.r, found, store_hosted.VersionStatus.ACTIVE)
                return
            time.sleep(0.05)

    t = threading.Thread(target=activate, daemon=True)
    t.start()
    out, _ = alice.run("bot", "submit", f"{name}-a", str(folder), "--wait")
    t.join()
    assert "status:  building" in out and out.rstrip().endswith("status:  active")


def test_the_bot_page_shows_a_versions_status_and_never_its_log(
        hosting: Hosting, name: str, tmp_path: Path) -> None:
    import subprocess
    import urllib.parse
    import urllib.request

    from stack import Proc

    _, token = hosting.sign_up(f"{name}-web")
    resp = _submit(hosting, token, f"{name}-w", pack(_folder(tmp_path / "b")))
    store_hosted.append_log(hosting.r, resp.bot.bot_id, "SECRET-LOG-LINE\n")
    store_hosted.set_status(hosting.r, resp.bot.bot_id, store_hosted.VersionStatus.FAILED,
                            "did not answer in time")
    child_env = env()
    child_env.pop("MOONSHOT_ADMIN_TOKEN", None)
    log = tmp_path / "web.log"
    with open(log, "wb") as fh:
        popen = subprocess.Popen(moonshot("web", "--server", hosting.address, "--listen",
                                          "127.0.0.1:0"), stdout=fh,
                                 stderr=subprocess.STDOUT, env=child_env)
    web = Proc("web", popen, log)
    try:
        url = web.wait_for(r"web pages on (http://\S+)", timeout=30).group(1).rstrip("/")
        page = urllib.request.urlopen(
            f"{url}/bot/{urllib.parse.quote(resp.bot.name)}", timeout=30).read().decode()
    finally:
        web.stop()
    assert 'id="bot-hosted" data-status="failed"' in page
    assert "python3.11" in page and "python bot.py" in page
    assert "did not answer in time" in page and resp.bot.hosted.digest[:16] in page
    assert "SECRET-LOG-LINE" not in page
