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
          verdict_pairs: int = 2, outcome: int | None = None) -> change_pb2.Test:
    spec = change_pb2.TestSpec(name="v2 vs v1", candidate="b-2", baseline="b-1",
                               opponents=["house:greedy", "house:greedy"], elo0=0, elo1=10,
                               alpha=0.05, beta=0.05, fixed_games=fixed, max_games=200)
    progress = change_pb2.TestProgress(
        games=2 * pairs, pairs=pairs, pentanomial=[0, 1, 1, 1, 0], between=[0, 0, 0, 0],
        llr=3.1, llr_lower=-2.94, llr_upper=2.94, verdict=verdict, verdict_pairs=verdict_pairs,
        elo=12.5, elo_low=-3.0, elo_high=float("inf"), los=0.9, score=0.55,
        verdict_llr=2.97 if verdict in (change_pb2.TEST_VERDICT_H0,
                                        change_pb2.TEST_VERDICT_H1) else 0.0,
        outcome=outcome if outcome is not None else
        change_pb2.TEST_OUTCOME_H1 if verdict == change_pb2.TEST_VERDICT_H1 else 0)
    return change_pb2.Test(test_id="c-1", spec=spec, status=change_pb2.TEST_STATUS_FINISHED,
                           progress=progress, names=["v2", "v1", "house:greedy",
                                                     "house:greedy"], games_total=200)


def _pairs(n: int) -> list[change_pb2.TestPair]:
    return [TP(board=k, board_id=f"c-1/p{k}", candidate_match_id=f"c-1-p{k}-c",
               baseline_match_id=f"c-1-p{k}-b", eighths=k % 9, llr=k / 10)
            for k in range(1, n + 1)]


def test_the_verdict_and_figures_in_words() -> None:
    row = change_row(_test())
    assert row["verdict"] == "H1"
    assert row["verdict_text"] == ("H1 accepted after 2 pairs: the data favour elo1 = 10 over "
                                   "elo0 = 0 (LLR 2.97 ≥ 2.94; alpha 0.05).")
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
    assert "Verdict: H1 accepted after 2 pairs: the data favour elo1 = 10 over elo0 = 0 " \
        "(LLR 2.97 >= 2.94; alpha 0.05)" in text
    assert "Void pairs: 0" in text
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


def _h0_over_a_positive_interval() -> change_pb2.Test:
    """The issue's test: H0 accepted beside an interval wholly above elo0."""
    t = _test(pairs=84, verdict=change_pb2.TEST_VERDICT_H0, verdict_pairs=84,
              outcome=change_pb2.TEST_OUTCOME_H0)
    t.spec.elo0, t.spec.elo1 = 0.0, 50.0
    p = t.progress
    p.llr, p.verdict_llr, p.elo, p.elo_low, p.elo_high = -2.95, -2.95, 19.8, 3.8, 35.8
    return t


def test_a_verdict_never_claims_more_than_the_sprt_and_says_why_the_estimate_differs(
        ) -> None:
    text = summary(_h0_over_a_positive_interval())
    assert "Elo: +19.8 [+3.8, +35.8]" in text
    assert "Verdict: H0 accepted after 84 pairs: the data favour elo0 = 0 over elo1 = 50 " \
        "(LLR -2.95 <= -2.94; beta 0.05)" in text
    assert "no more than" not in text.split("Verdict:")[1].split("Note:")[0]
    assert "Note: the estimate +19.8 is above elo0 = 0: H0 accepted means the pairs fit elo0 " \
        "better than elo1 = 50, not that the candidate is no better than 0 Elo; a " \
        "sequential test stops" in text and "biased" in text
    row = change_row(_h0_over_a_positive_interval())
    assert "(LLR -2.95 ≤ -2.94" in row["verdict_text"] and "above elo0" in row["verdict_note"]
    # H1 below elo1 says so too; an estimate on the accepted side needs no note.
    h1 = _test(verdict=change_pb2.TEST_VERDICT_H1)
    h1.progress.elo = 4.0
    assert "is below elo1 = 10: H1 accepted means" in summary(h1)
    assert "Note:" not in summary(_test(verdict=change_pb2.TEST_VERDICT_H1))


