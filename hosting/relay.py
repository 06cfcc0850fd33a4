"""The sandbox's only way out: a unix socket whose connections are forwarded to the referee.

A sandbox has no network (its own network namespace, loopback only, and a seccomp
filter that refuses every socket family but AF_UNIX). The host listens on a unix
socket in the sandbox's work folder, bind-mounted into it at
/run/moonshot/referee.sock, and forwards each connection's bytes, both ways and as
they are, to the referee's gRPC address (TCP `host:port`, or `unix:/path`). So the
bot reaches the referee's gRPC service and nothing else: it cannot name another
address.

All relays of a process share one asyncio loop on one daemon thread, with protocol
objects (no stream wrappers) and flow control both ways: a connection costs two
sockets and two small objects; a byte costs one extra read and write on the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from pathlib import Path

__all__ = ["MAX_CONNECTIONS", "Relay"]

MAX_CONNECTIONS = 16  # a bot needs one or two channels; more is a bot hoarding sockets
_HIGH_WATER = 1 << 20


class _Pipe(asyncio.Protocol):
    """One side of a forwarded connection: what it receives goes to its peer's transport."""

    def __init__(self, relay: Relay) -> None:
        self.relay = relay
        self.transport: asyncio.Transport | None = None
        self.peer: _Pipe | None = None
        self.pending: list[bytes] = []  # what arrived before the peer was connected

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=_HIGH_WATER)

    def data_received(self, data: bytes) -> None:
        peer = self.peer
        if peer is None or peer.transport is None:
            self.pending.append(data)
            if sum(map(len, self.pending)) > _HIGH_WATER and self.transport is not None:
                self.transport.pause_reading()
            return
        peer.transport.write(data)

    def eof_received(self) -> bool | None:
        if self.peer is not None and self.peer.transport is not None:
            with contextlib.suppress(OSError, RuntimeError):
                if self.peer.transport.can_write_eof():
                    self.peer.transport.write_eof()
                    return True  # half-closed: the other way keeps flowing
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.relay._forget(self)
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.close()

    # Flow control: a full peer buffer pauses the side that fills it.
    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()

    def pair(self, peer: _Pipe) -> None:
        """Join two sides and flush what waited."""
        self.peer, peer.peer = peer, self
        assert peer.transport is not None
        for chunk in self.pending:
            peer.transport.write(chunk)
        self.pending.clear()
        if self.transport is not None:
            self.transport.resume_reading()


class _Loop:
    """The process's relay loop, started on first use."""

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def get(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None or cls._loop.is_closed():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="moonshot-relay",
                                 daemon=True).start()
                cls._loop = loop
            return cls._loop


class Relay:
    """Listens on `path` (a unix socket) and forwards each connection to `referee`."""

    def __init__(self, path: Path, referee: str, owner: int | None = None,
                 max_connections: int = MAX_CONNECTIONS) -> None:
        self.path = path
        self.referee = referee
        self.max_connections = max_connections
        self.connections = 0  # accepted so far
        self.refused = 0  # over max_connections
        self._open: set[_Pipe] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.base_events.Server | None = None
        self._loop = _Loop.get()
        asyncio.run_coroutine_threadsafe(self._start(owner), self._loop).result(10)

    async def _start(self, owner: int | None) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        # A unix socket's path is at most 107 bytes; a deep work folder's is longer, so
        # the socket is bound through a descriptor of its folder (/proc/self/fd/N/name).
        folder = os.open(self.path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            self._server = await asyncio.get_running_loop().create_unix_server(
                lambda: _Accepted(self), f"/proc/self/fd/{folder}/{self.path.name}",
                backlog=16)
        finally:
            os.close(folder)
        # Only the sandbox's own uid may connect (its socket is bind-mounted into it alone).
        if owner is not None:
            os.chown(self.path, owner, owner)
        os.chmod(self.path, 0o600)

    async def _dial(self, inside: _Pipe) -> None:
        loop = asyncio.get_running_loop()
        outside = _Pipe(self)
        self._open.add(outside)
        try:
            if self.referee.startswith("unix:"):
                where = self.referee.removeprefix("unix:")
                where = "/" + where.lstrip("/") if where.startswith("//") else where
                await loop.create_unix_connection(lambda: outside, where)
            else:
                host, _, port = self.referee.rpartition(":")
                await loop.create_connection(lambda: outside, host.strip("[]"), int(port))
        except OSError:
            self._open.discard(outside)
            if inside.transport is not None:
                inside.transport.close()
            return
        inside.pair(outside)

    def _forget(self, pipe: _Pipe) -> None:
        self._open.discard(pipe)

    def open_connections(self) -> int:
        """Forwarded connections (pairs) open now."""
        return len(self._open) // 2

    def close(self) -> None:
        """Stop listening, drop every open connection, remove the socket."""
        async def shut() -> None:
            if self._server is not None:
                self._server.close()
            for pipe in list(self._open):
                if pipe.transport is not None:
                    pipe.transport.abort()
            self._open.clear()

        if not self._loop.is_closed():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(shut(), self._loop).result(5)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


class _Accepted(_Pipe):
    """The sandbox's side: dials the referee when it connects."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        relay = self.relay
        if len(relay._open) // 2 >= relay.max_connections:
            relay.refused += 1
            transport.close()
            return
        relay.connections += 1
        relay._open.add(self)
        assert isinstance(transport, asyncio.Transport)
        transport.pause_reading()  # until the referee's side is up
        task = asyncio.get_running_loop().create_task(relay._dial(self))
        relay._tasks.add(task)  # held until done: the loop keeps only a weak reference
        task.add_done_callback(relay._tasks.discard)
