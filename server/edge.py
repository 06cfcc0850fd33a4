"""The servicer edge: the one place where errors become gRPC status codes.

Servicer methods stay thin (decode, call, encode) and raise the project's own
errors; `unary` and `streaming` turn those into a status with the error's
message, and anything unexpected into INTERNAL without leaking a traceback.

Also here, because they apply to every call alike:

- A request body that does not parse reaches the servicer as `Undecodable`
  (services are registered through `add_service`), and the call ends with
  INVALID_ARGUMENT saying which message was expected, not gRPC's UNKNOWN.
- Repeated authentication failures from one peer address are slowed down
  (`FailureThrottle`): the first `FREE_FAILURES` in `WINDOW_S` seconds are
  answered at once; after that each failure waits 0.1 s, doubling with every
  further failure up to `MAX_DELAY_S`, and one peer's waiting failures are
  answered one at a time. Successful calls, and every other peer, never wait.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
import redis
from sqlalchemy.exc import SQLAlchemyError

from archive.errors import ArchiveError
from moon import MoonError
from server import metrics
from server.lanes import peer_host
from store.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    OutOfRange,
    PermissionDenied,
    ResourceExhausted,
    ServiceError,
    Unauthenticated,
)

__all__ = [
    "ARCHIVE_TOP",
    "THROTTLE",
    "FailureThrottle",
    "Undecodable",
    "add_service",
    "archive_token",
    "bearer_token",
    "metadata_value",
    "page_of",
    "status_of",
    "streaming",
    "unary",
    "watch_pass",
]

log = logging.getLogger("moonshot.referee")

_CODES: dict[type[ServiceError], grpc.StatusCode] = {
    InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    NotFound: grpc.StatusCode.NOT_FOUND,
    AlreadyExists: grpc.StatusCode.ALREADY_EXISTS,
    FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    OutOfRange: grpc.StatusCode.OUT_OF_RANGE,
    Unauthenticated: grpc.StatusCode.UNAUTHENTICATED,
    PermissionDenied: grpc.StatusCode.PERMISSION_DENIED,
    ResourceExhausted: grpc.StatusCode.RESOURCE_EXHAUSTED,
}

Req = TypeVar("Req")
Resp = TypeVar("Resp")
Self = TypeVar("Self")


# Status messages travel in metadata: an echoed 1 MB value must not. The budget is in
# UTF-8 bytes, not characters: gRPC percent-encodes every byte outside printable ASCII
# (3 bytes each), so 1,000 four-byte characters became 12 KB, past a client's 8 KB
# metadata limit, and the caller got RESOURCE_EXHAUSTED instead of the real answer.
MAX_MESSAGE = 1000


def _clip(message: str) -> str:
    """The message, cut to MAX_MESSAGE bytes of UTF-8 with a mark where it was cut."""
    data = message.encode(errors="replace")
    if len(data) <= MAX_MESSAGE:
        return message
    kept = data[:MAX_MESSAGE].decode(errors="ignore")  # never half a character
    return kept + f"... ({len(message) - len(kept)} more characters)"


def status_of(exc: BaseException) -> tuple[grpc.StatusCode, str]:
    """The status code and message a failure is reported with."""
    if isinstance(exc, ServiceError):
        return _CODES.get(type(exc), grpc.StatusCode.FAILED_PRECONDITION), _clip(str(exc))
    if isinstance(exc, MoonError):
        return grpc.StatusCode.INVALID_ARGUMENT, _clip(str(exc))
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
        metrics.REDIS_ERRORS.labels("call").inc()
        return grpc.StatusCode.UNAVAILABLE, "the referee cannot reach Redis right now; retry"
    if isinstance(exc, ArchiveError | SQLAlchemyError):
        log.warning("archive: %s", str(exc).splitlines()[0][:300] if str(exc) else exc)
        return (grpc.StatusCode.UNAVAILABLE,
                "the referee cannot read the archive (finished games) right now; retry")
    log.error("internal error", exc_info=exc)
    return grpc.StatusCode.INTERNAL, f"internal error ({type(exc).__name__}); see the referee log"


ARCHIVE_TOP = 1 << 62  # a page token's archive id before everything the archive holds


def archive_token(token: str) -> int | None:
    """The archive id a listing's page token continues before (`a:<id>`: the listing is
    in its archive part, after what Redis holds), or None for a token of the Redis part
    (an id, or '' for the first page); InvalidArgument for anything else of that form."""
    if not token.startswith("a:"):
        return None
    digits = token[2:]
    if (not digits.isascii() or not digits.isdigit() or len(digits) > 19
            or not 1 <= int(digits) <= ARCHIVE_TOP):
        raise InvalidArgument("page_token: not a token this server issued")
    return int(digits)


FREE_FAILURES = 5
WINDOW_S = 60.0
MAX_DELAY_S = 5.0
_FAILED_AUTH = (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED)


@dataclass
class FailureThrottle:
    """Slows down one peer's repeated authentication failures (see the module doc)."""

    free: int = FREE_FAILURES
    window_s: float = WINDOW_S
    max_delay_s: float = MAX_DELAY_S
    max_peers: int = 10_000
    _failures: dict[str, list[float]] = field(default_factory=dict)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    def delay(self, host: str, now: float) -> float:
        """Count a failure of `host` at `now`; how long its answer must wait."""
        if len(self._failures) >= self.max_peers and host not in self._failures:
            self._prune(now)
        recent = [t for t in self._failures.get(host, []) if now - t < self.window_s]
        recent.append(now)
        self._failures[host] = recent[-64:]
        extra = len(recent) - self.free
        return 0.0 if extra <= 0 else min(self.max_delay_s, 0.1 * 2 ** (extra - 1))

    def _prune(self, now: float) -> None:
        for host in [h for h, ts in self._failures.items() if now - ts[-1] >= self.window_s]:
            del self._failures[host]
            self._locks.pop(host, None)
        while len(self._failures) >= self.max_peers:  # still full: forget the oldest
            oldest = min(self._failures, key=lambda h: self._failures[h][-1])
            del self._failures[oldest]
            self._locks.pop(oldest, None)

    async def wait(self, peer: str) -> None:
        """Hold a failed call of `peer` as long as its record says."""
        host = peer_host(peer)
        pause = self.delay(host, time.monotonic())
        if pause > 0:
            async with self._locks.setdefault(host, asyncio.Lock()):
                await asyncio.sleep(pause)


