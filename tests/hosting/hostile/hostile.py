"""A hostile hosted bot for the sandbox's tests: `python hostile.py ATTEMPT ARGS...` tries
the one thing ATTEMPT names and prints `outcome: blocked|allowed DETAIL` (or is stopped
at a limit while trying). It uses the standard library only."""

import ctypes
import os
import socket
import sys
import time


def say(allowed: bool, detail: str) -> None:
    print(f"outcome: {'allowed' if allowed else 'blocked'} {detail}", flush=True)


def failed(exc: OSError) -> str:
    return f"{type(exc).__name__} errno {exc.errno}"


def connect(host: str, port: str) -> None:
    try:
        socket.create_connection((host, int(port)), timeout=2)
    except OSError as exc:
        say(False, f"connect {host}:{port}: {failed(exc)}")
    else:
        say(True, f"connected to {host}:{port}")


def resolve(name: str) -> None:
    try:
        found = socket.getaddrinfo(name, 80)
    except OSError as exc:
        say(False, f"resolve {name}: {failed(exc)}")
    else:
        say(True, f"resolved {name}: {found[0][4]}")


def read(path: str) -> None:
    try:
        if os.path.isdir(path):
            got = f"listed {len(os.listdir(path))} entries"
        else:
            with open(path, "rb") as fh:
                got = f"read {len(fh.read(1 << 16))} bytes"
    except OSError as exc:
        say(False, f"read {path}: {failed(exc)}")
    else:
        say(True, f"{path}: {got}")


def read_init_environ() -> None:
    """/proc/1 is the sandbox's own init: what its environment holds of the host's."""
    try:
        with open("/proc/1/environ", "rb") as fh:
            env = fh.read()
    except OSError as exc:
        say(False, f"read /proc/1/environ: {failed(exc)}")
        return
    names = sorted(e.split(b"=")[0].decode() for e in env.split(b"\0") if e)
    say(bool(names), f"/proc/1/environ names: {names}")


def write(path: str) -> None:
    try:
        with open(path, "w") as fh:
            fh.write("x")
    except OSError as exc:
        say(False, f"write {path}: {failed(exc)}")
    else:
        say(True, f"wrote {path}")


def fill(limit_mb: str) -> None:
    written = 0
    chunk = b"\1" * (1 << 20)
    try:
        with open("/tmp/fill", "wb") as fh:
            while written < 4 * int(limit_mb) << 20:
                fh.write(chunk)
                fh.flush()
                written += len(chunk)
    except OSError as exc:
        say(written > int(limit_mb) << 20, f"wrote {written >> 20} MB, then {failed(exc)}")
        return
    say(True, f"wrote {written >> 20} MB")


def fork_bomb() -> None:
    while True:
        try:
            if os.fork() == 0:
                time.sleep(60)
                os._exit(0)
        except OSError:
            time.sleep(0.001)


def hog() -> None:
    held = []
    while True:
        held.append(bytearray(b"\1") * (8 << 20))  # written: every page is charged


def spin() -> None:
    while True:
        pass


def signal_pid(pid: str) -> None:
    try:
        os.kill(int(pid), 9)
    except OSError as exc:
        say(False, f"kill {pid}: {failed(exc)}")
    else:
        say(True, f"killed {pid}")


def ptrace_init() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    rc = libc.ptrace(16, 1, None, None)  # PTRACE_ATTACH to pid 1 (same uid)
    say(rc == 0, f"ptrace(ATTACH, 1) = {rc}, errno {ctypes.get_errno()}")


def keep() -> None:
    for path in ("/tmp/keep", "/dev/shm/keep"):
        with open(path, "w") as fh:
            fh.write("remember me")
    print("kept /tmp/keep and /dev/shm/keep", flush=True)
    time.sleep(0.2)


def find_kept() -> None:
    found = [p for p in ("/tmp/keep", "/dev/shm/keep") if os.path.exists(p)]
    say(bool(found), f"kept files found: {found}")


def own_token() -> None:
    token = os.environ.get("MOONSHOT_TOKEN", "")
    say(bool(token), f"own token of {len(token)} characters")


def other_tokens() -> None:
    """Every MOONSHOT_TOKEN this sandbox can see beside its own, printed (the test checks the
    other sandbox's is not among them)."""
    own = os.environ.get("MOONSHOT_TOKEN", "")
    seen = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for what in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{what}", "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            for item in data.split(b"\0"):
                if item.startswith(b"MOONSHOT_TOKEN="):
                    seen.add(item.split(b"=", 1)[1].decode(errors="replace"))
    foreign = sorted(seen - {own})
    print(f"tokens seen: {foreign}", flush=True)
    pids = sum(p.isdigit() for p in os.listdir("/proc"))
    say(bool(foreign), f"{len(foreign)} other tokens in /proc/*/environ of {pids} processes")


def libc_call(name: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if name == "unshare":
        rc = libc.unshare(0x10000000)  # CLONE_NEWUSER
    elif name == "mount":
        rc = libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)
    else:
        rc = libc.syscall(321, 0, 0, 0)  # bpf(BPF_MAP_CREATE, NULL, 0)
    say(rc == 0, f"{name} = {rc}, errno {ctypes.get_errno()}")


def socket_family(name: str) -> None:
    family = {"inet6": socket.AF_INET6, "netlink": socket.AF_NETLINK,
              "packet": socket.AF_PACKET}[name]
    try:
        socket.socket(family, socket.SOCK_RAW if name != "inet6" else socket.SOCK_STREAM)
    except OSError as exc:
        say(False, f"socket({name}): {failed(exc)}")
    else:
        say(True, f"socket({name}) opened")


ATTEMPTS = {
    "connect": connect, "resolve": resolve, "read": read, "init-environ": read_init_environ,
    "write": write, "fill": fill, "fork-bomb": fork_bomb, "hog": hog, "spin": spin,
    "kill": signal_pid, "ptrace": ptrace_init, "keep": keep, "find-kept": find_kept,
    "own-token": own_token, "other-tokens": other_tokens, "libc": libc_call,
    "socket": socket_family,
}

if __name__ == "__main__":
    ATTEMPTS[sys.argv[1]](*sys.argv[2:])
