"""A hosted version's sandbox: bubblewrap namespaces and mounts, seccomp, a cgroup, rlimits.

What the bot inside gets:

- its version's folder read-only at /bot (its working directory), a private tmpfs of
  `limits.scratch_mb` at /tmp (HOME and TMPDIR), a minimal /dev, a /proc of its own
  pid namespace, and its runtime's read-only folders (hosting.runtimes); the root is
  an empty tmpfs remounted read-only. None of the host's /etc, /proc, /sys, data
  folders, repository or other versions. Every mount dies with the sandbox, so nothing
  it writes survives it.
- no network: its own network namespace (loopback only) and a seccomp filter that
  refuses every socket family but AF_UNIX. Its one way out is the relay socket at
  /run/moonshot/referee.sock (`MOONSHOT_REFEREE=unix:///run/moonshot/referee.sock`),
  which the host forwards to the referee's gRPC address and nowhere else.
- its own unprivileged uid/gid (200000 + a slot, from a pool locked across processes),
  no capabilities, no_new_privs, no new user namespaces (`--disable-userns`), a new
  session (no terminal to push input into), and its own pid, ipc, uts and cgroup
  namespaces: it sees no other process and can signal none.
- limits: a cgroup (v1 or v2, hosting.cgroups) caps memory (an OOM kill ends the
  sandbox: "killed: memory limit 512 MB exceeded"), tasks (pids.max; a refused fork
  ends it: "killed: more than 64 processes") and CPU share (a quota of `cpu_cores`);
  RLIMIT_CPU (SIGXCPU, then SIGKILL) and the cgroup's CPU total cap CPU time ("killed:
  CPU time limit 3600 s"); RLIMIT_NPROC caps its uid's tasks as well.

What a host needs: Linux with user namespaces, bubblewrap >= 0.8 (`/usr/bin/bwrap`),
libseccomp2, and root (the host gives each sandbox its own uid and cgroup, then drops
to that uid before bwrap runs, so bwrap itself runs unprivileged in a user
namespace). `check()` says in one line what is missing. A non-root host is refused:
without root it could give every sandbox only its own uid and no per-sandbox cgroup
(see docs/hosting.md).

Start sandboxes from a thread that lives as long as they do (the main thread, or the
host's loop): `--die-with-parent` kills a sandbox when the thread that started it ends.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, ClassVar

from hosting import cgroups, seccomp
from hosting.relay import Relay
from hosting.runtimes import runtime
from store.hosted import Limits

__all__ = ["REFEREE_SOCKET", "Sandbox", "SandboxError", "SandboxSpec", "check"]

REFEREE_SOCKET = "/run/moonshot/referee.sock"
REFEREE_ENV = f"unix://{REFEREE_SOCKET}"
UID_BASE = 200_000
UID_SLOTS = 10_000
STATE = Path(os.environ.get("MOONSHOT_SANDBOX_STATE", "/run/moonshot-sandbox"))
LOG_CAP = 65_536  # bytes of a sandbox's output kept on the host (its tail)
EXTRA_TASKS = 2  # bwrap's own two processes (its monitor and the sandbox's init)
LAUNCHER = Path(__file__).resolve().parent / "launch.py"


class SandboxError(Exception):
    """A sandbox could not be built (the message says why)."""


@dataclass(frozen=True)
class SandboxSpec:
    """What to run and how much it may use."""

    bot_id: str
    version_dir: Path  # the extracted package (world-readable files), read-only at /bot
    runtime: str  # "python3.11" | "node" | "static"
    command: tuple[str, ...]  # e.g. ("python", "bot.py"), ("./mybot",), ("node", "bot.js")
    env: Mapping[str, str]  # e.g. MOONSHOT_TOKEN; the sandbox adds MOONSHOT_REFEREE
    limits: Limits
    work_root: Path  # host-private: this sandbox's socket and bookkeeping


def _bwrap() -> str | None:
    return shutil.which("bwrap") or ("/usr/bin/bwrap" if Path("/usr/bin/bwrap").exists()
                                     else None)


_checked: list[str | None] = []


def check() -> str | None:
    """None when sandboxes can be built here; else one line saying why not and what to do."""
    if _checked:
        return _checked[0]
    why = _check()
    _checked.append(why)
    return why


def _check() -> str | None:
    bwrap = _bwrap()
    if bwrap is None:
        return "no bubblewrap: install it (apt-get install bubblewrap)"
    out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, check=False)
    m = re.search(r"(\d+)\.(\d+)", out.stdout)
    if not m or (int(m[1]), int(m[2])) < (0, 8):
        return f"bubblewrap {out.stdout.strip() or '?'} is too old: 0.8 or newer is needed"
    why = seccomp.available()
    if why:
        return why
    if os.geteuid() != 0:
        return ("the host must run as root: it gives each sandbox its own uid and cgroup "
                "(see docs/hosting.md)")
    for knob, bad in (("/proc/sys/user/max_user_namespaces", "0"),
                      ("/proc/sys/kernel/unprivileged_userns_clone", "0"),
                      ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1")):
        with contextlib.suppress(OSError):
            if Path(knob).read_text().strip() == bad:
                return (f"user namespaces are off ({knob} = {bad}): enable them "
                        f"(sysctl {knob.removeprefix('/proc/sys/').replace('/', '.')}="
                        f"{'0' if bad == '1' else '1' if 'clone' in knob else '10000'})")
    why = cgroups.problem()
    if why:
        return why
    plan = {"cgroup_procs": [], "views": [], "rlimits": {}, "uid": UID_BASE, "keep_fds": [],
            "argv": [bwrap, "--unshare-all", "--unshare-user", "--disable-userns",
                     "--die-with-parent", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin",
                     "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                     "--proc", "/proc", "--dev", "/dev", "true"]}
    probe = subprocess.run([_python(), "-I", "-S", str(LAUNCHER), json.dumps(plan)],
                           capture_output=True, text=True, check=False, timeout=30, env={})
    if probe.returncode != 0:
        return (f"bubblewrap cannot build a sandbox here as an unprivileged uid "
                f"({probe.stderr.strip() or probe.returncode}): enable unprivileged user "
                "namespaces")
    return None


class _Slot:
    """A uid of the pool, held (an flock on its file) for a sandbox's life, so that two
    sandboxes never share a uid, even from two host processes."""

    def __init__(self) -> None:
        folder = STATE / "uids"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        start = uuid.uuid4().int % UID_SLOTS  # spread: few collisions to skip
        for i in range(UID_SLOTS):
            n = (start + i) % UID_SLOTS
            fd = os.open(folder / str(n), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.fd, self.uid = fd, UID_BASE + 1 + n
            return
        raise SandboxError("every sandbox uid is in use")

    def release(self) -> None:
        """Give the uid back."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _python() -> str:
    """The host's own interpreter (the launcher needs only its standard library)."""
    return sys.executable or "/usr/bin/python3"