THROTTLE = FailureThrottle()


async def fail(context: grpc.aio.ServicerContext[Any, Any], code: grpc.StatusCode,
               message: str) -> None:
    """End the call with `code`, after the throttle's wait for an authentication failure."""
    if code in _FAILED_AUTH:
        metrics.AUTH_FAILURES.labels(code.name.lower()).inc()
        await THROTTLE.wait(context.peer() or "")
    await context.abort(code, message)


class Undecodable:
    """Stands in for a request body that does not parse as the message it should be."""

    def __init__(self, expected: str, error: Exception) -> None:
        self.expected = expected
        self.error = error

    def problem(self) -> InvalidArgument:
        """The error the call ends with."""
        return InvalidArgument(f"the request is not a valid {self.expected} message "
                               f"({type(self.error).__name__}: {self.error}); check that the "
                               "client was built from this referee's moon.v1 .proto files")


def _check(request: object) -> None:
    if isinstance(request, Undecodable):
        metrics.REJECTED.labels("undecodable").inc()
        raise request.problem()


def unary(
    fn: Callable[[Self, Req, grpc.aio.ServicerContext[Any, Any]], Awaitable[Resp]],
) -> Callable[[Self, Req, grpc.aio.ServicerContext[Any, Any]], Awaitable[Resp]]:
    """Wrap a unary servicer method so that errors end the call with a proper status."""

    @functools.wraps(fn)
    async def wrapper(
        self: Self, request: Req, context: grpc.aio.ServicerContext[Any, Any]
    ) -> Resp:
        try:
            _check(request)
            return await fn(self, request, context)
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            code, message = status_of(exc)
        await fail(context, code, message)
        raise AssertionError("unreachable: abort raises")

    return wrapper


