"""House bots: how well PIMC plays against greedy and random players, and what a decision costs.

Run `nice -n 15 python bench/bots.py [--quick] [--workers 2]`. It prints `name: value unit`
lines:

- `3p_greedy_*`: `house:pimc` (the default budget) in one seat, `house:greedy`
  in the other two; a third of the games is par. `2v2_greedy_*`: a PIMC team
  (both seats) against a greedy team; a half is par. `3p_random_*`,
  `2v2_random_*`: the same against random players.
- `*_share`: the share of games PIMC's side won (a draw, which only the hand
  limit can give, counts as not won), `*_low`/`*_high` its 95% interval,
  `*_games` and `*_boards`.
- `decision_ms_p50/p99` (and per phase): CPU milliseconds per PIMC decision at
  the default budget, from the games against greedy players; `*_choice_*`
  leaves out decisions with one legal action (answered without search).
- `curve_samples_N_share` (`_low`, `_high`): the share against two greedy
  players at N deals a decision (3p, fewer boards): the search curve.
- `eval_{3p,2v2}_samples_S_solve_K_*`: which evaluator plays better per
  millisecond. On `--eval-deals` fixed deals (each seat of PIMC's side in turn),
  one hand each with the greedy player's auction, discard and trumps for every
  seat, and PIMC deciding only the plays: `S` deals a decision, greedy playouts
  to the end (`solve_0`) or until K tricks are left and the exact solver
  after. `_utility` is the mean hand worth to PIMC's side (`bots.scoring`),
  `_play_ms` the CPU per play decision with a choice, `_vs_first` and
  `_vs_first_half` the paired difference from the pair's first variant (the
  playouts at about the same CPU time) and its 95% half-width.
- `*_interval_coverage`: the share of 95% intervals holding the true share in
  4,000 simulated runs of the same shape (boards, seatings) whose true share is
  the one measured, with strong board luck (see `coverage`).
- `run_minutes`, `cpu_minutes`: the wall time of the whole run and the CPU
  time of it and its processes (on a shared machine the first can be far
  above half the second).

Duplicate boards: a board is a game seed, so its deals are fixed; each board is
played once per seating of PIMC's side (3 in 3p, 2 in 2v2), so each deal is
played by PIMC from every seat and the luck of the deal cancels. Games on one
board are correlated, so the interval counts boards, not games: Wilson's
interval on the games divided by the design effect (see `interval`).

Games are spread over `--workers` processes (default 2, the machine's cores);
decision times are each process's CPU time, so other load on the machine does
not inflate them.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import resource
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# `python bench/bots.py` puts bench/ first on the path, where this file would shadow the
# `bots` package: the repository root goes in front.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bots import greedy_action, parse
from bots.pimc import DEFAULT_SAMPLES, PimcPlayer
from bots.scoring import utility
from moon import GameState, Phase, Rules

_PIMC = "house:pimc"


@dataclass(frozen=True, slots=True)
class Job:
    """One game: which matchup, which board, which seating of PIMC's side."""

    matchup: str
    players: int
    pimc: str  # the house id of the searching side
    rival: str  # the house id of the others
    board: int
    rotation: int
    timed: bool


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one game gave: did PIMC's side win, and its decisions' phases, choices and CPU."""

    job: Job
    won: bool
    decisions: tuple[tuple[str, int, float], ...]


def play(job: Job) -> Outcome:
    """Play one game with house players; PIMC's side sits at `rotation` (and opposite, 2v2)."""
    rules = Rules.make(job.players)
    n = job.players
    seed = 0x5EED_0000 + job.board
    pimc, rival = parse(job.pimc).player(), parse(job.rival).player()
    ours = {job.rotation % n} if n == 3 else {job.rotation, job.rotation + 2}
    st = GameState.new(rules, seed)
    decisions = []
    clock = time.process_time
    while not st.is_over:
        seat = st.to_act
        obs, legal = st.observation(seat), st.legal_actions()
        if seat in ours:
            start = clock()
            action = pimc.decide(obs, legal, seed)
            if job.timed:
                decisions.append((obs.phase.name.lower(), len(legal), clock() - start))
        else:
            action = rival.decide(obs, legal, seed)
        st.apply(action, seat)
    winner = st.winner
    won = winner is not None and (winner in ours if n == 3 else winner == job.rotation % 2)
    return Outcome(job, won, tuple(decisions))


