"""Live updates: one upstream gRPC stream per tournament or match, shared by every page.

The referee allows 16 watch streams per address, and every page of this web server
comes from one address, so pages never open their own stream: a `Hub` keeps one
`Feed` per followed thing, and each browser's server-sent-event connection reads
from it. A feed is numbered by the upstream sequence, so a browser that reconnects
(EventSource sends `Last-Event-ID` by itself) resumes exactly after the last event it
got, and a feed whose upstream drops resumes after its own last sequence.

- `TournamentFeed`: WatchTournament, from the sequence of GetStandings. Each event
  changes the standings, so the feed keeps only the newest rendered snapshot: a page
  that missed ten events gets the one snapshot that includes them.
- `MatchFeed`: WatchMatch of a single match while it runs (public events only: bids,
  contracts, plays, scores; a discard stays hidden), kept whole, each event turned
  into a step the replay viewer draws. Trick winners come from the engine's tables.
- `StatusFeed`: a game whose board is still in play shows only its status; this
  polls GetMatch for it and says `ready` once the transcript is public.
- `TestFeed`: WatchTest of a test of a change, from the sequence of GetTest; like a
  tournament's, a rendered snapshot of the page's parts and its charts' data.

The three that follow a Watch* stream do it through one loop, `Feed.follow`: a snapshot
to start from, the stream resumed after the last sequence, backoff, a fresh start on
OUT_OF_RANGE, and one `gone` for a thing that no longer exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from clients.web.api import PublicApi, is_gone
from clients.web.views import status_of_match
from moon.contracts import POWER, contract_name
from proto.moon.v1 import change_pb2, game_pb2, match_pb2, tournament_pb2

__all__ = ["Feed", "Hub", "Item", "MatchFeed", "PublicGame", "StatusFeed", "TestFeed",
           "TournamentFeed", "sse"]

log = logging.getLogger("moonshot.web")

RenderTournament = Callable[[tournament_pb2.Tournament, tournament_pb2.Standings],
                            Awaitable[dict[str, Any]]]
RenderTest = Callable[[str], Awaitable[dict[str, Any]]]
_BACKOFF_MAX_S = 10.0
_STATUS_POLL_S = 2.0
_RENDER_DELAY_S = 0.2  # events come in bursts (a result, then the standings): one render
_POLL_S = 2.0  # how often a tournament's feed asks whether games finished in silence


def sse(event: str, data: str, seq: int | None = None) -> str:
    """One server-sent event (data without newlines: compact JSON)."""
    head = f"id: {seq}\n" if seq is not None else ""
    return f"{head}event: {event}\ndata: {data}\n\n"


@dataclass(frozen=True, slots=True)
class Item:
    """One event for the pages: its sequence, its SSE event name and its JSON; `version`
    counts the feed's publications (a snapshot redrawn at one sequence gets a new one)."""

    seq: int
    event: str
    data: str
    version: int = 0

    @property
    def key(self) -> tuple[int, int]:
        """What orders items: the sequence, then the version."""
        return self.seq, self.version


