"""Hosted versions' packages in the archive, on SQLite and on a real PostgreSQL: bytes kept
once by their SHA-256, read back whole; migration 0003 adds the table to an archive of
0002 (its games untouched) and takes it away again."""

from __future__ import annotations

import hashlib
import threading
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from archive_backends import archive_url, postgres  # noqa: F401

from archive import packages, schema
from archive.db import Archive, _config, open_archive


@pytest.fixture
def archive(archive_url: str) -> Any:  # noqa: F811
    a = open_archive(archive_url)
    yield a
    a.close()


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_same_bytes_are_stored_once_and_read_back_whole(archive: Archive) -> None:
    data = bytes(range(256)) * 4096 + b"\x00\xff"  # 1 MiB and a bit, every byte value
    digest = _digest(data)
    assert packages.get(archive, digest) is None and not packages.exists(archive, digest)
    assert packages.put(archive, digest, data) is True
    assert packages.put(archive, digest, data) is False  # the same bytes: not stored again
    assert packages.get(archive, digest) == data and packages.exists(archive, digest)
    other = b"another package"
    assert packages.put(archive, _digest(other), other) is True
    with archive.connect() as conn:
        rows = conn.execute(sa.select(schema.packages.c.digest, schema.packages.c.size)
                            .order_by(schema.packages.c.size)).all()
    assert sorted(rows) == sorted([(digest, len(data)), (_digest(other), len(other))])


def test_a_digest_that_is_not_the_bytes_is_refused_and_nothing_is_stored(
        archive: Archive) -> None:
    with pytest.raises(ValueError, match="is not the SHA-256 of its bytes"):
        packages.put(archive, _digest(b"a"), b"b")
    with archive.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(schema.packages)
                            ).scalar_one() == 0


def test_two_writers_of_one_package_at_once_store_one_row(archive: Archive) -> None:
    data = b"x" * 100_000
    results: list[bool] = []
    threads = [threading.Thread(target=lambda: results.append(
        packages.put(archive, _digest(data), data))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False, False, False, True]
    with archive.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(schema.packages)
                            ).scalar_one() == 1


def test_migration_0003_adds_packages_to_an_archive_of_0002_and_takes_it_away(
        archive_url: str) -> None:  # noqa: F811
    engine = sa.create_engine(archive_url)
    with engine.begin() as conn:
        command.upgrade(_config(conn), "0002")
    with engine.begin() as conn:
        conn.execute(sa.insert(schema.meta), [{"key": "kept", "value": "through it all"}])
    assert "packages" not in sa.inspect(engine).get_table_names()
    engine.dispose()
    upgraded = open_archive(archive_url)  # migrates to head at open
    assert upgraded.revision() == "0003"
    assert "packages" in sa.inspect(upgraded.engine).get_table_names()
    data = b"a package"
    assert packages.put(upgraded, _digest(data), data)
    with upgraded.begin() as conn:
        command.downgrade(_config(conn), "0002")
    assert upgraded.revision() == "0002"
    assert "packages" not in sa.inspect(upgraded.engine).get_table_names()
    with upgraded.connect() as conn:
        assert conn.execute(sa.select(schema.meta.c.value)).scalar_one() == "through it all"
    with upgraded.begin() as conn:  # and up again, empty
        command.upgrade(_config(conn), "head")
    assert packages.get(upgraded, _digest(data)) is None
    upgraded.close()
