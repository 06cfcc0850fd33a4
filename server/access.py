"""Who may call what: the one authorization table of the referee, and the gate that applies it.

Every RPC of every service has one rule in `RULES`; `add_service` puts the gate in front
of every method it registers, so no call reaches a servicer without its rule applied, and
a method missing from the table is refused (PERMISSION_DENIED, naming it;
tests/net/test_access.py checks the table covers the .proto files, and the answer of every
RPC to every kind of caller against expectations written out by hand). The caller the gate
resolved is the servicer's through `caller()`.

Roles, least privilege first (DESIGN.md, "Threat model"):

- nobody: no token. Reads what is public.
- a bot (a bot token): plays (Play), and joins or leaves an arena for itself.
- an author (an author token): owns bots and tests them.
- an organiser (an author the admin made one): also creates tournaments, single matches
  and arenas.
- the admin (the stack's own token): everything, including what no one else may read
  (games of a board before its release, a test's seed).

`Rule.OWNER` admits authors and the admin at the gate; the servicer then checks that the
thing the request names (a bot, a test) is the caller's, with `check_owner`, so the
object-level part of the rule lives here too. A token that is sent but matches nothing is
UNAUTHENTICATED on every call that needs a role; on a call open to anyone it is read as no
token (a watcher's stale token must not break a public page).
"""

from __future__ import annotations

import contextvars
import enum
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import redis

from server.edge import bearer_token, fail, status_of
from server.lanes import Lane, peer_host
from store import authors as store_authors
from store import bots as store_bots
from store import ids
from store.authors import AuthorRecord
from store.bots import BotRecord
from store.errors import PermissionDenied, Unauthenticated

__all__ = [
    "RULES",
    "Caller",
    "Gate",
    "Role",
    "Rule",
    "caller",
    "check_owner",
    "resolve",
]


class Role(enum.IntEnum):
    """What a token is (the wire's `moon.v1.Role`)."""

    NOBODY = 0
    BOT = 1
    AUTHOR = 2
    ORGANISER = 3
    ADMIN = 4


class Rule(enum.Enum):
    """What a call needs. The value is how the refusal names it."""

    ANYONE = "anyone"
    ANY_TOKEN = "any token of this stack (a bot's, an author's or the admin's)"
    REGISTER = "an author token or the admin token (or none, where registration is open)"
    BOT = "the bot token"
    OWNER = "the token of the author who owns it, or the admin token"
    ORGANISER = "an organiser's author token, or the admin token"
    ADMIN = "the admin token"


_S = "moon.v1."

