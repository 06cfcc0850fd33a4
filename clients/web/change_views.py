"""What the pages of a test of a change show, from TestService messages: pure functions.

`/test/<id>` draws the LLR over pairs against its bounds, the pentanomial as bars,
the estimate, the verdict, the counted pairs (each board's two games side by side)
and the games. Everything here comes from the public API, so a board still in play
shows only that its games exist: a pair counts, and shows, once both are finished.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from clients.web.views import Row, changed_rules, when
from proto.moon.v1 import change_pb2, rating_pb2

__all__ = ["CHART_POINTS", "board_games", "change_row", "chart_data", "pair_rows"]

CHART_POINTS = 1500  # the LLR chart keeps at most this many points (and the verdict's)
_STATUS = {change_pb2.TEST_STATUS_RUNNING: "running", change_pb2.TEST_STATUS_FINISHED:
           "finished", change_pb2.TEST_STATUS_FAILED: "failed"}
_PAIR_LABELS = ("0", "1/8", "1/4", "3/8", "1/2", "5/8", "3/4", "7/8", "1")


def _elo(value: float) -> str:
    if math.isinf(value):
        return "-∞" if value < 0 else "+∞"
    return f"{value:+.1f}"


def _verdict(t: change_pb2.Test) -> tuple[str, str]:
    """(short word, sentence) of the verdict."""
    p, s = t.progress, t.spec
    if p.verdict == change_pb2.TEST_VERDICT_H1:
        return "H1", (f"H1 accepted after {p.verdict_pairs} pairs: the candidate is at least "
                      f"{s.elo1:g} Elo better than the baseline.")
    if p.verdict == change_pb2.TEST_VERDICT_H0:
        return "H0", (f"H0 accepted after {p.verdict_pairs} pairs: the candidate is no more "
                      f"than {s.elo0:g} Elo better than the baseline.")
    ended = {change_pb2.TEST_OUTCOME_LIMIT: "the game limit came before a verdict",
             change_pb2.TEST_OUTCOME_STOPPED: "it was stopped before a verdict",
             change_pb2.TEST_OUTCOME_DONE: "all its games are played"}.get(p.outcome)
    if s.fixed_games:
        return "estimate", ("A fixed number of games: an estimate with its interval, no "
                            "verdict" + (f" ({ended})." if ended else "."))
    if ended:
        return "none", f"No verdict: {ended}."
    return "pending", "Pending: neither bound crossed yet."


def change_row(t: change_pb2.Test) -> Row:
    """One test, as the list and the test's header show it."""
    s, p = t.spec, t.progress
    names = list(t.names)
    word, sentence = _verdict(t)
    clock = (f"{s.clock.move_time_ms / 1000:g} s a move, {s.clock.time_bank_ms / 1000:g} s "
             "bank") if s.HasField("clock") else ""
    hypotheses = (f"H0: {s.elo0:g} Elo, H1: {s.elo1:g} Elo, alpha {s.alpha:g}, beta {s.beta:g}"
                  if not s.fixed_games else f"{s.fixed_games} games")
    status = _STATUS.get(t.status, "unknown")
    total = max(t.games_total, p.games)
    return {
        "id": t.test_id, "name": s.name or t.test_id, "status": status,
        "pool": "2v2" if s.pool == rating_pb2.RATING_POOL_TWO_VS_TWO else "3p",
        "candidate": {"id": s.candidate, "name": names[0] if names else s.candidate},
        "baseline": {"id": s.baseline, "name": names[1] if len(names) > 1 else s.baseline},
        "opponents": [{"id": b, "name": n} for b, n in zip(s.opponents, names[2:],
                                                            strict=False)],
        "sequential": not s.fixed_games, "hypotheses": hypotheses, "clock": clock,
        "rules": changed_rules(dict(s.rules)),
        "seed": s.seed if s.HasField("seed") else None,
        "games": p.games, "total": total,
        "percent": max(0, min(100, round(100 * p.games / total))) if total else 0,
        "pairs": p.pairs, "in_flight": p.pairs_in_flight,
        "llr": f"{p.llr:+.2f}", "lower": f"{p.llr_lower:.2f}", "upper": f"{p.llr_upper:.2f}",
        "elo": _elo(p.elo), "elo_low": _elo(p.elo_low), "elo_high": _elo(p.elo_high),
        "los": f"{100 * p.los:.1f}%", "score": f"{p.score:.3f}",
        "pentanomial": list(p.pentanomial), "between": list(p.between),
        "verdict": word, "verdict_text": sentence,
        "created": when(t.created_at), "finished": when(t.finished_at,
                                                        t.HasField("finished_at")),
        "error": t.error, "notes": list(t.notes), "redealt": t.boards_redealt,
    }


def chart_data(t: change_pb2.Test, pairs: Sequence[change_pb2.TestPair]) -> dict[str, Any]:
    """What test.js draws: the LLR after each pair (thinned to CHART_POINTS, keeping the
    verdict's pair and the last), the bounds, and the pair-score bins."""
    p = t.progress
    points = [(x.board, x.llr) for x in pairs]  # counted in board order: board k is pair k
    keep = {0, len(points) - 1, p.verdict_pairs - 1}
    step = max(1, math.ceil(len(points) / CHART_POINTS))
    thinned = [[n, round(v, 4)] for i, (n, v) in enumerate(points) if i % step == 0 or i in keep]
    bins = []
    for k in range(9):
        count = p.pentanomial[k // 2] if k % 2 == 0 and len(p.pentanomial) == 5 else (
            p.between[k // 2] if k % 2 == 1 and len(p.between) == 4 else 0)
        bins.append({"label": _PAIR_LABELS[k], "count": count, "main": k % 2 == 0})
    return {"sequential": not t.spec.fixed_games, "llr": thinned, "lower": p.llr_lower,
            "upper": p.llr_upper, "verdict": p.verdict_pairs,
            "verdict_word": _verdict(t)[0], "bins": bins}


def pair_rows(pairs: Sequence[change_pb2.TestPair], newest: int = 200) -> list[Row]:
    """The newest counted pairs, newest first: board, score, LLR, the two games."""
    out = []
    for x in list(pairs)[-newest:][::-1]:
        score = x.eighths / 8
        out.append({"board": x.board, "score": _PAIR_LABELS[x.eighths],
                    "cls": "win" if score > 0.5 else "loss" if score < 0.5 else "draw",
                    "llr": f"{x.llr:+.2f}", "c": x.candidate_match_id,
                    "b": x.baseline_match_id})
    return out


def board_games(test_id: str, board: int) -> tuple[str, str]:
    """The ids of a board's two games: the candidate's and the baseline's."""
    return f"{test_id}-p{board}-c", f"{test_id}-p{board}-b"
