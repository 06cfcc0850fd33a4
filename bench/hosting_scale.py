"""Hosting: many matches at once on threaded workers, the stack's decision ceiling, games/s.

Run `python bench/hosting_scale.py [--matches N] [--quick] [--only scale,ceiling,games]`.
Everything runs as real processes started the way a user starts them: a private
redis-server (append-only file on, as `moonshot up` runs it), `moonshot referee`,
`moonshot worker --concurrency C --name ...` and `moonshot bot run --bot hosting_scale:CLASS`
(this folder is on the bots' PYTHONPATH). It prints only `name: value unit` lines:

1. Scale (`scale ...`): `--matches` (500) 3p matches created at once on 2 workers
   (`--concurrency 300` each) against `--bots` (12) `ThinkBot` processes. A ThinkBot
   sleeps 0.5-1.5 s per decision (`think_s`: sha256 of the bot instance's seed, which
   the SDK derives from (match id, seat), and of the seat's decision number k; the
   request id `match/seq` fixes both, the bench recomputes it from the log), then
   plays legal[0]. Games: `all_pass=forced`, `max_hands` `--hands` (3, 78 decisions),
   10 s a move, 60 s bank. Bots are never the bottleneck: each bot process gets
   `--threads` >= the number of matches it sits in, so it never has more decisions
   pending than threads to think them on (`bots threads` says how many).
   - `matches completed` / planned; `matches failed` (no result, an error, a forfeit);
     `decisions lost`: log entries whose seq is not 0..n-1, or that differ from the
     stored transcript's actions; `decisions replaced` (late or illegal: none should be).
   - `peak live matches`: most matches holding `ms:match:{id}:lease` at once, sampled
     every 0.5 s (per worker from the lease's run id).
   - `all live window`: from the last match's `started_at` to the first `finished_at`;
     `decisions per second`: log entries (accepted actions) in it / its length.
   - `decision overhead p50/p99`: in that window, `us`/1000 (request sent -> answer
     received, measured by the match job) minus the bot's think time for that request.
     `think mismatches` counts entries whose round trip is shorter than the think time
     (0 unless the think time was recomputed wrongly).
   - floors (decision_latency.grpc_floor / redis_floor, typical decision sizes, 2
     processes each, hot ping-pong): measured twice with the stack idle (before and
     after the hold, pooled), and once inside the all-live window (`... under load`,
     fewer samples). `floor sum` = grpc + 2 * redis (p50s). `... idle 2ms`: the same
     with a 2 ms pause before each ping (processes that sleep between turns).
   - `rss idle worker-i` (after a warm-up match, before the hold), `rss peak worker-i`;
     `memory per hosted match`: (worker RSS - idle RSS) / matches it hosted, at the
     sample where it hosted the most, averaged over the workers.
   - `redis clients peak` (INFO connected_clients), `redis clients peak worker-i` (CLIENT
     LIST addresses matched to each process's sockets with psutil).
   - `cpu per decision ROLE` (ms): psutil cpu_times (user+system) deltas of each role's
     processes over the all-live window / decisions in it; `cpu share PROCESS` (% of one
     core) over the same window. If the hold saturated (a process >= 90% of a core or
     all cores >= 90% busy) below 90% of the expected rate, `saturated_at: ROLE` says
     where and the hold is run again with the bots thinking longer (`think scale`),
     not with fewer matches.
2. Ceiling (`ceiling ...`): instant bots (`InstantBot`, legal[0] at once, `--threads 0`,
   6 processes) on the same stack, `--ceiling-levels` (50,100,200) matches at once,
   `max_hands` chosen so the all-live window lasts about 30 s. Per level: decisions/s in
   the all-live window, the round trip p50 and each role's CPU share;
   `max_decisions_per_s` is the best level, `saturated: ROLE` the process (role) at
   ~100% of a core there, or `all cores (largest ROLE)` when no single one is.
3. Games (`games/s 3p round robin ...`): `tournament.round_robin_speed`'s measure (from
   CreateTournament until finished) on a `LocalStack` (default `--concurrency` 100 per
   worker) with 1, 2 and 4 workers, 7 bots, `max_hands` 2: `instant` = `random
   --threads 0` (as the old figures, 4.7 / 6.0 / 7.3 games/s with 42 `replay` games),
   `think100` = `Think100Bot` (100 ms then random, `--threads 32`); `duplicate=replay`
   (42 games) and `boards`, the default (14 games). One stack per worker count; each
   figure is the median of `--repeats` runs, `... spread` the lowest and highest.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import secrets
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))
# Run as a script, bench/ is first on the path, where bench/bots.py would shadow the `bots`
# package: the repository root goes in front.
sys.path.insert(0, str(BENCH_DIR.parent))

from clients.bot import Bot  # noqa: E402
from clients.builtin import RandomBot  # noqa: E402
from moon import Action, Observation  # noqa: E402

THINK_ENV = "HOSTING_THINK_SCALE"
TRACE_ENV = "HOSTING_TRACE_DIR"
_TRACE: list[Any] = []  # this bot process's trace file, opened on first use
_TRACE_LOCK = threading.Lock()
OWN_CALLS: dict[str, int] = {}  # Redis commands this bench sent (to subtract from the stats)
OWN_LOCK = threading.Lock()
MOVE_MS = 10_000
BANK_MS = 60_000


# ---------------------------------------------------------------- bench-only bots


def think_s(seed: int, k: int, scale: float = 1.0) -> float:
    """Think time of decision `k` of the bot instance seeded `seed`: uniform 0.5..1.5 s
    (times `scale`), a pure function of both."""
    h = hashlib.sha256(f"{seed}/{k}".encode()).digest()
    return scale * (0.5 + int.from_bytes(h[:8], "big") / 2.0**64)


def think_of(request_id: str, scale: float = 1.0) -> float:
    """Think time of a request: uniform 0.5..1.5 s (times `scale`), a pure function of the
    request id (`<match>/<seq>`)."""
    h = hashlib.sha256(request_id.encode()).digest()
    return scale * (0.5 + int.from_bytes(h[:8], "big") / 2.0**64)


def _hook_sdk() -> bool:
    """Let each ThinkBot see the id of the request it answers: the SDK's BotRunner._inputs
    (which finds the (match, seat) Bot for a request) is wrapped to note the id on the Bot
    just before `act` runs. The SDK is otherwise untouched; False if it has no `_inputs`."""
    try:
        from clients.sdk import BotRunner
    except ImportError:
        return False
    orig = getattr(BotRunner, "_inputs", None)
    if orig is None:
        return False
    if getattr(orig, "_hosting", False):
        return True

    def _inputs(self: Any, req: Any) -> Any:
        got = orig(self, req)
        if isinstance(got[0], ThinkBot):
            got[0].request_id = str(req.request_id)
        return got

    _inputs._hosting = True  # type: ignore[attr-defined]
    BotRunner._inputs = _inputs  # type: ignore[method-assign]
    return True


class ThinkBot(Bot):
    """Thinks `think_of(request id)` seconds (times $HOSTING_THINK_SCALE), plays legal[0].
    Without the SDK hook (see `_hook_sdk`) it falls back on sha256(seed, k): the seat's
    k-th decision, with the seed the SDK derives from (match id, seat)."""

    name = "think"

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(seed)
        self.seed = seed or 0
        self.k = 0
        self.request_id = ""
        self.scale = float(os.environ.get(THINK_ENV, "1"))

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Sleep the think time of this request, then the first legal action."""
        rid, self.request_id = self.request_id, ""
        think = think_of(rid, self.scale) if rid else think_s(self.seed, self.k, self.scale)
        start = time.time()
        time.sleep(think)
        end = time.time()
        trace = os.environ.get(TRACE_ENV)
        if trace:
            with _TRACE_LOCK:
                if not _TRACE:
                    _TRACE.append(open(Path(trace) / f"{os.getpid()}.trace", "a"))  # noqa: SIM115
                _TRACE[0].write(f"{rid or '-'} {self.seed} {self.k} {think:.6f} {start:.6f} "
                                f"{end:.6f}\n")
                _TRACE[0].flush()
        self.k += 1
        return legal[0]


