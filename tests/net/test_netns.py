"""Many machines, simulated: every part of a deployment in a network namespace of its own.

Redis, two referees, two workers and four bots each get a namespace holding only
its loopback and one end of a veth pair whose other end sits on a bridge in a
"switch" namespace; the test process (the organiser) joins the same switch from
the root namespace. Nine machines on one /24, a random 10.x.y.0:

    switch namespace, bridge br0
      +-- .10 redis
      +-- .11 referee-a
      +-- .12 referee-b    wall clock -23 s, monotonic +1 day
      +-- .21 worker-a
      +-- .22 worker-b     wall clock +37 s, monotonic +3 days
      +-- .31 .32 bot-1, bot-2 (play through referee-a)
      +-- .33 .34 bot-3, bot-4 (through referee-b; bot-4's wall clock +61 s)
      +-- .1  the root namespace: this test, the organiser

Nothing is shared but the wire:

- each part has its own address, working folder, HOME and TMPDIR, and is told
  where the others are by flags only; the admin token reaches one referee by
  environment and the other by flag, never through a file;
- three parts run on clocks of their own: a worker whose wall clock is 37 s fast
  and a referee whose wall clock is 23 s slow, both with monotonic clocks a day or
  more apart from everyone else's, and a bot whose wall clock is 61 s fast.

The wall clock is shifted by datefudge (an LD_PRELOAD library that offsets
`clock_gettime(CLOCK_REALTIME)`, `gettimeofday` and `time`, and nothing else); the
monotonic clock by a time namespace (`unshare --time --monotonic`), the kernel's
own. libfaketime was tried first and does not fit: it shifts the monotonic clock
too, which Python's timed lock waits (`sem_clockwait`, not intercepted) then
overshoot by the whole offset, and with `FAKETIME_DONT_FAKE_MONOTONIC` its
`clock_nanosleep` makes every `time.sleep` fail with EINVAL.

A 3-player round robin (duplicate replay: 24 short games) is played with the bots
split across both referees, so every table has players on both, and every game is
hosted by either worker. It must finish with every game recorded once, standings
that agree with the games on both referees, no strike, disconnect or forfeit, and
every decision charged on Redis's clock: what a bot spent thinking, never the
skew between two machines. Pending requests are sampled while the games run to
check that their deadlines are on Redis's clock too.

Needs root (namespaces, veth pairs, a bridge, time namespaces) and datefudge
(`apt-get install datefudge`, which scripts/test.sh does). Without them the test
fails and says so: it is never skipped.
"""

from __future__ import annotations

import contextlib
import glob
import ipaddress
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
from rq.serializers import JSONSerializer
from stack import Proc, Stack, env, moonshot
from support import check_stored, match_log, transcript_of
from tourney import (
    RUNNING,
    Watcher,
    check_recorded_once,
    check_standings,
    logs_on_failure,
    matches_of,
    wait_finished,
)

from clients.admin import Admin
from clients.redisproc import find_redis_server
from clients.sdk import register
from proto.moon.v1 import bot_pb2, bot_pb2_grpc, match_pb2, tournament_pb2
from store import ids, keys, messages
from workers.queues import MoonshotJob, rq_connection

RULES = {"max_hands": "3"}
MOVE_MS, BANK_MS = 2000, 30000
REDIS_PORT, REFEREE_PORT = 6379, 50051
SLOW = "netbots:SlowGreedyBot"
SLOW_MS = 15  # SlowGreedyBot.DELAY_S: the least a decision of it can be charged

# Only what a moonshot part reads from its environment to find the others: a part must
# get all of that from its own flags (or, for secrets, the environment given it here).
_INHERITED = ("MOONSHOT_ADMIN_TOKEN", "MOONSHOT_BOT_TOKEN", "MOONSHOT_SERVER", "MOONSHOT_DATA",
              "MOONSHOT_TLS", "MOONSHOT_CA_CERT", "REDIS_URL")


def _ip(*args: str) -> str:
    """Run `ip ARGS`; fail naming the command and what it printed."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def _datefudge() -> str:
    """Path of datefudge's library; fail saying how to install it."""
    found = sorted(glob.glob("/usr/lib/*/datefudge/datefudge.so")
                   + glob.glob("/usr/lib/datefudge/datefudge.so"))
    if not found:
        pytest.fail("test_netns needs datefudge to skew wall clocks: apt-get install datefudge "
                    "(scripts/test.sh installs it)")
    return found[0]


