"""Authors on the web pages, in a real headless browser on the real stack: an author's page
(their bots with state, rating and previous version, their lines of versions, the tests
they started), the list of authors, a bot's owner, its retirement and its line of
versions; nothing private on any of them; every new page fits a phone. And ListTests by
author, which the author's page reads.

The web server runs without any token, as in tests/net/test_web_pages.py (whose browser,
tab and fit checks these tests share).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from stack import Stack
from support import PoolBot, finished, wait_until
from test_web_pages import _BROKEN, _OVERFLOW, Tab, _fits, _status, browser, web

from clients.admin import Admin
from clients.sdk import register
from proto.moon.v1 import (
    account_pb2,
    account_pb2_grpc,
    bot_pb2,
    bot_pb2_grpc,
    change_pb2,
    change_pb2_grpc,
)

__all__ = ["browser", "web"]  # the shared fixtures, used here by name

GREEDY = "greedy"
UNRATED = "\u2013"  # an en dash: not rated in that pool


def _bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


@dataclass
class Author:
    """An author signed up on the session's referee, with their token."""

    author_id: str
    name: str
    token: str


def _sign_up(stack: Stack, name: str) -> Author:
    with grpc.insecure_channel(stack.address) as ch:
        resp = account_pb2_grpc.AccountServiceStub(ch).SignUp(
            account_pb2.SignUpRequest(name=name), timeout=30)
    return Author(resp.author.author_id, resp.author.name, resp.token)


@dataclass
class World:
    """Two authors: `alpha` with three versions of a bot (v1 retired, rated; v2 online; v3
    offline, its test waiting for it) and two tests (one finished, one running); `beta`,
    an organiser, with nothing."""

    alpha: Author
    beta: Author
    bots: list[PoolBot]  # v1, v2, v3
    finished_test: str
    running_test: str
    tokens: list[str]  # every token made here: none may show on a page


@pytest.fixture(scope="module")
def world(stack: Stack, admin: Admin, pool: dict[str, PoolBot]) -> Iterator[World]:
    tag = uuid.uuid4().hex[:6]
    alpha = _sign_up(stack, f"alpha-{tag}")
    # The longest names there are, without a place to break but the one `_`: no page may
    # widen past a phone's screen for them.
    beta = _sign_up(stack, f"B_eta{tag}".ljust(64, "W"))
    bots: list[PoolBot] = []
    for v in (1, 2, 3):
        name = f"alpha-{tag}-v{v}" if v < 3 else f"alpha{tag}".ljust(62, "M") + "v3"
        previous = bots[-1].bot_id if bots else ""
        bot_id, token = register(stack.address, name, alpha.token, previous=previous)
        bots.append(PoolBot(bot_id, name, token))
    v1, v2, v3 = bots
    stack.bots([(GREEDY, v1.token), (GREEDY, v2.token)])  # v3 is never started

    # A rating for v1: a single match with two pool bots.
    finished(admin, admin.create_match(3, [v1.bot_id, pool["greedy1"].bot_id,
                                           pool["greedy2"].bot_id],
                                       rules={"max_hands": "2"}).match_id)
    wait_until("v1's 3p rating", lambda: v1.bot_id in {
        r.bot_id for r in admin.get_ratings("3p").ratings}, timeout=90)

    with grpc.insecure_channel(stack.address) as ch:
        tests = change_pb2_grpc.TestServiceStub(ch)
        # v2 against the version before it (the baseline defaults to it), to a verdict.
        done = tests.CreateTest(change_pb2.CreateTestRequest(spec=change_pb2.TestSpec(
            candidate=v2.bot_id, fixed_games=2, rules={"max_hands": "1"})),
            metadata=_bearer(alpha.token), timeout=30).test_id
        wait_until("the author's test to finish", lambda: tests.GetTest(
            change_pb2.GetTestRequest(test_id=done), timeout=30).test.status
            == change_pb2.TEST_STATUS_FINISHED, timeout=120, every=0.3)
        # v3 against v2: v3 never connects, so the test runs, waiting for it.
        running = tests.CreateTest(change_pb2.CreateTestRequest(spec=change_pb2.TestSpec(
            candidate=v3.bot_id, fixed_games=2, rules={"max_hands": "1"})),
            metadata=_bearer(alpha.token), timeout=30).test_id
        bot_pb2_grpc.BotServiceStub(ch).RetireBot(bot_pb2.RetireBotRequest(bot_id=v1.bot_id),
                                                  metadata=_bearer(alpha.token), timeout=30)
        account_pb2_grpc.AccountServiceStub(ch).SetRole(
            account_pb2.SetRoleRequest(author=beta.author_id, organiser=True),
            metadata=_bearer(stack.admin_token), timeout=30)
        yield World(alpha, beta, bots, done, running,
                    [alpha.token, beta.token, *(b.token for b in bots), stack.admin_token])
        tests.StopTest(change_pb2.StopTestRequest(test_id=running),
                       metadata=_bearer(alpha.token), timeout=30)


