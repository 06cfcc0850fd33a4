"""Moon for learning agents: what the adapters cost, and OpenSpiel's ISMCTS against ours.

Run `nice -n 15 python bench/learn.py [--quick] [--speed-only] [--workers 2]`. It prints
`name: value unit` lines:

- `engine_random_steps_per_s`: random play through the engine's fast path
  (`legal_ids`, `apply_id`), 3p with the default rules; a step is one player action.
- `openspiel_random_steps_per_s`, `pettingzoo_random_steps_per_s`,
  `gym_random_steps_per_s`: random play through each adapter, and `*_vs_engine`, its
  ratio to the engine's figure. A step is one player action on every side: the
  engine deals inside its apply and the adapters' deals are not counted either, so
  the ratio is also that of whole games a second (random play gives games of the
  same length on both sides). OpenSpiel: `is_terminal`, `is_chance_node`,
  `legal_actions`, `apply_action` (pyspiel's, keeping the history), the deal's chance
  nodes (one per tile of every seat but the last, and the widow's: 15 a 3p hand)
  drawn from `chance_outcomes` and applied. PettingZoo: the loop an agent runs,
  `observe` of the agent to act (its 472-float tensor and its action mask, both new
  arrays each step), a legal id picked from the mask (`nonzero`) and `step`.
  Gymnasium: seat 0 picks from the mask of the observation `step` returns (tensor and
  masks new each step), the other seats `house:random` (each decision's key, and the
  id the house bot picks with it, which the environment computes from the engine's
  state); every seat's action is a step. Each is the median of `--runs` runs of `--seconds` of this
  process's CPU time, taken in turns in this one run so that the ratios compare like
  with like. Without the learn extra the bench says so in one line and exits 0.
- with `--floors`, `floor_*_vs_engine`: loops that do only part of an adapter's work,
  against the same engine figure: `openspiel_callbacks` (the OpenSpiel loop without
  pyspiel's C++ `apply_action` round trip, `callbacks_loop`), `arrays` (the engine's
  loop plus a new tensor and mask each step, nothing encoded), `arrays_and_house_keys`
  (the same for seat 0, the others deciding as `house:random` does: `arrays_loop`),
  and `pettingzoo_unencoded`, `gym_unencoded`: the environments themselves, every
  cost of theirs kept but the tensor's encoding (a new tensor of constant bytes
  instead, `unencoded`): what no encoder, however fast, takes them past.
- `ismcts_{pimc,greedy}_*`: OpenSpiel's ISMCTS (`learn.runner.ismcts_bot`: its
  random rollout evaluator, UCT c = 2) in one 3p seat, the two others `house:pimc` or
  `house:greedy`, on duplicate boards (each board, a game seed, played with ISMCTS in
  each of the three seats). Its simulations per decision are set so that its mean CPU
  per decision equals `house:pimc`'s, measured first on the same kind of games
  (`pimc_decision_ms_mean`, `ismcts_simulations`, `ismcts_decision_ms_mean`).
  `_share` is the share of games ISMCTS won (a third is par), `_low`/`_high` its 95%
  interval over boards (`bench/bots.py`'s), `_games`, `_boards`.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

# `python bench/learn.py` puts bench/ first on the path, where bench/bots.py would shadow
# the `bots` package: the repository root goes in front.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bots import interval, show
from bots import parse
from bots.player import DecisionKeys
from bots.random_play import random_id
from moon import GameState, Rules

try:
    import learn.pettingzoo
    import learn.spaces
    from learn.gym import MoonSeatEnv
    from learn.openspiel import load
    from learn.pettingzoo import MoonEnv
    from learn.runner import SpielPlayer, ismcts_bot
except ImportError as missing:  # the learn extra is not installed
    print(f"learn_extra: missing (pip install -e '.[learn]'; {missing})")
    sys.exit(0)

_clock = time.process_time
Loop = Callable[[int, float], tuple[int, float]]  # (seed, CPU seconds) -> (steps, seconds)


def engine_loop(rules: Rules) -> Loop:
    """Random play through the engine's fast path."""
    def run(seed: int, seconds: float) -> tuple[int, float]:
        draw = random.Random(seed).getrandbits
        steps, start = 0, _clock()
        game_seed = seed
        while _clock() - start < seconds:
            st = GameState.new(rules, game_seed)
            game_seed += 1
            legal_ids, apply_id = st.legal_ids, st.apply_id
            while legal := legal_ids():
                apply_id(legal[draw(32) % len(legal)])
                steps += 1
        return steps, _clock() - start
    return run


