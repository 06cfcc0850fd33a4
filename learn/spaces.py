"""What the environments show an agent: the observation tensor's space and the action mask.

Shared by `learn.pettingzoo` and `learn.gym`: the observation is a dict, as in
PettingZoo's classic card games, of `observation` (`learn.openspiel.encode` of the
seat's `moon.Observation`) and `action_mask` (1 for each legal engine action id).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from learn.openspiel import NUM_ACTIONS, SCORE_SLOTS, TENSOR_SIZE, Played, tensor_of
from moon import GameState, Rules

__all__ = ["Played", "dict_space", "mask_of", "no_mask", "observe"]


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


_INT8 = np.dtype(np.int8)


def mask_of(legal: tuple[int, ...]) -> np.ndarray[Any, np.dtype[np.int8]]:
    """A new action mask: 1 at each id of `legal`."""
    buf = bytearray(NUM_ACTIONS)
    for a in legal:
        buf[a] = 1
    return np.frombuffer(buf, _INT8)


def no_mask() -> np.ndarray[Any, np.dtype[np.int8]]:
    """A new action mask with no legal action (a seat not to act)."""
    return np.zeros(NUM_ACTIONS, _INT8)


def observe(st: GameState, seat: int, played: Played | None = None,
            legal: tuple[int, ...] | None = None) -> dict[str, Any]:
    """`seat`'s observation dict; its mask is empty unless `seat` is to act.

    `played` is the caller's cache of the hand's played slots (`learn.openspiel.Played`)
    and `legal` the engine's `legal_ids()` if the caller has them already. Both arrays
    are new, and nothing here keeps or changes them afterwards.
    """
    tensor = tensor_of(st, seat, played)
    if st.phase != 4 and st.to_act == seat:
        return {"observation": tensor,
                "action_mask": mask_of(st.legal_ids() if legal is None else legal)}
    return {"observation": tensor, "action_mask": no_mask()}