@dataclass(eq=False)
class Feed:
    """Items from one upstream source, and the pages waiting for the next ones."""

    api: PublicApi
    key: str
    items: list[Item] = field(default_factory=list)
    done: bool = False
    users: int = 0
    task: asyncio.Task[None] | None = None
    snapshot: bool = False  # only the newest item counts (it includes all before it)
    version: int = 0  # items published so far
    _tick: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def last_seq(self) -> int:
        """The sequence of the newest item (0 before any)."""
        return self.items[-1].seq if self.items else 0

    def start(self) -> None:
        """Start following the upstream source."""
        self.task = asyncio.create_task(self._guarded(), name=f"feed {self.key}")

    async def _guarded(self) -> None:
        try:
            await self.run()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("feed %s failed", self.key)
            self.publish(Item(self.last_seq + 1, "failed", json.dumps(
                {"message": "the live feed stopped; reload the page"})))
        finally:
            self.finish()

    async def run(self) -> None:
        """Follow the source, calling `publish` with each new item."""
        raise NotImplementedError

    def publish(self, item: Item) -> None:
        """Add an item and wake every waiting page."""
        self.version += 1
        item = Item(item.seq, item.event, item.data, self.version)
        if self.snapshot:
            self.items = [item]
        else:
            self.items.append(item)
        self._wake()

    def finish(self) -> None:
        """No more items will come."""
        if not self.done:
            self.done = True
            self._wake()

    def _wake(self) -> None:
        tick, self._tick = self._tick, asyncio.Event()
        tick.set()

    async def wait_after(self, last: tuple[int, int], timeout: float) -> list[Item] | None:
        """Items after `last` (an item's key: at once if there are some, or if the feed is
        done: then possibly none); None if nothing came within `timeout` seconds."""
        fresh = [i for i in self.items if i.key > last]
        if fresh or self.done:
            return fresh
        tick = self._tick
        try:
            await asyncio.wait_for(tick.wait(), timeout)
        except TimeoutError:
            return None
        return [i for i in self.items if i.key > last]

    async def retry_pause(self, failures: int, exc: grpc.aio.AioRpcError | None = None) -> None:
        """Back off before trying the upstream again; say why on the first failure of a
        run of them (a referee out of watch slots, or gone), so an operator knows."""
        if exc is not None and failures == 1:
            log.warning("%s: live updates stopped: the referee answered %s (%s); retrying",
                        self.key, exc.code().name, exc.details())
        await asyncio.sleep(min(0.25 * 2 ** failures, _BACKOFF_MAX_S))

    async def follow(self, what: str, start: Callable[[], Awaitable[bool]],
                     stream: Callable[[], AsyncIterable[Any]], apply: Callable[[Any], None],
                     end: Callable[[], Awaitable[None]], after: Callable[[], int]) -> None:
        """The one loop of every feed that follows a Watch* stream (as the referee's
        `server.follow` is the one loop that serves them): `start` from a snapshot (False:
        over already, nothing to follow), read `stream` (resuming after the sequence
        `after` gives), `apply` each event, `end` once the stream ends after the last;
        back off and resume on errors, start again from the present when the referee no
        longer has what came after (OUT_OF_RANGE), and say `gone`, once, for a `what`
        that no longer exists."""
        failures = 0
        fresh = True
        while True:
            try:
                if fresh:
                    fresh = False
                    if not await start():
                        return
                async for ev in stream():
                    failures = 0
                    apply(ev)
                await end()
                return
            except grpc.aio.AioRpcError as exc:
                if is_gone(exc):
                    self.publish(Item(after() + 1, "gone", json.dumps(
                        {"message": exc.details() or f"no such {what}"})))
                    return
                if exc.code() == grpc.StatusCode.OUT_OF_RANGE:
                    fresh = True  # start again from the present
                failures += 1
                await self.retry_pause(failures, exc)


