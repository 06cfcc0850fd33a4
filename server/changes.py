"""TestService: authors (and the admin) start and stop tests of a change; anyone may follow
them. Which tests an author may start: their own bots as candidate and baseline (a house
bot may be the baseline), house opponents, within their limits (`store.authors.Limits`)."""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc
import redis

from archive.reads import ArchivedEvent
from moon import MoonError, Rules
from proto.moon.v1 import change_pb2, change_pb2_grpc
from server import change_wire
from server.access import Caller, caller, check_owner
from server.accounts import usage_of
from server.archived import Archived, info_of
from server.edge import (
    ARCHIVE_TOP,
    MAX_PAGE,
    archive_token,
    bearer_token,
    page_of,
    streaming,
    unary,
    watch_pass,
)
from server.follow import follow
from server.lanes import Lane, WatchGate
from store import audit, events, ids, keys, messages
from store import authors as store_authors
from store import bots as store_bots
from store import changes as store_changes
from store import groups as store_groups
from store import hosted as store_hosted
from store import matches as store_matches
from store import tournaments as store_t
from store.bots import BotRecord
from store.changes import ChangeTestSpec
from store.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    OutOfRange,
    PermissionDenied,
    ResourceExhausted,
)
from store.messages import Message, PairCounted, PairVoided, TournamentFinished, WaitingChanged
from store.records import check_seating
from store.refs import EventKind, EventRef
from store.status import TournamentStatus
from tournaments import apart
from tournaments.change import ChangeSpec, board_games
from workers.queues import create_test, request_step

__all__ = ["TestServicer"]

_PAGE = 50
_PAIRS_PAGE = 10_000
_WATCH_POLL_S = 0.25
_DEFAULT_OPPONENT = "house:greedy"


def _test(r: redis.Redis, test_id: str, reveal_to_organiser: bool) -> change_pb2.Test:
    """A stored test as a message, the seed shown to organisers or once it is over."""
    test = store_changes.load_spec(r, test_id)
    sequence = events.newest_seq(r, test_id)  # first: what is read after is no older
    info = store_t.info(r, test_id)
    reveal = reveal_to_organiser or info.status == TournamentStatus.FINISHED
    pb = change_wire.test_to_pb(test, info, store_t.state(r, test_id), reveal,
                                store_changes.stop_asked(r, test_id))
    pb.sequence = sequence
    pb.author_id = test.author
    pb.stopped_by = store_changes.stopped_by(r, test_id)
    return pb


def _archived_test(e: ArchivedEvent, reveal_to_organiser: bool) -> change_pb2.Test:
    """An ended test the archive holds, as a message (as `_test` gives a stored one)."""
    test = ChangeTestSpec.from_json(e.spec)
    info = info_of(e)
    reveal = reveal_to_organiser or info.status == TournamentStatus.FINISHED
    stop = bool((e.summary.get("info") or {}).get("stop"))
    pb = change_wire.test_to_pb(test, info, e.state, reveal, stop)
    stream = e.summary.get("stream") or []
    pb.sequence = int(stream[-1][0]) if stream else 0
    pb.author_id = test.author
    pb.stopped_by = str((e.summary.get("info") or {}).get("stopped_by") or "")
    return pb


def _offline(r: redis.Redis, test: ChangeTestSpec) -> list[str]:
    """The names of the test's remote bots (C, B, opponents) not connected now."""
    spec = ChangeSpec.from_json(test.plan)
    bots = list(dict.fromkeys((spec.candidate, spec.baseline, *spec.opponents)))
    return [test.name_of(b) for b in store_changes.offline(r, bots)]


def _keep_apart(r: redis.Redis, candidate: BotRecord, baseline: BotRecord,
                opponents: Sequence[BotRecord]) -> None:
    """A remote opponent sits at both tables of every board, so none may share an author or
    a group of the stack with C, B or the other opponent (`tournaments.apart`). C and B
    themselves are the author's pair by design: they hold one seat's hand at their two
    tables, and a leak between them biases only the author's own verdict."""
    remote = [o for o in opponents if not o.house]
    if not remote:
        return
    bots = {b.bot_id: b for b in (candidate, baseline, *opponents)}
    stack = store_groups.all_groups(r)
    groups = apart.resolve({b: x.owner for b, x in bots.items()},
                           {apart.stack_name(n): tuple(v) for n, v in stack.items()})
    member = apart.membership(groups)
    for o in remote:
        for other in bots.values():
            common = member.get(o.bot_id, frozenset()) & member.get(other.bot_id, frozenset())
            if other.bot_id != o.bot_id and common:
                shared = ", ".join(sorted(groups[g].name for g in common))
                raise InvalidArgument(f"spec.opponents: {o.name} and {other.name} are of one "
                                      f"group ({shared}) and would sit at tables of one "
                                      "board; choose another opponent")


