"""Decision latency: the round trip bot -> referee -> Redis -> match job -> back, beside its floors.

Run `python bench/decision_latency.py [--decisions N] [--floor-samples N] [--rounds R]`.
It starts everything as real processes, the way a user does: a private
redis-server, a referee (`moonshot referee`), RQ workers (`moonshot worker`) and
bot processes, and prints one figure per line, `name: value unit`:

- `grpc floor p50/p99`: a bare grpc.aio bidirectional ping-pong between two
  processes on one stream, timed on the server side as the referee would see
  it: the server writes a message the size of a typical decision request, the
  client answers with one the size of a decision. `grpc floor empty` is the
  same with 8-byte messages.
- `redis floor p50/p99`: two processes (redis-py, like the product) doing
  LPUSH/BLPOP ping-pong through the same redis-server, with the sizes of a
  decision request's JSON and of an answer's; `redis floor empty` with 8 bytes.
- `... floor idle 2ms`: the same ping-pongs with a 2 ms pause before each
  ping. The bare floors are hot loops; in the product every process sleeps
  between its turns (each bot acts on every third decision), and on a small,
  busy machine a wake-up from sleep costs far more than one from a hot loop.
  Shown for context; the target uses the bare floors.
- `decision p50/p99`: the product's round trip with an instant bot, a raw
  client on the generated stubs that answers `legal_actions[0]` at once. The
  match job measures it (the `us` field of each log entry): from sending the
  request (the script that logs the previous action, stores the request as
  pending and publishes it) to its BLPOP returning the answer. That covers
  Redis to the referee's hub, protobuf encoding, the Play stream to the bot
  and back, the ACCEPT script and the reply list.
- `decision cycle mean`: wall time of a match divided by its decisions: the
  round trip plus the job's own work per decision (observation, JSON, engine).
- `cpu per decision ROLE`: CPU time the referee, the match job (worker
  processes and their work horses), redis-server and the bots used per
  decision; unlike wall times these hardly move with the machine's load.
- `decision sdk p50/p99`: the same round trip with the bots run by the SDK
  (`moonshot bot run --threads 0`, a `clients.bot.Bot` answering `legal[0]`).
- `target p50` = 1.3 * (grpc floor p50 + 2 * redis floor p50), and
  `ratio p50/target` (the goal is at most 1).
- `decisions/s 4 bots`: 4 raw instant bots playing several 3-player matches
  at once over the workers: accepted actions / wall time from the first match
  starting to the last one finishing.

The floors and the round trips are measured in turns (`--rounds`), so that all
see the same load: the machine is shared and its load swings within a minute.
Matches use `all_pass=forced`, so an instant bot (always the first legal
action: a pass while it may) still plays full hands with tricks, about 550
decisions a game.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import redis

# `python bench/decision_latency.py` puts bench/ first on the path, where bench/bots.py and
# bench/ratings.py would shadow the packages of those names: the repository root goes
# in front.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from clients.bot import Bot
from clients.stack import Child, start_child
from moon import Action, GameState, Observation, Rules
from store import keys

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = Path(__file__).resolve().parent
RULES = {"all_pass": "forced"}
_PING_METHOD = "/bench.Ping/Stream"
Size = tuple[str, int, int, float]  # label, ping bytes, pong bytes, idle seconds before a ping
PHASES = ("floors", "raw", "sdk", "throughput")


class InstantBot(Bot):
    """Answers the first legal action at once (for `moonshot bot run --bot`)."""

    name = "instant"

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """The first legal action."""
        return legal[0]


# ------------------------------------------------------------------ statistics


def pct(xs: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) of `xs`, nearest rank."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


@dataclass
class Report:
    """The figures, printed as `name: value unit` lines."""

    lines: list[tuple[str, float, str]] = field(default_factory=list)

    def add(self, name: str, value: float, unit: str) -> None:
        """Record and print one figure."""
        self.lines.append((name, value, unit))
        shown = f"{value:.2f}" if unit == "x" else f"{value:.0f}"
        print(f"{name}: {shown} {unit}".rstrip(), flush=True)

    def dist(self, name: str, us: Sequence[float]) -> float:
        """p50 and p99 of samples in microseconds; returns p50."""
        p50 = pct(us, 0.5)
        self.add(f"{name} p50", p50, "us")
        self.add(f"{name} p99", pct(us, 0.99), "us")
        return p50


# ---------------------------------------------------------- typical sizes


@dataclass(frozen=True)
class Sizes:
    """Bytes of a typical decision on each leg."""

    request_pb: int  # PlayResponse carrying a DecisionRequest (referee -> bot)
    answer_pb: int  # PlayRequest carrying a Decision (bot -> referee)
    request_json: int  # the job's request JSON (job -> Redis -> referee)
    answer_json: int  # the referee's answer JSON (referee -> Redis -> job)


def typical_sizes() -> Sizes:
    """Median sizes over the decisions of one instant-bot game, built as the product builds them."""
    from proto.moon.v1 import bot_pb2
    from server import wire
    from store.messages import DecisionRequest, encode
    from store.streams import accept_args

    st = GameState.new(Rules.make(3, RULES), 7)
    pb: list[int] = []
    js: list[int] = []
    seq = 0
    while not st.is_over:
        seat = st.to_act
        req = DecisionRequest(
            request_id=f"m-0123456789ab/{seq}", match_id="m-0123456789ab", seat=seat,
            observation=st.observation(seat).to_json(), legal=list(st.legal_ids()),
            time_limit_ms=2000, time_bank_ms=30000,
            deadline_unix_ms=int(time.time() * 1000) + 32000, strikes=0)
        js.append(len(encode(req)))
        pb.append(len(wire.event_to_bytes(req)))
        st.apply_id(st.legal_ids()[0])
        seq += 1
    rid = f"m-0123456789ab/{seq}"
    answer = bot_pb2.PlayRequest(decision=bot_pb2.PlayRequest.Decision(request_id=rid,
                                                                        action_id=70))
    _, argv = accept_args("b-0123456789ab", rid, 70)
    return Sizes(round(statistics.median(pb)), len(answer.SerializeToString()),
                 round(statistics.median(js)), len(argv[1]))


# ------------------------------------------------------------ child roles


async def _grpc_server(sizes: list[Size], samples: int, warmup: int) -> None:
    """Serve one ping-pong stream; the server times each write -> read round trip."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    results: dict[str, list[float]] = {}

    async def stream(request_iterator: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        await context.read()  # the client's hello
        for label, ping, _pong, idle in sizes:
            cpu0 = time.process_time()
            payload = b"x" * ping
            out: list[float] = []
            for i in range(warmup + samples):
                if idle:
                    await asyncio.sleep(idle)
                t0 = time.perf_counter_ns()
                await context.write(payload)
                await context.read()
                if i >= warmup:
                    out.append((time.perf_counter_ns() - t0) / 1000)
            results[label] = out
            results[f"cpu:{label}"] = [time.process_time() - cpu0]
        if not done.done():
            done.set_result(None)

    server = grpc.aio.server()
    handler = grpc.method_handlers_generic_handler(
        "bench.Ping", {"Stream": grpc.stream_stream_rpc_method_handler(stream)})
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"port {port}", flush=True)
    await done
    print(json.dumps(results), flush=True)
    await server.stop(1)


