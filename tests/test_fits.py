"""Rating fits as stored: requests coalesce, the fit replaces the provisional figure, and
a table reads back as it was written (a real Redis, no workers)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
import redis

import ratings
from clients.redisproc import RedisServer
from ratings import registry
from store import bots, keys
from store import matches as store_matches
from store import ratings as store_ratings
from store.rating_tables import RatingRow, RatingTable
from workers.fit import run_fits


@pytest.fixture
def r(tmp_path: Path) -> Iterator[redis.Redis]:
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        yield bots.connect(srv.url)


def _store(r: redis.Redis, i: int, seats: list[str], board: str) -> None:
    """Store released 3p result number i: seat 0 wins, seat 2 is last."""
    row = {"match_id": f"m-g{i:03d}", "bot_ids": seats, "players": 3, "final": [21, 3, 1],
           "winner": 0, "placement": [1, 2, 3], "end": "normal", "forfeit": None,
           "seats": seats, "board": f"t-x/{board}", "unit": board}
    r.hset(keys.match(row["match_id"]), mapping={"row": json.dumps(row), "released": "1"})
    r.zadd(keys.results("3p"), {row["match_id"]: i})


def _release(r: redis.Redis, n: int) -> None:
    """Store n released 3p results among four bots, two games a board."""
    for i in range(n):
        _store(r, i, [f"b{(i + k) % 4}" for k in range(3)], f"r{i // 2}")


def test_many_requests_make_one_fit_and_its_table_reads_back(r: redis.Redis) -> None:
    _release(r, 12)
    asks = [store_ratings.note_request(r, "3p") for _ in range(50)]
    assert asks == [True] + [False] * 49  # one job queued for fifty releases
    done = run_fits(r, "3p")
    assert done["fits"] == 1 and done["games"] == 12
    assert store_ratings.note_request(r, "3p")  # after the job started, a new one is asked
    table = store_ratings.current(r, "3p")
    assert table is not None and not table.provisional and table.games == 12
    assert table.boards == 6 and "Plackett-Luce" in table.method
    want = ratings.fit(ratings.games_from_rows(
        json.loads(str(r.hget(keys.match(f"m-g{i:03d}"), "row"))) for i in range(12)))
    assert [(x.bot_id, round(x.rating, 6)) for x in table.rows] == [
        (x.bot_id, round(x.rating, 6)) for x in want.ratings]
    again = store_ratings.RatingTable.from_json(table.to_json())
    assert again == table


def test_the_provisional_figure_stands_in_until_the_fit_catches_up(r: redis.Redis) -> None:
    _release(r, 6)
    store_ratings.note_request(r, "3p")
    run_fits(r, "3p")
    fitted = store_ratings.current(r, "3p")
    assert fitted is not None and not fitted.provisional
    # More results arrive; the provisional figure covering them is stored first.
    live = store_ratings.RatingTable("provisional", 2.0, 8, 4, True, 0.95, fitted.rows)
    store_ratings.save(r, "3p", "provisional", live)
    assert store_ratings.current(r, "3p") == live
    _release(r, 8)
    store_ratings.note_request(r, "3p")
    run_fits(r, "3p")
    final = store_ratings.current(r, "3p")
    assert final is not None and not final.provisional and final.games == 8


def test_a_fit_running_makes_a_second_job_step_aside(r: redis.Redis) -> None:
    _release(r, 4)
    r.set(keys.ratings_lock("3p"), "someone", px=10_000)
    store_ratings.note_request(r, "3p")
    assert run_fits(r, "3p") == {"pool": "3p", "skipped": "another fit of this pool is running"}
    assert r.exists(keys.ratings_dirty("3p"))  # the request waits for the running job


def _seat_b4(r: redis.Redis, first: int, n: int) -> None:
    """n more released results (ids from `first`) without bot b3: b0, b1, b2 and b4."""
    for i in range(first, first + n):
        _store(r, i, [f"b{(i + k) % 3}" for k in range(2)] + ["b4"], f"s{i}")


def test_each_fit_adds_a_point_for_the_bots_it_has_new_games_of(r: redis.Redis) -> None:
    _release(r, 12)
    store_ratings.note_request(r, "3p")
    run_fits(r, "3p")
    first = {b: store_ratings.history(r, "3p", b) for b in ("b0", "b3")}
    table = store_ratings.current(r, "3p")
    assert table is not None
    rows = table.by_bot()
    for b, points in first.items():
        assert len(points) == 1
        p = points[0]
        assert (p.rating, p.ci_low, p.ci_high, p.games) == (
            rows[b].rating, rows[b].ci_low, rows[b].ci_high, rows[b].games)
        assert (p.as_of, p.pool_games) == (table.as_of, 12)
    assert store_ratings.history(r, "3p", "b4") == []  # not rated yet
    store_ratings.note_request(r, "3p")
    assert run_fits(r, "3p")["fits"] == 1  # the same games again: nobody has news
    assert len(store_ratings.history(r, "3p", "b0")) == 1
    _seat_b4(r, 12, 3)
    store_ratings.note_request(r, "3p")
    run_fits(r, "3p")
    b0, b3, b4 = (store_ratings.history(r, "3p", b) for b in ("b0", "b3", "b4"))
    assert [p.pool_games for p in b0] == [12, 15] and b0[0] == first["b0"][0]
    assert b0[1].games == b0[0].games + 2 and b0[1].as_of >= b0[0].as_of
    assert b3 == first["b3"]  # b3 played none of the new games: no new point
    assert len(b4) == 1 and b4[0].games == 3
    assert store_ratings.history(r, "3p", "b0", most=1) == [b0[1]]  # the newest


def test_a_history_keeps_its_newest_points(r: redis.Redis) -> None:
    key = keys.rating_history("3p", "b0")
    for i in range(store_ratings.HISTORY_MAX + 5):
        table = store_ratings.RatingTable(
            method="m", as_of=float(i), games=i + 1, boards=i + 1, provisional=False,
            level=0.95, rows=(store_ratings.RatingRow("b0", float(i), i + 1, -1.0, 1.0),))
        store_ratings.save(r, "3p", "batch", table)
    assert r.llen(key) == store_ratings.HISTORY_MAX
    points = store_ratings.history(r, "3p", "b0")
    assert [p.as_of for p in points] == [float(i) for i in range(5, store_ratings.HISTORY_MAX + 5)]
    assert points[-1] == store_ratings.RatingPoint(
        float(store_ratings.HISTORY_MAX + 4), float(store_ratings.HISTORY_MAX + 4), -1.0, 1.0,
        store_ratings.HISTORY_MAX + 5, store_ratings.HISTORY_MAX + 5)
    provisional = store_ratings.RatingTable(
        method="live", as_of=1e9, games=10**6, boards=0, provisional=True, level=0.95,
        rows=(store_ratings.RatingRow("b0", 5.0, 10**6),))
    store_ratings.save(r, "3p", "provisional", provisional)
    assert store_ratings.history(r, "3p", "b0")[-1] == points[-1]  # provisional: not kept


def test_a_fit_that_fails_leaves_its_request_for_the_next_job(
        r: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    import workers.fit as fit_job

    _release(r, 6)
    fitted: list[str] = []

    real = fit_job.rate_tournament

    def some_fail(r: redis.Redis, tid: str) -> RatingTable:
        if tid == "t-bad":
            raise ValueError("a tournament whose fit fails")
        fitted.append(tid)
        return real(r, tid)

    monkeypatch.setattr(fit_job, "rate_tournament", some_fail)
    for tid in ("t-bad", "t-good"):
        store_ratings.note_request(r, "3p", tid)
    with pytest.raises(ratings.RatingError, match="t-bad"):
        run_fits(r, "3p")
    assert fitted == ["t-good"]  # the others still get theirs
    assert r.smembers(keys.ratings_tournaments("3p")) == {"t-bad"}  # asked again
    assert not r.exists(keys.ratings_lock("3p"))
    assert store_ratings.fit_requested(r, "3p")  # recovery queues a job for it ...
    assert store_ratings.claim_queue(r, "3p") and not store_ratings.claim_queue(r, "3p")  # once

    def pool_fails(r: redis.Redis, pool: str, archive: object = None) -> None:
        raise MemoryError("a pool too big for this worker")

    monkeypatch.setattr(fit_job, "fit_pool", pool_fails)
    with pytest.raises(MemoryError):
        run_fits(r, "3p")
    assert r.exists(keys.ratings_dirty("3p"))  # the pool's fit is owed, and the tournament's
    assert r.smembers(keys.ratings_tournaments("3p")) == {"t-bad"}
    assert store_ratings.fit_requested(r, "3p")


def test_a_job_lost_before_it_started_is_owed_again_once_its_marker_lapses(
        r: redis.Redis) -> None:
    """A worker killed after it took the queued fit job and before it started it: the
    queued marker stays behind, and no fit runs until it lapses (then recovery queues
    one). It lapses in QUEUED_S, not in an hour: an arena's ratings must not go stale."""
    _release(r, 6)
    assert store_ratings.note_request(r, "3p")  # a job queued ... then lost with its worker
    assert not store_ratings.note_request(r, "3p")  # more releases: no second job
    assert not store_ratings.fit_requested(r, "3p")  # while the marker stands
    assert 0 < int(r.ttl(keys.ratings_queued("3p"))) <= store_ratings.QUEUED_S <= 120
    r.pexpire(keys.ratings_queued("3p"), 1)  # the marker's time passes
    time.sleep(0.05)
    assert store_ratings.fit_requested(r, "3p")  # recovery queues a job for it
    assert store_ratings.claim_queue(r, "3p")
    assert run_fits(r, "3p")["games"] == 6


