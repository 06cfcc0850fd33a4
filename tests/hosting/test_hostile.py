"""The hostile suite (tests/hosting/hostile_suite.py): every attempt fails or is stopped at
its limit, and afterwards the stack and a sandbox that ran beside them still work."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from hostile_suite import Context, attempts, build, keep_between_sandboxes, run
from sandboxes import ROOT, version_of
from stack import Stack
from support import finished, wait_until

from clients.admin import Admin
from clients.redisproc import RedisServer
from clients.sdk import register
from hosting.sandbox import Sandbox, SandboxSpec
from store.hosted import Limits


def test_every_hostile_attempt_fails_and_the_neighbours_keep_working(
        stack: Stack, admin: Admin, redis_server: RedisServer, name: str,
        tmp_path: Path) -> None:
    bot_id, token = register(stack.address, f"{name}-neighbour")
    neighbour_dir = version_of(tmp_path)
    neighbour = Sandbox.start(SandboxSpec(
        bot_id, neighbour_dir, "python3.11", ("python", "bot.py"), {"MOONSHOT_TOKEN": token},
        Limits(memory_mb=256, pids=64, cpu_s=300), tmp_path / "neighbour"), stack.address)
    listener = socket.create_server(("127.0.0.1", 0))  # another port of the host
    try:
        wait_until("the neighbour connected",
                   lambda: "connected to" in neighbour.stderr_tail() or neighbour.poll(),
                   timeout=30)
        ctx = Context(redis_port=redis_server.port, referee=stack.address, host_pid=os.getpid(),
                      neighbour_pid=neighbour.pid, neighbour_dir=neighbour_dir,
                      data_dirs=(redis_server.data_dir.resolve(), stack.workdir, tmp_path),
                      repo=ROOT, other_port=listener.getsockname()[1])
        versions = build(tmp_path / "hostile")
        started = time.monotonic()
        outcomes = run(attempts(ctx), versions, stack.address, tmp_path / "work")
        outcomes.append(keep_between_sandboxes(versions, stack.address, tmp_path / "work"))
        took = time.monotonic() - started
        table = "\n".join(f"{o.attempt.name}: {o.outcome} ({o.detail}) "
                          f"{'ok' if o.as_expected else 'WRONG'}" for o in outcomes)
        print(f"\n{table}\n{len(outcomes)} attempts in {took:.1f} s")
        wrong = [f"{o.attempt.name}: {o.outcome} {o.detail}\n{o.log[-1500:]}"
                 for o in outcomes if not o.as_expected]
        assert not wrong, "\n\n".join(wrong)
        tokens = next(o for o in outcomes if o.attempt.name == "read another sandbox's token")
        assert token not in tokens.log
        # The neighbour never noticed: still running, still connected, and it plays.
        assert neighbour.poll() is None, neighbour.stderr_tail()
        others = [register(stack.address, f"{name}-g{i}") for i in range(2)]
        stack.bots([("greedy", t) for _, t in others])
        m = admin.create_match(3, [bot_id, *(b for b, _ in others)], seed=3,
                               move_time_ms=5000)
        finished(admin, m.match_id, timeout=120)
    finally:
        listener.close()
        neighbour.stop()
    assert neighbour.end_reason() == "stopped"
