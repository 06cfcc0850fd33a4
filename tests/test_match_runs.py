"""Every write of a match run is fenced by its lease (a real Redis, no worker): a run that
lost the lease writes nothing, not its start, not a bot's notice, not its result, not
an error; and a run that fails while it holds the lease notes why on the match."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from clients.redisproc import RedisServer
from store import bots, keys, messages
from store import matches as store_matches
from store.records import MatchSpec
from store.runs import LostLease, Run
from workers.match import MatchHost

BOTS = ("b-00000000000a", "b-00000000000b", "b-00000000000c")


@pytest.fixture
def r(tmp_path: Path) -> Iterator[redis.Redis]:
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        yield bots.connect(srv.url)


def _match(r: redis.Redis, match_id: str = "m-000000000001") -> MatchSpec:
    spec = MatchSpec.build(match_id=match_id, players=3, bot_ids=BOTS,
                           seat_names=["a", "b", "c"], seed=1)
    store_matches.create_match(r, spec)
    return spec


def _untouched(r: redis.Redis, spec: MatchSpec) -> None:
    mid = spec.match_id
    assert r.hget(keys.match(mid), "status") == "queued"
    assert not r.hexists(keys.match(mid), "started_at")
    assert not r.hexists(keys.match(mid), "runs")
    assert not r.hexists(keys.match(mid), "error")
    assert not r.exists(keys.result(mid), keys.match_log(mid), keys.conn(mid))
    for b in BOTS:
        assert not r.exists(keys.inbox(b), keys.bot_live(b), keys.pending(b))


def test_a_run_without_the_lease_writes_nothing(r: redis.Redis) -> None:
    spec = _match(r)
    stale = Run(r, spec.match_id, "stale-run")
    r.set(keys.lease(spec.match_id), "the-run-that-took-over", px=60_000)
    started = [messages.MatchStarted(spec.match_id, s, 3, {}, ["a", "b", "c"])
               for s in range(3)]
    ended = [messages.MatchEnded(spec.match_id, s, {"end": "normal"}) for s in range(3)]
    request = messages.DecisionRequest(f"{spec.match_id}/0", spec.match_id, 0, {}, [1],
                                       1000, 0, 0, 0)
    writes = [
        lambda: stale.begin(spec.bot_ids, started, 1.0),
        lambda: stale.send(BOTS[0], None, request, messages.encode(request)),
        lambda: stale.withdraw(BOTS[0], request.request_id),
        lambda: stale.pause(BOTS[0], request),
        lambda: stale.tell(BOTS[0], messages.DecisionRejected(
            request.request_id, spec.match_id, "late", "too late", 1, 1)),
        lambda: stale.connection(messages.ConnectionEntry(0, "disconnected", 0, 1)),
        lambda: stale.write(["{}"], '{"result":{}}', spec.bot_ids, ended),
        lambda: stale.fail("RuntimeError: boom"),
    ]
    for write in writes:
        with pytest.raises(LostLease):
            write()
    _untouched(r, spec)
    assert r.get(keys.lease(spec.match_id)) == "the-run-that-took-over"


def test_a_run_that_fails_holding_the_lease_notes_the_error_on_the_match(
        r: redis.Redis) -> None:
    spec = _match(r)
    r.rpush(keys.match_log(spec.match_id), "not json")  # the log cannot be replayed
    host = MatchHost(r, spec.match_id, "run-1")
    with pytest.raises(messages.MessageError):
        host.host()
    assert "MessageError" in str(r.hget(keys.match(spec.match_id), "error"))
    assert r.hget(keys.match(spec.match_id), "runs") == "1"
    assert not r.exists(keys.lease(spec.match_id))  # and the lease is let go
    # Each seat's bot heard the run start, and the match is under way for it.
    for seat, b in enumerate(BOTS):
        [(_, entry)] = r.xrange(keys.inbox(b))
        started = messages.decode_as(entry["e"], messages.BOT, messages.MatchStarted)
        assert (started.match_id, started.seat) == (spec.match_id, seat)
        assert r.smembers(keys.bot_live(b)) == {spec.match_id}