@dataclass(frozen=True, slots=True)
class HandJob:
    """One hand for the evaluator comparison: deal, seat, PIMC's deals and solver depth."""

    players: int
    deal: int
    seat: int
    samples: int
    solve: int


def play_hand(job: HandJob) -> tuple[int, float, int]:
    """Worth of the hand to the seat's side, CPU seconds on play choices, their count."""
    rules = Rules.make(job.players)
    seed = 0x0DEA_1000 + job.deal
    player = PimcPlayer(samples=job.samples, solve=job.solve)
    st = GameState.new(rules, seed)
    st.record = True
    spent, choices = 0.0, 0
    while not st.hand_log:
        seat = st.to_act
        obs, legal = st.observation(seat), st.legal_actions()
        ours = seat % 2 == job.seat % 2 if job.players == 4 else seat == job.seat
        if ours and obs.phase is Phase.PLAY and len(legal) > 1:
            start = time.process_time()
            action = player.decide(obs, legal, seed)
            spent += time.process_time() - start
            choices += 1
        else:
            action = greedy_action(obs, legal)
        st.apply(action, seat)
    hand = st.hand_log[-1]
    if hand["bidder"] is None:
        return 0, spent, choices
    return utility(rules, job.seat, hand["bidder"], hand["bid"], hand["tricks_won"]), spent, choices


# Pairs at about the same CPU per play decision: playouts first, the solver second.
EVALUATORS = ((32, 0), (8, 3), (128, 0), (32, 3))


def compare_evaluators(deals: int, workers: int) -> None:
    """Print the evaluator comparison (see the module's note)."""
    for players, label in ((3, "3p"), (4, "2v2")):
        seats = range(3) if players == 3 else range(2)
        keys = [(d, s) for d in range(deals) for s in seats]
        first: list[int] = []
        with multiprocessing.Pool(workers) as pool:
            for i, (samples, solve) in enumerate(EVALUATORS):
                rows = pool.map(play_hand, [HandJob(players, d, s, samples, solve)
                                            for d, s in keys], chunksize=8)
                worth = [r[0] for r in rows]
                if i % 2 == 0:
                    first = worth
                diffs = [a - b for a, b in zip(worth, first, strict=True)]
                half = 1.96 * statistics.stdev(diffs) / math.sqrt(len(diffs)) if any(diffs) else 0
                name = f"eval_{label}_samples_{samples}_solve_{solve}"
                show(f"{name}_utility", statistics.fmean(worth), "points")
                show(f"{name}_play_ms", 1000 * sum(r[1] for r in rows)
                     / max(1, sum(r[2] for r in rows)), "ms", ".2f")
                if i % 2:
                    show(f"{name}_vs_first", statistics.fmean(diffs), "points")
                    show(f"{name}_vs_first_half", half, "points")


def jobs_for(matchup: str, players: int, pimc: str, rival: str, boards: int, first: int,
             timed: bool) -> list[Job]:
    """Every seating of every board."""
    rotations = 3 if players == 3 else 2
    return [Job(matchup, players, pimc, rival, first + b, r, timed)
            for b in range(boards) for r in range(rotations)]


def wilson(share: float, n: float, z: float = 1.96) -> tuple[float, float]:
    """Wilson's score interval for a share of `n` (possibly fractional) trials."""
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def interval(shares: np.ndarray, rotations: int) -> tuple[float, float, float]:
    """The mean of the boards' shares and its 95% interval.

    Games on one board are correlated, so the interval is Wilson's on an effective
    number of games: the games divided by the design effect (the variance of the
    boards' shares over what independent games would give, at least 1). Wilson's
    interval stays honest near 0 and 1, where a plain mean plus or minus 1.96 errors
    does not.
    """
    boards = len(shares)
    mean = float(shares.mean())
    games = boards * rotations
    binomial = mean * (1 - mean) / rotations
    spread = float(shares.var(ddof=1)) if boards > 1 else binomial
    effect = max(1.0, spread / binomial) if binomial > 0 else 1.0
    low, high = wilson(mean, games / effect)
    return mean, low, high


