"""Authors: accounts that own bots, their invitations, roles and limits, as stored in Redis.

An author signs up with a name (open sign-up, or an invitation the admin issued: the
stack's setting) and gets a token shown once, `<author id>.<secret>`; Redis keeps only
its SHA-256, as for bots. An author may be made an organiser by the admin. Limits bound
what one author's tests may take of the stack (`Limits`); the admin sets them per
author, or the defaults of every author.

Registrations of anything (an author, a bot) are counted per address and hour
(`throttle`), so one address cannot fill the stack with accounts.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import math
import secrets
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import redis

from store import ids, keys
from store.bots import NAME_RE  # one rule for the names of bots and authors
from store.errors import (
    AlreadyExists,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
)
from store.locks import Lock

__all__ = [
    "DEFAULT_LIMITS",
    "INVITATION_TTL_S",
    "SIGNUP_MODES",
    "AuthorRecord",
    "Limits",
    "Usage",
    "add_cpu",
    "authenticate_author",
    "count_change",
    "cpu_today",
    "create_invitation",
    "day_of",
    "default_limits",
    "exclusive",
    "find_author",
    "get_author",
    "limits_of",
    "list_authors",
    "set_limits",
    "set_organiser",
    "sign_up",
    "throttle",
    "usage",
]

Redis = redis.Redis

SIGNUP_MODES = ("open", "invite", "closed")
INVITATION_TTL_S = 7 * 86400.0  # an invitation's default life
_INVITATION_MAX_TTL_S = 365 * 86400.0
_INVITATION_KEPT_S = 7 * 86400  # kept past its expiry, to tell "expired" from "unknown"
_CPU_KEPT_S = 2 * 86400


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def day_of(at: float) -> int:
    """The UTC day (days since 1970-01-01) of a time."""
    return int(at // 86400)


@dataclass(frozen=True, slots=True)
class Limits:
    """What one author's tests may take of the stack at once, and in a day.

    `tests`: tests running at once; `pairs`: pairs in flight over all of them (each pair
    is two games); `house_cpu_s`: CPU seconds of house bots (the stack's own players)
    spent on the author's tests in a UTC day. A limit of 0 allows none.
    """

    tests: int = 2
    pairs: int = 8
    house_cpu_s: float = 7200.0

    def check(self) -> Limits:
        """Self, or InvalidArgument naming the field out of range."""
        for name, value, top in (("tests", self.tests, 1000), ("pairs", self.pairs, 100_000),
                                 ("house_cpu_s", self.house_cpu_s, 86400.0 * 64)):
            if not (isinstance(value, int | float) and math.isfinite(value)
                    and 0 <= value <= top):
                raise InvalidArgument(f"limits.{name}: {value!r} is not between 0 and {top}")
        return self

    def to_json(self) -> str:
        """As stored."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Limits:
        """As `to_json` wrote it (unknown fields ignored, missing ones the defaults)."""
        d: dict[str, Any] = json.loads(text)
        known = {k: d[k] for k in ("tests", "pairs", "house_cpu_s") if k in d}
        return cls(**known)


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class AuthorRecord:
    """An author's account (never the token: only its hash is stored)."""

    author_id: str
    name: str
    created_at: float
    organiser: bool = False
    invited_by: str = ""  # "admin", or "" for open sign-up
    limits: Limits | None = None  # the admin's for this author; None: the stack's defaults


@dataclass(frozen=True, slots=True)
class Usage:
    """What an author's tests take now, against the author's limits."""

    limits: Limits
    tests: int  # running
    pairs: int  # in flight
    house_cpu_s: float  # today (UTC)
    day_ends_at: float  # when today's CPU count starts over
    test_ids: list[str] = field(default_factory=list)


def _record(author_id: str, d: dict[str, str]) -> AuthorRecord:
    limits = Limits.from_json(d["limits"]) if d.get("limits") else None
    return AuthorRecord(author_id, d["name"], float(d["created_at"]),
                        d.get("organiser") == "1", d.get("invited_by", ""), limits)


def get_author(r: Redis, author_id: str) -> AuthorRecord:
    """The author with this id, or NotFound."""
    if not ids.is_author_id(author_id):
        raise NotFound(f"no author with id {author_id[:100]!r}")
    d: dict[str, str] = r.hgetall(keys.author(author_id))  # type: ignore[assignment]
    if not d:
        raise NotFound(f"no author with id {author_id!r}")
    return _record(author_id, d)


def find_author(r: Redis, id_or_name: str) -> AuthorRecord:
    """An author by id, or by name (any case)."""
    if ids.is_author_id(id_or_name) and r.exists(keys.author(id_or_name)):
        return get_author(r, id_or_name)
    if not isinstance(id_or_name, str) or not NAME_RE.fullmatch(id_or_name):
        raise NotFound(f"no author with id or name {str(id_or_name)[:100]!r}")
    author_id = r.get(keys.author_name(id_or_name.lower()))
    if author_id is None:
        raise NotFound(f"no author with id or name {id_or_name!r}")
    return get_author(r, str(author_id))


def list_authors(r: Redis) -> list[AuthorRecord]:
    """Every author, oldest first."""
    author_ids: list[str] = r.zrange(keys.AUTHORS, 0, -1)  # type: ignore[assignment]
    pipe = r.pipeline()
    for a in author_ids:
        pipe.hgetall(keys.author(a))
    rows: list[dict[str, str]] = pipe.execute()
    return [_record(a, d) for a, d in zip(author_ids, rows, strict=True) if d]


def authenticate_author(r: Redis, token: str) -> AuthorRecord:
    """The author a token belongs to, or Unauthenticated."""
    parsed = ids.author_of_token(token)
    if parsed is None:
        raise Unauthenticated("not an author token: expected the token SignUp returned")
    author_id, secret = parsed
    stored = r.hget(keys.author(author_id), "token")
    if stored is None or not hmac.compare_digest(str(stored), _hash(secret)):
        raise Unauthenticated("author token rejected: unknown author or wrong secret")
    return get_author(r, author_id)


# ------------------------------------------------------------------ sign-up

# KEYS: name key, author key, authors zset, invitation key (or a dummy when none).
# ARGV: author id, name, token hash, now, whether an invitation is given (1/0).
# Everything is checked before anything is written: a taken name leaves the invitation
# unused, a spent invitation leaves the name free.
_SIGN_UP_LUA = """
if redis.call('EXISTS', KEYS[1]) == 1 then return {'name'} end
local invited_by = ''
local organiser = '0'
if ARGV[5] == '1' then
  local inv = redis.call('HMGET', KEYS[4], 'expires_at', 'used_by', 'by', 'organiser')
  if not inv[1] then return {'unknown'} end
  if inv[2] and inv[2] ~= '' then return {'used', inv[2]} end
  if tonumber(inv[1]) <= tonumber(ARGV[4]) then return {'expired', inv[1]} end
  invited_by = inv[3] or 'admin'
  organiser = inv[4] or '0'
  redis.call('HSET', KEYS[4], 'used_by', ARGV[1], 'used_at', ARGV[4])
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], 'name', ARGV[2], 'token', ARGV[3], 'created_at', ARGV[4],
           'invited_by', invited_by, 'organiser', organiser)
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
return {'ok', invited_by, organiser}
"""


def sign_up(r: Redis, name: str, invitation: str, mode: str) -> tuple[AuthorRecord, str]:
    """A new author `name`; return the record and its token (shown once).

    `mode` is the stack's setting: "open" (an invitation optional), "invite" (one
    required), "closed" (PermissionDenied: only the admin makes accounts, by invitation).
    """
    if mode not in SIGNUP_MODES:
        raise InvalidArgument(f"sign-up mode {mode!r}: one of {', '.join(SIGNUP_MODES)}")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise InvalidArgument(f"name: {str(name)[:80]!r} is not a valid author name: use 1 "
                              "to 64 characters of A-Z a-z 0-9 _ . -")
    if name.lower().startswith("house"):
        raise InvalidArgument(f"name: {name!r}: names beginning with 'house' are the stack's")
    if mode == "closed" and not invitation:
        raise PermissionDenied("sign-up is closed on this stack: ask its admin for an "
                               "invitation (moonshot admin invite)")
    if mode == "invite" and not invitation:
        raise PermissionDenied("sign-up on this stack needs an invitation from its admin "
                               "(moonshot admin invite): pass it with --invitation")
    if invitation and not invitation.startswith("inv."):
        raise InvalidArgument("invitation: not an invitation code (they read 'inv.<...>')")
    author_id = ids.new_author_id()
    secret = secrets.token_urlsafe(32)
    now = time.time()
    inv_key = keys.invitation(_hash(invitation)) if invitation else keys.invitation("-")
    out = r.eval(_SIGN_UP_LUA, 4, keys.author_name(name.lower()), keys.author(author_id),
                 keys.AUTHORS, inv_key, author_id, name, _hash(secret), repr(now),
                 "1" if invitation else "0")
    verdict = [str(x) for x in out]
    if verdict[0] == "name":
        raise AlreadyExists(f"name: an author named {name!r} exists already (names ignore "
                            "case)")
    if verdict[0] == "unknown":
        raise PermissionDenied("invitation: not an invitation of this stack (or one expired "
                               "more than a week ago)")
    if verdict[0] == "used":
        raise PermissionDenied("invitation: already used (each invitation makes one account)")
    if verdict[0] == "expired":
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(verdict[1])))
        raise PermissionDenied(f"invitation: expired at {when}; ask the admin for a new one")
    record = AuthorRecord(author_id, name, now, verdict[2] == "1", verdict[1])
    return record, f"{author_id}.{secret}"