def openspiel_loop(rules: Rules) -> Loop:
    """Random play through the OpenSpiel game, chance nodes included (not counted)."""
    game = load(rules.players, rules.options())

    def run(seed: int, seconds: float) -> tuple[int, float]:
        draw = random.Random(seed).getrandbits
        steps, start = 0, _clock()
        while _clock() - start < seconds:
            state = game.new_initial_state()
            while not state.is_terminal():
                if state.is_chance_node():
                    outcomes = state.chance_outcomes()
                    state.apply_action(outcomes[draw(32) % len(outcomes)][0])
                    continue
                legal = state.legal_actions()
                state.apply_action(legal[draw(32) % len(legal)])
                steps += 1
        return steps, _clock() - start
    return run


@contextmanager
def unencoded(module: ModuleType, encode: bool) -> Iterator[None]:
    """Unless `encode`, `module.tensor_of` hands out a new tensor of constant bytes
    (what `arrays_loop` makes) instead of encoding the seat's view: the environment's
    every other cost stays."""
    if encode:
        yield
        return
    real = module.tensor_of
    module.tensor_of = lambda *_: np.frombuffer(bytearray(_TENSOR), _F32)
    try:
        yield
    finally:
        module.tensor_of = real


def pettingzoo_loop(rules: Rules, encode: bool = True) -> Loop:
    """Random play through the AEC environment, the agent to act observing each step."""
    env = MoonEnv(players=rules.players, rules=rules.options())

    def run(seed: int, seconds: float) -> tuple[int, float]:
        draw = random.Random(seed).getrandbits
        steps, start = 0, _clock()
        game_seed = seed
        with unencoded(learn.pettingzoo, encode):
            while _clock() - start < seconds:
                env.reset(seed=game_seed)
                game_seed += 1
                while not env.terminations[env.agent_selection]:
                    legal = env.observe(env.agent_selection)["action_mask"].nonzero()[0]
                    env.step(int(legal[draw(32) % len(legal)]))
                    steps += 1
        return steps, _clock() - start
    return run


def gym_loop(rules: Rules, encode: bool = True) -> Loop:
    """Random play of seat 0 in the Gymnasium environment, the others `house:random`."""
    env = MoonSeatEnv(players=rules.players, seat=0, opponents="house:random",
                      rules=rules.options())

    def run(seed: int, seconds: float) -> tuple[int, float]:
        draw = random.Random(seed).getrandbits
        steps, start = 0, _clock()
        game_seed = seed
        with unencoded(learn.spaces, encode):
            while _clock() - start < seconds:
                obs, _ = env.reset(seed=game_seed)
                game_seed += 1
                done = False
                while not done:
                    legal = obs["action_mask"].nonzero()[0]
                    obs, _, done, _, _ = env.step(int(legal[draw(32) % len(legal)]))
                steps += len(env.state.actions)
        return steps, _clock() - start
    return run


# Floors (`--floors`): what part of each adapter's cost no Python adapter avoids.

_TENSOR = bytes(4 * 472)
_MASK = bytes(98)
_F32, _I8 = np.dtype(np.float32), np.dtype(np.int8)