def board_interval(outcomes: Sequence[Outcome]) -> tuple[float, float, float, int]:
    """Share won, its 95% interval over boards, and the number of boards."""
    by_board: dict[int, list[bool]] = defaultdict(list)
    for o in outcomes:
        by_board[o.job.board].append(o.won)
    rotations = max(len(v) for v in by_board.values())
    shares = np.array([sum(v) / len(v) for v in by_board.values()])
    mean, low, high = interval(shares, rotations)
    return mean, low, high, len(shares)


def coverage(boards: int, rotations: int, share: float, reps: int, seed: int = 1) -> float:
    """How often the board interval holds a known share, on simulated boards.

    Each board has its own chance for PIMC's side, drawn from a Beta around the true
    share with the strong board-to-board spread of real deals (some boards are won from
    every seat, some from none); its seatings are Bernoulli draws of that chance.
    """
    rng = np.random.default_rng(seed)
    concentration = 1.5
    p = rng.beta(share * concentration, (1 - share) * concentration, size=(reps, boards))
    wins = rng.binomial(rotations, p) / rotations
    held = 0
    for row in wins:
        _, low, high = interval(row, rotations)
        held += low <= share <= high
    return held / reps


def run(jobs: Sequence[Job], workers: int) -> Iterator[Outcome]:
    """Play the jobs over `workers` processes, reporting progress on stderr."""
    done = 0
    start = time.monotonic()
    with multiprocessing.Pool(workers) as pool:
        for outcome in pool.imap_unordered(play, jobs, chunksize=1):
            done += 1
            if done % 50 == 0 or done == len(jobs):
                print(f"  {done}/{len(jobs)} games, {time.monotonic() - start:.0f} s",
                      file=sys.stderr, flush=True)
            yield outcome


def show(name: str, value: float, unit: str, fmt: str = ".3f") -> None:
    """One `name: value unit` line."""
    print(f"{name}: {value:{fmt}} {unit}", flush=True)


def report_share(name: str, outcomes: Sequence[Outcome]) -> None:
    """The share, its interval, games and boards, and how often such an interval holds."""
    share, low, high, boards = board_interval(outcomes)
    show(f"{name}_share", share, "share")
    show(f"{name}_low", low, "share")
    show(f"{name}_high", high, "share")
    show(f"{name}_games", len(outcomes), "games", "d")
    show(f"{name}_boards", boards, "boards", "d")
    rotations = len(outcomes) // max(1, boards)
    truth = min(max(share, 0.05), 0.95)  # a share of 0 or 1 has no spread to simulate
    show(f"{name}_interval_coverage", coverage(boards, rotations, truth, 4000), "share")


def report_times(outcomes: Sequence[Outcome]) -> None:
    """Decision CPU time percentiles, all decisions and by phase."""
    rows = [d for o in outcomes for d in o.decisions]
    if not rows:
        return

    def pct(values: list[float], q: float) -> float:
        return float(np.percentile(np.array(values) * 1000, q))

    every = [t for _, _, t in rows]
    choice = [t for _, legal, t in rows if legal > 1]
    show("decisions_timed", len(every), "decisions", "d")
    show("decision_ms_p50", pct(every, 50), "ms", ".1f")
    show("decision_ms_p99", pct(every, 99), "ms", ".1f")
    show("decision_ms_mean", statistics.fmean(every) * 1000, "ms", ".1f")
    show("decision_choice_ms_p50", pct(choice, 50), "ms", ".1f")
    show("decision_choice_ms_p99", pct(choice, 99), "ms", ".1f")
    for phase in ("bid", "discard", "trump", "play"):
        times = [t for p, legal, t in rows if p == phase and legal > 1]
        if times:
            show(f"decision_{phase}_ms_p50", pct(times, 50), "ms", ".1f")
            show(f"decision_{phase}_ms_p99", pct(times, 99), "ms", ".1f")


