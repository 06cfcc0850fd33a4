"""Authors, bad input (issue 26, "Proof"): a name taken, an invitation used twice or
expired, a test of someone else's bot, a retired bot in a new event, a token rotated twice
at once, an old token after a rotation. Each is one clear error, and each test then checks
that nothing changed: no account, bot, test, match, tournament or arena place was made,
no invitation spent, no audit entry written, no token replaced."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
import redis
from rawbot import RawBot
from stack import Stack, moonshot

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
    tournament_pb2,
    tournament_pb2_grpc,
)
from store import keys
from store.arena import POOLS

Code = grpc.StatusCode


def _md(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


@dataclass(frozen=True)
class Author:
    author_id: str
    name: str
    token: str


class Client:
    """The stubs of one referee."""

    def __init__(self, address: str, admin_token: str) -> None:
        self.address = address
        self.admin = _md(admin_token)
        self.channel = grpc.insecure_channel(address)
        self.accounts = account_pb2_grpc.AccountServiceStub(self.channel)
        self.bots = bot_pb2_grpc.BotServiceStub(self.channel)
        self.matches = match_pb2_grpc.MatchServiceStub(self.channel)
        self.tournaments = tournament_pb2_grpc.TournamentServiceStub(self.channel)
        self.tests = change_pb2_grpc.TestServiceStub(self.channel)
        self.arenas = arena_pb2_grpc.ArenaServiceStub(self.channel)

    def sign_up(self, name: str, invitation: str = "") -> Author:
        resp = self.accounts.SignUp(account_pb2.SignUpRequest(name=name, invitation=invitation),
                                    timeout=10)
        return Author(resp.author.author_id, resp.author.name, resp.token)

    def register(self, name: str, author: Author | None = None, previous: str = ""
                 ) -> tuple[str, str]:
        resp = self.bots.RegisterBot(bot_pb2.RegisterBotRequest(name=name, previous=previous),
                                     metadata=_md(author.token if author else None),
                                     timeout=10)
        return resp.bot_id, resp.token

    def invite(self, organiser: bool = False) -> str:
        return self.accounts.CreateInvitation(account_pb2.CreateInvitationRequest(
            ttl_s=3600, organiser=organiser), metadata=self.admin, timeout=10).invitation

    def close(self) -> None:
        self.channel.close()


def _refused(call: object, code: Code, says: str) -> str:
    """Make the call; it must fail with `code`, its message saying `says`."""
    with pytest.raises(grpc.RpcError) as info:
        call()  # type: ignore[operator]
    err = info.value
    assert err.code() == code, (err.code(), err.details())
    assert says in (err.details() or ""), err.details()
    return err.details() or ""


@pytest.fixture
def c(stack: Stack, admin_token: str) -> Iterator[Client]:
    client = Client(stack.address, admin_token)
    yield client
    client.close()


@pytest.fixture
def tag() -> str:
    return uuid.uuid4().hex[:8]


def _audit_len(r: redis.Redis, author_id: str) -> int:
    return int(r.xlen(keys.author_audit(author_id)))  # type: ignore[arg-type]


def _counts(r: redis.Redis) -> dict[str, int]:
    """How many authors, bots, tests and tournaments the stack holds, and audit entries."""
    return {k: int(r.zcard(key)) for k, key in  # type: ignore[arg-type]
            (("authors", keys.AUTHORS), ("bots", keys.BOTS), ("tests", keys.TESTS),
             ("tournaments", keys.TOURNAMENTS))} | {"audit": int(r.xlen(keys.AUDIT))}  # type: ignore[arg-type]


# ---------------------------------------------------------------- names


def test_a_name_taken(c: Client, r: redis.Redis, tag: str) -> None:
    """An author's name, and a bot's, taken in any case: ALREADY_EXISTS, nothing made."""
    first = c.sign_up(f"Ann-{tag}")
    bot_id, _ = c.register(f"Rex-{tag}", first)
    other = c.sign_up(f"Bob-{tag}")
    before, other_audit = _counts(r), _audit_len(r, other.author_id)
    for taken in (f"Ann-{tag}", f"ann-{tag}", f"ANN-{tag}"):
        _refused(lambda taken=taken: c.sign_up(taken), Code.ALREADY_EXISTS, "ignore case")
    for taken in (f"Rex-{tag}", f"rex-{tag}", f"REX-{tag}"):
        _refused(lambda taken=taken: c.register(taken, other), Code.ALREADY_EXISTS,
                 "ignore case")
        _refused(lambda taken=taken: c.register(taken), Code.ALREADY_EXISTS, "ignore case")
        _refused(lambda taken=taken: c.bots.RegisterBot(bot_pb2.RegisterBotRequest(
            name=taken), metadata=c.admin, timeout=10), Code.ALREADY_EXISTS, "ignore case")
    # Nothing changed: no account, no bot, no audit entry; the names are the first owners'.
    assert _counts(r) == before
    assert _audit_len(r, other.author_id) == other_audit
    assert r.get(keys.author_name(f"ann-{tag}")) == first.author_id
    assert r.get(keys.bot_name(f"rex-{tag}")) == bot_id
    assert r.zcard(keys.author_bots(other.author_id)) == 0
    got = c.bots.GetBot(bot_pb2.GetBotRequest(bot_id=f"REX-{tag}"), timeout=10).bot
    assert (got.bot_id, got.owner_id) == (bot_id, first.author_id)


# ---------------------------------------------------------------- invitations


@pytest.fixture
def invite_only(fresh_stack: Stack, admin_token: str) -> Iterator[Client]:
    """A referee of the session's Redis whose sign-up needs an invitation."""
    p = fresh_stack.start("referee-invite", moonshot(
        "referee", "--listen", "127.0.0.1:0", "--redis", fresh_stack.redis_url,
        "--signup", "invite", "--auth-free-failures", "100000",
        "--registrations-per-hour", "0"))
    port = p.wait_for(r"referee listening on 127\.0\.0\.1:(\d+)").group(1)
    client = Client(f"127.0.0.1:{port}", admin_token)
    yield client
    client.close()


