"""What the pages of a test of a change show, from TestService messages: pure functions.

`/test/<id>` draws the LLR over pairs against its bounds, the pentanomial as bars,
the estimate, the verdict (in the CLI's words: `clients.changes.verdict_text`), the
void pairs by who and why, whom it waits for, the settled pairs (each board's two
games side by side) and the games. Everything here comes from the public API, so a
board still in play shows only that its games exist: a pair settles, and shows, once
both are finished. `/test/<id>/board/<k>` names each seat by its role (`seat_roles`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from clients.changes import verdict_note, verdict_text, void_text
from clients.web.views import Row, changed_rules, sandbox_text, when
from clients.wire import pool_from_pb
from proto.moon.v1 import change_pb2, rating_pb2
from tournaments.change import ChangeSpec, roles

__all__ = ["CHART_POINTS", "board_games", "change_row", "chart_data", "labelled", "pair_rows",
           "seat_roles"]

CHART_POINTS = 1500  # the LLR chart keeps at most this many points (and the verdict's)
_STATUS = {change_pb2.TEST_STATUS_RUNNING: "running", change_pb2.TEST_STATUS_FINISHED:
           "finished", change_pb2.TEST_STATUS_FAILED: "failed"}
_PAIR_LABELS = ("0", "1/8", "1/4", "3/8", "1/2", "5/8", "3/4", "7/8", "1")


def _elo(value: float) -> str:
    if math.isinf(value):
        return "-∞" if value < 0 else "+∞"
    return f"{value:+.1f}"


_SIDE = {change_pb2.TEST_SIDE_CANDIDATE: "the candidate",
         change_pb2.TEST_SIDE_BASELINE: "the baseline",
         change_pb2.TEST_SIDE_OPPONENT: "an opponent", change_pb2.TEST_SIDE_STACK: "the stack"}
_ENDED = (change_pb2.TEST_OUTCOME_STOPPED, change_pb2.TEST_OUTCOME_FORFEITS)


def _sentence(text: str) -> str:
    return (text[:1].upper() + text[1:] + ".") if text else ""


def _verdict(t: change_pb2.Test) -> tuple[str, str]:
    """(short word, sentence) of the verdict: the CLI's words."""
    p = t.progress
    word = {change_pb2.TEST_VERDICT_H1: "H1", change_pb2.TEST_VERDICT_H0: "H0",
            change_pb2.TEST_VERDICT_FORFEITS: "stopped"}.get(p.verdict)
    if word is None:
        if t.spec.fixed_games:
            word = "estimate"
        elif p.outcome:
            word = "none"
        else:
            word = "pending"
    return word, _sentence(verdict_text(t).replace(" <= ", " ≤ ").replace(" >= ", " ≥ "))


def _status(t: change_pb2.Test) -> str:
    if t.status == change_pb2.TEST_STATUS_RUNNING and t.stop_asked:
        return "stopping"
    if t.status == change_pb2.TEST_STATUS_FINISHED and t.progress.outcome in _ENDED:
        return "stopped"
    return _STATUS.get(t.status, "unknown")


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
        "id": t.test_id, "name": s.name or t.test_id, "status": status, "shown": _status(t),
        "pool": str(pool_from_pb(s.pool)),
        "candidate": {"id": s.candidate, "name": names[0] if names else s.candidate},
        "baseline": {"id": s.baseline, "name": names[1] if len(names) > 1 else s.baseline},
        "opponents": [{"id": b, "name": n} for b, n in zip(s.opponents, names[2:],
                                                            strict=False)],
        "sequential": not s.fixed_games, "hypotheses": hypotheses, "clock": clock,
        "rules": changed_rules(dict(s.rules)),
        "sandbox": sandbox_text(s.sandbox),
        "seed": s.seed if s.HasField("seed") else None,
        "games": p.games, "total": total,
        "percent": max(0, min(100, round(100 * p.games / total))) if total else 0,
        "pairs": p.pairs, "in_flight": p.pairs_in_flight,
        "llr": f"{p.llr:+.2f}", "lower": f"{p.llr_lower:.2f}", "upper": f"{p.llr_upper:.2f}",
        "elo": _elo(p.elo), "elo_low": _elo(p.elo_low), "elo_high": _elo(p.elo_high),
        "los": f"{100 * p.los:.1f}%", "score": f"{p.score:.3f}",
        "pentanomial": list(p.pentanomial), "between": list(p.between),
        "verdict": word, "verdict_text": sentence, "verdict_note": _sentence(verdict_note(t)),
        "void": p.pairs_void, "void_text": void_text(p), "settled": p.pairs + p.pairs_void,
        "voids": [{"who": _SIDE.get(v.side, "unknown"), "reason": v.reason, "pairs": v.pairs}
                  for v in p.voids],
        "waiting": list(t.waiting_for), "held": t.held, "stop_asked": t.stop_asked,
        "created": when(t.created_at), "finished": when(t.finished_at,
                                                        t.HasField("finished_at")),
        "error": t.error, "notes": list(t.notes), "redealt": t.boards_redealt,
        "author_id": t.author_id,
    }


