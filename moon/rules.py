"""Rules of one game: the player count and every named option of RULES.md."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from moon.errors import RulesError

__all__ = ["OPTION_HELP", "Rules"]

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}

# name -> (kind, allowed values or (min, max), one-line meaning)
_SPEC: dict[str, tuple[str, Any, str]] = {
    "target": ("int", (1, 1000), "score that wins the game (points scoring)"),
    "min_bid": ("choice", (3, 4, 5), "lowest number bid"),
    "all_pass": ("choice", ("redeal", "forced"), "what happens when every seat passes"),
    "double_blank": ("bool", None, "3 players: keep 0-0 (22 tiles and a widow) or drop it (21)"),
    "trump_before_widow": ("bool", None, "the bidder names trumps before seeing the widow"),
    "scoring": ("choice", ("points", "marks"), "score by points or by marks"),
    "marks_target": ("int", (1, 100), "marks that win the game (marks scoring)"),
    "moon_wins": ("bool", None, "a made 21 wins the game at once"),
    "max_hands": ("int", (1, 100000), "hands before the referee adjudicates (hand_limit)"),
}


def _allowed(name: str) -> str:
    kind, allowed, _ = _SPEC[name]
    if kind == "bool":
        return "true or false"
    if kind == "int":
        return f"an integer from {allowed[0]} to {allowed[1]}"
    return ", ".join(str(a) for a in allowed)


OPTION_HELP: dict[str, str] = {
    name: f"{spec[2]} ({_allowed(name)})" for name, spec in _SPEC.items()
}


def _coerce(name: str, value: object) -> object:
    kind, allowed, _ = _SPEC[name]
    bad = RulesError(f"bad value for rules option {name}: {value!r}; allowed: {_allowed(name)}")
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise bad
    if kind == "int" or (kind == "choice" and isinstance(allowed[0], int)):
        if isinstance(value, bool):
            raise bad
        if isinstance(value, str):
            try:
                value = int(value.strip())
            except ValueError:
                raise bad from None
        if not isinstance(value, int):
            raise bad
        if kind == "int" and not allowed[0] <= value <= allowed[1]:
            raise bad
        if kind == "choice" and value not in allowed:
            raise bad
        return value
    if isinstance(value, str) and value.strip().lower() in allowed:
        return value.strip().lower()
    raise bad


@dataclass(frozen=True, slots=True)
class Rules:
    """A complete, validated rule set; build it with `Rules.make` to get checked options."""

    players: int = 3
    target: int = 21
    min_bid: int = 4
    all_pass: str = "redeal"
    double_blank: bool = True
    trump_before_widow: bool = False
    scoring: str = "points"
    marks_target: int = 7
    moon_wins: bool = False
    max_hands: int = 100

    def __post_init__(self) -> None:
        if self.players not in (3, 4):
            raise RulesError(f"bad player count: {self.players!r}; allowed: 3 or 4")
        for name in _SPEC:
            value = getattr(self, name)
            if _coerce(name, value) != value or type(value) is not type(_coerce(name, value)):
                raise RulesError(
                    f"bad value for rules option {name}: {value!r}; allowed: {_allowed(name)}"
                )
        if self.players == 4 and not self.double_blank:
            raise RulesError("double_blank=false is a 3-player option: 4 players use all 28 tiles")
        if self.trump_before_widow and not self.has_widow:
            raise RulesError(
                "trump_before_widow=true needs a widow: 3 players with double_blank=true"
            )

    @classmethod
    def make(cls, players: int = 3, options: Mapping[str, object] | None = None) -> Rules:
        """Rules for `players` from option names to values (strings are parsed)."""
        values: dict[str, object] = {}
        for name, raw in (options or {}).items():
            if name not in _SPEC:
                raise RulesError(
                    f"unknown rules option {name!r}; allowed: {', '.join(_SPEC)}"
                )
            values[name] = _coerce(name, raw)
        if isinstance(players, bool) or players not in (3, 4):
            raise RulesError(f"bad player count: {players!r}; allowed: 3 or 4")
        return cls(players=players, **values)  # type: ignore[arg-type]

    @classmethod
    def parse_assignments(cls, players: int, assignments: list[str]) -> Rules:
        """Rules from `KEY=VALUE` strings, as given on a command line."""
        options: dict[str, object] = {}
        for item in assignments:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise RulesError(f"bad rules option {item!r}: expected KEY=VALUE")
            options[key.strip()] = value
        return cls.make(players, options)

    @property
    def has_widow(self) -> bool:
        """True when a 22nd tile lies in the middle (3 players with 0-0)."""
        return self.players == 3 and self.double_blank

    @property
    def teams(self) -> bool:
        """True for the 4-player partnership game."""
        return self.players == 4

    def options(self) -> dict[str, object]:
        """Every option by name, without the player count (the transcript's `rules`)."""
        return {name: getattr(self, name) for name in _SPEC}

    def replace(self, **changes: object) -> Rules:
        """A copy with some fields changed, validated again."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]
