"""Calls of a change on real processes: a referee, workers, bot processes, the CLI.

- `house:pimc` against `house:greedy` reaches its verdict (H1), and every counted pair
  is what the released games say;
- two registrations of one program, a fixed number of games: the counts and the
  interval; meanwhile, a board half played shows nothing to a caller without a token
  (GetMatch, ListMatches, WatchMatch, WatchTest, GetTest, the web page), and C and B
  are each dealt every deal once;
- bad input: one INVALID_ARGUMENT each over gRPC (one line in the CLI), nothing created;
- `moonshot test stop`: no new pair, the pairs in flight finish and count;
- a worker killed mid-game and a step killed before it saved change nothing counted;
- a baseline registered but never run: a warning (`--require-online` refuses), no pair
  starts, the test says it waits for it, and goes on once it runs;
- a baseline killed mid-test: its forfeited pairs are void, the test stops with a verdict
  of its own, and GetTest, the CLI and the page say who forfeited how many and why.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
from stack import Stack, env, moonshot
from support import wait_until

from clients.admin import Admin
from clients.redisproc import RedisServer
from clients.sdk import register
from proto.moon.v1 import (
    account_pb2,
    account_pb2_grpc,
    change_pb2,
    change_pb2_grpc,
    game_pb2,
    match_pb2,
    match_pb2_grpc,
    rating_pb2,
)
from ratings.sprt import estimate
from store import changes as store_changes
from store import deals, events, keys
from store.results import game_quarters
from tournaments.change import ChangeSpec, seating

SHORT = {"max_hands": "2"}
Code = grpc.StatusCode


class Calls:
    """TestService and MatchService calls, as an organiser (`admin`) or as anyone."""

    def __init__(self, address: str, token: str | None) -> None:
        self.channel = grpc.insecure_channel(address)
        self.stub = change_pb2_grpc.TestServiceStub(self.channel)
        self.matches = match_pb2_grpc.MatchServiceStub(self.channel)
        self.md = (("authorization", f"Bearer {token}"),) if token else ()

    def create(self, require_online: bool = False, **spec: Any) -> change_pb2.Test:
        return self.stub.CreateTest(change_pb2.CreateTestRequest(
            spec=change_pb2.TestSpec(**spec), require_online=require_online),
            metadata=self.md, timeout=30).test

    def get(self, test_id: str, pairs: bool = False) -> change_pb2.GetTestResponse:
        return self.stub.GetTest(change_pb2.GetTestRequest(test_id=test_id, with_pairs=pairs),
                                 metadata=self.md, timeout=30)

    def match(self, match_id: str) -> match_pb2.Match:
        return self.matches.GetMatch(match_pb2.GetMatchRequest(match_id=match_id),
                                     metadata=self.md, timeout=30).match

    def games(self, test_id: str) -> list[match_pb2.Match]:
        out: list[match_pb2.Match] = []
        token = ""
        while True:
            resp = self.matches.ListMatches(match_pb2.ListMatchesRequest(
                test_id=test_id, page_size=1000, page_token=token), metadata=self.md,
                timeout=30)
            out += resp.matches
            token = resp.next_page_token
            if not token:
                return out

    def wait_over(self, test_id: str, timeout: float = 240.0) -> change_pb2.Test:
        def over() -> change_pb2.Test | None:
            t = self.get(test_id).test
            return t if t.status != change_pb2.TEST_STATUS_RUNNING else None
        return wait_until(f"test {test_id} to end", over, timeout=timeout, every=0.25)

    def close(self) -> None:
        self.channel.close()


@pytest.fixture
def organiser(stack: Stack, admin_token: str) -> Iterator[Calls]:
    t = Calls(stack.address, admin_token)
    yield t
    t.close()


@pytest.fixture
def public(stack: Stack) -> Iterator[Calls]:
    t = Calls(stack.address, None)
    yield t
    t.close()


def _pair_eighths(t: change_pb2.Test, c: match_pb2.Match, b: match_pb2.Match) -> int:
    """A pair's score from its two public games: C's seat is where C sits in C's game."""
    differ = [i for i, (x, y) in enumerate(zip(c.bot_ids, b.bot_ids, strict=True)) if x != y]
    assert len(differ) == 1  # the same opponents in the same seats; C's seat is B's
    hero = differ[0]
    assert (c.bot_ids[hero], b.bot_ids[hero]) == (t.spec.candidate, t.spec.baseline)
    players = len(c.bot_ids)
    return 4 + game_quarters(players, list(c.result.placement), hero) - game_quarters(
        players, list(b.result.placement), hero)


