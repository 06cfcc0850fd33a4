"""Sequential Elo: symmetric, conserving, order-independent, and it finds the stronger bot."""

from __future__ import annotations

import random
from typing import Any

import pytest

from ratings.elo import EloRating, expected_score, game_order, sequential_elo
from store.errors import InvalidArgument


def g3(mid: str, bots: list[str], place: list[int]) -> dict[str, Any]:
    final = [30 - 10 * p for p in place]
    winner = place.index(1) if place.count(1) == 1 else None
    return {"match_id": mid, "bot_ids": bots, "players": 3, "final": final,
            "winner": winner, "placement": place, "end": "target", "group": ""}


def g4(mid: str, bots: list[str], winner: int | None) -> dict[str, Any]:
    final = [10, 10] if winner is None else [21, 5] if winner == 0 else [5, 21]
    place = [1 if winner is None or s % 2 == winner else 2 for s in range(4)]
    return {"match_id": mid, "bot_ids": bots, "players": 4, "final": final,
            "winner": winner, "placement": place, "end": "target", "group": ""}


def test_expected_score() -> None:
    assert expected_score(1500, 1500) == 0.5
    assert expected_score(1900, 1500) == pytest.approx(10 / 11)
    assert expected_score(1500, 1900) + expected_score(1900, 1500) == pytest.approx(1)


def test_head_to_head_2v2_between_equals_is_symmetric() -> None:
    r = sequential_elo([g4("m1", ["x", "y", "x", "y"], 0)], k=32)
    assert r == {"x": EloRating(1516.0, 1), "y": EloRating(1484.0, 1)}


def test_3p_game_is_three_contests_at_half_k() -> None:
    r = sequential_elo([g3("m1", ["a", "b", "c"], [1, 2, 3])], k=32)
    assert r["a"].rating == pytest.approx(1516)
    assert r["b"].rating == pytest.approx(1500)
    assert r["c"].rating == pytest.approx(1484)
    shared = sequential_elo([g3("m1", ["a", "b", "c"], [1, 1, 3])], k=32)
    assert shared["a"].rating == shared["b"].rating == pytest.approx(1508)


def test_2v2_with_rotating_partners_uses_team_averages() -> None:
    # Team 0 is (a, c), team 1 is (b, d); every bot moves by K * (S - E) in total.
    r = sequential_elo([g4("m1", ["a", "b", "c", "d"], 1)], k=32)
    assert r["b"].rating == r["d"].rating == pytest.approx(1516)
    assert r["a"].rating == r["c"].rating == pytest.approx(1484)
    draw = sequential_elo([g4("m1", ["a", "b", "c", "d"], None)])
    assert all(x.rating == 1500 for x in draw.values())


def _random_games(seed: int, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    field = [f"b{i}" for i in range(6)]
    games = []
    for i in range(count):
        bots = rng.sample(field, 3)
        games.append(g3(f"g{i}", bots, rng.choice([[1, 2, 3], [2, 1, 3], [1, 1, 3], [3, 2, 2]])))
    return games


def test_total_rating_is_conserved() -> None:
    r = sequential_elo(_random_games(1, 200))
    assert sum(x.rating for x in r.values()) == pytest.approx(1500 * len(r))
    assert sum(x.games for x in r.values()) == 600


def test_order_of_arrival_does_not_matter() -> None:
    games = _random_games(2, 100)
    shuffled = list(games)
    random.Random(9).shuffle(shuffled)
    assert sequential_elo(shuffled) == sequential_elo(games)
    assert sequential_elo([*games, games[5]]) == sequential_elo(games)


def test_games_run_in_natural_id_order() -> None:
    assert sorted(["g10", "g9", "g1"], key=game_order) == ["g1", "g9", "g10"]
    # g9 is played before g10 (not after, as plain string order would have it).
    first, second = g3("g9", ["a", "b", "c"], [1, 2, 3]), g3("g10", ["a", "b", "c"], [3, 2, 1])
    padded = [dict(first, match_id="g09"), second]
    swapped = [dict(first, match_id="g10"), dict(second, match_id="g09")]
    assert sequential_elo([second, first]) == sequential_elo(padded)
    assert sequential_elo([first, second]) != sequential_elo(swapped)


def test_a_stronger_bot_rises() -> None:
    rng = random.Random(5)
    games = []
    for i in range(120):
        others = rng.sample(["b", "c", "d"], 2)
        seats = ["a", *others]
        rng.shuffle(seats)
        place = [1 if s == "a" else 2 + (s == others[1]) for s in seats]
        games.append(g3(f"g{i:03d}", seats, place))
    r = sequential_elo(games)
    assert r["a"].rating > max(r[x].rating for x in "bcd") + 200
    early = sequential_elo(games[:20])
    assert r["a"].rating > early["a"].rating > 1500


def test_pools_and_k_are_checked() -> None:
    with pytest.raises(InvalidArgument, match="separately"):
        sequential_elo([g3("m1", ["a", "b", "c"], [1, 2, 3]), g4("m2", ["a", "b", "a", "b"], 0)])
    with pytest.raises(InvalidArgument, match="k must be positive"):
        sequential_elo([], k=0)
    assert sequential_elo([]) == {}
