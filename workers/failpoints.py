"""Named points in the work where a fault can be injected, for the crash tests and chaos.

Some faults cannot be timed from outside: "kill -9 between a result's write and the
bookkeeping after it" is a window of microseconds. So the code names those moments
(`reached("match.after-result")`) and `MOONSHOT_FAILPOINTS` says what happens there,
a comma-separated list of `POINT[@N]=ACTION`:

- `kill`: SIGKILL this process, as a power cut would (nothing is flushed or cleaned up);
- `sleep:S`: this thread stalls S seconds, as a process frozen by its host or cut off by
  a partition would (other threads go on).

`@N` fires on the N-th time the point is reached in this process (default: the first),
once. Unset, a point costs one dict lookup. A bad setting stops the worker at start
(`check`) rather than being silently ignored.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from dataclasses import dataclass

__all__ = ["POINTS", "check", "reached"]

POINTS = {
    "match.before-send": "a decision is about to be logged and the next request sent",
    "match.after-answer": "a bot's answer was taken from the match's replies; the lease "
                          "is not checked yet",
    "match.before-result": "a match's last action is decided; its result is not stored "
                           "(nor its end sent to the bots) yet",
    "match.after-result": "a match's result is stored; its bookkeeping is not done yet",
    "step.before-save": "a scheduling step released its boards, emitted its events and "
                        "dealt its new games (claimed the deals), but has not saved its "
                        "state (nothing it decided exists yet)",
    "step.before-end": "a scheduling step that ends its event is about to save (the status "
                       "and the end event are written together by that save)",
    "step.after-save": "a scheduling step saved its state; the games it decided are not "
                       "created yet",
    "fit.before-save": "a rating fit is computed; its tables are not stored yet",
    "archive.before-drop": "an archiving batch (or an ended event) is committed to the "
                           "archive; Redis has not dropped it yet",
}

ENV = "MOONSHOT_FAILPOINTS"


@dataclass
class _Fault:
    at: int  # fire on this hit
    action: str  # "kill" or "sleep"
    seconds: float = 0.0
    hits: int = 0


def _parse(text: str) -> dict[str, _Fault]:
    faults: dict[str, _Fault] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        where, eq, action = item.partition("=")
        name, _, nth = where.partition("@")
        if not eq or name not in POINTS:
            raise ValueError(f"{ENV}: {item!r} is not POINT[@N]=kill|sleep:S; points: "
                             f"{', '.join(sorted(POINTS))}")
        try:
            at = int(nth) if nth else 1
            seconds = float(action.removeprefix("sleep:")) if action.startswith("sleep:") \
                else 0.0
        except ValueError:
            raise ValueError(f"{ENV}: {item!r}: N and S must be numbers") from None
        if at < 1 or (action != "kill" and not action.startswith("sleep:")) or seconds < 0:
            raise ValueError(f"{ENV}: {item!r} is not POINT[@N]=kill|sleep:S (N >= 1)")
        faults[name] = _Fault(at, "kill" if action == "kill" else "sleep", seconds)
    return faults


_lock = threading.Lock()
_faults: dict[str, _Fault] | None = None


def _armed() -> dict[str, _Fault]:
    global _faults
    if _faults is None:
        _faults = _parse(os.environ.get(ENV, ""))
    return _faults


def check() -> None:
    """Raise ValueError now if MOONSHOT_FAILPOINTS is malformed."""
    _armed()


def reached(name: str) -> None:
    """The work is at point `name`: inject its fault if one is armed and due."""
    fault = _armed().get(name)
    if fault is None:
        return
    with _lock:
        fault.hits += 1
        due = fault.hits == fault.at
    if not due:
        return
    print(f"failpoint {name}: {fault.action} (pid {os.getpid()})", file=sys.stderr, flush=True)
    if fault.action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(fault.seconds)