@dataclass(eq=False)
class TournamentFeed(Feed):
    """A tournament's standings as they change, each a rendered snapshot."""

    tournament_id: str = ""
    render: RenderTournament | None = None
    tournament: tournament_pb2.Tournament | None = None
    standings: tournament_pb2.Standings | None = None
    seq: int = 0
    _pending: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        self.snapshot = True

    async def run(self) -> None:
        """GetStandings, then WatchTournament after its sequence, until the end; meanwhile
        a poll redraws the page when games finish that no public event announces (a
        board's tables, before the board is released)."""
        poller = asyncio.create_task(self._poll(), name=f"poll {self.key}")
        try:
            await self._follow_events()
        finally:
            poller.cancel()

    async def _poll(self) -> None:
        """Every _POLL_S: GetTournament; on a change of games played, the standings (the
        boards in play) and a redraw."""
        while True:
            await asyncio.sleep(_POLL_S)
            t = self.tournament
            if t is None:
                continue
            try:
                fresh = await self.api.tournament(self.tournament_id)
                if (fresh.matches_done, fresh.status) == (t.matches_done, t.status):
                    continue
                st = await self.api.standings(self.tournament_id)
            except grpc.aio.AioRpcError:
                continue  # the event stream's retries say what is wrong
            if self.standings is not None and st.sequence < self.standings.sequence:
                continue  # older than what the events gave
            self.tournament, self.standings = fresh, st
            self.seq = max(self.seq, st.sequence)
            self._soon()

    async def _follow_events(self) -> None:
        async def start() -> bool:
            self.tournament = await self.api.tournament(self.tournament_id)
            self.standings = await self.api.standings(self.tournament_id)
            self.seq = self.standings.sequence
            await self._render()
            return self.tournament.status == tournament_pb2.TOURNAMENT_STATUS_RUNNING

        def apply(ev: tournament_pb2.WatchTournamentResponse) -> None:
            self._apply(ev)
            self._soon()

        async def end() -> None:  # the stream ends after TournamentFinished: render at once
            if self._pending is not None:
                self._pending.cancel()
            self.tournament = await self.api.tournament(self.tournament_id)
            await self._render()

        await self.follow("tournament", start,
                          lambda: self.api.watch_tournament(self.tournament_id, self.seq),
                          apply, end, lambda: self.seq)

    def _apply(self, ev: tournament_pb2.WatchTournamentResponse) -> None:
        self.seq = ev.sequence
        kind = ev.WhichOneof("event")
        t = self.tournament
        if kind == "standings_changed":
            self.standings = ev.standings_changed.standings
        elif kind == "match_finished" and t is not None:
            # The public stream counts released games; the tournament counts games played.
            t.matches_done = max(t.matches_done, ev.match_finished.matches_done)
            t.matches_total = ev.match_finished.matches_total
        elif kind == "tournament_finished":
            self.tournament = ev.tournament_finished.tournament
            self.standings = ev.tournament_finished.standings

    def _soon(self) -> None:
        if self._pending is None or self._pending.done():
            self._pending = asyncio.create_task(self._render_later())

    async def _render_later(self) -> None:
        await asyncio.sleep(_RENDER_DELAY_S)
        try:
            await self._render()
        except grpc.aio.AioRpcError as exc:
            log.info("feed %s: render failed (%s); the next event renders again", self.key,
                     exc.code())

    async def _render(self) -> None:
        assert self.render is not None
        t, st = self.tournament, self.standings
        if t is None or st is None:
            return
        seq = self.seq
        payload = await self.render(t, st)
        payload["seq"] = seq
        data = json.dumps(payload, separators=(",", ":"))
        # A redraw at the same sequence (a table finished, nothing released) is new too.
        if not self.items or seq > self.last_seq or data != self.items[-1].data:
            self.publish(Item(max(seq, self.last_seq), "state", data))


