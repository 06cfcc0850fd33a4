"""AccountService: sign-up, who am I, authors, invitations, roles, limits, the audit log.

Thin, as every servicer: the gate (`server.access`) has admitted the caller by the
method's rule before a method runs; the methods decode, call `store.authors`,
`store.bots` and `store.audit`, and encode.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import grpc
import redis

from proto.moon.v1 import account_pb2, account_pb2_grpc
from server import wire
from server.access import Caller, Role, caller
from server.edge import MAX_PAGE, unary
from server.lanes import Lane, peer_range
from store import audit
from store import authors as store_authors
from store import bots as store_bots
from store import changes as store_changes
from store import hosted as store_hosted
from store import share as store_share
from store.authors import AuthorRecord, Limits
from store.errors import InvalidArgument, PermissionDenied

__all__ = ["AccountServicer", "Settings", "author_to_pb", "limits_to_pb", "throttle_address",
           "usage_of", "usage_to_pb"]

log = logging.getLogger("moonshot.referee")

_PAGE = 100


@dataclass(frozen=True, slots=True)
class Settings:
    """The referee's account settings (`moonshot referee --signup ... --registration ...`).

    `signup`: "open" (anyone may make an author account), "invite" (an invitation from
    the admin is needed), "closed" (only by invitation too, said so). `registration`:
    who may register a bot: "open" (anyone; a bot registered without a token is no
    one's), "authors" (an author or the admin), "admin" (the admin only).
    `per_hour`: sign-ups, and bot registrations, allowed from one address in an hour
    (0: no limit); the admin's own calls are not counted. `versions_per_day`: hosted
    versions one author may submit in a UTC day (0: no limit).
    """

    signup: str = "open"
    registration: str = "open"
    per_hour: int = 20
    versions_per_day: int = store_hosted.SUBMISSIONS_PER_DAY

    def check(self) -> Settings:
        """Self, or ValueError naming the setting at fault."""
        if self.signup not in store_authors.SIGNUP_MODES:
            raise ValueError(f"--signup: one of {', '.join(store_authors.SIGNUP_MODES)}")
        if self.registration not in ("open", "authors", "admin"):
            raise ValueError("--registration: one of open, authors, admin")
        if self.per_hour < 0:
            raise ValueError("--registrations-per-hour: 0 (no limit) or more")
        if self.versions_per_day < 0:
            raise ValueError("--versions-per-day: 0 (no limit) or more")
        return self


def limits_to_pb(limits: Limits) -> account_pb2.Limits:
    """Limits as a message."""
    return account_pb2.Limits(tests=limits.tests, pairs=limits.pairs,
                              house_cpu_s=limits.house_cpu_s)


def author_to_pb(author: AuthorRecord, bot_ids: list[str]) -> account_pb2.Author:
    """An author as a message (never the token's hash, the limits or who invited them)."""
    pb = account_pb2.Author(author_id=author.author_id, name=author.name,
                            organiser=author.organiser, bot_ids=bot_ids)
    pb.created_at.CopyFrom(wire.timestamp(author.created_at))
    return pb


def usage_of(r: redis.Redis, author: AuthorRecord) -> store_authors.Usage:
    """An author's use now (pairs in flight counted over their running tests)."""
    tests = store_changes.running_of(r, author.author_id)
    return store_authors.usage(r, author, tests, store_changes.pairs_in_flight(r, tests))


RANGE_FACTOR = 5  # an address range (IPv4 /24, IPv6 /56) may register this many times more


def throttle_address(r: redis.Redis, what: str, address: str, per_hour: int) -> None:
    """Count one registration from an address and from its range (`server.lanes.peer_range`:
    a host of many IPv6 addresses is one range), each with its allowance."""
    store_authors.throttle(r, what, address, per_hour)
    if per_hour:
        store_authors.throttle(r, what, peer_range(address), per_hour * RANGE_FACTOR)


def usage_to_pb(use: store_authors.Usage) -> account_pb2.Usage:
    """An author's use as a message."""
    pb = account_pb2.Usage(tests=use.tests, pairs=use.pairs, house_cpu_s=use.house_cpu_s,
                           test_ids=use.test_ids)
    pb.day_ends_at.CopyFrom(wire.timestamp(use.day_ends_at))
    return pb


def _public_author(r: redis.Redis, author: AuthorRecord, with_usage: bool = False
                   ) -> account_pb2.Author:
    """An author as anyone may read them (with what their tests take, if asked: one more
    look at each running test)."""
    pb = author_to_pb(author, [b.bot_id for b in store_bots.bots_of(r, author.author_id)])
    if with_usage:
        pb.usage.CopyFrom(usage_to_pb(usage_of(r, author)))
    return pb


class AccountServicer(account_pb2_grpc.AccountServiceServicer):
    """Thin: decode, call the store, encode."""

    def __init__(self, writes: Lane, reads: Lane, settings: Settings) -> None:
        self.writes = writes
        self.reads = reads
        self.settings = settings

    @unary
    async def SignUp(self, request: account_pb2.SignUpRequest,
                     context: grpc.aio.ServicerContext[Any, Any]) -> account_pb2.SignUpResponse:
        """A new author account, its token shown once."""
        who = caller()
        settings = self.settings

        def run(r: redis.Redis) -> tuple[AuthorRecord, str]:
            if not who.is_admin:
                throttle_address(r, "author", who.address, settings.per_hour)
            author, token = store_authors.sign_up(r, request.name, request.invitation,
                                                  settings.signup)
            audit.record(r, author.author_id, "sign_up", author.author_id,
                         f"name {author.name}" + (", invited" if request.invitation else ""),
                         who.address, [author.author_id])
            return author, token

        author, token = await self.writes.run(run)
        log.info("author %s signed up (%s)", author.name, author.author_id)
        return account_pb2.SignUpResponse(author=author_to_pb(author, []), token=token)

    @unary
    async def WhoAmI(self, request: account_pb2.WhoAmIRequest,
                     context: grpc.aio.ServicerContext[Any, Any]) -> account_pb2.WhoAmIResponse:
        """The caller's role and, for an author, their bots, limits and use."""
        who = caller()
        out = account_pb2.WhoAmIResponse(role=int(who.role))  # type: ignore[arg-type]
        if who.bot is not None:
            out.bot_id = who.bot.bot_id
        if who.author is not None:
            author = who.author

            def load(r: redis.Redis) -> tuple[account_pb2.Author, store_authors.Usage]:
                use = usage_of(r, author)
                pb = _public_author(r, author)
                pb.usage.CopyFrom(usage_to_pb(use))
                return pb, use

            pb, use = await self.reads.run(load)
            out.author.CopyFrom(pb)
            out.limits.CopyFrom(limits_to_pb(use.limits))
            out.usage.CopyFrom(pb.usage)
        return out

    @unary
    async def GetAuthor(self, request: account_pb2.GetAuthorRequest,
                        context: grpc.aio.ServicerContext[Any, Any]
                        ) -> account_pb2.GetAuthorResponse:
        """One author's public record."""
        if not request.author:
            raise InvalidArgument("author: required (an id or a name)")

        def load(r: redis.Redis) -> account_pb2.Author:
            return _public_author(r, store_authors.find_author(r, request.author), True)

        return account_pb2.GetAuthorResponse(author=await self.reads.run(load))

    @unary
    async def ListAuthors(self, request: account_pb2.ListAuthorsRequest,
                          context: grpc.aio.ServicerContext[Any, Any]
                          ) -> account_pb2.ListAuthorsResponse:
        """Authors, oldest first, a page at a time (the token: the last author's id)."""
        size = min(request.page_size or _PAGE, MAX_PAGE)

        def load(r: redis.Redis) -> tuple[list[account_pb2.Author], bool]:
            every = store_authors.list_authors(r)
            if request.page_token:
                at = [a.author_id for a in every]
                if request.page_token not in at:
                    raise InvalidArgument("page_token: not a token this server issued")
                every = every[at.index(request.page_token) + 1:]
            return [_public_author(r, a) for a in every[:size]], len(every) > size

        page, more = await self.reads.run(load)
        return account_pb2.ListAuthorsResponse(
            authors=page, next_page_token=page[-1].author_id if more and page else "")

    @unary
    async def CreateInvitation(self, request: account_pb2.CreateInvitationRequest,
                               context: grpc.aio.ServicerContext[Any, Any]
                               ) -> account_pb2.CreateInvitationResponse:
        """A one-use invitation code."""
        who = caller()
        ttl = request.ttl_s or store_authors.INVITATION_TTL_S

        def run(r: redis.Redis) -> tuple[str, float]:
            code, expires = store_authors.create_invitation(r, who.actor, ttl,
                                                            request.organiser)
            audit.record(r, who.actor, "invite", "",
                         f"expires {expires:.0f}" + (", organiser" if request.organiser
                                                      else ""), who.address)
            return code, expires

        code, expires = await self.writes.run(run)
        out = account_pb2.CreateInvitationResponse(invitation=code)
        out.expires_at.CopyFrom(wire.timestamp(expires))
        return out

    @unary
    async def SetRole(self, request: account_pb2.SetRoleRequest,
                      context: grpc.aio.ServicerContext[Any, Any]
                      ) -> account_pb2.SetRoleResponse:
        """Grant or take the organiser role."""
        who = caller()

        def run(r: redis.Redis) -> account_pb2.Author:
            author = store_authors.find_author(r, request.author)
            author = store_authors.set_organiser(r, author.author_id, request.organiser)
            audit.record(r, who.actor, "grant" if request.organiser else "revoke",
                         author.author_id, "organiser", who.address, [author.author_id])
            return _public_author(r, author)

        return account_pb2.SetRoleResponse(author=await self.writes.run(run))

    @unary
    async def SetLimits(self, request: account_pb2.SetLimitsRequest,
                        context: grpc.aio.ServicerContext[Any, Any]
                        ) -> account_pb2.SetLimitsResponse:
        """One author's limits, or the default; and the game slots all tests share."""
        who = caller()
        slots = request.test_slots if request.HasField("test_slots") else None
        if slots is not None and request.author:
            raise InvalidArgument("test_slots: a setting of the stack: give it without author")
        if not request.reset and not request.HasField("limits") and slots is None:
            raise InvalidArgument("limits: required (or reset, or test_slots)")
        limits = None if request.reset or not request.HasField("limits") else Limits(
            request.limits.tests, request.limits.pairs, request.limits.house_cpu_s).check()

        def run(r: redis.Redis) -> account_pb2.SetLimitsResponse:
            author_id = ""
            if request.author:
                author_id = store_authors.find_author(r, request.author).author_id
            if slots is not None:
                store_share.set_slots(r, slots)
                audit.record(r, who.actor, "set_test_slots", "stack", str(slots),
                             who.address, [])
            if request.reset or limits is not None:
                store_authors.set_limits(r, author_id, limits)
            now = (store_authors.limits_of(r, store_authors.get_author(r, author_id))
                   if author_id else store_authors.default_limits(r))
            if request.reset or limits is not None:
                audit.record(r, who.actor, "set_limits", author_id or "default",
                             now.to_json(), who.address, [author_id] if author_id else [])
            return account_pb2.SetLimitsResponse(
                limits=limits_to_pb(now), test_slots=store_share.slots_setting(r),
                worker_slots=store_share.worker_slots(r))

        return await self.writes.run(run)

    @unary
    async def AssignBot(self, request: account_pb2.AssignBotRequest,
                        context: grpc.aio.ServicerContext[Any, Any]
                        ) -> account_pb2.AssignBotResponse:
        """Give a bot to an author, or to no one."""
        who = caller()
        if not request.bot_id:
            raise InvalidArgument("bot_id: required")

        def run(r: redis.Redis) -> str:
            bot = store_bots.find_bot(r, request.bot_id)
            owner = store_authors.find_author(r, request.author).author_id if request.author \
                else ""
            before = bot.owner
            bot = store_bots.set_owner(r, bot.bot_id, owner)
            audit.record(r, who.actor, "assign_bot", bot.bot_id,
                         f"from {before or 'no one'} to {owner or 'no one'}", who.address,
                         [a for a in (before, owner) if a])
            return bot.owner

        return account_pb2.AssignBotResponse(author_id=await self.writes.run(run))

    @unary
    async def ListAudit(self, request: account_pb2.ListAuditRequest,
                        context: grpc.aio.ServicerContext[Any, Any]
                        ) -> account_pb2.ListAuditResponse:
        """The audit log, newest first: the admin any author's or the stack's, an author
        their own."""
        who = caller()
        size = min(request.page_size or _PAGE, MAX_PAGE)

        def load(r: redis.Redis) -> tuple[list[audit.Entry], str]:
            return audit.entries(r, _audit_subject(r, who, request.author),
                                 request.page_token, size)

        rows, token = await self.reads.run(load)
        out = account_pb2.ListAuditResponse(next_page_token=token)
        for e in rows:
            # An author's log holds what others (the admin) did to their account or bots:
            # the author sees what was done, not from where.
            shown = e.address if who.is_admin or e.actor == who.author_id else ""
            pb = out.entries.add(entry_id=e.entry_id, actor=e.actor, action=e.action,
                                 target=e.target, detail=e.detail, address=shown)
            pb.at.CopyFrom(wire.timestamp(e.at))
        return out


def _audit_subject(r: redis.Redis, who: Caller, asked: str) -> str:
    """Whose audit log a caller reads: the admin whom they ask ('' the stack's), an author
    their own (asking for another's is PermissionDenied)."""
    if who.role is Role.ADMIN:
        return store_authors.find_author(r, asked).author_id if asked else ""
    mine = who.author_id
    name = who.author.name.lower() if who.author else ""
    if asked and asked != mine and asked.lower() != name:  # names ignore case
        raise PermissionDenied("an author reads their own audit log only")
    return mine
