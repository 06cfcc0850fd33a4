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

`PolicyPlayer` plays any policy over the `moon` game (OpenSpiel's
`policy.Policy` interface: `action_probabilities(state, player)`, such as what its
learning algorithms give): it draws an action by those probabilities with the
decision's generator, or plays the likeliest with `greedy`. A class with no
arguments runs on a referee:

    class MyAgent(PolicyPlayer):
        def __init__(self) -> None:
            super().__init__(load_my_policy(), greedy=True)
"""

from __future__ import annotations

import math
import numbers
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Protocol

import numpy as np
import pyspiel
from open_spiel.python.algorithms import ismcts, mcts

from bots.player import decision_rng
from learn.openspiel import MoonGame, MoonState, load, resample
from moon import Action, Observation
from moon.actions import ACTIONS

__all__ = ["BotMaker", "IsmctsPlayer", "Policy", "PolicyPlayer", "SpielPlayer", "ismcts_bot",
           "policy_bot"]

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


class Policy(Protocol):
    """What `policy_bot` asks of a policy: OpenSpiel's `policy.Policy` interface."""

    def action_probabilities(self, state: Any, player_id: int | None = None
                             ) -> Mapping[int, float]:
        """Each action's probability for `player_id` at `state` (zeros may be left out)."""
        ...


class _PolicyStep:
    """One decision of a policy, as the `step` of an OpenSpiel bot."""

    def __init__(self, policy: Policy, seat: int, rng: random.Random, greedy: bool) -> None:
        self.policy, self.seat, self.rng, self.greedy = policy, seat, rng, greedy

    def step(self, state: MoonState) -> int:
        """An action drawn by the policy's probabilities (the likeliest if greedy)."""
        probs = self.policy.action_probabilities(state, self.seat)
        try:
            pairs = dict(probs).items()
            if any(isinstance(a, bool) or not isinstance(a, numbers.Integral) for a, _ in pairs):
                raise TypeError("a key is not an integer action id")
            items = sorted((int(a), float(p)) for a, p in pairs)
        except (TypeError, ValueError) as exc:
            raise pyspiel.SpielError(
                f"the policy's action_probabilities gave {probs!r:.200}, not a mapping of "
                f"action ids to probabilities: {exc}") from exc
        legal = state.legal_actions(self.seat)
        bad = [f"{a}: {p} ({'not finite' if not math.isfinite(p) else 'negative'})"
               if not (math.isfinite(p) and p >= 0) else f"{a}: {p} (not a legal action)"
               for a, p in items if not (math.isfinite(p) and p >= 0)
               or (p > 0 and a not in legal)]
        items = [(a, p) for a, p in items if p > 0]
        if bad or not items:
            why = ("unusable probabilities: " + ", ".join(bad[:5]) if bad
                   else "no action a positive probability")
            shown = ", ".join(f"{a} ({ACTIONS[a].label})" for a in legal)
            raise pyspiel.SpielError(f"the policy gave {why}; legal: {shown}")
        if self.greedy:  # ties to the lowest id
            return max(items, key=lambda ap: (ap[1], -ap[0]))[0]
        return self.rng.choices([a for a, _ in items], [p for _, p in items])[0]


def policy_bot(policy: Policy, greedy: bool = False) -> BotMaker:
    """Any policy over the `moon` game as a bot: each decision, an action drawn by its
    `action_probabilities` with the decision's generator (the likeliest if `greedy`;
    probabilities that do not sum to 1 are drawn in proportion).

    The state it is asked about is the seat's information set with the hidden tiles
    dealt by the engine's sampler, as for every `SpielPlayer`: a policy of the
    information state (its string or tensor, or the observation's) sees exactly what
    the seat sees; one that reads the hidden tiles reads a random deal.
    """
    def make(game: MoonGame, seat: int, rng: random.Random) -> _PolicyStep:
        return _PolicyStep(policy, seat, rng, greedy)

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


class PolicyPlayer(SpielPlayer):
    """A policy over the `moon` game as a player (`policy_bot`)."""

    def __init__(self, policy: Policy, greedy: bool = False) -> None:
        super().__init__(policy_bot(policy, greedy))
