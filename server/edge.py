"""The servicer edge: the one place where errors become gRPC status codes.

Servicer methods stay thin (decode, call, encode) and raise the project's own
errors; `unary` and `streaming` turn those into a status with the error's
message, and anything unexpected into INTERNAL without leaking a traceback.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, TypeVar

import grpc
import redis

from moon import MoonError
from store.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    OutOfRange,
    PermissionDenied,
    ServiceError,
    Unauthenticated,
)

__all__ = ["bearer_token", "page_of", "status_of", "streaming", "unary"]

log = logging.getLogger("moonshot.referee")

_CODES: dict[type[ServiceError], grpc.StatusCode] = {
    InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    NotFound: grpc.StatusCode.NOT_FOUND,
    AlreadyExists: grpc.StatusCode.ALREADY_EXISTS,
    FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    OutOfRange: grpc.StatusCode.OUT_OF_RANGE,
    Unauthenticated: grpc.StatusCode.UNAUTHENTICATED,
    PermissionDenied: grpc.StatusCode.PERMISSION_DENIED,
}

Req = TypeVar("Req")
Resp = TypeVar("Resp")
Self = TypeVar("Self")


MAX_MESSAGE = 1000  # status messages travel in metadata: an echoed 1 MB value must not


def _clip(message: str) -> str:
    """The message, cut to MAX_MESSAGE characters with a mark where it was cut."""
    if len(message) <= MAX_MESSAGE:
        return message
    return message[:MAX_MESSAGE] + f"... ({len(message) - MAX_MESSAGE} more characters)"


def status_of(exc: BaseException) -> tuple[grpc.StatusCode, str]:
    """The status code and message a failure is reported with."""
    if isinstance(exc, ServiceError):
        return _CODES.get(type(exc), grpc.StatusCode.FAILED_PRECONDITION), _clip(str(exc))
    if isinstance(exc, MoonError):
        return grpc.StatusCode.INVALID_ARGUMENT, _clip(str(exc))
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
        return grpc.StatusCode.UNAVAILABLE, "the referee cannot reach Redis right now; retry"
    log.error("internal error", exc_info=exc)
    return grpc.StatusCode.INTERNAL, f"internal error ({type(exc).__name__}); see the referee log"


def unary(
    fn: Callable[[Self, Req, grpc.aio.ServicerContext[Any, Any]], Awaitable[Resp]],
) -> Callable[[Self, Req, grpc.aio.ServicerContext[Any, Any]], Awaitable[Resp]]:
    """Wrap a unary servicer method so that errors end the call with a proper status."""

    @functools.wraps(fn)
    async def wrapper(
        self: Self, request: Req, context: grpc.aio.ServicerContext[Any, Any]
    ) -> Resp:
        try:
            return await fn(self, request, context)
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            code, message = status_of(exc)
        await context.abort(code, message)
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
            async for item in fn(self, request, context):
                yield item
            return
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            code, message = status_of(exc)
        await context.abort(code, message)

    return wrapper


def bearer_token(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    """The token of an `authorization: Bearer <token>` metadata entry, if any."""
    for key, value in context.invocation_metadata() or ():
        if key.lower() == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.strip().partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            return None
    return None


T = TypeVar("T")


def page_of(items: Iterable[T], size: int) -> tuple[list[T], bool]:
    """The first `size` items of a (lazily filtered) sequence, and whether more follow."""
    out: list[T] = []
    for item in items:
        if len(out) == size:
            return out, True
        out.append(item)
    return out, False