_hook_sdk()


class InstantBot(Bot):
    """The first legal action at once."""

    name = "instant"

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """legal[0]."""
        return legal[0]


class Think100Bot(RandomBot):
    """The built-in random bot after 100 ms of thought."""

    name = "think100"

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Sleep 0.1 s, then a random legal action (never bid 21)."""
        time.sleep(0.1)
        return super().act(obs, legal)


# ---------------------------------------------------------------------- output


def show(name: str, value: float | str, unit: str = "", fmt: str = ".0f") -> None:
    """Print one `name: value unit` line."""
    text = value if isinstance(value, str) else f"{value:{fmt}}"
    print(f"{name}: {text} {unit}".rstrip(), flush=True)


def pct(xs: Sequence[float], q: float) -> float:
    """Nearest-rank q-quantile; nan for no samples."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def _own(command: str, n: int) -> None:
    """Count Redis commands the bench itself sent."""
    with OWN_LOCK:
        OWN_CALLS[command] = OWN_CALLS.get(command, 0) + n


def role_of(name: str) -> str:
    """The role of a process name."""
    for prefix, role in (("worker", "workers"), ("think-bot", "bots"),
                         ("instant-bot", "instant bots")):
        if name.startswith(prefix):
            return role
    return name


# --------------------------------------------------------------------- sampling


@dataclass
class Sample:
    """One look at every process and at Redis."""

    t: float  # unix time
    cpu: dict[str, float]  # process name -> CPU seconds so far
    rss: dict[str, int]  # process name -> bytes
    clients: int  # INFO connected_clients
    leases: dict[str, int]  # worker name -> leases held by its runs; "total"
    conns: dict[str, int] | None = None  # process name -> its Redis clients (CLIENT LIST)
    cmds: dict[str, tuple[int, float]] = field(default_factory=dict)  # command -> calls, usec


