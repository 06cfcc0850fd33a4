"""The sandbox's launcher: the few steps taken as root between the host and bwrap.

    python -I -S hosting/launch.py PLAN_JSON  (then it is bwrap, as the sandbox's uid)

It joins the sandbox's cgroup, binds each host path the sandbox gets onto its "view"
(an empty mount point under the host's state folder) in a private mount namespace of
its own (so the host's mount table never changes and bwrap, unprivileged, can bind
paths its uid could not walk to, like /root/.pyenv/...), sets the rlimits, drops to
the sandbox's uid and gid with no supplementary groups, and execs bwrap.

A process of its own rather than a `preexec_fn`: the host imports grpc, whose fork
handlers abort a child forked from Python. It imports nothing of the project and runs
with -I -S, so it starts in a few milliseconds.
"""

import ctypes
import json
import os
import resource
import sys

_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18
_CLONE_NEWNS = 0x00020000


def _ok(libc: ctypes.CDLL, rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def main(plan: dict) -> None:  # type: ignore[type-arg]
    """Do the plan's steps, then exec its argv."""
    libc = ctypes.CDLL(None, use_errno=True)
    for path in plan["cgroup_procs"]:
        with open(path, "w") as fh:
            fh.write(str(os.getpid()))
    _ok(libc, libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _ok(libc, libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None),
        "mount --make-rprivate /")
    for src, point in plan["views"]:
        _ok(libc, libc.mount(src.encode(), point.encode(), None, _MS_BIND | _MS_REC, None),
            f"mount --rbind {src} {point}")
    for name, (soft, hard) in plan["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (soft, hard))
    uid = plan["uid"]
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    fds = plan["keep_fds"]
    for fd in fds:
        os.set_inheritable(fd, True)
    os.execve(plan["argv"][0], plan["argv"], {})


if __name__ == "__main__":
    try:
        main(json.loads(sys.argv[1]))
    except Exception as exc:
        print(f"moonshot sandbox launcher: {exc}", file=sys.stderr, flush=True)
        sys.exit(125)
