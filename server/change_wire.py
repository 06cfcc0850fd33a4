"""Protobuf <-> domain for tests of a change (`change.proto`), beside `server/wire.py`.

A module of its own so that a test's surface is in one place: the spec a request
asks for, a stored test as a `Test` message with its progress (the planner's counts,
the sequential test's LLR and bounds, the estimate with its interval and LOS), the
counted pairs, and the events of WatchTest. The generic conversions (clock, faults,
rules, a match result, timestamps) are `server.wire`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from proto.moon.v1 import change_pb2, rating_pb2
from ratings.sprt import Sprt, estimate, pentanomial, shared
from server import wire
from store import messages
from store.changes import ChangeTestSpec
from store.errors import InvalidArgument
from store.messages import Message
from store.status import TournamentStatus
from store.tournaments import TournamentInfo
from tournaments import change
from tournaments.change import ChangeSpec

__all__ = ["DEFAULT_IN_FLIGHT", "DEFAULT_MAX_GAMES", "judge_of", "pair_to_pb", "pool_of",
           "spec_request_from_pb", "status_name", "test_event_to_pb", "test_to_pb"]

DEFAULT_MAX_GAMES = 20_000
DEFAULT_IN_FLIGHT = 8  # a remote bot on the SDK decides in 8 threads (clients.sdk.BotRunner)

_STATUS: dict[str, change_pb2.TestStatus.ValueType] = {
    TournamentStatus.RUNNING: change_pb2.TEST_STATUS_RUNNING,
    TournamentStatus.FINISHED: change_pb2.TEST_STATUS_FINISHED,
    TournamentStatus.FAILED: change_pb2.TEST_STATUS_FAILED,
}
_STATUS_NAME = {v: k for k, v in _STATUS.items()}
_VERDICT = {"pending": change_pb2.TEST_VERDICT_PENDING, "H0": change_pb2.TEST_VERDICT_H0,
            "H1": change_pb2.TEST_VERDICT_H1, change.FORFEITS: change_pb2.TEST_VERDICT_FORFEITS}
_OUTCOME = {"H0": change_pb2.TEST_OUTCOME_H0, "H1": change_pb2.TEST_OUTCOME_H1,
            "limit": change_pb2.TEST_OUTCOME_LIMIT, "stopped": change_pb2.TEST_OUTCOME_STOPPED,
            "done": change_pb2.TEST_OUTCOME_DONE,
            change.FORFEITS: change_pb2.TEST_OUTCOME_FORFEITS}
_SIDE = {"candidate": change_pb2.TEST_SIDE_CANDIDATE, "baseline": change_pb2.TEST_SIDE_BASELINE,
         "opponent": change_pb2.TEST_SIDE_OPPONENT, "stack": change_pb2.TEST_SIDE_STACK}
_POOL = {"3p": rating_pb2.RATING_POOL_THREE_PLAYER, "2v2": rating_pb2.RATING_POOL_TWO_VS_TWO}


def judge_of(spec: ChangeSpec) -> Sprt:
    """The sequential test of a spec (a fixed-games test asks it only for the estimate)."""
    return Sprt(spec.elo0, spec.elo1, spec.alpha, spec.beta, spec.players)


def pool_of(value: int) -> int:
    """The players of a request's pool (3 or 4); InvalidArgument for an unknown value."""
    wire.check_enum(rating_pb2.RatingPool, value, "spec.pool", "pool",
                    unset="unset means the 3-player pool")
    return 4 if value == rating_pb2.RATING_POOL_TWO_VS_TWO else 3


def status_name(value: int) -> str:
    """The store's status of a ListTests filter (`` for any); InvalidArgument otherwise."""
    wire.check_enum(change_pb2.TestStatus, value, "status", "test status",
                    unset="unset means any status")
    if value == change_pb2.TEST_STATUS_UNSPECIFIED:
        return ""
    return str(_STATUS_NAME[change_pb2.TestStatus.ValueType(value)])