def _invitation(r: redis.Redis, code: str) -> dict[str, str]:
    return r.hgetall(keys.invitation(hashlib.sha256(code.encode()).hexdigest()))  # type: ignore[return-value]


def test_invitations_used_twice_expired_or_missing(invite_only: Client, r: redis.Redis,
                                                  tag: str) -> None:
    """On a stack that needs invitations: none, an unknown one, one used already, one
    expired, one given with a name taken: each refused, no account made, and the
    invitation is spent only by the sign-up that made an account."""
    c = invite_only
    before = _counts(r)
    _refused(lambda: c.sign_up(f"nobody-{tag}"), Code.PERMISSION_DENIED, "needs an invitation")
    _refused(lambda: c.sign_up(f"nobody-{tag}", "inv.no-such-invitation"),
             Code.PERMISSION_DENIED, "not an invitation of this stack")
    _refused(lambda: c.sign_up(f"nobody-{tag}", "not-an-invitation"),
             Code.INVALID_ARGUMENT, "invitation")
    assert _counts(r) == before

    # Used twice: the second sign-up is refused, and makes no account.
    code = c.invite()
    first = c.sign_up(f"first-{tag}", code)
    assert _invitation(r, code)["used_by"] == first.author_id
    before = _counts(r)
    _refused(lambda: c.sign_up(f"second-{tag}", code), Code.PERMISSION_DENIED, "already used")
    assert _counts(r) == before
    assert r.get(keys.author_name(f"second-{tag}")) is None
    assert _invitation(r, code)["used_by"] == first.author_id

    # A name taken, with a good invitation: refused, and the invitation stays unspent...
    code = c.invite(organiser=True)
    before = _counts(r)
    _refused(lambda: c.sign_up(f"FIRST-{tag}", code), Code.ALREADY_EXISTS, "ignore case")
    assert _counts(r) == before
    assert _invitation(r, code)["used_by"] == ""
    # ... for a sign-up with a free name (an organiser, as the invitation says).
    third = c.sign_up(f"third-{tag}", code)
    me = c.accounts.WhoAmI(account_pb2.WhoAmIRequest(), metadata=_md(third.token), timeout=10)
    assert me.role == account_pb2.ROLE_ORGANISER

    # Expired: an invitation made by the admin, its expiry moved into the past (the
    # shortest an invitation lives is a minute).
    code = c.invite()
    key = keys.invitation(hashlib.sha256(code.encode()).hexdigest())
    assert r.hset(key, "expires_at", repr(time.time() - 1)) == 0  # the field existed
    before = _counts(r)
    _refused(lambda: c.sign_up(f"late-{tag}", code), Code.PERMISSION_DENIED, "expired at")
    assert _counts(r) == before
    assert r.get(keys.author_name(f"late-{tag}")) is None
    assert _invitation(r, code)["used_by"] == ""
    # A minute is the shortest an invitation may live.
    _refused(lambda: c.accounts.CreateInvitation(account_pb2.CreateInvitationRequest(
        ttl_s=59), metadata=c.admin, timeout=10), Code.INVALID_ARGUMENT, "ttl")


# ---------------------------------------------------------------- tests of a change