def callbacks_loop(rules: Rules) -> Loop:
    """The OpenSpiel loop calling what pyspiel's `apply_action` calls back
    (`current_player`, then `_apply_action`) instead of it: the game's own work without
    pyspiel's C++ round trip and the history it keeps (which a real game must keep)."""
    game = load(rules.players, rules.options())

    def run(seed: int, seconds: float) -> tuple[int, float]:
        draw = random.Random(seed).getrandbits
        steps, start = 0, _clock()
        while _clock() - start < seconds:
            state = game.new_initial_state()
            player, apply = state.current_player, state._apply_action
            while not state.is_terminal():
                if state.is_chance_node():
                    outcomes = state.chance_outcomes()
                    player()
                    apply(outcomes[draw(32) % len(outcomes)][0])
                    continue
                legal = state.legal_actions()
                player()
                apply(legal[draw(32) % len(legal)])
                steps += 1
        return steps, _clock() - start
    return run


def arrays_loop(rules: Rules, house: bool = False) -> Loop:
    """The engine's loop plus what an environment hands the agent each step, with
    nothing encoded: a new 472-float tensor and a new mask (from constant bytes), and
    the agent's `nonzero` on the mask. With `house`, only seat 0 gets them and every
    other seat decides as `house:random` does: the decision's key (`DecisionKeys`), then
    the id it picks (`random_id`)."""
    def run(seed: int, seconds: float) -> tuple[int, float]:
        draw = random.Random(seed).getrandbits
        steps, start = 0, _clock()
        game_seed = seed
        while _clock() - start < seconds:
            st = GameState.new(rules, game_seed)
            keys = DecisionKeys(game_seed)
            game_seed += 1
            legal_ids, apply_id = st.legal_ids, st.apply_id
            while legal := legal_ids():
                if house and st.to_act:
                    apply_id(random_id(legal, keys.key(st, st.to_act)))
                else:
                    obs = {"observation": np.frombuffer(bytearray(_TENSOR), _F32),
                           "action_mask": np.frombuffer(bytearray(_MASK), _I8)}
                    obs["action_mask"].nonzero()
                    apply_id(legal[draw(32) % len(legal)])
                steps += 1
        return steps, _clock() - start
    return run


def rates(loops: dict[str, Loop], seconds: float, runs: int) -> dict[str, float]:
    """Median steps per CPU second of each loop, the loops taken in turns."""
    got: dict[str, list[float]] = {name: [] for name in loops}
    for r in range(runs):
        for name, loop in loops.items():
            steps, spent = loop(1000 * r, seconds)
            got[name].append(steps / spent)
    return {name: statistics.median(v) for name, v in got.items()}


@dataclass(frozen=True, slots=True)
class Job:
    """One game: the rivals, the board (a seed), ISMCTS's seat and its budget."""

    rival: str
    board: int
    seat: int
    simulations: int  # 0: no ISMCTS, the three seats are `rival` (timing house:pimc)
    max_hands: int


def play(job: Job) -> tuple[Job, bool, list[float]]:
    """Play one game; did the ISMCTS seat win, and the CPU seconds of the timed seat."""
    rules = Rules.make(3, {"max_hands": job.max_hands})
    seed = 0x1EA2_0000 + job.board
    rival = parse(job.rival).player()
    hero = SpielPlayer(ismcts_bot(job.simulations)) if job.simulations else rival
    st = GameState.new(rules, seed)
    times = []
    while not st.is_over:
        s = st.to_act
        obs, legal = st.observation(s), st.legal_actions()
        player = hero if s == job.seat else rival
        start = _clock()
        action = player.decide(obs, legal, seed)
        if s == job.seat:
            times.append(_clock() - start)
        st.apply(action, s)
    return job, st.winner == job.seat, times


def run_jobs(jobs: Sequence[Job], workers: int) -> list[tuple[Job, bool, list[float]]]:
    """The jobs over `workers` processes."""
    with multiprocessing.Pool(workers) as pool:
        return list(pool.imap_unordered(play, jobs, chunksize=1))


