"""Arena benchmark: matchmaking rules against bots of known strength, and the step's speed.

Prints `name: value unit` lines only. `--quick` runs a smaller version.

The world (the same for every rule in a repetition: common random numbers):
100 bots with true strengths from N(0, 200 Elo). 30 are online at time 0,
the other 70 arrive at uniform times in [0, 40]; from then on each bot
alternates online sessions of Exp(mean 20) and absences of Exp(mean 5) (time
is in mean game lengths; `time_at_<n>` says when n games a bot are reached). A game
lasts U(0.5, 1.5); a bot plays at most 2 games at once; a bot that leaves
finishes its live games. Games as in bench/ratings.py: a board gives each
seat position a luck -log(2 Z^2), shared by every table of the board, and a
table's finishing order is Plackett-Luce in 2 theta + luck (Bradley-Terry
between team means in 2v2), so each game is marginally PL in the true
strengths, the scale the fit reports. `--world static` keeps all 100 bots
online from start to end instead.

The arena: the matchmaking step (`tournaments.arena.step`) runs after every
event (a game's end, an arrival, a departure, its own retry time) with the
bots that are online and have a free slot, and deals what it returns.
A board is released when all its tables have finished; the ratings are the
batch fit (`ratings.fit`, board luck, board-clustered intervals) of the
released games, refitted each time the released games have grown by 10%
since the last fit (`--refit`; about 60 fits on the way to 100 games a bot,
where the arena would refit after every release). The step reads each bot's
fitted rating, its standard error and the fit's covariance. The rules differ
only in how the step groups the seated bots (`Settings.objective`) and in
whether it waits for a batch of free bots (`Settings.batch`, `max_wait_s`);
priority, boards of two tables or more, seats and keeping recent table-mates
apart are the same for all:

- `arena`: the arena's rule, dealt in batches (the defaults: a quarter of
  the online bots free, or one waiting a fifth of a game) and grouped as the
  pool's default objective says: in 3p tables of the largest expected fall
  of their bots' rating variances, in 2v2 at random (`tournaments.arena`
  says why);
- `random`, `similar`: random tables and tables of the most similar ratings
  (the Kaggle rule), dealt as soon as two tables can be, as those rules run
  elsewhere;
- `random_batched`, `similar_batched`: the same two dealt in the arena's
  batches, so that the grouping alone is compared;
- not run by default: `variance`, the batches grouped by the variance fall
  (in 3p the same as `arena`); `information`, D-optimal tables (the expected
  information, 0.5 log det(I + Sigma J)); `arena_sd`, the variance fall given
  each bot's standard error but not the fit's covariance.

Random draws are common to the rules of a repetition: each bot's n-th game
has the same performance noise, the n-th board the same luck and the n-th
game the same length, whatever the rule (common random numbers, so that
differences between rules are measured with less noise).

Figures at 10, 30 and 100 games a bot (released seats / 100), from a fit of
every released game, over the bots rated by then: Spearman's rho with the
truth, RMSE in Elo (both centred over those bots), coverage of the 95%
intervals, and the slope of the ratings on the truth (1: the scale is right);
each the mean over repetitions with its Monte-Carlo standard error (`_se`),
and for RMSE the paired difference of each baseline from the
arena's rule (`rmse_<n>_<rule>_minus_arena`, positive: the arena's rule is
better). Game rates: each bot's games dealt per unit of time online, over
bots online for at least 10 units: their coefficient of variation and the
ratio of the 90th to the 10th percentile. Placement: the time a bot that
arrived after the start took for its first 10 games.

The step's time, in both pools: 1,000 bots online with a fitted covariance
(a 1,000 x 1,000 matrix), recent table-mates, seat counts and dealt boards,
grouped by the variance fall (the costliest objective);
all of them free (the arena's start: 333 tables of 3 or 250 of 4) and 60
free (steady state); the median
of 21 calls' CPU time (`time.process_time`: on a shared machine the wall
clock also counts other processes' work; `_wall` is the wall clock's).
"""

