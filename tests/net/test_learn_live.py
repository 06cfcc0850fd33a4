"""OpenSpiel's ISMCTS as a bot process on the real stack: registered, run through the SDK
(`moonshot bot run --bot learnbots:SmallIsmcts`, a `learn.runner.IsmctsPlayer`), and
tested as a change against `house:greedy` until the test reaches its verdict."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from stack import Stack
from support import wait_until

from clients.sdk import register
from proto.moon.v1 import change_pb2, change_pb2_grpc, match_pb2, match_pb2_grpc


@pytest.fixture
def channel(stack: Stack) -> Iterator[grpc.Channel]:
    ch = grpc.insecure_channel(stack.address)
    yield ch
    ch.close()


def test_openspiel_ismcts_against_greedy_reaches_a_verdict(
        stack: Stack, name: str, channel: grpc.Channel, admin_token: str) -> None:
    tests = change_pb2_grpc.TestServiceStub(channel)
    matches = match_pb2_grpc.MatchServiceStub(channel)
    md = (("authorization", f"Bearer {admin_token}"),)
    bot_id, token = register(stack.address, f"{name}-ismcts")
    proc = stack.bot("learnbots:SmallIsmcts", stack.address, token)
    # Wide hypotheses and loose error rates: a verdict in a few dozen short games.
    spec = change_pb2.TestSpec(candidate=bot_id, baseline="house:greedy", elo0=0.0,
                               elo1=600.0, alpha=0.2, beta=0.2, max_games=200, in_flight=4,
                               rules={"max_hands": "2"})
    t = tests.CreateTest(change_pb2.CreateTestRequest(spec=spec), metadata=md,
                         timeout=30).test

    def over() -> change_pb2.Test | None:
        got = tests.GetTest(change_pb2.GetTestRequest(test_id=t.test_id), metadata=md,
                            timeout=30).test
        return got if got.status != change_pb2.TEST_STATUS_RUNNING else None

    done = wait_until(f"test {t.test_id} to end", over, timeout=240, every=0.5)
    p = done.progress
    assert done.status == change_pb2.TEST_STATUS_FINISHED, done.error
    assert p.verdict in (change_pb2.TEST_VERDICT_H0, change_pb2.TEST_VERDICT_H1), p
    assert p.verdict_pairs >= 1 and p.pairs_void == 0
    # The candidate's games were played by the ISMCTS process, legally: no forfeit.
    games = matches.ListMatches(match_pb2.ListMatchesRequest(test_id=t.test_id, page_size=1000),
                                metadata=md, timeout=30).matches
    mine = [m for m in games if bot_id in m.bot_ids]
    assert len(mine) >= p.pairs
    for m in mine:
        full = matches.GetMatch(match_pb2.GetMatchRequest(match_id=m.match_id), metadata=md,
                                timeout=30).match
        assert full.status == match_pb2.MATCH_STATUS_FINISHED
        assert not full.result.HasField("forfeit"), full.result
    assert proc.alive()
    assert "Traceback" not in proc.text()
