"""The web pages of a tournament: a Starlette application over the referee's public API.

Why Starlette (with Jinja2 templates, served by uvicorn): it is asyncio from end to
end, so one event loop holds the grpc.aio channel, the upstream watch streams and
every browser's server-sent-event connection (a `StreamingResponse` of an async
generator) without threads; it is small (routing, static files, responses: all a
handful of pages need, no ORM or form layer to switch off), typed, and maintained by
the Encode team behind uvicorn and httpx. Jinja2 escapes everything by default.
Everything a page loads (CSS, JS, SVG) comes from `clients/web/static`: no page
needs the internet, and the Content-Security-Policy says so to the browser.

Pages (see README, "Web pages"):

    /                    tournaments, status and progress
    /t/<id>              standings, crosstable, bracket, games; live (SSE /t/<id>/events)
    /ratings/3p, /2v2    ratings table and chart with intervals (?method=NAME: that rating
                         method's table; the page offers each)
    /organiser/collusion/3p, /2v2
                         the collusion audit, for organisers only: the visitor's own
                         organiser token as HTTP Basic's password (or Bearer), sent on
                         to the referee, which decides; never cached
    /arena/3p, /2v2      an arena: live leaderboard, who is online and playing, its games
                         as released (SSE /arena/<pool>/events)
    /bots, /bot/<id>     bots (each with its owner); one bot's games, results and current
                         ratings, its owner, whether it is retired, its line of versions
    /bot/<id>/log        for the bot's author only (their own token, as for the collusion
                         page: clients.web.private): the status and stderr tail of each
                         hosted version of its line; never cached
    /authors             authors (who owns bots), oldest first
    /author/<id|name>    an author: role, since when, their bots (state, ratings, previous
                         version), their lines of versions, the tests they started
    /test/<id>           a test of a change: LLR over pairs, pair scores, pairs, games;
                         live (SSE /test/<id>/events); /test/<id>/board/<k> a board's
                         two games side by side, each a frame of /test/<id>/board/<k>/c
                         (or /b): the replay alone, seats named by role
    /games               recent games (?tournament=, ?test=, ?bot=)
    /game/<id>           replay of a released game; status only while its board is
                         in play; a running single match live (SSE /game/<id>/events)
    /game/<id>.json      the raw moon-transcript/1 JSON
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ipaddress
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc
import jinja2
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clients.channel import Target, diagnose, not_answered, target_of
from clients.render import plural
from clients.web import author_views, change_views, views
from clients.web.api import POOLS, PublicApi, is_gone, is_unreachable
from clients.web.arena import ArenaPages, bot_arenas, front_arenas
from clients.web.author_views import bot_state
from clients.web.authors import AuthorPages, bot_lineage, started_by
from clients.web.live import Feed, Hub, sse
from clients.web.private import OwnerPages, private, refused, sent_token
from proto.moon.v1 import change_pb2, tournament_pb2
from store.pools import Pool

__all__ = ["create_app"]

log = logging.getLogger("moonshot.web")

HERE = Path(__file__).resolve().parent
GAMES_SHOWN = 120  # a tournament page lists its newest games; /games pages through all
TESTS_SHOWN = 20  # the front page lists the newest tests
TEST_GAMES_SHOWN = 40  # a test page lists its newest games (its pairs link the rest)
PAIRS_READ = 100_000  # a test page reads at most this many pairs (the chart thins them)
LIVE_SINGLES_SCAN = 100  # the front page looks for live single matches among the newest
BOT_GAMES_MAX = 500  # a bot page reads at most this many of its games
MAX_ID = 200  # longer ids are not ids: 404 without asking the referee
KEEPALIVE_S = 15.0
MAX_STREAMS = 1000  # browsers following live at once, per web server
# No one address, and no one network (a /24 of IPv4, a /56 of IPv6), may take them all:
# a browser holds one live page per open tab, and several people behind one NAT share
# an address.
MAX_STREAMS_PER_ADDRESS = 32
MAX_STREAMS_PER_NETWORK = 128
ORGANISER_REALM = 'Basic realm="moonshot organisers", charset="UTF-8"'
CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
       "connect-src 'self'; base-uri 'none'; form-action 'self'; object-src 'none'")


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["json_script"] = views.json_script
    env.filters["plural"] = plural  # {{ n | plural("game") }}: 1 game, 2 games
    env.filters["breakable"] = views.breakable  # a name that breaks at : ? & = / _ . @
    return env


class Pages:
    """The handlers, sharing the API client, the templates and the live hub."""

    def __init__(self, server: str | Target, linger: float = 30.0) -> None:
        self.target = target_of(server)
        self.server = self.target.address
        self.env = _environment()
        self.linger = linger
        self.api: PublicApi | None = None
        self.hub: Hub | None = None
        self.streams = 0
        self.by_client: collections.Counter[str] = collections.Counter()  # address, network
        self.tournament_names: dict[str, str] = {}  # names never change: kept once read

    # ---------------------------------------------------------------- helpers

    @property
    def client(self) -> PublicApi:
        """The API client (made in the lifespan, inside the event loop)."""
        assert self.api is not None
        return self.api

    def page(self, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        """A rendered template."""
        context.setdefault("server", self.server)
        html = self.env.get_template(name).render(**context)
        return HTMLResponse(html, status_code=status_code)

    def error_page(self, code: int, title: str, message: str) -> HTMLResponse:
        """The page of a 404, 503, ... (never a traceback)."""
        resp = self.page("error.html", status_code=code, code=code, title=title,
                         message=message)
        if code == 503:
            resp.headers["Retry-After"] = "5"
        return resp

    @staticmethod
    def ident(request: Request, name: str) -> str:
        """A path parameter that may be an id; 404 if it cannot be one."""
        value = str(request.path_params[name])
        if not value or len(value) > MAX_ID or not value.isprintable():
            raise HTTPException(404, f"no such {name.removesuffix('_id')}")
        return value

    async def name_tournaments(self, rows: list[dict[str, Any]]) -> None:
        """Put each row's tournament name in (GetTournament once per tournament)."""
        if len(self.tournament_names) > 5000:
            self.tournament_names.clear()
        for row in rows:
            tid = row["tournament_id"]
            if tid and tid not in self.tournament_names:
                try:
                    t = await self.client.tournament(tid)
                except grpc.aio.AioRpcError:
                    continue
                self.tournament_names[tid] = t.spec.name or tid
            if tid:
                row["tournament_name"] = self.tournament_names.get(tid, tid)

    def parts(self) -> Any:
        """The tournament page's parts (Jinja macros), for live updates too."""
        return self.env.get_template("_tournament.html").module

    async def tournament_context(self, t: tournament_pb2.Tournament,
                                 st: tournament_pb2.Standings) -> dict[str, Any]:
        """Everything the tournament page and its live updates draw."""
        games = await self.client.list_matches(tournament_id=t.tournament_id,
                                                page_size=GAMES_SHOWN)
        row = views.tournament_row(t)
        progress = views.progress_view(t, st)
        boards = views.boards_view(t, st)
        rows = [views.match_row(m) for m in games.matches]
        pool = str(Pool.of(t.spec.players))
        try:  # who the pool rates: the others show `unrated`, not the 0 they count as
            rated: set[str] | None = {r.bot_id for r in
                                      (await self.client.get_ratings(pool)).ratings}
        except grpc.aio.AioRpcError:
            rated = None
        return {
            "t": row,
            "progress": progress,
            "boards": boards,
            "boards_word": ("tables" if t.spec.duplicate == tournament_pb2.DUPLICATE_MODE_BOARDS
                            else "games"),
            "seq": st.sequence,
            "standings": views.standings_view(st, rated),
            "forfeit_wins": any(r.forfeit_wins for r in st.rows),  # draw the FW column
            "ranking": views.ranking_view(st, rated),
            "rounds": views.rounds_view(st, t.spec.players),
            "teams": bool(st.ranking.rows) and len(st.ranking.rows[0].bot_ids) > 1,
            "pool": str(Pool.of(t.spec.players)),
            "crosstable": views.crosstable_view(st),
            "bracket": views.bracket_view(st),
            "notes": list(st.notes) or list(t.notes),
            "groups": views.games_by_board(rows, [b["board"] for b in boards]),
            "more_games": bool(games.next_page_token),
        }

    async def render_tournament(self, t: tournament_pb2.Tournament,
                                st: tournament_pb2.Standings) -> dict[str, Any]:
        """One live update of a tournament page: its parts as HTML."""
        ctx = await self.tournament_context(t, st)
        parts = self.parts()
        return {
            "status": ctx["t"]["status"],
            "done": ctx["progress"]["played"],
            "total": ctx["progress"]["total"],
            "html": {
                "status": str(parts.status(ctx)),
                "progress": str(parts.progress(ctx)),
                "boards": str(parts.boards(ctx)),
                "standings": str(parts.standings(ctx)),
                "rounds": str(parts.rounds(ctx)),
                "crosstable": str(parts.crosstable(ctx)),
                "bracket": str(parts.bracket(ctx)),
                "games": str(parts.games(ctx)),
            },
        }

    # ------------------------------------------------------------------ pages

    async def index(self, request: Request) -> Response:
        """The tournaments, newest first, with status and progress."""
        token = request.query_params.get("page", "")
        resp = await self.client.list_tournaments(page_token=token)
        rows = [views.tournament_row(t) for t in resp.tournaments]
        # The newest matches hold the single matches being played: a cheap page, no scan.
        recent = await self.client.list_matches(page_size=LIVE_SINGLES_SCAN)
        singles = views.live_singles([views.match_row(m) for m in recent.matches])
        tests = [] if token else [change_views.change_row(t) for t in
                                  (await self.client.list_tests(page_size=TESTS_SHOWN)).tests]
        ctx = {"rows": rows, "next": resp.next_page_token, "page_token": token,
               "singles": singles, "tests": tests, "arenas": await front_arenas(self),
               "live": any(r["status"] == "running" for r in rows) or bool(singles)
               or any(t["status"] == "running" for t in tests)}
        if request.query_params.get("partial"):
            module: Any = self.env.get_template("_index.html").module
            return HTMLResponse(str(module.tournament_list(ctx)))
        return self.page("index.html", ctx=ctx)

    async def tournament(self, request: Request) -> Response:
        """A tournament: standings, crosstable or bracket, games; live while it runs."""
        tid = self.ident(request, "tournament_id")
        t = await self.client.tournament(tid)
        st = await self.client.standings(tid)
        ctx = await self.tournament_context(t, st)
        return self.page("tournament.html", ctx=ctx)

    async def tournament_events(self, request: Request) -> Response:
        """Server-sent events: the page's parts each time the standings change."""
        tid = self.ident(request, "tournament_id")
        await self.client.tournament(tid)  # an unknown one is a 404, not an empty stream
        return self.stream(request, "tournament", tid)

    async def ratings(self, request: Request) -> Response:
        """A pool's ratings: table and chart."""
        pool = str(request.path_params["pool"])
        if pool not in POOLS:
            raise HTTPException(404, "there are two rating pools: 3p and 2v2")
        method = request.query_params.get("method", "")
        try:
            resp = await self.client.get_ratings(pool, method)
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.INVALID_ARGUMENT:
                raise HTTPException(404, f"no such rating method: {exc.details()}") from None
            raise
        return self.page("ratings.html", pool=pool, method=method, r=views.ratings_view(resp))

    async def collusion(self, request: Request) -> Response:
        """The organisers' collusion audit of a pool (`/organiser/collusion/<pool>`).

        The web server holds no token: the visitor's own organiser (or admin) token
        comes with the request, as HTTP Basic's password (a browser asks for it; any
        user name) or a Bearer token, is sent on to the referee, which decides, and is
        kept nowhere. Without one: 401, asking for it; a token that is not an
        organiser's: 403. The page is never cached, and is not linked from public pages."""
        pool = str(request.path_params["pool"])
        if pool not in POOLS:
            raise HTTPException(404, "there are two rating pools: 3p and 2v2")
        token = sent_token(request.headers.get("authorization", ""))
        if not token:
            return refused(self, 401, "Organisers only",
                           "This page needs an organiser's token: give it as the password "
                           "(any user name) when your browser asks.", ORGANISER_REALM)
        try:
            audit = await self.client.audit_collusion(pool, token)
        except grpc.aio.AioRpcError as exc:
            code = exc.code()
            if code not in (grpc.StatusCode.UNAUTHENTICATED,
                            grpc.StatusCode.PERMISSION_DENIED):
                raise
            status = 401 if code == grpc.StatusCode.UNAUTHENTICATED else 403
            return refused(self, status, "Organisers only", exc.details() or "refused",
                           ORGANISER_REALM)
        return private(self.page("collusion.html", pool=pool, a=audit))

    async def bots(self, request: Request) -> Response:
        """Every bot, oldest first, a page at a time."""
        token = request.query_params.get("page", "")
        resp = await self.client.list_bots(page_token=token)
        rows = [{"id": b.bot_id, "name": b.name, "state": bot_state(b),
                 "owner": ({"id": b.owner_id, "name": b.owner_name or b.owner_id}
                           if b.owner_id else None),
                 "created": views.when(b.created_at)} for b in resp.bots]
        return self.page("bots.html", rows=rows, next=resp.next_page_token)

    async def bot(self, request: Request) -> Response:
        """One bot: its ratings in both pools now and over time, and its games."""
        ident = self.ident(request, "bot_id")
        b = await self.client.bot(ident)
        ratings, history = {}, {}
        for pool in POOLS:
            ratings[pool] = views.rating_of(await self.client.get_ratings(pool), b.bot_id)
            history[pool] = views.history_chart(
                await self.client.rating_history(pool, b.bot_id))
        games: list[dict[str, Any]] = []
        token = ""
        while len(games) < BOT_GAMES_MAX:
            resp = await self.client.list_matches(bot_id=b.bot_id, page_token=token,
                                                  page_size=100)
            games += [views.bot_game(b.bot_id, m) for m in resp.matches]
            token = resp.next_page_token
            if not token:
                break
        games.reverse()  # oldest first: results over time
        await self.name_tournaments(games)
        tally = {k: sum(1 for g in games if g["outcome"] == k)
                 for k in ("win", "draw", "shared", "loss")}
        tally["forfeit"] = sum(1 for g in games if g["forfeited"])
        return self.page("bot.html", bot={"id": b.bot_id, "name": b.name,
                                          "connected": b.connected, "house": b.house,
                                          "created": views.when(b.created_at,
                                                                b.HasField("created_at"))},
                         lineage=await bot_lineage(self, b),
                         hosted=author_views.hosted_view(b),
                         ratings=ratings, history=history, games=games, more=bool(token),
                         tally=tally, arenas=await bot_arenas(self, b.bot_id),
                         chart=views.bot_results_chart(games))

    async def games(self, request: Request) -> Response:
        """Games, newest first, optionally of one tournament or one bot."""
        q = request.query_params
        tid, bot, token = q.get("tournament", ""), q.get("bot", ""), q.get("page", "")
        test = q.get("test", "")
        resp = await self.client.list_matches(tournament_id=tid, bot_id=bot, page_token=token,
                                              test_id=test)
        rows = [views.match_row(m) for m in resp.matches]
        await self.name_tournaments(rows)
        return self.page("games.html", rows=rows, next=resp.next_page_token, tournament=tid,
                         bot=bot, test=test)

    async def game(self, request: Request) -> Response:
        """A game: its replay once public; else its status (live for a single match)."""
        mid = self.ident(request, "match_id")
        m = await self.client.match(mid)
        row = views.match_row(m)
        tournament = None
        if m.tournament_id:
            with contextlib.suppress(grpc.aio.AioRpcError):
                tournament = views.tournament_row(await self.client.tournament(m.tournament_id))
        tv = None
        record_json = ""
        if m.transcript_json:
            mode = "replay"
            record = json.loads(m.transcript_json)
            tv = views.transcript_view(record)
            record_json = views.json_script(record)
        elif not row["boarded"] and row["status"] in ("queued", "running"):
            mode = "live"
        else:
            mode = "status"
        return self.page("game.html", m=row, mode=mode, tournament=tournament, tv=tv,
                         record_json=record_json, players=m.players)

    async def game_json(self, request: Request) -> Response:
        """The raw moon-transcript/1 JSON of a game, once public."""
        mid = self.ident(request, "match_id")
        m = await self.client.match(mid)
        if not m.transcript_json:
            return Response('{"error":"no public transcript yet: the game is not over, or '
                            'its board is still in play"}', status_code=404,
                            media_type="application/json")
        return Response(m.transcript_json + "\n", media_type="application/json",
                        headers={"Content-Disposition": f'inline; filename="{mid}.json"'})

    async def game_events(self, request: Request) -> Response:
        """Server-sent events of a game: its public plays (a single match) or its status."""
        mid = self.ident(request, "match_id")
        m = await self.client.match(mid)
        # A tournament's, a test's or an arena's game: its plays are hidden until its
        # board is done.
        boarded = m.tournament_id or m.test_id or m.arena
        kind = "match" if (not boarded and not m.transcript_json) else "status"
        return self.stream(request, kind, mid)

    # ------------------------------------------------------------------ tests

    async def test_context(self, test_id: str) -> dict[str, Any]:
        """Everything the test page and its live updates draw."""
        resp = await self.client.test(test_id, with_pairs=True)
        t = resp.test
        pairs = list(resp.pairs)
        while resp.next_pairs_after and len(pairs) < PAIRS_READ:
            resp = await self.client.test(test_id, with_pairs=True,
                                          pairs_after=resp.next_pairs_after)
            pairs += resp.pairs
        games = await self.client.list_matches(test_id=test_id, page_size=TEST_GAMES_SHOWN)
        rows = [views.match_row(m) for m in games.matches]
        shown = change_views.pair_rows(pairs)
        return {"t": change_views.change_row(t), "seq": t.sequence,
                "chart": change_views.chart_data(t, pairs), "pairs": shown,
                "pairs_more": len(shown) < t.progress.pairs + t.progress.pairs_void,
                "groups": views.games_by_board(rows), "more_games": bool(games.next_page_token)}

    async def render_test(self, test_id: str) -> dict[str, Any]:
        """One live update of a test page: its parts as HTML, and the charts' data."""
        ctx = await self.test_context(test_id)
        parts: Any = self.env.get_template("_test.html").module
        return {"status": ctx["t"]["status"], "seq": ctx["seq"], "chart": ctx["chart"],
                "html": {"status": str(parts.status(ctx)), "summary": str(parts.summary(ctx)),
                         "pairs": str(parts.pairs(ctx)), "games": str(parts.games(ctx))}}

    async def test(self, request: Request) -> Response:
        """A test of a change: LLR over pairs, pair scores, pairs, games; live while it runs."""
        ctx = await self.test_context(self.ident(request, "test_id"))
        ctx["author"] = await started_by(self, ctx["t"]["author_id"])
        return self.page("test.html", ctx=ctx)

    async def test_events(self, request: Request) -> Response:
        """Server-sent events: the page's parts each time the test moves."""
        test_id = self.ident(request, "test_id")
        await self.client.test(test_id)  # an unknown one is a 404, not an empty stream
        return self.stream(request, "test", test_id)

    async def _test_board(self, request: Request) -> tuple[change_pb2.Test, int]:
        """The test and board number of a board's page; 404 for no such board."""
        test_id = self.ident(request, "test_id")
        try:
            board = int(str(request.path_params["board"]))
        except ValueError:
            raise HTTPException(404, "a board is a number") from None
        t = (await self.client.test(test_id)).test
        if not 1 <= board <= max(t.games_total // 2, 1):
            raise HTTPException(404, f"test {test_id} has no board {board}")
        return t, board

    async def test_board(self, request: Request) -> Response:
        """One board of a test: the candidate's and the baseline's game side by side, each
        seat named by its role (C or B, the opponents by their place)."""
        t, board = await self._test_board(request)
        test_id = t.test_id
        row = change_views.change_row(t)
        pair = None
        if board <= t.progress.pairs + t.progress.pairs_void:
            got = await self.client.test(test_id, with_pairs=True, pairs_after=board - 1)
            pair = change_views.pair_rows(got.pairs[:1])[0] if got.pairs else None
        games = []
        for mid, role, who in zip(change_views.board_games(test_id, board),
                                  ("candidate", "baseline"), (row["candidate"], row["baseline"]),
                                  strict=True):
            status = "not begun"
            with contextlib.suppress(grpc.aio.AioRpcError):
                status = views.status_of_match((await self.client.match(mid)).status)
            games.append({"id": mid, "role": role, "title": f"The {role}'s game",
                          "bot_id": who["id"], "bot_name": who["name"], "status": status,
                          "seats": change_views.seat_roles(t, board, role[0]),
                          "frame": f"/test/{test_id}/board/{board}/{role[0]}"})
        return self.page("test_board.html", t=row, board=board, pair=pair, games=games)

    async def test_board_game(self, request: Request) -> Response:
        """One game of a test's board as the board page embeds it: its replay alone (no
        page around it), each seat named by its role; its status until it is public."""
        t, board = await self._test_board(request)
        role = str(request.path_params["role"])
        if role not in ("c", "b"):
            raise HTTPException(404, "a board's games are c (the candidate's) and b")
        mid = change_views.board_games(t.test_id, board)[role == "b"]
        seats = change_views.seat_roles(t, board, role)
        status, error, tv, record_json = "not begun", "", None, ""
        with contextlib.suppress(grpc.aio.AioRpcError):
            m = await self.client.match(mid)
            status, error = views.status_of_match(m.status), m.error
            if m.transcript_json:
                record = change_views.labelled(json.loads(m.transcript_json), seats)
                tv = views.transcript_view(record)
                record_json = views.json_script(record)
        return self.page("test_game.html", mid=mid, status=status, error=error, tv=tv,
                         record_json=record_json, seats=seats,
                         players=len(seats), role=role)

    # ------------------------------------------------------------------ streams

    def _busy(self, keys: tuple[str, str]) -> str | None:
        """Why one more live page from these (address, network) keys is refused, if it is."""
        if self.streams >= MAX_STREAMS:
            return "This web server follows as many live pages as it can."
        if self.by_client[keys[0]] >= MAX_STREAMS_PER_ADDRESS:
            return (f"Your address follows {MAX_STREAMS_PER_ADDRESS} live pages already; "
                    "close some tabs.")
        if self.by_client[keys[1]] >= MAX_STREAMS_PER_NETWORK:
            return (f"Your network follows {MAX_STREAMS_PER_NETWORK} live pages already.")
        return None

    def stream(self, request: Request, kind: str, ident: str,
               source: Callable[[int], AsyncIterator[str]] | None = None) -> Response:
        """An SSE response following the hub's feed (or `source`, given the sequence to
        resume after), resuming after Last-Event-ID; 429 past a client's share of the live
        pages, 503 past the server's."""
        keys = client_keys(request.client.host if request.client else "")
        busy = self._busy(keys)
        if busy:
            code = 503 if self.streams >= MAX_STREAMS else 429
            return self.error_page(code, "Too many live pages", busy)
        after_text = request.headers.get("last-event-id") or request.query_params.get("after")
        try:
            after = max(0, int(after_text or 0))
        except ValueError:
            after = 0
        return StreamingResponse(self._events(kind, ident, after, keys, source),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def _events(self, kind: str, ident: str, after: int, keys: tuple[str, str],
                      source: Callable[[int], AsyncIterator[str]] | None = None
                      ) -> AsyncIterator[str]:
        assert self.hub is not None
        # Counted here, where nothing can run between the check and the count: requests
        # that passed `stream` together cannot add up past a cap.
        if self._busy(keys):
            yield sse("busy", "{}")
            return
        self.streams += 1
        self.by_client.update(keys)
        try:
            yield "retry: 2000\n\n"
            if source is not None:
                async for chunk in source(after):
                    yield chunk
                return
            async with self.hub.follow(kind, ident) as feed:
                # A snapshot feed sends its newest state even at the page's own sequence:
                # a page drawn between two calls of a change gets it whole.
                last = (after - 1 if feed.snapshot else after, sys.maxsize)
                async for chunk in self._follow(feed, last):
                    yield chunk
        finally:
            self.streams -= 1
            self.by_client.subtract(keys)
            for k in keys:
                if self.by_client[k] <= 0:
                    del self.by_client[k]

    @staticmethod
    async def _follow(feed: Feed, last: tuple[int, int]) -> AsyncIterator[str]:
        while True:
            items = await feed.wait_after(last, KEEPALIVE_S)
            if items is None:
                yield ": keep-alive\n\n"
                continue
            for item in items:
                yield sse(item.event, item.data, item.seq)
                last = item.key
            if feed.done and last[0] >= feed.last_seq:
                yield sse("end", "{}")
                return

    # ------------------------------------------------------------------ errors

    async def on_http(self, request: Request, exc: Exception) -> Response:
        """404 and friends as pages."""
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            return self.error_page(404, "Not found", str(exc.detail) if exc.detail
                                   and exc.detail != "Not Found" else
                                   "There is no page at this address.")
        return self.error_page(exc.status_code, "Sorry", str(exc.detail))

    async def on_rpc(self, request: Request, exc: Exception) -> Response:
        """gRPC errors: unknown ids are 404, an unreachable referee 503."""
        assert isinstance(exc, grpc.RpcError)
        details = exc.details() if isinstance(exc, grpc.aio.AioRpcError) else ""
        if is_gone(exc):
            return self.error_page(404, "Not found", f"The referee knows no such thing: "
                                   f"{details or 'unknown id'}.")
        if is_unreachable(exc):
            why = f"The referee at {self.server} did not answer."
            if not_answered(details or ""):  # no connection at all: why (TLS, nothing there)
                text = await asyncio.to_thread(diagnose, self.target)
                why = text[:1].upper() + text[1:] + "."
            return self.error_page(503, "The referee is not answering",
                                   f"{why} This page will work again once it is back.")
        log.warning("gRPC error on %s: %s", request.url.path, exc)
        return self.error_page(502, "The referee refused", details or "unexpected error")

    async def on_error(self, request: Request, exc: Exception) -> Response:
        """Anything else: logged here, a plain 500 page there."""
        log.error("error on %s", request.url.path, exc_info=exc)
        return self.error_page(500, "Something went wrong",
                               "This page could not be drawn; the web server's log says why.")

    # ---------------------------------------------------------------- lifespan

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """The gRPC channel and the hub live as long as the server."""
        self.api = PublicApi(self.target, os.environ.get("MOONSHOT_WATCH_PASS") or None)
        self.hub = Hub(self.api, self.render_tournament, linger=self.linger,
                       render_test=self.render_test)
        try:
            yield
        finally:
            await self.hub.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.api.close(), 2)


def client_keys(host: str) -> tuple[str, str]:
    """The keys a browser's live pages count under: its address, and its network (the
    /24 of an IPv4 address, the /56 of an IPv6 one)."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return f"addr:{host}", f"net:{host}"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    prefix = 24 if ip.version == 4 else 56
    return f"addr:{ip}", f"net:{ipaddress.ip_network(f'{ip}/{prefix}', strict=False)}"


class SecurityHeaders:
    """Adds the Content-Security-Policy (everything from this server only) and friends."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(b"content-security-policy", CSP.encode()),
                            (b"x-content-type-options", b"nosniff"),
                            (b"referrer-policy", b"same-origin")]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


