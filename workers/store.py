"""Persistent records in Redis: bots and their tokens, the admin token, matches.

Tokens are random secrets shown once; Redis keeps only their SHA-256 (they
carry 256 bits of entropy, so a fast hash is enough). A bot token reads
`<bot_id>.<secret>`, which lets the referee find the record without a scan.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any

import redis

from workers import keys
from workers.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)
from workers.spec import MatchSpec

__all__ = [
    "BotRecord",
    "MatchRecord",
    "authenticate_bot",
    "check_admin",
    "connect",
    "create_match",
    "ensure_admin_token",
    "find_bot",
    "get_bot",
    "get_match",
    "ids_after",
    "is_admin",
    "is_connected",
    "list_bots",
    "register_bot",
]

NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # used with fullmatch: "$" would let "\n" in

Redis = redis.Redis


def connect(url: str) -> Redis:
    """A client for `url` that returns str, not bytes."""
    return redis.Redis.from_url(url, decode_responses=True)


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


# ---------------------------------------------------------------- bots


@dataclass(frozen=True, slots=True)
class BotRecord:
    """A registered bot."""

    bot_id: str
    name: str
    created_at: float


def register_bot(r: Redis, name: str) -> tuple[BotRecord, str]:
    """Register `name`; return the record and its secret token (shown once)."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise InvalidArgument(
            f"name: {name!r} is not a valid bot name: use 1 to 64 characters of A-Z a-z 0-9 _ . -"
        )
    bot_id = "b-" + secrets.token_hex(6)
    if not r.set(keys.bot_name(name.lower()), bot_id, nx=True):
        raise AlreadyExists(f"name: a bot named {name!r} exists already (names ignore case)")
    secret = secrets.token_urlsafe(32)
    now = time.time()
    pipe = r.pipeline()
    pipe.hset(keys.bot(bot_id), mapping={"name": name, "token": _hash(secret),
                                          "created_at": repr(now)})
    pipe.zadd(keys.BOTS, {bot_id: now})
    pipe.execute()
    return BotRecord(bot_id, name, now), f"{bot_id}.{secret}"


def get_bot(r: Redis, bot_id: str) -> BotRecord:
    """The bot with this id, or NotFound."""
    d: dict[str, str] = r.hgetall(keys.bot(bot_id))  # type: ignore[assignment]
    if not d:
        raise NotFound(f"no bot with id {bot_id!r}")
    return BotRecord(bot_id, d["name"], float(d["created_at"]))


def find_bot(r: Redis, id_or_name: str) -> BotRecord:
    """A bot by id, or by name when no id matches."""
    if r.exists(keys.bot(id_or_name)):
        return get_bot(r, id_or_name)
    bot_id = r.get(keys.bot_name(id_or_name.lower()))
    if bot_id is None:
        raise NotFound(f"no bot with id or name {id_or_name!r}")
    return get_bot(r, str(bot_id))


def list_bots(r: Redis) -> list[BotRecord]:
    """Every bot, oldest first."""
    ids: list[str] = r.zrange(keys.BOTS, 0, -1)  # type: ignore[assignment]
    pipe = r.pipeline()
    for bot_id in ids:
        pipe.hgetall(keys.bot(bot_id))
    rows: list[dict[str, str]] = pipe.execute()
    return [
        BotRecord(bot_id, d["name"], float(d["created_at"]))
        for bot_id, d in zip(ids, rows, strict=True)
        if d
    ]


def authenticate_bot(r: Redis, token: str) -> BotRecord:
    """The bot a token belongs to, or Unauthenticated."""
    bot_id, dot, secret = token.partition(".")
    if not dot or not bot_id.startswith("b-"):
        raise Unauthenticated("not a bot token: expected the token RegisterBot returned")
    stored = r.hget(keys.bot(bot_id), "token")
    if stored is None or not hmac.compare_digest(str(stored), _hash(secret)):
        raise Unauthenticated("bot token rejected: unknown bot or wrong secret")
    return get_bot(r, bot_id)


def is_connected(r: Redis, bot_id: str, now: float | None = None) -> bool:
    """True while at least one live stream of the bot is registered."""
    return bool(r.zcount(keys.presence(bot_id), now if now is not None else time.time(), "+inf"))


# --------------------------------------------------------------- admin


