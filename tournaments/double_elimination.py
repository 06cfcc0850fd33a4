"""Double elimination (2v2 only): a losers' side, a grand final and its reset."""

from __future__ import annotations

from typing import ClassVar

from store.errors import InvalidArgument
from store.records import TournamentSpec
from tournaments import bracket as brk
from tournaments.brackets import BracketFormat, BracketOptions

__all__ = ["DoubleElimination"]


class DoubleElimination(BracketFormat):
    """Two losses put a bot out."""

    name: ClassVar[str] = "double_elimination"
    title: ClassVar[str] = "double elimination"
    kind: ClassVar[brk.Kind] = brk.Kind.DOUBLE

    def check(self, spec: TournamentSpec, options: BracketOptions) -> None:
        """2v2 only: 3-player brackets are single elimination by tables of three."""
        if spec.players == 3:
            raise InvalidArgument(
                "format: double elimination is for 2v2 (players=4); 3-player brackets are "
                "single elimination by tables of three")
