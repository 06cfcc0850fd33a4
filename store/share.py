"""What the fair share of the stack reads and writes in Redis (the rules: `tournaments.share`).

- **The game slots tests share**: the admin's setting (`ms:share:slots`, `set_slots`), or
  else what the live workers host (`ms:share:workers`: each worker process notes its
  `--concurrency` with its liveness, `note_worker`, and a worker that stops renewing it
  drops out once its note expires). `test_slots` is None when neither says anything (no
  worker has noted itself yet): then only the authors' limits bound a test.
- **Claims**: each running test's last step notes what it wants of the share and what it
  has in flight (`ms:share:claims`: test id -> author, wants, flying), so every step sees
  every other test in one read; a test that ended drops its claim, and a claim whose test
  is no longer running is dropped by the next reader.
- **The author's lock** (`author_lock`): held while a step of one of an author's tests
  reads the claims, plans, and writes its own claim, so two tests of one author never both
  start pairs against the same room under the author's limit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import redis

from store import clock, keys
from store.errors import InvalidArgument
from store.locks import Lock

__all__ = ["MAX_SLOTS", "StoredClaim", "author_lock", "claims", "drop_claim", "note_worker",
           "set_slots", "slots_setting", "test_slots", "worker_slots", "write_claim"]

MAX_SLOTS = 1_000_000
_LOCK_MS = 5000


@dataclass(frozen=True, slots=True)
class StoredClaim:
    """A running test's claim as its last step wrote it."""

    test_id: str
    author: str  # "" for the admin's test
    wants: int  # pairs it could take then (0: none)
    flying: int  # pairs in flight after that step


def set_slots(r: redis.Redis, slots: int | None) -> None:
    """The game slots all tests share (None or 0: what the live workers host)."""
    if slots is None or slots == 0:
        r.delete(keys.SHARE_SLOTS)
        return
    if isinstance(slots, bool) or not 2 <= slots <= MAX_SLOTS:
        raise InvalidArgument(f"test_slots: {slots!r} is not between 2 and {MAX_SLOTS} "
                              "(0: as many as the live workers host)")
    r.set(keys.SHARE_SLOTS, str(int(slots)))


def slots_setting(r: redis.Redis) -> int:
    """The admin's setting of the slots tests share (0: none, the workers' count)."""
    return int(r.get(keys.SHARE_SLOTS) or 0)


def note_worker(r: redis.Redis, instance: str, slots: int, ttl_ms: int) -> None:
    """Worker process `instance` hosts `slots` games at once, for `ttl_ms` more unless
    noted again (0: it stops now)."""
    if ttl_ms <= 0 or slots <= 0:
        r.hdel(keys.SHARE_WORKERS, instance)
        return
    until = clock.now(r) + ttl_ms / 1000
    r.hset(keys.SHARE_WORKERS, instance, f"{int(slots)} {until:.3f}")


def worker_slots(r: redis.Redis) -> int:
    """The games the live workers host at once (the notes not expired); expired notes go.
    Expiry is on Redis's clock."""
    now = clock.now(r)
    notes: dict[str, str] = r.hgetall(keys.SHARE_WORKERS)  # type: ignore[assignment]
    total, gone = 0, []
    for instance, text in notes.items():
        slots, _, until = str(text).partition(" ")
        try:
            if float(until) < now:
                gone.append(instance)
            else:
                total += int(slots)
        except ValueError:
            gone.append(instance)
    if gone:
        r.hdel(keys.SHARE_WORKERS, *gone)
    return total


def test_slots(r: redis.Redis) -> int | None:
    """The game slots all tests share now: the admin's setting, else what the live workers
    host; None when neither is known (no bound but the authors' limits)."""
    return slots_setting(r) or worker_slots(r) or None


def write_claim(r: redis.Redis, claim: StoredClaim) -> None:
    """Note a running test's claim (replacing its last)."""
    r.hset(keys.SHARE_CLAIMS, claim.test_id, json.dumps(
        {"a": claim.author, "w": int(claim.wants), "f": int(claim.flying)},
        separators=(",", ":")))


def drop_claim(r: redis.Redis, test_id: str) -> None:
    """The test ended: it claims nothing."""
    r.hdel(keys.SHARE_CLAIMS, test_id)


def claims(r: redis.Redis) -> list[StoredClaim]:
    """Every running test's claim, by test id; a claim whose test is no longer running (or
    unreadable) is dropped."""
    raw: dict[str, str] = r.hgetall(keys.SHARE_CLAIMS)  # type: ignore[assignment]
    found = sorted(raw)
    pipe = r.pipeline(transaction=False)
    for t in found:
        pipe.hget(keys.tournament(t), "status")
    out, gone = [], []
    for t, status in zip(found, pipe.execute(), strict=True):
        try:
            d = json.loads(raw[t])
            claim = StoredClaim(t, str(d["a"]), int(d["w"]), int(d["f"]))
        except (ValueError, KeyError, TypeError):
            gone.append(t)
            continue
        if status is None or str(status) != "running":
            gone.append(t)
        else:
            out.append(claim)
    if gone:
        r.hdel(keys.SHARE_CLAIMS, *gone)
    return out


def author_lock(author_id: str) -> Lock:
    """A fresh hold on the author's share lock (a few seconds, unless released)."""
    return Lock.fresh(keys.author_share_lock(author_id), _LOCK_MS)
