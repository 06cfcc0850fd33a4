"""Every tournament format, registered once: use the registry through this module.

Adding a format: write its module (a `registry.Format` subclass with its options),
add it to `FORMATS` below, and add to tournament.proto `TOURNAMENT_FORMAT_<NAME>` and
its options message as the field `<name>` of `TournamentSpec.format_options`.
"""

from __future__ import annotations

from tournaments.double_elimination import DoubleElimination
from tournaments.registry import (
    Format,
    apart_notes,
    describe,
    feed,
    get,
    groups,
    names,
    notes,
    plan,
    prepare,
    register,
    start,
)
from tournaments.round_robin import RoundRobin
from tournaments.single_elimination import SingleElimination
from tournaments.swiss import Swiss

__all__ = ["FORMATS", "Format", "apart_notes", "describe", "feed", "get", "groups", "names",
           "notes", "plan", "prepare", "start"]

FORMATS = tuple(register(f) for f in (RoundRobin(), SingleElimination(), DoubleElimination(),
                                      Swiss()))
