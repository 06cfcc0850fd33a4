"""Hosted versions: cold start, the decision round trip in a sandbox, warm sandboxes a host keeps.

Run `python bench/hosted.py [--cold N] [--matches N] [--warm K] [--only cold,trip,warm]`
as root on a machine where `hosting.sandbox.check()` passes. Everything runs as real
processes started the way a user starts them: a private redis-server, `moonshot referee`
with a SQLite archive, `moonshot worker`, `moonshot host`, and the author's
`moonshot bot submit`. The bot is an SDK bot that answers the first legal action at once
(`threads=0`). It prints only `name: value unit` lines:

1. Cold start (`cold start p50/p99`, seconds): `--cold` (20) single matches, one at a
   time, of the hosted bot against two `house:random`, each created while no sandbox of
   it runs (the host runs with `--idle 1`; the bench waits for the sandbox to be
   stopped). The figure is the match's own measure of the bot's first decision: from the
   request going out (the match needs the bot; nothing of it runs) to its answer, which
   covers the host seeing the want, the lease, the sandbox, Python and the SDK starting,
   the connect through the relay, and the answer.
2. Round trip (`decision hosted WAY p50`, `decision remote (WAY run) p50`,
   microseconds, and `decision hosted WAY/remote p50`): `--matches` (6) matches with
   the hosted bot and the same program run as a plain process on this machine
   (registered as a remote bot) in two seats of each match, the third `house:random`;
   rules `all_pass=forced`, so each match has hundreds of decisions. Both seats are
   measured by the match job in the same games, under the same load. WAY is how the
   sandbox reaches the referee: `relay` (the host forwards a unix socket to the
   referee's TCP port: any host, any machine) or `direct` (the referee's own unix
   socket, `moonshot referee --listen-unix`, bound into the sandbox: a host on the
   referee's machine, as `moonshot up` runs it). The goal is a ratio of at most 1.2.
3. Warm (`warm sandboxes`, `memory per idle sandbox`, `memory per playing sandbox`, MB,
   and `warm per host estimate`): `--warm` (16) versions of the same package (one
   digest, K bots) started at once, their memory (PSS, which shares the interpreter's
   pages fairly) summed over every process under the host, idle and then while each
   plays a match; the estimate is how many idle Python sandboxes fit in 3/4 of this
   machine's memory.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "net")]

import psutil  # noqa: E402
import redis  # noqa: E402
from stack import Proc, Stack, env, moonshot  # noqa: E402

from clients.admin import Admin  # noqa: E402
from clients.redisproc import RedisServer  # noqa: E402
from clients.sdk import register  # noqa: E402
from hosting.sandbox import check  # noqa: E402
from proto.moon.v1 import account_pb2, account_pb2_grpc, match_pb2  # noqa: E402
from store import hosted, keys  # noqa: E402

BOT_PY = """\
from clients.bot import Bot
from clients.sdk import run_bot


class First(Bot):
    name = "first"

    def act(self, obs, legal):
        return legal[0]


run_bot(First, threads=0)
"""
FORCED = {"all_pass": "forced"}
SHORT = {"max_hands": "1"}


def show(name: str, value: float | int, unit: str = "", fmt: str = ".3g") -> None:
    """One `name: value unit` line."""
    print(f"{name}: {format(value, fmt)} {unit}".rstrip(), flush=True)


def pct(xs: list[float], q: float) -> float:
    """The q-quantile (nearest rank)."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


