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
from redis.typing import EncodableT, FieldT

from bots import house as house_ids
from store import hosted, ids, keys
from store import matches as store_matches
from store.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unauthenticated,
)
from store.lua import PRESENT_BESIDES_LUA, PRESENT_LUA

__all__ = [
    "ROTATE_GAP_S",
    "BotRecord",
    "authenticate_bot",
    "bots_of",
    "check_admin",
    "check_line",
    "connect",
    "connected_besides",
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
    "register_version",
    "resolve",
    "retire_bot",
    "rotate_token",
    "set_owner",
    "set_previous",
    "shown",
    "stream_prefix",
    "token_hash",
    "trusted_watcher",
    "versions",
    "watch_pass",
]

NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # used with fullmatch: "$" would let "\n" in
# A hosted version's name, `<line>@<n>`: '@' is in no registered name, so these are the
# versions' own (store.hosted).
VERSION_RE = re.compile(r"([A-Za-z0-9_.-]{1,64})@([1-9][0-9]{0,8})")

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
    owner: str = ""  # the author id that owns it; "" for a bot of no one (anonymous, older)
    previous: str = ""  # the bot this one is a new version of (the same owner's)
    retired_at: float = 0.0  # 0: active

    @property
    def retired(self) -> bool:
        """Retired by its owner: plays no new game, keeps its games and ratings."""
        return self.retired_at > 0


def _bot_record(bot_id: str, d: dict[str, str]) -> BotRecord:
    return BotRecord(bot_id, d["name"], float(d["created_at"]), owner=d.get("owner", ""),
                     previous=d.get("previous", ""),
                     retired_at=float(d.get("retired_at") or 0.0))


def house_bot(bot_id: str) -> BotRecord:
    """The house bot an id names, canonicalised (`house:pimc` -> `house:pimc?samples=...`);
    InvalidArgument naming what is wrong with the id."""
    try:
        canonical = house_ids.parse(bot_id).id
    except house_ids.HouseBotError as exc:
        raise InvalidArgument(str(exc)) from None
    return BotRecord(canonical, canonical, 0.0, house=True)


def register_bot(r: Redis, name: str, owner: str = "", previous: str = ""
                 ) -> tuple[BotRecord, str]:
    """Register `name` (owned by the author `owner`, if any; a new version of the owner's
    bot `previous`, if any); return the record and its secret token (shown once)."""
    if isinstance(name, str) and house_ids.is_house(name):
        raise InvalidArgument(f"name: {name[:80]!r}: names beginning with 'house:' are the "
                              "stack's own bots (house:random, house:greedy, house:pimc); "
                              "choose another")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise InvalidArgument(
            f"name: {name!r} is not a valid bot name: use 1 to 64 characters of A-Z a-z 0-9 _ . -"
        )
    if previous:
        if not owner:
            raise InvalidArgument("previous: only a bot with an owner (registered with an "
                                  "author token) has versions")
        before = find_bot(r, previous)
        if before.house or before.owner != owner:
            raise PermissionDenied(f"previous: {previous[:100]!r} is not one of your bots")
        previous = before.bot_id
    record, token = _create(r, name, owner, previous)
    if record is None:
        raise AlreadyExists(f"name: a bot named {name!r} exists already (names ignore case)")
    return record, token


def _create(r: Redis, name: str, owner: str, previous: str) -> tuple[BotRecord | None, str]:
    """Write a new bot of a checked name (None when the name is taken) and its token."""
    bot_id = ids.new_bot_id()
    if not r.set(keys.bot_name(name.lower()), bot_id, nx=True):
        return None, ""
    secret = secrets.token_urlsafe(32)
    now = time.time()
    fields: dict[FieldT, EncodableT] = {
        "name": name, "token": _hash(secret), "created_at": repr(now)}
    if owner:
        fields["owner"] = owner
    if previous:
        fields["previous"] = previous
    pipe = r.pipeline()
    pipe.hset(keys.bot(bot_id), mapping=fields)
    pipe.zadd(keys.BOTS, {bot_id: now})
    if owner:
        pipe.zadd(keys.author_bots(owner), {bot_id: now})
    pipe.execute()
    return BotRecord(bot_id, name, now, owner=owner, previous=previous), f"{bot_id}.{secret}"


def register_version(r: Redis, line: str, owner: str) -> tuple[BotRecord, str, int]:
    """A new hosted version of the author's line `line`: a bot named `<line>@<n>` (n the
    line's next number, from 1), owned by `owner`, the next version of the line's newest
    (for the first, of the author's bot named `line`, if any); its record, its token
    (shown once) and n. InvalidArgument for a line that is no bot name, PermissionDenied
    when a bot of that name is another's."""
    existing = check_line(r, line, owner)
    previous = existing.bot_id if existing is not None else ""
    while True:
        n = int(r.incr(hosted.line_key(owner, line)))
        for k in range(n - 1, 0, -1):  # the newest version there is (a number may be lost)
            found = r.get(keys.bot_name(f"{line}@{k}".lower()))
            if found is not None:
                previous = str(found)
                break
        record, token = _create(r, f"{line}@{n}", owner, previous)
        if record is not None:
            return record, token, n
        check_line(r, line, owner)  # taken: by another's version only if the line is theirs


