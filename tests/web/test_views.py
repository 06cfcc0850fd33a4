"""What the pages show, as pure views of protobuf messages: a forfeit named, never a draw;
games grouped by board; how far a tournament is, counts only; the keys a browser's live
pages count under."""

from __future__ import annotations

from typing import Any

import pytest

from clients.web.app import client_keys
from clients.web.views import (
    boards_view,
    bot_game,
    games_by_board,
    history_chart,
    match_row,
    progress_view,
    ranking_view,
    ratings_view,
    rounds_view,
    standings_view,
    transcript_view,
)
from proto.moon.v1 import game_pb2, match_pb2, rating_pb2, tournament_pb2

FINISHED = match_pb2.MATCH_STATUS_FINISHED


def _forfeit(winner: int | None) -> match_pb2.Match:
    """A 3p single match where seat 1 forfeited at 0-0-0 (nobody won) or with a winner."""
    res = game_pb2.MatchResult(final_scores=[5, 0, 5 if winner is None else 2], end="forfeit",
                               placement=[1, 3, 1] if winner is None else [1, 3, 2],
                               forfeit=game_pb2.MatchResult.Forfeit(seat=1, reason="gone"))
    if winner is not None:
        res.winner = winner
    return match_pb2.Match(match_id="m-1", status=FINISHED, players=3,
                           bot_ids=["b-a", "b-b", "b-c"], seat_names=["a", "b", "c"], result=res)


def test_a_forfeit_is_named_in_a_games_list_never_a_draw() -> None:
    row = match_row(_forfeit(None))
    assert row["notes"] == ["b forfeited", "a and c won by forfeit, level"]
    assert "draw" not in " ".join(row["notes"]) and row["winner"] == "won by forfeit, shared"
    row = match_row(_forfeit(0))
    assert row["notes"] == ["b forfeited"] and row["winner"] == "a"


def test_a_forfeit_on_a_bot_page() -> None:
    m = _forfeit(None)
    assert (bot_game("b-b", m)["label"], bot_game("b-b", m)["outcome"]) == \
        ("lost by forfeit", "loss")
    assert bot_game("b-b", m)["forfeited"]
    assert (bot_game("b-a", m)["label"], bot_game("b-a", m)["outcome"]) == \
        ("won by forfeit, level", "shared")
    assert bot_game("b-a", _forfeit(0))["label"] == "won by forfeit"
    assert bot_game("b-c", _forfeit(0))["label"] == "lost (another forfeited)"


def test_a_forfeit_on_the_game_page() -> None:
    record = {"players": 3, "seats": ["a", "b", "c"], "hands": [], "final": [5, 0, 5],
              "winner": None, "end": "forfeit", "forfeit": {"seat": 1, "reason": "gone"}}
    assert transcript_view(record)["headline"] == \
        "b forfeited; a and c won by forfeit, level (first place shared)"
    record.update(end="hand_limit", forfeit=None, final=[3, 3, 1])
    assert transcript_view(record)["headline"] == "A draw: a and b share first place"
    record.update(winner=2)
    assert transcript_view(record)["headline"] == "c won"


def _game(mid: str, board: str, status: int, result: bool = False, at: int = 0
          ) -> dict[str, Any]:
    m = match_pb2.Match(match_id=f"t-1-{mid}", tournament_id="t-1", board=board, status=status,
                        players=3, seat_names=["a", "b", "c"])
    if result:
        m.result.CopyFrom(game_pb2.MatchResult(final_scores=[1, 2, 3], winner=2,
                                               placement=[3, 2, 1], end="target"))
    if at:
        m.finished_at.seconds = at
    return match_row(m)


