"""A test of a change as the scheduling step drives it: `ChangePlanner`.

The step (`workers.scheduler`) does for a test what it does for a tournament:
one run at a time, a cursor over the recorded games, the state saved by
compare-and-set, games created once and dealt through the stack's secret and
its record of deals, both games of a board released together, events
once each, recovery's nudges. This planner adds only the test's own parts:

- planning by `tournaments.change` (`start`, `feed`; `stop` once StopTest asked),
  judged by `ratings.sprt.Sprt`;
- how many pairs may be in flight this step: what its bots can take (`capacity`),
  within its author's limits and share of the stack (`tournaments.share`: the author's
  pairs in flight over all their tests, their house-bot CPU of the day, and the game
  slots tests share, split round robin between the authors testing; `Test.held` says
  which binds), and none while a remote bot of the test is not connected
  (`store.changes.offline`: the planner holds new pairs back and names whom it waits
  for, announced once per change, `WaitingChanged`;
  recovery's nudge steps a test with nothing in flight every few seconds, so it goes
  on by itself once the bot is back);
- each settled pair written once to the test's pair list, and announced once
  (`PairCounted`, or `PairVoided` for a pair a forfeit or a lost game voids);
- a game that cannot be hosted (the step hands it over as failed) voids its pair
  instead of failing the test: it is folded as a lost result (`store.changes.lost_row`);
- released games stay out of the rating pools (`rated` is False; docs/architecture.md,
  "Tests of a change", says why).

Board seeds: the planner's default (`tournaments.change.spec_seeds`: the test's seed
and the board id) is the board's *planned* seed, and the step deals it the way it
deals every event's boards (`store.deals.deal_boards`: through the stack's secret,
claimed on the stack's record, where a deal serves one board only; C's and B's games of
a board are one unit, one claim). So no released fact predicts a board not played,
and neither C nor B is ever dealt a deal it had before, in this test or any event.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from ratings.sprt import Sprt
from store import authors as store_authors
from store import changes as store_changes
from store import clock, events, ids, messages, steps
from store import matches as store_matches
from store import share as store_share
from store.errors import NotFound
from store.locks import Lock
from store.records import MatchSpec
from store.refs import EventRef
from tournaments import change
from tournaments.change import ChangeSpec, ChangeStep
from tournaments.plan import Game, board_id
from tournaments.share import Allowance, Claim, Holder, allowance
from workers.planner import Planned

__all__ = ["ChangePlanner", "capacity", "holder_of", "judge_of"]

log = logging.getLogger("moonshot.test")

_LOCK_WAIT_S = 2.0  # how long a step waits for its author's share lock before it starts
# nothing this pass (another step of theirs holds it: a few milliseconds, unless it died)
_TURN_S = 60.0  # the round robin of the pairs an even share leaves over turns this often


def _uses(spec: ChangeSpec) -> Counter[str]:
    """Games per pair of each remote bot: C and B one each, an opponent two per seat."""
    uses: Counter[str] = Counter()
    for bot in (spec.candidate, spec.baseline):
        if not ids.is_house_bot(bot):
            uses[bot] += 1
    for bot in spec.opponents:
        if not ids.is_house_bot(bot):
            uses[bot] += 2
    return uses


def capacity(spec: ChangeSpec, elsewhere: dict[str, int]) -> int:
    """Pairs the test may have in flight now: each remote bot plays at most `in_flight`
    games at once (its games elsewhere included), a pair taking one game of C and one of
    B and two of an opponent per seat it holds; house bots (the stack's processes) add no
    limit. At least one, so that a test always moves on."""
    cap = spec.in_flight
    for bot, use in _uses(spec).items():
        cap = min(cap, (spec.in_flight - elsewhere.get(bot, 0)) // use)
    return max(1, cap)


def holder_of(r: redis.Redis, author_id: str, now: float) -> Holder:
    """An author as the share sees them: their name, limit of pairs in flight and, with
    their house-bot CPU of the day used up, why no pair starts until the day ends. The
    admin ("") has no limit; an author no longer stored has the default limits."""
    if not author_id:
        return Holder("the admin")
    try:
        record = store_authors.get_author(r, author_id)
        name, limits = record.name, store_authors.limits_of(r, record)
    except NotFound:
        name, limits = author_id, store_authors.default_limits(r)
    used = store_authors.cpu_today(r, author_id, now)
    out = ""
    if used >= limits.house_cpu_s:
        out = (f"{name}'s house-bot CPU of the day is used up ({limits.house_cpu_s:g} s); "
               "new pairs start when the UTC day ends (00:00 UTC)")
    return Holder(name, limits.pairs, out)


@dataclass
class ChangePlanner:
    """A stored test of a change, planned by `tournaments.change`."""

    test: store_changes.ChangeTestSpec
    spec: ChangeSpec
    judge: Sprt
    step: ChangeStep | None = None  # the last planning call's (for `bookkeep`)
    wake_at: float | None = None  # when to look again: a day's CPU, or a busy lock
    asks: tuple[EventRef, ...] = ()  # other tests whose share this step changed
    _claims: list[store_share.StoredClaim] = field(default_factory=list)  # as read

    @property
    def event_id(self) -> str:
        """The test's id."""
        return self.test.test_id

    @property
    def ref(self) -> EventRef:
        """The test."""
        return EventRef.test(self.test.test_id)

    @property
    def streams(self) -> bool:
        """A test keeps event streams (WatchTest)."""
        return True

    @property
    def players(self) -> int:
        """3 or 4."""
        return self.test.players

    @property
    def rated(self) -> bool:
        """A test's games stay out of the rating pools."""
        return False

    @staticmethod
    def load(r: redis.Redis, ref: EventRef) -> ChangePlanner:
        """The planner of a stored test."""
        test = store_changes.load_spec(r, ref.id)
        spec = ChangeSpec.from_json(test.plan)
        return ChangePlanner(test, spec, judge_of(spec))

    def _capacity(self, r: redis.Redis) -> int:
        """Pairs the bots can take now (`capacity`)."""
        uses = _uses(self.spec)
        return capacity(self.spec, store_changes.live_elsewhere(r, self.event_id, list(uses)))

    def _plan(self, r: redis.Redis, state: Mapping[str, Any] | None,
              plan: Callable[[int, int, list[str], str, int | None], ChangeStep]
              ) -> ChangeStep:
        """`plan(cap, created, offline, held, games)`: at the bots' capacity within the
        author's limit, at most `games` in play (the author's share of the stack; None: no
        bound), `held` saying why less than the test could take, if so; every board whose games
        exist already taken up first, none started while a remote bot is away. A step
        redone after a crash must open the boards its lost run created and queued,
        whatever the capacity, verdict or stop now, and before it folds results: those
        games may have finished meanwhile.

        An author's test plans under the author's share lock, from reading the other
        tests' claims to writing its own (`store.share`), so that two steps of their tests
        never both take the room left under the author's limit of pairs in flight."""
        # Games are created in board order, C's before B's: a board with a game counts.
        created = (steps.scheduling(r, self.ref).games + 1) // 2
        away = store_changes.offline(r, list(_uses(self.spec)))
        own = self._capacity(r)
        starting = state is None or _starting(self.spec, state)
        wants = own if starting and not away else 0
        lock = store_share.author_lock(self.test.author) if self.test.author else None
        if lock is not None and not _take(r, lock):
            log.warning("test %s: its author's share lock is busy; no pair starts this step",
                        self.event_id)
            self.wake_at = clock.now(r) + 1.0
            return plan(0, created, away, str((state or {}).get("held", "")), None)
        try:
            allowed = self._allowance(r, wants)
            step = plan(min(own, allowed.pairs) if wants else own, created, away,
                        allowed.reason, allowed.games if wants else None)
            self._claim(r, step, own, bool(away))
        finally:
            if lock is not None:
                lock.release(r)
        return step

    def _allowance(self, r: redis.Redis, wants: int) -> Allowance:
        """What the author's limits and share of the stack allow this test now."""
        now = clock.now(r)
        self._claims = store_share.claims(r)
        others = [Claim(c.test_id, c.author, c.wants, c.flying)
                  for c in self._claims if c.test_id != self.event_id]
        authors = {self.test.author, *(c.author for c in others)}
        holders = {a: holder_of(r, a, now) for a in authors}
        allowed = allowance(Claim(self.event_id, self.test.author, wants, 0), others, holders,
                            store_share.test_slots(r), int(now // _TURN_S))
        if holders[self.test.author].cpu_out:
            self.wake_at = (store_authors.day_of(now) + 1) * 86400.0  # the day's end
        return allowed

    def _claim(self, r: redis.Redis, step: ChangeStep, own: int, away: bool) -> None:
        """Write the test's claim on the share as this step leaves it (none once it is
        over), and ask the other tests to look again when it starts or stops wanting
        pairs (their shares change), or, when its pairs in flight went down, the author's
        other tests that want more than they have (the author's limit has room now)."""
        before = next((c for c in self._claims if c.test_id == self.event_id), None)
        wants = own if _starting(self.spec, step.state) and not away else 0
        flying = step.progress.in_flight
        if step.progress.finished:
            store_share.drop_claim(r, self.event_id)
            wants = flying = 0
        else:
            store_share.write_claim(r, store_share.StoredClaim(
                self.event_id, self.test.author, wants, flying))
        others = [c for c in self._claims if c.test_id != self.event_id]
        if before is None or (before.wants > 0) != (wants > 0):
            self.asks = tuple(EventRef.test(c.test_id) for c in others)
        elif self.test.author and flying < before.flying:
            self.asks = tuple(EventRef.test(c.test_id) for c in others
                              if c.author == self.test.author and c.wants > c.flying)

    def _planned(self, step: ChangeStep) -> Planned:
        self.step = step
        st = step.state
        total = 2 * (self.spec.boards if _starting(self.spec, st) else int(st["next"]))
        return Planned(st, step.games, total, step.progress.finished, wake_at=self.wake_at,
                       asks=self.asks)

    def first(self, r: redis.Redis) -> Planned:
        """The first pairs (none if StopTest came first)."""
        if store_changes.stop_asked(r, self.event_id):
            fresh = change.start(self.spec, self.judge, None, 0,
                                 (steps.scheduling(r, self.ref).games + 1) // 2)
            stopped = change.stop(self.spec, fresh.state, self.judge)
            stopped.games[:0] = fresh.games  # a lost first run's boards, taken up
            store_share.drop_claim(r, self.event_id)
            return self._planned(stopped)
        return self._planned(self._plan(
            r, None, lambda cap, made, away, held, games: change.start(
                self.spec, self.judge, None, cap, made, away, held, games)))

    def feed(self, r: redis.Redis, state: dict[str, Any], rows: Sequence[dict[str, Any]],
             failed: Mapping[str, str]) -> Planned:
        """Fold the new results in, count finished pairs, start new ones while allowed; a
        game no run can host is folded as lost (`store.changes.lost_row`): it voids its
        pair, and the test goes on."""
        if store_changes.stop_asked(r, self.event_id) and not state["stopped"]:
            state = change.stop(self.spec, state, self.judge).state
        lost = [store_changes.lost_row(store_matches.load_spec(r, mid), error)
                for mid, error in sorted(failed.items())]
        step = self._plan(r, state, lambda cap, made, away, held, games: change.feed(
            self.spec, state, [*rows, *lost], self.judge, None, cap, made, away, held, games))
        if step.unknown:
            log.warning("test %s: results that are not open here counted nothing: %s",
                        self.event_id, step.unknown[:10])
        return self._planned(step)

    def match_spec(self, game: Game, seed: int) -> MatchSpec:
        """One game of a pair: its board, its role (`-c` or `-b`), the test's notes."""
        t = self.test
        return MatchSpec(
            match_id=game.match_id, rules=t.rules, seed=seed, bot_ids=game.bot_ids,
            seat_names=tuple(t.name_of(b) for b in game.bot_ids), clock=t.clock,
            faults=t.faults, event=self.ref, sandbox=t.sandbox,
            meta={"unit": game.unit, "board": self.board_of(game.unit),
                  "duplicate": "pairs", "notes": change.notes(self.spec)},
        )

    def board_of(self, unit: str) -> str:
        """`<test id>/p<k>`."""
        return board_id(self.test.test_id, unit)

    def recorded(self, r: redis.Redis, fresh: Sequence[tuple[str, dict[str, Any]]],
                 cursor: int, planned: Planned) -> None:
        """Nothing: a test's results go out with their boards (organisers read any game's
        result live with GetMatch or WatchMatch)."""

    def released(self, r: redis.Redis, rq_conn: redis.Redis, count: int,
                 planned: Planned) -> None:
        """Nothing: no rating pool is owed a fit."""

    def bookkeep(self, r: redis.Redis, planned: Planned) -> None:
        """Announce whom new pairs wait for, once per change; write the pairs settled this
        step once, and announce each once."""
        step = self.step
        if step is None:
            return
        waits = int(step.state.get("waits", 0))
        if waits:
            events.emit(r, self.event_id, f"waiting:{waits}", messages.WaitingChanged(
                bot_ids=[str(b) for b in step.state["waiting"]],
                held=str(step.state.get("held", "")), time=time.time()))
        if not step.counted:
            return
        store_changes.write_pairs(r, self.event_id, [{
            "board": p.board, "board_id": p.board_id, "candidate_match_id": p.candidate_game,
            "baseline_match_id": p.baseline_game, "eighths": p.eighths, "llr": p.llr,
            **({"voids": [list(v) for v in p.voids]} if p.voids else {}),
        } for p in step.counted])
        pairs = int(step.state["counted"]) - sum(p.counted for p in step.counted)
        void = int(step.state.get("void", 0)) - sum(not p.counted for p in step.counted)
        for p in step.counted:
            if p.eighths is None:
                void += 1
                events.emit(r, self.event_id, f"pair:{p.board}", messages.PairVoided(
                    board=p.board + 1, board_id=p.board_id,
                    candidate_match_id=p.candidate_game, baseline_match_id=p.baseline_game,
                    voids=[list(v) for v in p.voids], void=void, llr=p.llr,
                    time=time.time()))
                continue
            pairs += 1
            events.emit(r, self.event_id, f"pair:{p.board}", messages.PairCounted(
                board=p.board + 1, board_id=p.board_id, candidate_match_id=p.candidate_game,
                baseline_match_id=p.baseline_game, eighths=p.eighths, llr=p.llr,
                pairs=pairs, time=time.time()))


def _take(r: redis.Redis, lock: Lock) -> bool:
    """Take a share lock, waiting a little while another step holds it."""
    end = time.monotonic() + _LOCK_WAIT_S
    while not lock.acquire(r):
        if time.monotonic() >= end:
            return False
        time.sleep(0.01)
    return True


def _starting(spec: ChangeSpec, state: Mapping[str, Any]) -> bool:
    """True while the test may start new pairs (no verdict, not stopped, under its limit)."""
    return (not state["stopped"] and int(state["next"]) < spec.boards
            and state["verdict"] == "pending")


def judge_of(spec: ChangeSpec) -> Sprt:
    """The sequential test of a spec (a fixed-games test asks it only for the estimate)."""
    return Sprt(spec.elo0, spec.elo1, spec.alpha, spec.beta, spec.players)
