"""The archive's Alembic migrations, run by `archive.db.open_archive` (no alembic.ini).

A schema change is a new revision in `versions/`: `NNNN_what.py` with `revision = "NNNN"`
and `down_revision` the previous one, written by hand with `alembic.op` (Core types, names
from `archive.schema.NAMING`; SQLite alters tables through `op.batch_alter_table`), and
the same change made to `archive/schema.py`. A revision, once released, is never edited:
databases out there are at it. tests/test_archive_db.py checks that the migrated database
and `archive.schema` agree, on SQLite and PostgreSQL.
"""
