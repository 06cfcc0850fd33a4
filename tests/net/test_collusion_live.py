"""Collusion across the tables of a board, end to end on real processes (issue 29).

An arena of 3p boards (games of one hand) with honest bots (greedy, random, PIMC), two
house anchors, and two pairs of colluders that share every hand they are dealt through
files (`netbots.SharingBot`: it writes its hand, reads its partner's of the same deal and,
knowing it, searches on deals that hold it): one pair registered by two accounts, which
the stack cannot tell apart, and one pair registered by one author, which it keeps apart.
The organiser's audit over the wire is asked every few boards the two accounts' pair
shares, until it names that pair (at the audit's own alpha, 1%): it names no other pair
(no other reaches an adjusted p of 0.1%: see the test's comment), with the boards the
results say they shared; the CLI and the page say the same; the pair of one author never
sat at one table or at two tables of one board; bad input over the wire gets one clear
error each.
"""

from __future__ import annotations

import base64
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis
from stack import Stack, moonshot
from support import wait_until
from test_web_pages import _start_web

from clients.admin import Admin
from clients.redisproc import RedisServer
from clients.sdk import register
from proto.moon.v1 import (
    account_pb2,
    account_pb2_grpc,
    rating_pb2,
    rating_pb2_grpc,
    tournament_pb2,
    tournament_pb2_grpc,
)
from store import matches as store_matches

FIRST_LOOK = 15  # the two accounts' pair at two tables of this many boards: first audit
LAST_LOOK = 60  # ... and at most this many: named by then (15 to 39 in the runs seen)
OTHERS = 0.001  # no pair but the colluders reaches this adjusted p (the test's comment)


@pytest.fixture
def own(tmp_path: Path, admin_token: str) -> Iterator[tuple[Stack, redis.Redis]]:
    srv = RedisServer(tmp_path / "redis").start()
    st = Stack(tmp_path, srv.url, admin_token=admin_token)
    r = redis.Redis.from_url(srv.url, decode_responses=True)
    try:
        yield st, r
    finally:
        st.stop_all()
        srv.stop()
        r.close()


def _signup(address: str, name: str) -> tuple[str, str]:
    with grpc.insecure_channel(address) as ch:
        made = account_pb2_grpc.AccountServiceStub(ch).SignUp(
            account_pb2.SignUpRequest(name=name), timeout=30)
    return made.author.author_id, made.token


