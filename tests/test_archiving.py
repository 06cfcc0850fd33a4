"""Archiving on a real Redis and each real database (SQLite, PostgreSQL): finished, public
games leave Redis entirely, come back from the archive byte for byte, are written once
whatever crashes between the two stores, wait in Redis while the archive is away, and an
open tournament's standings still see every game.

Games are played in this process by `workers.match.MatchHost` with house bots in every
seat (no bot process, no worker): each is an ordinary hosted game, finished and released
as the stack finishes and releases it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from archive_backends import archive_url, postgres  # noqa: F401

from archive import mover, reads
from archive.db import Archive, open_archive
from archive.errors import Unavailable
from clients.redisproc import RedisServer
from store import archiving, bots, ids, keys, steps
from store import arena as store_arena
from store import matches as store_matches
from store import tournaments as store_t
from store.pools import Pool
from store.records import Clock, Faults, MatchSpec
from store.refs import EventRef
from tournaments.spec import make_spec
from workers import archiving as archiving_job
from workers.fit import run_fits
from workers.match import MatchHost
from workers.queues import create_tournament, rq_connection
from workers.scheduler import advance

HOUSE = ("house:greedy", "house:random", "house:pimc?samples=2")


@pytest.fixture
def rr(tmp_path: Path) -> Iterator[tuple[redis.Redis, redis.Redis]]:
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        yield bots.connect(srv.url), rq_connection(srv.url)


@pytest.fixture
def arc(archive_url: str) -> Iterator[Archive]:  # noqa: F811
    a = open_archive(archive_url)
    yield a
    a.close()


def _play(r: redis.Redis, rq: redis.Redis, players: int = 3, seed: int = 1) -> str:
    """A single match of house bots, hosted here to its end (finished and released)."""
    seats = ["house:greedy", "house:random", "house:greedy", "house:random"][:players]
    spec = MatchSpec.build(ids.new_match_id(), players, seats, seats, seed=seed,
                           rules={"max_hands": "2"})
    store_matches.create_match(r, spec)
    MatchHost(r, spec.match_id, "run-1", rq_conn=rq).host()
    return spec.match_id


def _text(t: dict[str, Any]) -> str:
    return json.dumps(t, separators=(",", ":"))


def _leaves_no_trace(r: redis.Redis, mid: str, bot_ids: list[str]) -> None:
    for key in (keys.match(mid), keys.result(mid), keys.match_log(mid), keys.conn(mid),
                keys.replies(mid), keys.lease(mid)):
        assert not r.exists(key), key
    assert r.zscore(keys.MATCHES, mid) is None
    assert all(r.zscore(keys.bot_matches(b), mid) is None for b in bot_ids)
    assert all(r.zscore(keys.results(p), mid) is None for p in Pool)
    assert r.zscore(keys.ARCHIVE_PENDING, mid) is None


def test_finished_games_leave_redis_and_come_back_byte_for_byte(
        rr: tuple[redis.Redis, redis.Redis], arc: Archive) -> None:
    r, rq = rr
    played = [_play(r, rq, 3, seed) for seed in range(1, 5)] + [_play(r, rq, 4, 9)]
    before = {mid: store_matches.get_match(r, mid) for mid in played}
    assert archiving.pending(r, 100) == played  # released as they ended, in order
    out = archiving_job.run_archive(r, rq, lambda: arc)
    assert out["moved"] == len(played)
    assert archiving.pending_count(r) == 0
    for mid in played:
        rec = before[mid]
        assert rec.transcript is not None
        _leaves_no_trace(r, mid, list(rec.spec.bot_ids))
        got = reads.game(arc, mid)
        assert got is not None and got.bot_ids == rec.spec.bot_ids
        assert _text(got.transcript()) == _text(rec.transcript)  # byte for byte
        assert got.result() == rec.result
        assert got.shared["rules"] == rec.spec.rules.options()
        assert got.shared["fault_policy"] == {"max_strikes": 3,
                                              "disconnect_grace_ms": 30000}
        assert got.rated
    assert [g.match_id for g in reads.games(arc, bot_id="house:greedy")] == played[::-1]
    assert [g.match_id for g in reads.games(arc, players=4)] == [played[-1]]
    assert reads.count(arc) == len(played) and reads.count(arc, Pool.TEAMS) == 1
    rows = reads.pool_rows(arc, Pool.THREE)
    assert [row["match_id"] for row in rows] == played[:-1]
    # The RQ job and its result went too: nothing of the game is left in Redis.
    assert not [k for k in rq.keys("rq:*") if any(m.encode() in k for m in played)]


def test_a_batch_written_and_not_dropped_is_written_once(
        rr: tuple[redis.Redis, redis.Redis], arc: Archive) -> None:
    """A job killed between the archive's commit and Redis's drop: the games are in both
    places (readable from either), and the next job writes them again as a no-op and
    drops them: each game once in the archive."""
    r, rq = rr
    played = [_play(r, rq, 3, seed) for seed in (11, 12)]
    leaving, gone = archiving.read(r, played)
    assert not gone
    assert mover.write(arc, leaving) == 2  # ... and the job dies here
    assert all(r.exists(keys.match(mid)) for mid in played)
    assert all(reads.game(arc, mid) is not None for mid in played)
    out = archiving_job.run_archive(r, rq, lambda: arc)
    assert out["moved"] == 2 and reads.count(arc) == 2
    assert mover.write(arc, leaving) == 0  # and again: nothing new
    assert reads.count(arc) == 2
    assert not any(r.exists(keys.match(mid)) for mid in played)


def test_the_archive_away_keeps_the_games_in_redis_until_it_is_back(
        rr: tuple[redis.Redis, redis.Redis], arc: Archive) -> None:
    r, rq = rr
    played = [_play(r, rq, 3, seed) for seed in (21, 22, 23)]

    def away() -> Archive:
        raise Unavailable("archive sqlite:///x: cannot open it: disk I/O error")

    out = archiving_job.run_archive(r, rq, away)
    assert "failed" in out and out["moved"] == 0
    assert archiving.pending(r, 10) == played
    assert all(store_matches.get_match(r, mid).transcript is not None for mid in played)
    assert archiving.asks().owed(r)  # asked again: recovery queues the next try
    out = archiving_job.run_archive(r, rq, lambda: arc)  # back
    assert out["moved"] == 3 and reads.count(arc) == 3


def test_an_open_tournaments_standings_see_its_archived_games(
        rr: tuple[redis.Redis, redis.Redis], arc: Archive) -> None:
    """A tournament's games leave Redis as their boards are released, while the
    tournament still runs; its standings read the rows the archive step kept."""
    r, rq = rr
    named = [(b, b) for b in HOUSE]
    spec = make_spec(tournament_id=ids.new_tournament_id(), name="t", players=3,
                     format="round_robin", bots=named, rules={"max_hands": "1"},
                     clock=Clock(), faults=Faults(), seed=5, duplicate="replay",
                     seeding="given")
    create_tournament(r, rq, spec)
    ref = EventRef.tournament(spec.tournament_id)
    advance(r, rq, ref)
    games = [str(g) for g in r.zrange(keys.tournament_matches(spec.tournament_id), 0, -1)]
    assert len(games) == 6  # one board, every seating
    for mid in games:
        MatchHost(r, mid, "run-1", rq_conn=rq).host()
    advance(r, rq, ref)
    assert store_t.info(r, spec.tournament_id).status == "finished"
    before = store_t.results(r, spec.tournament_id, released_only=True)
    assert sorted(before) == sorted(games)
    archiving_job.run_archive(r, rq, lambda: arc)
    assert not any(r.exists(keys.match(mid)) for mid in games)
    after = store_t.results(r, spec.tournament_id, released_only=True)
    assert after == before
    assert [row["match_id"] for row in reads.event_rows(arc, ref)] == games
    # The ended tournament follows its games once its own rating fit is done.
    assert archiving.ended_events(r) == [ref]
    assert archiving.event_snapshot(r, ref) is None  # its own fit is still owed
    run_fits(r, "3p", archive=lambda: arc)
    out = archiving_job.run_archive(r, rq, lambda: arc)
    assert out["events"] == 1 and archiving.ended_events(r) == []
    # Nothing of it is left in Redis (but RQ's queued jobs: no worker runs them here).
    assert not [k for k in r.keys("ms:*") if spec.tournament_id in k]
    assert not any(spec.tournament_id in m for k in r.keys("ms:*") if r.type(k) == "zset"
                   for m in r.zrange(k, 0, -1))
    assert spec.tournament_id not in r.zrange(keys.TOURNAMENTS, 0, -1)
    ended = reads.event(arc, ref)
    assert ended is not None and ended.status == "finished" and ended.name == "t"
    assert ended.summary["released"] == list(before) and ended.summary["rating"]
    assert ended.stream()[-1][1].startswith('{"v"') or '"tournament_finished"' in \
        ended.stream()[-1][1]
    assert [e.ref for e in reads.events(arc, ref.kind)] == [ref]
    got = reads.game(arc, games[0])
    assert got is not None and got.event == ref
    assert got.board == f"{spec.tournament_id}/x1-r1-t1"


def test_an_older_stacks_finished_games_and_events_move_out_resumably(
        rr: tuple[redis.Redis, redis.Redis], arc: Archive) -> None:
    """A stack that ran before the archive: its finished, public games sit in Redis with
    nothing queueing them, and its ended tournaments too. On the first start with an
    archive, recovery walks every match a chunk at a time (from a cursor: a walk killed
    half-way goes on where it was) and queues them, then the ended events; the job moves
    them all, each once."""
    from workers.recovery import nudge

    r, rq = rr
    played = [_play(r, rq, 3, seed) for seed in range(31, 36)]
    named = [(b, b) for b in HOUSE]
    spec = make_spec(tournament_id=ids.new_tournament_id(), name="old", players=3,
                     format="round_robin", bots=named, rules={"max_hands": "1"},
                     clock=Clock(), faults=Faults(), seed=5, duplicate="replay",
                     seeding="given")
    create_tournament(r, rq, spec)
    ref = EventRef.tournament(spec.tournament_id)
    advance(r, rq, ref)
    games = [str(g) for g in r.zrange(keys.tournament_matches(spec.tournament_id), 0, -1)]
    for mid in games:
        MatchHost(r, mid, "run-1", rq_conn=rq).host()
    advance(r, rq, ref)
    run_fits(r, "3p")
    # As an older version left it: nothing queued, no ended event noted, no archive;
    # the tournament's games from before boards were released (no release time), and
    # many games created in one instant (one score in the index).
    r.delete(keys.ARCHIVE_PENDING, keys.ARCHIVE_EVENTS)
    for mid in games:
        r.hdel(keys.match(mid), "released")
    r.zadd(keys.MATCHES, dict.fromkeys(played[:4], 1.0), xx=True)
    # First start with an archive: a walk killed after its first chunk ...
    queued, done = archiving.backfill(r, limit=2)
    assert (queued, done) == (2, False)
    # ... goes on from its cursor, as recovery runs it, a chunk each pass.
    archiving.set_url(r, "sqlite:///the-archive")
    for _ in range(10):
        nudge(r, rq)
        if r.get(keys.ARCHIVE_BACKFILL_DONE):
            break
    assert set(archiving.pending(r, 100)) == set(played) | set(games)
    assert archiving.ended_events(r) == [ref]
    out = archiving_job.run_archive(r, rq, lambda: arc)
    assert out["moved"] == len(played) + len(games) and out["events"] == 1
    assert reads.count(arc) == len(played) + len(games)
    assert not r.keys("ms:match:*")
    assert reads.event(arc, ref) is not None


def test_a_fit_keeps_the_pools_tables_in_the_archive_about_once_an_hour(
        rr: tuple[redis.Redis, redis.Redis], arc: Archive,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """How ratings stood through a season: a fit with an archive keeps every method's
    table there, once per SNAPSHOT_EVERY_S; the tables read back as they were stored."""
    from store import ratings as store_ratings
    from store.rating_tables import OFFICIAL, RatingTable
    from workers import fit

    r, rq = rr
    for seed in range(1, 4):
        _play(r, rq, 3, seed)
    archiving_job.run_archive(r, rq, lambda: arc)
    fit.fit_pool(r, "3p", lambda: arc)
    first = reads.rating_snapshot(arc, Pool.THREE, OFFICIAL)
    assert first is not None
    stored = store_ratings.load(r, "3p")
    assert stored is not None and RatingTable.from_json(first[1]) == stored
    assert stored.games == 3
    fit.fit_pool(r, "3p", lambda: arc)  # within the hour: no second snapshot
    assert len(reads.rating_snapshot_times(arc, Pool.THREE, OFFICIAL)) == 1
    monkeypatch.setattr(fit, "SNAPSHOT_EVERY_S", 0.0)
    _play(r, rq, 3, 7)
    fit.fit_pool(r, "3p", lambda: arc)
    times = reads.rating_snapshot_times(arc, Pool.THREE, OFFICIAL)
    assert len(times) == 2
    latest = reads.rating_snapshot(arc, Pool.THREE, OFFICIAL)
    assert latest is not None and RatingTable.from_json(latest[1]).games == 4
    as_of_first = reads.rating_snapshot(arc, Pool.THREE, OFFICIAL, at=times[0])
    assert as_of_first == first
    assert reads.rating_snapshot(arc, Pool.THREE, OFFICIAL, at=times[0] - 1) is None
    assert reads.rating_snapshot(arc, Pool.TEAMS, OFFICIAL) is None


def test_an_arena_goes_on_dealing_after_its_games_are_archived(
        rr: tuple[redis.Redis, redis.Redis], arc: Archive) -> None:
    """The archive drops an arena's released games from its recorded set: the games
    recorded after that are still numbered past the step's cursor, so the step folds
    them, frees their bots and deals new boards (numbering them by the set's size once
    stopped the arena after its first archived batch)."""
    r, rq = rr
    store_arena.start(r, store_arena.ArenaSpec.build(
        "3p", {"max_hands": "1"}, seed=3, max_wait_ms=0,
        anchors=[*HOUSE, "house:pimc?samples=1", "house:pimc?samples=3", "house:pimc?samples=4"]))
    ref = EventRef.arena("3p")
    hosted: list[str] = []
    for _ in range(4):
        advance(r, rq, ref)
        games = [str(m) for m in r.zrange(keys.arena_games("3p"), 0, -1)]
        fresh = [m for m in games if m not in hosted]
        assert fresh, store_arena.info(r, "3p").step["holding"]
        for mid in fresh:
            MatchHost(r, mid, "run-1", rq_conn=rq).host()
        hosted += fresh
        advance(r, rq, ref)  # folds and releases them
        assert archiving_job.run_archive(r, rq, lambda: arc)["moved"] == len(fresh)
    assert reads.count(arc) == len(hosted)
    s = steps.scheduling(r, ref)
    assert s.recorded == s.done == len(hosted)  # the games dropped count ...
    assert r.zcard(keys.arena_recorded("3p")) == 0  # ... and left Redis
    in_play = r.zcard(keys.arena_games("3p"))  # dealt by the last pass: in flight
    assert s.games == len(hosted) + in_play


def test_a_step_that_dies_after_releasing_leaves_its_games_for_the_next_pass(
        rr: tuple[redis.Redis, redis.Redis], arc: Archive,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A step killed after it released a board but before its save: nothing of that board
    is queued for the archive yet (the save queues it), so an archiving job in between
    takes none of it, and the pass redone folds the board and ends the tournament."""
    from workers import scheduler

    class Killed(Exception):
        pass

    r, rq = rr
    spec = make_spec(tournament_id=ids.new_tournament_id(), name="crash", players=3,
                     format="round_robin", bots=[(b, b) for b in HOUSE],
                     rules={"max_hands": "1"}, clock=Clock(), faults=Faults(), seed=5,
                     duplicate="replay", seeding="given")
    create_tournament(r, rq, spec)
    ref = EventRef.tournament(spec.tournament_id)
    advance(r, rq, ref)
    games = [str(g) for g in r.zrange(keys.tournament_matches(spec.tournament_id), 0, -1)]
    for mid in games:
        MatchHost(r, mid, "run-1", rq_conn=rq).host()
    real = scheduler.failpoints.reached

    def dies(name: str) -> None:
        if name == "step.before-save":
            raise Killed(name)
        real(name)

    monkeypatch.setattr(scheduler.failpoints, "reached", dies)
    with pytest.raises(Killed):
        advance(r, rq, ref)
    monkeypatch.setattr(scheduler.failpoints, "reached", real)
    assert all(r.hget(keys.match(m), "released") for m in games)  # public ...
    assert archiving.pending_count(r) == 0  # ... and not yet the archive's
    assert archiving_job.run_archive(r, rq, lambda: arc).get("moved", 0) == 0
    r.delete(keys.event_lock(ref))  # the dead run's lock (recovery frees it)
    advance(r, rq, ref)
    assert store_t.info(r, spec.tournament_id).status == "finished"
    assert sorted(archiving.pending(r, 100)) == sorted(games)
    assert archiving_job.run_archive(r, rq, lambda: arc)["moved"] == len(games)
    assert reads.count(arc) == len(games)


