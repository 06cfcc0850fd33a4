"""The provisional (live) rating: Weng-Lin Plackett-Luce steps, team means, order of the set."""

from __future__ import annotations

import math
import random

import pytest

from ratings import ELO_PER_NAT, PRIOR_SD, Game, RatingError, provisional_ratings, to_nat


def g3(gid: str, bots: str, places: tuple[int, ...]) -> Game:
    """A 3p game between single-letter bots."""
    return Game(gid, "", tuple((b,) for b in bots), places)


# Computed with openskill 6.2.0: PlackettLuce(mu=0, sigma=400 Elo in nats, beta=sqrt(1/3),
# tau=0, kappa=1e-4), rate(teams, ranks=places) game by game, mu centred, both in Elo.
GOLDEN = {
    "a": (263.10647067355796, 337.84136080324896),
    "b": (219.4282493499585, 337.69826199695837),
    "c": (-131.6701944288962, 346.9970312418764),
    "d": (-350.8645255946203, 343.64076829433185),
}
GAMES = [("abc", (1, 2, 3)), ("bcd", (1, 1, 3)), ("cda", (1, 2, 2)), ("dab", (3, 1, 2)),
         ("abd", (2, 1, 3)), ("acd", (1, 1, 1)), ("bca", (2, 3, 1))]


def test_single_bot_sides_match_openskill_plackett_luce() -> None:
    games = [g3(f"g{i}", bots, places) for i, (bots, places) in enumerate(GAMES)]
    rows = provisional_ratings(games)
    assert [r.bot_id for r in rows] == ["a", "b", "c", "d"]
    for r in rows:
        assert r.rating == pytest.approx(GOLDEN[r.bot_id][0], abs=1e-9)
        assert r.sd == pytest.approx(GOLDEN[r.bot_id][1], abs=1e-9)
    assert {r.bot_id: r.games for r in rows} == {"a": 6, "b": 5, "c": 5, "d": 5}


def test_games_are_taken_in_id_order_as_a_set() -> None:
    rng = random.Random(2)
    games = [g3(f"g{i}", "".join(rng.sample("abcdef", 3)), rng.choice([(1, 2, 3), (2, 1, 3)]))
             for i in range(60)]
    base = provisional_ratings(games)
    shuffled = games + games[:10]
    rng.shuffle(shuffled)
    assert provisional_ratings(shuffled) == base
    assert abs(sum(r.rating for r in base)) < 1e-9


def test_a_team_is_the_mean_of_its_bots() -> None:
    # From the prior (sd s), a bot holding both seats beats the team (x, y). The team's
    # strength is the mean, so its variance is s^2 / 2 and c^2 = s^2 + s^2 / 2 + 2 beta^2
    # (beta^2 = 1/2): the solo bot gains s^2 / (2c), each partner loses s^2 / (4c), and the
    # team's mean loses as much as the solo bot gains.
    rows = {r.bot_id: r for r in provisional_ratings(
        [Game("g1", "", (("solo",), ("x", "y")), (1, 2))]
    )}
    s2 = to_nat(PRIOR_SD) ** 2
    c = math.sqrt(1.5 * s2 + 1.0)
    assert rows["solo"].rating == pytest.approx(s2 / (2 * c) * ELO_PER_NAT, rel=1e-12)
    assert rows["x"].rating == pytest.approx(-s2 / (4 * c) * ELO_PER_NAT, rel=1e-12)
    assert rows["y"].rating == pytest.approx(rows["x"].rating, rel=1e-12)


def test_mixed_pools_raise() -> None:
    with pytest.raises(RatingError, match="mix"):
        provisional_ratings([g3("g1", "abc", (1, 2, 3)), Game("g2", "", (("a",), ("b",)), (1, 2))])


def test_a_large_pool_gets_the_figure_of_its_newest_games(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Over columns, a pool past WINDOW games is figured over its newest WINDOW (by
    release), and the table says so; a smaller one over every game."""
    from ratings import GameTable, live

    games = [Game(f"g{i}", "", (("a",), ("b",), ("c",)), (1, 2, 3) if i < 5 else (3, 2, 1),
                  at=float(100 - i)) for i in range(8)]  # g7 oldest: "c" wins the oldest
    table = GameTable.from_games(games)
    whole = live.Provisional().rate_table(table, 0.0)
    assert whole.games == 8 and "newest" not in whole.method
    monkeypatch.setattr(live, "WINDOW", 5)
    newest = live.Provisional().rate_table(table, 0.0)
    assert newest.games == 5 and "newest 5 games" in newest.method
    assert newest.rows[0].bot_id == "a"  # g0..g4: "a" won every one of them
    assert newest.rows == live.Provisional().rate(games[:5], 0.0).rows