class Bench:
    """The stack, the author, the package."""

    def __init__(self, tmp: Path, admin_token: str, srv: RedisServer) -> None:
        self.tmp = tmp
        self.st = Stack(tmp, srv.url, admin_token=admin_token,
                        archive=f"sqlite:///{tmp / 'archive.sqlite3'}")
        self.r = redis.Redis.from_url(srv.url, decode_responses=True)
        self.sock = tmp / "referee.sock"
        ref = self.st.start("referee", moonshot(
            "referee", "--listen", "127.0.0.1:0", "--redis", srv.url, "--archive",
            self.st.archive, "--registrations-per-hour", "0", "--listen-unix", str(self.sock)))
        port = ref.wait_for(r"referee listening on 127\.0\.0\.1:(\d+)").group(1)
        self.st.address = f"127.0.0.1:{port}"
        self.st.worker("--concurrency", "200")
        self.admin = Admin(self.st.address, admin_token)
        import grpc

        with grpc.insecure_channel(self.st.address) as ch:
            got = account_pb2_grpc.AccountServiceStub(ch).SignUp(
                account_pb2.SignUpRequest(name="bench"), timeout=30)
        self.author_token = got.token
        self.pkg = tmp / "pkg"
        self.pkg.mkdir()
        (self.pkg / "bot.py").write_text(BOT_PY)
        (self.pkg / "moonshot.toml").write_text('runtime = "python3.11"\n'
                                                'command = ["python", "bot.py"]\n')
        self.host: Proc | None = None
        self.logs: dict[str, list[dict[str, Any]]] = {}
        self._watch: set[str] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._capture, daemon=True).start()

    def start_host(self, *extra: str) -> None:
        if self.host is not None:
            self.host.stop()
        self.host = self.st.start("host", moonshot(
            "host", "--redis", self.st.redis_url, "--referee", self.st.address,
            "--archive", self.st.archive, "--data", str(self.tmp / "host"), "--slots", "64",
            *extra))
        self.host.wait_for(r"running hosted versions", timeout=60)

    def submit(self, line: str) -> dict[str, Any]:
        res = subprocess.run(moonshot("bot", "submit", line, str(self.pkg), "--wait", "--json",
                                      "--server", self.st.address),
                             env=env(MOONSHOT_TOKEN=self.author_token), capture_output=True,
                             text=True, timeout=600, check=False)
        if res.returncode != 0:
            raise RuntimeError(f"submit {line}: {res.stdout} {res.stderr}")
        return dict(json.loads(res.stdout.splitlines()[0]))

    def _capture(self) -> None:
        """Keep the newest copy of each watched match's log (it leaves Redis for the
        archive once the match ends)."""
        while True:
            with self._lock:
                watched = list(self._watch)
            for m in watched:
                raw = self.r.lrange(keys.match_log(m), 0, -1)
                entries = [json.loads(e) for e in raw if '"forfeit"' not in e]
                with self._lock:
                    if len(entries) >= len(self.logs.get(m, [])):
                        self.logs[m] = entries
            time.sleep(0.02)

    def play(self, seats: list[str], rules: dict[str, str], grace_ms: int = 30_000) -> str:
        mid = self.admin.create_match(3, seats, rules=rules, grace_ms=grace_ms).match_id
        with self._lock:
            self._watch.add(mid)
        return mid

    def wait(self, mids: list[str], timeout: float = 600) -> None:
        end = time.monotonic() + timeout
        for m in mids:
            while self.admin.get_match(m).status != match_pb2.MATCH_STATUS_FINISHED:
                if time.monotonic() > end:
                    raise TimeoutError(f"match {m} not finished")
                time.sleep(0.1)
        time.sleep(0.1)
        with self._lock:
            for m in mids:
                self._watch.discard(m)

    def running(self, bot_id: str) -> bool:
        return bool(self.r.exists(hosted.lease_key(bot_id)))


def cold(b: Bench, n: int) -> None:
    b.start_host("--idle", "1")
    v = b.submit("cold")
    bot = v["bot_id"]
    firsts = []
    for _ in range(n):
        deadline = time.monotonic() + 60
        while b.running(bot) or b.r.zcard(keys.presence(bot)):
            if time.monotonic() > deadline:
                raise TimeoutError("the sandbox did not stop when idle")
            time.sleep(0.05)
        mid = b.play([bot, "house:random", "house:random"], SHORT)
        b.wait([mid])
        mine = [e for e in b.logs[mid] if e.get("seat") == 0]
        firsts.append(float(mine[0]["us"]) / 1e6)
    show("cold start p50", statistics.median(firsts), "s")
    show("cold start p99", pct(firsts, 0.99), "s")
    show("cold start max", max(firsts), "s")
    show("cold start samples", len(firsts), "")


def trip(b: Bench, n: int) -> None:
    b.start_host("--idle", "600")
    v = b.submit("trip")
    for way, flags in (("relay", ()), ("direct", ("--referee-socket", str(b.sock)))):
        b.start_host("--idle", "600", *flags)
        _trip(b, v, n, way)