def test_an_ended_event_moves_only_when_no_step_is_owed_and_no_step_runs_after(
        rr: tuple[redis.Redis, redis.Redis], arc: Archive) -> None:
    """The archive copies and deletes an ended event under its step's lock and only when
    no step is owed; a step job that comes after finds no event and writes nothing."""
    r, rq = rr
    spec = make_spec(tournament_id=ids.new_tournament_id(), name="moved", players=3,
                     format="round_robin", bots=[(b, b) for b in HOUSE],
                     rules={"max_hands": "1"}, clock=Clock(), faults=Faults(), seed=5,
                     duplicate="replay", seeding="given")
    create_tournament(r, rq, spec)
    ref = EventRef.tournament(spec.tournament_id)
    advance(r, rq, ref)
    for mid in [str(g) for g in r.zrange(keys.tournament_matches(spec.tournament_id), 0, -1)]:
        MatchHost(r, mid, "run-1", rq_conn=rq).host()
    advance(r, rq, ref)
    assert store_t.info(r, spec.tournament_id).status == "finished"
    run_fits(r, "3p", archive=lambda: arc)  # its own fit, owed before it can move
    steps.asks(ref).ask(r)  # a step is owed (a late ask): the event waits for it
    out = archiving_job.run_archive(r, rq, lambda: arc)
    assert out["moved"] > 0 and r.exists(keys.event(ref))
    lock = steps.step_lock(ref, 60_000)
    assert lock.acquire(r)  # a step runs: the event waits for it too
    steps.asks(ref).started(r)
    steps.asks(ref).take(r)
    archiving.asks().ask(r)
    archiving_job.run_archive(r, rq, lambda: arc)
    assert r.exists(keys.event(ref))
    lock.release(r)
    archiving.asks().ask(r)
    archiving_job.run_archive(r, rq, lambda: arc)
    assert not r.exists(keys.event(ref)) and reads.event(arc, ref) is not None
    assert set(r.keys(f"ms:*{spec.tournament_id}*")) == set()
    assert advance(r, rq, ref)["skipped"] == "no such event in Redis"
    assert set(r.keys(f"ms:*{spec.tournament_id}*")) == set()


