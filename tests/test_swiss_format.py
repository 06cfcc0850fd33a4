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
    assert not any("bye" in note for note in SWISS.notes(_spec(3, 9, 2)))
    assert any("whole team" in note for note in SWISS.notes(_spec(4, 5, 2)))


# ------------------------------------------------- fixed teams and options


def _teams_spec(n: int, teams: list[list[str]], rounds: int | None = None,
                names: tuple[str, ...] | None = None) -> TournamentSpec:
    bots = tuple(f"b-{i}" for i in range(n))
    options: dict[str, Any] = {"teams": [{"bot_ids": t} for t in teams]}
    if rounds is not None:
        options["rounds"] = rounds
    return TournamentSpec(tournament_id="t1", name="teams", players=4, format="swiss",
                          bot_ids=bots, names=names or tuple(f"n{i}" for i in range(n)),
                          rules=Rules.make(4, {}), seed=5, options=options)


def test_fixed_teams_hold_their_seat_pairs_and_are_seeded_by_their_bots() -> None:
    # named by id or by name, in any order; stored as ids, teams in seed order
    spec = SWISS.prepare(_teams_spec(8, [["n6", "b-1"], ["b-0", "N3"], ["b-2", "b-5"],
                                         ["n4", "n7"]]))
    teams = [tuple(t["bot_ids"]) for t in spec.options["teams"]]
    assert teams == [("b-0", "b-3"), ("b-6", "b-1"), ("b-2", "b-5"), ("b-4", "b-7")]
    assert spec.options["rounds"] == 3  # ceil(log2 4) + 1 = 3 = the most 4 teams allow
    games, _, _ = _run(spec, seed=2)
    assert len(games) == 3 * 2
    for g in games:
        sides = {frozenset((g.bot_ids[0], g.bot_ids[2])), frozenset((g.bot_ids[1], g.bot_ids[3]))}
        assert sides <= {frozenset(t) for t in teams}
    met = Counter(frozenset({g.bot_ids[0], g.bot_ids[1]}) for g in games)
    assert max(met.values()) == 1  # no two teams meet twice while the field allows it


@pytest.mark.parametrize(("teams", "needle"), [
    ([["n0", "n0"], ["n1", "n2"], ["n3", "n4"]], "swiss.teams: team 1 names 'n0' twice"),
    ([["n0", "n1"], ["n1", "n2"]], "swiss.teams: 'n1' is in team 1 and in team 2"),
    ([["n1", "b-0"], ["b-1", "n2"], ["n3", "n4"], ["n5", "n0"]],
     "swiss.teams: 'b-1' is in team 1 and in team 2"),
    ([["n0", "b-0"], ["n1", "n2"], ["n3", "n4"], ["n5", "n6"]],
     "swiss.teams: team 1 names n0 twice"),
    ([["n0", "n1", "n2"], ["n3", "n4"]], "swiss.teams: team 1 names 3 bots"),
    ([["n0", "n1"], ["n2", "ghost"], ["n4", "n5"]], "swiss.teams: team 2 names 'ghost'"),
    ([["n0", "n1"], ["n2", "n3"]], "swiss.teams: n4 is in bot_ids but in no team"),
])
def test_bad_teams_name_the_field(teams: list[list[str]], needle: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        SWISS.prepare(_teams_spec(6, teams))
    assert str(err.value).startswith(needle), err.value


def test_teams_rounds_and_the_2v2_options_are_checked_against_the_field() -> None:
    with pytest.raises(InvalidArgument, match=r"^swiss\.rounds: 3 teams allow at most 2"):
        SWISS.prepare(_teams_spec(6, [["n0", "n1"], ["n2", "n3"], ["n4", "n5"]], rounds=3))
    with pytest.raises(InvalidArgument, match=r"^swiss\.rotate_partners: not with teams"):
        SWISS.read_options({"teams": [{"bot_ids": ["a", "b"]}], "rotate_partners": True})
    spec = _spec(3, 9, 2, teams=[{"bot_ids": ["b0", "b1"]}])
    with pytest.raises(InvalidArgument, match=r"^swiss\.teams: only for 2v2"):
        SWISS.prepare(spec)


@pytest.mark.parametrize(("players", "n", "options", "rounds"), [
    (3, 13, {}, 5), (3, 7, {}, 3), (3, 64, {}, 7), (4, 8, {"rotate_partners": True}, 4),
    (4, 5, {}, 4)])
def test_rounds_default_to_log2_plus_one_within_the_field(
        players: int, n: int, options: dict[str, Any], rounds: int) -> None:
    bots = tuple(f"b{i}" for i in range(n))
    spec = SWISS.prepare(TournamentSpec(
        tournament_id="t1", name="d", players=players, format="swiss", bot_ids=bots,
        names=bots, rules=Rules.make(players, {}), seed=1, options=options))
    assert spec.options["rounds"] == rounds


def test_the_ranking_and_rounds_show_only_the_results_given() -> None:
    """What a caller may see decides: a result left out (its board not released) shows as
    no points anywhere, while the pairing is shown."""
    spec = SWISS.prepare(_spec(3, 7, 3))
    games, results, steps = _run(spec, seed=3)
    state = steps[-1].state
    hidden = {g.match_id for g in games if g.unit == "r3"}
    seen = {mid: row for mid, row in results.items() if mid not in hidden}
    ranking = SWISS.ranking(spec, state, seen, {})
    assert [c.key for c in ranking.columns] == ["points", "buchholz", "duplicate", "rating"]
    assert all(c.explanation for c in ranking.columns)
    assert sorted(b for row in ranking.rows for b in row.bot_ids) == sorted(spec.bot_ids)
    assert [row.rank for row in ranking.rows] == list(range(1, 8))
    by_round = [[e.points for e in row.rounds] for row in ranking.rows]
    assert all(len(r) == 3 for r in by_round)
    for row in ranking.rows:
        third = row.rounds[2]
        assert third.points is None if third.table else third.points == 0.5
    expected = swiss_standings(7, rounds_of(spec, state),
                               {mid: side_points(row) for mid, row in seen.items()})
    assert [r.points for r in expected] == [row.values[0] for row in ranking.rows]
    rounds = SWISS.rounds(spec, state, seen)
    assert [r.number for r in rounds] == [1, 2, 3]
    assert all(t.points for r in rounds[:2] for t in r.tables)
    assert not any(t.points for t in rounds[2].tables)
    assert {t.match_id for t in rounds[2].tables} == hidden
    assert all(len(r.byes) == 1 for r in rounds)
