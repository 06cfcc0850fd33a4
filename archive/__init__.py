"""The archive: the SQL database of record for what is finished (games and their compact
transcripts, finished events, rating snapshots), while Redis keeps only what is live.

Modules: `schema` (the tables, as SQLAlchemy Core `MetaData`), `db` (opening an archive
by URL, its migrations, the small write helpers), `errors`, `codec` (a finished game in
a few dozen bytes, back to its transcript byte for byte), `mover` and `reads` (games in
and out), `export` (games as Parquet or JSON lines, for analysis); `migrations/` holds
the Alembic revisions a starting stack applies itself.

Where it lives: `sqlite:///PATH` (the embedded default, a file beside the stack's data:
`db.default_url(data_dir)`) or `postgresql://USER@HOST/DB` for a stack on several
machines. A stack is told which by `--archive URL` or the `MOONSHOT_ARCHIVE` variable.

Why SQLAlchemy Core and Alembic, not raw `sqlite3` and `psycopg`: one well-kept library
speaks both engines (types, DDL, bound parameters, pooling, each dialect's
`INSERT ... ON CONFLICT DO NOTHING`), so one schema and one set of queries serve both,
and Alembic gives versioned migrations that `db.open_archive` runs programmatically at
start, under a lock, so a running stack upgrades its own database and refuses one newer
than its code. Core, not the ORM: the archive moves and reads rows in bulk (a rating fit
reads a million at once), where objects per row would cost time and memory for nothing.
"""
