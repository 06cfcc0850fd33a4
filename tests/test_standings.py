"""Standings: per-bot totals, crosstable, duplicate-set rankings; order never matters."""

from __future__ import annotations

import random
from typing import Any

import pytest

from store.errors import InvalidArgument
from tournaments.standings import (
    GameResult,
    HeadToHead,
    Standing,
    crosstable,
    normalize,
    rank_group,
    standings,
)


def g3(mid: str, bots: list[str], final: list[int], group: str = "t1") -> dict[str, Any]:
    """A 3p result; the winner is the unique top score, placement by score."""
    top = max(final)
    winner = final.index(top) if final.count(top) == 1 else None
    place = [1 + sum(1 for o in final if o > f) for f in final]
    return {"match_id": mid, "bot_ids": bots, "players": 3, "final": final,
            "winner": winner, "placement": place, "end": "target", "group": group}


def g4(mid: str, bots: list[str], final: list[int], group: str = "p1") -> dict[str, Any]:
    """A 2v2 result: seats 0, 2 are team 0 and seats 1, 3 team 1."""
    winner = None if final[0] == final[1] else (0 if final[0] > final[1] else 1)
    place = [1 if winner is None or s % 2 == winner else 2 for s in range(4)]
    return {"match_id": mid, "bot_ids": bots, "players": 4, "final": final,
            "winner": winner, "placement": place, "end": "target", "group": group}


RESULTS = [
    g3("g1", ["a", "b", "c"], [21, 10, 5]),
    g3("g2", ["b", "c", "a"], [12, 21, 7]),
    g3("g3", ["c", "a", "b"], [21, 21, 0]),  # a and c tie on top: both draw, b loses
]


def test_standings_count_games_wins_draws_and_points() -> None:
    table = {s.bot_id: s for s in standings(RESULTS)}
    assert table["a"] == Standing("a", 3, 1, 1, 1, 49)
    assert table["c"] == Standing("c", 3, 1, 1, 1, 47)
    assert table["b"] == Standing("b", 3, 0, 0, 3, 22)
    assert [s.bot_id for s in standings(RESULTS)] == ["a", "c", "b"]  # points break the tie
    assert table["a"].score == 1.5


def test_a_bot_playing_both_seats_of_its_team_counts_once() -> None:
    res = [g4("m1", ["x", "y", "x", "y"], [21, 9]), g4("m2", ["y", "x", "y", "x"], [15, 21])]
    table = {s.bot_id: s for s in standings(res)}
    assert table["x"] == Standing("x", 2, 2, 0, 0, 42)
    assert table["y"] == Standing("y", 2, 0, 0, 2, 24)
    assert crosstable(res) == {("x", "y"): HeadToHead(2, 2, 0)}


def test_a_drawn_2v2_game_is_a_draw_for_all() -> None:
    res = [g4("m1", ["p", "q", "r", "s"], [10, 10])]
    assert all(s.draws == 1 and s.wins == 0 for s in standings(res))


def test_a_forfeit_that_leaves_two_level_is_a_win_by_forfeit_for_both_never_a_draw() -> None:
    """3p: b forfeits at 0-0-0; a and c share first place: each a win by forfeit, shared
    (half a win, as a shared first place scores), no draw; b lost by forfeit. A forfeit
    that leaves one bot ahead is that bot's win."""
    early = {"match_id": "f1", "bot_ids": ["a", "b", "c"], "players": 3, "final": [0, 0, 0],
             "winner": None, "placement": [1, 3, 1], "end": "forfeit",
             "forfeit": {"seat": 1, "reason": "disconnected"}}
    table = {s.bot_id: s for s in standings([early])}
    for bot in ("a", "c"):
        assert table[bot] == Standing(bot, 1, 0, 0, 0, 0, forfeit_wins=1)
        assert table[bot].score == 0.5
    assert table["b"] == Standing("b", 1, 0, 0, 1, 0)
    late = {**early, "match_id": "f2", "final": [9, 3, 4], "winner": 0,
            "placement": [1, 3, 2]}
    table = {s.bot_id: s for s in standings([late])}
    assert table["a"].wins == 1 and table["a"].forfeit_wins == 0
    assert table["c"].losses == 1 and table["c"].draws == 0


