"""Ratings: a sequential Elo over every finished match of a pool, read from Redis.

The ratings are a pure function of the stored set of results (see
`workers.elo`): results are taken in match-id order, never arrival order.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from workers import keys
from workers.elo import EloRating, sequential_elo

__all__ = ["POOLS", "pool_results", "ratings_for"]

POOLS = ("3p", "2v2")


def pool_results(r: redis.Redis, pool: str) -> list[dict[str, Any]]:
    """Every finished match of a pool as a standings row."""
    ids: list[str] = r.zrange(keys.results(pool), 0, -1)  # type: ignore[assignment]
    pipe = r.pipeline(transaction=False)
    for mid in ids:
        pipe.get(keys.result(mid))
    rows = []
    for mid, raw in zip(ids, pipe.execute(), strict=True):
        if raw:
            done = json.loads(raw)
            res, tr = done["result"], done["transcript"]
            rows.append({"match_id": mid, "bot_ids": tr["bot_ids"], "players": tr["players"],
                         "final": res["final"], "winner": res["winner"],
                         "placement": res["placement"], "end": res["end"]})
    return rows


def ratings_for(r: redis.Redis, pool: str) -> dict[str, EloRating]:
    """Current ratings of a pool (`3p` or `2v2`) by bot id."""
    return sequential_elo(pool_results(r, pool))
