"""Errors of the archive; each message is one line an operator can act on.

ArchiveError
├── BadURL          not a sqlite:/// or postgresql:// URL
├── Unavailable     the database cannot be reached or opened (down, locked, no disk)
└── SchemaTooNew    the database was migrated by a newer moonshot than this one
"""

from __future__ import annotations

__all__ = ["ArchiveError", "BadURL", "SchemaTooNew", "Unavailable"]


class ArchiveError(Exception):
    """Base of the archive's errors; the message is shown to the operator."""


class BadURL(ArchiveError):
    """The archive URL names no database this code can use."""


class Unavailable(ArchiveError):
    """The archive's database cannot be reached or opened right now."""


class SchemaTooNew(ArchiveError):
    """The database's schema revision is one this code does not know (a newer moonshot's)."""
