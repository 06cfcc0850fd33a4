"""The archive's figures (issue 25): Redis memory per finished game over an arena soak,
archive bytes per game, reads of archived games with a million of them, and games moved
to the archive per second.

Run `python bench/archive.py [--quick] [--only soak,bytes,move,reads] [--backend sqlite
|postgresql]...` (default: every section, both backends; PostgreSQL is a throwaway
server as the tests start it, tests/pg.py). Everything runs in this process on a real
Redis (clients.redisproc) with the stack's own code; it prints `name: value unit` lines,
wall time with CPU time beside it (the machine is shared: compare ratios within a run).

**How games are played.** The real jobs, run by RQ: a `rq.SimpleWorker` on the stack's
queues (control, resume, matches; the project's job class and vetting queue) takes each
job in turn, one at a time, in this process, and RQ keeps what it keeps of each (its job
hash, its result stream, its registries), as the stack's workers do. The arena's step
(`workers.jobs.advance_tournament` -> `workers.scheduler.advance` on
`EventRef.arena("3p")`), every game (`workers.jobs.run_match` -> `workers.match.MatchHost`)
and the archiving job (`workers.archiving.run_archive`) are the stack's. What differs:
house bots decide in this process (`workers.house.submit` answers at once instead of
going through the house processes), the archive the jobs use is the bench's own, and the
rating fit (`workers.fit.run_fits` with the archive) runs once every `--fit-every`
games (default 1,000): the fit jobs every release asks for are still queued and run,
each one returning at once in between. The arena's bots are house anchors only (six,
each in up to four games at once: boards of two to four tables).

Sections:

- `soak`: an arena of games of one hand (`max_hands=1`) for `--soak-games` games
  (default 20,000), every game archived as the stack archives it. Every ~1,000 games:
  `INFO memory` used_memory, and every key's `MEMORY USAGE` by prefix (ids folded into
  `{match}`, `{bot}`, `{hex}`), split into Redis's own keys of the project (`ms:`), RQ's
  (`rq:`), and those with a TTL. Prints bytes per game over the first and the last half
  (used_memory, and the project's keys alone), and what is left in Redis per prefix at
  the end. RQ keeps each finished job a while (a match's 300 s, `MATCH_RESULT_TTL`; a
  step's and the archiving job's 60 s; a fit's 600 s): that window is bounded by the
  rate of play, not by the games played, and its share is printed apart.
- `bytes`: `--games` full games (default rules) of an arena of house players (greedy and
  PIMC of 2 to 32 samples), as the stack finishes them: the JSON transcript, the compact
  blob (`archive.codec`, with the archive's `known` columns, as `archive.mover` encodes
  it; and with seats named as remote bots are), and the entropy bound
  (`archive.codec.entropy_bits`) per game. The archive bytes per game (table, indexes and
  blob) come from the `reads` section's fill (a million such games), as written and
  compacted (VACUUM; VACUUM FULL).
- `move`: those games, cloned in Redis under new ids (`--move-games`, default 5,000),
  and as many games of one hand, moved by `run_archive` in its batches of 500: games/s
  batch by batch (wall and CPU), and the decisions/s that is, beside the stack's
  ceiling of about 1,500 decisions/s here.
- `reads`: an archive filled with `--fill-games` games (default 1,000,000) of 1,000 bots,
  one of which (registered in Redis, as a bot of the stack is) plays `--star-games`
  (default 100,000). The first 1,000 games are written by `archive.mover.write`; the
  rest by a bulk insert of exactly the rows the mover writes (checked column by column
  against the first), each a real game of the `bytes` section under a new match id and
  seats: its blob is the real blob with its CRC made for the new transcript (the bots'
  names are their ids, so that the seats code the same; a remote bot's name adds the
  bytes the `bytes` section prints). Then a real referee (`server.app.serve`, which
  starts `server.app.start`, in its own process, on a free port with the archive's URL
  and a Redis that holds none of these games) is timed over gRPC: GetMatch of random
  archived games (transcript included), and ListMatches(bot_id=that bot, page_size=100,
  as the web's bot page asks) first pages, then every page of its 100,000 games
  following next_page_token: p50 and p95 (target: under 50 ms).
- `fit` (with `reads`, on its fill): the rating fit of that pool of a million games as a
  worker runs it: its columns read in bulk (`workers.fit.pool_table`), the official
  batch fit cold, warm (from the fit of the first 99%, as a worker's next fit starts),
  and the whole fit job (`workers.fit.fit_pool`, every method). Target: seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import multiprocessing
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import psutil
import redis
import sqlalchemy as sa

# `python bench/archive.py` puts bench/ first on the path, where bench/bots.py would
# shadow the package of that name: the repository root goes in front.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rq import SimpleWorker
from rq.registry import FailedJobRegistry
from rq.serializers import JSONSerializer

from archive import codec, mover, reads, schema
from archive.db import Archive, intern, open_archive
from bench.archive_db import compact as compact_archive
from clients.redisproc import RedisServer, free_port
from proto.moon.v1 import match_pb2, match_pb2_grpc
from ratings import methods
from ratings.batch import BatchFit
from store import archiving, keys, steps
from store import arena as store_arena
from store import bots as store_bots
from store import ratings as store_ratings
from store.archiving import Leaving
from store.pools import Pool
from store.refs import EventRef
from workers import archiving as archiving_job
from workers import house, jobs
from workers.fit import fit_pool, pool_table, run_fits
from workers.intake import VettingQueue
from workers.memory import fit_memory
from workers.queues import (
    CONTROL_QUEUE,
    MATCH_QUEUE,
    RESUME_QUEUE,
    MoonshotJob,
    request_step,
    rq_connection,
)

ROOT = Path(__file__).resolve().parent.parent
ARENA = EventRef.arena("3p")
SOAK_ANCHORS = ("house:greedy", "house:random", "house:pimc?samples=1",
                "house:pimc?samples=2", "house:pimc?samples=3", "house:pimc?samples=4")
FULL_ANCHORS = ("house:greedy", "house:pimc?samples=2", "house:pimc?samples=4",
                "house:pimc?samples=8", "house:pimc?samples=16", "house:pimc?samples=32")
CEILING = 1500  # decisions/s: the stack's ceiling on this machine (docs/PERFORMANCE.md)
SECTIONS = ("soak", "bytes", "move", "reads", "fit")


# ------------------------------------------------------------------ measuring


@dataclasses.dataclass
class Clock:
    """Wall and CPU time of this process since it started."""

    wall0: float = dataclasses.field(default_factory=time.perf_counter)
    cpu0: float = dataclasses.field(default_factory=time.process_time)

    @property
    def wall(self) -> float:
        return time.perf_counter() - self.wall0

    @property
    def cpu(self) -> float:
        return time.process_time() - self.cpu0


def redis_cpu(r: redis.Redis) -> float:
    """Seconds of CPU the Redis server has used."""
    info: Any = r.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def pct(values: Sequence[float], q: float) -> float:
    """The q-th percentile (nearest rank) of `values`."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


