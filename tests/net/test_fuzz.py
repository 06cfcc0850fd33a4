"""Hostile input, generated: property-based fuzzing of every RPC of moon.v1 on the real stack.

The RPCs come from the generated descriptors of `proto/moon/v1` (every `*_pb2` module,
every service, every method), so a new RPC is fuzzed without anyone listing it here;
`test_every_rpc_is_classified_and_served` fails until it is also given a policy below
(who may make the call), and checks the list against what the running referee serves.

What is sent, through a raw channel that passes bytes as they are:

- messages built from the request's descriptor: random field values, enum numbers the
  .proto does not know, strings at and past the limits the server checks (and past the
  1 MiB message limit), long repeated and map fields, nested messages;
- valid requests (real bot, author, match, tournament and test ids) with a few fields
  replaced; the calls that change a bot (its token, its retirement, its owner, its
  versions) name bots registered for their run, never the pool's or the fuzz's own;
- the serialized bytes of either, mutated: bit flips, truncation, inserted garbage, bad
  tags and lengths, groups nested past the parser's depth limit, oversized bodies;
- with no token, the admin token, a bot token, forged and malformed ones;
- on Play: sequences of such messages, with a valid bot token and without.

What must hold after every call: the status is one of the clean answers allowed for it
(never UNKNOWN, INTERNAL or UNAVAILABLE), its message is short, every response parses,
a call that needs a token is refused before anything else is looked at (the body
included) without one of a role it admits (UNAUTHENTICATED without a valid token,
PERMISSION_DENIED for a known token of another role), the referee process lives and its
health check says SERVING. After each RPC's run: a match among pool bots that ran
meanwhile, and one started after it, finished correctly, so did every match, tournament
and test the fuzz itself created, Redis holds no new records (bots, authors, invitations,
...) but theirs, no key that belongs to nothing, nothing large, the pool's bots and the
fuzz's own are as they were, and the referee logged no traceback.

Runs are bounded and reproducible: few examples, a fixed seed per RPC, no example database.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
import pkgutil
import string
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import grpc
import pytest
import redis
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor
from google.protobuf.message import DecodeError, Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)
from hypothesis import HealthCheck, example, given, seed, settings
from hypothesis import strategies as st
from rawbot import RawBot, first_legal
from stack import Proc, Stack
from support import PoolBot, check_stored, finished, transcript_of, wait_until

import proto.moon.v1 as moon_v1
from clients.admin import Admin
from clients.sdk import register
from moon import Rules
from proto.moon.v1 import (
    account_pb2,
    account_pb2_grpc,
    arena_pb2,
    arena_pb2_grpc,
    bot_pb2,
    change_pb2,
    change_pb2_grpc,
    game_pb2,
    match_pb2,
    rating_pb2,
    tournament_pb2,
)
from server.app import MAX_MESSAGE_BYTES
from server.hub import MAX_ECHO
from store import authors as store_authors
from store import bots as store_bots
from store import keys
from store.errors import NotFound

Code = grpc.StatusCode
F = FieldDescriptor
LIMIT = MAX_MESSAGE_BYTES

# ---------------------------------------------------------------- the RPCs


@dataclass(frozen=True)
class Rpc:
    """One method of one moon.v1 service, as the generated descriptors describe it."""

    path: str  # /moon.v1.Service/Method
    method: MethodDescriptor

    @property
    def request(self) -> Descriptor:
        """The request message's descriptor."""
        return self.method.input_type

    def request_class(self) -> type[Message]:
        """The request message class."""
        return message_factory.GetMessageClass(self.method.input_type)

    def response_class(self) -> type[Message]:
        """The response message class."""
        return message_factory.GetMessageClass(self.method.output_type)


def _rpcs() -> list[Rpc]:
    out = []
    for info in sorted(pkgutil.iter_modules(moon_v1.__path__), key=lambda m: m.name):
        if not info.name.endswith("_pb2"):
            continue
        module = importlib.import_module(f"{moon_v1.__name__}.{info.name}")
        for service in module.DESCRIPTOR.services_by_name.values():
            out += [Rpc(f"/{service.full_name}/{m.name}", m) for m in service.methods]
    return out


RPCS = _rpcs()
CALLS = [rpc for rpc in RPCS if not rpc.method.client_streaming]  # unary and server streams
STREAMS = [rpc for rpc in RPCS if rpc.method.client_streaming]  # Play, and any like it

# Every RPC needs a policy. Of the fuzz's credentials (no token, tokens that name no one,
# the fuzz's bot token, the admin token) the gate (server.access) lets through the ones
# of the role a call needs before the body is even parsed: without a valid token the call
# is UNAUTHENTICATED, with a known token of another role PERMISSION_DENIED, whatever the
# body. Open calls must work without a token.
REGISTER = "/moon.v1.BotService/RegisterBot"
LIST_BOTS = "/moon.v1.BotService/ListBots"
CREATE_MATCH = "/moon.v1.MatchService/CreateMatch"
CREATE_TOURNAMENT = "/moon.v1.TournamentService/CreateTournament"
CREATE_TEST = "/moon.v1.TestService/CreateTest"
STOP_TEST = "/moon.v1.TestService/StopTest"
PLAY = "/moon.v1.BotService/Play"
START_ARENA = "/moon.v1.ArenaService/StartArena"
SIGN_UP = "/moon.v1.AccountService/SignUp"
WHO_AM_I = "/moon.v1.AccountService/WhoAmI"
CREATE_INVITATION = "/moon.v1.AccountService/CreateInvitation"
SET_LIMITS = "/moon.v1.AccountService/SetLimits"
ASSIGN_BOT = "/moon.v1.AccountService/AssignBot"
ROTATE_TOKEN = "/moon.v1.BotService/RotateBotToken"
RETIRE_BOT = "/moon.v1.BotService/RetireBot"
SET_PREVIOUS = "/moon.v1.BotService/SetPreviousVersion"
SUBMIT_VERSION = "/moon.v1.BotService/SubmitVersion"
# Calls that need a role only the admin token has among the fuzz's credentials (an
# organiser's, the owner's of what they name, or the admin's own): refused before anything
# else is looked at without the admin token.
ORGANISER = frozenset({
    CREATE_MATCH, CREATE_TOURNAMENT, CREATE_TEST, STOP_TEST, START_ARENA,
    "/moon.v1.ArenaService/StopArena",
    CREATE_INVITATION, "/moon.v1.AccountService/SetRole", SET_LIMITS, ASSIGN_BOT,
    "/moon.v1.AccountService/ListAudit",  # an author's own, or the admin's
    ROTATE_TOKEN, RETIRE_BOT, SET_PREVIOUS,  # the owner's, or the admin's
    SUBMIT_VERSION,  # an author's (the admin, past the gate, owns no bots: refused)
    "/moon.v1.TournamentService/SetGroup", "/moon.v1.TournamentService/ListGroups",
    "/moon.v1.RatingService/AuditCollusion",  # nothing of it public
})
OPEN = frozenset({
    # Open registration (the stack's referee runs with the default): no token will do, but
    # a token that names no one is refused (UNAUTHENTICATED, before the body), and a bot
    # does not register bots (PERMISSION_DENIED).
    REGISTER,
    SIGN_UP,  # open sign-up, the stack's default
    "/moon.v1.AccountService/GetAuthor",
    "/moon.v1.AccountService/ListAuthors",
    "/moon.v1.BotService/GetBot",
    LIST_BOTS,  # but `mine` needs an author token: the fuzz has none to send
    "/moon.v1.MatchService/GetMatch",
    "/moon.v1.MatchService/ListMatches",
    "/moon.v1.MatchService/WatchMatch",
    "/moon.v1.TournamentService/GetTournament",
    "/moon.v1.TournamentService/ListTournaments",
    "/moon.v1.TournamentService/GetStandings",
    "/moon.v1.TournamentService/WatchTournament",
    "/moon.v1.RatingService/GetRatings",
    "/moon.v1.RatingService/GetRatingHistory",
    "/moon.v1.TestService/GetTest",
    "/moon.v1.TestService/ListTests",
    "/moon.v1.TestService/WatchTest",
    "/moon.v1.ArenaService/GetArena",
})
# Calls any valid token makes (the bot's, the admin's): UNAUTHENTICATED before anything
# else without one.
TOKEN_CALLS = frozenset({WHO_AM_I})
BOT_STREAMS = frozenset({PLAY})  # authenticated with a bot token
# Calls a bot makes with its own token: refused before anything else without one
# (PERMISSION_DENIED for the admin's).
BOT_CALLS = frozenset({"/moon.v1.ArenaService/JoinArena", "/moon.v1.ArenaService/LeaveArena"})
# Calls that change a bot, its token or its owner: with the admin token they would act on
# any bot, so their requests name bots registered for each run (`World.aimed`), never the
# pool's or the fuzz's own, which must play on as they were.
BOT_CHANGES = frozenset({ROTATE_TOKEN, RETIRE_BOT, SET_PREVIOUS, ASSIGN_BOT})
# Calls whose servicer may refuse, PERMISSION_DENIED, a request the gate let through, and
# what for.
REFUSED_BY_SERVICER = {
    SIGN_UP: "an invitation of no one (`inv.` and garbage)",
    SET_PREVIOUS: "a previous version of another owner",
    SUBMIT_VERSION: "the admin owns no bots: it submits no version",
}