class Sampler(threading.Thread):
    """Samples CPU, RSS, leases and Redis clients every `every` s until stopped."""

    def __init__(self, procs: dict[str, Any], workers: dict[str, str], url: str,
                 every: float = 0.5, conns_every: int = 4) -> None:
        super().__init__(daemon=True, name="sampler")
        import redis

        self.procs = procs  # name -> psutil.Process
        self.workers = workers  # process name -> RQ worker name
        self.r = redis.Redis.from_url(url, decode_responses=True)
        self.port = self.r.connection_pool.connection_kwargs["port"]
        self.every = every
        self.conns_every = conns_every
        self.ids: list[str] = []
        self.samples: list[Sample] = []
        self.stop_event = threading.Event()
        self.last_cpu: dict[str, float] = {}

    def watch(self, ids: Sequence[str]) -> None:
        """Count the leases of these matches from now on."""
        self.ids = list(ids)

    def _cpu_rss(self) -> tuple[dict[str, float], dict[str, int]]:
        cpu: dict[str, float] = {}
        rss: dict[str, int] = {}
        for name, p in self.procs.items():
            try:
                with p.oneshot():
                    c = p.cpu_times()
                    cpu[name] = c.user + c.system + c.children_user + c.children_system
                    rss[name] = p.memory_info().rss
            except Exception:  # gone: its last figure stands
                cpu[name] = self.last_cpu.get(name, 0.0)
                rss[name] = 0
        self.last_cpu = cpu
        return cpu, rss

    def _leases(self) -> dict[str, int]:
        from store import keys

        out = dict.fromkeys(self.workers.values(), 0) | {"total": 0}
        ids = self.ids
        if not ids:
            return out
        pipe = self.r.pipeline(transaction=False)
        for m in ids:
            pipe.get(keys.lease(m))
        _own("get", len(ids))
        for v in pipe.execute():
            if v is None:
                continue
            out["total"] += 1
            for w in self.workers.values():
                if f":{w}:" in v:
                    out[w] += 1
        return out

    def _conns(self) -> dict[str, int]:
        """Redis clients by process: CLIENT LIST addresses matched to process sockets."""
        port_of: dict[int, str] = {}
        for name, p in self.procs.items():
            if name == "redis":
                continue
            try:
                for c in p.net_connections(kind="tcp"):
                    if c.raddr and c.raddr.port == self.port:
                        port_of[c.laddr.port] = name
            except Exception:
                continue
        out: dict[str, int] = {}
        for c in self.r.client_list():
            port = int(str(c.get("addr", ":0")).rsplit(":", 1)[1])
            name = port_of.get(port, "other")
            out[name] = out.get(name, 0) + 1
        return out

    def sample(self, with_conns: bool = False) -> Sample:
        """Take one sample now."""
        t = time.time()
        cpu, rss = self._cpu_rss()
        import psutil

        m = psutil.cpu_times()
        cpu["@machine"] = m.user + m.nice + m.system + getattr(m, "irq", 0.0) + getattr(
            m, "softirq", 0.0) + getattr(m, "steal", 0.0)
        s = Sample(t, cpu, rss, int(self.r.info("clients")["connected_clients"]), self._leases())
        if with_conns:
            s.conns = self._conns()
        stats = self.r.info("commandstats")
        s.cmds = {k.removeprefix("cmdstat_"): (int(v["calls"]), float(v["usec"]))
                  for k, v in stats.items() if isinstance(v, dict) and "calls" in v}
        with OWN_LOCK:
            for name, n in OWN_CALLS.items():
                s.cmds[f"@own_{name}"] = (n, 0.0)
        return s

    def run(self) -> None:
        i = 0
        while not self.stop_event.is_set():
            try:
                self.samples.append(self.sample(with_conns=i % self.conns_every == 0))
            except Exception as exc:  # a failed look must not end the bench
                print(f"# sampler: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            i += 1
            self.stop_event.wait(self.every)

    def stop(self) -> None:
        """Stop sampling (after one last sample)."""
        self.stop_event.set()
        self.join(10)
        self.samples.append(self.sample(with_conns=True))

    def cpu_at(self, name: str, t: float) -> float:
        """A process's CPU seconds at time t, interpolated between samples."""
        ss = [s for s in self.samples if name in s.cpu]
        if not ss:
            return 0.0
        if t <= ss[0].t:
            return ss[0].cpu[name]
        for a, b in pairwise(ss):
            if a.t <= t <= b.t:
                w = (t - a.t) / (b.t - a.t) if b.t > a.t else 0.0
                return a.cpu[name] + w * (b.cpu[name] - a.cpu[name])
        return ss[-1].cpu[name]

    def cpu_between(self, t0: float, t1: float) -> dict[str, float]:
        """CPU seconds each process used between t0 and t1."""
        return {n: self.cpu_at(n, t1) - self.cpu_at(n, t0) for n in self.procs}

    def commands_between(self, t0: float, t1: float) -> tuple[float, dict[str, tuple[int, float]]]:
        """(seconds, {command: (calls, usec)}) between the samples nearest inside [t0, t1]."""
        ss = [s for s in self.samples if t0 <= s.t <= t1 and s.cmds]
        if len(ss) < 2:
            return 0.0, {}
        a, b = ss[0], ss[-1]
        out = {k: (v[0] - a.cmds.get(k, (0, 0.0))[0], v[1] - a.cmds.get(k, (0, 0.0))[1])
               for k, v in b.cmds.items()}
        for key in [k for k in out if k.startswith("@own_")]:
            own = out.pop(key)[0]
            name = key.removeprefix("@own_")
            if name in out:
                calls, usec = out[name]
                per = usec / calls if calls else 0.0
                out[name] = (max(0, calls - own), max(0.0, usec - own * per))
        return b.t - a.t, out

    def between(self, t0: float, t1: float) -> list[Sample]:
        """The samples taken between t0 and t1."""
        return [s for s in self.samples if t0 <= s.t <= t1]


# ------------------------------------------------------------------- the stack


@dataclass
class Stack:
    """Redis, referee, workers and bot processes for the scale and ceiling phases."""

    procs: Any  # decision_latency.Procs
    srv: Any  # RedisServer
    address: str
    admin_token: str
    workers: dict[str, str]  # process name -> RQ worker name
    ps: dict[str, Any] = field(default_factory=dict)  # process name -> psutil.Process
    think_bots: list[tuple[str, str]] = field(default_factory=list)  # (bot_id, token)
    instant_bots: list[tuple[str, str]] = field(default_factory=list)
    think_children: list[Any] = field(default_factory=list)
    think_threads: int = 0

    def track(self, name: str, pid: int) -> None:
        import psutil

        self.ps[name] = psutil.Process(pid)


def start_stack(workdir: Path, workers: int, concurrency: int, appendonly: bool) -> Stack:
    """A private redis-server, a referee and `workers` threaded workers."""
    import psutil
    from decision_latency import Procs, _env, _moonshot

    from clients.redisproc import RedisServer

    token = "adm." + secrets.token_urlsafe(16)
    procs = Procs(workdir, _env(MOONSHOT_ADMIN_TOKEN=token))
    srv = RedisServer(workdir / "redis", appendonly=appendonly).start()
    ref = procs.start("referee", _moonshot("referee", "--listen", "127.0.0.1:0",
                                            "--redis", srv.url,
                                            "--registrations-per-hour", "0"))
    port = ref.wait_for(r"referee listening on 127\.0\.0\.1:(\d+)").group(1)
    names = {f"worker-{i + 1}": f"hosting-w{i + 1}-{secrets.token_hex(3)}"
             for i in range(workers)}
    ws = [procs.start(p, _moonshot("worker", "--redis", srv.url, "--concurrency",
                                   str(concurrency), "--name", n)) for p, n in names.items()]
    for w in ws:
        w.wait_for(r"Listening on|moonshot-matches", timeout=60)
    stack = Stack(procs, srv, f"127.0.0.1:{port}", token, names)
    assert srv.proc is not None
    stack.track("redis", srv.proc.pid)
    stack.track("referee", ref.popen.pid)
    for p, w in zip(names, ws, strict=True):
        stack.track(p, w.popen.pid)
    stack.ps["bench"] = psutil.Process()
    return stack


def register_bots(address: str, prefix: str, n: int) -> list[tuple[str, str]]:
    """Register n bots with fresh names."""
    from clients.sdk import register

    tag = secrets.token_hex(3)
    return [register(address, f"{prefix}-{tag}-{i}") for i in range(n)]


def start_bots(stack: Stack, bots: Sequence[tuple[str, str]], prefix: str, cls: str,
               threads: int, env: dict[str, str] | None = None) -> list[Any]:
    """`moonshot bot run` per bot; wait until each is connected."""
    from decision_latency import _moonshot

    started = []
    old_env = stack.procs.env
    if env is not None:
        stack.procs.env = env
    try:
        for i, (_bot_id, token) in enumerate(bots):
            started.append(stack.procs.start(f"{prefix}-{i}", _moonshot(
                "bot", "run", "--bot", cls, "--threads", str(threads),
                "--server", stack.address, "--token", token)))
    finally:
        stack.procs.env = old_env
    for i, p in enumerate(started):
        p.wait_for(r"connected to ", timeout=90)
        stack.track(f"{prefix}-{i}", p.popen.pid)
    time.sleep(0.3)  # let the hub subscribe every stream
    return started


def create_matches(stack: Stack, seats: Sequence[Sequence[str]], rules: dict[str, str],
                   seed: int) -> list[str]:
    """Create one 3p match per seat triple (8 calls at once); their ids in order."""
    from clients.admin import Admin

    admin = Admin(stack.address, stack.admin_token)
    try:
        def one(i: int) -> str:
            m = admin.create_match(3, list(seats[i]), seed=seed + i, rules=rules,
                                   move_time_ms=MOVE_MS, time_bank_ms=BANK_MS, grace_ms=30_000)
            return str(m.match_id)

        with ThreadPoolExecutor(8) as pool:
            return list(pool.map(one, range(len(seats))))
    finally:
        admin.close()


def wait_done(r: Any, ids: Sequence[str], timeout: float,
              on_all_started: Any = None) -> None:
    """Poll until every match has a result (or an error); call `on_all_started` once, when
    every match has started."""
    from store import keys

    end = time.monotonic() + timeout
    called = on_all_started is None
    left = list(ids)
    not_started = list(ids)
    while True:
        pipe = r.pipeline(transaction=False)
        for m in left:
            pipe.exists(keys.result(m))
            pipe.hget(keys.match(m), "error")
        for m in not_started:
            pipe.hexists(keys.match(m), "started_at")
        got = pipe.execute()
        _own("exists", len(left))
        _own("hget", len(left))
        _own("hexists", len(not_started))
        pairs = list(zip(got[0:2 * len(left):2], got[1:2 * len(left):2], strict=True))
        left = [m for m, (res, err) in zip(left, pairs, strict=True) if not res and not err]
        not_started = [m for m, st in zip(not_started, got[2 * len(pairs):], strict=True)
                       if not st]
        if not left:
            return
        if not called and not not_started:
            called = True
            on_all_started()
            continue
        if time.monotonic() > end:
            print(f"# timeout: {len(left)} of {len(ids)} not done", file=sys.stderr)
            return
        time.sleep(1.0)


# -------------------------------------------------------------------- analysis


@dataclass
class Played:
    """What the matches' records say."""

    planned: int
    completed: int = 0
    failed: list[str] = field(default_factory=list)
    lost: int = 0
    replaced: int = 0
    starts: list[float] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)
    created: list[float] = field(default_factory=list)
    resumed: int = 0  # matches hosted once whose RQ job was last queued by recovery
    rehosted: int = 0  # matches hosted by more than one run
    # (match, entry, the seat's decision number k, the previous entry's `t` or None)
    entries: list[tuple[str, dict[str, Any], int, int | None]] = field(default_factory=list)

    def window(self) -> tuple[float, float]:
        """(last start, first end): while every match was live."""
        return max(self.starts), min(self.ends)