def _no_secrets(html: str, world: World) -> None:
    for token in world.tokens:
        secret = token.partition(".")[2]
        assert token not in html and secret not in html
    assert "audit" not in html.lower() and "limit" not in html.lower()


# ------------------------------------------------------------------ the API the page reads


def test_list_tests_by_author_gives_the_tests_that_author_started(
        stack: Stack, admin: Admin, world: World) -> None:
    with grpc.insecure_channel(stack.address) as ch:
        tests = change_pb2_grpc.TestServiceStub(ch)

        def listed(author: str, size: int = 0, token: str = "") -> change_pb2.ListTestsResponse:
            return tests.ListTests(change_pb2.ListTestsRequest(author=author, page_size=size,
                                                               page_token=token), timeout=30)

        mine = [world.running_test, world.finished_test]  # newest first
        for who in (world.alpha.author_id, world.alpha.name, world.alpha.name.upper()):
            got = listed(who)
            assert [t.test_id for t in got.tests] == mine, who
            assert {t.author_id for t in got.tests} == {world.alpha.author_id}
            assert not got.next_page_token
        # A page at a time.
        first = listed(world.alpha.name, size=1)
        assert [t.test_id for t in first.tests] == mine[:1] and first.next_page_token
        second = listed(world.alpha.name, size=1, token=first.next_page_token)
        assert [t.test_id for t in second.tests] == mine[1:]
        # With a status too.
        running = tests.ListTests(change_pb2.ListTestsRequest(
            author=world.alpha.author_id, status=change_pb2.TEST_STATUS_RUNNING), timeout=30)
        assert [t.test_id for t in running.tests] == [world.running_test]
        # Another author's: none of these; an unknown author: NOT_FOUND.
        assert not listed(world.beta.name).tests
        for unknown in ("no-such-author", "u-0000000000", "<script>"):
            with pytest.raises(grpc.RpcError) as err:
                listed(unknown)
            assert err.value.code() == grpc.StatusCode.NOT_FOUND, unknown
        # The admin's tests (no author) are in no author's list; the public sees no seed of
        # a running test.
        assert not listed(world.alpha.name).tests[0].spec.HasField("seed")


# --------------------------------------------------------------------------- the pages


