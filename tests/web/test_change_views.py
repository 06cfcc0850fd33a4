"""What a test of a change shows, as pure views of TestService messages (the page and the
CLI): the verdict in words, the LLR chart's points, the pair rows, the fishtest-like
block; and a test's games named as such in a games list, never as single matches."""

from __future__ import annotations

import pytest

from clients.changes import _Line, live_line, summary
from clients.web.change_views import CHART_POINTS, change_row, chart_data, pair_rows
from clients.web.views import live_singles, match_row
from proto.moon.v1 import change_pb2, match_pb2

TP = change_pb2.TestPair


def _test(pairs: int = 3, verdict: int = change_pb2.TEST_VERDICT_H1, fixed: int = 0,
          verdict_pairs: int = 2) -> change_pb2.Test:
    spec = change_pb2.TestSpec(name="v2 vs v1", candidate="b-2", baseline="b-1",
                               opponents=["house:greedy", "house:greedy"], elo0=0, elo1=10,
                               alpha=0.05, beta=0.05, fixed_games=fixed, max_games=200)
    progress = change_pb2.TestProgress(
        games=2 * pairs, pairs=pairs, pentanomial=[0, 1, 1, 1, 0], between=[0, 0, 0, 0],
        llr=3.1, llr_lower=-2.94, llr_upper=2.94, verdict=verdict, verdict_pairs=verdict_pairs,
        elo=12.5, elo_low=-3.0, elo_high=float("inf"), los=0.9, score=0.55,
        outcome=change_pb2.TEST_OUTCOME_H1 if verdict == change_pb2.TEST_VERDICT_H1 else 0)
    return change_pb2.Test(test_id="c-1", spec=spec, status=change_pb2.TEST_STATUS_FINISHED,
                           progress=progress, names=["v2", "v1", "house:greedy",
                                                     "house:greedy"], games_total=200)


def _pairs(n: int) -> list[change_pb2.TestPair]:
    return [TP(board=k, board_id=f"c-1/p{k}", candidate_match_id=f"c-1-p{k}-c",
               baseline_match_id=f"c-1-p{k}-b", eighths=k % 9, llr=k / 10)
            for k in range(1, n + 1)]


def test_the_verdict_and_figures_in_words() -> None:
    row = change_row(_test())
    assert row["verdict"] == "H1" and "at least 10 Elo better" in row["verdict_text"]
    assert row["elo_high"] == "+∞" and row["llr"] == "+3.10" and row["sequential"]
    assert change_row(_test(verdict=change_pb2.TEST_VERDICT_PENDING))["verdict"] == "pending"
    fixed = change_row(_test(fixed=20, verdict=change_pb2.TEST_VERDICT_UNSPECIFIED))
    assert fixed["verdict"] == "estimate" and not fixed["sequential"]


def test_the_llr_chart_keeps_the_verdicts_pair_and_the_last() -> None:
    t = _test(pairs=4000, verdict_pairs=1234)
    data = chart_data(t, _pairs(4000))
    boards = [p[0] for p in data["llr"]]
    assert len(boards) <= CHART_POINTS + 3
    assert 1 in boards and 1234 in boards and 4000 in boards
    assert boards == sorted(boards)
    assert [b["count"] for b in data["bins"]] == [0, 0, 1, 0, 1, 0, 1, 0, 0]
    assert data["verdict"] == 1234 and data["upper"] == 2.94


def test_pair_rows_are_newest_first_with_both_games() -> None:
    rows = pair_rows(_pairs(5), newest=2)
    assert [r["board"] for r in rows] == [5, 4]
    assert rows[0]["c"] == "c-1-p5-c" and rows[0]["b"] == "c-1-p5-b"
    assert rows[0]["score"] == "5/8" and rows[0]["cls"] == "win"


def test_the_cli_prints_what_fishtest_prints() -> None:
    text = summary(_test())
    assert "LLR: 3.10 (-2.94, 2.94) <0.00, 10.00>" in text
    assert "Elo: +12.5 [-3.0, +inf] (95%)  LOS: 90.0%" in text
    assert "Games: 6 of at most 200  Pairs: 3 (0 in flight)" in text
    assert "Ptnml(0-1): 0, 1, 1, 1, 0" in text and "between" not in text
    assert "Score: 0.550 (mean pair)" in text and "Elo infinite" not in text
    assert "Verdict: H1 accepted after 2 pairs (LLR reached 2.94)" in text
    beyond = _test()
    beyond.progress.elo, beyond.progress.score = float("inf"), 0.8
    assert "Elo: +inf" in summary(beyond) and "Elo infinite" in summary(beyond)
    fixed = summary(_test(fixed=20, verdict=change_pb2.TEST_VERDICT_UNSPECIFIED))
    assert "LLR" not in fixed and "an estimate, no verdict" in fixed
    assert "LLR +3.10 (-2.94, 2.94)" in live_line(_test())


def test_a_tests_game_is_not_a_single_match() -> None:
    m = match_pb2.Match(match_id="c-1-p3-c", status=match_pb2.MATCH_STATUS_RUNNING,
                        players=3, bot_ids=["a", "b", "c"], test_id="c-1",
                        board="c-1/p3")
    row = match_row(m)
    assert row["test_id"] == "c-1" and row["short"] == "p3-c"
    assert live_singles([row]) == []


def test_the_live_line_off_a_terminal_prints_each_new_line_once(
        capsys: pytest.CaptureFixture[str]) -> None:
    line = _Line(quiet=False)
    line.show("a", force=True)
    line.show("b")  # within 10 s of the last: held back
    line.show("c", force=True)
    line.show("c", force=True)  # the end, as an event and as a last read: once
    line.close()
    assert capsys.readouterr().err.splitlines() == ["a", "c"]
