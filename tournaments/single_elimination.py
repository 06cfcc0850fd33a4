"""Single elimination: a loss puts a bot out (2v2 series, or 3p tables of three)."""

from __future__ import annotations

from typing import ClassVar

from tournaments import bracket as brk
from tournaments.brackets import BracketFormat

__all__ = ["SingleElimination"]


class SingleElimination(BracketFormat):
    """A knock-out bracket; byes go to the top seeds."""

    name: ClassVar[str] = "single_elimination"
    title: ClassVar[str] = "single elimination"
    kind: ClassVar[brk.Kind] = brk.Kind.SINGLE
