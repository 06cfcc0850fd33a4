"""Hosted versions' packages in the archive: bytes by their SHA-256, each kept once.

    put(archive, digest, data)   # True when these bytes were new
    get(archive, digest)         # the bytes, or None

The digest is checked against the bytes on the way in, so a row is always the bytes its
key names; two submissions of one folder (or two processes at once) store one row.
"""

from __future__ import annotations

import hashlib
import time

import sqlalchemy as sa

from archive import schema
from archive.db import Archive, insert_ignore

__all__ = ["exists", "get", "put"]


def put(archive: Archive, digest: str, data: bytes) -> bool:
    """Keep `data` under `digest` (its SHA-256 hex); whether it was not there yet.
    ValueError when the digest is not the bytes'."""
    if hashlib.sha256(data).hexdigest() != digest:
        raise ValueError(f"package digest {digest[:64]!r} is not the SHA-256 of its bytes")
    with archive.begin() as conn:
        return insert_ignore(conn, schema.packages, [{
            "digest": digest, "size": len(data), "created_at": time.time(),
            "data": data}]) == 1


def get(archive: Archive, digest: str) -> bytes | None:
    """The package stored under `digest`, or None."""
    with archive.connect() as conn:
        row = conn.execute(sa.select(schema.packages.c.data).where(
            schema.packages.c.digest == digest)).scalar_one_or_none()
    return None if row is None else bytes(row)


def exists(archive: Archive, digest: str) -> bool:
    """Whether a package is stored under `digest`."""
    with archive.connect() as conn:
        return conn.execute(sa.select(sa.literal(1)).where(
            schema.packages.c.digest == digest)).first() is not None