_FOLD = [(re.compile(r"house:[a-z]+(\?[^:]*)?"), "{bot}"),
         (re.compile(r"\bm-[0-9a-z]+"), "{match}"),
         (re.compile(r"\bb-[0-9a-z]+"), "{bot}"),
         (re.compile(r"[0-9a-f]{8,}"), "{hex}")]


def prefix(key: str) -> str:
    """A key with its ids folded: `ms:match:{match}:log`, `rq:results:match-{match}`."""
    for pattern, name in _FOLD:
        key = pattern.sub(name, key)
    return key


@dataclasses.dataclass
class Sample:
    """What Redis holds after `games` finished games."""

    games: int
    used: int  # INFO memory used_memory
    keys: int
    by_prefix: dict[str, tuple[int, int, bool]]  # prefix -> (bytes, keys, has a TTL)

    def bytes_of(self, pick: Callable[[str, bool], bool]) -> int:
        return sum(b for p, (b, _, ttl) in self.by_prefix.items() if pick(p, ttl))


def sample(r: redis.Redis, games: int) -> Sample:
    """used_memory and every key's MEMORY USAGE (all samples), by prefix."""
    found = list(r.scan_iter(count=2000))
    pipe = r.pipeline(transaction=False)
    for k in found:
        pipe.memory_usage(k, samples=0)
        pipe.pttl(k)
    got = pipe.execute()
    by: dict[str, list[int]] = {}
    for i, k in enumerate(found):
        size, ttl = got[2 * i], got[2 * i + 1]
        if size is None:  # gone meanwhile
            continue
        row = by.setdefault(prefix(str(k)), [0, 0, 0])
        row[0] += int(size)
        row[1] += 1
        row[2] |= int(ttl) >= 0
    info: Any = r.info("memory")
    return Sample(games, int(info["used_memory"]), len(found),
                  {p: (b, n, bool(t)) for p, (b, n, t) in by.items()})


# ------------------------------------------------------------------ the stack, in process


def _decide_here(bot: Any, seed: int, observation: Any, legal: Sequence[int]
                 ) -> Future[tuple[int, float, float]]:
    """`workers.house.submit`, answered in this process at once."""
    done: Future[tuple[int, float, float]] = Future()
    done.set_result(house.decide_here(bot if isinstance(bot, str) else bot.id, seed,
                                      observation, legal))
    return done