class _Tail:
    """The last `cap` bytes of a stream, read by a thread (never more held)."""

    def __init__(self, stream: IO[bytes], cap: int = LOG_CAP) -> None:
        self.cap = cap
        self.buf = bytearray()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True,
                                       name="sandbox-log")
        self.thread.start()

    def _read(self, stream: IO[bytes]) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := stream.read1(65536):  # type: ignore[attr-defined]
                self.add(chunk)

    def add(self, data: bytes) -> None:
        """Append, dropping the oldest bytes beyond the cap."""
        with self.lock:
            self.buf += data
            if len(self.buf) > self.cap:
                del self.buf[:len(self.buf) - self.cap]

    def text(self, most: int) -> str:
        """The last `most` characters (about) of what it read."""
        with self.lock:
            return bytes(self.buf[-most:]).decode(errors="replace")


class _Monitor:
    """One thread for all sandboxes of the process: ends those over a limit."""

    lock: ClassVar[threading.Lock] = threading.Lock()
    live: ClassVar[set[Sandbox]] = set()
    thread: ClassVar[threading.Thread | None] = None
    EVERY_S: ClassVar[float] = 0.1

    @classmethod
    def add(cls, sb: Sandbox) -> None:
        with cls.lock:
            cls.live.add(sb)
            if cls.thread is None or not cls.thread.is_alive():
                cls.thread = threading.Thread(target=cls._run, daemon=True,
                                              name="sandbox-monitor")
                cls.thread.start()

    @classmethod
    def _run(cls) -> None:
        while True:
            time.sleep(cls.EVERY_S)
            with cls.lock:
                live = list(cls.live)
            for sb in live:
                with contextlib.suppress(Exception):
                    sb._watch()