def _checked(r: redis.Redis, fields: dict[str, Any], test_id: str, seed: int, who: Caller
             ) -> ChangeTestSpec:
    """Every check of a new test, bots looked up; nothing is written (InvalidArgument
    naming the field; PermissionDenied for an author's test of bots not theirs)."""
    players = fields["players"]
    need = 2 if players == 3 else 3
    named = fields["opponents"] or [_DEFAULT_OPPONENT] * need
    candidate = store_bots.resolve(r, [fields["candidate"]], "spec.candidate")[0]
    if not fields["baseline"]:
        if not candidate.previous:
            raise InvalidArgument(f"spec.baseline: required: {candidate.name} has no previous "
                                  "version to default to (moonshot bot version, or name one)")
        fields = {**fields, "baseline": candidate.previous}
    baseline = store_bots.resolve(r, [fields["baseline"]], "spec.baseline")[0]
    opponents = store_bots.resolve(r, named, "spec.opponents")
    if who.author is not None:  # an author's pairs in flight are bounded by their limit
        pairs = store_authors.limits_of(r, who.author).pairs
        if pairs < 1:
            raise ResourceExhausted("pairs in flight: your limit is 0 (the admin sets it): "
                                    "no test of yours can start")
        fields = {**fields, "in_flight": min(fields["in_flight"], pairs)}
    if not who.is_admin:
        check_owner(who, candidate, "spec.candidate:")
        if not baseline.house:
            check_owner(who, baseline, "spec.baseline:")
        away = [o.name for o in opponents if not o.house]
        if away or fields["trust_opponents"]:
            raise PermissionDenied("spec.opponents: an author's test plays house opponents "
                                   f"only (house:greedy, house:pimc, ...), not {', '.join(away)}"
                                   if away else "spec.trust_opponents: the admin's option")
    _keep_apart(r, candidate, baseline, opponents)
    try:
        rules = Rules.make(players, fields["rules"])
    except MoonError as exc:
        raise InvalidArgument(f"spec.rules: {exc}") from None
    spec = ChangeSpec(
        test_id=test_id, players=players, candidate=candidate.bot_id,
        baseline=baseline.bot_id, opponents=tuple(b.bot_id for b in opponents), seed=seed,
        elo0=fields["elo0"], elo1=fields["elo1"], alpha=fields["alpha"], beta=fields["beta"],
        max_games=fields["max_games"], fixed_games=fields["fixed_games"],
        in_flight=fields["in_flight"], trust_opponents=fields["trust_opponents"],
        void_streak=fields["void_streak"], void_share=fields["void_share"],
        void_after=fields["void_after"])
    for board in range(8):  # every seating of C and of B (3p rotates over six, 2v2 eight)
        for game in board_games(spec, board, lambda _: 0):
            check_seating(players, game.bot_ids)
    names = {b.bot_id: b.name for b in (candidate, baseline, *opponents)}
    name = fields["name"] or f"{candidate.name} vs {baseline.name}"
    store_hosted.check_within_hosts(r, fields["sandbox"], "spec.sandbox")
    return ChangeTestSpec(test_id=test_id, name=name, plan=spec.to_json(), rules=rules,
                          clock=fields["clock"], faults=fields["faults"],
                          names=tuple(names.items()), author=who.author_id,
                          sandbox=fields["sandbox"])


def _create(r: redis.Redis, rq_conn: redis.Redis, test: ChangeTestSpec, who: Caller) -> None:
    """Store and start a checked test, an author's within their limits (ResourceExhausted
    saying what is used and when it frees; nothing created)."""
    if who.author is None:
        _start(r, rq_conn, test, who)
        return
    with store_authors.exclusive(r, who.author.author_id):  # check and create as one
        store_authors.count_change(r, who.author.author_id)
        use = usage_of(r, who.author)
        if use.tests >= use.limits.tests:
            raise ResourceExhausted(
                f"tests at once: {use.tests} of your {use.limits.tests} are running "
                f"({', '.join(use.test_ids)}); one frees when a test finishes or you stop it "
                "(moonshot test stop ID)")
        if use.house_cpu_s >= use.limits.house_cpu_s:
            frees = time.strftime("%H:%M UTC", time.gmtime(use.day_ends_at))
            raise ResourceExhausted(
                f"house-bot CPU: your tests used {use.house_cpu_s:.0f} s of your "
                f"{use.limits.house_cpu_s:.0f} s today; it frees at {frees}")
        _start(r, rq_conn, test, who)


