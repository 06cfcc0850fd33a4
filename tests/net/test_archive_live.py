"""The archive on a real stack: referee, workers, bot processes, Redis and a SQLite
archive. Finished games leave Redis once public, and every reader still finds them, the
same as before: GetMatch (its transcript byte for byte), ListMatches (by bot, event, pool,
time, across both stores), WatchMatch (an archived game's events, to its end), a
tournament's standings, and the ratings (a fit over every game)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
from pathlib import Path

import grpc
import redis
from google.protobuf.timestamp_pb2 import Timestamp
from stack import Stack, env, moonshot
from support import finished, wait_until

from clients.admin import Admin
from clients.redisproc import RedisServer
from clients.sdk import register
from moon.transcript import actions_of, replay
from proto.moon.v1 import (
    match_pb2,
    match_pb2_grpc,
    rating_pb2,
    tournament_pb2,
    tournament_pb2_grpc,
)
from store import archiving, keys

RULES = {"max_hands": "2"}


def _capture(r: redis.Redis, stop: threading.Event, seen: dict[str, str]) -> None:
    """Keep each finished game's transcript as Redis held it, before it leaves."""
    while not stop.is_set():
        for key in r.scan_iter("ms:match:*:result", count=1000):
            mid = key.split(":")[2]
            if mid not in seen:
                raw = r.get(key)
                if raw:
                    seen[mid] = json.dumps(json.loads(raw)["transcript"],
                                           separators=(",", ":"))
        time.sleep(0.02)


def _list(stub: match_pb2_grpc.MatchServiceStub, **kw: object) -> list[match_pb2.Match]:
    """Every page of a listing."""
    out: list[match_pb2.Match] = []
    token = ""
    while True:
        page = stub.ListMatches(match_pb2.ListMatchesRequest(page_size=7, page_token=token,
                                                             **kw), timeout=30)
        out += page.matches
        token = page.next_page_token
        if not token:
            return out


