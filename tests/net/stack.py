"""Real processes for end-to-end tests: Redis, referees, workers and bots.

Everything here is the real thing, started the way a user starts it (the
`moonshot` command), on free ports, and torn down after the tests.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOTS_DIR = Path(__file__).resolve().parent  # test bots import as `netbots:ClassName`


def env(**extra: str) -> dict[str, str]:
    """The environment for child processes: the repo and the test bots importable."""
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(BOTS_DIR), e.get("PYTHONPATH", "")])
    e["PYTHONUNBUFFERED"] = "1"
    e.update(extra)
    return e


def moonshot(*args: str) -> list[str]:
    """argv for the `moonshot` command in this interpreter."""
    return [sys.executable, "-m", "clients.cli", *args]


@dataclass
class Proc:
    """A child process with its output in a log file."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def text(self) -> str:
        """Everything the process printed so far."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_for(self, pattern: str, timeout: float = 20.0) -> re.Match[str]:
        """Wait until the output matches `pattern`; fail with the output otherwise."""
        end = time.monotonic() + timeout
        rx = re.compile(pattern)
        while True:
            m = rx.search(self.text())
            if m:
                return m
            if self.popen.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.popen.returncode}):\n{self.text()}")
            if time.monotonic() > end:
                raise TimeoutError(f"{self.name}: no {pattern!r} in:\n{self.text()}")
            time.sleep(0.05)

    def alive(self) -> bool:
        """True while running."""
        return self.popen.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        """Signal the process and wait; SIGKILL if it does not end in time."""
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        return int(self.popen.returncode)

    def kill(self) -> None:
        """SIGKILL, no grace."""
        self.stop(signal.SIGKILL)

    def kill_tree(self) -> None:
        """SIGKILL the process and every process under it (a worker's work-horse and
        scheduler too), as a machine that dies would."""
        import psutil

        try:
            parent = psutil.Process(self.popen.pid)
            parent.suspend()  # it forks no new child while we list them
            family = parent.children(recursive=True)
        except psutil.NoSuchProcess:
            family = []
        self.kill()
        for child in family:
            try:
                child.kill()
                child.wait(10)
            except psutil.NoSuchProcess:
                pass


@dataclass
class Stack:
    """Starts processes into a folder and stops them all at the end."""

    workdir: Path
    redis_url: str
    admin_token: str
    procs: list[Proc] = field(default_factory=list)
    counter: int = 0
    address: str = ""
    archive: str = ""  # the stack's archive URL ('' : none: finished games stay in Redis)

    def _archive(self) -> list[str]:
        return ["--archive", self.archive] if self.archive else []

    def start(self, name: str, argv: list[str], **extra_env: str) -> Proc:
        """Start a child process logging to `<workdir>/<name>.log`."""
        self.counter += 1
        log = self.workdir / f"{self.counter:03d}-{name}.log"
        with open(log, "wb") as fh:
            popen = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, cwd=self.workdir,
                                     env=env(MOONSHOT_ADMIN_TOKEN=self.admin_token, **extra_env))
        proc = Proc(name, popen, log)
        self.procs.append(proc)
        return proc

    def referee(self, listen: str = "127.0.0.1:0") -> tuple[Proc, str]:
        """A referee on a free port (or on `listen`); returns it and its address."""
        # Every test call comes from one address and many fail on purpose: the slowing of
        # repeated failures has its own test (test_security) on a referee of its own.
        p = self.start("referee", moonshot("referee", "--listen", listen,
                                           "--redis", self.redis_url,
                                           "--auth-free-failures", "100000",
                                           "--registrations-per-hour", "0",
                                           *self._archive()))
        port = p.wait_for(r"referee listening on 127\.0\.0\.1:(\d+)").group(1)
        self.address = self.address or f"127.0.0.1:{port}"
        return p, f"127.0.0.1:{port}"

    def worker(self, *extra: str, **extra_env: str) -> Proc:
        """An RQ worker on the project's queues (`extra`: more flags, `extra_env`: e.g.
        MOONSHOT_FAILPOINTS)."""
        p = self.start("worker", moonshot("worker", "--redis", self.redis_url,
                                          *self._archive(), *extra), **extra_env)
        p.wait_for(r"Listening on|\*\*\* Listening|moonshot-matches", timeout=30)
        return p

    def bot(self, spec: str, server: str, token: str, *extra: str, wait: bool = True) -> Proc:
        """A bot process running `spec` (random, greedy or netbots:Class).

        With `wait` it returns once the bot is connected; without, at once (`bots`
        starts several that way, to overlap their start-up).
        """
        p = self.start(f"bot-{spec.rsplit(':', maxsplit=1)[-1]}",
                       moonshot("bot", "run", "--bot", spec, "--server", server,
                                "--token", token, *extra))
        if wait:
            p.wait_for(r"connected to ", timeout=30)
        return p

    def bots(self, specs: list[tuple[str, str]], server: str = "") -> list[Proc]:
        """Start bot processes for (spec, token) pairs at once; return them once connected."""
        procs = [self.bot(spec, server or self.address, token, wait=False)
                 for spec, token in specs]
        for p in procs:
            p.wait_for(r"connected to ", timeout=30)
        return procs

    def stop_all(self) -> None:
        """Stop every process still running (bots first, then workers, then referees)."""
        for p in reversed(self.procs):
            p.stop()


class Author:
    """One user of a stack through the CLI: their own credentials file, no admin token in
    reach (`moonshot signup` fills the file; every later command reads it)."""

    def __init__(self, stack: Stack, home: Path) -> None:
        self.stack = stack
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self.env = env(MOONSHOT_CONFIG=str(home / "config" / "credentials.json"),
                       MOONSHOT_DATA=str(home / "no-data"), MOONSHOT_SERVER=stack.address)
        for var in ("MOONSHOT_ADMIN_TOKEN", "MOONSHOT_TOKEN"):
            self.env.pop(var, None)

    def run(self, *args: str, ok: bool = True, timeout: float = 300
            ) -> subprocess.CompletedProcess[str]:
        """`moonshot ARGS` as this user; asserts it succeeded unless `ok` is False."""
        res = subprocess.run(moonshot(*args), env=self.env, cwd=self.home,
                             capture_output=True, text=True, timeout=timeout, check=False)
        if ok:
            assert res.returncode == 0, (args, res.stdout, res.stderr)
        return res

    def token(self) -> str:
        """The token their credentials file holds for this stack."""
        data = json.loads((self.home / "config" / "credentials.json").read_text())
        return str(data["servers"][self.stack.address]["token"])
