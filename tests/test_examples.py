"""The README's example bot plays legal games (its full network run is in tests/net)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clients.builtin import load_bot
from clients.selfplay import selfplay
from moon import Rules

ROOT = Path(__file__).resolve().parent.parent


def test_example_bot_plays_whole_games() -> None:
    cls = load_bot("examples.highest_bot:HighestBot")
    report = selfplay(Rules.make(3), [cls, load_bot("random"), load_bot("greedy")],
                      ["highest", "random", "greedy"], games=5, seed=1)
    assert report.games == 5
    assert report.hands >= 5


def test_a_bot_file_in_the_current_directory_is_found(tmp_path: Path) -> None:
    (tmp_path / "mybot.py").write_text(
        "from clients.bot import Bot\n\n"
        "class FirstBot(Bot):\n"
        "    def act(self, obs, legal):\n"
        "        return legal[0]\n"
    )
    res = subprocess.run(
        [sys.executable, "-m", "clients.cli", "selfplay", "--bots", "mybot:FirstBot,greedy,greedy",
         "--games", "3", "--quiet"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert res.returncode == 0, res.stderr
    assert "mybot:FirstBot" in res.stdout


def test_the_readme_shows_the_example_bot_as_it_is() -> None:
    readme = (ROOT / "README.md").read_text()
    source = (ROOT / "examples" / "highest_bot.py").read_text()
    code = source[source.index("from clients.bot import Bot"):].strip()
    assert f"```python\n{code}\n```" in readme


def test_example_bot_beats_random_as_the_readme_says() -> None:
    cls = load_bot("examples.highest_bot:HighestBot")
    rnd = load_bot("random")
    report = selfplay(Rules.make(3), [cls, rnd, rnd], ["highest", "random", "random"],
                      games=100, seed=1)
    assert report.seats[0].wins >= 60, report.lines()  # "about 7 games in 10"


def test_the_search_example_plays_and_beats_random() -> None:
    cls = load_bot("examples.search_bot:SearchBot")
    rnd = load_bot("random")
    report = selfplay(Rules.make(3), [cls, rnd, rnd], ["search", "random", "random"],
                      games=3, seed=1)
    assert report.games == 3
    assert report.seats[0].wins >= 2, report.lines()
    report = selfplay(Rules.make(4), [cls, rnd, cls, rnd], ["search", "random"] * 2,
                      games=1, seed=2)
    assert report.games == 1


def test_the_readme_shows_the_search_example_as_it_is() -> None:
    readme = (ROOT / "README.md").read_text()
    source = (ROOT / "examples" / "search_bot.py").read_text()
    code = source[source.index("from bots import"):].strip()
    assert f"```python\n{code}\n```" in readme


def test_the_learning_example_learns_and_plays_what_it_learnt(
        tmp_path: Path, monkeypatch: Any) -> None:
    """examples/learn_agent.py: a short training beats the untrained policy on the same
    seeded games; saved and loaded as the bot `examples.learn_agent:LearntAgent`, the
    weights give the OpenSpiel state the probabilities they give the Gymnasium
    observation at every decision of a game, and the bot plays whole games legally."""
    from examples import learn_agent as la
    from learn.gym import MoonSeatEnv
    from learn.openspiel import load, wrap

    untrained = np.zeros((la.NUM_ACTIONS, la.TENSOR_SIZE + 1))
    w = la.train(300, seed=1)
    before, _ = la.evaluate(untrained, 200)
    after, err = la.evaluate(w, 200)
    assert after - before > 0.3 + 2 * err, (before, after, err)
    env = MoonSeatEnv(players=3, seat=0, opponents="house:random", rules=la.RULES)
    policy = la.LinearPolicy(w)
    game = load(3, la.RULES)
    obs, _ = env.reset(seed=5)
    done, decisions = False, 0
    while not done:
        gym_p = la.probabilities(w, obs["observation"], obs["action_mask"])
        spiel_p = policy.action_probabilities(wrap(game, env.state.copy()), 0)
        assert set(spiel_p) == set(np.flatnonzero(gym_p).tolist())
        assert all(abs(spiel_p[a] - gym_p[a]) < 1e-6 for a in spiel_p)
        obs, _, done, _, _ = env.step(max(spiel_p, key=spiel_p.__getitem__))
        decisions += 1
    assert decisions >= 10
    np.savez(tmp_path / "w.npz", w=w)
    monkeypatch.setenv("LEARN_AGENT", str(tmp_path / "w.npz"))
    cls = load_bot("examples.learn_agent:LearntAgent")
    report = selfplay(Rules.make(3, la.RULES), [cls, load_bot("random"), load_bot("greedy")],
                      ["learnt", "random", "greedy"], games=3, seed=2)
    assert report.games == 3
    monkeypatch.setenv("LEARN_AGENT", str(tmp_path / "none.npz"))
    with pytest.raises(FileNotFoundError, match="train them first"):
        load_bot("examples.learn_agent:LearntAgent")(1)