def check_line(r: Redis, line: str, owner: str) -> BotRecord | None:
    """The author's bot named `line`, if any, once `line` is a name the author may submit
    versions of (a bot name; a bot of that name, if any, theirs)."""
    if not isinstance(line, str) or not NAME_RE.fullmatch(line) or house_ids.is_house(line):
        raise InvalidArgument(f"line: {str(line)[:80]!r} is not a valid bot name: use 1 to "
                              "64 characters of A-Z a-z 0-9 _ . -")
    if not owner:
        raise InvalidArgument("line: versions are an author's (submit with an author token)")
    found = None
    for name in (line, f"{line}@1"):  # a line is its bot's, or its first version's
        bot_id = r.get(keys.bot_name(name.lower()))
        if bot_id is None:
            continue
        bot = get_bot(r, str(bot_id))
        if bot.owner != owner:
            raise PermissionDenied(f"line: the bot {bot.name} belongs to "
                                   f"{'no one' if not bot.owner else 'another author'}: "
                                   "versions of a line are its owner's")
        found = found or (bot if name == line else None)
    return found


def token_hash(token: str) -> str:
    """What Redis keeps of a bot token ('' for a string that is not one)."""
    parsed = ids.bot_of_token(token)
    return _hash(parsed[1]) if parsed else ""


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
    return _bot_record(bot_id, d)


def find_bot(r: Redis, id_or_name: str) -> BotRecord:
    """A bot by id, or by name when no id matches; a house bot by its id."""
    if house_ids.is_house(id_or_name):
        return house_bot(id_or_name)
    if ids.is_bot_id(id_or_name) and r.exists(keys.bot(id_or_name)):
        return get_bot(r, id_or_name)
    if not NAME_RE.fullmatch(id_or_name) and not VERSION_RE.fullmatch(id_or_name):
        raise NotFound(f"no bot with id or name {id_or_name!r}")
    bot_id = r.get(keys.bot_name(id_or_name.lower()))
    if bot_id is None:
        raise NotFound(f"no bot with id or name {id_or_name!r}")
    return get_bot(r, str(bot_id))


def resolve(r: Redis, ids_or_names: Sequence[str], field: str = "bot_ids"
            ) -> list[BotRecord]:
    """Bots by id or name, in order, for a new match or event; InvalidArgument naming the
    first unknown (as `field[i]`, with the registered names closest to it, for a typo) or
    retired one."""
    out = []
    for i, b in enumerate(ids_or_names):
        try:
            found = find_bot(r, b)
            if found.retired:
                raise InvalidArgument(f"{found.name} is retired: it plays no new game")
            out.append(found)
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
    return _indexed(r, keys.BOTS)


def bots_of(r: Redis, author_id: str) -> list[BotRecord]:
    """An author's bots, oldest first."""
    return _indexed(r, keys.author_bots(author_id))


def _indexed(r: Redis, index: str) -> list[BotRecord]:
    """The bots of a zset index of bot ids, in its order, their records in one round trip
    (a bot gone from under its index is left out)."""
    bot_ids: list[str] = r.zrange(index, 0, -1)  # type: ignore[assignment]
    pipe = r.pipeline()
    for bot_id in bot_ids:
        pipe.hgetall(keys.bot(bot_id))
    rows: list[dict[str, str]] = pipe.execute()
    return [_bot_record(b, d) for b, d in zip(bot_ids, rows, strict=True) if d]


def versions(r: Redis, bot: BotRecord) -> list[BotRecord]:
    """The bot's line of versions, oldest first: its predecessors, itself, and the bots
    that name it (or a later one) as their previous version (of the same owner)."""
    if not bot.owner:
        return [bot]
    mine = {b.bot_id: b for b in bots_of(r, bot.owner)}
    line = [bot]
    seen = {bot.bot_id}
    while line[0].previous and line[0].previous in mine and line[0].previous not in seen:
        seen.add(line[0].previous)
        line.insert(0, mine[line[0].previous])
    nexts = {b.previous: b for b in sorted(mine.values(), key=lambda b: b.created_at)
             if b.previous}
    while line[-1].bot_id in nexts and nexts[line[-1].bot_id].bot_id not in seen:
        seen.add(nexts[line[-1].bot_id].bot_id)
        line.append(nexts[line[-1].bot_id])
    return line


ROTATE_GAP_S = 5.0  # a second rotation of one bot within this is refused


