"""Opening the archive by URL, migrating it at open, and the small write helpers both
engines share.

    archive = open_archive("sqlite:///moonshot-data/archive.sqlite3")
    with archive.begin() as conn:           # a write transaction
        insert_ignore(conn, schema.meta, [{"key": "k", "value": "v"}])
    with archive.connect() as conn:         # reads
        conn.execute(sa.select(schema.meta)).all()

A stack names its archive with `--archive URL` or `$MOONSHOT_ARCHIVE` (`FLAG`, `ENV`);
without either, `default_url(data_dir)`: a SQLite file beside the stack's Redis files.

`open_archive` applies every migration up to head itself (Alembic, run from this
package: users need no alembic.ini), under a lock, so any number of processes may open
one fresh database at once: one migrates, the others wait and find it done. It refuses
a database migrated by a newer moonshot (`SchemaTooNew`) rather than write rows that
code does not know about.

SQLite: WAL, so readers (the referee's GetMatch, the web) never wait for the mover's
writes nor block them; `busy_timeout`, so a writer waits for another writer's lock
instead of failing at once; foreign keys on, which SQLite leaves off by default;
synchronous=FULL: a commit is on disk before it returns, so a batch of games the mover
wrote survives a power cut once Redis has dropped them (NORMAL would lose the last
commits); the mover commits a batch at a time, so that is one fsync a batch.
Every write transaction starts with `BEGIN IMMEDIATE`: it takes the write lock before
its first read, so two writers queue on `busy_timeout` rather than one failing on
SQLITE_BUSY when it upgrades a read to a write.

PostgreSQL: `postgresql://` is served by psycopg 3 (`postgresql+psycopg://`), with a
small pool (a worker runs one job at a time; the referee a few reads) that checks a
connection before use, so a restarted server costs one failed batch, not a dead pool.
After `fork()` (RQ's work horse), call `Archive.after_fork` in the child.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, Table, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from archive import schema
from archive.errors import BadURL, SchemaTooNew, Unavailable

__all__ = [
    "ENV",
    "FILE_NAME",
    "FLAG",
    "Archive",
    "check_url",
    "default_url",
    "head_revision",
    "insert_ignore",
    "intern",
    "open_archive",
]

ENV = "MOONSHOT_ARCHIVE"  # the variable a stack's processes read the archive URL from
FLAG = "--archive"  # the CLI flag that names it (wins over ENV)
FILE_NAME = "archive.sqlite3"  # the default archive, in the stack's data folder
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
BUSY_TIMEOUT_MS = 30_000  # how long a SQLite writer waits for another's lock
# pg_advisory_xact_lock key that serialises migrations ("moonarch" in ASCII).
MIGRATION_LOCK = int.from_bytes(b"moonarch", "big")
CHUNK = 500  # rows per statement in `intern`'s lookups (far below any bound-parameter cap)

_SQLITE = ("sqlite", "sqlite+pysqlite")
_POSTGRES = ("postgresql", "postgres", "postgresql+psycopg")


def default_url(data_dir: Path) -> str:
    """The stack's default archive: `sqlite:///<data_dir>/archive.sqlite3`, absolute."""
    return f"sqlite:///{(Path(data_dir) / FILE_NAME).resolve()}"


def check_url(url: str) -> URL:
    """The SQLAlchemy URL for an archive URL (`sqlite:///PATH` or `postgresql://...`);
    BadURL, with what is accepted, for anything else."""
    accepted = "use sqlite:///PATH or postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise BadURL(f"archive URL {url!r} is not a URL: {accepted}") from None
    if parsed.drivername in _SQLITE:
        if not parsed.database or parsed.database == ":memory:":
            raise BadURL(f"archive URL {parsed.render_as_string()!r} names no file: {accepted}")
        return parsed.set(drivername="sqlite+pysqlite")
    if parsed.drivername in _POSTGRES:
        if not parsed.database:
            raise BadURL(f"archive URL {parsed!s} names no database: {accepted}")
        return parsed.set(drivername="postgresql+psycopg")
    raise BadURL(f"archive URL {parsed!s} is not SQLite or PostgreSQL: {accepted}")


