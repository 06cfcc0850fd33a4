"""Whole tournaments on the real stack: round robins, brackets, events, standings, ratings.

Bots are `moonshot bot run` processes over gRPC; matches are RQ jobs on the
session's workers. Games are kept short (`max_hands`) so every tournament takes
seconds; the checks are on what was scheduled, played, recorded and reported.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import signal
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
from stack import Proc, Stack, env, moonshot
from support import wait_until
from tourney import (
    RUNNING,
    Event,
    Watcher,
    bare,
    by_unit,
    check_recorded_once,
    check_sequence,
    check_standings,
    matches_of,
    seed_of,
    wait_finished,
    watch_all,
)

import ratings
from clients.admin import Admin
from clients.sdk import register
from proto.moon.v1 import match_pb2, rating_pb2, tournament_pb2
from store import keys
from store.matches import pool_results, read_rows
from store.tournaments import load_spec
from tournaments.standings import rank_group
from tournaments.swiss_rules import place_points, team_points

SHORT = {"max_hands": "2"}
KINDS = ("greedy", "random", "greedy", "random", "greedy", "greedy", "random")
BM = tournament_pb2.BracketMatch


@dataclass(frozen=True)
class Bots:
    """Registered bots whose processes are running: ids, names and processes, in order."""

    ids: tuple[str, ...]
    names: tuple[str, ...]
    procs: tuple[Proc, ...]


@pytest.fixture(scope="module")
def bots7(stack: Stack) -> Bots:
    """Seven bot processes for this module's tournaments (greedy and random mixed)."""
    tag = uuid.uuid4().hex[:6]
    names = [f"tn{i + 1}-{kind}-{tag}" for i, kind in enumerate(KINDS)]
    regs = [register(stack.address, n) for n in names]
    procs = stack.bots([(kind, token) for kind, (_, token) in zip(KINDS, regs, strict=True)])
    return Bots(tuple(b for b, _ in regs), tuple(names), tuple(procs))


@contextlib.contextmanager
def paused(procs: Sequence[Proc]) -> Iterator[None]:
    """SIGSTOP the processes for the duration (no answer can come from them), then go on."""
    for p in procs:
        p.popen.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        for p in procs:
            p.popen.send_signal(signal.SIGCONT)


@dataclass
class Played:
    """A finished tournament, everything read back."""

    tournament: tournament_pb2.Tournament
    games: list[match_pb2.Match]
    standings: tournament_pb2.Standings
    events: list[Event]  # a full watch from the start, live
    resumed: list[Event]  # a watch that hung up after `cut` events, then resumed after it
    cut: int


def _play(admin: Admin, r: redis.Redis, pool: str, cut: int = 4, **spec: object) -> Played:
    """Create a tournament, watch it live twice over (once in one go, once hanging up after
    `cut` events and resuming), wait for the end, and check it was recorded once."""
    t = admin.create_tournament(**spec)  # type: ignore[arg-type]
    tid = t.tournament_id
    full = Watcher(admin, tid).start()
    first = Watcher(admin, tid, stop_after=cut).start()
    part1 = first.join()
    assert len(part1) == cut
    # Still live, most likely: the resumed watch picks up after the last event it processed.
    part2 = Watcher(admin, tid, after=part1[-1].sequence).start().join()
    events = full.join()
    wait_finished(admin, tid)
    check_recorded_once(r, tid, pool, events)
    games = matches_of(admin, tid)
    return Played(admin.get_tournament(tid), games, admin.standings(tid), events,
                  part1 + part2, cut)


def _check_watches(p: Played, admin: Admin) -> None:
    """The live watch ran 1..N; the interrupted one got exactly the same events; a watch
    after the end replays them; one from the last sequence gets nothing and ends."""
    n = len(p.events)
    check_sequence(p.events)
    assert [bare(e) for e in p.resumed] == [bare(e) for e in p.events]
    replay = watch_all(admin, p.tournament.tournament_id)
    assert [bare(e) for e in replay] == [bare(e) for e in p.events]
    tail = watch_all(admin, p.tournament.tournament_id, after=n - 3)
    assert [e.sequence for e in tail] == [n - 2, n - 1, n]
    assert watch_all(admin, p.tournament.tournament_id, after=n) == []
    for past in (n + 1, 2**64 - 1):  # a sequence never sent: refused, not an empty stream
        with pytest.raises(grpc.RpcError) as info:
            watch_all(admin, p.tournament.tournament_id, after=past)
        assert info.value.code() == grpc.StatusCode.OUT_OF_RANGE  # type: ignore[attr-defined]
        assert f"last event so far, {n}" in info.value.details()  # type: ignore[attr-defined]
    final = p.events[-1].tournament_finished
    assert final.tournament.status == tournament_pb2.TOURNAMENT_STATUS_FINISHED
    assert final.standings.matches_done == len(p.games)
    assert any(e.WhichOneof("event") == "standings_changed" for e in p.events)


# ------------------------------------------------------------ 3p round robin


@pytest.mark.parametrize("n", [4, 7])
def test_3p_round_robin(n: int, stack: Stack, admin: Admin, r: redis.Redis,
                        bots7: Bots) -> None:
    """4 bots: all four tables, every pair at two of them; 7 bots: the Fano plane, seven
    tables, every pair at exactly one. Each table is a duplicate set: six games, one per
    seating of its three bots, all dealt from one seed."""
    ids = bots7.ids[:n]
    p = _play(admin, r, "3p", name=f"rr{n}", players=3, format="round_robin",
              bot_ids=ids, rules=SHORT, duplicate="replay")
    tid = p.tournament.tournament_id
    tables = {4: 4, 7: 7}[n]
    assert len(p.games) == 6 * tables == p.tournament.matches_total \
        == p.tournament.matches_done
    units = by_unit(tid, p.games)
    assert len(units) == tables
    meetings: Counter[frozenset[str]] = Counter()
    seeds = set()
    for unit, games in units.items():
        table = set(games[0].bot_ids)
        assert len(table) == 3 and table <= set(ids), unit
        assert sorted(tuple(g.bot_ids) for g in games) \
            == sorted(itertools.permutations(games[0].bot_ids)), unit
        unit_seeds = {seed_of(g) for g in games}
        assert len(unit_seeds) == 1, (unit, unit_seeds)
        seeds |= unit_seeds
        for g in games:
            assert json.loads(g.transcript_json)["rules"]["max_hands"] == 2
        for pair in itertools.combinations(sorted(table), 2):
            meetings[frozenset(pair)] += 1
    assert len(seeds) == tables  # a fresh deal per table
    want = 2 if n == 4 else 1
    assert meetings == {frozenset(pr): want for pr in itertools.combinations(ids, 2)}
    check_standings(p.standings, p.games)
    assert p.standings.HasField("bracket") is False
    _check_watches(p, admin)