def rotate_token(r: Redis, bot_id: str) -> str:
    """A new token for the bot (shown once); the old one stops at once. A second rotation
    within ROTATE_GAP_S is refused (FailedPrecondition), so that two rotations at once
    never hand out a token that is already dead."""
    if get_bot(r, bot_id).house:
        raise InvalidArgument("house bots have no token")
    if not r.set(keys.bot_rotating(bot_id), "1", nx=True, px=int(ROTATE_GAP_S * 1000)):
        raise FailedPrecondition(f"the token of bot {bot_id} was rotated less than "
                                 f"{ROTATE_GAP_S:.0f} s ago; use the token that rotation "
                                 "returned, or rotate again in a few seconds")
    secret = secrets.token_urlsafe(32)
    r.hset(keys.bot(bot_id), mapping={"token": _hash(secret), "rotated_at": repr(time.time())})
    return f"{bot_id}.{secret}"


def retire_bot(r: Redis, bot_id: str) -> BotRecord:
    """Mark a bot retired (FailedPrecondition when it is already)."""
    if get_bot(r, bot_id).house:  # NotFound for a bot that is not there: nothing written
        raise InvalidArgument("house bots belong to the stack: they do not retire")
    now = time.time()
    if not r.hsetnx(keys.bot(bot_id), "retired_at", repr(now)):
        raise FailedPrecondition(f"bot {bot_id} is retired already")
    return get_bot(r, bot_id)


def set_owner(r: Redis, bot_id: str, owner: str) -> BotRecord:
    """Give a bot to an author (the admin's call); '' makes it no one's."""
    bot = get_bot(r, bot_id)
    if bot.house:
        raise InvalidArgument("house bots belong to the stack")
    pipe = r.pipeline()
    if bot.owner and bot.owner != owner:
        # The old owner's versions that came after this bot lose the link: a line of
        # versions is one owner's.
        for other in bots_of(r, bot.owner):
            if other.previous == bot_id:
                pipe.hdel(keys.bot(other.bot_id), "previous")
    if bot.owner:
        pipe.zrem(keys.author_bots(bot.owner), bot_id)
    if owner:
        pipe.hset(keys.bot(bot_id), "owner", owner)
        pipe.zadd(keys.author_bots(owner), {bot_id: bot.created_at})
    else:
        pipe.hdel(keys.bot(bot_id), "owner")
    if bot.owner != owner:
        pipe.hdel(keys.bot(bot_id), "previous")  # a version line is one owner's
    pipe.execute()
    return get_bot(r, bot_id)


def set_previous(r: Redis, bot_id: str, previous: str) -> BotRecord:
    """Declare a bot the next version of `previous` ('' clears it): both the same owner's,
    and no cycle."""
    bot = get_bot(r, bot_id)
    if bot.house:
        raise InvalidArgument("house bots have no versions")
    if not previous:
        r.hdel(keys.bot(bot_id), "previous")
        return get_bot(r, bot_id)
    before = find_bot(r, previous)
    if before.house or not bot.owner or before.owner != bot.owner:
        raise PermissionDenied(f"previous: {previous[:100]!r} is not a bot of the same "
                               "owner")
    walk, seen = before, {bot.bot_id}
    while True:
        if walk.bot_id in seen:
            raise InvalidArgument(f"previous: {before.name} is a later version of "
                                  f"{bot.name} already")
        seen.add(walk.bot_id)
        if not walk.previous:
            break
        walk = get_bot(r, walk.previous)
    r.hset(keys.bot(bot_id), "previous", before.bot_id)
    return get_bot(r, bot_id)


def authenticate_bot(r: Redis, token: str) -> BotRecord:
    """The bot a token belongs to, or Unauthenticated."""
    parsed = ids.bot_of_token(token)
    if parsed is None:
        raise Unauthenticated("not a bot token: expected the token RegisterBot returned")
    bot_id, secret = parsed
    # Its own token, or the one its sandbox was started with (a hosted version's).
    stored = r.hmget(keys.bot(bot_id), ["token", "host_token"])
    given = _hash(secret)
    if not any(h is not None and hmac.compare_digest(str(h), given) for h in stored):
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


def stream_prefix(token_hash: str) -> str:
    """What the id of a stream opened with the token of `token_hash` (`token_hash`)
    starts with: 16 hex digits of the hash and a dot ('' when the token is not known)."""
    return f"{token_hash[:16]}." if token_hash else ""


def connected_besides(r: Redis, bot_id: str, token_hash: str) -> bool:
    """True while a live stream of the bot is registered that was not opened with the
    token of `token_hash` (`is_connected` for an empty hash).

    A sandbox's own stream outlives its process for the moment the referee takes to see
    it end; this tells that stream from its author's own process, which plays instead.
    """
    if not token_hash or ids.is_house_bot(bot_id):
        return is_connected(r, bot_id)
    if not ids.is_bot_id(bot_id):
        return False
    return bool(r.eval(PRESENT_BESIDES_LUA, 1, keys.presence(bot_id),
                       stream_prefix(token_hash)))


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
