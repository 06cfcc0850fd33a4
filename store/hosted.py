"""Hosted versions as stored in Redis: what the stack runs of a bot's submitted code.

A hosted version is a bot of its own (its own id, games and ratings), named
`<line>@<n>`, owned by the author who submitted it and the next version of the line's
newest (`previous`). Its package (the submitted folder, packed) lives in the archive
under its content hash; Redis keeps what is live about it:

| key                          | type   | holds                                              |
|------------------------------|--------|----------------------------------------------------|
| ms:hosted:{bot}              | hash   | digest, size, runtime, command (JSON), status,     |
|                              |        | reason, updated_at, limits (JSON), line            |
| ms:hosted:{bot}:log          | string | the tail of its sandbox's stderr (capped; owner)   |
| ms:hosted:line:{author}:{line} | string | the line's newest version number              |
| ms:hosted:submitted:{author}:{day} | string | versions the author submitted that UTC day |
| ms:hosting:wanted            | zset   | bot id -> when a match last needed it absent      |
| ms:hosting:lease:{bot}       | string | the host running the bot's sandbox (expires)       |
| ms:hosting:validate          | zset   | versions waiting for validation, by submit time    |
| ms:hosts                     | zset   | host name -> alive until (Unix s, Redis's clock)   |

A bot's hosted token (the one its sandbox plays with) is the `host_token` field of its
record (`ms:bot:{id}`), a SHA-256 like `token`; the host mints a new one at each start,
so a token a sandbox saw dies with that sandbox.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import redis

from store import clock, ids, keys
from store.errors import InvalidArgument, ResourceExhausted

__all__ = [
    "LEASE_MS",
    "LOG_CAP",
    "SUBMISSIONS_PER_DAY",
    "HostedVersion",
    "Limits",
    "VersionStatus",
    "acquire_lease",
    "available",
    "count_submission",
    "get_version",
    "host_alive",
    "issue_host_token",
    "log_tail",
    "number_of",
    "put_version",
    "release_lease",
    "renew_lease",
    "set_status",
    "submission_allowed",
    "uncount_submission",
    "versions_of",
    "wanted",
]

P = keys.P
LEASE_MS = 10_000  # a host renews its leases every few seconds; a dead host's lapse
LOG_CAP = 16_384  # characters of a sandbox's stderr kept (its tail)
HOST_TTL_S = 10.0
WANTED = f"{P}hosting:wanted"
VALIDATE = f"{P}hosting:validate"
HOSTS = f"{P}hosts"


class VersionStatus(StrEnum):
    """Where a hosted version stands."""

    BUILDING = "building"  # received; unpacked and checked before it may run
    VALIDATING = "validating"  # playing its validation games against house bots
    ACTIVE = "active"  # plays wherever its bot id goes
    FAILED = "failed"  # refused, with the reason and its log's tail


@dataclass(frozen=True, slots=True)
class Limits:
    """What one sandbox may use. A bot over one is stopped, with the reason in its log."""

    memory_mb: int = 512
    pids: int = 64
    cpu_s: int = 3600  # CPU seconds one sandbox may spend before it is stopped
    cpu_cores: float = 1.0  # at most this many cores at once
    scratch_mb: int = 16

    def __post_init__(self) -> None:
        for name, low, high in (("memory_mb", 64, 16384), ("pids", 4, 4096),
                                ("cpu_s", 1, 86400), ("scratch_mb", 1, 1024)):
            value = getattr(self, name)
            if not isinstance(value, int) or not low <= value <= high:
                raise InvalidArgument(f"limits.{name} must be an integer from {low} to "
                                      f"{high}, got {value!r}")
        if not 0.1 <= float(self.cpu_cores) <= 64:
            raise InvalidArgument(f"limits.cpu_cores must be from 0.1 to 64, "
                                  f"got {self.cpu_cores!r}")

    def to_json(self) -> str:
        """Compact JSON."""
        return json.dumps({"memory_mb": self.memory_mb, "pids": self.pids,
                           "cpu_s": self.cpu_s, "cpu_cores": self.cpu_cores,
                           "scratch_mb": self.scratch_mb}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> Limits:
        """The limits JSON names; the defaults for what it leaves out."""
        if not text:
            return cls()
        d: dict[str, Any] = json.loads(text)
        return cls(**{k: d[k] for k in ("memory_mb", "pids", "cpu_s", "cpu_cores",
                                        "scratch_mb") if k in d})


@dataclass(frozen=True, slots=True)
class HostedVersion:
    """A hosted version's live record."""

    bot_id: str
    line: str
    digest: str  # sha256 hex of the package bytes: where the archive keeps them
    size: int
    runtime: str
    command: tuple[str, ...]
    status: VersionStatus
    reason: str = ""
    updated_at: float = 0.0
    limits: Limits = field(default_factory=Limits)


