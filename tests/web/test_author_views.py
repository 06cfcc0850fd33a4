"""The author pages on the server side: the pure views (a bot's state, lines of versions), and
the handlers rendered over a stand-in for the referee's public API whose names are
hostile (everything escaped, nothing private asked for or shown, the right author's
bots and tests asked for)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import grpc
import pytest
from starlette.requests import Request

from clients.web.app import Pages
from clients.web.author_views import (
    author_row,
    bot_state,
    owned_bot_row,
    version_line,
    version_lines,
)
from clients.web.authors import AuthorPages, bot_lineage, started_by
from proto.moon.v1 import (
    account_pb2,
    arena_pb2,
    bot_pb2,
    change_pb2,
    match_pb2,
    rating_pb2,
)

EVIL = '<script>alert("x")</script>'


def _bot(bot_id: str, name: str = "", previous: str = "", retired: bool = False,
         connected: bool = False, owner: str = "u-a", created: int = 1) -> bot_pb2.Bot:
    b = bot_pb2.Bot(bot_id=bot_id, name=name or bot_id, previous_id=previous,
                    connected=connected, owner_id=owner, owner_name="alice" if owner else "")
    b.created_at.seconds = 1_700_000_000 + created
    if retired:
        b.retired_at.seconds = 1_700_100_000
    return b


# ----------------------------------------------------------------------------- views


def test_a_bot_s_state_retired_first_then_online_or_offline() -> None:
    assert bot_state(_bot("b-1", connected=True, retired=True)) == "retired"
    assert bot_state(_bot("b-1", connected=True)) == "online"
    assert bot_state(_bot("b-1")) == "offline"
    assert bot_state(bot_pb2.Bot(bot_id="house:greedy", house=True)) == "online"


def test_an_author_row_says_role_and_counts_bots() -> None:
    a = account_pb2.Author(author_id="u-1", name="al", organiser=True, bot_ids=["b-1", "b-2"])
    a.created_at.seconds = 1_700_000_000
    row = author_row(a)
    assert (row["role"], row["bots"], row["since"]["text"]) == ("organiser", 2,
                                                                "2023-11-14 22:13 UTC")
    assert author_row(account_pb2.Author(author_id="u-2", name="bo"))["role"] == "author"
    assert author_row(account_pb2.Author(author_id="u-2"))["since"]["text"] == ""


def test_lines_of_versions_follow_previous_versions_oldest_first() -> None:
    bots = [_bot("b-1"), _bot("b-2", previous="b-1"), _bot("b-x"), _bot("b-3", previous="b-2"),
            _bot("b-y", previous="b-x", retired=True)]
    lines = version_lines(bots)
    assert [[v["id"] for v in line] for line in lines] == [["b-1", "b-2", "b-3"],
                                                           ["b-x", "b-y"]]
    assert lines[1][1]["state"] == "retired"
    # Two next versions of one bot: two lines that share their start.
    fork = [_bot("b-1"), _bot("b-2", previous="b-1"), _bot("b-3", previous="b-1")]
    assert [[v["id"] for v in line] for line in version_lines(fork)] == [
        ["b-1", "b-2"], ["b-1", "b-3"]]
    # A bot alone is in no line; a previous version that is not among the bots ends a line;
    # a loop (which the store refuses) cannot hang the page.
    assert version_lines([_bot("b-1"), _bot("b-2", previous="b-gone")]) == []
    loop = [_bot("b-1", previous="b-2"), _bot("b-2", previous="b-1"), _bot("b-3",
                                                                           previous="b-2")]
    assert [[v["id"] for v in line] for line in version_lines(loop)] == [["b-1", "b-2",
                                                                          "b-3"]]


def test_a_bot_row_and_a_bot_s_line_name_versions_and_ratings() -> None:
    b = _bot("b-2", previous="b-1")
    row = owned_bot_row(b, {"b-1": "one"}, {"3p": {"b-2": {"rating": 1510}}, "2v2": {}})
    assert row["previous"] == {"id": "b-1", "name": "one"}
    assert row["ratings"] == {"3p": {"rating": 1510}, "2v2": None}
    assert owned_bot_row(_bot("b-3", previous="b-9"), {}, {})["previous"]["name"] == "b-9"
    b.version_ids.extend(["b-1", "b-2", "b-3"])
    assert version_line(b, {"b-1": "one", "b-2": "two"}, {"b-1": True}) == [
        {"id": "b-1", "name": "one", "current": False, "retired": True},
        {"id": "b-2", "name": "two", "current": True, "retired": False},
        {"id": "b-3", "name": "b-3", "current": False, "retired": False}]
    assert version_line(_bot("b-1"), {}, {}) == []


# -------------------------------------------------------------------- pages, rendered


class NotFound(grpc.aio.AioRpcError):
    def __init__(self) -> None:
        super().__init__(grpc.StatusCode.NOT_FOUND, grpc.aio.Metadata(), grpc.aio.Metadata(),
                         "no such author")


class FakeApi:
    """The public API as the pages call it, with hostile names; records each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        v1 = _bot("b-1", EVIL + "1", retired=True, owner="u-evil")
        v2 = _bot("b-2", EVIL + "2", previous="b-1", connected=True, owner="u-evil")
        v2.version_ids.extend(["b-1", "b-2"])
        for b in (v1, v2):
            b.owner_name = EVIL
        self.owned = [v1, v2]
        self.author_pb = account_pb2.Author(author_id="u-evil", name=EVIL, bot_ids=["b-1", "b-2"])
        t = change_pb2.Test(test_id="c-1", names=[EVIL + "2", EVIL + "1", "house:greedy"],
                            status=change_pb2.TEST_STATUS_RUNNING, author_id="u-evil")
        t.spec.name = EVIL + "test"
        t.spec.candidate, t.spec.baseline = "b-2", "b-1"
        t.spec.seed = 123456789  # as the admin would see it: the page never shows a seed
        self.tests = [t]

    async def author(self, ident: str) -> account_pb2.Author:
        self.calls.append(("author", {"ident": ident}))
        if ident not in ("u-evil", EVIL):
            raise NotFound()
        return self.author_pb

    async def list_authors(self, **kw: Any) -> account_pb2.ListAuthorsResponse:
        self.calls.append(("list_authors", kw))
        return account_pb2.ListAuthorsResponse(authors=[self.author_pb], next_page_token="u-x")

    async def list_bots(self, **kw: Any) -> bot_pb2.ListBotsResponse:
        self.calls.append(("list_bots", kw))
        return bot_pb2.ListBotsResponse(bots=self.owned if kw.get("owner") else [
            *self.owned, _bot("b-9", "orphan", owner="")])

    async def list_tests(self, **kw: Any) -> change_pb2.ListTestsResponse:
        self.calls.append(("list_tests", kw))
        return change_pb2.ListTestsResponse(tests=self.tests, next_page_token="c-0")

    async def get_ratings(self, pool: str, method: str = "") -> rating_pb2.GetRatingsResponse:
        resp = rating_pb2.GetRatingsResponse()
        if pool == "3p":
            resp.ratings.add(bot_id="b-1", name=EVIL + "1", rating=1612.4, games=9)
        return resp

    async def rating_history(self, pool: str, bot_id: str
                             ) -> rating_pb2.GetRatingHistoryResponse:
        return rating_pb2.GetRatingHistoryResponse()

    async def list_matches(self, **kw: Any) -> match_pb2.ListMatchesResponse:
        return match_pb2.ListMatchesResponse()

    async def arena(self, pool: str) -> arena_pb2.Arena:
        return arena_pb2.Arena()

    async def bot(self, ident: str) -> bot_pb2.Bot:
        return next(b for b in self.owned if ident in (b.bot_id, b.name))


