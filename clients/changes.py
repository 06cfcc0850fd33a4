"""`moonshot test`: is my new version better? Start, follow, show, stop and list tests of a
change (TestService).

What a test prints is what fishtest prints for a chess engine's test: the LLR with
its bounds and the hypotheses, the Elo estimate with its 95% interval and the LOS,
the games and pairs, the pentanomial (pairs that scored 0, 1/4, 1/2, 3/4, 1), and
the verdict; `watch` keeps one progress line up to date until the verdict.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from collections.abc import Iterator

import grpc

from clients import flags
from clients.accounts import user_token
from clients.commands import (
    _admin_flag,
    _rpc_error,
    _server_flag,
    add_sandbox_flag,
    newest_named,
    optional_admin_token,
    rules_options,
    sandbox_limits,
    server_target,
    web_link,
)
from clients.parser import Parser
from clients.render import plural
from clients.wire import POOL_CHOICES, pool_from_pb
from proto.moon.v1 import change_pb2, change_pb2_grpc, game_pb2, rating_pb2
from store import ids
from store.pools import Pool

__all__ = ["add_test", "live_line", "summary"]

_TRANSIENT = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
_MAX_FAILURES = 30
_STATUS = {"running": change_pb2.TEST_STATUS_RUNNING,
           "finished": change_pb2.TEST_STATUS_FINISHED,
           "failed": change_pb2.TEST_STATUS_FAILED}
_OUTCOME = {
    change_pb2.TEST_OUTCOME_H0: "H0 accepted",
    change_pb2.TEST_OUTCOME_H1: "H1 accepted",
    change_pb2.TEST_OUTCOME_LIMIT: "game limit reached before a verdict",
    change_pb2.TEST_OUTCOME_STOPPED: "stopped before a verdict",
    change_pb2.TEST_OUTCOME_DONE: "all its games played",
    change_pb2.TEST_OUTCOME_FORFEITS: "stopped by void pairs",
}


class _Client:
    """TestService calls on one channel, with the admin token when there is one."""

    def __init__(self, args: argparse.Namespace, token: str | None) -> None:
        self.target = server_target(args)
        self.stub = change_pb2_grpc.TestServiceStub(self.target.channel())
        self.metadata = (("authorization", f"Bearer {token}"),) if token else ()

    def get(self, test_id: str, pairs: bool = False) -> change_pb2.GetTestResponse:
        return self.stub.GetTest(change_pb2.GetTestRequest(test_id=test_id, with_pairs=pairs),
                                 metadata=self.metadata, timeout=30)

    def tests(self, status: int = 0, page_size: int = 100) -> Iterator[change_pb2.Test]:
        token = ""
        while True:
            resp = self.stub.ListTests(change_pb2.ListTestsRequest(
                page_size=page_size, page_token=token, status=status),  # type: ignore[arg-type]
                metadata=self.metadata, timeout=30)
            yield from resp.tests
            token = resp.next_page_token
            if not token:
                return

    def find(self, text: str) -> change_pb2.Test:
        """A test by id, or by name (the newest of that name)."""
        if ids.is_test_id(text):
            try:
                return self.get(text).test
            except grpc.RpcError as exc:
                if not hasattr(exc, "code") or exc.code() != grpc.StatusCode.NOT_FOUND:
                    raise
        return newest_named(self.tests(), text, lambda t: t.spec.name, lambda t: t.test_id,
                            "test", "moonshot test list")


# ---------------------------------------------------------------- text


def _elo(value: float) -> str:
    if math.isinf(value):
        return "-inf" if value < 0 else "+inf"
    return f"{value:+.1f}"


def _pool(t: change_pb2.Test) -> str:
    return str(pool_from_pb(t.spec.pool))


_SIDE = {change_pb2.TEST_SIDE_CANDIDATE: "candidate", change_pb2.TEST_SIDE_BASELINE: "baseline",
         change_pb2.TEST_SIDE_OPPONENT: "opponents", change_pb2.TEST_SIDE_STACK: "stack"}
_ENDED = (change_pb2.TEST_OUTCOME_STOPPED, change_pb2.TEST_OUTCOME_FORFEITS)


def _status(t: change_pb2.Test) -> str:
    """running, stopping (StopTest asked), finished, stopped (by StopTest or by void
    pairs) or failed."""
    if t.status == change_pb2.TEST_STATUS_RUNNING and t.stop_asked:
        return "stopping"
    if t.status == change_pb2.TEST_STATUS_FINISHED and t.progress.outcome in _ENDED:
        return "stopped"
    return change_pb2.TestStatus.Name(t.status).removeprefix("TEST_STATUS_").lower()


def _bounds(p: change_pb2.TestProgress) -> str:
    return f"({p.llr_lower:.2f}, {p.llr_upper:.2f})"


def verdict_text(t: change_pb2.Test) -> str:
    """The verdict in words: what the sequential test concluded in terms of its bounds, or
    why the test ended without a verdict. Never more than the SPRT says: H0 accepted is
    'the data favour elo0 over elo1', not 'the candidate is no better than elo0'."""
    p, s = t.progress, t.spec
    after = f"after {plural(p.verdict_pairs, 'pair')}"
    if p.verdict == change_pb2.TEST_VERDICT_H1:
        text = (f"H1 accepted {after}: the data favour elo1 = {s.elo1:g} over elo0 = "
                f"{s.elo0:g} (LLR {p.verdict_llr:.2f} >= {p.llr_upper:.2f}; alpha {s.alpha:g})")
    elif p.verdict == change_pb2.TEST_VERDICT_H0:
        text = (f"H0 accepted {after}: the data favour elo0 = {s.elo0:g} over elo1 = "
                f"{s.elo1:g} (LLR {p.verdict_llr:.2f} <= {p.llr_lower:.2f}; beta {s.beta:g})")
    elif p.verdict == change_pb2.TEST_VERDICT_FORFEITS:
        text = f"stopped: {p.verdict_reason}; neither H0 nor H1"
    elif t.spec.fixed_games:
        text = ("fixed games: an estimate, no verdict"
                + (f" ({_OUTCOME[p.outcome]})" if p.outcome in _OUTCOME
                   and p.outcome != change_pb2.TEST_OUTCOME_DONE else ""))
    elif p.outcome == change_pb2.TEST_OUTCOME_STOPPED:
        text = (f"none: stopped by the organiser after {plural(p.pairs, 'counted pair')}, "
                f"before the LLR ({p.llr:.2f}) left {_bounds(p)}")
    elif p.outcome == change_pb2.TEST_OUTCOME_LIMIT:
        text = (f"none: the game limit came after {plural(p.pairs, 'counted pair')}, before "
                f"the LLR ({p.llr:.2f}) left {_bounds(p)}")
    elif p.outcome in _OUTCOME:
        text = f"none: {_OUTCOME[p.outcome]}"
    else:
        text = f"pending: the LLR ({p.llr:.2f}) is within {_bounds(p)}"
    if t.status == change_pb2.TEST_STATUS_FAILED:
        text += f"; the test failed: {t.error}"
    return text


def verdict_note(t: change_pb2.Test) -> str:
    """Why the estimate and the verdict may look different, when they do ("" otherwise)."""
    p, s = t.progress, t.spec
    stops = ("a sequential test stops at the first pair where one hypothesis is favoured "
             "enough, so its estimate is biased toward the hypothesis it accepted, and its "
             "interval is not that of a fixed number of games")
    if p.verdict == change_pb2.TEST_VERDICT_H0 and p.elo > s.elo0:
        return (f"the estimate {_elo(p.elo)} is above elo0 = {s.elo0:g}: H0 accepted means "
                f"the pairs fit elo0 better than elo1 = {s.elo1:g}, not that the candidate "
                f"is no better than {s.elo0:g} Elo; {stops}")
    if p.verdict == change_pb2.TEST_VERDICT_H1 and p.elo < s.elo1:
        return (f"the estimate {_elo(p.elo)} is below elo1 = {s.elo1:g}: H1 accepted means "
                f"the pairs fit elo1 better than elo0 = {s.elo0:g}, not that the candidate "
                f"is at least {s.elo1:g} Elo better; {stops}")
    if p.verdict == change_pb2.TEST_VERDICT_FORFEITS or (
            p.outcome == change_pb2.TEST_OUTCOME_STOPPED and p.pairs_void):
        return (f"the figures are from the {plural(p.pairs, 'counted pair')} only: void "
                "pairs count in none of them")
    return ""


def void_text(p: change_pb2.TestProgress) -> str:
    """The void pairs by who and why: `2 (baseline: 2 disconnected for more than 1 s)`."""
    if not p.pairs_void:
        return "0"
    parts = [f"{_SIDE.get(v.side, 'unknown')}: {v.pairs} {v.reason}" for v in p.voids]
    return f"{p.pairs_void} ({'; '.join(parts)})"


def summary(t: change_pb2.Test) -> str:
    """The fishtest-like block of a test: LLR, Elo, games, pentanomial, void pairs, verdict."""
    p, s = t.progress, t.spec
    names = list(t.names)
    lines = [f"test {t.test_id}: {s.name} ({_status(t)})",
             f"  candidate {names[0]}, baseline {names[1]}, {_pool(t)} pool, opponents "
             f"{', '.join(names[2:])}"]
    if t.waiting_for:
        lines.append(f"  Waiting for {', '.join(t.waiting_for)}: not connected; no new pair "
                     "starts until it is (the test goes on by itself)")
    elif t.held:
        lines.append(f"  Held: {t.held} ({t.progress.pairs_in_flight} pairs in flight; "
                     "the test goes on by itself)")
    if not s.fixed_games:
        lines.append(f"  LLR: {p.llr:.2f} ({p.llr_lower:.2f}, {p.llr_upper:.2f}) "
                     f"<{s.elo0:.2f}, {s.elo1:.2f}>")
    lines.append(f"  Elo: {_elo(p.elo)} [{_elo(p.elo_low)}, {_elo(p.elo_high)}] (95%)  "
                 f"LOS: {100 * p.los:.1f}%  Score: {p.score:.3f} (mean pair)")
    if p.pairs >= 2 and math.isinf(p.elo):
        # The Elo is the pool difference that gives this mean against opponents as
        # strong as B; a mean past 3/4 (or below 1/4) no such difference gives.
        lines.append("  (Elo infinite: no pool difference gives this mean pair score against "
                     "opponents as strong as the baseline, so these are not; read the score)")
    lines.append(f"  Games: {p.games} of at most {t.games_total}  Pairs: {p.pairs} "
                 f"({p.pairs_in_flight} in flight)")
    penta = ", ".join(str(c) for c in p.pentanomial)
    between = ", ".join(str(c) for c in p.between)
    lines.append(f"  Ptnml(0-1): {penta}" + (f"   between (1/8, 3/8, 5/8, 7/8): {between}"
                                              if any(p.between) else ""))
    lines.append(f"  Void pairs: {void_text(p)}")
    lines.append(f"  Verdict: {verdict_text(t)}")
    note = verdict_note(t)
    if note:
        lines.append(f"  Note: {note}")
    return "\n".join(lines)


def live_line(t: change_pb2.Test) -> str:
    """One live line: pairs, void pairs, games, LLR against its bounds, Elo, in flight, and
    whom it waits for."""
    p, s = t.progress, t.spec
    llr = ("" if s.fixed_games else
           f"LLR {p.llr:+.2f} ({p.llr_lower:.2f}, {p.llr_upper:.2f}), ")
    void = f" ({p.pairs_void} void)" if p.pairs_void else ""
    state = (f"waiting for {', '.join(t.waiting_for)}" if t.waiting_for
             else f"waiting: {t.held}" if t.held else _status(t))
    return (f"{s.name}: {llr}Elo {_elo(p.elo)} [{_elo(p.elo_low)}, {_elo(p.elo_high)}], "
            f"{plural(p.pairs, 'pair')}{void}, {p.games} games, {p.pairs_in_flight} in flight, "
            f"{state}")


def _list_text(tests: list[change_pb2.Test]) -> str:
    rows = [f"{'id':<14}{'status':<10}{'pool':<5}{'pairs':>7}  {'LLR':>6}  {'Elo':>7}  "
            "verdict  name"]
    for t in tests:
        p = t.progress
        verdict = {change_pb2.TEST_VERDICT_H0: "H0", change_pb2.TEST_VERDICT_H1: "H1",
                   change_pb2.TEST_VERDICT_FORFEITS: "void",
                   change_pb2.TEST_VERDICT_PENDING: "-"}.get(p.verdict, "fixed")
        llr = f"{p.llr:+.2f}" if not t.spec.fixed_games else ""
        rows.append(f"{t.test_id:<14}{_status(t):<10}{_pool(t):<5}{p.pairs:>7}  {llr:>6}  "
                    f"{_elo(p.elo):>7}  {verdict:<7}  {t.spec.name}")
    return "\n".join(rows)


# ---------------------------------------------------------------- following


class _Line:
    """One line redrawn in place on a terminal; off one, a line at most every 10 s."""

    def __init__(self, quiet: bool) -> None:
        self.tty = sys.stderr.isatty() and not quiet
        self.quiet = quiet
        self.last = 0.0
        self.text = ""
        self.drawn = ""  # the last line written: the end comes as an event and a last read

    def show(self, text: str, force: bool = False) -> None:
        self.text = text
        now = time.monotonic()
        if self.quiet or text == self.drawn:
            return
        if self.tty:
            if force or now - self.last >= 0.1:
                sys.stderr.write("\r" + text + "\x1b[K")
                sys.stderr.flush()
                self.last, self.drawn = now, text
        elif force or now - self.last >= 10.0:
            print(text, file=sys.stderr, flush=True)
            self.last, self.drawn = now, text

    def close(self) -> None:
        if self.tty and self.text:
            sys.stderr.write("\n")
            sys.stderr.flush()


def follow(client: _Client, test_id: str, quiet: bool = False) -> change_pb2.Test:
    """Follow a test to its end with a live line; return it as it ended."""
    t = client.get(test_id).test
    if t.status != change_pb2.TEST_STATUS_RUNNING:
        return t  # over already: the summary says it all, no live line to keep
    line = _Line(quiet)
    after = failures = 0
    line.show(live_line(t), force=True)
    try:
        while t.status == change_pb2.TEST_STATUS_RUNNING:
            try:
                for ev in client.stub.WatchTest(
                        change_pb2.WatchTestRequest(test_id=test_id, after_sequence=after),
                        metadata=client.metadata):
                    after, failures = ev.sequence, 0
                    kind = ev.WhichOneof("event")
                    if kind == "pair_counted":
                        t = ev.pair_counted.test
                    elif kind == "pair_voided":
                        t = ev.pair_voided.test
                    elif kind == "waiting_changed":
                        t = ev.waiting_changed.test
                    elif kind == "test_finished":
                        t = ev.test_finished.test
                    elif kind == "game_finished":
                        t.progress.games = max(t.progress.games, ev.game_finished.games_released)
                    line.show(live_line(t), force=kind == "test_finished")
                t = client.get(test_id).test
            except grpc.RpcError as exc:
                code = exc.code() if hasattr(exc, "code") else None
                if code not in _TRANSIENT or failures >= _MAX_FAILURES:
                    raise
                failures += 1
                time.sleep(min(0.2 * 2 ** failures, 5.0))
        line.show(live_line(t), force=True)
    finally:
        line.close()
    return t


# ---------------------------------------------------------------- commands


def _run_start(args: argparse.Namespace) -> int:
    players = Pool.parse(args.pool).players
    prog = "moonshot test start"
    options = rules_options(players, args.rule, prog)
    opponents = [b.strip() for b in (args.opponents or "").split(",") if b.strip()]
    spec = change_pb2.TestSpec(
        name=args.name or "", candidate=args.candidate, baseline=args.baseline,
        pool=(rating_pb2.RATING_POOL_TWO_VS_TWO if players == 4
              else rating_pb2.RATING_POOL_THREE_PLAYER),
        opponents=opponents, trust_opponents=args.trust_opponents, elo0=args.elo0,
        elo1=args.elo1, alpha=args.alpha, beta=args.beta, max_games=args.max_games,
        fixed_games=args.games or 0, in_flight=args.in_flight, rules=options,
        clock=game_pb2.ClockPolicy(move_time_ms=args.time_per_move,
                                   time_bank_ms=args.time_bank),
        faults=game_pb2.FaultPolicy(max_strikes=args.max_strikes,
                                    disconnect_grace_ms=args.disconnect_grace),
        sandbox=sandbox_limits(args.sandbox, prog))
    if args.seed is not None:
        spec.seed = args.seed
    if args.void_streak is not None:
        spec.void_streak = args.void_streak
    if args.void_share is not None:
        spec.void_share = args.void_share
    if args.void_share_after is not None:
        spec.void_share_after = args.void_share_after
    client = _Client(args, user_token(args))
    try:
        resp = client.stub.CreateTest(
            change_pb2.CreateTestRequest(spec=spec, require_online=args.require_online),
            metadata=client.metadata, timeout=30)
        t = resp.test
        seed = t.spec.seed if t.spec.HasField("seed") else "hidden until it ends"
        print(f"test {t.test_id} started: {t.spec.name} ({_pool(t)}, seed {seed})")
        for note in t.notes:
            print(f"note: {note}")
        if resp.offline:
            print(f"warning: {plural(len(resp.offline), 'bot')} not connected now: "
                  f"{', '.join(resp.offline)}: no pair starts until "
                  f"{'it is' if len(resp.offline) == 1 else 'they are'} (the test waits, "
                  "then goes on by itself; --require-online refuses to create such a test)",
                  file=sys.stderr)
        page = web_link(args, f"/test/{t.test_id}")
        if page:
            print(f"web page: {page}")
        if not args.watch:
            print(f"follow it with: moonshot test watch {t.test_id}")
            return 0
        t = follow(client, t.test_id, args.quiet)
    except grpc.RpcError as exc:
        raise _rpc_error(exc, client.target) from None
    print(summary(t))
    return 0


def _run_watch(args: argparse.Namespace) -> int:
    client = _Client(args, optional_admin_token(args))
    try:
        t = client.find(args.test)
        page = web_link(args, f"/test/{t.test_id}")
        if page:
            print(f"web page: {page}")
        if t.status == change_pb2.TEST_STATUS_RUNNING:
            print(f"following {t.spec.name} ({t.test_id}) to its verdict; Ctrl-C stops "
                  "following (the test goes on)", flush=True)
        t = follow(client, t.test_id, args.quiet)
    except grpc.RpcError as exc:
        raise _rpc_error(exc, client.target) from None
    print(summary(t))
    return 0


def _run_show(args: argparse.Namespace) -> int:
    client = _Client(args, optional_admin_token(args))
    try:
        t = client.find(args.test)
        pairs = client.get(t.test_id, pairs=True).pairs if args.pairs else []
    except grpc.RpcError as exc:
        raise _rpc_error(exc, client.target) from None
    print(summary(t))
    for note in t.notes:
        print(f"note: {note}")
    page = web_link(args, f"/test/{t.test_id}")
    if page:
        print(f"web page: {page}")
    if pairs:
        print(f"{'board':>5}  {'pair':>5}  {'LLR':>6}  candidate's game / baseline's game")
        for p in pairs:
            score = "void" if p.voids else f"{p.eighths / 8:.3f}"
            why = "; ".join(f"{_SIDE.get(v.side, 'unknown')}: {v.reason}" for v in p.voids)
            print(f"{p.board:>5}  {score:>5}  {p.llr:>+6.2f}  "
                  f"{p.candidate_match_id} / {p.baseline_match_id}"
                  + (f"  (void: {why})" if why else ""))
        board = web_link(args, f"/test/{t.test_id}/board/")
        if board:
            print(f"a board's two games side by side: {board}<board>")
        else:
            print("replay a game with: moonshot match show <game id>")
    return 0


def _run_stop(args: argparse.Namespace) -> int:
    client = _Client(args, user_token(args))
    try:
        t = client.find(args.test)
        t = client.stub.StopTest(change_pb2.StopTestRequest(test_id=t.test_id),
                                 metadata=client.metadata, timeout=30).test
    except grpc.RpcError as exc:
        raise _rpc_error(exc, client.target) from None
    print(f"test {t.test_id} stopping: no new pair starts; "
          f"{plural(t.progress.pairs_in_flight, 'pair')} in flight finish and count")
    return 0


def _run_list(args: argparse.Namespace) -> int:
    client = _Client(args, None)
    try:
        found = list(itertools.islice(client.tests(_STATUS.get(args.status or "", 0),
                                                   page_size=args.limit + 1), args.limit + 1))
    except grpc.RpcError as exc:
        raise _rpc_error(exc, client.target) from None
    if not found:
        print("no tests yet" if not args.status else f"no {args.status} tests")
        return 0
    print(_list_text(found[:args.limit]))
    if len(found) > args.limit:
        print(f"(newest {args.limit} shown: --limit N shows more)")
    return 0


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def _share(text: str) -> float:
    value = _finite(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


_EPILOG = """\
A test plays each board twice, once with the candidate and once with the baseline in
the same seat against the same opponents, and scores each pair (1 + s_C - s_B) / 2
with a game scoring 1, 1/2, 0 for first, second, third (2v2: win, draw, loss). The
sequential test (GSPRT on the pair scores) accepts H1 (the pairs fit elo1 better than
elo0) or H0 (they fit elo0 better than elo1) with error rates alpha and beta, and
stops as soon as it can. Elo is on the pool ratings' scale.