def test_games_are_grouped_by_board_in_play_first_then_released_by_round() -> None:
    """In play first, then released boards the latest round first, then the boards to
    come: in round order, whatever order their games finished in (round 1's slow table
    finished after round 10's, and the listing is newest first)."""
    R, F, Q = match_pb2.MATCH_STATUS_RUNNING, FINISHED, match_pb2.MATCH_STATUS_QUEUED
    rows = [  # a listing: newest first
        _game("x1-r11-t2-g1", "t-1/x1-r11", Q), _game("x1-r11-t1-g1", "t-1/x1-r11", Q),
        _game("x1-r3-t2-g1", "t-1/x1-r3", R), _game("x1-r3-t1-g1", "t-1/x1-r3", F, at=30),
        _game("x1-r10-t2-g1", "t-1/x1-r10", F, True, 20),
        _game("x1-r10-t1-g1", "t-1/x1-r10", F, True, 25),
        _game("x1-r2-t2-g1", "t-1/x1-r2", F, True, 10), _game("x1-r2-t1-g1", "t-1/x1-r2", F,
                                                                 True, 12),
        _game("x1-r1-t2-g1", "t-1/x1-r1", F, True, 40), _game("x1-r1-t1-g1", "t-1/x1-r1", F,
                                                                 True, 12),
    ]
    groups = games_by_board(rows, ["t-1/x1-r3"])
    assert [(g["label"], g["state"], g["done"], g["count"]) for g in groups] == [
        ("round 3", "in play", 1, 2), ("round 10", "released", 2, 2),
        ("round 2", "released", 2, 2), ("round 1", "released", 2, 2),
        ("round 11", "waiting", 0, 2)]
    assert [g["in_board"] for g in groups[0]["games"]] == ["t2-g1", "t1-g1"]
    # A finished game of a board in play shows no result (the API gave it none).
    assert not groups[0]["games"][1]["has_result"] and groups[0]["games"][1]["notes"] == []


def test_an_unrated_bot_shows_no_rating_in_the_standings_or_a_ranking() -> None:
    """A bot the pool does not rate yet (a house bot new to it) counts as the pool mean, 0,
    in a tiebreak, but is shown `unrated`, not as a rating of 0."""
    st = tournament_pb2.Standings()
    st.rows.add(rank=1, bot_id="b-a", name="a", rating=31.6)
    st.rows.add(rank=2, bot_id="house:greedy", name="house:greedy", rating=0.0)
    st.ranking.columns.add(key="points", title="Points")
    st.ranking.columns.add(key="rating", title="Pool rating")
    st.ranking.rows.add(rank=1, bot_ids=["b-a"], values=[1.0, 31.6])
    st.ranking.rows.add(rank=2, bot_ids=["house:greedy"], values=[0.5, 0.0])
    assert [r["rating"] for r in standings_view(st, {"b-a"})] == ["32", "unrated"]
    assert [r["rating"] for r in standings_view(st)] == ["32", "0"]  # not known: the number
    view = ranking_view(st, {"b-a"})
    assert view is not None
    assert [r["cells"][1]["text"] for r in view["rows"]] == ["32", "unrated"]


def test_a_first_interval_too_wide_is_not_enough_games_yet() -> None:
    resp = rating_pb2.GetRatingHistoryResponse()
    resp.points.add(games=1, rating=-300, ci_low=-3006, ci_high=2388)
    resp.points.add(games=40, rating=20, ci_low=-150, ci_high=190)
    points = history_chart(resp)
    assert [(p["low"], p["high"], p["thin"]) for p in points] == [
        (None, None, True), (-150, 190, False)]
    table = rating_pb2.GetRatingsResponse()
    table.ratings.add(bot_id="b-1", rating=-300, ci_low=-3006, ci_high=2388, games=1)
    row = ratings_view(table)["rows"][0]
    assert (row["low"], row["high"], row["thin"]) == (None, None, True)


def test_progress_and_boards_are_counts_only() -> None:
    t = tournament_pb2.Tournament(status=tournament_pb2.TOURNAMENT_STATUS_RUNNING,
                                  matches_total=28, matches_done=9,
                                  spec=tournament_pb2.TournamentSpec(
                                      duplicate=tournament_pb2.DUPLICATE_MODE_BOARDS))
    st = tournament_pb2.Standings(matches_done=4)
    st.boards_in_play.add(board="t-1/x1-r3", games=2, games_finished=1, games_running=1)
    st.boards_in_play.add(board="t-1/x1-r4", games=2, games_finished=0, games_running=0)
    st.boards_in_play.add(board="t-1/x1-r5", games=2, games_finished=0, games_running=2)
    p = progress_view(t, st)
    assert (p["played"], p["total"], p["public"], p["hidden"], p["running"]) == (9, 28, 4, 5, 3)
    boards = boards_view(t, st)
    assert [(b["label"], b["text"]) for b in boards] == [
        ("round 3", "1 of 2 tables done, 1 playing"), ("round 5", "0 of 2 tables done, 2 playing")]


