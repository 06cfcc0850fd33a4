"""Helpers shared by the end-to-end tests: polling, Redis peeks, match checks."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import redis

from clients.admin import Admin
from moon import GameState, Rules
from moon.transcript import actions_of, replay
from proto.moon.v1 import match_pb2
from store import keys

T = TypeVar("T")


def wait_until(what: str, probe: Callable[[], T | None], timeout: float = 30.0,
               every: float = 0.05) -> T:
    """Poll `probe` until it returns something truthy; TimeoutError naming `what` otherwise."""
    end = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > end:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)


def finished(admin: Admin, match_id: str, timeout: float = 60.0) -> match_pb2.Match:
    """Wait for the match to finish; fail with its error if it failed."""
    m = admin.wait_match(match_id, timeout=timeout, poll=0.05)
    assert m.status == match_pb2.MATCH_STATUS_FINISHED, f"match {match_id} failed: {m.error}"
    return m


def transcript_of(m: match_pb2.Match) -> dict[str, Any]:
    """The match's transcript, checked to replay under the engine."""
    assert m.transcript_json, f"match {m.match_id} has no transcript"
    record: dict[str, Any] = json.loads(m.transcript_json)
    replay(record)  # raises if any deal, trick, point or score disagrees
    return record


def match_log(r: redis.Redis, match_id: str) -> list[dict[str, Any]]:
    """The match's action log as stored."""
    return [json.loads(e) for e in r.lrange(keys.match_log(match_id), 0, -1)]  # type: ignore[union-attr]


def pending_ids(r: redis.Redis, bot_id: str) -> set[str]:
    """Request ids pending for a bot."""
    return set(r.hkeys(keys.pending(bot_id)))  # type: ignore[arg-type]


def check_stored(r: redis.Redis, m: match_pb2.Match, record: dict[str, Any]) -> None:
    """What a finished match leaves in Redis: the result once, a log of exactly the actions
    played (each once, in order), no lease, nothing pending for its bots."""
    stored = json.loads(r.get(keys.result(m.match_id)))  # type: ignore[arg-type]
    assert stored["transcript"] == record
    actions = actions_of(record)
    log = match_log(r, m.match_id)
    moves = [e for e in log if "action" in e]
    assert [e["seq"] for e in moves] == list(range(len(actions)))
    assert [e["action"] for e in moves] == actions
    assert len(log) - len(moves) == (1 if record.get("end") == "forfeit" else 0)
    # The run drops the lease just after marking the match finished.
    wait_until("the lease dropped", lambda: not r.exists(keys.lease(m.match_id)), timeout=5)
    for bot_id in set(m.bot_ids):
        stale = {rid for rid in pending_ids(r, bot_id) if rid.startswith(m.match_id + "/")}
        assert not stale, f"requests of the finished match still pending: {stale}"


def state_at(record: dict[str, Any], seq: int) -> GameState:
    """The game of a transcript after its first `seq` actions."""
    st = GameState.new(Rules.make(record["players"], record["rules"]), record["seed"])
    for aid in actions_of(record)[:seq]:
        st.apply_id(aid)
    return st


class SourceProxy:
    """A TCP forwarder that connects to `target` from the loopback address `source`, so a
    test can be a client that holds many addresses (every 127.x.y.z is this machine)."""

    def __init__(self, target: str, source: str) -> None:
        host, _, port = target.rpartition(":")
        self.target = (host, int(port))
        self.source = source
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.sockets: list[socket.socket] = [self.listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.socket()
            upstream.bind((self.source, 0))
            upstream.connect(self.target)
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        """Stop forwarding and close every connection."""
        for s in self.sockets:
            with contextlib.suppress(OSError):
                s.close()


@dataclass(frozen=True)
class PoolBot:
    """A registered bot whose process is running (the session's pool, tests/net/conftest.py).
    Here, not in the conftest: tests/hosting has a conftest too, and `from conftest import`
    finds whichever was imported first."""

    bot_id: str
    name: str
    token: str