async def _grpc_client(address: str, sizes: list[Size], samples: int,
                       warmup: int) -> None:
    """Answer every message of the ping-pong stream at once."""
    async with grpc.aio.insecure_channel(address) as channel:
        call: grpc.aio.StreamStreamCall[bytes, bytes] = channel.stream_stream(_PING_METHOD)()
        await call.write(b"hi")
        cpu: dict[str, list[float]] = {}
        for label, _ping, pong, _idle in sizes:
            cpu0 = time.process_time()
            reply = b"y" * pong
            for _ in range(warmup + samples):
                await call.read()
                await call.write(reply)
            cpu[f"cpu:{label}"] = [time.process_time() - cpu0]
        await call.done_writing()
        await call.read()
    print(json.dumps(cpu), flush=True)


def _redis_echo(url: str, inbox: str, outbox: str, sizes: list[Size],
                samples: int, warmup: int) -> None:
    """BLPOP a ping, LPUSH a pong, as many times as the driver pings."""
    r = redis.Redis.from_url(url)
    r.blpop([inbox], timeout=0)  # the driver's hello
    cpu: dict[str, list[float]] = {}
    for label, _ping, pong, _idle in sizes:
        cpu0 = time.process_time()
        reply = b"y" * pong
        for _ in range(warmup + samples):
            r.blpop([inbox], timeout=0)
            r.lpush(outbox, reply)
        cpu[f"cpu:{label}"] = [time.process_time() - cpu0]
    print(json.dumps(cpu), flush=True)