def _check_pairs(t: change_pb2.Test, got: change_pb2.GetTestResponse,
                 games: dict[str, match_pb2.Match]) -> list[int]:
    """Every counted pair is its two released games' score, once, in board order; the
    test's bins are those pairs'. Returns the nine bins."""
    pairs = list(got.pairs)
    assert [p.board for p in pairs] == list(range(1, len(pairs) + 1))
    bins = [0] * 9
    for p in pairs:
        c, b = games[p.candidate_match_id], games[p.baseline_match_id]
        assert c.seed == b.seed and c.seed  # one deal, public now
        assert c.board == b.board == p.board_id
        assert p.eighths == _pair_eighths(t, c, b), p
        bins[p.eighths] += 1
    prog = got.test.progress
    assert list(prog.pentanomial) == bins[::2] and list(prog.between) == bins[1::2]
    assert prog.pairs == len(pairs) and prog.games == 2 * len(pairs)
    est = estimate(bins, 3 if t.spec.pool != rating_pb2.RATING_POOL_TWO_VS_TWO else 4)
    assert (prog.elo, prog.elo_low, prog.elo_high) == pytest.approx(
        (est.elo, est.low, est.high))
    return bins


def test_pimc_against_greedy_reaches_its_verdict(organiser: Calls, public: Calls,
                                                 r: redis.Redis) -> None:
    """PIMC is far stronger than greedy (docs/PERFORMANCE.md): a test of H1 +50 against
    H0 0 accepts H1; no pair starts after the verdict but the ones in flight, which still
    finish and count; every pair is what its two public games say; nothing is rated."""
    rated_before = r.zcard(keys.results("3p"))
    t = organiser.create(candidate="house:pimc?samples=16", baseline="house:greedy",
                         elo0=0.0, elo1=50.0, max_games=400, in_flight=4, rules=SHORT)
    assert t.spec.candidate.startswith("house:pimc?") and "samples=16" in t.spec.candidate
    assert list(t.spec.opponents) == ["house:greedy", "house:greedy"]  # the default
    t = organiser.wait_over(t.test_id)
    p = t.progress
    assert t.status == change_pb2.TEST_STATUS_FINISHED, t.error
    assert p.verdict == change_pb2.TEST_VERDICT_H1 and p.outcome == change_pb2.TEST_OUTCOME_H1
    assert p.verdict_pairs <= p.pairs <= p.verdict_pairs + 4 * 4  # the window past a verdict
    assert p.llr_upper == pytest.approx(2.944, abs=1e-3)
    got = public.get(t.test_id, pairs=True)
    assert got.pairs[p.verdict_pairs - 1].llr >= p.llr_upper  # the crossing is on record
    assert all(x.llr < p.llr_upper for x in got.pairs[:p.verdict_pairs - 1])
    games = {m.match_id: public.match(m.match_id) for m in public.games(t.test_id)}
    assert len(games) == 2 * p.pairs  # every game started was counted, none twice
    _check_pairs(t, got, games)
    assert p.elo > 0 and p.elo_low > 0
    assert r.zcard(keys.results("3p")) == rated_before  # a test's games are not rated
    seen = [e for _, e in events.read_after(r, t.test_id, 0, count=10_000)]
    assert sorted(e.board for e in seen if e.TYPE == "pair_counted") == \
        list(range(1, p.pairs + 1))


