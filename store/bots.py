"""Bots and their tokens, and the admin token, as stored in Redis.

Tokens are random secrets shown once; Redis keeps only their SHA-256 (they
carry 256 bits of entropy, so a fast hash is enough). A bot token reads
`<bot_id>.<secret>`, which lets the referee find the record without a scan.
"""

from __future__ import annotations

import difflib
import hashlib
import hmac
import re
import secrets
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass

import redis

from bots import house as house_ids
from store import ids, keys
from store import matches as store_matches
from store.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)
from store.lua import PRESENT_LUA

__all__ = [
    "BotRecord",
    "authenticate_bot",
    "check_admin",
    "connect",
    "ensure_admin_token",
    "find_bot",
    "get_bot",
    "house_bot",
    "ids_after",
    "is_admin",
    "is_connected",
    "is_watch_pass",
    "list_bots",
    "register_bot",
    "resolve",
    "shown",
    "trusted_watcher",
    "watch_pass",
]

NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # used with fullmatch: "$" would let "\n" in

Redis = redis.Redis


def connect(url: str) -> Redis:
    """A client for `url` that returns str, not bytes."""
    return redis.Redis.from_url(url, decode_responses=True)


def shown(url: str) -> str:
    """`url` fit for a message or a log: any password in it replaced by `***`."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is not None:
        userinfo, _, host = parts.netloc.rpartition("@")
        user = userinfo.partition(":")[0]
        url = url.replace(f"//{parts.netloc}", f"//{user}:***@{host}", 1)
    return re.sub(r"([?&]password=)[^&#]*", r"\1***", url)


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


# ---------------------------------------------------------------- bots


@dataclass(frozen=True, slots=True)
class BotRecord:
    """A registered bot, or a house bot (the stack's own player: its canonical id is its
    name, it was never registered and is always there)."""

    bot_id: str
    name: str
    created_at: float
    house: bool = False


def house_bot(bot_id: str) -> BotRecord:
    """The house bot an id names, canonicalised (`house:pimc` -> `house:pimc?samples=...`);
    InvalidArgument naming what is wrong with the id."""
    try:
        canonical = house_ids.parse(bot_id).id
    except house_ids.HouseBotError as exc:
        raise InvalidArgument(str(exc)) from None
    return BotRecord(canonical, canonical, 0.0, house=True)


def register_bot(r: Redis, name: str) -> tuple[BotRecord, str]:
    """Register `name`; return the record and its secret token (shown once)."""
    if isinstance(name, str) and house_ids.is_house(name):
        raise InvalidArgument(f"name: {name[:80]!r}: names beginning with 'house:' are the "
                              "stack's own bots (house:random, house:greedy, house:pimc); "
                              "choose another")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise InvalidArgument(
            f"name: {name!r} is not a valid bot name: use 1 to 64 characters of A-Z a-z 0-9 _ . -"
        )
    bot_id = ids.new_bot_id()
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
    """The bot with this id, or NotFound (also for a string that is not a bot id); a house
    bot's id gives its record (InvalidArgument if it names no house bot)."""
    if house_ids.is_house(bot_id):
        return house_bot(bot_id)
    if not ids.is_bot_id(bot_id):
        raise NotFound(f"no bot with id {bot_id!r}")
    d: dict[str, str] = r.hgetall(keys.bot(bot_id))  # type: ignore[assignment]
    if not d:
        raise NotFound(f"no bot with id {bot_id!r}")
    return BotRecord(bot_id, d["name"], float(d["created_at"]))


def find_bot(r: Redis, id_or_name: str) -> BotRecord:
    """A bot by id, or by name when no id matches; a house bot by its id."""
    if house_ids.is_house(id_or_name):
        return house_bot(id_or_name)
    if ids.is_bot_id(id_or_name) and r.exists(keys.bot(id_or_name)):
        return get_bot(r, id_or_name)
    if not NAME_RE.fullmatch(id_or_name):
        raise NotFound(f"no bot with id or name {id_or_name!r}")
    bot_id = r.get(keys.bot_name(id_or_name.lower()))
    if bot_id is None:
        raise NotFound(f"no bot with id or name {id_or_name!r}")
    return get_bot(r, str(bot_id))


