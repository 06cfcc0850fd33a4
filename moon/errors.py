"""The project's exception tree; every error the engine raises is a MoonError.

MoonError
├── ParseError          text that is not a tile, an action or a transcript field
├── RulesError          an unknown rules option or a bad value for one
├── IllegalActionError  an action that is not legal for the seat, or out of turn
└── TranscriptError     a transcript that does not replay to what it claims
"""

from __future__ import annotations


class MoonError(Exception):
    """Base of every error the engine raises."""


class ParseError(MoonError, ValueError):
    """Text that does not parse as the value asked for."""


class RulesError(MoonError, ValueError):
    """An unknown rules option, or a value the option does not allow."""


class IllegalActionError(MoonError):
    """An action that the acting seat may not take in this state."""

    def __init__(self, message: str, *, seat: int | None = None, action: str | None = None,
                 legal: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.seat = seat
        self.action = action
        self.legal = legal


class TranscriptError(MoonError, ValueError):
    """A transcript that is malformed or does not replay to what it records."""