def main(argv: Sequence[str] | None = None) -> int:
    """Play every matchup and print the figures."""
    p = argparse.ArgumentParser(description="PIMC against greedy and random players.")
    p.add_argument("--boards", type=int, default=200,
                   help="3p boards per matchup (3 games each; default 200)")
    p.add_argument("--boards-2v2", type=int, default=300,
                   help="2v2 boards per matchup (2 games each; default 300)")
    p.add_argument("--curve", default="1,4,16,48",
                   help="sample counts for the search curve, besides the default's "
                        "(comma-separated; empty: no curve)")
    p.add_argument("--curve-boards", type=int, default=100,
                   help="3p boards per point of the curve (default 100)")
    p.add_argument("--eval-deals", type=int, default=200,
                   help="deals for the evaluator comparison (0: skip it; default 200)")
    p.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    p.add_argument("--quick", action="store_true",
                   help="a smoke run: 10 boards per matchup, 5 per curve point")
    p.add_argument("--only", default="", help="comma-separated parts: 3p_greedy, "
                   "2v2_greedy, 3p_random, 2v2_random, curve, evaluators")
    args = p.parse_args(argv)
    if args.quick:
        args.boards, args.boards_2v2, args.curve_boards = 10, 10, 5
        args.eval_deals = min(args.eval_deals, 10)
    if min(args.boards, args.boards_2v2, args.curve_boards) < 2 or args.workers < 1:
        p.error("boards must be at least 2 and --workers at least 1")
    try:
        curve = sorted({int(x) for x in args.curve.split(",") if x.strip()})
        for samples in curve:
            parse(f"{_PIMC}?samples={samples}")
    except ValueError as exc:
        p.error(f"--curve: {exc}")
    only = set(args.only.split(",")) if args.only else None
    started = time.monotonic()

    plan = {
        "3p_greedy": jobs_for("3p_greedy", 3, _PIMC, "house:greedy", args.boards, 0, True),
        "2v2_greedy": jobs_for("2v2_greedy", 4, _PIMC, "house:greedy", args.boards_2v2,
                               10_000, True),
        "3p_random": jobs_for("3p_random", 3, _PIMC, "house:random", args.boards, 20_000,
                              False),
        "2v2_random": jobs_for("2v2_random", 4, _PIMC, "house:random", args.boards_2v2,
                               30_000, False),
    }
    for samples in curve:
        if samples != DEFAULT_SAMPLES:
            plan[f"curve_samples_{samples}"] = jobs_for(
                f"curve_samples_{samples}", 3, f"{_PIMC}?samples={samples}", "house:greedy",
                args.curve_boards, 0, False)
    wanted = [k for k in plan if only is None or k in only
              or (k.startswith("curve") and "curve" in only)]
    jobs = [j for k in wanted for j in plan[k]]
    print(f"playing {len(jobs)} games on {args.workers} processes", file=sys.stderr, flush=True)
    results: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in run(jobs, args.workers):
        results[outcome.job.matchup].append(outcome)

    for name in wanted:
        if not name.startswith("curve"):
            report_share(name, results[name])
    timed = [o for name in ("3p_greedy", "2v2_greedy") for o in results.get(name, [])]
    report_times(timed)
    if curve:
        for samples in curve:
            name = f"curve_samples_{samples}"
            if samples == DEFAULT_SAMPLES or name not in results:
                continue
            share, low, high, _ = board_interval(results[name])
            show(f"{name}_share", share, "share")
            show(f"{name}_low", low, "share")
            show(f"{name}_high", high, "share")
        if results.get("3p_greedy"):
            # The default's point is the main 3p run (on more boards).
            share, low, high, _ = board_interval(results["3p_greedy"])
            show(f"curve_samples_{DEFAULT_SAMPLES}_share", share, "share")
            show(f"curve_samples_{DEFAULT_SAMPLES}_low", low, "share")
            show(f"curve_samples_{DEFAULT_SAMPLES}_high", high, "share")
    if args.eval_deals and (only is None or "evaluators" in only):
        compare_evaluators(args.eval_deals, args.workers)
    show("run_minutes", (time.monotonic() - started) / 60, "minutes", ".1f")
    used = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    show("cpu_minutes", sum(u.ru_utime + u.ru_stime for u in used) / 60, "minutes", ".1f")
    return 0


if __name__ == "__main__":
    sys.exit(main())