def test_void_pairs_waiting_and_a_stop_show_as_what_they_are() -> None:
    t = _test(pairs=37, verdict=change_pb2.TEST_VERDICT_FORFEITS, verdict_pairs=35,
              outcome=change_pb2.TEST_OUTCOME_FORFEITS)
    p = t.progress
    p.pairs_void, p.verdict_side = 5, change_pb2.TEST_SIDE_BASELINE
    p.verdict_reason = "the baseline forfeited 3 pairs in a row: disconnected for more than 2 s"
    p.voids.add(side=change_pb2.TEST_SIDE_BASELINE, reason="disconnected for more than 2 s",
                pairs=4)
    p.voids.add(side=change_pb2.TEST_SIDE_STACK, reason="could not be hosted", pairs=1)
    text = summary(t)
    assert "(stopped)" in text.splitlines()[0]
    assert "Verdict: stopped: the baseline forfeited 3 pairs in a row: disconnected for " \
        "more than 2 s; neither H0 nor H1" in text
    assert "Void pairs: 5 (baseline: 4 disconnected for more than 2 s; stack: 1 could not " \
        "be hosted)" in text
    assert "Note: the figures are from the 37 counted pairs only" in text
    assert "37 pairs (5 void)" in live_line(t)
    row = change_row(t)
    assert row["verdict"] == "stopped" and row["shown"] == "stopped" and row["void"] == 5
    assert row["status"] == "finished"  # the life cycle, which the live page follows
    assert row["voids"][0] == {"who": "the baseline", "reason": "disconnected for more than 2 s",
                               "pairs": 4}
    assert chart_data(t, _pairs(3))["verdict"] == 0  # no H0 or H1 mark on the chart
    # Waiting for a bot: the CLI line and the summary say so.
    w = _test(verdict=change_pb2.TEST_VERDICT_PENDING)
    w.status = change_pb2.TEST_STATUS_RUNNING
    w.waiting_for.append("ghost")
    assert live_line(w).endswith("waiting for ghost")
    assert "Waiting for ghost: not connected; no new pair starts" in summary(w)
    assert change_row(w)["waiting"] == ["ghost"]
    # Held back by the author's limit: the words, in the CLI and on the page.
    h = _test(verdict=change_pb2.TEST_VERDICT_PENDING)
    h.status = change_pb2.TEST_STATUS_RUNNING
    h.held = "alice's limit: 8 pairs in flight over all their tests"
    assert live_line(h).endswith("waiting: alice's limit: 8 pairs in flight over all their "
                                 "tests")
    assert "Held: alice's limit: 8 pairs in flight over all their tests" in summary(h)
    assert change_row(h)["held"] == h.held
    page = _render(change_row(h))
    assert 'id="t-held"' in page and "alice&#39;s limit: 8 pairs in flight" in page
    assert 'id="t-held"' not in _render(change_row(w))  # waiting for a bot says that instead
    # Stopped by StopTest: stopped, with what was counted.
    s = _test(verdict=change_pb2.TEST_VERDICT_PENDING, outcome=change_pb2.TEST_OUTCOME_STOPPED)
    s.progress.llr = 0.4
    assert "(stopped)" in summary(s).splitlines()[0]
    assert "Verdict: none: stopped by the organiser after 3 counted pairs, before the LLR " \
        "(0.40) left (-2.94, 2.94)" in summary(s)
    assert change_row(s)["shown"] == "stopped"
    s.status, s.stop_asked = change_pb2.TEST_STATUS_RUNNING, True
    s.progress.outcome = change_pb2.TEST_OUTCOME_UNSPECIFIED
    assert "(stopping)" in summary(s).splitlines()[0]


def test_void_pairs_show_why_and_stay_off_the_llr_chart() -> None:
    pairs = _pairs(4)
    pairs[1].eighths = 0
    pairs[1].voids.add(side=change_pb2.TEST_SIDE_CANDIDATE, reason="3 strikes", match_id="x")
    rows = pair_rows(pairs)
    assert rows[2]["score"] == "void" and rows[2]["why"] == "the candidate: 3 strikes"
    t = _test(pairs=3, verdict=change_pb2.TEST_VERDICT_PENDING)
    assert [p[0] for p in chart_data(t, pairs)["llr"]] == [1, 2, 3]


def test_a_board_names_each_seat_by_its_role() -> None:
    from clients.web.change_views import labelled, seat_roles

    t = _test()
    t.spec.baseline = "house:greedy"
    t.names[1] = "house:greedy"
    for board in range(1, 7):
        for role, hero in (("c", "C"), ("b", "B")):
            seats = seat_roles(t, board, role)
            assert sorted(x["label"] for x in seats) == sorted([hero, "O1", "O2"])
            assert [x["seat"] for x in seats if x["hero"]] == [(board - 1) % 3]
    seats = seat_roles(t, 1, "b")
    assert [x["label"] for x in seats] == ["B", "O1", "O2"]
    record = labelled({"seats": ["house:greedy"] * 3, "final": [0, 3, 4]}, seats)
    assert record["seats"] == ["B (house:greedy)", "O1 (house:greedy)", "O2 (house:greedy)"]


def _render(row: dict[str, object]) -> str:
    """The test's figures block as the page draws it."""
    from clients.web.app import _environment

    return str(_environment().get_template("_test.html").module.summary({"t": row}))