def _redis_driver(url: str, inbox: str, outbox: str, sizes: list[Size],
                  samples: int, warmup: int) -> None:
    """LPUSH a ping, BLPOP the pong; time each round trip."""
    r = redis.Redis.from_url(url)
    results: dict[str, list[float]] = {}
    r.lpush(outbox, b"hello")
    for label, ping, _pong, idle in sizes:
        cpu0 = time.process_time()
        payload = b"x" * ping
        out: list[float] = []
        for i in range(warmup + samples):
            if idle:
                time.sleep(idle)
            t0 = time.perf_counter_ns()
            r.lpush(outbox, payload)
            r.blpop([inbox], timeout=0)
            if i >= warmup:
                out.append((time.perf_counter_ns() - t0) / 1000)
        results[label] = out
        results[f"cpu:{label}"] = [time.process_time() - cpu0]
    print(json.dumps(results), flush=True)


async def _raw_bot(address: str, token: str) -> None:
    """A bot on the bare generated stubs: answer legal_actions[0] the moment a request arrives."""
    from proto.moon.v1 import bot_pb2, bot_pb2_grpc

    decision = bot_pb2.PlayRequest.Decision
    async with grpc.aio.insecure_channel(address) as channel:
        stub = bot_pb2_grpc.BotServiceStub(channel)
        call = stub.Play(metadata=(("authorization", f"Bearer {token}"),))
        while True:
            msg = await call.read()
            if not isinstance(msg, bot_pb2.PlayResponse):
                return  # EOF
            kind = msg.WhichOneof("message")
            if kind == "decision_request":
                req = msg.decision_request
                await call.write(bot_pb2.PlayRequest(decision=decision(
                    request_id=req.request_id, action_id=req.legal_actions[0].id)))
            elif kind == "welcome":
                print(f"connected to {address} as {msg.welcome.name}", flush=True)


def _parse_sizes(text: str) -> list[Size]:
    """`label:ping:pong[:idle_us],...`"""
    out = []
    for part in text.split(","):
        label, ping, pong, *idle = part.split(":")
        out.append((label, int(ping), int(pong), int(idle[0]) / 1e6 if idle else 0.0))
    return out


def run_role(args: argparse.Namespace) -> None:
    """Run this process as one of the bench's children."""
    sizes = _parse_sizes(args.sizes) if args.sizes else []
    if args.role == "grpc-server":
        asyncio.run(_grpc_server(sizes, args.samples, args.warmup))
    elif args.role == "grpc-client":
        asyncio.run(_grpc_client(args.address, sizes, args.samples, args.warmup))
    elif args.role == "redis-echo":
        _redis_echo(args.address, "bench:ping", "bench:pong", sizes, args.samples, args.warmup)
    elif args.role == "redis-driver":
        _redis_driver(args.address, "bench:pong", "bench:ping", sizes, args.samples,
                      args.warmup)
    elif args.role == "raw-bot":
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        asyncio.run(_raw_bot(args.address, args.token))


# --------------------------------------------------------------- processes