def test_a_group_declared_for_the_stack_is_kept_apart_by_a_later_tournament(
        stack: Stack, admin: Admin, r: redis.Redis, bots7: Bots, name: str) -> None:
    """SetGroup declares two bots one group for the whole stack: a round robin on boards
    made afterwards carries the group in its spec, seats the two at tables of no board
    (dealing apart the tables that would), and its public notes say so without the group's
    name."""
    ids = bots7.ids[:6]
    group = f"{name}-lab"
    admin.set_group(group, ids[:2])
    try:
        t = admin.create_tournament(name="apart", players=3, format="round_robin",
                                    bot_ids=ids, rules=SHORT)
    finally:
        admin.set_group(group, [])  # the tournament keeps what it resolved
    tid = t.tournament_id
    assert (f"stack:{group}", tuple(sorted(ids[:2]))) in load_spec(r, tid).apart
    wait_finished(admin, tid)
    # On no board do the two sit at two tables (one table together is no leak).
    tables: dict[tuple[str, str], set[frozenset[str]]] = {}
    for m in matches_of(admin, tid):
        for b in set(ids[:2]) & set(m.bot_ids):
            tables.setdefault((m.board, b), set()).add(frozenset(m.bot_ids))
    boards = {board for board, _ in tables}
    assert len(boards) > 1
    for board in boards:
        first, second = (tables.get((board, b), set()) for b in ids[:2])
        assert not (first and second) or (first == second and len(first) == 1), board
    public = Admin(stack.address, None)
    try:
        notes = list(public.standings(tid).notes)
    finally:
        public.close()
    dealt_apart = [n for n in notes if "dealt apart" in n]
    assert dealt_apart and all("(a declared group)" in n for n in dealt_apart), notes
    assert any("a declared group (not named" in n for n in notes), notes
    assert not any(group in n or "stack:" in n for n in notes), notes


# ------------------------------------------------------------ 2v2 brackets


def _losses(bracket: tournament_pb2.Bracket) -> Counter[str]:
    """Bracket matches lost, per bot."""
    out: Counter[str] = Counter()
    for rnd in bracket.rounds:
        for m in rnd.matches:
            if m.state == BM.STATE_DECIDED:
                out.update(s.bot_id for s in m.slots if s.bot_id != m.winner_bot_id)
    return out


def _check_series(tid: str, games: list[match_pb2.Match],
                  bracket: tournament_pb2.Bracket, best_of: int) -> int:
    """Every bracket match played is a series of duplicate pairs (two games, one seed, the
    teams swapping seats) won by the bot that won a majority of pairs; returns the number of
    decided bracket matches."""
    by_id = {g.match_id: g for g in games}
    decided = 0
    seen: set[str] = set()
    need = best_of // 2 + 1
    for rnd in bracket.rounds:
        for bm in rnd.matches:
            if bm.state == BM.STATE_BYE:
                assert not bm.match_ids
                continue
            assert bm.state == BM.STATE_DECIDED, bm
            decided += 1
            a, b = (s.bot_id for s in bm.slots)
            series = [by_id[mid] for mid in bm.match_ids]
            seen |= set(bm.match_ids)
            pairs = by_unit(tid, series)
            assert list(pairs) == [f"{bm.bracket_match_id}-p{k + 1}" for k in range(len(pairs))]
            wins: Counter[str] = Counter()
            for unit, pair in pairs.items():
                assert len(pair) == 2, unit
                g1, g2 = pair
                assert seed_of(g1) == seed_of(g2)
                assert {tuple(g1.bot_ids), tuple(g2.bot_ids)} == {(a, b, a, b), (b, a, b, a)}
                results = [{"match_id": g.match_id, "bot_ids": list(g.bot_ids), "players": 4,
                            "final": list(g.result.final_scores),
                            "winner": g.result.winner if g.result.HasField("winner") else None,
                            "placement": list(g.result.placement)} for g in pair]
                wins[rank_group(results, [s.bot_id for s in sorted(
                    bm.slots, key=lambda s: s.seed)])[0]] += 1
            assert max(wins.values()) == need and sum(wins.values()) == len(pairs)
            assert wins.most_common(1)[0][0] == bm.winner_bot_id
            assert {s.bot_id: s.wins for s in bm.slots} == {a: wins[a], b: wins[b]}
    assert seen == set(by_id), "games that belong to no bracket match"
    return decided