def test_finished_games_move_to_the_archive_and_every_reader_still_finds_them(
        tmp_path: Path, admin_token: str) -> None:
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        st = Stack(tmp_path, srv.url, admin_token=admin_token,
                   archive=f"sqlite:///{tmp_path / 'archive.sqlite3'}")
        r = redis.Redis.from_url(srv.url, decode_responses=True)
        seen: dict[str, str] = {}
        stop = threading.Event()
        watcher = threading.Thread(target=_capture, args=(r, stop, seen), daemon=True)
        try:
            st.referee()
            st.worker()
            regs = [register(st.address, f"ar{i}") for i in range(4)]
            st.bots([("greedy", t) for _, t in regs[:2]] + [("random", t) for _, t in regs[2:]])
            bots = [b for b, _ in regs]
            watcher.start()
            admin = Admin(st.address, admin_token)
            with contextlib.closing(admin):
                started = time.time()
                singles = [admin.create_match(3, bots[:3], seed=s, rules=RULES).match_id
                           for s in (1, 2, 3)]
                singles.append(admin.create_match(4, bots, seed=4, rules=RULES).match_id)
                t = admin.create_tournament(name="archived rr", players=3,
                                            format="round_robin", bot_ids=bots,
                                            rules=RULES)
                tid = t.tournament_id
                for mid in singles:
                    finished(admin, mid, timeout=90)
                # Its games, read from Redis while it runs: an ended tournament may
                # move to the archive (its index with it) as soon as it finishes.
                created: set[str] = set()

                def over() -> bool | None:
                    done = admin.get_tournament(tid).status == \
                        tournament_pb2.TOURNAMENT_STATUS_FINISHED
                    created.update(r.zrange(keys.tournament_matches(tid), 0, -1))  # type: ignore[arg-type]
                    return done or None

                wait_until("the tournament to finish", over, timeout=180)
                standings = admin.standings(tid)
                # A tournament of short games can finish and leave Redis between two looks:
                # its stream names every game it started, from either store.
                created.update(e.match_started.match_id for e in tournament_pb2_grpc
                               .TournamentServiceStub(admin.channel).WatchTournament(
                                   tournament_pb2.WatchTournamentRequest(tournament_id=tid),
                                   timeout=30)
                               if e.WhichOneof("event") == "match_started")
                games = sorted(created)
                assert len(games) == admin.get_tournament(tid).matches_total, games
                everything = singles + games
                # Every game leaves Redis: nothing of it but an open event's row is left.
                wait_until("every game archived", lambda: (
                    archiving.pending_count(r) == 0
                    and not any(r.exists(keys.match(m)) for m in everything)) or None,
                    timeout=90)
                stop.set()
                assert not r.keys("ms:match:*")
                assert not r.zrange(keys.MATCHES, 0, -1)
                assert not any(r.zrange(keys.bot_matches(b), 0, -1) for b in bots)
                # RQ's own copy of a finished match job lapses within minutes.
                assert all(0 < r.ttl(k) <= 300 for k in r.keys("rq:job:match-*"))
                # GetMatch: from the archive, its transcript as the referee wrote it.
                compared = 0
                for mid in everything:
                    m = admin.get_match(mid)
                    assert m.status == match_pb2.MATCH_STATUS_FINISHED and m.transcript_json
                    replay(json.loads(m.transcript_json))  # a game the rules accept
                    if mid in seen:
                        assert m.transcript_json == seen[mid]
                        compared += 1
                assert compared >= len(everything) // 2, (compared, len(everything))
                stub = match_pb2_grpc.MatchServiceStub(admin.channel)
                # ListMatches: by bot, event, pool and time, pages across both stores.
                listed = _list(stub, bot_id=bots[0])
                assert {m.match_id for m in listed} == {
                    mid for mid in everything if bots[0] in admin.get_match(mid).bot_ids}
                assert {m.match_id for m in _list(stub, tournament_id=tid)} == set(games)
                assert [m.match_id for m in _list(stub, pool=rating_pb2.RATING_POOL_TWO_VS_TWO)
                        ] == [singles[-1]]
                after = Timestamp()
                after.FromSeconds(int(started) - 1)
                assert {m.match_id for m in _list(stub, finished_after=after)} == set(everything)
                before = Timestamp()
                before.FromSeconds(int(started) - 1)
                assert _list(stub, finished_before=before) == []
                # The CLI lists them too, from both stores, with the filters.
                def listed_by_cli(*args: str) -> list[str]:
                    out = subprocess.run(moonshot("match", "list", "--server", st.address,
                                                  "--limit", "1000", *args),
                                         capture_output=True, text=True, env=env(),
                                         timeout=60, check=False)
                    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
                    return [line.split()[0] for line in out.stdout.splitlines()[1:]]

                assert set(listed_by_cli("--event", f"tournament:{tid}")) == set(games)
                assert listed_by_cli("--pool", "2v2") == [singles[-1]]
                assert set(listed_by_cli("--bot", "ar0")) == {m.match_id for m in listed}
                assert listed_by_cli("--until", "2001-01-01") == []
                # WatchMatch of an archived game: its events from the start to its end.
                events = list(stub.WatchMatch(match_pb2.WatchMatchRequest(
                    match_id=singles[0]), timeout=30))
                assert events[-1].WhichOneof("event") == "match_finished"
                taken = [e for e in events if e.WhichOneof("event") == "action_taken"]
                assert len(taken) == len(actions_of(json.loads(
                    admin.get_match(singles[0]).transcript_json)))
                # The tournament's standings are what they were, and the fit has every game.
                now = admin.standings(tid)
                for row in [*now.rows, *standings.rows]:  # ratings move as fits come in
                    row.ClearField("rating")
                    row.ClearField("tournament_rating")
                assert now == standings
                # The ended tournament leaves Redis too, and reads the same from the archive.
                wait_until("the tournament archived", lambda: not r.exists(
                    keys.tournament(tid)) or None, timeout=60)
                assert not [k for k in r.keys("ms:*") if tid in k]
                assert admin.get_tournament(tid).status == \
                    tournament_pb2.TOURNAMENT_STATUS_FINISHED
                again = admin.standings(tid)
                for row in again.rows:
                    row.ClearField("rating")
                    row.ClearField("tournament_rating")
                assert again == standings
                listed_t = tournament_pb2_grpc.TournamentServiceStub(admin.channel)\
                    .ListTournaments(tournament_pb2.ListTournamentsRequest(), timeout=30)
                assert tid in [x.tournament_id for x in listed_t.tournaments]
                watched = list(tournament_pb2_grpc.TournamentServiceStub(admin.channel)
                               .WatchTournament(tournament_pb2.WatchTournamentRequest(
                                   tournament_id=tid), timeout=30))
                assert watched[-1].WhichOneof("event") == "tournament_finished"
                assert {m.match_id for m in _list(stub, tournament_id=tid)} == set(games)
                ratings = wait_until("a fit over every game", lambda: (
                    x if (x := admin.get_ratings("3p")).games == len(everything) - 1
                    else None), timeout=60)
                assert ratings.games == len(everything) - 1
                with contextlib.suppress(grpc.RpcError):
                    stub.GetMatch(match_pb2.GetMatchRequest(match_id="m-nosuchgame"),
                                  timeout=10)
        finally:
            stop.set()
            st.stop_all()
            r.close()
