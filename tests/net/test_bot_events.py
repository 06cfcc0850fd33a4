"""A bot's events are durable: one that was away when its match ended hears the end when it
reconnects, and its runner forgets the match (real Redis, referee, worker, bot processes).
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from stack import Proc, Stack
from support import wait_until

from clients.admin import Admin
from clients.redisproc import RedisServer, free_port
from clients.sdk import register
from store import keys

RULES = {"max_hands": "1"}


@pytest.fixture
def own(tmp_path: Path, admin_token: str) -> Iterator[tuple[Stack, redis.Redis]]:
    """A private Redis (nothing else consumes its queues) and a stack on it."""
    srv = RedisServer(tmp_path / "redis", appendonly=False).start()
    st = Stack(tmp_path, srv.url, admin_token=admin_token)
    try:
        yield st, redis.Redis.from_url(srv.url, decode_responses=True)
    finally:
        st.stop_all()
        srv.stop()


def test_a_bot_away_when_its_match_ends_hears_the_end_on_reconnect(
        own: tuple[Stack, redis.Redis]) -> None:
    st, r = own
    port = free_port()
    referee, address = st.referee(listen=f"127.0.0.1:{port}")
    # The worker stalls between the match's last decision and its result (with which
    # the bots are told it ended), long enough for the test to cut every bot off, not
    # so long that its lease (4 s) lapses.
    st.worker(MOONSHOT_FAILPOINTS="match.before-result=sleep:2.5")
    regs = [register(address, f"away-{i}") for i in range(3)]
    bots = st.bots([("netbots:EndAwareBot", token) for _, token in regs])
    admin = Admin(address, st.admin_token)
    try:
        mid = admin.create_match(3, [b for b, _ in regs], seed=11, rules=RULES).match_id
    finally:
        admin.close()
    worker = next(p for p in st.procs if p.name == "worker")
    worker.wait_for(r"failpoint match\.before-result: sleep", timeout=60)
    for bot in bots:
        assert f"match {mid} started" in bot.text() and f"match {mid} ended" not in bot.text()
    referee.stop(signal.SIGKILL)  # every bot loses its stream
    # The end is stored, and told to the bots, while none of them is connected.
    wait_until("the result", lambda: r.exists(keys.result(mid)), timeout=30)
    for bot_id, _ in regs:
        assert r.xlen(keys.inbox(bot_id)) == 2  # MatchStarted, MatchEnded
        assert not r.smembers(keys.bot_live(bot_id))
    assert all(f"match {mid} ended" not in bot.text() for bot in bots)
    st.referee(listen=f"127.0.0.1:{port}")  # the bots reconnect to it
    for bot in bots:
        ended = _wait_line(bot, rf"match {mid} ended: (\w+), placement \[.*\] \((\d+) in play\)")
        assert ended.group(2) == "0"  # its runner forgot the match
        bot.wait_for(r"game over: \w+ placement \[", timeout=5)  # its bot heard the result
        # After the reconnect: the bot named the events it had (MatchStarted) and got
        # only the one after, once.
        assert bot.text().count(f"match {mid} started") == 1
        assert bot.text().count(f"match {mid} ended") == 1
        assert len(re.findall(r"connected to ", bot.text())) == 2


def _wait_line(proc: Proc, pattern: str) -> re.Match[str]:
    return proc.wait_for(pattern, timeout=60)
