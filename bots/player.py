"""What a house player is: a pure function of the seat's observation and the game's seed.

A house bot keeps nothing between decisions. Whatever randomness it uses comes
from the decision's key (`decision_key`: the game seed, the seat and where in the
game the decision falls), directly or through the generator `decision_rng` seeds
with it, so a game replayed from its action log (a worker killed mid-game) asks
the same questions and gets the same answers.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol

from moon import Action, GameState, Observation
from moon.deal import mix64

__all__ = ["DecisionKeys", "Player", "decision_key", "decision_rng"]

_M = (1 << 64) - 1
_STREAM = 0x6B6F_7573_6562_6F74  # keeps a bot's numbers apart from the deal's


class Player(Protocol):
    """A house player: the same (observation, legal actions, game seed) gives the same action."""

    def decide(self, obs: Observation, legal: Sequence[Action], seed: int) -> Action:
        """One of `legal` (never empty, sorted by id) for `obs.seat`, in the game of `seed`."""
        ...


def decision_key(obs: Observation, seed: int) -> int:
    """A 64-bit number naming this decision of this seat in the game of `seed`.

    A seat decides at most once per (hand, phase, calls so far, tiles played so
    far), so the key differs for every decision of one seat in one game.
    """
    plays = sum(len(t.plays) for t in obs.tricks) + len(obs.current)
    h = mix64((seed ^ _STREAM) & _M)
    for part in (obs.seat, obs.hand_number, int(obs.phase), len(obs.bids), plays):
        h = mix64(h ^ part)
    return h


def decision_rng(obs: Observation, seed: int) -> random.Random:
    """The generator of one decision: a function of the game seed, the seat and the position."""
    return random.Random(decision_key(obs, seed))


class DecisionKeys:
    """`decision_key(st.observation(seat), seed)` straight from the engine's state, for
    the decisions of one game (an environment that runs house players in-process).

    The key mixes the seed, the seat, the hand number, the phase, the calls so far and
    the tiles played so far, in that order. All but the last two change only between
    phases, and the calls only in the auction, so both prefixes of the mix are kept (a
    few entries per hand of the game).
    """

    __slots__ = ("_calls", "_phase", "_start")

    def __init__(self, seed: int) -> None:
        self._start = mix64((seed ^ _STREAM) & _M)
        self._phase: dict[tuple[int, int, int], int] = {}
        self._calls: dict[tuple[int, int, int, int], int] = {}

    def key(self, st: GameState, seat: int) -> int:
        """The key of `seat`'s decision now (`st` not over)."""
        where = (seat, st.hand_index, st.phase, len(st.bids))
        h = self._calls.get(where)
        if h is None:
            at = where[:3]
            p = self._phase.get(at)
            if p is None:
                # The observation's hand number is hand_index + 1 while the game runs.
                p = mix64(mix64(mix64(self._start ^ seat) ^ (st.hand_index + 1)) ^ st.phase)
                self._phase[at] = p
            h = self._calls[where] = mix64(p ^ len(st.bids))
        return mix64(h ^ len(st.plays))