@pytest.mark.parametrize(("host", "keys"), [
    ("127.0.0.9", ("addr:127.0.0.9", "net:127.0.0.0/24")),
    ("::ffff:10.1.2.3", ("addr:10.1.2.3", "net:10.1.2.0/24")),
    ("2001:db8::1", ("addr:2001:db8::1", "net:2001:db8::/56")),
    ("", ("addr:", "net:")),
])
def test_live_pages_count_per_address_and_per_network(host: str, keys: tuple[str, str]) -> None:
    assert client_keys(host) == keys


def _swiss_standings() -> tournament_pb2.Standings:
    st = tournament_pb2.Standings(tournament_id="t-1")
    for b in ("a", "b", "c", "d"):
        st.rows.add(bot_id=f"b-{b}", name=b)
    st.ranking.columns.add(key="points", title="Points", short_title="Pts",
                           explanation="game points")
    st.ranking.columns.add(key="buchholz", title="Buchholz", explanation="opposition")
    st.ranking.rows.add(rank=1, bot_ids=["b-a"], values=[1.5, 2.875], games=1, byes=1,
                        rounds=[tournament_pb2.EntrantRound(table=1, points=1.0),
                                tournament_pb2.EntrantRound(table=0, points=0.5)])
    st.ranking.rows.add(rank=2, bot_ids=["b-b"], values=[0.25, -1.0], games=1,
                        rounds=[tournament_pb2.EntrantRound(table=1),
                                tournament_pb2.EntrantRound(table=1, points=0.25)])
    st.rounds.add(number=1, board="t-1/r1", tables=[tournament_pb2.RoundTable(
        match_id="t-1-r1-t1-g1", bot_ids=["b-a", "b-b", "b-c"], points=[1, 0.25, 0.25])],
        bye_bot_ids=["b-d"])
    st.rounds.add(number=2, board="t-1/r2", tables=[tournament_pb2.RoundTable(
        match_id="t-1-r2-t1-g1", bot_ids=["b-b", "b-c", "b-d"])], bye_bot_ids=["b-a"])
    st.boards_in_play.add(board="t-1/r2", games=1)
    return st


def test_a_ranking_shows_every_measure_with_its_explanation_and_hides_what_is_not_public(
        ) -> None:
    view = ranking_view(_swiss_standings())
    assert view is not None
    assert [(c["title"], c["short"], c["explanation"]) for c in view["columns"]] == [
        ("Points", "Pts", "game points"), ("Buchholz", "Buchholz", "opposition")]
    first, second = view["rows"]
    assert [c["text"] for c in first["cells"]] == ["1\u00bd", "2.88"]
    assert [c["text"] for c in second["cells"]] == ["\u00bc", "-1"]
    assert [(r["where"], r["points"]) for r in first["rounds"]] == [("t1", "1"),
                                                                     ("bye", "\u00bd")]
    assert [(r["where"], r["points"]) for r in second["rounds"]] == [("t1", ""),
                                                                      ("t1", "\u00bc")]
    assert "not public" in second["rounds"][0]["title"]
    assert ranking_view(tournament_pb2.Standings()) is None


def test_rounds_newest_first_with_points_only_once_public() -> None:
    rounds = rounds_view(_swiss_standings(), 3)
    assert [(r["number"], r["state"], r["byes"]) for r in rounds] == [
        (2, "in play", ["a"]), (1, "released", ["d"])]
    assert [s["points"] for s in rounds[0]["tables"][0]["sides"]] == ["", "", ""]
    assert [(s["name"], s["points"]) for s in rounds[1]["tables"][0]["sides"]] == [
        ("a", "1"), ("b", "\u00bc"), ("c", "\u00bc")]