def _cli(stack: Stack, *args: str, timeout: float = 240.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(moonshot(*args, "--server", stack.address), env=env(
        MOONSHOT_ADMIN_TOKEN="", MOONSHOT_DATA=str(stack.workdir / "nodata")),
        capture_output=True, text=True, timeout=timeout, check=False)


def _http(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _watch_public(stack: Stack, test_id: str, out: list[change_pb2.WatchTestResponse]
                  ) -> threading.Thread:
    """A watcher without a token, reading WatchTest into `out` until the end."""
    def run() -> None:
        with grpc.insecure_channel(stack.address) as ch:
            stub = change_pb2_grpc.TestServiceStub(ch)
            out.extend(stub.WatchTest(change_pb2.WatchTestRequest(test_id=test_id),
                                      timeout=300))
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_two_registrations_of_one_program_fixed_games(
        stack: Stack, organiser: Calls, public: Calls, r: redis.Redis, name: str,
        admin_token: str) -> None:
    """v1 and v2 are the same program (the random bot, against house:random: a
    deterministic one plays both games of a board alike, and against greedy a random bot
    comes last in both, every pair 1/2): 20 games for an estimate. Until the
    baseline (connected, but holding its first decision) plays, each board is half
    played: nothing of it is public. Then the test
    ends with 10 pairs whose scores the public games give, an interval around the
    estimate, a mean pair score within 4 standard errors of 1/2 (there is no true
    difference), and each bot dealt each deal once."""
    c_id, c_token = register(stack.address, f"{name}-v2")
    b_id, b_token = register(stack.address, f"{name}-v1")
    web = stack.start("web", moonshot("web", "--server", stack.address, "--listen",
                                      "127.0.0.1:0"))
    base = web.wait_for(r"(http://127\.0\.0\.1:\d+)", timeout=30).group(1)
    stack.bot("random", stack.address, c_token)
    gate = stack.workdir / "gate"
    gate.unlink(missing_ok=True)
    stack.bot("netbots:GatedRandomBot", stack.address, b_token)
    made = _cli(stack, "test", "start", f"{name}-v2", f"{name}-v1", "--games", "20",
                "--opponents", "house:random,house:random",
                "--rule", "max_hands=2", "--disconnect-grace", "90s", "--in-flight", "3",
                "--time-bank", "600s", "--admin-token", admin_token)
    assert made.returncode == 0, made.stderr
    assert "not connected" not in made.stderr  # both run: no warning
    test_id = re.search(r"test (c-[0-9a-z]+) started", made.stdout).group(1)  # type: ignore[union-attr]
    watched: list[change_pb2.WatchTestResponse] = []
    watcher = _watch_public(stack, test_id, watched)
    # C's games finish; B's wait for B's decisions: every board in play is half played.
    first_c = f"{test_id}-p1-c"

    def first_finished() -> bool:
        try:  # the first step, a job of its own, may not have created it yet
            return organiser.match(first_c).status == match_pb2.MATCH_STATUS_FINISHED
        except grpc.RpcError as exc:
            if exc.code() != Code.NOT_FOUND:
                raise
            return False

    wait_until("the candidate's first game to finish", first_finished, timeout=60)
    time.sleep(1.0)
    seen = public.match(first_c)
    assert seen.status == match_pb2.MATCH_STATUS_FINISHED
    assert seen.seed == 0 and not seen.transcript_json and not seen.HasField("result")
    assert seen.actions_played == 0 and seen.test_id == test_id and not seen.tournament_id
    for m in public.games(test_id):
        assert not m.HasField("result") and m.seed == 0, m.match_id
    with grpc.insecure_channel(stack.address) as ch:  # WatchMatch holds after MatchStarted
        stream = match_pb2_grpc.MatchServiceStub(ch).WatchMatch(
            match_pb2.WatchMatchRequest(match_id=first_c), timeout=2)
        got: list[match_pb2.WatchMatchResponse] = []
        with pytest.raises(grpc.RpcError) as err:
            got.extend(stream)
        assert err.value.code() == Code.DEADLINE_EXCEEDED
        assert [e.WhichOneof("event") for e in got] == ["match_started"]
    half = public.get(test_id, pairs=True)
    assert not half.pairs and half.test.progress.pairs == 0
    assert not half.test.spec.HasField("seed")  # the seed fixes every deal: hidden
    assert organiser.get(test_id).test.spec.HasField("seed")
    kinds = {e.WhichOneof("event") for e in watched}
    assert kinds <= {"game_started"}, kinds
    status, page = _http(f"{base}/test/{test_id}")
    assert status == 200 and "No pair counted yet" in page
    assert _http(f"{base}/game/{first_c}.json")[0] == 404
    # B decides; the test plays out.
    gate.touch()
    shown = _cli(stack, "test", "watch", test_id, "--quiet")
    assert shown.returncode == 0, shown.stderr
    watcher.join(60)
    t = organiser.get(test_id).test
    assert t.status == change_pb2.TEST_STATUS_FINISHED
    assert t.progress.outcome == change_pb2.TEST_OUTCOME_DONE
    assert t.progress.verdict == change_pb2.TEST_VERDICT_UNSPECIFIED
    got_pairs = public.get(test_id, pairs=True)
    games = {m.match_id: public.match(m.match_id) for m in public.games(test_id)}
    assert len(games) == 20
    bins = _check_pairs(t, got_pairs, games)
    assert sum(bins) == 10
    est = estimate(bins, 3)
    # Ten pairs give a wide interval (an end may be infinite: a mean pair score past 1/4
    # or 3/4 is out of the model's reach), so only its order and the mean are checked.
    assert est.sd > 0 and est.low < est.elo < est.high
    assert abs(est.score - 0.5) <= 4 * est.sd / 10 ** 0.5
    # The summary as the CLI prints it: no LLR for a fixed-games test.
    out = shown.stdout
    assert "LLR:" not in out and "Games: 20" in out and "Pairs: 10" in out
    assert f"Ptnml(0-1): {', '.join(str(x) for x in bins[::2])}" in out
    assert "fixed games: an estimate, no verdict" in out
    listed = _cli(stack, "test", "list")
    assert test_id in listed.stdout and "finished" in listed.stdout
    rows = _cli(stack, "test", "show", test_id, "--pairs").stdout
    assert len([ln for ln in rows.splitlines() if f"{test_id}-p" in ln]) == 10
    # The public watcher saw every game start and every board's two results at release,
    # each pair after both its games, and the end.
    order = [e.WhichOneof("event") for e in watched]
    assert order.count("game_started") == 20 and order.count("game_finished") == 20
    assert order.count("pair_counted") == 10 and order[-1] == "test_finished"
    assert [e.sequence for e in watched] == list(range(1, len(watched) + 1))
    released: set[str] = set()
    for e in watched:
        if e.WhichOneof("event") == "game_finished":
            released.add(e.game_finished.match_id)
        elif e.WhichOneof("event") == "pair_counted":
            pair = e.pair_counted.pair
            assert {pair.candidate_match_id, pair.baseline_match_id} <= released
    # Each bot was dealt each deal once, and only for its own board.
    for bot in (c_id, b_id):
        mine = [m for m in games.values() if bot in m.bot_ids]
        assert len(mine) == 10 and len({m.seed for m in mine}) == 10
        assert all(deals.board_of(r, m.seed) == m.board for m in mine)
    status, page = _http(f"{base}/test/{test_id}")
    assert status == 200 and "side by side" in page and "No pair counted yet" not in page
    status, page = _http(f"{base}/test/{test_id}/board/1")
    assert status == 200 and f"/game/{test_id}-p1-c" in page and f"/game/{test_id}-p1-b" in page
    # The board's two replays are framed alone (no page, no nav bar around them), each
    # seat named by its role.
    assert f'src="/test/{test_id}/board/1/c"' in page and page.count("<nav") == 1
    for role, hero in (("c", f"C ({name}-v2)"), ("b", f"B ({name}-v1)")):
        status, frame = _http(f"{base}/test/{test_id}/board/1/{role}")
        assert status == 200 and "<nav" not in frame and 'id="transcript"' in frame
        assert hero in frame and "O1 (house:random)" in frame and "O2 (house:random)" in frame


def test_bad_input_is_refused_and_nothing_is_created(
        stack: Stack, organiser: Calls, public: Calls, r: redis.Redis, admin: Admin,
        name: str, admin_token: str) -> None:
    """Each mistake: one INVALID_ARGUMENT naming it, over gRPC and in the CLI; no test,
    no game, no deal written."""
    remote, _ = register(stack.address, f"{name}-remote")
    other, _ = register(stack.address, f"{name}-other")
    good: dict[str, Any] = {"candidate": remote, "baseline": other, "rules": SHORT}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"elo0": 5.0, "elo1": 5.0}, "elo0 must be below elo1"),
        ({"elo0": 10.0, "elo1": -10.0}, "elo0 must be below elo1"),
        ({"alpha": 0.0}, "alpha must be in (0, 0.5)"),
        ({"alpha": 0.5}, "alpha must be in (0, 0.5)"),
        ({"beta": 0.7}, "beta must be in (0, 0.5)"),
        ({"beta": -0.1}, "beta must be in (0, 0.5)"),
        ({"baseline": remote}, "the same bot"),
        ({"baseline": f"{name}-remote"}, "the same bot"),  # by name: still C itself
        ({"opponents": [other, "house:greedy"], "baseline": "house:random"},
         "not a house bot"),
        ({"opponents": [remote, "house:greedy"], "trust_opponents": True,
          "baseline": "house:random"}, "is the candidate or the baseline"),
        ({"pool": rating_pb2.RATING_POOL_TWO_VS_TWO, "opponents": ["house:greedy"] * 2},
         "2v2 test needs a partner and two opponents"),
        ({"pool": 7}, "spec.pool"),
        ({"rules": {"double_blank": "false"}, "pool": rating_pb2.RATING_POOL_TWO_VS_TWO},
         "3-player option"),
        ({"candidate": "nobody-" + name}, "spec.candidate"),
        ({"opponents": ["house:nope", "house:greedy"]}, "spec.opponents[0]"),
        ({"fixed_games": 7}, "fixed_games must be even"),
        ({"candidate": ""}, "spec.candidate: required"),
    ]
    tests_before = r.zcard(keys.TESTS)
    matches_before = r.zcard(keys.MATCHES)
    deals_before = deals.count(r)
    for change, phrase in cases:
        with pytest.raises(grpc.RpcError) as err:
            organiser.create(**{**good, **change})
        assert err.value.code() == Code.INVALID_ARGUMENT, (change, err.value.details())
        assert phrase in err.value.details(), (change, err.value.details())
    with pytest.raises(grpc.RpcError) as err:  # and without the token, refused first
        public.create(**good)
    assert err.value.code() == Code.UNAUTHENTICATED
    cli = [(["--elo0", "5", "--elo1", "1"], "elo0 must be below elo1"),
           (["--alpha", "0.6"], "alpha must be in (0, 0.5)"),
           (["--pool", "2v2", "--opponents", "house:greedy,house:greedy"], "2v2 test needs"),
           (["--opponents", f"{other},house:greedy"], "not a house bot")]
    for flags, phrase in cli:
        res = _cli(stack, "test", "start", remote, "house:random", *flags,
                   "--admin-token", admin_token)
        assert res.returncode == 1, res
        # The referee's own message, not the status code's name.
        assert "INVALID_ARGUMENT" not in res.stderr and phrase in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    same = _cli(stack, "test", "start", remote, remote, "--admin-token", admin_token)
    assert same.returncode == 1 and "the same bot" in same.stderr
    assert r.zcard(keys.TESTS) == tests_before
    assert r.zcard(keys.MATCHES) == matches_before
    assert deals.count(r) == deals_before
    # StopTest of a test that is over, or of none.
    with pytest.raises(grpc.RpcError) as err:
        organiser.stub.StopTest(change_pb2.StopTestRequest(test_id="c-none"),
                                metadata=organiser.md, timeout=10)
    assert err.value.code() == Code.NOT_FOUND


