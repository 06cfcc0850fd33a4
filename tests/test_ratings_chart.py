"""The ratings chart: a PNG from fit rows."""

from __future__ import annotations

from pathlib import Path

from clients.chart import ratings_chart
from ratings import Game, fit


def test_chart_renders_a_png(tmp_path: Path) -> None:
    games = [Game(f"g{i}", f"b{i // 3}", tuple((b,) for b in order), (1, 2, 3))
             for i, order in enumerate(["abc", "abd", "bcd", "acd"] * 5)]
    rows = [(r.bot_id, r.rating, r.ci_low, r.ci_high, r.games) for r in fit(games).ratings]
    out = ratings_chart(rows, tmp_path / "chart.png", "3p ratings")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ratings_chart([], tmp_path / "empty.png", "nothing yet").exists()
