"""The bot interface: the one thing a bot author implements.

A bot is a class with an `act` method: given what its seat may see and the
legal actions, it returns one of those actions. The built-in bots, local
self-play and the network SDK all drive bots through this interface, so a bot
that works in `moonshot selfplay` works unchanged against a referee.

    from clients.bot import Bot

    class FirstBot(Bot):
        name = "first"

        def act(self, obs, legal):
            return legal[0]
"""

from __future__ import annotations

import importlib
import os
import random
import sys
from collections.abc import Callable, Sequence
from typing import ClassVar

from moon import Action, Observation

__all__ = ["Bot", "BotFactory", "load_bot"]


class Bot:
    """Base class for bots; one instance plays one game (or one seat of a match)."""

    name: ClassVar[str] = "bot"

    def __init__(self, seed: int | None = None) -> None:
        self.rng = random.Random(seed)

    def act(self, obs: Observation, legal: Sequence[Action]) -> Action:
        """Choose one of `legal` (never empty, sorted by id) for `obs.seat`."""
        raise NotImplementedError

    def game_over(self, result: dict[str, object]) -> None:
        """Called once when the game this instance plays is over."""


BotFactory = Callable[[int | None], Bot]


def load_bot(spec: str) -> type[Bot]:
    """A bot class from `random`, `greedy` or `package.module:ClassName` (imported from the
    current directory or the Python path)."""
    from clients.builtin import BUILTIN

    if spec in BUILTIN:
        return BUILTIN[spec]
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(
            f"unknown bot {spec!r}: use {', '.join(BUILTIN)} or MODULE:CLASS"
        )
    # Like `python -m`, look in the current directory first: a bot author runs
    # `moonshot ... --bot mybot:MyBot` next to mybot.py.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import bot module {module_name!r}: {exc}") from exc
    cls = getattr(module, attr, None)
    if not (isinstance(cls, type) and issubclass(cls, Bot)):
        raise ValueError(f"{spec!r} is not a subclass of clients.bot.Bot")
    return cls