from __future__ import annotations

import argparse
import heapq
import math
import os
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

# Many small fits: BLAS threads only contend on a shared machine (twice as slow with them).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np
from numpy.typing import NDArray
from scipy.stats import spearmanr

# `python bench/arena.py` puts bench/ first on the path, where bench/ratings.py would shadow
# the `ratings` package: the repository root goes in front.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ratings import ELO_PER_NAT, PRIOR_SD, Fit, Game, fit
from tournaments.arena import (
    POOL_OBJECTIVE,
    POOLS,
    Candidate,
    Covariance,
    Request,
    Settings,
    Step,
    step,
)

FloatArray = NDArray[np.float64]
# name -> (the step's objective, dealt in the arena's batches (else as soon as two tables can
# be), given the fit's covariance (else each bot's standard error alone))
RULES = {
    "arena": ("", True, True),  # the pool's own (3p: the variance fall; 2v2: random)
    "random": ("random", False, True),
    "similar": ("similar", False, True),
    "random_batched": ("random", True, True),
    "similar_batched": ("similar", True, True),
    # Not run by default: the variance fall (3p: the arena's), D-optimal tables, and the
    # variance fall without the covariance.
    "variance": ("variance", True, True),
    "information": ("information", True, True),
    "arena_sd": ("variance", True, False),
}
DEFAULT_RULES = ("arena", "random", "similar", "random_batched", "similar_batched")
BOTS = 100
SPREAD = 200.0  # Elo sd of the true strengths
AT_START = 30
ARRIVALS = 40.0
SESSION, ABSENCE = 20.0, 5.0
CONCURRENCY = 2


@dataclass
class Bot:
    """The simulation's view of one bot."""

    theta: float
    schedule: list[tuple[float, float]]  # online intervals
    online: bool = False
    in_progress: int = 0
    free_since: float = 0.0
    games: int = 0
    dealt_games: int = 0
    recent: deque[str] = field(default_factory=lambda: deque(maxlen=12))
    seats: list[int] = field(default_factory=list)
    dealt: set[str] = field(default_factory=set)
    tenth_game_at: float | None = None


@dataclass
class World:
    """What every rule of one repetition shares: strengths, comings and goings, and the
    random draws of its games (common random numbers, module doc)."""

    theta: FloatArray  # natural log
    schedules: list[list[tuple[float, float]]]
    noise: FloatArray  # (bots, games): the performance noise of each bot's n-th game
    luck: FloatArray  # (boards, positions): the n-th board's luck
    length: FloatArray  # the n-th game's duration


def make_world(rng: np.random.Generator, horizon: float, static: bool = False) -> World:
    """True strengths and online intervals (module doc); `static`: all online throughout."""
    theta = rng.normal(0.0, SPREAD, BOTS) / ELO_PER_NAT
    schedules = []
    for i in range(BOTS):
        t = 0.0 if i < AT_START else float(rng.uniform(0.0, ARRIVALS))
        spans = []
        while t < horizon:
            end = t + float(rng.exponential(SESSION))
            spans.append((t, end))
            t = end + float(rng.exponential(ABSENCE))
        schedules.append([(0.0, math.inf)] if static else spans)
    games = 1000  # a bot's games, far more than any plays
    noise = rng.gumbel(size=(BOTS, games))
    luck = -np.log(2.0 * rng.normal(size=(BOTS * games, 3)) ** 2)
    length = rng.uniform(0.5, 1.5, BOTS * games)
    return World(theta, schedules, noise, luck, length)


@dataclass
class Outcome:
    """One rule's figures in one repetition."""

    fits: dict[int, Fit]
    reached: dict[int, float]  # when each target was reached
    truth: FloatArray
    rates: FloatArray
    placement: FloatArray
    tables_per_board: float


