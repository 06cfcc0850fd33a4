"""Every tournament format, registered once: use the registry through this module.

Adding a format: write its module (a `registry.Format` subclass), add it to
`FORMATS` below, and add `TOURNAMENT_FORMAT_<NAME>` to tournament.proto.
"""

from __future__ import annotations

from tournaments.double_elimination import DoubleElimination
from tournaments.registry import Format, check, describe, get, names, notes, plan, register
from tournaments.round_robin import RoundRobin
from tournaments.single_elimination import SingleElimination

__all__ = ["FORMATS", "Format", "check", "describe", "get", "names", "notes", "plan"]

FORMATS = tuple(register(f) for f in (RoundRobin(), SingleElimination(), DoubleElimination()))
