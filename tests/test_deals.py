"""Deals on a real Redis: a secret no released seed reveals, and no bot dealt a deal twice."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from clients.redisproc import RedisServer
from store import bots, deals, ids, keys
from store import matches as store_matches
from store import tournaments as store_t
from store.records import Clock, Faults
from store.refs import EventRef
from tournaments.plan import derive_seed
from tournaments.spec import make_spec
from workers.queues import create_tournament, rq_connection
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


def test_a_deal_serves_one_board_and_a_bot_is_dealt_it_once(r: redis.Redis) -> None:
    assert deals.claim(r, ["b-1", "b-2", "b-3"], 11, "t-a/x1-r1") is None
    # The same board again (its other tables, a step redone): fine, nothing changes.
    assert deals.claim(r, ["b-1", "b-4", "b-5"], 11, "t-a/x1-r1") is None
    # Another board with that deal: refused, and nothing written, whoever sits at it
    # (new bots may have read the first board's released transcripts).
    assert deals.claim(r, ["b-6", "b-2", "b-7"], 11, "t-b/x1-r1") == "board t-a/x1-r1"
    assert deals.claim(r, ["b-6", "b-7"], 11, "t-b/x1-r1") == "board t-a/x1-r1"
    assert deals.dealt(r, "b-6") == {} and deals.dealt(r, "b-7") == {}
    assert deals.dealt(r, "b-2") == {11: "t-a/x1-r1"}
    # A bot's own record refuses too (a stack's records from before the stack-wide one).
    r.hset(keys.bot_deals("b-8"), "13", "t-old/x1-r1")
    assert deals.claim(r, ["b-9", "b-8"], 13, "t-c/x1-r1") == "b-8"
    # A board of house bots only is recorded for the stack all the same.
    assert deals.claim(r, [], 12, "t-c/x1") is None
    assert deals.claim(r, [], 12, "t-d/x1") == "board t-c/x1"
    # A single match's chosen seed: later boards are dealt around it.
    deals.record(r, ["b-10"], 14, "m-1")
    assert deals.claim(r, ["b-11"], 14, "t-e/x1") == "board m-1"


def test_one_seed_twice_never_replays_a_released_board_to_new_bots(r: redis.Redis) -> None:
    """Two events planned with one --seed and no bot in common: the second is dealt afresh
    (bots that read the first one's transcripts would otherwise know its hands)."""
    first, _ = deals.deal(r, 1, "t-a/r1", ["b-1", "b-2", "b-3"])
    second, refused = deals.deal(r, 1, "t-b/r1", ["b-4", "b-5", "b-6"])
    assert second != first and refused == 1
    assert deals.deal(r, 1, "t-b/r1", ["b-4", "b-5", "b-6"]) == (second, 1)  # a redo


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
    # Every bot's record names each deal once, with the board it was dealt for.
    for bot_id, _ in named:
        record = deals.dealt(r, bot_id)
        assert len(record) == 20  # ten boards in each tournament
        assert {board.split("/")[0] for board in record.values()} == {first, second}
    # A step taken again (a crash before its state was saved) deals nothing new.
    r.delete(keys.tournament_state(second))
    advance(r, rq_conn, EventRef.tournament(second))
    assert _dealt_in(r, second) == b
    assert all(len(deals.dealt(r, bot_id)) == 20 for bot_id, _ in named)


def test_a_memorable_seed_is_not_found_from_a_released_deal(r: redis.Redis) -> None:
    """A `--seed 7` tournament's first board, as it would be released: searching small seeds
    the public way finds nothing that deals it."""
    named = [(b.bot_id, b.name) for b in (bots.register_bot(r, f"s{i}")[0] for i in range(3))]
    tid = _round_robin(r, _rq(r), named, seed=7)
    mid = str(r.zrange(keys.tournament_matches(tid), 0, 0)[0])
    spec = store_matches.load_spec(r, mid)
    unit = str(spec.meta["unit"])
    assert all(derive_seed(s, unit) != spec.seed for s in range(100_000))
