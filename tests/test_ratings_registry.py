"""Rating methods share one interface and one result type: the batch fit and the provisional
figure are registered methods returning a RatingTable, and a new method is one class."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

import ratings
from ratings import Game, RatingError, methods, registry
from store.rating_tables import LOS_MAX_BOTS, RatingRow, RatingTable


def _games(n: int) -> list[Game]:
    """n 3p games among four bots, two games a board."""
    out = []
    for i in range(n):
        bots = [f"b{(i + k) % 4}" for k in range(3)]
        out.append(Game(f"g{i}", f"u{i // 2}", tuple((b,) for b in bots), (1, 2, 3)))
    return out


def test_both_methods_are_registered_and_return_the_one_table_type() -> None:
    assert methods.names() == ("provisional", "batch", "recent")
    games = _games(12)
    batch = methods.get("batch").rate(games, 5.0)
    live = methods.get("provisional").rate(reversed(games), 5.0)
    for table in (batch, live):
        assert isinstance(table, RatingTable)
        assert (table.as_of, table.games, table.boards) == (5.0, 12, 6)
        assert table.level == ratings.LEVEL
        assert sorted(r.bot_id for r in table.rows) == ["b0", "b1", "b2", "b3"]
        assert RatingTable.from_json(table.to_json()) == table
    assert not batch.provisional and live.provisional
    want = ratings.fit(games)
    assert batch.rows == tuple(RatingRow(x.bot_id, x.rating, x.games, x.ci_low, x.ci_high,
                                         x.los_next) for x in want.ratings)
    assert batch.method == want.method and batch.los is not None
    assert batch.los[0][1] == pytest.approx(want.los(batch.rows[0].bot_id, batch.rows[1].bot_id),
                                            abs=1e-6)
    assert [(r.bot_id, r.rating) for r in live.rows] == [
        (x.bot_id, x.rating) for x in ratings.provisional_ratings(games)]
    assert all(r.ci_low is None for r in live.rows) and live.los is None


def test_the_los_matrix_is_made_only_for_pools_it_is_kept_for() -> None:
    games = [Game(f"g{i}", "", tuple((f"b{(i * 3 + k) % (LOS_MAX_BOTS + 2)}",) for k in range(3)),
                  (1, 2, 3)) for i in range(LOS_MAX_BOTS)]
    assert methods.get("batch").rate(games, 0.0).los is None


def test_a_new_method_is_one_class_and_one_registration() -> None:
    class Wins(registry.Method):
        name = "wins-test"
        title = "share of wins"

        def rate(self, games: Iterable[Game], as_of: float) -> RatingTable:
            pool = ratings.canonical(games)
            won: dict[str, int] = {}
            for g in pool:
                for side, place in zip(g.sides, g.places, strict=True):
                    for b in side:
                        won[b] = won.get(b, 0) + (place == 1)
            rows = tuple(RatingRow(b, float(w), 0) for b, w in sorted(won.items(),
                                                                     key=lambda x: -x[1]))
            return RatingTable(method=self.title, as_of=as_of, games=len(pool), boards=0,
                               provisional=True, level=ratings.LEVEL, rows=rows)

    registry.register(Wins())
    try:
        table = methods.get("wins-test").rate(_games(4), 1.0)
        assert table.rows[0].rating == 1.0 and table.games == 4
        with pytest.raises(ValueError, match="registered twice"):
            registry.register(Wins())
    finally:
        registry._METHODS.pop("wins-test")
    with pytest.raises(RatingError, match="provisional, batch, recent"):
        methods.get("wins-test")


def test_recent_is_the_batch_fit_over_the_games_of_its_window() -> None:
    """`recent` fits what `batch` fits, but only the games released in the 30 days before
    the fit's time; a game with no release time is in no window."""
    day = 86400.0
    now = 100 * day
    games = [Game(g.game_id, g.unit, g.sides, g.places, now - (i % 6) * 10 * day)
             for i, g in enumerate(_games(24))]
    games.append(Game("g-undated", "", (("b0",), ("b1",), ("b2",)), (1, 2, 3)))
    window = [g for g in games if g.at is not None and g.at >= now - 30 * day]
    assert 0 < len(window) < len(games) - 1
    got = methods.get("recent").rate(games, now)
    want = methods.get("batch").rate(window, now)
    assert (got.games, got.boards, got.rows) == (want.games, want.boards, want.rows)
    assert got.method.endswith("games of the last 30 days") and not got.provisional
    assert got.los == want.los
    assert methods.get("recent").rate(games, now + 200 * day).rows == ()  # none that recent


def test_a_game_is_the_same_game_whenever_it_was_released() -> None:
    a, b = (Game("g1", "u", (("x",), ("y",), ("z",)), (1, 2, 3), at) for at in (1.0, 2.0))
    assert a == b and ratings.canonical([a, b]) == (a,)


def test_a_method_name_must_fit_in_a_key() -> None:
    class Spaced(registry.Method):
        name = "two words"
        title = "no"

        def rate(self, games: Iterable[Game], as_of: float) -> RatingTable:
            raise AssertionError("never rated")

    with pytest.raises(ValueError, match="lower-case"):
        registry.register(Spaced())
    assert "two words" not in methods.names()