def test_the_fit_reads_the_archive_as_columns_and_fits_what_the_rows_fit(
        rr: tuple[redis.Redis, redis.Redis], arc: Archive) -> None:
    """The fit job's bulk read (archive columns, then what Redis holds, a game in both
    once) is the same pool as the rows: the same batch fit, and every method agrees."""
    from ratings import games_from_rows, methods
    from ratings.batch import BatchFit
    from workers import fit

    r, rq = rr
    played = [_play(r, rq, 3, seed) for seed in range(1, 9)] + [_play(r, rq, 4, 11)]
    redis_rows = {row["match_id"]: row for row in store_matches.pool_results(r, "3p")}
    leaving, gone = archiving.read(r, played[:5])
    mover.write(arc, leaving)
    archiving.drop(r, leaving[:4], gone)  # the fifth: written and not dropped (in both)
    table = fit.pool_table(r, "3p", lambda: arc)
    assert sorted(table.game_id.tolist()) == sorted(played[:8])
    rows = [redis_rows[m] for m in played[:8]]
    want = BatchFit().rate(games_from_rows(rows), 1.0)
    got = BatchFit().rate_table(table, 1.0)
    assert got == want
    for name in methods.names():  # (a method may start from its last fit: the same fit)
        m = methods.get(name)
        a, b = m.rate_table(table, 2e9), m.rate(games_from_rows(rows), 2e9)
        assert (a.games, [x.bot_id for x in a.rows]) == (b.games,
                                                         [x.bot_id for x in b.rows])
        assert all(abs(x.rating - y.rating) < 1e-6
                   for x, y in zip(a.rows, b.rows, strict=True)), name
    teams = fit.pool_table(r, "2v2", lambda: arc)
    assert teams.game_id.tolist() == [played[-1]] and teams.seat_bot.shape == (1, 4)