def test_crosstable_counts_who_finished_ahead() -> None:
    table = crosstable(RESULTS)
    assert table[("a", "b")] == HeadToHead(3, 2, 1)
    assert table[("a", "c")] == HeadToHead(3, 1, 1)  # g3 is a shared first place
    assert table[("b", "c")] == HeadToHead(3, 1, 2)
    assert list(table) == sorted(table)


def test_crosstable_leaves_out_partners() -> None:
    res = [g4("m1", ["p", "q", "r", "s"], [21, 3])]
    table = crosstable(res)
    assert ("p", "r") not in table and ("q", "s") not in table
    assert table[("p", "q")] == HeadToHead(1, 1, 0)
    assert table[("q", "r")] == HeadToHead(1, 0, 1)


def test_order_and_repeats_do_not_matter() -> None:
    shuffled = list(RESULTS)
    random.Random(3).shuffle(shuffled)
    assert standings(shuffled) == standings(RESULTS)
    assert crosstable(shuffled) == crosstable(RESULTS)
    assert standings([*RESULTS, RESULTS[0]]) == standings(RESULTS)
    changed = dict(RESULTS[0], final=[1, 2, 3])
    with pytest.raises(InvalidArgument, match="two different results"):
        standings([*RESULTS, changed])


def test_rank_group_3p_duplicate_set() -> None:
    # One table's six seatings: a and b win 3 each, a with more points (108 to 93).
    res = [
        g3("s1", ["a", "b", "c"], [21, 5, 0]), g3("s2", ["a", "c", "b"], [21, 0, 5]),
        g3("s3", ["b", "a", "c"], [21, 20, 0]), g3("s4", ["b", "c", "a"], [21, 0, 20]),
        g3("s5", ["c", "a", "b"], [0, 21, 20]), g3("s6", ["c", "b", "a"], [0, 21, 5]),
    ]
    assert rank_group(res, ["b", "a", "c"]) == ("a", "b", "c")
    # Equal wins and points: the seed decides, in either form.
    even = [g3("e1", ["a", "b", "c"], [21, 5, 0]), g3("e2", ["b", "a", "c"], [21, 5, 0])]
    assert rank_group(even, ["b", "a", "c"])[:2] == ("b", "a")
    assert rank_group(even, {"a": 1, "b": 2, "c": 3})[:2] == ("a", "b")


def test_rank_group_2v2_duplicate_pair() -> None:
    # The teams swap seats; one game each, x has the better score difference (41 to 40).
    pair = [g4("d1", ["x", "y", "x", "y"], [21, 19]), g4("d2", ["y", "x", "y", "x"], [21, 20])]
    assert rank_group(pair, ["y", "x"]) == ("x", "y")
    assert rank_group([g4("d3", ["x", "y", "x", "y"], [21, 0])], ["y", "x"])[0] == "x"
    tied = [g4("d1", ["x", "y", "x", "y"], [21, 10]), g4("d2", ["y", "x", "y", "x"], [21, 10])]
    assert rank_group(tied, ["y", "x"]) == ("y", "x")
    with pytest.raises(InvalidArgument, match="no seed for x"):
        rank_group(tied, ["y"])


def test_malformed_results_are_invalid_arguments() -> None:
    with pytest.raises(InvalidArgument, match="malformed"):
        normalize([{"match_id": "m"}])
    with pytest.raises(InvalidArgument, match="players"):
        GameResult("m", ("a", "b"), 2, (1, 2), None, (1, 2))
    with pytest.raises(InvalidArgument, match="final needs 2"):
        GameResult("m", ("a", "b", "c", "d"), 4, (1, 2, 3), None, (1, 1, 1, 1))
    with pytest.raises(InvalidArgument, match="two sides"):
        GameResult.of(g4("m", ["a", "a", "b", "c"], [1, 2]))
    with pytest.raises(InvalidArgument, match="two sides"):
        GameResult.of(g3("m", ["a", "a", "b"], [1, 2, 3]))