def test_2v2_single_elimination_of_five(stack: Stack, admin: Admin, r: redis.Redis,
                                        bots7: Bots) -> None:
    """Five bots in a bracket of eight: seeds 1-3 have byes, 4 meets 5. The shape is there
    (GetStandings) as soon as the tournament exists, before any game can have been played
    (the bots are paused); the seed stays hidden from non-organisers until the end. Each
    bracket match is a best-of-3 series of duplicate pairs."""
    ids = list(bots7.ids[:5])
    public = Admin(stack.address, None)
    try:
        with paused(bots7.procs[:5]):
            t = admin.create_tournament(name="se5", players=4, format="single_elimination",
                                        bot_ids=ids, seeding="given",
                                        options={"series_length": 3},
                                        rules=SHORT, duplicate="replay")
            tid = t.tournament_id
            assert list(t.spec.bot_ids) == ids and t.spec.HasField("seed")
            st = admin.standings(tid)
            # While it runs, only organisers see the seed (it fixes every deal).
            assert public.get_tournament(tid).status == RUNNING
            assert not public.get_tournament(tid).spec.HasField("seed")
            assert admin.get_tournament(tid).spec.seed == t.spec.seed
        events = watch_all(public, tid)
        done = wait_finished(admin, tid)
        assert public.get_tournament(tid).spec.seed == t.spec.seed  # revealed at the end
    finally:
        public.close()

    # The shape, as it was before anything was played.
    assert st.matches_done == 0 and not st.bracket.champion_bot_id
    shape = [(rnd.side, rnd.number, [m.bracket_match_id for m in rnd.matches])
             for rnd in st.bracket.rounds]
    W = tournament_pb2.BRACKET_SIDE_WINNERS
    assert shape == [(W, 1, ["W1-1", "W1-2", "W1-3", "W1-4"]), (W, 2, ["W2-1", "W2-2"]),
                     (W, 3, ["W3-1"])]
    first = {m.bracket_match_id: m for m in st.bracket.rounds[0].matches}
    for mid, seed in (("W1-1", 1), ("W1-3", 2), ("W1-4", 3)):  # byes to the top seeds
        m = first[mid]
        assert m.state == BM.STATE_BYE and m.winner_bot_id == ids[seed - 1], m
        assert [s.bot_id for s in m.slots] == [ids[seed - 1], ""]
        assert m.winner_to.startswith("W2-")
    w12 = first["W1-2"]
    assert [s.bot_id for s in w12.slots] == [ids[3], ids[4]]
    assert [s.seed for s in w12.slots] == [4, 5] and w12.state == BM.STATE_PLAYING
    later = {m.bracket_match_id: m for rnd in st.bracket.rounds[1:] for m in rnd.matches}
    assert [s.bot_id for s in later["W2-1"].slots] == [ids[0], ""]
    assert [s.source for s in later["W2-1"].slots] == ["winner of W1-1", "winner of W1-2"]
    assert later["W2-1"].state == BM.STATE_WAITING
    assert [s.bot_id for s in later["W2-2"].slots] == [ids[1], ids[2]]  # both had byes
    assert later["W3-1"].state == BM.STATE_WAITING and not later["W3-1"].winner_to
    assert st.matches_total > 0

    created = check_recorded_once(r, tid, "2v2", events)
    games = matches_of(admin, tid)
    st = admin.standings(tid)
    assert len(games) == len(created) == done.matches_done == done.matches_total
    check_standings(st, games)
    assert _check_series(tid, games, st.bracket, best_of=3) == 4
    champion = st.bracket.champion_bot_id
    final = st.bracket.rounds[-1].matches[0]
    assert champion and champion == final.winner_bot_id
    assert champion in {s.bot_id for s in final.slots}
    assert _losses(st.bracket) == Counter({b: 1 for b in ids if b != champion})
    assert {row.bot_id: row.eliminated for row in st.rows} == \
        {b: b != champion for b in ids}
    # The matches_started events say which bracket match each game was for.
    for ev in events:
        if ev.WhichOneof("event") == "match_started":
            assert ev.match_started.match_id.startswith(
                f"{tid}-{ev.match_started.bracket_match_id}-p")


def test_2v2_double_elimination_of_four(admin: Admin, r: redis.Redis,
                                        bots7: Bots) -> None:
    """Winners bracket, losers bracket and grand final. Every bot but the champion is out
    after exactly two lost bracket matches; the champion lost at most one; W1's losers meet
    in the losers bracket, whose champion meets the winners' champion in the grand final,
    and the reset is played exactly when the losers' champion wins the first final."""
    ids = list(bots7.ids[:4])
    p = _play(admin, r, "2v2", cut=2, name="de4", players=4, format="double_elimination",
              bot_ids=ids, seeding="given", rules=SHORT, duplicate="replay")
    tid = p.tournament.tournament_id
    st = p.standings
    check_standings(st, p.games)
    sides = [(rnd.side, rnd.number) for rnd in st.bracket.rounds]
    S = tournament_pb2
    assert sides == [(S.BRACKET_SIDE_WINNERS, 1), (S.BRACKET_SIDE_WINNERS, 2),
                     (S.BRACKET_SIDE_LOSERS, 1), (S.BRACKET_SIDE_LOSERS, 2),
                     (S.BRACKET_SIDE_GRAND_FINAL, 1), (S.BRACKET_SIDE_GRAND_FINAL, 2)]
    ms = {m.bracket_match_id: m for rnd in st.bracket.rounds for m in rnd.matches}
    assert list(ms) == ["W1-1", "W1-2", "W2-1", "L1-1", "L2-1", "GF", "GF2"]
    assert [s.bot_id for s in ms["W1-1"].slots] == [ids[0], ids[3]]
    assert [s.bot_id for s in ms["W1-2"].slots] == [ids[1], ids[2]]

    def loser(mid: str) -> str:
        m = ms[mid]
        return next(s.bot_id for s in m.slots if s.bot_id != m.winner_bot_id)

    assert ms["W1-1"].loser_to == ms["W1-2"].loser_to == "L1-1"
    assert ms["W2-1"].loser_to == "L2-1" and ms["W2-1"].winner_to == "GF"
    assert {s.bot_id for s in ms["L1-1"].slots} == {loser("W1-1"), loser("W1-2")}
    assert {s.bot_id for s in ms["L2-1"].slots} == {ms["L1-1"].winner_bot_id, loser("W2-1")}
    gf = ms["GF"]
    assert [s.bot_id for s in gf.slots] == [ms["W2-1"].winner_bot_id, ms["L2-1"].winner_bot_id]
    reset_played = gf.winner_bot_id == gf.slots[1].bot_id
    champion = st.bracket.champion_bot_id
    if reset_played:
        assert ms["GF2"].state == BM.STATE_DECIDED
        assert {s.bot_id for s in ms["GF2"].slots} == {s.bot_id for s in gf.slots}
        assert champion == ms["GF2"].winner_bot_id
    else:
        assert ms["GF2"].state == BM.STATE_BYE and not ms["GF2"].match_ids  # not needed
        assert champion == gf.winner_bot_id
    decided = _check_series(tid, p.games, st.bracket, best_of=1)
    assert decided == (7 if reset_played else 6)  # 2n-1 or 2n-2 matches for n = 4
    losses = _losses(st.bracket)
    assert all(losses[b] == 2 for b in ids if b != champion), losses
    assert losses[champion] == (1 if reset_played else 0)
    assert {row.bot_id: row.eliminated for row in st.rows} == {b: b != champion for b in ids}
    _check_watches(p, admin)