@dataclass
class Archive:
    """An open archive: its engine, and how to read and write through it."""

    engine: Engine
    shown: str  # the URL without its password, for messages and logs

    @property
    def dialect(self) -> str:
        """"sqlite" or "postgresql"."""
        return self.engine.dialect.name

    def connect(self) -> sa.Connection:
        """A connection for reads (use as a context manager)."""
        return self.engine.connect()

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """A write transaction, committed at the end of the block (rolled back on error);
        on SQLite it holds the write lock from its start (BEGIN IMMEDIATE)."""
        with self.engine.connect() as conn:
            conn.execution_options(archive_write=True)
            with conn.begin():
                yield conn

    def revision(self) -> str | None:
        """The database's schema revision (None before the first migration)."""
        with self.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()

    def table_bytes(self) -> dict[str, int]:
        """Bytes each table of the schema takes on disk, its indexes included (SQLite:
        whole pages, from `dbstat`; PostgreSQL: `pg_total_relation_size`)."""
        names = [t.name for t in schema.metadata.sorted_tables]
        with self.connect() as conn:
            if self.dialect == "sqlite":
                rows = conn.execute(sa.text(
                    "SELECT m.tbl_name, SUM(d.pgsize) FROM dbstat AS d "
                    "JOIN sqlite_schema AS m ON m.name = d.name GROUP BY m.tbl_name")).all()
                found = {str(n): int(b) for n, b in rows}
                return {n: found.get(n, 0) for n in names}
            return {n: int(conn.execute(sa.text("SELECT pg_total_relation_size(:t)"),
                                        {"t": n}).scalar_one()) for n in names}

    def after_fork(self) -> None:
        """Forget the parent's connections in a forked child (never closing them, which
        would close the parent's), so the child opens its own."""
        self.engine.dispose(close=False)

    def close(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


def open_archive(url: str, *, pool_size: int = 2) -> Archive:
    """Open the archive at `url`, migrated to the newest schema this code knows.

    BadURL for a URL that is not SQLite or PostgreSQL, Unavailable when the database
    cannot be reached or opened, SchemaTooNew when a newer moonshot migrated it.
    """
    sa_url = check_url(url)
    shown = sa_url.render_as_string(hide_password=True)
    engine = _engine(sa_url, pool_size)
    archive = Archive(engine, shown)
    try:
        _migrate(archive)
    except DBAPIError as exc:
        engine.dispose()
        first = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise Unavailable(f"archive {shown}: cannot open it: {first}") from None
    except BaseException:
        engine.dispose()
        raise
    return archive


def _engine(url: URL, pool_size: int) -> Engine:
    """An engine for a checked URL, with the settings `open_archive`'s doc explains."""
    if url.drivername.startswith("sqlite"):
        engine = sa.create_engine(url, pool_size=pool_size, max_overflow=4)
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    return sa.create_engine(url, pool_size=pool_size, max_overflow=4, pool_pre_ping=True,
                            connect_args={"connect_timeout": 10})


def _sqlite_connect(dbapi_conn: Any, _record: Any) -> None:
    """A new SQLite connection's settings; the driver's own transaction handling is off
    (SQLAlchemy's documented recipe) so `_sqlite_begin` decides how each one begins."""
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA journal_mode = WAL")  # waits on busy_timeout like a write
    cur.execute("PRAGMA synchronous = FULL")  # a batch is durable before Redis drops it
    cur.execute("PRAGMA foreign_keys = ON")
    cur.close()


def _sqlite_begin(conn: Connection) -> None:
    """BEGIN IMMEDIATE for `Archive.begin`'s writes, a plain (deferred) BEGIN for reads."""
    write = conn.get_execution_options().get("archive_write", False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


@functools.cache
def _scripts() -> ScriptDirectory:
    """The package's migrations (read once per process)."""
    return ScriptDirectory(str(MIGRATIONS))


def head_revision() -> str:
    """The newest schema revision this code knows (what `open_archive` migrates to)."""
    head = _scripts().get_current_head()
    assert head is not None, "archive/migrations/versions has no revision"
    return head


def _config(conn: Connection) -> Config:
    """An Alembic config with no file: the package's migrations, on `conn`."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = conn
    return cfg


def _check_known(archive: Archive, current: str | None) -> None:
    """SchemaTooNew unless `current` is a revision of this code's migrations."""
    scripts = _scripts()
    if current is not None and current not in {s.revision for s in scripts.walk_revisions()}:
        raise SchemaTooNew(
            f"archive {archive.shown} is at schema revision {current}, which this moonshot "
            f"does not know (its newest is {scripts.get_current_head()}): upgrade moonshot")


def _migrate(archive: Archive) -> None:
    """Bring the database to head; a look without the lock first, as it usually is."""
    head = head_revision()
    current = archive.revision()
    _check_known(archive, current)
    if current == head:
        return
    with archive.begin() as conn:
        if archive.dialect == "postgresql":
            # Held to the end of the transaction: a second process waits here, then
            # finds the revision it was about to apply.
            conn.execute(sa.select(sa.func.pg_advisory_xact_lock(MIGRATION_LOCK)))
        current = MigrationContext.configure(conn).get_current_revision()
        _check_known(archive, current)
        if current != head:
            command.upgrade(_config(conn), "head")


def insert_ignore(conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]]) -> int:
    """Insert `rows`, skipping each that conflicts with a unique key already there (the
    dialects' ON CONFLICT DO NOTHING); the number inserted.

    The count comes from RETURNING the primary key: a driver's rowcount of a batched
    insert is not reliable (psycopg's is -1)."""
    if not rows:
        return 0
    dialect = sqlite if conn.dialect.name == "sqlite" else postgresql
    stmt = dialect.insert(table).on_conflict_do_nothing()
    return len(conn.execute(stmt.returning(*table.primary_key.columns), list(rows)).all())


def intern(conn: Connection, table: Table, key: str,
           rows: Iterable[Mapping[str, Any]]) -> dict[Any, int]:
    """The `id` of each row by its unique `key` column, inserting the rows not there yet
    (bots by `bot_id`, templates by `hash`): key -> id."""
    by_key = {row[key]: row for row in rows}
    insert_ignore(conn, table, list(by_key.values()))
    keys, col = list(by_key), table.c[key]
    out: dict[Any, int] = {}
    for i in range(0, len(keys), CHUNK):
        found = conn.execute(sa.select(col, table.c.id).where(col.in_(keys[i:i + CHUNK])))
        out.update({k: int(v) for k, v in found})
    return out
