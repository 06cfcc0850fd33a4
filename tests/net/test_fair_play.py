"""Bots that remember everything and watch every public stream learn nothing hidden.

Seven bots play a 3p round robin on duplicate boards and four a 2v2 bracket, each bot a
raw Play stream that keeps every message it receives; meanwhile a watcher with no token
reads everything public about the tournament, as often as it can. Afterwards:

- no bot was dealt a board twice (every board a bot played, it played in one game);
- nothing public showed anything of a game (its seed, transcript, result, action count,
  plays, or its result on the tournament's stream) before every game of its board had
  finished, so no bot could read a board's plays before it had played that board itself.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

import grpc
from rawbot import RawBot
from stack import Stack
from support import PoolBot

from clients.admin import Admin
from clients.sdk import register
from proto.moon.v1 import (
    bot_pb2,
    match_pb2,
    match_pb2_grpc,
    tournament_pb2,
    tournament_pb2_grpc,
)

SHORT = {"max_hands": "3"}


@dataclass
class Probe:
    """A watcher without a token: when it first saw anything of each game."""

    address: str
    tournament_id: str
    first_seen: dict[str, tuple[float, str]] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)
    watched: set[str] = field(default_factory=set)
    # Swiss: games of an earlier round seen without a result while a later round was listed
    paired_early: list[tuple[str, int]] = field(default_factory=list)

    def saw(self, match_id: str, what: str) -> None:
        self.first_seen.setdefault(match_id, (time.time(), what))

    def run(self) -> None:
        with grpc.insecure_channel(self.address) as ch:
            matches = match_pb2_grpc.MatchServiceStub(ch)
            tours = tournament_pb2_grpc.TournamentServiceStub(ch)
            threading.Thread(target=self._tournament_stream, args=(tours,), daemon=True).start()
            while not self.stop.is_set():
                listed = matches.ListMatches(match_pb2.ListMatchesRequest(
                    tournament_id=self.tournament_id, page_size=500), timeout=30).matches
                latest = max((_round_of(m.match_id) for m in listed), default=0)
                for m in listed:
                    self._look(m, "ListMatches")
                    full = matches.GetMatch(match_pb2.GetMatchRequest(match_id=m.match_id),
                                            timeout=30).match
                    self._look(full, "GetMatch")
                    if 0 < _round_of(m.match_id) < latest and not full.HasField("result"):
                        self.paired_early.append((m.match_id, latest))
                    if m.match_id not in self.watched:
                        self.watched.add(m.match_id)
                        threading.Thread(target=self._match_stream, args=(matches, m.match_id),
                                         daemon=True).start()
                st = tours.GetStandings(tournament_pb2.GetStandingsRequest(
                    tournament_id=self.tournament_id), timeout=30).standings
                if st.matches_done:
                    self.saw("*standings*", f"{st.matches_done} results")
                time.sleep(0.05)

    def _look(self, m: match_pb2.Match, where: str) -> None:
        if m.seed:
            self.saw(m.match_id, f"{where}: seed")
        if m.transcript_json:
            self.saw(m.match_id, f"{where}: transcript")
        if m.HasField("result"):
            self.saw(m.match_id, f"{where}: result")
        if m.actions_played:
            self.saw(m.match_id, f"{where}: actions_played")

    def _match_stream(self, stub: match_pb2_grpc.MatchServiceStub, match_id: str) -> None:
        try:
            for ev in stub.WatchMatch(match_pb2.WatchMatchRequest(match_id=match_id),
                                      timeout=300):
                if ev.WhichOneof("event") != "match_started":
                    self.saw(match_id, f"WatchMatch: {ev.WhichOneof('event')}")
        except grpc.RpcError:
            pass

    def _tournament_stream(self, stub: tournament_pb2_grpc.TournamentServiceStub) -> None:
        try:
            for ev in stub.WatchTournament(tournament_pb2.WatchTournamentRequest(
                    tournament_id=self.tournament_id), timeout=300):
                if ev.WhichOneof("event") == "match_finished":
                    self.saw(ev.match_finished.match_id, "WatchTournament: result")
        except grpc.RpcError:
            pass


def _round_of(match_id: str) -> int:
    """A Swiss game's round (`<tournament>-r<round>-t<table>-g1`); 0 for another game."""
    m = re.fullmatch(r"t-[0-9a-z]+-r(\d+)-t\d+-g1", match_id)
    return int(m.group(1)) if m else 0


def _remembering_bots(stack: Stack, name: str, n: int
                      ) -> tuple[list[str], list[RawBot], dict[str, list[tuple[float, str]]]]:
    """n raw bots that answer a random legal action, some slowly (so the tables of a board
    finish at different times), and keep (time, match) of every decision request they get."""
    got: dict[str, list[tuple[float, str]]] = defaultdict(list)
    ids, bots = [], []
    for i in range(n):
        bot_id, token = register(stack.address, f"{name}-{i}")
        rng = random.Random(i)

        def policy(req: bot_pb2.PlayResponse.DecisionRequest, rng: random.Random = rng,
                   slow: bool = i % 2 == 0) -> int:
            if slow:
                time.sleep(0.02)
            return int(rng.choice(req.legal_actions).id)


        def keep(msg: bot_pb2.PlayResponse, bot_id: str = bot_id) -> None:
            if msg.WhichOneof("message") == "decision_request":
                got[bot_id].append((time.time(), msg.decision_request.match_id))

        bots.append(RawBot(stack.address, token, policy, on_message=keep).start())
        ids.append(bot_id)
    for b in bots:
        b.wait_for(lambda m: m.WhichOneof("message") == "welcome")
    return ids, bots, got


