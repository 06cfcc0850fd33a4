"""The one lock primitive: a Redis key held by one token, lapsing unless extended.

The match lease (`ms:match:{id}:lease`), the scheduler's lock of a tournament,
the fit's lock of a rating pool and the recovery pass's lock are all a `Lock`:

- `acquire`: SET NX PX, so only a free key is taken (a holder taking it again just
  extends it);
- `extend`: compare-and-extend, in one script: only while the key still holds this
  token; a lock that lapsed, or that another run took meanwhile, is lost, and the
  caller must stop (never SET ... XX, which would take over another run's lock);
- `release`: compare-and-delete, in one script (never GET then DEL, between which
  the lock may lapse and be taken by another run, whose lock the DEL would drop).

A write that must happen only while the lock is held checks the token in the same
script as the write: `batch` runs a list of commands that way (a match run's writes,
`store.runs`), and the run's hot-path script (`store.lua.FENCED_SEND_LUA`) takes the
lock's key and token as its first KEYS and ARGV too.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import redis

from store.lua import FENCED_BATCH_LUA, LOCK_EXTEND_LUA, LOCK_RELEASE_LUA, Command, batch_args

__all__ = ["OWNER_SEP", "Lock", "patiently"]

OWNER_SEP = "~"  # between a lock token's owner and its random part


_T = TypeVar("_T")


def patiently(call: Callable[[], _T], wait_s: float = 30.0) -> _T:
    """`call()`, tried again while Redis is away, up to `wait_s`: for what a job owes
    after its work (freeing its lock, asking again for what it took), which a Redis
    restart under it must not cost. The last connection error when Redis stays away."""
    deadline = time.monotonic() + wait_s
    pause = 0.2
    while True:
        try:
            return call()
        except (redis.ConnectionError, redis.TimeoutError):
            if time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 2.0)


@dataclass(frozen=True, slots=True)
class Lock:
    """An exclusive lock: `key` holds `token` while this holder has it, for `ttl_ms` after
    each acquire or extend."""

    key: str
    token: str
    ttl_ms: int

    @classmethod
    def fresh(cls, key: str, ttl_ms: int, owner: str = "") -> Lock:
        """A lock on `key` with a new random token (one per run that wants it); `owner`
        (a worker instance) is written into the token, so that a holder's death can be
        told from its lock (`owner_of`) before the lock lapses."""
        token = secrets.token_hex(8)
        return cls(key, f"{owner}{OWNER_SEP}{token}" if owner else token, ttl_ms)

    @staticmethod
    def owner_of(token: str) -> str:
        """The owner written into a lock's token by `fresh`; "" when none was."""
        owner, sep, _ = token.rpartition(OWNER_SEP)
        return owner if sep else ""

    def acquire(self, r: redis.Redis) -> bool:
        """Take the lock if it is free (or extend it if this token holds it); False when
        another token holds it."""
        if r.set(self.key, self.token, nx=True, px=self.ttl_ms):
            return True
        return self.extend(r)

    def extend(self, r: redis.Redis) -> bool:
        """Extend the lock if this token still holds it; False when it is lost (lapsed, or
        held by another token): the holder must stop then."""
        return bool(r.eval(LOCK_EXTEND_LUA, 1, self.key, self.token, self.ttl_ms))

    def release(self, r: redis.Redis) -> bool:
        """Drop the lock if this token holds it; True when it did."""
        return bool(r.eval(LOCK_RELEASE_LUA, 1, self.key, self.token))

    def release_patiently(self, r: redis.Redis, wait_s: float = 30.0) -> bool:
        """`release`, retried while Redis is away (up to `wait_s`): a job whose Redis went
        down under it must not leave its lock to lapse on its own (a fit's, ten minutes)
        while the worker that held it lives on. False when it could not."""
        try:
            return patiently(lambda: self.release(r), wait_s)
        except (redis.ConnectionError, redis.TimeoutError):
            return False

    def batch(self, r: redis.Redis, commands: Sequence[Command]) -> list[Any] | None:
        """Run `commands` in order (`store.lua.FENCED_BATCH_LUA`) only while this token
        holds the lock: their replies, or None when it does not (nothing is written)."""
        k, argv = batch_args(self.key, self.token, commands)
        out: Any = r.eval(FENCED_BATCH_LUA, len(k), *k, *argv)
        return None if out == -1 else list(out)
