"""What leaves Redis for the archive, and how: the Redis side of archiving finished games.

A finished game is archived once it is public (its board released, or a single match
as it ends): `store.matches.release` puts it in `ms:archive:pending` (scored by when),
and the archiving job (`workers.archiving`) takes batches in that order: it `read`s each
game's record here, writes it to the database of record (`archive.mover`), and only
once that transaction has committed it `drop`s the game from Redis, in one
transaction: its hash, result, action and connection logs, replies and lease, and its
entries in every index that grows per game (every match's, each bot's, its pool's, an
arena's games, recorded and released). A crash between the two leaves it in both
places, where every reader finds it once (Redis first), and the next batch writes it
again as a no-op and drops it.

A game of a tournament or a test keeps, while its event is open, its standings row in
the event's `:rows` hash (about 250 bytes: what the event's standings, crosstables and
fits read), and its id in the event's indexes: an open event's size is bounded by the
event. The event itself leaves Redis when it is archived whole.

Upgrading a stack that ran before the archive: `backfill` walks every match's index once,
a chunk at a time from a cursor kept in Redis (resumable), and queues what is finished
and public.

A reader of both stores (an export) asks `unarchived` what Redis still holds of the games
it wants: the public ones not archived yet (read them with `read`), and how many it must
leave out because nobody may see them yet (finished, their boards not released) or they
are still in play.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis

from store import keys
from store import matches as store_matches
from store import ratings as store_ratings
from store.coalesce import Asks
from store.locks import Lock
from store.pools import Pool
from store.records import MatchSpec
from store.refs import EventRef
from store.results import result_row
from store.status import MatchStatus

__all__ = [
    "QUEUED_S",
    "Leaving",
    "Unarchived",
    "asks",
    "backfill",
    "drop",
    "free_lock",
    "job_lock",
    "lock_holder",
    "park",
    "parked",
    "pending",
    "pending_count",
    "read",
    "set_url",
    "unarchived",
    "unpark",
    "url",
]

QUEUED_S = 60  # a queued archiving job unheard of this long counts as lost


def asks() -> Asks:
    """The coalesced asks for the archiving job (one job serves the whole stack)."""
    return Asks(keys.ARCHIVE_DIRTY, keys.ARCHIVE_QUEUED, keys.ARCHIVE_LOCK, QUEUED_S)


def pending(r: redis.Redis, limit: int) -> list[str]:
    """Up to `limit` games waiting to be archived, oldest first."""
    found: Any = r.zrange(keys.ARCHIVE_PENDING, 0, limit - 1)
    return [str(m) for m in found]


def pending_count(r: redis.Redis) -> int:
    """How many games wait to be archived (what grows while the archive is down)."""
    return int(r.zcard(keys.ARCHIVE_PENDING))


@dataclass(frozen=True, slots=True)
class Leaving:
    """One finished, public game as Redis holds it, on its way to the archive."""

    spec: MatchSpec
    created_at: float
    finished_at: float
    released_at: float
    rated: bool
    row: dict[str, Any]  # its standings row (`store.results.result_row`)
    transcript: dict[str, Any]
    result: dict[str, Any]

    @property
    def match_id(self) -> str:
        """The game's id."""
        return self.spec.match_id