def read_matches(r: Any, ids: Sequence[str]) -> Played:
    """Check every match's result and log; gather the log entries."""
    from moon.transcript import actions_of
    from store import ids as ids_mod
    from store import keys

    out = Played(len(ids))
    for i in range(0, len(ids), 50):
        chunk = ids[i:i + 50]
        pipe = r.pipeline(transaction=False)
        for m in chunk:
            pipe.get(keys.result(m))
            pipe.lrange(keys.match_log(m), 0, -1)
            pipe.hmget(keys.match(m), "status", "error", "started_at", "finished_at",
                       "created_at", "runs")
            pipe.hget(f"rq:job:{ids_mod.match_job_id(m)}", "origin")
        got = pipe.execute()
        for j, m in enumerate(chunk):
            stored, raw_log, (status, error, started, finished, created, _runs), origin = \
                got[4 * j:4 * j + 4]
            if started and created:
                out.created.append(float(created))
            if origin == "moonshot-resume" and int(_runs or 0) <= 1:
                out.resumed += 1
            if int(_runs or 0) > 1:
                out.rehosted += 1
            log = [json.loads(x) for x in raw_log]
            forfeit = any("forfeit" in e for e in log)
            actions = [e for e in log if "forfeit" not in e]
            bad_seq = sum(1 for n, e in enumerate(actions) if e.get("seq") != n)
            expected = None
            if stored is not None:
                expected = actions_of(json.loads(stored)["transcript"])
                logged = [e["action"] for e in actions]
                missing = max(0, len(expected) - len(logged))
                differ = sum(1 for a, b in zip(expected, logged, strict=False) if a != b)
                out.lost += missing + differ + bad_seq
            else:
                out.lost += bad_seq
            ok = stored is not None and not error and not forfeit and status == "finished" \
                and bad_seq == 0 and expected is not None and len(expected) == len(actions)
            if ok:
                out.completed += 1
            else:
                out.failed.append(f"{m}: status={status} error={error} forfeit={forfeit}")
            out.replaced += sum(1 for e in actions if e.get("by") != "bot")
            if started:
                out.starts.append(float(started))
            if finished:
                out.ends.append(float(finished))
            per_seat = [0, 0, 0, 0]
            prev: int | None = None
            for e in actions:
                out.entries.append((m, e, per_seat[e["seat"]], prev))
                per_seat[e["seat"]] += 1
                prev = int(e["t"])
    return out


def cpu_report(prefix: str, sampler: Sampler, t0: float, t1: float, decisions: int,
               roles: Sequence[str], ncpu: int) -> tuple[str, float, float]:
    """Print CPU per decision per role and each process's CPU share over [t0, t1];
    return (busiest process, its share % of a core, the whole machine's % of all cores)."""
    used = sampler.cpu_between(t0, t1)
    wall = max(t1 - t0, 1e-9)
    per_role: dict[str, float] = {}
    for name, sec in used.items():
        per_role[role_of(name)] = per_role.get(role_of(name), 0.0) + sec
    for role in roles:
        show(f"{prefix}cpu per decision {role}", per_role.get(role, 0.0) * 1000 / max(1, decisions),
             "ms", ".3f")
    show(f"{prefix}cpu per decision all (bench sampler excluded)",
         sum(v for n, v in used.items() if n != "bench") * 1000 / max(1, decisions), "ms", ".3f")
    for role in roles:
        show(f"{prefix}cpu share {role}", per_role.get(role, 0.0) * 100 / wall, "% of a core")
    singles = {n: s * 100 / wall for n, s in used.items()}
    for name in sorted(singles):
        if not name.startswith(("think-bot", "instant-bot")):
            show(f"{prefix}cpu share process {name}", singles[name], "% of a core")
    bot_names = [n for n in singles if n.startswith(("think-bot", "instant-bot"))
                 and role_of(n) in roles]
    if bot_names:
        top = max(bot_names, key=lambda n: singles[n])
        show(f"{prefix}cpu share busiest bot process", singles[top], "% of a core")
    busiest = max((n for n in singles if n != "bench"), key=lambda n: singles[n])
    total = sum(singles.values()) / ncpu
    show(f"{prefix}cpu busy all cores (these processes)", total, f"% of {ncpu} cores")
    machine = (sampler.cpu_at("@machine", t1) - sampler.cpu_at("@machine", t0)) * 100 / wall
    show(f"{prefix}cpu busy all cores (whole machine)", machine / ncpu, f"% of {ncpu} cores")
    show(f"{prefix}cpu used by other work on the machine", max(0.0, machine - sum(
        singles.values())), "% of a core")
    show(f"{prefix}busiest process", f"{busiest} {singles[busiest]:.0f}", "% of a core")
    return busiest, singles[busiest], machine / ncpu


def commands_report(prefix: str, sampler: Sampler, t0: float, t1: float, rate: float,
                    live: int, top: int = 10) -> None:
    """Redis commands (INFO commandstats) over [t0, t1]: per decision, per hosted match and
    second, and the share of redis-server's command time; the sampler's own GETs excluded."""
    secs, cmds = sampler.commands_between(t0, t1)
    if not secs or not cmds:
        return
    cmds = {k: v for k, v in cmds.items() if k not in ("info", "client|list", "client")}
    total_calls = sum(c for c, _ in cmds.values())
    total_usec = sum(u for _, u in cmds.values())
    decisions = rate * secs
    show(f"{prefix}redis commands per second", total_calls / secs, "commands/s")
    show(f"{prefix}redis commands per decision", total_calls / max(1.0, decisions), "commands",
         ".1f")
    if live:
        show(f"{prefix}redis commands per hosted match per second", total_calls / secs / live,
             "commands/s", ".1f")
    for name, (calls, usec) in sorted(cmds.items(), key=lambda kv: -kv[1][0])[:top]:
        show(f"{prefix}redis {name} per decision", calls / max(1.0, decisions), "calls", ".2f")
        show(f"{prefix}redis {name} share of command time", usec * 100 / max(1.0, total_usec),
             "%")
        show(f"{prefix}redis {name} time per call", usec / max(1, calls), "us", ".1f")


def read_traces(trace_dir: Path) -> tuple[dict[str, tuple[float, float, float]], int]:
    """request id -> (think s, act start, act end) unix s, from the ThinkBot trace files
    (the last act for a request: a redelivered request is acted on again); and how many
    acts had no request id (the SDK hook missing)."""
    out: dict[str, tuple[float, float, float]] = {}
    blind = 0
    for f in trace_dir.glob("*.trace"):
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) != 6:
                continue
            if parts[0] == "-":
                blind += 1
                continue
            out[parts[0]] = (float(parts[3]), float(parts[4]), float(parts[5]))
    return out, blind


