"""One run of a match job as Redis sees it: the lease that makes it the match's one host,
what it reads, and every write it makes, each fenced by that lease.

Every write of a run checks, in the same atomic step, that the run still holds
`ms:match:{id}:lease` (a `store.locks.Lock`): the next decision request with the
log entry before it (`send`, the hot path, one script), a request withdrawn or
paused, a connection entry, the start of the run (status, first start, run count,
the bots' live sets and each seat's MatchStarted), a strike's notice, the result
with each seat's MatchEnded, the error that ended it. A run that stalled past its
lease while another run took the match over therefore writes nothing when it wakes:
it gets LostLease and stops. (The one write it still makes is giving back an answer
it popped, which belongs to the run that holds the lease.)

Everything a run tells a bot goes through here, one of two ways. A decision request
is stored in the bot's pending hash and published on its channel (`send`): the
pending hash is what a reconnect redelivers. Every other event (MatchStarted,
MatchEnded, a strike's DecisionRejected) is appended to the bot's event log
(`ms:bot:{id}:inbox`, a stream of the last EVENTS_KEEP_MS) and published with its
entry id (the batch script's NOTIFY), so a bot that was away gets it when it
reconnects (`store.streams`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from store import hosted as store_hosted
from store import ids, keys, messages
from store import matches as store_matches
from store.locks import Lock
from store.lua import FENCED_SEND_LUA, PRESENT_OR_WANT_LUA, SANDBOX_FITS_OR_WANT_LUA, Command
from store.messages import ConnectionEntry, DecisionRequest, Message
from store.records import SandboxLimits

__all__ = ["EVENTS_KEEP_MS", "LEASE_MS", "LostLease", "Run", "notify"]

LEASE_MS = 4000  # a dead run's lease lapses this long after its last renewal
EVENTS_KEEP_MS = 3_600_000  # a bot's events are kept this long for its reconnects


class LostLease(Exception):
    """Another run hosts the match now (this one stalled past its lease): this run stops,
    having written nothing since it last held the lease."""


def notify(bot_id: str, event: Message) -> Command:
    """The command that logs `event` in the bot's event log and publishes it."""
    return Command("NOTIFY", keys.inbox(bot_id),
                   (keys.events(bot_id), messages.encode(event), EVENTS_KEEP_MS))


