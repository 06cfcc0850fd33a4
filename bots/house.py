"""House bot ids: `house:random`, `house:greedy`, `house:pimc?samples=64&solve=3`.

A house bot is named by an id: `house:`, the bot's name, and optionally `?` and
`option=value` pairs joined by `&`. `parse` checks an id and returns a
`HouseBot`, whose `id` is the canonical form: every option spelled out with its
value, in name order (`house:pimc` and `house:pimc?samples=48` are one bot,
`house:pimc?samples=48&solve=3`). A rating belongs to a canonical id, so a
changed default gives a new id rather than merging two different players under
one name. Anything else is refused with a `HouseBotError` naming what is wrong.

A new house bot is one entry in `BOTS`: its name, a line saying what it is, its
options with their defaults and ranges, and a function from options to player.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from bots.greedy import GreedyPlayer
from bots.pimc import DEFAULT_SAMPLES, DEFAULT_SOLVE, PimcPlayer
from bots.player import Player
from bots.random_play import RandomPlayer

__all__ = ["BOTS", "PREFIX", "HouseBot", "HouseBotError", "Kind", "Option", "is_house", "parse"]

PREFIX = "house:"
MAX_ID_LENGTH = 200
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_DIGITS = re.compile(r"[0-9]{1,9}")


class HouseBotError(ValueError):
    """A house bot id that names no house bot, an unknown option or a value out of range."""


@dataclass(frozen=True, slots=True)
class Option:
    """An integer option of a house bot: its default, its range and what it means."""

    default: int
    low: int
    high: int
    meaning: str

    def check(self, bot: str, name: str, text: str) -> int:
        """The value `text` spells, or a HouseBotError naming the bot, option and range."""
        if not _DIGITS.fullmatch(text):
            problem = "is not an integer"
        elif not self.low <= int(text) <= self.high:
            problem = "is out of range"
        else:
            return int(text)
        raise HouseBotError(
            f"house bot {bot!r}: option {name}={text!r} {problem}: expected an integer "
            f"from {self.low} to {self.high} ({self.meaning})"
        )


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind of house bot: its name, what it is, its options and how to build it."""

    name: str
    title: str
    options: Mapping[str, Option]
    build: Callable[[Mapping[str, int]], Player]


BOTS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind("random", "uniformly random legal actions (never a moon bid)", {},
             lambda _: RandomPlayer()),
        Kind("greedy", "bids its estimate, takes tricks cheaply, never looks ahead", {},
             lambda _: GreedyPlayer()),
        Kind("pimc", "perfect-information Monte Carlo search over deals of the unseen tiles",
             # Ranges that keep the slowest decision within the default 2 s move clock.
             {"samples": Option(DEFAULT_SAMPLES, 1, 256,
                                "deals of the unseen tiles a decision; a discard before "
                                "trumps takes a quarter"),
              "solve": Option(DEFAULT_SOLVE, 0, 3,
                              "tricks left when the exact solver takes over from greedy play")},
             lambda o: PimcPlayer(samples=o["samples"], solve=o["solve"])),
    )
}


@dataclass(frozen=True, slots=True)
class HouseBot:
    """A checked house bot id: the kind and every option's value."""

    name: str
    options: tuple[tuple[str, int], ...]  # every option of the kind, in name order

    @property
    def id(self) -> str:
        """The canonical id: one per distinct bot and options."""
        if not self.options:
            return PREFIX + self.name
        return PREFIX + self.name + "?" + "&".join(f"{k}={v}" for k, v in self.options)

    def player(self) -> Player:
        """A fresh player for this bot (players keep nothing, so one may serve many seats)."""
        return BOTS[self.name].build(dict(self.options))

    def __str__(self) -> str:
        return self.id


def is_house(bot_id: str) -> bool:
    """True when `bot_id` claims to be a house bot (begins with `house:`, any case)."""
    return bot_id[: len(PREFIX)].lower() == PREFIX


def parse(bot_id: str) -> HouseBot:
    """The house bot an id names, canonicalised; HouseBotError naming what is wrong."""
    if not isinstance(bot_id, str) or not bot_id.startswith(PREFIX):
        raise HouseBotError(f"not a house bot id: {bot_id!r} "
                            f"(expected {PREFIX}NAME[?OPTION=VALUE&...], in lower case)")
    if len(bot_id) > MAX_ID_LENGTH:
        raise HouseBotError(f"house bot id is {len(bot_id)} characters long; "
                            f"at most {MAX_ID_LENGTH} are allowed")
    name, sep, query = bot_id[len(PREFIX):].partition("?")
    kind = BOTS.get(name)
    if kind is None or not _NAME.fullmatch(name):
        raise HouseBotError(f"unknown house bot {name!r} in {bot_id!r}; "
                            f"house bots: {', '.join(PREFIX + k for k in BOTS)}")
    values = {k: o.default for k, o in kind.options.items()}
    given: set[str] = set()
    for pair in query.split("&") if sep else ():
        key, eq, text = pair.partition("=")
        if not eq or not key:
            raise HouseBotError(f"house bot {name!r}: bad option {pair!r} in {bot_id!r}; "
                                "expected OPTION=VALUE pairs joined by '&'")
        option = kind.options.get(key)
        if option is None:
            allowed = ", ".join(kind.options) or "none"
            raise HouseBotError(f"house bot {name!r} has no option {key!r}; its options: {allowed}")
        if key in given:
            raise HouseBotError(f"house bot {name!r}: option {key!r} is given twice in {bot_id!r}")
        given.add(key)
        values[key] = option.check(name, key, text)
    return HouseBot(name, tuple(sorted(values.items())))
