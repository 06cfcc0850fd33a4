"""The hostile suite: small programs that each try one thing in a sandbox, and what they got.

Shared by tests/hosting/test_hostile.py (every attempt must fail or be stopped at its
limit) and bench/hosted_hostile.py (the table of attempts and outcomes). The Python
attempts run `hostile/hostile.py` in the python3.11 runtime; the static ones a C
program (`hostile/hostile.c`) built here with `gcc -static` in the static runtime.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from hosting.sandbox import Sandbox, SandboxSpec
from store.hosted import Limits

HERE = Path(__file__).resolve().parent / "hostile"
LIMITS = Limits(memory_mb=128, pids=32, cpu_s=20, cpu_cores=1.0, scratch_mb=4)


@dataclass(frozen=True)
class Context:
    """What the attempts aim at: the host's and the stack's real things."""

    redis_port: int
    referee: str  # host:port of the referee (the relay's target)
    host_pid: int  # a process of the host (the test's own)
    neighbour_pid: int  # another running sandbox's bwrap, on the host
    neighbour_dir: Path  # another version's folder
    data_dirs: tuple[Path, ...]  # the stack's data folders (Redis files, logs)
    repo: Path  # the repository's root (admin tokens, Redis files in a real stack)
    other_port: int  # another port of the host (not the referee's)


@dataclass(frozen=True)
class Attempt:
    """One thing a hostile program tries; `expect` is `blocked`, `allowed` (reading its own
    token) or `stop:<end reason prefix>`."""

    name: str
    runtime: str  # python3.11 | static
    args: tuple[str, ...]
    expect: str = "blocked"
    limits: Limits = field(default=LIMITS)


@dataclass(frozen=True)
class Outcome:
    """What an attempt got."""

    attempt: Attempt
    outcome: str  # blocked | allowed | stopped
    detail: str
    seconds: float
    log: str

    @property
    def as_expected(self) -> bool:
        """True when the sandbox did what it must."""
        if self.attempt.expect.startswith("stop:"):
            return self.outcome == "stopped" and self.detail.startswith(
                self.attempt.expect.removeprefix("stop:"))
        return self.outcome == self.attempt.expect


def attempts(ctx: Context) -> list[Attempt]:
    """Every attempt of the suite, aimed at `ctx`."""
    py: list[tuple[str, tuple[str, ...]]] = [
        ("connect to redis", ("connect", "127.0.0.1", str(ctx.redis_port))),
        ("connect to the referee's port directly", ("connect", *ctx.referee.split(":"))),
        ("connect to another host port", ("connect", "127.0.0.1", str(ctx.other_port))),
        ("connect to 1.1.1.1:53", ("connect", "1.1.1.1", "53")),
        ("resolve a name", ("resolve", "example.com")),
        ("open an inet6 socket", ("socket", "inet6")),
        ("open a netlink socket", ("socket", "netlink")),
        ("open a packet socket", ("socket", "packet")),
        ("read /etc/shadow", ("read", "/etc/shadow")),
        ("read /etc/passwd", ("read", "/etc/passwd")),
        ("read the host's /proc/1/environ", ("init-environ",)),
        ("read /proc/<host pid>", ("read", f"/proc/{ctx.host_pid}/environ")),
        ("read /sys", ("read", "/sys/kernel")),
        ("read another version's folder", ("read", str(ctx.neighbour_dir))),
        ("read the repository", ("read", str(ctx.repo))),
        *((f"read the stack's data folder {i}", ("read", str(d)))
          for i, d in enumerate(ctx.data_dirs)),
        ("write /bot", ("write", "/bot/x")),
        ("write /", ("write", "/x")),
        ("write /etc", ("write", "/etc/x")),
        ("write /usr", ("write", "/usr/x")),
        ("write the SDK", ("write", "/opt/moonshot/clients/x.py")),
        ("fill scratch", ("fill", str(LIMITS.scratch_mb))),
        ("kill a host process", ("kill", str(ctx.host_pid))),
        ("kill another sandbox", ("kill", str(ctx.neighbour_pid))),
        ("ptrace its own init", ("ptrace",)),
        ("unshare a user namespace", ("libc", "unshare")),
        ("mount a tmpfs", ("libc", "mount")),
        ("load a bpf map", ("libc", "bpf")),
        ("read its own token", ("own-token",)),
        ("read another sandbox's token", ("other-tokens",)),
    ]
    out = [Attempt(name, "python3.11", ("python", "hostile.py", *args),
                   "allowed" if name == "read its own token" else "blocked")
           for name, args in py]
    out += [
        Attempt("fork without end", "python3.11", ("python", "hostile.py", "fork-bomb"),
                "stop:killed: more than 16 processes", Limits(memory_mb=128, pids=16,
                                                               cpu_s=20, scratch_mb=4)),
        Attempt("allocate without end", "python3.11", ("python", "hostile.py", "hog"),
                "stop:killed: memory limit 96 MB", Limits(memory_mb=96, pids=16, cpu_s=20,
                                                         scratch_mb=4)),
        Attempt("spin a core past cpu_s", "python3.11", ("python", "hostile.py", "spin"),
                "stop:killed: CPU time limit 1 s", Limits(memory_mb=128, pids=16, cpu_s=1,
                                                         scratch_mb=4)),
    ]
    out += [Attempt(f"static: {name}", "static", ("./hostile", *args))
            for name, args in (("socket(AF_INET)", ("socket",)),
                               ("socket(AF_NETLINK)", ("netlink",)),
                               ("ptrace its own init", ("ptrace",)),
                               ("kill a host process", ("kill", str(ctx.host_pid))),
                               ("unshare a user namespace", ("unshare",)),
                               ("mount a tmpfs", ("mount",)))]
    out.append(Attempt("static: a 32-bit system call", "static", ("./hostile", "int80"),
                       "stop:killed by signal SIGSYS"))
    return out


def build(work: Path) -> dict[str, Path]:
    """The two version folders: the Python program, and the C one compiled static."""
    py = work / "version-py"
    static = work / "version-static"
    for d in (py, static):
        d.mkdir(parents=True, exist_ok=True)
        d.chmod(0o755)
    shutil.copy(HERE / "hostile.py", py / "hostile.py")
    subprocess.run(["gcc", "-static", "-O1", "-o", str(static / "hostile"),
                    str(HERE / "hostile.c")], check=True, capture_output=True)
    for f in (py / "hostile.py", static / "hostile"):
        f.chmod(0o755)
    return {"python3.11": py, "static": static}


_OUTCOME = re.compile(r"^outcome: (blocked|allowed) (.*)$", re.M)


def spec_of(attempt: Attempt, version: Path, work: Path, token: str) -> SandboxSpec:
    """The sandbox an attempt runs in."""
    slug = re.sub(r"[^a-z0-9]+", "-", attempt.name.lower()).strip("-")
    return SandboxSpec(f"hostile-{slug}", version, attempt.runtime, attempt.args,
                       {"MOONSHOT_TOKEN": token}, attempt.limits, work / slug)


def judge(attempt: Attempt, sb: Sandbox, started: float) -> Outcome:
    """What the attempt got, from its output and how its sandbox ended."""
    log = sb.stderr_tail()
    reason = sb.end_reason()
    found = _OUTCOME.findall(log)
    seconds = time.monotonic() - started
    if reason.startswith("killed"):
        return Outcome(attempt, "stopped", reason, seconds, log)
    if found:
        return Outcome(attempt, found[-1][0], found[-1][1], seconds, log)
    return Outcome(attempt, "allowed", f"no outcome printed ({reason})", seconds, log)


def run(todo: Iterable[Attempt], versions: dict[str, Path], referee: str, work: Path,
        token: str = "tok.hostile", timeout: float = 30.0, parallel: int = 8) -> list[Outcome]:
    """Run the attempts, `parallel` sandboxes at a time; their outcomes in order."""
    def one(attempt: Attempt) -> Outcome:
        started = time.monotonic()
        sb = Sandbox.start(spec_of(attempt, versions[attempt.runtime], work, token), referee)
        if sb.wait(timeout) is None:
            sb.stop(f"still running after {timeout:g} s")
        sb.stop()  # cleans up (it has ended)
        return judge(attempt, sb, started)

    with ThreadPoolExecutor(parallel) as pool:
        return list(pool.map(one, todo))


def keep_between_sandboxes(versions: dict[str, Path], referee: str, work: Path) -> Outcome:
    """A file kept in scratch (and /dev/shm) by one sandbox, looked for by the bot's next."""
    attempt = Attempt("keep a file for its next sandbox", "python3.11",
                      ("python", "hostile.py", "keep"))
    started = time.monotonic()
    first = Sandbox.start(spec_of(attempt, versions["python3.11"], work, "tok.keep"), referee)
    first.wait(30)
    first.stop()
    assert "kept /tmp/keep" in first.stderr_tail(), first.stderr_tail()
    again = Attempt(attempt.name, "python3.11", ("python", "hostile.py", "find-kept"))
    second = Sandbox.start(spec_of(again, versions["python3.11"], work, "tok.keep"), referee)
    second.wait(30)
    second.stop()
    return judge(again, second, started)