def spec_request_from_pb(pb: change_pb2.TestSpec) -> dict[str, Any]:
    """The fields of a CreateTest spec, defaults resolved, bots still as the caller named
    them (ids, names or house bots)."""
    out: dict[str, Any] = {
        "name": pb.name, "players": pool_of(pb.pool), "candidate": pb.candidate,
        "baseline": pb.baseline, "opponents": list(pb.opponents),
        "trust_opponents": pb.trust_opponents,
        "elo0": pb.elo0 if pb.HasField("elo0") else 0.0,
        "elo1": pb.elo1 if pb.HasField("elo1") else 5.0,
        "alpha": pb.alpha if pb.HasField("alpha") else 0.05,
        "beta": pb.beta if pb.HasField("beta") else 0.05,
        "max_games": pb.max_games or DEFAULT_MAX_GAMES, "fixed_games": pb.fixed_games,
        "in_flight": pb.in_flight or DEFAULT_IN_FLIGHT, "rules": dict(pb.rules),
        "clock": wire.clock_from_pb(pb.clock if pb.HasField("clock") else None),
        "faults": wire.faults_from_pb(pb.faults if pb.HasField("faults") else None),
        "seed": pb.seed if pb.HasField("seed") else None,
        "void_streak": pb.void_streak if pb.HasField("void_streak") else 3,
        "void_share": pb.void_share if pb.HasField("void_share") else 0.05,
        "void_after": pb.void_share_after if pb.HasField("void_share_after") else 20,
        "sandbox": wire.sandbox_from_pb(pb.sandbox if pb.HasField("sandbox") else None,
                                        "spec"),
    }
    if not out["candidate"]:
        raise InvalidArgument("spec.candidate: required (a bot id or name, or a house bot "
                              "such as house:greedy)")
    return out  # an empty baseline is the candidate's previous version (server.changes)


def progress_to_pb(spec: ChangeSpec, state: Mapping[str, Any] | None
                   ) -> change_pb2.TestProgress:
    """Where a test stands, from its planner's stored state (None before the first step)."""
    judge = judge_of(spec)
    p = change.progress(spec, state, judge)
    est = estimate(p.counts, spec.players)
    sequential = spec.sequential or p.verdict == change.FORFEITS
    pb = change_pb2.TestProgress(
        games=p.games, pairs=p.pairs, pairs_in_flight=p.in_flight,
        pentanomial=pentanomial(p.counts), between=shared(p.counts), llr=p.llr,
        llr_lower=judge.lower, llr_upper=judge.upper,
        verdict=_VERDICT[p.verdict] if sequential else change_pb2.TEST_VERDICT_UNSPECIFIED,
        verdict_pairs=p.verdict_pairs, elo=p.elo, elo_low=p.elo_low, elo_high=p.elo_high,
        los=est.los, score=est.score, pairs_void=p.void,
        voids=[change_pb2.TestVoidCount(side=_SIDE[side], reason=reason, pairs=n)
               for side, reason, n in p.voids],
        verdict_reason=p.halt, verdict_side=_side(p.halt_side),
        verdict_llr=p.verdict_llr)
    if p.outcome:
        pb.outcome = _OUTCOME[p.outcome]
    return pb


def _spec_to_pb(test: ChangeTestSpec, spec: ChangeSpec, reveal: bool) -> change_pb2.TestSpec:
    pb = change_pb2.TestSpec(
        name=test.name, pool=_POOL[spec.pool], candidate=spec.candidate,
        baseline=spec.baseline, opponents=spec.opponents,
        trust_opponents=spec.trust_opponents, elo0=spec.elo0, elo1=spec.elo1,
        alpha=spec.alpha, beta=spec.beta, max_games=spec.max_games,
        fixed_games=spec.fixed_games, in_flight=spec.in_flight,
        rules={k: str(v).lower() if isinstance(v, bool) else str(v)
               for k, v in test.rules.options().items()},
        clock=wire.clock_to_pb(test.clock), faults=wire.faults_to_pb(test.faults),
        void_streak=spec.void_streak, void_share=spec.void_share,
        void_share_after=spec.void_after, sandbox=wire.sandbox_to_pb(test.sandbox))
    if reveal:
        pb.seed = spec.seed
    return pb


