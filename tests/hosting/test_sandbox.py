"""A hosted bot (examples/hosted_bot, unchanged) plays a real match from its sandbox."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sandboxes import version_of
from stack import Stack
from support import finished, transcript_of, wait_until

from clients.admin import Admin
from clients.sdk import REFEREE_ENV, from_environment, register
from hosting.sandbox import Sandbox, SandboxSpec
from store.hosted import Limits


def test_a_hosted_bot_plays_a_match_from_its_sandbox(stack: Stack, admin: Admin, name: str,
                                                     tmp_path: Path) -> None:
    bot_id, token = register(stack.address, f"{name}-hosted")
    others = [register(stack.address, f"{name}-g{i}") for i in range(2)]
    stack.bots([("greedy", t) for _, t in others])
    spec = SandboxSpec(bot_id, version_of(tmp_path), "python3.11", ("python", "bot.py"),
                       {"MOONSHOT_TOKEN": token}, Limits(memory_mb=256, pids=64, cpu_s=120),
                       tmp_path / "work")
    started = time.monotonic()
    sb = Sandbox.start(spec, stack.address)
    try:
        wait_until("the hosted bot connected",
                   lambda: "connected to unix:///run/moonshot/referee.sock" in sb.stderr_tail()
                   or sb.poll() is not None, timeout=30)
        assert sb.poll() is None, sb.stderr_tail()
        cold = time.monotonic() - started
        m = admin.create_match(3, [bot_id, *(b for b, _ in others)], seed=7,
                               move_time_ms=5000)
        done = finished(admin, m.match_id, timeout=120)
        record = transcript_of(done)
        assert record["faults"] == [], record["faults"]
        # The bot logs the match's end when its stream says so, which may come a moment
        # after the match is recorded finished.
        wait_until("the bot logged the match's end",
                   lambda: f"match {m.match_id} ended" in sb.stderr_tail(), timeout=15)
        assert sb.cpu_seconds() > 0 and sb.memory_bytes() > 0
        assert sb._relay is not None and sb._relay.connections >= 1
    finally:
        sb.stop()
    assert sb.poll() is not None
    assert sb.end_reason() == "stopped"
    assert sb.stderr_tail().rstrip().endswith("[moonshot sandbox] stopped")
    # Nothing of it is left: its cgroup, its relay socket, its views.
    assert sb._group is not None and not any(d.exists() for d in sb._group.dirs.values())
    assert not (spec.work_root / "referee.sock").exists()
    print(f"cold start to connected: {cold:.2f} s")


def test_an_exiting_command_says_its_status(tmp_path: Path) -> None:
    version = tmp_path / "v"
    version.mkdir(mode=0o755)
    (version / "bot.py").write_text("import sys\nprint('bye', file=sys.stderr)\nsys.exit(3)\n")
    sb = Sandbox.start(SandboxSpec("exit3", version, "python3.11", ("python", "bot.py"), {},
                                   Limits(), tmp_path / "work"), "127.0.0.1:9")
    assert sb.wait(30) == 3
    assert sb.end_reason() == "exited with status 3"
    assert "bye" in sb.stderr_tail()
    assert sb.stderr_tail().rstrip().endswith("[moonshot sandbox] exited with status 3")


def test_the_log_is_capped(tmp_path: Path) -> None:
    version = tmp_path / "v"
    version.mkdir(mode=0o755)
    (version / "bot.py").write_text("import sys\nfor i in range(200000):\n"
                                    "    print('line', i, file=sys.stderr)\n")
    sb = Sandbox.start(SandboxSpec("loud", version, "python3.11", ("python", "bot.py"), {},
                                   Limits(), tmp_path / "work"), "127.0.0.1:9")
    assert sb.wait(60) == 0
    tail = sb.stderr_tail(most=1 << 30)
    assert len(tail) <= 70_000 and "line 199999" in tail


def test_the_sdk_reads_where_to_connect_from_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REFEREE_ENV, "unix:///run/moonshot/referee.sock")
    monkeypatch.setenv("MOONSHOT_TOKEN", "tok.x")
    assert from_environment() == ("unix:///run/moonshot/referee.sock", "tok.x")
    assert from_environment("127.0.0.1:1", "t") == ("127.0.0.1:1", "t")
    monkeypatch.delenv("MOONSHOT_TOKEN")
    with pytest.raises(ValueError, match=r"\$MOONSHOT_TOKEN"):
        from_environment()
