"""Swiss standings: points, Buchholz for tables, the duplicate score, rating, by hand."""

from __future__ import annotations

import pytest

from store.errors import InvalidArgument
from tournaments.swiss_standings import (
    TIEBREAKS,
    RoundRecord,
    SwissGame,
    side_points,
    swiss_standings,
)


def _game(mid: str, *bots: int) -> SwissGame:
    return SwissGame(mid, tuple((b,) for b in bots))


def test_points_buchholz_and_byes() -> None:
    # round 1: table 0,1,2 (places 1,2,3) and table 3,4,5 (places 1,2,3), bot 6 a bye
    # round 2: table 0,3,6 (3 first, 6 second, 0 third) and table 1,4,5 (1,4,5 in order), bye 2
    rounds = [
        RoundRecord((_game("a", 0, 1, 2), _game("b", 3, 4, 5)), (6,)),
        RoundRecord((_game("c", 0, 3, 6), _game("d", 1, 4, 5)), (2,)),
    ]
    pts = {"a": (1, 0.5, 0), "b": (1, 0.5, 0), "c": (0, 1, 0.5), "d": (1, 0.5, 0)}
    rows = {r.entry: r for r in swiss_standings(7, rounds, pts)}
    assert [rows[b].points for b in range(7)] == [1.0, 1.5, 0.5, 2.0, 1.0, 0.0, 1.0]
    assert rows[2].byes == 1 and rows[2].games == 1
    # bot 0 met 1, 2 (round 1) and 3, 6 (round 2): 1.5 + 0.5 + 2 + 1
    assert rows[0].buchholz == 5.0
    # bot 2 met 0 and 1 (2.5 in one game); its bye adds that again
    assert rows[2].buchholz == 5.0
    # bot 6 met 0 and 3 (3 in one game), and had a bye: 6
    assert rows[6].buchholz == 6.0
    # three bots on 1 point: the one that met the stronger table-mates ranks first
    assert rows[4].buchholz == 2 + 0 + 1.5 + 0
    order = [r.entry for r in swiss_standings(7, rounds, pts)]
    assert order == [3, 1, 6, 0, 4, 2, 5]


def test_duplicate_compares_the_same_seat_of_the_same_board() -> None:
    # one round, three tables on one board: seat 0 made 1, 1 and 0.5
    rounds = [RoundRecord((_game("a", 0, 1, 2), _game("b", 3, 4, 5), _game("c", 6, 7, 8)))]
    pts = {"a": (1, 0.5, 0), "b": (1, 0, 0.5), "c": (0.5, 1, 0)}
    rows = {r.entry: r for r in swiss_standings(9, rounds, pts)}
    assert rows[0].duplicate == pytest.approx(1 - 0.75)
    assert rows[6].duplicate == pytest.approx(0.5 - 1)
    assert rows[7].duplicate == pytest.approx(1 - 0.25)
    assert sum(r.duplicate for r in rows.values()) == pytest.approx(0)


def test_a_board_played_at_one_table_has_no_duplicate_score() -> None:
    rows = swiss_standings(3, [RoundRecord((_game("a", 0, 1, 2),))], {"a": (1, 0.5, 0)})
    assert all(r.duplicate == 0 for r in rows)


def test_order_points_then_buchholz_then_duplicate_then_rating_then_seed() -> None:
    rounds = [RoundRecord((_game("a", 0, 1, 2), _game("b", 3, 4, 5)))]
    # equal points for 0 and 3 (1 each), equal Buchholz (0.5 + 0), duplicate equal (0):
    # the rating decides, then the seed
    pts = {"a": (1, 0.5, 0), "b": (1, 0.5, 0)}
    rows = swiss_standings(6, rounds, pts, ratings=[0, 0, 0, 50, 0, 0])
    assert [r.entry for r in rows][:2] == [3, 0]
    rows = swiss_standings(6, rounds, pts)
    assert [r.entry for r in rows] == [0, 3, 1, 4, 2, 5]
    assert [r.rank for r in rows] == list(range(1, 7))
    # 3 and 4 tie on 0.75 points and Buchholz; 4 made more of its seat's cards (0.75
    # where 1 made 0.5) than 3 of its (0.75 where 0 made 1)
    pts = {"a": (1, 0.5, 0), "b": (0.75, 0.75, 0)}
    rows = swiss_standings(6, rounds, pts)
    assert [r.entry for r in rows][:3] == [0, 4, 3]


def test_teams_and_partners() -> None:
    # fixed teams: team entrants, one per side
    rounds = [RoundRecord((SwissGame("a", ((0,), (1,))), SwissGame("b", ((2,), (3,)))))]
    rows = {r.entry: r for r in swiss_standings(4, rounds, {"a": (1, 0), "b": (0.5, 0.5)})}
    assert (rows[0].points, rows[1].points, rows[2].points) == (1.0, 0.0, 0.5)
    assert rows[1].buchholz == 1.0  # the team it met
    assert rows[0].duplicate == pytest.approx(0.5)  # seat pair 0: 1 against 0.5
    # rotating partners: two bots a side, both get the side's points; Buchholz counts the
    # two opponents
    rounds = [RoundRecord((SwissGame("c", ((0, 2), (1, 3))),))]
    rows = {r.entry: r for r in swiss_standings(4, rounds, {"c": (0, 1)})}
    assert [rows[b].points for b in range(4)] == [0.0, 1.0, 0.0, 1.0]
    assert rows[0].buchholz == 2.0 and rows[1].buchholz == 0.0


def test_unfinished_games_do_not_count() -> None:
    rounds = [RoundRecord((_game("a", 0, 1, 2), _game("b", 3, 4, 5)))]
    rows = {r.entry: r for r in swiss_standings(6, rounds, {"a": (1, 0.5, 0)})}
    assert rows[3].games == 0 and rows[3].points == 0
    assert rows[0].duplicate == 0  # the other table of the board is not in yet


def test_side_points_from_results() -> None:
    three = {"match_id": "m", "bot_ids": ["a", "b", "c"], "players": 3, "final": [5, 21, 21],
             "winner": None, "placement": [3, 1, 1]}
    assert side_points(three) == (0.0, 0.75, 0.75)
    four = {"match_id": "m", "bot_ids": ["a", "b", "c", "d"], "players": 4, "final": [7, 3],
            "winner": 0, "placement": [1, 2, 1, 2]}
    assert side_points(four) == (1.0, 0.0)


def test_every_tiebreak_is_explained() -> None:
    assert [name for name, _ in TIEBREAKS] == ["points", "buchholz", "duplicate", "rating"]
    assert all(text and "\n" not in text for _, text in TIEBREAKS)


def test_bad_input() -> None:
    rounds = [RoundRecord((_game("a", 0, 1, 2),))]
    with pytest.raises(InvalidArgument, match="ratings"):
        swiss_standings(3, rounds, {}, ratings=[0.0])
    with pytest.raises(InvalidArgument, match="side points"):
        swiss_standings(3, rounds, {"a": (1, 0)})
    with pytest.raises(InvalidArgument, match="entrant 5"):
        swiss_standings(3, [RoundRecord((), (5,))], {})