# Answers a well-formed request may get; UNKNOWN, INTERNAL, UNAVAILABLE never.
ANSWERS = frozenset({Code.OK, Code.INVALID_ARGUMENT, Code.NOT_FOUND, Code.ALREADY_EXISTS,
                     Code.FAILED_PRECONDITION, Code.OUT_OF_RANGE})
REFUSED = frozenset({Code.UNAUTHENTICATED, Code.PERMISSION_DENIED})
TOO_LARGE = frozenset({Code.RESOURCE_EXHAUSTED, Code.INVALID_ARGUMENT})
MAX_DETAILS = 1100  # bytes: server.edge clips status messages to 1,000 and a note
UNARY_TIMEOUT_S = 15.0  # a call not answered by then hangs: DEADLINE_EXCEEDED fails the test
WATCH_S = 1.0  # a watch stream that is still waiting after this ends DEADLINE_EXCEEDED


def _settings(rpc: Rpc, examples: int) -> Callable[[Callable[..., None]],
                                                   Callable[..., None]]:
    """Few examples, no deadline, no example database, and a fixed seed per RPC: every
    run tries the same inputs, and RPCs of the same shape still get different ones."""
    def apply(test: Callable[..., None]) -> Callable[..., None]:
        configured = settings(
            max_examples=examples, deadline=None, database=None, print_blob=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                   HealthCheck.large_base_example, HealthCheck.filter_too_much,
                                   HealthCheck.function_scoped_fixture],
        )(test)
        return seed(zlib.crc32(rpc.path.encode()))(configured)
    return apply


# Calls for organisers whose answer reads the whole stack (the collusion audit, groups):
# a bot token is refused at the gate, so the admin's is favoured alone, and enough of the
# calls reach the servicer whatever the auth throttle earlier tests left behind.
ADMIN_FAVOURED = frozenset({"/moon.v1.RatingService/AuditCollusion",
                            "/moon.v1.TournamentService/SetGroup",
                            "/moon.v1.TournamentService/ListGroups"})
CALL_EXAMPLES = 80
STREAM_EXAMPLES = 80

# ------------------------------------------------------------------ the world


@dataclass
class World:
    """What the fuzz aims at: the session's referee, real ids, a bot of its own."""

    address: str
    referee: Proc
    admin_token: str
    players: list[PoolBot]  # greedy pool bots: they play what the fuzz creates
    bot_id: str  # the fuzz's own bot (not connected but by Play fuzzing)
    bot_token: str
    match_id: str  # a finished single match
    tournament_id: str  # a finished tournament
    test_id: str  # a finished test of a change
    author_id: str  # an author of the fuzz's own (its token is never sent by the fuzz)
    author_name: str
    author_token: str
    guarded: list[str]  # every pool bot and the fuzz's own: no call may change them
    r: redis.Redis
    real: list[str] = field(default_factory=list)  # ids, names, rules options: strings to try
    # For a call that changes bots: (id, name) of bots registered for its run, two of the
    # fuzz's author (older, newer) and one of no one (`aimed`).
    targets: list[tuple[str, str]] = field(default_factory=list)

    def aimed(self) -> World:
        """This world for a call that changes bots: fresh bots to change, named in the
        seeds and in the strings to try wherever the world's own bots were."""
        tag = uuid.uuid4().hex[:8]
        named = [(register(self.address, name, token)[0], name) for name, token in (
            (f"fuzz-older-{tag}", self.author_token), (f"fuzz-newer-{tag}", self.author_token),
            (f"fuzz-stray-{tag}", None))]
        swap = {self.bot_id: named[1][0]}
        for p, (bot_id, name) in zip(self.players, named, strict=True):
            swap |= {p.bot_id: bot_id, p.name: name}
        return dataclasses.replace(self, real=[swap.get(x, x) for x in self.real],
                                   targets=named)

    def seeds(self) -> dict[str, Message]:
        """A valid request per RPC, for the fuzz to change a few fields of (those of the
        calls that change bots in an `aimed` world only)."""
        ids = [p.bot_id for p in self.players]
        spec = tournament_pb2.TournamentSpec(
            name="fuzz", players=3, format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
            bot_ids=ids, rules={"max_hands": "1"})
        changes: dict[str, Message] = {}
        if self.targets:
            (older, _), (newer, _), (stray, _) = self.targets
            changes = {
                ASSIGN_BOT: account_pb2.AssignBotRequest(bot_id=stray, author=self.author_id),
                ROTATE_TOKEN: bot_pb2.RotateBotTokenRequest(bot_id=newer),
                RETIRE_BOT: bot_pb2.RetireBotRequest(bot_id=newer),
                SET_PREVIOUS: bot_pb2.SetPreviousVersionRequest(bot_id=newer, previous=older),
            }
        return changes | {
            SIGN_UP: account_pb2.SignUpRequest(name="fuzz-seed-author"),
            WHO_AM_I: account_pb2.WhoAmIRequest(),
            "/moon.v1.AccountService/GetAuthor": account_pb2.GetAuthorRequest(
                author=self.author_name),
            "/moon.v1.AccountService/ListAuthors": account_pb2.ListAuthorsRequest(page_size=2),
            CREATE_INVITATION: account_pb2.CreateInvitationRequest(ttl_s=3600),
            "/moon.v1.AccountService/SetRole": account_pb2.SetRoleRequest(
                author=self.author_id, organiser=True),
            SET_LIMITS: account_pb2.SetLimitsRequest(author=self.author_id, limits=(
                account_pb2.Limits(tests=1, pairs=2, house_cpu_s=60))),
            "/moon.v1.AccountService/ListAudit": account_pb2.ListAuditRequest(
                author=self.author_id, page_size=2),
            REGISTER: bot_pb2.RegisterBotRequest(name="fuzz-seed-bot"),
            "/moon.v1.BotService/GetBot": bot_pb2.GetBotRequest(bot_id=ids[0]),
            LIST_BOTS: bot_pb2.ListBotsRequest(page_size=2, owner=self.author_name),
            CREATE_MATCH: match_pb2.CreateMatchRequest(players=3, bot_ids=ids,
                                                       rules={"max_hands": "1"}),
            "/moon.v1.MatchService/GetMatch": match_pb2.GetMatchRequest(match_id=self.match_id),
            "/moon.v1.MatchService/ListMatches": match_pb2.ListMatchesRequest(
                page_size=2, bot_id=self.players[0].name),
            "/moon.v1.MatchService/WatchMatch": match_pb2.WatchMatchRequest(
                match_id=self.match_id),
            CREATE_TOURNAMENT: tournament_pb2.CreateTournamentRequest(spec=spec),
            "/moon.v1.TournamentService/GetTournament": tournament_pb2.GetTournamentRequest(
                tournament_id=self.tournament_id),
            "/moon.v1.TournamentService/ListTournaments":
                tournament_pb2.ListTournamentsRequest(page_size=1),
            "/moon.v1.TournamentService/GetStandings": tournament_pb2.GetStandingsRequest(
                tournament_id=self.tournament_id),
            "/moon.v1.TournamentService/WatchTournament":
                tournament_pb2.WatchTournamentRequest(tournament_id=self.tournament_id),
            "/moon.v1.RatingService/GetRatings": rating_pb2.GetRatingsRequest(
                pool=rating_pb2.RATING_POOL_THREE_PLAYER, los_matrix=True),
            "/moon.v1.RatingService/AuditCollusion": rating_pb2.AuditCollusionRequest(
                pool=rating_pb2.RATING_POOL_THREE_PLAYER, alpha=0.05, min_shared=2,
                max_pairs=3),
            # A group of no bots: deletes one (of a name the fuzz varies), never keeps the
            # fuzz's own bots apart.
            "/moon.v1.TournamentService/SetGroup": tournament_pb2.SetGroupRequest(
                group=tournament_pb2.KeepApart(name="fuzz-group")),
            "/moon.v1.TournamentService/ListGroups": tournament_pb2.ListGroupsRequest(
                bot_id=self.players[0].name),
            CREATE_TEST: change_pb2.CreateTestRequest(spec=change_pb2.TestSpec(
                candidate=ids[0], baseline=ids[1], fixed_games=2, rules={"max_hands": "1"})),
            STOP_TEST: change_pb2.StopTestRequest(test_id=self.test_id),
            "/moon.v1.TestService/GetTest": change_pb2.GetTestRequest(
                test_id=self.test_id, with_pairs=True),
            "/moon.v1.TestService/ListTests": change_pb2.ListTestsRequest(page_size=1),
            "/moon.v1.TestService/WatchTest": change_pb2.WatchTestRequest(
                test_id=self.test_id),
            START_ARENA: arena_pb2.StartArenaRequest(
                pool=rating_pb2.RATING_POOL_TWO_VS_TWO, settings=arena_pb2.ArenaSettings(
                    rules={"max_hands": "1"}, concurrency=1, anchors=["house:random"])),
            "/moon.v1.ArenaService/StopArena": arena_pb2.StopArenaRequest(
                pool=rating_pb2.RATING_POOL_TWO_VS_TWO),
            "/moon.v1.ArenaService/GetArena": arena_pb2.GetArenaRequest(
                pool=rating_pb2.RATING_POOL_TWO_VS_TWO),
            "/moon.v1.ArenaService/JoinArena": arena_pb2.JoinArenaRequest(
                pool=rating_pb2.RATING_POOL_TWO_VS_TWO),
            "/moon.v1.ArenaService/LeaveArena": arena_pb2.LeaveArenaRequest(
                pool=rating_pb2.RATING_POOL_TWO_VS_TWO),
            PLAY: bot_pb2.PlayRequest(decision=bot_pb2.PlayRequest.Decision(
                request_id=f"{self.match_id}/1", action_id=1)),
        }