class Arena:
    """One run of the arena under one rule (module doc)."""

    def __init__(self, world: World, pool: str, settings: Settings, refit: float,
                 targets: Sequence[int], covariance: bool = True) -> None:
        self.world, self.pool, self.settings, self.refit = world, pool, settings, refit
        self.covariance = covariance
        # Random tables read no ratings: they are fitted only at the checkpoints.
        self.needs_fit = (settings.objective or POOL_OBJECTIVE[pool]) != "random"
        self.k = POOLS[pool]
        self.bots = {f"bot{i:03d}": Bot(float(world.theta[i]), world.schedules[i],
                                        seats=[0] * self.k)
                     for i in range(BOTS)}
        self.events: list[tuple[float, int, str, str]] = []
        self.seq = 0
        self.released: list[Game] = []
        self.pending: dict[str, list[Game | None]] = {}
        self.games_created = 0
        self.next_board = 0
        self.fit: Fit | None = None
        self.fitted_games = 0
        self.targets = sorted(targets)
        self.fits: dict[int, Fit] = {}
        self.reached: dict[int, float] = {}
        self.boards_dealt = 0
        self.index = {f"bot{i:03d}": i for i in range(BOTS)}
        self.played: dict[str, list[Game]] = {}
        self.retries: set[float] = set()
        self.rated: dict[str, int] = {}
        for bot_id, bot in self.bots.items():
            for start, end in bot.schedule:
                self._push(start, "on", bot_id)
                self._push(end, "off", bot_id)

    def _push(self, when: float, kind: str, what: str) -> None:
        self.seq += 1
        heapq.heappush(self.events, (when, self.seq, kind, what))

    def run(self) -> Outcome:
        """Play until the last target is reached; the figures."""
        now = 0.0
        while self.events and len(self.fits) < len(self.targets):
            now = self.events[0][0]
            while self.events and self.events[0][0] == now:
                _, _, kind, what = heapq.heappop(self.events)
                self._event(now, kind, what)
            self._step(now)
        return self._outcome(now)

    def _event(self, now: float, kind: str, what: str) -> None:
        if kind == "on":
            bot = self.bots[what]
            bot.online, bot.free_since = True, now
        elif kind == "off":
            self.bots[what].online = False
        elif kind == "end":
            self._end(now, what)
        # "retry": nothing but the step that follows every event

    def _end(self, now: float, what: str) -> None:
        board, _, table = what.rpartition("#")
        games = self.pending[board]
        game = games[int(table)]
        assert game is not None
        for side in game.sides:
            for bot_id in side:
                bot = self.bots[bot_id]
                if bot.in_progress == CONCURRENCY:
                    bot.free_since = now  # its slot opens now; a slot already open keeps its time
                bot.in_progress -= 1
                bot.games += 1
                if bot.games == 10:
                    bot.tenth_game_at = now
        games[int(table)] = None
        if all(g is None for g in games):
            self._release(now, board)

    def _release(self, now: float, board: str) -> None:
        self.released.extend(self.played.pop(board))
        del self.pending[board]
        seats = len(self.released) * self.k / BOTS
        while len(self.fits) < len(self.targets) and seats >= self.targets[len(self.fits)]:
            self.reached[self.targets[len(self.fits)]] = now
            self.fits[self.targets[len(self.fits)]] = fit(self.released)
        if self.needs_fit and len(self.released) >= self.refit * max(self.fitted_games, 1):
            self.fit, self.fitted_games = fit(self.released), len(self.released)
            self.rated = {r.bot_id: i for i, r in enumerate(self.fit.ratings)}

    def _candidates(self) -> list[Candidate]:
        out = []
        for bot_id, bot in self.bots.items():
            if not bot.online or bot.in_progress >= CONCURRENCY:
                continue
            rating, sd = 0.0, PRIOR_SD
            i = self.rated.get(bot_id)
            if i is not None and self.fit is not None:
                rating = self.fit.ratings[i].rating
                sd = max(math.sqrt(max(float(self.fit.covariance[i, i]), 0.0)), 1e-6)
            out.append(Candidate(
                bot_id=bot_id, rating=rating, sd=sd,
                games=bot.games, in_progress=bot.in_progress, free_since=bot.free_since,
                recent=tuple(bot.recent), seats=tuple(bot.seats),
                dealt=frozenset(bot.dealt)))
        return out

    def _step(self, now: float) -> None:
        online = sum(b.online for b in self.bots.values())
        if online < 2 * self.k:
            return
        cov = None
        if self.fit is not None and self.covariance:
            cov = Covariance(tuple(r.bot_id for r in self.fit.ratings), self.fit.covariance)
        req = Request(self.pool, "arena", self.next_board, now, online, tuple(self._candidates()),
                      seed=self.next_board, settings=self.settings, covariance=cov)
        result: Step = step(req)
        if result.retry_at is not None and result.retry_at not in self.retries:
            self.retries.add(result.retry_at)
            self._push(result.retry_at, "retry", "")
        for board in result.boards:
            self._deal(now, board.board_id, [t.seats for t in board.tables])
        self.next_board = result.next_board

    def _deal(self, now: float, board: str, tables: list[tuple[str, ...]]) -> None:
        luck = self.world.luck[self.boards_dealt, : 3 if self.k == 3 else 2]
        self.boards_dealt += 1
        games: list[Game] = []
        for t, seats in enumerate(tables):
            theta = np.array([self.bots[b].theta for b in seats])
            # Each bot's n-th game draws the same noise under every rule (module doc).
            noise = np.array([self.world.noise[self.index[b], self.bots[b].dealt_games]
                              for b in seats])
            if self.k == 3:
                u = 2.0 * theta + luck + noise
                sides = tuple((b,) for b in seats)
            else:
                u = 2.0 * np.array([theta[0] + theta[2], theta[1] + theta[3]]) / 2.0
                u = u + luck + noise[:2]
                sides = ((seats[0], seats[2]), (seats[1], seats[3]))
            places = tuple(int(p) for p in np.argsort(np.argsort(-u)) + 1)
            self.games_created += 1
            games.append(Game(f"g{self.games_created:06d}", board, sides, places))
            for s, bot_id in enumerate(seats):
                bot = self.bots[bot_id]
                assert board not in bot.dealt
                bot.dealt.add(board)
                bot.in_progress += 1
                bot.dealt_games += 1
                bot.seats[s] += 1
                bot.free_since = now
                # Newest first, a game's partner first in 2v2 (`Candidate.recent`).
                others = (2, 1, 3) if self.k == 4 else (1, 2)
                for d in reversed(others):
                    bot.recent.appendleft(seats[(s + d) % self.k])
            self._push(now + float(self.world.length[self.games_created]), "end", f"{board}#{t}")
        self.pending[board] = list(games)
        self.played.setdefault(board, []).extend(games)

    def _outcome(self, now: float) -> Outcome:
        rates, placement = [], []
        for bot in self.bots.values():
            online = sum(max(0.0, min(e, now) - s) for s, e in bot.schedule if s < now)
            if online >= 10.0:
                rates.append(bot.dealt_games / online)
            start = bot.schedule[0][0]
            if start > 0 and bot.tenth_game_at is not None:
                placement.append(bot.tenth_game_at - start)
        return Outcome(self.fits, self.reached, self.world.theta * ELO_PER_NAT, np.array(rates),
                       np.array(placement), self.games_created / max(self.next_board, 1))