def _pages() -> tuple[Pages, FakeApi]:
    p = Pages("127.0.0.1:1")
    api = FakeApi()
    p.api = api  # type: ignore[assignment]
    return p, api


def _request(path: str, params: dict[str, str], query: str = "") -> Request:
    return Request({"type": "http", "method": "GET", "path": path, "path_params": params,
                    "query_string": query.encode(), "headers": []})


def _html(resp: Any) -> str:
    assert resp.status_code == 200
    return bytes(resp.body).decode()


def _escaped(html: str) -> None:
    """No hostile name got through as markup; each is there, escaped (a name in a list may
    hold line-break marks)."""
    assert "<script>" not in html and "alert(\"x\")" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html.replace("<wbr>", "")


def test_an_author_page_escapes_names_and_asks_for_that_author_s_bots_and_tests() -> None:
    p, api = _pages()
    html = _html(asyncio.run(AuthorPages(p).author(_request("/author/x", {"author": EVIL},
                                                            "tests=c-5"))))
    _escaped(html)
    assert ("list_bots", {"page_token": "", "page_size": 1000, "owner": "u-evil"}) in api.calls
    assert ("list_tests", {"page_token": "c-5", "page_size": 50, "author": "u-evil"}) \
        in api.calls
    assert 'data-bot-id="b-1" data-state="retired"' in html
    assert 'data-bot-id="b-2" data-state="online" data-previous="b-1"' in html
    assert re.search(r'data-col="rating-3p"><a href="/ratings/3p"[^>]*>1612</a>', html)
    assert 'class="version-line" data-bots="b-1 b-2"' in html
    assert 'href="/test/c-1"' in html and "123456789" not in html  # no seed shown
    # Paging through the tests: older, and back to the newest.
    assert 'href="/author/u-evil?tests=c-0#author-tests"' in html
    assert 'href="/author/u-evil#author-tests"' in html


