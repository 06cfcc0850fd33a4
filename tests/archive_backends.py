"""`archive_url`: each archive test runs on SQLite and on a real PostgreSQL.

A test module takes both fixtures by importing them:
`from archive_backends import archive_url, postgres  # noqa: F401`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pg import Postgres, postgres

__all__ = ["BACKENDS", "archive_url", "postgres"]

BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(params=BACKENDS)
def archive_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a fresh, empty archive database on each backend in turn."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'archive.sqlite3'}"
    server: Postgres = request.getfixturevalue("postgres")
    return server.url(server.create_database())