def run_rule(world: World, pool: str, rule: str, args: argparse.Namespace,
             targets: Sequence[int]) -> Outcome:
    """One repetition of one rule (`RULES`)."""
    objective, batched, covariance = RULES[rule]
    settings = Settings(batch=args.batch if batched else 0.0,
                        max_wait_s=args.max_wait if batched else 0.0, objective=objective)
    return Arena(world, pool, settings, args.refit, targets, covariance).run()


def scores(outcome: Outcome, target: int) -> tuple[float, float, float, float]:
    """Spearman, RMSE (Elo), coverage and slope on the truth of the fit at `target` games."""
    result = outcome.fits[target]
    ids = [r.bot_id for r in result.ratings]
    truth = np.array([outcome.truth[int(b[3:])] for b in ids])
    truth -= truth.mean()
    est = np.array([r.rating for r in result.ratings])
    low = np.array([r.ci_low for r in result.ratings])
    high = np.array([r.ci_high for r in result.ratings])
    rho = float(spearmanr(est, truth)[0])
    rmse = math.sqrt(float(((est - truth) ** 2).mean()))
    cover = float(((low <= truth) & (truth <= high)).mean())
    slope = float((est * truth).sum() / (truth * truth).sum())
    return rho, rmse, cover, slope


def _mean_se(values: Sequence[float]) -> tuple[float, float]:
    a = np.asarray(values, dtype=np.float64)
    se = float(a.std(ddof=1) / math.sqrt(len(a))) if len(a) > 1 else math.nan
    return float(a.mean()), se