# ------------------------------------------------------------ ratings


def test_ratings_of_both_pools(admin: Admin, r: redis.Redis, bots7: Bots) -> None:
    """GetRatings serves the fit over every released game of the pool: for each bot the
    rating, its interval, its games and the LOS over the next bot, best first, centred on
    the pool mean, exactly what the rating package gives for the stored results. (Runs
    after the tournaments above; it plays a small one of each kind itself when run
    alone.)"""
    for pool, players, fmt in (("3p", 3, "round_robin"), ("2v2", 4, "single_elimination")):
        mine = [row for row in pool_results(r, pool) if set(row["bot_ids"]) & set(bots7.ids)]
        if not mine:
            t = admin.create_tournament(name=f"ratings {pool}", players=players, format=fmt,
                                        bot_ids=bots7.ids[:players], rules={"max_hands": "1"})
            wait_finished(admin, t.tournament_id)
        # Read when the fit covers every released game and none was released since (a
        # game of another test of the session may be released at any moment).
        resp = wait_until("the fit to cover every released game", lambda pool=pool: (
            x if (x := admin.get_ratings(pool)).fitted_games == x.games and not x.provisional
            and x.games == len(pool_results(r, pool)) else None), timeout=60)
        played = pool_results(r, pool)
        assert resp.games == len(played) and "MAP" in resp.method and resp.level == 0.95
        expected = ratings.fit(ratings.games_from_rows(played))
        want_of = {x.bot_id: x for x in expected.ratings}
        assert sorted(want_of) == sorted(x.bot_id for x in resp.ratings)
        # The same order, but where two ratings agree to rounding (bots whose records are
        # alike): either order of those is the fit (each is sorted by rating, then id).
        served = [want_of[x.bot_id].rating for x in resp.ratings]
        assert all(a >= b - 1e-6 for a, b in itertools.pairwise(served)), served
        assert resp.boards == expected.units
        for got in resp.ratings:
            want = want_of[got.bot_id]
            assert got.rating == pytest.approx(want.rating, abs=1e-6)
            assert got.ci_low == pytest.approx(want.ci_low, abs=1e-6)
            assert got.ci_high == pytest.approx(want.ci_high, abs=1e-6)
            assert got.ci_low < got.rating < got.ci_high and got.games == want.games
            assert not got.provisional
        assert all(x.HasField("los_next") for x in resp.ratings[:-1])
        assert not resp.ratings[-1].HasField("los_next")
        assert sum(x.rating for x in resp.ratings) == pytest.approx(0, abs=1e-6)
        # Best first, exact ties (bots of alike records) by id.
        order = [(-x.rating, x.bot_id) for x in resp.ratings]
        assert order == sorted(order)
        games = Counter(b for row in played for b in set(row["bot_ids"]))
        assert {x.bot_id: x.games for x in resp.ratings} == dict(games)
        # The whole LOS matrix, on request, in the order of the ratings.
        full = admin.ratings.GetRatings(rating_pb2.GetRatingsRequest(
            pool=resp.pool, los_matrix=True), timeout=30)
        ids, matrix = expected.los_matrix()
        at = {b: k for k, b in enumerate(ids)}
        assert sorted(row.bot_id for row in full.los) == sorted(ids)
        order = [at[row.bot_id] for row in full.los]  # the served order, in the fit's rows
        for i, row in enumerate(full.los):
            assert row.los == pytest.approx([matrix[order[i]][j] for j in order], abs=1e-5)
            if i + 1 < len(full.los):
                assert row.los[i + 1] == pytest.approx(full.ratings[i].los_next, abs=1e-5)


def test_each_bot_s_rating_history_ends_where_its_rating_stands(admin: Admin, r: redis.Redis,
                                                                bots7: Bots) -> None:
    """GetRatingHistory: a point per fit with new games of the bot, oldest first; the last
    one carries the bot's games now, and its rating, when that fit is the one served.
    (Runs after the ratings test above, which leaves every game fitted.)"""
    for pool in ("3p", "2v2"):
        resp = wait_until("the fit to cover every released game", lambda pool=pool: (
            x if (x := admin.get_ratings(pool)).fitted_games == x.games and not x.provisional
            else None), timeout=60)
        newest = set()
        for row in resp.ratings:
            asked = row.name if row.bot_id == bots7.ids[0] else row.bot_id  # names work too
            got = admin.ratings.GetRatingHistory(rating_pb2.GetRatingHistoryRequest(
                pool=resp.pool, bot_id=asked), timeout=30)
            assert got.pool == resp.pool and got.bot_id == row.bot_id
            points = list(got.points)
            assert points, row.name
            games = [p.games for p in points]
            assert games == sorted(set(games)) and games[-1] == row.games
            times = [p.as_of.ToNanoseconds() for p in points]
            assert times == sorted(times)
            assert all(p.ci_low < p.rating < p.ci_high for p in points)
            last = points[-1]
            if last.pool_games == resp.fitted_games:
                newest.add(row.bot_id)
                assert last.rating == pytest.approx(row.rating, abs=1e-9)
                assert (last.ci_low, last.ci_high) == pytest.approx((row.ci_low, row.ci_high))
            one = admin.ratings.GetRatingHistory(rating_pb2.GetRatingHistoryRequest(
                pool=resp.pool, bot_id=row.bot_id, max_points=1), timeout=30)
            assert list(one.points) == [last]
        # The fit served counted the last released game: its bots have news there.
        last_game = r.zrange(keys.results(pool), -1, -1)
        assert set(read_rows(r, last_game)[last_game[0]]["bot_ids"]) <= newest