def test_an_author_page_shows_their_bots_versions_and_tests(
        stack: Stack, admin: Admin, web: str, tab: Tab, world: World) -> None:
    alpha, (v1, v2, v3) = world.alpha, world.bots
    resp = tab.open(f"/author/{alpha.name}")
    assert resp.status == 200
    page = tab.page
    assert page.locator("h1").inner_text() == alpha.name
    assert tab.attr("#author", "data-id") == alpha.author_id
    assert page.locator("#author-role").inner_text().lower() == "author"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC",
                        page.locator("#author-since time").inner_text())
    # What their tests take now, public as the tests are: the running one (its limits and
    # audit log stay theirs).
    assert "1 test running" in page.locator("#author-use").inner_text()

    # Their bots, oldest first: state, rating, previous version.
    rows = page.evaluate("""() => [...document.querySelectorAll('table.author-bots tbody tr')]
        .map(r => [r.dataset.botId, r.dataset.state, r.dataset.previous || '',
                   r.querySelector('[data-col=rating-3p]').textContent.trim()])""")
    rating = next(r for r in admin.get_ratings("3p").ratings if r.bot_id == v1.bot_id)
    assert rows == [[v1.bot_id, "retired", "", str(round(rating.rating))],
                    [v2.bot_id, "online", v1.bot_id, UNRATED],
                    [v3.bot_id, "offline", v2.bot_id, UNRATED]]
    assert page.locator(f'table.author-bots tr[data-bot-id="{v2.bot_id}"] '
                        '[data-col=previous] a').get_attribute("href") == f"/bot/{v1.bot_id}"

    # Their line of versions, each linked.
    lines = page.locator("#author-versions li.version-line")
    assert lines.count() == 1
    assert lines.first.get_attribute("data-bots") == f"{v1.bot_id} {v2.bot_id} {v3.bot_id}"
    assert lines.first.locator("a").evaluate_all("as => as.map(a => a.getAttribute('href'))") \
        == [f"/bot/{b.bot_id}" for b in (v1, v2, v3)]

    # Their tests, newest first, with status and verdict, each linking its page.
    with grpc.insecure_channel(stack.address) as ch:
        done = change_pb2_grpc.TestServiceStub(ch).GetTest(
            change_pb2.GetTestRequest(test_id=world.finished_test), timeout=30).test
    tests = page.evaluate("""() => [...document.querySelectorAll('table.author-tests tbody tr')]
        .map(r => [r.dataset.id, r.dataset.status, r.dataset.verdict])""")
    assert tests == [[world.running_test, "running", "estimate"],
                     [world.finished_test, "finished", "estimate"]]
    assert done.progress.pairs == 1
    page.locator(f'table.author-tests tr[data-id="{world.finished_test}"] a.test').click()
    page.wait_for_url(f"**/test/{world.finished_test}")
    assert tab.attr("#test", "data-id") == world.finished_test
    # The test's page says who started it, linking back.
    assert tab.attr("#t-author a", "href") == f"/author/{alpha.author_id}"
    assert page.locator("#t-author a").inner_text() == alpha.name

    # By id the same page; nothing private on it.
    tab.open(f"/author/{alpha.author_id}")
    html = page.content()
    assert page.locator("h1").inner_text() == alpha.name
    _no_secrets(html, world)
    with grpc.insecure_channel(stack.address) as ch:
        seed = change_pb2_grpc.TestServiceStub(ch).GetTest(
            change_pb2.GetTestRequest(test_id=world.running_test),
            metadata=_bearer(stack.admin_token), timeout=30).test.spec.seed
    assert seed
    assert str(seed) not in html  # a running test's seed is the organiser's


def _rows_until(tab: Tab, rows_js: str, wanted: set[str]) -> dict[str, Any]:
    """A list page's rows (`rows_js`: an object by id), following its "more" link page by
    page until every id of `wanted` is seen or the pages end: the session's other tests
    may have made many bots and authors."""
    got: dict[str, Any] = {}
    while True:
        got |= tab.page.evaluate(rows_js)
        more = tab.page.locator("p.more a")
        if wanted <= got.keys() or not more.count():
            return got
        more.click()
        tab.page.wait_for_load_state()


_BOT_ROWS = """() => Object.fromEntries([...document.querySelectorAll('table.bots tbody tr')]
    .map(r => [r.dataset.botId, [r.dataset.state,
               r.querySelector('[data-col=owner] a')?.getAttribute('href') || '']]))"""
_AUTHOR_ROWS = """() => Object.fromEntries([...document.querySelectorAll(
    'table.authors tbody tr')].map(r => [r.dataset.authorId,
    [r.dataset.role, r.querySelector('a').textContent, +r.cells[2].textContent]]))"""


