"""House bots on the real stack: the stack's own players, named wherever a bot id is, run
by the workers in processes of their own, deterministic enough to resume a killed game
to the very same moves, and no drag on the other matches a worker hosts."""

from __future__ import annotations

import contextlib
import statistics
from pathlib import Path

import grpc
import pytest
import redis
from stack import Stack
from support import PoolBot, finished, match_log, transcript_of, wait_until

from clients.admin import Admin
from clients.redisproc import RedisServer
from clients.sdk import register
from moon.transcript import actions_of
from proto.moon.v1 import bot_pb2, bot_pb2_grpc, match_pb2
from store import keys

SHORT = {"max_hands": "3"}
PIMC = "house:pimc?samples=24"


def test_house_bots_play_anywhere_a_bot_id_goes(stack: Stack, admin: Admin,
                                                pool: dict[str, PoolBot]) -> None:
    """A house bot is named by its id, canonicalised; it may hold several seats of one game
    (both of a 2v2 team, or on both teams); it plays against remote bots; GetBot says it is
    a house bot, always there; the transcript is the usual one."""
    m = admin.create_match(3, ["house:greedy", "house:greedy", pool["greedy1"].bot_id],
                           seed=11, rules=SHORT)
    done = finished(admin, m.match_id)
    assert list(done.bot_ids)[:2] == ["house:greedy", "house:greedy"]
    record = transcript_of(done)
    assert record["seats"][:2] == ["house:greedy", "house:greedy"]
    four = admin.create_match(4, ["house:random", PIMC, "house:random", PIMC], seed=12,
                              rules=SHORT)
    canonical = four.bot_ids[1]
    assert canonical.startswith("house:pimc?") and "samples=24" in canonical
    transcript_of(finished(admin, four.match_id, timeout=120))
    with grpc.insecure_channel(stack.address) as ch:
        stub = bot_pb2_grpc.BotServiceStub(ch)
        got = stub.GetBot(bot_pb2.GetBotRequest(bot_id="house:pimc?samples=24"), timeout=10).bot
        assert (got.bot_id, got.house, got.connected) == (canonical, True, True)
        assert not stub.GetBot(bot_pb2.GetBotRequest(bot_id=pool["greedy1"].bot_id),
                               timeout=10).bot.house


def test_bad_house_bot_ids_and_names_are_refused(stack: Stack, admin: Admin,
                                                 pool: dict[str, PoolBot]) -> None:
    """An unknown house bot, an unknown option, a value out of range: INVALID_ARGUMENT
    naming it, nothing created; nobody registers a bot named `house:...`."""
    cases = {"house:nope": "nope", "house:pimc?depth=3": "depth",
             "house:pimc?samples=0": "samples", "house:pimc?samples=x": "samples"}
    for bad, named in cases.items():
        with pytest.raises(grpc.RpcError) as err:
            admin.create_match(3, [bad, pool["greedy1"].bot_id, pool["greedy2"].bot_id])
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, bad
        assert "bot_ids[0]" in err.value.details() and named in err.value.details(), \
            err.value.details()
    with pytest.raises(grpc.RpcError) as err:
        register(stack.address, "house:mine")
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "house:" in err.value.details()


def _all_house(admin: Admin, seed: int) -> str:
    return admin.create_match(3, [PIMC, "house:greedy", PIMC], seed=seed,
                              rules={"max_hands": "4"}).match_id


def test_a_house_game_resumes_to_the_same_moves_after_a_kill(tmp_path: Path,
                                                             admin_token: str) -> None:
    """Two matches of the same house bots on one seed: one played through, the other's
    worker killed mid-game and a new worker started. Both end with the same actions."""
    with RedisServer(tmp_path / "redis", appendonly=True) as srv:
        st = Stack(tmp_path, srv.url, admin_token=admin_token)
        r = redis.Redis.from_url(srv.url, decode_responses=True)
        try:
            st.referee()
            worker = st.worker()
            admin = Admin(st.address, admin_token)
            with contextlib.closing(admin):
                whole = finished(admin, _all_house(admin, 5), timeout=180)
                mid = _all_house(admin, 5)
                wait_until("the game under way", lambda: len(match_log(r, mid)) >= 12,
                           timeout=120, every=0.02)
                worker.kill_tree()
                at_kill = match_log(r, mid)
                st.worker()
                again = finished(admin, mid, timeout=180)
                assert r.hget(keys.match(mid), "runs") == "2"
                assert match_log(r, mid)[: len(at_kill)] == at_kill
                assert actions_of(transcript_of(again)) == actions_of(transcript_of(whole))
        finally:
            st.stop_all()
            r.close()


