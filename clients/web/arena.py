"""The arena's web page, `/arena/<pool>`: its live leaderboard with intervals, who is online
and playing, the boards in play (counts) and its games as they are released.

Live without a reload: `/arena/<pool>/events` sends the page's parts as HTML whenever
they change (server-sent events, like a tournament page). One snapshot per pool is
read from the referee (GetArena, GetRatings, the arena's newest games) at most every
SNAPSHOT_S, whatever the number of browsers following it, and each browser is sent
a snapshot newer than the one it has. Everything comes over the public API: an arena
game whose board is in play shows its status and nothing else.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import grpc
import jinja2
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from clients.web import views
from clients.web.api import POOLS, PublicApi, is_gone
from clients.web.live import sse
from proto.moon.v1 import arena_pb2

__all__ = ["ArenaPages", "arena_rows", "bot_arenas", "front_arenas"]

SNAPSHOT_S = 2.0  # a pool's snapshot is read again after this long
GAMES_SHOWN = 40
KEEPALIVE_S = 15.0
_STATUS = {arena_pb2.ARENA_STATUS_RUNNING: "running", arena_pb2.ARENA_STATUS_STOPPED: "stopped"}


class Pages(Protocol):
    """What the arena pages use of `clients.web.app.Pages`."""

    env: jinja2.Environment

    @property
    def client(self) -> PublicApi:
        """The API client."""

    def page(self, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        """A rendered template."""

    def stream(self, request: Request, kind: str, ident: str,
               source: Callable[[int], AsyncIterator[str]] | None = None) -> Response:
        """An SSE response within the live pages' caps."""


@dataclass
class _Snapshot:
    """The newest rendering of one pool's arena page, and its sequence."""

    seq: int = 0
    at: float = 0.0
    ctx: dict[str, Any] | None = None
    html: dict[str, str] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def arena_rows(a: arena_pb2.Arena, ratings: Any) -> dict[str, Any]:
    """The page's figures: the leaderboard (every rated bot of the pool, the arena's marked
    with where they are), the arena's bots and boards."""
    bots = {b.bot_id: b for b in a.bots}
    board = views.ratings_view(ratings)
    rated = set()
    for row in board["rows"]:
        rated.add(row["bot_id"])
        b = bots.get(row["bot_id"])
        row["where"] = _where(b)
        row["in_arena"] = b is not None
    return {
        "status": _STATUS.get(a.status, "unknown"),
        "settings": {"concurrency": a.settings.concurrency,
                     "move": f"{a.settings.clock.move_time_ms / 1000:g} s",
                     "anchors": list(a.settings.anchors),
                     "rules": views.changed_rules(dict(a.settings.rules)),
                     "sandbox": views.sandbox_text(a.settings.sandbox)},
        "online": a.online, "playing": a.playing, "waiting": a.waiting, "games": a.games,
        "boards": a.boards, "released": a.released, "holding": a.holding,
        "started": views.when(a.started_at, a.HasField("started_at")),
        "board": board,
        "bots": [{"id": b.bot_id, "name": b.name, "house": b.house, "online": b.online,
                  "playing": b.playing, "games": b.games, "where": _where(b),
                  "rated": b.bot_id in rated} for b in a.bots],
        "in_play": [{"board": b.board, "games": b.games, "finished": b.finished}
                    for b in a.boards_in_play],
    }


def _where(b: arena_pb2.ArenaBot | None) -> str:
    """offline, online, waiting, playing 2, ..."""
    if b is None:
        return ""
    if not b.online:
        return "offline"
    if b.playing:
        return f"playing {b.playing}"
    return "waiting" if b.waiting else "online"


async def front_arenas(pages: Pages) -> list[dict[str, Any]]:
    """The arenas that exist, for the front page: pool, status, online, playing."""
    out = []
    for pool in POOLS:
        try:
            a = await pages.client.arena(pool)
        except grpc.aio.AioRpcError as exc:
            if is_gone(exc):
                continue
            raise
        out.append({"pool": pool, "status": _STATUS.get(a.status, "unknown"),
                    "online": a.online, "playing": a.playing, "released": a.released})
    return out


async def bot_arenas(pages: Pages, bot_id: str) -> list[dict[str, Any]]:
    """The arenas a bot is in (joined, or an anchor), for its page: pool, the arena's
    status, where the bot is, its games there."""
    out = []
    for pool in POOLS:
        try:
            a = await pages.client.arena(pool)
        except grpc.aio.AioRpcError as exc:
            if is_gone(exc):
                continue
            raise
        b = next((x for x in a.bots if x.bot_id == bot_id), None)
        if b is not None:
            out.append({"pool": pool, "status": _STATUS.get(a.status, "unknown"),
                        "where": _where(b), "games": b.games})
    return out


class ArenaPages:
    """The arena page and its live updates, sharing one snapshot per pool."""

    def __init__(self, pages: Pages) -> None:
        self.pages = pages
        self.snaps: dict[str, _Snapshot] = {pool: _Snapshot() for pool in POOLS}

    @staticmethod
    def _pool(request: Request) -> str:
        pool = str(request.path_params["pool"])
        if pool not in POOLS:
            raise HTTPException(404, "there are two arenas: 3p and 2v2")
        return pool

    async def _read(self, pool: str) -> dict[str, Any]:
        api = self.pages.client
        a = await api.arena(pool)
        ratings = await api.get_ratings(pool)
        games = await api.list_matches(arena=pool, page_size=GAMES_SHOWN)
        ctx = arena_rows(a, ratings)
        ctx.update(pool=pool, game_rows=[views.match_row(m) for m in games.matches])
        return ctx

    async def snapshot(self, pool: str) -> _Snapshot:
        """The pool's snapshot, read again if older than SNAPSHOT_S (one reader at a time)."""
        snap = self.snaps[pool]
        async with snap.lock:
            if snap.ctx is None or time.monotonic() - snap.at >= SNAPSHOT_S:
                ctx = await self._read(pool)
                parts: Any = self.pages.env.get_template("_arena.html").module
                html = {name: str(getattr(parts, name)(ctx))
                        for name in ("status", "leaderboard", "bots", "boards", "games")}
                if html != snap.html:
                    snap.seq += 1
                    snap.html = html
                snap.ctx, snap.at = ctx, time.monotonic()
        return snap

    async def page(self, request: Request) -> Response:
        """The arena of a pool (404 when it never started)."""
        pool = self._pool(request)
        snap = await self.snapshot(pool)
        return self.pages.page("arena.html", ctx=snap.ctx, seq=snap.seq, pool=pool)

    async def events(self, request: Request) -> Response:
        """Server-sent events: the page's parts each time they change."""
        pool = self._pool(request)
        await self.snapshot(pool)  # a pool without an arena is a 404, not an empty stream
        return self.pages.stream(request, "arena", pool,
                                 source=lambda after: self._follow(pool, after))

    async def _follow(self, pool: str, after: int) -> AsyncIterator[str]:
        sent = after
        quiet = 0.0
        while True:
            try:
                snap = await self.snapshot(pool)
            except grpc.aio.AioRpcError:
                snap = self.snaps[pool]  # the referee away: keep the page, try again
            if snap.seq != sent:  # a snapshot the page has not drawn (or a new web server)
                sent = snap.seq
                quiet = 0.0
                yield sse("state", json.dumps({"seq": snap.seq, "html": snap.html},
                                              separators=(",", ":")), snap.seq)
            await asyncio.sleep(SNAPSHOT_S)
            quiet += SNAPSHOT_S
            if quiet >= KEEPALIVE_S:
                quiet = 0.0
                yield ": keep-alive\n\n"