def read(r: redis.Redis, match_ids: Sequence[str]) -> tuple[list[Leaving], list[str]]:
    """The games to archive, and the ids that are not (or no longer) there to archive: a
    game dropped already (its batch's job died after the drop), or not finished."""
    pipe = r.pipeline(transaction=False)
    for mid in match_ids:
        pipe.hgetall(keys.match(mid))
        pipe.get(keys.result(mid))
        pipe.zscore(keys.results(Pool.THREE), mid)
        pipe.zscore(keys.results(Pool.TEAMS), mid)
    got = pipe.execute()
    out: list[Leaving] = []
    gone: list[str] = []
    for i, mid in enumerate(match_ids):
        h, raw, in3, in4 = got[4 * i: 4 * i + 4]
        if not h or raw is None or h.get("status") != MatchStatus.FINISHED:
            gone.append(mid)
            continue
        spec = MatchSpec.from_json(h["spec"])
        done = json.loads(raw)
        row = json.loads(h["row"]) if h.get("row") else result_row(
            mid, spec.bot_ids, done["result"], str(spec.meta.get("board", "")),
            str(spec.meta.get("unit", "")))
        released = float(h.get("released") or h.get("finished_at") or 0.0)
        out.append(Leaving(
            spec=spec, created_at=float(h.get("created_at") or released),
            finished_at=float(h.get("finished_at") or released), released_at=released,
            rated=(in3 if spec.players == 3 else in4) is not None, row=row,
            transcript=done["transcript"], result=done["result"]))
    return out, gone


def park(r: redis.Redis, match_id: str, why: str) -> None:
    """Set aside a game the archive refuses (its record is one the archive cannot take):
    out of the pending list, so it cannot hold up every other game's move, and kept in
    Redis, readable, with why. `unpark` queues it again (a worker's start)."""
    pipe = r.pipeline(transaction=True)
    pipe.zrem(keys.ARCHIVE_PENDING, match_id)
    pipe.hset(keys.ARCHIVE_PARKED, match_id, why[:500])
    pipe.execute()


def parked(r: redis.Redis) -> dict[str, str]:
    """The games set aside, and why."""
    found: Any = r.hgetall(keys.ARCHIVE_PARKED)
    return {str(k): str(v) for k, v in found.items()}


def parked_count(r: redis.Redis) -> int:
    """How many games are set aside (one HLEN)."""
    return int(r.hlen(keys.ARCHIVE_PARKED))


def unpark(r: redis.Redis) -> int:
    """Queue every game set aside again (a new version may take them); how many."""
    found = parked(r)
    if not found:
        return 0
    now = time.time()
    pipe = r.pipeline(transaction=True)
    pipe.zadd(keys.ARCHIVE_PENDING, dict.fromkeys(found, now), nx=True)
    pipe.hdel(keys.ARCHIVE_PARKED, *found)
    pipe.execute()
    return len(found)


def drop(r: redis.Redis, leaving: Sequence[Leaving], gone: Sequence[str] = ()) -> None:
    """Remove archived games from Redis (and ids with nothing left to archive from the
    pending list), in one transaction. Only after the archive's transaction committed."""
    pipe = r.pipeline(transaction=True)
    for g in leaving:
        mid, spec = g.match_id, g.spec
        pipe.delete(keys.match(mid), keys.result(mid), keys.match_log(mid), keys.conn(mid),
                    keys.replies(mid), keys.lease(mid))
        pipe.zrem(keys.MATCHES, mid)
        for bot_id in set(spec.bot_ids):
            pipe.zrem(keys.bot_matches(bot_id), mid)
        pipe.zrem(keys.results(Pool.of(spec.players)), mid)
        pipe.srem(keys.OPEN_MATCHES, mid)
        pipe.hdel(keys.RECOVERY_SUSPECTS, mid)
        event = spec.event
        if event is not None and event.kind.streams:
            # An open tournament or test: its standings read this row (`store.tournaments`)
            # until the event itself is archived, and its indexes stay with the event.
            pipe.hset(keys.event_rows(event), mid, json.dumps(g.row, separators=(",", ":")))
        elif event is not None:  # a standing event (the arena): nothing of it per game
            pipe.zrem(keys.event_games(event), mid)
            pipe.zrem(keys.event_released(event), mid)
            pipe.zrem(keys.event_recorded(event), mid)
    moved = [g.match_id for g in leaving]
    if moved or gone:
        pipe.zrem(keys.ARCHIVE_PENDING, *moved, *gone)
    pipe.execute()


_BACKFILL_CHUNK = 2000


