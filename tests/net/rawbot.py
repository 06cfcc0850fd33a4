"""A bot written only from the .proto files: the generated stubs and grpc, nothing of moonshot.

It imports no `moon` or `clients` code on purpose: it shows that a bot in any
language needs only `proto/moon/v1/*.proto`, and it records every PlayResponse
exactly as the referee sent it, for the tests to audit. Usable in-process
(`RawBot`) or as a process:

    python rawbot.py --server HOST:PORT --name NAME --out FILE [--matches N] [--policy first|high]

which registers the bot, prints `registered <bot_id>`, plays until N matches
have ended and appends each message received to FILE (4-byte big-endian length,
then the serialized PlayResponse).
"""

from __future__ import annotations

import argparse
import queue
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc

from proto.moon.v1 import bot_pb2, bot_pb2_grpc, game_pb2

DecisionRequest = bot_pb2.PlayResponse.DecisionRequest
Policy = Callable[[DecisionRequest], "int | None"]  # None: do not answer (yet)


def register(server: str, name: str) -> tuple[str, str]:
    """RegisterBot: (bot_id, token)."""
    with grpc.insecure_channel(server) as channel:
        resp = bot_pb2_grpc.BotServiceStub(channel).RegisterBot(
            bot_pb2.RegisterBotRequest(name=name), timeout=10)
    return resp.bot_id, resp.token


def first_legal(req: DecisionRequest) -> int:
    """The first legal action."""
    return req.legal_actions[0].id


def bid_high(req: DecisionRequest) -> int:
    """The highest bid short of the moon when bidding (so it wins auctions and sees the
    widow), else the first legal action."""
    bids = [a for a in req.legal_actions
            if a.kind == game_pb2.ACTION_KIND_BID and a.bid != 21]
    return max(bids, key=lambda a: a.bid).id if bids else req.legal_actions[0].id


POLICIES: dict[str, Policy] = {"first": first_legal, "high": bid_high}


class RawBot:
    """One Play stream; answers decision requests with `policy` when `auto` is on."""

    def __init__(self, server: str, token: str, policy: Policy = first_legal,
                 auto: bool = True, on_message: Callable[[bot_pb2.PlayResponse], None] | None
                 = None) -> None:
        self.server = server
        self.token = token
        self.policy = policy
        self.auto = auto
        self.on_message = on_message
        self.received: list[bot_pb2.PlayResponse] = []
        self.error: grpc.RpcError | None = None
        self.ended = False
        self._cond = threading.Condition()
        self._out: queue.Queue[bot_pb2.PlayRequest | None] = queue.Queue()
        self.channel = grpc.insecure_channel(server)
        self.call: grpc.Future | None = None  # type: ignore[type-arg]
        self.thread = threading.Thread(target=self._read, daemon=True)

    def start(self) -> RawBot:
        """Open the stream and start reading."""
        stub = bot_pb2_grpc.BotServiceStub(self.channel)
        self.call = stub.Play(self._requests(),
                              metadata=(("authorization", f"Bearer {self.token}"),))
        self.thread.start()
        return self

    def _requests(self) -> Iterator[bot_pb2.PlayRequest]:
        while True:
            item = self._out.get()
            if item is None:
                return
            yield item

    def _read(self) -> None:
        try:
            for msg in self.call:  # type: ignore[union-attr]
                if self.on_message is not None:
                    self.on_message(msg)
                with self._cond:
                    self.received.append(msg)
                    self._cond.notify_all()
                if self.auto and msg.WhichOneof("message") == "decision_request":
                    req = msg.decision_request
                    action = self.policy(req)
                    if action is not None:
                        self.send(req.request_id, action)
        except grpc.RpcError as exc:
            self.error = exc
        finally:
            with self._cond:
                self.ended = True
                self._cond.notify_all()

    def send(self, request_id: str, action_id: int) -> None:
        """Send a Decision."""
        self._out.put(bot_pb2.PlayRequest(
            decision=bot_pb2.PlayRequest.Decision(request_id=request_id, action_id=action_id)))

    def wait_for(self, pred: Callable[[bot_pb2.PlayResponse], bool],
                 timeout: float = 20.0, start: int = 0) -> bot_pb2.PlayResponse:
        """The first message received (from index `start`) that satisfies `pred`."""
        end = time.monotonic() + timeout
        with self._cond:
            while True:
                for msg in self.received[start:]:
                    if pred(msg):
                        return msg
                left = end - time.monotonic()
                if self.ended or left <= 0:
                    kinds = [m.WhichOneof("message") for m in self.received]
                    raise TimeoutError(f"no such message; got {kinds}; error {self.error}")
                self._cond.wait(left)

    def close(self) -> None:
        """End the stream."""
        self._out.put(None)
        if self.call is not None:
            self.call.cancel()
        self.thread.join(5)
        self.channel.close()


def main() -> int:
    """Register, play until `--matches` matches ended, record every message."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--matches", type=int, default=1)
    ap.add_argument("--policy", choices=sorted(POLICIES), default="first")
    args = ap.parse_args()
    bot_id, token = register(args.server, args.name)
    out = Path(args.out).open("ab")  # noqa: SIM115  # closed at exit
    ended: set[str] = set()
    all_ended = threading.Event()

    def record(msg: bot_pb2.PlayResponse) -> None:
        data = msg.SerializeToString()
        out.write(struct.pack(">I", len(data)) + data)
        out.flush()
        if msg.WhichOneof("message") == "match_ended":
            ended.add(msg.match_ended.match_id)
            if len(ended) >= args.matches:
                all_ended.set()

    bot = RawBot(args.server, token, POLICIES[args.policy], on_message=record).start()
    bot.wait_for(lambda m: m.WhichOneof("message") == "welcome")
    print(f"registered {bot_id}; connected to {args.server}", flush=True)
    while not all_ended.wait(0.2):
        if bot.ended:
            print(f"stream ended: {bot.error}", flush=True)
            return 1
    bot.close()
    out.close()
    print(f"done: {len(ended)} matches", flush=True)
    return 0


def read_records(path: str | Path) -> list[bot_pb2.PlayResponse]:
    """The messages a `--out` file holds, in order."""
    data = Path(path).read_bytes()
    msgs, i = [], 0
    while i < len(data):
        (n,) = struct.unpack(">I", data[i:i + 4])
        msgs.append(bot_pb2.PlayResponse.FromString(data[i + 4:i + 4 + n]))
        i += 4 + n
    return msgs


if __name__ == "__main__":
    sys.exit(main())
