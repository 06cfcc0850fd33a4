"""Run the whole system on one machine: Redis, a referee and a pool of workers.

`moonshot up` and `moonshot demo` use this. Each part is its own process,
started exactly as a user would start it on separate machines (`moonshot
referee`, `moonshot worker`), so the single-machine setup exercises the same
paths as a distributed one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
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

from clients.flags import token_problem
from clients.redisproc import RedisServer, free_port
from store.bots import shown, watch_pass

__all__ = ["LOCK_FILE", "Child", "LocalStack", "load_or_make_admin_token", "start_child"]

LOCK_FILE = "moonshot.lock"  # in the data folder; flock-ed while a stack runs on it
MAX_RESTARTS = 5  # a part that dies more often than this ...
RESTART_WINDOW_S = 600.0  # ... in this many seconds is not started again


def load_or_make_admin_token(data_dir: Path, replace: bool = False) -> str:
    """$MOONSHOT_ADMIN_TOKEN, else the token saved in `data_dir`, else a new saved one;
    RuntimeError if the saved one cannot be read or used, or differs from the variable
    (unless `replace`: then the variable's token is saved as the new one)."""
    env = os.environ.get("MOONSHOT_ADMIN_TOKEN")
    path = data_dir / "admin-token"
    if replace and not env:
        raise RuntimeError("--replace-admin-token needs the new token in MOONSHOT_ADMIN_TOKEN")
    if env and (replace or not path.exists()):
        # Saved, so that a restart without the variable finds the token this Redis has.
        return _save_token(path, env)
    if path.exists():
        try:
            token = path.read_text().strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not text"
            raise RuntimeError(f"cannot read the admin token from {path}: {reason}") from None
        problem = token_problem(token)
        if problem:
            raise RuntimeError(f"the admin token in {path} {problem}")
        if env and env != token:
            raise RuntimeError(
                f"MOONSHOT_ADMIN_TOKEN differs from the admin token saved in {path}, the one "
                "this data folder's Redis has: unset the variable to use the saved one, or "
                "add --replace-admin-token to make the variable's token the new one")
        return token
    return _save_token(path, "adm." + secrets.token_urlsafe(32))


def _save_token(path: Path, token: str) -> str:
    """Write `token` to `path`, readable by its owner only; return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(token + "\n")
    path.chmod(0o600)
    return token


@dataclass
class Child:
    """A child process whose output goes to a log file."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    start: int = 0  # the log's size when this process started: earlier runs wrote the rest
    argv: list[str] = field(default_factory=list)  # how to start it again
    env: dict[str, str] | None = None

    def output(self) -> str:
        """What this process printed so far (not what earlier runs left in the log)."""
        if not self.log.exists():
            return ""
        with open(self.log, "rb") as fh:
            fh.seek(self.start)
            return fh.read().decode(errors="replace")

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
        start = fh.seek(0, os.SEEK_END)
        popen = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT,
                                 env=env or _python_env(), cwd=cwd, start_new_session=True)
    return Child(name, popen, log, start, list(argv), env)


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
    replace_admin_token: bool = False
    web_listen: str | None = "127.0.0.1:0"  # `moonshot web` here (port 0: a free one); None: none
    admin_token: str = ""
    address: str = ""
    web_address: str = ""  # http://HOST:PORT of the web pages, once started
    # HOST:PORT of the referee's /metrics; worker i takes PORT + i (port 0: free ones); None:
    # no metrics.
    metrics_listen: str | None = None
    metrics: dict[str, str] = field(default_factory=dict)  # part -> HOST:PORT of its /metrics
    redis: RedisServer | None = None
    redis_fsync: str = "everysec"  # when the Redis this starts syncs its append-only file
    archive_url: str = ""  # the database of record for finished games ('' : none)
    host_note: str = ""  # why hosted versions do not run here ('' : they do, or no archive)
    referee_socket: str = ""  # the referee's unix socket for this machine's hosted bots
    children: list[Child] = field(default_factory=list)
    lock_fd: int | None = field(default=None, init=False, repr=False)
    restarts: dict[str, list[float]] = field(default_factory=dict, init=False, repr=False)

    def spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Child:
        """Start `python -m clients.cli ARGV` logging to `<data_dir>/logs/<name>.log`."""
        child = start_child(name, [sys.executable, "-m", "clients.cli", *argv],
                            self.data_dir / "logs" / f"{name}.log", env)
        self.children.append(child)
        return child

    def lock(self) -> None:
        """Take the data folder for this process (until `stop`), so two stacks never run
        on the same Redis files; RuntimeError naming the holder if another has it."""
        if self.lock_fd is not None:
            return
        path = self.data_dir / LOCK_FILE
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise RuntimeError(f"cannot open {path}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise RuntimeError(f"cannot lock {path}: {exc.strerror}") from None
            raise RuntimeError(f"{self.data_dir} is in use by another `moonshot up` "
                               f"(pid {holder}) or by the Redis it started") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.lock_fd = fd

    def unlock(self) -> None:
        """Let the data folder go (closing the file releases the lock)."""
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None

    def start(self) -> LocalStack:
        """Start every part and wait until each is ready."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.lock()
        self.admin_token = load_or_make_admin_token(self.data_dir, self.replace_admin_token)
        if self.redis_url is None:
            # Redis holds the data folder's lock too: if this process dies without
            # stopping it, no second stack may start a Redis on the same files.
            keep = (self.lock_fd,) if self.lock_fd is not None else ()
            self.redis = RedisServer(self.data_dir / "redis", port=free_port(),
                                     keep_fds=keep, fsync=self.redis_fsync).start()
            self.redis_url = self.redis.url
        else:
            try:
                redis.Redis.from_url(self.redis_url).ping()
            except (redis.RedisError, ValueError) as exc:
                raise RuntimeError(f"cannot use Redis at {shown(self.redis_url)}: {exc}") from None
        env = _python_env()
        env["MOONSHOT_ADMIN_TOKEN"] = self.admin_token
        replace = ["--replace-admin-token"] if self.replace_admin_token else []
        archive = ["--archive", self.archive_url] if self.archive_url else []
        # Listening on this machine only, the stack is its user's own: their registrations
        # are not counted (a stack open to the network keeps the referee's default).
        local = self.listen.rsplit(":", 1)[0] in ("127.0.0.1", "localhost", "[::1]")
        quota = ["--registrations-per-hour", "0"] if local else []
        # This machine's hosted bots reach the referee through its own unix socket (a
        # socket's path is at most 107 bytes: a deeper data folder uses the host's relay).
        sock = self.data_dir.resolve() / "referee.sock"
        self.referee_socket = str(sock) if len(str(sock)) < 100 else ""
        unix = ["--listen-unix", self.referee_socket] if self.referee_socket else []
        ref = self.spawn("referee", ["referee", "--listen", self.listen, *unix,
                                     "--redis", self.redis_url, *replace, *archive, *quota,
                                     *self._metrics_flag(0)], env)
        port = ref.wait_for(r"referee listening on [^\s:]+:(\d+)").group(1)
        # A restarted referee takes the same port, so bots and organisers find it again.
        host_part = self.listen.rsplit(":", 1)[0]
        ref.argv[ref.argv.index(self.listen)] = f"{host_part}:{port}"
        host = self.listen.rsplit(":", 1)[0]
        self.address = f"{'127.0.0.1' if host in ('0.0.0.0', '[::]') else host}:{port}"
        self._note_metrics(ref, "referee")
        for i in range(self.workers):
            w = self.spawn(f"worker-{i + 1}", ["worker", "--redis", self.redis_url,
                                               *archive, *self._metrics_flag(i + 1)], env)
            w.wait_for(r"Listening on|moonshot-matches", timeout=60)
            self._note_metrics(w, "worker")
        self.start_host(env)
        if self.web_listen is not None:
            self.start_web(self.web_listen)
        return self

    def start_host(self, env: dict[str, str]) -> None:
        """Start the host of hosted versions, where sandboxes can be built (else say why,
        once: the stack plays without it, bots submitted as code wait for a host)."""
        from hosting.sandbox import check

        if not self.archive_url:
            return
        why = check()
        if why is not None:
            self.host_note = f"hosted versions will not run on this machine: {why}"
            return
        way = ["--referee-socket", self.referee_socket] if self.referee_socket else []
        h = self.spawn("host", ["host", "--redis", self.redis_url or "", "--referee",
                                self.address, *way, "--archive", self.archive_url,
                                "--data", str(self.data_dir / "host")], env)
        h.wait_for(r"host \S+ running hosted versions", timeout=60)

    def _metrics_flag(self, offset: int) -> list[str]:
        """--metrics-listen for the part `offset` places after the referee, if asked for."""
        if self.metrics_listen is None:
            return []
        host, _, port = self.metrics_listen.rpartition(":")
        return ["--metrics-listen", f"{host}:{int(port) + offset if int(port) else 0}"]

    def _note_metrics(self, child: Child, what: str) -> None:
        """Where the part serves its metrics; started again, it takes the same port."""
        if self.metrics_listen is None:
            return
        where = child.wait_for(rf"{what} metrics listening on (\S+)").group(1)
        child.argv[child.argv.index("--metrics-listen") + 1] = where
        self.metrics[child.name] = where

    def start_web(self, listen: str) -> str:
        """`moonshot web` on `listen`, a client of the referee's public API: it gets no
        admin token, so it shows what anyone may see. Returns its http:// address."""
        env = _python_env()
        env.pop("MOONSHOT_ADMIN_TOKEN", None)
        # Not the token: the watch pass derived from it, for the watch slots kept in reserve.
        env["MOONSHOT_WATCH_PASS"] = watch_pass(self.admin_token)
        web = self.spawn("web", ["web", "--server", self.address, "--listen", listen], env)
        url = web.wait_for(r"web pages on (http://\S+)").group(1)
        # A restarted web server takes the same port, so open pages find it again.
        web.argv[web.argv.index(listen)] = f"{listen.rsplit(':', 1)[0]}:{url.rsplit(':', 1)[1]}"
        self.web_address = url
        return url

    def check(self) -> list[str]:
        """Names of children that have died."""
        return [c.name for c in self.children if c.popen.poll() is not None]

    def revive(self, max_restarts: int = MAX_RESTARTS, window_s: float = RESTART_WINDOW_S
               ) -> tuple[list[str], list[str]]:
        """Start again every part that died (Redis, the referee on its port, a worker):
        (what was restarted, what died too often to restart: more than `max_restarts`
        times in `window_s` seconds)."""
        now = time.monotonic()
        restarted: list[str] = []
        given_up: list[str] = []
        dead: list[tuple[str, object]] = []
        if self.redis is not None and self.redis.proc is not None \
                and self.redis.proc.poll() is not None:
            dead.append(("redis", self.redis))
        dead += [(c.name, c) for c in self.children if c.popen.poll() is not None]
        for name, part in dead:
            recent = [t for t in self.restarts.get(name, []) if now - t < window_s]
            if len(recent) >= max_restarts:
                given_up.append(name)
                continue
            self.restarts[name] = [*recent, now]
            if isinstance(part, RedisServer):
                part.start()
            elif isinstance(part, Child):
                fresh = start_child(part.name, part.argv, part.log, part.env)
                self.children[self.children.index(part)] = fresh
            restarted.append(name)
        return restarted, given_up

    def stop(self) -> None:
        """Stop everything: bots and workers first, then the referee, then Redis."""
        for child in reversed(self.children):
            with contextlib.suppress(Exception):
                child.stop()
        if self.redis is not None:
            self.redis.stop()
        self.unlock()

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