def create_invitation(r: Redis, by: str, ttl_s: float = INVITATION_TTL_S,
                      organiser: bool = False) -> tuple[str, float]:
    """A one-use invitation code and when it expires. `organiser`: the account it makes
    is an organiser from the start."""
    if not (math.isfinite(ttl_s) and 60 <= ttl_s <= _INVITATION_MAX_TTL_S):
        raise InvalidArgument(f"ttl: {ttl_s!r} s is not between one minute and a year")
    code = "inv." + secrets.token_urlsafe(24)
    now = time.time()
    expires = now + ttl_s
    key = keys.invitation(_hash(code))
    pipe = r.pipeline()
    pipe.hset(key, mapping={"by": by, "created_at": repr(now), "expires_at": repr(expires),
                            "organiser": "1" if organiser else "0", "used_by": ""})
    pipe.expireat(key, int(expires) + _INVITATION_KEPT_S)
    pipe.execute()
    return code, expires


# ------------------------------------------------------------------ roles and limits


def set_organiser(r: Redis, author_id: str, organiser: bool) -> AuthorRecord:
    """Grant or take the organiser role."""
    get_author(r, author_id)
    r.hset(keys.author(author_id), "organiser", "1" if organiser else "0")
    return get_author(r, author_id)


def default_limits(r: Redis) -> Limits:
    """The stack's default limits of every author (the admin's, else DEFAULT_LIMITS)."""
    text = r.get(keys.DEFAULT_LIMITS)
    return Limits.from_json(str(text)) if text else DEFAULT_LIMITS