def backfill(r: redis.Redis, limit: int = _BACKFILL_CHUNK) -> tuple[int, bool]:
    """Queue the next chunk of games finished and public before the archive existed (an
    upgraded stack), from the cursor kept in Redis; (games queued, whether the walk is
    done). Resumable and idempotent: a killed walk goes on from its cursor, and a game
    queued twice is archived once."""
    if r.get(keys.ARCHIVE_BACKFILL_DONE):
        return 0, True
    # The cursor: a score, and how many games of exactly that score were read already
    # (many games may share one: a chunk never skips the rest of them).
    score_text, _, seen_text = str(r.get(keys.ARCHIVE_BACKFILL) or "-inf").partition(" ")
    cursor, seen = float(score_text), int(seen_text or 0)
    found: Any = r.zrangebyscore(keys.MATCHES, cursor, "+inf", start=seen, num=limit,
                                 withscores=True)
    if not found:
        _backfill_events(r)
        r.set(keys.ARCHIVE_BACKFILL_DONE, 1)
        return 0, True
    pipe = r.pipeline(transaction=False)
    for mid, _ in found:
        pipe.hmget(keys.match(mid), "status", "released", "finished_at", "spec")
    queued: dict[str, float] = {}
    ended: dict[str, bool] = {}
    for (mid, _), (status, released, finished, spec) in zip(found, pipe.execute(),
                                                           strict=True):
        if status != MatchStatus.FINISHED:
            continue
        if released:
            queued[str(mid)] = float(released)
        elif spec and _public_by_age(r, MatchSpec.from_json(spec), ended):
            # Finished before games were released board by board: its event is over (or
            # it had none), so it is public.
            when = float(finished or 0.0)
            r.hset(keys.match(str(mid)), "released", repr(when))
            queued[str(mid)] = when
    last = float(found[-1][1])
    at_last = sum(1 for _, sc in found if float(sc) == last)
    pipe = r.pipeline(transaction=True)
    if queued:
        pipe.zadd(keys.ARCHIVE_PENDING, queued, nx=True)
    pipe.set(keys.ARCHIVE_BACKFILL,
             f"{last!r} {seen + at_last if last == cursor else at_last}")
    pipe.execute()
    return len(queued), False


def _public_by_age(r: redis.Redis, spec: MatchSpec, ended: dict[str, bool]) -> bool:
    """Whether a finished game without a release time is public all the same: a single
    match, or one whose event ended (an older version released nothing board by board)."""
    if spec.event is None:
        return True
    key = str(spec.event)
    if key not in ended:
        ended[key] = r.hget(keys.event(spec.event), "status") in ENDED
    return ended[key]


def _backfill_events(r: redis.Redis) -> None:
    """The tournaments and tests that ended before the archive existed: queued to follow
    their games (`ended_events`)."""
    for index, kind in ((keys.TOURNAMENTS, "tournament"), (keys.TESTS, "test")):
        found: Any = r.zrange(index, 0, -1)
        ids_ = [str(i) for i in found]
        pipe = r.pipeline(transaction=False)
        for event_id in ids_:
            pipe.hget(keys.tournament(event_id), "status")
        ended = [f"{kind}:{i}" for i, status in zip(ids_, pipe.execute(), strict=True)
                 if status in ENDED]
        if ended:
            r.sadd(keys.ARCHIVE_EVENTS, *ended)


def url(r: redis.Redis) -> str:
    """The stack's archive URL, as the first part that had one noted it ('' for none)."""
    return str(r.get(keys.ARCHIVE_URL) or "")


def set_url(r: redis.Redis, archive_url: str) -> str:
    """Note the stack's archive URL if none is noted yet; the one noted (which the caller
    compares with its own: two archives would split a stack's games)."""
    r.set(keys.ARCHIVE_URL, archive_url, nx=True)
    return url(r)


def job_lock(ttl_ms: int, owner: str = "") -> Lock:
    """A new archiving job's lock (one job at a time), naming its worker instance."""
    return Lock.fresh(keys.ARCHIVE_LOCK, ttl_ms, owner)


