"""Pages for one visitor only: a bot's log for its author (`/bot/<id>/log`), and what the
organisers' collusion page shares with it (how the visitor proves who they are, and how
such a page is answered).

The web server holds no token of anyone's. A visitor proves who they are with their own
token in the request's Authorization header: HTTP Basic's password (the browser asks for
it on a 401 and keeps it for the tab's session; any user name) or a Bearer token. It is
sent on to the referee with the calls this page makes (WhoAmI, GetBot), which decides,
and is kept nowhere: not in a cookie, not in a URL (where it would stay in the history,
in every proxy's and server's access log and in a Referer), not in the server's memory
after the response. Basic sends the token in clear text like any bearer token: serve the
pages over TLS (a reverse proxy) wherever they cross a network.

What a private page answers:

- no token: 401 asking for one (`WWW-Authenticate: Basic`), a token the referee does not
  know: 401; a token that is not the bot's author's (another author, a bot, an
  organiser): 403. None of them depends on the bot's log (they are answered before it is
  read), so a stranger learns nothing of it, not even whether there is one or its size.
- every answer, 200 or not: `Cache-Control: no-store` (no browser or shared cache keeps
  it), `X-Frame-Options: DENY` (no other site frames it), `X-Robots-Tag: noindex`; with
  the Content-Security-Policy of every page (scripts from this server only), which a
  stranger's bytes could not get past even if the escaping failed.
- the log is a stranger's bytes, shown as text: Jinja2 escapes it, and `visible_log`
  shows control and bidirectional-override characters as escapes (`\\x1b`, `\\u202e`),
  so a terminal sequence or reversed text cannot dress up what the author reads.
"""

from __future__ import annotations

import base64
import unicodedata
from typing import Any, Protocol

import grpc
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from clients.web import author_views, views
from clients.web.api import PublicApi
from proto.moon.v1 import account_pb2, bot_pb2

__all__ = ["PRIVATE_HEADERS", "OwnerPages", "private", "refused", "sent_token", "visible_log"]

PRIVATE_HEADERS = {"Cache-Control": "no-store", "Pragma": "no-cache",
                   "X-Robots-Tag": "noindex", "X-Frame-Options": "DENY"}
AUTHOR_REALM = 'Basic realm="moonshot authors", charset="UTF-8"'
VERSIONS_SHOWN = 20  # the newest hosted versions of a bot's line its log page shows


class Pages(Protocol):
    """What the private pages use of `clients.web.app.Pages`."""

    @property
    def client(self) -> PublicApi:
        """The API client."""

    def page(self, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        """A rendered template."""

    def error_page(self, code: int, title: str, message: str) -> HTMLResponse:
        """The page of a 401, 403, 404, ..."""

    def ident(self, request: Request, name: str) -> str:
        """A path parameter that may be an id; 404 if it cannot be one."""


def sent_token(header: str) -> str:
    """The token of an Authorization header: Bearer's, or Basic's password ('' if none)."""
    kind, _, value = header.strip().partition(" ")
    value = value.strip()
    if kind.lower() == "bearer":
        return value
    if kind.lower() == "basic":
        try:
            decoded = base64.b64decode(value, validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return ""
        return decoded.partition(":")[2].strip()
    return ""


def private(resp: Response) -> Response:
    """A response of a private page: never cached, framed or indexed."""
    resp.headers.update(PRIVATE_HEADERS)
    return resp


def refused(p: Pages, status: int, title: str, message: str, realm: str) -> Response:
    """A private page's 401 (asking for a token in `realm`) or 403."""
    resp = private(p.error_page(status, title, message))
    if status == 401:
        resp.headers["WWW-Authenticate"] = realm
    return resp


# Shown as escapes: C0 and C1 controls but newline and tab, and the format characters
# that reorder or hide text (bidirectional overrides and isolates, zero-width ones).
_KEEP = frozenset("\n\t")


def _shown(ch: str) -> str:
    if ch in _KEEP:
        return ch
    if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn"):
        code = ord(ch)
        if code < 0x100:
            return f"\\x{code:02x}"
        return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
    return ch


def visible_log(text: str) -> str:
    """A log as plain text a person can trust: control and invisible or reordering
    characters written as escapes (the template then escapes `<`, `&` and quotes)."""
    return "".join(_shown(ch) for ch in text)


def _version_row(b: bot_pb2.Bot, current: str) -> dict[str, Any]:
    view = author_views.hosted_view(b) or {}
    return {**view, "id": b.bot_id, "name": b.name or b.bot_id, "current": b.bot_id == current,
            "updated": views.when(b.hosted.updated_at, b.hosted.HasField("updated_at")),
            "log": visible_log(b.hosted.log_tail)}


class OwnerPages:
    """`/bot/<id>/log`: the status and the stderr tail of each hosted version of a bot's
    line, for the bot's author (and the admin, who may read any log: server.bots)."""

    def __init__(self, pages: Pages) -> None:
        self.p = pages

    async def _who(self, token: str) -> account_pb2.WhoAmIResponse | None:
        """Who the token is (None: the referee knows no such token)."""
        try:
            return await self.p.client.who_am_i(token)
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.UNAUTHENTICATED:
                return None
            raise

    async def bot_log(self, request: Request) -> Response:
        """A bot's hosted versions with their logs, for its author only."""
        ident = self.p.ident(request, "bot_id")
        b = await self.p.client.bot(ident)  # public: an unknown bot is a 404 for anyone
        token = sent_token(request.headers.get("authorization", ""))
        ask = ("This page is for the bot's author: give your author token (moonshot login "
               "saved it) as the password when your browser asks; any user name.")
        if not token:
            return refused(self.p, 401, "Its author only", ask, AUTHOR_REALM)
        who = await self._who(token)
        if who is None:
            return refused(self.p, 401, "Its author only",
                           "The referee knows no such token. " + ask, AUTHOR_REALM)
        admin = who.role == account_pb2.ROLE_ADMIN
        mine = bool(b.owner_id) and who.HasField("author") and \
            who.author.author_id == b.owner_id
        if not (admin or mine):
            return refused(self.p, 403, "Its author only",
                           "Only the author of this bot (and the stack's admin) may read its "
                           "log; this token is not theirs.", AUTHOR_REALM)
        ids = list(reversed(b.version_ids or [b.bot_id]))[:VERSIONS_SHOWN]
        rows = []
        for bot_id in ids:  # each with the visitor's token: the referee gives the log or ''
            v = await self.p.client.bot(bot_id, token)
            if v.HasField("hosted") and (admin or v.owner_id == b.owner_id):
                rows.append(_version_row(v, b.bot_id))
        return private(self.p.page("bot_log.html", bot={"id": b.bot_id, "name": b.name},
                                   versions=rows, admin=admin and not mine))
