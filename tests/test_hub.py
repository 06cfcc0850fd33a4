"""The referee's hub and Play stream against a real Redis, driven by hand (no gRPC server)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError

from clients.redisproc import RedisServer
from server.access import Gate
from server.bots import BotServicer
from server.hub import Hub, Stream, accept_args
from server.lanes import lane
from store import bots as store
from store import hosted, ids, keys, messages
from store.lua import ACCEPT_LUA
from store.runs import Run


class Aborted(Exception):
    """What the fake context raises where grpc would end the call."""


class FakeContext:
    """Just enough of a grpc.aio.ServicerContext for Play."""

    def __init__(self, token: str, *extra: tuple[str, str]) -> None:
        self.token = token
        self.extra = extra
        self.code: grpc.StatusCode | None = None

    def invocation_metadata(self) -> list[tuple[str, str]]:
        return [("authorization", f"Bearer {self.token}"), *self.extra]

    async def abort(self, code: grpc.StatusCode, message: str) -> None:
        self.code = code
        raise Aborted(message)

    def peer(self) -> str:
        return "ipv4:127.0.0.1:5555"


async def _admitted(lanes: tuple[Any, Any], ctx: FakeContext) -> None:
    """What the referee's gate does before Play runs: the caller, from the token (set for
    this task, in which the test then drives Play)."""
    await Gate(*lanes).authorize("/moon.v1.BotService/Play", ctx)  # type: ignore[arg-type]


async def _silent() -> AsyncIterator[Any]:
    await asyncio.Event().wait()
    yield None  # never reached


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        yield srv.url


def test_a_stream_whose_attach_fails_leaves_the_hub(url: str) -> None:
    r = store.connect(url)
    record, token = store.register_bot(r, "hubbot")

    async def scenario() -> None:
        hub = Hub(aioredis.Redis.from_url(url, decode_responses=True), url)
        await hub.start()
        try:
            async def fail(*args: Any, **kwargs: Any) -> Any:
                raise RedisConnectionError("Redis went away")

            hub.r.publish = fail  # type: ignore[method-assign]  # after the stream joined
            ctx = FakeContext(token)
            lanes = lane("bots", url, 2), lane("reads", url, 2)
            await _admitted(lanes, ctx)
            play = BotServicer(*lanes, hub).Play(_silent(), ctx)  # type: ignore[arg-type]
            welcome = await play.__anext__()
            assert not isinstance(welcome, bytes) and welcome.welcome.bot_id == record.bot_id
            with pytest.raises(Aborted):
                await play.__anext__()
            assert ctx.code == grpc.StatusCode.UNAVAILABLE
            assert hub.streams == {}  # not left subscribed and refreshed as present forever
            assert not store.is_connected(r, record.bot_id)
        finally:
            await hub.stop()

    asyncio.run(scenario())


def test_an_accepted_answer_is_stored_as_json_with_one_stamp(url: str) -> None:
    r = store.connect(url)
    rid = "m-0123456789ab/4"
    r.hset(keys.pending("b-0123456789ab"), rid, "{}")
    k, argv = accept_args("b-0123456789ab", rid, 17)
    assert r.eval(ACCEPT_LUA, 2, *k, *argv) == 1
    assert r.eval(ACCEPT_LUA, 2, *k, *argv) == 0  # answered already: nothing changes

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        names = [name for name, _ in pairs]
        assert len(names) == len(set(names)), f"duplicate keys in {names}"
        return dict(pairs)

    stored = r.lrange(keys.replies("m-0123456789ab"), 0, -1)
    assert len(stored) == 1
    as_sent = json.loads(stored[0], object_pairs_hook=no_duplicates)
    sec, usec = r.time()
    assert 0 < (int(sec) * 10**6 + int(usec)) - as_sent["at_us"] < 10 * 10**6
    reply = messages.decode_as(stored[0], messages.REPLY, messages.Reply)
    assert (reply.request_id, reply.action_id, reply.bot_id) == (rid, 17, "b-0123456789ab")
    assert reply.at_us == as_sent["at_us"]


def _started(match_id: str) -> messages.MatchStarted:
    return messages.MatchStarted(match_id, 0, 3, {}, ["a", "b", "c"])


def test_a_stream_gets_the_logged_events_after_its_cursor_then_what_is_pending(
        url: str) -> None:
    r = store.connect(url)
    record, _ = store.register_bot(r, "eventbot")
    bot = record.bot_id
    run = Run(r, "m-000000000001", "run-1")
    assert run.acquire()
    for k in range(3):
        run.tell(bot, _started(f"m-00000000000{k + 1}"))
    logged = r.xrange(keys.inbox(bot))
    assert [e["e"] for _, e in logged] == [
        messages.encode(_started(f"m-00000000000{k + 1}")) for k in range(3)]
    first, second, third = (entry_id for entry_id, _ in logged)
    request = messages.DecisionRequest("m-000000000001/0", "m-000000000001", 0, {}, [1],
                                       1000, 0, 0, 0)
    r.hset(keys.pending(bot), request.request_id, messages.encode(request))

    async def scenario() -> None:
        hub = Hub(aioredis.Redis.from_url(url, decode_responses=True), url)
        await hub.start()
        try:
            resumed = Stream(bot)
            await hub.attach(resumed, first)
            got = [resumed.outbox.get_nowait() for _ in range(3)]
            assert [(type(e).__name__, getattr(e, "event_id", "")) for e in got] == [
                ("Logged", second), ("Logged", third), ("DecisionRequest", "")]
            assert resumed.outbox.empty()
            resumed.push(got[0])  # an event it has already had is dropped
            assert resumed.outbox.empty()
            run.tell(bot, _started("m-000000000009"))  # a new one, over the channel
            new = await asyncio.wait_for(resumed.outbox.get(), 5)
            assert isinstance(new, messages.Logged)
            assert new.message() == _started("m-000000000009")
            assert ids.parse_event_id(new.event_id) > ids.parse_event_id(third)  # type: ignore[operator]
            # A stream that names no cursor gets what is pending, and events from now on.
            fresh = Stream(bot)
            await hub.attach(fresh)
            assert isinstance(fresh.outbox.get_nowait(), messages.DecisionRequest)
            assert fresh.outbox.empty()
        finally:
            await hub.stop()

    asyncio.run(scenario())


def test_play_refuses_a_malformed_cursor_and_lists_the_matches_under_way(url: str) -> None:
    r = store.connect(url)
    record, token = store.register_bot(r, "cursorbot")
    r.sadd(keys.bot_live(record.bot_id), "m-000000000007")

    async def scenario() -> None:
        hub = Hub(aioredis.Redis.from_url(url, decode_responses=True), url)
        await hub.start()
        lanes = lane("bots", url, 2), lane("reads", url, 2)
        try:
            bad = FakeContext(token, ("moonshot-last-event-id", "12-x"))
            await _admitted(lanes, bad)
            play = BotServicer(*lanes, hub).Play(_silent(), bad)  # type: ignore[arg-type]
            with pytest.raises(Aborted, match="moonshot-last-event-id"):
                await play.__anext__()
            assert bad.code == grpc.StatusCode.INVALID_ARGUMENT
            good = FakeContext(token, ("moonshot-last-event-id", "12-0"))
            await _admitted(lanes, good)
            play = BotServicer(*lanes, hub).Play(_silent(), good)  # type: ignore[arg-type]
            welcome = await play.__anext__()
            assert not isinstance(welcome, bytes)
            assert list(welcome.welcome.live_matches.match_ids) == ["m-000000000007"]
            await play.aclose()
        finally:
            await hub.stop()

    asyncio.run(scenario())


def test_events_published_while_the_hub_lost_its_pub_sub_connection_still_arrive(
        url: str) -> None:
    r = store.connect(url)
    record, _ = store.register_bot(r, "outagebot")
    bot = record.bot_id
    run = Run(r, "m-000000000001", "run-1")
    assert run.acquire()

    async def scenario() -> None:
        hub = Hub(aioredis.Redis.from_url(url, decode_responses=True), url)
        await hub.start()
        try:
            stream = Stream(bot)
            await hub.attach(stream)
            gate = asyncio.Event()
            subscribe = hub._subscribe_all

            async def late_subscribe() -> Any:
                await gate.wait()
                return await subscribe()

            hub._subscribe_all = late_subscribe  # type: ignore[method-assign]
            assert r.client_kill_filter(_type="pubsub") >= 1  # the hub's connection
            await asyncio.sleep(0.3)
            assert stream.held is not None  # the hub is reconnecting: the stream waits
            run.tell(bot, _started("m-000000000002"))  # nobody is subscribed now
            stream.deliver(messages.LivenessPing(7))  # pings do not wait
            assert isinstance(stream.outbox.get_nowait(), messages.LivenessPing)
            gate.set()
            got = await asyncio.wait_for(stream.outbox.get(), 5)
            assert isinstance(got, messages.Logged)
            assert got.message() == _started("m-000000000002")
            for _ in range(50):  # then what waited goes out, and nothing waits any more
                if stream.held is None:
                    break
                await asyncio.sleep(0.02)
            assert stream.held is None and stream.outbox.empty()
        finally:
            await hub.stop()

    asyncio.run(scenario())


def test_a_sandboxs_own_stream_is_told_from_its_authors_process(url: str) -> None:
    """A host asks whether a stream of its bot was opened with another token than its
    sandbox's (`connected_besides`): the sandbox's own stream, which outlives a crash for
    a moment, is not another; the author's process, with the version's token, is."""
    r = store.connect(url)
    record, token = store.register_bot(r, "sandboxed")
    bot = record.bot_id
    sandbox = store.token_hash(hosted.issue_host_token(r, bot))
    author = store.token_hash(token)
    assert sandbox != author and store.stream_prefix(sandbox) != store.stream_prefix(author)

    async def scenario() -> None:
        hub = Hub(aioredis.Redis.from_url(url, decode_responses=True), url)
        await hub.start()
        try:
            own = Stream(bot, sandbox)
            assert own.id.startswith(store.stream_prefix(sandbox))
            await hub.attach(own)
            assert store.is_connected(r, bot)
            assert not store.connected_besides(r, bot, sandbox)  # only its own stream
            assert store.connected_besides(r, bot, author)
            theirs = Stream(bot, author)
            await hub.attach(theirs)
            assert store.connected_besides(r, bot, sandbox)  # the author's process plays
            await hub.detach(theirs)
            await hub.detach(own)
            assert not store.is_connected(r, bot)
            assert not store.connected_besides(r, bot, sandbox)
            assert not store.connected_besides(r, bot, author)
            # Without a hash to tell them apart, any live stream counts.
            await hub.attach(Stream(bot, sandbox))
            assert store.connected_besides(r, bot, "")
        finally:
            await hub.stop()

    asyncio.run(scenario())