@pytest.fixture(scope="module")
def world(stack: Stack, pool: dict[str, PoolBot], admin: Admin, admin_token: str,
          r: redis.Redis) -> World:
    """Real targets: a finished match and tournament among pool bots, a bot of the fuzz's
    own (only the fuzz ever connects as it), and an author of its own."""
    players = [pool["greedy1"], pool["greedy2"], pool["greedy3"]]
    ids = [p.bot_id for p in players]
    match_id = admin.create_match(3, ids, seed=11, rules={"max_hands": "1"}).match_id
    finished(admin, match_id)
    t = admin.create_tournament(name="fuzz-target", players=3, format="round_robin",
                                bot_ids=ids, rules={"max_hands": "1"})
    wait_until("the target tournament to finish", lambda: admin.get_tournament(
        t.tournament_id).status == tournament_pb2.TOURNAMENT_STATUS_FINISHED, timeout=60)
    with grpc.insecure_channel(stack.address) as ch:
        test = change_pb2_grpc.TestServiceStub(ch).CreateTest(change_pb2.CreateTestRequest(
            spec=change_pb2.TestSpec(candidate="house:greedy", baseline="house:random",
                                     fixed_games=2, rules={"max_hands": "1"})),
            metadata=(("authorization", f"Bearer {admin_token}"),), timeout=30).test
    wait_until("the target test to finish", lambda: r.hget(
        keys.tournament(test.test_id), "status") == "finished", timeout=60)
    bot_id, token = register(stack.address, f"fuzzer-{uuid.uuid4().hex[:8]}")
    with grpc.insecure_channel(stack.address) as ch:
        author = account_pb2_grpc.AccountServiceStub(ch).SignUp(account_pb2.SignUpRequest(
            name=f"fuzz-author-{uuid.uuid4().hex[:8]}"), timeout=10)
    author_id, author_name = author.author.author_id, author.author.name
    referee = next(p for p in stack.procs if p.name == "referee")
    real = [*ids, *(p.name for p in players), match_id, f"{match_id}/0", f"{match_id}/1",
            t.tournament_id, f"{t.tournament_id}-x1-r1-t1-g1", test.test_id,
            f"{test.test_id}-p1-c", "house:greedy", "house:pimc?samples=2", bot_id, "3p", "2v2",
            *Rules.make(3).options(), "1", "0", "-1", "3", "4", "5", "100001", "true",
            "false", "redeal", "forced", "points", "marks", " 2 ", author_id, author_name]
    guarded = [*(p.bot_id for p in pool.values()), bot_id]
    return World(stack.address, referee, admin_token, players, bot_id, token, match_id,
                 t.tournament_id, test.test_id, author_id, author_name, author.token,
                 guarded, r, real)


# ------------------------------------------------------------- strategies

_INT_RANGES = {
    F.TYPE_INT32: (-(2**31), 2**31 - 1), F.TYPE_SINT32: (-(2**31), 2**31 - 1),
    F.TYPE_SFIXED32: (-(2**31), 2**31 - 1), F.TYPE_INT64: (-(2**63), 2**63 - 1),
    F.TYPE_SINT64: (-(2**63), 2**63 - 1), F.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    F.TYPE_UINT32: (0, 2**32 - 1), F.TYPE_FIXED32: (0, 2**32 - 1),
    F.TYPE_UINT64: (0, 2**64 - 1), F.TYPE_FIXED64: (0, 2**64 - 1),
}
# Values next to the bounds the server checks (players, page sizes, clocks, rounds, ...).
_EDGES = (0, 1, 2, 3, 4, 5, 99, 100, 101, 200, 1000, 1001, 600_000, 600_001, 3_600_000,
          3_600_001, 2**31 - 1, 2**31, 2**32 - 1, 2**63 - 1, 2**63, 2**64 - 1, -1, -(2**31),
          -(2**63))
# String lengths at and past the server's limits: names (64, 200), status messages (1,000),
# echoed request ids (MAX_ECHO), the message itself (LIMIT).
_LENGTHS = (64, 65, 200, 201, 1000, 1001, MAX_ECHO, MAX_ECHO + 1, LIMIT // 2, LIMIT - 64,
            LIMIT - 8, LIMIT, LIMIT + 1)
_ID_CHARS = string.digits + "abcdefxyz"
_PRINTABLE = st.characters(min_codepoint=0x20, max_codepoint=0x7E)
_LONG_REPEATS = (100, 5000, 60_000)


def _ints(kind: int) -> st.SearchStrategy[int]:
    lo, hi = _INT_RANGES[kind]
    edges = [v for v in _EDGES if lo <= v <= hi]
    return st.one_of(st.integers(0, 5), st.sampled_from(edges), st.integers(lo, hi))


def _strings(w: World, small: bool) -> st.SearchStrategy[str]:
    id_like = st.builds(
        lambda a, b, c: a + b + c,
        st.sampled_from(["", "b-", "m-", "t-", "c-", "u-", "inv.", "ms:", "adm.",
                         "ms:bot:", "ms:author:"]),
        st.text(_ID_CHARS, max_size=34),
        st.sampled_from(["", ":log", ":result", ":presence", ":pending", ":events", "/0",
                         "/1234567890123456789", ".secret", "-x1-r1-t1-g1", "\n", "*"]),
    )
    ordinary = st.one_of(st.text(max_size=24), st.text(_PRINTABLE, max_size=24),
                         st.sampled_from(w.real), id_like,
                         st.from_regex(store_bots.NAME_RE, fullmatch=True))
    if small:
        return ordinary
    # A long string one time in four: most limits are on lengths.
    long = st.builds(lambda c, n: c * n,
                     st.sampled_from(["a", "é", "\x00", "\U0001f4a5", "b-0", "\n"]),
                     st.sampled_from(_LENGTHS))
    return st.one_of(ordinary, ordinary, ordinary, long)


def _scalars(f: FieldDescriptor, w: World, small: bool) -> st.SearchStrategy[Any]:
    """Values for one (non-message) field of type `f.type`."""
    if f.type == F.TYPE_STRING:
        return _strings(w, small)
    if f.type == F.TYPE_BYTES:
        big = st.builds(lambda n: b"\xff" * n, st.sampled_from(_LENGTHS))
        return st.binary(max_size=32) if small else st.one_of(st.binary(max_size=64), big)
    if f.type == F.TYPE_BOOL:
        return st.booleans()
    if f.type in (F.TYPE_DOUBLE, F.TYPE_FLOAT):
        return st.floats(width=64 if f.type == F.TYPE_DOUBLE else 32)
    if f.type == F.TYPE_ENUM:  # proto3 enums are open: any int32 goes on the wire
        assert f.enum_type is not None
        known = [v.number for v in f.enum_type.values]
        return st.one_of(st.sampled_from(known), st.integers(-(2**31), 2**31 - 1))
    return _ints(f.type)