def test_a_remote_opponent_grouped_with_c_b_or_the_other_opponent_is_refused(
        stack: Stack, organiser: Calls, r: redis.Redis, admin: Admin, name: str) -> None:
    """A remote opponent sits at both tables of every board, so one that shares an author
    or a group of the stack with C, B or the other opponent would hold a hand of theirs:
    INVALID_ARGUMENT naming spec.opponents, the two bots and the group, nothing created;
    once the group is gone the same test starts."""
    c, _ = register(stack.address, f"{name}-c")
    b, _ = register(stack.address, f"{name}-b")
    o1, _ = register(stack.address, f"{name}-o1")
    o2, _ = register(stack.address, f"{name}-o2")
    with grpc.insecure_channel(stack.address) as ch:
        ann = account_pb2_grpc.AccountServiceStub(ch).SignUp(
            account_pb2.SignUpRequest(name=f"{name}-ann"), timeout=30)
    a1, _ = register(stack.address, f"{name}-a1", ann.token)
    a2, _ = register(stack.address, f"{name}-a2", ann.token)
    base: dict[str, Any] = {"candidate": c, "baseline": b, "rules": SHORT,
                            "trust_opponents": True}
    group = f"{name}-lab"
    names = {o1: "o1", o2: "o2", c: "c", b: "b", a1: "a1", a2: "a2"}
    tests_before, matches_before = r.zcard(keys.TESTS), r.zcard(keys.MATCHES)
    cases = [  # (the group of the stack, if any; the test's bots; who shares it with whom)
        ([o1, c], {"opponents": [o1, "house:greedy"]}, (o1, c)),
        ([o1, b], {"opponents": ["house:greedy", o1]}, (o1, b)),
        ([o1, o2], {"opponents": [o1, o2]}, (o1, o2)),
        ([], {"candidate": a1, "opponents": [a2, "house:greedy"]}, (a2, a1)),
    ]
    try:
        for members, change, (them, us) in cases:
            if members:
                admin.set_group(group, members)
            with pytest.raises(grpc.RpcError) as err:
                organiser.create(**{**base, **change})
            text = err.value.details() or ""
            assert err.value.code() == Code.INVALID_ARGUMENT, text
            shared = f"stack:{group}" if members else f"author:{ann.author.author_id}"
            said = (f"spec.opponents: {name}-{names[them]} and {name}-{names[us]} are of one "
                    f"group ({shared})")
            assert text.startswith(said) and "choose another opponent" in text, text
            if members:
                admin.set_group(group, [])
        assert r.zcard(keys.TESTS) == tests_before and r.zcard(keys.MATCHES) == matches_before
        # The same test with the group gone: started (it waits for its offline bots).
        t = organiser.create(**{**base, "opponents": [o1, o2]})
        organiser.stub.StopTest(change_pb2.StopTestRequest(test_id=t.test_id),
                                metadata=organiser.md, timeout=30)
    finally:
        admin.set_group(group, [])


