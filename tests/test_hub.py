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
from server.bots import BotServicer
from server.hub import Hub, accept_args
from server.lanes import lane
from store import bots as store
from store import keys, messages
from store.lua import ACCEPT_LUA


class Aborted(Exception):
    """What the fake context raises where grpc would end the call."""


class FakeContext:
    """Just enough of a grpc.aio.ServicerContext for Play."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.code: grpc.StatusCode | None = None

    def invocation_metadata(self) -> list[tuple[str, str]]:
        return [("authorization", f"Bearer {self.token}")]

    async def abort(self, code: grpc.StatusCode, message: str) -> None:
        self.code = code
        raise Aborted(message)


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