def _md(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def _shared(r: redis.Redis, a: str, b: str) -> tuple[int, int]:
    """Boards where a and b sat at two different tables, and at one table, so far."""
    by_board: dict[str, list[set[str]]] = {}
    for row in store_matches.pool_results(r, "3p"):
        if row.get("board"):
            by_board.setdefault(str(row["board"]), []).append(set(row["bot_ids"]))
    apart = together = 0
    for tables in by_board.values():
        with_a = [i for i, t in enumerate(tables) if a in t]
        with_b = [i for i, t in enumerate(tables) if b in t]
        if with_a and with_b:
            if set(with_a) & set(with_b):
                together += 1
            else:
                apart += 1
    return apart, together


def _code(call: object) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        call()  # type: ignore[operator]
    return info.value.code(), info.value.details()


@pytest.mark.timeout(1200)  # two to seven minutes of play: the pair must share boards
def test_colluders_are_named_and_one_authors_pair_kept_apart(
        own: tuple[Stack, redis.Redis], admin_token: str, tmp_path: Path) -> None:
    st, r = own
    t0 = time.monotonic()
    st.referee()
    st.worker()
    st.worker()
    _, web = _start_web(st, st.address)  # holds no token: the organiser's browser sends one
    admin = Admin(st.address, admin_token)
    share = tmp_path / "share"
    share.mkdir()
    res = st.start("arena-start", [*moonshot(
        "arena", "start", "3p", "--server", st.address, "--anchor", "house:greedy",
        "--anchor", "house:random", "--rule", "max_hands=1", "--max-wait", "1s",
        "--time-per-move", "3s", "--concurrency", "1")])
    assert res.popen.wait(timeout=60) == 0, res.log.read_text()
    # Two accounts of one person (the stack cannot know), and one author with two bots.
    _, tok_a = _signup(st.address, "mallory-one")
    _, tok_b = _signup(st.address, "mallory-two")
    carol_id, tok_c = _signup(st.address, "carol")
    pair = [register(st.address, "colluder-a", tok_a), register(st.address, "colluder-b", tok_b)]
    same = [register(st.address, "carol-a", tok_c), register(st.address, "carol-b", tok_c)]
    honest = [register(st.address, f"honest-{i}") for i in range(4)]
    kinds = ["greedy", "random", "pimc", "greedy"]

    def sharing(name: str, token: str, me: str, partner: str) -> None:
        st.start(f"bot-{name}", moonshot("bot", "run", "--bot", "netbots:SharingBot",
                                         "--server", st.address, "--token", token,
                                         "--arena", "3p"),
                 MOONSHOT_SHARE_DIR=str(share), MOONSHOT_SHARE_ME=me,
                 MOONSHOT_SHARE_PARTNER=partner)

    sharing("colluder-a", pair[0][1], "a", "b")
    sharing("colluder-b", pair[1][1], "b", "a")
    sharing("carol-a", same[0][1], "c", "d")
    sharing("carol-b", same[1][1], "d", "c")
    for (_, token), kind in zip(honest, kinds, strict=True):
        st.bot(kind, st.address, token, "--arena", "3p", wait=False)
    wait_until(f"the pair at two tables of {FIRST_LOOK} boards", lambda: _shared(
        r, pair[0][0], pair[1][0])[0] >= FIRST_LOOK or None, timeout=300, every=2.0)
    print(f"{FIRST_LOOK} shared boards at {time.monotonic() - t0:.0f} s")

    # The audit over the wire, as the admin, every few boards the pair shares, until it
    # names the colluders (their edge is the SharingBot's: PIMC that knows a hand where
    # they share a board, random play elsewhere; 15 to 39 shared boards in the runs seen,
    # two to five minutes; one board in three is lost to carol's pair, split apart,
    # and on boards of two tables those where the pair held one hand tell nothing). Then it
    # names no other pair. Asserted at an adjusted p of 0.1% for the others, not at the
    # audit's 1%: an audit that holds its 1% names an honest pair in about one pool in a
    # hundred (bench/collusion.py), and a test run on every change cannot assert that it
    # never does. Stopping at the first audit that names the pair also keeps the pairs of
    # one colluder with a bot often beside the other from growing (their statistics drift
    # with the colluders' play, which is random apart and strong together: docs/
    # architecture.md, "Where its null is still weak").
    colluders = frozenset((pair[0][0], pair[1][0]))
    seen = FIRST_LOOK

    def named() -> rating_pb2.AuditCollusionResponse | None:
        nonlocal seen
        apart_now = _shared(r, pair[0][0], pair[1][0])[0]
        if apart_now < seen:
            return None
        seen = apart_now + 3
        got = admin.audit_collusion("3p", max_pairs=200)
        top = "; ".join(f"{p.name_a}+{p.name_b} shared {p.shared} z {p.z:.1f} "
                        f"p_holm {p.p_adjusted:.2g}" for p in got.pairs[:3])
        print(f"{time.monotonic() - t0:.0f} s, {apart_now} shared: {top}")
        if any(p.suspected and frozenset((p.bot_a, p.bot_b)) == colluders for p in got.pairs):
            return got
        assert apart_now < LAST_LOOK, f"the colluders not named after {apart_now} boards: {top}"
        return None

    rating = rating_pb2_grpc.RatingServiceStub(admin.channel)
    audit = wait_until("the colluders named", named, timeout=840, every=2.0)
    apart, _ = _shared(r, pair[0][0], pair[1][0])
    print(f"audit: {audit.games} games, {audit.boards} boards, {audit.tested} pairs, "
          f"{audit.suspected} named; "
          + "; ".join(f"{p.name_a}+{p.name_b} shared {p.shared} gain {p.gain:+.2f} "
                      f"z {p.z:.1f} p_holm {p.p_adjusted:.2g}" for p in audit.pairs[:4]))
    theirs = next(p for p in audit.pairs if frozenset((p.bot_a, p.bot_b)) == colluders)
    assert theirs.suspected and theirs.p_adjusted <= audit.alpha == 0.01
    assert FIRST_LOOK <= theirs.shared <= apart and len(theirs.boards) == theirs.shared
    assert {theirs.name_a, theirs.name_b} == {"colluder-a", "colluder-b"}
    others = [p for p in audit.pairs if frozenset((p.bot_a, p.bot_b)) != colluders]
    assert all(p.p_adjusted > OTHERS for p in others), others[:3]
    assert audit.tested == len(audit.pairs) >= 2
    assert audit.suspected == sum(p.suspected for p in audit.pairs)
    assert all(p.suspected == (p.p_adjusted <= audit.alpha) for p in audit.pairs)
    assert [p.p_adjusted for p in audit.pairs] == sorted(p.p_adjusted for p in audit.pairs)
    assert 0 < audit.boards <= audit.games and "Holm" in audit.meaning
    assert _shared(r, same[0][0], same[1][0]) == (0, 0)  # nor at one table (its author's)
    assert not any(frozenset((same[0][0], same[1][0])) == frozenset((p.bot_a, p.bot_b))
                   for p in audit.pairs)
    with grpc.insecure_channel(st.address) as ch:
        account_pb2_grpc.AccountServiceStub(ch).SetRole(account_pb2.SetRoleRequest(
            author=carol_id, organiser=True), metadata=_md(admin_token), timeout=30)
    as_organiser = Admin(st.address, tok_c).audit_collusion("3p")
    assert as_organiser.tested >= audit.tested
    out = st.start("audit-cli", [*moonshot("audit", "collusion", "--max-pairs", "200",
                                           "--server", st.address, "--admin-token", tok_c)])
    assert out.popen.wait(timeout=120) == 0
    text = out.log.read_text()
    assert "suspected: " in text and "pairs tested" in text and "Holm" in text, text
    assert "colluder-a + colluder-b" in text or "colluder-b + colluder-a" in text, text

    # The organisers' page: the visitor's own token (Basic's password), else refused.
    def page(token: str | None) -> tuple[int, str, dict[str, str]]:
        """Status, body and headers (names in lower case)."""
        req = urllib.request.Request(f"{web}/organiser/collusion/3p")
        if token is not None:
            req.add_header("Authorization", "Basic " + base64.b64encode(
                f"organiser:{token}".encode()).decode())
        try:
            with urllib.request.urlopen(req, timeout=300) as resp:
                return resp.status, resp.read().decode(), {
                    k.lower(): v for k, v in resp.headers.items()}
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(), {k.lower(): v for k, v in exc.headers.items()}

    code_, html, headers = page(None)
    assert code_ == 401 and "Basic" in headers["www-authenticate"], (code_, headers)
    assert "colluder-a" not in html
    code_, html, _ = page(tok_a)  # an author, not an organiser
    assert code_ == 403 and "colluder-a" not in html, code_
    code_, html, headers = page(tok_c)
    assert code_ == 200 and headers["cache-control"] == "no-store", (code_, headers)
    assert "data-count=" in html and "Holm" in html, html
    assert f'data-pair="{min(colluders)} {max(colluders)}"' in html

    # Bad input: one clear error each.
    code, text = _code(lambda: rating.AuditCollusion(rating_pb2.AuditCollusionRequest(),
                                                     metadata=_md(tok_a), timeout=30))
    assert code == grpc.StatusCode.PERMISSION_DENIED and "organiser" in text, text
    code, _ = _code(lambda: rating.AuditCollusion(rating_pb2.AuditCollusionRequest(),
                                                  timeout=30))
    assert code == grpc.StatusCode.UNAUTHENTICATED
    code, text = _code(lambda: rating.AuditCollusion(rating_pb2.AuditCollusionRequest(
        alpha=2.0), metadata=admin.metadata, timeout=30))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "alpha" in text, text
    tours = tournament_pb2_grpc.TournamentServiceStub(admin.channel)
    code, text = _code(lambda: tours.SetGroup(tournament_pb2.SetGroupRequest(
        group=tournament_pb2.KeepApart(name="lab", bot_ids=[honest[0][0], "no-such-bot"])),
        metadata=admin.metadata, timeout=30))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "no-such-bot" in text, text
    ids = [b for b, _ in honest[:4]]
    code, text = _code(lambda: admin.create_tournament(
        name="apart", players=3, format="round_robin", bot_ids=ids,
        keep_apart={"x": ids[:2], "y": [ids[1], ids[2]]}))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "in two groups" in text, text
    code, text = _code(lambda: admin.create_tournament(
        name="apart", players=3, format="round_robin", bot_ids=ids,
        keep_apart={"x": [ids[0], "nobody-at-all"]}))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "nobody-at-all" in text, text
    assert not tours.ListGroups(tournament_pb2.ListGroupsRequest(), metadata=admin.metadata,
                                timeout=30).groups  # nothing stored by the refusals
    g = admin.set_group("lab", [honest[0][0], "honest-1"])
    assert list(g.bot_ids) == [honest[0][0], honest[1][0]]
    assert [x.name for x in admin.list_groups()] == ["lab"]
    print(f"done at {time.monotonic() - t0:.0f} s")