def set_limits(r: Redis, author_id: str, limits: Limits | None) -> None:
    """One author's limits (None: back to the defaults), or with author_id '' the defaults."""
    if not author_id:
        if limits is None:
            r.delete(keys.DEFAULT_LIMITS)
        else:
            r.set(keys.DEFAULT_LIMITS, limits.check().to_json())
        return
    get_author(r, author_id)
    if limits is None:
        r.hdel(keys.author(author_id), "limits")
    else:
        r.hset(keys.author(author_id), "limits", limits.check().to_json())


def limits_of(r: Redis, author: AuthorRecord) -> Limits:
    """The limits that hold for an author now."""
    return author.limits if author.limits is not None else default_limits(r)


def add_cpu(r: Redis, author_id: str, seconds: float, at: float | None = None) -> None:
    """Count house-bot CPU spent on an author's test."""
    if not seconds > 0 or not ids.is_author_id(author_id):
        return
    key = keys.author_cpu(author_id, day_of(time.time() if at is None else at))
    pipe = r.pipeline()
    pipe.incrbyfloat(key, seconds)
    pipe.expire(key, _CPU_KEPT_S)
    pipe.execute()


def cpu_today(r: Redis, author_id: str, now: float | None = None) -> float:
    """House-bot CPU seconds spent on the author's tests today (UTC)."""
    now = time.time() if now is None else now
    return float(r.get(keys.author_cpu(author_id, day_of(now))) or 0.0)


def usage(r: Redis, author: AuthorRecord, tests: list[str], pairs: int) -> Usage:
    """An author's use now: their running tests and the pairs in flight over them are the
    caller's count (store.changes)."""
    now = time.time()
    return Usage(limits_of(r, author), len(tests), pairs, cpu_today(r, author.author_id, now),
                 (day_of(now) + 1) * 86400.0, tests)


@contextlib.contextmanager
def exclusive(r: Redis, author_id: str, wait_s: float = 5.0) -> Iterator[None]:
    """Hold the author's lock while a change that a check spans is made (the check and the
    change then see no concurrent change of the same author's); ResourceExhausted when
    another such change holds it past `wait_s`."""
    lock = Lock.fresh(keys.author_lock(author_id), 10_000)
    deadline = time.monotonic() + wait_s
    while not lock.acquire(r):
        if time.monotonic() > deadline:
            raise ResourceExhausted("another change of your account is under way; retry")
        time.sleep(0.02)
    try:
        yield
    finally:
        lock.release(r)


CHANGES_PER_HOUR = 600  # an author's changes (register, rotate, retire, version, tests)


def count_change(r: Redis, author_id: str) -> None:
    """Count one change an author makes; ResourceExhausted past CHANGES_PER_HOUR in this
    clock hour (what bounds how fast one author writes the audit log, among others)."""
    throttle(r, "change", author_id, CHANGES_PER_HOUR, "too many changes by")


# ------------------------------------------------------------------ registration throttle


def throttle(r: Redis, what: str, address: str, per_hour: int, said: str = "") -> None:
    """Count one registration of `what` from `address` (an address, an address range or
    an author); ResourceExhausted past `per_hour` in this clock hour (0: no limit). A
    refused attempt does not count."""
    if per_hour <= 0:
        return
    now = time.time()
    hour = int(now // 3600)
    key = keys.throttle(what, address[:100], hour)
    pipe = r.pipeline()
    pipe.incr(key)
    pipe.expire(key, 7200)
    count = int(pipe.execute()[0])
    if count > per_hour:
        r.decr(key)
        frees = time.strftime("%H:%M UTC", time.gmtime((hour + 1) * 3600))
        said = said or f"too many {what} registrations from"
        raise ResourceExhausted(f"{said} {address[:100]}: {per_hour} an hour; the next is "
                                f"allowed at {frees}")

