"""Faults end as specified: illegal and late answers, disconnects with and without a return.

Every bot here is a real `moonshot bot run` process; the faulty ones are in netbots.py.
"""

from __future__ import annotations

import re
import time

import redis
from stack import Proc, Stack
from support import (
    PoolBot,
    check_stored,
    finished,
    match_log,
    pending_ids,
    transcript_of,
    wait_until,
)

from clients.admin import Admin
from clients.sdk import register
from moon.actions import ACTIONS
from moon.transcript import actions_of
from store import keys


def _strike_faults(record: dict[str, object], seat: int, kind: str) -> list[dict[str, object]]:
    """The transcript's faults of `seat`, checked: each is a strike of that kind whose
    replacement is the action the game went on with."""
    faults: list[dict[str, object]] = record["faults"]  # type: ignore[assignment]
    played = actions_of(record)
    for f in faults:
        assert ACTIONS[played[f["seq"]]].label == f["replacement"], f  # type: ignore[index]
    mine = [f for f in faults if f["seat"] == seat]
    assert all(f["kind"] == kind for f in mine), mine
    return mine


def test_illegal_answers_strike_then_forfeit(stack: Stack, pool: dict[str, PoolBot],
                                             admin: Admin, r: redis.Redis, name: str) -> None:
    """One IllegalBot process plays a 3p and a 4p match at once: three illegal answers in
    each are replaced, each a strike, and the third forfeits it."""
    bot_id, token = register(stack.address, f"{name}-illegal")
    proc = stack.bot("netbots:IllegalBot", stack.address, token)
    g1, g2, r1, r2 = pool["greedy1"], pool["greedy2"], pool["random1"], pool["random2"]
    m3 = admin.create_match(3, [g1.bot_id, bot_id, g2.bot_id], seed=21, max_strikes=3)
    m4 = admin.create_match(4, [g1.bot_id, r1.bot_id, bot_id, r2.bot_id], seed=22,
                            max_strikes=3)

    m = finished(admin, m3.match_id)
    record = transcript_of(m)
    assert record["end"] == "forfeit" == m.result.end
    assert record["forfeit"]["seat"] == 1 == m.result.forfeit.seat
    assert "3 strikes" in record["forfeit"]["reason"] == m.result.forfeit.reason
    faults = _strike_faults(record, 1, "illegal")
    assert len(faults) == 3
    assert all("is not a legal action" in f["reason"] for f in faults)
    # The forfeiter is last whatever its score; the others are placed by score.
    final, place = record["final"], list(m.result.placement)
    assert place[1] == 3
    assert (place[0] < place[2]) == (final[0] > final[2])
    assert (place[0] == place[2]) == (final[0] == final[2])
    check_stored(r, m, record)

    m = finished(admin, m4.match_id)
    record = transcript_of(m)
    assert record["end"] == "forfeit" and record["forfeit"]["seat"] == 2
    assert len(_strike_faults(record, 2, "illegal")) == 3
    assert record["winner"] == 1 == m.result.winner  # the forfeiter's team (0) loses
    assert list(m.result.placement) == [2, 1, 2, 1]
    check_stored(r, m, record)

    # The bot heard about each strike (the SDK logs every DecisionRejected it receives).
    for mid in (m3.match_id, m4.match_id):
        rejected = wait_until("the rejections in the bot's log", lambda mid=mid: (
            re.findall(rf"decision {mid}/\d+ rejected: .*is not a legal action.*"
                       r"strike (\d) of 3", proc.text())
            if proc.text().count(f"match {mid} ended") else None))
        assert rejected == ["1", "2", "3"]