@dataclass
class Run:
    """One run hosting one match; `run_id` is its lease's token."""

    r: redis.Redis
    match_id: str
    run_id: str
    lease: Lock = field(init=False)

    def __post_init__(self) -> None:
        self.lease = Lock(keys.lease(self.match_id), self.run_id, LEASE_MS)

    # ------------------------------------------------------------ reads

    def redis_us(self) -> int:
        """Redis's clock, in microseconds."""
        sec, usec = self.r.time()
        return int(sec) * 1_000_000 + int(usec)

    def log(self) -> list[Message]:
        """The match's log entries, in order."""
        raw: list[str] = self.r.lrange(keys.match_log(self.match_id), 0, -1)  # type: ignore[assignment]
        return [messages.decode(e, messages.LOG) for e in raw]

    def has_result(self) -> bool:
        """True once a run stored the match's result."""
        return bool(self.r.exists(keys.result(self.match_id)))

    def present(self, bot_id: str) -> bool:
        """True while the bot has a live stream (judged on Redis's clock, as the referee
        scored it: this machine's may be off). A hosted version without one is wanted,
        in the same step: a host starts it (its clock stands still, its grace runs)."""
        return bool(self.r.eval(PRESENT_OR_WANT_LUA, 3, keys.presence(bot_id),
                                store_hosted.key(bot_id), store_hosted.WANTED, bot_id))

    def sandbox_fits(self, bot_id: str, limits: SandboxLimits) -> bool:
        """True when the bot may be sent this match's requests under its event's sandbox
        limits: it is no hosted version, or its live sandbox runs within them, or a
        process of its author's plays. Otherwise it is wanted with these limits, in the
        same step: a host starts (or restarts) its sandbox under them."""
        return bool(self.r.eval(
            SANDBOX_FITS_OR_WANT_LUA, 5, store_hosted.key(bot_id), keys.presence(bot_id),
            store_hosted.WANTED, store_hosted.WANT_LIMITS, store_hosted.HOSTS, bot_id,
            json.dumps(limits.to_dict(), separators=(",", ":"))))

    def next_reply(self, timeout: float) -> str | None:
        """The next answer forwarded to the match (JSON), waiting up to `timeout` s."""
        item = self.r.blpop([keys.replies(self.match_id)], timeout=timeout)
        return None if item is None else str(item[1])

    def give_back(self, reply: str) -> None:
        """Put an answer back at the head of the match's replies: a run that lost its lease
        after popping it leaves it to the run that holds the lease (both runs send the
        same request ids). Not fenced, by its nature."""
        self.r.lpush(keys.replies(self.match_id), reply)

    # ------------------------------------------------------------ lease

    def acquire(self) -> bool:
        """Take the lease if free (or still ours)."""
        return self.lease.acquire(self.r)

    def extend(self) -> None:
        """Extend the lease; LostLease if this run no longer holds it."""
        if not self.lease.extend(self.r):
            raise self.lost()

    def release(self) -> None:
        """Drop the lease if this run holds it."""
        self.lease.release(self.r)

    def lost(self) -> LostLease:
        """What a fenced write that found another run's lease raises."""
        return LostLease(f"match {self.match_id}: another run holds the lease")

    def _batch(self, commands: Sequence[Command]) -> list[Any]:
        out = self.lease.batch(self.r, commands)
        if out is None:
            raise self.lost()
        return out

    # ----------------------------------------------------------- writes

    def begin(self, bot_ids: Sequence[str], started: Sequence[messages.MatchStarted],
              now: float) -> None:
        """The run starts hosting: the match is running (first started now, one run
        more), under way for each bot, and each seat's bot hears it started."""
        live = [Command("SADD", keys.bot_live(b), (self.match_id,)) for b in _remote(bot_ids)]
        self._batch([*store_matches.running(self.match_id, now), *live,
                     *(notify(bot_ids[e.seat], e) for e in started
                       if not ids.is_house_bot(bot_ids[e.seat]))])

    def send(self, bot_id: str, log_entry: str | None, request: DecisionRequest,
             payload: str) -> int:
        """Log the previous action (if any), extend the lease, make `request` pending for
        the bot and publish it, in one script; Redis's clock as it goes out (us)."""
        out = self.r.eval(FENCED_SEND_LUA, 3, keys.lease(self.match_id),
                          keys.match_log(self.match_id), keys.pending(bot_id), self.run_id,
                          LEASE_MS, log_entry or "", request.request_id, payload,
                          keys.events(bot_id))
        if not out:
            raise self.lost()
        sec, usec = out
        return int(sec) * 1_000_000 + int(usec)

    def withdraw(self, bot_id: str, request_id: str) -> bool:
        """Take a request out of the bot's pending hash; False if it was not there (the
        referee took an answer to it)."""
        return bool(self._batch([Command("HDEL", keys.pending(bot_id), (request_id,))])[0])

    def pause(self, bot_id: str, paused: DecisionRequest) -> None:
        """Replace a pending request with its paused copy, if it is still pending (an
        answer accepted meanwhile must not be followed by a copy that looks pending)."""
        self._batch([Command("HSETXX", keys.pending(bot_id),
                             (paused.request_id, messages.encode(paused)))])

    def tell(self, bot_id: str, event: Message) -> None:
        """Send a bot an event (a strike's notice), kept in its event log."""
        self._batch([notify(bot_id, event)])

    def connection(self, entry: ConnectionEntry) -> None:
        """Log a seat's bot losing or regaining its stream while the match waited."""
        self._batch([Command("RPUSH", keys.conn(self.match_id), (messages.encode(entry),))])

    def write(self, entries: Sequence[str], result: str = "", bot_ids: Sequence[str] = (),
              ended: Sequence[messages.MatchEnded] = ()) -> bool:
        """Append log entries, then store `result` unless one is stored; with it, each
        seat's bot hears the match ended and it is no longer under way for them. True if
        this call stored the result."""
        commands = [Command("RPUSH", keys.match_log(self.match_id), tuple(entries))
                    ] if entries else []
        if result:
            commands.append(Command("SETNX", keys.result(self.match_id), (result,)))
            commands += [notify(bot_ids[e.seat], e) for e in ended
                         if not ids.is_house_bot(bot_ids[e.seat])]
            commands += [Command("SREM", keys.bot_live(b), (self.match_id,))
                         for b in _remote(bot_ids)]
        if not commands:
            return False
        out = self._batch(commands)
        return bool(result) and _stored(out, bool(entries))

    def fail(self, error: str) -> None:
        """Note the error that ended this run on the match (it shows with the match)."""
        self._batch([store_matches.errored(self.match_id, error)])


def _remote(bot_ids: Sequence[str]) -> list[str]:
    """The bots of a match that have streams to tell (house bots have none), each once."""
    return sorted({b for b in bot_ids if not ids.is_house_bot(b)})


def _stored(replies: list[Any], had_entries: bool) -> bool:
    """Whether the SETNX of a `write` batch stored the result."""
    at = 1 if had_entries else 0
    return len(replies) > at and replies[at] == 1