# ------------------------------------------------------------------- floors


@dataclass
class Floors:
    """Floor round trips (us), pooled over turns."""

    grpc: dict[str, list[float]] = field(default_factory=lambda: {"decision": [], "idle": []})
    redis: dict[str, list[float]] = field(default_factory=lambda: {"decision": [], "idle": []})

    def measure(self, stack: Stack, samples: int) -> None:
        """One turn of both floors (decision size and idle 2 ms)."""
        from decision_latency import grpc_floor, redis_floor, typical_sizes

        sz = typical_sizes()
        sizes = f"decision:{sz.request_pb}:{sz.answer_pb},idle:{sz.request_pb}:{sz.answer_pb}:2000"
        rsizes = (f"decision:{sz.request_json}:{sz.answer_json},"
                  f"idle:{sz.request_json}:{sz.answer_json}:2000")
        warm = max(100, samples // 10)
        g = grpc_floor(stack.procs, sizes, samples, warm)
        rr = redis_floor(stack.procs, stack.srv.url, rsizes, samples, warm)
        for kind in ("decision", "idle"):
            self.grpc[kind] += g[kind]
            self.redis[kind] += rr[kind]

    def report(self, prefix: str) -> None:
        """p50/p99 of each floor (ms) and the floor sum."""
        for label, kind in (("", "decision"), (" idle 2ms", "idle")):
            g, rd = self.grpc[kind], self.redis[kind]
            if not g:
                continue
            show(f"{prefix}grpc floor{label} p50", pct(g, 0.5) / 1000, "ms", ".3f")
            show(f"{prefix}grpc floor{label} p99", pct(g, 0.99) / 1000, "ms", ".3f")
            show(f"{prefix}redis floor{label} p50", pct(rd, 0.5) / 1000, "ms", ".3f")
            show(f"{prefix}redis floor{label} p99", pct(rd, 0.99) / 1000, "ms", ".3f")
            show(f"{prefix}floor sum grpc + 2 redis{label} p50",
                 (pct(g, 0.5) + 2 * pct(rd, 0.5)) / 1000, "ms", ".3f")


# ---------------------------------------------------------------------- scale


def _triples(bots: Sequence[str], n: int) -> list[tuple[str, str, str]]:
    """n seatings of 3 distinct bots, every bot in n*3/len(bots) of them (+-1): each round
    of len(bots)//3 matches seats a fresh (seeded) shuffle of the bots at disjoint tables."""
    import random

    per_round = max(1, len(bots) // 3)
    out: list[tuple[str, str, str]] = []
    for i in range(n):
        rnd, j = divmod(i, per_round)
        order = list(bots)
        random.Random(rnd).shuffle(order)
        out.append((order[3 * j], order[3 * j + 1], order[3 * j + 2]))
    return out


def scale_attempt(stack: Stack, sampler: Sampler, args: argparse.Namespace, scale: float,
                  idle_rss: dict[str, int], floors: Floors, seed: int, ncpu: int,
                  prefix: str) -> tuple[bool, str]:
    """Hold `args.matches` matches with bots thinking `scale` x 0.5-1.5 s; print figures;
    return (saturated, where)."""
    from decision_latency import _env

    # Bots: restart with this think scale (a new stream supersedes nothing: old ones stop).
    for c in stack.think_children:
        c.stop()
    for i in range(len(stack.think_children)):
        stack.ps.pop(f"think-bot-{i}", None)
    seats = _triples([b for b, _ in stack.think_bots], args.matches)
    per_bot = max(sum(b in s for s in seats) for b, _ in stack.think_bots)
    stack.think_threads = min(1024, per_bot + 4)
    trace_dir = stack.procs.workdir / f"trace-{seed}"
    trace_dir.mkdir(parents=True, exist_ok=True)
    env = _env(MOONSHOT_ADMIN_TOKEN=stack.admin_token,
               **{THINK_ENV: repr(scale), TRACE_ENV: str(trace_dir)})
    stack.think_children = start_bots(stack, stack.think_bots, "think-bot",
                                      "hosting_scale:ThinkBot", stack.think_threads, env)
    sampler.procs = dict(stack.ps)
    rules = {"max_hands": str(args.hands), "all_pass": "forced"}
    per_game = 26 * args.hands
    load_floors = Floors()
    t_create = time.time()
    ids = create_matches(stack, seats, rules, seed)
    t_created = time.time()
    sampler.watch(ids)

    def during() -> None:
        if args.load_floor_samples:
            time.sleep(3)
            load_floors.measure(stack, args.load_floor_samples)

    wait_done(sampler.r, ids, timeout=per_game * 1.5 * scale * 4 + 300, on_all_started=during)
    time.sleep(1.0)
    played = read_matches(sampler.r, ids)
    sampler.watch([])

    show(f"{prefix}think scale", scale, "x", ".2f")
    show(f"{prefix}bots", len(stack.think_bots), "processes")
    show(f"{prefix}bots threads", stack.think_threads, "threads each")
    show(f"{prefix}bots most matches per process", per_bot, "matches")
    show(f"{prefix}worker concurrency", args.concurrency, "matches each")
    show(f"{prefix}decisions per game", per_game, "decisions")
    show(f"{prefix}create matches", t_created - t_create, "s", ".1f")
    show(f"{prefix}matches completed", f"{played.completed} / {played.planned}", "matches")
    show(f"{prefix}matches failed", len(played.failed), "matches")
    for f in played.failed[:5]:
        print(f"# failed {f}", file=sys.stderr)
    show(f"{prefix}decisions lost", played.lost, "decisions")
    show(f"{prefix}decisions replaced", played.replaced, "decisions")
    during_samples = [s for s in sampler.samples if s.t >= t_create]
    peak = max((s.leases.get("total", 0) for s in during_samples), default=0)
    show(f"{prefix}peak live matches", peak, "matches")
    for pname, wname in stack.workers.items():
        show(f"{prefix}peak live matches {pname}",
             max((s.leases.get(wname, 0) for s in during_samples), default=0), "matches")
    if not played.starts or not played.ends:
        return False, "no matches"
    t0, t1 = played.window()
    show(f"{prefix}ramp (first to last start)", t0 - min(played.starts), "s", ".1f")
    if t1 <= t0:
        show(f"{prefix}all live window", 0.0, "s", ".1f")
        t0, t1 = min(played.starts), max(played.ends)
        print("# no moment with every match live: figures over the whole run", file=sys.stderr)
    else:
        show(f"{prefix}all live window", t1 - t0, "s", ".1f")
    inside = [x for x in played.entries if t0 * 1000 <= x[1]["t"] <= t1 * 1000]
    rate = len(inside) / (t1 - t0)
    show(f"{prefix}decisions per second", rate, "decisions/s")
    over: list[float] = []
    thinks: list[float] = []
    cycle: list[float] = []
    outbound: list[float] = []
    inbound: list[float] = []
    oversleep: list[float] = []
    traces, blind = read_traces(trace_dir)
    mismatch = 0
    for m, e, _k, prev_t in inside:
        rid = f"{m}/{e['seq']}"
        th = think_of(rid, scale) * 1000
        o = e["us"] / 1000 - th
        if o < -1.0:
            mismatch += 1
        over.append(o)
        thinks.append(th)
        if prev_t is None:
            continue
        cycle.append(e["t"] - prev_t - th)
        got = traces.get(rid)
        if got is not None:
            outbound.append(got[1] * 1000 - prev_t)
            inbound.append(e["t"] - got[2] * 1000)
            oversleep.append((got[2] - got[1]) * 1000 - th)
    show(f"{prefix}think mean", statistics.mean(thinks) if thinks else 0.0, "ms")
    show(f"{prefix}decision overhead p50", pct(over, 0.5), "ms", ".2f")
    show(f"{prefix}decision overhead p90", pct(over, 0.9), "ms", ".2f")
    show(f"{prefix}decision overhead p99", pct(over, 0.99), "ms", ".2f")
    show(f"{prefix}decision overhead max", max(over, default=0.0), "ms", ".1f")
    show(f"{prefix}think mismatches", mismatch, "decisions")
    show(f"{prefix}traced decisions", len(outbound), "decisions")
    show(f"{prefix}acts without a request id (SDK hook missing)", blind, "decisions")
    for label, xs in (("cycle (log t to next log t, less think)", cycle),
                      ("out (job logs previous -> bot's act starts)", outbound),
                      ("back (bot's act returns -> job logs it)", inbound),
                      ("bot sleep beyond think", oversleep)):
        show(f"{prefix}overhead {label} p50", pct(xs, 0.5), "ms", ".2f")
        show(f"{prefix}overhead {label} p99", pct(xs, 0.99), "ms", ".2f")
    waits = [s - c for s, c in zip(played.starts, played.created, strict=False)]
    show(f"{prefix}queue wait (created -> started) p50", pct(waits, 0.5), "s", ".2f")
    show(f"{prefix}queue wait (created -> started) max", max(waits, default=0.0), "s", ".2f")
    show(f"{prefix}spurious recovery runs (a resume job for a match hosted once)",
         played.resumed, "matches")
    show(f"{prefix}matches hosted by more than one run", played.rehosted, "matches")
    cycles = [(e - s) / per_game for s, e in zip(played.starts, played.ends, strict=False)]
    show(f"{prefix}decision cycle mean (match wall / decisions)",
         statistics.mean(cycles) * 1000 if cycles else 0.0, "ms")
    floors.report(prefix + "idle stack ")
    if args.load_floor_samples:
        load_floors.report(prefix + "under load ")
    # Memory.
    window_samples = sampler.between(min(played.starts), max(played.ends))
    per_match = []
    for pname, wname in stack.workers.items():
        peak_rss = max((s.rss.get(pname, 0) for s in window_samples), default=0)
        show(f"{prefix}rss idle {pname}", idle_rss.get(pname, 0) / 2**20, "MB", ".1f")
        show(f"{prefix}rss peak {pname}", peak_rss / 2**20, "MB", ".1f")
        best = max(window_samples, key=lambda s: s.leases.get(wname, 0), default=None)
        if best is not None and best.leases.get(wname, 0):
            hosted = best.leases[wname]
            mb = (best.rss.get(pname, 0) - idle_rss.get(pname, 0)) / 2**20 / hosted
            per_match.append(mb)
            show(f"{prefix}memory per hosted match {pname}", mb, f"MB (at {hosted} matches)",
                 ".2f")
    if per_match:
        show(f"{prefix}memory per hosted match", statistics.mean(per_match), "MB", ".2f")
    for role in ("referee", "redis"):
        show(f"{prefix}rss peak {role}",
             max((s.rss.get(role, 0) for s in window_samples), default=0) / 2**20, "MB", ".1f")
    bot_rss = [sum(v for n, v in s.rss.items() if n.startswith("think-bot"))
               for s in window_samples]
    show(f"{prefix}rss peak bots (all)", max(bot_rss, default=0) / 2**20, "MB", ".1f")
    # Redis clients.
    show(f"{prefix}redis clients peak", max((s.clients for s in window_samples), default=0),
         "clients")
    with_conns = [s for s in window_samples if s.conns]
    for pname in [*stack.workers, "referee", "other"]:
        show(f"{prefix}redis clients peak {pname}",
             max((s.conns.get(pname, 0) for s in with_conns if s.conns), default=0), "clients")
    botc = [sum(v for n, v in s.conns.items() if n.startswith("think-bot"))
            for s in with_conns if s.conns]
    show(f"{prefix}redis clients peak bots", max(botc, default=0), "clients")
    # CPU and Redis commands.
    busiest, share, total = cpu_report(prefix, sampler, t0, t1, len(inside),
                                       ("referee", "workers", "redis", "bots"), ncpu)
    commands_report(prefix, sampler, t0, t1, rate, peak)
    saturated = (share >= 90 or total >= 90) and rate < 0.9 * expected_rate(args, scale)
    show(f"{prefix}expected decisions per second (matches / mean think)",
         expected_rate(args, scale), "decisions/s")
    where = role_of(busiest) if share >= 90 else f"all cores (largest {role_of(busiest)})"
    if saturated:
        show("saturated_at", where)
    else:
        show(f"{prefix}saturated", "no")
    return saturated, where


def expected_rate(args: argparse.Namespace, scale: float) -> float:
    """Decisions/s if every match waited only for its bot's think (mean 1 s x scale)."""
    return float(args.matches) / scale


def run_scale_and_ceiling(args: argparse.Namespace, phases: set[str]) -> None:
    """Phases 1 and 2 on one stack."""
    import psutil

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="moonshot-hosting-"))
    workdir.mkdir(parents=True, exist_ok=True)
    ncpu = psutil.cpu_count() or 1
    stack = start_stack(workdir, args.workers, args.concurrency, not args.no_appendonly)
    sampler: Sampler | None = None
    try:
        stack.instant_bots = register_bots(stack.address, "instant", 6)
        start_bots(stack, stack.instant_bots, "instant-bot", "hosting_scale:InstantBot", 0)
        ibots = [b for b, _ in stack.instant_bots]
        # Warm up every worker: a few quick matches each.
        warm = create_matches(stack, _triples(ibots, 4 * args.workers),
                              {"max_hands": "1", "all_pass": "forced"}, 1)
        import redis

        r = redis.Redis.from_url(stack.srv.url, decode_responses=True)
        wait_done(r, warm, 120)
        time.sleep(2.0)
        sampler = Sampler(dict(stack.ps), stack.workers, stack.srv.url)
        idle = []
        for _ in range(3):
            idle.append(sampler.sample(with_conns=True))
            time.sleep(0.3)
        idle_rss = {n: int(statistics.median(s.rss.get(n, 0) for s in idle)) for n in stack.ps}
        if "scale" in phases:
            stack.think_bots = register_bots(stack.address, "think", args.bots)
            floors = Floors()
            floors.measure(stack, args.floor_samples)
            sampler.start()
            scale = args.think_scale
            for attempt in range(1, args.max_attempts + 1):
                prefix = "scale " if attempt == 1 else f"scale attempt {attempt} "
                saturated, _where = scale_attempt(stack, sampler, args, scale, idle_rss, floors,
                                                  10_000 * attempt, ncpu, prefix)
                if not saturated:
                    break
                scale *= 2
            sampler.stop_event.set()
            sampler.join(10)
            floors2 = Floors()
            floors2.measure(stack, args.floor_samples)
            floors.grpc = {k: v + floors2.grpc[k] for k, v in floors.grpc.items()}
            floors.redis = {k: v + floors2.redis[k] for k, v in floors.redis.items()}
            floors.report("scale floors pooled before+after ")
            for c in stack.think_children:
                c.stop()
            for i in range(len(stack.think_children)):
                stack.ps.pop(f"think-bot-{i}", None)
        if "ceiling" in phases:
            sampler = Sampler(dict(stack.ps), stack.workers, stack.srv.url)
            sampler.start()
            ceiling(stack, sampler, args, ibots, ncpu)
    finally:
        if sampler is not None and sampler.is_alive():
            sampler.stop_event.set()
        stack.procs.stop_all()
        stack.srv.stop()
        if args.workdir is None and not args.keep:
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"# logs: {workdir}", file=sys.stderr)


