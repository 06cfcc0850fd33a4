"""Any OpenSpiel bot as a Moon player, so it can play on the stack as a remote bot.

A remote bot gets its seat's observation and the legal actions, never a game state.
`SpielPlayer` makes the state OpenSpiel's bots expect: a state of the `moon` game in
the seat's information set, its hidden tiles dealt by the engine's sampler
(`learn.openspiel.resample`), so that it holds nothing the seat may not see. A new
bot is built for each decision (from the game, the seat and a seed), asked to `step`,
and its action checked against the legal ones.

The decision's generator is seeded from the game's seed and where the decision falls
(`bots.player.decision_rng`), as a house player's, so a `SpielPlayer` is a
`bots.player.Player`: `moonshot bot run --bot learn.runner:IsmctsPlayer` runs it on a
referee (the SDK seeds it from the bot's own seed, as it does `pimc`). `IsmctsPlayer`
is OpenSpiel's own ISMCTS (`open_spiel.python.algorithms.ismcts`) with its random
rollout evaluator; subclass it to change the budget:

    class BigIsmcts(IsmctsPlayer):
        simulations = 400
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
import pyspiel
from open_spiel.python.algorithms import ismcts, mcts

from bots.player import decision_rng
from learn.openspiel import MoonGame, MoonState, load, resample
from moon import Action, Observation

__all__ = ["BotMaker", "IsmctsPlayer", "SpielPlayer", "ismcts_bot"]

# (game, seat, generator of this decision) -> an OpenSpiel bot for one decision.
BotMaker = Callable[[MoonGame, int, random.Random], Any]


def ismcts_bot(simulations: int, uct_c: float = 2.0) -> BotMaker:
    """OpenSpiel's ISMCTS with one random rollout a leaf, `simulations` per decision.

    Its deals of the hidden tiles come from the decision's generator through the
    engine's sampler, so one decision is the same every time it is asked.
    """
    def make(game: MoonGame, seat: int, rng: random.Random) -> Any:
        state = np.random.RandomState(rng.getrandbits(32))
        evaluator = mcts.RandomRolloutEvaluator(1, state)
        bot = ismcts.ISMCTSBot(game, evaluator, uct_c, simulations, random_state=state)

        def deal(st: MoonState, player: int) -> MoonState:
            return resample(game, st.observation_of(player), rng)

        bot.set_resampler(deal)
        return bot

    return make


class SpielPlayer:
    """A `bots.player.Player` that asks an OpenSpiel bot (built by `make`) each decision."""

    def __init__(self, make: BotMaker) -> None:
        self._make = make
        self._games: dict[tuple[int, tuple[tuple[str, object], ...]], MoonGame] = {}

    def game(self, obs: Observation) -> MoonGame:
        """The `moon` game of the observation's rules (loaded once per rules)."""
        key = (obs.players, tuple(obs.rules.options().items()))
        found = self._games.get(key)
        if found is None:
            found = self._games[key] = load(obs.players, obs.rules.options())
        return found

    def decide(self, obs: Observation, legal: Sequence[Action], seed: int) -> Action:
        """The bot's action for `obs` (any legal one when only one is)."""
        if len(legal) == 1:
            return legal[0]
        rng = decision_rng(obs, seed)
        game = self.game(obs)
        state = resample(game, obs, rng)  # the seat's position; the rest drawn
        bot = self._make(game, obs.seat, rng)
        choice = int(bot.step(state))
        for action in legal:
            if action.id == choice:
                return action
        raise pyspiel.SpielError(f"the OpenSpiel bot chose {choice}, not a legal action; "
                                 f"legal: {', '.join(a.label for a in legal)}")


class IsmctsPlayer(SpielPlayer):
    """OpenSpiel's ISMCTS at `simulations` a decision (a subclass may change it)."""

    simulations: ClassVar[int] = 100
    uct_c: ClassVar[float] = 2.0

    def __init__(self) -> None:
        super().__init__(ismcts_bot(self.simulations, self.uct_c))
