"""The arena of a pool, as stored in Redis: its spec and status, who joined, and what
GetArena shows of it.

There is one arena per rating pool (`3p`, `2v2`), named by the pool. An organiser
starts it (`start`, with its rules, clock, faults, the games a bot may play at once
and its house anchors) and stops it (`stop`: no new tables; games under way finish
and their boards are released). Bots join and leave (`join`, `leave`); a joined bot
plays while it is connected. Its games, their recording and release, and the
matchmaking state are the one scheduling step's, on the event keys of
`EventRef.arena(pool)` (`store.steps`; the planner is `workers.arena.ArenaPlanner`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import redis

from bots.house import HouseBotError, is_house, parse
from moon import MoonError, Rules
from moon.deal import MAX_SEED
from store import clock, ids, keys, steps
from store import hosted as store_hosted
from store.errors import FailedPrecondition, InvalidArgument, NotFound
from store.pools import Pool
from store.records import DEFAULT_CLOCK, DEFAULT_FAULTS, Clock, Faults, SandboxLimits
from store.refs import EventRef

__all__ = [
    "MAX_ANCHORS",
    "MAX_CONCURRENCY",
    "POOLS",
    "ArenaBot",
    "ArenaInfo",
    "ArenaSpec",
    "ArenaStatus",
    "ArenaView",
    "arena_name",
    "arena_of",
    "check_pool",
    "figures",
    "info",
    "join",
    "joined",
    "leave",
    "names",
    "note_step",
    "online",
    "pools_of_bot",
    "released_ids",
    "start",
    "stop",
    "upgrade",
    "view",
]

POOLS = {str(p): p.players for p in Pool}  # players at a table of each pool
MAX_CONCURRENCY = 100  # games one bot may be asked to play at once
MAX_ANCHORS = 16
MAX_WAIT_MS = 3_600_000
DEFAULT_MAX_WAIT_MS = 10_000  # `tournaments.arena.Settings.max_wait_s`


class ArenaStatus(StrEnum):
    """Where an arena is in its life."""

    RUNNING = "running"  # dealing boards to its free bots
    STOPPED = "stopped"  # dealing none; games under way finish and are released


def arena_name(pool: str) -> str:
    """The arena's name in its board ids: `arena-3p`, `arena-2v2`."""
    return f"arena-{pool}"


def check_pool(pool: str) -> int:
    """Players at a table of `pool`; InvalidArgument for anything but 3p and 2v2."""
    if pool not in POOLS:
        raise InvalidArgument(f"pool: must be 3p or 2v2, got {pool[:40]!r}")
    return POOLS[pool]


