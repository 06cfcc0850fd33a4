"""A rating method is one module: registered in the process that runs the fit job (here,
the test's own, on a real Redis), it is fitted and stored, and a real referee, web server
and CLI that never heard of it serve it, list it and show it. The shipped second method,
`recent`, is served the same way."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path

import grpc
import pytest
import redis
from stack import Proc, Stack, env, moonshot

import ratings
from clients.admin import Admin
from clients.redisproc import RedisServer
from proto.moon.v1 import rating_pb2
from ratings import registry
from store import bots, keys
from store import ratings as store_ratings
from store.rating_tables import RatingRow, RatingTable
from workers.fit import run_fits


class Firsts(ratings.Method):
    """Each bot's count of first places: the whole of a new method."""

    name = "firsts"
    title = "first places counted"

    def rate(self, games: Iterable[ratings.Game], as_of: float) -> RatingTable:
        pool = ratings.canonical(games)
        won: dict[str, int] = {}
        for g in pool:
            for side, place in zip(g.sides, g.places, strict=True):
                for b in side:
                    won[b] = won.get(b, 0) + (place == 1)
        rows = tuple(RatingRow(b, float(w), sum(b in g.bots for g in pool))
                     for b, w in sorted(won.items(), key=lambda x: (-x[1], x[0])))
        return RatingTable(method="first places, counted", as_of=as_of, games=len(pool),
                           boards=len(pool), provisional=False, level=0.95, rows=rows)


def _release(r: redis.Redis, i: int, seats: list[str], when: float) -> None:
    """A released 3p result: seat 0 first, seat 2 last, released at `when`."""
    row = {"match_id": f"m-rm{i:03d}", "bot_ids": seats, "players": 3, "final": [21, 3, 1],
           "winner": 0, "placement": [1, 2, 3], "end": "normal", "forfeit": None,
           "seats": seats, "board": f"t-rm/u{i}", "unit": f"u{i}"}
    r.hset(keys.match(row["match_id"]), mapping={"row": json.dumps(row), "released": "1"})
    r.zadd(keys.results("3p"), {row["match_id"]: when})


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_a_method_registered_where_the_fit_runs_is_fitted_stored_and_served(
        tmp_path: Path, admin_token: str) -> None:
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        r = bots.connect(srv.url)
        now = time.time()
        for i in range(16):  # four bots; the last six games, with b4, of this week
            seats = [f"b{(i + k) % 4}" for k in range(3)] if i < 10 else \
                ["b4", f"b{i % 3}", f"b{(i + 1) % 3}"]
            _release(r, i, seats, now - (90 if i < 10 else 2) * 86400)
        registry.register(Firsts())
        try:
            store_ratings.note_request(r, "3p")
            assert run_fits(r, "3p")["games"] == 16  # the fit job's body, as a worker runs it
        finally:
            registry._METHODS.pop("firsts")
        assert "firsts" not in ratings.methods.names()  # nobody but the fit ever knew it

        st = Stack(tmp_path, srv.url, admin_token=admin_token)
        try:
            st.referee()
            admin = Admin(st.address, admin_token)
            with contextlib.closing(admin):
                got = admin.get_ratings("3p", "firsts")
                assert got.method_name == "firsts" and got.method == "first places, counted"
                assert [(x.bot_id, x.rating) for x in got.ratings][:2] == [("b4", 6.0),
                                                                            ("b0", 3.0)]
                listed = {m.name: m for m in got.methods}
                assert list(listed) == ["provisional", "batch", "recent", "firsts"]
                assert (listed["firsts"].title, listed["firsts"].fitted_games) == (
                    "first places counted", 16)
                recent = admin.get_ratings("3p", "recent")
                assert recent.method_name == "recent" and recent.fitted_games == 6
                assert not recent.provisional and recent.ratings[0].HasField("ci_low")
                assert {x.bot_id for x in recent.ratings} == {"b0", "b1", "b2", "b4"}
                assert listed["recent"].fitted_games == 6
                with_los = admin.ratings.GetRatings(rating_pb2.GetRatingsRequest(
                    pool=rating_pb2.RATING_POOL_THREE_PLAYER, method="recent", los_matrix=True),
                    timeout=30)
                assert len(with_los.los) == 4
                default = admin.get_ratings("3p")
                assert (default.method_name, default.fitted_games) == ("batch", 16)
                assert "MAP" in default.method
                with pytest.raises(grpc.RpcError) as err:
                    admin.get_ratings("3p", "nope")
                assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert "provisional, batch, recent, firsts" in str(err.value.details())

            # The CLI lists the methods and shows any of them.
            def cli(*args: str) -> str:
                out = subprocess.run(moonshot("ratings", "--server", st.address, *args),
                                     capture_output=True, text=True, env=env(), timeout=60,
                                     check=False)
                assert out.returncode == 0, out.stderr
                return out.stdout

            methods = cli("--methods")
            assert "firsts" in methods and "first places counted" in methods
            assert "recent" in methods and "batch fit, last 30 days" in methods
            shown = cli("--method", "firsts")
            assert "(firsts)" in shown and "first places, counted" in shown
            assert shown.index("b4") < shown.index("b0")

            # The ratings page offers each method and shows the one chosen.
            web = st.start("web", moonshot("web", "--server", st.address, "--listen",
                                           "127.0.0.1:0"))
            base = _web_url(web)
            status, page = _get(f"{base}/ratings/3p")
            assert status == 200
            assert all(f'data-method="{m}"' in page for m in listed)
            status, page = _get(f"{base}/ratings/3p?method=firsts")
            assert status == 200 and "first places, counted" in page
            assert page.index('data-bot-id="b4"') < page.index('data-bot-id="b0"')
            status, page = _get(f"{base}/ratings/3p?method=recent")
            assert status == 200 and "games of the last 30 days" in page
            assert _get(f"{base}/ratings/3p?method=nope")[0] == 404
        finally:
            st.stop_all()
            r.close()


def _web_url(web: Proc) -> str:
    return web.wait_for(r"web pages on (http://\S+)", timeout=30).group(1).rstrip("/")