def test_rating_history_refuses_what_it_cannot_answer(admin: Admin, bots7: Bots) -> None:
    def code(**fields: object) -> grpc.StatusCode:
        with pytest.raises(grpc.RpcError) as info:
            admin.ratings.GetRatingHistory(rating_pb2.GetRatingHistoryRequest(**fields),
                                           timeout=30)
        return info.value.code()  # type: ignore[attr-defined,no-any-return]

    assert code(bot_id="no-such-bot") == grpc.StatusCode.NOT_FOUND
    assert code(bot_id="") == grpc.StatusCode.INVALID_ARGUMENT
    assert code(bot_id=bots7.ids[0], pool=99) == grpc.StatusCode.INVALID_ARGUMENT
    many = admin.ratings.GetRatingHistory(rating_pb2.GetRatingHistoryRequest(
        bot_id=bots7.ids[0], max_points=10**9), timeout=30)  # clamped, not refused
    assert len(many.points) <= 1000


def test_moonshot_ratings_prints_the_table_and_draws_the_chart(stack: Stack, tmp_path: Path,
                                                               bots7: Bots) -> None:
    chart = tmp_path / "ratings.png"
    res = subprocess.run(moonshot("ratings", "--pool", "3p", "--chart", str(chart),
                                  "--server", stack.address),
                         env=env(), capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    assert "95% interval" in res.stdout and "LOS>next" in res.stdout
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    res = subprocess.run(moonshot("ratings", "--bot", bots7.names[0], "--server", stack.address),
                         env=env(), capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    # Both pools, one after the other (--pool names one).
    three, two = res.stdout.rstrip("\n").split("\n\n")
    lines = three.splitlines()
    assert lines[0] == f"rating history of {bots7.names[0]}, 3p pool"
    assert two.startswith(f"rating history of {bots7.names[0]}, 2v2 pool")
    admin = Admin(stack.address, None)
    points = admin.rating_history(bots7.names[0]).points
    admin.close()
    assert len(lines) == 2 + len(points) and lines[-1].split()[2:4] == [
        str(points[-1].games), str(round(points[-1].rating))]
    res = subprocess.run(moonshot("ratings", "--bot", bots7.names[0], "--pool", "3p",
                                  "--server", stack.address),
                         env=env(), capture_output=True, text=True, timeout=120, check=False)
    assert res.stdout.rstrip("\n") == three
    res = subprocess.run(moonshot("ratings", "--bot", "nobody-at-all", "--server", stack.address),
                         env=env(), capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode != 0 and "nobody-at-all" in res.stderr


# ------------------------------------------------------------ bad requests


def _create_error(admin: Admin, **spec: object) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        admin.create_tournament(**spec)  # type: ignore[arg-type]
    return info.value  # type: ignore[return-value]


@pytest.fixture
def three(stack: Stack, name: str) -> list[str]:
    """Three registered bots (not running: nothing here gets to play)."""
    return [register(stack.address, f"{name}-{i}")[0] for i in range(3)]


@pytest.mark.parametrize(("spec", "says"), [
    ({"bot_ids": "unknown"}, "bot_ids[1]: no bot with id or name 'no-such-bot'"),
    ({"bot_ids": "two"}, "bot_ids: a 3p round robin needs at least 3 bots, got 2"),
    ({"players": 4, "format": "single_elimination", "bot_ids": "one"},
     "bot_ids: a 2v2 single elimination needs at least 2 bots, got 1"),
    ({"players": 4, "options": {"rotate_partners": True}, "bot_ids": "three"},
     "needs at least 4 bots"),
    ({"rules": {"max_hands": "0"}}, "rules: "),
    ({"rules": {"no_such_rule": "1"}}, "rules: "),
    ({"players": 4, "format": "single_elimination", "options": {"series_length": 2}},
     "single_elimination.series_length: "),
    ({"format": "double_elimination"}, "format: double elimination is for 2v2"),
    ({"bot_ids": "twice"}, "bot_ids: a bot may appear only once"),
    ({"bot_ids": "id-and-name"}, "bot_ids: a bot may appear only once"),
    ({"players": 5}, "players: must be 3 or 4"),
    ({"format": "no_such_format"}, "spec.format"),
    ({"name": ""}, "name: "),
    ({"name": "cup\n\x1b[2Jnight"}, "name: 'cup\\n\\x1b[2Jnight' holds a control character"),
    ({"options": {"rounds": 101}}, "round_robin.rounds: "),
])
def test_create_tournament_refuses_bad_specs(spec: dict[str, object], says: str,
                                             admin: Admin, three: list[str],
                                             r: redis.Redis, name: str) -> None:
    b1, b2, b3 = three
    bots = {"unknown": [b1, "no-such-bot", b3], "two": [b1, b2], "one": [b1],
            "three": three, "twice": [b1, b2, b1], "id-and-name": [b1, b2, f"{name}-0"]}
    full: dict[str, object] = {"name": "bad", "players": 3, "format": "round_robin",
                               "bot_ids": three, **spec}
    full["bot_ids"] = bots.get(str(spec.get("bot_ids")), full["bot_ids"])
    before = r.zcard("ms:tournaments")
    err = _create_error(admin, **full)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err
    assert says in err.details(), err.details()
    assert r.zcard("ms:tournaments") == before  # nothing stored


SWISS = tournament_pb2.TOURNAMENT_FORMAT_SWISS
SwissOptions = tournament_pb2.SwissOptions


def _teams(*pairs: tuple[str, str]) -> list[tournament_pb2.SwissTeam]:
    return [tournament_pb2.SwissTeam(bot_ids=list(p)) for p in pairs]


@pytest.mark.parametrize(("spec", "says"), [
    ({"swiss": SwissOptions(rounds=0)}, "swiss.rounds: must be from 1 to 100"),
    ({"swiss": SwissOptions(rounds=2)},
     "swiss.rounds: 3 bots allow at most 1 Swiss round (each meeting someone new), got 2"),
    ({"players": 4, "bots": 4, "swiss": SwissOptions(rounds=2, teams=_teams(
        ("0", "1"), ("2", "3")))}, "swiss.rounds: 2 teams allow at most 1"),
    ({"players": 4, "bots": 4, "swiss": SwissOptions(teams=_teams(("0", "0"), ("2", "3")))},
     "swiss.teams: team 1 names '{0}' twice"),
    ({"players": 4, "bots": 4, "swiss": SwissOptions(teams=_teams(("0", "1"), ("1", "2")))},
     "swiss.teams: '{1}' is in team 1 and in team 2"),
    ({"players": 4, "bots": 4, "swiss": SwissOptions(teams=_teams(("0", "1"), ("2", "x")))},
     "swiss.teams: team 2 names 'x', which is not one of the tournament's bots"),
    ({"players": 4, "bots": 4, "swiss": SwissOptions(teams=_teams(("0", "1")))},
     "swiss.teams: {2} is in bot_ids but in no team"),
    ({"players": 4, "bots": 4, "swiss": SwissOptions(teams=_teams(("0", "1"), ("2", "3")),
                                                     rotate_partners=True)},
     "swiss.rotate_partners: not with teams"),
    ({"swiss": SwissOptions(rotate_partners=True)}, "swiss.rotate_partners: only for 2v2"),
    ({"bots": 2}, "bot_ids: a 3p Swiss needs at least 3 bots, got 2"),
    ({"players": 4, "bots": 3, "swiss": SwissOptions(rotate_partners=True)},
     "bot_ids: a 2v2 Swiss needs at least 4 bots, got 3"),
    ({"duplicate": tournament_pb2.DUPLICATE_MODE_REPLAY}, "duplicate: a Swiss offers boards"),
    ({"series_length": 3}, "spec.series_length: not an option of the swiss format"),
    ({"all_triples": True}, "spec.all_triples: not an option of the swiss format"),
    ({"round_robin": tournament_pb2.RoundRobinOptions(rounds=2)},
     "spec.round_robin: options of the round_robin format, but spec.format is swiss"),
    ({"rounds": 2, "swiss": SwissOptions(rounds=2)},
     "spec.rounds: deprecated; with spec.swiss set"),
])
def test_create_swiss_refuses_bad_specs_naming_the_field(
        spec: dict[str, Any], says: str, admin: Admin, stack: Stack, r: redis.Redis,
        name: str) -> None:
    """Over gRPC as any client sends it (the message itself, not the CLI's checks): one
    INVALID_ARGUMENT whose message starts with the field at fault, and nothing stored."""
    names = [f"{name}-{i}" for i in range(spec.pop("bots", 3))]
    ids = [register(stack.address, n)[0] for n in names]
    if "swiss" in spec:  # the cases name a team's bots by their index in `names`
        for team in spec["swiss"].teams:
            team.bot_ids[:] = [names[int(x)] if x.isdigit() else x for x in team.bot_ids]
    pb = tournament_pb2.TournamentSpec(name="bad swiss", players=spec.pop("players", 3),
                                       format=SWISS, bot_ids=ids, rules=SHORT, **spec)
    before = r.zcard("ms:tournaments")
    with pytest.raises(grpc.RpcError) as info:
        admin.tournaments.CreateTournament(tournament_pb2.CreateTournamentRequest(spec=pb),
                                           metadata=admin.metadata, timeout=30)
    err: Any = info.value
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err
    want = says.format(*names)
    assert err.details().startswith(want), (err.details(), want)
    assert r.zcard("ms:tournaments") == before  # nothing stored


def test_create_tournament_needs_the_admin_token(stack: Stack, three: list[str],
                                                 name: str) -> None:
    _, bot_token = register(stack.address, f"{name}-caller")
    spec = {"name": "x", "players": 3, "format": "round_robin", "bot_ids": three}
    for token, code in ((None, grpc.StatusCode.UNAUTHENTICATED),
                        ("adm.wrong", grpc.StatusCode.UNAUTHENTICATED),
                        (bot_token, grpc.StatusCode.PERMISSION_DENIED)):
        caller = Admin(stack.address, token)
        try:
            err = _create_error(caller, **spec)
        finally:
            caller.close()
        assert err.code() in ((code,) if token != "adm.wrong"
                              else (grpc.StatusCode.UNAUTHENTICATED,
                                    grpc.StatusCode.PERMISSION_DENIED)), (token, err)


def test_unknown_tournament_is_not_found(admin: Admin) -> None:
    calls: dict[str, object] = {
        "GetTournament": lambda: admin.get_tournament("t-nope"),
        "GetStandings": lambda: admin.standings("t-nope"),
        "WatchTournament": lambda: list(admin.watch("t-nope")),
    }
    for what, call in calls.items():
        with pytest.raises(grpc.RpcError) as info:
            call()  # type: ignore[operator]
        assert info.value.code() == grpc.StatusCode.NOT_FOUND, what  # type: ignore[attr-defined]
        assert "t-nope" in info.value.details(), what  # type: ignore[attr-defined]
    with pytest.raises(grpc.RpcError) as info:
        admin.get_tournament("")
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]


# ------------------------------------------------------------------- Swiss


@pytest.fixture(scope="module")
def bots13(stack: Stack) -> Bots:
    """Thirteen greedy bots for the Swiss tournaments, in one process (manybots.py)."""
    tag = uuid.uuid4().hex[:6]
    names = [f"sw{i + 1:02d}-{tag}" for i in range(13)]
    regs = [register(stack.address, n) for n in names]
    proc = stack.start("manybots", [sys.executable, str(Path(__file__).with_name(
        "manybots.py")), stack.address, "greedy", *(token for _, token in regs)])
    proc.wait_for(r"connected 13 bots", timeout=60)
    return Bots(tuple(b for b, _ in regs), tuple(names), (proc,))


def _side_points(m: match_pb2.Match) -> list[float]:
    """Each side's Swiss points (the README's scale) from a finished game."""
    if m.players == 3:
        return list(place_points(list(m.result.placement)))
    return list(team_points(m.result.winner if m.result.HasField("winner") else None))


def _check_swiss_rounds(tid: str, games: Sequence[match_pb2.Match], rounds: int,
                        tables: int, entrants: int, st: tournament_pb2.Standings) -> None:
    """Each round one board played at every table, no bot twice in a round nor dealt a
    board twice; what the standings list as rounds is what was played."""
    units: dict[str, list[match_pb2.Match]] = {}
    for g in games:  # every game names its board: <tournament>/r<round>
        units.setdefault(g.board.removeprefix(f"{tid}/"), []).append(g)
    assert sorted(units) == sorted(f"r{k}" for k in range(1, rounds + 1))
    assert len({seed_of(gs[0]) for gs in units.values()}) == rounds  # a new board a round
    for unit, gs in units.items():
        assert len(gs) == tables and len({seed_of(g) for g in gs}) == 1, unit
        seated = [b for g in gs for b in set(g.bot_ids)]
        assert len(seated) == len(set(seated)), unit
    assert [rnd.number for rnd in st.rounds] == list(range(1, rounds + 1))
    by_id = {g.match_id: g for g in games}
    for rnd in st.rounds:
        assert rnd.board == f"{tid}/r{rnd.number}"
        assert len(rnd.tables) == tables
        for table in rnd.tables:
            g = by_id[table.match_id]
            assert list(table.bot_ids) == list(g.bot_ids)
            assert list(table.points) == _side_points(g)  # released: public
    assert len(st.ranking.rows) == entrants
    assert [c.key for c in st.ranking.columns] == ["points", "buchholz", "duplicate", "rating"]
    assert all(c.explanation for c in st.ranking.columns)
    keys_ = [tuple(row.values[:3]) for row in st.ranking.rows]
    assert keys_ == sorted(keys_, reverse=True)  # points, then the tiebreaks, best first
    assert [row.rank for row in st.ranking.rows] == list(range(1, entrants + 1))


def _new_triples_exist(bots: Sequence[str], met: set[frozenset[str]]) -> bool:
    """Whether `bots` split into triples in which no two have met (a backtracking search)."""
    if not bots:
        return True
    first, rest = bots[0], bots[1:]
    return any(
        not {frozenset((first, b)), frozenset((first, c)), frozenset((b, c))} & met
        and _new_triples_exist([x for x in rest if x not in (b, c)], met)
        for b, c in itertools.combinations(rest, 2))


def test_3p_swiss_of_13_from_the_command_line(stack: Stack, admin: Admin, r: redis.Redis,
                                              bots13: Bots) -> None:
    """`moonshot tournament create --format swiss`: five rounds (ceil(log2 13) + 1) of four
    tables and a bye, no table-mate met twice while the field allows it, the byes to five
    bots, and the standings with every tiebreak explained, on the terminal and over gRPC."""
    run = subprocess.run(moonshot(
        "tournament", "create", "--name", "swiss 13", "--format", "swiss", "--players", "3",
        "--bots", ",".join(bots13.names), "--seeding", "given", "--seed", "7",
        "--rule", "max_hands=2", "--watch", "--quiet", "--server", stack.address),
        env=env(MOONSHOT_ADMIN_TOKEN=stack.admin_token), capture_output=True, text=True,
        timeout=240, check=False)
    assert run.returncode == 0, run.stderr
    tid = re.search(r"tournament (t-\w+) created", run.stdout).group(1)  # type: ignore[union-attr]
    t = admin.get_tournament(tid)
    assert t.spec.format == SWISS and t.spec.WhichOneof("format_options") == "swiss"
    assert t.spec.swiss.rounds == 5 and t.spec.rounds == 5  # settled; mirrored for old readers
    assert any("bye" in note for note in t.notes)
    events = watch_all(Admin(stack.address, None), tid)
    check_recorded_once(r, tid, "3p", events)
    games = matches_of(admin, tid)
    assert len(games) == 5 * 4 == t.matches_total == t.matches_done
    public = Admin(stack.address, None)
    try:
        st = public.standings(tid)
    finally:
        public.close()
    _check_swiss_rounds(tid, games, 5, 4, 13, st)
    # No two bots at one table twice while the field allows it: a round that repeats a
    # meeting is one where no partition of its players into new triples was left.
    met: set[frozenset[str]] = set()
    for rnd in st.rounds:
        pairs = [frozenset(p) for table in rnd.tables
                 for p in itertools.combinations(table.bot_ids, 2)]
        if met & set(pairs):
            seated = [b for table in rnd.tables for b in table.bot_ids]
            assert not _new_triples_exist(seated, met), f"round {rnd.number} repeats"
        met |= set(pairs)
    byes = [b for rnd in st.rounds for b in rnd.bye_bot_ids]
    assert len(byes) == len(set(byes)) == 5
    # Points as the README scores them: 1 / 1/2 / 0 by place, 1/2 a bye.
    points = dict.fromkeys(bots13.ids, 0.0)
    for g in games:
        for bot, pts in zip(g.bot_ids, _side_points(g), strict=True):
            points[bot] += pts
    for b in byes:
        points[b] += 0.5
    assert {row.bot_ids[0]: row.values[0] for row in st.ranking.rows} == points
    assert [row.bot_id for row in st.rows] == [row.bot_ids[0] for row in st.ranking.rows]
    # Seats: every bot's three positions within one of each other over its four games.
    for bot in bots13.ids:
        seats = Counter(list(g.bot_ids).index(bot) for g in games if bot in g.bot_ids)
        assert max(seats.values()) - min(seats[p] for p in range(3)) <= 1, (bot, seats)
    # The terminal shows the same ranking, each tiebreak explained, and the rounds.
    names = dict(zip(bots13.ids, bots13.names, strict=True))
    show = subprocess.run(moonshot("tournament", "show", tid, "--server", stack.address),
                          env=env(), capture_output=True, text=True, timeout=60, check=False)
    assert show.returncode == 0, show.stderr
    for out in (run.stdout, show.stdout):
        assert "(ranked by points, then buchholz, then duplicate, then rating)" in out
        for c in st.ranking.columns:
            assert f"  {c.title.lower()}: {c.explanation}" in out
        table = out.split("(ranked by", 1)[0]  # the ranking (a crosstable follows)
        listed = [line.split()[1] for line in table.splitlines()
                  if re.match(r"\s+\d+\s+sw\d\d-", line)]
        assert listed == [names[row.bot_ids[0]] for row in st.ranking.rows]
        assert "round 5 (board " in out and out.count("  bye: ") == 5


def test_2v2_swiss_of_8_in_fixed_teams(stack: Stack, admin: Admin, r: redis.Redis,
                                       bots13: Bots) -> None:
    """Four named teams: three rounds in which every team meets every other once, each
    team's two bots on one seat pair, the standings by team."""
    ids, names = bots13.ids[:8], bots13.names[:8]
    pairs = [(names[0], names[7]), (names[1], names[6]), (names[2], names[5]),
             (names[3], names[4])]
    t = admin.create_tournament(
        name="swiss 2v2", players=4, format="swiss", bot_ids=list(ids), rules=SHORT,
        seeding="given", seed=11,
        options={"teams": [{"bot_ids": list(p)} for p in pairs]})
    tid = t.tournament_id
    by_name = dict(zip(names, ids, strict=True))
    teams = [(by_name[a], by_name[b]) for a, b in pairs]
    assert [tuple(x.bot_ids) for x in t.spec.swiss.teams] == teams  # by id, in seed order
    assert t.spec.swiss.rounds == 3
    wait_finished(admin, tid)
    events = watch_all(admin, tid)
    check_recorded_once(r, tid, "2v2", events)
    games = matches_of(admin, tid)
    assert len(games) == 3 * 2
    st = admin.standings(tid)
    _check_swiss_rounds(tid, games, 3, 2, 4, st)
    team_of = {b: i for i, team in enumerate(teams) for b in team}
    met: Counter[frozenset[int]] = Counter()
    wins = dict.fromkeys(range(4), 0.0)
    for g in games:
        a, b, c, d = g.bot_ids
        assert team_of[a] == team_of[c] != team_of[b] == team_of[d]  # a team holds a pair
        assert {a, c} == set(teams[team_of[a]]) and {b, d} == set(teams[team_of[b]])
        met[frozenset((team_of[a], team_of[b]))] += 1
        for side, pts in enumerate(_side_points(g)):
            wins[team_of[g.bot_ids[side]]] += pts
    assert len(met) == 6 and set(met.values()) == {1}  # everyone met everyone once
    assert {tuple(row.bot_ids): row.values[0] for row in st.ranking.rows} == {
        teams[i]: wins[i] for i in range(4)}
    # The common rows follow the ranking, a team's two bots together.
    assert [row.bot_id for row in st.rows] == [b for row in st.ranking.rows for b in row.bot_ids]


def test_2v2_swiss_of_8_with_rotating_partners_from_the_command_line(
        stack: Stack, admin: Admin, r: redis.Redis, bots13: Bots) -> None:
    """`--players 4 --rotate-partners`: four rounds (ceil(log2 8) + 1) of two tables, a new
    partner for every bot every round, each bot ranked on its own, and the terminal
    showing the ranking with its tiebreaks explained."""
    ids, names = bots13.ids[5:], bots13.names[5:]
    run = subprocess.run(moonshot(
        "tournament", "create", "--name", "swiss partners", "--format", "swiss",
        "--players", "4", "--rotate-partners", "--bots", ",".join(names), "--seeding",
        "given", "--seed", "5", "--rule", "max_hands=2", "--watch", "--quiet", "--server",
        stack.address), env=env(MOONSHOT_ADMIN_TOKEN=stack.admin_token),
        capture_output=True, text=True, timeout=240, check=False)
    assert run.returncode == 0, run.stderr
    tid = re.search(r"tournament (t-\w+) created", run.stdout).group(1)  # type: ignore[union-attr]
    t = admin.get_tournament(tid)
    assert t.spec.swiss.rotate_partners and t.spec.swiss.rounds == 4
    check_recorded_once(r, tid, "2v2", watch_all(admin, tid))
    games = matches_of(admin, tid)
    assert len(games) == 4 * 2
    st = admin.standings(tid)
    _check_swiss_rounds(tid, games, 4, 2, 8, st)
    partners: set[frozenset[str]] = set()
    points = dict.fromkeys(ids, 0.0)
    for g in games:
        a, b, c, d = g.bot_ids
        assert len({a, b, c, d}) == 4  # four different bots, no whole-bot team
        for pair in ({a, c}, {b, d}):
            assert frozenset(pair) not in partners, (g.match_id, pair)  # never twice
            partners.add(frozenset(pair))
        side = _side_points(g)
        for seat, bot in enumerate(g.bot_ids):
            points[bot] += side[seat % 2]
    assert {row.bot_ids[0]: row.values[0] for row in st.ranking.rows} == points
    by_id = dict(zip(ids, names, strict=True))
    for out in (run.stdout, subprocess.run(
            moonshot("tournament", "show", tid, "--server", stack.address), env=env(),
            capture_output=True, text=True, timeout=60, check=True).stdout):
        assert "(ranked by points, then buchholz, then duplicate, then rating)" in out
        table = out.split("(ranked by", 1)[0]
        listed = [line.split()[1] for line in table.splitlines()
                  if re.match(r"\s+\d+\s+sw\d\d-", line)]
        assert listed == [by_id[row.bot_ids[0]] for row in st.ranking.rows]
        assert "round 4 (board " in out and "  bye: " not in out
