"""Deals on a real Redis: a secret no released seed reveals, and no bot dealt a deal twice."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from clients.redisproc import RedisServer
from store import bots, deals, keys
from tournaments.plan import derive_seed


@pytest.fixture
def r(tmp_path: Path) -> Iterator[redis.Redis]:
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        yield bots.connect(srv.url)


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


def test_a_bot_is_dealt_a_seed_for_one_board_only(r: redis.Redis) -> None:
    assert deals.claim(r, ["b-1", "b-2", "b-3"], 11, "t-a/x1-r1") is None
    # The same board again (its other tables, a step redone): fine, nothing changes.
    assert deals.claim(r, ["b-1", "b-4", "b-5"], 11, "t-a/x1-r1") is None
    # Another board with that deal, for a bot that had it: refused, and nothing written.
    assert deals.claim(r, ["b-6", "b-2", "b-7"], 11, "t-b/x1-r1") == "b-2"
    assert deals.dealt(r, "b-6") == {}
    assert deals.dealt(r, "b-2") == {11: "t-a/x1-r1"}
    # Bots that never had it take it for another board.
    assert deals.claim(r, ["b-6", "b-7"], 11, "t-b/x1-r1") is None
    assert deals.dealt(r, "b-7") == {11: "t-b/x1-r1"}
    assert deals.claim(r, [], 12, "t-c/x1") is None
