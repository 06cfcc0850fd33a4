"""Moon as a PettingZoo AEC environment: `MoonEnv(players=3, rules={"max_hands": 5})`.

Agents are `player_0` .. `player_{n-1}` (seat order; in 2v2 seats 0 and 2 are partners).
Each agent's observation is a dict, as PettingZoo's classic card games give it:
`observation` (the seat's `moon.Observation` encoded by `learn.openspiel.encode`) and
`action_mask` (1 for each legal engine action id; all 0 when the agent is not to act).
Actions are the engine's ids (`moon.actions`), `Discrete(98)`.

`reset(seed=S)` starts the engine's game of seed `S`, so its deals are those of a
referee's game of that seed; `reset()` without a seed draws the next game's seed from
the generator the last seeded reset made. Rewards come once, at the end: the game's
returns (`learn.openspiel.game_returns`), and every agent terminates then.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from learn.openspiel import NUM_ACTIONS, Played, game_returns, tensor_of
from learn.spaces import dict_space, mask_of, no_mask
from moon import GameState, Rules
from moon.deal import MAX_SEED

__all__ = ["MoonEnv", "env"]


class MoonEnv(AECEnv):
    """The AEC environment; one instance plays one game at a time."""

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["human", "ansi"], "name": "moon_v0", "is_parallelizable": False}

    def __init__(self, players: int = 3, rules: dict[str, object] | None = None,
                 render_mode: str | None = None) -> None:
        super().__init__()
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode {render_mode!r}: allowed None, human or ansi")
        self.rules = Rules.make(players, rules)
        self.render_mode = render_mode
        self.possible_agents = [f"player_{s}" for s in range(players)]
        self.agents = self.possible_agents[:]
        space = dict_space(self.rules)
        self.observation_spaces = dict.fromkeys(self.possible_agents, space)
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in self.possible_agents}
        self._rng = np.random.default_rng()
        self._seat = {a: s for s, a in enumerate(self.possible_agents)}
        self._played = Played()  # the hand's played slots, shared by every seat's tensor
        self._legal: tuple[int, ...] | None = None  # legal_ids() of this step, once asked
        self.state = GameState.new(self.rules, 0)

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        """The same Dict space for every agent."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        """Discrete(98): the engine's action ids; the mask says which are legal."""
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """A new game: the engine's game of `seed`, or of a seed drawn from the generator."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
            game_seed = seed % (MAX_SEED + 1)
        else:
            game_seed = int(self._rng.integers(0, 1 << 63))
        self.state = GameState.new(self.rules, game_seed)
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self.state.to_act]
        self._legal = None

    def observe(self, agent: str) -> dict[str, Any]:
        """`agent`'s observation dict (see the module's docstring): new arrays each call."""
        seat = self._seat[agent]
        st = self.state
        tensor = tensor_of(st, seat, self._played)
        if st.to_act == seat and st.phase != 4:
            legal = self._legal
            if legal is None:
                legal = self._legal = st.legal_ids()
            return {"observation": tensor, "action_mask": mask_of(legal)}
        return {"observation": tensor, "action_mask": no_mask()}

    def step(self, action: int | None) -> None:
        """Apply the selected agent's action (checked: an illegal one raises)."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        st = self.state
        legal = self._legal
        if legal is None:
            legal = st.legal_ids()
        aid = int(action) if action is not None else -1
        if aid in legal and st.to_act == self._seat[agent]:
            st.apply_id(aid)
        else:
            st.apply(aid, self._seat[agent])  # raises, saying what was legal
        self._legal = None
        self._cumulative_rewards[agent] = 0.0
        if st.phase == 4:
            returns = game_returns(st)
            for s, a in enumerate(self.possible_agents):
                self.rewards[a] = returns[s]
                self.terminations[a] = True
            self._accumulate_rewards()
        else:
            self.agent_selection = self.possible_agents[st.to_act]
        if self.render_mode == "human":
            self.render()

    def render(self) -> str | None:
        """The game in one line (printed in `human` mode, returned in `ansi`)."""
        if self.render_mode is None:
            return None
        text = self.state.summary()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release."""


def env(**kwargs: Any) -> MoonEnv:
    """A new environment (PettingZoo's usual constructor name)."""
    return MoonEnv(**kwargs)