def _values(f: FieldDescriptor, w: World, depth: int, small: bool) -> st.SearchStrategy[Any]:
    """Values for a field as `_assign` takes them: a dict for a map, a list if repeated.
    `small`: short strings, and short lists and maps (what a long list or map repeats:
    60,000 Swiss teams of 60,000 bot ids each took the fuzz itself to 20 GB)."""
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        key_f, value_f = f.message_type.fields_by_name["key"], f.message_type.fields_by_name[
            "value"]
        ks, vs = _one(key_f, w, depth, True), _one(value_f, w, depth, small)
        few_items = st.dictionaries(ks, vs, max_size=4)
        if small:
            return few_items
        many = st.builds(lambda v, n: {_key_n(key_f, i): v for i in range(n)},
                         _one(value_f, w, depth, True), st.sampled_from(_LONG_REPEATS[:2]))
        return st.one_of(few_items, many)
    one = _one(f, w, depth, small)
    if not f.is_repeated:
        return one
    few = _one(f, w, depth, True)
    short = st.one_of(st.lists(few, max_size=4), st.lists(one, max_size=2))
    if small:
        return short
    return st.one_of(short, st.builds(lambda x, n: [x] * n, few, st.sampled_from(_LONG_REPEATS)))


def _key_n(key_f: FieldDescriptor, i: int) -> Any:
    return f"k{i}" if key_f.type == F.TYPE_STRING else i


def _one(f: FieldDescriptor, w: World, depth: int, small: bool) -> st.SearchStrategy[Any]:
    if f.message_type is not None:
        return _messages(f.message_type, w, depth + 1, small)
    return _scalars(f, w, small)


def _assign(msg: Message, f: FieldDescriptor, value: Any) -> None:
    """Set field `f` of `msg` to `value` (replacing what it held)."""
    msg.ClearField(f.name)
    target = getattr(msg, f.name)
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        for k, v in value.items():
            if isinstance(v, Message):
                target[k].CopyFrom(v)
            else:
                target[k] = v
    elif f.is_repeated:
        target.extend(value)
    elif f.message_type is not None:
        target.CopyFrom(value)
    else:
        setattr(msg, f.name, value)


def _messages(desc: Descriptor, w: World, depth: int = 0, small: bool = False
              ) -> st.SearchStrategy[Message]:
    """Random messages of type `desc`: each field set or not, to a random value."""
    cls = message_factory.GetMessageClass(desc)
    if depth > 3:
        return st.just(cls())
    fields = [(f, _values(f, w, depth, small)) for f in desc.fields]

    @st.composite
    def build(draw: st.DrawFn) -> Message:
        msg = cls()
        for f, values in fields:
            if draw(st.booleans()):
                _assign(msg, f, draw(values))
        return msg

    return build()


def _paths(desc: Descriptor, depth: int = 0) -> list[tuple[FieldDescriptor, ...]]:
    """Every field of a message and of its singular submessages (two levels down)."""
    out: list[tuple[FieldDescriptor, ...]] = []
    for f in desc.fields:
        out.append((f,))
        if f.message_type is not None and not f.is_repeated and depth < 2:
            out += [(f, *rest) for rest in _paths(f.message_type, depth + 1)]
    return out


def _near_valid(rpc: Rpc, w: World) -> st.SearchStrategy[Message]:
    """The RPC's valid seed request with up to three fields cleared or replaced."""
    cls = rpc.request_class()
    seed = w.seeds().get(rpc.path, cls())
    paths = _paths(rpc.request)
    if not paths:
        return st.just(seed)

    @st.composite
    def build(draw: st.DrawFn) -> Message:
        msg = cls()
        msg.CopyFrom(seed)
        for _ in range(draw(st.integers(0, 3))):
            path = draw(st.sampled_from(paths))
            parent = msg
            for f in path[:-1]:
                parent = getattr(parent, f.name)
            last = path[-1]
            if draw(st.integers(0, 3)) == 0:
                parent.ClearField(last.name)
            else:
                _assign(parent, last, draw(_values(last, w, len(path), False)))
        return msg

    return build()


_BAD_TAILS = (
    b"\x00",  # field number 0
    b"\x0f", b"\x0e",  # wire types 7 and 6
    b"\x08" + b"\xff" * 10 + b"\x01",  # a varint longer than 10 bytes
    b"\x0a\x05ab",  # a length past the end
    b"\x0a\xff\xff\xff\xff\x0f",  # a 4 GB length
    b"\x0b",  # a group that never ends
    b"\x0c",  # the end of a group that never began
    b"\xff" * 11,  # a tag that overflows
)


@st.composite
def _mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """The bytes of a message, damaged in one of several ways."""
    kind = draw(st.sampled_from(["flip", "truncate", "insert", "garbage", "tail", "deep",
                                 "unknown", "oversize"]))
    if kind == "flip" and data:
        out = bytearray(data)
        for i in draw(st.lists(st.integers(0, len(data) - 1), min_size=1, max_size=8)):
            out[i] ^= draw(st.integers(1, 255))
        return bytes(out)
    if kind == "truncate" and data:
        return data[:draw(st.integers(0, len(data) - 1))]
    if kind == "insert":
        at = draw(st.integers(0, len(data)))
        return data[:at] + draw(st.binary(min_size=1, max_size=16)) + data[at:]
    if kind == "tail":
        return data + draw(st.sampled_from(_BAD_TAILS))
    if kind == "deep":  # unknown groups (field 15) nested around the parser's depth limit
        n = draw(st.sampled_from([50, 99, 100, 101, 200, 20_000]))
        return data + b"\x7b" * n + b"\x7c" * n
    if kind == "unknown":  # a well-formed field of a number the message does not have
        number = draw(st.integers(16, 2**29 - 1))
        payload = draw(st.binary(max_size=32))
        return data + _varint(number << 3 | 2) + _varint(len(payload)) + payload
    if kind == "oversize":
        n = draw(st.sampled_from([LIMIT - len(data) - 8, LIMIT, 2 * LIMIT]))
        return data + _varint(2047 << 3 | 2) + _varint(max(n, 0)) + b"\x00" * max(n, 0)
    return draw(st.binary(max_size=256))


