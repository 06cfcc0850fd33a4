"""Redis's clock: the one time every process of a stack shares (their own clocks may
disagree). A leaf module, so that any part of `store` can read it."""

from __future__ import annotations

import redis

__all__ = ["now"]


def now(r: redis.Redis) -> float:
    """Redis's clock (Unix seconds)."""
    sec, usec = r.time()
    return float(sec) + float(usec) / 1e6