def test_the_authors_list_and_an_organiser_with_nothing_yet(
        web: str, tab: Tab, world: World, pool: dict[str, PoolBot]) -> None:
    v1, v2, v3 = world.bots
    tab.open("/bots")
    assert tab.page.locator('main a[href="/authors"]').count() == 1
    owners = _rows_until(tab, _BOT_ROWS, {b.bot_id for b in (*world.bots, *pool.values())})
    href = f"/author/{world.alpha.author_id}"
    assert owners[v1.bot_id] == ["retired", href]
    assert owners[v2.bot_id] == ["online", href] and owners[v3.bot_id] == ["offline", href]
    for b in pool.values():  # registered without an author token: no one's
        assert owners[b.bot_id] == ["online", ""]

    tab.page.locator("main").get_by_role("link", name="Authors").click()
    tab.page.wait_for_url("**/authors")
    rows = _rows_until(tab, _AUTHOR_ROWS, {world.alpha.author_id, world.beta.author_id})
    assert rows[world.alpha.author_id] == ["author", world.alpha.name, 3]
    assert rows[world.beta.author_id] == ["organiser", world.beta.name, 0]
    tab.page.locator(f'tr[data-author-id="{world.beta.author_id}"] a').click()
    tab.page.wait_for_url(f"**/author/{world.beta.author_id}")
    assert tab.attr("#author", "data-role") == "organiser"
    assert tab.page.locator("#author-role").inner_text().lower() == "organiser"
    assert tab.page.locator("#author-bots .empty").count() == 1
    assert tab.page.locator("#author-tests .empty").count() == 1
    assert tab.page.locator("#author-versions").count() == 0
    _no_secrets(tab.page.content(), world)


def test_a_bot_page_names_its_owner_retirement_and_line_of_versions(
        web: str, tab: Tab, world: World) -> None:
    v1, v2, v3 = world.bots
    tab.open(f"/bot/{v2.name}")
    owner = tab.page.locator("#bot-owner a")
    assert owner.inner_text() == world.alpha.name
    assert owner.get_attribute("href") == f"/author/{world.alpha.author_id}"
    assert tab.page.locator("#bot-state .badge").inner_text().lower() == "online"
    assert tab.page.locator("#bot-retired").count() == 0
    line = tab.page.locator("#bot-versions")
    assert line.locator("a.version").evaluate_all(
        "as => as.map(a => a.getAttribute('href'))") == [f"/bot/{v1.bot_id}",
                                                          f"/bot/{v3.bot_id}"]
    assert line.locator(".current").inner_text() == v2.name
    assert "(retired)" in line.inner_text()  # v1
    _no_secrets(tab.page.content(), world)

    tab.open(f"/bot/{v1.bot_id}")
    assert tab.page.locator("#bot-state .badge").inner_text().lower() == "retired"
    assert tab.page.locator("#bot-retired").is_visible()
    assert "Retired" in tab.page.locator("#bot-retired").inner_text()
    tab.page.locator("#bot-versions a.version").last.click()
    tab.page.wait_for_url(f"**/bot/{v3.bot_id}")
    assert tab.page.locator("#bot-state .badge").inner_text().lower() == "offline"

    # A bot of no one says so, and has no line of versions.
    tab.open("/bot/house:greedy")
    assert tab.page.locator("#bot-versions, #bot-owner a").count() == 0


def test_unknown_authors_are_404(web: str) -> None:
    for path in ("/author/no-such-author", "/author/u-0000000000", "/author/%3Cscript%3E",
                 "/author/" + "x" * 300, "/authors?page=not-a-token",
                 "/author/nobody?tests=zzz"):
        code, body = _status(web + path)
        assert code == 404, (path, code, body[:300])
        assert "Traceback" not in body and "Not found" in body


def test_author_pages_fit_a_phone(browser: Any, web: str, world: World) -> None:
    paths = ["/authors", f"/author/{world.alpha.name}", f"/author/{world.beta.name}", "/bots",
             *(f"/bot/{b.name}" for b in world.bots)]
    for width in (375, 390):
        phone = Tab(browser, web, phone=True, phone_width=width)
        try:
            _fits(phone, paths)
            for path in paths:
                phone.open(path)
                assert phone.page.evaluate(_OVERFLOW) == [], (width, path)
                assert phone.page.evaluate(_BROKEN) == [], (width, path)
            # What the phone hides of a bot's row goes under its name: its previous version.
            phone.open(f"/author/{world.alpha.name}")
            under = phone.page.locator(f'tr[data-bot-id="{world.bots[1].bot_id}"] .phone-only')
            assert under.is_visible() and world.bots[0].name in under.inner_text()
        finally:
            phone.close()
    desktop = Tab(browser, web, width=1280)
    try:
        _fits(desktop, paths)
    finally:
        desktop.close()


@pytest.fixture
def tab(browser: Any, web: str) -> Iterator[Tab]:
    """A fresh desktop page."""
    t = Tab(browser, web)
    yield t
    t.close()
