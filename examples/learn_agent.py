"""Train an agent in the Gymnasium environment, then play it on the stack unchanged.

    python -m examples.learn_agent --episodes 3000      # trains, evaluates, saves
    moonshot bot run --bot examples.learn_agent:LearntAgent   # plays what it saved

The agent is the simplest that learns: a linear softmax policy over the seat's
472-float tensor (`learn.openspiel`'s information state, which is also the
environments' observation), trained by REINFORCE against two `house:random` seats in
3p games of three hands. Mostly it learns to pass and let random bidders fail.
Evaluation plays the same seeded games with the untrained (uniform) policy and the
trained one, and prints the mean return of each (+1 first, 0 second, -1 last) with
its standard error.

On the stack the weights become an OpenSpiel policy (`LinearPolicy`: the same tensor,
asked of the OpenSpiel state `learn.runner.PolicyPlayer` builds from what the seat
sees), so what was trained is what plays.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from learn.gym import MoonSeatEnv
from learn.openspiel import NUM_ACTIONS, TENSOR_SIZE
from learn.runner import PolicyPlayer

RULES = {"max_hands": 3}
WEIGHTS = "learn_agent.npz"  # where `train` saves and `LearntAgent` loads (or $LEARN_AGENT)


def probabilities(w: np.ndarray[Any, Any], x: np.ndarray[Any, Any],
                  mask: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The softmax of `w @ [x, 1]` over the actions the mask allows (0 elsewhere)."""
    logits = w[:, :-1] @ x + w[:, -1]
    logits = np.where(mask > 0, logits, -np.inf)
    p = np.exp(logits - logits.max())
    return p / p.sum()  # type: ignore[no-any-return]


def play(env: MoonSeatEnv, w: np.ndarray[Any, Any], seed: int, rng: np.random.Generator
         ) -> tuple[float, list[tuple[np.ndarray[Any, Any], int, np.ndarray[Any, Any]]]]:
    """One game of the seat: its return and each decision (tensor, action, probabilities)."""
    obs, _ = env.reset(seed=seed)
    steps = []
    while True:
        x = obs["observation"]
        p = probabilities(w, x, obs["action_mask"])
        a = int(rng.choice(NUM_ACTIONS, p=p))
        steps.append((x, a, p))
        obs, reward, done, _, _ = env.step(a)
        if done:
            return float(reward), steps


def train(episodes: int, seed: int = 0, lr: float = 0.01) -> np.ndarray[Any, Any]:
    """REINFORCE with a running-mean baseline; the weights (actions x tensor + bias)."""
    env = MoonSeatEnv(players=3, seat=0, opponents="house:random", rules=RULES)
    rng = np.random.default_rng(seed)
    w = np.zeros((NUM_ACTIONS, TENSOR_SIZE + 1))
    baseline = 0.0
    for episode in range(episodes):
        ret, steps = play(env, w, seed * 1_000_003 + episode, rng)
        advantage = ret - baseline
        baseline += 0.01 * (ret - baseline)
        for x, a, p in steps:
            grad = -p
            grad[a] += 1.0  # d log p(a) / d logits
            w[:, :-1] += lr * advantage * np.outer(grad, x)
            w[:, -1] += lr * advantage * grad
    return w


def evaluate(w: np.ndarray[Any, Any], games: int, seed: int = 10**9) -> tuple[float, float]:
    """Mean return over `games` seeded games (the same games for every `w`), and its
    standard error."""
    env = MoonSeatEnv(players=3, seat=0, opponents="house:random", rules=RULES)
    rng = np.random.default_rng(seed)
    returns = np.array([play(env, w, seed + g, rng)[0] for g in range(games)])
    return float(returns.mean()), float(returns.std(ddof=1) / np.sqrt(games))


class LinearPolicy:
    """The weights as an OpenSpiel policy over the `moon` game."""

    def __init__(self, w: np.ndarray[Any, Any]) -> None:
        self.w = w

    def action_probabilities(self, state: Any, player_id: int | None = None
                             ) -> dict[int, float]:
        """The policy's probabilities at the seat's information state."""
        seat = state.current_player() if player_id is None else player_id
        mask = np.zeros(NUM_ACTIONS)
        mask[state.legal_actions(seat)] = 1
        x = np.asarray(state.information_state_tensor(seat), dtype=np.float32)
        p = probabilities(self.w, x, mask)
        return {int(a): float(p[a]) for a in np.flatnonzero(p)}


_LOADED: dict[tuple[str, int], np.ndarray[Any, Any]] = {}  # (path, mtime) -> weights


class LearntAgent(PolicyPlayer):
    """The saved weights (`$LEARN_AGENT`, else learn_agent.npz here) as a bot (a player
    is built for each game: the file is read again only when it changed)."""

    def __init__(self) -> None:
        path = Path(os.environ.get("LEARN_AGENT", WEIGHTS))
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no weights (train them first: "
                                    "python -m examples.learn_agent)")
        key = (str(path.resolve()), path.stat().st_mtime_ns)
        if key not in _LOADED:
            with np.load(path) as saved:
                _LOADED[key] = saved["w"]
        super().__init__(LinearPolicy(_LOADED[key]))


def main(argv: Sequence[str] | None = None) -> int:
    """Train, evaluate against the untrained policy, save."""
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--episodes", type=int, default=3000, help="training games")
    p.add_argument("--eval-games", type=int, default=500, help="evaluation games")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=os.environ.get("LEARN_AGENT", WEIGHTS))
    args = p.parse_args(argv)
    untrained = np.zeros((NUM_ACTIONS, TENSOR_SIZE + 1))
    mean, err = evaluate(untrained, args.eval_games)
    print(f"untrained (uniform) against two house:random: mean return {mean:+.3f} ± {err:.3f}")
    w = train(args.episodes, args.seed)
    mean, err = evaluate(w, args.eval_games)
    print(f"after {args.episodes} training games:            mean return {mean:+.3f} ± {err:.3f}")
    with open(args.out, "wb") as f:  # at that very name (`savez` of a name adds .npz)
        np.savez(f, w=w)
    print(f"saved {args.out}; play it: moonshot bot run --bot examples.learn_agent:LearntAgent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
