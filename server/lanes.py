"""Separate resources for separate kinds of work, so that one kind never starves another.

A referee serves three kinds of traffic: bots (their Play streams and
registration), reads (organiser and public calls), and watchers (WatchMatch and
WatchTournament streams, which poll for a long time). Each kind has its own
`Lane`: a thread pool and a Redis client whose pool holds one connection per
thread, so a call of one kind waits only behind calls of its own kind, and no
kind can take the connections of another. The bot hub's hot path has its own
connections besides (`server/hub.py`).

Watch streams are also capped (`WatchGate`): at most `per_peer` at once from one
peer address, `per_range` from one address range (an IPv4 /24, an IPv6 /56: a
client that holds many addresses usually holds them in one range) and `total` in
all, of which `reserve` are kept for trusted watchers (the stack's web servers,
which carry the watch pass, and organisers); past a cap the call ends with
RESOURCE_EXHAUSTED before it holds anything. So no single client, nor a handful
of addresses, can take the slots that the web pages' live updates need.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import redis

from server import metrics
from store.errors import ResourceExhausted

__all__ = ["BOT_THREADS", "READ_THREADS", "WATCH_PER_PEER", "WATCH_PER_RANGE", "WATCH_RESERVE",
           "WATCH_THREADS", "WATCH_TOTAL", "Lane", "WatchGate", "lane", "peer_host", "peer_range"]

BOT_THREADS = 16
READ_THREADS = 8
WATCH_THREADS = 8
WATCH_PER_PEER = 16
WATCH_PER_RANGE = 64
WATCH_TOTAL = 512
WATCH_RESERVE = 64  # of WATCH_TOTAL: only for trusted watchers (watch pass, admin token)

T = TypeVar("T")


@dataclass
class Lane:
    """A thread pool and the Redis client its calls use."""

    name: str
    r: redis.Redis
    pool: ThreadPoolExecutor

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(r, *args)` on this lane's threads."""
        call = functools.partial(fn, self.r, *args)
        return await asyncio.get_running_loop().run_in_executor(self.pool, call)

    def close(self) -> None:
        """Stop the threads and close the connections."""
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.r.close()


def lane(name: str, url: str, threads: int) -> Lane:
    """A lane of `threads` threads over as many Redis connections (str replies)."""
    pool = redis.BlockingConnectionPool.from_url(url, max_connections=threads, timeout=20,
                                                 decode_responses=True)
    return Lane(name, redis.Redis(connection_pool=pool),
                ThreadPoolExecutor(threads, thread_name_prefix=f"lane-{name}"))


def peer_host(peer: str) -> str:
    """The address part of a gRPC peer string (`ipv4:1.2.3.4:5678` -> `1.2.3.4`)."""
    kind, _, rest = peer.partition(":")
    if kind in ("ipv4", "ipv6"):
        host = rest.rpartition(":")[0]
        return host.strip("[]") or rest
    return peer


def peer_range(host: str) -> str:
    """The address range a host is counted in: its IPv4 /24 or IPv6 /56 (an IPv4 address
    mapped into IPv6 counts as IPv4); anything else (a Unix socket) is its own range."""
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    bits = 24 if addr.version == 4 else 56
    return str(ipaddress.ip_network(f"{addr}/{bits}", strict=False))


@dataclass
class WatchGate:
    """Counts open watch streams per peer, per address range and in all, refusing those
    past the caps; trusted watchers skip the per-client caps and may use the reserve."""

    per_peer: int = WATCH_PER_PEER
    per_range: int = WATCH_PER_RANGE
    total: int = WATCH_TOTAL
    reserve: int = WATCH_RESERVE
    open: dict[str, int] = field(default_factory=dict)  # untrusted streams per host
    ranges: dict[str, int] = field(default_factory=dict)  # ... per address range
    trusted: int = 0  # streams of trusted watchers

    @property
    def untrusted(self) -> int:
        """Streams open without trust."""
        return sum(self.open.values())

    @contextlib.contextmanager
    def enter(self, peer: str, trusted: bool = False) -> Iterator[None]:
        """Hold a place for one stream from `peer` (ResourceExhausted past a cap)."""
        if self.untrusted + self.trusted >= self.total:
            raise ResourceExhausted(f"this referee serves {self.total} watch streams at most; "
                                    "retry later")
        if trusted:
            self.trusted += 1
            metrics.WATCH_STREAMS.inc()
            try:
                yield
            finally:
                metrics.WATCH_STREAMS.dec()
                self.trusted -= 1
            return
        host = peer_host(peer)
        net = peer_range(host)
        if self.untrusted >= self.total - self.reserve:
            raise ResourceExhausted(f"this referee serves {self.total - self.reserve} public "
                                    "watch streams at most; retry later")
        if self.open.get(host, 0) >= self.per_peer:
            raise ResourceExhausted(f"at most {self.per_peer} watch streams per address; close "
                                    "one first")
        if self.ranges.get(net, 0) >= self.per_range:
            raise ResourceExhausted(f"at most {self.per_range} watch streams per address range "
                                    f"({net}); close one first")
        self.open[host] = self.open.get(host, 0) + 1
        self.ranges[net] = self.ranges.get(net, 0) + 1
        metrics.WATCH_STREAMS.inc()
        try:
            yield
        finally:
            metrics.WATCH_STREAMS.dec()
            for counts, key in ((self.open, host), (self.ranges, net)):
                counts[key] -= 1
                if not counts[key]:
                    del counts[key]
