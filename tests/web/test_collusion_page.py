"""The organisers' collusion page asks the visitor for their own token and holds none: no
token, no call to the referee (the page's use with a referee: tests/net/
test_collusion_live.py)."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from clients.web.app import create_app
from clients.web.private import sent_token as _sent_token


def _get(path: str) -> tuple[int, dict[str, str], str]:
    """One GET through the ASGI app, no lifespan (no channel to the referee is made)."""
    app = create_app("127.0.0.1:1")
    sent: list[dict[str, Any]] = []
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "GET", "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": b"", "root_path": "", "headers": [(b"host", b"x")],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))  # type: ignore[arg-type]
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], headers, body.decode()


def test_the_token_comes_from_basic_or_bearer() -> None:
    basic = base64.b64encode(b"anyone:a-secret.token").decode()
    assert _sent_token(f"Basic {basic}") == "a-secret.token"
    assert _sent_token("Bearer tok") == "tok"
    assert _sent_token("bearer  tok ") == "tok"
    assert _sent_token("Basic !!notbase64") == ""
    assert _sent_token("Basic " + base64.b64encode(b"no-colon").decode()) == ""
    assert _sent_token("Digest x") == "" and _sent_token("") == ""


def test_without_a_token_the_page_asks_for_one() -> None:
    status, headers, text = _get("/organiser/collusion/3p")
    assert status == 401
    assert headers["www-authenticate"].startswith("Basic realm=")
    assert headers["cache-control"] == "no-store"
    assert "organiser" in text
    assert _get("/organiser/collusion/4p")[0] == 404