def _need_root() -> None:
    """Fail (never skip) unless this process may make namespaces and links."""
    if os.geteuid() != 0:
        pytest.fail("test_netns needs root: it builds network and time namespaces, veth pairs "
                    "and a bridge (CI runs the suite as root; run it with sudo)")
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            pytest.fail(f"test_netns needs `{tool}` (iproute2 / util-linux) on PATH")


def _free_subnet() -> ipaddress.IPv4Network:
    """A random 10.x.y.0/24 that no route of this machine touches (a run that crashed may
    have left its own behind)."""
    shown = _ip("-4", "route", "show", "table", "all") + _ip("-4", "-o", "addr", "show")
    used = [ipaddress.ip_network(m, strict=False)
            for m in re.findall(r"\b\d+\.\d+\.\d+\.\d+(?:/\d+)?\b", shown)]
    for _ in range(200):
        a, b = secrets.randbelow(254) + 1, secrets.randbelow(256)
        net = ipaddress.IPv4Network(f"10.{a}.{b}.0/24")
        if not any(net.overlaps(u) for u in used):
            return net
    raise RuntimeError("no free 10.x.y.0/24 subnet for the simulated network")


@dataclass(frozen=True)
class Clock:
    """How a host's clocks differ from the real ones."""

    wall_s: int = 0  # CLOCK_REALTIME, shifted by datefudge
    monotonic_s: int = 0  # CLOCK_MONOTONIC, shifted by a time namespace


@dataclass
class Host:
    """One simulated machine: a network namespace, an address, a folder, a clock."""

    role: str
    netns: str
    ip: str
    home: Path
    clock: Clock

    def argv(self, cmd: list[str]) -> list[str]:
        """`cmd` as run on this machine."""
        out = ["ip", "netns", "exec", self.netns]
        if self.clock.monotonic_s:
            # The new time namespace holds the command from its exec on (no fork needed).
            out += ["unshare", "--time", "--monotonic", str(self.clock.monotonic_s)]
        return out + cmd

    def environ(self, **extra: str) -> dict[str, str]:
        """The environment of a process on this machine: its own HOME and TMPDIR, nothing
        inherited that could point it at another part."""
        e = env()
        for name in _INHERITED:
            e.pop(name, None)
        (self.home / "tmp").mkdir(parents=True, exist_ok=True)
        e.update(HOME=str(self.home), TMPDIR=str(self.home / "tmp"))
        if self.clock.wall_s:
            # datefudge's variable is the real time minus the time to show.
            e.update(LD_PRELOAD=_datefudge(), DATEFUDGE=str(-self.clock.wall_s))
        e.update(extra)
        return e

    def offsets(self) -> tuple[float, float]:
        """How far this machine's (wall, monotonic) clocks are from the test's, as read by a
        process started here."""
        w0, m0 = time.time(), time.monotonic()
        out = subprocess.run(
            self.argv([sys.executable, "-c", "import time; print(time.time(), time.monotonic())"]),
            env=self.environ(), cwd=self.home, capture_output=True, text=True, check=True)
        w1, m1 = time.time(), time.monotonic()
        wall, mono = (float(x) for x in out.stdout.split())
        return wall - (w0 + w1) / 2, mono - (m0 + m1) / 2


