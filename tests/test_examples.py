"""The README's example bot plays legal games (its full network run is in tests/net)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from clients.bot import load_bot
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
