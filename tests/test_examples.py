"""The README's example bot plays legal games (its full network run is in tests/net)."""

from __future__ import annotations

from clients.bot import load_bot
from clients.selfplay import selfplay
from moon import Rules


def test_example_bot_plays_whole_games() -> None:
    cls = load_bot("examples.highest_bot:HighestBot")
    report = selfplay(Rules.make(3), [cls, load_bot("random"), load_bot("greedy")],
                      ["highest", "random", "greedy"], games=5, seed=1)
    assert report.games == 5
    assert report.hands >= 5