def lock_holder(r: redis.Redis) -> tuple[str, str] | None:
    """(the token, its owner) of the lock an archiving job holds now; None when free."""
    token = r.get(keys.ARCHIVE_LOCK)
    return None if token is None else (str(token), Lock.owner_of(str(token)))


def free_lock(r: redis.Redis, token: str) -> bool:
    """Drop a dead job's lock (only while `token` still holds it) and ask again."""
    if not Lock(keys.ARCHIVE_LOCK, token, 0).release(r):
        return False
    asks().ask_again(r)
    return True


# ------------------------------------------------------------ ended events


def ended_count(r: redis.Redis) -> int:
    """How many ended events wait to move (one SCARD)."""
    return int(r.scard(keys.ARCHIVE_EVENTS))


def ended_events(r: redis.Redis) -> list[EventRef]:
    """Tournaments and tests that ended, waiting to move to the archive."""
    found: Any = r.smembers(keys.ARCHIVE_EVENTS)
    out = []
    for text in sorted(str(t) for t in found):
        try:
            out.append(EventRef.parse(text))
        except ValueError:
            r.srem(keys.ARCHIVE_EVENTS, text)  # not one of ours: forget it
    return out


def event_snapshot(r: redis.Redis, ref: EventRef) -> dict[str, Any] | None:
    """Everything of an ended event that Redis holds, as the archive keeps it (spec,
    status, the step's state, its public event stream, its pairs or its own rating, its
    failed games); None while it cannot move yet: a game of it is still to be archived,
    or its own rating fit is still asked for."""
    games: list[str] = [str(m) for m in r.zrange(keys.event_games(ref), 0, -1)]
    found: Any = r.hkeys(keys.event_rows(ref))
    archived = {str(k) for k in found}
    rest = [m for m in games if m not in archived]
    pipe = r.pipeline(transaction=False)
    for mid in rest:
        pipe.hmget(keys.match(mid), "status", "error")
    failed: list[tuple[str, str]] = []
    for mid, (status, error) in zip(rest, pipe.execute(), strict=True):
        if status != MatchStatus.FAILED:
            return None  # still to archive (or its record is gone: wait for the batch)
        failed.append((mid, str(error or "")))
    h: dict[str, str] = r.hgetall(keys.event(ref))  # type: ignore[assignment]
    if not h.get("spec") or h.get("status") not in ENDED:
        return None
    pool = Pool.of(int(json.loads(h["spec"])["players"]))
    if store_ratings.owes_tournament(r, str(pool), ref.id):
        return None  # its own fit is owed or running: it writes the rating kept here
    entries: Any = r.xrange(keys.event_stream(ref))
    pairs: dict[str, str] = r.hgetall(keys.test_pairs(ref.id)) \
        if ref.kind == "test" else {}  # type: ignore[assignment]
    return {
        "hash": h,
        "state": r.get(keys.event_state(ref)),
        "stream": [[events_seq(eid), fields["e"]] for eid, fields in entries],
        "pairs": [json.loads(pairs[k]) for k in sorted(pairs, key=int)],
        "rating": r.get(keys.tournament_rating(ref.id)),
        "redealt": int(r.scard(keys.event_redealt(ref))),
        "failed": failed,
        "games": games,
        "released": [str(m) for m in r.zrange(keys.event_released(ref), 0, -1)],
    }


def drop_event(r: redis.Redis, ref: EventRef, snapshot: dict[str, Any]) -> None:
    """Remove an archived event from Redis, with what is left of its failed games, in one
    transaction. Only after the archive's transaction committed."""
    index = keys.TOURNAMENTS if ref.kind == "tournament" else keys.TESTS
    prefix = keys.event(ref)
    pipe = r.pipeline(transaction=True)
    pipe.delete(prefix, *(f"{prefix}:{part}" for part in _EVENT_PARTS))
    for mid, _ in snapshot["failed"]:
        spec = MatchSpec.from_json(str(r.hget(keys.match(mid), "spec") or "{}")) \
            if r.hexists(keys.match(mid), "spec") else None
        pipe.delete(keys.match(mid), keys.result(mid), keys.match_log(mid), keys.conn(mid),
                    keys.replies(mid), keys.lease(mid))
        pipe.zrem(keys.MATCHES, mid)
        pipe.srem(keys.OPEN_MATCHES, mid)
        if spec is not None:
            for bot_id in set(spec.bot_ids):
                pipe.zrem(keys.bot_matches(bot_id), mid)
    pipe.zrem(index, ref.id)
    pipe.srem(keys.ARCHIVE_EVENTS, str(ref))
    pipe.srem(keys.LIVE_EVENTS, str(ref))
    pipe.execute()