@dataclass(frozen=True, slots=True)
class ArenaSpec:
    """What an organiser set when starting a pool's arena (checked field by field)."""

    pool: str
    rules: Rules
    seed: int  # plans every board and step (each deal also goes through the stack's secret)
    clock: Clock = DEFAULT_CLOCK
    faults: Faults = DEFAULT_FAULTS
    concurrency: int = 2  # games a bot may play at once
    anchors: tuple[str, ...] = ()  # house bots that always play, in canonical form
    max_wait_ms: int = DEFAULT_MAX_WAIT_MS  # a free bot waits at most this for a batch
    sandbox: SandboxLimits | None = None  # limits on its hosted bots' sandboxes

    def __post_init__(self) -> None:
        players = check_pool(self.pool)
        if self.rules.players != players:
            raise InvalidArgument(f"rules: the {self.pool} arena plays {players}-player rules")
        if isinstance(self.concurrency, bool) or not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise InvalidArgument(f"concurrency: the games a bot may play at once must be "
                                  f"from 1 to {MAX_CONCURRENCY}, got {self.concurrency}")
        if not 0 <= self.max_wait_ms <= MAX_WAIT_MS:
            raise InvalidArgument(f"max_wait_ms: must be from 0 to {MAX_WAIT_MS}, "
                                  f"got {self.max_wait_ms}")
        if not 0 <= self.seed <= MAX_SEED:
            raise InvalidArgument(f"seed: must be from 0 to {MAX_SEED}")
        if len(self.anchors) > MAX_ANCHORS:
            raise InvalidArgument(f"anchors: at most {MAX_ANCHORS}, got {len(self.anchors)}")
        if len(set(self.anchors)) != len(self.anchors):
            raise InvalidArgument("anchors: a house bot may appear only once")

    @property
    def players(self) -> int:
        """3 or 4."""
        return self.rules.players

    @staticmethod
    def build(pool: str, rules: dict[str, str] | None = None, seed: int = 0,
              clock: Clock = DEFAULT_CLOCK, faults: Faults = DEFAULT_FAULTS,
              concurrency: int = 2, anchors: Sequence[str] = (),
              max_wait_ms: int = DEFAULT_MAX_WAIT_MS,
              sandbox: SandboxLimits | None = None) -> ArenaSpec:
        """Validate raw request values into a spec; errors name the field."""
        players = check_pool(pool)
        try:
            parsed = Rules.make(players, dict(rules or {}))
        except MoonError as exc:
            raise InvalidArgument(f"rules: {exc}") from None
        return ArenaSpec(pool, parsed, seed, clock, faults, concurrency,
                         tuple(_anchor(a) for a in anchors), max_wait_ms, sandbox or None)

    def to_json(self) -> str:
        """The spec as stored."""
        return json.dumps({
            "pool": self.pool, "rules": self.rules.options(), "seed": self.seed,
            "clock": [self.clock.move_time_ms, self.clock.time_bank_ms],
            "faults": [self.faults.max_strikes, self.faults.disconnect_grace_ms],
            "concurrency": self.concurrency, "anchors": list(self.anchors),
            "max_wait_ms": self.max_wait_ms, "v": 1,
            **({"sandbox": self.sandbox.to_dict()} if self.sandbox else {})},
            separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> ArenaSpec:
        """Inverse of `to_json`."""
        d = json.loads(text)
        return ArenaSpec(d["pool"], Rules.make(POOLS[d["pool"]], d["rules"]), int(d["seed"]),
                         Clock(*d["clock"]), Faults(*d["faults"]), int(d["concurrency"]),
                         tuple(d["anchors"]), int(d["max_wait_ms"]),
                         SandboxLimits.from_dict(d.get("sandbox")))


def _anchor(text: str) -> str:
    """A house bot id in canonical form; InvalidArgument naming it otherwise."""
    if not is_house(text):
        raise InvalidArgument(f"anchors: {text[:100]!r} is not a house bot (house:...); "
                              "remote bots join the arena themselves (JoinArena)")
    try:
        return parse(text).id
    except HouseBotError as exc:
        raise InvalidArgument(f"anchors: {exc}") from None


@dataclass(frozen=True, slots=True)
class ArenaInfo:
    """An arena as stored: spec, status, times, and what its latest step saw."""

    spec: ArenaSpec
    status: ArenaStatus
    started_at: float
    stopped_at: float | None
    step: dict[str, Any] = field(default_factory=dict)  # the last step's figures

    def figure(self, name: str) -> int:
        """One of the last step's counts (0 before the first step)."""
        return int(self.step.get(name, 0))


def info(r: redis.Redis, pool: str) -> ArenaInfo:
    """The pool's arena; NotFound when it was never started."""
    check_pool(pool)
    d: dict[str, str] = r.hgetall(keys.arena(pool))  # type: ignore[assignment]
    if not d.get("spec"):
        raise NotFound(f"no {pool} arena: an organiser starts one (moonshot arena start "
                       f"{pool})")
    return ArenaInfo(ArenaSpec.from_json(d["spec"]), ArenaStatus(d["status"]),
                     float(d["started_at"]),
                     float(d["stopped_at"]) if d.get("stopped_at") else None,
                     json.loads(d.get("step", "{}")))


def figures(r: redis.Redis) -> dict[str, dict[str, Any]]:
    """What the latest step of each pool's arena saw (empty for one never started), in one
    round trip: for the metrics."""
    pipe = r.pipeline(transaction=False)
    for pool in POOLS:
        pipe.hget(keys.arena(pool), "step")
    return {pool: json.loads(raw) if raw else {}
            for pool, raw in zip(POOLS, pipe.execute(), strict=True)}


def arena_of(r: redis.Redis, pool: str) -> ArenaInfo | None:
    """The pool's arena, or None when it was never started."""
    try:
        return info(r, pool)
    except NotFound:
        return None


# KEYS: the arena's hash, the live events. ARGV: spec JSON, now, the arena's reference.
# Starts it (live: the step is owed passes) unless it runs: 1, or 0.
_START_LUA = """
if redis.call('HGET', KEYS[1], 'status') == 'running' then
  return 0
end
redis.call('HSET', KEYS[1], 'spec', ARGV[1], 'status', 'running', 'started_at', ARGV[2])
redis.call('HDEL', KEYS[1], 'stopped_at', 'wake_at')
redis.call('SADD', KEYS[2], ARGV[3])
return 1
"""

# KEYS: the arena's hash. ARGV: now. Stops it if it runs: 1, or 0.
_STOP_LUA = """
if redis.call('HGET', KEYS[1], 'status') ~= 'running' then
  return 0
end
redis.call('HSET', KEYS[1], 'status', 'stopped', 'stopped_at', ARGV[1])
return 1
"""


def start(r: redis.Redis, spec: ArenaSpec) -> ArenaInfo:
    """Start the pool's arena with `spec` (again, after a stop: its bots, games and board
    numbers carry on); FailedPrecondition when it runs already (nothing changes)."""
    if not int(r.eval(_START_LUA, 2, keys.arena(spec.pool), keys.LIVE_EVENTS, spec.to_json(),
                      repr(time.time()), str(EventRef.arena(spec.pool)))):
        raise FailedPrecondition(f"the {spec.pool} arena is running already: stop it first "
                                 f"to change its settings (moonshot arena stop "
                                 f"{spec.pool})")
    return info(r, spec.pool)


def stop(r: redis.Redis, pool: str) -> ArenaInfo:
    """Stop the pool's arena: no new tables (games under way finish and are released);
    FailedPrecondition when it does not run."""
    found = info(r, pool)
    if not int(r.eval(_STOP_LUA, 1, keys.arena(pool), repr(time.time()))):
        raise FailedPrecondition(f"the {pool} arena is not running (it is {found.status})")
    return info(r, pool)


def _running(r: redis.Redis, pool: str) -> None:
    """FailedPrecondition unless the pool's arena runs."""
    check_pool(pool)
    status = r.hget(keys.arena(pool), "status")
    if status != ArenaStatus.RUNNING:
        others = [p for p in POOLS if p != pool
                  and r.hget(keys.arena(p), "status") == ArenaStatus.RUNNING]
        also = f"; the {others[0]} arena runs" if others else ""
        raise FailedPrecondition(f"no {pool} arena is running{also}")


def join(r: redis.Redis, pool: str, bot_id: str) -> bool:
    """The bot joins the running arena of `pool` (FailedPrecondition if none runs); False
    when it had joined already. It plays whenever it is connected, until it leaves."""
    _running(r, pool)
    return bool(r.zadd(keys.arena_joined(pool), {bot_id: time.time()}, nx=True))


def leave(r: redis.Redis, pool: str, bot_id: str) -> bool:
    """The bot leaves the pool's arena (its games under way finish); False when it had not
    joined."""
    check_pool(pool)
    return bool(r.zrem(keys.arena_joined(pool), bot_id))


def joined(r: redis.Redis, pool: str) -> list[str]:
    """The bots that joined the pool's arena, first joined first."""
    found: Any = r.zrange(keys.arena_joined(pool), 0, -1)
    return [str(b) for b in found]


def pools_of_bot(r: redis.Redis, bot_id: str) -> list[str]:
    """The pools whose running arena the bot joined."""
    pipe = r.pipeline(transaction=False)
    for pool in POOLS:
        pipe.zscore(keys.arena_joined(pool), bot_id)
        pipe.hget(keys.arena(pool), "status")
    got = pipe.execute()
    return [pool for i, pool in enumerate(POOLS)
            if got[2 * i] is not None and got[2 * i + 1] == ArenaStatus.RUNNING]


def online(r: redis.Redis, pool: str, anchors: Sequence[str]) -> list[str]:
    """The arena's anchors and its joined bots that have a live stream now or a host to
    start them (presence expiries are on Redis's clock, read here too)."""
    members = [b for b in joined(r, pool) if ids.is_bot_id(b)]
    live = _present(r, members)
    return [*anchors, *(b for b, here in zip(members, live, strict=True) if here)]


def _present(r: redis.Redis, bot_ids: Sequence[str]) -> list[bool]:
    """Whether each bot can play now: it has a live stream, or it is an active hosted
    version and a host is alive to start it when a game needs it."""
    now = clock.now(r)
    pipe = r.pipeline(transaction=False)
    for bot_id in bot_ids:
        pipe.zcount(keys.presence(bot_id), now, "+inf")
    live = [bool(int(n)) for n in pipe.execute()]
    hosted = store_hosted.available(r, [b for b, here in zip(bot_ids, live, strict=True)
                                        if not here])
    it = iter(hosted)
    return [here or next(it) for here in live]


def names(r: redis.Redis, bot_ids: set[str]) -> dict[str, str]:
    """Each bot's name (a house bot's is its id)."""
    remote = sorted(b for b in bot_ids if not ids.is_house_bot(b))
    pipe = r.pipeline(transaction=False)
    for bot_id in remote:
        pipe.hget(keys.bot(bot_id), "name")
    out = {b: str(n or b) for b, n in zip(remote, pipe.execute(), strict=True)}
    out.update({b: b for b in bot_ids if ids.is_house_bot(b)})
    return out


def owners(r: redis.Redis, bot_ids: set[str]) -> dict[str, str]:
    """Each bot's author id ("" for none, and for a house bot)."""
    remote = sorted(b for b in bot_ids if not ids.is_house_bot(b))
    pipe = r.pipeline(transaction=False)
    for bot_id in remote:
        pipe.hget(keys.bot(bot_id), "owner")
    out = {b: str(o or "") for b, o in zip(remote, pipe.execute(), strict=True)}
    out.update({b: "" for b in bot_ids if ids.is_house_bot(b)})
    return out


# ------------------------------------------------------------ games


def released_ids(r: redis.Redis, pool: str, most: int) -> list[str]:
    """The newest `most` released games of the arena, newest first."""
    found: Any = r.zrevrange(keys.arena_released(pool), 0, max(0, most - 1))
    return [str(m) for m in found]


# ------------------------------------------------------------ the step's state


def note_step(r: redis.Redis, pool: str, figures: dict[str, Any]) -> None:
    """What the latest step saw (served by GetArena and the metrics)."""
    r.hset(keys.arena(pool), "step", json.dumps(figures, separators=(",", ":")))


def upgrade(r: redis.Redis, pool: str) -> None:
    """An arena stored before it was a planner of the one step (its own state, with `seq`,
    and its games under `:games`) in the step's form, once."""
    raw = r.get(keys.arena_state(pool))
    if raw is None:
        return
    old = json.loads(raw)
    if "plan" in old:
        return
    prefix = f"{arena_name(pool)}/"
    new = {"v": 2, "cursor": int(old["cursor"]),
           "plan": {k: old[k] for k in ("next_board", "games", "tables", "bots")},
           "total": int(old["games"]), "finished": False,
           "open": {board.removeprefix(prefix): g for board, g in old["open"].items()},
           "released": int(old["released"]),
           "creating": [text for text, _ in old.get("creating", [])]}
    legacy = f"{keys.arena(pool)}:games"
    pipe = r.pipeline(transaction=True)  # all of it or none: a crash leaves the old form
    pipe.set(keys.arena_state(pool), json.dumps(new, separators=(",", ":")))
    pipe.hset(keys.arena(pool), "step_seq", int(old.get("seq", 0)))
    pipe.zunionstore(keys.arena_games(pool), [keys.arena_games(pool), legacy])
    pipe.delete(legacy)
    pipe.execute()


# ------------------------------------------------------------ what GetArena shows


@dataclass(frozen=True, slots=True)
class ArenaBot:
    """One bot of an arena as shown: joined (or an anchor), online, playing, waiting."""

    bot_id: str
    name: str
    house: bool
    online: bool
    playing: int  # games of the arena under way
    games: int  # games of the arena finished
    waiting: bool  # online with a free slot while the arena runs


@dataclass(frozen=True, slots=True)
class ArenaView:
    """Everything GetArena serves of a pool's arena."""

    info: ArenaInfo
    bots: tuple[ArenaBot, ...]  # online first, then by name
    boards_in_play: tuple[tuple[str, int, int], ...]  # (board, games, finished), oldest first
    boards: int  # dealt, ever
    games: int  # created, ever
    released: int


def view(r: redis.Redis, pool: str) -> ArenaView:
    """The pool's arena with its bots and boards (NotFound if it never started)."""
    found = info(r, pool)
    st = steps.state(r, EventRef.arena(pool)).state or {}
    plan = st.get("plan", {})
    members = joined(r, pool)
    present = _present(r, members)
    called = names(r, set(members))
    known: dict[str, Any] = plan.get("bots", {})
    running = found.status == ArenaStatus.RUNNING
    out = []
    for i, bot_id in enumerate([*found.spec.anchors, *members]):
        house = i < len(found.spec.anchors)
        j = i - len(found.spec.anchors)
        online = house or present[j]
        b = known.get(bot_id, {})
        playing = len(b.get("live", ()))
        out.append(ArenaBot(bot_id, bot_id if house else called[bot_id], house,
                            online, playing, int(b.get("games", 0)),
                            running and online and playing < found.spec.concurrency))
    out.sort(key=lambda b: (not b.online, b.name.lower()))
    opened = st.get("open", {})
    return ArenaView(found, tuple(out),
                     tuple((f"{arena_name(pool)}/{unit}", int(g[0]), int(g[1]))
                           for unit, g in opened.items()),
                     int(plan.get("next_board", 1)) - 1, int(plan.get("games", 0)),
                     int(st.get("released", 0)))
