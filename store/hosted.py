"""Hosted versions as stored in Redis: what the stack runs of a bot's submitted code.

A hosted version is a bot of its own (its own id, games and ratings), named
`<line>@<n>`, owned by the author who submitted it and the next version of the line's
newest (`previous`). Its package (the submitted folder, packed) lives in the archive
under its content hash; Redis keeps what is live about it:

| key                          | type   | holds                                              |
|------------------------------|--------|----------------------------------------------------|
| ms:hosted:{bot}              | hash   | digest, size, runtime, command (JSON), status,     |
|                              |        | reason, updated_at, limits (JSON), line; sandbox:  |
|                              |        | its live sandbox's host and limits (JSON; no       |
|                              |        | limits while they are worked out)                  |
| ms:hosted:{bot}:log          | string | the tail of its sandbox's stderr (capped; owner)   |
| ms:hosted:line:{author}:{line} | string | the line's newest version number              |
| ms:hosted:submitted:{author}:{day} | string | versions the author submitted that UTC day |
| ms:hosting:wanted            | zset   | bot id -> when a match last needed it absent      |
| ms:hosting:want-limits       | hash   | bot id -> the tightest sandbox limits (JSON) of    |
|                              |        | the matches that wanted it since a host last read |
| ms:hosting:lease:{bot}       | string | the host running the bot's sandbox (expires)       |
| ms:hosting:validate          | zset   | versions waiting for validation, by submit time    |
| ms:hosts                     | zset   | host name -> alive until (Unix s, Redis's clock)   |
| ms:hosts:caps                | hash   | host name -> the most it gives a sandbox (JSON)    |

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
from store.records import SANDBOX_BOUNDS, SandboxLimits, check_sandbox_limit

__all__ = [
    "LEASE_MS",
    "LOG_CAP",
    "SUBMISSIONS_PER_DAY",
    "HostedVersion",
    "Limits",
    "VersionStatus",
    "acquire_lease",
    "available",
    "check_within_hosts",
    "count_submission",
    "forget_sandbox",
    "get_version",
    "host_alive",
    "hosts_caps",
    "issue_host_token",
    "live_matches",
    "log_tail",
    "number_of",
    "publish_sandbox",
    "put_version",
    "release_lease",
    "renew_lease",
    "sandbox_limits_of",
    "set_status",
    "submission_allowed",
    "take_want_limits",
    "uncount_submission",
    "unpublish_sandbox",
    "versions_of",
    "wanted",
]

P = keys.P
LEASE_MS = 10_000  # a host renews its leases every few seconds; a dead host's lapse
LOG_CAP = 16_384  # characters of a sandbox's stderr kept (its tail)
HOST_TTL_S = 10.0
WANTED = f"{P}hosting:wanted"
WANT_LIMITS = f"{P}hosting:want-limits"
VALIDATE = f"{P}hosting:validate"
HOSTS = f"{P}hosts"
CAPS = f"{P}hosts:caps"


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
        for name in SANDBOX_BOUNDS:
            check_sandbox_limit("limits", name, getattr(self, name))

    def items(self) -> dict[str, float]:
        """Every field, by name."""
        return {name: getattr(self, name) for name in SANDBOX_BOUNDS}

    def under(self, *events: SandboxLimits | None) -> Limits:
        """These limits, each field lowered to the lowest any of `events` sets (a
        sandbox serving their games): never above its own."""
        out = self.items()
        for event in events:
            for name, value in (event.items() if event else {}).items():
                out[name] = min(out[name], value)
        return Limits(**out)  # type: ignore[arg-type]

    def describe(self) -> str:
        """For a log: `memory 512 MB, 64 processes, 3600 CPU s, 1 core, scratch 16 MB`."""
        return (f"memory {self.memory_mb} MB, {self.pids} processes, {self.cpu_s} CPU s, "
                f"{self.cpu_cores:g} core{'' if self.cpu_cores == 1 else 's'}, scratch "
                f"{self.scratch_mb} MB")

    def to_json(self) -> str:
        """Compact JSON."""
        return json.dumps(self.items(), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> Limits:
        """The limits JSON names; the defaults for what it leaves out."""
        if not text:
            return cls()
        d: dict[str, Any] = json.loads(text)
        return cls(**{k: d[k] for k in SANDBOX_BOUNDS if k in d})


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


def heartbeat(r: redis.Redis, host: str, caps: Limits | None = None) -> None:
    """The host is alive for `HOST_TTL_S` more seconds, giving a sandbox at most `caps`
    (what an event's sandbox limits are checked against)."""
    now = clock.now(r)
    pipe = r.pipeline()
    pipe.zadd(HOSTS, {host: now + HOST_TTL_S})
    pipe.zremrangebyscore(HOSTS, "-inf", now)
    if caps is not None:
        pipe.hset(CAPS, host, caps.to_json())
    pipe.zrange(HOSTS, 0, -1)
    pipe.hkeys(CAPS)
    *_, alive, capped = pipe.execute()
    if gone := set(map(str, capped)) - set(map(str, alive)):  # hosts that died
        r.hdel(CAPS, *sorted(gone))


def leave(r: redis.Redis, host: str) -> None:
    """The host stops: it runs nothing more."""
    pipe = r.pipeline()
    pipe.zrem(HOSTS, host)
    pipe.hdel(CAPS, host)
    pipe.execute()


def host_alive(r: redis.Redis) -> bool:
    """True while at least one host is alive (Redis's clock)."""
    return bool(r.zcount(HOSTS, clock.now(r), "+inf"))


def hosts_caps(r: redis.Redis) -> Limits | None:
    """The most every live host gives a sandbox (each field the lowest of theirs: any host
    may be the one that runs a bot); None while no host that says is alive."""
    alive = [str(h) for h in r.zrangebyscore(HOSTS, clock.now(r), "+inf")]
    if not alive:
        return None
    found = [Limits.from_json(str(c)) for c in r.hmget(CAPS, alive) if c]
    if not found:
        return None
    return Limits(**{name: min(c.items()[name] for c in found)  # type: ignore[arg-type]
                     for name in SANDBOX_BOUNDS})


_FLAGS = {"memory_mb": "--memory-mb", "pids": "--pids", "cpu_s": "--cpu-s",
          "cpu_cores": "--cpu-cores", "scratch_mb": "--scratch-mb"}


def check_within_hosts(r: redis.Redis, limits: SandboxLimits | None,
                       where: str = "sandbox") -> None:
    """InvalidArgument naming the field when an event's sandbox limit is above what the
    stack's live hosts give a sandbox (no host alive: only the limits' own bounds hold,
    and a host starting later still runs no sandbox above its own)."""
    caps = hosts_caps(r) if limits else None
    if caps is None or limits is None:
        return
    most = caps.items()
    for name, value in limits.items().items():
        if value > most[name]:
            unit = SANDBOX_BOUNDS[name][2]
            raise InvalidArgument(
                f"{where}.{name}: {value:g} {unit} is more than the stack's hosts give a "
                f"sandbox ({most[name]:g} {unit}: `moonshot host {_FLAGS[name]}`); ask for "
                f"at most that, or leave it unset for the hosts' own")


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
    """The bot is running (or cannot be): drop its want (and the limits it asked for: a
    match still waiting for them asks again)."""
    pipe = r.pipeline()
    pipe.zrem(WANTED, bot_id)
    pipe.hdel(WANT_LIMITS, bot_id)
    pipe.execute()


def take_want_limits(r: redis.Redis, bot_id: str) -> SandboxLimits | None:
    """The tightest sandbox limits of the matches that wanted the bot since the last call
    (`SANDBOX_FITS_OR_WANT_LUA` writes them), read and cleared at once."""
    pipe = r.pipeline()
    pipe.hget(WANT_LIMITS, bot_id)
    pipe.hdel(WANT_LIMITS, bot_id)
    raw = pipe.execute()[0]
    return SandboxLimits.from_dict(json.loads(str(raw))) if raw else None


def publish_sandbox(r: redis.Redis, bot_id: str, host: str, started: str,
                    limits: Limits | None) -> str:
    """Say that this host's sandbox `started` (a nonce) runs the bot under `limits`; None
    while they are worked out (no match's gate lets a game through then). The value
    written, for `unpublish_sandbox`."""
    value = json.dumps({"host": host, "started": started,
                        **({"limits": limits.items()} if limits is not None else {})},
                       separators=(",", ":"))
    r.hset(key(bot_id), "sandbox", value)
    return value


_UNPUBLISH = """
if redis.call('HGET', KEYS[1], 'sandbox') == ARGV[1] then
  return redis.call('HDEL', KEYS[1], 'sandbox')
end
return 0
"""


def unpublish_sandbox(r: redis.Redis, bot_id: str, value: str) -> None:
    """The sandbox `publish_sandbox` described is gone (a later one's entry is kept)."""
    r.eval(_UNPUBLISH, 1, key(bot_id), value)


_FORGET = """
local v = redis.call('HGET', KEYS[1], 'sandbox')
if v and cjson.decode(v)['host'] == ARGV[1] then
  return redis.call('HDEL', KEYS[1], 'sandbox')
end
return 0
"""


def forget_sandbox(r: redis.Redis, bot_id: str, host: str) -> None:
    """Drop the bot's sandbox entry if `host` wrote it (a host that runs no sandbox of the
    bot: what an earlier run of it under the same name left)."""
    r.eval(_FORGET, 1, key(bot_id), host)


def live_matches(r: redis.Redis, bot_id: str) -> list[str]:
    """The matches under way with the bot in a seat."""
    return sorted(str(m) for m in r.smembers(keys.bot_live(bot_id)))


def sandbox_limits_of(r: redis.Redis, match_ids: Sequence[str]
                      ) -> dict[str, SandboxLimits | None]:
    """Each match's event's sandbox limits (None: none), from its stored spec (one round
    trip; a match no longer stored has none)."""
    if not match_ids:
        return {}
    pipe = r.pipeline(transaction=False)
    for m in match_ids:
        pipe.hget(keys.match(m), "spec")
    out: dict[str, SandboxLimits | None] = {}
    for m, raw in zip(match_ids, pipe.execute(), strict=True):
        out[m] = SandboxLimits.from_dict(json.loads(str(raw)).get("sandbox")) if raw else None
    return out


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