def test_stop_starts_no_new_pair_and_the_pairs_in_flight_count(
        stack: Stack, organiser: Calls, public: Calls, r: redis.Redis, name: str,
        admin_token: str) -> None:
    """A sequential test with no true difference (a registered random bot against
    house:random, the same program) is far from a verdict when `moonshot test stop` stops
    it by name: no pair starts after the stop but the ones a step had started, those
    finish and count, the verdict stays pending and the test says it was stopped; a
    second StopTest, or one without the token, is refused."""
    c_id, c_token = register(stack.address, f"{name}-rand")
    stack.bot("random", stack.address, c_token)
    in_flight = 2
    t = organiser.create(candidate=c_id, baseline="house:random", name=f"{name}-stop",
                         opponents=["house:random", "house:random"], elo0=0.0, elo1=5.0,
                         max_games=20_000, in_flight=in_flight, rules=SHORT)
    wait_until("two pairs counted", lambda: organiser.get(t.test_id).test.progress.pairs >= 2,
               timeout=120)
    with pytest.raises(grpc.RpcError) as err:
        public.stub.StopTest(change_pb2.StopTestRequest(test_id=t.test_id), timeout=10)
    assert err.value.code() == Code.UNAUTHENTICATED
    stopped = _cli(stack, "test", "stop", f"{name}-stop", "--admin-token", admin_token)
    assert stopped.returncode == 0, stopped.stderr
    assert f"test {t.test_id} stopping: no new pair starts" in stopped.stdout
    # Boards started once the stop is asked; a step's pass that read the test before
    # may still start up to `in_flight` more, and no later pass starts any.
    started = len({m.match_id.rsplit("-", 1)[0] for m in public.games(t.test_id)})
    done = organiser.wait_over(t.test_id)
    p = done.progress
    assert done.status == change_pb2.TEST_STATUS_FINISHED, done.error
    assert p.outcome == change_pb2.TEST_OUTCOME_STOPPED
    assert p.verdict == change_pb2.TEST_VERDICT_PENDING and p.verdict_pairs == 0
    assert p.llr_lower < p.llr < p.llr_upper
    games = {m.match_id: public.match(m.match_id) for m in public.games(t.test_id)}
    assert 2 <= p.pairs <= started + in_flight and p.pairs_in_flight == 0
    assert len(games) == p.games == 2 * p.pairs  # every game started finished and counts
    assert done.games_total == p.games
    _check_pairs(done, public.get(t.test_id, pairs=True), games)
    with pytest.raises(grpc.RpcError) as err:
        organiser.stub.StopTest(change_pb2.StopTestRequest(test_id=t.test_id),
                                metadata=organiser.md, timeout=10)
    assert err.value.code() == Code.FAILED_PRECONDITION and "finished" in err.value.details()
    shown = _cli(stack, "test", "show", t.test_id)
    assert shown.returncode == 0 and "(stopped)" in shown.stdout.splitlines()[0]
    assert f"Verdict: none: stopped by the organiser after {p.pairs} counted pairs, before " \
        f"the LLR ({p.llr:.2f}) left ({p.llr_lower:.2f}, {p.llr_upper:.2f})" in shown.stdout