def _env(**extra: str) -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(BENCH_DIR), e.get("PYTHONPATH", "")])
    e["PYTHONUNBUFFERED"] = "1"
    e.update(extra)
    return e


@dataclass
class Procs:
    """Starts children into a folder (see clients.stack.start_child); stops them all."""

    workdir: Path
    env: dict[str, str]
    procs: list[Child] = field(default_factory=list)

    def start(self, name: str, argv: list[str]) -> Child:
        """Start `argv` with its output in `<workdir>/<n>-<name>.log`."""
        log = self.workdir / f"{len(self.procs):02d}-{name}.log"
        proc = start_child(name, argv, log, self.env, cwd=ROOT)
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        """Stop every child, newest first."""
        for p in reversed(self.procs):
            p.stop()


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float:
    """CPU time of a process and of its children it has reaped (an RQ worker's work horses)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / _TICK  # utime stime cutime cstime


def _self(*args: str) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), *args]


def _moonshot(*args: str) -> list[str]:
    return [sys.executable, "-m", "clients.cli", *args]


def _result_json(proc: Child, timeout: float) -> dict[str, list[float]]:
    """The JSON line a measuring child prints last."""
    proc.popen.wait(timeout)
    for line in reversed(proc.output().splitlines()):
        if line.startswith("{"):
            return dict(json.loads(line))
    raise RuntimeError(f"{proc.name} printed no result:\n{proc.output()[-3000:]}")


# ------------------------------------------------------------------ floors


def grpc_floor(procs: Procs, sizes: str, samples: int, warmup: int) -> dict[str, list[float]]:
    """Ping-pong through a bare grpc.aio stream between two processes."""
    common = ["--sizes", sizes, "--samples", str(samples), "--warmup", str(warmup)]
    server = procs.start("grpc-server", _self("--role", "grpc-server", *common))
    port = server.wait_for(r"port (\d+)").group(1)
    client = procs.start("grpc-client", _self("--role", "grpc-client", "--address",
                                              f"127.0.0.1:{port}", *common))
    out = _result_json(server, 300)
    for key, value in _result_json(client, 30).items():
        out[key][0] += value[0]  # CPU of both sides
    return out


def redis_floor(procs: Procs, url: str, sizes: str, samples: int,
                warmup: int) -> dict[str, list[float]]:
    """LPUSH/BLPOP ping-pong between two processes through the redis-server."""
    common = ["--address", url, "--sizes", sizes, "--samples", str(samples),
              "--warmup", str(warmup)]
    echo = procs.start("redis-echo", _self("--role", "redis-echo", *common))
    driver = procs.start("redis-driver", _self("--role", "redis-driver", *common))
    out = _result_json(driver, 300)
    for key, value in _result_json(echo, 30).items():
        out[key][0] += value[0]  # CPU of both sides
    return out


# ----------------------------------------------------------------- product


@dataclass
class Product:
    """A referee, workers, registered bots, and a way to run matches and read their logs."""

    procs: Procs
    r: redis.Redis
    address: str
    admin_token: str
    pids: dict[str, list[int]] = field(default_factory=dict)  # role -> processes
    bots: list[tuple[str, str]] = field(default_factory=list)  # (bot_id, token)

    def register(self, n: int) -> None:
        """Register `n` bots with fresh names."""
        from clients.sdk import register

        tag = secrets.token_hex(3)
        self.bots = [register(self.address, f"instant-{tag}-{i}") for i in range(n)]

    def start_bots(self, indices: Sequence[int], kind: str) -> None:
        """Connect bots (raw stubs or the SDK) and wait until each has its stream."""
        started = []
        for i in indices:
            _bot_id, token = self.bots[i]
            if kind == "raw":
                argv = _self("--role", "raw-bot", "--address", self.address, "--token", token)
            else:
                argv = _moonshot("bot", "run", "--bot", "decision_latency:InstantBot",
                                 "--threads", "0", "--server", self.address, "--token", token)
            started.append(self.procs.start(f"{kind}-bot-{i}", argv))
        for p in started:
            p.wait_for(r"connected to ")
        self.pids[f"{kind} bots"] = [p.popen.pid for p in started]
        time.sleep(0.2)  # let the referee's hub subscribe every stream

    def create(self, seats: Sequence[int], seed: int) -> str:
        """Queue one 3-player match between the given bots; return its id."""
        from clients.admin import Admin

        admin = Admin(self.address, self.admin_token)
        try:
            match = admin.create_match(3, [self.bots[i][0] for i in seats], seed=seed,
                                       rules=RULES, move_time_ms=5000, time_bank_ms=60000)
        finally:
            admin.close()
        return str(match.match_id)

    def wait(self, match_ids: Sequence[str], timeout: float = 600.0) -> None:
        """Poll Redis (cheaply) until every match has its result."""
        end = time.monotonic() + timeout
        left = list(match_ids)
        while left:
            left = [m for m in left if not self.r.exists(keys.result(m))]
            for m in left:
                err = self.r.hget(keys.match(m), "error")
                if err:
                    raise RuntimeError(f"match {m} failed: {err!s}")
            if time.monotonic() > end:
                raise TimeoutError(f"matches not finished: {left}")
            time.sleep(0.02)

    def entries(self, match_id: str) -> list[dict[str, Any]]:
        """The match's action log."""
        raw: list[str] = self.r.lrange(keys.match_log(match_id), 0, -1)  # type: ignore[assignment]
        return [json.loads(e) for e in raw if '"forfeit"' not in e]

    def span(self, match_id: str) -> tuple[float, float]:
        """(started_at, finished_at), unix seconds."""
        started, finished = self.r.hmget(keys.match(match_id), "started_at", "finished_at")
        return float(str(started)), float(str(finished))