def test_a_bot_that_returns_no_action_or_raises_is_told_once_a_decision(
        stack: Stack, pool: dict[str, PoolBot], admin: Admin, name: str) -> None:
    """A bot whose act returns 9999, and one whose act raises: the SDK says so once a
    decision in the bot's log (9999: what self-play says; a raise: its traceback once) and
    answers nothing, so each strike is an honest "no answer" and the third forfeits. No
    unretrieved-task noise, on the thread pool or deciding inline."""
    g1, g2 = pool["greedy1"], pool["greedy2"]
    procs: list[Proc] = []
    matches = []
    for spec, extra in (("netbots:NonActionBot", ()), ("netbots:RaisingBot", ("--threads", "0"))):
        bot_id, token = register(stack.address, f"{name}-{spec[8:].lower()}")
        procs.append(stack.bot(spec, stack.address, token, *extra))
        matches.append(admin.create_match(3, [g1.bot_id, bot_id, g2.bot_id], seed=23,
                                          move_time_ms=500, time_bank_ms=0, max_strikes=3))
    for proc, created in zip(procs, matches, strict=True):
        m = finished(admin, created.match_id)
        record = transcript_of(m)
        assert record["end"] == "forfeit" and record["forfeit"]["seat"] == 1
        faults = _strike_faults(record, 1, "late")
        assert [f["reason"] for f in faults] == ["no answer within 500 ms"] * 3
        wait_until("the end in the bot's log",
                   lambda proc=proc, mid=m.match_id: f"match {mid} ended" in proc.text())
    non_action, raising = (p.text() for p in procs)
    for text in (non_action, raising):
        assert "Task exception was never retrieved" not in text, text
        assert "AttributeError" not in text, text
    said = re.findall(r"seat 1: the bot returned 9999 \(a int\), not one of the legal "
                      r"actions; legal were: (.+); not answering (\S+) \(the referee's clock "
                      r"will run out: a strike\)", non_action)
    assert len(said) == 3 and len({rid for _, rid in said}) == 3, non_action
    assert said[0][0].startswith("pass, bid "), said  # the labels, as self-play lists them
    said = re.findall(r"seat 1: the bot raised ValueError: no idea what to do with \d+ "
                      r"actions; not answering (\S+)", raising)
    assert len(said) == 3 and len(set(said)) == 3, raising
    assert raising.count("Traceback (most recent call last)") == 1, raising
    assert 'netbots.py", line' in raising and "in act" in raising
    assert raising.count("(traceback above)") == 2, raising


def test_late_answers_strike_and_draw_on_the_bank(stack: Stack, pool: dict[str, PoolBot],
                                                  admin: Admin, r: redis.Redis,
                                                  name: str) -> None:
    """A bot that takes 1.2 s a move against a 500 ms limit: with no bank every answer is
    late, replaced and a strike, and the third forfeits; with a 2 s bank the first two
    answers draw on it and count, and the third, with too little bank left, is late."""
    bot_id, token = register(stack.address, f"{name}-slow")
    proc = stack.bot("netbots:SlowBot", stack.address, token)
    g1, g2 = pool["greedy1"], pool["greedy2"]
    no_bank = admin.create_match(3, [bot_id, g1.bot_id, g2.bot_id], seed=31,
                                 move_time_ms=500, time_bank_ms=0, max_strikes=3)
    bank = admin.create_match(3, [g1.bot_id, g2.bot_id, bot_id], seed=32,
                              move_time_ms=500, time_bank_ms=2000, max_strikes=1)

    m = finished(admin, no_bank.match_id)
    record = transcript_of(m)
    assert record["end"] == "forfeit" and record["forfeit"]["seat"] == 0
    assert "3 strikes" in record["forfeit"]["reason"]
    faults = _strike_faults(record, 0, "late")
    assert len(faults) == 3
    assert all(f["reason"] == "no answer within 500 ms" for f in faults)
    assert m.result.placement[0] == 3
    seat0 = [e for e in match_log(r, m.match_id) if e.get("seat") == 0]
    assert [e["by"] for e in seat0] == ["late"] * 3 and all(e["ms"] >= 500 for e in seat0)
    check_stored(r, m, record)

    m = finished(admin, bank.match_id)
    record = transcript_of(m)
    assert record["end"] == "forfeit" and record["forfeit"]["seat"] == 2
    assert "1 strikes" in record["forfeit"]["reason"]
    assert len(_strike_faults(record, 2, "late")) == 1
    seat2 = [e for e in match_log(r, m.match_id) if e.get("seat") == 2]
    assert [e["by"] for e in seat2] == ["bot", "bot", "late"]
    # Each counted answer took ~1200 ms: ~700 ms of it came out of the bank.
    assert 2000 > seat2[0]["bank"] > seat2[1]["bank"] >= 0
    assert seat2[1]["bank"] < 700  # too little for a third 1.2 s answer
    assert seat2[2]["ms"] >= 500 + seat2[1]["bank"]
    check_stored(r, m, record)

    # The bot was told: REASON_LATE at the buzzer, and its answer, arriving after, refused.
    mid = no_bank.match_id
    wait_until("the late answers refused", lambda: re.search(
        rf"decision {mid}/\d+ rejected: .*no longer pending", proc.text()))
    late = re.findall(rf"decision {mid}/\d+ rejected: no answer within 500 ms", proc.text())
    assert len(late) == 3


