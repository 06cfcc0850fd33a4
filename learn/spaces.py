"""What the environments show an agent: the observation tensor's space and the action mask.

Shared by `learn.pettingzoo` and `learn.gym`: the observation is a dict, as in
PettingZoo's classic card games, of `observation` (`learn.openspiel.encode` of the
seat's `moon.Observation`) and `action_mask` (1 for each legal engine action id).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from learn.openspiel import NUM_ACTIONS, SCORE_SLOTS, TENSOR_SIZE, encode
from moon import GameState, Rules

__all__ = ["dict_space", "observe"]


def dict_space(rules: Rules) -> spaces.Dict:
    """Dict(observation: Box of TENSOR_SIZE floats, action_mask: Box of NUM_ACTIONS 0/1)."""
    low = np.zeros(TENSOR_SIZE, np.float32)
    high = np.ones(TENSOR_SIZE, np.float32)
    # A score (over the target) moves by at most 21 a hand, either way.
    goal = rules.marks_target if rules.scoring == "marks" else rules.target
    low[SCORE_SLOTS] = -21 * rules.max_hands / goal
    high[SCORE_SLOTS] = 21 * rules.max_hands / goal
    return spaces.Dict({
        "observation": spaces.Box(low, high, dtype=np.float32),
        "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), dtype=np.int8),
    })


def observe(st: GameState, seat: int) -> dict[str, Any]:
    """`seat`'s observation dict; its mask is empty unless `seat` is to act."""
    tensor = np.zeros(TENSOR_SIZE, np.float32)
    encode(st.observation(seat), tensor)
    mask = np.zeros(NUM_ACTIONS, np.int8)
    if not st.is_over and st.to_act == seat:
        mask[list(st.legal_ids())] = 1
    return {"observation": tensor, "action_mask": mask}
