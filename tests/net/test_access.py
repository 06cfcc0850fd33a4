"""Who may call what (issue 26, "Proof"): every RPC of every service, called as no one, with
bad tokens, as a bot, as another author, as the owner, as an organiser and as the admin,
each answer checked against a table written out here by hand.

`EXPECTED` is the proof: it is NOT generated from `server.access.RULES` (that would check the
table against itself). Where the rule is object-level (a bot or a test is the owner's), the
request names the owner's object, so "another author" and "an organiser" (who owns none of
it) are refused where the owner is let through. An allowed call may still fail for its own
reason (a request made small on purpose: an unknown id, a missing field); the table says
which, so every cell is one exact answer. Refused calls change nothing: the calls that
would change something act on a target made for each caller, and what happened to each
target is checked after the matrix.

Also here: every RPC of the compiled descriptors has a line in `RULES` (and no line names a
method that does not exist), and a method missing from `RULES` is refused by the gate.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
from stack import Stack

from clients.redisproc import RedisServer
from clients.sdk import register
from proto.moon.v1 import (
    account_pb2,
    account_pb2_grpc,
    arena_pb2,
    arena_pb2_grpc,
    bot_pb2,
    bot_pb2_grpc,
    change_pb2,
    change_pb2_grpc,
    match_pb2,
    match_pb2_grpc,
    rating_pb2,
    rating_pb2_grpc,
    tournament_pb2,
    tournament_pb2_grpc,
)
from server import access
from server.edge import add_service
from server.lanes import lane
from store import keys

Code = grpc.StatusCode
OK = Code.OK  # the call succeeded (a stream: its first message came)
OPEN = "open"  # a watch stream admitted: its first message came, or it is still waiting
UNAUTH = Code.UNAUTHENTICATED
DENY = Code.PERMISSION_DENIED
BAD = Code.INVALID_ARGUMENT
MISS = Code.NOT_FOUND
FAIL = Code.FAILED_PRECONDITION
Want = Code | str

# The callers, in the table's column order. "bad" is each of several tokens that name no
# one (World.bad_tokens): an author token and a bot token of the right form with a wrong
# secret, an admin-looking token, and garbage; all must be answered alike.
CALLERS = ("none", "bad", "bot", "other", "owner", "organiser", "admin")

# fmt: off
# The authorization table as the issue states it, one row per request (a method may have
# more than one). Columns: no token, a bad token, a bot token (of a bot the owner owns),
# another author, the owner (of the bots and tests the request names), an organiser (an
# author the admin made one, owning none of them), the admin.
TABLE: dict[str, dict[str, tuple[Want, ...]]] = {
    "AccountService": {
        #                       none    bad     bot     other   owner   organiser admin
        # Sign-up is open on this stack; an unknown token on an open call is no token.
        "SignUp":               (OK,    OK,     OK,     OK,     OK,     OK,     OK),
        "WhoAmI":               (UNAUTH, UNAUTH, OK,    OK,     OK,     OK,     OK),
        "GetAuthor":            (OK,    OK,     OK,     OK,     OK,     OK,     OK),
        "ListAuthors":          (OK,    OK,     OK,     OK,     OK,     OK,     OK),
        "CreateInvitation":     (UNAUTH, UNAUTH, DENY,  DENY,   DENY,   DENY,   OK),
        "SetRole":              (UNAUTH, UNAUTH, DENY,  DENY,   DENY,   DENY,   OK),
        "SetLimits":            (UNAUTH, UNAUTH, DENY,  DENY,   DENY,   DENY,   OK),
        "AssignBot":            (UNAUTH, UNAUTH, DENY,  DENY,   DENY,   DENY,   OK),
        # One's own audit log (no author named): any author; a bot has none.
        "ListAudit":            (UNAUTH, UNAUTH, DENY,  OK,     OK,     OK,     OK),
        # The owner's audit log, named: the owner and the admin only.
        "ListAudit owner's":    (UNAUTH, UNAUTH, DENY,  DENY,   OK,     DENY,   OK),
    },
    "BotService": {
        # Registration is open on this stack (a bot of no one without a token), but a
        # token that names no one is refused, and a bot does not register bots.
        "RegisterBot":          (OK,    UNAUTH, DENY,   OK,     OK,     OK,     OK),
        # ... as a new version of the owner's bot: the owner's only (no one and the admin
        # own no bots: versions are an author's).
        "RegisterBot previous": (BAD,   UNAUTH, DENY,   DENY,   OK,     DENY,   BAD),
        "GetBot":               (OK,    OK,     OK,     OK,     OK,     OK,     OK),
        "ListBots":             (OK,    OK,     OK,     OK,     OK,     OK,     OK),
        # `mine`: an author's list; a known token of another kind is refused, not unknown.
        "ListBots mine":        (UNAUTH, UNAUTH, DENY,  OK,     OK,     OK,     DENY),
        "Play":                 (UNAUTH, UNAUTH, OK,    DENY,   DENY,   DENY,   DENY),
        # The bot column names its own bot: a bot does not rotate or retire itself.
        "RotateBotToken":       (UNAUTH, UNAUTH, DENY,  DENY,   OK,     DENY,   OK),
        "RetireBot":            (UNAUTH, UNAUTH, DENY,  DENY,   OK,     DENY,   OK),
        "SetPreviousVersion":   (UNAUTH, UNAUTH, DENY,  DENY,   OK,     DENY,   OK),
        # A version of the owner's line: the owner's call (this stack has no archive to
        # keep it in: past every check of who, to FAILED_PRECONDITION); the admin owns no
        # bots, so submits none.
        "SubmitVersion":        (UNAUTH, UNAUTH, DENY,  DENY,   FAIL,   DENY,   DENY),
    },
    "MatchService": {
        # An organiser's (three house bots, one hand: it plays at once).
        "CreateMatch":          (UNAUTH, UNAUTH, DENY,  DENY,   DENY,   OK,     OK),
        "GetMatch":             (MISS,  MISS,   MISS,   MISS,   MISS,   MISS,   MISS),
        "ListMatches":          (OK,    OK,     OK,     OK,     OK,     OK,     OK),
        "WatchMatch":           (MISS,  MISS,   MISS,   MISS,   MISS,   MISS,   MISS),
    },
    "TournamentService": {
        # An organiser's (the request has no spec: refused for that, past the gate).
        "CreateTournament":     (UNAUTH, UNAUTH, DENY,  DENY,   DENY,   BAD,    BAD),
        "GetTournament":        (MISS,  MISS,   MISS,   MISS,   MISS,   MISS,   MISS),
        "ListTournaments":      (OK,    OK,     OK,     OK,     OK,     OK,     OK),
        "GetStandings":         (MISS,  MISS,   MISS,   MISS,   MISS,   MISS,   MISS),
        "WatchTournament":      (MISS,  MISS,   MISS,   MISS,   MISS,   MISS,   MISS),
        # Groups of the stack (deleting one that is not there): an organiser's; who is
        # grouped with whom is not public.
        "SetGroup":             (UNAUTH, UNAUTH, DENY,  DENY,   DENY,   OK,     OK),
        "ListGroups":           (UNAUTH, UNAUTH, DENY,  DENY,   DENY,   OK,     OK),
    },
    "RatingService": {
        "GetRatings":           (OK,    OK,     OK,     OK,     OK,     OK,     OK),
        "GetRatingHistory":     (OK,    OK,     OK,     OK,     OK,     OK,     OK),
        # Nothing of a collusion audit is public: an organiser's.
        "AuditCollusion":       (UNAUTH, UNAUTH, DENY,  DENY,   DENY,   OK,     OK),
    },
    "TestService": {
        # The owner's two versions, `require_online` (they are offline): the owner and the
        # admin get past every check of whose bots they are, to FAILED_PRECONDITION.
        "CreateTest":           (UNAUTH, UNAUTH, DENY,  DENY,   FAIL,   DENY,   FAIL),
        "GetTest":              (OK,    OK,     OK,     OK,     OK,     OK,     OK),
        "ListTests":            (OK,    OK,     OK,     OK,     OK,     OK,     OK),
        "WatchTest":            (OPEN,  OPEN,   OPEN,   OPEN,   OPEN,   OPEN,   OPEN),
        # A running test the owner started: the owner or the admin stops it.
        "StopTest":             (UNAUTH, UNAUTH, DENY,  DENY,   OK,     DENY,   OK),
    },
    "ArenaService": {
        # No pool named: refused for that, past the gate.
        "StartArena":           (UNAUTH, UNAUTH, DENY,  DENY,   DENY,   BAD,    BAD),
        "StopArena":            (UNAUTH, UNAUTH, DENY,  DENY,   DENY,   BAD,    BAD),
        "GetArena":             (BAD,   BAD,    BAD,    BAD,    BAD,    BAD,    BAD),
        "JoinArena":            (UNAUTH, UNAUTH, BAD,   DENY,   DENY,   DENY,   DENY),
        "LeaveArena":           (UNAUTH, UNAUTH, BAD,   DENY,   DENY,   DENY,   DENY),
    },
}
# fmt: on
EXPECTED = {f"{service}/{row}": want for service, rows in TABLE.items()
            for row, want in rows.items()}

STUBS: dict[str, Callable[[grpc.Channel], Any]] = {
    "AccountService": account_pb2_grpc.AccountServiceStub,
    "BotService": bot_pb2_grpc.BotServiceStub,
    "MatchService": match_pb2_grpc.MatchServiceStub,
    "TournamentService": tournament_pb2_grpc.TournamentServiceStub,
    "RatingService": rating_pb2_grpc.RatingServiceStub,
    "TestService": change_pb2_grpc.TestServiceStub,
    "ArenaService": arena_pb2_grpc.ArenaServiceStub,
}
PROTO = Path(__file__).resolve().parents[2] / "proto" / "moon" / "v1"
MODULES = (account_pb2, bot_pb2, match_pb2, tournament_pb2, rating_pb2, change_pb2, arena_pb2)


def _rpcs() -> dict[str, Any]:
    """Every RPC of the compiled descriptors: `/moon.v1.Service/Method` -> its descriptor."""
    out = {}
    for module in MODULES:
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                out[f"/{service.full_name}/{method.name}"] = method
    return out


def _md(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


@dataclass(frozen=True)
class Account:
    """An author and their token."""

    author_id: str
    name: str
    token: str


@dataclass(frozen=True)
class Bot:
    """A registered bot and its token."""

    bot_id: str
    name: str
    token: str


@dataclass
class World:
    """The accounts, bots and tests the matrix calls about."""

    address: str
    admin_token: str
    tag: str
    channel: grpc.Channel
    owner: Account
    other: Account
    organiser: Account
    bot: Bot  # the owner's: the "bot" column's token
    v1: Bot  # the owner's, and v2 a new version of it
    v2: Bot
    watched_test: str  # the owner's test, running (waits for its offline bots)
    stop_tests: dict[str, str]  # caller -> the owner's running test that caller stops
    made: dict[tuple[str, str], Any] = field(default_factory=dict)  # (row, token) -> target
    n: int = 0

    def unique(self, what: str) -> str:
        self.n += 1
        return f"acc-{what}-{self.tag}-{self.n}"

    def token(self, caller: str) -> str | None:
        return {"none": None, "bot": self.bot.token, "other": self.other.token,
                "owner": self.owner.token, "organiser": self.organiser.token,
                "admin": self.admin_token}[caller]

    @property
    def bad_tokens(self) -> tuple[str, ...]:
        return ("u-000000000000.nope", f"{self.owner.author_id}.wrong-secret",
                f"{self.bot.bot_id}.wrong-secret", "adm.not-the-admin-token",
                "garbage !@#")

    def sign_up(self, what: str) -> Account:
        return _sign_up(self.channel, self.unique(what))

    def bot_of(self, owner: Account | None, what: str) -> Bot:
        return _bot(self.address, self.unique(what), owner)


def _sign_up(channel: grpc.Channel, name: str) -> Account:
    resp = account_pb2_grpc.AccountServiceStub(channel).SignUp(
        account_pb2.SignUpRequest(name=name), timeout=10)
    return Account(resp.author.author_id, resp.author.name, resp.token)


def _bot(address: str, name: str, owner: Account | None, previous: str = "") -> Bot:
    bot_id, token = register(address, name, owner.token if owner else None, previous=previous)
    return Bot(bot_id, name, token)


def _make_world(address: str, admin_token: str) -> World:
    channel = grpc.insecure_channel(address)
    tag = uuid.uuid4().hex[:6]
    owner, other, organiser = (_sign_up(channel, f"acc-{who}-{tag}")
                               for who in ("owner", "other", "organiser"))
    account_pb2_grpc.AccountServiceStub(channel).SetRole(
        account_pb2.SetRoleRequest(author=organiser.author_id, organiser=True),
        metadata=_md(admin_token), timeout=10)
    bot = _bot(address, f"acc-bot-{tag}", owner)
    v1 = _bot(address, f"acc-v1-{tag}", owner)
    v2 = _bot(address, f"acc-v2-{tag}", owner, previous=v1.bot_id)
    # Two running tests of the owner's (the default limit), waiting for their offline
    # bots: one the owner stops, one the admin stops; the first is also the one read.
    tests = change_pb2_grpc.TestServiceStub(channel)
    stop_tests = {caller: tests.CreateTest(change_pb2.CreateTestRequest(
        spec=change_pb2.TestSpec(candidate=v2.bot_id, baseline=v1.bot_id, fixed_games=2)),
        metadata=_md(owner.token), timeout=30).test_id for caller in ("owner", "admin")}
    return World(address, admin_token, tag, channel, owner, other, organiser, bot, v1, v2,
                 stop_tests["owner"], stop_tests)


# ---------------------------------------------------------------- the requests of each row

Build = Callable[[World, str, str], Any]  # (world, caller column, token) -> request


def _fresh_author(w: World, row: str, token: str) -> str:
    """An author made for this caller to act on (what the call did to it is checked)."""
    a = w.sign_up("target")
    w.made[(row, token)] = a.author_id
    return a.author_id


def _fresh_bot(w: World, row: str, token: str, caller: str, owner: Account | None) -> str:
    """A bot made for this caller to act on; the bot column acts on its own bot."""
    if caller == "bot":
        return w.bot.bot_id
    b = w.bot_of(owner, "target")
    w.made[(row, token)] = b
    return b.bot_id


REQUESTS: dict[str, Build] = {
    "AccountService/SignUp": lambda w, c, t: account_pb2.SignUpRequest(name=w.unique("signup")),
    "AccountService/WhoAmI": lambda w, c, t: account_pb2.WhoAmIRequest(),
    "AccountService/GetAuthor": lambda w, c, t: account_pb2.GetAuthorRequest(
        author=w.owner.name.upper()),
    "AccountService/ListAuthors": lambda w, c, t: account_pb2.ListAuthorsRequest(page_size=2),
    "AccountService/CreateInvitation": lambda w, c, t: account_pb2.CreateInvitationRequest(
        ttl_s=60),
    "AccountService/SetRole": lambda w, c, t: account_pb2.SetRoleRequest(
        author=_fresh_author(w, "SetRole", t), organiser=True),
    "AccountService/SetLimits": lambda w, c, t: account_pb2.SetLimitsRequest(
        author=_fresh_author(w, "SetLimits", t),
        limits=account_pb2.Limits(tests=7, pairs=7, house_cpu_s=7)),
    "AccountService/AssignBot": lambda w, c, t: account_pb2.AssignBotRequest(
        bot_id=_fresh_bot(w, "AssignBot", t, c, None), author=w.owner.author_id),
    "AccountService/ListAudit": lambda w, c, t: account_pb2.ListAuditRequest(page_size=2),
    "AccountService/ListAudit owner's": lambda w, c, t: account_pb2.ListAuditRequest(
        author=w.owner.author_id, page_size=2),
    "BotService/RegisterBot": lambda w, c, t: bot_pb2.RegisterBotRequest(name=w.unique("reg")),
    "BotService/RegisterBot previous": lambda w, c, t: bot_pb2.RegisterBotRequest(
        name=w.unique("reg"), previous=w.v2.bot_id),
    "BotService/GetBot": lambda w, c, t: bot_pb2.GetBotRequest(bot_id=w.v2.name),
    "BotService/ListBots": lambda w, c, t: bot_pb2.ListBotsRequest(page_size=2),
    "BotService/ListBots mine": lambda w, c, t: bot_pb2.ListBotsRequest(mine=True),
    "BotService/Play": lambda w, c, t: iter(()),
    "BotService/SubmitVersion": lambda w, c, t: iter([bot_pb2.SubmitVersionRequest(
        header=bot_pb2.SubmitVersionRequest.Header(line=w.bot.name, size=1,
                                                   sha256="0" * 64))]),
    "BotService/RotateBotToken": lambda w, c, t: bot_pb2.RotateBotTokenRequest(
        bot_id=_fresh_bot(w, "RotateBotToken", t, c, w.owner)),
    "BotService/RetireBot": lambda w, c, t: bot_pb2.RetireBotRequest(
        bot_id=_fresh_bot(w, "RetireBot", t, c, w.owner)),
    "BotService/SetPreviousVersion": lambda w, c, t: bot_pb2.SetPreviousVersionRequest(
        bot_id=w.v2.bot_id, previous=w.v1.name),
    # Three different players: a game of one bot in every seat tells a rating nothing.
    "MatchService/CreateMatch": lambda w, c, t: match_pb2.CreateMatchRequest(
        players=3, bot_ids=["house:random", "house:greedy", "house:pimc?samples=2"],
        rules={"max_hands": "1"}),
    "MatchService/GetMatch": lambda w, c, t: match_pb2.GetMatchRequest(match_id="m-nosuchmatch"),
    "MatchService/ListMatches": lambda w, c, t: match_pb2.ListMatchesRequest(page_size=2),
    "MatchService/WatchMatch": lambda w, c, t: match_pb2.WatchMatchRequest(
        match_id="m-nosuchmatch"),
    "TournamentService/CreateTournament": lambda w, c, t:
        tournament_pb2.CreateTournamentRequest(),
    "TournamentService/GetTournament": lambda w, c, t: tournament_pb2.GetTournamentRequest(
        tournament_id="t-nosuchone"),
    "TournamentService/ListTournaments": lambda w, c, t: tournament_pb2.ListTournamentsRequest(
        page_size=2),
    "TournamentService/GetStandings": lambda w, c, t: tournament_pb2.GetStandingsRequest(
        tournament_id="t-nosuchone"),
    "TournamentService/WatchTournament": lambda w, c, t:
        tournament_pb2.WatchTournamentRequest(tournament_id="t-nosuchone"),
    "RatingService/GetRatings": lambda w, c, t: rating_pb2.GetRatingsRequest(
        pool=rating_pb2.RATING_POOL_THREE_PLAYER),
    "RatingService/GetRatingHistory": lambda w, c, t: rating_pb2.GetRatingHistoryRequest(
        bot_id=w.v1.bot_id, max_points=1),
    "RatingService/AuditCollusion": lambda w, c, t: rating_pb2.AuditCollusionRequest(
        pool=rating_pb2.RATING_POOL_THREE_PLAYER),
    "TournamentService/SetGroup": lambda w, c, t: tournament_pb2.SetGroupRequest(
        group=tournament_pb2.KeepApart(name="no-such-group")),
    "TournamentService/ListGroups": lambda w, c, t: tournament_pb2.ListGroupsRequest(),
    "TestService/CreateTest": lambda w, c, t: change_pb2.CreateTestRequest(
        spec=change_pb2.TestSpec(candidate=w.v2.bot_id, baseline=w.v1.bot_id, fixed_games=2),
        require_online=True),
    "TestService/GetTest": lambda w, c, t: change_pb2.GetTestRequest(test_id=w.watched_test),
    "TestService/ListTests": lambda w, c, t: change_pb2.ListTestsRequest(page_size=2),
    "TestService/WatchTest": lambda w, c, t: change_pb2.WatchTestRequest(test_id=w.watched_test),
    "TestService/StopTest": lambda w, c, t: change_pb2.StopTestRequest(
        test_id=w.stop_tests.get(c, w.watched_test)),
    "ArenaService/StartArena": lambda w, c, t: arena_pb2.StartArenaRequest(),
    "ArenaService/StopArena": lambda w, c, t: arena_pb2.StopArenaRequest(),
    "ArenaService/GetArena": lambda w, c, t: arena_pb2.GetArenaRequest(),
    "ArenaService/JoinArena": lambda w, c, t: arena_pb2.JoinArenaRequest(),
    "ArenaService/LeaveArena": lambda w, c, t: arena_pb2.LeaveArenaRequest(),
}


def _call(w: World, row: str, caller: str, token: str | None) -> tuple[Code | str, str]:
    """Make one call of the matrix; its outcome (a status code, or OPEN) and details."""
    service, _, rest = row.partition("/")
    method = rest.split(" ", 1)[0]
    rpc = _rpcs()[f"/moon.v1.{service}/{method}"]
    request = REQUESTS[row](w, caller, token or "")
    if not rpc.client_streaming:  # a refusal of the caller, not of a wrong body
        assert request.DESCRIPTOR is rpc.input_type, row
    fn = getattr(STUBS[service](w.channel), method)
    streaming = rpc.server_streaming
    try:
        if not streaming:
            fn(request, metadata=_md(token), timeout=10)
            return OK, ""
        call = fn(request, metadata=_md(token), timeout=3)
        try:
            next(iter(call))
        except StopIteration:
            pass  # ended cleanly before any message
        finally:
            call.cancel()
        return OK, ""
    except grpc.RpcError as exc:
        code = exc.code()
        if streaming and code is Code.DEADLINE_EXCEEDED:
            return OPEN, "no message before the deadline"
        return code, exc.details() or ""


def _matches(want: Want, got: Code | str) -> bool:
    if want == OPEN:  # admitted: a first message, or waiting for one
        return got in (OK, OPEN)
    return got == want


@pytest.fixture(scope="module")
def world(stack: Stack, admin_token: str) -> Iterator[World]:
    w = _make_world(stack.address, admin_token)
    yield w
    # Leave nothing running: the tests the matrix did not stop.
    stub = change_pb2_grpc.TestServiceStub(w.channel)
    for test_id in {w.watched_test, *w.stop_tests.values()}:
        try:
            stub.StopTest(change_pb2.StopTestRequest(test_id=test_id),
                          metadata=_md(admin_token), timeout=10)
        except grpc.RpcError as exc:
            assert exc.code() == FAIL, exc  # stopped already
    w.channel.close()


def test_the_table_covers_every_rpc() -> None:
    """The hand-written table has a row for every RPC of the .proto files, and each row a
    request; the rows name real methods."""
    rpcs = {name.removeprefix("/moon.v1.") for name in _rpcs()}
    rows = {row.split(" ", 1)[0] for row in EXPECTED}
    assert rpcs - rows == set(), "RPCs without a row in EXPECTED"
    assert rows - rpcs == set(), "rows naming no RPC"
    assert set(REQUESTS) == set(EXPECTED)
    assert all(len(v) == len(CALLERS) for v in EXPECTED.values())
    assert set(STUBS) == {row.split("/")[0] for row in rows}


def test_every_rpc_has_a_rule() -> None:
    """server.access.RULES has a line for every RPC the compiled descriptors define, and
    no line for a method that does not exist."""
    rpcs = set(_rpcs())
    # Every service of every .proto file is among the descriptors read here.
    declared = {m.group(1) for path in PROTO.glob("*.proto")
                for m in re.finditer(r"^service (\w+)", path.read_text(), re.MULTILINE)}
    assert declared == {name.split("/")[1].removeprefix("moon.v1.") for name in rpcs}
    assert len(declared) == 7
    assert rpcs - set(access.RULES) == set(), "RPCs without a rule"
    assert set(access.RULES) - rpcs == set(), "rules of no RPC"


def test_every_rpc_as_every_caller(world: World, r: redis.Redis) -> None:
    """Each row of EXPECTED, called as each caller (each bad token in turn): the answer is
    the one written in the table."""
    w = world
    wrong: list[str] = []
    started = time.monotonic()
    calls = 0
    for row, wants in EXPECTED.items():
        for caller, want in zip(CALLERS, wants, strict=True):
            tokens = w.bad_tokens if caller == "bad" else (w.token(caller),)
            for token in tokens:
                got, details = _call(w, row, caller, token)
                calls += 1
                if not _matches(want, got):
                    shown = token if caller == "bad" else caller
                    wrong.append(f"{row} as {caller} ({shown}): expected {want}, got {got}: "
                                 f"{details[:200]}")
    took = time.monotonic() - started
    assert not wrong, "\n".join([f"{len(wrong)} of {calls} answers differ:", *wrong])
    assert took < 60, f"{calls} calls took {took:.1f} s"
    _check_what_refusals_left(w, r)


def _check_what_refusals_left(w: World, r: redis.Redis) -> None:
    """What each caller's call did to its own target: the admitted ones acted, the refused
    ones changed nothing."""
    accounts = account_pb2_grpc.AccountServiceStub(w.channel)
    bots = bot_pb2_grpc.BotServiceStub(w.channel)
    admitted = {w.owner.token, w.admin_token}
    for (row, token), target in w.made.items():
        by_admin = token == w.admin_token
        if row == "SetRole":
            got = accounts.GetAuthor(account_pb2.GetAuthorRequest(author=target), timeout=10)
            assert got.author.organiser is by_admin, (row, token)
        elif row == "SetLimits":
            assert (r.hget(keys.author(target), "limits") is not None) is by_admin, (row, token)
        elif row == "AssignBot":
            got_bot = bots.GetBot(bot_pb2.GetBotRequest(bot_id=target.bot_id), timeout=10).bot
            assert got_bot.owner_id == (w.owner.author_id if by_admin else ""), (row, token)
        elif row == "RetireBot":
            got_bot = bots.GetBot(bot_pb2.GetBotRequest(bot_id=target.bot_id), timeout=10).bot
            assert got_bot.HasField("retired_at") is (token in admitted), (row, token)
        elif row == "RotateBotToken":  # the old token works unless the call was admitted
            try:
                accounts.WhoAmI(account_pb2.WhoAmIRequest(), metadata=_md(target.token),
                                timeout=10)
                works = True
            except grpc.RpcError as exc:
                assert exc.code() == UNAUTH, exc
                works = False
            assert works is (token not in admitted), (row, token)
        else:
            raise AssertionError(f"unchecked target of {row}")
    assert {row for row, _ in w.made} == {"SetRole", "SetLimits", "AssignBot", "RetireBot",
                                          "RotateBotToken"}
    # The bot column's own bot was neither rotated nor retired.
    me = accounts.WhoAmI(account_pb2.WhoAmIRequest(), metadata=_md(w.bot.token), timeout=10)
    assert me.role == account_pb2.ROLE_BOT and me.bot_id == w.bot.bot_id
    assert not bots.GetBot(bot_pb2.GetBotRequest(bot_id=w.bot.bot_id),
                           timeout=10).bot.HasField("retired_at")
    # Each stop test was stopped by the caller it was meant for, and no one else.
    tests = change_pb2_grpc.TestServiceStub(w.channel)
    for caller, test_id in w.stop_tests.items():
        test = tests.GetTest(change_pb2.GetTestRequest(test_id=test_id), timeout=10).test
        assert test.stopped_by == ("admin" if caller == "admin" else w.owner.author_id)
    # The version line is as set.
    v2 = bots.GetBot(bot_pb2.GetBotRequest(bot_id=w.v2.bot_id), timeout=10).bot
    assert v2.previous_id == w.v1.bot_id
    assert list(v2.version_ids)[:2] == [w.v1.bot_id, w.v2.bot_id]


def test_rights_follow_the_role_at_once(world: World) -> None:
    """The role is read on every call: an organiser whose role is taken is refused the
    next organiser call, and admitted again once it is given back."""
    w = world
    accounts = account_pb2_grpc.AccountServiceStub(w.channel)
    orgs = w.sign_up("organiser2")
    request = match_pb2.CreateMatchRequest(players=3, bot_ids=[])  # INVALID past the gate
    stub = match_pb2_grpc.MatchServiceStub(w.channel)
    for organiser, code in ((True, BAD), (False, DENY), (True, BAD)):
        accounts.SetRole(account_pb2.SetRoleRequest(author=orgs.name, organiser=organiser),
                         metadata=_md(w.admin_token), timeout=10)
        with pytest.raises(grpc.RpcError) as info:
            stub.CreateMatch(request, metadata=_md(orgs.token), timeout=10)
        assert info.value.code() == code, (organiser, info.value)
        who = accounts.WhoAmI(account_pb2.WhoAmIRequest(), metadata=_md(orgs.token),
                              timeout=10)
        assert who.role == (account_pb2.ROLE_ORGANISER if organiser
                            else account_pb2.ROLE_AUTHOR)


# ---------------------------------------------------------------- a method with no rule


class _Bots(bot_pb2_grpc.BotServiceServicer):
    """A BotService whose GetBot and ListBots answer at once, counting their calls."""

    def __init__(self) -> None:
        self.served: list[str] = []

    async def GetBot(self, request: Any, context: Any) -> bot_pb2.GetBotResponse:  # type: ignore[override]
        self.served.append("GetBot")
        return bot_pb2.GetBotResponse()

    async def ListBots(self, request: Any, context: Any) -> bot_pb2.ListBotsResponse:  # type: ignore[override]
        self.served.append("ListBots")
        return bot_pb2.ListBotsResponse()


def test_a_method_missing_from_the_table_is_refused(redis_server: RedisServer,
                                                    admin_token: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A service registered with `add_service` and the gate, as the referee registers
    every service, with GetBot's line taken out of RULES: GetBot is refused (even to the
    admin) and its servicer never runs; ListBots, still in the table, is served."""
    getbot = "/moon.v1.BotService/GetBot"
    monkeypatch.delitem(access.RULES, getbot)
    servicer = _Bots()

    async def run() -> tuple[list[tuple[Code, str]], Code]:
        reads = lane("test-gate", redis_server.url, 2)
        server = grpc.aio.server()
        add_service(bot_pb2_grpc.add_BotServiceServicer_to_server, servicer, server,
                    "moon.v1.BotService", guard=access.Gate(reads, reads).guard)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = bot_pb2_grpc.BotServiceStub(channel)
                refused = []
                for token in (None, admin_token):
                    try:
                        await stub.GetBot(bot_pb2.GetBotRequest(bot_id="house:greedy"),
                                          metadata=_md(token), timeout=10)
                        refused.append((OK, ""))
                    except grpc.aio.AioRpcError as exc:
                        refused.append((exc.code(), exc.details() or ""))
                await stub.ListBots(bot_pb2.ListBotsRequest(), timeout=10)
                return refused, OK
        finally:
            await server.stop(None)
            reads.close()

    refused, listed = asyncio.run(run())
    for code, details in refused:
        assert code == DENY, (code, details)
        assert "no rule in the authorization table" in details, details
        assert getbot in details
    assert listed == OK
    assert servicer.served == ["ListBots"]


