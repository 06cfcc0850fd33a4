"""Serving a process's Prometheus metrics over HTTP, from a registry of its own.

Each process (a referee, a worker) keeps its instruments in its own
`CollectorRegistry` rather than prometheus_client's global one, so that what it
serves is exactly what it declared, plus the standard process, platform and
garbage-collector collectors. `serve` starts prometheus_client's own threaded
HTTP server (a daemon thread), which answers `/metrics` in the text format.
"""

from __future__ import annotations

from prometheus_client import (
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    start_http_server,
)
from prometheus_client.registry import CollectorRegistry

__all__ = ["parse_listen", "registry", "serve"]


def registry() -> CollectorRegistry:
    """A new registry holding the process, platform and GC collectors."""
    reg = CollectorRegistry()
    ProcessCollector(registry=reg)
    PlatformCollector(registry=reg)
    GCCollector(registry=reg)
    return reg


def parse_listen(text: str) -> tuple[str, int]:
    """HOST:PORT (port 0: any free one; `[::1]:9100` for IPv6) as (host, port);
    ValueError saying what is wrong."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"must be HOST:PORT with a port from 0 to 65535 (0: a free one), "
                         f"like 127.0.0.1:9100, got {text!r}")
    return host, int(port)


def serve(reg: CollectorRegistry, listen: str) -> tuple[str, int]:
    """Serve `reg` at http://`listen`/metrics from a daemon thread; (host, bound port).

    OSError when the address cannot be bound (in use, not of this machine).
    """
    host, port = parse_listen(listen)
    try:
        httpd, _ = start_http_server(port, host.strip("[]"), registry=reg)
    except OSError as exc:
        raise OSError(f"cannot serve metrics on {listen}: {exc.strerror or exc}") from None
    return host, int(httpd.server_port)
