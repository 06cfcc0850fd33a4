"""Reading across Redis and the archive while games move, with hostile input, on a real
referee process: page tokens that outlive the game they point at, tokens and times
out of range, a referee in another time zone, and an archive that is away."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import redis
from google.protobuf.timestamp_pb2 import Timestamp
from stack import Stack, moonshot

from archive import mover
from archive.db import Archive, open_archive
from clients.redisproc import RedisServer
from proto.moon.v1 import match_pb2, match_pb2_grpc, rating_pb2, rating_pb2_grpc
from store import archiving, bots, ids
from store import matches as store_matches
from store.records import MatchSpec
from workers.match import MatchHost
from workers.queues import rq_connection


def _play(r: redis.Redis, rq: redis.Redis, seed: int) -> str:
    seats = ["house:greedy", "house:random", "house:greedy"]
    spec = MatchSpec.build(ids.new_match_id(), 3, seats, seats, seed=seed,
                           rules={"max_hands": "1"})
    store_matches.create_match(r, spec)
    MatchHost(r, spec.match_id, "run-1", rq_conn=rq).host()
    return spec.match_id


def _move(r: redis.Redis, arc: Archive, match_ids: list[str]) -> None:
    """What the archiving job does, for these games."""
    leaving, gone = archiving.read(r, match_ids)
    mover.write(arc, leaving)
    archiving.drop(r, leaving, gone)


def _referee(st: Stack, archive: str, **env: str) -> match_pb2_grpc.MatchServiceStub:
    p = st.start("referee", moonshot("referee", "--listen", "127.0.0.1:0", "--redis",
                                     st.redis_url, "--archive", archive), **env)
    port = p.wait_for(r"referee listening on 127\.0\.0\.1:(\d+)").group(1)
    st.address = f"127.0.0.1:{port}"
    return match_pb2_grpc.MatchServiceStub(grpc.insecure_channel(st.address))


@pytest.fixture
def world(tmp_path: Path, admin_token: str
          ) -> Iterator[tuple[Stack, redis.Redis, redis.Redis, str]]:
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        st = Stack(tmp_path, srv.url, admin_token=admin_token)
        r, rq = bots.connect(srv.url), rq_connection(srv.url)
        try:
            yield st, r, rq, f"sqlite:///{tmp_path / 'archive.sqlite3'}"
        finally:
            st.stop_all()
            r.close()


def _bad(call: object, *args: object) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as err:
        call(*args, timeout=30)  # type: ignore[operator]
    return err.value


def test_listings_page_on_while_games_move_and_refuse_what_is_out_of_range(
        world: tuple[Stack, redis.Redis, redis.Redis, str]) -> None:
    st, r, rq, url = world
    arc = open_archive(url)
    with contextlib.closing(arc):
        played = [_play(r, rq, seed) for seed in range(1, 9)]
        _move(r, arc, played[:3])
        # A referee whose clock reads another zone: times in requests are UTC all the same.
        stub = _referee(st, url, TZ="America/New_York")
        first = stub.ListMatches(match_pb2.ListMatchesRequest(page_size=2), timeout=30)
        assert [m.match_id for m in first.matches] == played[::-1][:2]
        # The games the token points at, and every other game left in Redis, move now.
        _move(r, arc, played[3:])
        seen = [m.match_id for m in first.matches]
        token = first.next_page_token
        while token:
            page = stub.ListMatches(match_pb2.ListMatchesRequest(
                page_size=2, page_token=token), timeout=30)
            seen += [m.match_id for m in page.matches]
            token = page.next_page_token
        assert set(seen) == set(played)  # none missed (a game may show twice: it moved)
        # Tokens: the archive part's out of range, and a Redis token's score.
        for token in ("a:0", "a:-1", "a:9223372036854775808", "a:9999999999999999999",
                      "a:1e5", f"{played[0]}@nan", f"{played[0]}@inf", "m-nothere"):
            err = _bad(stub.ListMatches, match_pb2.ListMatchesRequest(page_token=token))
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (token, err.details())
        # Times: out of a Timestamp's range is refused; in range, a UTC instant.
        for secs, nanos in ((-62_135_596_801, 0), (253_402_300_800, 0), (0, 2_000_000_000)):
            req = match_pb2.ListMatchesRequest()
            req.finished_after.seconds, req.finished_after.nanos = secs, nanos
            err = _bad(stub.ListMatches, req)
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (secs, err.details())
        newest = max(arc_game_finished(arc, m) for m in played)
        after = Timestamp()
        after.FromNanoseconds(int(newest * 1e9))
        got = stub.ListMatches(match_pb2.ListMatchesRequest(finished_after=after), timeout=30)
        assert [m.match_id for m in got.matches] == [
            m for m in played if arc_game_finished(arc, m) >= newest][::-1][:1]
        ancient = Timestamp(seconds=-62_135_596_800)
        assert len(stub.ListMatches(match_pb2.ListMatchesRequest(
            finished_after=ancient), timeout=30).matches) == len(played)


def arc_game_finished(arc: Archive, match_id: str) -> float:
    from archive import reads

    g = reads.game(arc, match_id)
    assert g is not None and g.finished_at is not None
    return float(g.finished_at)


def test_with_the_archive_away_what_redis_holds_still_answers(
        world: tuple[Stack, redis.Redis, redis.Redis, str], tmp_path: Path) -> None:
    st, r, rq, _ = world
    played = [_play(r, rq, seed) for seed in (1, 2)]
    away = f"sqlite:///{tmp_path / 'no-such-folder' / 'archive.sqlite3'}"
    stub = _referee(st, away)
    listed = stub.ListMatches(match_pb2.ListMatchesRequest(page_size=10), timeout=30)
    assert [m.match_id for m in listed.matches] == played[::-1]
    assert listed.next_page_token.startswith("a:")  # the archive's part, when it is back
    err = _bad(stub.ListMatches, match_pb2.ListMatchesRequest(page_token=listed.next_page_token))
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    got = stub.GetMatch(match_pb2.GetMatchRequest(match_id=played[0]), timeout=30)
    assert got.match.status == match_pb2.MATCH_STATUS_FINISHED
    ratings = rating_pb2_grpc.RatingServiceStub(grpc.insecure_channel(st.address))
    for _ in range(3):
        assert ratings.GetRatings(rating_pb2.GetRatingsRequest(
            pool=rating_pb2.RATING_POOL_THREE_PLAYER), timeout=30).games == len(played)