def _hang_and_kill(hang: Proc, r: redis.Redis, bot_id: str, mid: str) -> str:
    """Wait for the HangBot to hang on a request of `mid`, kill it with SIGKILL, wait until
    the referee has seen it go; return the request that was pending."""
    hang.wait_for("HANGING", timeout=30)
    pending = {rid for rid in pending_ids(r, bot_id) if rid.startswith(mid + "/")}
    assert len(pending) == 1, pending
    hang.kill()
    wait_until("the referee to see the bot go",
               lambda: r.zcard(keys.presence(bot_id)) == 0, timeout=10)
    return pending.pop()


def test_disconnect_and_return_within_grace(stack: Stack, pool: dict[str, PoolBot],
                                            admin: Admin, r: redis.Redis, name: str) -> None:
    """The bot's process dies holding a request; a new process with the same token comes
    back 2 s later, within the grace. Its clock stood still meanwhile (the 2 s gap is
    longer than the 1.5 s move limit), the request still pending was delivered to it on
    connect (the match job sends each request once), and the match ends normally."""
    bot_id, token = register(stack.address, f"{name}-back")
    hang = stack.bot("netbots:HangBot", stack.address, token)
    g1, g2 = pool["greedy1"], pool["greedy2"]
    mid = admin.create_match(3, [g1.bot_id, bot_id, g2.bot_id], seed=41, move_time_ms=1500,
                             time_bank_ms=0, grace_ms=20_000).match_id
    rid = _hang_and_kill(hang, r, bot_id, mid)
    time.sleep(2.0)  # the absence itself (not a wait for something to happen)
    assert rid in pending_ids(r, bot_id)  # nothing timed out while the bot was away
    stack.bot("greedy", stack.address, token)

    m = finished(admin, mid)
    record = transcript_of(m)
    assert record["end"] in ("normal", "hand_limit") and "forfeit" not in record
    assert record["faults"] == []
    seq = int(rid.rpartition("/")[2])
    entry = match_log(r, mid)[seq]
    assert entry["seat"] == 1 and entry["by"] == "bot"
    assert entry["ms"] < 1500  # the time away was not counted
    check_stored(r, m, record)


def test_disconnect_without_return_forfeits(stack: Stack, pool: dict[str, PoolBot],
                                            admin: Admin, r: redis.Redis, name: str) -> None:
    """The bot's process dies holding a request and never comes back: after the 2 s grace
    it forfeits, with a reason that says so; a disconnect is not a strike."""
    bot_id, token = register(stack.address, f"{name}-gone")
    hang = stack.bot("netbots:HangBot", stack.address, token)
    g1, g2 = pool["greedy1"], pool["greedy2"]
    mid = admin.create_match(3, [g1.bot_id, g2.bot_id, bot_id], seed=51, move_time_ms=30_000,
                             grace_ms=2000).match_id
    _hang_and_kill(hang, r, bot_id, mid)
    gone_at = time.time()

    m = finished(admin, mid)
    # Not before the grace ran out (the job noticed the absence at most ~0.3 s earlier).
    assert m.finished_at.ToMicroseconds() / 1e6 > gone_at + 2 - 0.5
    record = transcript_of(m)
    assert record["end"] == "forfeit" == m.result.end
    assert record["forfeit"] == {"seat": 2, "reason": "disconnected for more than 2 s"}
    assert record["faults"] == []
    assert m.result.placement[2] == 3
    check_stored(r, m, record)