@dataclass
class Net:
    """A switch namespace with a bridge, one namespace per host plugged into it, and the
    root namespace (the test) on it too. Names carry a random tag: a run that crashed
    leaves nothing in the way of the next one."""

    tag: str
    subnet: ipaddress.IPv4Network
    root: Path
    hosts: dict[str, Host] = field(default_factory=dict)
    namespaces: list[str] = field(default_factory=list)
    root_link: str = ""

    @property
    def prefix(self) -> int:
        """The subnet's prefix length."""
        return self.subnet.prefixlen

    def addr(self, last: int) -> str:
        """The address `last` of the subnet."""
        return str(self.subnet.network_address + last)

    def _netns(self, name: str) -> str:
        ns = f"msnet-{self.tag}-{name}"
        _ip("netns", "add", ns)
        self.namespaces.append(ns)
        _ip("-n", ns, "link", "set", "lo", "up")
        return ns

    def up(self) -> None:
        """The switch, and the root namespace's own port on it (the organiser's .1)."""
        sw = self._netns("switch")
        _ip("-n", sw, "link", "add", "br0", "type", "bridge")
        _ip("-n", sw, "link", "set", "br0", "up")
        self.root_link = f"msn{self.tag}"
        _ip("link", "add", self.root_link, "type", "veth", "peer", "name", "uplink",
            "netns", sw)
        _ip("-n", sw, "link", "set", "uplink", "master", "br0", "up")
        _ip("addr", "add", f"{self.addr(1)}/{self.prefix}", "dev", self.root_link)
        _ip("link", "set", self.root_link, "up")

    def host(self, role: str, last: int, clock: Clock = Clock()) -> Host:
        """A new machine at address `last`: only `lo` and `eth0` in its namespace."""
        ns = self._netns(role)
        port = f"p{len(self.hosts)}"
        _ip("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", port,
            "netns", self.namespaces[0])
        _ip("-n", self.namespaces[0], "link", "set", port, "master", "br0", "up")
        _ip("-n", ns, "addr", "add", f"{self.addr(last)}/{self.prefix}", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        home = self.root / "hosts" / role
        home.mkdir(parents=True)
        h = Host(role, ns, self.addr(last), home, clock)
        self.hosts[role] = h
        return h

    def down(self) -> None:
        """Remove every namespace and link of this run, ending whatever still runs in them
        (only this run's processes can: the names are its own)."""
        for ns in self.namespaces:
            with contextlib.suppress(RuntimeError):
                for pid in _ip("netns", "pids", ns).split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), 9)
        for ns in reversed(self.namespaces):
            with contextlib.suppress(RuntimeError):
                _ip("netns", "del", ns)
        if self.root_link:  # gone with its peer already, normally
            with contextlib.suppress(RuntimeError):
                _ip("link", "del", self.root_link)


@pytest.fixture
def net(tmp_path: Path) -> Iterator[Net]:
    """The simulated network, torn down at the end whatever happened."""
    _need_root()
    _datefudge()
    n = Net(secrets.token_hex(3), _free_subnet(), tmp_path)
    try:
        n.up()
        yield n
    finally:
        n.down()


def _launch(st: Stack, host: Host, name: str, cmd: list[str], **extra_env: str) -> Proc:
    """Start `cmd` on `host`, in its folder, logging to the test's folder (the harness
    collecting logs, not a folder the parts share)."""
    st.counter += 1
    log = st.workdir / f"{st.counter:03d}-{host.role}-{name}.log"
    with open(log, "wb") as fh:
        popen = subprocess.Popen(host.argv(cmd), stdout=fh, stderr=subprocess.STDOUT,
                                 cwd=host.home, env=host.environ(**extra_env))
    proc = Proc(f"{host.role}/{name}", popen, log)
    st.procs.append(proc)
    return proc


@dataclass(frozen=True)
class Player:
    """A registered bot, the referee it plays through and the process playing it."""

    bot_id: str
    kind: str
    referee: str
    proc: Proc


@dataclass
class Cluster:
    """Everything running, and the organiser's handles on it."""

    net: Net
    stack: Stack
    r: redis.Redis
    redis_url: str
    admins: dict[str, Admin]  # referee role -> organiser client on it
    workers: dict[str, str]  # worker role -> its RQ name
    players: list[Player]


