"""What the archive's schema costs per game, before any real game is archived: bytes per
3p game of each table with its indexes, for synthetic games with a fixed-size blob.

Run `python bench/archive_db.py [--games N] [--blob BYTES] [--backend sqlite|postgresql]
[--url URL]`. It opens a fresh archive (a temporary SQLite file; for PostgreSQL, a
throwaway server as the tests start it, tests/pg.py, unless --url names a database),
writes N games (default 100,000) of an arena-like 3p pool in batches of 2,000 as the
mover would (100 bots, an event per 10,000 games, one template per event, ids like the
arena's, 63-bit seeds, millisecond times, `--blob` random
bytes each, default 60), then prints `name: value unit` lines: bytes per game of each
table (indexes included) and in total, as written and compacted (VACUUM; VACUUM FULL),
and SQLite's file per game. SQLite's figures are whole pages (`dbstat`), free space in
them included; PostgreSQL's are `pg_total_relation_size`.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa

# `python bench/archive_db.py` puts bench/ first on the path, where bench/bots.py would
# shadow the package of that name: the repository root goes in front.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from archive import schema
from archive.db import Archive, intern, open_archive

ROOT = Path(__file__).resolve().parent.parent

BATCH = 2_000
BOTS = 100
GAMES_PER_EVENT = 10_000


@contextmanager
def _backend(backend: str, url: str | None) -> Iterator[tuple[str, Path | None]]:
    """(archive URL, SQLite file or None) of a fresh database on `backend`."""
    if url is not None:
        yield url, None
        return
    with tempfile.TemporaryDirectory(prefix="moonshot-archive-bench-") as tmp:
        if backend == "sqlite":
            path = Path(tmp) / "archive.sqlite3"
            yield f"sqlite:///{path}", path
            return
        sys.path.insert(0, str(ROOT / "tests"))
        from pg import Postgres, binaries

        found = binaries()
        if found is None:
            raise SystemExit("PostgreSQL is not installed: apt-get install postgresql")
        server = Postgres(found, folder=Path(tmp)).init().start()
        try:
            yield server.url(server.create_database("bench")), None
        finally:
            server.stop()


def _games(rng: random.Random, first: int, n: int, events: dict[int, int],
           bots: list[int], blob: int) -> list[dict[str, Any]]:
    """`n` synthetic finished 3p games, numbered from `first`."""
    rows = []
    for k in range(first, first + n):
        board, table = divmod(k, 3)
        seats = rng.sample(bots, 3)
        places = rng.sample([1, 2, 3], 3)
        finished = 1_790_000_000.0 + k * 0.837 + rng.randrange(1000) / 1000
        rows.append({
            "seed": rng.getrandbits(63), "created_at": finished - 30.123,
            "finished_at": finished, "released_at": finished + 2.5,
            "event": events[k // GAMES_PER_EVENT], "seat0": seats[0], "seat1": seats[1],
            "seat2": seats[2], "seat3": None, "places": schema.pack_places(places),
            "template": events[k // GAMES_PER_EVENT], "players": 3,
            "end_code": schema.EndCode.NORMAL, "winner": places.index(1), "forfeit_seat": None,
            "actions": 40 + rng.randrange(30), "rated": True,
            "match_id": f"m-a3pb{board + 1}t{table}", "board": f"arena-3p/b{board + 1}",
            "unit": "", "final": ",".join(str(rng.randrange(40)) for _ in range(3)),
            "blob": rng.randbytes(blob),
        })
    return rows


def fill(archive: Archive, games: int, blob: int) -> float:
    """Write `games` synthetic games; the seconds it took."""
    rng = random.Random(7)
    start = time.perf_counter()
    with archive.begin() as conn:
        bot_ids = intern(conn, schema.bots, "bot_id", [
            {"bot_id": f"b-{i:012x}", "name": f"bot-{i}"} for i in range(BOTS)])
        n_events = (games + GAMES_PER_EVENT - 1) // GAMES_PER_EVENT
        tpl = intern(conn, schema.templates, "hash", [
            {"hash": f"{i:064x}", "body": '{"players":3,"rules":{}}'} for i in range(n_events)])
        conn.execute(sa.insert(schema.events), [
            {"id": tpl[f"{i:064x}"], "kind": "arena", "event_id": f"arena-3p-{i}",
             "name": "arena", "spec": "{}", "status": "finished"} for i in range(n_events)])
    events = {i: tpl[f"{i:064x}"] for i in range(n_events)}
    bots = list(bot_ids.values())
    for first in range(0, games, BATCH):
        rows = _games(rng, first, min(BATCH, games - first), events, bots, blob)
        with archive.begin() as conn:
            conn.execute(sa.insert(schema.games), rows)
    return time.perf_counter() - start


def report(archive: Archive, games: int, label: str) -> None:
    """Print bytes per game of each table and of all of them."""
    sizes = archive.table_bytes()
    for name in ("games",):
        print(f"{archive.dialect} {label} {name}: {sizes[name] / games:.1f} bytes/game")
    print(f"{archive.dialect} {label} total: {sum(sizes.values()) / games:.1f} bytes/game")


def compact(archive: Archive) -> None:
    """Rewrite every table and index full (SQLite's VACUUM, PostgreSQL's VACUUM FULL):
    what the data needs, without the free space that inserts in key order leave."""
    raw = archive.engine.raw_connection()  # both run outside a transaction
    try:
        if archive.dialect == "sqlite":
            raw.cursor().execute("VACUUM")
            raw.cursor().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        else:
            raw.driver_connection.autocommit = True  # type: ignore[union-attr]
            raw.cursor().execute("VACUUM FULL")
            raw.driver_connection.autocommit = False  # type: ignore[union-attr]
    finally:
        raw.close()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=100_000)
    ap.add_argument("--blob", type=int, default=60, help="bytes of transcript per game")
    ap.add_argument("--backend", choices=("sqlite", "postgresql"), action="append",
                    help="default: both")
    ap.add_argument("--url", help="an empty archive database to fill instead")
    args = ap.parse_args(argv)
    for backend in args.backend or ["sqlite", "postgresql"]:
        with _backend(backend, args.url) as (url, path):
            archive = open_archive(url)
            took = fill(archive, args.games, args.blob)
            print(f"{archive.dialect} write: {args.games / took:.0f} games/s")
            print(f"{archive.dialect} blob: {args.blob} bytes/game")
            report(archive, args.games, "as written")
            compact(archive)
            report(archive, args.games, "compacted")
            if path is not None:
                print(f"sqlite file: {path.stat().st_size / args.games:.1f} bytes/game")
            archive.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