class PublicGame:
    """Folds a match's public events into steps for the replay viewer."""

    def __init__(self) -> None:
        self.players = 3
        self.hand = 0
        self.contract: int | None = None
        self.trick: list[tuple[int, int]] = []  # (seat, tile index) of the trick in play

    def step(self, ev: match_pb2.WatchMatchResponse) -> dict[str, Any] | None:
        """The step of one event, as JSON-ready data (None for nothing to draw)."""
        kind = ev.WhichOneof("event")
        if kind == "match_started":
            m = ev.match_started.match
            self.players = m.players or 3
            return {"k": "started", "players": self.players, "seats": list(m.seat_names)}
        if kind == "action_taken":
            return self._action(ev.action_taken)
        if kind == "hand_ended":
            h = ev.hand_ended
            return {"k": "hand", "hand": h.hand_number,
                    "bidder": h.bidder if h.HasField("bidder") else None,
                    "bid": h.bid if h.HasField("bid") else None,
                    "trump": contract_name(h.trump - 1) if h.trump else None,
                    "tricks_won": list(h.tricks_won),
                    "made": h.made if h.HasField("made") else None,
                    "points": list(h.points), "scores": list(h.scores)}
        if kind == "fault":
            f = ev.fault
            return {"k": "fault", "seat": f.seat, "strikes": f.strikes, "message": f.message,
                    "kind": match_pb2.WatchMatchResponse.Fault.Kind.Name(f.kind)
                    .removeprefix("KIND_").lower()}
        if kind == "match_finished":
            f2 = ev.match_finished
            res = f2.result
            return {"k": "finished", "status": status_of_match(f2.status), "error": f2.error,
                    "final": list(res.final_scores),
                    "winner": res.winner if res.HasField("winner") else None,
                    "end": res.end,
                    "forfeit": ({"seat": res.forfeit.seat, "reason": res.forfeit.reason}
                                if res.HasField("forfeit") else None)}
        return None

    def _action(self, a: match_pb2.WatchMatchResponse.ActionTaken) -> dict[str, Any] | None:
        if a.hand_number != self.hand:
            self.hand, self.contract, self.trick = a.hand_number, None, []
        base = {"hand": a.hand_number, "seat": a.seat}
        if a.kind == game_pb2.ACTION_KIND_PASS:
            return {"k": "bid", **base, "bid": "pass"}
        if a.kind == game_pb2.ACTION_KIND_BID:
            return {"k": "bid", **base, "bid": a.action.bid}
        if a.kind == game_pb2.ACTION_KIND_TRUMP:
            self.contract = a.action.id - 30
            return {"k": "trump", **base, "trump": contract_name(self.contract)}
        if a.kind == game_pb2.ACTION_KIND_DISCARD:
            return {"k": "discard", **base}  # which tile stays hidden until the end
        if a.kind == game_pb2.ACTION_KIND_PLAY and a.HasField("action"):
            tile = a.action.id - 70
            self.trick.append((a.seat, tile))
            winner = None
            if len(self.trick) == self.players:
                if self.contract is not None:
                    led = self.trick[0][1]
                    powers = POWER[self.contract][led]
                    winner = max(self.trick, key=lambda p: powers[p[1]])[0]
                self.trick = []
            t = a.action.tile
            return {"k": "play", **base, "tile": f"{t.high}-{t.low}", "winner": winner}
        return None


@dataclass(eq=False)
class MatchFeed(Feed):
    """A single match's public events while it runs, as viewer steps."""

    match_id: str = ""

    async def run(self) -> None:
        """WatchMatch from the start, resuming after the last sequence, to the end."""
        game = PublicGame()
        seq = 0

        async def start() -> bool:
            return True  # from the first event: nothing to show before it

        def apply(ev: match_pb2.WatchMatchResponse) -> None:
            nonlocal seq
            seq = ev.sequence
            step = game.step(ev)
            if step is not None:
                self.publish(Item(seq, "step", json.dumps(step, separators=(",", ":"))))

        async def end() -> None:
            """The stream ended after MatchFinished: nothing more to draw."""

        await self.follow("match", start, lambda: self.api.watch_match(self.match_id, seq),
                          apply, end, lambda: seq)


@dataclass(eq=False)
class StatusFeed(Feed):
    """The status of a game nobody may see more of yet; `ready` once it is public."""

    match_id: str = ""

    def __post_init__(self) -> None:
        self.snapshot = True

    async def run(self) -> None:
        """Poll GetMatch until the transcript is public (or the match failed)."""
        last = ""
        n = 0
        failures = 0
        while True:
            try:
                m = await self.api.match(self.match_id)
            except grpc.aio.AioRpcError as exc:
                if is_gone(exc):
                    self.publish(Item(n + 1, "gone", json.dumps({"message": exc.details()})))
                    return
                failures += 1
                await self.retry_pause(failures, exc)
                continue
            failures = 0
            status = status_of_match(m.status)
            if m.transcript_json or status == "failed":
                self.publish(Item(n + 1, "ready", json.dumps({"status": status})))
                return
            if status != last:
                n += 1
                last = status
                self.publish(Item(n, "status", json.dumps({"status": status})))
            await asyncio.sleep(_STATUS_POLL_S)