def resolve(r: Redis, ids_or_names: Sequence[str], field: str = "bot_ids"
            ) -> list[BotRecord]:
    """Bots by id or name, in order; InvalidArgument naming the first unknown one (as
    `field[i]`) and the registered names closest to it, for a typo."""
    out = []
    for i, b in enumerate(ids_or_names):
        try:
            out.append(find_bot(r, b))
        except InvalidArgument as exc:  # a house bot id that names none, or bad options
            raise InvalidArgument(f"{field}[{i}]: {exc}") from None
        except NotFound:
            names = {x.name.lower(): x.name for x in list_bots(r)}
            close = difflib.get_close_matches(b[:64].lower(), names, n=3, cutoff=0.6)
            hint = (f"; registered bots close to it: {', '.join(names[c] for c in close)}"
                    if close else "")
            raise InvalidArgument(f"{field}[{i}]: no bot with id or name {b[:100]!r}{hint}"
                                  ) from None
    return out


def ids_after(r: Redis, after: str) -> list[str]:
    """Bot ids in registration order after the id `after` ('' from the first)."""
    return store_matches.ids_after(r, keys.BOTS, after, newest_first=False)


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
    parsed = ids.bot_of_token(token)
    if parsed is None:
        raise Unauthenticated("not a bot token: expected the token RegisterBot returned")
    bot_id, secret = parsed
    stored = r.hget(keys.bot(bot_id), "token")
    if stored is None or not hmac.compare_digest(str(stored), _hash(secret)):
        raise Unauthenticated("bot token rejected: unknown bot or wrong secret")
    return get_bot(r, bot_id)


def is_connected(r: Redis, bot_id: str, now: float | None = None) -> bool:
    """True while at least one live stream of the bot is registered; a house bot always is
    (the stack runs it)."""
    if ids.is_house_bot(bot_id):
        return True
    if not ids.is_bot_id(bot_id):
        return False
    if now is None:  # Redis's clock, which the referee that scored the entries used too
        return bool(r.eval(PRESENT_LUA, 1, keys.presence(bot_id)))
    return bool(r.zcount(keys.presence(bot_id), now, "+inf"))


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
        elif not hmac.compare_digest(str(r.get(keys.ADMIN_TOKEN)), _hash(token)):
            raise FailedPrecondition(
                "this Redis already has a different admin token: start the referee with that "
                "token (--admin-token or MOONSHOT_ADMIN_TOKEN), or add --replace-admin-token "
                "to make this one the token of every referee"
            )
        r.set(keys.WATCH_PASS, _hash(watch_pass(token)))
        return None
    fresh = "adm." + secrets.token_urlsafe(32)
    if r.set(keys.ADMIN_TOKEN, _hash(fresh), nx=True):
        r.set(keys.WATCH_PASS, _hash(watch_pass(fresh)))
        return fresh
    return None


def watch_pass(admin_token: str) -> str:
    """The watch pass that goes with an admin token: it lets a web server (or any watcher
    an organiser trusts) use the watch slots kept in reserve, and grants nothing else, so
    a web server holds it instead of the admin token. Anyone with the token can derive it."""
    return "watch." + hmac.new(admin_token.encode(), b"moonshot watch pass",
                               hashlib.sha256).hexdigest()[:40]


def trusted_watcher(r: Redis, bearer: str | None, given_pass: str | None) -> bool:
    """True for an organiser (the admin token) or a holder of the watch pass."""
    return is_admin(r, bearer) or is_watch_pass(r, given_pass)


def is_watch_pass(r: Redis, given: str | None) -> bool:
    """True when `given` is the stack's watch pass (no error either way)."""
    if not given:
        return False
    stored = r.get(keys.WATCH_PASS)
    return stored is not None and hmac.compare_digest(str(stored), _hash(given))


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
    if ids.bot_of_token(token) is not None:
        raise PermissionDenied("a bot token cannot make organiser calls: use the admin token")
    raise Unauthenticated("admin token rejected")
