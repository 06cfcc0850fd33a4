"""Helpers for the tournament tests: waiting, watching, and what a finished tournament stored.

Everything is read back the way a user would (gRPC) and, for the exactly-once
checks, straight from Redis.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import redis
from stack import Stack
from support import transcript_of, wait_until

from clients.admin import Admin
from proto.moon.v1 import match_pb2, tournament_pb2
from store import keys

Event = tournament_pb2.WatchTournamentResponse
RUNNING = tournament_pb2.TOURNAMENT_STATUS_RUNNING
FINISHED = tournament_pb2.TOURNAMENT_STATUS_FINISHED


def wait_finished(admin: Admin, tid: str, timeout: float = 90.0) -> tournament_pb2.Tournament:
    """Poll GetTournament until the tournament is over; fail if it failed."""
    def over() -> tournament_pb2.Tournament | None:
        t = admin.get_tournament(tid)
        return t if t.status != RUNNING else None

    t = wait_until(f"tournament {tid} to finish", over, timeout=timeout, every=0.2)
    assert t.status == FINISHED, f"tournament {tid} ended {t.status}: {t.error}"
    return t


def matches_of(admin: Admin, tid: str) -> list[match_pb2.Match]:
    """Every match of the tournament with its transcript (replayed under the engine), in id
    order."""
    ids: list[str] = []
    token = ""
    while True:
        resp = admin.matches.ListMatches(
            match_pb2.ListMatchesRequest(tournament_id=tid, page_token=token, page_size=100),
            metadata=admin.metadata, timeout=60)
        ids += [m.match_id for m in resp.matches]
        token = resp.next_page_token
        if not token:
            break
    out = []
    for mid in sorted(ids):
        m = admin.matches.GetMatch(match_pb2.GetMatchRequest(match_id=mid),
                                   metadata=admin.metadata, timeout=30).match
        assert m.status == match_pb2.MATCH_STATUS_FINISHED, (mid, m.status, m.error)
        transcript_of(m)  # raises unless it replays
        out.append(m)
    return out


def unit_of(tid: str, match_id: str) -> tuple[str, int]:
    """`<tid>-<unit>-g<k>` -> (unit, k)."""
    assert match_id.startswith(tid + "-"), match_id
    unit, _, game = match_id[len(tid) + 1:].rpartition("-g")
    return unit, int(game)


def by_unit(tid: str, games: Sequence[match_pb2.Match]) -> dict[str, list[match_pb2.Match]]:
    """Games grouped by duplicate set, each set in game order."""
    out: dict[str, list[match_pb2.Match]] = {}
    for m in sorted(games, key=lambda m: unit_of(tid, m.match_id)[1]):
        out.setdefault(unit_of(tid, m.match_id)[0], []).append(m)
    return out


def seed_of(m: match_pb2.Match) -> int:
    """The deal seed, checked against the transcript's."""
    seed = int(json.loads(m.transcript_json)["seed"])
    assert seed == m.seed, (m.match_id, seed, m.seed)
    return seed


def side(m: match_pb2.Match, bot: str) -> int:
    """The bot's seat (3p) or team (2v2) in a game."""
    seat = list(m.bot_ids).index(bot)
    return seat if m.players == 3 else seat % 2


@dataclass
class Totals:
    """What the standings should say about one bot, counted from the games themselves."""

    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    score: int = 0

    @property
    def points(self) -> float:
        """1 a win, 1/2 a draw."""
        return self.wins + self.draws / 2


def totals(games: Sequence[match_pb2.Match]) -> dict[str, Totals]:
    """Per-bot games, wins, draws, losses and summed final score of its side."""
    out: dict[str, Totals] = {}
    for m in games:
        res = m.result
        for bot in dict.fromkeys(m.bot_ids):  # a bot on both seats of a team counts once
            t = out.setdefault(bot, Totals())
            s = side(m, bot)
            t.games += 1
            t.score += res.final_scores[s]
            if res.HasField("winner"):
                if res.winner == s:
                    t.wins += 1
                else:
                    t.losses += 1
            elif res.placement[list(m.bot_ids).index(bot)] == 1:
                t.draws += 1
            else:
                t.losses += 1
    return out