def _varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _stretched(rpc: Rpc, w: World) -> st.SearchStrategy[Message]:
    """The RPC's valid seed request with one string field made long: just past a limit
    the server checks, or as long as still fits in a message, or just too long for one."""
    cls = rpc.request_class()
    seed = w.seeds().get(rpc.path, cls())
    paths = [p for p in _paths(rpc.request) if p[-1].type == F.TYPE_STRING]
    if not paths:
        return st.just(seed)
    room = LIMIT - seed.ByteSize() - 16

    @st.composite
    def build(draw: st.DrawFn) -> Message:
        msg = cls()
        msg.CopyFrom(seed)
        path = draw(st.sampled_from(paths))
        parent = msg
        for f in path[:-1]:
            parent = getattr(parent, f.name)
        char = draw(st.sampled_from(["a", "é", "\U0001f4a5", "m-0/", "\x00"]))
        size = draw(st.sampled_from([65, 201, 1001, MAX_ECHO + 1, 1 << 16, room // 2, room,
                                     LIMIT + 1]))
        text = char * max(1, size // len(char.encode()))
        last = path[-1]
        _assign(parent, last, [text] if last.is_repeated else text)
        return msg

    return build()


def _regressions(rpc: Rpc, w: World) -> list[bytes]:
    """Bodies that found bugs, tried on every run: the seed request with its first string
    field 2,000 four-byte characters long (8 KB), which the refusal echoes. The status
    message was clipped to 1,000 characters, 12 KB once percent-encoded: past the client's
    8 KB metadata limit, so the caller read RESOURCE_EXHAUSTED instead of the answer."""
    seed = w.seeds().get(rpc.path, rpc.request_class()())
    path = next((p for p in _paths(rpc.request) if p[-1].type == F.TYPE_STRING), None)
    if path is None:
        return []
    msg = rpc.request_class()()
    msg.CopyFrom(seed)
    parent = msg
    for f in path[:-1]:
        parent = getattr(parent, f.name)
    text, last = "\U0001f4a5" * 2000, path[-1]
    _assign(parent, last, [text, *getattr(parent, last.name)[1:]] if last.is_repeated else text)
    body = msg.SerializeToString()
    return [_bounded(rpc, w, body) if rpc.path in ORGANISER else body]


def _bodies(rpc: Rpc, w: World) -> st.SearchStrategy[bytes]:
    """Request bodies: random, near-valid, stretched and mutated; organiser calls kept
    cheap."""
    assert rpc.path not in BOT_CHANGES or w.targets, "a call that changes bots: aim it"
    msgs = st.one_of(_messages(rpc.request, w), _near_valid(rpc, w))
    raw = msgs.map(lambda m: m.SerializeToString())
    long = _stretched(rpc, w).map(lambda m: m.SerializeToString())
    bodies = st.one_of(raw, long, raw.flatmap(_mutated))
    if rpc.path in ORGANISER:
        bodies = bodies.map(lambda b: _bounded(rpc, w, b))
    return bodies


def _bounded(rpc: Rpc, w: World, body: bytes) -> bytes:
    """The same request, unless the admin token could make it a lot of work: then one hand
    per game, at most three bots, one round, one game a series, a 1 s disconnect grace (so
    a game with a bot that is not connected ends soon). Only values the server would
    accept are changed; everything it must refuse goes out as drawn."""
    if len(body) > LIMIT:
        return body
    try:
        msg = rpc.request_class().FromString(body)
    except DecodeError:
        return body
    drawn = msg.SerializeToString()
    holders = [msg]
    for nested in ("spec", "settings"):  # CreateTournament's, StartArena's
        if nested in msg.DESCRIPTOR.fields_by_name and msg.HasField(nested):
            holders.append(getattr(msg, nested))
    for h in holders:
        names = h.DESCRIPTOR.fields_by_name
        if "rules" in names:
            hands = h.rules.get("max_hands")  # type: ignore[attr-defined]
            if hands is None or _int(hands) > 1:
                h.rules["max_hands"] = "1"  # type: ignore[attr-defined]
        if "faults" in names:
            if not h.HasField("faults"):
                h.faults.CopyFrom(game_pb2.FaultPolicy(  # type: ignore[attr-defined]
                    max_strikes=3, disconnect_grace_ms=1000))
            elif h.faults.disconnect_grace_ms > 1000:  # type: ignore[attr-defined]
                h.faults.disconnect_grace_ms = 1000  # type: ignore[attr-defined]
        for name, top in (("rounds", 100), ("series_length", 99)):
            if name in names and 1 < getattr(h, name) <= top:
                setattr(h, name, 1)
        if "fixed_games" in names:  # a test of a change: one pair at most
            fixed, most = getattr(h, "fixed_games"), getattr(h, "max_games")  # noqa: B009
            if fixed > 2 and fixed % 2 == 0 and fixed <= 1_000_000:
                h.fixed_games = 2  # type: ignore[attr-defined]
            elif fixed == 0 and (most == 0 or (most > 2 and most % 2 == 0
                                               and most <= 1_000_000)):
                h.max_games = 2  # type: ignore[attr-defined]
        if "anchors" in names and len(h.anchors) > 2:  # type: ignore[attr-defined]
            # An arena with at most two anchors (and no bot joined but the fuzz's own)
            # deals no board: the fuzz makes no games there.
            del h.anchors[2:]  # type: ignore[attr-defined]
        if "bot_ids" in names and h is not msg:
            ids = list(h.bot_ids)  # type: ignore[attr-defined]
            if len(set(ids)) > 3 and all(_is_bot(w.r, b) for b in set(ids)):
                del h.bot_ids[3:]  # type: ignore[attr-defined]
    cheap = msg.SerializeToString()
    return body if cheap == drawn else cheap


def _int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        return 0


def _is_bot(r: redis.Redis, id_or_name: str) -> bool:
    try:
        store_bots.find_bot(r, id_or_name)
    except NotFound:
        return False
    return True


@dataclass(frozen=True)
class Auth:
    """What a call carries as credentials, and what the referee makes of them (`reads`):
    "admin" (the admin token), "bot" (the fuzz's bot), "nobody" (no bearer token), or
    "unknown" (a bearer token that names no one)."""

    label: str
    metadata: tuple[tuple[str, str], ...]
    reads: Literal["admin", "bot", "nobody", "unknown"] = "nobody"
    oversize: bool = False  # past gRPC's 16 KB metadata limit

    @property
    def admin(self) -> bool:
        """The admin token: grants organiser (and admin, and any owner's) calls."""
        return self.reads == "admin"

    @property
    def bot(self) -> bool:
        """The fuzz's bot token: authenticates its bot on Play and arena calls."""
        return self.reads == "bot"

    @property
    def known(self) -> bool:
        """A token of the stack (of any role)."""
        return self.reads in ("admin", "bot")


def _admin_auth(w: World) -> Auth:
    """The admin token, the usual way."""
    return Auth("admin", (("authorization", f"Bearer {w.admin_token}"),), "admin")


def _auths(w: World, favoured: Sequence[str]) -> st.SearchStrategy[Auth]:
    """Credentials of every kind; the `favoured` labels (real tokens: most paths start
    behind one) drawn about half the time."""
    a, b = w.admin_token, w.bot_token
    fixed = [
        Auth("none", ()),
        _admin_auth(w),
        Auth("admin, lower-case scheme", (("authorization", f"bearer {a}"),), "admin"),
        Auth("bot", (("authorization", f"Bearer {b}"),), "bot"),
        Auth("admin token without a scheme", (("authorization", a),)),
        Auth("admin token cut short", (("authorization", f"Bearer {a[:-1]}"),), "unknown"),
        Auth("admin token in another header", (("x-authorization", f"Bearer {a}"),)),
        Auth("admin token second", (("authorization", "Bearer nope"),
                                    ("authorization", f"Bearer {a}")), "unknown"),
        Auth("bot token as Basic", (("authorization", f"Basic {b}"),)),
        Auth("scheme alone", (("authorization", "Bearer"),)),
        Auth("huge token", (("authorization", "Bearer " + "x" * 20_000),), oversize=True),
    ]
    forged = st.builds(
        lambda who, secret: Auth("forged token", (("authorization",
                                                   f"Bearer {who}.{secret}"),), "unknown"),
        st.sampled_from([w.bot_id, *(p.bot_id for p in w.players), "b-0", "b-" + "0" * 33,
                         w.author_id, "u-0", "u-" + "0" * 12]),
        st.text(string.ascii_letters + string.digits + "_-", min_size=1, max_size=130))
    garbage = st.builds(lambda t: Auth("garbage token", (("authorization", f"Bearer {t}"),),
                                       "unknown"),
                        st.text(_PRINTABLE, min_size=1, max_size=200).map(str.strip)
                        .filter(bool))
    real = [a for a in fixed if a.label in favoured]
    everything = st.one_of(st.sampled_from(fixed), forged, garbage)
    return st.one_of(st.sampled_from(real), everything)


# --------------------------------------------------------------- the checks


@dataclass
class Ledger:
    """What the fuzz's successful calls created, and how the calls were answered."""

    bots: set[str] = field(default_factory=set)
    matches: set[str] = field(default_factory=set)
    tournaments: set[str] = field(default_factory=set)
    tests: set[str] = field(default_factory=set)
    authors: set[str] = field(default_factory=set)
    invitations: set[str] = field(default_factory=set)  # their keys (by the code's hash)
    codes: Counter[str] = field(default_factory=Counter)
    reached: int = 0  # calls that got past decoding and authentication to the servicer

    def record(self, rpc: Rpc, reply: Message) -> None:
        """Note what a successful call made."""
        if rpc.path == REGISTER:
            self.bots.add(reply.bot_id)  # type: ignore[attr-defined]
        elif rpc.path == SIGN_UP:
            self.authors.add(reply.author.author_id)  # type: ignore[attr-defined]
        elif rpc.path == CREATE_INVITATION:
            code: str = reply.invitation  # type: ignore[attr-defined]
            self.invitations.add(keys.invitation(hashlib.sha256(code.encode()).hexdigest()))
        elif rpc.path == CREATE_MATCH:
            self.matches.add(reply.match_id)  # type: ignore[attr-defined]
        elif rpc.path == CREATE_TOURNAMENT:
            self.tournaments.add(reply.tournament_id)  # type: ignore[attr-defined]
        elif rpc.path == CREATE_TEST:
            self.tests.add(reply.test_id)  # type: ignore[attr-defined]


def _refused(code: Code, why: str) -> tuple[frozenset[Code], str]:
    return frozenset({code}), why


def _gate(rpc: Rpc, auth: Auth) -> tuple[frozenset[Code], str] | None:
    """How the gate refuses a call before its body is parsed (None: it lets it through)."""
    if rpc.path in ORGANISER:
        allowed = auth.admin
    elif rpc.path in BOT_CALLS | BOT_STREAMS:
        allowed = auth.bot
    elif rpc.path in TOKEN_CALLS:
        allowed = auth.known
    else:  # open; registration refuses a token that names no one, though
        allowed = rpc.path != REGISTER or auth.reads != "unknown"
    if allowed:
        return None
    if auth.known:  # a known token of another role
        return _refused(Code.PERMISSION_DENIED, "needs")
    # No token: the call says what it needs; a token that names no one: that it does not.
    return _refused(Code.UNAUTHENTICATED, "needs" if auth.reads == "nobody" else "token")


def _by_servicer(rpc: Rpc, request: Message, auth: Auth) -> tuple[frozenset[Code], str] | None:
    """How an open call's servicer refuses the caller, past the gate."""
    if rpc.path == REGISTER and auth.bot:
        return _refused(Code.PERMISSION_DENIED, "a bot token")
    if rpc.path == LIST_BOTS and request.mine:  # type: ignore[attr-defined]
        # An author's list; the fuzz sends no author token.
        return _refused(Code.PERMISSION_DENIED if auth.known else Code.UNAUTHENTICATED,
                        "mine:")
    return None


def _expected(rpc: Rpc, body: bytes, auth: Auth) -> tuple[frozenset[Code], str, bool]:
    """The statuses a call may end with, a phrase its message must hold, and whether the
    call reaches the servicer's own logic."""
    if auth.oversize:
        return frozenset({Code.RESOURCE_EXHAUSTED}), "", False
    if len(body) > LIMIT:
        return TOO_LARGE, "", False
    refused = _gate(rpc, auth)  # before anything else, the body included
    if refused is not None:
        return *refused, False
    try:
        request = rpc.request_class().FromString(body)
    except DecodeError:
        return frozenset({Code.INVALID_ARGUMENT}), f"not a valid {rpc.request.full_name}", False
    refused = _by_servicer(rpc, request, auth)
    if refused is not None:
        return *refused, False
    answers = ANSWERS | ({Code.PERMISSION_DENIED} if rpc.path in REFUSED_BY_SERVICER else set())
    if rpc.method.server_streaming:  # a watch may wait, or be one too many
        return answers | {Code.DEADLINE_EXCEEDED, Code.RESOURCE_EXHAUSTED}, "", True
    return answers, "", True


def _invoke(ch: grpc.Channel, rpc: Rpc, body: bytes, auth: Auth
            ) -> tuple[Code, str, list[bytes]]:
    """Send raw bytes; the status, its message and the raw responses."""
    replies: list[bytes] = []
    call: Any
    try:
        if rpc.method.server_streaming:
            watch: Any = ch.unary_stream(rpc.path)  # no serializers: bytes go as they are
            call = watch(body, metadata=auth.metadata, timeout=WATCH_S)
            replies.extend(call)
            return call.code(), call.details() or "", replies
        unary: Any = ch.unary_unary(rpc.path)
        reply, call = unary.with_call(body, metadata=auth.metadata, timeout=UNARY_TIMEOUT_S)
        return call.code(), call.details() or "", [reply]
    except grpc.RpcError as exc:
        failed: Any = exc
        return failed.code(), failed.details() or "", replies


def _serving(w: World, health: Any) -> None:
    assert w.referee.alive(), f"the referee died:\n{w.referee.text()[-3000:]}"
    reply = health.Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def _check_call(w: World, ch: grpc.Channel, rpc: Rpc, body: bytes, auth: Auth,
                ledger: Ledger) -> None:
    allowed, phrase, reached = _expected(rpc, body, auth)
    code, details, replies = _invoke(ch, rpc, body, auth)
    ledger.codes[code.name] += 1
    ledger.reached += reached
    what = f"{rpc.path} with {auth.label}, {len(body)} bytes {body[:120]!r}"
    assert code in allowed, f"{what}: {code.name} {details[:500]!r}"
    assert phrase in details, f"{what}: {details[:500]!r}"
    size = len(details.encode())
    assert size <= MAX_DETAILS, f"{what}: a status message of {size} bytes"
    parsed = [rpc.response_class().FromString(x) for x in replies]
    if code == Code.OK and not rpc.method.server_streaming:
        assert rpc.path not in ORGANISER or auth.admin
        ledger.record(rpc, parsed[0])


@dataclass(frozen=True)
class Census:
    """What Redis holds: the records, every key's owner and size."""

    bots: frozenset[str]
    matches: frozenset[str]
    tournaments: frozenset[str]
    tests: frozenset[str]
    authors: frozenset[str]
    invitations: frozenset[str]  # their keys
    sizes: dict[str, int]
    orphans: frozenset[str]  # ms: keys that belong to no record
    bots_held: dict[str, dict[str, str]]  # the guarded bots' records

    @staticmethod
    def take(r: redis.Redis, guarded: Sequence[str] = ()) -> Census:
        """Read it all (a test Redis holds a few thousand keys)."""
        def members(index: str) -> frozenset[str]:
            return frozenset(str(x) for x in r.zrange(index, 0, -1))

        bots, matches, tours = members(keys.BOTS), members(keys.MATCHES), members(
            keys.TOURNAMENTS)
        tests, authors = members(keys.TESTS), members(keys.AUTHORS)
        names = sorted(str(k) for k in r.scan_iter("ms:*", count=1000))
        pipe = r.pipeline(transaction=False)
        for k in names:
            pipe.memory_usage(k)
        sizes = {k: int(v or 0) for k, v in zip(names, pipe.execute(), strict=True)}
        # An invitation, and a count of one address's registrations, live a while on
        # their own: each must expire.
        lapsing = [k for k in names if k.startswith(("ms:invite:", "ms:throttle:"))]
        pipe = r.pipeline(transaction=False)
        for k in lapsing:
            pipe.pttl(k)
        expiring = {k for k, ttl in zip(lapsing, pipe.execute(), strict=True) if ttl > 0}
        name_keys = [k for k in names if k.startswith((keys.bot_name(""), keys.author_name("")))]
        owners = {k: str(v) for k, v in zip(name_keys, r.mget(name_keys) if name_keys else [],
                                            strict=True)}
        orphans = frozenset(
            k for k in names
            if not _owned(k, bots, matches, tours | tests, authors, owners.get(k))
            and k not in expiring)
        invitations = frozenset(k for k in names if k.startswith(keys.invitation("")))
        held = {b: {str(k): str(v) for k, v in r.hgetall(keys.bot(b)).items()}
                for b in guarded}
        return Census(bots, matches, tours, tests, authors, invitations, sizes, orphans, held)


# The keys of no record: every upper-case string constant of store.keys (ms:bots, ...).
_FIXED = frozenset(v for k, v in vars(keys).items()
                   if k.isupper() and isinstance(v, str) and v.startswith(keys.P) and v != keys.P)


def _owned(key: str, bots: frozenset[str], matches: frozenset[str], tours: frozenset[str],
           authors: frozenset[str], name_owner: str | None) -> bool:
    """True when a key is one of the fixed ones or belongs to a known record (`tours`:
    tournaments and tests, the events that own games). Invitations and registration
    counts belong to no record: `Census.take` lets them be while they expire."""
    if key in _FIXED or key.startswith(("ms:results:", "ms:ratings:")):
        return True
    if key.startswith("ms:arena:"):  # one arena per pool, its keys named by the pool
        return key.split(":")[2] in ("3p", "2v2")
    # A bot's keys (:rotating, :pending, ...), an author's (:bots, :tests, :cpu:{day},
    # :audit), a match's, an event's.
    for prefix, known in (("ms:bot:", bots), ("ms:match:", matches),
                          ("ms:tournament:", tours), ("ms:test:", tours),
                          ("ms:author:", authors)):
        if key.startswith(prefix):
            return key[len(prefix):].split(":", 1)[0] in known
    if key.startswith("ms:botname:"):
        return name_owner in bots
    if key.startswith("ms:authorname:"):
        return name_owner in authors
    return False


def _check_redis(before: Census, after: Census, ledger: Ledger, own: set[str]) -> None:
    """Only the fuzz's successful calls (and `own` matches) made records; nothing else
    was written but their parts; no key grew large; the guarded bots are as they were."""
    assert after.bots - before.bots == ledger.bots
    assert after.tournaments - before.tournaments == ledger.tournaments
    assert after.tests - before.tests == ledger.tests
    assert after.authors - before.authors == ledger.authors
    assert after.invitations - before.invitations == ledger.invitations
    assert after.bots_held == before.bots_held, "a pool bot or the fuzz's own was changed"
    new = after.matches - before.matches
    singles = {m for m in new if m.startswith("m-")}
    assert singles == ledger.matches | own
    games = new - singles
    events_ = after.tournaments | after.tests
    strays = {g for g in games if not any(g.startswith(t + "-") for t in events_)}
    assert not strays, f"matches of no tournament or test: {sorted(strays)[:5]}"
    assert after.orphans <= before.orphans, sorted(after.orphans - before.orphans)[:10]
    # Rating tables are derived: their size follows the rated bots of the pool (the LOS
    # matrix is kept for at most store.ratings.LOS_MAX_BOTS), not what a caller sent.
    grown = {k: n - before.sizes.get(k, 0) for k, n in after.sizes.items()
             if not k.startswith(keys.ratings("")) and not k.endswith(":rating")}
    big = {k: n for k, n in grown.items() if n > 256 << 10}
    assert not big, f"keys that grew by more than 256 KB: {big}"
    records = (len(ledger.bots) + len(new) + 4 * len(ledger.tournaments | ledger.tests)
               + len(ledger.authors) + len(ledger.invitations) + 1)
    total = sum(grown.values())
    assert total < records * (64 << 10), f"Redis grew by {total} bytes for {records} records"


def _check_created(admin: Admin, r: redis.Redis, ledger: Ledger, own: set[str]) -> None:
    """Every match the fuzz (or the test) created finished and is stored right; every
    tournament finished."""
    for match_id in sorted(ledger.matches | own):
        m = finished(admin, match_id, timeout=90)
        check_stored(r, m, transcript_of(m))
    for tid in sorted(ledger.tournaments):
        status = wait_until(f"tournament {tid} to end", _over(admin, tid), timeout=120)
        assert status == tournament_pb2.TOURNAMENT_STATUS_FINISHED, (tid, status)
    for test_id in sorted(ledger.tests):
        wait_until(f"test {test_id} to end", lambda t=test_id: r.hget(
            keys.tournament(t), "status") == "finished", timeout=120)


def _over(admin: Admin, tid: str) -> Callable[[], int]:
    """A probe: the tournament's status once it is no longer running, else 0."""
    def probe() -> int:
        status = admin.get_tournament(tid).status
        return status if status != tournament_pb2.TOURNAMENT_STATUS_RUNNING else 0
    return probe


def _quiet_log(w: World, start: int) -> None:
    text = w.referee.text()[start:]
    for bad in ("Traceback", "internal error"):
        assert bad not in text, f"the referee logged {bad!r}:\n{text[-4000:]}"


@contextlib.contextmanager
def _bracket(world: World, admin: Admin, r: redis.Redis) -> Iterator[Ledger]:
    """Around one RPC's fuzz run: a match among pool bots plays meanwhile, and another
    once it is over (the pool still plays); afterwards they, and everything the fuzz
    created, must be right, and Redis clean."""
    before = Census.take(r, world.guarded)
    log_at = len(world.referee.text())
    ids = [p.bot_id for p in world.players]
    own = {admin.create_match(3, ids, rules={"max_hands": "1"}).match_id}
    ledger = Ledger()
    yield ledger
    own.add(admin.create_match(3, ids, rules={"max_hands": "1"}).match_id)
    _check_created(admin, r, ledger, own)
    _check_redis(before, Census.take(r, world.guarded), ledger, own)
    _quiet_log(world, log_at)


def _channel(w: World) -> grpc.Channel:
    return grpc.insecure_channel(w.address, options=[
        ("grpc.max_receive_message_length", 64 << 20)])


# ------------------------------------------------------------------- tests


def test_every_rpc_is_classified_and_served(world: World) -> None:
    """The fuzz sees every RPC the referee serves, and each has a policy."""
    paths = {rpc.path for rpc in RPCS}
    policies = [ORGANISER, OPEN, TOKEN_CALLS, BOT_STREAMS, BOT_CALLS]
    unclassified = paths - frozenset().union(*policies)
    assert not unclassified, f"say who may make these calls: {unclassified}"
    assert sum(map(len, policies)) == len(frozenset().union(*policies)), "two policies"
    assert not frozenset().union(*policies, BOT_CHANGES) - paths, \
        "policies for RPCs that are gone"
    assert {rpc.path for rpc in CALLS + STREAMS} == paths
    with grpc.insecure_channel(world.address) as ch:
        db = ProtoReflectionDescriptorDatabase(ch)
        served = set()
        for service in db.get_services():
            if not service.startswith("moon.v1."):
                continue
            proto = db.FindFileContainingSymbol(service)
            for s in proto.service:
                if f"{proto.package}.{s.name}" == service:
                    served |= {f"/{service}/{m.name}" for m in s.method}
    assert served == paths


@pytest.mark.parametrize("rpc", CALLS, ids=lambda rpc: rpc.path.rsplit(".", 1)[-1])
def test_hostile_requests_get_clean_answers(rpc: Rpc, world: World, admin: Admin,
                                            r: redis.Redis) -> None:
    if rpc.path in BOT_CALLS:  # an arena to join (and to leave)
        arena_pb2_grpc.ArenaServiceStub(admin.channel).StartArena(
            world.seeds()[START_ARENA], metadata=admin.metadata, timeout=10)
    if rpc.path in BOT_CHANGES:
        world = world.aimed()
    defaults = _default_limits(r)  # SetLimits may set every author's
    slots = r.get(keys.SHARE_SLOTS)  # ... and the game slots every test shares
    with _bracket(world, admin, r) as ledger, _channel(world) as ch:
        health = health_pb2_grpc.HealthStub(ch)

        @_settings(rpc, CALL_EXAMPLES)
        @given(body=_bodies(rpc, world), auth=_auths(
            world, favoured=("bot",) if rpc.path in BOT_CALLS
            else ("admin",) if rpc.path in ADMIN_FAVOURED else ("admin", "bot")))
        def fuzz(body: bytes, auth: Auth) -> None:
            _check_call(world, ch, rpc, body, auth, ledger)
            _serving(world, health)

        for body in _regressions(rpc, world):
            fuzz = example(body=body, auth=_admin_auth(world))(fuzz)
        if rpc.path in BOT_CHANGES:  # the admin's valid request: a bot aimed at changes
            fuzz = example(body=world.seeds()[rpc.path].SerializeToString(),
                           auth=_admin_auth(world))(fuzz)
        fuzz()
    # Not a vacuous run: many calls got as far as the servicer's logic, and some failed
    # before it (a body that does not parse, a missing token).
    # (A bot's call needs its one real token, drawn for half the calls; of those, the
    # damaged bodies fail to parse first.)
    least = CALL_EXAMPLES // (12 if rpc.path in BOT_CALLS else 6)
    assert ledger.reached >= least, (ledger.reached, ledger.codes)
    assert ledger.codes["INVALID_ARGUMENT"] > 0, ledger.codes
    if rpc.path in ORGANISER:
        assert sum(ledger.codes[c.name] for c in REFUSED) > 0, ledger.codes
    if rpc.path in BOT_CALLS:
        assert ledger.codes["UNAUTHENTICATED"] > 0 and ledger.codes["OK"] > 0, ledger.codes
    if rpc.path in BOT_CHANGES:  # bots were changed, and none but those aimed at (_bracket)
        assert ledger.codes["OK"] > 0, ledger.codes
    if rpc.path.startswith("/moon.v1.ArenaService/"):
        _no_arena_left(admin, world)
    if _default_limits(r) != defaults:
        _restore_default_limits(admin, defaults)
    if r.get(keys.SHARE_SLOTS) != slots:  # what the session's other tests share
        account_pb2_grpc.AccountServiceStub(admin.channel).SetLimits(
            account_pb2.SetLimitsRequest(test_slots=int(slots or 0)),
            metadata=admin.metadata, timeout=10)
        assert r.get(keys.SHARE_SLOTS) == slots


def _default_limits(r: redis.Redis) -> str | None:
    value = r.get(keys.DEFAULT_LIMITS)
    return None if value is None else str(value)


def _restore_default_limits(admin: Admin, defaults: str | None) -> None:
    """Every author's limits back as they were before the fuzz set them."""
    limits = store_authors.Limits.from_json(defaults) if defaults else None
    request = account_pb2.SetLimitsRequest(reset=True) if limits is None else (
        account_pb2.SetLimitsRequest(limits=account_pb2.Limits(
            tests=limits.tests, pairs=limits.pairs, house_cpu_s=limits.house_cpu_s)))
    account_pb2_grpc.AccountServiceStub(admin.channel).SetLimits(
        request, metadata=admin.metadata, timeout=10)


def _no_arena_left(admin: Admin, w: World) -> None:
    """Stop what the fuzz started and take its bot out: later tests find no arena running."""
    stub = arena_pb2_grpc.ArenaServiceStub(admin.channel)
    for pool in (rating_pb2.RATING_POOL_THREE_PLAYER, rating_pb2.RATING_POOL_TWO_VS_TWO):
        with contextlib.suppress(grpc.RpcError):
            stub.StopArena(arena_pb2.StopArenaRequest(pool=pool), metadata=admin.metadata,
                           timeout=10)
        stub.LeaveArena(arena_pb2.LeaveArenaRequest(pool=pool), timeout=10,
                        metadata=(("authorization", f"Bearer {w.bot_token}"),))


# ------------------------------------------------------------ Play streams


@dataclass(frozen=True)
class Sent:
    """One message of a fuzzed stream, and what the server makes of it."""

    body: bytes
    parsed: Message | None  # None: too large or does not parse

    @staticmethod
    def of(kind: type[Message], body: bytes) -> Sent:
        """Classify `body` as the server will."""
        if len(body) > LIMIT:
            return Sent(body, None)
        try:
            return Sent(body, kind.FromString(body))
        except DecodeError:
            return Sent(body, None)


def _stream(ch: grpc.Channel, rpc: Rpc, sent: Sequence[Sent], auth: Auth
            ) -> tuple[Code, str, list[bytes]]:
    replies: list[bytes] = []
    method: Any = ch.stream_stream(rpc.path)  # no serializers: bytes go as they are
    call = method(iter([s.body for s in sent]), metadata=auth.metadata,
                  timeout=UNARY_TIMEOUT_S)
    try:
        replies.extend(call)
    except grpc.RpcError as exc:
        failed: Any = exc
        return failed.code(), failed.details() or "", replies
    return call.code(), call.details() or "", replies


def _check_play(w: World, sent: Sequence[Sent], code: Code, replies: list[bytes]) -> None:
    """What a bot's own Play stream must carry: a welcome first, an answer to every
    decision (all refused: nothing is pending for this bot), a pong for every ping."""
    out = [bot_pb2.PlayResponse.FromString(x) for x in replies]
    assert out, "no Welcome"
    assert out[0].WhichOneof("message") == "welcome" and out[0].welcome.bot_id == w.bot_id
    kinds = [m.WhichOneof("message") for m in out]
    assert "decision_accepted" not in kinds
    for m in out:
        if m.WhichOneof("message") == "decision_rejected":
            rejected = m.decision_rejected
            assert len(rejected.request_id) <= MAX_ECHO and len(rejected.message) <= 2 * MAX_ECHO
            assert rejected.reason in (rejected.REASON_UNKNOWN_REQUEST, rejected.REASON_NOT_YOURS)
    if code != Code.OK:
        return
    asked = [bot_pb2.PlayRequest.FromString(s.body) for s in sent]
    decisions = [m.decision for m in asked if m.WhichOneof("message") == "decision"]
    pings = Counter(m.ping.nonce for m in asked if m.WhichOneof("message") == "ping")
    refusals = [m.decision_rejected for m in out
                if m.WhichOneof("message") == "decision_rejected"]
    assert [x.request_id for x in refusals] == [d.request_id[:MAX_ECHO] for d in decisions]
    assert Counter(m.pong.nonce for m in out if m.WhichOneof("message") == "pong") == pings


def _stream_expected(rpc: Rpc, sent: Sequence[Sent], auth: Auth) -> frozenset[Code]:
    """The statuses a fuzzed stream may end with."""
    too_large = any(len(s.body) > LIMIT for s in sent)
    if auth.oversize:
        return frozenset({Code.RESOURCE_EXHAUSTED})
    refused = _gate(rpc, auth)
    if refused is not None:
        # Refused before a message is read; only a message past the limit can be refused
        # first, by gRPC itself.
        return refused[0] | ({Code.RESOURCE_EXHAUSTED} if too_large else set())
    if rpc.path == SUBMIT_VERSION:  # the admin's, the one token past the gate: refused
        return frozenset({Code.PERMISSION_DENIED}) | (  # before a message is read
            {Code.RESOURCE_EXHAUSTED} if too_large else set())
    first_bad = next((i for i, s in enumerate(sent) if s.parsed is None), None)
    if first_bad is not None:
        # The first bad message ends the stream; gRPC may see one past the limit, still in
        # flight behind it, first.
        if any(len(s.body) > LIMIT for s in sent[first_bad:]):
            return TOO_LARGE
        return frozenset({Code.INVALID_ARGUMENT})
    # Play ends cleanly when the bot closes its side; another stream answers as calls do.
    return frozenset({Code.OK}) if rpc.path in BOT_STREAMS else ANSWERS


@pytest.mark.parametrize("rpc", STREAMS, ids=lambda rpc: rpc.path.rsplit(".", 1)[-1])
def test_hostile_streams_get_clean_answers(rpc: Rpc, world: World, admin: Admin,
                                           r: redis.Redis) -> None:
    cls = rpc.request_class()
    # Each message of a stream: random, near-valid or damaged, as for unary calls.
    item = _bodies(rpc, world).map(lambda b: Sent.of(cls, b))
    with _bracket(world, admin, r) as ledger, _channel(world) as ch:
        health = health_pb2_grpc.HealthStub(ch)

        @_settings(rpc, STREAM_EXAMPLES)
        @given(sent=st.lists(item, max_size=6), auth=_auths(world, favoured=("bot",)))
        def fuzz(sent: list[Sent], auth: Auth) -> None:
            code, details, replies = _stream(ch, rpc, sent, auth)
            ledger.codes[code.name] += 1
            allowed = _stream_expected(rpc, sent, auth)
            what = f"{rpc.path} with {auth.label}, {[s.body[:60] for s in sent]!r}"
            assert code in allowed, f"{what}: {code.name} {details[:500]!r}"
            assert len(details.encode()) <= MAX_DETAILS
            if rpc.path in BOT_STREAMS and auth.bot and code != Code.RESOURCE_EXHAUSTED:
                _check_play(world, sent, code, replies)
            elif rpc.path in BOT_STREAMS and not auth.bot:
                assert not replies, f"{what}: answered without a bot token"
            _serving(world, health)

        fuzz()
    if rpc.path not in BOT_STREAMS:  # refused to every credential the fuzz holds
        assert ledger.codes["PERMISSION_DENIED"] > 0, ledger.codes
        assert ledger.codes["UNAUTHENTICATED"] > 0, ledger.codes
        return
    assert ledger.codes["OK"] > 0 and ledger.codes["INVALID_ARGUMENT"] > 0, ledger.codes
    assert ledger.codes["UNAUTHENTICATED"] > 0, ledger.codes
    # The fuzz's bot left nothing behind: no live stream, nothing pending.
    wait_until("the fuzz bot's streams to be gone", lambda: not store_bots.is_connected(
        r, world.bot_id), timeout=15)
    assert not r.hlen(keys.pending(world.bot_id))


# ------------------------------------------------------------------ after it


def test_the_stack_still_serves_after_the_fuzz(world: World, admin: Admin,
                                               r: redis.Redis) -> None:
    """After everything above, the referee serves every service, a bot connects, and a
    match among pool bots plays to a correct end."""
    assert world.referee.alive()
    with grpc.insecure_channel(world.address) as ch:
        health = health_pb2_grpc.HealthStub(ch)
        for name in ("", *sorted({rpc.path.split("/")[1] for rpc in RPCS})):
            reply = health.Check(health_pb2.HealthCheckRequest(service=name), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING, name
    bot_id, token = register(world.address, f"after-fuzz-{uuid.uuid4().hex[:8]}")
    bot = RawBot(world.address, token, first_legal).start()
    try:
        bot.wait_for(lambda m: m.WhichOneof("message") == "welcome")
        ids = [bot_id, world.players[0].bot_id, world.players[1].bot_id]
        m = finished(admin, admin.create_match(3, ids, seed=7,
                                               rules={"max_hands": "2"}).match_id)
        check_stored(r, m, transcript_of(m))
        assert m.result.end != "forfeit", m.result  # the new bot answered every request
        bot.wait_for(lambda x: x.WhichOneof("message") == "match_ended")
    finally:
        bot.close()
