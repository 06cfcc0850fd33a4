"""The match job: host one game between remote bots, decision by decision, through Redis.

`run_match(match_id)` is the RQ job. It loads the spec, takes the match's
lease (so two runs never host the same match at once), replays the action log
(so a killed run resumes exactly where it stopped), then loops:

1. build the decision request for the seat to act and, in one script, append the
   previous accepted action to the log, store the request as pending for the bot
   and publish it on the bot's channel (the log entry is durable before the next
   request goes out);
2. wait for the referee to forward the bot's answer, measuring the clock here and
   pausing it while the bot has no live stream;
3. accept a legal, timely answer; replace a late or illegal one with a random
   legal action and count a strike; forfeit the bot after too many strikes or a
   disconnect longer than the grace period.

At the end the transcript and result are written once (SET NX) whatever retries
happen, and in the same step every seat's bot is told that the match ended.

House seats decide in the worker's house processes (`workers.house`); the CPU each
decision takes is counted against the author of the test of a change the match belongs
to (`store.authors.add_cpu`, in batches of `CPU_BATCH_S` and when the run ends): an
author's tests start no new pair once their house-bot CPU of the day is used up. What a
run killed outright had not counted yet is lost (at most a batch); a resumed run replays
the log and counts only the decisions it makes itself.

Every read and write goes through `store.runs.Run`, and every write there is fenced
by the match's lease: a run that stalled past it writes nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import random
import threading
import time
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

import redis

from moon import GameState
from moon.actions import ACTIONS, MOON
from moon.deal import mix64
from moon.transcript import actions_of, transcript
from store import authors as store_authors
from store import changes as store_changes
from store import events, ids, messages, steps
from store import matches as store_matches
from store.errors import NotFound
from store.messages import ActionEntry, DecisionRequest, ForfeitEntry
from store.pools import Pool
from store.records import MatchSpec
from store.refs import EventKind
from store.results import result_of, result_row, transcript_extra
from store.runs import LEASE_MS, LostLease, Run
from workers import failpoints, house, metrics
from workers.queues import request_archive, request_fit, request_step

__all__ = ["CPU_BATCH_S", "LEASE_MS", "STOPPING", "HandedOver", "LostLease", "MatchHost"]

log = logging.getLogger("moonshot.match")

_SLICE_S = 0.25  # longest single wait, so presence and the lease are checked often
CPU_BATCH_S = 2.0  # house-bot CPU counted against a test's author once this much is owed


# Set when the worker process stops: every match it hosts hands over at its next wait.
STOPPING = threading.Event()


class HandedOver(Exception):
    """The worker is stopping: this run lets go of the match (it resumes elsewhere)."""


class Forfeit(Exception):
    """A seat forfeits the match."""

    def __init__(self, seat: int, reason: str) -> None:
        super().__init__(reason)
        self.seat = seat
        self.reason = reason


@dataclass
class SeatClock:
    """What the clock and the fault counter say about one seat."""

    bank_ms: int
    strikes: int = 0


@dataclass
class Answer:
    """How a decision was settled."""

    action: int
    by: str  # "bot", or the fault: "late" or "illegal"
    ms: int
    bank_ms: int  # the seat's bank after this decision
    note: str = ""
    us: float = 0.0  # round trip: request sent to answer received (or given up on), in us


@dataclass
class MatchHost:
    """Runs one match; one instance per job run."""

    r: redis.Redis
    match_id: str
    run_id: str
    rq_conn: redis.Redis | None = None  # to ask its event's step to look again
    spec: MatchSpec = field(init=False)
    state: GameState = field(init=False)
    clocks: list[SeatClock] = field(init=False)
    faults: list[dict[str, Any]] = field(init=False)
    run: Run = field(init=False)
    _lease_at: float = 0.0
    _first_decision: bool = True  # of this run: its request may repeat one a dead run sent
    _cpu_owed: float = 0.0  # house-bot CPU seconds of this run not counted yet
    _cpu_author: str | None = None  # whom they are counted against ("": nobody); None: unread

    # --------------------------------------------------------------- setup

    def __post_init__(self) -> None:
        self.run = Run(self.r, self.match_id, self.run_id)

    def load(self) -> None:
        """Read the spec and replay the log into a fresh state."""
        self.spec = store_matches.load_spec(self.r, self.match_id)
        self.state = GameState.new(self.spec.rules, self.spec.seed)
        self.clocks = [SeatClock(self.spec.clock.time_bank_ms) for _ in self.spec.bot_ids]
        self.faults = []

    def replay_log(self) -> tuple[int, str] | None:
        """Apply every logged action; return a logged forfeit (seat, reason) if any."""
        for e in self.run.log():
            if isinstance(e, ForfeitEntry):
                return e.forfeit, e.reason
            assert isinstance(e, ActionEntry)
            self._account(e)
            self.state.apply_id(e.action)
        return None

    def _account(self, e: ActionEntry) -> None:
        """Update clocks, strikes and the fault list from one log entry."""
        clock = self.clocks[e.seat]
        clock.bank_ms = e.bank
        if e.by != "bot":
            clock.strikes += 1
            self.faults.append(
                {
                    "seq": e.seq,
                    "hand": self.state.hand_index + 1,
                    "seat": e.seat,
                    "kind": e.by,
                    "reason": e.note,
                    "replacement": ACTIONS[e.action].label,
                }
            )

    # --------------------------------------------------------------- lease

    def acquire_lease(self, wait_s: float = 3 * LEASE_MS / 1000) -> bool:
        """Take the match's lease, waiting for a dead run's lease to lapse."""
        end = time.monotonic() + wait_s
        while True:
            if self.run.acquire():
                self._lease_at = time.monotonic()
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(0.1)

    def renew_lease(self) -> None:
        """Extend the lease; stop hosting (LostLease) if this run no longer holds it."""
        now = time.monotonic()
        if now - self._lease_at < 1.0:
            return
        self.run.extend()
        self._lease_at = now

    # ---------------------------------------------------------------- run

    def host(self) -> dict[str, Any]:
        """Host the match to its end (or return the stored result); the job's body.

        An error while this run holds the lease is noted on the match (fenced, like every
        write of a run) before the lease goes.
        """
        self.load()
        _learn_offset(self.run.redis_us())  # deadlines and log stamps go on Redis's clock
        if self.run.has_result():
            return self._stored_result()
        if not self.acquire_lease():
            # A live run hosts it (its lease keeps being renewed). Nothing to do here; if
            # that run dies, its lease lapses and recovery queues the match again.
            log.info("match %s is hosted by another run; this run stops", self.match_id)
            return {"hosted_elsewhere": True}
        try:
            return self._host()
        except (HandedOver, LostLease, redis.ConnectionError, redis.TimeoutError):
            raise  # not the match's fault: another run goes on with it
        except Exception as exc:
            with contextlib.suppress(LostLease, redis.RedisError):
                self.run.fail(f"{type(exc).__name__}: {exc}")
            raise
        finally:
            self.run.release()
            with contextlib.suppress(redis.RedisError):
                self._count_cpu()

    def _count_cpu(self, at_least: float = 0.0) -> None:
        """Count the house-bot CPU owed against the author of the test this match belongs
        to (none for the admin's tests, tournaments and arenas), once `at_least` is owed."""
        if self._cpu_owed <= at_least:
            return
        if self._cpu_author is None:
            event = self.spec.event
            author = ""
            if event is not None and event.kind is EventKind.TEST:
                with contextlib.suppress(NotFound):
                    author = store_changes.load_spec(self.r, event.id).author
            self._cpu_author = author
        owed, self._cpu_owed = self._cpu_owed, 0.0
        store_authors.add_cpu(self.r, self._cpu_author, owed)

    def _host(self) -> dict[str, Any]:
        if self.run.has_result():  # finished by the lease's last holder
            return self._stored_result()
        self.run.begin(self.spec.bot_ids, self._started_events(), time.time())
        event = self.spec.event
        if event is not None and event.kind.streams:  # once, whatever run gets here
            events.emit_both(self.r, event.id, f"started:{self.match_id}",
                        messages.TournamentMatchStarted(
                            match_id=self.match_id, bot_ids=list(self.spec.bot_ids),
                            seat_names=list(self.spec.seat_names),
                            bracket_match_id=str(self.spec.meta.get("bracket_match", "")),
                            time=time.time()))
        logged = self.replay_log()
        if logged or self.state.actions:
            metrics.fault("resumed")  # an earlier run hosted it: crashed, stalled or handed over
        forfeit: Forfeit | None = Forfeit(*logged) if logged else None
        pending_entry: str | None = None
        st = self.state
        if forfeit is None and not st.is_over and self.spec.sandbox:
            forfeit = self._await_sandboxes()
            if forfeit is not None:
                self.run.write([messages.encode(ForfeitEntry(
                    forfeit.seat, forfeit.reason, len(st.actions), _now_ms()))])
        while forfeit is None and not st.is_over:
            seat = st.to_act
            seq = len(st.actions)
            try:
                answer = self._decide(seat, seq, pending_entry)
            except Forfeit as f:
                forfeit = f
                pending_entry = None
                self.run.write([messages.encode(ForfeitEntry(f.seat, f.reason, seq, _now_ms()))])
                break
            metrics.decided(answer.by, answer.us)
            clock = self.clocks[seat]
            entry = ActionEntry(seq=seq, seat=seat, action=answer.action, by=answer.by,
                                ms=answer.ms, bank=answer.bank_ms, note=answer.note,
                                us=round(answer.us, 1), t=_now_ms())
            self._account(entry)  # the same bookkeeping a resumed run does from the log
            st.apply_id(answer.action)
            pending_entry = messages.encode(entry)
            if answer.by != "bot" and clock.strikes >= self.spec.faults.max_strikes:
                forfeit = Forfeit(seat, f"{clock.strikes} strikes (late or illegal answers)")
                self.run.write([pending_entry, messages.encode(
                    ForfeitEntry(seat, forfeit.reason, seq + 1, _now_ms()))])
                pending_entry = None
        return self._finish(forfeit, [pending_entry] if pending_entry is not None else [])

    def _await_sandboxes(self) -> Forfeit | None:
        """Before this run asks anything: wait until every hosted bot's sandbox runs within
        the event's limits (a host starts, or restarts, it under them: docs/hosting.md,
        "Limits"), so no decision of this match is made under looser ones. No clock runs
        meanwhile; a seat whose bot's sandbox is not there within the grace forfeits, as
        a bot away that long would. Every sandbox started later counts this match's limits
        while it is under way, so this is looked at once a run."""
        limits = self.spec.sandbox
        assert limits is not None
        grace = self.spec.faults.disconnect_grace_ms / 1000
        waiting = {bot: seat for seat, bot in reversed(list(enumerate(self.spec.bot_ids)))
                   if not ids.is_house_bot(bot)}
        start = time.monotonic()
        while True:
            waiting = {b: seat for b, seat in waiting.items()
                       if not self.run.sandbox_fits(b, limits)}
            if not waiting:
                return None
            if time.monotonic() - start > grace:
                seat = min(waiting.values())
                return Forfeit(seat, f"no sandbox within the event's limits within "
                                     f"{grace:g} s")
            self.renew_lease()
            if STOPPING.is_set():
                raise HandedOver(f"the worker stops: match {self.match_id} hands over")
            time.sleep(0.05)

    # ------------------------------------------------------------ decide

    def _request(self, seat: int, seq: int) -> DecisionRequest:
        st = self.state
        clock = self.clocks[seat]
        move = self.spec.clock.move_time_ms
        return DecisionRequest(
            request_id=ids.request_id(self.match_id, seq),
            match_id=self.match_id,
            seat=seat,
            observation=st.observation(seat).to_json(),
            legal=list(st.legal_ids()),
            time_limit_ms=move,
            time_bank_ms=clock.bank_ms,
            deadline_unix_ms=_now_ms() + move + clock.bank_ms,
            strikes=clock.strikes,
        )

    def _decide(self, seat: int, seq: int, log_entry: str | None) -> Answer:
        """Send the request (after logging the last action) and settle the answer."""
        bot = self.spec.bot_ids[seat]
        if ids.is_house_bot(bot):
            return self._house(seat, seq, log_entry)
        req = self._request(seat, seq)
        req_id = req.request_id
        payload = messages.encode(req)
        failpoints.reached("match.before-send")
        sent = time.monotonic()
        # One fenced step logs the last action and sends the request, and reads Redis's
        # clock as the request goes out (see `_charged_ms`).
        sent_us = self.run.send(bot, log_entry, req, payload)
        self._lease_at = sent
        _learn_offset(sent_us)

        clock = self.clocks[seat]
        limit_ms = self.spec.clock.move_time_ms + clock.bank_ms
        used = 0.0
        away = 0.0  # time the bot had no stream: its clock stood still
        last = time.monotonic()
        absent_since: float | None = None
        present = True
        grace = self.spec.faults.disconnect_grace_ms / 1000
        while True:
            left = limit_ms / 1000 - used
            item = self.run.next_reply(max(0.001, min(_SLICE_S, left)))
            if item is not None:
                failpoints.reached("match.after-answer")
            now = time.monotonic()
            if present:
                used += now - last
            else:
                away += now - last
            last = now
            # Every pass, not only on timeouts: a match of quick answers would otherwise
            # let its lease lapse after LEASE_MS and a second run could start hosting it.
            # An answer popped by a run that lost the lease goes back for the run that
            # holds it (both runs send the same request ids).
            try:
                self.renew_lease()
            except LostLease:
                if item is not None:
                    self.run.give_back(item)
                raise
            if STOPPING.is_set():
                raise HandedOver(f"the worker stops: match {self.match_id} hands over")
            if item is not None:
                reply = messages.decode_as(item, messages.REPLY, messages.Reply)
                if reply.request_id != req_id:
                    continue  # an answer to an earlier request, from before a restart
                if self._first_decision:
                    # A killed run may have sent this very request and the bot answered
                    # it (this is that answer); the copy we sent again must not stay pending.
                    self._first_decision = False
                    self.run.withdraw(bot, req_id)
                if absent_since is not None:  # back, and answered before we looked
                    self._connection(seat, seq, "reconnected")
                ms = _charged_ms(reply, sent_us, away, used)
                answer = self._judge(seat, req, reply.action_id, ms)
                answer.us = (reply.at_us - sent_us) if reply.at_us else (now - sent) * 1e6
                return answer
            present = self.run.present(bot)
            if present:
                if absent_since is not None:
                    self._connection(seat, seq, "reconnected")
                absent_since = None
            else:
                if absent_since is None:
                    absent_since = now
                    self._connection(seat, seq, "disconnected")
                    self._pause(bot, req, used * 1000)
                if now - absent_since > grace:
                    self.run.withdraw(bot, req_id)
                    raise Forfeit(seat, f"disconnected for more than {grace:g} s")
            if used * 1000 >= limit_ms:
                buzzer: Answer | None = None
                if not self.run.withdraw(bot, req_id):
                    # The referee forwarded an answer at the buzzer: collect and judge it.
                    item = self.run.next_reply(1.0)
                    late = None if item is None else messages.decode_as(
                        item, messages.REPLY, messages.Reply)
                    if late is not None and late.request_id == req_id:
                        buzzer = self._judge(seat, req, late.action_id,
                                             _charged_ms(late, sent_us, away, used))
                answer = buzzer or self._replace(seat, req, "late",
                                                 f"no answer within {limit_ms} ms", used * 1000)
                answer.us = (time.monotonic() - sent) * 1e6
                return answer

    def _house(self, seat: int, seq: int, log_entry: str | None) -> Answer:
        """A house seat: the stack's own player decides in a house process (workers.house),
        with no request and no connection; charged the time it computed, and replaced with
        a strike if that overruns, as a late answer would be."""
        if log_entry is not None:
            self.run.write([log_entry])  # every action is logged before the next decision
        bot = self.spec.bot_ids[seat]
        req = self._request(seat, seq)
        limit_ms = self.spec.clock.move_time_ms + self.clocks[seat].bank_ms
        sent = time.monotonic()
        failpoints.reached("match.before-house")
        attempt = house.submit(bot, self.spec.seed, req.observation, req.legal)
        while True:
            try:
                action, ms, cpu = attempt.result(timeout=_SLICE_S)
                self._cpu_owed += cpu
                break
            except FutureTimeout:
                pass
            except house.BrokenProcessPool:  # a house process died: ask again (pure: same)
                attempt = house.submit(bot, self.spec.seed, req.observation, req.legal)
            self.renew_lease()
            if STOPPING.is_set():
                raise HandedOver(f"the worker stops: match {self.match_id} hands over")
            if time.monotonic() - sent > 2 * limit_ms / 1000 + 10:
                # Not computed even in twice its time: the pool is stuck. Stand in.
                action, ms = -1, (time.monotonic() - sent) * 1000
                break
        metrics.house_decided(ms)
        self._count_cpu(CPU_BATCH_S)
        if action < 0 or ms > limit_ms:
            metrics.HOUSE_OVERRUNS.inc()
            answer = self._replace(seat, req, "late", f"house bot {bot} computed "
                                   f"{ms:.0f} ms, limit {limit_ms} ms", ms)
        else:
            answer = self._judge(seat, req, action, ms)
        answer.us = (time.monotonic() - sent) * 1e6
        return answer

    def _judge(self, seat: int, req: DecisionRequest, action: int, ms: float) -> Answer:
        move = self.spec.clock.move_time_ms
        if ms > move + self.clocks[seat].bank_ms:
            return self._replace(seat, req, "late",
                                 f"answered after {ms:.0f} ms, limit "
                                 f"{move + self.clocks[seat].bank_ms} ms", ms)
        if action not in req.legal:
            label = ACTIONS[action].label if action in ACTIONS else f"id {action}"
            return self._replace(seat, req, "illegal",
                                 f"{label!r} is not a legal action here", ms)
        return Answer(action, "bot", round(ms), self._bank_after(seat, ms))

    def _bank_after(self, seat: int, ms: float) -> int:
        """The bank left once a decision that took `ms` is charged."""
        over = max(0, round(ms) - self.spec.clock.move_time_ms)
        return max(0, self.clocks[seat].bank_ms - over)

    def _replace(self, seat: int, req: DecisionRequest, kind: str, note: str,
                 ms: float) -> Answer:
        """A random legal action (never a moon bid unless forced) stands in; a strike counts."""
        strikes = self.clocks[seat].strikes + 1
        seq = ids.seq_of_request(req.request_id)
        rng = random.Random(mix64(self.spec.seed ^ mix64(seq + 0x5EED)))
        choices = [a for a in req.legal if a != MOON] or req.legal
        action = rng.choice(choices)
        bot = self.spec.bot_ids[seat]
        if ids.is_house_bot(bot):  # no stream to tell: the log and the metrics say it
            log.warning("match %s seat %d: house bot %s: %s; replaced by %r (strike %d)",
                        self.match_id, seat, bot, note, ACTIONS[action].label, strikes)
            return Answer(action, kind, round(ms), self._bank_after(seat, ms), note)
        event = messages.DecisionRejected(
            req.request_id, self.match_id, messages.DecisionRejected.reason_of(kind),
            f"{note}; replaced by {ACTIONS[action].label!r} "
            f"(strike {strikes} of {self.spec.faults.max_strikes})",
            replacement_action_id=action, strikes=strikes,
        )
        self.run.tell(bot, event)
        log.info("match %s seat %d: %s", self.match_id, seat, event.message)
        return Answer(action, kind, round(ms), self._bank_after(seat, ms), note)

    def _connection(self, seat: int, seq: int, kind: str) -> None:
        """Log a change of the seat's connection while the match waits on action `seq`."""
        if kind == "disconnected":
            metrics.fault("disconnect")
        self.run.connection(messages.ConnectionEntry(seat, kind, seq, _now_ms()))

    def _pause(self, bot: str, req: DecisionRequest, used_ms: float) -> None:
        """The bot is away and its clock stopped: say so in the pending request, so that a
        reconnect delivers it with the time left, not the deadline it was first sent with."""
        self.run.pause(bot, dataclasses.replace(req, paused_ms=round(used_ms)))

    # ------------------------------------------------------------ events

    def _started_events(self) -> list[messages.MatchStarted]:
        """Each seat's MatchStarted (sent by every run: a bot may have missed an earlier)."""
        spec = self.spec
        return [messages.MatchStarted(
            match_id=self.match_id, seat=seat, players=spec.players,
            rules=spec.rules.options(), seat_names=list(spec.seat_names),
            tournament_id=spec.event_id(EventKind.TOURNAMENT),
            event="" if spec.event is None else str(spec.event),
            clock={"move_time_ms": spec.clock.move_time_ms,
                   "time_bank_ms": spec.clock.time_bank_ms},
            faults={"max_strikes": spec.faults.max_strikes,
                    "disconnect_grace_ms": spec.faults.disconnect_grace_ms},
        ) for seat in range(len(spec.bot_ids))]

    def _finish(self, forfeit: Forfeit | None, entries: list[str]) -> dict[str, Any]:
        st = self.state
        spec = self.spec
        extra = transcript_extra(spec, self.faults,
                                 None if forfeit is None else (forfeit.seat, forfeit.reason),
                                 st.scores)
        record = transcript(spec.rules, spec.seed, st.actions, spec.seat_names, extra=extra)
        result = result_of(record)
        done = json.dumps({"result": result, "transcript": record}, separators=(",", ":"))
        failpoints.reached("match.before-result")
        ended = [messages.MatchEnded(self.match_id, seat, result)
                 for seat in range(len(spec.bot_ids))]
        if self.run.write(entries, done, spec.bot_ids, ended):
            if not spec.boarded:
                # Public as it ends. An event's game is counted when its board is
                # released (workers.scheduler): a scraper must not time a
                # hidden game.
                metrics.finished(str(result["end"]), len(st.actions))
            failpoints.reached("match.after-result")
        return self._stored_result()

    def _stored_result(self) -> dict[str, Any]:
        """The written-once result; also records the game in its event and asks the event's
        step to look again.

        The nudge happens on every run that ends here, even when an earlier run
        stored the result: that run may have died before nudging.
        """
        stored = store_matches.stored_result(self.r, self.match_id)
        assert stored is not None, "called once the result is stored"
        result: dict[str, Any] = stored["result"]
        # The bookkeeping around the result is idempotent and redone by every run that
        # ends here, so a run killed right after writing the result loses none of it.
        spec = self.spec
        now = time.time()
        row = result_row(self.match_id, spec.bot_ids, result, str(spec.meta.get("board", "")),
                         str(spec.meta.get("unit", "")),
                         len(actions_of(stored["transcript"])))
        store_matches.finish(self.r, self.match_id, spec.bot_ids, row, now)
        if not spec.boarded:
            # A single match shares its deal with no other game: public as it ends. An
            # event's game waits for its board (the event's step releases it).
            # A hosted version's validation games stay out of the ratings.
            store_matches.release(self.r, self.match_id, spec.players, now,
                                  rated=not spec.meta.get("unrated"))
            if self.rq_conn is not None:
                request_fit(self.r, self.rq_conn, Pool.of(spec.players))
                request_archive(self.r, self.rq_conn)
        if spec.event is not None:
            # After the row is stored: the step reads the rows of what is recorded.
            steps.record(self.r, spec.event, self.match_id)
            if self.rq_conn is not None:
                request_step(self.r, self.rq_conn, spec.event)
        # Open until all of the above is done: a run killed half-way leaves the match open,
        # and recovery runs it again, which redoes what is missing.
        store_matches.close(self.r, self.match_id)
        return result


def _charged_ms(reply: messages.Reply, sent_us: int, away_s: float, used_s: float) -> float:
    """The time a decision is charged, in ms: from the request going out to the referee
    accepting the answer, both on Redis's clock, less the time the bot was away. So a busy
    worker that wakes late to an answer adds nothing to the bot's time. A reply without
    the referee's stamp (an older referee) falls back on this run's own measure."""
    if not reply.at_us:
        return used_s * 1000
    return max(0.0, (reply.at_us - sent_us) / 1000 - away_s * 1000)


# Redis's clock minus this machine's wall clock, in ms, as last measured. The parts of a
# deployment run on machines whose clocks may disagree; Redis's is the one they share, so
# the deadlines sent to bots and the times stamped in a match's logs are on it (a match
# resumed on another machine keeps one clock). A plain int: every thread may update it.
_offset_ms = 0


def _learn_offset(redis_us: int) -> None:
    """Note Redis's clock as just read (`TIME`, in us) against this machine's."""
    global _offset_ms
    _offset_ms = redis_us // 1000 - int(time.time() * 1000)


def _now_ms() -> int:
    """Unix time in ms on Redis's clock (this machine's, corrected by the last offset)."""
    return int(time.time() * 1000) + _offset_ms
