"""Checks of command-line values, so a bad one is refused before anything starts or is sent.

Most are argparse `type=` functions: they raise argparse.ArgumentTypeError, which
`clients.cli._Parser` turns into one line naming the flag, exit code 2. The
bounds mirror what the referee checks (`workers.spec.Clock` and `Faults`,
`workers.tournament.TournamentSpec`); tests/test_cli_errors.py holds them equal.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime

from moon.deal import MAX_SEED

__all__ = [
    "GAMES",
    "GRACE_MS",
    "MAX_STRIKES",
    "MOVE_TIME_MS",
    "SEED",
    "THREADS",
    "TIME_BANK_MS",
    "WORKERS",
    "address",
    "address_problem",
    "duration_ms",
    "format_ms",
    "int_in",
    "iso_time",
    "listen_address",
    "parse_duration",
    "positive_seconds",
    "token_problem",
]

# What the referee accepts (workers/spec.py, workers/tournament.py): keep them equal.
MOVE_TIME_MS = (1, 600_000)
TIME_BANK_MS = (0, 3_600_000)
MAX_STRIKES = (1, 1000)
GRACE_MS = (0, 3_600_000)
SEED = (0, MAX_SEED)
# Client-side only.
GAMES = (1, 10**9)
THREADS = (0, 1024)
WORKERS = (1, 256)


ISO_FORMS = "2026-12-01, 2026-12-01T18:30 or 2026-12-01T18:30:00+01:00 (without an offset, UTC)"


def iso_time(text: str) -> float:
    """An argparse type: an ISO 8601 date or time as unix seconds; without an offset, UTC."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text[:60]!r} is not an ISO date or time: use a form like {ISO_FORMS}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def int_in(lo: int, hi: int, odd: bool = False) -> Callable[[str], int]:
    """An argparse type: an integer from `lo` to `hi` (and odd, if asked)."""
    what = f"an {'odd number' if odd else 'integer'} from {lo} to {hi}"

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            value = None
        if value is None or not lo <= value <= hi or (odd and value % 2 == 0):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value

    parse.__name__ = "integer"
    return parse


_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*")


def parse_duration(text: str) -> float | None:
    """`2s`, `500ms`, `1.5s`, `1m` or a bare number of seconds, in milliseconds; None if
    it is not such a form."""
    m = _DURATION.fullmatch(text)
    if not m:
        return None
    return float(m.group(1)) * {"ms": 1, "s": 1000, "m": 60000}[m.group(2) or "s"]


def format_ms(ms: int) -> str:
    """A duration in the largest unit that shows it exactly: 10m, 2s, 500ms, 0s."""
    if ms == 0:
        return "0s"
    if ms % 60000 == 0:
        return f"{ms // 60000}m"
    if ms % 1000 == 0:
        return f"{ms // 1000}s"
    return f"{ms}ms"


def duration_ms(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse type: a duration (see parse_duration) from `lo` to `hi` milliseconds,
    as whole milliseconds."""

    def parse(text: str) -> int:
        value = parse_duration(text)
        if value is None or not lo <= value <= hi or not lo <= round(value) <= hi:
            raise argparse.ArgumentTypeError(
                f"must be a duration from {format_ms(lo)} to {format_ms(hi)}, "
                f"like 500ms, 2s or 1m; got {text!r}")
        return round(value)

    parse.__name__ = "duration"
    return parse


def positive_seconds(text: str) -> float:
    """An argparse type: a number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, got {text!r}")
    return value


def seconds_at_least_0(text: str) -> float:
    """An argparse type: a number of seconds, 0 or more (at most a day)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0 <= value <= 86_400):
        raise argparse.ArgumentTypeError(f"must be a number of seconds from 0 to 86400, "
                                         f"got {text!r}")
    return value


_HOST = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?"
                   r"|\[[0-9A-Fa-f:.]+(?:%[A-Za-z0-9._-]+)?\]")
_PORT = re.compile(r"[0-9]{1,5}")


# gRPC target schemes (dns:///host:port for a load-balanced name, unix:/path, ...): passed
# to gRPC as they are, which checks them itself.
_SCHEMES = ("dns:", "unix:", "unix-abstract:", "ipv4:", "ipv6:", "vsock:")


def address_problem(text: str) -> str | None:
    """What is wrong with a referee address (HOST:PORT, or a gRPC target with a scheme
    such as dns:///host:50051 or unix:/run/moonshot.sock), or None if nothing."""
    scheme = next((p for p in _SCHEMES if text.startswith(p)), None)
    if scheme is not None:
        rest = text[len(scheme):]
        if rest.strip("/") and text.isprintable() and " " not in text:
            return None
        return f"{scheme} needs a target after it, like dns:///referee.example:50051"
    host, sep, port = text.rpartition(":")
    if sep and _HOST.fullmatch(host) and _PORT.fullmatch(port) and 1 <= int(port) <= 65535:
        return None
    return (f"must be HOST:PORT with a port from 1 to 65535 (like 127.0.0.1:50051 "
            f"or [::1]:50051) or a gRPC target (dns:///host:port, unix:/path), got {text!r}")


def address(text: str) -> str:
    """An argparse type: a HOST:PORT referee address."""
    problem = address_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def listen_address(text: str) -> str:
    """An argparse type: a HOST:PORT to listen on; port 0 picks a free one."""
    host, sep, port = text.rpartition(":")
    if sep and _HOST.fullmatch(host) and _PORT.fullmatch(port) and int(port) <= 65535:
        return text
    raise argparse.ArgumentTypeError(
        f"must be HOST:PORT with a port from 0 to 65535 (0: a free one), like "
        f"127.0.0.1:9100 or [::]:0, got {text!r}")


_TOKEN = re.compile(r"[\x21-\x7e]+")


def token_problem(token: str) -> str | None:
    """What keeps `token` out of gRPC metadata, or None: it must be printable ASCII without
    spaces. The token itself is never echoed."""
    if _TOKEN.fullmatch(token):
        return None
    if not token:
        return "is empty"
    i, ch = next((i, c) for i, c in enumerate(token) if not _TOKEN.fullmatch(c))
    return (f"contains {ch!r} at position {i + 1}: a token must be printable ASCII "
            "without spaces (it travels in gRPC metadata)")
