"""Fixtures for end-to-end tests: one real Redis, referee and worker pool per session."""

from __future__ import annotations

import secrets
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis
from stack import Stack
from support import PoolBot

from clients.admin import Admin
from clients.redisproc import RedisServer
from clients.sdk import register


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A private redis-server for the whole session."""
    srv = RedisServer(tmp_path_factory.mktemp("redis"), appendonly=False).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def admin_token() -> str:
    """The organiser token every referee of the session is started with."""
    return "adm." + secrets.token_urlsafe(16)


@pytest.fixture(scope="session")
def stack(redis_server: RedisServer, admin_token: str,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A referee and two workers shared by the session's tests."""
    st = Stack(tmp_path_factory.mktemp("stack"), redis_server.url, admin_token=admin_token)
    st.referee()
    st.worker()
    st.worker()
    yield st
    st.stop_all()


@pytest.fixture
def fresh_stack(redis_server: RedisServer, admin_token: str, tmp_path: Path) -> Iterator[Stack]:
    """Processes started by one test and stopped after it (for tests that kill things)."""
    st = Stack(tmp_path, redis_server.url, admin_token=admin_token)
    yield st
    st.stop_all()


@pytest.fixture
def name() -> str:
    """A bot-name prefix unique to the test."""
    return "t" + uuid.uuid4().hex[:8]


@pytest.fixture(scope="session")
def r(redis_server: RedisServer) -> Iterator[redis.Redis]:
    """A client of the session's Redis (str values), to look at what the system stored."""
    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    yield client
    client.close()


@pytest.fixture(scope="session")
def admin(stack: Stack, admin_token: str) -> Iterator[Admin]:
    """The organiser client, on the session referee."""
    a = Admin(stack.address, admin_token)
    yield a
    a.close()


@pytest.fixture(scope="session")
def pool(stack: Stack) -> dict[str, PoolBot]:
    """Bot processes shared by the session's tests (a bot plays many matches at once):
    `greedy1`..`greedy3` and `random1`..`random2`."""
    tag = uuid.uuid4().hex[:6]
    kinds = {"greedy1": "greedy", "greedy2": "greedy", "greedy3": "greedy",
             "random1": "random", "random2": "random"}
    bots: dict[str, PoolBot] = {}
    for key in kinds:
        name = f"pool-{key}-{tag}"
        bot_id, token = register(stack.address, name)
        bots[key] = PoolBot(bot_id, name, token)
    stack.bots([(kind, bots[key].token) for key, kind in kinds.items()])
    return bots
