"""Hosted versions on the command line: `moonshot bot submit NAME DIR` packs a folder and
uploads it (the author's login token) as the next version of the line NAME, and
`moonshot bot show NAME` prints a bot's record with its hosted status (and, for its
owner, the tail of its sandbox's log).

The folder is checked here before a byte is sent (`hosting.package.pack`: the manifest,
the limits), so a missing folder, a folder without `moonshot.toml` or one over the
limits is one line at once, not an upload the referee refuses.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import grpc

from clients.accounts import _bots, _call, _meta, _when, user_token
from clients.channel import Target
from clients.commands import _admin_flag, _rpc_error, _server_flag, server_target
from clients.parser import CommandError, Parser
from hosting.package import PackageError, pack
from proto.moon.v1 import bot_pb2, bot_pb2_grpc

__all__ = ["CHUNK", "add_commands", "requests"]

CHUNK = 256 << 10  # bytes of one upload message (the referee takes up to 1 MiB)
WAIT_POLL_S = 1.0

_STATUS: dict[int, str] = {bot_pb2.VERSION_STATUS_BUILDING: "building",
           bot_pb2.VERSION_STATUS_VALIDATING: "validating",
           bot_pb2.VERSION_STATUS_ACTIVE: "active",
           bot_pb2.VERSION_STATUS_FAILED: "failed"}


def status_name(status: int) -> str:
    """A version status as a word."""
    return _STATUS.get(status, "unknown")


def requests(line: str, data: bytes, chunk: int = CHUNK
             ) -> Iterator[bot_pb2.SubmitVersionRequest]:
    """The SubmitVersion stream of a package: its header, then its bytes in chunks."""
    yield bot_pb2.SubmitVersionRequest(header=bot_pb2.SubmitVersionRequest.Header(
        line=line, size=len(data), sha256=hashlib.sha256(data).hexdigest()))
    for start in range(0, len(data), chunk):
        yield bot_pb2.SubmitVersionRequest(chunk=data[start:start + chunk])


def _run_bot_submit(args: argparse.Namespace) -> int:
    try:
        data = pack(Path(args.dir))
    except PackageError as exc:
        raise CommandError(f"moonshot bot submit: {exc}") from None
    token = user_token(args)
    target = server_target(args)
    channel, stub = _bots(target)
    with channel:
        try:
            resp = stub.SubmitVersion(requests(args.name, data), metadata=_meta(token),
                                      timeout=300)
        except grpc.RpcError as exc:
            raise _rpc_error(exc, target) from None
        bot = resp.bot
        if args.json:
            print(json.dumps({"bot_id": bot.bot_id, "name": bot.name, "token": resp.token,
                              "digest": bot.hosted.digest, "size": bot.hosted.size,
                              "runtime": bot.hosted.runtime,
                              "status": status_name(bot.hosted.status)}), flush=True)
        else:
            print(f"version: {bot.name} ({bot.bot_id})")
            print(f"package: sha256 {bot.hosted.digest}, {bot.hosted.size} bytes, "
                  f"{bot.hosted.runtime}: {' '.join(bot.hosted.command)}")
            print(f"status:  {status_name(bot.hosted.status)}")
            print(f"token:   {resp.token}")
            print("The token is shown only once: the stack runs the version itself; keep it "
                  "to connect a process of your own to debug (moonshot bot run --token ...).")
            print(f"Next: moonshot bot show {bot.name}   (its status, its log)")
            if bot.previous_id:
                print(f"      moonshot test start {bot.name}   (against the version before)")
        if not args.wait:
            return 0
        return _wait(target, stub, bot.bot_id, token, args.timeout, args.json)


def _wait(target: Target, stub: bot_pb2_grpc.BotServiceStub, bot_id: str, token: str | None,
          timeout: float, quiet: bool) -> int:
    """Poll GetBot until the version is active (0) or failed (1)."""
    deadline = time.monotonic() + timeout
    last = -1
    while True:
        bot = _call(target, stub.GetBot, bot_pb2.GetBotRequest(bot_id=bot_id), token).bot
        status = bot.hosted.status
        if status != last and not quiet:
            print(f"status:  {status_name(status)}"
                  + (f": {bot.hosted.reason}" if bot.hosted.reason else ""), flush=True)
        last = status
        if status == bot_pb2.VERSION_STATUS_ACTIVE:
            return 0
        if status == bot_pb2.VERSION_STATUS_FAILED:
            if bot.hosted.log_tail and not quiet:
                print("log (its tail):")
                print(bot.hosted.log_tail.rstrip())
            return 1
        if time.monotonic() > deadline:
            raise CommandError(f"moonshot bot submit --wait: {bot.name} is still "
                               f"{status_name(status)} after {timeout:g} s (is a host "
                               "running? moonshot host)")
        time.sleep(WAIT_POLL_S)


def _run_bot_show(args: argparse.Namespace) -> int:
    target = server_target(args)
    token = user_token(args, need=False)  # the owner's token shows the log
    channel, stub = _bots(target)
    with channel:
        bot = _call(target, stub.GetBot, bot_pb2.GetBotRequest(bot_id=args.bot), token).bot
    h = bot.hosted if bot.HasField("hosted") else None
    if args.json:
        out: dict[str, object] = {
            "bot_id": bot.bot_id, "name": bot.name, "owner": bot.owner_name,
            "previous": bot.previous_id, "connected": bot.connected,
            "retired": bot.HasField("retired_at"), "versions": list(bot.version_ids)}
        if h is not None:
            out["hosted"] = {"line": h.line, "number": h.number, "digest": h.digest,
                             "size": h.size, "runtime": h.runtime, "command": list(h.command),
                             "status": status_name(h.status), "reason": h.reason,
                             "log_tail": h.log_tail}
        print(json.dumps(out))
        return 0
    print(f"bot:      {bot.name} ({bot.bot_id})")
    if bot.house:
        print("kind:     a house bot (the stack's own)")
        return 0
    print(f"owner:    {bot.owner_name or 'no one'}")
    print(f"since:    {_when(bot.created_at)}")
    state = ("retired " + _when(bot.retired_at) if bot.HasField("retired_at") else
             "connected" if bot.connected else "offline")
    print(f"state:    {state}")
    if bot.previous_id:
        print(f"previous: {bot.previous_id}")
    if len(bot.version_ids) > 1:
        print(f"line:     {' -> '.join(bot.version_ids)}")
    if h is None:
        print("hosted:   no (a remote bot: its author runs it)")
        return 0
    print(f"hosted:   version {h.number} of {h.line}, {h.runtime}: {' '.join(h.command)}")
    print(f"package:  sha256 {h.digest}, {h.size} bytes")
    print(f"status:   {status_name(h.status)}" + (f" ({h.reason})" if h.reason else "")
          + (f", since {_when(h.updated_at)}" if h.HasField("updated_at") else ""))
    if h.log_tail:
        print("log (its tail, shown to its owner only):")
        print(h.log_tail.rstrip())
    return 0


def add_commands(bot: argparse._SubParsersAction[Parser]) -> None:
    """`moonshot bot submit | show`."""
    p = bot.add_parser("submit", help="pack a folder and submit it as the next version of "
                                      "your bot NAME: the stack runs it")
    p.add_argument("name", help="the line: a bot name (yours, or new)")
    p.add_argument("dir", help="the folder: a moonshot.toml (runtime, command) and the code")
    p.add_argument("--wait", action="store_true",
                   help="wait until the version is active (exit 0) or failed (exit 1)")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="seconds --wait waits at most (default 600)")
    p.add_argument("--json", action="store_true", help="print JSON")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_bot_submit)
    p = bot.add_parser("show", help="a bot's record and hosted status (its log: to its owner)")
    p.add_argument("bot", help="the bot's id or name (a version: line@N)")
    p.add_argument("--json", action="store_true", help="print JSON")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_bot_show)