def check_standings(st: tournament_pb2.Standings, games: Sequence[match_pb2.Match]) -> None:
    """GetStandings agrees with the games: every row's counts, the order, the crosstable."""
    want = totals(games)
    assert st.matches_done == len(games) == st.matches_total
    assert {row.bot_id for row in st.rows} == set(want)
    for row in st.rows:
        t = want[row.bot_id]
        got = (row.games, row.wins, row.draws, row.losses, row.points, row.score)
        assert got == (t.games, t.wins, t.draws, t.losses, t.points, t.score), row
        assert row.forfeits == 0
    if st.HasField("bracket"):  # by how far each bot got: the champion first
        assert not st.bracket.champion_bot_id or st.rows[0].bot_id == st.bracket.champion_bot_id
    elif st.HasField("ranking"):  # the format's own ranking orders the rows (a Swiss's)
        assert [row.bot_id for row in st.rows] == [b for r in st.ranking.rows for b in r.bot_ids]
        assert [row.rank for row in st.rows] == [r.rank for r in st.ranking.rows
                                                 for _ in r.bot_ids]
    else:
        order = [(-row.points, -row.score) for row in st.rows]
        assert order == sorted(order), "rows are not best first"
    if not st.HasField("ranking"):
        assert [row.rank for row in st.rows] == list(range(1, len(st.rows) + 1))
    # Crosstable: a game between two bots counts for both, mirrored.
    cells = {(row.bot_id, c.opponent_bot_id): (c.games, c.wins, c.draws, c.losses)
             for row in st.crosstable for c in row.cells}
    met: Counter[tuple[str, str]] = Counter()
    for m in games:
        for a in set(m.bot_ids):
            for b in set(m.bot_ids):
                if a != b and side(m, a) != side(m, b):
                    met[a, b] += 1
    assert {k: v[0] for k, v in cells.items()} == dict(met)
    for (a, b), (n, w, d, lo) in cells.items():
        assert w + d + lo == n and cells[b, a] == (n, lo, d, w)


def check_recorded_once(r: redis.Redis, tid: str, pool: str,
                        events: Sequence[Event]) -> list[str]:
    """Every match the tournament created has exactly one result, sits once in the pool's
    results, is announced started and finished once, and the events run 1..N; returns the
    match ids."""
    created: list[str] = r.zrange(keys.tournament_matches(tid), 0, -1)  # type: ignore[assignment]
    assert len(created) == len(set(created))
    assert created and all(r.exists(keys.result(mid)) for mid in created)
    pool_ids: list[str] = r.zrange(keys.results(pool), 0, -1)  # type: ignore[assignment]
    mine = [mid for mid in pool_ids if mid.startswith(tid + "-")]
    assert sorted(mine) == sorted(created)
    assert not set(created) & set(r.smembers(keys.OPEN_MATCHES))  # type: ignore[arg-type]
    check_sequence(events)
    kinds = Counter(ev.WhichOneof("event") for ev in events)
    started = Counter(ev.match_started.match_id for ev in events
                      if ev.WhichOneof("event") == "match_started")
    ended = Counter(ev.match_finished.match_id for ev in events
                    if ev.WhichOneof("event") == "match_finished")
    assert started == ended == Counter(created), (started, ended)
    assert kinds["tournament_finished"] == 1 and events[-1].WhichOneof("event") == \
        "tournament_finished"
    # The stored stream agrees with what was streamed, entry for entry.
    stored = r.xrange(keys.tournament_events(tid))
    assert [eid for eid, _ in stored] == [f"{ev.sequence}-0" for ev in events]
    return created


def check_sequence(events: Sequence[Event], first: int = 1) -> None:
    """Sequences first, first+1, ... without a gap or a repeat."""
    assert [ev.sequence for ev in events] == list(range(first, first + len(events)))


def bare(ev: Event) -> bytes:
    """An event without the standings the servicer attaches when it sends it (they are the
    standings at sending time, so a replay may carry newer ones)."""
    copy = Event()
    copy.CopyFrom(ev)
    kind = copy.WhichOneof("event")
    if kind == "standings_changed":
        copy.standings_changed.ClearField("standings")
    elif kind == "tournament_finished":
        copy.tournament_finished.ClearField("standings")
    return copy.SerializeToString(deterministic=True)


@dataclass
class Watcher:
    """WatchTournament in a thread, from `after` to the end (or to `stop_after` events, then
    it hangs up)."""

    admin: Admin
    tid: str
    after: int = 0
    stop_after: int | None = None
    events: list[Event] = field(default_factory=list)
    error: BaseException | None = None
    thread: threading.Thread | None = None

    def start(self) -> Watcher:
        """Begin watching."""
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def _run(self) -> None:
        req = tournament_pb2.WatchTournamentRequest(tournament_id=self.tid,
                                                    after_sequence=self.after)
        call = self.admin.tournaments.WatchTournament(req, timeout=180)
        try:
            for ev in call:
                self.events.append(ev)
                if self.stop_after is not None and len(self.events) >= self.stop_after:
                    call.cancel()  # hang up mid-stream
                    return
        except BaseException as exc:  # handed to the test thread by join()
            self.error = exc

    def join(self, timeout: float = 120.0) -> list[Event]:
        """The events, once the stream ended."""
        assert self.thread is not None
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"watch of {self.tid} did not end"
        if self.error is not None:
            raise self.error
        return self.events


def watch_all(admin: Admin, tid: str, after: int = 0) -> list[Event]:
    """Every event after `after`, to the end, in this thread."""
    return Watcher(admin, tid, after).start().join()


@contextlib.contextmanager
def logs_on_failure(stack: Stack, tail: int = 40) -> Iterator[None]:
    """On an error, print the end of every process log (pytest shows it with the failure):
    the temp folder holding the logs may be gone by the time anyone looks."""
    try:
        yield
    except BaseException:
        for proc in stack.procs:
            lines = proc.text().splitlines()[-tail:]
            print(f"---- {proc.log.name} (pid {proc.popen.pid}) ----", *lines, sep="\n")
        raise
