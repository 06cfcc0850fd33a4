"""The built-in bots: `random`, `greedy` and `pimc`, thin wrappers over the players of `bots/`."""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from bots.greedy import estimate_tricks, greedy_action
from bots.pimc import PimcPlayer
from bots.player import Player
from bots.random_play import random_action
from clients.bot import Bot
from moon import Action, Observation

__all__ = ["BUILTIN", "GreedyBot", "PimcBot", "RandomBot", "estimate_tricks", "load_bot",
           "player_bot"]


class RandomBot(Bot):
    """Uniform over the legal actions, except that it never bids 21 (`bots.random_play`)."""

    name = "random"

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """A uniformly random legal action other than `bid 21`, from this bot's generator."""
        return random_action(legal, self.rng)


class GreedyBot(Bot):
    """A simple, honest player that never looks ahead (`bots.greedy`)."""

    name = "greedy"

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """The greedy choice."""
        return greedy_action(obs, legal)


class PimcBot(Bot):
    """The search player of `bots.pimc` at its default budget.

    A remote bot never learns the game's seed; this one seeds its searches from
    its own seed instead, so a seeded instance still plays the same game twice.
    """

    name = "pimc"

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(seed)
        self._seed = self.rng.getrandbits(64)
        self._player = PimcPlayer()

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """The search's choice."""
        return self._player.decide(obs, legal, self._seed)


BUILTIN: dict[str, type[Bot]] = {"random": RandomBot, "greedy": GreedyBot, "pimc": PimcBot}


def player_bot(player: type[Any]) -> type[Bot]:
    """A Bot class playing a `bots.player.Player` class (built with no arguments).

    As `PimcBot`, it seeds the player's decisions from the bot's own seed, since a
    remote bot never learns the game's seed.
    """
    class PlayerBot(Bot):
        name = player.__name__

        def __init__(self, seed: int | None = None) -> None:
            super().__init__(seed)
            self._seed = self.rng.getrandbits(64)
            self._player: Player = player()

        def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
            """The player's choice."""
            return self._player.decide(obs, legal, self._seed)

    PlayerBot.__name__ = PlayerBot.__qualname__ = f"{player.__name__}Bot"
    return PlayerBot


def load_bot(spec: str) -> type[Bot]:
    """A bot class from `random`, `greedy` or `package.module:ClassName` (imported from the
    current directory or the Python path): a `clients.bot.Bot` subclass, or a player class
    with a `decide(obs, legal, seed)` method (`bots.player.Player`, e.g.
    `learn.runner:IsmctsPlayer`), played through `player_bot`."""
    if spec in BUILTIN:
        return BUILTIN[spec]
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        close = difflib.get_close_matches(spec, BUILTIN, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ValueError(f"unknown bot {spec!r}{hint}: use {', '.join(BUILTIN)} or MODULE:CLASS")
    # Like `python -m`, look in the current directory first: a bot author runs
    # `moonshot ... --bot mybot:MyBot` next to mybot.py.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import bot module {module_name!r}: {exc}") from exc
    cls = getattr(module, attr, None)
    if isinstance(cls, type) and issubclass(cls, Bot) and cls is not Bot:
        return cls
    if isinstance(cls, type) and callable(getattr(cls, "decide", None)):
        return player_bot(cls)
    bots = sorted(name for name, value in vars(module).items()
                  if isinstance(value, type) and issubclass(value, Bot) and value is not Bot)
    there = (f"its bot classes: {', '.join(bots)}" if bots
             else "it has no subclass of clients.bot.Bot")
    if cls is None:
        raise ValueError(f"module {module_name!r} has no class {attr!r} ({there})")
    what = ("is the base class itself" if cls is Bot else "is neither a subclass of "
            "clients.bot.Bot nor a player class with a decide(obs, legal, seed) method")
    raise ValueError(f"{spec!r} {what} ({there})")