def _recount(r: redis.Redis, test_id: str) -> list[int]:
    """The nine bins from the stored results of every counted pair's two games."""
    from store import matches as store_matches

    bins = [0] * 9
    spec = ChangeSpec.from_json(store_changes.load_spec(r, test_id).plan)
    for p in store_changes.pairs(r, test_id):
        rows = store_matches.read_rows(r, [p["candidate_match_id"], p["baseline_match_id"]])
        c, b = rows[p["candidate_match_id"]], rows[p["baseline_match_id"]]
        hero, _ = seating(spec, p["board"])
        assert (c["bot_ids"][hero], b["bot_ids"][hero]) == (spec.candidate, spec.baseline)
        k = 4 + game_quarters(3, c["placement"], hero) - game_quarters(3, b["placement"], hero)
        assert k == p["eighths"]
        bins[k] += 1
    return bins


@pytest.mark.timeout(600)  # room for the wait below to say where a stuck test stands
def test_a_killed_worker_and_a_killed_step_change_nothing_counted(
        tmp_path: Path, admin_token: str) -> None:
    """A worker that kills itself in a step, after its writes and before its state is
    saved, and later a worker killed mid-game: the test ends with every game recorded
    once, every board's pair counted once, the counts the stored results give."""
    srv = RedisServer(tmp_path / "redis", appendonly=True).start()
    st = Stack(tmp_path, srv.url, admin_token=admin_token)
    r = redis.Redis.from_url(srv.url, decode_responses=True)
    try:
        st.referee()
        stepper = st.worker(MOONSHOT_FAILPOINTS="step.before-save@4=kill")
        client = Calls(st.address, admin_token)
        t = client.create(candidate="house:greedy", baseline="house:random",
                          fixed_games=16, in_flight=4, rules={"max_hands": "3"})
        wait_until("the worker to kill itself in a step", lambda: not stepper.alive(),
                   timeout=60)
        second = st.worker()

        def running() -> str | None:
            for m in client.games(t.test_id):
                if m.status == match_pb2.MATCH_STATUS_RUNNING and r.llen(
                        keys.match_log(m.match_id)) > 3:
                    return m.match_id
            return None

        victim = wait_until("a game under way on the second worker", running, timeout=90,
                            every=0.02)
        second.kill_tree()
        st.worker()
        try:  # a loaded machine is slow, not wrong: a stuck test says where it stands
            done = client.wait_over(t.test_id, timeout=480)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}: state {r.get(keys.tournament_state(t.test_id))}, "
                                 f"lock {r.pttl(keys.tournament_lock(t.test_id))} ms, dirty "
                                 f"{r.exists(keys.tournament_dirty(t.test_id))}, open "
                                 f"{sorted(r.smembers(keys.OPEN_MATCHES))}") from None
        assert done.status == change_pb2.TEST_STATUS_FINISHED, done.error
        p = done.progress
        assert (p.games, p.pairs) == (16, 8)
        recorded = r.zrange(keys.tournament_recorded(t.test_id), 0, -1)
        assert len(recorded) == len(set(recorded)) == 16
        assert sorted(recorded) == sorted(m.match_id for m in client.games(t.test_id))
        assert sorted(int(k) for k in r.hkeys(keys.test_pairs(t.test_id))) == list(range(8))
        bins = _recount(r, t.test_id)
        assert bins[::2] == list(p.pentanomial) and bins[1::2] == list(p.between)
        seen = [e for _, e in events.read_after(r, t.test_id, 0, count=10_000)]
        assert sorted(e.board for e in seen if e.TYPE == "pair_counted") == list(range(1, 9))
        assert int(r.hget(keys.match(victim), "runs") or 0) >= 2  # resumed after the kill
        assert r.zcard(keys.results("3p")) == 0
        client.close()
    finally:
        st.stop_all()
        srv.stop()


