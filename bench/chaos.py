"""Chaos: tournaments play on while random parts of the stack are killed or frozen.

Run `python bench/chaos.py --minutes M [--every S] [--seed N]`. The stack is real
processes on this machine, started as a user starts them: a redis-server with its
append-only file (appendfsync everysec), two `moonshot referee`s, three `moonshot
worker`s and `--bots` `moonshot bot run` processes (greedy and random), each bot given
both referees as one gRPC target (`ipv4:A,B`: it moves to the other when one dies).

Every `--every` seconds (jittered) one fault, drawn at random:

- `kill worker` / `freeze worker`: SIGKILL, or SIGSTOP for 2-8 s, of a worker. Matches
  are hosted on threads of the worker process (there is no work-horse process to hit
  alone), so this hits every match the worker hosts and any scheduling step or fit it
  was running;
- `kill referee` / `freeze referee`: the same for a referee, with bots connected;
- `kill redis` / `freeze redis`: SIGKILL (restarted on its append-only file on the
  same port), or SIGSTOP for 2-8 s;
- `kill bot` / `freeze bot`: SIGKILL (restarted with its token) or SIGSTOP for 2-8 s of
  a bot process (its matches wait out the disconnect grace, 120 s here).

A killed part is started again 1-3 s later, as `moonshot up` would. Tournaments (3p
round robins of all the bots, one after the other) are created until the time is
up; then the faults stop and the bench waits for the last tournament to finish.
It prints `name: value unit` lines:

- `chaos faults injected` and `chaos faults KIND` for each kind;
- `chaos games planned` (every game the tournaments' schedules hold), `chaos games
  recorded once` (a result, recorded in its tournament and in its rating pool once,
  announced finished once on each event stream, and an action log of exactly the
  transcript's actions, each once), `chaos games lost` (planned, never recorded) and
  `chaos games doubled` (recorded, or logged, more than once); `chaos games forfeited`
  and `chaos decisions replaced` (late or illegal answers, strikes) say whether a fault
  cost a bot anything it did not cause;
- `chaos tournaments complete` (finished with standings over every game) / created;
- `chaos parts that ended by themselves`: processes found gone that the bench had not
  killed (started again at once, as `moonshot up` would); under these faults there
  should be none;
- `chaos longest stall`: the longest time no action was logged and no game finished,
  sampled every 0.5 s while the tournaments were running (faults included);
- `chaos decisions`, `chaos games per minute` over the faulty period.

The exit status is 1 if any game was lost or doubled, a tournament did not complete, or
a part ended by itself.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

# `python bench/chaos.py` puts bench/ first on the path, where bench/bots.py and
# bench/ratings.py would shadow the packages of those names: the repository root goes
# in front.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from clients.admin import Admin
from clients.redisproc import RedisServer
from clients.sdk import register
from moon.transcript import actions_of
from proto.moon.v1 import tournament_pb2
from store import keys

ROOT = Path(__file__).resolve().parent.parent
RULES = {"max_hands": "3"}
GRACE_MS = 120_000  # a frozen or restarting bot comes back well within this
FREEZE_S = (2.0, 8.0)
RESTART_S = (1.0, 3.0)
KINDS = ("kill worker", "freeze worker", "kill referee", "freeze referee",
         "kill redis", "freeze redis", "kill bot", "freeze bot")


def show(name: str, value: float | str, unit: str = "") -> None:
    """One `name: value unit` line."""
    text = f"{value:.1f}" if isinstance(value, float) else str(value)
    print(f"{name}: {text} {unit}".rstrip(), flush=True)


@dataclass
class Part:
    """One process of the stack, and how to start it again."""

    name: str
    argv: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    down: bool = False  # killed by the chaos, its restart pending

    def start(self) -> None:
        """Start (again), appending to its log."""
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
        with open(self.log, "ab") as fh:
            self.proc = subprocess.Popen(self.argv, stdout=fh, stderr=subprocess.STDOUT,
                                         cwd=self.log.parent, env=env,
                                         start_new_session=True)
        self.down = False  # only now: `Chaos.watch` must not see it gone meanwhile

    def alive(self) -> bool:
        """Running (or stopped by a freeze)."""
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        """Send `sig` if it runs."""
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL and reap."""
        if self.alive():
            assert self.proc is not None
            self.down = True
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 15 s."""
        if self.alive():
            assert self.proc is not None
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def stable_port(rng: random.Random) -> int:
    """A free port below the kernel's ephemeral range: a part restarted on it must not
    find it taken by some process's outgoing connection meanwhile."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    while True:
        port = rng.randrange(max(1024, low - 12000), low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port


def moonshot(*args: str) -> list[str]:
    """argv of a `moonshot` command in this interpreter."""
    return [sys.executable, "-m", "clients.cli", *args]


@dataclass
class Chaos:
    """The stack, the fault injector and the progress sampler."""

    workdir: Path
    bots: int
    rng: random.Random
    redis_port: int = 0
    ref_ports: tuple[int, int] = (0, 0)
    token: str = field(default_factory=lambda: os.urandom(16).hex())
    parts: dict[str, Part] = field(default_factory=dict)
    redis_server: RedisServer | None = None
    faults: Counter[str] = field(default_factory=Counter)
    exits: Counter[str] = field(default_factory=Counter)  # parts that ended on their own
    redis_down: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    bot_ids: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        """Redis's URL."""
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def target(self) -> str:
        """Both referees, as one gRPC target."""
        a, b = self.ref_ports
        return f"ipv4:127.0.0.1:{a},127.0.0.1:{b}"

    def __post_init__(self) -> None:
        self.redis_port = stable_port(self.rng)
        self.ref_ports = (stable_port(self.rng), stable_port(self.rng))

    # ------------------------------------------------------------ stack

    def start_redis(self) -> None:
        """Start Redis on its port and data folder (its append-only file replayed),
        trying again for a minute if it cannot start."""
        end = time.monotonic() + 60
        while True:
            try:
                self.redis_server = RedisServer(self.workdir / "redis", port=self.redis_port,
                                                appendonly=True).start()
                self.redis_down = False
                return
            except RuntimeError:
                if time.monotonic() > end:
                    raise
                time.sleep(1)

    def add(self, name: str, argv: list[str]) -> Part:
        """Start a part."""
        part = Part(name, argv, self.workdir / f"{name}.log")
        part.start()
        self.parts[name] = part
        return part

    def start(self) -> None:
        """Redis, referees, workers, then the bots (registered through the first)."""
        self.start_redis()
        for i, port in enumerate(self.ref_ports):
            self.add(f"referee-{i + 1}", moonshot(
                "referee", "--listen", f"127.0.0.1:{port}", "--redis", self.url,
                "--admin-token", self.token, "--replace-admin-token",
                "--auth-free-failures", "100000"))
            wait_for_log(self.parts[f"referee-{i + 1}"], "referee listening")
        for i in range(3):
            self.add(f"worker-{i + 1}", moonshot("worker", "--redis", self.url,
                                                 "--name", f"chaos-worker-{i + 1}"))
        for i in range(self.bots):
            kind = "greedy" if i % 2 == 0 else "random"
            bot_id, token = register(f"127.0.0.1:{self.ref_ports[0]}", f"chaos-{i + 1}-{kind}",
                                     self.token)
            self.bot_ids.append(bot_id)
            self.add(f"bot-{i + 1}", moonshot("bot", "run", "--bot", kind, "--server",
                                              self.target, "--token", token))
        for i in range(self.bots):
            wait_for_log(self.parts[f"bot-{i + 1}"], "connected to ")

    def stop(self) -> None:
        """Stop everything (bots first)."""
        for part in reversed(list(self.parts.values())):
            part.stop()
        if self.redis_server is not None:
            if self.redis_server.proc is not None:
                self.redis_server.proc.send_signal(signal.SIGCONT)
            self.redis_server.stop()

    # ----------------------------------------------------------- faults

    def inject(self) -> str:
        """One random fault; the part comes back by itself (a thread restarts or thaws it)."""
        kind = self.rng.choice(KINDS)
        action, what = kind.split()
        if what == "redis":
            assert self.redis_server is not None and self.redis_server.proc is not None
            proc = self.redis_server.proc
            if proc.poll() is not None:
                return self.inject()  # down already: hit something else
            if action == "kill":
                self.redis_down = True
                proc.kill()
                proc.wait()
                self._later(self.rng.uniform(*RESTART_S), self.start_redis)
            else:
                proc.send_signal(signal.SIGSTOP)
                self._later(self.rng.uniform(*FREEZE_S),
                            lambda: proc.send_signal(signal.SIGCONT))
        else:
            names = [n for n in self.parts if n.startswith(what)]
            part = self.parts[self.rng.choice(names)]
            if not part.alive():
                return self.inject()  # down already: hit something else
            if action == "kill":
                part.kill()
                self._later(self.rng.uniform(*RESTART_S), part.start)
            else:
                part.signal(signal.SIGSTOP)
                self._later(self.rng.uniform(*FREEZE_S),
                            lambda: part.signal(signal.SIGCONT))
        with self.lock:
            self.faults[kind] += 1
        return kind

    def watch(self) -> None:
        """Start again, and count, any part that ended without being killed here: under
        these faults no part of the stack may give up by itself."""
        for part in list(self.parts.values()):
            if not part.down and not part.alive():
                self.exits[part.name] += 1
                print(f"chaos: {part.name} ended by itself (exit {part.proc and part.proc.poll()})"
                      f"; starting it again", file=sys.stderr, flush=True)
                part.start()
        srv = self.redis_server
        if (not self.redis_down and srv is not None and srv.proc is not None
                and srv.proc.poll() is not None):
            self.exits["redis"] += 1
            self.redis_down = True
            self.start_redis()

    def _later(self, delay: float, fn: Any) -> None:
        timer = threading.Timer(delay, fn)
        timer.daemon = True
        timer.start()


def wait_for_log(part: Part, text: str, timeout: float = 60.0) -> None:
    """Wait until the part's log holds `text`."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if part.log.exists() and text in part.log.read_text(errors="replace"):
            return
        if not part.alive():
            raise RuntimeError(f"{part.name} exited:\n{part.log.read_text()[-2000:]}")
        time.sleep(0.1)
    raise TimeoutError(f"{part.name}: no {text!r} after {timeout:g} s")


class Progress(threading.Thread):
    """Samples the stack's progress (actions logged + games finished) every 0.5 s and
    keeps the longest time it stood still while a tournament ran."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.running = threading.Event()  # set while a tournament is in play
        self.done = threading.Event()
        self.longest = 0.0
        self._last = -1
        self._since = time.monotonic()

    def _count(self, r: redis.Redis) -> int:
        open_ids = list(r.smembers(keys.OPEN_MATCHES))  # type: ignore[arg-type]
        pipe = r.pipeline(transaction=False)
        for mid in open_ids:
            pipe.llen(keys.match_log(mid))
        return int(sum(pipe.execute())) + int(r.zcard(keys.MATCHES))

    def run(self) -> None:
        r = redis.Redis.from_url(self.url, decode_responses=True, socket_timeout=1,
                                 socket_connect_timeout=1)
        while not self.done.wait(0.5):
            now = time.monotonic()
            try:
                n = self._count(r)
            except redis.RedisError:
                n = self._last  # Redis is down or frozen: no progress
            if n != self._last or not self.running.is_set():
                self._last, self._since = n, now
            self.longest = max(self.longest, now - self._since)


def check_games(r: redis.Redis, tids: Sequence[str]) -> dict[str, int]:
    """Count the games planned, recorded once, lost and doubled across the tournaments."""
    planned = once = lost = doubled = stuck = forfeits = strikes = 0
    pool: dict[str, float] = dict(r.zrange(keys.results("3p"), 0, -1, withscores=True))  # type: ignore[arg-type]
    for tid in tids:
        total = int(r.hget(keys.tournament(tid), "total") or 0)
        planned += total
        mids: list[str] = r.zrange(keys.tournament_matches(tid), 0, -1)  # type: ignore[assignment]
        finished: Counter[tuple[str, str]] = Counter()  # (stream, match) -> announcements
        for stream in (keys.tournament_events(tid), keys.tournament_live(tid)):
            for _, fields in r.xrange(stream):  # type: ignore[union-attr]
                ev = json.loads(fields["e"])
                if ev.get("type") == "match_finished":
                    finished[stream, ev["match_id"]] += 1
        recorded = set(r.zrange(keys.tournament_recorded(tid), 0, -1))  # type: ignore[arg-type]
        lost += max(0, total - len(mids))  # games the schedule holds that were never made
        for mid in mids:
            raw = r.get(keys.result(mid))
            if raw is None or mid not in recorded:
                lost += 1
                continue
            record = json.loads(str(raw))["transcript"]
            forfeits += record.get("end") == "forfeit"
            strikes += len(record.get("faults", []))
            log = [json.loads(e) for e in r.lrange(keys.match_log(mid), 0, -1)]  # type: ignore[union-attr]
            moves = [e for e in log if "action" in e]
            announced = (finished[keys.tournament_events(tid), mid],
                         finished[keys.tournament_live(tid), mid])
            twice = ([e["seq"] for e in moves] != list(range(len(moves)))
                     or [e["action"] for e in moves] != actions_of(record)
                     or max(announced) > 1)
            if twice:
                doubled += 1
            elif mid not in pool or min(announced) == 0:
                stuck += 1  # played and recorded, never released or announced
            else:
                once += 1
    return {"planned": planned, "once": once, "lost": lost, "doubled": doubled,
            "stuck": stuck, "forfeits": forfeits, "strikes": strikes}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0, help="how long faults go on")
    ap.add_argument("--every", type=float, default=4.0, help="mean seconds between faults")
    ap.add_argument("--bots", type=int, default=6, help="bot processes (at least 3)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--workdir", type=Path, default=None, help="keep the logs here")
    args = ap.parse_args(argv)
    if args.bots < 3 or args.minutes <= 0 or args.every <= 0:
        ap.error("--bots must be at least 3, --minutes and --every above 0")
    # SIGTERM ends the run like Ctrl-C: the parts (in sessions of their own) are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="moonshot-chaos-"))
    workdir.mkdir(parents=True, exist_ok=True)
    chaos = Chaos(workdir, args.bots, random.Random(args.seed))
    try:
        chaos.start()
    except BaseException:
        chaos.stop()
        raise
    progress = Progress(chaos.url)
    progress.start()
    admin = Admin(chaos.target, chaos.token)
    tids: list[str] = []
    decisions_at_start = 0
    failed = 0
    try:
        started = time.monotonic()
        end = started + args.minutes * 60
        next_fault = started + args.every
        progress.running.set()
        while time.monotonic() < end:
            if not tids or _over(admin, tids[-1]):
                tids.append(_retry(lambda: admin.create_tournament(
                    name=f"chaos {len(tids) + 1}", players=3, format="round_robin",
                    bot_ids=chaos.bot_ids, rules=RULES, grace_ms=GRACE_MS,
                    seed=args.seed + len(tids))).tournament_id)
            if time.monotonic() >= next_fault:
                chaos.inject()
                next_fault = time.monotonic() + chaos.rng.uniform(0.5, 1.5) * args.every
            chaos.watch()
            time.sleep(0.2)
        faulty_s = time.monotonic() - started
        # The faults stop; whatever is down comes back; the last tournament plays out.
        time.sleep(max(RESTART_S[1], FREEZE_S[1]) + 1)
        deadline = time.monotonic() + 900
        while not _over(admin, tids[-1]):
            if time.monotonic() > deadline:
                break
            chaos.watch()
            time.sleep(1)
        progress.running.clear()
        progress.done.set()
        r = redis.Redis.from_url(chaos.url, decode_responses=True)
        counts = check_games(r, tids)
        complete = 0
        for tid in tids:
            t = _retry(lambda tid=tid: admin.get_tournament(tid))
            st = _retry(lambda tid=tid: admin.standings(tid))
            if t.status == tournament_pb2.TOURNAMENT_STATUS_FINISHED and \
                    st.matches_done == st.matches_total == int(
                        r.hget(keys.tournament(tid), "total") or -1):
                complete += 1
        games_done = sum(int(r.hget(keys.tournament(tid), "done") or 0) for tid in tids)
        decisions = sum(int(r.llen(keys.match_log(m)))
                        for tid in tids for m in r.zrange(keys.tournament_matches(tid), 0, -1))
        r.close()
    finally:
        admin.close()
        chaos.stop()
    show("chaos minutes", args.minutes * 1.0, "min")
    show("chaos faults injected", sum(chaos.faults.values()))
    for kind in KINDS:
        show(f"chaos faults {kind}", chaos.faults[kind])
    show("chaos games planned", counts["planned"])
    show("chaos games recorded once", counts["once"])
    show("chaos games lost", counts["lost"])
    show("chaos games doubled", counts["doubled"])
    show("chaos games recorded, never released", counts["stuck"])
    show("chaos games forfeited", counts["forfeits"])
    show("chaos decisions replaced", counts["strikes"])
    show("chaos tournaments complete", f"{complete}/{len(tids)}")
    show("chaos parts that ended by themselves", sum(chaos.exits.values()))
    show("chaos longest stall", progress.longest, "s")
    show("chaos decisions", decisions - decisions_at_start)
    show("chaos games per minute", games_done / (faulty_s / 60), "games/min")
    show("chaos logs", str(workdir))
    failed = (counts["lost"] + counts["doubled"] + counts["stuck"] + (len(tids) - complete)
              + sum(chaos.exits.values()))
    return 1 if failed else 0


def _over(admin: Admin, tid: str) -> bool:
    """The tournament is no longer running (False while the referees cannot be reached)."""
    try:
        return bool(admin.get_tournament(tid).status != tournament_pb2.TOURNAMENT_STATUS_RUNNING)
    except Exception:
        return False


def _retry(call: Any, timeout: float = 120.0) -> Any:
    """An organiser call, retried while the stack recovers from a fault."""
    end = time.monotonic() + timeout
    while True:
        try:
            return call()
        except Exception:
            if time.monotonic() > end:
                raise
            time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