def duplicate(rival: str, boards: int, simulations: int, max_hands: int, workers: int
              ) -> tuple[float, float, float, int, float]:
    """ISMCTS against two `rival`s on duplicate boards: share, interval, games, mean CPU."""
    jobs = [Job(rival, b, seat, simulations, max_hands) for b in range(boards)
            for seat in range(3)]
    done = run_jobs(jobs, workers)
    by_board: dict[int, list[bool]] = {}
    for job, won, _ in done:
        by_board.setdefault(job.board, []).append(won)
    shares = np.array([sum(v) / len(v) for v in by_board.values()])
    share, low, high = interval(shares, 3)
    cpu = statistics.fmean(t for _, _, ts in done for t in ts)
    return share, low, high, len(done), cpu


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the options, measure, print."""
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--seconds", type=float, default=3.0, help="CPU seconds a speed run")
    p.add_argument("--runs", type=int, default=3, help="speed runs per loop (median)")
    p.add_argument("--boards", type=int, default=40, help="duplicate boards per matchup")
    p.add_argument("--max-hands", type=int, default=3, help="hands a game (rules max_hands)")
    p.add_argument("--workers", type=int, default=2, help="processes for the games")
    p.add_argument("--quick", action="store_true", help="a smoke run")
    p.add_argument("--speed-only", action="store_true", help="only the adapters' speed")
    p.add_argument("--floors", action="store_true",
                   help="also what no Python adapter avoids (callbacks_loop, arrays_loop)")
    args = p.parse_args(argv)
    if args.quick:
        args.seconds, args.runs, args.boards = 0.5, 1, 2
    rules = Rules()
    loops = {"engine": engine_loop(rules), "openspiel": openspiel_loop(rules),
             "pettingzoo": pettingzoo_loop(rules), "gym": gym_loop(rules)}
    floors = {"floor_openspiel_callbacks": callbacks_loop(rules),
              "floor_arrays": arrays_loop(rules),
              "floor_arrays_and_house_keys": arrays_loop(rules, house=True),
              "floor_pettingzoo_unencoded": pettingzoo_loop(rules, encode=False),
              "floor_gym_unencoded": gym_loop(rules, encode=False)}
    got = rates(loops | floors if args.floors else loops, args.seconds, args.runs)
    for name, rate in got.items():
        if name.startswith("floor_"):
            show(f"{name}_vs_engine", rate / got["engine"], "ratio")
            continue
        show(f"{name}_random_steps_per_s", rate, "steps/s", ".0f")
        if name != "engine":
            show(f"{name}_random_vs_engine", rate / got["engine"], "ratio")
    if args.speed_only:
        return 0
    # house:pimc's CPU per decision, in games of three house:pimc seats on these boards.
    timing = max(2, args.boards // 4)
    pimc = statistics.fmean(t for _, _, ts in run_jobs(
        [Job("house:pimc", b, b % 3, 0, args.max_hands) for b in range(timing)], args.workers)
        for t in ts)
    show("pimc_decision_ms_mean", pimc * 1000, "ms", ".1f")
    # ISMCTS's CPU per simulation, from a few of its games at a trial budget.
    trial = 32
    per_decision = statistics.fmean(t for _, _, ts in run_jobs(
        [Job("house:greedy", 10_000 + b, b % 3, trial, args.max_hands) for b in range(2)],
        args.workers) for t in ts)
    simulations = max(1, round(trial * pimc / per_decision))
    show("ismcts_simulations", simulations, "simulations", "d")
    for rival in ("house:pimc", "house:greedy"):
        name = "ismcts_" + rival.split(":")[1]
        share, low, high, games, cpu = duplicate(rival, args.boards, simulations,
                                                 args.max_hands, args.workers)
        show(f"{name}_share", share, "share")
        show(f"{name}_low", low, "share")
        show(f"{name}_high", high, "share")
        show(f"{name}_games", games, "games", "d")
        show(f"{name}_boards", args.boards, "boards", "d")
        show(f"{name}_decision_ms_mean", cpu * 1000, "ms", ".1f")
    return 0


if __name__ == "__main__":
    sys.exit(main())