@dataclass(eq=False)
class TestFeed(Feed):
    """A test of a change as it moves: each event (a game started, a board released, a pair
    counted, the end) redraws the page's parts, the newest snapshot only."""

    test_id: str = ""
    render: RenderTest | None = None
    seq: int = 0
    status: int = 0
    _pending: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        self.snapshot = True

    async def run(self) -> None:
        """GetTest, then WatchTest after its sequence, until the end."""
        async def start() -> bool:
            t = (await self.api.test(self.test_id)).test
            self.seq, self.status = t.sequence, t.status
            await self._render()
            return t.status == change_pb2.TEST_STATUS_RUNNING

        def apply(ev: change_pb2.WatchTestResponse) -> None:
            self.seq = ev.sequence
            if self._pending is None or self._pending.done():
                self._pending = asyncio.create_task(self._render_later())

        async def end() -> None:  # the stream ends after the test's end: the last render
            if self._pending is not None:
                self._pending.cancel()
            await self._render()

        await self.follow("test", start, lambda: self.api.watch_test(self.test_id, self.seq),
                          apply, end, lambda: self.seq)

    async def _render_later(self) -> None:
        await asyncio.sleep(_RENDER_DELAY_S)
        try:
            await self._render()
        except grpc.aio.AioRpcError as exc:
            log.info("feed %s: render failed (%s); the next event renders again", self.key,
                     exc.code())

    async def _render(self) -> None:
        assert self.render is not None
        seq = self.seq
        payload = await self.render(self.test_id)
        payload["seq"] = max(seq, int(payload.get("seq", 0)))
        data = json.dumps(payload, separators=(",", ":"))
        if not self.items or payload["seq"] > self.last_seq or data != self.items[-1].data:
            self.publish(Item(max(payload["seq"], self.last_seq), "state", data))


@dataclass
class Hub:
    """The feeds that pages follow, each started on first use and dropped `linger`
    seconds after its last page left."""

    api: PublicApi
    render_tournament: RenderTournament
    linger: float = 30.0
    feeds: dict[str, Feed] = field(default_factory=dict)
    render_test: RenderTest | None = None

    def _make(self, kind: str, ident: str) -> Feed:
        key = f"{kind}:{ident}"
        if kind == "tournament":
            return TournamentFeed(self.api, key, tournament_id=ident,
                                  render=self.render_tournament)
        if kind == "match":
            return MatchFeed(self.api, key, match_id=ident)
        if kind == "test":
            return TestFeed(self.api, key, test_id=ident, render=self.render_test)
        return StatusFeed(self.api, key, match_id=ident)

    @contextlib.asynccontextmanager
    async def follow(self, kind: str, ident: str) -> AsyncIterator[Feed]:
        """The feed of `kind` (`tournament`, `test`, `match` or `status`) for `ident`, held open
        while the block runs."""
        key = f"{kind}:{ident}"
        feed = self.feeds.get(key)
        if feed is None:
            feed = self._make(kind, ident)
            self.feeds[key] = feed
            feed.start()
        feed.users += 1
        try:
            yield feed
        finally:
            feed.users -= 1
            if feed.users == 0:
                asyncio.get_running_loop().call_later(self.linger, self._drop, key, feed)

    def _drop(self, key: str, feed: Feed) -> None:
        if feed.users == 0 and self.feeds.get(key) is feed:
            del self.feeds[key]
            if feed.task is not None:
                feed.task.cancel()

    async def close(self) -> None:
        """Stop every feed."""
        tasks = [f.task for f in self.feeds.values() if f.task is not None]
        self.feeds.clear()
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