@dataclass
class Latency:
    """What the latency runs of one kind of bot measured, added up over rounds."""

    seats: tuple[int, int, int]  # the bots that play
    rtts: list[float] = field(default_factory=list)  # round trips, us, as the job measured
    cycles: list[float] = field(default_factory=list)  # each match's wall time per decision
    cpu_s: dict[str, float] = field(default_factory=dict)  # role -> CPU seconds used

    def cpu_per_decision(self, role: str) -> float:
        """CPU microseconds per decision of one role's processes."""
        return self.cpu_s.get(role, 0.0) * 1e6 / max(1, len(self.rtts))


def latency(product: Product, into: Latency, decisions: int, seed: int,
            roles: Sequence[str]) -> None:
    """Play matches one at a time between `into.seats` until `decisions` more are logged."""
    before = {role: sum(map(cpu_seconds, product.pids[role])) for role in roles}
    got = 0
    k = 0
    while got < decisions:
        mid = product.create(into.seats, seed + k)
        product.wait([mid])
        entries = product.entries(mid)
        bad = [e for e in entries if e["by"] != "bot"]
        if bad:
            raise RuntimeError(f"match {mid}: an instant bot was judged {bad[0]}")
        if any("us" not in e for e in entries):
            raise RuntimeError("the match log has no `us` field: is workers/match.py current?")
        into.rtts += [float(e["us"]) for e in entries]
        start, end = product.span(mid)
        into.cycles.append((end - start) * 1e6 / len(entries))
        got += len(entries)
        k += 1
    time.sleep(0.3)  # the worker reaps the last work horse (its CPU time counts then)
    for role in roles:
        used = sum(map(cpu_seconds, product.pids[role])) - before[role]
        into.cpu_s[role] = into.cpu_s.get(role, 0.0) + used


def throughput(product: Product, matches: int, seed: int) -> tuple[int, float]:
    """Run `matches` 3-player matches among 4 bots at once; (decisions, wall seconds)."""
    combos = [(0, 1, 2), (1, 2, 3), (2, 3, 0), (3, 0, 1)]
    ids = [product.create(combos[i % 4], seed + i) for i in range(matches)]
    product.wait(ids)
    spans = [product.span(m) for m in ids]
    total = sum(len(product.entries(m)) for m in ids)
    wall = max(e for _, e in spans) - min(s for s, _ in spans)
    return total, wall