def streaming(
    fn: Callable[[Self, Req, grpc.aio.ServicerContext[Any, Any]], AsyncIterator[Resp]],
) -> Callable[[Self, Req, grpc.aio.ServicerContext[Any, Any]], AsyncIterator[Resp]]:
    """The same for methods that stream responses."""

    @functools.wraps(fn)
    async def wrapper(
        self: Self, request: Req, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[Resp]:
        try:
            _check(request)
            async for item in fn(self, request, context):
                yield item
            return
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            code, message = status_of(exc)
        await fail(context, code, message)

    return wrapper


def metadata_value(context: grpc.aio.ServicerContext[Any, Any], name: str) -> str | None:
    """The value of the first metadata entry named `name` (any case), if any."""
    for key, value in context.invocation_metadata() or ():
        if key.lower() == name:
            return value.decode(errors="replace") if isinstance(value, bytes) else value
    return None


def bearer_token(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    """The token of an `authorization: Bearer <token>` metadata entry, if any."""
    text = metadata_value(context, "authorization")
    if text is None:
        return None
    scheme, _, token = text.strip().partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None


WATCH_PASS_HEADER = "x-moonshot-watch-pass"


def watch_pass(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    """The watch pass a trusted watcher (a web server) sends, if any."""
    for key, value in context.invocation_metadata() or ():
        if key.lower() == WATCH_PASS_HEADER:
            text = value.decode() if isinstance(value, bytes) else value
            return text.strip()[:256] or None
    return None


T = TypeVar("T")


MAX_PAGE = 1000  # the most items of one page, whatever `page_size` asks for


def page_of(items: Iterable[T], size: int) -> tuple[list[T], bool]:
    """The first `size` items of a (lazily filtered) sequence, and whether more follow."""
    out: list[T] = []
    for item in items:
        if len(out) == size:
            return out, True
        out.append(item)
    return out, False


class _Captured:
    """Stands in for a server to catch the method handlers the generated code registers."""

    handlers: dict[str, Any]

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        """Ignored: the same handlers come to add_registered_method_handlers."""

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        """Keep them."""
        self.handlers = dict(handlers)


def _safe(deserialize: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    """A request deserializer that hands a body that does not parse on as Undecodable."""
    message = getattr(deserialize, "__self__", None)
    name = getattr(getattr(message, "DESCRIPTOR", None), "full_name", "request")

    def run(data: bytes) -> Any:
        try:
            return deserialize(data)
        except Exception as exc:
            return Undecodable(name, exc)

    return run


def add_service(add: Callable[[Any, Any], None], servicer: Any, server: grpc.aio.Server,
                service: str, response_serializers: dict[str, Callable[[Any], bytes]] | None
                = None, guard: Callable[[str, Any], Any] | None = None) -> None:
    """Register a service as its generated `add_..._to_server` would, with safe request
    deserializers (and, for a method named in `response_serializers`, that serializer),
    each method behind `guard(full method name, handler)` (`server.access.Gate.guard`)."""
    captured = _Captured()
    add(servicer, captured)
    handlers = {}
    for method, original in captured.handlers.items():
        h = original._replace(request_deserializer=_safe(original.request_deserializer))
        if guard is not None:
            h = guard(f"/{service}/{method}", h)
        if response_serializers and method in response_serializers:
            h = h._replace(response_serializer=response_serializers[method])
        handlers[method] = h
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
    server.add_registered_method_handlers(service, handlers)
