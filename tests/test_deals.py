"""Deals on a real Redis: a secret no released seed reveals, and no bot dealt a deal twice."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from clients.redisproc import RedisServer
from moon.deal import mix64
from store import bots, deals, ids, keys
from store import matches as store_matches
from store import tournaments as store_t
from store.records import Clock, Faults, MatchSpec
from store.refs import EventRef
from tournaments.plan import derive_seed
from tournaments.spec import make_spec
from workers.queues import create_tournament, rq_connection
from workers.recovery import nudge
from workers.scheduler import advance


@pytest.fixture
def r(tmp_path: Path) -> Iterator[redis.Redis]:
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        _URLS[0] = srv.url
        yield bots.connect(srv.url)


_URLS = [""]


def _rq(r: redis.Redis) -> redis.Redis:
    """RQ's (bytes) client on the test's Redis."""
    return rq_connection(_URLS[0])


def test_the_secret_is_made_once_and_kept(r: redis.Redis) -> None:
    first = deals.board_secret(r)
    assert len(first) == 32
    assert deals.board_secret(r) == first
    r.delete(keys.DEAL_SECRET)
    assert deals.board_secret(r) != first  # a new Redis, a new secret


def test_a_released_seed_does_not_give_away_a_small_tournament_seed(r: redis.Redis) -> None:
    """Before, a board's seed was sha256(f"{seed}:{unit}"): a released board of a `--seed 7`
    tournament gave 7 away in 8 hashes. Its deal now hides behind the stack's secret: no
    small seed, planned the public way, reproduces it."""
    secret = deals.board_secret(r)
    released = deals.deal_seed(secret, derive_seed(7, "x1-r1"))
    candidates = range(100_000)
    assert all(derive_seed(s, "x1-r1") != released for s in candidates)
    old_way = [s for s in candidates
               if int.from_bytes(hashlib.sha256(f"{s}:x1-r1".encode()).digest()[:8], "big") >> 1
               == derive_seed(7, "x1-r1")]
    assert old_way == [7]  # what the search found before
    # The same planned board deals the same on the same stack (reproducible), and each
    # attempt is a different deal.
    assert deals.deal_seed(secret, 5) == deals.deal_seed(secret, 5)
    assert len({deals.deal_seed(secret, 5, k) for k in range(50)}) == 50


def test_a_deal_serves_one_board_whoever_sits_there(r: redis.Redis) -> None:
    assert deals.claim(r, 11, "t-a/x1-r1") is None
    # The same board again (its other tables, a step redone): fine, nothing changes.
    assert deals.claim(r, 11, "t-a/x1-r1") is None
    # Another board with that deal: refused, naming the board, and nothing written (its
    # bots may have read the first board's released transcripts).
    assert deals.claim(r, 11, "t-b/x1-r1") == "board t-a/x1-r1"
    assert deals.board_of(r, 11) == "t-a/x1-r1" and deals.count(r) == 1
    # A single match's chosen seed: later boards are dealt around it.
    deals.record(r, 14, "m-1")
    assert deals.claim(r, 14, "t-e/x1") == "board m-1"
    deals.record(r, 14, "m-2")  # the organiser's again: noted once, its board kept
    assert deals.board_of(r, 14) == "m-1" and deals.count(r) == 2
    assert deals.was_dealt(r, 11) and deals.was_dealt(r, 14) and not deals.was_dealt(r, 12)


def test_one_seed_twice_never_replays_a_released_board_to_new_bots(r: redis.Redis) -> None:
    """Two events planned with one --seed and no bot in common: the second is dealt afresh
    (bots that read the first one's transcripts would otherwise know its hands)."""
    first, _ = deals.deal(r, 1, "t-a/r1")
    second, refused = deals.deal(r, 1, "t-b/r1")
    assert second != first and refused == 1
    assert deals.deal(r, 1, "t-b/r1") == (second, 1)  # a redo
    # Many boards at once, in one round trip, some planned alike: each its own deal.
    boards = [(1, "t-c/r1"), (2, "t-c/r2"), (1, "t-d/r1"), (3, "t-c/r3")]
    out = deals.deal_boards(r, boards)
    assert [n for _, n in out] == [2, 0, 3, 0]
    assert len({s for s, _ in out} | {first, second}) == 6
    assert deals.deal_boards(r, boards) == out  # redone: the same deals


def _unmix64(y: int) -> int:
    """The inverse of moon.deal.mix64 (a test's way to choose a deal's key)."""
    m = (1 << 64) - 1

    def unshift(x: int, k: int) -> int:
        out = x
        for _ in range(64 // k + 1):
            out = x ^ (out >> k)
        return out & m

    y = unshift(y, 31)
    y = unshift((y * pow(0x94D049BB133111EB, -1, 1 << 64)) & m, 27)
    y = unshift((y * pow(0xBF58476D1CE4E5B9, -1, 1 << 64)) & m, 30)
    return (y - 0x9E3779B97F4A7C15) & m


def test_the_record_is_exact_a_key_across_two_entries_is_not_dealt(r: redis.Redis) -> None:
    """Keys are 8 bytes packed in a bucket: bytes that straddle two of them, read as a key,
    are not a deal dealt (the search keeps to whole entries)."""
    a, b = 0x1111_2222_3333_4444, 0x5555_6666_7777_8888
    assert _unmix64(mix64(a)) == a
    for seed in (a, b):
        assert deals.claim(r, _unmix64(seed), f"t-x/{seed}") is None
    straddle = _unmix64(0x3333_4444_5555_6666)  # the tail of one, the head of the other
    assert deals.deal_key(straddle) in deals.deal_key(_unmix64(a)) + deals.deal_key(_unmix64(b))
    assert not deals.was_dealt(r, straddle)
    assert deals.claim(r, straddle, "t-y/x1") is None


def test_a_deal_no_longer_kept_with_its_board_is_refused_to_every_board(
        r: redis.Redis) -> None:
    """A claim's board is kept an hour at least, two at most (two windows, rotated on
    Redis's clock); after that the deal is refused even to its own board, which takes a
    fresh deal: never the same deal twice, whatever is forgotten."""
    first, _ = deals.deal(r, 5, "t-a/r1")

    def an_hour_passes() -> None:
        since = int(r.hget(keys.DEALS, "since") or 0)
        r.hset(keys.DEALS, "since", since - deals.WINDOW_S * 1000)

    an_hour_passes()
    assert deals.deal(r, 6, "t-a/r2")[1] == 0  # rotates: t-a/r1 is in the older window
    assert r.hget(keys.DEALS_OLD, str(first)) == "t-a/r1"
    assert 0 < r.pttl(keys.DEALS_OLD) <= deals.WINDOW_S * 1000
    assert 0 < r.pttl(keys.DEALS_RECENT) <= 2 * deals.WINDOW_S * 1000
    assert deals.deal(r, 5, "t-a/r1") == (first, 0)  # still its own
    an_hour_passes()
    deals.deal(r, 7, "t-a/r3")  # rotates again: t-a/r1's window is dropped
    assert deals.board_of(r, first) is None and deals.was_dealt(r, first)
    assert deals.claim(r, first, "t-a/r1") == "an earlier board"
    again, refused = deals.deal(r, 5, "t-a/r1")  # a pass redone hours later
    assert refused == 1 and again != first
    assert deals.deal(r, 5, "t-b/r1")[0] not in (first, again)


def test_the_step_claims_every_board_of_a_pass_in_one_round_trip(
        r: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = deals._run

    def counting(r: redis.Redis, mode: str, groups: list[tuple[str, list[int]]]) -> object:
        calls.append(len(groups))
        return real(r, mode, groups)

    monkeypatch.setattr(deals, "_run", counting)
    named = [(b.bot_id, b.name) for b in (bots.register_bot(r, f"p{i}")[0] for i in range(6))]
    tid = _round_robin(r, _rq(r), named, seed=3)
    assert calls == [10]  # ten rounds, one claim
    assert r.zcard(keys.tournament_matches(tid)) == 20


def _round_robin(r: redis.Redis, rq_conn: redis.Redis, named: list[tuple[str, str]],
                 seed: int) -> str:
    """A 3p round robin on boards of `named` bots, its first scheduling step taken."""
    spec = make_spec(tournament_id=ids.new_tournament_id(), name="t", players=3,
                     format="round_robin", bots=named, rules={}, clock=Clock(),
                     faults=Faults(), rounds=1, series_length=1, seed=seed,
                     duplicate="boards", rotate_partners=False, seeding="given",
                     all_triples=False)
    create_tournament(r, rq_conn, spec)
    advance(r, rq_conn, EventRef.tournament(spec.tournament_id))
    return spec.tournament_id


def _dealt_in(r: redis.Redis, tid: str) -> dict[tuple[str, int], str]:
    """(bot, deal seed) -> game, for every game the tournament created."""
    out = {}
    for mid in r.zrange(keys.tournament_matches(tid), 0, -1):
        spec = store_matches.load_spec(r, str(mid))
        for b in spec.bot_ids:
            out[(b, spec.seed)] = str(mid)
    return out


def test_two_tournaments_with_one_seed_deal_no_bot_a_deal_twice(r: redis.Redis) -> None:
    """The same six bots, the same `--seed 7`, twice: the second tournament plans the same
    boards, and each is dealt afresh, since its bots were dealt the first one's; its notes
    say so. The first one's deals are its planned boards through the stack's secret, so the
    same seed still plans the same event on this stack."""
    rq_conn = _rq(r)
    named = [(b.bot_id, b.name) for b in (bots.register_bot(r, f"d{i}")[0] for i in range(6))]
    first = _round_robin(r, rq_conn, named, seed=7)
    second = _round_robin(r, rq_conn, named, seed=7)
    a, b = _dealt_in(r, first), _dealt_in(r, second)
    assert len(a) == len(b) == 60  # 10 rounds of two tables of three
    assert not set(a) & set(b)
    secret = deals.board_secret(r)
    for mid in r.zrange(keys.tournament_matches(first), 0, -1):
        spec = store_matches.load_spec(r, str(mid))
        assert spec.seed == deals.deal_seed(secret, derive_seed(7, str(spec.meta["unit"])))
    assert store_t.info(r, first).redealt == 0
    assert store_t.info(r, second).redealt == 10
    # The stack's record holds each deal, with the board it was dealt for.
    for tid in (first, second):
        for mid in r.zrange(keys.tournament_matches(tid), 0, -1):
            spec = store_matches.load_spec(r, str(mid))
            assert deals.board_of(r, spec.seed) == spec.meta["board"]
    assert deals.count(r) == 20
    # A step taken again (a crash before its state was saved) deals nothing new.
    r.delete(keys.tournament_state(second))
    advance(r, rq_conn, EventRef.tournament(second))
    assert _dealt_in(r, second) == b
    assert deals.count(r) == 20


def test_a_memorable_seed_is_not_found_from_a_released_deal(r: redis.Redis) -> None:
    """A `--seed 7` tournament's first board, as it would be released: searching small seeds
    the public way finds nothing that deals it."""
    named = [(b.bot_id, b.name) for b in (bots.register_bot(r, f"s{i}")[0] for i in range(3))]
    tid = _round_robin(r, _rq(r), named, seed=7)
    mid = str(r.zrange(keys.tournament_matches(tid), 0, 0)[0])
    spec = store_matches.load_spec(r, mid)
    unit = str(spec.meta["unit"])
    assert all(derive_seed(s, unit) != spec.seed for s in range(100_000))


def _forget_boards(r: redis.Redis) -> None:
    """What two hours do to the record: no deal is kept with its board any more."""
    r.delete(keys.DEALS_RECENT, keys.DEALS_OLD)


def test_no_bot_is_dealt_a_deal_twice_across_events_single_matches_and_forgetting(
        r: redis.Redis) -> None:
    """Six bots in four round robins planned with one seed (the boards of the last two
    claimed after the record forgot which board held each deal), and in single matches
    whose organiser chose a deal a board was dealt, or the one a board would have been
    dealt: each bot's games have all different deals, but the single match that repeats a
    released board (the organiser's choice), and no board is dealt a single match's."""
    rq_conn = _rq(r)
    named = [(b.bot_id, b.name) for b in (bots.register_bot(r, f"n{i}")[0] for i in range(6))]
    bot_ids = [b for b, _ in named]
    tids = [_round_robin(r, rq_conn, named, seed=7) for _ in range(2)]
    secret = deals.board_secret(r)
    # The organiser's single match takes the deal the next event's first board would be
    # dealt (which only the secret's holder can know): that board must be dealt afresh.
    ahead = deals.deal_seed(secret, derive_seed(8, "x1-r1"))
    single = MatchSpec.build(match_id=ids.new_match_id(), players=3, bot_ids=bot_ids[:3],
                             seat_names=bot_ids[:3], seed=ahead)
    assert store_matches.create_match(r, single)
    assert deals.board_of(r, ahead) == single.match_id
    # ... and one repeats a deal a board was dealt: allowed, the organiser's choice.
    repeat = store_matches.load_spec(r, str(r.zrange(keys.tournament_matches(tids[0]), 0, 0)[0]))
    again = MatchSpec.build(match_id=ids.new_match_id(), players=3, bot_ids=bot_ids[3:],
                            seat_names=bot_ids[3:], seed=repeat.seed)
    assert store_matches.create_match(r, again)
    assert deals.board_of(r, repeat.seed) == repeat.meta["board"]
    _forget_boards(r)
    tids += [_round_robin(r, rq_conn, named, seed=s) for s in (7, 8)]
    assert [store_t.info(r, t).redealt for t in tids] == [0, 10, 10, 1]
    games: dict[str, list[tuple[int, str]]] = {b: [] for b in bot_ids}
    for tid in tids:
        for mid in r.zrange(keys.tournament_matches(tid), 0, -1):
            spec = store_matches.load_spec(r, str(mid))
            for b in spec.bot_ids:
                games[b].append((spec.seed, str(spec.meta["board"])))
    for b in bot_ids:
        assert len(games[b]) == 40  # ten boards in each of four round robins
        assert len({seed for seed, _ in games[b]}) == 40, b
        assert ahead not in {seed for seed, _ in games[b]}
    assert all(deals.was_dealt(r, seed) for g in games.values() for seed, _ in g)
    assert deals.count(r) == 41  # forty boards and the organiser's deal


def test_older_records_are_moved_into_the_record_once_resumably(r: redis.Redis) -> None:
    """A stack from before: the stack's deal -> board hash, and each bot's, one of them
    holding a single match's seed the stack's hash never had. Every deal in them is
    refused to a new board after the move, and the older hashes are gone; a move killed
    half way is run again and loses nothing."""
    r.hset(keys.DEALT_BOARDS, mapping={str(s): f"t-old/r{s}" for s in range(1, 3001)})
    for i in range(5):
        r.hset(keys.bot_deals(f"b-{i}"), mapping={
            **{str(s): f"t-old/r{s}" for s in range(1 + i * 600, 601 + i * 600)},
            str(10_000 + i): f"m-{i}"})
    seen: list[tuple[int, int]] = []

    def killed(done: int, read: int) -> None:
        seen.append((done, read))
        if done == 2:
            raise KeyboardInterrupt("the worker was stopped")

    with pytest.raises(KeyboardInterrupt):
        deals.migrate(r, batch=500, progress=killed)
    assert seen == [(1, 3000), (2, 3601)]
    assert r.hget(keys.DEALS, "migrated") is None
    assert not r.exists(keys.DEALT_BOARDS)  # a hash is dropped only once it is all in
    left = list(r.scan_iter(match=keys.bot_deals("*")))
    assert len(left) == 4
    # A claim before the move is done finishes it first.
    assert deals.claim(r, 10_003, "t-new/x1") == "an earlier board"
    assert r.hget(keys.DEALS, "migrated") == "1"
    assert not list(r.scan_iter(match=keys.bot_deals("*")))
    assert deals.count(r) == 3005
    assert all(deals.was_dealt(r, s) for s in [*range(1, 3001), *range(10_000, 10_005)])
    assert not deals.was_dealt(r, 3001)
    assert deals.claim(r, 42, "t-new/x2") == "an earlier board"
    assert deals.claim(r, 3001, "t-new/x2") is None
    assert deals.migrate(r) == 0  # once


def test_the_record_costs_a_few_bytes_a_deal_flat_and_stays_exact(r: redis.Redis) -> None:
    """50,000 boards claimed (the fast path: no tournament): every deal is found, none of
    50,000 fresh ones is (exact), the record costs under 9 bytes a deal (MEMORY USAGE of
    every field), and the second 25,000 cost no more than the first. What stays of the
    boards themselves (deal -> board) is only the claims of the last hour or two."""
    rng = random.Random(25)
    seeds = [rng.getrandbits(63) for _ in range(50_000)]
    deals.migrate(r)
    empty = deals.memory(r)[keys.DEALS]
    used = []
    for half in (seeds[:25_000], seeds[25_000:]):
        for at in range(0, len(half), 1000):
            out = deals.deal_boards(r, [(s, f"t-m/{s}") for s in half[at:at + 1000]])
            assert all(n == 0 for _, n in out)
        used.append(deals.memory(r)[keys.DEALS])
    assert deals.count(r) == 50_000
    first, second = used[0] - empty, used[1] - used[0]
    assert used[1] / 50_000 < 9.0, used
    assert second <= first, (first, second)
    secret = deals.board_secret(r)
    dealt = [deals.deal_seed(secret, s) for s in seeds[::97]]
    assert all(deals.was_dealt(r, s) for s in dealt)
    fresh = [rng.getrandbits(63) for _ in range(2000)]
    assert not any(deals.was_dealt(r, s) for s in fresh)
    assert all(deals.claim(r, s, f"t-m/{s}") == f"board t-m/{p}"
               for s, p in zip(dealt[:50], seeds[::97], strict=False))


def test_recovery_moves_older_records_as_a_worker_starts(r: redis.Redis) -> None:
    """Recovery's first look (as every worker starts) moves them, before any claim."""
    r.hset(keys.bot_deals("b-1"), "99", "m-1")
    nudge(r, _rq(r))
    assert r.hget(keys.DEALS, "migrated") == "1" and not r.exists(keys.bot_deals("b-1"))
    assert deals.was_dealt(r, 99)
