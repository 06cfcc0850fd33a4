"""The random player: uniform over the legal actions, never a moon bid unless forced."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from bots.player import decision_rng
from moon import Action, ActionKind, Observation
from moon.actions import MOON

__all__ = ["RandomPlayer", "random_action", "random_id"]


def random_action(legal: Sequence[Action], rng: random.Random) -> Action:
    """A uniformly random legal action other than `bid 21`.

    A random moon bid fails nearly always and only drags every score down, so
    games between random bots would hardly end.
    """
    choices = [a for a in legal if not (a.kind is ActionKind.BID and a.value == MOON)]
    return rng.choice(choices or list(legal))


def random_id(legal: Sequence[int], rng: random.Random) -> int:
    """`random_action` over action ids: the id it picks from the same generator.

    `legal` is sorted by id, as the actions are, and `bid 21` is the id `MOON`, so the
    choices are the same list and `rng.choice` draws the same index.
    """
    choices = [a for a in legal if a != MOON]
    return rng.choice(choices or legal)


@dataclass(frozen=True, slots=True)
class RandomPlayer:
    """`random_action` with a generator seeded by the decision (see `bots.player`)."""

    def decide(self, obs: Observation, legal: Sequence[Action], seed: int) -> Action:
        """A random legal action, the same one every time it is asked."""
        return random_action(legal, decision_rng(obs, seed))
