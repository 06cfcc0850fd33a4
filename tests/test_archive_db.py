"""The archive's database layer on SQLite and on a real PostgreSQL: migrations at open
(fresh, again, two processes at once, a newer schema refused), the schema as the code
declares it, a round trip of every table, unique keys and `insert_ignore`, and sizes."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from archive_backends import archive_url, postgres  # noqa: F401
from sqlalchemy.exc import IntegrityError

from archive import schema
from archive.db import (
    ENV,
    Archive,
    check_url,
    default_url,
    head_revision,
    insert_ignore,
    intern,
    open_archive,
)
from archive.errors import BadURL, SchemaTooNew, Unavailable

ROOT = Path(__file__).resolve().parent.parent
HEAD = "0003"
TABLES = {"bots", "events", "templates", "games", "rating_snapshots", "meta", "packages"}


@pytest.fixture
def archive(archive_url: str) -> Any:  # noqa: F811
    """A freshly migrated archive on each backend."""
    a = open_archive(archive_url)
    yield a
    a.close()


def _game(template: int, seats: list[int], match_id: str = "m-abc", **extra: Any) -> dict[str, Any]:
    """A games row (3p unless `seats` has four)."""
    row = {"match_id": match_id, "event": None, "players": len(seats),
           **{f"seat{s}": (seats[s] if s < len(seats) else None) for s in range(4)},
           "board": "arena-3p/b17", "unit": "", "seed": 2**64 - 5, "created_at": 100.5,
           "finished_at": 130.25, "released_at": None, "end_code": schema.EndCode.NORMAL,
           "winner": 0, "forfeit_seat": None, "places": schema.pack_places([1, 3, 2]),
           "final": "21,10,3", "forfeit_reason": None, "actions": 57, "rated": True,
           "template": template,
           "blob": bytes(range(60))}
    return row | extra


def _fill(a: Archive) -> tuple[list[int], int, int]:
    """Bots, an event and a template to hang games on: (bot ids, event id, template id)."""
    with a.begin() as conn:
        bots = intern(conn, schema.bots, "bot_id", [
            {"bot_id": b, "name": b.upper()} for b in ("b-1", "b-2", "house:greedy", "b-4")])
        tpl = intern(conn, schema.templates, "hash", [{"hash": "h1", "body": '{"r":1}'}])
        conn.execute(sa.insert(schema.events), [{"kind": "tournament", "event_id": "t-1"}])
        event = conn.execute(sa.select(schema.events.c.id)).scalar_one()
    return list(bots.values()), event, tpl["h1"]


# -- migrations at open ---------------------------------------------------------------


def test_a_fresh_database_is_migrated_to_head_and_opening_again_changes_nothing(
        archive: Archive, archive_url: str) -> None:  # noqa: F811
    assert head_revision() == HEAD
    assert archive.revision() == HEAD
    assert set(sa.inspect(archive.engine).get_table_names()) >= TABLES
    with archive.begin() as conn:
        conn.execute(sa.insert(schema.meta), [{"key": "k", "value": "v"}])
    again = open_archive(archive_url)
    assert again.revision() == HEAD
    with again.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM alembic_version")).scalar_one() == 1
        assert conn.execute(sa.select(schema.meta.c.value)).scalar_one() == "v"
    again.close()


def test_the_migrated_database_is_the_schema_the_code_declares(archive: Archive) -> None:
    with archive.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), schema.metadata)
    assert diff == []


def test_an_archive_of_the_first_schema_keeps_every_bots_games_through_the_upgrade(
        archive_url: str) -> None:  # noqa: F811
    """0001 kept a bot's games as `plays` rows; 0002 indexes the seats instead. An archive
    written at 0001 opens at 0002 with every bot's listing as it was, and going back down
    rebuilds `plays` from the seats, row for row."""
    from alembic import command

    from archive import reads
    from archive.db import _config

    engine = sa.create_engine(archive_url)
    with engine.begin() as conn:
        command.upgrade(_config(conn), "0001")
    old = sa.MetaData()
    old.reflect(engine)
    games, plays = schema.games, old.tables["plays"]  # games: the same columns at 0001
    first = Archive(engine, "old")
    bots, _, tpl = _fill(first)
    rows = [_game(tpl, [bots[k % 4], bots[(k + 1) % 4], bots[(k + 2) % 4]], match_id=f"m-{k}")
            for k in range(30)]
    rows.append(_game(tpl, bots, match_id="m-four", places=schema.pack_places([1, 2, 1, 2]),
                      final="1,0,1,0"))
    with engine.begin() as conn:
        ids = conn.execute(sa.insert(games).returning(games.c.id, games.c.match_id),
                           rows).all()
        by_match = {m: i for i, m in ids}
        conn.execute(sa.insert(plays), [
            {"bot": r[f"seat{s}"], "game": by_match[r["match_id"]]}
            for r in rows for s in range(4) if r.get(f"seat{s}") is not None])
        before = {b: conn.execute(sa.select(plays.c.game).where(plays.c.bot == b).order_by(
            plays.c.game.desc())).scalars().all() for b in bots}
        pairs = sorted(conn.execute(sa.select(plays.c.bot, plays.c.game)).all())
    engine.dispose()
    upgraded = open_archive(archive_url)
    assert upgraded.revision() == HEAD
    assert "plays" not in sa.inspect(upgraded.engine).get_table_names()
    with upgraded.connect() as conn:
        names = dict(conn.execute(sa.select(schema.bots.c.id, schema.bots.c.bot_id)).all())
    for b, expected in before.items():
        listed = [g.id for g in reads.games(upgraded, bot_id=names[b], limit=1000)]
        assert listed == expected, (names[b], listed, expected)
        assert [g.id for g in reads.games(upgraded, bot_id=names[b], limit=5,
                                          before=expected[4])] == expected[5:10]
    with upgraded.begin() as conn:
        command.downgrade(_config(conn), "0001")
    with upgraded.connect() as conn:
        assert sorted(conn.execute(sa.text("SELECT bot, game FROM plays")).all()) == pairs
    upgraded.close()


_OPEN = """
import sys, time
from archive.db import open_archive
start = float(sys.argv[2])
time.sleep(max(0.0, start - time.time()))
print(open_archive(sys.argv[1]).revision())
"""


def test_processes_opening_one_fresh_database_at_once_all_succeed(
        archive_url: str) -> None:  # noqa: F811
    start = time.time() + 2.0  # each has imported SQLAlchemy and Alembic by then
    procs = [subprocess.Popen([sys.executable, "-c", _OPEN, archive_url, str(start)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [(p.returncode, out.strip()) for p, (out, _) in zip(procs, outs, strict=True)] == \
        [(0, HEAD)] * 4, [err for _, err in outs]


def test_a_database_migrated_by_a_newer_moonshot_is_refused_in_one_line(
        archive: Archive, archive_url: str) -> None:  # noqa: F811
    with archive.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0999'"))
    with pytest.raises(SchemaTooNew) as err:
        open_archive(archive_url)
    msg = str(err.value)
    assert "\n" not in msg and "0999" in msg and "upgrade moonshot" in msg, msg
    assert archive.revision() == "0999"  # and left as it was


# -- URLs -----------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["mysql://u@h/db", "sqlite://", "sqlite:///:memory:",
                                 "not a url", "postgresql://u@h", "redis://h:6379/0"])
def test_anything_but_a_sqlite_file_or_a_postgresql_database_is_refused(url: str) -> None:
    with pytest.raises(BadURL) as err:
        open_archive(url)
    assert "\n" not in str(err.value) and "sqlite:///PATH" in str(err.value)


def test_urls_map_to_their_drivers_and_the_default_sits_in_the_data_folder(
        tmp_path: Path) -> None:
    assert check_url("postgresql://u:pw@h:5433/db").drivername == "postgresql+psycopg"
    assert check_url("postgres://u@h/db").drivername == "postgresql+psycopg"
    assert check_url("sqlite:///x.db").drivername == "sqlite+pysqlite"
    url = default_url(tmp_path / "data")
    assert url == f"sqlite:///{tmp_path}/data/archive.sqlite3"
    assert ENV == "MOONSHOT_ARCHIVE"
    (tmp_path / "data").mkdir()
    open_archive(url).close()
    assert (tmp_path / "data" / "archive.sqlite3").is_file()


def test_a_database_that_cannot_be_reached_is_unavailable_in_one_line(
        tmp_path: Path, postgres: Any) -> None:  # noqa: F811
    for url in (f"sqlite:///{tmp_path}/no/such/folder/a.db",
                f"postgresql://moonshot:secret@127.0.0.1:{postgres.port}/nosuchdb",
                "postgresql://moonshot:secret@127.0.0.1:1/x"):
        with pytest.raises(Unavailable) as err:
            open_archive(url)
        msg = str(err.value)
        assert "\n" not in msg and "secret" not in msg and "cannot open" in msg, msg


# -- tables ---------------------------------------------------------------------------


def test_every_table_round_trips(archive: Archive) -> None:
    bots, event, tpl = _fill(archive)
    three = _game(tpl, bots[:3], event=event, released_at=131.5)
    four = _game(tpl, bots, match_id="t-1-x1-r1-g1", seed=7, end_code=schema.EndCode.FORFEIT,
                 winner=None, forfeit_seat=2, rated=False, unit="x1-r1",
                 places=schema.pack_places([1, 2, 1, 2]), final="1,0,1,0", blob=b"\x00\xff")
    snapshot = {"pool": "3p", "method": "pl", "at": 12.5, "body": b"x\x9c\x03\x00\x00\x00\x00\x01"}
    with archive.begin() as conn:
        ids = conn.execute(sa.insert(schema.games).returning(schema.games.c.id),
                           [three, four]).scalars().all()
        conn.execute(sa.insert(schema.rating_snapshots), [snapshot])
        conn.execute(sa.update(schema.events).values(
            name="Cup", spec='{"format":"rr"}', status="finished", created_at=1.0,
            finished_at=2.0, summary='{"standings":[]}'))
    with archive.connect() as conn:
        games = [r._asdict() for r in conn.execute(
            sa.select(schema.games).order_by(schema.games.c.id))]
        assert [{k: v for k, v in g.items() if k != "id"} for g in games] == [three, four]
        assert games[0]["seed"] == 2**64 - 5 and games[0]["seat3"] is None
        assert schema.unpack_places(games[1]["places"], 4) == [1, 2, 1, 2]
        newest = conn.execute(sa.select(schema.games.c.id).where(
            sa.or_(*(seat == bots[1] for seat in schema.SEATS))).order_by(
            schema.games.c.id.desc())).scalars().all()
        assert newest == [ids[1], ids[0]]  # in both: seat 1 of the first, of the second
        assert conn.execute(sa.select(schema.rating_snapshots)).one()._asdict() == snapshot
        ev = conn.execute(sa.select(schema.events)).one()._asdict()
        assert ev == {"id": event, "kind": "tournament", "event_id": "t-1", "name": "Cup",
                      "spec": '{"format":"rr"}', "status": "finished", "created_at": 1.0,
                      "finished_at": 2.0, "summary": '{"standings":[]}'}
        assert conn.execute(sa.select(schema.bots.c.bot_id, schema.bots.c.name).order_by(
            schema.bots.c.id)).all()[2] == ("house:greedy", "HOUSE:GREEDY")
        assert conn.execute(sa.select(schema.templates.c.body)).scalar_one() == '{"r":1}'


def test_unique_keys_hold_and_insert_ignore_skips_what_is_there(archive: Archive) -> None:
    bots, _, tpl = _fill(archive)
    with pytest.raises(IntegrityError), archive.begin() as conn:
        conn.execute(sa.insert(schema.games), [_game(tpl, bots[:3]), _game(tpl, bots[1:4])])
    with archive.begin() as conn:
        assert insert_ignore(conn, schema.games, [_game(tpl, bots[:3])]) == 1
        again = [_game(tpl, bots[1:4], final="0,0,0"), _game(tpl, bots[:3], match_id="m-2")]
        assert insert_ignore(conn, schema.games, again) == 1
        assert insert_ignore(conn, schema.games, []) == 0
        assert conn.execute(sa.select(schema.games.c.final).where(
            schema.games.c.match_id == "m-abc")).scalar_one() == "21,10,3"
        dup = {
            schema.bots: {"bot_id": "b-1", "name": "other"},
            schema.events: {"kind": "tournament", "event_id": "t-1"},
            schema.templates: {"hash": "h1", "body": "other"},
            schema.rating_snapshots: {"pool": "3p", "method": "pl", "at": 1.0, "body": b""},
            schema.meta: {"key": "k", "value": "v"},
        }
        for table, row in dup.items():
            first = 0 if table in (schema.bots, schema.events, schema.templates) else 1
            assert insert_ignore(conn, table, [row]) == first, table.name
            assert insert_ignore(conn, table, [row]) == 0, table.name
    for table, row in dup.items():
        with pytest.raises(IntegrityError), archive.begin() as conn:
            conn.execute(sa.insert(table), [row])
    with archive.begin() as conn:
        assert intern(conn, schema.bots, "bot_id", [{"bot_id": "b-2", "name": "x"}]) == \
            {"b-2": bots[1]}


def test_foreign_keys_are_enforced(archive: Archive) -> None:
    bots, _, tpl = _fill(archive)
    for bad in (_game(tpl + 99, bots[:3]), _game(tpl, [bots[0], bots[1], 999]),
                _game(tpl, bots[:3], event=999)):
        with pytest.raises(IntegrityError), archive.begin() as conn:
            conn.execute(sa.insert(schema.games), [bad])


def test_two_writers_that_read_first_queue_instead_of_failing(archive: Archive) -> None:
    # BEGIN IMMEDIATE on SQLite: each takes the write lock before its read, so neither
    # fails upgrading a read lock; on PostgreSQL the counter row's update serialises them.
    with archive.begin() as conn:
        conn.execute(sa.insert(schema.meta), [{"key": "n", "value": "0"}])
    errors: list[BaseException] = []

    def bump() -> None:
        try:
            for _ in range(5):
                with archive.begin() as conn:
                    n = conn.execute(sa.select(schema.meta.c.value).where(
                        schema.meta.c.key == "n").with_for_update()).scalar_one()
                    time.sleep(0.01)
                    conn.execute(sa.update(schema.meta).where(schema.meta.c.key == "n")
                                 .values(value=str(int(n) + 1)))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=bump) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with archive.connect() as conn:
        assert conn.execute(sa.select(schema.meta.c.value)).scalar_one() == "15"


def test_sqlite_runs_in_wal_with_foreign_keys_and_full_sync(tmp_path: Path) -> None:
    """FULL: a batch's commit is on disk before it returns, since Redis drops the games
    right after (NORMAL in WAL mode may lose the last commits to a power cut)."""
    a = open_archive(f"sqlite:///{tmp_path}/a.db")
    with a.connect() as conn:
        got = [conn.exec_driver_sql(f"PRAGMA {p}").scalar_one()
               for p in ("journal_mode", "foreign_keys", "synchronous", "busy_timeout")]
    assert got == ["wal", 1, 2, 30000]  # synchronous 2 is FULL
    a.close()


def test_table_bytes_counts_every_table(archive: Archive) -> None:
    sizes = archive.table_bytes()
    assert set(sizes) == TABLES and all(v > 0 for v in sizes.values()), sizes


# -- codes and packings ---------------------------------------------------------------


def test_places_pack_four_bits_a_seat_and_end_words_map_to_codes() -> None:
    assert schema.pack_places([1, 3, 2]) == 0x231
    assert schema.unpack_places(0x231, 3) == [1, 3, 2]
    assert schema.unpack_places(schema.pack_places([2, 1, 2, 1]), 4) == [2, 1, 2, 1]
    with pytest.raises(ValueError, match="4 bits"):
        schema.pack_places([16, 1, 1])
    assert [schema.EndCode.of(w) for w in ("normal", "hand_limit", "forfeit", "lost")] == [
        schema.EndCode.NORMAL, schema.EndCode.HAND_LIMIT, schema.EndCode.FORFEIT,
        schema.EndCode.OTHER]


def test_seeds_keep_all_64_bits() -> None:
    seed = schema.Seed()
    for value in (0, 1, 2**63 - 1, 2**63, 2**64 - 1):
        stored = seed.process_bind_param(value, sa.create_engine("sqlite://").dialect)
        assert stored is not None and -(2**63) <= stored < 2**63
        assert seed.process_result_value(stored, sa.create_engine("sqlite://").dialect) == value
