"""Moon as a Gymnasium environment: one seat, the others played by house bots.

    env = MoonSeatEnv(players=3, seat=0, opponents="house:greedy", rules={"max_hands": 5})
    obs, info = env.reset(seed=7)
    obs, reward, terminated, truncated, info = env.step(action)

The agent's seat is `seat` (in 2v2 its partner, `seat + 2`, is a house bot too);
`opponents` names the house bot (`bots.house` ids) of every other seat, or one per other
seat in seat order. The observation is the dict of `learn.spaces` (the seat's tensor
and its action mask, also in `info["action_mask"]`); actions are the engine's ids,
`Discrete(98)`. The reward is 0 until the end, then the seat's return
(`learn.openspiel.game_returns`).

Seeded and reproducible: `reset(seed=S)` seeds the environment's generator, which
draws the game's seed; the house bots decide as a function of that seed and what
their seat sees (`bots.player`), so one seed and one list of actions replay one
game. An illegal action is replaced by a legal one drawn from that generator, as the
referee replaces a bot's illegal answer, and `info["illegal"]` says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from bots.house import parse
from bots.player import DecisionKeys, Player
from bots.random_play import RandomPlayer, random_id
from learn.openspiel import NUM_ACTIONS, Played, game_returns
from learn.spaces import dict_space, observe
from moon import GameState, Rules
from moon.actions import ACTIONS

__all__ = ["MoonSeatEnv"]


class MoonSeatEnv(gymnasium.Env[dict[str, Any], np.int64]):
    """One seat of Moon against house bots."""

    metadata = {"render_modes": ["ansi"]}  # noqa: RUF012 (gymnasium declares it so)

    def __init__(self, players: int = 3, seat: int = 0,
                 opponents: str | Sequence[str] = "house:greedy",
                 rules: dict[str, object] | None = None, render_mode: str | None = None
                 ) -> None:
        self.rules = Rules.make(players, rules)
        if not 0 <= seat < players:
            raise ValueError(f"seat {seat}: a {players}-player game has seats 0 to {players - 1}")
        others = [s for s in range(players) if s != seat]
        names = [opponents] * len(others) if isinstance(opponents, str) else list(opponents)
        if len(names) != len(others):
            raise ValueError(f"{len(names)} opponents for the {len(others)} other seats")
        self.seat = seat
        self._players: dict[int, Player] = {
            s: parse(name).player() for s, name in zip(others, names, strict=True)}
        self.render_mode = render_mode
        self.observation_space = dict_space(self.rules)
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        # The house:random seats, which decide from the engine's state (see `_advance`).
        self._fast = frozenset(s for s, p in self._players.items() if type(p) is RandomPlayer)
        self.game_seed = 0
        self.state = GameState.new(self.rules, 0)
        self._keys = DecisionKeys(0)
        self._legal: tuple[int, ...] = ()  # the seat's legal ids now
        self._played = Played()  # the hand's played slots, for the seat's tensor

    def _advance(self) -> tuple[int, ...]:
        """Let the house bots play until the seat is to act or the game is over.

        Returns the seat's legal ids (empty once the game is over). A `house:random`
        seat decides from the engine's state (`bots.player.DecisionKeys`,
        `bots.random_play.random_id`): the id its `decide` would pick from the seat's
        observation, from the same decision key, without building either.
        """
        st = self.state
        seat, players, game_seed = self.seat, self._players, self.game_seed
        fast, keys = self._fast, self._keys
        while st.phase != 4:
            ids = st.legal_ids()
            s = st.to_act
            if s == seat:
                return ids
            if s in fast:
                st.apply_id(random_id(ids, keys.key(st, s)))
                continue
            action = players[s].decide(st.observation(s), tuple(map(ACTIONS.__getitem__, ids)),
                                       game_seed)
            if action.id in ids:
                st.apply_id(action.id)
            else:
                st.apply(action, s)  # raises, saying what was legal
        return ()

    def _observe(self, legal: tuple[int, ...], illegal: bool = False
                 ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The seat's observation and the step's info, each with its own mask of `legal`."""
        self._legal = legal
        obs = observe(self.state, self.seat, self._played, legal)
        return obs, {"action_mask": obs["action_mask"].copy(), "illegal": illegal,
                     "game_seed": self.game_seed}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A new game whose seed the environment's generator draws."""
        super().reset(seed=seed)
        self.game_seed = int(self.np_random.integers(0, 1 << 63))
        self.state = GameState.new(self.rules, self.game_seed)
        self._keys = DecisionKeys(self.game_seed)
        return self._observe(self._advance())

    def step(self, action: np.int64 | int
             ) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Play `action` for the seat, then the house bots until the seat is to act again."""
        st = self.state
        legal = self._legal
        if st.phase == 4 or not legal:
            raise RuntimeError("the game is over or not started: call reset()")
        illegal = int(action) not in legal
        if illegal:
            action = legal[int(self.np_random.integers(len(legal)))]
        st.apply_id(int(action))
        obs, info = self._observe(self._advance(), illegal)
        if st.phase == 4:
            return obs, game_returns(st)[self.seat], True, False, info
        return obs, 0.0, False, False, info

    def render(self) -> str | None:
        """The game in one line (`ansi`)."""
        return self.state.summary() if self.render_mode == "ansi" else None