# --------------------------------------------------------------------- ceiling


def ceiling(stack: Stack, sampler: Sampler, args: argparse.Namespace, ibots: Sequence[str],
            ncpu: int) -> None:
    """Instant bots, several levels of matches at once, each `--ceiling-repeats` times: the
    best decisions/s and where it saturates."""
    rate_guess = 1000.0
    runs: dict[int, list[float]] = {}
    best: tuple[float, int, int, float, float] | None = None  # rate, level, rep, t0, t1
    for rep in range(args.ceiling_repeats):
        for level in args.ceiling_levels:
            hands = max(2, min(80, math.ceil(rate_guess * args.ceiling_window * 1.5
                                             / (26 * level))))
            rules = {"max_hands": str(hands), "all_pass": "forced"}
            ids = create_matches(stack, _triples(list(ibots), level), rules,
                                 50_000 + 1000 * rep + level)
            sampler.watch(ids)
            wait_done(sampler.r, ids, timeout=900)
            time.sleep(1.0)
            played = read_matches(sampler.r, ids)
            sampler.watch([])
            prefix = f"ceiling {level} matches run {rep + 1} "
            show(f"{prefix}max_hands", hands, "hands")
            show(f"{prefix}matches completed", f"{played.completed} / {played.planned}",
                 "matches")
            show(f"{prefix}decisions lost", played.lost, "decisions")
            t0, t1 = played.window()
            if t1 <= t0:
                t0, t1 = min(played.starts), max(played.ends)
                print(f"# ceiling {level}: no moment with every match live", file=sys.stderr)
            show(f"{prefix}all live window", t1 - t0, "s", ".1f")
            inside = [x[1] for x in played.entries if t0 * 1000 <= x[1]["t"] <= t1 * 1000]
            rate = len(inside) / (t1 - t0)
            rate_guess = max(rate, 100.0)
            show(f"{prefix}decisions per second", rate, "decisions/s")
            rtt = [e["us"] / 1000 for e in inside]
            show(f"{prefix}decision p50", pct(rtt, 0.5), "ms", ".2f")
            show(f"{prefix}decision p99", pct(rtt, 0.99), "ms", ".2f")
            used = sampler.cpu_between(t0, t1)
            machine = (sampler.cpu_at("@machine", t1) - sampler.cpu_at("@machine", t0)) \
                * 100 / (t1 - t0)
            show(f"{prefix}cpu busy whole machine", machine / ncpu, f"% of {ncpu} cores")
            show(f"{prefix}cpu used by other work on the machine",
                 max(0.0, machine - sum(used.values()) * 100 / (t1 - t0)), "% of a core")
            runs.setdefault(level, []).append(rate)
            if best is None or rate > best[0]:
                best = (rate, level, rep, t0, t1)
    for level, rates in runs.items():
        show(f"ceiling {level} matches decisions per second median", statistics.median(rates),
             "decisions/s")
        show(f"ceiling {level} matches decisions per second spread",
             f"{min(rates):.0f}-{max(rates):.0f}", "decisions/s")
    assert best is not None
    rate, level, rep, t0, t1 = best
    prefix = f"ceiling best ({level} matches run {rep + 1}) "
    busiest, share, total = cpu_report(prefix, sampler, t0, t1, round(rate * (t1 - t0)),
                                       ("referee", "workers", "redis", "instant bots"), ncpu)
    commands_report(prefix, sampler, t0, t1, rate, level, top=6)
    show("max_decisions_per_s", rate, f"decisions/s (at {level} matches)")
    if share >= 90:
        where = f"{role_of(busiest)} ({busiest} at {share:.0f}% of a core)"
    elif total >= 90:
        where = (f"all cores (machine {total:.0f}% busy of {ncpu} cores; largest {busiest} "
                 f"at {share:.0f}% of a core)")
    else:
        where = f"none found (largest {busiest} at {share:.0f}%, machine {total:.0f}% busy)"
    show("saturated", where)