def chart_data(t: change_pb2.Test, pairs: Sequence[change_pb2.TestPair]) -> dict[str, Any]:
    """What test.js draws: the LLR after each counted pair (void pairs leave it as it was;
    thinned to CHART_POINTS, keeping the verdict's pair and the last), the bounds, and the
    pair-score bins."""
    p = t.progress
    points = [(i, x.llr) for i, x in enumerate((x for x in pairs if not x.voids), 1)]
    accepted = p.verdict in (change_pb2.TEST_VERDICT_H0, change_pb2.TEST_VERDICT_H1)
    verdict = p.verdict_pairs if accepted else 0
    keep = {0, len(points) - 1, verdict - 1}
    step = max(1, math.ceil(len(points) / CHART_POINTS))
    thinned = [[n, round(v, 4)] for i, (n, v) in enumerate(points) if i % step == 0 or i in keep]
    bins = []
    for k in range(9):
        count = p.pentanomial[k // 2] if k % 2 == 0 and len(p.pentanomial) == 5 else (
            p.between[k // 2] if k % 2 == 1 and len(p.between) == 4 else 0)
        bins.append({"label": _PAIR_LABELS[k], "count": count, "main": k % 2 == 0})
    return {"sequential": not t.spec.fixed_games, "llr": thinned, "lower": p.llr_lower,
            "upper": p.llr_upper, "verdict": verdict,
            "verdict_word": _verdict(t)[0], "bins": bins}


def pair_rows(pairs: Sequence[change_pb2.TestPair], newest: int = 200) -> list[Row]:
    """The newest settled pairs, newest first: board, score (or why it is void), LLR, the
    two games."""
    out = []
    for x in list(pairs)[-newest:][::-1]:
        if x.voids:
            why = "; ".join(f"{_SIDE.get(v.side, 'unknown')}: {v.reason}" for v in x.voids)
            out.append({"board": x.board, "score": "void", "cls": "void", "why": why,
                        "llr": f"{x.llr:+.2f}", "c": x.candidate_match_id,
                        "b": x.baseline_match_id})
            continue
        score = x.eighths / 8
        out.append({"board": x.board, "score": _PAIR_LABELS[x.eighths],
                    "cls": "win" if score > 0.5 else "loss" if score < 0.5 else "draw",
                    "why": "", "llr": f"{x.llr:+.2f}", "c": x.candidate_match_id,
                    "b": x.baseline_match_id})
    return out


def board_games(test_id: str, board: int) -> tuple[str, str]:
    """The ids of a board's two games: the candidate's and the baseline's."""
    return f"{test_id}-p{board}-c", f"{test_id}-p{board}-b"


_SHORT = {"opponent 1": "O1", "opponent 2": "O2", "partner": "P"}


def seat_roles(t: change_pb2.Test, board: int, role: str) -> list[Row]:
    """Each seat of board `board` (from 1) in the `role` game ("c" or "b"), for people:
    its label (`C`, `B`, `O1`, `O2`, 2v2 `P` the partner), its role in words, the bot and
    its name. Both games seat the opponents alike, so O1 is the same bot in both."""
    s = t.spec
    spec = ChangeSpec(test_id=t.test_id, players=4 if s.pool ==
                      rating_pb2.RATING_POOL_TWO_VS_TWO else 3, candidate=s.candidate,
                      baseline=s.baseline, opponents=tuple(s.opponents), seed=0,
                      trust_opponents=s.trust_opponents)
    names = dict(zip((s.candidate, s.baseline, *s.opponents), t.names, strict=False))
    hero = (s.candidate, "C", "the candidate") if role == "c" else (
        s.baseline, "B", "the baseline")
    out = []
    for seat, who in enumerate(roles(spec, board - 1)):
        if who == "hero":
            bot, label, words = hero
        else:
            index = ("opponent 1", "opponent 2") if spec.players == 3 else (
                "partner", "opponent 1", "opponent 2")
            bot, label, words = s.opponents[index.index(who)], _SHORT[who], who
        out.append({"seat": seat, "label": label, "role": words, "bot_id": bot,
                    "name": names.get(bot, bot), "hero": who == "hero"})
    return out


def labelled(record: dict[str, Any], seats: Sequence[Row]) -> dict[str, Any]:
    """A transcript whose seat names say each seat's role (`B (house:greedy)`), so a replay
    of a board where C or B and the opponents share a name still tells them apart."""
    return {**record, "seats": [f"{x['label']} ({x['name']})" for x in seats]}
