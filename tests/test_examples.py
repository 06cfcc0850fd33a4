"""The README's example bot plays legal games (its full network run is in tests/net)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