# ----------------------------------------------------------------------- games


def round_robin(stack: Any, admin: Any, bot_ids: Sequence[str], duplicate: str,
                label: str, timeout: float = 900.0) -> dict[str, float]:
    """tournament.round_robin_speed's measure on a running stack: games/s, decisions/s and
    games of a 3p round robin of `bot_ids`, from CreateTournament until finished; and the
    latency from creation to the first game's start and from the last game's end to the
    tournament's end."""
    import redis
    from tournament import GAME_RULES

    from proto.moon.v1 import tournament_pb2
    from store import keys

    created = time.time()
    start = time.perf_counter()
    t = admin.create_tournament(name=f"bench {label}", players=3, format="round_robin",
                                bot_ids=list(bot_ids), rules=dict(GAME_RULES), seeding="given",
                                seed=2026, duplicate=duplicate)
    end = start + timeout
    while True:
        got = admin.get_tournament(t.tournament_id)
        if got.status != tournament_pb2.TOURNAMENT_STATUS_RUNNING:
            break
        if time.perf_counter() > end:
            raise TimeoutError(f"round robin not finished after {timeout:g} s")
        time.sleep(0.02)
    elapsed = time.perf_counter() - start
    done_at = time.time()
    if got.status != tournament_pb2.TOURNAMENT_STATUS_FINISHED:
        raise RuntimeError(f"round robin ended {got.status}: {got.error}")
    r = redis.Redis.from_url(stack.redis_url, decode_responses=True)
    played: list[str] = r.zrange(keys.tournament_matches(t.tournament_id), 0, -1)  # type: ignore[assignment]
    decisions = sum(int(r.llen(keys.match_log(m))) for m in played)
    spans = [r.hmget(keys.match(m), "started_at", "finished_at") for m in played]
    r.close()
    starts = [float(a) for a, _ in spans if a]
    ends = [float(b) for _, b in spans if b]
    games = int(got.matches_done)
    return {"games/s": games / elapsed, "decisions/s": decisions / elapsed, "games": games,
            "elapsed": elapsed, "startup": min(starts) - created if starts else 0.0,
            "tail": done_at - max(ends) if ends else 0.0}


