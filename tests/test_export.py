"""`moonshot export` on a real Redis and each real database (SQLite, PostgreSQL): the games
it writes (Parquet and JSON lines, a row per game or per seat) are the games as played,
column by column and transcript byte for byte; its filters take what they name; the
README's DuckDB query answers "on which boards did my bot lose points against the other
version" on a hand-made case; hidden games never leave (a range with nothing public is
refused, and what a range leaves out is said); bad input is one line and writes nothing.

Games are played in this process by `workers.match.MatchHost` with house bots (as in
tests/test_archiving.py) and archived by the archiving job itself."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import redis
import sqlalchemy as sa
from archive_backends import archive_url, postgres  # noqa: F401

from archive import export, mover, reads, schema
from archive.db import Archive, open_archive
from clients.builtin import GreedyBot, RandomBot
from clients.cli import main
from clients.commands import save_redis_url
from clients.redisproc import RedisServer
from clients.selfplay import bot_seed, play_game
from moon import Rules
from moon.transcript import actions_of, read_jsonl, transcript
from store import archiving, bots, ids
from store import matches as store_matches
from store.archiving import Leaving
from store.matches import MatchRecord
from store.pools import Pool
from store.records import Clock, Faults, MatchSpec
from store.refs import EventRef
from store.results import game_quarters, result_of, result_row, transcript_extra
from tournaments.spec import make_spec
from workers import archiving as archiving_job
from workers.match import MatchHost
from workers.queues import create_tournament, rq_connection
from workers.scheduler import advance

ROOT = Path(__file__).resolve().parent.parent
HOUSE = ("house:greedy", "house:random", "house:pimc?samples=2")


@pytest.fixture
def rr(tmp_path: Path) -> Iterator[tuple[redis.Redis, redis.Redis, str]]:
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        yield bots.connect(srv.url), rq_connection(srv.url), srv.url


@pytest.fixture
def arc(archive_url: str) -> Iterator[Archive]:  # noqa: F811
    a = open_archive(archive_url)
    yield a
    a.close()


def _text(t: dict[str, Any]) -> str:
    return json.dumps(t, separators=(",", ":"))


def _play(r: redis.Redis, rq: redis.Redis, players: int, seed: int) -> str:
    """A single match of house bots, hosted here to its end (finished and released)."""
    seats = ["house:greedy", "house:random", "house:greedy", "house:random"][:players]
    spec = MatchSpec.build(ids.new_match_id(), players, seats, seats, seed=seed,
                           rules={"max_hands": "2"})
    store_matches.create_match(r, spec)
    MatchHost(r, spec.match_id, "run-1", rq_conn=rq).host()
    return spec.match_id


def _tournament(r: redis.Redis, rq: redis.Redis, seed: int = 5) -> tuple[EventRef, list[str]]:
    """A round robin of the three house bots: one board, six games, created, not played."""
    spec = make_spec(tournament_id=ids.new_tournament_id(), name="t", players=3,
                     format="round_robin", bots=[(b, b) for b in HOUSE],
                     rules={"max_hands": "1"}, clock=Clock(), faults=Faults(), seed=seed,
                     duplicate="replay", seeding="given")
    create_tournament(r, rq, spec)
    ref = EventRef.tournament(spec.tournament_id)
    advance(r, rq, ref)
    games = [str(g) for g in r.zrange(store_matches.index(ref), 0, -1)]
    assert len(games) == 6
    return ref, games


def _host(r: redis.Redis, rq: redis.Redis, ref: EventRef, games: list[str]) -> None:
    for mid in games:
        MatchHost(r, mid, "run-1", rq_conn=rq).host()
    advance(r, rq, ref)


@pytest.fixture
def played(rr: tuple[redis.Redis, redis.Redis, str], arc: Archive
           ) -> dict[str, MatchRecord]:
    """Singles (three 3p, one 2v2) and a finished tournament, archived: every game as
    Redis held it before it left, by match id, in the order they were archived."""
    r, rq, _ = rr
    singles = [_play(r, rq, 3, seed) for seed in (1, 2, 3)] + [_play(r, rq, 4, 4)]
    ref, games = _tournament(r, rq)
    _host(r, rq, ref, games)
    ordered = archiving.pending(r, 100)
    assert sorted(ordered) == sorted(singles + games)
    before = {mid: store_matches.get_match(r, mid) for mid in ordered}
    assert archiving_job.run_archive(r, rq, lambda: arc)["moved"] == 10
    assert archiving.pending_count(r) == 0
    return before


def _cli(capsys: pytest.CaptureFixture[str], rr: tuple[Any, Any, str], arc: Archive,
         tmp_path: Path, *args: str) -> tuple[int, str, str]:
    """`moonshot export ARGS` in this process, on the test's Redis and archive."""
    url = arc.engine.url.render_as_string(hide_password=False).replace("+psycopg", "")
    url = url.replace("sqlite+pysqlite", "sqlite")
    code = main(["export", "--redis", rr[2], "--archive", url, "--data", str(tmp_path),
                 "--quiet", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _when(t: float) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=round(t * 1_000_000))


def _iso(t: float | None) -> str | None:
    return None if t is None else _when(t).isoformat(timespec="microseconds").replace(
        "+00:00", "Z")


def _expected(rec: MatchRecord, archived_at: float | None = None) -> dict[str, Any]:
    """The games-form columns of a game, from the record Redis held (not the archive)."""
    spec, res, t = rec.spec, rec.result, rec.transcript
    assert res is not None and t is not None and rec.finished_at is not None
    n = spec.players
    forfeit = res.get("forfeit") or {}
    out: dict[str, Any] = {
        "match_id": spec.match_id,
        "event_kind": None if spec.event is None else str(spec.event.kind),
        "event_id": None if spec.event is None else spec.event.id,
        "pool": "3p" if n == 3 else "2v2", "board": str(spec.meta.get("board", "")),
        "unit": str(spec.meta.get("unit", "")), "seed": spec.seed,
        "finished_at": rec.finished_at, "players": n}
    for s in range(4):
        out[f"bot{s}"] = spec.bot_ids[s] if s < n else None
        out[f"name{s}"] = spec.seat_names[s] if s < n else None
        out[f"place{s}"] = res["placement"][s] if s < n else None
        out[f"score{s}"] = res["final"][s % 2 if n == 4 else s] if s < n else None
    out.update({"winner": res["winner"], "end": res["end"],
                "forfeit_seat": forfeit.get("seat"), "forfeit_reason": forfeit.get("reason"),
                "actions": len(actions_of(t)), "rated": spec.event is None
                or spec.event.kind.value != "test"})
    return out


def _parquet_rows(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    return rows


# --------------------------------------------------------------------- the games


def test_both_forms_in_both_formats_are_the_games_as_played(
        capsys: pytest.CaptureFixture[str], rr: tuple[redis.Redis, redis.Redis, str],
        arc: Archive, played: dict[str, MatchRecord], tmp_path: Path) -> None:
    order = list(played)
    out = tmp_path / "games.parquet"
    code, said, err = _cli(capsys, rr, arc, tmp_path, "--out", str(out), "--transcripts")
    assert code == 0, err
    assert err == ""  # nothing hidden, nothing in play, nothing left out
    assert said == f"exported 10 games, {out.stat().st_size} bytes, to {out}\n"
    table = pq.read_table(out)
    assert table.schema.field("finished_at").type == pa.timestamp("us", tz="UTC")
    assert table.schema.field("seed").type == pa.uint64()
    rows = table.to_pylist()
    assert [row["match_id"] for row in rows] == order  # archive order
    for row in rows:
        rec = played[row["match_id"]]
        g = reads.game(arc, row["match_id"])
        assert g is not None
        want = _expected(rec)
        want["finished_at"] = _when(want["finished_at"])
        want["released_at"] = _when(float(g.released_at or 0))
        want["transcript"] = _text(g.transcript())
        assert row == want
        assert row["transcript"] == _text(rec.transcript or {})  # as the referee wrote it

    # JSON lines: each line the transcript byte for byte, then the columns it lacks.
    out = tmp_path / "games.jsonl"
    code, _, err = _cli(capsys, rr, arc, tmp_path, "--out", str(out))
    assert code == 0, err
    lines = out.read_text().splitlines()
    assert len(lines) == 10
    for line, mid in zip(lines, order, strict=True):
        rec = played[mid]
        g = reads.game(arc, mid)
        assert g is not None
        text = _text(g.transcript())
        assert line.startswith(text[:-1] + ",")
        got = json.loads(line)
        t = json.loads(text)
        assert {k: got[k] for k in t} == t
        want = _expected(rec)
        want["finished_at"] = _iso(want["finished_at"])
        want["released_at"] = _iso(g.released_at)
        assert {k: got[k] for k in want} == want  # the shared keys agree
    back = list(read_jsonl(out))
    assert [r_["match_id"] for r_ in back] == order
    assert all(actions_of(r_) == actions_of(played[r_["match_id"]].transcript or {})
               for r_ in back)

    # The seats form, both formats: a row per seat, with its game score in quarters.
    for name in ("seats.parquet", "seats.jsonl"):
        out = tmp_path / name
        code, said, err = _cli(capsys, rr, arc, tmp_path, "--out", str(out), "--form", "seats")
        assert code == 0, err
        assert "(31 seat rows)" in said  # 9 3p games and one 2v2
        seats = (_parquet_rows(out) if name.endswith("parquet")
                 else [json.loads(x) for x in out.read_text().splitlines()])
        want_rows = []
        for mid in order:
            rec = played[mid]
            assert rec.result is not None and rec.finished_at is not None
            n, res = rec.spec.players, rec.result
            for s in range(n):
                want_rows.append({
                    "match_id": mid, "board": str(rec.spec.meta.get("board", "")),
                    "seat": s, "bot_id": rec.spec.bot_ids[s], "name": rec.spec.seat_names[s],
                    "place": res["placement"][s], "score": res["final"][s % 2 if n == 4 else s],
                    "quarters": game_quarters(n, res["placement"], s), "players": n,
                    "pool": str(Pool.of(n)),
                    "finished_at": (_when(rec.finished_at) if name.endswith("parquet")
                                    else _iso(rec.finished_at))})
        assert [{k: row[k] for k in want_rows[0]} for row in seats] == want_rows


def test_parquet_is_written_in_row_groups_and_whole_or_not_at_all(
        arc: Archive, played: dict[str, MatchRecord], tmp_path: Path) -> None:
    out = tmp_path / "x.parquet"
    pages = reads.stream(arc, page=3, with_blob=True)
    written = export.write(pages, out, transcripts=True, row_group=4)
    assert written.games == written.rows == 10 and written.bytes == out.stat().st_size
    assert pq.ParquetFile(out).metadata.num_row_groups == 3  # 4 + 4 + 2
    before = out.read_bytes()

    def failing() -> Iterator[list[reads.ArchivedGame]]:
        yield from reads.stream(arc, page=3)
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        export.write(failing(), out, fmt="jsonl")
    assert out.read_bytes() == before  # the old file, whole
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# ----------------------------------------------------------------------- filters


def _ids(capsys: pytest.CaptureFixture[str], rr: Any, arc: Archive, tmp_path: Path,
         *args: str) -> list[str]:
    out = tmp_path / "f.jsonl"
    code, _, err = _cli(capsys, rr, arc, tmp_path, "--out", str(out), "--no-transcripts",
                        *args)
    assert code == 0, err
    return [json.loads(line)["match_id"] for line in out.read_text().splitlines()]


def test_the_filters_take_what_they_name(
        capsys: pytest.CaptureFixture[str], rr: tuple[redis.Redis, redis.Redis, str],
        arc: Archive, played: dict[str, MatchRecord], tmp_path: Path) -> None:
    order = list(played)
    recs = list(played.values())
    ev = next(rec.spec.event for rec in recs if rec.spec.event is not None)
    assert ev is not None

    def where(pred: Any) -> list[str]:
        return [rec.spec.match_id for rec in recs if pred(rec)]

    assert _ids(capsys, rr, arc, tmp_path, "--pool", "3p") == where(
        lambda x: x.spec.players == 3)
    assert _ids(capsys, rr, arc, tmp_path, "--pool", "2V2") == where(
        lambda x: x.spec.players == 4)
    assert _ids(capsys, rr, arc, tmp_path, "--event", str(ev)) == where(
        lambda x: x.spec.event == ev)
    assert _ids(capsys, rr, arc, tmp_path, "--event", ev.id) == where(  # a bare id reads
        lambda x: x.spec.event == ev)
    assert _ids(capsys, rr, arc, tmp_path, "--bot", "house:random") == where(
        lambda x: "house:random" in x.spec.bot_ids)
    assert _ids(capsys, rr, arc, tmp_path, "--bot", "house:random", "--pool", "2v2") == where(
        lambda x: "house:random" in x.spec.bot_ids and x.spec.players == 4)

    # Time: give the games known finishing times, a day apart.
    day = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    with arc.begin() as conn:
        for k, mid in enumerate(order):
            conn.execute(sa.update(schema.games).where(schema.games.c.match_id == mid)
                         .values(finished_at=day + 86400 * k + 0.25))
    assert _ids(capsys, rr, arc, tmp_path, "--since", "2026-01-03", "--until",
                "2026-01-06T00:00:00.25") == order[2:5]
    assert _ids(capsys, rr, arc, tmp_path, "--since", "2026-01-03T01:00+01:00") == order[2:]
    assert _ids(capsys, rr, arc, tmp_path, "--until", "2026-01-02T00:00:00.25") == order[:1]
    assert _ids(capsys, rr, arc, tmp_path, "--since", "2026-01-03", "--event", str(ev)) == [
        m for m in order[2:] if played[m].spec.event == ev]

    # The bulk read itself, in pages of 2 (keyset on the archive id): every game once.
    for sel in (reads.Selection(), reads.Selection(bot_id="house:greedy"),
                reads.Selection(event=ev), reads.Selection(players=3, since=day + 86400)):
        pages = list(reads.stream(arc, sel, page=2))
        got = [g.id for page in pages for g in page]
        assert got == sorted(set(got)) and len(got) == reads.count_selected(arc, sel) > 0
        assert all(len(p) <= 2 for p in pages)


# ---------------------------------------------------------------- the README query


def _leaving(mid: str, seed: int, seats: list[tuple[str, str]], first: type, test_id: str,
             board: int, at: float) -> Leaving:
    """A hand-made game of a test of a change: seat 0 plays `first`, greedy and random the
    others, on `board`'s deal (its seed)."""
    rules = Rules.make(3, {"max_hands": "2"})
    record = play_game(rules, seed, [first(bot_seed(seed, 0)), GreedyBot(bot_seed(seed, 1)),
                                     RandomBot(bot_seed(seed, 2))], [n for _, n in seats])
    ref = EventRef.test(test_id)
    spec = MatchSpec.build(mid, 3, [b for b, _ in seats], [n for _, n in seats],
                           rules={"max_hands": "2"}, seed=seed, event=ref,
                           meta={"board": f"{test_id}/p{board}", "unit": f"p{board}"})
    t = transcript(rules, seed, actions_of(record), [n for _, n in seats],
                   extra=transcript_extra(spec, [], None, []))
    res = result_of(t)
    row = result_row(mid, spec.bot_ids, res, f"{test_id}/p{board}", f"p{board}",
                     len(actions_of(t)))
    return Leaving(spec=spec, created_at=at, finished_at=at, released_at=at, rated=False,
                   row=row, transcript=t, result=res)


def _readme_query() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Export for analysis"):]
    found = re.search(r"```sql\n(.*?)```", section, re.S)
    assert found is not None, "the README's export section shows no SQL query"
    return found.group(1)


def test_the_readmes_query_finds_the_boards_lost_to_the_other_version(
        capsys: pytest.CaptureFixture[str], rr: tuple[redis.Redis, redis.Redis, str],
        arc: Archive, tmp_path: Path) -> None:
    """Boards 1 to 5 of a test, each played by mybot-v2 and by mybot-v1 in seat 0 against
    the same two house bots; a game of other bots on board 2 besides. v2 plays randomly on
    boards 1 to 4 and greedily on board 5, v1 the other way round. On these deals seat 0
    gets (place, quarters, score):

        board  seed  v2 (new)      v1 (old)      v2 lost (quarters, score)
        1      3     2nd, 2, -6    2nd, 2, 4     0, 10 (same place, fewer points)
        2      5     3rd, 0, -5    1st, 4, 5     4, 10
        3      13    2nd, 2, -3    2nd, 2, 6     0, 9
        4      10    2nd, 2, 4     1st, 4, 8     2, 4
        5      1     2nd, 2, 4     3rd, 0, -10   -2, -14 (won)

    So the answer, in game score: board 2 (4 quarters, 10 points), then board 4 (2, 4)."""
    test_id = "c-hand1"
    new, old = ("b-new1", "mybot-v2"), ("b-old1", "mybot-v1")
    others = [("house:greedy", "house:greedy"), ("house:random", "house:random")]
    games = []
    for board, seed in enumerate((3, 5, 13, 10, 1), start=1):
        new_first, old_first = (RandomBot, GreedyBot) if board < 5 else (GreedyBot, RandomBot)
        games.append(_leaving(f"{test_id}-p{board}-c", seed, [new, *others], new_first,
                              test_id, board, 1e9 + board))
        games.append(_leaving(f"{test_id}-p{board}-b", seed, [old, *others], old_first,
                              test_id, board, 1e9 + board + 0.5))
    games.append(_leaving(f"{test_id}-p2-x", 5, [("b-x1", "x"), *others], GreedyBot, test_id,
                          2, 1e9 + 9))
    assert mover.write(arc, games) == 11
    scores = {g.match_id: (g.result["placement"][0], g.result["final"][0]) for g in games}
    assert scores[f"{test_id}-p2-c"] == (3, -5) and scores[f"{test_id}-p2-b"] == (1, 5)
    assert scores[f"{test_id}-p4-c"] == (2, 4) and scores[f"{test_id}-p4-b"] == (1, 8)

    out = tmp_path / "seats.parquet"
    code, _, err = _cli(capsys, rr, arc, tmp_path, "--out", str(out), "--form", "seats",
                        "--event", f"test:{test_id}")
    assert code == 0, err
    query = _readme_query().replace("'seats.parquet'", f"'{out}'")
    got = duckdb.sql(query).fetchall()
    assert got == [(f"{test_id}/p2", 4, 10), (f"{test_id}/p4", 2, 4)]


# ------------------------------------------------------------------ hidden games


def test_games_whose_boards_are_not_released_never_leave(
        capsys: pytest.CaptureFixture[str], rr: tuple[redis.Redis, redis.Redis, str],
        arc: Archive, tmp_path: Path) -> None:
    r, rq, _ = rr
    singles = [_play(r, rq, 3, seed) for seed in (1, 2)]
    archiving_job.run_archive(r, rq, lambda: arc)
    ref, games = _tournament(r, rq)
    _host(r, rq, ref, games[:3])  # half the board played: finished, not released
    assert all(store_matches.get_match(r, m).status == "finished" for m in games[:3])
    assert not any(store_matches.get_match(r, m).released for m in games)

    # The tournament alone: nothing in it is public yet, so nothing is written.
    out = tmp_path / "t.parquet"
    code, said, err = _cli(capsys, rr, arc, tmp_path, "--out", str(out), "--event", str(ref))
    assert (code, said) == (1, "")
    assert err == (f"moonshot: nothing to export yet: no game of {ref} is public; left out: "
                   "3 finished games hidden until their boards are released; 3 games still "
                   f"in play; the games {ref} plays from now on (it is still running); "
                   "nothing written\n")
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]

    # The pool and a bot: what is public is written, and what is left out said.
    for args in (("--pool", "3p"), ("--bot", "house:greedy"), ("--pool", "3p", "--until",
                                                               "2999-01-01")):
        out = tmp_path / "p.jsonl"
        code, said, err = _cli(capsys, rr, arc, tmp_path, "--out", str(out), *args)
        assert code == 0, err
        later = ("; games that finish between now and --until 2999-01-01T00:00:00Z"
                 if "--until" in args else "")
        assert err == ("moonshot export: left out: 3 finished games hidden until their boards "
                       f"are released; 3 games still in play{later}\n")
        text = out.read_text()
        assert [json.loads(x)["match_id"] for x in text.splitlines()] == singles
        assert ref.id not in text  # not a byte of the tournament

    # The whole board played and released: its games are public, still in Redis, and
    # exported from there, transcripts byte for byte; once archived, the same rows.
    _host(r, rq, ref, games[3:])
    assert all(store_matches.get_match(r, m).released for m in games)
    assert set(archiving.pending(r, 100)) == set(games)
    out = tmp_path / "t.parquet"
    code, said, err = _cli(capsys, rr, arc, tmp_path, "--out", str(out), "--event", str(ref),
                           "--transcripts")
    assert code == 0 and err == "", err
    from_redis = _parquet_rows(out)
    assert sorted(row["match_id"] for row in from_redis) == sorted(games)
    for row in from_redis:
        rec = store_matches.get_match(r, row["match_id"])
        assert row["transcript"] == _text(rec.transcript or {})
        want = _expected(rec)
        want["finished_at"] = _when(want["finished_at"])
        assert {k: row[k] for k in want} == want
    archiving_job.run_archive(r, rq, lambda: arc)
    assert archiving.pending_count(r) == 0
    code, _, err = _cli(capsys, rr, arc, tmp_path, "--out", str(out), "--event", str(ref),
                        "--transcripts")
    assert code == 0, err
    def key(row: dict[str, Any]) -> str:
        return str(row["match_id"])

    assert sorted(_parquet_rows(out), key=key) == sorted(from_redis, key=key)


def test_a_game_in_both_stores_is_exported_once(
        capsys: pytest.CaptureFixture[str], rr: tuple[redis.Redis, redis.Redis, str],
        arc: Archive, tmp_path: Path) -> None:
    """A batch written to the archive and not yet dropped from Redis (a job killed between
    the two): each game once."""
    r, rq, _ = rr
    played = [_play(r, rq, 3, seed) for seed in (7, 8, 9)]
    leaving, _ = archiving.read(r, played[:2])
    mover.write(arc, leaving)
    assert archiving.pending(r, 10) == played
    assert _ids(capsys, rr, arc, tmp_path) == played


# --------------------------------------------------------------------- bad input


def _strays(folder: Path) -> list[str]:
    """What an export left in `folder`: its output or a temporary file."""
    return [p for p in os.listdir(folder) if p.startswith((".", "x."))]


@pytest.mark.parametrize("archive_url", ["sqlite"], indirect=True)
def test_bad_input_is_one_line_and_writes_nothing(
        capsys: pytest.CaptureFixture[str], rr: tuple[redis.Redis, redis.Redis, str],
        arc: Archive, tmp_path: Path) -> None:
    r, rq, _ = rr
    _play(r, rq, 3, 1)
    archiving_job.run_archive(r, rq, lambda: arc)
    out = str(tmp_path / "x.parquet")
    cases = [
        (["--pool", "5p"], 2, "--pool: must be 3p or 2v2, got '5p'"),
        (["--event", "tournament:zz"], 2, "--event: 'zz' is not the id of a tournament"),
        (["--event", "league:t-1"], 2, "'league' is not a kind of event"),
        (["--event", "t-0000000000"], 1, "no tournament t-0000000000 in the archive or the stack"),
        (["--event", "arena:3p"], 1, "no arena 3p in the archive or the stack"),
        (["--bot", "no such bot"], 2, "is not a bot id (b-...), a house bot (house:...) or"),
        (["--bot", "b-0123456789ab"], 1, "no bot with id or name 'b-0123456789ab'"),
        (["--bot", "somebody"], 1, "no bot with id or name 'somebody'"),
        (["--bot", "house:nosuch"], 2, "--bot:"),
        (["--since", "2026-02-01", "--until", "2026-01-01"], 2,
         "--until 2026-01-01 is not after --since 2026-02-01"),
        (["--since", "2026-01-01", "--until", "2026-01-01T00:00Z"], 2, "is not after"),
        (["--since", "yesterday"], 2, "--since 'yesterday' is not an ISO date or time"),
        (["--until", "2026-13-01"], 2, "--until '2026-13-01' is not an ISO date or time"),
        (["--since", "2999-01-01"], 1, "--since 2999-01-01T00:00:00Z is in the future"),
        (["--form", "seats", "--transcripts"], 2, "--transcripts goes with --form games"),
    ]
    for args, code, said in cases:
        got, stdout, err = _cli(capsys, rr, arc, tmp_path, "--out", out, *args)
        assert (got, stdout) == (code, ""), (args, err)
        assert said in err and err.count("\n") == 1, (args, err)
        assert not _strays(tmp_path), args

    def run(*args: str) -> tuple[int, str]:
        code = main(["export", "--data", str(tmp_path), "--quiet", *args])
        out_, err = capsys.readouterr()
        assert out_ == "" and err.count("\n") == 1, err
        return code, err

    redis_url = rr[2]
    sqlite = f"sqlite:///{tmp_path / 'none.sqlite3'}"
    code, err = run("--out", str(tmp_path / "x.csv"), "--redis", redis_url)
    assert code == 2 and "say --format parquet or jsonl" in err
    code, err = run("--out", str(tmp_path / "no" / "x.jsonl"), "--redis", redis_url)
    assert code == 2 and "no folder" in err
    code, err = run("--out", out, "--redis", redis_url, "--archive", "mysql://h/db")
    assert code == 2 and "is not SQLite or PostgreSQL" in err
    code, err = run("--out", out, "--redis", redis_url, "--archive", sqlite)
    assert code == 1 and f"no archive at {tmp_path / 'none.sqlite3'}" in err
    code, err = run("--out", out, "--redis", "redis://127.0.0.1:1/0", "--archive", sqlite)
    assert code == 1 and "cannot reach Redis at redis://127.0.0.1:1/0 (--redis)" in err
    archiving.set_url(r, "sqlite:////elsewhere/archive.sqlite3")
    code, err = run("--out", out, "--redis", redis_url, "--archive", sqlite)
    assert code == 1 and "archives to sqlite:////elsewhere/archive.sqlite3, not to" in err
    assert not _strays(tmp_path)
    assert not (tmp_path / "none.sqlite3").exists()  # an export creates no archive


# ------------------------------------------------------------------ as a process


def test_the_command_as_a_process_finds_the_stack_as_moonshot_up_leaves_it(
        rr: tuple[redis.Redis, redis.Redis, str], tmp_path: Path) -> None:
    """A data folder as `moonshot up` keeps it (its archive, the Redis URL noted) and the
    stack's archive noted in Redis: `moonshot export --data DIR` needs nothing else."""
    r, rq, url = rr
    data = tmp_path / "moonshot-data"
    data.mkdir()
    arc = open_archive(f"sqlite:///{data / 'archive.sqlite3'}")
    try:
        played = [_play(r, rq, 3, seed) for seed in (1, 2)] + [_play(r, rq, 4, 3)]
        archiving_job.run_archive(r, rq, lambda: arc)
    finally:
        arc.close()
    note = save_redis_url(data, url)  # as `moonshot up` does while it runs
    assert oct(note.stat().st_mode & 0o777) == "0o600"
    env = {k: v for k, v in os.environ.items()
           if k not in ("REDIS_URL", "MOONSHOT_ARCHIVE", "MOONSHOT_DATA")}
    out = tmp_path / "g.parquet"
    proc = subprocess.run([sys.executable, "-m", "clients.cli", "export", "--data", str(data),
                           "--out", str(out), "--pool", "3p"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout == (f"exported 2 games in pool 3p, {out.stat().st_size} bytes, "
                           f"to {out}\n")
    assert [row["match_id"] for row in _parquet_rows(out)] == played[:2]
    # The stack's archive noted in Redis is the one read, wherever --data points.
    archiving.set_url(r, f"sqlite:///{data / 'archive.sqlite3'}")
    env["REDIS_URL"] = url
    proc = subprocess.run([sys.executable, "-m", "clients.cli", "export", "--data",
                           str(tmp_path), "--out", str(tmp_path / "g.jsonl")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert [x["match_id"] for x in read_jsonl(tmp_path / "g.jsonl")] == played
    # No Redis at all: the archive alone, and a line says what that cannot count.
    (data / "redis-url").write_text("redis://127.0.0.1:1/0\n")
    env.pop("REDIS_URL")
    proc = subprocess.run([sys.executable, "-m", "clients.cli", "export", "--data", str(data),
                           "--out", str(out)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ("moonshot export: left out: every game not archived yet, public or "
                           "not (no Redis answered at redis://127.0.0.1:1/0: give --redis to "
                           "count them)\n")
    assert len(_parquet_rows(out)) == 3