def test_to_pb(test: ChangeTestSpec, info: TournamentInfo, state: Mapping[str, Any] | None,
               reveal: bool, stop_asked: bool = False) -> change_pb2.Test:
    """A stored test as a message: `state` is the scheduler's stored state (None before
    its first step); `reveal` shows the seed (organisers, or a test that is over)."""
    spec = ChangeSpec.from_json(test.plan)
    plan = None if state is None else state.get("plan")
    shown = plan if info.status == TournamentStatus.RUNNING and plan else {}
    waiting = [test.name_of(str(b)) for b in shown.get("waiting", [])]
    held = str(shown.get("held", ""))
    pb = change_pb2.Test(
        test_id=test.test_id, spec=_spec_to_pb(test, spec, reveal),
        status=_STATUS[info.status], progress=progress_to_pb(spec, plan),
        names=[test.name_of(b) for b in (spec.candidate, spec.baseline, *spec.opponents)],
        games_total=info.total or 2 * spec.boards, error=info.error,
        notes=change.notes(spec), boards_redealt=info.redealt, waiting_for=waiting,
        stop_asked=stop_asked, held=held)
    if info.created_at is not None:
        pb.created_at.CopyFrom(wire.timestamp(info.created_at))
    if info.finished_at is not None:
        pb.finished_at.CopyFrom(wire.timestamp(info.finished_at))
    return pb


def _voids_to_pb(voids: Any) -> list[change_pb2.TestVoid]:
    return [change_pb2.TestVoid(side=_side(str(side)), reason=str(reason), match_id=str(mid))
            for side, reason, mid in voids or ()]


def _side(name: str) -> change_pb2.TestSide.ValueType:
    return _SIDE.get(name, change_pb2.TEST_SIDE_UNSPECIFIED)


def pair_to_pb(pair: Mapping[str, Any]) -> change_pb2.TestPair:
    """A stored pair (`store.changes.pairs`) as a message; boards count from 1; a void
    pair with its `voids` and no `eighths`."""
    eighths = pair.get("eighths")
    return change_pb2.TestPair(
        board=int(pair["board"]) + 1, board_id=str(pair["board_id"]),
        candidate_match_id=str(pair["candidate_match_id"]),
        baseline_match_id=str(pair["baseline_match_id"]),
        eighths=None if eighths is None else int(eighths), llr=float(pair["llr"]),
        voids=_voids_to_pb(pair.get("voids")))


def test_event_to_pb(sequence: int, event: Message, test: change_pb2.Test | None
                     ) -> change_pb2.WatchTestResponse | None:
    """One stored event of a test as a watch message (None for a kind a test does not
    show); `test` is the test now, attached to pair, waiting and end events."""
    pb = change_pb2.WatchTestResponse(sequence=sequence)
    when = getattr(event, "time", 0.0)
    if when:
        pb.time.CopyFrom(wire.timestamp(float(when)))
    W = change_pb2.WatchTestResponse
    if isinstance(event, messages.TournamentMatchStarted):
        pb.game_started.CopyFrom(W.GameStarted(
            match_id=event.match_id, bot_ids=event.bot_ids, seat_names=event.seat_names))
    elif isinstance(event, messages.TournamentMatchFinished):
        pb.game_finished.CopyFrom(W.GameFinished(
            match_id=event.match_id, result=wire.result_to_pb(event.result),
            games_released=event.done))
    elif isinstance(event, messages.PairCounted):
        pb.pair_counted.pair.CopyFrom(change_pb2.TestPair(
            board=event.board, board_id=event.board_id,
            candidate_match_id=event.candidate_match_id,
            baseline_match_id=event.baseline_match_id, eighths=event.eighths,
            llr=event.llr))
        if test is not None:
            pb.pair_counted.test.CopyFrom(test)
    elif isinstance(event, messages.PairVoided):
        pb.pair_voided.pair.CopyFrom(change_pb2.TestPair(
            board=event.board, board_id=event.board_id,
            candidate_match_id=event.candidate_match_id,
            baseline_match_id=event.baseline_match_id, llr=event.llr,
            voids=_voids_to_pb(event.voids)))
        if test is not None:
            pb.pair_voided.test.CopyFrom(test)
    elif isinstance(event, messages.WaitingChanged):
        pb.waiting_changed.SetInParent()
        pb.waiting_changed.held = event.held
        if test is not None:
            pb.waiting_changed.test.CopyFrom(test)
            names = dict(zip((test.spec.candidate, test.spec.baseline, *test.spec.opponents),
                             test.names, strict=False))
            pb.waiting_changed.waiting_for.extend(names.get(b, b) for b in event.bot_ids)
        else:
            pb.waiting_changed.waiting_for.extend(event.bot_ids)
    elif isinstance(event, messages.TournamentFinished):
        if test is not None:
            pb.test_finished.test.CopyFrom(test)
        else:
            pb.test_finished.SetInParent()
    else:
        return None
    return pb