def _cpu_now(ps: dict[str, Any]) -> dict[str, float]:
    """CPU seconds of each process (and of the whole machine, `@machine`)."""
    import psutil

    out = {}
    for name, p in ps.items():
        try:
            c = p.cpu_times()
            out[name] = c.user + c.system + c.children_user + c.children_system
        except Exception:
            out[name] = 0.0
    m = psutil.cpu_times()
    out["@machine"] = m.user + m.nice + m.system + getattr(m, "irq", 0.0) + getattr(
        m, "softirq", 0.0) + getattr(m, "steal", 0.0)
    return out


def run_games(args: argparse.Namespace) -> None:
    """Games/s of 3p round robins at 1, 2, 4 workers, replay and boards, instant and 100 ms."""
    import psutil
    from decision_latency import _env
    from tournament import GAME_BOTS

    from clients.admin import Admin
    from clients.sdk import register
    from clients.stack import LocalStack

    ncpu = psutil.cpu_count() or 1
    results: dict[tuple[int, str, str], list[dict[str, float]]] = {}
    kinds = (("instant", ["--bot", "random", "--threads", "0"]),
             ("think100", ["--bot", "hosting_scale:Think100Bot", "--threads", "32"]))
    for w in args.games_workers:
        with tempfile.TemporaryDirectory(prefix="moonshot-hosting-rr-") as tmp, \
                LocalStack(Path(tmp), listen="127.0.0.1:0", workers=w) as stack:
            env = _env(MOONSHOT_ADMIN_TOKEN=stack.admin_token)
            admin = Admin(stack.address, stack.admin_token)
            ids: dict[str, list[str]] = {}
            procs = []
            for kind, argv in kinds:
                ids[kind] = []
                for i in range(GAME_BOTS):
                    bot_id, token = register(stack.address, f"{kind}-{i + 1}", stack.admin_token)
                    procs.append(stack.spawn(f"{kind}-bot-{i + 1}", [
                        "bot", "run", *argv, "--server", stack.address, "--token", token], env))
                    ids[kind].append(bot_id)
            for p in procs:
                p.wait_for(r"connected to ", timeout=90)
            time.sleep(0.5)
            ps = {c.name: psutil.Process(c.popen.pid) for c in stack.children}
            assert stack.redis is not None and stack.redis.proc is not None
            ps["redis"] = psutil.Process(stack.redis.proc.pid)
            for _rep in range(args.repeats):
                for dup in ("replay", "boards"):
                    for kind, _ in kinds:
                        before = _cpu_now(ps)
                        got = round_robin(stack, admin, ids[kind], dup, f"{kind} {dup} {w}w")
                        after = _cpu_now(ps)
                        roles: dict[str, float] = {}
                        for name in ps:
                            role = "bots" if "-bot-" in name else role_of(name)
                            if "-bot-" in name and not name.startswith(kind):
                                role = "other bots"
                            roles[role] = roles.get(role, 0.0) + after[name] - before[name]
                        for role, sec in roles.items():
                            got[f"cpu {role}"] = sec * 100 / got["elapsed"]
                        got["cpu machine"] = (after["@machine"] - before["@machine"]) * 100 \
                            / got["elapsed"] / ncpu
                        got["cpu other work"] = max(0.0, (after["@machine"] - before["@machine"]
                                                          - sum(roles.values())) * 100
                                                    / got["elapsed"])
                        results.setdefault((w, dup, kind), []).append(got)
            admin.close()
    for (w, dup, kind), runs in results.items():
        gs = [g["games/s"] for g in runs]
        name = f"games/s 3p round robin {dup} {kind} {w} workers"
        show(name, statistics.median(gs), "games/s", ".2f")
        if len(gs) > 1:
            show(f"{name} spread", f"{min(gs):.2f}-{max(gs):.2f}", "games/s")
        tail = f"3p round robin {dup} {kind} {w} workers"
        show(f"decisions/s {tail}", statistics.median(g["decisions/s"] for g in runs),
             "decisions/s")
        show(f"games {tail}", runs[0]["games"], "games")
        show(f"first game starts after create {tail}",
             statistics.median(g["startup"] for g in runs), "s", ".2f")
        show(f"finished after last game ends {tail}",
             statistics.median(g["tail"] for g in runs), "s", ".2f")
        for role in ("referee", "workers", "redis", "bots"):
            show(f"cpu share {role} {tail}", statistics.median(g.get(f"cpu {role}", 0.0)
                                                               for g in runs), "% of a core")
        show(f"cpu busy whole machine {tail}", statistics.median(g["cpu machine"] for g in runs),
             f"% of {ncpu} cores")
        show(f"cpu used by other work {tail}",
             statistics.median(g["cpu other work"] for g in runs), "% of a core")


# ------------------------------------------------------------------------ main


def main(argv: Sequence[str] | None = None) -> int:
    """Parse flags and run the phases."""
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    p.add_argument("--matches", type=int, default=500, help="matches held at once (500)")
    p.add_argument("--quick", action="store_true",
                   help="a small run: 60 matches, 6 bots, 2 hands, ceiling 30,60, games at "
                        "1 and 2 workers once")
    p.add_argument("--only", default="", help="some of scale,ceiling,games (default all)")
    p.add_argument("--bots", type=int, default=12, help="ThinkBot processes (12)")
    p.add_argument("--hands", type=int, default=3, help="max_hands of the held matches (3)")
    p.add_argument("--workers", type=int, default=2, help="worker processes (2)")
    p.add_argument("--concurrency", type=int, default=300, help="matches per worker (300)")
    p.add_argument("--think-scale", type=float, default=1.0,
                   help="think time x this (1: 0.5-1.5 s)")
    p.add_argument("--max-attempts", type=int, default=3,
                   help="holds at doubling think time while saturated (3)")
    p.add_argument("--floor-samples", type=int, default=3000,
                   help="ping-pongs per floor turn with the stack idle (3000)")
    p.add_argument("--load-floor-samples", type=int, default=1000,
                   help="ping-pongs of the floors measured under load (1000; 0: skip)")
    p.add_argument("--ceiling-levels", type=lambda s: [int(x) for x in s.split(",")],
                   default=[50, 100, 200], help="matches at once in the ceiling (50,100,200)")
    p.add_argument("--ceiling-window", type=float, default=30.0,
                   help="target seconds of each ceiling level's all-live window (30)")
    p.add_argument("--ceiling-repeats", type=int, default=2, help="runs per ceiling level (2)")
    p.add_argument("--games-workers", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--repeats", type=int, default=2, help="runs per games/s figure (2)")
    p.add_argument("--no-appendonly", action="store_true", help="redis without its AOF")
    p.add_argument("--workdir", default=None, help="where logs go (default: a temp folder)")
    p.add_argument("--keep", action="store_true", help="keep the logs")
    args = p.parse_args(argv)
    if args.quick:
        args.matches = min(args.matches, 60)
        args.bots = min(args.bots, 6)
        args.hands = 2
        args.ceiling_levels = [30, 60]
        args.ceiling_window = 15.0
        args.ceiling_repeats = 1
        args.games_workers = [1, 2]
        args.repeats = 1
        args.floor_samples = 1000
        args.load_floor_samples = 500
    phases = set(args.only.split(",")) if args.only else {"scale", "ceiling", "games"}
    if phases & {"scale", "ceiling"}:
        run_scale_and_ceiling(args, phases)
    if "games" in phases:
        run_games(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