def test_a_test_of_someone_elses_bot(c: Client, r: redis.Redis, tag: str) -> None:
    """An author's test naming another author's bot (as candidate, baseline or
    opponent), or asking the admin's trust_opponents: PERMISSION_DENIED, nothing made."""
    ann = c.sign_up(f"ann-{tag}")
    ann1, _ = c.register(f"ann1-{tag}", ann)
    ann2, _ = c.register(f"ann2-{tag}", ann, previous=ann1)
    bob = c.sign_up(f"bob-{tag}")
    bob1, _ = c.register(f"bob1-{tag}", bob)
    no_ones, _ = c.register(f"loose-{tag}")  # no token: a bot of no one
    before, audit = _counts(r), _audit_len(r, bob.author_id)

    def create(**spec: object) -> object:
        return c.tests.CreateTest(change_pb2.CreateTestRequest(
            spec=change_pb2.TestSpec(**spec), require_online=True),  # type: ignore[arg-type]
            metadata=_md(bob.token), timeout=30)

    for spec, says in [
        ({"candidate": ann2, "baseline": ann1}, "belongs to another author"),
        ({"candidate": ann2}, "belongs to another author"),  # baseline: its previous version
        ({"candidate": bob1, "baseline": ann1}, "belongs to another author"),
        ({"candidate": bob1, "baseline": no_ones}, "belongs to no one"),
        ({"candidate": bob1, "baseline": "house:greedy", "opponents": [ann1, "house:greedy"]},
         "house opponents only"),
        ({"candidate": bob1, "baseline": "house:greedy", "trust_opponents": True},
         "the admin's option"),
        ({"candidate": "house:greedy", "baseline": bob1}, "house bot"),
    ]:
        _refused(lambda spec=spec: create(**spec), Code.PERMISSION_DENIED, says)
    # Bob's own bot against a house baseline passes every check of whose bots they are
    # (and stops at `require_online`: bob1 is not connected).
    _refused(lambda: create(candidate=bob1, baseline="house:greedy"),
             Code.FAILED_PRECONDITION, "not connected now")
    assert _counts(r) == before
    assert _audit_len(r, bob.author_id) == audit
    assert r.scard(keys.author_tests(bob.author_id)) == 0
    me = c.accounts.WhoAmI(account_pb2.WhoAmIRequest(), metadata=_md(bob.token), timeout=10)
    assert me.usage.tests == 0 and not me.usage.test_ids


# ---------------------------------------------------------------- a retired bot


def test_a_retired_bot_in_a_new_event(c: Client, r: redis.Redis, tag: str) -> None:
    """A retired bot in a new match, tournament or test, or joining an arena: one clear
    error each, nothing made; retiring it again is refused too."""
    ann = c.sign_up(f"ann-{tag}")
    old, old_token = c.register(f"old-{tag}", ann)
    new, _ = c.register(f"new-{tag}", ann, previous=old)
    third, _ = c.register(f"third-{tag}", ann)
    retired = c.bots.RetireBot(bot_pb2.RetireBotRequest(bot_id=old), metadata=_md(ann.token),
                               timeout=10).bot
    assert retired.HasField("retired_at")
    before, audit = _counts(r), _audit_len(r, ann.author_id)

    says = f"old-{tag} is retired"
    _refused(lambda: c.matches.CreateMatch(match_pb2.CreateMatchRequest(
        players=3, bot_ids=[old, "house:random", "house:greedy"]), metadata=c.admin,
        timeout=10), Code.INVALID_ARGUMENT, says)
    _refused(lambda: c.tournaments.CreateTournament(tournament_pb2.CreateTournamentRequest(
        spec=tournament_pb2.TournamentSpec(
            name="with a retired bot", players=3,
            format=tournament_pb2.TOURNAMENT_FORMAT_ROUND_ROBIN,
            bot_ids=[new, third, old])), metadata=c.admin, timeout=10),
        Code.INVALID_ARGUMENT, says)
    for spec in ({"candidate": old, "baseline": "house:greedy"},
                 {"candidate": new, "baseline": old},
                 {"candidate": new}):  # the baseline by default: its previous version, retired
        for token in (ann.token, None):
            md = _md(token) if token else c.admin
            _refused(lambda spec=spec, md=md: c.tests.CreateTest(change_pb2.CreateTestRequest(
                spec=change_pb2.TestSpec(**spec)), metadata=md, timeout=30),  # type: ignore[arg-type]
                Code.INVALID_ARGUMENT, says)
    for pool in (rating_pb2.RATING_POOL_THREE_PLAYER, rating_pb2.RATING_POOL_TWO_VS_TWO):
        _refused(lambda pool=pool: c.arenas.JoinArena(arena_pb2.JoinArenaRequest(pool=pool),
                                                      metadata=_md(old_token), timeout=10),
                 Code.FAILED_PRECONDITION, says)
    _refused(lambda: c.bots.RetireBot(bot_pb2.RetireBotRequest(bot_id=old),
                                      metadata=_md(ann.token), timeout=10),
             Code.FAILED_PRECONDITION, "retired already")

    assert _counts(r) == before
    assert _audit_len(r, ann.author_id) == audit
    assert r.zcard(keys.bot_matches(old)) == 0
    assert all(r.zscore(keys.arena_joined(pool), old) is None for pool in POOLS)
    got = c.bots.GetBot(bot_pb2.GetBotRequest(bot_id=old), timeout=10).bot
    assert got.retired_at == retired.retired_at


