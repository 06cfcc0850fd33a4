"""Errors of the service layer; the referee maps each to one gRPC status at its edge.

ServiceError
├── InvalidArgument      a malformed request field          -> INVALID_ARGUMENT
├── NotFound             an unknown bot, match, tournament   -> NOT_FOUND
├── AlreadyExists        a taken bot name                    -> ALREADY_EXISTS
├── FailedPrecondition   a request that is fine but not now  -> FAILED_PRECONDITION
├── OutOfRange           a position past the end (a resume)  -> OUT_OF_RANGE
├── ResourceExhausted    past a cap (watch streams, buffers)  -> RESOURCE_EXHAUSTED
├── Unauthenticated      no or a bad token                   -> UNAUTHENTICATED
└── PermissionDenied     a valid token without the right     -> PERMISSION_DENIED

Engine errors (moon.MoonError, e.g. a bad rules option) are InvalidArgument at the edge.
"""

from __future__ import annotations


class ServiceError(Exception):
    """Base of the service layer's errors; the message is shown to the user."""


class InvalidArgument(ServiceError):
    """A request field is malformed or out of range; the message names the field."""


class NotFound(ServiceError):
    """The thing asked for does not exist."""


class AlreadyExists(ServiceError):
    """The thing to create exists already."""


class FailedPrecondition(ServiceError):
    """The request is valid but the system is not in a state to do it."""


class OutOfRange(ServiceError):
    """A position past what exists, e.g. resuming after an event not sent yet."""


class ResourceExhausted(ServiceError):
    """A cap is reached: too many streams, or a buffer a peer does not drain."""


class Unauthenticated(ServiceError):
    """No token, or a token that matches nothing."""


class PermissionDenied(ServiceError):
    """The caller is known but may not do this."""