# The one table. A new RPC is refused until it has a line here.
RULES: dict[str, Rule] = {
    # Accounts
    f"/{_S}AccountService/SignUp": Rule.ANYONE,  # the stack's sign-up setting decides
    f"/{_S}AccountService/WhoAmI": Rule.ANY_TOKEN,
    f"/{_S}AccountService/GetAuthor": Rule.ANYONE,
    f"/{_S}AccountService/ListAuthors": Rule.ANYONE,
    f"/{_S}AccountService/CreateInvitation": Rule.ADMIN,
    f"/{_S}AccountService/SetRole": Rule.ADMIN,
    f"/{_S}AccountService/SetLimits": Rule.ADMIN,
    f"/{_S}AccountService/AssignBot": Rule.ADMIN,
    f"/{_S}AccountService/ListAudit": Rule.OWNER,  # an author reads their own
    # Bots
    f"/{_S}BotService/RegisterBot": Rule.REGISTER,
    f"/{_S}BotService/GetBot": Rule.ANYONE,
    f"/{_S}BotService/ListBots": Rule.ANYONE,  # `mine` needs an author token
    f"/{_S}BotService/Play": Rule.BOT,
    f"/{_S}BotService/RotateBotToken": Rule.OWNER,
    f"/{_S}BotService/RetireBot": Rule.OWNER,
    f"/{_S}BotService/SetPreviousVersion": Rule.OWNER,
    # An author's code: the servicer refuses the admin, who owns no bots (server.hosted)
    f"/{_S}BotService/SubmitVersion": Rule.OWNER,
    # Matches
    f"/{_S}MatchService/CreateMatch": Rule.ORGANISER,
    f"/{_S}MatchService/GetMatch": Rule.ANYONE,
    f"/{_S}MatchService/ListMatches": Rule.ANYONE,
    f"/{_S}MatchService/WatchMatch": Rule.ANYONE,
    # Tournaments and ratings
    f"/{_S}TournamentService/CreateTournament": Rule.ORGANISER,
    f"/{_S}TournamentService/GetTournament": Rule.ANYONE,
    f"/{_S}TournamentService/ListTournaments": Rule.ANYONE,
    f"/{_S}TournamentService/GetStandings": Rule.ANYONE,
    f"/{_S}TournamentService/WatchTournament": Rule.ANYONE,
    f"/{_S}TournamentService/SetGroup": Rule.ORGANISER,
    f"/{_S}TournamentService/ListGroups": Rule.ORGANISER,  # who is grouped is not public
    f"/{_S}RatingService/GetRatings": Rule.ANYONE,
    f"/{_S}RatingService/GetRatingHistory": Rule.ANYONE,
    f"/{_S}RatingService/AuditCollusion": Rule.ORGANISER,  # nothing of it is public
    # Tests of a change: an author tests their own bots (the servicer checks whose)
    f"/{_S}TestService/CreateTest": Rule.OWNER,
    f"/{_S}TestService/GetTest": Rule.ANYONE,
    f"/{_S}TestService/ListTests": Rule.ANYONE,
    f"/{_S}TestService/WatchTest": Rule.ANYONE,
    f"/{_S}TestService/StopTest": Rule.OWNER,
    # Arenas
    f"/{_S}ArenaService/StartArena": Rule.ORGANISER,
    f"/{_S}ArenaService/StopArena": Rule.ORGANISER,
    f"/{_S}ArenaService/GetArena": Rule.ANYONE,
    f"/{_S}ArenaService/JoinArena": Rule.BOT,
    f"/{_S}ArenaService/LeaveArena": Rule.BOT,
}

# The roles each rule admits at the gate.
_ADMITS: dict[Rule, frozenset[Role]] = {
    Rule.ANYONE: frozenset(Role),
    Rule.REGISTER: frozenset(Role),  # nobody only where registration is open: the servicer
    Rule.ANY_TOKEN: frozenset({Role.BOT, Role.AUTHOR, Role.ORGANISER, Role.ADMIN}),
    Rule.BOT: frozenset({Role.BOT}),
    Rule.OWNER: frozenset({Role.AUTHOR, Role.ORGANISER, Role.ADMIN}),
    Rule.ORGANISER: frozenset({Role.ORGANISER, Role.ADMIN}),
    Rule.ADMIN: frozenset({Role.ADMIN}),
}


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling, as the gate resolved their token."""

    role: Role
    address: str = ""
    bot: BotRecord | None = None
    author: AuthorRecord | None = None

    @property
    def is_admin(self) -> bool:
        """The admin token."""
        return self.role is Role.ADMIN

    @property
    def author_id(self) -> str:
        """The author's id ('' for anyone else)."""
        return self.author.author_id if self.author is not None else ""

    @property
    def actor(self) -> str:
        """How the audit log names the caller."""
        if self.role is Role.ADMIN:
            return "admin"
        if self.author is not None:
            return self.author.author_id
        if self.bot is not None:
            return self.bot.bot_id
        return "anonymous"


NOBODY = Caller(Role.NOBODY)
_CALLER: contextvars.ContextVar[Caller] = contextvars.ContextVar("moonshot_caller",
                                                                   default=NOBODY)


def caller() -> Caller:
    """The caller of the RPC being served (set by the gate)."""
    return _CALLER.get()


def resolve(r: redis.Redis, token: str | None, address: str = "") -> Caller:
    """The caller a bearer token names (nobody for none); Unauthenticated for a token that
    names no one."""
    if not token:
        return Caller(Role.NOBODY, address)
    if store_bots.is_admin(r, token):
        return Caller(Role.ADMIN, address)
    if ids.bot_of_token(token) is not None:
        return Caller(Role.BOT, address, bot=store_bots.authenticate_bot(r, token))
    if ids.author_of_token(token) is not None:
        author = store_authors.authenticate_author(r, token)
        return Caller(Role.ORGANISER if author.organiser else Role.AUTHOR, address,
                      author=author)
    if token.startswith("adm."):
        raise Unauthenticated("admin token rejected: it is not this stack's admin token")
    raise Unauthenticated("not a token of this stack: expected a bot token (b-...), an "
                          "author token (u-...) or the admin token (adm....)")