class _Firsts(ratings.Method):
    """A rating method of the tests' own: each bot's count of first places."""

    name = "firsts-test"
    title = "first places"

    def rate(self, games: Iterable[ratings.Game], as_of: float) -> RatingTable:
        pool = ratings.canonical(games)
        won: dict[str, int] = {}
        for g in pool:
            for side, place in zip(g.sides, g.places, strict=True):
                for b in side:
                    won[b] = won.get(b, 0) + (place == 1)
        rows = tuple(RatingRow(b, float(w), 0) for b, w in sorted(won.items(),
                                                                 key=lambda x: (-x[1], x[0])))
        return RatingTable(method="first places counted", as_of=as_of, games=len(pool),
                           boards=0, provisional=False, level=0.95, rows=rows)


class _Broken(ratings.Method):
    name = "broken-test"
    title = "fails"

    def rate(self, games: Iterable[ratings.Game], as_of: float) -> RatingTable:
        raise ZeroDivisionError("a method with a bug")


@pytest.fixture
def more_methods() -> Iterator[None]:
    """Two methods registered for one test: one that works, one that raises."""
    for m in (_Firsts(), _Broken()):
        registry.register(m)
    yield
    for m in (_Firsts, _Broken):
        registry._METHODS.pop(m.name)


def test_every_method_is_fitted_and_stored_under_its_name(
        r: redis.Redis, more_methods: None) -> None:
    """The fit job rates the pool with every registered method, a method registered a
    moment ago included, and stores each table under its name (the batch fit and the
    provisional figure at their usual keys), listed with its title; `recent` counts the
    games released in its window only; a method that raises costs the others nothing."""
    _release(r, 12)  # released long ago (their scores are 0..11 s after the epoch)
    now = time.time()
    for i in range(12, 18):  # released an hour ago, with b4 in
        _store(r, i, ["b4", f"b{i % 3}", f"b{(i + 1) % 3}"], f"n{i}")
        r.zadd(keys.results("3p"), {f"m-g{i:03d}": now - 3600})
    store_ratings.note_request(r, "3p")
    assert run_fits(r, "3p")["games"] == 18
    listed = {m.name: m for m in store_ratings.methods(r, "3p")}
    assert set(listed) == {"provisional", "batch", "recent", "firsts-test"}
    assert listed["firsts-test"].title == "first places" and listed["recent"].games == 6
    firsts = store_ratings.load(r, "3p", "firsts-test")
    assert firsts is not None and firsts == _Firsts().rate(
        ratings.games_from_rows(store_matches.pool_results(r, "3p")), firsts.as_of)
    recent = store_ratings.load(r, "3p", "recent")
    assert recent is not None and recent.games == 6 and recent.rows[0].ci_low is not None
    assert {row.bot_id for row in recent.rows} == {"b0", "b1", "b2", "b4"}
    assert store_ratings.los_matrix(r, "3p", "recent") is not None
    batch = store_ratings.load(r, "3p", "batch")
    assert batch is not None and batch.games == 18
    assert json.loads(str(r.get(keys.ratings("3p"))))["games"] == 18  # where it always was
    assert json.loads(str(r.get(keys.ratings_live("3p"))))["provisional"]
    assert store_ratings.load(r, "3p", "broken-test") is None
    assert store_ratings.current_named(r, "3p") == ("batch", batch)
    # Only the official method's fits make the bots' rating histories.
    assert [p.pool_games for p in store_ratings.history(r, "3p", "b4")] == [18]


