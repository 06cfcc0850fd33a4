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

__all__ = ["Bot", "BotFactory", "bad_answer"]


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


def _shown(value: object) -> str:
    text = value.label if isinstance(value, Action) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def bad_answer(choice: object, legal: Sequence[Action]) -> str:
    """What is wrong with `choice` as an answer to `legal`, for people: `returned 9999 (a
    int), not one of the legal actions; legal were: pass, bid 30, ...` (self-play and the
    SDK say the same)."""
    allowed = ", ".join(a.label for a in legal)
    if choice is None:
        what = "returned None"
    elif isinstance(choice, Action):
        what = f"returned {_shown(choice)!r}, which is not legal here"
    else:
        what = (f"returned {_shown(choice)} (a {type(choice).__name__}), "
                "not one of the legal actions")
    return f"{what}; legal were: {allowed}"