# ---------------------------------------------------------------- token rotation


def _play_answer(address: str, token: str) -> tuple[Code, str]:
    """Open Play with `token`: OK and the bot id of its Welcome, or the error code."""
    with grpc.insecure_channel(address) as channel:
        call = bot_pb2_grpc.BotServiceStub(channel).Play(iter(()), metadata=_md(token),
                                                         timeout=10)
        try:
            first = next(iter(call))
            return Code.OK, first.welcome.bot_id
        except grpc.RpcError as exc:
            return exc.code(), exc.details() or ""
        finally:
            call.cancel()


def test_a_token_rotated_twice_at_once(c: Client, r: redis.Redis, tag: str) -> None:
    """Two RotateBotToken of one bot at once (the owner's and the admin's): exactly one
    returns a token, the other is FAILED_PRECONDITION; the bot's live stream ends
    UNAUTHENTICATED saying why; the old token is refused, the one returned plays."""
    ann = c.sign_up(f"ann-{tag}")
    for i in range(3):
        bot_id, old = c.register(f"rot{i}-{tag}", ann)
        live = RawBot(c.address, old).start()
        try:
            live.wait_for(lambda m: m.WhichOneof("message") == "welcome")
            stored = r.hget(keys.bot(bot_id), "token")
            audit = _audit_len(r, ann.author_id)
            request = bot_pb2.RotateBotTokenRequest(bot_id=bot_id)
            calls = [c.bots.RotateBotToken.future(request, metadata=md, timeout=10)
                     for md in (_md(ann.token), c.admin)]
            won, lost = [], []
            for call in calls:
                try:
                    won.append(call.result().token)
                except grpc.RpcError as exc:
                    lost.append((exc.code(), exc.details()))
            assert len(won) == 1, (won, lost)
            assert [code for code, _ in lost] == [Code.FAILED_PRECONDITION], lost
            assert "rotated less than 5 s ago" in lost[0][1]
            new = won[0]
            # The live stream of the old token ends, saying why.
            live.thread.join(10)
            assert live.ended and live.error is not None
            assert live.error.code() == Code.UNAUTHENTICATED, live.error
            assert "token was replaced" in (live.error.details() or "")
        finally:
            live.close()
        # One rotation happened: one new hash, one audit entry.
        assert r.hget(keys.bot(bot_id), "token") not in (None, stored)
        assert _audit_len(r, ann.author_id) == audit + 1
        assert (r.xrevrange(keys.author_audit(ann.author_id), count=1)[0][1]["action"]  # type: ignore[index]
                == "rotate_token")
        # The old token is refused, the returned one plays.
        code, says = _play_answer(c.address, old)
        assert code == Code.UNAUTHENTICATED and "wrong secret" in says, (code, says)
        assert _play_answer(c.address, new) == (Code.OK, bot_id)


def test_an_old_token_after_a_rotation(c: Client, tag: str) -> None:
    """After a rotation the old token is refused everywhere a bot token serves (Play,
    WhoAmI, JoinArena), at once; the new one is the bot's."""
    ann = c.sign_up(f"ann-{tag}")
    bot_id, old = c.register(f"rot-{tag}", ann)
    assert _play_answer(c.address, old) == (Code.OK, bot_id)
    new = c.bots.RotateBotToken(bot_pb2.RotateBotTokenRequest(bot_id=f"ROT-{tag}"),
                                metadata=_md(ann.token), timeout=10).token
    assert new != old and new.startswith(f"{bot_id}.")
    code, says = _play_answer(c.address, old)
    assert code == Code.UNAUTHENTICATED and "wrong secret" in says, (code, says)
    _refused(lambda: c.accounts.WhoAmI(account_pb2.WhoAmIRequest(), metadata=_md(old),
                                       timeout=10), Code.UNAUTHENTICATED, "wrong secret")
    _refused(lambda: c.arenas.LeaveArena(arena_pb2.LeaveArenaRequest(
        pool=rating_pb2.RATING_POOL_THREE_PLAYER), metadata=_md(old), timeout=10),
        Code.UNAUTHENTICATED, "wrong secret")
    me = c.accounts.WhoAmI(account_pb2.WhoAmIRequest(), metadata=_md(new), timeout=10)
    assert (me.role, me.bot_id) == (account_pb2.ROLE_BOT, bot_id)
    assert _play_answer(c.address, new) == (Code.OK, bot_id)
