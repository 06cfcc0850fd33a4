"""Separate resources for separate kinds of work, so that one kind never starves another.

A referee serves three kinds of traffic: bots (their Play streams and
registration), reads (organiser and public calls), and watchers (WatchMatch and
WatchTournament streams, which poll for a long time). Each kind has its own
`Lane`: a thread pool and a Redis client whose pool holds one connection per
thread, so a call of one kind waits only behind calls of its own kind, and no
kind can take the connections of another. The bot hub's hot path has its own
connections besides (`server/hub.py`).

Watch streams are also capped (`WatchGate`): at most `per_peer` at once from one
peer address and `total` in all; past a cap the call ends with
RESOURCE_EXHAUSTED before it holds anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import redis

from server import metrics
from store.errors import ResourceExhausted

__all__ = ["BOT_THREADS", "READ_THREADS", "WATCH_PER_PEER", "WATCH_THREADS", "WATCH_TOTAL", "Lane",
           "WatchGate", "lane", "peer_host"]

BOT_THREADS = 16
READ_THREADS = 8
WATCH_THREADS = 8
WATCH_PER_PEER = 16
WATCH_TOTAL = 512

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


@dataclass
class WatchGate:
    """Counts open watch streams per peer and in all, refusing those past the caps."""

    per_peer: int = WATCH_PER_PEER
    total: int = WATCH_TOTAL
    open: dict[str, int] = field(default_factory=dict)

    @contextlib.contextmanager
    def enter(self, peer: str) -> Iterator[None]:
        """Hold a place for one stream from `peer` (ResourceExhausted past a cap)."""
        host = peer_host(peer)
        if sum(self.open.values()) >= self.total:
            raise ResourceExhausted(f"this referee serves {self.total} watch streams at most; "
                                    "retry later")
        if self.open.get(host, 0) >= self.per_peer:
            raise ResourceExhausted(f"at most {self.per_peer} watch streams per address; close "
                                    "one first")
        self.open[host] = self.open.get(host, 0) + 1
        metrics.WATCH_STREAMS.inc()
        try:
            yield
        finally:
            metrics.WATCH_STREAMS.dec()
            self.open[host] -= 1
            if not self.open[host]:
                del self.open[host]
