"""The audit log: who registered, rotated, retired, started or stopped what, and when.

One capped Redis stream of the whole stack (the admin's view) and one per author for
the entries that concern them (what they did, and what was done to their account or
bots), so an author reads their own without a scan. Entries are small and written once;
the caps keep Redis bounded on a stack that runs for months (the newest MAX_ENTRIES
of the stack, MAX_AUTHOR_ENTRIES of each author).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import redis
from redis.typing import EncodableT, FieldT

from store import ids, keys
from store.errors import InvalidArgument

__all__ = ["MAX_AUTHOR_ENTRIES", "MAX_ENTRIES", "Entry", "entries", "record"]

Redis = redis.Redis

MAX_ENTRIES = 100_000
MAX_AUTHOR_ENTRIES = 10_000


@dataclass(frozen=True, slots=True)
class Entry:
    """One audit entry: `actor` is "admin", an author id or a bot id; `action` a word
    ("sign_up", "register_bot", "rotate_token", ...); `target` what it acted on."""

    entry_id: str
    at: float
    actor: str
    action: str
    target: str
    detail: str
    address: str


def record(r: Redis, actor: str, action: str, target: str, detail: str = "",
           address: str = "", authors: Iterable[str] = ()) -> None:
    """Append an entry to the stack's log and to the log of each author it concerns."""
    fields: dict[FieldT, EncodableT] = {
        "at": repr(time.time()), "actor": actor[:100], "action": action[:40],
        "target": target[:200], "detail": detail[:500], "address": address[:100]}
    pipe = r.pipeline(transaction=False)
    pipe.xadd(keys.AUDIT, fields, maxlen=MAX_ENTRIES, approximate=True)
    for a in sorted({a for a in authors if ids.is_author_id(a)}):
        pipe.xadd(keys.author_audit(a), fields, maxlen=MAX_AUTHOR_ENTRIES, approximate=True)
    pipe.execute()


def entries(r: Redis, author_id: str = "", before: str = "", limit: int = 100
            ) -> tuple[list[Entry], str]:
    """Entries newest first (of one author, or with '' of the stack), before the entry id
    `before` ('' from the newest); and the token of the next page ('' at the end)."""
    if before and ids.parse_event_id(before) is None:
        raise InvalidArgument(f"page_token: {before[:100]!r} is not an audit entry id")
    key = keys.author_audit(author_id) if author_id else keys.AUDIT
    top = f"({before}" if before else "+"
    rows: list[tuple[str, dict[str, str]]] = r.xrevrange(  # type: ignore[assignment]
        key, top, "-", count=limit + 1)
    out = [Entry(str(eid), float(f.get("at", 0)), f.get("actor", ""), f.get("action", ""),
                 f.get("target", ""), f.get("detail", ""), f.get("address", ""))
           for eid, f in rows[:limit]]
    more = len(rows) > limit
    return out, out[-1].entry_id if more and out else ""
