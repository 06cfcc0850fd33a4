"""The bot SDK: connect a `clients.bot.Bot` to a referee and play every match it is given.

    from clients.sdk import register, run_bot
    bot_id, token = register("127.0.0.1:50051", "my-bot")
    run_bot(MyBot, "127.0.0.1:50051", token)   # blocks; Ctrl-C to stop

One Play stream carries all of the bot's matches. Each (match, seat) gets its
own Bot instance, seeded from the match id and seat; decisions of different
matches run concurrently in a thread pool so a slow decision in one match does
not hold up another. The stream reconnects with exponential backoff and jitter;
the referee redelivers whatever was pending, and the events the runner missed
after the last one it handled (it names that one's `event_id` when it reconnects),
so a reconnect loses nothing: a match whose MatchEnded came while the stream was
down still ends here. The referee's Welcome lists the matches under way, so even
a runner that was away longer than the referee keeps events forgets the others.

Until a referee has answered once, a failed connection is not retried (unless
`wait`): `NoReferee` says why in one sentence (nothing listens there, or TLS
against plaintext), since retrying a wrong address or a wrong `--tls` only hides
the mistake behind a loop of reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import random
import signal
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import grpc

from clients import wire
from clients.bot import Bot, bad_answer
from clients.channel import Target, diagnose, not_answered, rpc_failure, target_of
from clients.wire import POOL_CHOICES, pool_to_pb
from moon import Action, Observation
from proto.moon.v1 import arena_pb2, arena_pb2_grpc, bot_pb2, bot_pb2_grpc

__all__ = ["ARENA_POOLS", "REFEREE_ENV", "TOKEN_ENV", "BotRunner", "FatalStreamError", "NoReferee",
           "from_environment", "register", "rpc_failure", "run_bot"]

log = logging.getLogger("moonshot.bot")

_CHANNEL_OPTIONS = [
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
]


_Call = grpc.aio.StreamStreamCall[bot_pb2.PlayRequest, bot_pb2.PlayResponse]
LAST_EVENT_ID = "moonshot-last-event-id"  # metadata: resume the events after this one
_ARENA_POOLS = {p: pool_to_pb(p) for p in POOL_CHOICES}
ARENA_POOLS = tuple(_ARENA_POOLS)
_ENDED = 64  # bots of matches found over at a welcome, kept for a MatchEnded replayed next


class FatalStreamError(Exception):
    """The referee refused the bot for good (bad token, or replaced by a newer stream)."""


class NoReferee(FatalStreamError):
    """No referee answered before the bot ever connected; the message says why."""


def register(server: str | Target, name: str, admin_token: str | None = None,
             timeout: float = 10.0, previous: str = "") -> tuple[str, str]:
    """Register a bot named `name`; return (bot_id, token). The token is shown only once.
    `server` is HOST:PORT, or a `clients.channel.Target` (for TLS). `admin_token` is the
    token sent, if any: an author's (the bot is theirs; `previous` names one of their bots
    this one is the next version of) or the admin's. A refusal (a name taken, no referee
    there) raises grpc.RpcError: `rpc_failure(exc, server)` says it in one line."""
    metadata = (("authorization", f"Bearer {admin_token}"),) if admin_token else ()
    with target_of(server).channel() as channel:
        stub = bot_pb2_grpc.BotServiceStub(channel)
        resp = stub.RegisterBot(bot_pb2.RegisterBotRequest(name=name, previous=previous),
                                metadata=metadata, timeout=timeout)
    return resp.bot_id, resp.token


def _seed_of(match_id: str, seat: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{match_id}/{seat}".encode()).digest()[:8], "big")


@dataclass
class BotRunner:
    """Plays a bot over one Play stream, reconnecting as needed."""

    factory: Callable[[int | None], Bot]
    server: str | Target
    token: str
    threads: int = 8  # 0: decide inline on the event loop (for instant bots)
    max_backoff: float = 30.0
    wait: bool = False  # keep trying when no referee answers before the first connection
    arenas: tuple[str, ...] = ()  # pools whose arena the bot joins once connected (3p, 2v2)
    connected: bool = False  # a referee has welcomed the bot (reconnects are retried)
    decisions: int = 0
    bots: dict[tuple[str, int], Bot] = field(default_factory=dict)  # (match, seat) in play
    last_event_id: str = ""  # of the newest kept event handled: where a reconnect resumes
    _ended: OrderedDict[tuple[str, int], Bot] = field(default_factory=OrderedDict)
    _stop: asyncio.Event | None = None
    _arena_stub: arena_pb2_grpc.ArenaServiceAsyncStub | None = None
    _pool: ThreadPoolExecutor | None = None
    _tracebacks: set[tuple[object, ...]] = field(default_factory=set)  # places the bot raised from
    # Matches under way with the bot in a seat: match id -> its disconnect grace in ms
    # (None when unknown: under way at a welcome, its MatchStarted not seen).
    under_way: dict[str, int | None] = field(default_factory=dict)
    _finishing: set[str] | None = None  # set by finish_then_stop: the games it waits for

    def stop(self) -> None:
        """Ask `run` to return after the current stream ends."""
        if self._stop is not None:
            self._stop.set()

    def finish_then_stop(self) -> list[str]:
        """Take no new arena games and stop once the matches under way now have ended;
        return those (stopped at once when there are none). Matches that start meanwhile
        (a tournament's next game) are played while the runner waits, and left when it
        stops."""
        self._finishing = set(self.under_way)
        if not self._finishing:
            self.stop()
        return sorted(self._finishing)

    def _check_finished(self) -> None:
        if self._finishing is not None and not self._finishing & set(self.under_way) and (
                self._stop is None or not self._stop.is_set()):
            later = self.forfeits("started since Ctrl-C")
            log.warning("the games under way at Ctrl-C are over: stopping%s",
                        f"; {later}" if later else "")
            self.stop()

    def forfeits(self, which: str = "under way") -> str:
        """What leaving now costs, for people: the matches under way, which forfeit after
        their disconnect grace unless the bot comes back ("" when there are none)."""
        if not self.under_way:
            return ""
        n = len(self.under_way)
        graces = set(self.under_way.values())
        grace = f"{'its' if n == 1 else 'their'} disconnect grace"
        if len(graces) == 1 and (g := next(iter(graces))) is not None:
            grace += f" ({_seconds(g)})"
        games = f"the game {which}" if n == 1 else f"the {n} games {which}"
        return (f"{games} ({', '.join(sorted(self.under_way))}) "
                f"{'is' if n == 1 else 'are'} forfeited after {grace} unless the bot "
                "comes back")

    async def run_interruptible(self) -> None:
        """`run`, with Ctrl-C handled: the first takes no new arena games and finishes the
        matches under way (saying which), a second leaves at once (saying what that
        forfeits); either way the runner leaves its arenas. Outside the main thread, where
        signals cannot be handled, it is `run`."""
        loop = asyncio.get_running_loop()
        presses = 0

        def on_interrupt() -> None:
            nonlocal presses
            presses += 1
            if presses == 1:
                games = self.finish_then_stop()
                if not games:
                    log.warning("Ctrl-C: no game under way: stopping")
                else:
                    n = len(games)
                    log.warning(
                        "Ctrl-C: finishing %s under way (%s) and taking no new arena games; "
                        "Ctrl-C again to leave now (%s)", "the game" if n == 1 else
                        f"the {n} games", ", ".join(games),
                        "it would be forfeited" if n == 1 else "they would be forfeited")
                    if self.arenas:
                        leaving.append(loop.create_task(self.leave_arenas()))
                return
            said = self.forfeits()
            log.warning("Ctrl-C again: leaving now%s", f"; {said}" if said else "")
            self.stop()

        leaving: list[asyncio.Task[None]] = []
        try:
            loop.add_signal_handler(signal.SIGINT, on_interrupt)
        except (NotImplementedError, RuntimeError, ValueError):
            await self.run()
            return
        try:
            await self.run()
        finally:
            loop.remove_signal_handler(signal.SIGINT)
        if presses and self.arenas:
            for task in leaving:
                with contextlib.suppress(Exception):
                    await task
            await self.leave_arenas()

    async def run(self) -> None:
        """Connect, play, reconnect on failure; return when stopped or refused for good."""
        self._stop = asyncio.Event()
        self._pool = ThreadPoolExecutor(self.threads) if self.threads else None
        backoff = 0.25
        said = False  # the reason no referee answered was logged (with `wait`)
        try:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    await self._session()
                    reason = "stream ended"
                except FatalStreamError:
                    raise
                except grpc.aio.AioRpcError as exc:
                    code = exc.code()
                    if code in (grpc.StatusCode.UNAUTHENTICATED,
                                grpc.StatusCode.PERMISSION_DENIED):  # not a bot's token
                        raise FatalStreamError(
                            f"referee refused the token: {exc.details()}") from None
                    if code == grpc.StatusCode.ABORTED:
                        raise FatalStreamError(
                            f"stream closed by the referee: {exc.details()}") from None
                    reason = f"{code.name}: {exc.details()}"
                    if (not self.connected and code == grpc.StatusCode.UNAVAILABLE
                            and not_answered(exc.details() or "")):
                        if not self.wait or not said:
                            why = await asyncio.to_thread(diagnose, target_of(self.server))
                            if not self.wait:
                                raise NoReferee(why) from None
                            log.warning("%s; waiting for a referee there (wait)", why)
                            said = True
                        reason = ""
                if self._stop.is_set():
                    break
                if time.monotonic() - started > 10:
                    backoff = 0.25  # the last session was healthy: start over gently
                delay = backoff * random.uniform(0.5, 1.5)
                if reason:
                    log.warning("disconnected (%s); reconnecting in %.2fs", reason, delay)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), delay)
                backoff = min(backoff * 2, self.max_backoff)
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)

    async def _session(self) -> None:
        assert self._stop is not None
        async with target_of(self.server).aio_channel(_CHANNEL_OPTIONS) as channel:
            stub = bot_pb2_grpc.BotServiceStub(channel)
            metadata = [("authorization", f"Bearer {self.token}")]
            if self.last_event_id:
                metadata.append((LAST_EVENT_ID, self.last_event_id))
            call = stub.Play(metadata=tuple(metadata))
            self._arena_stub = arena_pb2_grpc.ArenaServiceStub(channel)
            # One task reads, one writes (grpc.aio allows one write at a time per call),
            # so neither a read nor a decision waits for a write to complete.
            outbox: asyncio.Queue[bot_pb2.PlayRequest] = asyncio.Queue()
            tasks: set[asyncio.Task[None]] = set()
            reader = asyncio.create_task(self._read(call, outbox, tasks))
            writer = asyncio.create_task(self._write(call, outbox))
            stopper = asyncio.create_task(self._stop.wait())
            try:
                done, _ = await asyncio.wait({reader, writer, stopper},
                                             return_when=asyncio.FIRST_COMPLETED)
                if stopper in done:
                    call.cancel()
                    return
                for t in done:
                    t.result()  # the error that ended the stream, if any
            finally:
                for t in (reader, writer, stopper, *tasks):
                    t.cancel()

    async def _read(self, call: _Call, outbox: asyncio.Queue[bot_pb2.PlayRequest],
                    tasks: set[asyncio.Task[None]]) -> None:
        while True:
            msg = await call.read()
            if msg is grpc.aio.EOF or not isinstance(msg, bot_pb2.PlayResponse):
                return
            kind = msg.WhichOneof("message")
            if kind == "ping":  # answered here, at once: the referee checks we are alive
                outbox.put_nowait(bot_pb2.PlayRequest(
                    pong=bot_pb2.PlayRequest.Pong(nonce=msg.ping.nonce)))
            elif kind != "decision_request":
                self._note(kind, msg)
                if kind == "welcome" and self.arenas and self._finishing is None:
                    await self._join_arenas()
                if msg.event_id:
                    self.last_event_id = msg.event_id
            elif self._pool is None:  # instant bots: decide right here, no task
                answer = self._decide(msg.decision_request)
                if answer is not None:
                    outbox.put_nowait(answer)
            else:
                task = asyncio.create_task(self._decide_in_pool(msg.decision_request, outbox))
                tasks.add(task)
                task.add_done_callback(tasks.discard)

    async def _write(self, call: _Call, outbox: asyncio.Queue[bot_pb2.PlayRequest]) -> None:
        while True:
            answer = await outbox.get()
            # A broken stream shows up on the read side, which ends the session; a write
            # racing its end (grpc raises InvalidStateError once the RPC has finished)
            # must not take the bot process down with it.
            with contextlib.suppress(grpc.aio.UsageError, grpc.aio.AioRpcError,
                                     asyncio.InvalidStateError):
                await call.write(answer)

    async def _join_arenas(self) -> None:
        """Join the arenas asked for (again at each welcome: joining twice changes nothing).
        A pool whose arena does not run stops the runner: that is a mistake to fix."""
        assert self._arena_stub is not None
        metadata = (("authorization", f"Bearer {self.token}"),)
        for pool in self.arenas:
            try:
                resp = await self._arena_stub.JoinArena(
                    arena_pb2.JoinArenaRequest(pool=_ARENA_POOLS[pool]), metadata=metadata,
                    timeout=10)
            except grpc.aio.AioRpcError as exc:
                if exc.code() in (grpc.StatusCode.FAILED_PRECONDITION,
                                  grpc.StatusCode.INVALID_ARGUMENT,
                                  grpc.StatusCode.UNAUTHENTICATED):
                    raise FatalStreamError(f"cannot join the {pool} arena: {exc.details()}"
                                           ) from None
                raise
            log.info("%s the %s arena", "joined" if resp.joined else "still in", pool)

    async def leave_arenas(self) -> None:
        """Leave the arenas this runner joined (a clean stop), on a channel of its own."""
        metadata = (("authorization", f"Bearer {self.token}"),)
        async with target_of(self.server).aio_channel(_CHANNEL_OPTIONS) as channel:
            stub = arena_pb2_grpc.ArenaServiceStub(channel)
            for pool in self.arenas:
                with contextlib.suppress(grpc.aio.AioRpcError):
                    await stub.LeaveArena(arena_pb2.LeaveArenaRequest(pool=_ARENA_POOLS[pool]),
                                          metadata=metadata, timeout=5)
                    log.info("left the %s arena", pool)

    def _note(self, kind: str | None, msg: bot_pb2.PlayResponse) -> None:
        if kind == "welcome":
            w = msg.welcome
            log.info("connected to %s as %s (%s)", target_of(self.server).address, w.name,
                     w.bot_id)
            if w.replaced_another and not self.connected:  # not this process's own reconnect
                log.warning("another process was connected with this bot's token and has "
                            "been disconnected: two processes with one token replace each "
                            "other; if that was not you, rotate the token "
                            "(moonshot bot rotate %s)", w.name)
            self.connected = True
            if w.HasField("live_matches"):
                live = set(w.live_matches.match_ids)
                self._forget_ended(live)
                self.under_way = {m: self.under_way.get(m) for m in live}
                self._check_finished()
        elif kind == "match_started":
            ms = msg.match_started
            log.info("match %s started: seat %d of %s", ms.match_id, ms.seat, list(ms.seat_names))
            self.under_way[ms.match_id] = (ms.faults.disconnect_grace_ms
                                           if ms.HasField("faults") else None)
        elif kind == "match_ended":
            me = msg.match_ended
            key = (me.match_id, me.seat)
            bot = self.bots.pop(key, None) or self._ended.pop(key, None)
            log.info("match %s ended: %s, placement %s (%d in play)", me.match_id,
                     me.result.end, list(me.result.placement), len(self.bots))
            if bot is not None:
                with contextlib.suppress(Exception):
                    bot.game_over(wire.result_from_pb(me.result))
            self.under_way.pop(me.match_id, None)
            self._check_finished()
        elif kind == "decision_rejected":
            d = msg.decision_rejected
            log.warning("decision %s rejected: %s", d.request_id, d.message)

    def _forget_ended(self, live: set[str]) -> None:
        """Drop the bots of matches no longer under way (their MatchEnded may still come,
        replayed: the last few are kept for it)."""
        for key in [k for k in self.bots if k[0] not in live]:
            self._ended[key] = self.bots.pop(key)
            log.info("match %s is over (its end came while away)", key[0])
        while len(self._ended) > _ENDED:
            self._ended.popitem(last=False)

    def _inputs(self, req: bot_pb2.PlayResponse.DecisionRequest
                ) -> tuple[Bot, Observation, tuple[Action, ...]]:
        key = (req.match_id, req.seat)
        bot = self.bots.get(key)
        if bot is None:
            bot = self.bots[key] = self.factory(_seed_of(*key))
        return bot, wire.observation_from_pb(req.observation), wire.actions_from_pb(
            req.legal_actions)

    def _answer(self, req: bot_pb2.PlayResponse.DecisionRequest, choice: object,
                legal: Sequence[Action]) -> bot_pb2.PlayRequest | None:
        """The answer to send, or None (said once in the log) when the bot's choice is not
        an action: nothing is sent, so the referee's clock runs out and the strike says
        "no answer". An action that is not legal here is sent: the referee judges it."""
        if not isinstance(choice, Action):
            log.error("%s seat %d: the bot %s; not answering %s (the referee's clock will "
                      "run out: a strike)", req.match_id, req.seat, bad_answer(choice, legal),
                      req.request_id)
            return None
        self.decisions += 1
        log.debug("%s seat %d: %s", req.match_id, req.seat, choice.label)
        return wire.decision_pb(req.request_id, choice)

    def _raised(self, req: bot_pb2.PlayResponse.DecisionRequest, exc: BaseException,
                skip: int = 0) -> None:
        """Say once, in one record, that the bot raised on `req` and that nothing is sent;
        its traceback (the bot's own frames: `skip` of the SDK's are dropped) the first time
        it raises from that place, a line after that."""
        tb = exc.__traceback__
        for _ in range(skip):
            tb = tb.tb_next if tb is not None else None
        frames = traceback.extract_tb(tb) if tb is not None else []
        where = (type(exc), frames[-1].filename, frames[-1].lineno) if frames else (type(exc),)
        first = str(exc).strip().splitlines()
        detail = f"{type(exc).__name__}: {first[0]}" if first else type(exc).__name__
        said = f"{req.match_id} seat {req.seat}: the bot raised {detail}; not answering " \
               f"{req.request_id} (the referee's clock will run out: a strike)"
        if where in self._tracebacks:
            log.error("%s (traceback above)", said)
            return
        if len(self._tracebacks) < 64:
            self._tracebacks.add(where)
        text = "".join(traceback.format_exception(type(exc), exc, tb)).rstrip()
        log.error("%s\n%s", said, text)

    def _decide(self, req: bot_pb2.PlayResponse.DecisionRequest) -> bot_pb2.PlayRequest | None:
        """Decide on the event loop; None when the bot failed (the clock will run out)."""
        try:
            bot, obs, legal = self._inputs(req)
        except Exception as exc:
            self._raised(req, exc, skip=1)
            return None
        choice, failure = _act(bot, obs, legal)
        if failure is not None:
            self._raised(req, failure, skip=1)
            return None
        return self._answer(req, choice, legal)

    async def _decide_in_pool(self, req: bot_pb2.PlayResponse.DecisionRequest,
                              outbox: asyncio.Queue[bot_pb2.PlayRequest]) -> None:
        assert self._pool is not None
        try:
            bot, obs, legal = self._inputs(req)
        except Exception as exc:
            self._raised(req, exc, skip=1)
            return
        choice, failure = await asyncio.get_running_loop().run_in_executor(
            self._pool, _act, bot, obs, legal)
        if failure is not None:
            self._raised(req, failure, skip=1)
            return
        answer = self._answer(req, choice, legal)
        if answer is not None:
            outbox.put_nowait(answer)


def _act(bot: Bot, obs: Observation, legal: tuple[Action, ...]
         ) -> tuple[object, BaseException | None]:
    """The bot's choice, or what it raised (its traceback starts at this frame)."""
    try:
        return bot.act(obs, legal), None
    except Exception as exc:
        return None, exc


def _seconds(ms: int) -> str:
    return f"{ms / 1000:g} s"


REFEREE_ENV = "MOONSHOT_REFEREE"  # where a hosted bot's sandbox says its referee is
TOKEN_ENV = "MOONSHOT_TOKEN"  # the bot token a sandbox gives the bot it runs


def from_environment(server: str | Target | None = None, token: str | None = None
                     ) -> tuple[str | Target, str]:
    """`server` and `token`, each taken from the environment when not given: $MOONSHOT_REFEREE
    (a gRPC target such as `unix:///run/moonshot/referee.sock` or HOST:PORT) and
    $MOONSHOT_TOKEN, as the stack's sandbox sets them for a hosted bot. ValueError naming
    what is missing."""
    server = server or os.environ.get(REFEREE_ENV) or None
    token = token or os.environ.get(TOKEN_ENV) or None
    missing = [f"the referee (${REFEREE_ENV})" if not server else "",
               f"the token (${TOKEN_ENV})" if not token else ""]
    if not server or not token:
        raise ValueError("run_bot needs " + " and ".join(m for m in missing if m) +
                         ": pass it, or set it in the environment")
    return server, token


def run_bot(factory: Callable[[int | None], Bot], server: str | Target | None = None,
            token: str | None = None, threads: int = 8, wait: bool = False) -> None:
    """Play until interrupted (blocking); raises FatalStreamError if refused for good, and
    NoReferee if no referee answers at the start (unless `wait`: then it keeps trying).
    Without `server` or `token`, $MOONSHOT_REFEREE and $MOONSHOT_TOKEN say them (a hosted
    bot runs unchanged in the stack's sandbox); `server` may be a `unix:` target."""
    server, token = from_environment(server, token)
    runner = BotRunner(factory, server, token, threads=threads, wait=wait)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(runner.run_interruptible())
