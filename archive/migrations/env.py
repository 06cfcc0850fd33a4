"""Alembic's entry point: migrate the connection `archive.db` hands over, inside the
transaction (and lock) it holds, so the whole upgrade commits or none of it does."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from archive.schema import metadata

conn = context.config.attributes.get("connection")
if not isinstance(conn, Connection):
    raise RuntimeError("archive migrations run through archive.db.open_archive, "
                       "which passes the connection")
# SQLite's DDL is transactional too: the caller's BEGIN IMMEDIATE covers it all.
context.configure(connection=conn, target_metadata=metadata, transactional_ddl=True,
                  render_as_batch=conn.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
