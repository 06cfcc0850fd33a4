"""Structured logs: one JSON object a line, carrying the ids of what each line is about.

`setup(level, json_lines)` configures the root logger of a process (a referee, a
worker). With `json_lines` every record goes to stderr as one JSON object:
`ts` (UTC, ISO 8601, ms), `level`, `logger`, `msg`, then the ids known for it
(`match_id`, `bot_id`, `bot_ids`, `tournament_id`) and any other `extra=`
fields; a traceback travels inside the object (`exc`), never on lines of its
own. Without it, the usual one-line text format.

The ids come from the record's `extra=`, or else from the current context
(`context(match_id=...)`). The context is a contextvar, so each thread of a
worker (one match each) and each asyncio task of a referee sees its own.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from types import MappingProxyType, TracebackType
from typing import Any

__all__ = ["ENV", "JsonFormatter", "bind", "context", "current", "setup", "wanted"]

ENV = "MOONSHOT_LOG_JSON"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_FIELDS: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "moonshot_log_fields", default=MappingProxyType({}))  # each change sets a new mapping
# What every LogRecord has of its own: anything else on a record came through `extra=`.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "taskName"}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # RQ colours some messages when stdout is a terminal


def current() -> dict[str, Any]:
    """The fields of the current context."""
    return dict(_FIELDS.get())


@contextlib.contextmanager
def context(**fields: Any) -> Iterator[None]:
    """Add `fields` (match_id=..., bot_id=...) to every record logged inside the block;
    on leaving it the context is as before, including whatever `bind` added inside."""
    token = _FIELDS.set({**_FIELDS.get(), **fields})
    try:
        yield
    finally:
        _FIELDS.reset(token)


def bind(**fields: Any) -> None:
    """Add `fields` to the current context (meant inside a `context` block, which
    undoes it; outside one it lasts for the thread or task)."""
    _FIELDS.set({**_FIELDS.get(), **fields})


def _iso(created: float) -> str:
    return datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON (see the module doc)."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as a JSON object on one line."""
        msg = record.getMessage()
        if "\x1b" in msg:
            msg = _ANSI.sub("", msg)
        out: dict[str, Any] = {"ts": _iso(record.created), "level": record.levelname,
                               "logger": record.name, "msg": msg}
        out.update(_FIELDS.get())
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, default=str, separators=(",", ":"))


def wanted(flag: bool) -> bool:
    """JSON logs asked for: by the flag, or by $MOONSHOT_LOG_JSON (1, true, yes)."""
    return flag or os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes")


def setup(level: int = logging.INFO, json_lines: bool = False) -> None:
    """Send every record of the process to stderr, as JSON lines or as text.

    With JSON, warnings and uncaught exceptions (of any thread) become records too,
    so that nothing else reaches stderr as free text.
    """
    handler = logging.StreamHandler(sys.stderr)
    if not json_lines:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    else:
        handler.setFormatter(JsonFormatter())
        logging.captureWarnings(True)
        sys.excepthook = _uncaught
        threading.excepthook = _uncaught_in_thread
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)


def _uncaught(kind: type[BaseException], exc: BaseException,
              tb: TracebackType | None) -> None:
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, exc, tb)
        return
    logging.getLogger("moonshot").critical("uncaught exception", exc_info=(kind, exc, tb))


def _uncaught_in_thread(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:  # as the default hook: a thread's exit is no error
        return
    name = args.thread.name if args.thread is not None else "?"
    exc = args.exc_value if args.exc_value is not None else args.exc_type()
    logging.getLogger("moonshot").critical("uncaught exception in thread %s", name,
                                           exc_info=(args.exc_type, exc, args.exc_traceback))
