"""The Swiss format through the start/feed plan API (not registered yet): rounds on boards,
pairing after each round, the state as JSON, checks that name the field."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest

from moon import Rules
from store.errors import InvalidArgument
from store.records import TournamentSpec
from tournaments.plan import Game, ListSource, Step
from tournaments.swiss import Swiss, rounds_of
from tournaments.swiss_standings import side_points, swiss_standings

SWISS = Swiss()


def _spec(players: int, n: int, rounds: int, duplicate: str = "boards",
          **options: Any) -> TournamentSpec:
    bots = tuple(f"b{i}" for i in range(n))
    return TournamentSpec(tournament_id="t1", name="swiss test", players=players,
                          format="swiss", bot_ids=bots, names=bots,
                          rules=Rules.make(players, {}), seed=7, duplicate=duplicate,
                          options={"rounds": rounds, **options})


def _result(game: Game, players: int, rng: random.Random) -> dict[str, Any]:
    """A made-up finished game: stronger bots (lower index) tend to place better."""
    if players == 3:
        perf = [-int(b[1:]) + rng.gauss(0, 4) for b in game.bot_ids]
        order = sorted(range(3), key=lambda s: -perf[s])
        placement = [order.index(s) + 1 for s in range(3)]
        final = [21 if p == 1 else 10 - p for p in placement]
        return {"match_id": game.match_id, "bot_ids": list(game.bot_ids), "players": 3,
                "final": final, "winner": order[0], "placement": placement, "end": "normal"}
    team = [-int(game.bot_ids[s][1:]) - int(game.bot_ids[s + 2][1:]) + rng.gauss(0, 6)
            for s in (0, 1)]
    winner = 0 if team[0] > team[1] else 1
    return {"match_id": game.match_id, "bot_ids": list(game.bot_ids), "players": 4,
            "final": [7, 3] if winner == 0 else [3, 7], "winner": winner,
            "placement": [1 if s % 2 == winner else 2 for s in range(4)], "end": "normal"}


def _run(spec: TournamentSpec, seed: int = 1, batch: int = 3
         ) -> tuple[list[Game], dict[str, dict[str, Any]], list[Step]]:
    """Play the whole event, feeding results a few at a time through a JSON state."""
    rng = random.Random(seed)
    source = ListSource([])
    step = SWISS.start(spec, source)
    steps = [step]
    games = list(step.games)
    results: dict[str, dict[str, Any]] = {}
    while not step.finished:
        pending = [g for g in games if g.match_id not in results]
        assert pending, "unfinished, but nothing to play"
        now = pending[:batch]
        for g in now:
            results[g.match_id] = _result(g, spec.players, rng)
        state = json.loads(json.dumps(step.state))  # as the scheduler stores it
        step = SWISS.feed(spec, state, [results[g.match_id] for g in now], source)
        steps.append(step)
        games += step.games
    return games, results, steps


@pytest.mark.parametrize(("players", "n", "rounds", "rotate", "per_round"), [
    (3, 13, 5, False, 4),
    (3, 3, 1, False, 1),
    (4, 8, 4, True, 2),
    (4, 5, 4, False, 2),
])
def test_rounds_on_boards(players: int, n: int, rounds: int, rotate: bool,
                          per_round: int) -> None:
    spec = SWISS.prepare(_spec(players, n, rounds, rotate_partners=rotate))
    games, _, steps = _run(spec)
    assert len(games) == rounds * per_round
    assert len({g.match_id for g in games}) == len(games)
    by_unit: dict[str, list[Game]] = {}
    for g in games:
        by_unit.setdefault(g.unit, []).append(g)
    assert sorted(by_unit) == sorted(f"r{r}" for r in range(1, rounds + 1))
    for unit_games in by_unit.values():
        assert len({g.seed for g in unit_games}) == 1  # one board a round
        seated = [b for g in unit_games for b in set(g.bot_ids)]
        assert len(seated) == len(set(seated))  # no bot at two tables of a board
    assert len({gs[0].seed for gs in by_unit.values()}) == rounds
    totals = [s.total for s in steps]
    assert totals == sorted(totals) and totals[-1] == len(games)
    assert steps[-1].finished and not any(s.finished for s in steps[:-1])


def test_a_round_is_paired_only_when_the_last_one_is_in() -> None:
    spec = _spec(3, 9, 3)
    rng = random.Random(0)
    source = ListSource([])
    step = SWISS.start(spec, source)
    first = step.games
    assert len(first) == 3
    step = SWISS.feed(spec, step.state, [_result(g, 3, rng) for g in first[:2]], source)
    assert step.games == []
    again = SWISS.feed(spec, step.state, [_result(first[0], 3, rng)], source)
    assert again.games == [] and again.state["done"] == 2  # a result counts once
    step = SWISS.feed(spec, step.state, [_result(first[2], 3, rng)], source)
    assert len(step.games) == 3 and all(g.unit == "r2" for g in step.games)
    # round 2 meets new table-mates (nine bots allow four such rounds)
    met = {frozenset(p) for g in first for p in zip(g.bot_ids, g.bot_ids[1:] + g.bot_ids[:1],
                                                   strict=True)}
    for g in step.games:
        pairs = zip(g.bot_ids, g.bot_ids[1:] + g.bot_ids[:1], strict=True)
        assert not met & {frozenset(p) for p in pairs}


def test_the_same_results_give_the_same_event() -> None:
    spec = _spec(3, 16, 5)
    a, _, _ = _run(spec, seed=4, batch=2)
    b, _, _ = _run(spec, seed=4, batch=5)
    assert a == b


def test_byes_score_and_rotate() -> None:
    spec = _spec(3, 8, 3)  # two bots sit out each round
    games, results, steps = _run(spec)
    state = steps[-1].state
    byes = Counter(x for r in state["rounds"] for x in r["byes"])
    assert sum(byes.values()) == 6 and max(byes.values()) == 1
    rows = swiss_standings(8, rounds_of(spec, state),
                           {mid: side_points(row) for mid, row in results.items()})
    assert sum(r.points for r in rows) == pytest.approx(len(games) * 1.5 + 6 * 0.5)
    assert {r.entry: r.points for r in rows} == pytest.approx(dict(enumerate(state["points"])))


def test_whole_bot_teams_hold_both_seats_of_their_side() -> None:
    games, _, _ = _run(_spec(4, 6, 3))
    assert all(g.bot_ids[0] == g.bot_ids[2] and g.bot_ids[1] == g.bot_ids[3] for g in games)


@pytest.mark.parametrize(("players", "n", "kw", "field"), [
    (3, 2, {}, "bot_ids"),
    (4, 3, {"rotate_partners": True}, "bot_ids"),
    (3, 13, {"rounds": 7}, "swiss.rounds"),
    (4, 8, {"rounds": 8, "rotate_partners": True}, "swiss.rounds"),
    (4, 4, {"rounds": 4}, "swiss.rounds"),
    (3, 9, {"rounds": 0}, "swiss.rounds"),
    (3, 9, {"duplicate": "replay"}, "duplicate"),
    (3, 9, {"all_triples": True}, "swiss.all_triples"),
    (3, 9, {"series_length": 3}, "swiss.series_length"),
    (3, 9, {"rotate_partners": True}, "swiss.rotate_partners"),
])
def test_bad_specs_name_the_field(players: int, n: int, kw: dict[str, Any], field: str) -> None:
    spec = _spec(players, n, kw.pop("rounds", 1), **kw)
    with pytest.raises(InvalidArgument, match=f"^{field}:"):
        SWISS.prepare(spec)


def test_notes_say_how_a_bye_scores() -> None:
    assert any("bye" in note for note in SWISS.notes(_spec(3, 7, 2)))
    assert any("whole team" in note for note in SWISS.notes(_spec(4, 5, 2)))
