"""The hostile suite as a table, and what the referee relay costs.

Run `python bench/hosted_hostile.py [--calls N]` as root on a host where `hosting.sandbox.
check()` passes. It starts a private redis-server and a referee (`moonshot referee`),
one hosted bot (examples/hosted_bot) in a sandbox beside the attempts, then runs every
attempt of tests/hosting/hostile_suite.py, each in a sandbox of its own, and prints only
`name: value unit` lines:

- `hostile ATTEMPT: OUTCOME OK`: OUTCOME is what the attempt got (`blocked`: the call
  failed; `stopped`: the sandbox was ended at a limit, the reason follows; `allowed`: it
  worked); OK is 1 when that is what the sandbox must do (everything blocked or stopped,
  but reading its own token, which is allowed), else 0.
- `hostile attempts`, `hostile as expected`, `hostile suite time`, and whether the
  neighbour sandbox still runs.
- relay round trip (`relay ... p50/p99`, microseconds): the referee's gRPC health check
  (a unary call), `--calls` times over TCP straight to the referee, and as many through a
  `hosting.relay.Relay` (the unix socket a sandbox gets), alternating blocks of 100 in
  the same run; `relay round trip overhead p50` is the difference of the p50s.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/ is first on the path when run as a script: its hosting_scale.py and bots.py must
# not shadow the packages, so the repository root goes in front, then the test helpers.
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "hosting"), str(ROOT / "tests" / "net")]

import grpc  # noqa: E402
from grpc_health.v1 import health_pb2, health_pb2_grpc  # noqa: E402
from hostile_suite import Context, attempts, build, keep_between_sandboxes, run  # noqa: E402
from stack import Stack  # noqa: E402

from clients.redisproc import RedisServer  # noqa: E402
from clients.sdk import register  # noqa: E402
from hosting.relay import Relay  # noqa: E402
from hosting.sandbox import Sandbox, SandboxSpec, check  # noqa: E402
from store.hosted import Limits  # noqa: E402


def show(name: str, value: float | str, unit: str = "", fmt: str = "") -> None:
    """One `name: value unit` line."""
    text = format(value, fmt) if fmt and not isinstance(value, str) else str(value)
    print(f"{name}: {text} {unit}".rstrip(), flush=True)


def _timed_calls(stub: health_pb2_grpc.HealthStub, n: int) -> list[float]:
    """n health checks on `stub`'s channel, each timed (microseconds)."""
    stub.Check(health_pb2.HealthCheckRequest(), timeout=10)  # connected, warm
    out = []
    for _ in range(n):
        t = time.perf_counter_ns()
        stub.Check(health_pb2.HealthCheckRequest(), timeout=10)
        out.append((time.perf_counter_ns() - t) / 1000)
    return out


def relay_overhead(referee: str, work: Path, calls: int) -> None:
    """Health checks straight to the referee and through a relay, in alternating blocks."""
    relay = Relay(work / "bench-relay.sock", referee)
    via = f"unix://{relay.path}"
    direct: list[float] = []
    relayed: list[float] = []
    # One channel each way, as a bot keeps one: a channel per block would leave grpc's
    # idle connections open through the relay, up to its cap of connections a sandbox.
    try:
        with grpc.insecure_channel(referee) as a, grpc.insecure_channel(via) as b:
            straight, through = health_pb2_grpc.HealthStub(a), health_pb2_grpc.HealthStub(b)
            for _ in range(max(1, calls // 100)):
                direct += _timed_calls(straight, 100)
                relayed += _timed_calls(through, 100)
    finally:
        relay.close()
    for label, xs in (("direct", direct), ("relayed", relayed)):
        xs.sort()
        show(f"relay {label} health check p50", statistics.median(xs), "us", ".0f")
        show(f"relay {label} health check p99", xs[int(0.99 * (len(xs) - 1))], "us", ".0f")
    show("relay round trip overhead p50", statistics.median(relayed) - statistics.median(direct),
         "us", ".0f")
    show("relay calls", len(relayed), "calls each way")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000, help="health checks each way (2000)")
    args = ap.parse_args()
    why = check()
    if why:
        print(f"hosted_hostile: this host cannot build sandboxes: {why}", file=sys.stderr)
        return 1
    tmp = Path(tempfile.mkdtemp(prefix="moonshot-hostile-"))
    srv = RedisServer(tmp / "redis", appendonly=False).start()
    stack = Stack(tmp / "stack", srv.url, admin_token="adm." + secrets.token_urlsafe(16))
    (tmp / "stack").mkdir()
    listener = socket.create_server(("127.0.0.1", 0))
    neighbour = None
    try:
        stack.referee()
        bot_id, token = register(stack.address, "hostile-neighbour-" + secrets.token_hex(3))
        ndir = tmp / "neighbour-version"
        shutil.copytree(ROOT / "examples" / "hosted_bot", ndir)
        neighbour = Sandbox.start(SandboxSpec(
            bot_id, ndir, "python3.11", ("python", "bot.py"), {"MOONSHOT_TOKEN": token},
            Limits(memory_mb=256), tmp / "neighbour"), stack.address)
        ctx = Context(redis_port=srv.port, referee=stack.address, host_pid=os.getpid(),
                      neighbour_pid=neighbour.pid, neighbour_dir=ndir,
                      data_dirs=(srv.data_dir.resolve(), stack.workdir), repo=ROOT,
                      other_port=listener.getsockname()[1])
        versions = build(tmp / "hostile")
        started = time.monotonic()
        outcomes = run(attempts(ctx), versions, stack.address, tmp / "work")
        outcomes.append(keep_between_sandboxes(versions, stack.address, tmp / "work"))
        took = time.monotonic() - started
        for o in outcomes:
            extra = f" ({o.detail})" if o.outcome == "stopped" else ""
            show(f"hostile {o.attempt.name}", o.outcome, f"{int(o.as_expected)}{extra}")
        leaked = any(token in o.log for o in outcomes)
        show("hostile attempts", len(outcomes), "attempts")
        show("hostile as expected", sum(o.as_expected for o in outcomes), "attempts")
        show("hostile neighbour token seen", int(leaked), "times")
        show("hostile neighbour still running", int(neighbour.poll() is None), "bool")
        show("hostile suite time", took, "s", ".1f")
        relay_overhead(stack.address, tmp, args.calls)
    finally:
        listener.close()
        if neighbour is not None:
            neighbour.stop()
        stack.stop_all()
        srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