# Every key of an event under its prefix (`store.keys`), the step's and its own.
_EVENT_PARTS = ("matches", "recorded", "released", "state", "events", "emitted", "live",
                "live_emitted", "units", "failed", "redealt", "rows", "pairs", "rating",
                "lock", "dirty", "queued")
ENDED = ("finished", "failed")


def events_seq(entry_id: str | bytes) -> int:
    """The sequence of an event stream's entry id `<seq>-0`."""
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(text.split("-", 1)[0])

_SCAN_CHUNK = 500


@dataclass(frozen=True, slots=True)
class Unarchived:
    """What Redis holds of a selection of games that the archive has not: what a reader of
    both stores takes from Redis, and what it has to leave out."""

    public: list[str]  # finished and released, waiting to be archived: `read` them
    hidden: int  # finished in the range, their boards not released: nobody may see them yet
    playing: int  # queued or running: they may still finish in the range
    event_live: bool  # the event asked for still plays or releases games
    event_known: bool  # Redis holds the event asked for


def unarchived(r: redis.Redis, *, event: EventRef | None = None, bot_id: str = "",
               players: int | None = None, since: float | None = None,
               until: float | None = None, now: float | None = None) -> Unarchived:
    """The games of an event, a bot, a pool (any of them together; every game without
    them) that Redis still holds, finished in [since, until): the public ones, oldest
    release first, and how many are hidden or, when `until` is after `now`, in play.

    Reads the narrowest index (`store.matches.index`), which holds what is live or not
    archived yet: as bounded as Redis is."""
    index = store_matches.index(event, bot_id)
    found: Any = r.zrange(index, 0, -1)
    match_ids = [str(m) for m in found]
    public: list[tuple[float, str]] = []
    hidden = playing = 0
    may_finish = until is None or now is None or until > now
    for i in range(0, len(match_ids), _SCAN_CHUNK):
        chunk = match_ids[i:i + _SCAN_CHUNK]
        pipe = r.pipeline(transaction=False)
        for mid in chunk:
            pipe.hmget(keys.match(mid), "spec", "status", "released", "finished_at")
        for mid, (spec_json, status, released, finished) in zip(chunk, pipe.execute(),
                                                                strict=True):
            if not spec_json:
                continue  # archived already (an open event's index still lists it)
            spec = MatchSpec.from_json(str(spec_json))
            if ((event is not None and spec.event != event)
                    or (bot_id and bot_id not in spec.bot_ids)
                    or (players is not None and spec.players != players)):
                continue
            if status in (None, MatchStatus.QUEUED, MatchStatus.RUNNING):
                if may_finish:
                    playing += 1
                continue
            if status != MatchStatus.FINISHED:
                continue  # failed: no game to read
            done = float(finished or 0.0)
            if (since is not None and done < since) or (until is not None and done >= until):
                continue
            if released:
                public.append((float(released), mid))
            else:
                hidden += 1
    event_live = event_known = False
    if event is not None:
        pipe = r.pipeline(transaction=False)
        pipe.sismember(keys.LIVE_EVENTS, str(event))
        pipe.exists(keys.event(event))
        live, known = pipe.execute()
        event_live, event_known = bool(live), bool(known)
    return Unarchived(public=[mid for _, mid in sorted(public)], hidden=hidden,
                      playing=playing, event_live=event_live, event_known=event_known)
