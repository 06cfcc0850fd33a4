"""An author's tests sharing the stack, on real processes (a referee, workers, bot
processes): an author limited to N pairs in flight never has more over all their tests,
GetTest says what holds a test back, and the house bots' CPU the tests cost shows in
WhoAmI's use.

No timing is asserted here: how fast the share rebalances is bench/share.py's."""

from __future__ import annotations

import subprocess
import threading
import uuid
from collections.abc import Iterator

import grpc
import pytest
import redis
from stack import Stack, env, moonshot
from support import wait_until

from clients.sdk import register
from proto.moon.v1 import account_pb2, account_pb2_grpc, change_pb2, change_pb2_grpc
from store import changes as store_changes
from store import keys

LIMIT = 2


class Author:
    """An author's calls: signed up on the stack, limited by the admin."""

    def __init__(self, address: str, admin_token: str, name: str) -> None:
        self.channel = grpc.insecure_channel(address)
        self.accounts = account_pb2_grpc.AccountServiceStub(self.channel)
        self.tests = change_pb2_grpc.TestServiceStub(self.channel)
        made = self.accounts.SignUp(account_pb2.SignUpRequest(name=name), timeout=30)
        self.name = name
        self.author_id, self.token = made.author.author_id, made.token
        self.md = (("authorization", f"Bearer {self.token}"),)
        self.accounts.SetLimits(account_pb2.SetLimitsRequest(
            author=self.author_id, limits=account_pb2.Limits(
                tests=3, pairs=LIMIT, house_cpu_s=3600.0)),
            metadata=(("authorization", f"Bearer {admin_token}"),), timeout=30)

    def create(self, **spec: object) -> change_pb2.Test:
        return self.tests.CreateTest(change_pb2.CreateTestRequest(
            spec=change_pb2.TestSpec(**spec)), metadata=self.md, timeout=30).test  # type: ignore[arg-type]

    def get(self, test_id: str) -> change_pb2.Test:
        return self.tests.GetTest(change_pb2.GetTestRequest(test_id=test_id),
                                  metadata=self.md, timeout=30).test

    def whoami(self) -> account_pb2.WhoAmIResponse:
        return self.accounts.WhoAmI(account_pb2.WhoAmIRequest(), metadata=self.md, timeout=30)


@pytest.fixture
def author(stack: Stack, admin_token: str) -> Iterator[Author]:
    a = Author(stack.address, admin_token, f"share{uuid.uuid4().hex[:8]}")
    yield a
    a.channel.close()


def test_an_author_limited_to_n_pairs_never_has_more_in_flight_and_pays_house_cpu(
        stack: Stack, author: Author, r: redis.Redis, name: str) -> None:
    """Two tests of one author, each asking for 4 pairs in flight, under a limit of 2 over
    both: sampled all along, the author's pairs in flight never pass 2; each test reaches its
    games; the first says the limit holds it; the house opponents' CPU is the author's."""
    bots = {}
    for role in ("c", "b"):
        bot_id, token = register(stack.address, f"{name}-{role}", author.token)
        bots[role] = bot_id
        stack.bot("greedy", stack.address, token)
    seen: list[int] = []
    stop = threading.Event()

    def sample() -> None:  # the author's pairs in play, as often as Redis answers
        while not stop.is_set():
            # The games of the author's tests open at one instant (one read), less those
            # finished by the next read: games queued or in play at that instant, or fewer,
            # never more. Their boards are the pairs in flight.
            tests = store_changes.running_of(r, author.author_id)
            mids = [str(m) for m in r.smembers(keys.OPEN_MATCHES)
                    if str(m).split("-p")[0] in tests]
            pipe = r.pipeline(transaction=False)
            for m in mids:
                pipe.hget(keys.match(m), "status")
            seen.append(len({m.rsplit("-", 1)[0] for m, status in zip(
                mids, pipe.execute(), strict=True) if status != "finished"}))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        made = [author.create(name=f"{name}-{k}", candidate=bots["c"], baseline=bots["b"],
                              opponents=["house:greedy", "house:random"], fixed_games=12,
                              in_flight=4, rules={"max_hands": "2"}) for k in range(2)]
        held = wait_until("the first step", lambda: author.get(made[0].test_id).held)
        assert held == f"{author.name}'s limit: {LIMIT} pairs in flight over all their tests"
        ended = [wait_until(f"test {t.test_id} to end", lambda t=t: _over(author, t.test_id),
                            timeout=240) for t in made]
    finally:
        stop.set()
        sampler.join(10)
    assert all(t.status == change_pb2.TEST_STATUS_FINISHED for t in ended)
    assert all(t.progress.games == 12 for t in ended)
    assert len(seen) > 20 and max(seen) <= LIMIT, max(seen)
    assert max(seen) == LIMIT  # the limit was used, not merely never reached
    use = author.whoami().usage
    assert use.house_cpu_s > 0.0
    assert use.tests == 0 and use.pairs == 0


def _over(author: Author, test_id: str) -> change_pb2.Test | None:
    t = author.get(test_id)
    return t if t.status != change_pb2.TEST_STATUS_RUNNING else None


def test_the_admin_sets_the_slots_tests_share_and_sees_the_workers(
        stack: Stack, admin_token: str, author: Author) -> None:
    """`moonshot admin limits --test-slots N` sets the stack's slots for tests; 0 goes back
    to what the live workers host (the session's two workers, 100 threads each)."""
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(moonshot("admin", "limits", *args, "--server", stack.address,
                                       "--admin-token", admin_token), env=env(),
                              capture_output=True, text=True, timeout=60, check=False)

    try:
        got = cli("--test-slots", "40")
        assert got.returncode == 0, got.stderr
        assert "game slots all tests share, round robin between the authors testing: 40 " \
            "(the admin's setting)" in got.stdout
    finally:
        got = cli("--test-slots", "0")
    assert got.returncode == 0, got.stderr
    assert "testing: 200 (what the live workers host)" in got.stdout
    refused = cli(author.name, "--test-slots", "40")
    assert refused.returncode != 0 and "without an author" in refused.stderr
    with pytest.raises(grpc.RpcError) as bad:
        author.accounts.SetLimits(account_pb2.SetLimitsRequest(test_slots=1), metadata=(
            ("authorization", f"Bearer {admin_token}"),), timeout=30)
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "test_slots: 1 is not between 2" in str(bad.value.details())