def create_app(server: str | Target, linger: float = 30.0) -> ASGIApp:
    """The web application for the referee at `server` (HOST:PORT, or a Target)."""
    p = Pages(server, linger)
    arena = ArenaPages(p)
    authors = AuthorPages(p)
    owner = OwnerPages(p)
    routes = [
        Route("/arena/{pool}", arena.page),
        Route("/arena/{pool}/events", arena.events),
        Route("/", p.index),
        Route("/t/{tournament_id}", p.tournament),
        Route("/t/{tournament_id}/events", p.tournament_events),
        Route("/test/{test_id}", p.test),
        Route("/test/{test_id}/events", p.test_events),
        Route("/test/{test_id}/board/{board}", p.test_board),
        Route("/test/{test_id}/board/{board}/{role}", p.test_board_game),
        Route("/ratings/{pool}", p.ratings),
        Route("/organiser/collusion/{pool}", p.collusion),
        Route("/bots", p.bots),
        Route("/bot/{bot_id}", p.bot),
        Route("/bot/{bot_id}/log", owner.bot_log),
        Route("/authors", authors.authors),
        Route("/author/{author}", authors.author),
        Route("/games", p.games),
        Route("/game/{match_id}.json", p.game_json),
        Route("/game/{match_id}/events", p.game_events),
        Route("/game/{match_id}", p.game),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=p.lifespan, exception_handlers={
        HTTPException: p.on_http,
        grpc.RpcError: p.on_rpc,
        Exception: p.on_error,
    })
    return SecurityHeaders(app)
