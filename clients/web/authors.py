"""The authors' pages: `/authors`, everyone who owns bots; `/author/<id or name>`, one
author's bots (state, ratings, previous version), their lines of versions and the tests
they started (running and ended, each linking its test page). Also what a bot's page
says of its owner and its versions (`bot_lineage`), and a test's page of who started it
(`started_by`).

Public and read-only like every page: everything comes from the referee's public API
without a token (GetAuthor, ListAuthors, ListBots by owner, ListTests by author), which
gives no token, limits, audit entries or seed of a running test to anyone.
"""

from __future__ import annotations

from typing import Any, Protocol

import grpc
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from clients.web import author_views, change_views, views
from clients.web.api import POOLS, PublicApi
from proto.moon.v1 import bot_pb2

__all__ = ["AUTHOR_BOTS_MAX", "AUTHOR_TESTS_SHOWN", "AuthorPages", "bot_lineage",
           "started_by"]

AUTHOR_BOTS_MAX = 1000  # an author page lists at most this many of the author's bots
AUTHOR_TESTS_SHOWN = 50  # ... and this many tests a page, newest first (then "older")
AUTHORS_PAGE = 100


class Pages(Protocol):
    """What the author pages use of `clients.web.app.Pages`."""

    @property
    def client(self) -> PublicApi:
        """The API client."""

    def page(self, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        """A rendered template."""

    def ident(self, request: Request, name: str) -> str:
        """A path parameter that may be an id; 404 if it cannot be one."""


async def _owned(api: PublicApi, author_id: str) -> tuple[list[bot_pb2.Bot], bool]:
    """An author's bots, oldest first (at most AUTHOR_BOTS_MAX), and whether there are
    more."""
    bots: list[bot_pb2.Bot] = []
    token = ""
    while True:
        resp = await api.list_bots(page_token=token, page_size=AUTHOR_BOTS_MAX,
                                   owner=author_id)
        bots += resp.bots
        token = resp.next_page_token
        if not token or len(bots) >= AUTHOR_BOTS_MAX:
            return bots[:AUTHOR_BOTS_MAX], bool(token) or len(bots) > AUTHOR_BOTS_MAX


async def bot_lineage(p: Pages, b: bot_pb2.Bot) -> dict[str, Any]:
    """What a bot's page says of its owner (linked; None for a bot of no one), whether it
    is retired (and since when) and its line of versions (each version linked)."""
    owner = ({"id": b.owner_id, "name": b.owner_name or b.owner_id} if b.owner_id else None)
    line: list[dict[str, Any]] = []
    if len(b.version_ids) > 1:
        names: dict[str, str] = {}
        retired: dict[str, bool] = {}
        try:  # the line is the owner's bots: one call names them all
            bots, _ = await _owned(p.client, b.owner_id)
        except grpc.aio.AioRpcError:
            bots = []
        for x in bots:
            names[x.bot_id] = x.name
            retired[x.bot_id] = x.HasField("retired_at")
        line = author_views.version_line(b, names, retired)
    return {"owner": owner, "state": author_views.bot_state(b),
            "retired": views.when(b.retired_at, b.HasField("retired_at")), "versions": line}


async def started_by(p: Pages, author_id: str) -> dict[str, str] | None:
    """Who started a test, for its page: the author (named, linked), or None for the
    admin's test."""
    if not author_id:
        return None
    try:
        return {"id": author_id, "name": (await p.client.author(author_id)).name or author_id}
    except grpc.aio.AioRpcError:
        return {"id": author_id, "name": author_id}


class AuthorPages:
    """The handlers of `/authors` and `/author/<id or name>`."""

    def __init__(self, pages: Pages) -> None:
        self.p = pages

    async def authors(self, request: Request) -> Response:
        """Every author, oldest first, a page at a time."""
        token = request.query_params.get("page", "")
        resp = await self.p.client.list_authors(page_token=token, page_size=AUTHORS_PAGE)
        rows = [author_views.author_row(a) for a in resp.authors]
        return self.p.page("authors.html", rows=rows, next=resp.next_page_token)

    async def _ratings(self) -> dict[str, dict[str, Any]]:
        """Each pool's rated bots: pool -> bot id -> its row (rank, rating, interval)."""
        out: dict[str, dict[str, Any]] = {}
        for pool in POOLS:
            try:
                view = views.ratings_view(await self.p.client.get_ratings(pool))
            except grpc.aio.AioRpcError:
                out[pool] = {}
                continue
            out[pool] = {r["bot_id"]: {**r, "of": len(view["rows"])} for r in view["rows"]}
        return out

    async def author(self, request: Request) -> Response:
        """One author: role, since when, their bots and lines of versions, their tests."""
        ident = self.p.ident(request, "author")
        a = await self.p.client.author(ident)
        bots, more_bots = await _owned(self.p.client, a.author_id)
        names = {b.bot_id: b.name for b in bots}
        ratings = await self._ratings() if bots else {pool: {} for pool in POOLS}
        token = request.query_params.get("tests", "")
        tests = await self.p.client.list_tests(page_token=token, page_size=AUTHOR_TESTS_SHOWN,
                                               author=a.author_id)
        return self.p.page(
            "author.html", author=author_views.author_row(a),
            bots=[author_views.owned_bot_row(b, names, ratings) for b in bots],
            more_bots=more_bots, pools=list(POOLS),
            lines=author_views.version_lines(bots),
            tests=[change_views.change_row(t) for t in tests.tests],
            tests_next=tests.next_page_token, tests_older=bool(token))