def admit(rule: Rule, method: str, who: Caller) -> None:
    """PermissionDenied (or Unauthenticated for no token) unless the rule admits the role."""
    if who.role in _ADMITS[rule]:
        return
    name = method.rsplit("/", 1)[-1]
    if who.role is Role.NOBODY:
        raise Unauthenticated(f"{name} needs {rule.value}: send metadata 'authorization: "
                              "Bearer <token>'")
    what = {Role.BOT: "a bot token", Role.AUTHOR: "an author token (not an organiser's)",
            Role.ORGANISER: "an organiser's token"}.get(who.role, "this token")
    raise PermissionDenied(f"{name} needs {rule.value}; this is {what}")


class Gate:
    """Applies `RULES` to each call before its servicer runs (`add_service` installs it)."""

    def __init__(self, bots: Lane, reads: Lane) -> None:
        self.bots = bots  # a bot's own calls: Play opens behind nothing else
        self.reads = reads  # everyone else's, behind their own kind only

    async def authorize(self, method: str, context: grpc.aio.ServicerContext[Any, Any]
                        ) -> Caller:
        """The caller, admitted by the method's rule (the project's errors otherwise)."""
        rule = RULES.get(method)
        if rule is None:
            raise PermissionDenied(f"{method}: no rule in the authorization table")
        token = bearer_token(context)
        address = peer_host(context.peer() or "")
        lane = self.bots if rule in (Rule.BOT, Rule.REGISTER) else self.reads
        if rule is Rule.ANYONE:
            try:
                who = await lane.run(resolve, token, address) if token else Caller(
                    Role.NOBODY, address)
            except Unauthenticated:
                who = Caller(Role.NOBODY, address)
        else:
            who = await lane.run(resolve, token, address)
            admit(rule, method, who)
        _CALLER.set(who)
        return who

    async def _admit(self, method: str, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        try:
            await self.authorize(method, context)
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            code, message = status_of(exc)
            await fail(context, code, message)

    def guard(self, method: str, handler: Any) -> Any:
        """The method handler with this gate in front (each kind of handler its own way;
        the caller is set in the RPC's own task, which the servicer then runs in)."""
        if handler.unary_unary is not None:
            inner_uu: Callable[[Any, Any], Awaitable[Any]] = handler.unary_unary

            async def unary_unary(request: Any, context: Any) -> Any:
                await self._admit(method, context)
                return await inner_uu(request, context)

            return handler._replace(unary_unary=unary_unary)
        if handler.unary_stream is not None:
            inner_us: Callable[[Any, Any], AsyncIterator[Any]] = handler.unary_stream

            async def unary_stream(request: Any, context: Any) -> AsyncIterator[Any]:
                await self._admit(method, context)
                async for item in inner_us(request, context):
                    yield item

            return handler._replace(unary_stream=unary_stream)
        if handler.stream_stream is not None:
            inner_ss: Callable[[Any, Any], AsyncIterator[Any]] = handler.stream_stream

            async def stream_stream(requests: Any, context: Any) -> AsyncIterator[Any]:
                await self._admit(method, context)
                async for item in inner_ss(requests, context):
                    yield item

            return handler._replace(stream_stream=stream_stream)
        if handler.stream_unary is not None:
            inner_su: Callable[[Any, Any], Awaitable[Any]] = handler.stream_unary

            async def stream_unary(requests: Any, context: Any) -> Any:
                await self._admit(method, context)  # before a byte of the stream is read
                return await inner_su(requests, context)

            return handler._replace(stream_unary=stream_unary)
        raise TypeError(f"{method}: a kind of method with no guard")


def check_owner(who: Caller, bot: BotRecord, what: str = "bot") -> None:
    """PermissionDenied unless the caller is the admin or the author who owns the bot."""
    if who.is_admin:
        return
    if bot.house:
        raise PermissionDenied(f"{bot.bot_id} is a house bot: it belongs to the stack")
    if not who.author_id or bot.owner != who.author_id:
        owner = "no one (the admin may assign it)" if not bot.owner else "another author"
        raise PermissionDenied(f"{what} {bot.name} ({bot.bot_id}) belongs to {owner}, not "
                               "to you")

