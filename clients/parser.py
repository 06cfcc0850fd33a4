"""The command line's parser and its two errors, shared by every command module."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

__all__ = ["CommandError", "Parser", "UsageError"]


class UsageError(Exception):
    """A bad flag or value: one line on stderr, exit code 2."""


class CommandError(Exception):
    """A command that could not do its job: one line on stderr and an exit code."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class _Help(argparse.RawDescriptionHelpFormatter):
    """Help that shows each option's default, unless its text already says it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if ("default" in text or not action.option_strings
                or action.default in (None, False, [], argparse.SUPPRESS)):
            return text
        return f"{text} (default %(default)s)".lstrip()


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line, not a usage dump."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        """As argparse's, and an option with a default but no help still shows it."""
        if (kwargs.get("help") is None and args and str(args[0]).startswith("-")
                and kwargs.get("default") not in (None, False, [])):
            kwargs["help"] = "(default %(default)s)"
        return super().add_argument(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")
