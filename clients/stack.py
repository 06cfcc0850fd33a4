"""Run the whole system on one machine: Redis, a referee and a pool of workers.

`moonshot up` and `moonshot demo` use this. Each part is its own process,
started exactly as a user would start it on separate machines (`moonshot
referee`, `moonshot worker`), so the single-machine setup exercises the same
paths as a distributed one.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import redis

from clients.redisproc import RedisServer, free_port

__all__ = ["Child", "LocalStack", "load_or_make_admin_token", "start_child"]


def load_or_make_admin_token(data_dir: Path) -> str:
    """$MOONSHOT_ADMIN_TOKEN, else the token saved in `data_dir`, else a new saved one."""
    env = os.environ.get("MOONSHOT_ADMIN_TOKEN")
    if env:
        return env
    path = data_dir / "admin-token"
    if path.exists():
        return path.read_text().strip()
    data_dir.mkdir(parents=True, exist_ok=True)
    token = "adm." + secrets.token_urlsafe(32)
    path.write_text(token + "\n")
    path.chmod(0o600)
    return token


@dataclass
class Child:
    """A child process whose output goes to a log file."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        """What the process printed so far."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_for(self, pattern: str, timeout: float = 30.0) -> re.Match[str]:
        """Wait for a line matching `pattern`; RuntimeError with the log otherwise."""
        rx = re.compile(pattern)
        end = time.monotonic() + timeout
        while True:
            m = rx.search(self.output())
            if m:
                return m
            if self.popen.poll() is not None or time.monotonic() > end:
                tail = self.output()[-2000:]
                raise RuntimeError(f"{self.name} did not start (log {self.log}):\n{tail}")
            time.sleep(0.05)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, then SIGKILL if it does not end in time."""
        if self.popen.poll() is not None:
            return
        self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()


def start_child(name: str, argv: list[str], log: Path, env: dict[str, str] | None = None,
                cwd: Path | None = None) -> Child:
    """Start `argv` in its own session (a Ctrl-C reaches only the parent, which stops the
    children in order) with stdout and stderr appended to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as fh:
        popen = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT,
                                 env=env or _python_env(), cwd=cwd, start_new_session=True)
    return Child(name, popen, log)


def _python_env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass
class LocalStack:
    """Redis (unless a URL is given), a referee and `workers` workers, in `data_dir`."""

    data_dir: Path
    listen: str = "127.0.0.1:50051"
    workers: int = 2
    redis_url: str | None = None
    quiet_logs: bool = True
    admin_token: str = ""
    address: str = ""
    redis: RedisServer | None = None
    children: list[Child] = field(default_factory=list)

    def spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Child:
        """Start `python -m clients.cli ARGV` logging to `<data_dir>/logs/<name>.log`."""
        child = start_child(name, [sys.executable, "-m", "clients.cli", *argv],
                            self.data_dir / "logs" / f"{name}.log", env)
        self.children.append(child)
        return child

    def start(self) -> LocalStack:
        """Start every part and wait until each is ready."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.redis_url is None:
            self.redis = RedisServer(self.data_dir / "redis", port=free_port()).start()
            self.redis_url = self.redis.url
        else:
            try:
                redis.Redis.from_url(self.redis_url).ping()
            except redis.ConnectionError as exc:
                raise RuntimeError(f"cannot reach Redis at {self.redis_url}: {exc}") from None
        self.admin_token = load_or_make_admin_token(self.data_dir)
        env = _python_env()
        env["MOONSHOT_ADMIN_TOKEN"] = self.admin_token
        ref = self.spawn("referee", ["referee", "--listen", self.listen,
                                     "--redis", self.redis_url], env)
        port = ref.wait_for(r"referee listening on [^\s:]+:(\d+)").group(1)
        host = self.listen.rsplit(":", 1)[0]
        self.address = f"{'127.0.0.1' if host in ('0.0.0.0', '[::]') else host}:{port}"
        for i in range(self.workers):
            w = self.spawn(f"worker-{i + 1}", ["worker", "--redis", self.redis_url], env)
            w.wait_for(r"Listening on|moonshot-matches", timeout=60)
        return self

    def check(self) -> list[str]:
        """Names of children that have died."""
        return [c.name for c in self.children if c.popen.poll() is not None]

    def stop(self) -> None:
        """Stop everything: bots and workers first, then the referee, then Redis."""
        for child in reversed(self.children):
            with contextlib.suppress(Exception):
                child.stop()
        if self.redis is not None:
            self.redis.stop()

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