def _trip(b: Bench, v: dict[str, Any], n: int, way: str) -> None:
    remote_id, token = register(b.st.address, f"trip-remote-{way}",
                                admin_token=b.st.admin_token)
    proc = b.st.start("remote", [sys.executable, str(b.pkg / "bot.py")],
                      MOONSHOT_REFEREE=b.st.address, MOONSHOT_TOKEN=token,
                      PYTHONPATH=str(ROOT))
    deadline = time.monotonic() + 30
    while not b.r.zcard(keys.presence(remote_id)):
        if time.monotonic() > deadline or not proc.alive():
            raise RuntimeError(f"the remote bot did not connect: {proc.text()[-500:]}")
        time.sleep(0.05)
    seats = [v["bot_id"], remote_id, "house:random"]
    mids = [b.play(seats[k % 2:2] + seats[:k % 2] + seats[2:], FORCED) for k in range(n)]
    b.wait(mids)
    us: dict[str, list[float]] = {v["bot_id"]: [], remote_id: []}
    for k, m in enumerate(mids):
        order = seats[k % 2:2] + seats[:k % 2] + seats[2:]
        first_of = {order.index(v["bot_id"]): True}
        for e in b.logs[m]:
            who = order[e["seat"]]
            if who in us and e["by"] == "bot":
                if first_of.pop(e["seat"], False):
                    continue  # a cold start (the hosted bot's first answer), not a trip
                us[who].append(float(e["us"]))
    h, r = statistics.median(us[v["bot_id"]]), statistics.median(us[remote_id])
    show(f"decision hosted {way} p50", h, "us")
    show(f"decision remote ({way} run) p50", r, "us")
    show(f"decision hosted {way} p99", pct(us[v["bot_id"]], 0.99), "us")
    show(f"decision remote ({way} run) p99", pct(us[remote_id], 0.99), "us")
    show(f"decision hosted {way}/remote p50", h / r, "")
    show(f"decisions measured ({way} run)", min(len(x) for x in us.values()), "")
    proc.stop()


def _pss_mb(host: Proc) -> float:
    """PSS of every process under the host (its sandboxes and their launchers), MB."""
    total = 0
    for p in psutil.Process(host.popen.pid).children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            total += p.memory_full_info().pss
    return total / 2**20


def warm(b: Bench, k: int) -> None:
    b.start_host("--idle", "600")
    assert b.host is not None
    base = _pss_mb(b.host)
    bots = [b.submit(f"warm{i}")["bot_id"] for i in range(k)]
    mids = [b.play([bot, "house:random", "house:random"], SHORT) for bot in bots]
    b.wait(mids)
    deadline = time.monotonic() + 120
    while sum(bool(b.r.zcard(keys.presence(x))) for x in bots) < k:
        if time.monotonic() > deadline:
            raise TimeoutError("not every sandbox stayed up")
        time.sleep(0.1)
    time.sleep(2.0)
    idle = (_pss_mb(b.host) - base) / k
    mids = [b.play([bot, "house:random", "house:random"], FORCED) for bot in bots]
    peak = 0.0
    while any(b.admin.get_match(m).status != match_pb2.MATCH_STATUS_FINISHED for m in mids):
        peak = max(peak, _pss_mb(b.host) - base)
        time.sleep(0.3)
    b.wait(mids)
    show("warm sandboxes", k, "")
    show("memory per idle sandbox", idle, "MB")
    show("memory per playing sandbox", peak / k, "MB")
    total_mb = psutil.virtual_memory().total / 2**20
    show("warm per host estimate", int(0.75 * total_mb / max(idle, 1.0)), "sandboxes", "d")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cold", type=int, default=20)
    ap.add_argument("--matches", type=int, default=6)
    ap.add_argument("--warm", type=int, default=16)
    ap.add_argument("--only", default="cold,trip,warm")
    args = ap.parse_args()
    why = check()
    if why is not None:
        sys.exit(f"bench/hosted.py: cannot build sandboxes here: {why}")
    only = set(args.only.split(","))
    import secrets

    with tempfile.TemporaryDirectory(prefix="bench-hosted-") as d:
        tmp = Path(d)
        os.chmod(tmp, 0o755)
        with RedisServer(tmp / "redis", appendonly=False) as srv:
            b = Bench(tmp, "adm." + secrets.token_urlsafe(16), srv)
            try:
                if "cold" in only:
                    cold(b, args.cold)
                if "trip" in only:
                    trip(b, args.matches)
                if "warm" in only:
                    warm(b, args.warm)
            finally:
                b.st.stop_all()


if __name__ == "__main__":
    main()
