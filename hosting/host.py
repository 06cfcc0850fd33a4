"""The host: runs hosted versions in sandboxes while matches need them, and validates
new versions.

Any number of hosts may run (`moonshot host`, one per machine); they share the work
through Redis (store.hosted):

- A match that waits for a hosted version with no live stream marks it wanted (in the
  same step that finds it absent: its clock stands still, its grace runs). A host that
  has a free slot takes the bot's lease (one host a bot), mints the sandbox a fresh bot
  token, starts the sandbox and lets it connect like any remote bot. It renews the lease
  while the sandbox runs; a host that dies lets its leases lapse and the next host
  starts the bot when its match wants it again.
- A sandbox with no match under way and no want for `idle_s` is stopped. One that ends
  on its own (a crash, a limit) is started again if the bot still has a match under way
  (a crash mid-move costs the bot what a remote bot's disconnect costs it); its log
  says why it ended. A sandbox replaced by the author's own process (the author's
  token, for debugging) is not restarted while that process is connected: the newest
  stream of a bot plays, never two.
- A sandbox runs under the tightest limits of the host's own and of the events whose
  games it serves (docs/hosting.md, "Limits"): worked out when it starts, from the
  want's limits and the sandbox limits of every match under way with the bot. A match
  whose event allows less than the running sandbox's makes the host start it again
  under the lower limits (the match waits, its clock stopped, until it does: its gate
  in `workers.match`); one that has run tighter than its games under way need for
  `loosen_after_s` is started again under the looser ones.
- A new version (building) is unpacked and checked, then plays `VALIDATION_GAMES`
  unrated games against house bots in the sandbox; it becomes active only if it
  finished every one without forfeit (one strike is a forfeit there), and then takes
  its previous version's place in the arenas it had joined.
- Unpacked versions are kept on the host's disk while they are used: a version's folder
  unused for `keep_unpacked_s` (no sandbox of it running, none started since) is
  removed, and so are the leftovers of an unpack cut short, so that a season of
  versions does not fill the disk (the package stays in the archive; a later start
  unpacks it again).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import secrets
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from archive import packages
from archive import reads as archive_reads
from archive.db import Archive
from hosting.package import PackageError, extract
from hosting.sandbox import Sandbox, SandboxSpec
from store import arena as store_arena
from store import bots as store_bots
from store import hosted, ids
from store import matches as store_matches
from store.errors import NotFound
from store.hosted import HostedVersion, Limits, VersionStatus
from store.records import Clock, Faults, MatchSpec, SandboxLimits
from workers.queues import enqueue_match

log = logging.getLogger(__name__)

VALIDATION_GAMES = 2
VALIDATION_OPPONENTS = ("house:greedy", "house:random")
VALIDATION_TIMEOUT_S = 600.0
VALIDATION_CLOCK = Clock(move_time_ms=2000, time_bank_ms=30_000)
VALIDATION_FAULTS = Faults(max_strikes=1, disconnect_grace_ms=20_000)
RENEW_EVERY_S = 3.0
LOG_EVERY_S = 1.0
CRASH_WINDOW_S = 60.0
CRASHES_BEFORE_BACKOFF = 3
BACKOFF_S = 10.0
CONNECT_TIMEOUT_S = 15.0  # a sandbox that has not connected by then is stopped
EXITS_BEFORE_FAILING = 2  # a validating version that ends this often unconnected fails
LIMITS_EVERY_S = 1.0  # how often a running sandbox's limits are held against its games'
WANTED_LOOK_S = 0.2  # ... and at most this often while a match wants it
# A sandbox tighter than its games under way need is started again under their limits
# once it has been so this long (`moonshot host --loosen-after`): not between two games
# of one round (a restart costs every game of the bot a reconnection), but before long
# in an arena that outlives a tight event.
LOOSEN_AFTER_S = 30.0
# An unpacked version unused this long leaves the host's disk (`moonshot host
# --keep-unpacked`); the folder is looked over this often.
KEEP_UNPACKED_S = 24 * 3600.0
PRUNE_EVERY_S = 600.0


@dataclass
class Running:
    """A sandbox this host runs."""

    version: HostedVersion
    sandbox: Sandbox
    started: float
    log_base: str  # the bot's log before this sandbox started
    busy_at: float  # the last time it had a match under way or was wanted
    renewed_at: float
    limits: Limits  # what it runs under
    published: str  # its entry in the version's record (`store.hosted.publish_sandbox`)
    token_hash: str  # of the token it was started with: its own streams' (`_ended`)
    logged_at: float = 0.0
    connected: bool = False  # its bot has had a live stream since it started
    checked_at: float = 0.0  # when its limits were last held against its games'
    loose_since: float | None = None  # since when it has run tighter than they need


@dataclass
class Host:
    """One host's state; `step` does one round of its work, `run` loops it."""

    r: redis.Redis
    rq_conn: redis.Redis
    archive: Archive
    referee: str
    name: str
    data_dir: Path
    slots: int = 8
    idle_s: float = 60.0
    running: dict[str, Running] = field(default_factory=dict)
    crashes: dict[str, list[float]] = field(default_factory=dict)
    held_until: dict[str, float] = field(default_factory=dict)
    validating: dict[str, float] = field(default_factory=dict)  # bot -> lease renewed at
    heartbeat_at: float = 0.0
    limits: Limits | None = None  # the most it gives a sandbox (None: each version's own)
    direct: bool = False  # `referee` is the referee's own unix socket, bound into sandboxes
    unconnected_exits: dict[str, int] = field(default_factory=dict)  # validating bot -> count
    match_limits: dict[str, SandboxLimits | None] = field(default_factory=dict)  # read once
    loosen_after_s: float = LOOSEN_AFTER_S
    keep_unpacked_s: float = KEEP_UNPACKED_S
    pruned_at: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        (self.data_dir / "versions").mkdir(parents=True, exist_ok=True)
        (self.data_dir / "run").mkdir(parents=True, exist_ok=True)
        os.chmod(self.data_dir, 0o711)  # sandboxes' uids may traverse, never list

    # ---------------------------------------------------------------- the loop

    def run(self, stopping: threading.Event, every_s: float = 0.05) -> None:
        """Step until `stopping` is set, then stop every sandbox and leave."""
        try:
            while not stopping.is_set():
                try:
                    self.step()
                except redis.RedisError as exc:
                    log.warning("host %s: Redis: %s (trying again)", self.name, exc)
                    stopping.wait(1.0)
                except Exception:  # the archive away, a bug: the sandboxes keep running
                    log.exception("host %s: a step failed (trying again)", self.name)
                    stopping.wait(1.0)
                stopping.wait(every_s)
        finally:
            self.stop_all("the host stops")

    def step(self) -> None:
        """Announce this host, start what is wanted, watch what runs, validate."""
        now = time.monotonic()
        if now - self.heartbeat_at >= 2.0:
            hosted.heartbeat(self.r, self.name, self.limits)
            self.heartbeat_at = now
        for bot_id in hosted.wanted(self.r):
            if bot_id in self.running:  # a match may want it under lower limits: look
                run = self.running[bot_id]
                run.checked_at = min(run.checked_at, now - LIMITS_EVERY_S + WANTED_LOOK_S)
            elif len(self.running) < self.slots:
                self._start(bot_id)
        for bot_id in list(self.running):
            self._watch(bot_id, now)
        self._validate(now)
        if now - self.pruned_at >= PRUNE_EVERY_S:
            self.pruned_at = now
            self.prune_unpacked()

    def stop_all(self, why: str) -> None:
        """Stop every sandbox (their bots' matches see a disconnect; another host takes
        them when they are wanted again)."""
        for bot_id in list(self.running):
            self._stop(bot_id, why)
        hosted.leave(self.r, self.name)

    # ------------------------------------------------------------- sandboxes

    def _start(self, bot_id: str, again: str = "") -> None:
        """Start the bot's sandbox (`again`: why this host starts its own sandbox of it
        again, at once, without waiting for a want)."""
        version = hosted.get_version(self.r, bot_id)
        if version is None or version.status not in (VersionStatus.ACTIVE,
                                                     VersionStatus.VALIDATING):
            hosted.unwant(self.r, bot_id)
            return
        if not again and time.monotonic() < self.held_until.get(bot_id, 0.0):
            return  # crashing again and again: wait a little
        if not again and store_bots.is_connected(self.r, bot_id):
            hosted.unwant(self.r, bot_id)  # its author's process (or another host's) plays
            hosted.forget_sandbox(self.r, bot_id, self.name)  # of an earlier run of this host
            return
        if not hosted.acquire_lease(self.r, bot_id, self.name):
            return  # another host runs it
        try:
            folder = self.unpacked(version)
        except (PackageError, OSError) as exc:
            hosted.release_lease(self.r, bot_id, self.name)
            hosted.set_status(self.r, bot_id, VersionStatus.FAILED, f"package: {exc}")
            hosted.unwant(self.r, bot_id)
            return
        token = hosted.issue_host_token(self.r, bot_id)
        work = Path(tempfile.mkdtemp(prefix=f"{bot_id}-", dir=self.data_dir / "run"))
        # First say that its limits are being worked out (no match's gate lets a game
        # through), then read its matches: one that begins after the read sees this
        # entry, or the limits below, and is held against them.
        started = secrets.token_hex(8)
        published = hosted.publish_sandbox(self.r, bot_id, self.name, started, None)
        try:
            limits = self._needed(bot_id, version, hosted.take_want_limits(self.r, bot_id))
            published = hosted.publish_sandbox(self.r, bot_id, self.name, started, limits)
        except BaseException:
            hosted.unpublish_sandbox(self.r, bot_id, published)
            shutil.rmtree(work, ignore_errors=True)
            raise
        spec = SandboxSpec(bot_id=bot_id, version_dir=folder, runtime=version.runtime,
                           command=version.command, env={"MOONSHOT_TOKEN": token},
                           limits=limits, work_root=work)
        base = hosted.log_tail(self.r, bot_id)
        base += ("" if not base or base.endswith("\n") else "\n") + (
            f"[host] started again: {again}\n" if again else "") + (
            f"[host] limits: {limits.describe()}\n")
        try:
            sandbox = Sandbox.start(spec, self.referee, direct=self.direct)
        except Exception as exc:  # the sandbox could not be built: say so, keep going
            log.exception("host %s: cannot start %s", self.name, bot_id)
            hosted.unpublish_sandbox(self.r, bot_id, published)
            hosted.release_lease(self.r, bot_id, self.name)
            hosted.set_log(self.r, bot_id, base + f"\n[host] could not start: {exc}\n")
            shutil.rmtree(work, ignore_errors=True)
            self.held_until[bot_id] = time.monotonic() + BACKOFF_S
            if version.status == VersionStatus.VALIDATING:
                self._fail(bot_id, f"its sandbox could not start: {exc}")
            return
        now = time.monotonic()
        self.running[bot_id] = Running(version, sandbox, now, base, now, now, limits,
                                       published, store_bots.token_hash(token),
                                       checked_at=now)
        hosted.unwant(self.r, bot_id)
        log.info("host %s: started %s (%s; %s)", self.name, bot_id, version.runtime,
                 limits.describe())

    def _caps(self, version: HostedVersion) -> Limits:
        """The most this host gives the version's sandbox."""
        return self.limits or version.limits

    def _needed(self, bot_id: str, version: HostedVersion,
                wanted: SandboxLimits | None = None) -> Limits:
        """The limits the bot's sandbox must run under now: the host's own, lowered to
        those of every match under way with the bot (and of the want, if any)."""
        live = hosted.live_matches(self.r, bot_id)
        unknown = [m for m in live if m not in self.match_limits]
        self.match_limits.update(hosted.sandbox_limits_of(self.r, unknown))
        if len(self.match_limits) > 10_000:  # keep only what is still under way
            mine = {m for b in self.running for m in hosted.live_matches(self.r, b)}
            self.match_limits = {m: x for m, x in self.match_limits.items()
                                 if m in mine or m in live}
        return self._caps(version).under(wanted, *(self.match_limits.get(m) for m in live))

    def _watch(self, bot_id: str, now: float) -> None:
        run = self.running[bot_id]
        if now - run.logged_at >= LOG_EVERY_S:
            self._log(bot_id, run)
            run.logged_at = now
        if run.sandbox.poll() is not None:
            self._ended(bot_id, run)
            return
        if now - run.checked_at >= LIMITS_EVERY_S and self._limits_hold(bot_id, run, now):
            return
        if not run.connected:
            run.connected = store_bots.is_connected(self.r, bot_id)
            if not run.connected and now - run.started > CONNECT_TIMEOUT_S:
                self._stop(bot_id, f"it did not connect to the referee within "
                                   f"{CONNECT_TIMEOUT_S:g} s of its start")
                if run.version.status == VersionStatus.VALIDATING:
                    self._fail(bot_id, f"it did not connect to the referee within "
                                       f"{CONNECT_TIMEOUT_S:g} s of its start")
                return
        if now - run.renewed_at >= RENEW_EVERY_S:
            if not hosted.renew_lease(self.r, bot_id, self.name):
                self._stop(bot_id, "its lease went to another host")
                return
            run.renewed_at = now
        busy = hosted.busy(self.r, bot_id)
        if busy:
            run.busy_at = now
        elif now - run.busy_at > self.idle_s:
            # Its matches wanted it until it connected, and a want counts for 10 s: one of
            # those is no reason to start it again (a match that wants it now asks again).
            # Dropped before the stop releases the lease, which another host could take
            # up on that stale want.
            hosted.unwant(self.r, bot_id)
            self._stop(bot_id, f"idle for {self.idle_s:g} s")

    def _limits_hold(self, bot_id: str, run: Running, now: float) -> bool:
        """Hold the running sandbox's limits against its games' (and a want's); start it
        again under them when it runs looser than one of them allows, or has run tighter
        than they all need for `loosen_after_s` (an idle one is left to stop: its next
        start works them out anyway). True if it was started again."""
        run.checked_at = now
        needed = self._needed(bot_id, run.version, hosted.take_want_limits(self.r, bot_id))
        if needed == run.limits:
            run.loose_since = None
            return False
        over = [name for name, value in run.limits.items().items()
                if value > needed.items()[name]]
        if over:
            why = f"a game under way allows it less ({', '.join(over)})"
        else:
            if not hosted.busy(self.r, bot_id):
                run.loose_since = None
                return False
            if run.loose_since is None:
                run.loose_since = now
            if now - run.loose_since < self.loosen_after_s:
                return False
            why = "the games under way allow it more"
        self._stop(bot_id, "to start it again under other limits")
        self._start(bot_id, again=why)
        return True

    def _log(self, bot_id: str, run: Running, end: str = "") -> None:
        tail = run.sandbox.stderr_tail()
        hosted.set_log(self.r, bot_id, run.log_base + tail + end)

    def _ended(self, bot_id: str, run: Running) -> None:
        why = run.sandbox.end_reason()
        # A stream of the bot opened with another token than the sandbox's: its author's
        # own process, which took its place and plays from now on; the log says so for
        # the author. (The sandbox's own stream may outlive it for the moment the referee
        # takes to see it end: not counted, so a crash is a crash.)
        other = store_bots.connected_besides(self.r, bot_id, run.token_hash)
        self._log(bot_id, run, f"\n[host] the sandbox ended: {why}\n" + (
            "[host] another stream of this bot is connected (its author's own process, "
            "which took the sandbox's place and plays, or another host's sandbox); this "
            "one starts again when none is and a game needs the bot\n" if other else ""))
        self.running.pop(bot_id, None)
        hosted.unpublish_sandbox(self.r, bot_id, run.published)
        hosted.release_lease(self.r, bot_id, self.name)
        if other:
            log.info("host %s: %s ended (%s); another stream of it plays", self.name,
                     bot_id, why)
            return
        if not run.connected and run.version.status == VersionStatus.VALIDATING:
            n = self.unconnected_exits[bot_id] = self.unconnected_exits.get(bot_id, 0) + 1
            if n >= EXITS_BEFORE_FAILING:  # it never gets as far as the referee
                self._fail(bot_id, f"it ended before connecting to the referee "
                                   f"({n} times; the last: {why})")
                return
        times = [t for t in self.crashes.get(bot_id, []) if time.monotonic() - t < CRASH_WINDOW_S]
        times.append(time.monotonic())
        self.crashes[bot_id] = times
        if len(times) >= CRASHES_BEFORE_BACKOFF:
            self.held_until[bot_id] = time.monotonic() + BACKOFF_S
        log.warning("host %s: %s ended: %s", self.name, bot_id, why)
        if hosted.busy(self.r, bot_id):
            hosted.want(self.r, bot_id)  # its match still needs it: start it again

    def _stop(self, bot_id: str, why: str) -> None:
        run = self.running.pop(bot_id, None)
        if run is None:
            return
        run.sandbox.stop(why)
        self._log(bot_id, run, f"\n[host] stopped: {why}\n")
        hosted.unpublish_sandbox(self.r, bot_id, run.published)
        hosted.release_lease(self.r, bot_id, self.name)
        log.info("host %s: stopped %s: %s", self.name, bot_id, why)

    def unpacked(self, version: HostedVersion) -> Path:
        """The version's folder on this host (read-only; unpacked once per digest)."""
        folder = self.data_dir / "versions" / version.digest
        if folder.is_dir():
            with contextlib.suppress(OSError):  # in use: `prune_unpacked` leaves it be
                os.utime(folder)
            return folder
        data = packages.get(self.archive, version.digest)
        if data is None:
            raise PackageError(f"the archive holds no package {version.digest[:12]}")
        if hashlib.sha256(data).hexdigest() != version.digest:
            raise PackageError(f"package {version.digest[:12]} does not match its hash")
        staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=self.data_dir / "versions"))
        try:
            extract(data, staging / "v")
            os.chmod(staging / "v", 0o555)
            try:
                os.replace(staging / "v", folder)
            except OSError:
                if not folder.is_dir():  # else another host process here unpacked it first
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return folder

    def prune_unpacked(self) -> list[str]:
        """Remove the unpacked versions no sandbox of this host runs that nobody started
        for `keep_unpacked_s` (a folder's mtime is its last use), and unpacks cut short
        an hour ago or more; the digests removed. A folder is first renamed out of the
        way, so that a start at that moment unpacks it afresh instead of half of it."""
        versions = self.data_dir / "versions"
        in_use = {run.version.digest for run in self.running.values()}
        wall = time.time()
        removed = []
        for entry in versions.iterdir():
            try:
                age = wall - entry.lstat().st_mtime
            except OSError:
                continue
            leftover = entry.name.startswith((".unpack-", ".drop-"))
            if leftover and age < 3600.0:
                continue  # an unpack or a removal under way
            if not leftover and (entry.name in in_use or age < self.keep_unpacked_s):
                continue
            try:
                if leftover:
                    _remove_tree(entry)
                    continue
                drop = Path(tempfile.mkdtemp(prefix=".drop-", dir=versions))
                os.replace(entry, drop / "v")
                removed.append(entry.name)
                _remove_tree(drop)
            except OSError as exc:
                log.warning("host %s: could not remove %s: %s", self.name, entry, exc)
        if removed:
            log.info("host %s: removed %d unpacked version(s) unused for %g s",
                     self.name, len(removed), self.keep_unpacked_s)
        return removed

    # ------------------------------------------------------------- validation

    def _validate(self, now: float) -> None:
        """Take on one waiting version at a time; move the ones taken on forward."""
        for bot_id in list(self.validating):
            self._validation_step(bot_id, now)
        if self.validating:
            return
        for bot_id in hosted.waiting_validation(self.r)[:20]:
            if hosted.take_validation(self.r, bot_id, self.name):
                self.validating[bot_id] = now
                self._validation_step(bot_id, now)
                return

    def _validation_step(self, bot_id: str, now: float) -> None:
        version = hosted.get_version(self.r, bot_id)
        if version is None or version.status in (VersionStatus.ACTIVE, VersionStatus.FAILED):
            self._done_validating(bot_id)
            return
        if now - self.validating[bot_id] >= RENEW_EVERY_S:
            hosted.keep_validation(self.r, bot_id, self.name)
            self.validating[bot_id] = now
        if version.status == VersionStatus.BUILDING:
            try:
                self.unpacked(version)
            except (PackageError, OSError) as exc:
                self._fail(bot_id, f"the package could not be unpacked: {exc}")
                return
            # Validating first, then the games (the next step makes them): a host that
            # dies in between leaves a version whose games the next host makes, never two
            # sets of games.
            hosted.set_status(self.r, bot_id, VersionStatus.VALIDATING,
                              f"playing {VALIDATION_GAMES} validation games")
            return
        self._judge(version)

    def _create_validation_games(self, version: HostedVersion) -> None:
        bot = store_bots.get_bot(self.r, version.bot_id)
        made = []
        for g in range(VALIDATION_GAMES):
            seats = [version.bot_id, *VALIDATION_OPPONENTS]
            seats = seats[g % 3:] + seats[:g % 3]  # the bot in a new seat each game
            names = [bot.name if b == version.bot_id else b for b in seats]
            spec = MatchSpec.build(match_id=ids.new_match_id(), players=3, bot_ids=seats,
                                   seat_names=names, clock=VALIDATION_CLOCK,
                                   faults=VALIDATION_FAULTS,
                                   meta={"validation": version.bot_id, "unrated": True})
            store_matches.create_match(self.r, spec)
            made.append(spec.match_id)
        hosted.set_validation(self.r, version.bot_id, made)
        for match_id in made:
            enqueue_match(self.rq_conn, match_id)

    def _judge(self, version: HostedVersion) -> None:
        started = hosted.validation_started(self.r, version.bot_id)
        games = hosted.validation_games(self.r, version.bot_id)
        if not games:  # just validating (or taken over from a host that died before)
            self._create_validation_games(version)
            return
        outcomes = [self._outcome(m, version.bot_id) for m in games]
        failed = [o for o in outcomes if o not in ("", "ok")]
        if failed:
            self._fail(version.bot_id, failed[0])
        elif all(o == "ok" for o in outcomes):
            self._activate(version)
        elif time.time() - started > VALIDATION_TIMEOUT_S:
            self._fail(version.bot_id, f"validation did not finish in "
                                       f"{VALIDATION_TIMEOUT_S:g} s")

    def _outcome(self, match_id: str, bot_id: str) -> str:
        """'' while the game runs, 'ok' when the bot finished it cleanly, else why not."""
        try:
            record = store_matches.get_match(self.r, match_id)
        except NotFound:  # finished and moved to the archive already
            game = archive_reads.game(self.archive, match_id, with_blob=False)
            if game is None:
                return f"validation game {match_id} was lost"
            if game.forfeit_seat is not None and game.bot_ids[game.forfeit_seat] == bot_id:
                return f"validation game {match_id}: forfeit: {game.forfeit_reason or ''}"
            return "ok"
        if record.status.value == "failed":
            return f"validation game {match_id} failed: {record.error}"
        if record.result is None:
            return ""
        forfeit: dict[str, Any] | None = record.result.get("forfeit")
        if forfeit is not None:
            seat = int(forfeit.get("seat", -1))
            if 0 <= seat < len(record.spec.bot_ids) and record.spec.bot_ids[seat] == bot_id:
                return f"validation game {match_id}: forfeit: {forfeit.get('reason', '')}"
        return "ok"

    def _fail(self, bot_id: str, why: str) -> None:
        if bot_id in self.running:
            self._stop(bot_id, "its version failed validation")
        hosted.unwant(self.r, bot_id)
        tail = hosted.log_tail(self.r, bot_id, 2000)
        hosted.set_status(self.r, bot_id, VersionStatus.FAILED, why)
        log.warning("host %s: version %s failed validation: %s\n%s", self.name, bot_id, why,
                    tail)
        self._done_validating(bot_id)

    def _activate(self, version: HostedVersion) -> None:
        bot = store_bots.get_bot(self.r, version.bot_id)
        hosted.set_status(self.r, version.bot_id, VersionStatus.ACTIVE,
                          f"passed {VALIDATION_GAMES} validation games")
        if bot.previous:  # the arena plays the line's newest active version
            for pool in store_arena.pools_of_bot(self.r, bot.previous):
                store_arena.join(self.r, pool, version.bot_id)
                store_arena.leave(self.r, pool, bot.previous)
        log.info("host %s: version %s (%s) is active", self.name, bot.name, version.bot_id)
        self._done_validating(bot_id=version.bot_id)

    def _done_validating(self, bot_id: str) -> None:
        self.validating.pop(bot_id, None)
        hosted.drop_validation(self.r, bot_id)


def _remove_tree(path: Path) -> None:
    """Remove a folder whose parts were made read-only (an unpacked version is 0555)."""
    for parent, dirs, _ in os.walk(path):
        for d in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(parent, d), 0o700)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)
    shutil.rmtree(path)
