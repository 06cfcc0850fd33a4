"""One cgroup per sandbox: memory, processes, CPU share and CPU time, on cgroup v1 or v2.

v2 (one unified hierarchy with the memory, pids and cpu controllers) is used when the
controllers are there; otherwise v1 (one hierarchy per controller: memory, pids, cpu,
cpuacct). Each sandbox's group is made under the group this process runs in (so the
host's own limits still hold over its sandboxes), in a `moonshot` folder:
`<own group>/moonshot/<name>`. Only root (or a user a v2 subtree was delegated to) can
write them; `problem()` says so in one line where it cannot.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Group", "problem"]

ROOT = Path(os.environ.get("MOONSHOT_CGROUP_ROOT", "/sys/fs/cgroup"))
V1 = ("memory", "pids", "cpu", "cpuacct")
V2_NEEDED = ("memory", "pids", "cpu")


def _own(controller: str) -> str:
    """This process's group in a v1 controller's hierarchy ('' for v2's, '/' at the top)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            return path
    return "/"


def _v2_mount() -> Path | None:
    """Where the unified hierarchy is mounted, when it has the controllers a sandbox needs."""
    for where in (ROOT, ROOT / "unified"):
        ctl = where / "cgroup.controllers"
        if ctl.exists() and set(V2_NEEDED) <= set(ctl.read_text().split()):
            return where
    return None


def _v1_dirs() -> dict[str, Path] | None:
    dirs = {c: ROOT / c for c in V1}
    if all((d / "cgroup.procs").exists() for d in dirs.values()):
        return dirs
    return None


def _parents() -> tuple[int, dict[str, Path]] | None:
    """(version, controller -> the parent folder of the sandboxes' groups)."""
    v2 = _v2_mount()
    if v2 is not None:
        own = _own("")
        return 2, {"": v2 / own.lstrip("/") / "moonshot"}
    v1 = _v1_dirs()
    if v1 is not None:
        return 1, {c: d / _own(c).lstrip("/") / "moonshot" for c, d in v1.items()}
    return None


def _prepare(version: int, parents: dict[str, Path]) -> None:
    for parent in parents.values():
        parent.mkdir(exist_ok=True)
    if version == 2:
        parent = parents[""]
        enable = " ".join(f"+{c}" for c in V2_NEEDED)
        # The controllers must be enabled on the way down (the own group cannot hold
        # processes and enable them: v2's "no internal processes" rule, unless at the top).
        (parent.parent / "cgroup.subtree_control").write_text(enable)
        (parent / "cgroup.subtree_control").write_text(enable)


def problem() -> str | None:
    """None when this process can make sandbox groups; else one line saying why not."""
    found = _parents()
    if found is None:
        return (f"no cgroup controllers for memory, pids and cpu under {ROOT} "
                "(mount cgroup v2 with them, or v1's memory, pids, cpu and cpuacct)")
    version, parents = found
    try:
        _prepare(version, parents)
        probe = Group.make(f"probe-{os.getpid()}", memory=64 << 20, pids=8, cores=1.0)
        probe.remove()
    except OSError as exc:
        where = next(iter(parents.values()))
        return (f"cannot make cgroups under {where} ({exc.strerror or exc}): run the host "
                "as root, or in a cgroup v2 subtree delegated to its user "
                "(systemd-run --user --scope -p Delegate=yes)")
    return None


@dataclass
class Group:
    """A sandbox's cgroup (one folder per controller on v1, one on v2)."""

    version: int
    dirs: dict[str, Path]

    @classmethod
    def make(cls, name: str, memory: int, pids: int, cores: float) -> Group:
        """Make the group with its limits: `memory` bytes (no swap beyond it), at most
        `pids` tasks, `cores` CPUs' worth of time per period."""
        found = _parents()
        if found is None:
            raise OSError("no usable cgroup hierarchy")
        version, parents = found
        _prepare(version, parents)
        dirs = {c: p / name for c, p in parents.items()}
        for d in dirs.values():
            d.mkdir(exist_ok=True)
        group = cls(version, dirs)
        period = 100_000
        quota = max(1000, int(cores * period))
        if version == 2:
            d = dirs[""]
            (d / "memory.max").write_text(str(memory))
            with contextlib.suppress(OSError):  # no swap accounting: nothing to cap
                (d / "memory.swap.max").write_text("0")
            (d / "pids.max").write_text(str(pids))
            (d / "cpu.max").write_text(f"{quota} {period}")
        else:
            mem = dirs["memory"]
            (mem / "memory.limit_in_bytes").write_text(str(memory))
            with contextlib.suppress(OSError):
                (mem / "memory.memsw.limit_in_bytes").write_text(str(memory))
            (dirs["pids"] / "pids.max").write_text(str(pids))
            (dirs["cpu"] / "cpu.cfs_period_us").write_text(str(period))
            (dirs["cpu"] / "cpu.cfs_quota_us").write_text(str(quota))
        return group

    def procs_files(self) -> list[str]:
        """The cgroup.procs files a process writes its pid to, to join the group."""
        return [str(d / "cgroup.procs") for d in self.dirs.values()]

    def _read(self, controller: str, name: str) -> str:
        try:
            return (self.dirs[controller] / name).read_text()
        except OSError:
            return ""

    def _c(self, v1: str) -> str:
        return "" if self.version == 2 else v1

    def _field(self, controller: str, name: str, key: str) -> int:
        for line in self._read(controller, name).splitlines():
            k, _, v = line.partition(" ")
            if k == key and v.strip().isdigit():
                return int(v)
        return 0

    def oom_kills(self) -> int:
        """Processes the kernel killed for the group's memory limit."""
        if self.version == 2:
            return self._field("", "memory.events", "oom_kill")
        return self._field("memory", "memory.oom_control", "oom_kill")

    def pids_refused(self) -> int:
        """Forks refused at the group's pids limit."""
        return self._field(self._c("pids"), "pids.events", "max")

    def cpu_seconds(self) -> float:
        """CPU time spent by every process the group held."""
        if self.version == 2:
            return self._field("", "cpu.stat", "usage_usec") / 1e6
        text = self._read("cpuacct", "cpuacct.usage").strip()
        return int(text) / 1e9 if text.isdigit() else 0.0

    def memory_bytes(self) -> int:
        """Memory in use now (tmpfs pages written by the sandbox included)."""
        name = "memory.current" if self.version == 2 else "memory.usage_in_bytes"
        text = self._read(self._c("memory"), name).strip()
        return int(text) if text.isdigit() else 0

    def memory_peak(self) -> int:
        """The most memory it used."""
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        text = self._read(self._c("memory"), name).strip()
        return int(text) if text.isdigit() else self.memory_bytes()

    def pids(self) -> list[int]:
        """The processes in the group now."""
        text = self._read(self._c("pids"), "cgroup.procs")
        return [int(p) for p in text.split() if p.isdigit()]

    def kill(self) -> None:
        """SIGKILL every process of the group (v2: cgroup.kill, at once)."""
        if self.version == 2:
            with contextlib.suppress(OSError):
                (self.dirs[""] / "cgroup.kill").write_text("1")
                return
        for _ in range(20):  # a fork bomb forks while we kill: go round until empty
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        """Remove the group's folders once its processes are gone (waits up to 2 s)."""
        end = time.monotonic() + 2.0
        for d in self.dirs.values():
            while True:
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > end:
                        break
                    self.kill()
                    time.sleep(0.02)