# ---------------------------------------------------------------- what a role may not do


def test_only_the_admin_picks_the_deals(world: World) -> None:
    """A seed fixes every deal: an organiser (an author who may own bots in the event) may
    not choose one, for a match as for a tournament; the admin may. (The requests name
    bots that do not exist, so nothing is made: INVALID_ARGUMENT once the seed passes.)"""
    w = world
    matches = match_pb2_grpc.MatchServiceStub(w.channel)
    tournaments = tournament_pb2_grpc.TournamentServiceStub(w.channel)

    def match(seed: bool) -> match_pb2.CreateMatchRequest:
        request = match_pb2.CreateMatchRequest(players=3, bot_ids=["b-nosuchbot"] * 3)
        if seed:
            request.seed = 7
        return request

    def tournament(seed: bool) -> tournament_pb2.CreateTournamentRequest:
        spec = tournament_pb2.TournamentSpec(
            name="seeded", players=3, format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
            bot_ids=["b-nosuchbot1", "b-nosuchbot2", "b-nosuchbot3"])
        if seed:
            spec.seed = 7
        return tournament_pb2.CreateTournamentRequest(spec=spec)

    for token, seed, code in [(w.organiser.token, True, DENY), (w.organiser.token, False, BAD),
                              (w.admin_token, True, BAD)]:
        for call, request in ((matches.CreateMatch, match(seed)),
                              (tournaments.CreateTournament, tournament(seed))):
            with pytest.raises(grpc.RpcError) as info:
                call(request, metadata=_md(token), timeout=10)
            assert info.value.code() == code, (call, seed, info.value)
            if code == DENY:
                assert "seed" in (info.value.details() or "")
    # Nor may an author seed a test of their own bots (the seed is checked first: the
    # opponent named does not exist, so nothing is made either way).
    tests = change_pb2_grpc.TestServiceStub(w.channel)
    for token, seed, code in [(w.owner.token, True, DENY), (w.owner.token, False, BAD),
                              (w.admin_token, True, BAD)]:
        spec = change_pb2.TestSpec(candidate=w.v2.bot_id, baseline=w.v1.bot_id,
                                   opponents=["b-nosuchbot", "b-nosuchbot"])
        if seed:
            spec.seed = 7
        with pytest.raises(grpc.RpcError) as info:
            tests.CreateTest(change_pb2.CreateTestRequest(spec=spec), metadata=_md(token),
                             timeout=10)
        assert info.value.code() == code, (token[:4], seed, info.value)
        if code == DENY:
            assert "seed" in (info.value.details() or "")


def test_an_authors_audit_log(world: World) -> None:
    """An author reads the entries that concern them (by their id or their name, in any
    case), and the address of no one else: what the admin did to their bots shows without
    the admin's address."""
    w = world
    accounts = account_pb2_grpc.AccountServiceStub(w.channel)
    ann = w.sign_up("audited")
    bot = w.bot_of(ann, "audited")
    accounts.AssignBot(account_pb2.AssignBotRequest(bot_id=bot.bot_id, author=""),
                       metadata=_md(w.admin_token), timeout=10)
    for asked in ("", ann.author_id, ann.name, ann.name.upper()):
        got = accounts.ListAudit(account_pb2.ListAuditRequest(author=asked),
                                 metadata=_md(ann.token), timeout=10).entries
        assert [(e.actor, e.action) for e in got] == [
            ("admin", "assign_bot"), (ann.author_id, "register_bot"),
            (ann.author_id, "sign_up")], asked
        assert [bool(e.address) for e in got] == [False, True, True], asked
    # The admin reads every address.
    got = accounts.ListAudit(account_pb2.ListAuditRequest(author=ann.name),
                             metadata=_md(w.admin_token), timeout=10).entries
    assert all(e.address for e in got)