def _check(admin: Admin, tid: str, probe: Probe,
           got: dict[str, list[tuple[float, str]]]) -> int:
    games = admin.matches.ListMatches(match_pb2.ListMatchesRequest(
        tournament_id=tid, page_size=1000), metadata=admin.metadata, timeout=30).matches
    board: dict[str, str] = {}
    done_at: dict[str, float] = defaultdict(float)
    for g in games:
        record = json.loads(admin.get_match_as_organiser(g.match_id).transcript_json)
        board[g.match_id] = record["board"]
        done_at[record["board"]] = max(done_at[record["board"]],
                                       g.finished_at.ToNanoseconds() / 1e9)
    # No bot is dealt a board twice.
    for bot, asked in got.items():
        played: dict[str, set[str]] = defaultdict(set)
        for _, mid in asked:
            played[board[mid]].add(mid)
        assert all(len(mids) == 1 for mids in played.values()), (bot, played)
    # Nothing public of a game before its board is done everywhere.
    early = {mid: (when, what, done_at[board[mid]])
             for mid, (when, what) in probe.first_seen.items()
             if mid in board and when < done_at[board[mid]] - 0.01}
    assert not early, early
    # And no decision a bot was asked came after anything public of its board.
    for bot, asked in got.items():
        for when, mid in asked:
            for other, b in board.items():
                if b == board[mid] and other in probe.first_seen:
                    assert probe.first_seen[other][0] > when, (bot, mid, other)
    return len(games)


def test_a_bot_that_remembers_everything_learns_nothing_hidden(
        stack: Stack, admin: Admin, pool: dict[str, PoolBot], name: str) -> None:
    ids, bots, got = _remembering_bots(stack, name, 7)
    try:
        t = admin.create_tournament(name="fair rr", players=3, format="round_robin",
                                    bot_ids=ids, rules=SHORT, seeding="given")
        assert not t.notes  # 7 bots: real boards, nothing to warn about
        probe = Probe(stack.address, t.tournament_id)
        runner = threading.Thread(target=probe.run, daemon=True)
        runner.start()
        _wait_finished(admin, t.tournament_id)
        time.sleep(1.0)  # let the watcher see the released end state
        probe.stop.set()
        runner.join(30)
        assert _check(admin, t.tournament_id, probe, got) == 14
        assert len(probe.first_seen) >= 14  # the watcher did see every game, in the end

        four = ids[:4]
        got.clear()
        k = admin.create_tournament(name="fair ko", players=4, format="single_elimination",
                                    bot_ids=four, rules=SHORT, seeding="given",
                                    options={"series_length": 3})
        probe = Probe(stack.address, k.tournament_id)
        runner = threading.Thread(target=probe.run, daemon=True)
        runner.start()
        _wait_finished(admin, k.tournament_id)
        time.sleep(1.0)
        probe.stop.set()
        runner.join(30)
        assert _check(admin, k.tournament_id, probe, got) >= 4

        # A Swiss pairs each round from the last one's results: its games show only once
        # the results they were paired on are public.
        got.clear()
        s = admin.create_tournament(name="fair swiss", players=3, format="swiss",
                                    bot_ids=ids, rules=SHORT, seeding="given",
                                    options={"rounds": 3})
        probe = Probe(stack.address, s.tournament_id)
        runner = threading.Thread(target=probe.run, daemon=True)
        runner.start()
        _wait_finished(admin, s.tournament_id)
        time.sleep(1.0)
        probe.stop.set()
        runner.join(30)
        assert _check(admin, s.tournament_id, probe, got) == 3 * 2
        assert not probe.paired_early, probe.paired_early
    finally:
        for b in bots:
            b.close()


def _wait_finished(admin: Admin, tid: str, timeout: float = 240.0) -> None:
    end = time.monotonic() + timeout
    while admin.get_tournament(tid).status == tournament_pb2.TOURNAMENT_STATUS_RUNNING:
        assert time.monotonic() < end, "tournament did not finish"
        time.sleep(0.2)
    assert admin.get_tournament(tid).status == tournament_pb2.TOURNAMENT_STATUS_FINISHED


def test_two_events_with_one_seed_deal_no_bot_a_deal_twice(stack: Stack, admin: Admin,
                                                          pool: dict[str, PoolBot]) -> None:
    """From outside: the same three bots, the same `--seed`, two round robins one after the
    other. Once both are over (their deals public), no bot was dealt one deal in both,
    and the second one's notes say its boards were dealt afresh; a public caller reads
    every deal and still finds none that the seed, planned the public way, gives."""
    from tourney import matches_of, wait_finished

    from tournaments.plan import derive_seed

    bots = [pool[k].bot_id for k in ("greedy1", "greedy2", "random1")]
    seen: dict[str, dict[int, str]] = defaultdict(dict)
    tids = []
    for _ in range(2):
        t = admin.create_tournament(name="one seed", players=3, format="round_robin",
                                    bot_ids=bots, rules=SHORT, options={"rounds": 2}, seed=7,
                                    seeding="given")
        tids.append(t.tournament_id)
        wait_finished(admin, t.tournament_id)
    public = Admin(stack.address, None)
    try:
        for tid in tids:
            for m in matches_of(public, tid):
                record = json.loads(m.transcript_json)
                for b in m.bot_ids:
                    assert record["seed"] not in seen[b], (b, record["seed"], seen[b])
                    seen[b][record["seed"]] = tid
                unit = m.match_id.removeprefix(f"{tid}-").split("-t")[0]
                assert all(derive_seed(s, unit) != record["seed"] for s in range(10_000))
        notes = public.get_tournament(tids[1]).notes
    finally:
        public.close()
    assert all(len(seen[b]) == 4 for b in bots)  # two boards in each event
    assert any("dealt afresh" in n for n in notes), notes