def speed(pool: str, online: int, free: int, calls: int) -> tuple[float, float]:
    """Median milliseconds of one step with `online` bots of which `free` are free: CPU time
    and wall-clock time."""
    rng = np.random.default_rng(7)
    k = POOLS[pool]
    ids = [f"b{i:04d}" for i in range(online)]
    # A covariance shaped like a fit's: independent errors of 30-80 Elo, centred.
    sd = rng.uniform(30.0, 80.0, online)
    noise = rng.normal(size=(online, 40)) * 5.0
    cov = np.diag(sd * sd) + noise @ noise.T
    cov -= cov.mean(axis=0, keepdims=True) + cov.mean(axis=1, keepdims=True) - cov.mean()
    ratings = rng.normal(0.0, 200.0, online)
    bots = []
    for i in range(free):
        recent = tuple(ids[j] for j in rng.choice(online, size=4 * (k - 1), replace=False))
        bots.append(Candidate(
            bot_id=ids[i], rating=float(ratings[i]), sd=float(math.sqrt(cov[i, i])),
            games=int(rng.integers(0, 500)), in_progress=int(rng.integers(0, CONCURRENCY)),
            free_since=float(rng.uniform(0.0, 100.0)), recent=recent,
            seats=tuple(int(x) for x in rng.integers(0, 50, k)),
            dealt=frozenset(f"arena/b{j}" for j in rng.integers(0, 5000, 100))))
    # The variance fall, the costliest objective, in both pools (2v2 groups at random by
    # default).
    req = Request(pool, "arena", 5000, 200.0, online, tuple(bots), seed=1,
                  settings=Settings(objective="variance"), covariance=Covariance(tuple(ids), cov))
    cpu, wall = [], []
    for c in range(calls):
        # CPU time of this process: on a shared machine the wall clock also counts other work.
        start, clock = time.process_time(), time.perf_counter()
        out = step(replace(req, seed=c))
        cpu.append(time.process_time() - start)
        wall.append(time.perf_counter() - clock)
        assert sum(len(b.tables) for b in out.boards) == free // k
    return 1000.0 * float(np.median(cpu)), 1000.0 * float(np.median(wall))


def simulate(args: argparse.Namespace, rules: Sequence[str], targets: Sequence[int],
             reps: int) -> dict[str, list[Outcome]]:
    """Every rule in every repetition, each repetition's rules in one world."""
    rng = np.random.default_rng(args.seed)
    results: dict[str, list[Outcome]] = {r: [] for r in rules}
    begin = time.perf_counter()
    for rep in range(reps):
        world = make_world(rng, horizon=300.0, static=args.world == "static")
        for rule in rules:
            results[rule].append(run_rule(world, args.pool, rule, args, targets))
        print(f"# repetition {rep + 1} of {reps} done after {time.perf_counter() - begin:.0f} s",
              file=sys.stderr, flush=True)
    return results