def test_a_tournament_taken_by_a_fit_is_owed_until_its_rating_is_written(
        r: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ended tournament waits to move to the archive while its own fit is asked for
    *or running* (taken, not written yet): else the archive keeps a rating without its
    last games and the late write leaves a key in Redis for good. A job that dies with
    fits taken leaves them owed; the next job asks for them again."""
    import workers.fit as fit_job

    _release(r, 6)
    seen: list[bool] = []

    real = fit_job.rate_tournament

    def watch(r: redis.Redis, tid: str) -> RatingTable:  # while the job fits it
        seen.append(store_ratings.owes_tournament(r, "3p", tid))
        return real(r, tid)

    monkeypatch.setattr(fit_job, "rate_tournament", watch)
    store_ratings.note_request(r, "3p", "t-one")
    assert store_ratings.owes_tournament(r, "3p", "t-one")
    run_fits(r, "3p")
    assert seen == [True]  # taken, not written: still owed
    assert not store_ratings.owes_tournament(r, "3p", "t-one")  # written: free to move

    store_ratings.note_request(r, "3p", "t-two")
    store_ratings.asks("3p").started(r)  # a job starts, takes it, then dies
    _, tids = store_ratings.take_request(r, "3p")
    assert tids == ["t-two"] and store_ratings.owes_tournament(r, "3p", "t-two")
    assert store_ratings.fit_requested(r, "3p")  # no job holds the lock: owed again
    seen.clear()
    run_fits(r, "3p")
    assert seen == [True] and not store_ratings.owes_tournament(r, "3p", "t-two")
    assert not r.exists(keys.ratings_fitting("3p"))


def test_a_fit_job_that_lost_its_lock_writes_no_tournament_rating(
        r: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    """Job A loses the pool's lock mid-fit (it lapsed, or recovery freed it) and job B
    takes it and reclaims A's tournaments: A's late write lands nowhere, neither its
    rating (the tournament may be archived by then) nor the end of B's mark."""
    import workers.fit as fit_job

    _release(r, 6)
    real = fit_job.rate_tournament

    def lose_lock(r: redis.Redis, tid: str) -> RatingTable:
        r.set(keys.ratings_lock("3p"), "job-b")  # B holds the lock now
        return real(r, tid)

    monkeypatch.setattr(fit_job, "rate_tournament", lose_lock)
    store_ratings.note_request(r, "3p", "t-one")
    run_fits(r, "3p")
    assert not r.exists(keys.tournament_rating("t-one"))  # A wrote nothing
    assert store_ratings.owes_tournament(r, "3p", "t-one")  # still B's to fit
    assert r.get(keys.ratings_lock("3p")) == "job-b"  # and A left B's lock alone


def test_a_tournaments_standings_keep_the_ratings_of_its_start(r: redis.Redis) -> None:
    """The standings' rating column and last tiebreak are the pool ratings when the event
    was made: later fits of the pool never reorder a finished event (a spec stored before
    the spec kept them reads the pool's ratings now)."""
    from store import tournaments as store_t
    from store.errors import InvalidArgument
    from store.records import DEFAULT_CLOCK, DEFAULT_FAULTS, TournamentSpec
    from tournaments.spec import make_spec

    def table(values: dict[str, float]) -> RatingTable:
        return RatingTable(method="batch", as_of=time.time(), games=30, boards=10,
                           provisional=False, level=0.95,
                           rows=tuple(RatingRow(b, v, 10) for b, v in values.items()))

    store_ratings.save(r, "3p", "batch", table({"a": 40.0, "b": -10.0, "x": 5.0}))
    spec = make_spec(tournament_id="t-frozen", name="t", players=3, format="round_robin",
                     bots=[("a", "A"), ("b", "B"), ("c", "C")], rules={},
                     clock=DEFAULT_CLOCK, faults=DEFAULT_FAULTS, seed=1, duplicate="boards",
                     seeding="given", ratings=store_ratings.current_ratings(r, "3p"))
    assert spec.ratings == {"a": 40.0, "b": -10.0}  # its bots' only; c has none yet
    again = TournamentSpec.from_json(spec.to_json())
    assert again.ratings == spec.ratings
    store_ratings.save(r, "3p", "batch", table({"a": -30.0, "b": 70.0, "c": 1.0}))
    assert store_t.standing_ratings(r, again) == {"a": 40.0, "b": -10.0}
    legacy = json.loads(spec.to_json())
    del legacy["ratings"]
    old = TournamentSpec.from_json(json.dumps(legacy))
    assert old.ratings is None
    assert store_t.standing_ratings(r, old) == {"a": -30.0, "b": 70.0, "c": 1.0}
    stray = {**json.loads(spec.to_json()), "ratings": {"zz": 1.0}}
    with pytest.raises(InvalidArgument, match="ratings: 'zz' is not a bot"):
        TournamentSpec.from_json(json.dumps(stray))
