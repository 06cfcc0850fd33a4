"""The SDK's writer outlives the end of its stream: a write that races the RPC's end must
not take the bot process down (the read side ends the session and reconnects)."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from clients.builtin import RandomBot
from clients.sdk import BotRunner
from proto.moon.v1 import bot_pb2


class _Finished:
    """A stream whose RPC has ended: every write fails as grpc.aio's does then."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.writes = 0

    async def write(self, _: bot_pb2.PlayRequest) -> None:
        self.writes += 1
        raise self.error


@pytest.mark.parametrize("error", [
    asyncio.InvalidStateError("RPC already finished."),
    grpc.aio.UsageError("write after done_writing"),
])
def test_a_write_after_the_stream_ended_is_dropped(error: BaseException) -> None:
    async def run() -> int:
        runner = BotRunner(RandomBot, "127.0.0.1:1", "t")
        call = _Finished(error)
        outbox: asyncio.Queue[bot_pb2.PlayRequest] = asyncio.Queue()
        for _ in range(3):
            outbox.put_nowait(bot_pb2.PlayRequest())
        writer = asyncio.create_task(runner._write(call, outbox))  # type: ignore[arg-type]
        while call.writes < 3 and not writer.done():
            await asyncio.sleep(0.01)
        assert not writer.done(), writer.exception()  # it did not die on the error
        writer.cancel()
        return call.writes

    assert asyncio.run(run()) == 3
