"""The stack's groups kept apart on boards (`ms:groups`): name -> its bot ids (JSON).

An organiser (or the admin) declares a group once for the whole stack (a team, a lab,
one person's accounts); every tournament and arena made afterwards keeps its bots apart
on boards, with each author's bots and the event's own groups (`tournaments.apart`,
which checks a group's name and bots before it is stored here). Groups of the stack may
overlap (a bot of a lab and of a team); the groups of one event may not.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from redis import Redis

from store import keys

__all__ = ["all_groups", "set_group"]


def set_group(r: Redis, name: str, bot_ids: Sequence[str]) -> None:
    """Declare (or replace) a group of the stack; no bots deletes it."""
    if bot_ids:
        r.hset(keys.GROUPS, name, json.dumps(list(bot_ids)))
    else:
        r.hdel(keys.GROUPS, name)


def all_groups(r: Redis) -> dict[str, list[str]]:
    """Every group of the stack, by name."""
    raw = r.hgetall(keys.GROUPS)
    out: dict[str, list[str]] = {}
    for name, value in sorted(raw.items()):
        key = name.decode() if isinstance(name, bytes) else str(name)
        out[key] = [str(b) for b in json.loads(value)]
    return out