def report_accuracy(results: dict[str, list[Outcome]], target: int) -> None:
    """Spearman, RMSE and coverage of every rule at one checkpoint, and RMSE differences."""
    table = {r: [scores(o, target) for o in outs] for r, outs in results.items()}
    for rule, rows in table.items():
        for i, (name, unit) in enumerate((("spearman", "rho"), ("rmse", "elo"),
                                          ("coverage", "fraction"), ("slope", "ratio"))):
            mean, se = _mean_se([row[i] for row in rows])
            print(f"{name}_{target}_{rule}: {mean:.3f} {unit}")
            print(f"{name}_{target}_{rule}_se: {se:.3f} {unit}")
        rated = np.mean([len(o.fits[target].ratings) for o in results[rule]])
        print(f"rated_{target}_{rule}: {rated:.1f} bots")
        print(f"time_at_{target}_{rule}: {np.mean([o.reached[target] for o in results[rule]]):.1f}"
              " game_lengths")
    if "arena" not in table:
        return
    for rule, rows in table.items():
        if rule != "arena":
            mean, se = _mean_se([a[1] - b[1] for a, b in zip(rows, table["arena"], strict=True)])
            print(f"rmse_{target}_{rule}_minus_arena: {mean:.2f} elo")
            print(f"rmse_{target}_{rule}_minus_arena_se: {se:.2f} elo")


def report_rates(results: dict[str, list[Outcome]]) -> None:
    """Game rates, their spread between bots, placement time and board sizes of every rule."""
    for rule, outs in results.items():
        cv = [float(o.rates.std() / o.rates.mean()) for o in outs]
        ratio = [float(np.percentile(o.rates, 90) / np.percentile(o.rates, 10)) for o in outs]
        place = [float(o.placement.mean()) for o in outs if len(o.placement)]
        print(f"rate_{rule}: {np.mean([o.rates.mean() for o in outs]):.3f} "
              "games_per_game_length")
        print(f"rate_cv_{rule}: {np.mean(cv):.3f} ratio")
        print(f"rate_p90_p10_{rule}: {np.mean(ratio):.3f} ratio")
        if place:
            print(f"placement_10_games_{rule}: {np.mean(place):.2f} game_lengths")
        print(f"tables_per_board_{rule}: {np.mean([o.tables_per_board for o in outs]):.2f} "
              "tables")


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="4 repetitions up to 30 games a bot, fewer timing calls")
    parser.add_argument("--reps", type=int, default=0, help="repetitions (default 24, quick 4)")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--pool", choices=tuple(POOLS), default="3p")
    parser.add_argument("--world", choices=("arrivals", "static"), default="arrivals",
                        help="static: all 100 bots online from the start to the end")
    parser.add_argument("--rules", default=",".join(DEFAULT_RULES),
                        help=f"comma-separated, of {', '.join(RULES)}")
    parser.add_argument("--batch", type=float, default=Settings().batch)
    parser.add_argument("--max-wait", type=float, default=0.2,
                        help="the step's max_wait_s in mean game lengths")
    parser.add_argument("--refit", type=float, default=1.1,
                        help="refit when the released games grew by this factor")
    parser.add_argument("--no-sim", action="store_true", help="only time the step")
    args = parser.parse_args(argv)
    begin = time.perf_counter()
    targets = (10, 30) if args.quick else (10, 30, 100)
    reps = args.reps or (4 if args.quick else 24)
    rules = [r for r in args.rules.split(",") if r]
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        parser.error(f"unknown rules: {', '.join(unknown)}")
    if not args.no_sim:
        print(f"setting_batch: {args.batch} share")
        print(f"setting_max_wait: {args.max_wait} game_lengths")
        print(f"setting_refit: {args.refit} growth")
        print(f"repetitions: {reps} runs")
        results = simulate(args, rules, targets, reps)
        for target in targets:
            report_accuracy(results, target)
        report_rates(results)
    calls = 5 if args.quick else 21
    for pool in POOLS:
        for name, free in (("all_free", 1000), ("60_free", 60)):
            cpu, wall = speed(pool, 1000, free, calls)
            print(f"step_{pool}_1000_online_{name}: {cpu:.1f} ms")
            print(f"step_{pool}_1000_online_{name}_wall: {wall:.1f} ms")
    print(f"run_time: {time.perf_counter() - begin:.0f} s")


if __name__ == "__main__":
    main()
