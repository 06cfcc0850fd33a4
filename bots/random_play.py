"""The random player: uniform over the legal actions, never a moon bid unless forced."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from bots.player import decision_key
from moon import Action, ActionKind, Observation
from moon.actions import MOON

__all__ = ["RandomPlayer", "random_action", "random_id"]


def _choices(legal: Sequence[Action]) -> Sequence[Action]:
    """The legal actions but `bid 21`, unless it is the only one.

    A random moon bid fails nearly always and only drags every score down, so
    games between random bots would hardly end.
    """
    return [a for a in legal if not (a.kind is ActionKind.BID and a.value == MOON)] or legal


def random_action(legal: Sequence[Action], rng: random.Random) -> Action:
    """A uniformly random legal action other than `bid 21`, drawn from `rng`."""
    return rng.choice(_choices(legal))


def random_id(legal: Sequence[int], key: int) -> int:
    """The id `RandomPlayer` picks at the decision of `key` (`bots.player.decision_key`).

    `legal` is sorted by id, as the actions are, and `bid 21` is the id `MOON`, so the
    choices are the same list, in the same order, as `RandomPlayer.decide`'s.
    """
    if MOON in legal and len(legal) > 1:
        legal = [a for a in legal if a != MOON]
    return legal[key % len(legal)]


@dataclass(frozen=True, slots=True)
class RandomPlayer:
    """Uniform over the legal actions but `bid 21`, picked by the decision's key.

    The key (`bots.player.decision_key`) is a 64-bit mix of the game's seed, the seat
    and the position, so `key % len(choices)` is uniform to within `len / 2**64`, and a
    replayed game picks the same actions. Indexing by the key instead of seeding a
    generator with it spares a Mersenne Twister's seeding (4 µs, five engine steps) at
    every decision, which is most of what a random seat costs an environment
    (`learn.gym`) or a referee.
    """

    def decide(self, obs: Observation, legal: Sequence[Action], seed: int) -> Action:
        """A random legal action, the same one every time it is asked."""
        choices = _choices(legal)
        return choices[decision_key(obs, seed) % len(choices)]
