"""The random player: uniform over the legal actions, never a moon bid unless forced."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from bots.player import decision_rng
from moon import Action, ActionKind, Observation
from moon.actions import MOON

__all__ = ["RandomPlayer", "random_action"]


def random_action(legal: Sequence[Action], rng: random.Random) -> Action:
    """A uniformly random legal action other than `bid 21`.

    A random moon bid fails nearly always and only drags every score down, so
    games between random bots would hardly end.
    """
    choices = [a for a in legal if not (a.kind is ActionKind.BID and a.value == MOON)]
    return rng.choice(choices or list(legal))


@dataclass(frozen=True, slots=True)
class RandomPlayer:
    """`random_action` with a generator seeded by the decision (see `bots.player`)."""

    def decide(self, obs: Observation, legal: Sequence[Action], seed: int) -> Action:
        """A random legal action, the same one every time it is asked."""
        return random_action(legal, decision_rng(obs, seed))
