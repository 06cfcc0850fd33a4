"""The sandbox's seccomp filter, built with the OS's libseccomp (through ctypes).

A deny list on top of what the namespaces already take away: the calls that reach
the kernel's attack surface or other processes (ptrace, mounts, namespaces, keys,
BPF, perf, modules, io_uring, ...) fail with EPERM, `socket()` of any family but
AF_UNIX fails with EPERM (a bot speaks to the referee's relay socket and nothing
else), `clone` with a namespace flag fails with EPERM and `clone3` with ENOSYS (its
flags sit in a struct a filter cannot read; libc then falls back to `clone`). Calls
of another ABI (32-bit `int 0x80`, x32) kill the process: libseccomp's default for a
foreign architecture. bwrap loads the filter (`--seccomp FD`) after building the
sandbox, just before it runs the bot's command, with no_new_privs set.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
import socket

__all__ = ["DENIED", "available", "filter_bpf", "memfd"]

DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "unshare", "setns",
    "keyctl", "add_key", "request_key",
    "bpf", "perf_event_open", "fanotify_init",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd",
    "userfaultfd", "open_by_handle_at", "name_to_handle_at",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime",
    "iopl", "ioperm", "syslog", "vhangup", "lookup_dcookie", "nfsservctl",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "personality", "uselib", "sethostname", "setdomainname",
)

_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_CMP_NE, _CMP_MASKED_EQ = 1, 7
_CLONE_NS_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000,
                   0x20000000, 0x40000000, 0x00000080)  # NEWNS CGROUP UTS IPC USER PID NET TIME


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


@functools.cache
def _lib() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError:
        return None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(_ArgCmp)]
    lib.seccomp_rule_add_array.restype = ctypes.c_int
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_export_bpf.restype = ctypes.c_int
    return lib


def available() -> str | None:
    """None when libseccomp can be loaded; else why not."""
    if _lib() is None:
        return "libseccomp is missing: install libseccomp2 (apt-get install libseccomp2)"
    return None


def _add(lib: ctypes.CDLL, ctx: int, action: int, name: str,
         cmps: tuple[tuple[int, int, int, int], ...] = ()) -> None:
    nr = lib.seccomp_syscall_resolve_name(name.encode())
    if nr == -1:  # __NR_SCMP_ERROR: not a call libseccomp knows (an older library)
        return
    arr = (_ArgCmp * max(1, len(cmps)))(*(_ArgCmp(*c) for c in cmps))
    rc = lib.seccomp_rule_add_array(ctx, action, nr, len(cmps), arr)
    # -EOPNOTSUPP/-EDOM: a pseudo call that does not exist on this architecture.
    if rc < 0 and -rc not in (errno.EOPNOTSUPP, errno.EDOM, errno.EFAULT):
        raise OSError(-rc, f"seccomp_rule_add({name}) failed: {os.strerror(-rc)}")


@functools.cache
def filter_bpf() -> bytes:
    """The compiled filter (classic BPF, native architecture), as bwrap --seccomp reads it."""
    lib = _lib()
    if lib is None:
        raise OSError(available())
    ctx = lib.seccomp_init(_ALLOW)
    if not ctx:
        raise OSError("seccomp_init failed")
    try:
        eperm = _ERRNO | errno.EPERM
        for name in DENIED:
            _add(lib, ctx, eperm, name)
        _add(lib, ctx, eperm, "socket", ((0, _CMP_NE, socket.AF_UNIX, 0),))
        for flag in _CLONE_NS_FLAGS:
            _add(lib, ctx, eperm, "clone", ((0, _CMP_MASKED_EQ, flag, flag),))
        _add(lib, ctx, _ERRNO | errno.ENOSYS, "clone3")
        fd = os.memfd_create("moonshot-seccomp-build", 0)  # no pipe buffer to fill
        try:
            rc = lib.seccomp_export_bpf(ctx, fd)
            if rc < 0:
                raise OSError(-rc, f"seccomp_export_bpf failed: {os.strerror(-rc)}")
            size = os.lseek(fd, 0, os.SEEK_END)
            return os.pread(fd, size, 0)
        finally:
            os.close(fd)
    finally:
        lib.seccomp_release(ctx)


def memfd() -> int:
    """A fresh fd holding the filter at offset 0, for one bwrap (it reads it once)."""
    fd = os.memfd_create("moonshot-seccomp", 0)
    data = filter_bpf()
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