# -------------------------------------------------------------------- main


def bench(args: argparse.Namespace) -> int:
    """Start everything, measure (floors and round trips interleaved in rounds), print."""
    from clients.redisproc import RedisServer

    phases = set(args.only.split(",")) if args.only else set(PHASES)
    report = Report()
    sz = typical_sizes()
    idle_us = 2000
    sizes = (f"decision:{sz.request_pb}:{sz.answer_pb},empty:8:8,"
             f"idle:{sz.request_pb}:{sz.answer_pb}:{idle_us}")
    rsizes = (f"decision:{sz.request_json}:{sz.answer_json},empty:8:8,"
              f"idle:{sz.request_json}:{sz.answer_json}:{idle_us}")
    print(f"# typical decision: request {sz.request_pb} B protobuf / {sz.request_json} B JSON, "
          f"answer {sz.answer_pb} B / {sz.answer_json} B", flush=True)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="moonshot-latency-"))
    workdir.mkdir(parents=True, exist_ok=True)
    token = "adm." + secrets.token_urlsafe(16)
    procs = Procs(workdir, _env(MOONSHOT_ADMIN_TOKEN=token))
    srv = RedisServer(workdir / "redis", appendonly=args.appendonly).start()
    rounds = max(1, args.rounds)
    kinds = ("decision", "empty", "idle")
    gf: dict[str, list[float]] = {k: [] for k in kinds} | {f"cpu:{k}": [0.0] for k in kinds}
    rf: dict[str, list[float]] = {k: [] for k in kinds} | {f"cpu:{k}": [0.0] for k in kinds}
    raw = Latency((0, 1, 2))
    sdk = Latency((4, 5, 6))
    try:
        product: Product | None = None
        if phases & {"raw", "sdk", "throughput"}:
            ref = procs.start("referee", _moonshot("referee", "--listen", "127.0.0.1:0",
                                                    "--redis", srv.url,
                                                    "--registrations-per-hour", "0"))
            port = ref.wait_for(r"referee listening on 127\.0\.0\.1:(\d+)").group(1)
            workers = [procs.start(f"worker-{i}", _moonshot("worker", "--redis", srv.url))
                       for i in range(args.workers)]
            for worker in workers:
                worker.wait_for(r"Listening on")
            r = redis.Redis.from_url(srv.url, decode_responses=True)
            product = Product(procs, r, f"127.0.0.1:{port}", token)
            assert srv.proc is not None
            product.pids = {"referee": [ref.popen.pid], "job": [w.popen.pid for w in workers],
                            "redis": [srv.proc.pid]}
            product.register(7)  # 0-3 raw bots (0-2 for latency), 4-6 SDK bots
            product.start_bots([0, 1, 2, 3], "raw")
            if "sdk" in phases:
                product.start_bots([4, 5, 6], "sdk")
            # One match each first, to warm up every process (not counted).
            product.wait([product.create(raw.seats, args.seed)])
            if "sdk" in phases:
                product.wait([product.create(sdk.seats, args.seed)])
        n = args.floor_samples // rounds
        warm = max(100, n // 10)
        per_round = -(-args.decisions // rounds)
        # Floors and round trips take turns, so that all see the same load on the machine.
        for k in range(rounds):
            if "floors" in phases:
                for dst, got in ((gf, grpc_floor(procs, sizes, n, warm)),
                                 (rf, redis_floor(procs, srv.url, rsizes, n, warm))):
                    for kind in kinds:
                        dst[kind] += got[kind]
                        dst[f"cpu:{kind}"][0] += got[f"cpu:{kind}"][0]
            if product is not None and "raw" in phases:
                latency(product, raw, per_round, args.seed + 1000 * (k + 1),
                        ("referee", "job", "redis", "raw bots"))
            if product is not None and "sdk" in phases:
                latency(product, sdk, per_round, args.seed + 1000 * (k + 1) + 500,
                        ("referee", "job", "redis", "sdk bots"))

        if "floors" in phases:
            grpc_p50 = report.dist("grpc floor", gf["decision"])
            report.dist("grpc floor empty", gf["empty"])
            report.dist(f"grpc floor idle {idle_us // 1000}ms", gf["idle"])
            redis_p50 = report.dist("redis floor", rf["decision"])
            report.dist("redis floor empty", rf["empty"])
            report.dist(f"redis floor idle {idle_us // 1000}ms", rf["idle"])
            trips = rounds * (n + warm)
            for name, floor in (("grpc", gf), ("redis", rf)):
                for kind, label in (("decision", ""), ("idle", f" idle {idle_us // 1000}ms")):
                    report.add(f"cpu per round trip {name} floor{label}",
                               floor[f"cpu:{kind}"][0] * 1e6 / trips, "us")
        if raw.rtts:
            p50 = report.dist("decision", raw.rtts)
            report.add("decision samples", len(raw.rtts), "decisions")
            report.add("decision cycle mean", statistics.mean(raw.cycles), "us")
            for role in ("referee", "job", "redis", "raw bots"):
                report.add(f"cpu per decision {role}", raw.cpu_per_decision(role), "us")
        if sdk.rtts:
            report.dist("decision sdk", sdk.rtts)
            report.add("decision sdk cycle mean", statistics.mean(sdk.cycles), "us")
            report.add("cpu per decision sdk bots", sdk.cpu_per_decision("sdk bots"), "us")
        if "floors" in phases and raw.rtts:
            target = 1.3 * (grpc_p50 + 2 * redis_p50)
            report.add("target p50", target, "us")
            report.add("ratio p50/target", p50 / target, "x")
            empty = pct(gf["empty"], 0.5) + 2 * pct(rf["empty"], 0.5)
            report.add("target p50 empty floors", 1.3 * empty, "us")
        if product is not None and "throughput" in phases:
            total, wall = throughput(product, args.matches, args.seed + 100_000)
            report.add("decisions/s 4 bots", total / wall, "/s")
            report.add("concurrent matches", min(args.workers, args.matches), "matches")
    finally:
        procs.stop_all()
        srv.stop()
        if args.workdir is None and not args.keep:
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"# logs: {workdir}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Parse flags; run the bench or one of its child roles."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0] if __doc__ else None)
    p.add_argument("--decisions", type=int, default=2000,
                   help="round trips to measure per bot kind (default 2000)")
    p.add_argument("--floor-samples", type=int, default=5000,
                   help="ping-pongs per floor and size (default 5000)")
    p.add_argument("--matches", type=int, default=8,
                   help="matches in the throughput run (default 8)")
    p.add_argument("--workers", type=int, default=2, help="RQ workers (default 2)")
    p.add_argument("--rounds", type=int, default=4,
                   help="floors and round trips are measured in turns, this many (default 4)")
    p.add_argument("--seed", type=int, default=1, help="seed of the first match")
    p.add_argument("--only", default="", metavar="PHASE,...",
                   help=f"run only these of {','.join(PHASES)} (default: all)")
    p.add_argument("--appendonly", action="store_true",
                   help="run redis-server with its append-only file on (everysec)")
    p.add_argument("--workdir", default=None, help="where logs go (default: a temp folder)")
    p.add_argument("--keep", action="store_true", help="keep the logs")
    # Child roles (the bench starts itself with these).
    p.add_argument("--role", default="bench",
                   choices=("bench", "grpc-server", "grpc-client", "redis-echo",
                            "redis-driver", "raw-bot"), help=argparse.SUPPRESS)
    p.add_argument("--address", default="", help=argparse.SUPPRESS)
    p.add_argument("--token", default="", help=argparse.SUPPRESS)
    p.add_argument("--sizes", default="", help=argparse.SUPPRESS)
    p.add_argument("--samples", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--warmup", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.role != "bench":
        run_role(args)
        return 0
    return bench(args)


if __name__ == "__main__":
    sys.exit(main())