class Sandbox:
    """A running sandbox (start one with `Sandbox.start`)."""

    pid: int  # bwrap's pid on the host

    def __init__(self, spec: SandboxSpec, referee: str, direct: bool = False) -> None:
        self.spec = spec
        self.referee = referee
        self.direct = direct
        self._reason = ""
        self._done = False
        self._lock = threading.Lock()
        self._cpu = 0.0
        self._mem = 0
        self._slot: _Slot | None = None
        self._relay: Relay | None = None
        self._group: cgroups.Group | None = None
        self._popen: subprocess.Popen[bytes] | None = None
        self._tail: _Tail | None = None
        self._views: list[tuple[str, str]] = []
        self._views_dir: Path | None = None

    # ------------------------------------------------------------------ start

    @classmethod
    def start(cls, spec: SandboxSpec, referee: str, direct: bool = False) -> Sandbox:
        """Build the sandbox and start the spec's command in it; SandboxError when it
        cannot be built (`check()` names what the host lacks).

        With `direct`, `referee` is `unix:/path`, the referee's own unix socket on this
        machine (`moonshot referee --listen-unix`), bound into the sandbox as its way out
        instead of a relay: one hop less a message, the same single destination."""
        why = check()
        if why:
            raise SandboxError(why)
        if direct and not referee.startswith("unix:"):
            raise SandboxError(f"a direct referee is a unix socket, got {referee!r}")
        sb = cls(spec, referee, direct)
        try:
            sb._start()
        except BaseException:
            sb._cleanup()
            raise
        _Monitor.add(sb)
        return sb

    def _start(self) -> None:
        spec = self.spec
        rt = runtime(spec.runtime)
        if not spec.command:
            raise SandboxError("the manifest's command is empty")
        work = spec.work_root
        work.mkdir(parents=True, exist_ok=True)
        os.chmod(work, 0o700)
        self._slot = _Slot()
        uid = self._slot.uid
        views = self._views_dir = STATE / "views" / str(uid)
        shutil.rmtree(views, ignore_errors=True)
        views.mkdir(parents=True)
        for d in (STATE, STATE / "views", views):
            os.chmod(d, 0o711 if d != views else 0o755)
        # A host path reaches the sandbox through a "view": an empty mount point under
        # STATE/views/<uid>, onto which the launcher (still root, in a private mount namespace of
        # its own) binds the source, so bwrap, running as the sandbox's uid, can bind it
        # without the uid being able to walk the host path (/root/..., a private work
        # folder). The host's own mount table never changes.
        if self.direct:
            sock = Path(self.referee.removeprefix("unix:").removeprefix("//"))
        else:
            sock = work / "referee.sock"
            self._relay = Relay(sock, self.referee, owner=uid)
        binds: list[tuple[Path, str, bool]] = [(spec.version_dir.resolve(), "/bot", True),
                                               (sock, REFEREE_SOCKET, True)]
        binds += [(src, dest, True) for src, dest in rt.binds]
        args = ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
                "--new-session", "--cap-drop", "ALL", "--hostname", "sandbox"]
        for i, (src, dest, _ro) in enumerate(binds):
            if not src.exists():
                raise SandboxError(f"{src} does not exist")
            point = views / str(i)
            if src.is_dir():
                point.mkdir(mode=0o755)
            else:
                point.touch(mode=0o644)
            self._views.append((str(src), str(point)))
            args += ["--ro-bind", str(point), dest]
        for dest, target in rt.links:
            args += ["--symlink", target, dest]
        for folder in rt.dirs:
            args += ["--dir", folder]
        scratch = spec.limits.scratch_mb << 20
        args += ["--size", str(scratch), "--tmpfs", "/tmp",
                 "--dev", "/dev", "--size", str(scratch), "--tmpfs", "/dev/shm",
                 "--proc", "/proc", "--remount-ro", "/", "--chdir", "/bot", "--clearenv"]
        env = {"HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8", **dict(rt.env),
               **dict(spec.env), "MOONSHOT_REFEREE": REFEREE_ENV}
        for k, v in env.items():
            args += ["--setenv", k, v]
        seccomp_fd = seccomp.memfd()
        args_fd = os.memfd_create("moonshot-bwrap-args", 0)
        try:
            args += ["--seccomp", str(seccomp_fd)]
            # Through a descriptor, not argv: the token would show in `ps` on the host.
            os.write(args_fd, b"".join(a.encode() + b"\0" for a in args))
            os.lseek(args_fd, 0, os.SEEK_SET)
            limits = spec.limits
            self._group = cgroups.Group.make(
                f"{re.sub(r'[^A-Za-z0-9_.-]', '_', spec.bot_id)[:48]}-{uid}",
                memory=limits.memory_mb << 20, pids=limits.pids + EXTRA_TASKS,
                cores=float(limits.cpu_cores))
            bwrap = _bwrap()
            assert bwrap is not None
            tasks = limits.pids + EXTRA_TASKS
            plan = {
                "cgroup_procs": self._group.procs_files(),
                "views": self._views,
                # RLIMIT_NPROC a little above pids.max: the cgroup refuses first (and says
                # so, which ends the sandbox with its reason); the rlimit is a backstop.
                "rlimits": {"RLIMIT_CPU": (limits.cpu_s, limits.cpu_s + 1),
                            "RLIMIT_NPROC": (tasks + 8, tasks + 8),
                            "RLIMIT_CORE": (0, 0), "RLIMIT_NOFILE": (1024, 1024)},
                "uid": uid, "keep_fds": [seccomp_fd, args_fd],
                "argv": [bwrap, "--args", str(args_fd), "--", *spec.command],
            }
            self._popen = subprocess.Popen(
                [_python(), "-I", "-S", str(LAUNCHER), json.dumps(plan)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                pass_fds=(seccomp_fd, args_fd), cwd="/", start_new_session=True, env={})
        finally:
            os.close(seccomp_fd)
            os.close(args_fd)
        self.pid = self._popen.pid
        assert self._popen.stdout is not None
        self._tail = _Tail(self._popen.stdout)

    # ----------------------------------------------------------- watching

    def _watch(self) -> None:
        """Called by the monitor: end the sandbox at a limit, or finish it once it exited."""
        if self._done:
            return
        group = self._group
        limits = self.spec.limits
        if group is not None:
            self._cpu = max(self._cpu, group.cpu_seconds())
            self._mem = group.memory_bytes()
            if group.oom_kills():
                self.stop(f"killed: memory limit {limits.memory_mb} MB exceeded")
                return
            if group.pids_refused():
                self.stop(f"killed: more than {limits.pids} processes")
                return
            if self._cpu >= limits.cpu_s:
                self.stop(f"killed: CPU time limit {limits.cpu_s} s")
                return
        if self._popen is not None and self._popen.poll() is not None:
            self._finish()

    def poll(self) -> int | None:
        """The exit status (bwrap's: the command's, 128 + N for signal N), None while it runs."""
        assert self._popen is not None
        rc = self._popen.poll()
        if rc is not None:
            self._finish()
        return rc

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait for it to end (up to `timeout` s); its exit status, or None if still running."""
        assert self._popen is not None
        try:
            rc = self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self._finish()
        return rc

    def stop(self, reason: str = "stopped") -> None:
        """Kill every process of the sandbox and clean up after it (idempotent)."""
        with self._lock:
            if not self._reason and (self._popen is None or self._popen.poll() is None):
                self._reason = reason
        if self._group is not None:
            self._group.kill()
        if self._popen is not None:
            with contextlib.suppress(ProcessLookupError):
                self._popen.kill()
            self._popen.wait()
        self._finish()

    def _finish(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
        group = self._group
        limits = self.spec.limits
        if group is not None:
            self._cpu = max(self._cpu, group.cpu_seconds())
            if not self._reason and group.oom_kills():
                self._reason = f"killed: memory limit {limits.memory_mb} MB exceeded"
            elif not self._reason and group.pids_refused():
                self._reason = f"killed: more than {limits.pids} processes"
        if self._tail is not None:
            self._tail.thread.join(2)
            self._tail.add(f"\n[moonshot sandbox] {self.end_reason()}\n".encode())
        self._cleanup()
        with _Monitor.lock:
            _Monitor.live.discard(self)

    def _cleanup(self) -> None:
        if self._group is not None:
            self._group.kill()
            self._group.remove()
        if self._relay is not None:
            self._relay.close()
        if self._slot is not None:
            self._slot.release()
        if self._views_dir is not None:
            shutil.rmtree(self._views_dir, ignore_errors=True)

    # ------------------------------------------------------------ reading

    def end_reason(self) -> str:
        """Why it ended, in words ("running" while it runs)."""
        if self._reason:
            return self._reason
        rc = self._popen.poll() if self._popen is not None else None
        if rc is None:
            return "running"
        limits = self.spec.limits
        sig = rc - 128 if rc > 128 else 0
        if sig in (signal.SIGXCPU, signal.SIGKILL) and self._cpu >= limits.cpu_s - 0.5:
            return f"killed: CPU time limit {limits.cpu_s} s"
        if sig == signal.SIGXCPU:
            return f"killed: CPU time limit {limits.cpu_s} s"
        if 0 < sig < 65:
            return f"killed by signal {signal.Signals(sig).name}"
        return f"exited with status {rc}"

    def stderr_tail(self, most: int = 16384) -> str:
        """The tail of what it printed (stdout and stderr), with the end reason last."""
        return self._tail.text(most) if self._tail is not None else ""

    def cpu_seconds(self) -> float:
        """CPU time its processes spent so far."""
        if not self._done and self._group is not None:
            self._cpu = max(self._cpu, self._group.cpu_seconds())
        return self._cpu

    def memory_bytes(self) -> int:
        """Memory it uses now (its last figure once ended)."""
        if not self._done and self._group is not None:
            self._mem = self._group.memory_bytes()
        return self._mem