def key(bot_id: str) -> str:
    """The hosted version's hash."""
    return f"{P}hosted:{bot_id}"


def log_key(bot_id: str) -> str:
    """The tail of the version's sandbox stderr."""
    return f"{P}hosted:{bot_id}:log"


def line_key(author_id: str, line: str) -> str:
    """The newest version number of an author's line."""
    return f"{P}hosted:line:{author_id}:{line.lower()}"


SUBMISSIONS_PER_DAY = 50  # versions one author may submit in a UTC day (the default)
_SUBMITTED_KEPT_S = 2 * 86400


def submitted_key(author_id: str, day: int) -> str:
    """How many versions an author submitted on UTC day `day` (days since 1970)."""
    return f"{P}hosted:submitted:{author_id}:{day}"


def _day(now: float) -> int:
    return int(now // 86400)


def _full(author_id: str, per_day: int, day: int) -> ResourceExhausted:
    frees = time.strftime("%Y-%m-%d 00:00 UTC", time.gmtime((day + 1) * 86400))
    return ResourceExhausted(f"you submitted {per_day} versions today, the most an author "
                             f"may in a day; the next is allowed at {frees}")


def submission_allowed(r: redis.Redis, author_id: str, per_day: int) -> None:
    """ResourceExhausted, saying when it frees, when the author has no submission left
    today (0: no limit); counts nothing (an upload is refused before its bytes)."""
    day = _day(time.time())
    if per_day > 0 and int(r.get(submitted_key(author_id, day)) or 0) >= per_day:
        raise _full(author_id, per_day, day)


def count_submission(r: redis.Redis, author_id: str, per_day: int) -> int:
    """Count one submission of the author today; ResourceExhausted (counting nothing) past
    `per_day` (0: no limit). The day it was counted on, for `uncount_submission`."""
    day = _day(time.time())
    key = submitted_key(author_id, day)
    pipe = r.pipeline()
    pipe.incr(key)
    pipe.expire(key, _SUBMITTED_KEPT_S)
    count = int(pipe.execute()[0])
    if 0 < per_day < count:
        r.decr(key)
        raise _full(author_id, per_day, day)
    return day


def uncount_submission(r: redis.Redis, author_id: str, day: int) -> None:
    """Give back a submission counted on `day` that was not made after all."""
    r.decr(submitted_key(author_id, day))


def number_of(name: str) -> int:
    """A version's number, from its bot's name `<line>@<n>` (0 for another name)."""
    _, at, n = name.rpartition("@")
    return int(n) if at and n.isdigit() else 0


def lease_key(bot_id: str) -> str:
    """Which host runs the bot's sandbox."""
    return f"{P}hosting:lease:{bot_id}"


_DIGEST = re.compile(r"[0-9a-f]{64}")


def get_version(r: redis.Redis, bot_id: str) -> HostedVersion | None:
    """The bot's hosted version, or None for a bot that is not one."""
    if not ids.is_bot_id(bot_id):
        return None
    d: dict[str, str] = r.hgetall(key(bot_id))  # type: ignore[assignment]
    return _version(bot_id, d) if d else None


def _version(bot_id: str, d: dict[str, str]) -> HostedVersion:
    return HostedVersion(bot_id, d.get("line", ""), d["digest"], int(d.get("size") or 0),
                         d.get("runtime", ""), tuple(json.loads(d.get("command") or "[]")),
                         VersionStatus(d["status"]), d.get("reason", ""),
                         float(d.get("updated_at") or 0.0), Limits.from_json(d.get("limits")))


def versions_of(r: redis.Redis, bot_ids: Sequence[str]) -> dict[str, HostedVersion]:
    """The hosted versions among these bots, by bot id (one round trip)."""
    wanted = [b for b in bot_ids if ids.is_bot_id(b)]
    if not wanted:
        return {}
    pipe = r.pipeline(transaction=False)
    for b in wanted:
        pipe.hgetall(key(b))
    rows: list[dict[str, str]] = pipe.execute()
    return {b: _version(b, d) for b, d in zip(wanted, rows, strict=True) if d}


def put_version(r: redis.Redis, v: HostedVersion) -> None:
    """Write a new version's record (its bot exists already); building versions wait for
    a host to check them (`ms:hosting:validate`)."""
    if _DIGEST.fullmatch(v.digest) is None:
        raise InvalidArgument("digest: expected 64 hex digits of SHA-256")
    pipe = r.pipeline()
    pipe.hset(key(v.bot_id), mapping={
        "line": v.line, "digest": v.digest, "size": v.size, "runtime": v.runtime,
        "command": json.dumps(list(v.command)), "status": v.status.value,
        "reason": v.reason, "updated_at": repr(time.time()), "limits": v.limits.to_json()})
    if v.status in (VersionStatus.BUILDING, VersionStatus.VALIDATING):
        pipe.zadd(VALIDATE, {v.bot_id: time.time()})
    pipe.execute()


def set_status(r: redis.Redis, bot_id: str, status: VersionStatus, reason: str = "") -> None:
    """Move a version to `status` (with why, for a failure)."""
    pipe = r.pipeline()
    pipe.hset(key(bot_id), mapping={"status": status.value, "reason": reason[:2000],
                                    "updated_at": repr(time.time())})
    if status in (VersionStatus.ACTIVE, VersionStatus.FAILED):
        pipe.zrem(VALIDATE, bot_id)
    pipe.execute()


def waiting_validation(r: redis.Redis) -> list[str]:
    """Versions not yet validated, oldest first."""
    return [str(b) for b in r.zrange(VALIDATE, 0, -1)]


def append_log(r: redis.Redis, bot_id: str, text: str) -> None:
    """Add to the version's stderr tail, keeping the last `LOG_CAP` characters (a host
    decodes stderr with replacement: Redis is read as UTF-8)."""
    if not text:
        return
    old = str(r.get(log_key(bot_id)) or "")
    r.set(log_key(bot_id), (old + text)[-LOG_CAP:])


def set_log(r: redis.Redis, bot_id: str, text: str) -> None:
    """Replace the version's stderr tail (a host writes its sandbox's, after the earlier
    sandboxes' lines), keeping the last `LOG_CAP` characters."""
    r.set(log_key(bot_id), text[-LOG_CAP:])


def set_validation(r: redis.Redis, bot_id: str, match_ids: Sequence[str]) -> None:
    """The version's validation games (made once; a host taking over reads them)."""
    r.hset(key(bot_id), mapping={"validation": json.dumps(list(match_ids)),
                                 "validation_at": repr(time.time())})


def validation_games(r: redis.Redis, bot_id: str) -> list[str]:
    """The version's validation games, [] before they are made."""
    return [str(m) for m in json.loads(str(r.hget(key(bot_id), "validation") or "[]"))]


def validation_started(r: redis.Redis, bot_id: str) -> float:
    """When its validation games were made (0 before)."""
    return float(r.hget(key(bot_id), "validation_at") or 0.0)


def log_tail(r: redis.Redis, bot_id: str, most: int = LOG_CAP) -> str:
    """The last `most` characters of the version's stderr."""
    return str(r.get(log_key(bot_id)) or "")[-most:]


def issue_host_token(r: redis.Redis, bot_id: str) -> str:
    """A fresh token for the bot's sandbox (the previous hosted token stops at once; the
    bot's own token, its author's, is untouched)."""
    secret = secrets.token_urlsafe(32)
    r.hset(keys.bot(bot_id), "host_token", hashlib.sha256(secret.encode()).hexdigest())
    return f"{bot_id}.{secret}"


# ------------------------------------------------------------------ hosts


def heartbeat(r: redis.Redis, host: str) -> None:
    """The host is alive for `HOST_TTL_S` more seconds."""
    now = clock.now(r)
    pipe = r.pipeline()
    pipe.zadd(HOSTS, {host: now + HOST_TTL_S})
    pipe.zremrangebyscore(HOSTS, "-inf", now)
    pipe.execute()


def leave(r: redis.Redis, host: str) -> None:
    """The host stops: it runs nothing more."""
    r.zrem(HOSTS, host)


def host_alive(r: redis.Redis) -> bool:
    """True while at least one host is alive (Redis's clock)."""
    return bool(r.zcount(HOSTS, clock.now(r), "+inf"))


def want(r: redis.Redis, bot_id: str) -> None:
    """A match needs the bot and no process of it is connected (a host starts it)."""
    r.zadd(WANTED, {bot_id: clock.now(r)})


def wanted(r: redis.Redis, within_s: float = 10.0) -> list[str]:
    """Bots a match needed in the last `within_s` seconds, newest first; older wants go."""
    now = clock.now(r)
    pipe = r.pipeline()
    pipe.zremrangebyscore(WANTED, "-inf", now - 60)
    pipe.zrevrangebyscore(WANTED, "+inf", now - within_s)
    return [str(b) for b in pipe.execute()[1]]


def unwant(r: redis.Redis, bot_id: str) -> None:
    """The bot is running (or cannot be): drop its want."""
    r.zrem(WANTED, bot_id)


def acquire_lease(r: redis.Redis, bot_id: str, host: str) -> bool:
    """Take the bot for this host; False if another host runs it."""
    return bool(r.set(lease_key(bot_id), host, nx=True, px=LEASE_MS))


_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def renew_lease(r: redis.Redis, bot_id: str, host: str) -> bool:
    """Keep the bot on this host; False if the lease lapsed and went elsewhere."""
    return bool(r.eval(_RENEW, 1, lease_key(bot_id), host, LEASE_MS))


def release_lease(r: redis.Redis, bot_id: str, host: str) -> None:
    """This host no longer runs the bot."""
    r.eval(_RELEASE, 1, lease_key(bot_id), host)


def busy(r: redis.Redis, bot_id: str) -> bool:
    """True while a match with the bot in a seat is under way."""
    return bool(r.scard(keys.bot_live(bot_id)))


def _validating_key(bot_id: str) -> str:
    return f"{P}hosting:validating:{bot_id}"


def take_validation(r: redis.Redis, bot_id: str, host: str) -> bool:
    """This host validates the version (False: another does)."""
    return bool(r.set(_validating_key(bot_id), host, nx=True, px=30_000))


def keep_validation(r: redis.Redis, bot_id: str, host: str) -> None:
    """Still validating it (renewed every few seconds; a dead host's lapses)."""
    r.set(_validating_key(bot_id), host, px=30_000)


def drop_validation(r: redis.Redis, bot_id: str) -> None:
    """Validation is over (or handed back)."""
    r.delete(_validating_key(bot_id))


def available(r: redis.Redis, bot_ids: Sequence[str]) -> list[bool]:
    """Whether each bot can play without a process of its author's: an active hosted
    version while some host is alive."""
    if not bot_ids:
        return []
    alive = host_alive(r)
    if not alive:
        return [False] * len(bot_ids)
    pipe = r.pipeline(transaction=False)
    for b in bot_ids:
        pipe.hget(key(b), "status")
    return [s == VersionStatus.ACTIVE.value for s in pipe.execute()]