def _start(r: redis.Redis, rq_conn: redis.Redis, test: ChangeTestSpec, who: Caller) -> None:
    create_test(r, rq_conn, test)
    audit.record(r, who.actor, "start_test", test.test_id, test.name, who.address,
                 [test.author] if test.author else [])


class TestServicer(change_pb2_grpc.TestServiceServicer):
    """Thin: decode, call `store` (and the planner's checks), encode."""

    def __init__(self, reads: Lane, watch: Lane, rq_conn: redis.Redis, gate: WatchGate,
                 archived: Archived | None = None) -> None:
        self.reads = reads
        self.watch = watch
        self.rq_conn = rq_conn
        self.gate = gate
        self.archived = archived or Archived("")  # tests that ended and left Redis

    async def _ended(self, lane: Lane, test_id: str) -> ArchivedEvent | None:
        """The archived record of a test Redis no longer holds (NotFound for none)."""
        try:
            await lane.run(store_changes.load_spec, test_id)
            return None
        except NotFound as missing:
            try:  # an id of no possible test (`c-abc:events`) is not one: NOT_FOUND
                ref = EventRef.test(test_id)
            except InvalidArgument:
                raise missing from None
            found = await lane.run(lambda _r: self.archived.event(ref))
            if found is None:
                raise
            return found

    async def _get(self, lane: Lane, test_id: str, organiser: bool) -> change_pb2.Test:
        """A test as a message, from Redis or from the archive."""
        ended = await self._ended(lane, test_id)
        if ended is not None:
            return _archived_test(ended, organiser)
        return await lane.run(_test, test_id, organiser)

    @staticmethod
    def _id(test_id: str) -> str:
        if not test_id:
            raise InvalidArgument("test_id: required")
        return test_id

    @unary
    async def CreateTest(
        self, request: change_pb2.CreateTestRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> change_pb2.CreateTestResponse:
        """Check everything, store the test and queue its first step (an author's own
        bots within their limits, or the admin's any)."""
        who = caller()
        if not request.HasField("spec"):
            raise InvalidArgument("spec: required")
        fields = change_wire.spec_request_from_pb(request.spec)
        test_id = ids.new_test_id()
        if fields["seed"] is not None and not who.is_admin:
            raise PermissionDenied("spec.seed: the admin's option (a chosen seed could be "
                                   "chosen to flatter a candidate)")
        seed = secrets.randbits(63) if fields["seed"] is None else fields["seed"]
        spec = await self.reads.run(_checked, fields, test_id, seed, who)
        offline = await self.reads.run(_offline, spec)
        if offline and request.require_online:
            raise FailedPrecondition(
                f"require_online: not connected now: {', '.join(offline)}; nothing created "
                "(start them with moonshot bot run)")
        await self.reads.run(_create, self.rq_conn, spec, who)
        test = await self.reads.run(_test, test_id, who.is_admin)
        return change_pb2.CreateTestResponse(test_id=test_id, test=test, offline=offline)

    @unary
    async def GetTest(
        self, request: change_pb2.GetTestRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> change_pb2.GetTestResponse:
        """A test with its progress, and its counted pairs if asked."""
        test_id = self._id(request.test_id)
        ended = await self._ended(self.reads, test_id)
        organiser = caller().is_admin
        test = (_archived_test(ended, organiser) if ended is not None
                else await self.reads.run(_test, test_id, organiser))
        resp = change_pb2.GetTestResponse(test=test)
        if request.with_pairs:
            start = request.pairs_after
            pairs = (list(ended.summary.get("pairs") or [])[start:start + _PAIRS_PAGE + 1]
                     if ended is not None else
                     await self.reads.run(store_changes.pairs, test_id, start, _PAIRS_PAGE + 1))
            resp.pairs.extend(change_wire.pair_to_pb(p) for p in pairs[:_PAIRS_PAGE])
            if len(pairs) > _PAIRS_PAGE:
                resp.next_pairs_after = start + _PAIRS_PAGE
        return resp

    @unary
    async def ListTests(
        self, request: change_pb2.ListTestsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> change_pb2.ListTestsResponse:
        """Tests, newest first, a page at a time (those of one status, or those one author
        started: NotFound for an unknown author)."""
        size = min(request.page_size or _PAGE, MAX_PAGE)
        status = change_wire.status_name(request.status)
        organiser = caller().is_admin

        def load(r: redis.Redis) -> tuple[list[change_pb2.Test], str]:
            """Redis's tests (running, or ended and not archived yet), newest first, then
            the archive's."""
            token = request.page_token
            author = (store_authors.find_author(r, request.author).author_id
                      if request.author else "")

            def wanted(tid: str) -> bool:
                if status and store_t.info(r, tid).status != status:
                    return False
                if not author:
                    return True
                try:
                    return store_changes.load_spec(r, tid).author == author
                except NotFound:  # moved to the archive since it was listed
                    return False

            out: list[change_pb2.Test] = []
            before = archive_token(token)
            if before is None:
                found = store_matches.ids_after(r, keys.TESTS, token, newest_first=True)
                tests = (_test(r, tid, organiser) for tid in found if wanted(tid))
                page, more = page_of(tests, size)
                if more:
                    return page, store_matches.page_token(r, keys.TESTS, page[-1].test_id)
                out = list(page)
            room = size - len(out)
            archived = self.archived.events(EventKind.TEST, before, room + 1, author=author)
            ended, more = archived[:room], len(archived) > room
            listed = {t.test_id for t in out}  # in both stores: a move cut short
            out += [_archived_test(e, organiser) for e in ended
                    if (not status or e.status == status) and e.ref.id not in listed]
            if not more:
                return out, ""
            return out, f"a:{ended[-1].id if ended else ARCHIVE_TOP}"

        page, token = await self.reads.run(load)
        return change_pb2.ListTestsResponse(tests=page, next_page_token=token)

    @unary
    async def StopTest(
        self, request: change_pb2.StopTestRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> change_pb2.StopTestResponse:
        """Start no new pair; the pairs in flight finish and count (the test's author or
        the admin)."""
        who = caller()
        test_id = self._id(request.test_id)
        ended = await self._ended(self.reads, test_id)  # NotFound first
        spec = ChangeTestSpec.from_json(ended.spec) if ended is not None else \
            await self.reads.run(store_changes.load_spec, test_id)
        if not who.is_admin and (not spec.author or spec.author != who.author_id):
            raise PermissionDenied(f"test {test_id} was started by "
                                   f"{'the admin' if not spec.author else 'another author'}:"
                                   " only they (or the admin) may stop it")
        if ended is not None:
            raise FailedPrecondition(f"test {test_id} is {ended.status} already")
        info = await self.reads.run(store_t.info, test_id)
        if info.status.over:
            raise FailedPrecondition(f"test {test_id} is {info.status} already")

        def stop(r: redis.Redis) -> None:
            if who.author_id:
                store_authors.count_change(r, who.author_id)
            store_changes.ask_stop(r, test_id, who.actor)
            audit.record(r, who.actor, "stop_test", test_id, spec.name, who.address,
                         [spec.author] if spec.author else [])

        await self.reads.run(stop)
        await self.reads.run(request_step, self.rq_conn, EventRef.test(test_id))
        return change_pb2.StopTestResponse(
            test=await self.reads.run(_test, test_id, who.is_admin))

    @streaming
    async def WatchTest(
        self, request: change_pb2.WatchTestRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[change_pb2.WatchTestResponse]:
        """Every event after `after_sequence`, then live ones, until the test ends."""
        trusted = await self.watch.run(store_bots.trusted_watcher, bearer_token(context),
                                       watch_pass(context))
        with self.gate.enter(context.peer(), trusted):
            async for item in self._watch(request, context):
                yield item

    async def _watch(
        self, request: change_pb2.WatchTestRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[change_pb2.WatchTestResponse]:
        test_id = self._id(request.test_id)
        ended = await self._ended(self.watch, test_id)  # NotFound first
        organiser = caller().is_admin
        after = request.after_sequence
        if ended is not None:  # ended and archived: its stream, whole
            stream = [(seq, messages.decode(e, messages.TOURNAMENT))
                      for seq, e in ended.stream()]
            newest = stream[-1][0] if stream else 0
        else:
            newest = await self.watch.run(events.newest_seq, test_id)
        if after > newest:
            raise OutOfRange(f"after_sequence: {after} is past the test's last event so "
                             f"far, {newest}")

        async def read(after: int) -> list[tuple[int, Message]]:
            # One stream for everyone: a test's public events are all there is (results
            # come with their boards; organisers read a game live with WatchMatch).
            if ended is not None:
                return [(seq, e) for seq, e in stream if seq > after][:200]
            return await self.watch.run(events.read_after, test_id, after, None, 200)

        async def over() -> bool:
            return (await self.watch.run(store_t.info, test_id)).status.over

        async for batch in follow(read, after, _is_end, over, _WATCH_POLL_S):
            test = None
            if any(isinstance(e, (PairCounted, PairVoided, WaitingChanged, TournamentFinished))
                   for _, e in batch):
                test = await self._get(self.watch, test_id, organiser)
            for seq, event in batch:
                pb = change_wire.test_event_to_pb(seq, event, test)
                if pb is not None:
                    yield pb


def _is_end(event: Message) -> bool:
    return isinstance(event, TournamentFinished)