def _round_trips(r: redis.Redis, mid: str) -> list[float]:
    """The referee-clock round trips (us) of every decision the match's bots made."""
    return [e["us"] for e in match_log(r, mid) if "us" in e and e.get("by") == "bot"]


def test_a_search_bot_thinking_does_not_delay_another_match(tmp_path: Path,
                                                           admin_token: str) -> None:
    """One worker hosts a match of three remote bots; its decisions' round trips, on the
    referee's clock, are taken while the worker hosts nothing else, then while it also hosts
    two matches of searching house bots that keep every house process busy. The search
    runs in processes of its own at a lower priority: the remote match's median round trip
    stays within a bound of what it was alone."""
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        st = Stack(tmp_path, srv.url, admin_token=admin_token)
        r = redis.Redis.from_url(srv.url, decode_responses=True)
        try:
            st.referee()
            st.worker()
            regs = [register(st.address, f"quick{i}") for i in range(3)]
            st.bots([("greedy", token) for _, token in regs])
            admin = Admin(st.address, admin_token)
            with contextlib.closing(admin):
                def remote(seed: int) -> str:
                    return admin.create_match(3, [b for b, _ in regs], seed=seed,
                                              rules={"max_hands": "30"}).match_id
                alone = remote(1)
                finished(admin, alone, timeout=180)
                heavy = [admin.create_match(3, ["house:pimc?samples=128"] * 3, seed=s,
                                            rules={"max_hands": "40"}).match_id
                         for s in (2, 3)]
                wait_until("the search under way", lambda: all(
                    len(match_log(r, m)) >= 3 for m in heavy), timeout=120)
                busy = remote(1)
                finished(admin, busy, timeout=300)
                still = [m for m in heavy if admin.get_match(m).status
                         != match_pb2.MATCH_STATUS_FINISHED]
                assert still, "the search ended before the other match: nothing measured"
        finally:
            st.stop_all()
        base = statistics.median(_round_trips(r, alone))
        loaded = statistics.median(_round_trips(r, busy))
        r.close()
        print(f"\nround trip p50 alone {base:.0f} us, beside the search {loaded:.0f} us")
        # Searching on the match threads instead (one GIL) made it 4x here.
        assert loaded <= 2 * base + 1000, (base, loaded)


def test_house_bots_are_marked_on_the_pages_and_rated(stack: Stack, admin: Admin,
                                                      pool: dict[str, PoolBot]) -> None:
    """A house bot's games are rated like any bot's; its page, the ratings and the game
    pages name it with a house mark; its id, with its options, is one link."""
    import urllib.parse
    import urllib.request

    from stack import moonshot
    from support import wait_until as until

    from proto.moon.v1 import rating_pb2

    m = admin.create_match(3, [PIMC, pool["greedy2"].bot_id, pool["random2"].bot_id],
                           seed=21, rules=SHORT)
    done = finished(admin, m.match_id, timeout=120)
    canonical = done.bot_ids[0]
    rated = until("the house bot rated", lambda: next(
        (x for x in admin.ratings.GetRatings(rating_pb2.GetRatingsRequest(
            pool=rating_pb2.RATING_POOL_THREE_PLAYER), timeout=10).ratings
         if x.bot_id == canonical), None), timeout=60)
    assert rated.games >= 1
    web = stack.start("web-house", moonshot("web", "--server", stack.address,
                                            "--listen", "127.0.0.1:0"))
    try:
        url = web.wait_for(r"web pages on (http://\S+)", timeout=30).group(1)
        link = f"/bot/{urllib.parse.quote(canonical, safe='')}"
        for path in (link, "/ratings/3p", f"/game/{m.match_id}"):
            with urllib.request.urlopen(url + path, timeout=30) as resp:
                html = resp.read().decode()
            assert resp.status == 200, path
            assert 'class="badge house"' in html, path
            assert f'href="{link}"' in html or path == link, path
    finally:
        web.stop()
