"""SubmitVersion: an author uploads a bot's code, and the stack keeps it as a hosted version.

The upload is a client stream: a header (the line, the package's size and SHA-256), then
chunks of at most `MAX_CHUNK` bytes. It is refused as soon as it can be: the header
before any byte is read (its size over the limit, a line that is not the author's, no
submission left today, a stack without an archive), a chunk as it comes (too large, past
the header's size), the whole once received (its size, its hash, then every rule of a
package: `hosting.package.check`). Only then is anything written, in this order, so that
no version names bytes that are not kept:

1. the day's submission is counted (refused past the author's allowance);
2. the package goes to the archive under its SHA-256 (once: the same bytes are one row);
3. the version's bot `<line>@<n>` is registered and its hosted record written, BUILDING
   (a host then unpacks, checks and validates it; store.hosted).

A failure at step 2 or 3 gives the submission back; the line's number is drawn at step 3
only, so a refused upload burns none.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import redis

from archive import packages
from hosting import package
from proto.moon.v1 import bot_pb2
from server.access import Caller
from server.archived import Archived
from server.edge import Undecodable
from server.lanes import Lane
from store import audit
from store import bots as store_bots
from store import hosted as store_hosted
from store.errors import (
    FailedPrecondition,
    InvalidArgument,
    PermissionDenied,
    ResourceExhausted,
)

__all__ = ["MAX_CHUNK", "Submitted", "Upload", "receive", "submit"]

MAX_CHUNK = 1 << 20  # bytes of one chunk message (a client sends 256 KiB)
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class Upload:
    """A received package and what its header said."""

    line: str
    digest: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Submitted:
    """A registered version: its bot, its token (shown once) and its hosted record."""

    bot: store_bots.BotRecord
    token: str
    version: store_hosted.HostedVersion


def _mib(n: int) -> str:
    return f"{n} bytes ({n / (1 << 20):.2f} MiB)"


def check_header(header: bot_pb2.SubmitVersionRequest.Header) -> None:
    """InvalidArgument (ResourceExhausted for a size over the limit) for a bad header."""
    if not header.line:
        raise InvalidArgument("header.line: required (the bot name whose versions these are)")
    if header.size == 0:
        raise InvalidArgument("header.size: required (the package's size in bytes)")
    if header.size > package.MAX_PACKED:
        raise ResourceExhausted(f"the package is {_mib(header.size)}; a package is at most "
                                f"{_mib(package.MAX_PACKED)} packed")
    if not _SHA256.fullmatch(header.sha256):
        raise InvalidArgument("header.sha256: 64 lowercase hex digits, the package's SHA-256 "
                              f"(got {header.sha256[:80]!r})")


async def receive(requests: AsyncIterator[Any], header_ok: Any) -> Upload:
    """Read the stream: the header (then `await header_ok(header)`), then the chunks; the
    package once its size and hash are what the header said."""
    it = aiter(requests)
    first = await anext(it, None)
    if first is None:
        raise InvalidArgument("the stream ended before its header: send a header (line, "
                              "size, sha256) first, then the package's bytes")
    if isinstance(first, Undecodable):
        raise first.problem()
    if first.WhichOneof("part") != "header":
        raise InvalidArgument("the first message carries the header (line, size, sha256), "
                              "then the package's bytes follow")
    header = first.header
    check_header(header)
    await header_ok(header)
    data = bytearray()
    async for msg in it:
        if isinstance(msg, Undecodable):
            raise msg.problem()
        kind = msg.WhichOneof("part")
        if kind != "chunk":
            raise InvalidArgument("only the first message carries a header; the next ones "
                                  "carry chunks of the package" if kind == "header" else
                                  "a message with no chunk: each message after the header "
                                  "carries the package's next bytes")
        if len(msg.chunk) > MAX_CHUNK:
            raise InvalidArgument(f"a chunk of {_mib(len(msg.chunk))}: at most "
                                  f"{_mib(MAX_CHUNK)} a message")
        if len(data) + len(msg.chunk) > header.size:
            raise InvalidArgument(f"more bytes than the header's size ({header.size})")
        data += msg.chunk
    if len(data) != header.size:
        raise InvalidArgument(f"the stream ended after {len(data)} bytes of the package; the "
                              f"header said {header.size}")
    digest = hashlib.sha256(data).hexdigest()
    if digest != header.sha256:
        raise InvalidArgument(f"the package's SHA-256 is {digest}, the header said "
                              f"{header.sha256}: the bytes were damaged on the way; send it "
                              "again")
    return Upload(header.line, digest, bytes(data))


def _ready(r: redis.Redis, who: Caller, line: str, per_day: int) -> None:
    """Refuse before the bytes: a line that is not the author's, no submission left."""
    store_bots.check_line(r, line, who.author_id)
    store_hosted.submission_allowed(r, who.author_id, per_day)


def _register(r: redis.Redis, who: Caller, up: Upload, manifest: package.Manifest
              ) -> Submitted:
    """The version's bot and its hosted record (BUILDING), and an audit entry."""
    record, token, _ = store_bots.register_version(r, up.line, who.author_id)
    version = store_hosted.HostedVersion(
        record.bot_id, up.line, up.digest, len(up.data), manifest.runtime, manifest.command,
        store_hosted.VersionStatus.BUILDING)
    store_hosted.put_version(r, version)
    audit.record(r, who.actor, "submit_version", record.bot_id,
                 f"name {record.name}, {manifest.runtime}, {len(up.data)} bytes, "
                 f"sha256 {up.digest}", who.address, [who.author_id])
    return Submitted(record, token, store_hosted.get_version(r, record.bot_id) or version)


def _check(data: bytes) -> package.Manifest:
    try:
        return package.check(data)
    except package.PackageError as exc:
        raise InvalidArgument(f"the package: {exc}") from None


async def submit(requests: AsyncIterator[Any], who: Caller, lane: Lane,
                 archived: Archived | None, per_day: int) -> Submitted:
    """Receive, check and keep an author's upload (module doc)."""
    if who.author is None:
        raise PermissionDenied("SubmitVersion submits an author's code, and only an author "
                               "owns versions: submit with an author token (moonshot "
                               "signup, then moonshot login), not the admin's")

    async def header_ok(header: bot_pb2.SubmitVersionRequest.Header) -> None:
        await lane.run(_ready, who, header.line, per_day)  # whose line first
        if archived is None or await asyncio.to_thread(archived.archive) is None:
            raise FailedPrecondition("this stack has no archive to keep packages in: start "
                                     "its referee with --archive URL (moonshot up does)")

    up = await receive(requests, header_ok)
    manifest = await asyncio.to_thread(_check, up.data)
    archive = await asyncio.to_thread(archived.archive) if archived is not None else None
    assert archive is not None  # header_ok saw it
    day = await lane.run(store_hosted.count_submission, who.author_id, per_day)
    try:
        await asyncio.to_thread(packages.put, archive, up.digest, up.data)
        return await lane.run(_register, who, up, manifest)
    except BaseException:
        await lane.run(store_hosted.uncount_submission, who.author_id, day)
        raise
