"""The command line's parser and its two errors, shared by every command module."""

from __future__ import annotations

import argparse
import difflib
import re
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

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """As argparse's; notes the innermost (sub)command parser that ran, whose options
        an unknown flag is compared with."""
        ns, extras = super().parse_known_args(args, namespace)
        # A subcommand's parser runs inside its parent's and hands its namespace up, so
        # the first to set this is the innermost.
        self._last = getattr(ns, _LAST, None) or self
        setattr(ns, _LAST, self._last)
        return ns, extras

    def error(self, message: str) -> NoReturn:
        """One line, with the nearest flag or command for a typo."""
        last: Parser = getattr(self, "_last", None) or self
        hint = _nearest(last, message)
        prog = last.prog if message.startswith("unrecognized arguments") else self.prog
        raise UsageError(f"{prog}: {message}{hint} (see {prog} --help)")


_LAST = "_moonshot_parser"


def _nearest(parser: Parser, message: str) -> str:
    """`; did you mean --time-per-move?` for an unknown flag or an invalid choice."""
    if message.startswith("unrecognized arguments:"):
        known = [o for o in parser._option_string_actions if o.startswith("--")]
        for word in message.split(":", 1)[1].split():
            flag = word.split("=", 1)[0]
            if flag.startswith("-"):
                close = difflib.get_close_matches(flag, known, n=1, cutoff=0.6)
                if close:
                    return f"; did you mean {close[0]}?"
        return ""
    m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if m:
        choices = re.findall(r"'([^']*)'", m.group(2)) or [
            c.strip() for c in m.group(2).split(",")]
        close = difflib.get_close_matches(m.group(1), choices, n=1, cutoff=0.6)
        if close:
            return f"; did you mean {close[0]}?"
    return ""