@pytest.fixture
def cluster(net: Net, tmp_path: Path) -> Iterator[Cluster]:
    """Redis, referees a and b, workers a and b, four bots: nine machines."""
    token = "adm." + secrets.token_urlsafe(16)
    logs = tmp_path / "logs"
    logs.mkdir()
    redis_host = net.host("redis", 10)
    redis_url = f"redis://{redis_host.ip}:{REDIS_PORT}/0"
    st = Stack(logs, redis_url, admin_token=token)
    refs = {"referee-a": net.host("referee-a", 11),
            "referee-b": net.host("referee-b", 12, Clock(wall_s=-23, monotonic_s=86_400))}
    works = {"worker-a": net.host("worker-a", 21),
             "worker-b": net.host("worker-b", 22, Clock(wall_s=37, monotonic_s=3 * 86_400))}
    kinds = [(SLOW, "referee-a", Clock()), ("random", "referee-a", Clock()),
             ("greedy", "referee-b", Clock()), (SLOW, "referee-b", Clock(wall_s=61))]
    bot_hosts = [net.host(f"bot-{i + 1}", 31 + i, clock) for i, (_, _, clock) in enumerate(kinds)]
    r = redis.Redis(host=redis_host.ip, port=REDIS_PORT, decode_responses=True,
                    socket_connect_timeout=2)
    admins: dict[str, Admin] = {}
    try:
        data = redis_host.home / "data"
        data.mkdir()
        _launch(st, redis_host, "redis-server", [
            find_redis_server(), "--bind", redis_host.ip, "--port", str(REDIS_PORT),
            "--dir", str(data), "--appendonly", "yes", "--save", "", "--daemonize", "no",
            "--protected-mode", "no"]).wait_for(r"Ready to accept connections")
        for role, host in refs.items():
            listen = f"{host.ip}:{REFEREE_PORT}"
            cmd = moonshot("referee", "--listen", listen, "--redis", redis_url,
                           "--auth-free-failures", "100000")
            # One referee gets the token by environment, the other by flag.
            referee = (_launch(st, host, "referee", cmd, MOONSHOT_ADMIN_TOKEN=token)
                       if role == "referee-a" else
                       _launch(st, host, "referee", [*cmd, "--admin-token", token]))
            referee.wait_for(rf"referee listening on {re.escape(listen)}", timeout=30)
            admins[role] = Admin(listen, token)
        names = {}
        for role, host in works.items():
            names[role] = f"{role}-{net.tag}"
            _launch(st, host, "worker", moonshot("worker", "--redis", redis_url,
                                                 "--name", names[role])
                    ).wait_for(r"Listening on|moonshot-matches", timeout=30)
        players = []
        for i, ((kind, ref, _), host) in enumerate(zip(kinds, bot_hosts, strict=True)):
            server = f"{refs[ref].ip}:{REFEREE_PORT}"
            bot_id, bot_token = register(server, f"ns{i + 1}-{kind.rsplit(':')[-1]}-{net.tag}")
            proc = _launch(st, host, "bot", moonshot("bot", "run", "--bot", kind,
                                                    "--server", server),
                           MOONSHOT_BOT_TOKEN=bot_token)
            players.append(Player(bot_id, kind, ref, proc))
        for player in players:
            player.proc.wait_for(r"connected to ", timeout=30)
        yield Cluster(net, st, r, redis_url, admins, names, players)
    finally:
        try:
            for a in admins.values():
                a.close()
            r.close()
        finally:
            st.stop_all()


def _connected(admin: Admin, bot_id: str) -> bool:
    """What this referee says of the bot: does it have a live stream (anywhere)?"""
    stub = bot_pb2_grpc.BotServiceStub(admin.channel)
    return bool(stub.GetBot(bot_pb2.GetBotRequest(bot_id=bot_id), timeout=10).bot.connected)


def _check_machines(net: Net) -> None:
    """Each machine's namespace holds its loopback and its one link, nothing else, and its
    clocks are off by what it was given."""
    for h in net.hosts.values():
        links = {line.split(":")[1].strip().split("@")[0]
                 for line in _ip("-n", h.netns, "-o", "link").splitlines()}
        assert links == {"lo", "eth0"}, (h.role, links)
        wall, mono = h.offsets()
        assert abs(wall - h.clock.wall_s) < 3 and abs(mono - h.clock.monotonic_s) < 3, (
            h.role, h.clock, wall, mono)


def _sample_pending(r: redis.Redis, bots: list[str],
                    into: list[tuple[int, messages.DecisionRequest]]) -> None:
    """Every request pending for the bots now, with Redis's clock at the moment they were
    read (one MULTI: the reads and the TIME happen at once)."""
    pipe = r.pipeline(transaction=True)
    pipe.time()
    for b in bots:
        pipe.hgetall(keys.pending(b))
    (sec, usec), *pending = pipe.execute()
    now_ms = int(sec) * 1000 + int(usec) // 1000
    for one in pending:
        for raw in one.values():
            into.append((now_ms, messages.decode_as(raw, messages.BOT,
                                                    messages.DecisionRequest)))


def _hosts_of(url: str, games: list[match_pb2.Match]) -> dict[str, str]:
    """The RQ worker that ran each game's job, by match id."""
    conn = rq_connection(url)
    try:
        return {m.match_id: str(MoonshotJob.fetch(ids.match_job_id(m.match_id), connection=conn,
                                                  serializer=JSONSerializer).worker_name)
                for m in games}
    finally:
        conn.close()


