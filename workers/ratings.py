"""Ratings: a sequential Elo over every finished match of a pool, read from Redis.

The ratings are a pure function of the stored set of results (see
`workers.elo`): results are taken in match-id order, never arrival order.
"""

from __future__ import annotations

import logging
from typing import Any

import redis

from workers import keys
from workers.elo import EloRating, sequential_elo
from workers.errors import InvalidArgument
from workers.outcome import read_rows
from workers.standings import GameResult

__all__ = ["POOLS", "pool_results", "ratings_for"]

POOLS = ("3p", "2v2")

log = logging.getLogger("moonshot.ratings")


def pool_results(r: redis.Redis, pool: str) -> list[dict[str, Any]]:
    """Every finished match of a pool as a standings row (a malformed one is logged, skipped)."""
    ids: list[str] = r.zrange(keys.results(pool), 0, -1)  # type: ignore[assignment]
    rows = []
    for mid, row in read_rows(r, ids).items():
        try:
            GameResult.of(row)
        except InvalidArgument as exc:
            # One bad stored result must not take the whole pool's ratings down with it.
            log.error("ratings %s: skipping match %s: %s", pool, mid, exc)
            continue
        rows.append(row)
    return rows


def ratings_for(r: redis.Redis, pool: str) -> dict[str, EloRating]:
    """Current ratings of a pool (`3p` or `2v2`) by bot id."""
    return sequential_elo(pool_results(r, pool))
