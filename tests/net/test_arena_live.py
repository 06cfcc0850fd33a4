"""The arena end to end on real processes: 8 remote bots and 2 house anchors playing over
gRPC, bots joining and leaving, a worker and a referee killed once each; every game
recorded once, no bot dealt a board twice, nothing of a board public before all its
tables finished, the leaderboard served with intervals, the page live in Chromium, and
bad input refused over gRPC and the CLI with nothing changed.

It runs its own Redis and stack (nothing else consumes its queues), games of one hand
(`max_hands=1`), about two minutes in all.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
from stack import Proc, Stack, env, moonshot
from support import wait_until
from test_web_pages import CHROMIUM, CHROMIUM_ARGS, Tab, _start_web

from clients.admin import Admin
from clients.redisproc import RedisServer, free_port
from clients.sdk import register
from proto.moon.v1 import arena_pb2, arena_pb2_grpc, match_pb2, match_pb2_grpc, rating_pb2
from store import deals, keys, steps
from store.refs import EventRef
from workers.arena import game_id

POOL = rating_pb2.RATING_POOL_THREE_PLAYER


@pytest.fixture
def own(tmp_path: Path, admin_token: str) -> Iterator[tuple[Stack, redis.Redis, RedisServer]]:
    srv = RedisServer(tmp_path / "redis", appendonly=True).start()
    st = Stack(tmp_path, srv.url, admin_token=admin_token)
    r = redis.Redis.from_url(srv.url, decode_responses=True)
    try:
        yield st, r, srv
    finally:
        st.stop_all()
        srv.stop()
        r.close()


def _cli(st: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*moonshot(*args), "--server", st.address], check=False,
                          capture_output=True,
                          text=True, env=env(MOONSHOT_ADMIN_TOKEN=st.admin_token),
                          cwd=st.workdir, timeout=60)


def _arena(stub: arena_pb2_grpc.ArenaServiceStub) -> arena_pb2.Arena:
    return stub.GetArena(arena_pb2.GetArenaRequest(pool=POOL), timeout=10).arena


def _code(call: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code(), info.value.details()


def _bad_input(st: Stack, stub: arena_pb2_grpc.ArenaServiceStub, admin: Admin,
               bot_token: str) -> None:
    """One clear error each, nothing changed."""
    before = _arena(stub)
    admin_md = admin.metadata
    bot_md = (("authorization", f"Bearer {bot_token}"),)
    code, text = _code(lambda: stub.JoinArena(arena_pb2.JoinArenaRequest(
        pool=rating_pb2.RATING_POOL_TWO_VS_TWO), metadata=bot_md, timeout=10))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "no 2v2 arena is running" in text
    code, text = _code(lambda: stub.StartArena(arena_pb2.StartArenaRequest(
        pool=POOL), metadata=admin_md, timeout=10))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "running already" in text
    code, text = _code(lambda: stub.StartArena(arena_pb2.StartArenaRequest(
        pool=rating_pb2.RATING_POOL_TWO_VS_TWO,
        settings=arena_pb2.ArenaSettings(concurrency=0)), metadata=admin_md, timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "concurrency" in text
    code, text = _code(lambda: stub.StartArena(arena_pb2.StartArenaRequest(
        pool=rating_pb2.RATING_POOL_TWO_VS_TWO,
        settings=arena_pb2.ArenaSettings(anchors=["b-1234"])), metadata=admin_md, timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "not a house bot" in text
    code, text = _code(lambda: stub.JoinArena(arena_pb2.JoinArenaRequest(pool=9),
                                              metadata=bot_md, timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "pool" in text
    code, _ = _code(lambda: stub.StopArena(arena_pb2.StopArenaRequest(pool=POOL),
                                           metadata=bot_md, timeout=10))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    code, _ = _code(lambda: stub.JoinArena(arena_pb2.JoinArenaRequest(pool=POOL),
                                           timeout=10))
    assert code == grpc.StatusCode.UNAUTHENTICATED
    code, _ = _code(lambda: stub.GetArena(arena_pb2.GetArenaRequest(
        pool=rating_pb2.RATING_POOL_TWO_VS_TWO), timeout=10))
    assert code == grpc.StatusCode.NOT_FOUND
    # The CLI: one line each, and the same nothing-changed.
    res = _cli(st, "arena", "start", "--pool", "3p")
    assert res.returncode == 1 and res.stderr.count("\n") == 1, res.stderr
    assert "running already" in res.stderr
    res = _cli(st, "arena", "start", "--pool", "2v2", "--concurrency", "0")
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    res = _cli(st, "arena", "start", "--pool", "2v2", "--anchor", "house:nobody")
    assert res.returncode == 1 and "unknown house bot" in res.stderr, res.stderr
    res = subprocess.run(moonshot("bot", "run", "--bot", "random", "--server", st.address,
                                  "--token", bot_token, "--arena", "2v2"),
                         check=False, capture_output=True, text=True, env=env(), timeout=60)
    assert res.returncode == 1 and "no 2v2 arena is running" in res.stderr, res.stderr
    after = _arena(stub)
    assert after.settings == before.settings and after.started_at == before.started_at
    assert _code(lambda: _arena_of(stub, rating_pb2.RATING_POOL_TWO_VS_TWO))[0] == \
        grpc.StatusCode.NOT_FOUND


def _arena_of(stub: arena_pb2_grpc.ArenaServiceStub, pool: int) -> arena_pb2.Arena:
    return stub.GetArena(arena_pb2.GetArenaRequest(pool=pool), timeout=10).arena


def _page_is_live(st: Stack, url: str, bot_id: str) -> None:
    """The page in Chromium, desktop and phone: the leaderboard, the bots, updates
    arriving without a reload; the front page links to it. A bot's page lists its arena
    games (linked to the arena) and draws its rating over time."""
    from playwright.sync_api import sync_playwright

    assert os.path.exists(CHROMIUM), "needs Debian's Chromium (scripts/test.sh installs it)"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=CHROMIUM_ARGS)
        try:
            for phone in (False, True):
                tab = Tab(browser, url, phone=phone)
                tab.open("/")
                assert tab.page.locator('a[href="/arena/3p"]').count() >= 1
                tab.open("/arena/3p")
                assert tab.page.locator("#a-leaderboard").inner_text()
                wait_until("the page goes live", lambda t=tab: t.page.locator(
                    "#live").inner_text().lower() == "live" or None, timeout=20)
                if not phone:  # games go on: the parts are redrawn without a reload
                    wait_until("a live update", lambda t=tab: int(
                        t.attr("#arena", "data-updates") or 0) >= 1 or None, timeout=30)
                names = tab.page.locator("#a-bots").inner_text()
                assert "house:greedy" in names and "playing" in names.lower()
                width = tab.page.evaluate("document.documentElement.scrollWidth")
                assert width <= (390 if phone else 1280) + 1, width  # nothing overflows
                shot = st.workdir / f"arena-{'phone' if phone else 'desktop'}.png"
                tab.page.screenshot(path=str(shot), full_page=True)
                tab.close()
            tab = Tab(browser, url)

            def bot_page() -> bool | None:
                tab.open(f"/bot/{bot_id}")
                return (tab.page.locator(".bot-games a[href='/arena/3p']").count() >= 1
                        and tab.page.locator("#history-3p").count() == 1) or None

            wait_until("the bot's page shows its arena games and rating", bot_page,
                       timeout=30)
            assert int(tab.attr("#history-3p", "data-points")) >= 1
            assert "3p arena" in tab.page.locator("#bot-arenas").inner_text()
            tab.close()
        finally:
            browser.close()


def _hidden_until_released(st: Stack, r: redis.Redis, stub: arena_pb2_grpc.ArenaServiceStub
                           ) -> None:
    """A watcher without the admin token reads the games of boards in play: a finished
    game shows its status and nothing else (no result, no transcript, seed 0) unless its
    board was released, and it is seen hidden at least once (the check is not vacuous)."""
    seen: dict[str, int] = {"hidden": 0}
    with grpc.insecure_channel(st.address) as ch:
        public = match_pb2_grpc.MatchServiceStub(ch)

        def probe() -> bool | None:
            for b in _arena(stub).boards_in_play:
                number = int(b.board.rpartition("/b")[2])
                for table in range(b.games):
                    mid = game_id("3p", number, table)
                    m = public.GetMatch(match_pb2.GetMatchRequest(match_id=mid),
                                        timeout=10).match
                    shown = m.HasField("result") or bool(m.transcript_json) or m.seed != 0
                    if shown:  # read after: a release is one transaction, never undone
                        assert r.zscore(keys.results("3p"), mid) is not None, mid
                    elif m.status == match_pb2.MATCH_STATUS_FINISHED:
                        seen["hidden"] += 1
            return seen["hidden"] >= 2 or None

        wait_until("finished games of boards in play, hidden", probe, timeout=60)


def _wait_released(stub: arena_pb2_grpc.ArenaServiceStub, timeout: float = 90
                   ) -> arena_pb2.Arena:
    return wait_until("every board released", lambda: (
        a if (a := _arena(stub)).playing == 0 and not a.boards_in_play and a.games else None),
        timeout=timeout)


@pytest.mark.timeout(480)  # about a minute; up to three when the kill lands on a fit
def test_an_arena_plays_through_joins_leaves_and_kills(
        own: tuple[Stack, redis.Redis, RedisServer], admin_token: str) -> None:
    st, r, _ = own
    t0 = time.monotonic()
    port = free_port()
    referee, _ = st.referee(listen=f"127.0.0.1:{port}")
    workers = [st.worker(), st.worker()]
    # The pages start now (a slow start on a loaded machine overlaps the play), and
    # follow the referee through its restart below.
    _, url = _start_web(st, st.address)
    admin = Admin(st.address, admin_token)
    stub = arena_pb2_grpc.ArenaServiceStub(admin.channel)
    res = _cli(st, "arena", "start", "3p", "--anchor", "house:greedy",
               "--anchor", "house:random", "--rule", "max_hands=1", "--max-wait", "1s",
               "--disconnect-grace", "3s", "--time-per-move", "1s")
    assert res.returncode == 0, res.stderr
    regs = [register(st.address, f"arena-{i}") for i in range(8)]
    idle = register(st.address, "arena-idle")  # for bad input: never plays
    kinds = ["greedy", "random"] * 4
    # Six join at first, two later.
    bots: dict[int, Proc] = {i: st.bot(kinds[i], st.address, regs[i][1], "--arena", "3p",
                                       wait=False) for i in range(6)}
    wait_until("games under way", lambda: _arena(stub).games >= 10 or None, timeout=60)
    for i in (6, 7):
        bots[i] = st.bot(kinds[i], st.address, regs[i][1], "--arena", "3p", wait=False)
    _bad_input(st, stub, admin, idle[1])
    print(f"bad input done at {time.monotonic() - t0:.0f} s")
    wait_until("the late joiners play", lambda: all(
        b.games > 0 for b in _arena(stub).bots if b.bot_id in (regs[6][0], regs[7][0]))
        or None, timeout=60)
    # A worker killed mid-play (its matches resume elsewhere), then started again.
    workers[0].kill_tree()
    time.sleep(3)
    workers.append(st.worker())
    # One bot leaves cleanly (Ctrl-C: LeaveArena), one disconnects hard (its games in
    # progress run into the grace and forfeit rules).
    bots[1].stop(signal.SIGINT)
    gone = regs[2][0]

    def in_play() -> list[str] | None:
        st = steps.state(r, EventRef.arena("3p")).state or {"plan": {}}
        live = st["plan"].get("bots", {}).get(gone, {}).get("live", [])
        return [m for m in live if not r.exists(keys.result(m))] or None

    def early() -> list[str] | None:
        # Its games past an auction that someone won (4 actions or more: three passes
        # end a one-hand game) with fewer than 12 of the hand's 26 made: four tricks at
        # least, so four decisions of each seat, still to come. (A game near its end
        # may need nothing more of it: its last tile played, the others finish it.)
        return [m for m in in_play() or [] if 4 <= r.llen(keys.match_log(m)) < 12] or None

    cut = wait_until("the bot to kill early in a game", early, timeout=30, every=0.01)
    bots[2].kill()
    left = wait_until("the bot that left is out", lambda: next(
        (b for b in _arena(stub).bots if b.bot_id == regs[1][0]), None) is None or None,
        timeout=20)
    assert left
    # The referee killed and started again on its port: bots reconnect by themselves.
    referee.kill()
    time.sleep(1)
    st.referee(listen=f"127.0.0.1:{port}")
    admin.close()
    admin = Admin(st.address, admin_token)
    stub = arena_pb2_grpc.ArenaServiceStub(admin.channel)
    played = _arena(stub).games
    wait_until("play goes on after the kills", lambda: _arena(stub).games >= played + 10
               or None, timeout=60)
    # The disconnected bot is offline: no new table seats it.
    wait_until("the dead bot is offline", lambda: not next(
        b for b in _arena(stub).bots if b.bot_id == gone).online or None, timeout=20)
    print(f"kills done at {time.monotonic() - t0:.0f} s")
    _hidden_until_released(st, r, stub)
    _page_is_live(st, url, regs[0][0])
    print(f"page done at {time.monotonic() - t0:.0f} s")
    # Stop: no new tables; what is under way finishes and is released.
    res = _cli(st, "arena", "stop", "3p")
    assert res.returncode == 0, res.stderr
    a = _wait_released(stub)
    print(f"released at {time.monotonic() - t0:.0f} s")
    _check_games(r, a, [b for b, _ in regs], cut)
    _check_leaderboard(st, admin, a)
    admin.close()


def _check_games(r: redis.Redis, a: arena_pb2.Arena, remote: list[str], cut: list[str]
                 ) -> None:
    games = [str(m) for m in r.zrange(keys.arena_games("3p"), 0, -1)]
    assert len(games) == len(set(games)) == a.games > 40
    recorded = r.zrange(keys.arena_recorded("3p"), 0, -1, withscores=True)
    assert sorted(m for m, _ in recorded) == sorted(games)  # every game recorded, once
    assert [int(s) for _, s in recorded] == list(range(1, len(games) + 1))
    released = set(r.zrange(keys.results("3p"), 0, -1))
    boards: dict[str, list[dict[str, Any]]] = {}
    for mid in games:
        spec = json.loads(r.hget(keys.match(mid), "spec") or "{}")
        done = json.loads(r.get(keys.result(mid)) or "null")
        assert done is not None, f"{mid} has no result"
        assert mid in released
        boards.setdefault(spec["meta"]["board"], []).append(
            {"id": mid, "bots": spec["bot_ids"], "seed": spec["seed"], "result": done})
    for board, tables in boards.items():
        assert len(tables) >= 2, board  # a board is two tables at least
        assert len({t["seed"] for t in tables}) == 1
    for bot in remote:
        mine = [(b, t["seed"]) for b, ts in boards.items() for t in ts if bot in t["bots"]]
        assert mine, bot
        assert len({b for b, _ in mine}) == len(mine), f"{bot} was dealt a board twice"
        assert len({s for _, s in mine}) == len(mine), f"{bot} was dealt a deal twice"
        assert all(deals.was_dealt(r, s) for _, s in mine)
    # The bot that disconnected hard forfeited the games that waited on it (after the grace).
    ends = {t["id"]: t["result"]["result"]["end"] for ts in boards.values() for t in ts}
    assert all(ends[m] == "forfeit" for m in cut), {m: ends[m] for m in cut}


def _check_leaderboard(st: Stack, admin: Admin, a: arena_pb2.Arena) -> None:
    last: list[Any] = []

    def fitted() -> rating_pb2.GetRatingsResponse | None:
        x = admin.get_ratings("3p")
        last[:] = [x.fitted_games, x.games, a.released, x.provisional]
        return x if x.fitted_games == x.games == a.released and not x.provisional else None

    # A fit takes seconds on a loaded machine; and when the killed worker had taken a fit
    # job, the next waits until recovery sees that (store.ratings.QUEUED_S at most).
    try:
        resp = wait_until("the fit covers every game", fitted, timeout=180)
    except TimeoutError:
        raise AssertionError(f"fitted, in the pool, released, provisional: {last}") from None
    rows = {x.bot_id: x for x in resp.ratings}
    assert {"house:greedy", "house:random"} <= set(rows)
    assert all(x.HasField("ci_low") and x.ci_low < x.rating < x.ci_high for x in rows.values())
    res = _cli(st, "arena", "show", "--pool", "3p")
    assert res.returncode == 0 and "stopped" in res.stdout and "house:greedy" in res.stdout
    assert "[" in res.stdout  # intervals
    listed = admin.matches.ListMatches(match_pb2.ListMatchesRequest(arena="3p", page_size=5),
                                       timeout=10)
    assert len(listed.matches) == 5 and all(m.arena == "3p" for m in listed.matches)