def _events(r: redis.Redis, test_id: str) -> list[Any]:
    return [e for _, e in events.read_after(r, test_id, 0, count=10_000)]


def test_a_baseline_never_run_holds_every_pair_until_it_runs(
        stack: Stack, organiser: Calls, public: Calls, r: redis.Redis, name: str,
        admin_token: str) -> None:
    """The issue's `moonshot test start my-low ghost`, ghost registered and never run:
    --require-online refuses (gRPC and CLI, nothing created); without it the CLI warns,
    no pair starts, GetTest and `moonshot test show` say whom the test waits for (past
    recovery's nudges); started, the bot is played and the test ends with no void pair."""
    ghost = f"{name}-ghost"
    _, token = register(stack.address, ghost)
    before = r.zcard(keys.TESTS)
    with pytest.raises(grpc.RpcError) as err:
        organiser.create(require_online=True, candidate="house:greedy", baseline=ghost,
                         fixed_games=4, rules=SHORT)
    assert err.value.code() == Code.FAILED_PRECONDITION
    assert f"not connected now: {ghost}" in err.value.details()
    refused = _cli(stack, "test", "start", "house:greedy", ghost, "--games", "4",
                   "--require-online", "--admin-token", admin_token)
    assert refused.returncode == 1 and f"not connected now: {ghost}" in refused.stderr
    assert r.zcard(keys.TESTS) == before
    made = _cli(stack, "test", "start", "house:greedy", ghost, "--games", "4",
                "--rule", "max_hands=2", "--in-flight", "2", "--admin-token", admin_token)
    assert made.returncode == 0, made.stderr
    assert f"warning: 1 bot not connected now: {ghost}: no pair starts until it is" \
        in made.stderr
    test_id = re.search(r"test (c-[0-9a-z]+) started", made.stdout).group(1)  # type: ignore[union-attr]
    wait_until("the test to say it waits", lambda: list(
        public.get(test_id).test.waiting_for) == [ghost], timeout=30)
    time.sleep(6.5)  # past a nudge of recovery (every 5 s): still no pair
    t = public.get(test_id).test
    assert public.games(test_id) == [] and t.progress.pairs_in_flight == 0
    assert t.status == change_pb2.TEST_STATUS_RUNNING and list(t.waiting_for) == [ghost]
    shown = _cli(stack, "test", "show", test_id)
    assert f"Waiting for {ghost}: not connected; no new pair starts" in shown.stdout
    stack.bot("greedy", stack.address, token)
    done = public.wait_over(test_id, timeout=120)
    p = done.progress
    assert done.status == change_pb2.TEST_STATUS_FINISHED, done.error
    assert p.outcome == change_pb2.TEST_OUTCOME_DONE and p.pairs == 2 and p.pairs_void == 0
    assert not done.waiting_for
    waits = [e.bot_ids for e in _events(r, test_id) if e.TYPE == "waiting_changed"]
    assert waits[0] and waits[-1] == []  # it waited for the ghost, then for nobody


