"""Fixtures for the sandbox's tests: a real Redis, referee and worker (the end-to-end
tests' own Stack), and hosted bots in real sandboxes. The sandbox needs root,
bubblewrap and libseccomp (docs/hosting.md): without them these tests fail, saying
which is missing."""

from __future__ import annotations

import secrets
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "net"))

from sandboxes import EXAMPLE, ROOT  # noqa: E402,F401  (the tests' helpers; see there)
from stack import Stack  # noqa: E402

from clients.admin import Admin  # noqa: E402
from clients.redisproc import RedisServer  # noqa: E402
from hosting.sandbox import check  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def sandbox_host() -> None:
    """Sandboxes can be built here (else every test fails with the one line saying why)."""
    why = check()
    assert why is None, f"this host cannot build sandboxes: {why}"


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A private redis-server for the session."""
    srv = RedisServer(tmp_path_factory.mktemp("redis"), appendonly=False).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def stack(redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[Stack]:
    """A referee and a worker."""
    st = Stack(tmp_path_factory.mktemp("stack"), redis_server.url,
               admin_token="adm." + secrets.token_urlsafe(16))
    st.referee()
    st.worker()
    yield st
    st.stop_all()


@pytest.fixture(scope="session")
def admin(stack: Stack) -> Iterator[Admin]:
    """The organiser client."""
    a = Admin(stack.address, stack.admin_token)
    yield a
    a.close()


@pytest.fixture
def name() -> str:
    """A bot-name prefix unique to the test."""
    return "h" + uuid.uuid4().hex[:8]