class Stack:
    """A Redis, the stack's jobs run by an RQ worker in this process, and an arena.

    `archive`: where the archiving job moves games (None: they wait in Redis). The fit
    runs every `fit_every` games (0: never)."""

    def __init__(self, folder: Path, archive: Archive | None = None, fit_every: int = 0
                 ) -> None:
        self.server = RedisServer(folder / "redis", appendonly=False).start()
        self.r = store_bots.connect(self.server.url)
        self.rq = rq_connection(self.server.url)
        self.archive = archive
        self.fit_every = fit_every
        self.next_fit = fit_every
        self.fits: list[tuple[int, float, float]] = []  # (games, wall s, cpu s)
        self.nudges = 0
        jobs.share_redis(self.rq, 118)  # as a worker of concurrency 100 does
        self.worker = SimpleWorker(
            [VettingQueue(name, connection=self.rq, serializer=JSONSerializer,
                          job_class=MoonshotJob)
             for name in (CONTROL_QUEUE, RESUME_QUEUE, MATCH_QUEUE)],
            connection=self.rq, serializer=JSONSerializer, job_class=MoonshotJob,
            maintenance_interval=30)
        self.worker.register_birth()
        for name in ("rq.worker", "rq.job"):  # a line a job otherwise
            logging.getLogger(name).setLevel(logging.WARNING)
        self.jobs_run = 0

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.worker.register_death()
        self.server.stop()

    # The two jobs this bench runs its own way (see the module's doc).

    def archive_games(self) -> dict[str, Any]:
        r, rq_conn, _ = jobs.job_redis()
        if self.archive is None:
            return {"skipped": "bench: the games wait in Redis"}
        arc = self.archive
        return archiving_job.run_archive(r, rq_conn, lambda: arc)

    def fit_ratings(self, pool: str) -> dict[str, Any]:
        r, _, _ = jobs.job_redis()
        if not self.fit_every or self.finished() < self.next_fit:
            store_ratings.unqueue(r, pool)
            store_ratings.take_request(r, pool)
            return {"pool": pool, "deferred": True}
        self.next_fit = self.finished() + self.fit_every
        clock = Clock()
        arc = self.archive
        out = run_fits(r, pool, archive=None if arc is None else (lambda: arc))
        self.fits.append((self.finished(), clock.wall, clock.cpu))
        return out

    @contextlib.contextmanager
    def jobs(self) -> Iterator[None]:
        """The stack's job functions, with the two above and house bots in process."""
        saved = (jobs.archive_games, jobs.fit_ratings, house.submit)
        jobs.archive_games = self.archive_games  # type: ignore[assignment]
        jobs.fit_ratings = self.fit_ratings  # type: ignore[assignment]
        house.submit = _decide_here  # type: ignore[assignment]
        try:
            yield
        finally:
            jobs.archive_games, jobs.fit_ratings, house.submit = saved  # type: ignore[assignment]

    def start_arena(self, rules: dict[str, str], anchors: Sequence[str], seed: int) -> None:
        store_arena.start(self.r, store_arena.ArenaSpec.build(
            "3p", rules, seed=seed, max_wait_ms=0, concurrency=4, anchors=anchors))
        request_step(self.r, self.rq, ARENA)

    def finished(self) -> int:
        """Games of the arena finished so far (recorded by its step)."""
        return steps.scheduling(self.r, ARENA).recorded

    def run_jobs(self, most: int) -> int:
        """Up to `most` jobs, as RQ's work loop takes them (its burst mode, without its
        start and end: their pub/sub thread takes up to a minute to stop)."""
        ran = 0
        while ran < most:
            if self.worker.should_run_maintenance_tasks:
                self.worker.run_maintenance_tasks()
            got = self.worker.dequeue_job_and_maintain_ttl(None)
            if got is None:
                break
            self.worker.execute_job(*got)
            self.worker.heartbeat()
            ran += 1
        self.jobs_run += ran
        return ran

    def play(self, games: int, every: int = 0,
             on_sample: Callable[[int], None] | None = None) -> None:
        """Run jobs until `games` games have finished; `on_sample` every `every` games."""
        mark = every
        idle = 0
        with self.jobs():
            while (done := self.finished()) < games:
                if not self.run_jobs(50):
                    # Nothing queued: what recovery's nudge does on a live stack.
                    idle += 1
                    if idle > 20:
                        raise RuntimeError(f"the arena stalled at {done} games")
                    self.nudges += 1
                    request_step(self.r, self.rq, ARENA)
                    time.sleep(0.05)
                    continue
                idle = 0
                if on_sample is not None and every and self.finished() >= mark:
                    on_sample(self.finished())
                    mark = (self.finished() // every + 1) * every
        failed = sum(FailedJobRegistry(name, connection=self.rq).count
                     for name in (CONTROL_QUEUE, RESUME_QUEUE, MATCH_QUEUE))
        if failed:
            raise RuntimeError(f"{failed} jobs failed")

    def released(self) -> list[Leaving]:
        """The finished, public games waiting in Redis, as the archiving job reads them."""
        ids = archiving.pending(self.r, 10**7)
        found, _ = archiving.read(self.r, ids)
        return found


# ------------------------------------------------------------------ soak


def soak(tmp: Path, games: int, every: int, fit_every: int) -> None:
    """Redis memory per finished game over an arena soak, every game archived."""
    arc = open_archive(f"sqlite:///{tmp / 'soak.sqlite3'}")
    stack = Stack(tmp / "soak", arc, fit_every)
    try:
        stack.start_arena({"max_hands": "1"}, SOAK_ANCHORS, seed=3)
        samples = [sample(stack.r, 0)]
        clock, cpu0 = Clock(), redis_cpu(stack.r)

        def on_sample(done: int) -> None:
            samples.append(sample(stack.r, done))
            s = samples[-1]
            print(f"soak sample {s.games} games: {s.used} bytes used_memory, {s.keys} keys, "
                  f"{s.bytes_of(lambda p, _: p.startswith('ms:'))} bytes in ms:*, "
                  f"{s.bytes_of(lambda p, _: p.startswith('rq:'))} in rq:*, "
                  f"{clock.wall:.0f} s", flush=True)

        stack.play(games, every, on_sample)
        wall, cpu, rcpu = clock.wall, clock.cpu, redis_cpu(stack.r) - cpu0
        end = samples[-1]
        if end.games < stack.finished():
            end = sample(stack.r, stack.finished())
            samples.append(end)
        archived = reads.count(arc)
        decisions = _mean_actions(arc)
        print(f"soak games: {end.games} games")
        print(f"soak archived: {archived} games")
        print(f"soak still in Redis, waiting to be archived: {archiving.pending_count(stack.r)} "
              "games")
        print(f"soak decisions: {decisions:.1f} decisions/game")
        print(f"soak wall: {wall:.0f} s")
        print(f"soak cpu (this process): {cpu:.0f} s")
        print(f"soak cpu (redis): {rcpu:.0f} s")
        print(f"soak rate: {end.games / wall:.1f} games/s")
        print(f"soak jobs run: {stack.jobs_run} jobs")
        print(f"soak nudges: {stack.nudges} asks")
        for at, w, c in stack.fits:
            print(f"soak fit at {at} games: {w:.2f} s ({c:.2f} s CPU)")
        mid = min(samples, key=lambda s: abs(s.games - end.games / 2))
        first, start = mid, samples[0]
        groups: dict[str, Callable[[str, bool], bool]] = {
            "used_memory": lambda p, t: True,
            "ms:*": lambda p, t: p.startswith("ms:"),
            "ms:* without TTL": lambda p, t: p.startswith("ms:") and not t,
            "rq:*": lambda p, t: p.startswith("rq:"),
        }
        for name, pick in groups.items():
            def at(s: Sample, pick: Callable[[str, bool], bool] = pick,
                   name: str = name) -> int:
                return s.used if name == "used_memory" else s.bytes_of(pick)
            a = (at(first) - at(start)) / max(1, first.games - start.games)
            b = (at(end) - at(first)) / max(1, end.games - first.games)
            total = (at(end) - at(start)) / max(1, end.games)
            print(f"soak {name} first half: {a:.0f} bytes/game")
            print(f"soak {name} last half: {b:.0f} bytes/game")
            print(f"soak {name} amortised: {total:.0f} bytes/game")
        print(f"soak halves at: {start.games} / {first.games} / {end.games} games")
        print(f"soak used_memory at the end: {end.used} bytes")
        print(f"soak with a TTL at the end: {end.bytes_of(lambda p, t: t)} bytes")
        # What grew over the last half, per prefix (the project's keys without a TTL first).
        grew = []
        for p in set(end.by_prefix) | set(first.by_prefix):
            b1 = first.by_prefix.get(p, (0, 0, False))
            b2 = end.by_prefix.get(p, (0, 0, False))
            grew.append(((b2[0] - b1[0]) / max(1, end.games - first.games), p, b2[2] or b1[2]))
        for per, p, ttl in sorted(grew, reverse=True)[:8]:
            if per > 0:
                print(f"soak last half growth {p}{' (TTL)' if ttl else ''}: {per:.1f} "
                      "bytes/game")
        for p, (b, n, ttl) in sorted(end.by_prefix.items(), key=lambda x: -x[1][0]):
            print(f"soak end {p}: {b} bytes in {n} keys{' (TTL)' if ttl else ''}")
    finally:
        stack.close()
        arc.close()


def _mean_actions(arc: Archive) -> float:
    with arc.connect() as conn:
        return float(conn.execute(sa.select(sa.func.avg(schema.games.c.actions))).scalar_one()
                     or 0.0)


# ------------------------------------------------------------------ games and their bytes


def play_games(tmp: Path, name: str, games: int, rules: dict[str, str],
               anchors: Sequence[str]) -> tuple[Stack, list[Leaving], float]:
    """`games` finished and released arena games, left in Redis; the stack, the games as
    the archiving job reads them, and the seconds it took."""
    stack = Stack(tmp / name)
    clock = Clock()
    stack.start_arena(rules, anchors, seed=11)
    stack.play(games)
    played = stack.released()
    # Kept in Redis as the originals the `move` section clones: none of them is moved.
    stack.r.zrem(keys.ARCHIVE_PENDING, *[g.match_id for g in played])
    return stack, played, clock.wall


def _known(g: Leaving) -> dict[str, Any]:
    return mover.known_of(g.match_id, g.spec.seed, g.spec.bot_ids,
                          str(g.spec.meta.get("board", "")), str(g.spec.meta.get("unit", "")))


def _named(g: Leaving, i: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The game's transcript as if remote bots had sat: `b-` ids and names of their own."""
    ids = [f"b-{(0x5eed0000 + 7 * i + s):012x}" for s in range(g.spec.players)]
    names = [f"{n}-v{i % 7}" for n in ("alice", "bob", "carol", "dave")[:g.spec.players]]
    t = {**g.transcript, "bot_ids": ids, "seats": names}
    return t, {**_known(g), "bot_ids": ids}


def bytes_section(played: list[Leaving]) -> dict[str, float]:
    """The transcript, blob and entropy bound per game of real full games."""
    texts, blobs, named, bounds, actions, compact = [], [], [], [], [], 0
    clock, enc = Clock(), 0.0
    for i, g in enumerate(played):
        texts.append(len(json.dumps(g.transcript, separators=(",", ":"))))
        start = time.process_time()
        p = codec.encode(g.transcript, _known(g))
        enc += time.process_time() - start
        blobs.append(len(p.blob))
        compact += codec.is_compact(p.blob)
        t, known = _named(g, i)
        named.append(len(codec.encode(t, known).blob))
        bounds.append(codec.entropy_bits(g.transcript) / 8)
        actions.append(int(g.row.get("actions") or 0))
    out = {"blob": statistics.mean(blobs), "named": statistics.mean(named),
           "bound": statistics.mean(bounds), "json": statistics.mean(texts)}
    print(f"bytes games: {len(played)} games")
    print(f"bytes decisions: {statistics.mean(actions):.1f} decisions/game")
    print(f"bytes JSON transcript: {out['json']:.0f} bytes/game")
    print(f"bytes blob (house seats): {out['blob']:.1f} bytes/game")
    print(f"bytes blob p95 (house seats): {pct(blobs, 95):.0f} bytes")
    print(f"bytes blob (remote bots' names): {out['named']:.1f} bytes/game")
    print(f"bytes entropy bound: {out['bound']:.1f} bytes/game")
    print(f"bytes blob over the bound: {out['blob'] / out['bound']:.2f} x")
    print(f"bytes compact: {100 * compact / len(played):.0f} %")
    print(f"bytes encode: {len(played) / max(enc, 1e-9):.0f} games/s CPU")
    del clock
    return out


# ------------------------------------------------------------------ moving games


def clone(r: redis.Redis, rqb: redis.Redis, g: Leaving, dst: str, when: float) -> None:
    """A copy of a finished, released game in Redis under match id `dst`, waiting to be
    archived: its hash, result, action log and every index a game of the arena is in."""
    src = g.match_id
    old, new = f'"{src}"', f'"{dst}"'
    h: dict[str, str] = r.hgetall(keys.match(src))  # type: ignore[assignment]
    raw = str(r.get(keys.result(src)))
    dumped = rqb.dump(keys.match_log(src))
    pipe = rqb.pipeline(transaction=False)
    pipe.hset(keys.match(dst), mapping={k: v.replace(old, new) for k, v in h.items()})
    pipe.set(keys.result(dst), raw.replace(old, new))
    if dumped:
        pipe.restore(keys.match_log(dst), 0, dumped, replace=True)
    pipe.zadd(keys.MATCHES, {dst: when})
    for bot_id in set(g.spec.bot_ids):
        pipe.zadd(keys.bot_matches(bot_id), {dst: when})
    pipe.zadd(keys.results(Pool.of(g.spec.players)), {dst: when})
    pipe.zadd(keys.event_games(ARENA), {dst: when})
    pipe.zadd(keys.event_released(ARENA), {dst: when})
    pipe.zadd(keys.ARCHIVE_PENDING, {dst: when})
    pipe.execute()


def move(stack: Stack, played: list[Leaving], count: int, archive: Archive, label: str,
         tag: str) -> None:
    """Clone `count` games into Redis, then time `run_archive` batch by batch."""
    when = time.time()
    for i in range(count):
        clone(stack.r, stack.rq, played[i % len(played)], f"m-{tag}{i}", when + i * 1e-6)
    batches: list[tuple[int, float, float]] = []
    real = archiving_job._batch

    def timed(r: redis.Redis, rq_conn: redis.Redis, arc: Archive, ids: list[str]) -> int:
        wall, cpu = time.perf_counter(), time.process_time()
        n = real(r, rq_conn, arc, ids)
        batches.append((n, time.perf_counter() - wall, time.process_time() - cpu))
        return n

    archiving_job._batch = timed
    cpu0 = redis_cpu(stack.r)
    try:
        clock = Clock()
        moved = 0
        while archiving.pending_count(stack.r):
            out = archiving_job.run_archive(stack.r, stack.rq, lambda: archive)
            if "failed" in out:
                raise RuntimeError(f"archiving failed: {out['failed']}")
            moved += int(out.get("moved", 0))
        wall, cpu = clock.wall, clock.cpu
    finally:
        archiving_job._batch = real
    decisions = statistics.mean(int(g.row.get("actions") or 0) for g in played)
    for i, (n, w, c) in enumerate(batches, 1):
        print(f"move {label} batch {i}: {n / w:.0f} games/s ({n} games, {w:.2f} s, "
              f"{c:.2f} s CPU)")
    rate = moved / wall
    print(f"move {label}: {rate:.0f} games/s ({moved} games, {wall:.1f} s, {cpu:.1f} s CPU, "
          f"Redis {redis_cpu(stack.r) - cpu0:.1f} s CPU)")
    print(f"move {label} decisions a game: {decisions:.1f} decisions")
    print(f"move {label} in decisions: {rate * decisions:.0f} decisions/s")
    print(f"move {label} over the stack's ceiling: {rate * decisions / CEILING:.1f} x")


# ------------------------------------------------------------------ a million games


@dataclasses.dataclass
class Base:
    """A real game, ready to be written again under other ids."""

    g: Leaving
    template: str
    zeroed: bytes  # its blob with the CRC's bytes zero
    parts: list[str]  # its transcript's JSON, split around the values a copy changes

    def text(self, values: dict[str, Any]) -> str:
        """The JSON of its transcript with `values` in place (as json.dumps gives it)."""
        out = []
        for i, part in enumerate(self.parts):
            out.append(part if i % 2 == 0 else json.dumps(values[part], separators=(",", ":")))
        return "".join(out)


_SLOTS = ("match_id", "bot_ids", "seats", "board", "unit")
_SLOT = re.compile(r'"@@(' + "|".join(_SLOTS) + r')@@"')


def bases_of(played: list[Leaving]) -> list[Base]:
    """The real games whose blob holds no seat name (house bots: names are ids), so the
    same blob serves any bots whose names are their ids."""
    out = []
    for g in played:
        if list(g.transcript["seats"]) != list(g.spec.bot_ids):
            continue
        p = codec.encode(g.transcript, _known(g))
        if codec.is_compact(p.blob):
            marked = json.dumps({**g.transcript, **{k: f"@@{k}@@" for k in _SLOTS}},
                                separators=(",", ":"))
            out.append(Base(g, p.template, p.blob[:2] + bytes(4) + p.blob[6:],
                            _SLOT.split(marked)))
    if not out:
        raise RuntimeError("no real game to fill the archive with")
    return out


T0 = 1_790_000_000.0


def synthetic(k: int, base: Base, seats: Sequence[str], unit: str
              ) -> tuple[Leaving, codec.Packed]:
    """Game number `k` of the fill (its id `m-a3pb{k//2+1}t{k%2}`): `base`'s game on the
    board labelled `unit`, with `seats` for bots; its blob is the base's, sealed for the
    new transcript."""
    g = base.g
    mid = f"m-a3pb{k // 2 + 1}t{k % 2}"
    meta = {**g.spec.meta, "board": f"arena-3p/{unit}", "unit": unit}
    spec = dataclasses.replace(g.spec, match_id=mid, bot_ids=tuple(seats),
                               seat_names=tuple(seats), meta=meta)
    t = {**g.transcript, "match_id": mid, "bot_ids": list(seats), "seats": list(seats),
         "board": meta["board"], "unit": unit}
    finished = T0 + 0.8 * k
    out = Leaving(spec=spec, created_at=finished - 41.5, finished_at=finished,
                  released_at=finished + 1.25, rated=g.rated,
                  row={**g.row, "match_id": mid}, transcript=t,
                  result={**g.result, "seats": list(seats)})
    blob = codec._sealed(base.text(t), base.zeroed)
    return out, codec.Packed(base.template, blob)


class Seating:
    """Who sits where in game k of the fill, and so what each bot scored: the pool of
    `bench.ratings.big_table` (bots of strengths N(0, 200 Elo), each round a random split
    into tables, two tables a board sharing its seats' luck), with `star` in place of one
    of the three in every `every`-th game. Each game is a real game of the `bytes`
    section whose places are the simulated ones, seat by seat (there is one for every
    order of three places among the games played; a game whose order has none takes
    another's with its bots moved to the seats of their places)."""

    def __init__(self, bases: list[Base], games: int, bots: list[str], star: str,
                 every: int) -> None:
        from bench.ratings import big_table

        self.table = big_table(np.random.default_rng(25), games, len(bots), tables=2)
        self.bots, self.star, self.every = bots, star, every
        self.by_places: dict[tuple[int, ...], list[Base]] = {}
        for b in bases:
            order = tuple(int(x) for x in b.g.result["placement"])
            if sorted(order) == [1, 2, 3]:
                self.by_places.setdefault(order, []).append(b)
        if not self.by_places:
            raise RuntimeError("no game of three distinct places to fill the archive with")
        self.any = [b for found in self.by_places.values() for b in found]

    def __call__(self, k: int) -> tuple[Base, list[str], str]:
        """Game k's base game, its seats and its board's label."""
        seats = [self.bots[i] for i in self.table.seat_bot[k].tolist()]
        if k % self.every == 0:
            seats[(k // self.every) % 3] = self.star
        places = tuple(self.table.place[k].tolist())
        found = self.by_places.get(places)
        unit = self.table.units[int(self.table.unit[k])]
        if found:
            return found[k % len(found)], seats, unit
        base = self.any[k % len(self.any)]
        order = [int(x) for x in base.g.result["placement"]]
        return base, [seats[places.index(p)] for p in order], unit


def fill(archive: Archive, bases: list[Base], games: int, star: str, star_games: int,
         n_bots: int, chunk: int = 20_000) -> float:
    """Write `games` games; the seconds it took. The first 1,000 by `mover.write`, the
    rest by bulk inserts of the rows it writes (checked against the first)."""
    bots = [f"b-{0xb0700000 + i:012x}" for i in range(n_bots - 1)]
    every = max(1, games // star_games)
    if (games + every - 1) // every != star_games:
        raise SystemExit(f"--star-games: {star_games} does not divide {games} games")
    seating = Seating(bases, games, bots, star, every)
    clock = Clock()
    first = min(1000, games)
    made = [synthetic(k, *seating(k)) for k in range(first)]
    mover.write(archive, [g for g, _ in made])
    with archive.begin() as conn:
        ids = intern(conn, schema.bots, "bot_id",
                     [{"bot_id": b, "name": b} for b in [*bots, star]])
        event = int(conn.execute(sa.select(schema.events.c.id).where(
            schema.events.c.kind == "arena", schema.events.c.event_id == "3p")).scalar_one())
        tpl = {t: int(conn.execute(sa.select(schema.templates.c.id).where(
            schema.templates.c.hash == codec.template_id(t))).scalar_one())
            for t in {p.template for _, p in made}}  # the mover wrote each of them

    def rows(k: int, g: Leaving, p: codec.Packed) -> dict[str, Any]:
        seats = [ids[b] for b in g.spec.bot_ids]
        return {**mover.game_row(g, p), "id": k + 1,
                **{f"seat{s}": seats[s] if s < len(seats) else None for s in range(4)},
                "event": event, "template": tpl[p.template]}

    # The mover's rows and these are the same, column by column.
    with archive.connect() as conn:
        written = [dict(m) for m in conn.execute(
            sa.select(schema.games).order_by(schema.games.c.id)).mappings()]
    assert len(written) == first
    for k, ((g, p), row) in enumerate(zip(made, written, strict=True)):
        mine = rows(k, g, p)
        if mine != row:
            diff = {c: (mine.get(c), row.get(c)) for c in row if mine.get(c) != row.get(c)}
            raise AssertionError(f"the bulk rows are not the mover's: game {k}: {diff}")
    for start in range(first, games, chunk):
        batch = [(k, *synthetic(k, *seating(k)))
                 for k in range(start, min(games, start + chunk))]
        with archive.begin() as conn:
            conn.execute(sa.insert(schema.games), [rows(k, g, p) for k, g, p in batch])
    return clock.wall


def _serve(port: int, redis_url: str, archive_url: str) -> None:
    """A referee (a child process)."""
    from server.app import serve

    logging.basicConfig(level=logging.WARNING)
    serve(f"127.0.0.1:{port}", redis_url, admin_token="bench-admin-token-1234567890",
          archive_url=archive_url)


@contextlib.contextmanager
def referee(redis_url: str, archive_url: str) -> Iterator[tuple[grpc.Channel, int]]:
    """A real referee in its own process; a channel to it, and its pid."""
    port = free_port()
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=_serve, args=(port, redis_url, archive_url), daemon=True)
    proc.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=60)
        assert proc.pid is not None
        yield channel, proc.pid
    finally:
        channel.close()
        proc.terminate()
        proc.join(30)


def timed_calls(n: int, call: Callable[[int], Any]) -> list[float]:
    """Milliseconds of each of `n` calls."""
    out = []
    for i in range(n):
        start = time.perf_counter()
        call(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


def report(label: str, ms: list[float]) -> None:
    print(f"{label} p50: {pct(ms, 50):.1f} ms")
    print(f"{label} p95: {pct(ms, 95):.1f} ms")
    print(f"{label} max: {max(ms):.1f} ms")


def fit_section(r: redis.Redis, arc: Archive, dialect: str, games: int) -> None:
    """The rating fit of the filled pool as a worker runs it (`workers.fit.fit_pool`:
    the read and the fits inside `workers.memory.fit_memory`, its giving back of the
    memory timed too): the pool's columns read in bulk from the archive
    (`workers.fit.pool_table`), the official fit cold, the read and the cold fit
    together (the issue's figure), the same fit warm (started from the fit of its first
    99%), and the worker's whole fit job (every method, each table stored in Redis)."""
    clock = Clock()
    with fit_memory():
        table = pool_table(r, "3p", lambda: arc)
    read = clock.wall, clock.cpu
    print(f"fit {dialect} read: {len(table)} games, {read[0]:.2f} s ({read[1]:.2f} s CPU)")
    assert len(table) == games, (len(table), games)
    now = time.time()
    clock = Clock()
    with fit_memory():
        cold = BatchFit().rate_table(table, now)
    print(f"fit {dialect} batch cold: {clock.wall:.2f} s ({clock.cpu:.2f} s CPU), "
          f"{len(cold.rows)} bots")
    print(f"fit {dialect} read and batch cold: {read[0] + clock.wall:.2f} s "
          f"({read[1] + clock.cpu:.2f} s CPU)")
    method = BatchFit()
    with fit_memory():
        method.rate_table(table.take(np.arange(games * 99 // 100)), now)
    clock = Clock()
    with fit_memory():
        warm = method.rate_table(table, now)
    print(f"fit {dialect} batch warm (+1%): {clock.wall:.2f} s ({clock.cpu:.2f} s CPU)")
    diff = max(abs(a.rating - b.rating) for a, b in zip(
        sorted(cold.rows, key=lambda x: x.bot_id), sorted(warm.rows, key=lambda x: x.bot_id),
        strict=True))
    print(f"fit {dialect} warm against cold: {diff:.1e} elo")
    for name in methods.names():  # no earlier fit to start from (another backend's)
        m: Any = methods.get(name)
        for fit in (m, getattr(m, "_fit", None)):
            if isinstance(fit, BatchFit):
                fit._last.clear()
    clock = Clock()
    fit_pool(r, "3p", lambda: arc)
    print(f"fit {dialect} whole job (read and every method, cold): {clock.wall:.2f} s "
          f"({clock.cpu:.2f} s CPU)")


def reads_section(tmp: Path, backend_url: str, dialect: str, bases: list[Base], games: int,
                  star_games: int, calls: int, blob: float | None, fits: bool = True
                  ) -> None:
    """Fill the archive, time reads over a real referee, then bytes per game."""
    arc = open_archive(backend_url)
    server = RedisServer(tmp / f"reads-{dialect}", appendonly=False).start()
    try:
        r = store_bots.connect(server.url)
        record, _ = store_bots.register_bot(r, "star")
        star = record.bot_id
        took = fill(arc, bases, games, star, star_games, 1000)
        print(f"reads {dialect} fill: {games} games in {took:.0f} s "
              f"({games / took:.0f} games/s)")
        sizes = arc.table_bytes()
        _bytes(dialect, "as written", sizes, games, blob)
        if fits:
            fit_section(r, arc, dialect, games)
        rng = random.Random(5)
        with referee(server.url, backend_url) as (channel, pid):
            stub = match_pb2_grpc.MatchServiceStub(channel)
            ref = psutil.Process(pid)
            cpu0 = sum(ref.cpu_times()[:2])

            def get(_: int) -> None:
                k = rng.randrange(games)
                mid = f"m-a3pb{k // 2 + 1}t{k % 2}"
                m = stub.GetMatch(match_pb2.GetMatchRequest(match_id=mid), timeout=30).match
                assert m.match_id == mid and m.transcript_json, mid

            get(0)  # the referee opens the archive on first use
            clock = Clock()
            ms = timed_calls(calls, get)
            print(f"reads {dialect} GetMatch calls: {calls} calls, {clock.wall:.1f} s, "
                  f"referee {sum(ref.cpu_times()[:2]) - cpu0:.1f} s CPU")
            report(f"reads {dialect} GetMatch", ms)

            def page(token: str) -> match_pb2.ListMatchesResponse:
                return stub.ListMatches(match_pb2.ListMatchesRequest(
                    bot_id=star, page_size=100, page_token=token), timeout=60)

            first = timed_calls(max(20, calls // 5), lambda _: page(""))
            report(f"reads {dialect} ListMatches(bot) first page", first)
            token, every, seen = "", [], 0
            cpu0 = sum(ref.cpu_times()[:2])
            clock = Clock()
            while True:
                start = time.perf_counter()
                resp = page(token)
                every.append((time.perf_counter() - start) * 1000)
                seen += len(resp.matches)
                token = resp.next_page_token
                if not token:
                    break
            assert seen == star_games, (seen, star_games)  # every one, once
            print(f"reads {dialect} ListMatches(bot) walk: {len(every)} pages, {seen} games, "
                  f"{clock.wall:.1f} s, referee {sum(ref.cpu_times()[:2]) - cpu0:.1f} s CPU")
            report(f"reads {dialect} ListMatches(bot) every page", every)
            deep = every[len(every) // 2:]
            report(f"reads {dialect} ListMatches(bot) deep pages", deep)
            print(f"reads {dialect} ListMatches(bot) last page: {every[-1]:.1f} ms")
        clock = Clock()
        compact_archive(arc)
        print(f"reads {dialect} compact: {clock.wall:.0f} s")
        _bytes(dialect, "compacted", arc.table_bytes(), games, blob)
        if dialect == "sqlite":
            path = Path(backend_url.removeprefix("sqlite:///"))
            print(f"bytes sqlite file: {path.stat().st_size / games:.1f} bytes/game")
    finally:
        arc.close()
        server.stop()


def _bytes(dialect: str, label: str, sizes: dict[str, int], games: int,
           blob: float | None) -> None:
    total = sum(sizes.values()) / games
    for name in ("games",):
        print(f"bytes {dialect} {label} {name}: {sizes[name] / games:.1f} bytes/game")
    print(f"bytes {dialect} {label} total: {total:.1f} bytes/game")
    if blob is not None:
        print(f"bytes {dialect} {label} transcript share: {100 * blob / total:.0f} %")


# ------------------------------------------------------------------ backends


@contextlib.contextmanager
def postgres() -> Iterator[Callable[[str], str]]:
    """A throwaway PostgreSQL server, as the tests start one: a fresh database's URL
    for each name."""
    sys.path.insert(0, str(ROOT / "tests"))
    from pg import Postgres, binaries

    found = binaries()
    if found is None:
        raise SystemExit("PostgreSQL is not installed: apt-get install postgresql")
    server = Postgres(found).init().start()  # its own folder: its user must reach it
    try:
        yield lambda name: server.url(server.create_database(name))
    finally:
        server.remove()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a run of a few minutes")
    ap.add_argument("--only", default="", metavar="NAME,...",
                    help=f"some of {','.join(SECTIONS)} (default all)")
    ap.add_argument("--backend", choices=("sqlite", "postgresql"), action="append",
                    help="default: both")
    ap.add_argument("--soak-games", type=int, default=None, help="default 20,000")
    ap.add_argument("--sample-every", type=int, default=1000)
    ap.add_argument("--fit-every", type=int, default=1000)
    ap.add_argument("--games", type=int, default=None,
                    help="full games played for bytes, moving and the fill (default 300)")
    ap.add_argument("--move-games", type=int, default=None, help="default 5,000")
    ap.add_argument("--fill-games", type=int, default=None, help="default 1,000,000")
    ap.add_argument("--star-games", type=int, default=None, help="default 100,000")
    ap.add_argument("--calls", type=int, default=None, help="GetMatch calls (default 1,000)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    q = args.quick
    soak_games = args.soak_games or (1000 if q else 20_000)
    n_games = args.games or (40 if q else 300)
    move_games = args.move_games or (1000 if q else 5000)
    fill_games = args.fill_games or (50_000 if q else 1_000_000)
    star_games = args.star_games or fill_games // 10
    calls = args.calls or (200 if q else 1000)
    only = [s for s in args.only.split(",") if s] or list(SECTIONS)
    if unknown := [s for s in only if s not in SECTIONS]:
        ap.error(f"--only: no section {', '.join(unknown)}; they are {', '.join(SECTIONS)}")
    backends = args.backend or ["sqlite", "postgresql"]
    with tempfile.TemporaryDirectory(prefix="moonshot-archive-bench-") as name, \
            contextlib.ExitStack() as stack:
        tmp = Path(name)
        pg = stack.enter_context(postgres()) if "postgresql" in backends else None

        def url(backend: str, db: str) -> str:
            if backend == "sqlite":
                return f"sqlite:///{tmp / (db + '.sqlite3')}"
            assert pg is not None
            return pg(db)

        if "soak" in only:
            soak(tmp, soak_games, args.sample_every, args.fit_every)
        if not {"bytes", "move", "reads", "fit"} & set(only):
            return 0
        full, played, took = play_games(tmp, "full", n_games, {}, FULL_ANCHORS)
        stack.callback(full.close)
        print(f"games played: {len(played)} full games in {took:.0f} s")
        blob = None
        if "bytes" in only or "reads" in only:
            blob = bytes_section(played)["blob"]
        if "move" in only:
            short, played_short, took = play_games(tmp, "short", 200, {"max_hands": "1"},
                                                   SOAK_ANCHORS)
            stack.callback(short.close)
            for backend in backends:
                move(full, played, move_games, open_archive(url(backend, "movefull")),
                     f"{backend} full games", "f")
                move(short, played_short, move_games,
                     open_archive(url(backend, "moveshort")), f"{backend} one-hand games",
                     "s")
        if "reads" in only or "fit" in only:
            bases = bases_of(played)
            for backend in backends:
                reads_section(tmp, url(backend, "reads"), backend, bases, fill_games,
                              star_games, calls, blob, fits="fit" in only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
