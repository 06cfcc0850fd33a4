"""What the author pages, and a bot's owner and versions, show: pure functions of the
public messages (AccountService's Author, BotService's Bot).

Nothing here is private: an Author message carries a name, a role, when the account was
made and its bots, never a token, limits or the audit log; a Bot its owner, its previous
version and when it was retired. Names are the authors' own input: the templates escape
them (Jinja2 autoescape) and `breakable` escapes what it marks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from clients.web.views import Row, when
from proto.moon.v1 import account_pb2, bot_pb2

__all__ = ["author_row", "bot_state", "hosted_view", "owned_bot_row", "version_line",
           "version_lines"]


def author_row(a: account_pb2.Author) -> Row:
    """An author as the list of authors and the author's header show them."""
    use = ({"tests": a.usage.tests, "pairs": a.usage.pairs,
            "cpu_s": round(a.usage.house_cpu_s)} if a.HasField("usage") else None)
    return {"id": a.author_id, "name": a.name or a.author_id,
            "role": "organiser" if a.organiser else "author",
            "since": when(a.created_at, a.HasField("created_at")), "bots": len(a.bot_ids),
            "use": use}


def bot_state(b: bot_pb2.Bot) -> str:
    """`retired` (its owner retired it: it plays no new game), else `online` or `offline`
    (a house bot is always online)."""
    if b.HasField("retired_at"):
        return "retired"
    return "online" if b.connected or b.house else "offline"


def owned_bot_row(b: bot_pb2.Bot, names: Mapping[str, str],
                  ratings: Mapping[str, Mapping[str, Row]]) -> Row:
    """One of an author's bots: its state, its rating in each pool (`ratings`: pool -> bot
    id -> that pool's row; a bot not rated there has none) and its previous version (named
    from `names`, bot id -> name, else by its id)."""
    previous = ({"id": b.previous_id, "name": names.get(b.previous_id, b.previous_id)}
                if b.previous_id else None)
    return {"id": b.bot_id, "name": b.name or b.bot_id, "state": bot_state(b),
            "created": when(b.created_at, b.HasField("created_at")),
            "retired": when(b.retired_at, b.HasField("retired_at")),
            "previous": previous,
            "ratings": {pool: rows.get(b.bot_id) for pool, rows in ratings.items()}}


def version_lines(bots: Sequence[bot_pb2.Bot]) -> list[list[Row]]:
    """An author's lines of versions, each oldest first: from each bot that no other of
    theirs names as its previous version (a line's newest), back through the previous
    versions. Two bots that name one previous version make two lines that share their
    start. Only lines of two bots or more; in the order of their oldest bot (`bots` come
    oldest first)."""
    by_id = {b.bot_id: b for b in bots}
    order = {b.bot_id: i for i, b in enumerate(bots)}
    named = {b.previous_id for b in bots if b.previous_id}
    lines = []
    for tip in bots:
        if tip.bot_id in named:
            continue
        line, seen = [tip], {tip.bot_id}
        while line[0].previous_id in by_id and line[0].previous_id not in seen:
            seen.add(line[0].previous_id)
            line.insert(0, by_id[line[0].previous_id])
        if len(line) > 1:
            lines.append(line)
    lines.sort(key=lambda line: [order[b.bot_id] for b in line])
    return [[{"id": b.bot_id, "name": b.name or b.bot_id, "state": bot_state(b)}
             for b in line] for line in lines]


def version_line(b: bot_pb2.Bot, names: Mapping[str, str],
                 retired: Mapping[str, bool]) -> list[Row]:
    """A bot's line of versions as its page shows it, oldest first (GetBot's
    `version_ids`): each named from `names` (else by its id), the bot itself marked;
    empty for a bot with no other version."""
    if len(b.version_ids) < 2:
        return []
    return [{"id": v, "name": names.get(v, v), "current": v == b.bot_id,
             "retired": retired.get(v, False)} for v in b.version_ids]


_HOSTED_STATUS = {bot_pb2.VERSION_STATUS_BUILDING: "building",
                  bot_pb2.VERSION_STATUS_VALIDATING: "validating",
                  bot_pb2.VERSION_STATUS_ACTIVE: "active",
                  bot_pb2.VERSION_STATUS_FAILED: "failed"}


def hosted_view(b: bot_pb2.Bot) -> dict[str, Any] | None:
    """What a bot's page says of its hosted version (None for a remote bot): its runtime,
    status, reason and digest. Never its log's tail: pages are public, the log is its
    owner's (and the web server holds no owner's token anyway)."""
    if not b.HasField("hosted"):
        return None
    h = b.hosted
    return {"line": h.line, "number": h.number, "runtime": h.runtime,
            "command": " ".join(h.command), "status": _HOSTED_STATUS.get(h.status, "unknown"),
            "reason": h.reason, "digest": h.digest, "size": h.size}
