"""Tests of a change as stored in Redis: the spec and status, the stop request, the pairs.

A test (`ms:test:{id}`, ids `c-...`) is an event that owns games like a tournament:
its hash has a tournament's fields (status, created_at, finished_at, done, total,
error: `store.tournaments.info` reads it) and its scheduling keys are a tournament's
under its own prefix (`store.keys`), so the scheduler's step, the recording of
games, release by board, events and recovery serve it unchanged. What is a test's
own is here: its spec (`ChangeTestSpec`: the planner's `tournaments.change.ChangeSpec`
as JSON, plus what the stack needs to host its games), the stop request, the list of
settled pairs (counted or void), each written once (so a step redone after a crash
writes nothing twice), which of its remote bots are away, and its lost games.

A lost game (one RQ gave up on, which fails a tournament) does not fail a test: the
step hands it to the test's planner as failed, once (the cursor), which folds it as a
result row of its own (`lost_row`: `end` "lost", no scores, `lost` the error), so the
planner voids its pair; its board completes and the other game is released.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from moon import Rules
from store import bots as store_bots
from store import hosted as store_hosted
from store import ids, keys, steps
from store import share as store_share
from store.errors import FailedPrecondition, InvalidArgument, NotFound
from store.pools import Pool
from store.records import Clock, Faults, MatchSpec, SandboxLimits
from store.refs import EventKind, EventRef

__all__ = ["ChangeTestSpec", "all_ids", "ask_stop", "create", "live_elsewhere", "load_spec",
           "lost_row", "offline", "pairs", "pairs_in_flight", "running_of", "stop_asked",
           "stop_tests_of", "stopped_by", "write_pairs"]


@dataclass(frozen=True, slots=True)
class ChangeTestSpec:
    """A test as stored: the plan (`tournaments.change.ChangeSpec.to_json()`, which that
    class checks), a name for people, the rules, clock, faults and sandbox limits of
    every game, and each bot's name (candidate, baseline, opponents) as (bot id, name)
    pairs."""

    test_id: str
    name: str
    plan: str
    rules: Rules
    clock: Clock
    faults: Faults
    names: tuple[tuple[str, str], ...]
    author: str = ""  # the author who started it ("": the admin)
    sandbox: SandboxLimits | None = None  # limits on its hosted bots' sandboxes

    def __post_init__(self) -> None:
        if not ids.is_test_id(self.test_id):
            raise InvalidArgument(f"test_id: {self.test_id!r} is not a test id")
        if not self.name.strip() or len(self.name) > 200 or not self.name.isprintable():
            raise InvalidArgument("name: must be 1 to 200 printable characters")

    @property
    def players(self) -> int:
        """3 or 4."""
        return self.rules.players

    @property
    def pool(self) -> str:
        """`3p` or `2v2`."""
        return Pool.of(self.players)

    def name_of(self, bot_id: str) -> str:
        """A bot's name (its id for a bot the spec does not name)."""
        return dict(self.names).get(bot_id, bot_id)

    def to_json(self) -> str:
        """The spec as stored."""
        return json.dumps({
            "test_id": self.test_id, "name": self.name, "plan": json.loads(self.plan),
            "players": self.players, "rules": self.rules.options(),
            "clock": [self.clock.move_time_ms, self.clock.time_bank_ms],
            "faults": [self.faults.max_strikes, self.faults.disconnect_grace_ms],
            "names": [list(n) for n in self.names],
            **({"author": self.author} if self.author else {}),
            **({"sandbox": self.sandbox.to_dict()} if self.sandbox else {}),
        }, separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> ChangeTestSpec:
        """Inverse of `to_json`."""
        d = json.loads(text)
        return ChangeTestSpec(
            test_id=d["test_id"], name=d["name"],
            plan=json.dumps(d["plan"], separators=(",", ":")),
            rules=Rules.make(int(d["players"]), d["rules"]), clock=Clock(*d["clock"]),
            faults=Faults(*d["faults"]), names=tuple((str(a), str(b)) for a, b in d["names"]),
            author=str(d.get("author", "")),
            sandbox=SandboxLimits.from_dict(d.get("sandbox")))


def create(r: redis.Redis, spec: ChangeTestSpec) -> None:
    """Store a new test as running, in one atomic step; FailedPrecondition if the id is
    taken (nothing written). An author's test joins the author's running tests."""
    if not steps.create(r, EventRef.test(spec.test_id), keys.TESTS, spec.to_json(),
                        spec.name):
        raise FailedPrecondition(f"test {spec.test_id} exists already")
    if spec.author:
        r.sadd(keys.author_tests(spec.author), spec.test_id)


def running_of(r: redis.Redis, author_id: str) -> list[str]:
    """The author's tests still running (a test that ended leaves the author's set here)."""
    found = sorted(str(t) for t in r.smembers(keys.author_tests(author_id)))
    if not found:
        return []
    pipe = r.pipeline(transaction=False)
    for t in found:
        pipe.hget(keys.tournament(t), "status")
    statuses = pipe.execute()
    over = [t for t, st in zip(found, statuses, strict=True)
            if st is None or str(st) != "running"]
    if over:
        r.srem(keys.author_tests(author_id), *over)
    return [t for t in found if t not in over]


def pairs_in_flight(r: redis.Redis, test_ids: Sequence[str]) -> int:
    """Pairs in flight over these running tests, as their last steps left them: started,
    with a game not finished (`store.share` claims): what an author's limit counts. A
    pair both of whose games have finished is not in flight, even while it waits for an
    earlier board to settle."""
    wanted = set(test_ids)
    return sum(c.flying for c in store_share.claims(r) if c.test_id in wanted)


def load_spec(r: redis.Redis, test_id: str) -> ChangeTestSpec:
    """The stored spec, or NotFound (also for a string that is not a test id)."""
    if not ids.is_test_id(test_id):
        raise NotFound(f"no test with id {test_id[:100]!r}")
    raw = r.hget(keys.tournament(test_id), "spec")
    if raw is None:
        raise NotFound(f"no test with id {test_id!r}")
    return ChangeTestSpec.from_json(str(raw))


def all_ids(r: redis.Redis) -> list[str]:
    """Every test id, oldest first."""
    found: Any = r.zrange(keys.TESTS, 0, -1)
    return [str(t) for t in found]


def ask_stop(r: redis.Redis, test_id: str, by: str = "admin") -> None:
    """Note that the test should start no new pair (its next step stops it), and who
    asked (`admin`, an author id, or `retired`)."""
    r.hset(keys.tournament(test_id), mapping={"stop": "1", "stopped_by": by})


def stop_tests_of(r: redis.Redis, bot_id: str, by: str) -> list[str]:
    """Ask every running test with the bot in it (candidate, baseline or opponent) to stop;
    the ids of those asked."""
    out = []
    for ref in steps.live_events(r):
        if ref.kind is not EventKind.TEST or stop_asked(r, ref.id):
            continue
        if str(r.hget(keys.tournament(ref.id), "status") or "") != "running":
            continue
        try:
            plan = json.loads(load_spec(r, ref.id).plan)  # tournaments.change.ChangeSpec's
        except NotFound:
            continue
        if bot_id in (plan["candidate"], plan["baseline"], *plan["opponents"]):
            ask_stop(r, ref.id, by)
            out.append(ref.id)
    return out


def stopped_by(r: redis.Redis, test_id: str) -> str:
    """Who asked the test to stop ('' when no one did)."""
    return str(r.hget(keys.tournament(test_id), "stopped_by") or "")


def stop_asked(r: redis.Redis, test_id: str) -> bool:
    """True once StopTest asked the test to stop."""
    return bool(r.hget(keys.tournament(test_id), "stop"))


def write_pairs(r: redis.Redis, test_id: str, counted: Sequence[Mapping[str, Any]]) -> None:
    """Add settled pairs (each with its `board`, from 0; a void one with its `voids`), each
    once: a pair written before (a step redone) keeps what it has."""
    if not counted:
        return
    pipe = r.pipeline(transaction=False)
    for pair in counted:
        pipe.hsetnx(keys.test_pairs(test_id), str(int(pair["board"])),
                    json.dumps(dict(pair), separators=(",", ":")))
    pipe.execute()


def pairs(r: redis.Redis, test_id: str, start: int = 0, count: int | None = None
          ) -> list[dict[str, Any]]:
    """Settled pairs (counted, or void with their `voids`) in board order (the order they
    settled in), from the `start`-th (from 0), at most `count` of them. Pairs settle in
    board order, so the boards settled are 0, 1, 2, ... without a gap."""
    if count is None:
        count = int(r.hlen(keys.test_pairs(test_id))) - start
    if count <= 0:
        return []
    raw: list[str | None] = r.hmget(keys.test_pairs(test_id),  # type: ignore[assignment]
                                    [str(k) for k in range(start, start + count)])
    return [json.loads(x) for x in raw if x is not None]


def live_elsewhere(r: redis.Redis, test_id: str, bot_ids: Sequence[str]) -> dict[str, int]:
    """How many games each bot is playing now outside this test (its other matches under
    way), in one round trip."""
    pipe = r.pipeline(transaction=False)
    for b in bot_ids:
        pipe.smembers(keys.bot_live(b))
    own = f"{test_id}-"
    return {b: sum(1 for m in live if not str(m).startswith(own))
            for b, live in zip(bot_ids, pipe.execute(), strict=True)}


def offline(r: redis.Redis, bot_ids: Sequence[str]) -> list[str]:
    """Those of `bot_ids` with no live stream now that no host can start either (house
    bots are always there; an active hosted version is while a host is alive)."""
    away = [b for b in bot_ids if not store_bots.is_connected(r, b)]
    return [b for b, hosted in zip(away, store_hosted.available(r, away), strict=True)
            if not hosted]


def lost_row(spec: MatchSpec, error: str) -> dict[str, Any]:
    """The result row of a game the stack could not host: its seats, no scores, `end`
    "lost" and `lost` the error (what `tournaments.change` voids a pair on)."""
    return {"match_id": spec.match_id, "bot_ids": list(spec.bot_ids),
            "players": len(spec.bot_ids), "final": [], "winner": None, "placement": [],
            "end": "lost", "forfeit": None, "seats": list(spec.seat_names),
            "board": str(spec.meta.get("board", "")), "unit": str(spec.meta.get("unit", "")),
            "actions": 0, "lost": (error or "its job failed")[-300:]}
