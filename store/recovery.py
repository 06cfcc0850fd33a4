"""What the recovery pass keeps in Redis: its lock (one pass a period across all workers),
the open matches it found with no live host, with when (Redis's clock), and the listing
of the events it nudges."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import redis

from store import arena as store_arena
from store import changes as store_changes
from store import keys, steps
from store import tournaments as store_t
from store.locks import Lock
from store.pools import Pool
from store.refs import EventRef
from store.status import TournamentStatus

__all__ = ["clear", "is_alive", "keep_alive", "list_live_once", "nudge_lock",
           "pass_lock", "suspected_since", "suspects"]


def pass_lock(ttl_ms: int) -> Lock:
    """A worker's lock on this period's pass: taken, never extended, it lapses."""
    return Lock.fresh(keys.RECOVERY_LOCK, ttl_ms)


def nudge_lock(ttl_ms: int) -> Lock:
    """A worker's lock on this period's look at tournaments and fits."""
    return Lock.fresh(keys.NUDGE_LOCK, ttl_ms)


def keep_alive(r: redis.Redis, instance: str, ttl_ms: int) -> None:
    """Say worker process `instance` lives for `ttl_ms` more (0: it ends now)."""
    if ttl_ms > 0:
        r.set(keys.worker_alive(instance), "1", px=ttl_ms)
    else:
        r.delete(keys.worker_alive(instance))


def is_alive(r: redis.Redis, instance: str) -> bool:
    """True while worker process `instance` keeps its liveness key fresh."""
    return bool(r.exists(keys.worker_alive(instance)))


def suspects(r: redis.Redis) -> list[str]:
    """Every open match recovery found with no live host and has not cleared."""
    found: Any = r.hkeys(keys.RECOVERY_SUSPECTS)
    return [str(m) for m in found]


def suspected_since(r: redis.Redis, match_id: str, when: float) -> float | None:
    """When recovery first found the match with no live host; None (and noted as `when`)
    the first time."""
    since = r.hget(keys.RECOVERY_SUSPECTS, match_id)
    if since is None:
        r.hset(keys.RECOVERY_SUSPECTS, match_id, repr(when))
        return None
    return float(str(since))


def clear(r: redis.Redis, match_ids: Iterable[str]) -> None:
    """These matches are not suspects (any more)."""
    gone = list(match_ids)
    if gone:
        r.hdel(keys.RECOVERY_SUSPECTS, *gone)


def list_live_once(r: redis.Redis) -> None:
    """Once per stack: list the events that were running before live events were listed
    (a stack upgraded in place), so that recovery nudges them."""
    if r.exists(keys.LIVE_EVENTS_LISTED):
        return
    for tid in store_t.all_ids(r):
        if store_t.info(r, tid).status == TournamentStatus.RUNNING:
            steps.add_live(r, EventRef.tournament(tid))
    for test_id in store_changes.all_ids(r):
        if store_t.info(r, test_id).status == TournamentStatus.RUNNING:
            steps.add_live(r, EventRef.test(test_id))
    for pool in Pool:
        if store_arena.arena_of(r, pool) is not None:
            steps.add_live(r, EventRef.arena(pool))
    r.set(keys.LIVE_EVENTS_LISTED, 1)