def test_the_authors_list_and_the_bots_list_link_authors_escaped() -> None:
    p, _ = _pages()
    html = _html(asyncio.run(AuthorPages(p).authors(_request("/authors", {}))))
    _escaped(html)
    assert 'href="/author/u-evil"' in html and 'href="/authors?page=u-x"' in html
    html = _html(asyncio.run(p.bots(_request("/bots", {}))))
    _escaped(html)
    assert 'href="/authors"' in html
    assert html.count('href="/author/u-evil"') == 2
    assert re.search(r'data-bot-id="b-9"[^\n]*no one', html)


def test_a_bot_page_names_its_owner_its_retirement_and_its_versions_escaped() -> None:
    p, api = _pages()
    html = _html(asyncio.run(p.bot(_request("/bot/b-2", {"bot_id": "b-2"}))))
    _escaped(html)
    assert 'id="bot-owner">by <a class="name author" href="/author/u-evil">' in html
    assert 'id="bot-retired"' not in html
    assert '<a class="version" href="/bot/b-1">' in html and "(retired)" in html
    assert 'aria-current="page">&lt;script&gt;' in html  # itself, not linked
    html = _html(asyncio.run(p.bot(_request("/bot/b-1", {"bot_id": "b-1"}))))
    assert 'id="bot-retired"' in html and 'class="badge retired"' in html
    # The line is named from the owner's bots: one call, by owner.
    assert ("list_bots", {"page_token": "", "page_size": 1000, "owner": "u-evil"}) in api.calls


def test_a_bot_of_no_one_says_so_and_a_lost_listing_leaves_ids() -> None:
    p, api = _pages()
    orphan = _bot("b-9", "orphan", owner="")
    lineage = asyncio.run(bot_lineage(p, orphan))
    assert lineage == {"owner": None, "state": "offline", "retired": {"text": "", "iso": ""},
                       "versions": []}

    async def broken(**kw: Any) -> bot_pb2.ListBotsResponse:
        raise NotFound()

    api.list_bots = broken  # type: ignore[method-assign]
    lineage = asyncio.run(bot_lineage(p, api.owned[1]))
    assert [v["name"] for v in lineage["versions"]] == ["b-1", "b-2"]


def test_a_test_page_names_who_started_it() -> None:
    p, _ = _pages()
    assert asyncio.run(started_by(p, "")) is None  # the admin's
    assert asyncio.run(started_by(p, "u-evil")) == {"id": "u-evil", "name": EVIL}
    assert asyncio.run(started_by(p, "u-gone")) == {"id": "u-gone", "name": "u-gone"}


def test_an_unknown_author_is_the_referee_s_not_found() -> None:
    p, _ = _pages()
    with pytest.raises(grpc.aio.AioRpcError):
        asyncio.run(AuthorPages(p).author(_request("/author/nobody", {"author": "nobody"})))