def ensure_admin_token(r: Redis, token: str | None, replace: bool = False) -> str | None:
    """Install the admin token; return a newly generated one (to print), else None.

    With `token` given (from the environment) it becomes the cluster's token if
    there is none yet; if another one is stored, it must match unless `replace`
    (a typo on one referee must not lock every organiser out). Without a token,
    the first referee to start generates one; later ones find the hash.
    """
    if token:
        if replace or r.set(keys.ADMIN_TOKEN, _hash(token), nx=True):
            r.set(keys.ADMIN_TOKEN, _hash(token))
            return None
        if not hmac.compare_digest(str(r.get(keys.ADMIN_TOKEN)), _hash(token)):
            raise FailedPrecondition(
                "this Redis already has a different admin token: start the referee with that "
                "token (--admin-token or MOONSHOT_ADMIN_TOKEN), or add --replace-admin-token "
                "to make this one the token of every referee"
            )
        return None
    fresh = "adm." + secrets.token_urlsafe(32)
    if r.set(keys.ADMIN_TOKEN, _hash(fresh), nx=True):
        return fresh
    return None


def is_admin(r: Redis, token: str | None) -> bool:
    """True when `token` is the admin token (no error either way)."""
    if not token:
        return False
    stored = r.get(keys.ADMIN_TOKEN)
    return stored is not None and hmac.compare_digest(str(stored), _hash(token))


def check_admin(r: Redis, token: str | None) -> None:
    """Raise unless `token` is the admin token."""
    if not token:
        raise Unauthenticated(
            "this call needs the admin token: send metadata 'authorization: Bearer <token>'"
        )
    stored = r.get(keys.ADMIN_TOKEN)
    if stored is not None and hmac.compare_digest(str(stored), _hash(token)):
        return
    if token.startswith("b-") and "." in token:
        raise PermissionDenied("a bot token cannot make organiser calls: use the admin token")
    raise Unauthenticated("admin token rejected")


# ------------------------------------------------------------- matches


@dataclass(frozen=True, slots=True)
class MatchRecord:
    """A match as stored: its spec, status and (once finished) result and transcript."""

    spec: MatchSpec
    status: str
    created_at: float
    started_at: float | None
    finished_at: float | None
    actions: int
    error: str
    result: dict[str, Any] | None
    transcript: dict[str, Any] | None


def create_match(r: Redis, spec: MatchSpec) -> bool:
    """Store a new match as queued; False when that id existed already.

    Everything is written in one transaction, and only if absent, so creating the same
    match again (a scheduler re-run) changes nothing.
    """
    now = time.time()
    key = keys.match(spec.match_id)
    pipe = r.pipeline(transaction=True)
    pipe.hsetnx(key, "spec", spec.to_json())
    pipe.hsetnx(key, "status", "queued")
    pipe.hsetnx(key, "created_at", repr(now))
    pipe.hsetnx(key, "tournament_id", spec.tournament_id)
    pipe.zadd(keys.MATCHES, {spec.match_id: now}, nx=True)
    pipe.exists(keys.result(spec.match_id))
    created, *_, finished = pipe.execute()
    if not finished:
        r.sadd(keys.OPEN_MATCHES, spec.match_id)
    return bool(created)


def get_match(r: Redis, match_id: str) -> MatchRecord:
    """The stored match, or NotFound."""
    pipe = r.pipeline()
    pipe.hgetall(keys.match(match_id))
    pipe.llen(keys.match_log(match_id))
    pipe.get(keys.result(match_id))
    d, n_actions, stored = pipe.execute()
    if not d:
        raise NotFound(f"no match with id {match_id!r}")
    done = json.loads(stored) if stored else None
    return MatchRecord(
        spec=MatchSpec.from_json(d["spec"]),
        status=d.get("status", "queued"),
        created_at=float(d.get("created_at", 0)),
        started_at=float(d["started_at"]) if d.get("started_at") else None,
        finished_at=float(d["finished_at"]) if d.get("finished_at") else None,
        actions=int(n_actions),
        error=d.get("error", ""),
        result=done["result"] if done else None,
        transcript=done["transcript"] if done else None,
    )


def ids_after(r: Redis, index: str, after: str, newest_first: bool) -> list[str]:
    """Ids of a time-ordered index (a zset) that come after the id `after` ('' from the top).

    The position of `after` is looked up now, so a page token stays right while new
    items arrive: nothing repeats or goes missing between pages.
    """
    start = 0
    if after:
        rank = r.zrevrank(index, after) if newest_first else r.zrank(index, after)
        if rank is None:
            raise InvalidArgument("page_token: not a token this server issued")
        start = int(rank) + 1  # type: ignore[arg-type]
    ids = r.zrevrange(index, start, -1) if newest_first else r.zrange(index, start, -1)
    return list(ids)  # type: ignore[arg-type]


def tournament_over(r: Redis, tournament_id: str) -> bool:
    """True once a tournament has finished (its seeds can no longer help anyone)."""
    return r.hget(keys.tournament(tournament_id), "status") in ("finished", "failed")
