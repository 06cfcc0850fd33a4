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

import random
from collections.abc import Callable, Sequence
from typing import ClassVar

from moon import Action, Observation

__all__ = ["Bot", "BotFactory"]


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