def test_tournament_across_machines_with_skewed_clocks(cluster: Cluster) -> None:
    """Nine machines on one switch, three of them on wrong clocks: the tournament completes,
    each game recorded once, and the clock of every decision is what the bot spent."""
    c = cluster
    started = time.monotonic()
    bots = [p.bot_id for p in c.players]
    with logs_on_failure(c.stack):
        _check_machines(c.net)
        # Presence is every referee's business: each sees every bot connected, including
        # those held by the referee whose clock is 23 s slow.
        for role, admin in c.admins.items():
            assert all(_connected(admin, b) for b in bots), f"{role} sees a bot offline"
        admin_a, admin_b = c.admins["referee-a"], c.admins["referee-b"]
        # Created through the slow referee, watched through the other.
        t = admin_b.create_tournament(
            name="many machines", players=3, format="round_robin", bot_ids=bots,
            rules=RULES, duplicate="replay", move_time_ms=MOVE_MS, time_bank_ms=BANK_MS,
            grace_ms=10_000)
        tid = t.tournament_id
        watch = Watcher(admin_a, tid).start()
        samples: list[tuple[int, messages.DecisionRequest]] = []
        deadline = time.monotonic() + 150
        looked = 0.0
        while time.monotonic() < deadline:
            if time.monotonic() - looked > 0.5:
                if admin_a.get_tournament(tid).status != RUNNING:
                    break
                looked = time.monotonic()
            _sample_pending(c.r, bots, samples)
            time.sleep(0.01)
        wait_finished(admin_a, tid, timeout=10)
        events = watch.join()

        created = check_recorded_once(c.r, tid, "3p", events)
        games = matches_of(admin_a, tid)
        assert len(games) == len(created) == 24
        for admin in (admin_a, admin_b):
            check_standings(admin.standings(tid), games)
        rows = [[(x.bot_id, x.games, x.points, x.score) for x in admin.standings(tid).rows]
                for admin in (admin_a, admin_b)]
        assert rows[0] == rows[1]

        # Both workers hosted games, both referees relayed for every table.
        hosted = _hosts_of(c.redis_url, games)
        assert set(hosted.values()) == set(c.workers.values()), Counter(hosted.values())
        by_referee = {p.bot_id: p.referee for p in c.players}
        slow = {p.bot_id for p in c.players if p.kind == SLOW}
        charged: dict[str, list[int]] = {"slow": [], "fast": []}
        for m in games:
            assert {by_referee[b] for b in m.bot_ids} == {"referee-a", "referee-b"}
            record = transcript_of(m)
            check_stored(c.r, m, record)
            assert m.result.end != "forfeit", (m.match_id, m.result)
            assert not record["faults"], (m.match_id, record["faults"])
            conn = c.r.lrange(keys.conn(m.match_id), 0, -1)
            assert not conn, (m.match_id, "a seat was seen disconnected", conn)
            for e in match_log(c.r, m.match_id):
                # Charged from the request going out to the answer accepted, both on Redis's
                # clock: well inside the move time (the bank untouched), the same figure as
                # the logged round trip, and at least what a slow bot slept.
                assert e["by"] == "bot" and e["bank"] == BANK_MS, (m.match_id, e)
                assert 0 <= e["ms"] < MOVE_MS and abs(e["ms"] - e["us"] / 1000) <= 1, e
                charged["slow" if m.bot_ids[e["seat"]] in slow else "fast"].append(e["ms"])
        assert min(charged["slow"]) >= SLOW_MS, sorted(charged["slow"])[:10]

        # Deadlines sent to bots are on Redis's clock too, whichever worker sent them.
        by_worker: Counter[str] = Counter()
        for now_ms, req in samples:
            if req.match_id not in hosted or req.paused_ms is not None:
                continue
            sent_ms = req.deadline_unix_ms - req.time_limit_ms - req.time_bank_ms
            assert now_ms - MOVE_MS <= sent_ms <= now_ms + 50, (
                hosted[req.match_id], req.request_id, sent_ms - now_ms)
            by_worker[hosted[req.match_id]] += 1
        assert set(by_worker) == set(c.workers.values()), by_worker

        for admin in c.admins.values():
            assert all(_connected(admin, b) for b in bots)
        for h in c.net.hosts.values():  # no token or other state left where another looks
            assert not list(h.home.rglob("admin-token")), h.role
        took = time.monotonic() - started
        print(f"\n{len(games)} games on {len(c.net.hosts)} machines in {took:.0f} s; "
              f"games per worker {dict(Counter(hosted.values()))}; "
              f"charged ms slow bots median {sorted(charged['slow'])[len(charged['slow']) // 2]}"
              f", others median {sorted(charged['fast'])[len(charged['fast']) // 2]}; "
              f"{sum(by_worker.values())} pending requests sampled {dict(by_worker)}")
        assert admin_b.get_tournament(tid).status == tournament_pb2.TOURNAMENT_STATUS_FINISHED