A pair in which the candidate, the baseline or an opponent forfeits, or a game the
stack could not host, is void: listed, counted in no figure. The test stops with a
verdict of its own (never H0 or H1) after --void-streak void pairs in a row by one
side (3), or once a side voided more than --void-share of the pairs (0.05) from
--void-share-after pairs on (20). While a remote candidate, baseline or opponent is
not connected, no pair starts: the test waits for it and goes on when it is back.

examples:
  moonshot test start my-bot-v2 my-bot-v1 --elo0 0 --elo1 10 --watch
  moonshot test start house:pimc house:greedy --elo0 0 --elo1 100 --time-per-move 5s
  moonshot test start v2 v1 --games 400          (a fixed-games estimate, no verdict)
"""


def add_test(sub: argparse._SubParsersAction[Parser]) -> None:
    """Add `moonshot test start|watch|show|stop|list`."""
    test = sub.add_parser(
        "test", help="is my new version better? start, watch, show, stop or list tests",
        description="Tests of a change: a sequential test of a candidate bot against a "
                    "baseline on paired boards.", epilog=_EPILOG,
    ).add_subparsers(dest="test_command", required=True, parser_class=Parser)
    p = test.add_parser("start", help="start a test of your bot (or, as the admin, of any)",
                        epilog=_EPILOG)
    p.add_argument("candidate", help="the new version: a bot id or name, or a house bot")
    p.add_argument("baseline", nargs="?", default="",
                   help="the version to beat: a bot id or name, or a house bot (default: the "
                        "candidate's previous version, moonshot bot version)")
    p.add_argument("--pool", choices=POOL_CHOICES, default="3p",
                   help="3-player tables or 2v2 (default 3p)")
    p.add_argument("--opponents", default=None, metavar="A,B[,C]",
                   help="3p: the two opponents; 2v2: the partner, then the other team's two "
                        "(default house:greedy in each seat)")
    p.add_argument("--trust-opponents", action="store_true",
                   help="allow opponents that are not house bots: they play every board "
                        "twice, so the organiser must trust them to keep no memory")
    p.add_argument("--elo0", type=_finite, default=0.0, help="H0: at most this much better")
    p.add_argument("--elo1", type=_finite, default=5.0,
                   help="H1: at least this much better (above --elo0)")
    p.add_argument("--alpha", type=_finite, default=0.05,
                   help="chance of accepting H1 under H0, in (0, 0.5)")
    p.add_argument("--beta", type=_finite, default=0.05,
                   help="chance of accepting H0 under H1, in (0, 0.5)")
    p.add_argument("--max-games", type=flags.int_in(2, 1_000_000), default=20_000,
                   help="game limit of the sequential test (even)")
    p.add_argument("--games", type=flags.int_in(2, 1_000_000), default=None, metavar="N",
                   help="play exactly N games (even) for an estimate with its interval, "
                        "instead of the sequential test")
    p.add_argument("--in-flight", type=flags.int_in(1, 10_000), default=8,
                   help="most pairs at once, and most games any remote bot of the test "
                        "plays at once, its games elsewhere included")
    p.add_argument("--name", default=None, help="a name to show (default: C vs B)")
    p.add_argument("--seed", type=flags.int_in(*flags.SEED), default=None,
                   help="plans every board (default: random)")
    p.add_argument("--rule", action="append", default=[], metavar="KEY=VALUE",
                   help="a rules option, repeat for several (see moonshot selfplay --help)")
    p.add_argument("--time-per-move", type=flags.duration_ms(*flags.MOVE_TIME_MS), default="2s",
                   help="per-decision limit, e.g. 500ms, 2s (default 2s)")
    p.add_argument("--time-bank", type=flags.duration_ms(*flags.TIME_BANK_MS), default="30s",
                   help="extra time per seat per game once a decision overruns (default 30s)")
    p.add_argument("--max-strikes", type=flags.int_in(*flags.MAX_STRIKES), default=3,
                   help="late or illegal answers before a bot forfeits (default 3)")
    p.add_argument("--disconnect-grace", type=flags.duration_ms(*flags.GRACE_MS),
                   default="30s",
                   help="how long a bot may stay disconnected before it forfeits (default 30s)")
    add_sandbox_flag(p)
    p.add_argument("--require-online", action="store_true",
                   help="refuse to create the test if a remote bot of it is not connected "
                        "now (without: a warning, and no pair starts until it is)")
    p.add_argument("--void-streak", type=flags.int_in(0, 1_000_000), default=None,
                   metavar="N", help="stop after N void pairs in a row by one side (a "
                                     "forfeit, or a game the stack lost); 0: never "
                                     "(default 3)")
    p.add_argument("--void-share", type=_share, default=None, metavar="F",
                   help="... or once one side voided more than this share of the pairs "
                        "(default 0.05; 1: never)")
    p.add_argument("--void-share-after", type=flags.int_in(1, 1_000_000), default=None,
                   metavar="N", help="the pairs settled before --void-share applies "
                                     "(default 20)")
    p.add_argument("--watch", action="store_true", help="follow it to its verdict")
    p.add_argument("--quiet", action="store_true", help="with --watch: no live line")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_start)
    p = test.add_parser("watch", help="follow a test live to its verdict")
    p.add_argument("test", metavar="ID_OR_NAME", help="the test's id, or its name")
    p.add_argument("--quiet", action="store_true", help="no live line")
    _server_flag(p)
    _admin_flag(p, "shows the seed of a running test")
    p.set_defaults(run=_run_watch)
    p = test.add_parser("show", help="print a test's LLR, Elo, pentanomial and verdict")
    p.add_argument("test", metavar="ID_OR_NAME", help="the test's id, or its name")
    p.add_argument("--pairs", action="store_true",
                   help="also list every settled pair: its board, score (or why it is "
                        "void), LLR and two games")
    _server_flag(p)
    _admin_flag(p, "shows the seed of a running test")
    p.set_defaults(run=_run_show)
    p = test.add_parser("stop", help="stop your test (the admin: any): no new pair starts")
    p.add_argument("test", metavar="ID_OR_NAME", help="the test's id, or its name")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_stop)
    p = test.add_parser("list", help="list tests, newest first")
    p.add_argument("--status", choices=("running", "finished", "failed"), default=None,
                   help="only tests in this status")
    p.add_argument("--limit", type=flags.int_in(1, 1000), default=20,
                   help="show at most this many (default 20)")
    _server_flag(p)
    p.set_defaults(run=_run_list)