def test_a_baseline_killed_mid_test_voids_its_pairs_and_stops_the_test(
        stack: Stack, organiser: Calls, public: Calls, r: redis.Redis, name: str,
        admin_token: str) -> None:
    """B (greedy, slower than C) is killed with pairs in flight: B forfeits each of its
    games in play after the 1 s grace; those pairs are void (shown with the reason, in no
    figure), no pair starts while B is away, and the threshold (here more than 5% void
    from 4 pairs on, or 3 in a row) stops the test with its own verdict, never H0 or H1.
    GetTest, WatchTest's events, the CLI and the page say who forfeited how many and why;
    every void pair's board is public."""
    b_id, b_token = register(stack.address, f"{name}-low")
    web = stack.start("web", moonshot("web", "--server", stack.address, "--listen",
                                      "127.0.0.1:0"))
    base = web.wait_for(r"(http://127\.0\.0\.1:\d+)", timeout=30).group(1)
    slow = stack.bot("netbots:ThinkingBot", stack.address, b_token)
    t = organiser.create(candidate="house:greedy", baseline=b_id, fixed_games=200,
                         in_flight=4, void_share_after=4, rules=SHORT,
                         faults=game_pb2.FaultPolicy(max_strikes=3, disconnect_grace_ms=1000))
    wait_until("two pairs counted", lambda: organiser.get(t.test_id).test.progress.pairs >= 2,
               timeout=120, every=0.2)
    slow.kill()
    done = organiser.wait_over(t.test_id, timeout=120)
    p = done.progress
    reason = "disconnected for more than 1 s"
    assert done.status == change_pb2.TEST_STATUS_FINISHED, done.error
    assert p.verdict == change_pb2.TEST_VERDICT_FORFEITS
    assert p.outcome == change_pb2.TEST_OUTCOME_FORFEITS
    assert p.verdict_side == change_pb2.TEST_SIDE_BASELINE
    assert re.fullmatch(rf"the baseline forfeited (3 pairs in a row|\d+ of \d+ pairs): {reason}",
                        p.verdict_reason), p.verdict_reason
    assert p.pairs >= 2 and p.pairs_void >= 1 and p.pairs_in_flight == 0
    assert [(v.side, v.reason, v.pairs) for v in p.voids] == [
        (change_pb2.TEST_SIDE_BASELINE, reason, p.pairs_void)]
    got = public.get(t.test_id, pairs=True)
    assert [x.board for x in got.pairs] == list(range(1, p.pairs + p.pairs_void + 1))
    assert done.games_total == 2 * len(got.pairs)  # no pair started after the stop
    bins = [0] * 9
    for x in got.pairs:
        c, b = public.match(x.candidate_match_id), public.match(x.baseline_match_id)
        assert c.seed and c.seed == b.seed  # released: public, void or not
        if x.voids:
            assert [(v.side, v.reason, v.match_id) for v in x.voids] == [
                (change_pb2.TEST_SIDE_BASELINE, reason, x.baseline_match_id)]
            assert b.result.end == "forfeit" and b.result.forfeit.reason == reason
            continue
        assert x.eighths == _pair_eighths(done, c, b)
        bins[x.eighths] += 1
    assert list(p.pentanomial) == bins[::2] and list(p.between) == bins[1::2]
    assert sum(bins) == p.pairs
    est = estimate(bins, 3)
    assert (p.elo, p.elo_low, p.elo_high) == pytest.approx((est.elo, est.low, est.high))
    seen = _events(r, t.test_id)
    assert len([e for e in seen if e.TYPE == "pair_voided"]) == p.pairs_void
    assert len([e for e in seen if e.TYPE == "pair_counted"]) == p.pairs
    shown = _cli(stack, "test", "show", t.test_id, "--pairs")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "(stopped)" in out.splitlines()[0]
    assert f"Verdict: stopped: {p.verdict_reason}; neither H0 nor H1" in out
    assert f"Void pairs: {p.pairs_void} (baseline: {p.pairs_void} {reason})" in out
    assert len([ln for ln in out.splitlines() if f"(void: baseline: {reason})" in ln]) == \
        p.pairs_void
    status, page = _http(f"{base}/test/{t.test_id}")
    assert status == 200 and f"Stopped: {p.verdict_reason}" in page
    assert page.count('class="void"') == p.pairs_void