def test_the_pools_columns_read_joined_are_the_rows_to_the_bit(
        rr: tuple[redis.Redis, redis.Redis], arc: Archive,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The fit's read takes each column as one text from the database; it gives the
    columns the driver's rows give, release times to the bit, games without a board or
    a release time included, and falls back to the rows when a value holds its
    separator."""
    import sqlalchemy as sa

    from archive import schema

    r, rq = rr
    played = [_play(r, rq, 3, seed) for seed in range(1, 6)]
    leaving, _ = archiving.read(r, played)
    mover.write(arc, leaving)
    g = schema.games.c
    with arc.begin() as conn:  # boards of two games and of one, one without; times odd
        for mid, board, when in zip(played, ["b-1", "b-1", "", "b/2", "b-1"],
                                    [1790000001.2345678, None, 0.1, 1e-300, 2.0**40 / 3],
                                    strict=True):
            conn.execute(sa.update(schema.games).where(g.match_id == mid)
                         .values(board=board, released_at=when))
    teams = [_play(r, rq, 4, seed) for seed in (7, 8)]
    mover.write(arc, archiving.read(r, teams)[0])
    for pool, n in (("3p", 5), ("2v2", 2)):
        with arc.connect() as conn:
            joined = reads._joined_columns(conn, Pool.parse(pool))
            rows = reads._row_columns(conn, Pool.parse(pool))
        assert joined is not None and len(joined[0]) == n
        # Each in its own ids' order: NaN for NaN, every double's repr, every seat.
        mine = sorted(range(n), key=joined[0].__getitem__)
        theirs = sorted(range(n), key=rows[0].__getitem__)
        for x, y in zip(joined, rows, strict=True):
            assert str([x[i] for i in mine]) == str([y[i] for i in theirs])
        assert joined[4].shape == (n, 3 if pool == "3p" else 4)
    cols = reads.pool_columns(arc, Pool.parse("3p"))
    monkeypatch.setattr(reads, "_SEP", "-")  # in every id: the joined read gives up
    with arc.connect() as conn:
        assert reads._joined_columns(conn, Pool.parse("3p")) is None
    again = reads.pool_columns(arc, Pool.parse("3p"))
    for field in ("ids", "unit", "seat_bot", "place", "released_at"):
        x, y = getattr(cols, field), getattr(again, field)
        assert x.tolist() == y.tolist() or str(x) == str(y), field
    assert (cols.units, cols.bots) == (again.units, again.bots)
    at = dict(zip(cols.ids.tolist(), cols.released_at.tolist(), strict=True))
    assert at[played[0]] == 1790000001.2345678 and at[played[3]] == 1e-300
    assert at[played[1]] != at[played[1]]  # NaN: no release time
    unit = dict(zip(cols.ids.tolist(), cols.unit.tolist(), strict=True))
    assert unit[played[2]] == -1 and unit[played[0]] == unit[played[1]] == unit[played[4]]
    assert sorted(cols.units) == ["b-1", "b/2"]


def test_a_game_the_archive_cannot_take_is_set_aside_and_the_others_move(
        rr: tuple[redis.Redis, redis.Redis], arc: Archive) -> None:
    """One record the archive refuses (not the archive being away) is found by splitting
    its batch and set aside in Redis with why, readable still; the rest move; a worker's
    start queues it again."""
    r, rq = rr
    played = [_play(r, rq, 3, seed) for seed in range(1, 6)]
    bad = played[2]
    done = json.loads(str(r.get(keys.result(bad))))
    done["result"]["placement"] = [1, 2, 99]  # no place the archive can hold
    r.set(keys.result(bad), json.dumps(done))
    out = archiving_job.run_archive(r, rq, lambda: arc)
    assert out["moved"] == 4 and "failed" not in out
    assert reads.count(arc) == 4 and reads.game(arc, bad) is None
    why = archiving.parked(r)
    assert list(why) == [bad] and "ValueError" in why[bad]
    assert archiving.pending_count(r) == 0
    assert store_matches.get_match(r, bad) is not None  # still served from Redis
    assert archiving.unpark(r) == 1
    assert archiving.pending(r, 10) == [bad] and archiving.parked(r) == {}


def test_a_bots_games_page_by_page_newest_first(
        rr: tuple[redis.Redis, redis.Redis], arc: Archive) -> None:
    """A bot's listing is read from its plays, a page at a time before the last id seen:
    every game once, newest first, with the other filters applied."""
    r, rq = rr
    played = [_play(r, rq, 3 if seed % 3 else 4, seed) for seed in range(30, 37)]
    archiving_job.run_archive(r, rq, lambda: arc)
    pages: list[list[str]] = []
    before = None
    while page := reads.games(arc, bot_id="house:random", before=before, limit=2):
        pages.append([g.match_id for g in page])
        before = page[-1].id
    assert [m for p in pages for m in p] == played[::-1]
    assert all(len(p) == 2 for p in pages[:-1])
    assert not any(store_matches.exist(r, played))  # all of them left Redis
    got = [g.match_id for g in reads.games(arc, bot_id="house:random", players=4)]
    assert got == [played[i] for i in (6, 3, 0)]  # seeds 36, 33, 30
    assert reads.games(arc, bot_id="house:random", before=1) == []
    assert reads.games(arc, bot_id="b-000000000000") == []


def test_a_game_leaves_redis_with_its_rq_job(
        rr: tuple[redis.Redis, redis.Redis], arc: Archive) -> None:
    """What RQ keeps of a finished match job (its hash, its result stream: ~5 KB) goes
    with the game when it moves; a job of a game not archived yet stays."""
    from rq import Queue
    from rq.job import Job
    from rq.registry import FinishedJobRegistry
    from rq.results import Result

    r, rq = rr
    moved = _play(r, rq, 3, 41)
    waiting = ids.new_match_id()  # a game still live: its job is not the archive's
    for mid in (moved, waiting):
        job = Queue("moonshot-matches", connection=rq).enqueue(
            "workers.jobs.run_match", mid, job_id=ids.match_job_id(mid), result_ttl=300)
        Result.create(job, Result.Type.SUCCESSFUL, ttl=300, return_value=None)
        FinishedJobRegistry("moonshot-matches", connection=rq).add(job, 300)
        assert rq.exists(Job.key_for(job.id), Result.get_key(job.id)) == 2
    archiving_job.run_archive(r, rq, lambda: arc)
    assert reads.game(arc, moved) is not None
    gone = ids.match_job_id(moved)
    assert not rq.exists(Job.key_for(gone), Result.get_key(gone))
    kept = ids.match_job_id(waiting)
    assert rq.exists(Job.key_for(kept), Result.get_key(kept)) == 2
    assert FinishedJobRegistry("moonshot-matches", connection=rq).get_job_ids() == [kept]
