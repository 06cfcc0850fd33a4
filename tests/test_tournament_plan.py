"""The tournament plan as a pure function: its game count as results arrive."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from moon import Rules
from store.records import TournamentSpec, check_seating
from tournaments.bracket import Status
from tournaments.formats import plan
from tournaments.plan import Game
from tournaments.view import build_view


def _spec(
    players: int, fmt: str, n: int, series_length: int, duplicate: bool = True
) -> TournamentSpec:
    bots = tuple(f"b{i}" for i in range(n))
    return TournamentSpec(
        tournament_id="t1", name="plan test", players=players, format=fmt, bot_ids=bots,
        names=bots, rules=Rules.make(players, {}), seed=11,
        options={"series_length": series_length},
        duplicate="replay" if duplicate else "fresh",
    )


def _result(game: Game, players: int, rng: random.Random) -> dict[str, Any]:
    """A made-up finished game: a random side wins."""
    sides = 3 if players == 3 else 2
    final = [rng.randrange(0, 30) for _ in range(sides)]
    winner = rng.randrange(sides)
    final[winner] = 40
    if players == 3:
        order = sorted(range(3), key=lambda s: -final[s])
        placement = [order.index(s) + 1 for s in range(3)]
    else:
        placement = [1 if s % 2 == winner else 2 for s in range(4)]
    return {"match_id": game.match_id, "bot_ids": list(game.bot_ids), "players": players,
            "final": final, "winner": winner, "placement": placement, "end": "normal"}


CASES = [
    (4, "single_elimination", 5, 3, True),
    (4, "single_elimination", 8, 5, True),
    (4, "double_elimination", 4, 3, True),
    (4, "double_elimination", 6, 1, False),
    (3, "single_elimination", 7, 1, True),
    (3, "single_elimination", 9, 3, False),
]


@pytest.mark.parametrize(("players", "fmt", "n", "series", "duplicate"), CASES)
@pytest.mark.parametrize("seed", range(8))
def test_bracket_total_is_a_lower_bound_that_only_grows(
    players: int, fmt: str, n: int, series: int, duplicate: bool, seed: int
) -> None:
    """Progress bars show games + estimate: it must never shrink and must end exact."""
    spec = _spec(players, fmt, n, series, duplicate)
    rng = random.Random(seed)
    results: dict[str, dict[str, Any]] = {}
    totals: list[int] = []
    while True:
        p = plan(spec, results)
        totals.append(p.total)  # the games so far and those still expected
        if p.finished:
            break
        todo = [g for g in p.games if g.match_id not in results]
        assert todo, "an unfinished plan must have a game to play"
        # Finish games one at a time, in a random order, as workers would.
        g = rng.choice(todo)
        results[g.match_id] = _result(g, players, rng)
    assert totals == sorted(totals), totals
    assert totals[-1] == len(results) == len(p.games)
    assert p.total == len(p.games)


def test_a_2v2_knockout_of_five_starts_at_its_fewest_games() -> None:
    # 4 real matches (one first-round match, three byes), best of 3 duplicate pairs:
    # at least 2 pairs of 2 games each.
    p = plan(_spec(4, "single_elimination", 5, 3), {})
    assert p.total == 4 * 2 * 2


def _play_out(spec: TournamentSpec, seed: int) -> tuple[dict[str, dict[str, Any]], Any]:
    rng = random.Random(seed)
    results: dict[str, dict[str, Any]] = {}
    while not (p := plan(spec, results)).finished:
        for g in p.games:
            if g.match_id not in results:
                results[g.match_id] = _result(g, spec.players, rng)
    return results, p


@pytest.mark.parametrize(("players", "fmt", "n", "series", "duplicate"), CASES)
@pytest.mark.parametrize("seed", range(4))
def test_bracket_standings_rank_by_how_far_each_bot_got(
    players: int, fmt: str, n: int, series: int, duplicate: bool, seed: int
) -> None:
    spec = _spec(players, fmt, n, series, duplicate)
    results, p = _play_out(spec, seed)
    view = build_view(spec, results, p, sequence=0)
    order = [row["bot_id"] for row in view.rows]
    assert [row["rank"] for row in view.rows] == list(range(1, n + 1))
    assert order[0] == p.bracket.champion
    # The bot a decided match put out ranks below everyone who played a later stage.
    last_stage: dict[str, tuple[int, int]] = {}
    sections = {"W": 0, "T": 0, "L": 1, "GF": 2}
    for ms in p.bracket.matches:
        if ms.status is Status.DONE:
            for bot in ms.participants:
                last_stage[bot] = (sections[ms.match.section], ms.match.round)
    for better, worse in itertools.pairwise(order[1:]):  # below the champion
        assert last_stage[better] >= last_stage[worse], (better, worse)
    final = [ms for ms in p.bracket.matches if ms.status is Status.DONE][-1]
    if players == 4:
        assert order[1] in final.participants  # the runner-up lost the last match played


@pytest.mark.parametrize(("players", "fmt", "n", "rotate"), [
    (3, "round_robin", 7, False), (3, "round_robin", 8, False), (4, "round_robin", 6, False),
    (4, "round_robin", 9, True), (4, "single_elimination", 5, False),
    (4, "double_elimination", 6, False), (3, "single_elimination", 9, False),
])
def test_every_scheduled_game_seats_each_bot_on_one_side(
    players: int, fmt: str, n: int, rotate: bool
) -> None:
    bots = tuple(f"b{i}" for i in range(n))
    spec = TournamentSpec(tournament_id="t1", name="seats", players=players, format=fmt,
                          bot_ids=bots, names=bots, rules=Rules.make(players, {}), seed=3,
                          options={"rotate_partners": True} if rotate else {})
    _, p = _play_out(spec, seed=1)
    for g in p.games:
        check_seating(players, g.bot_ids)  # the rule CreateMatch enforces
