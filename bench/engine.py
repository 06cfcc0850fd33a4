"""Engine speed: how many random hands per second the Moon engine plays, and what search costs.

Run `python bench/engine.py [--seconds S] [--runs N]`. It prints one figure per
line, `name: value unit`:

- `random 3p hands/s`, `random 4p hands/s`: complete hands (deal, auction,
  widow, trumps, seven tricks, scoring) with default rules, each action drawn
  uniformly from `state.legal_ids()` and played with `state.apply_id()`, in one
  process, a new game started as each game ends. A redealt all-pass hand is not
  counted as a hand, but its time is.
- `bare loop 3p/4p hands/s`: the same hands played by a minimal loop of int
  bitmasks over the engine's precomputed per-contract tables (`moon.contracts`)
  and its deal (`moon.deal.deal_masks`), with no state object and no API: the
  practical ceiling for pure Python. `engine/bare` is the median ratio of engine and bare runs taken
  in alternation.
- `checked 3p hands/s`: the same through `legal_actions()` and the checked
  `apply(action, seat)`, the path a referee takes.
- `copy/s`, `observation/s`, `sample_state/s`: what a search bot pays per
  `GameState.copy()`, per `observation(seat)` and per determinization
  (`moon.sample_state`), on states taken at random points of random 3p hands.
  `sample_state/bare 3p` divides the last by this run's `bare loop 3p hands/s`
  (issue 18 asks for at least 0.6). `sampler draws/s`: further draws from one
  `moon.sampling.Sampler(obs)`, as a search bot takes many for one decision.
- What `bots.pimc` builds on the engine's masks: `playouts/s`, the rest of a 3p
  hand played by the greedy rule (`bots.playout`) from the play positions
  above; `solver nodes/s` and `solve 3p N left`, the exact solver
  (`bots.solver`, in-place moves undone on return, a transposition table at
  trick starts) on 3p positions with N tricks to go, each solved from scratch.

All loops draw their random numbers the same way (`getrandbits(32) % count`,
uniform to within 1e-8, the cheapest draw in pure Python) in the same order,
so from the same seed the engine, checked and bare loops play exactly the same
games; `--check` confirms it. Every figure is the median of `--runs` runs of
`--seconds` each of this process's CPU time (so other load on the machine does
not skew it), all measured in this one invocation so the ratios compare like
with like.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

# `python bench/engine.py` puts bench/ first on the path, where bench/bots.py and
# bench/ratings.py would shadow the packages of those names: the repository root goes
# in front.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bots.playout import playout
from bots.solver import Solver, won_code
from moon import GameState, Rules, sample_state
from moon.actions import MOON, TRUMP_BASE
from moon.contracts import FOLLOW, POWER
from moon.deal import deal_masks, first_bidder
from moon.observation import Observation
from moon.sampling import Sampler
from moon.state import tile_set

T = TypeVar("T")

# A loop plays from `seed` until `seconds` of CPU time have passed or `games`
# games are done, and returns (units of work done, CPU seconds taken).
Loop = Callable[[int, float, int], tuple[int, float]]

_clock = time.process_time
_TRUMP_IDS = range(TRUMP_BASE, TRUMP_BASE + 9)


def _hands_played(actions: list[int]) -> int:
    """Hands that were played out: each names trumps exactly once, a redeal never does."""
    return sum(map(actions.count, _TRUMP_IDS))


def engine_loop(players: int) -> Loop:
    """Random hands through the fast path: `legal_ids()` and `apply_id()`."""
    rules = Rules(players=players)

    def run(seed: int, seconds: float, games: int) -> tuple[int, float]:
        draw = random.Random(seed).getrandbits
        hands = 0
        start = _clock()
        deadline = start + seconds
        for game_seed in range(seed, seed + games):
            if _clock() >= deadline:
                break
            st = GameState.new(rules, game_seed)
            legal_ids, apply_id = st.legal_ids, st.apply_id
            while legal := legal_ids():
                apply_id(legal[draw(32) % len(legal)])
            hands += _hands_played(st.actions)
        return hands, _clock() - start

    return run


def checked_loop(players: int) -> Loop:
    """Random hands through the checked path: `legal_actions()` and `apply(action, seat)`."""
    rules = Rules(players=players)

    def run(seed: int, seconds: float, games: int) -> tuple[int, float]:
        draw = random.Random(seed).getrandbits
        hands = 0
        start = _clock()
        deadline = start + seconds
        for game_seed in range(seed, seed + games):
            if _clock() >= deadline:
                break
            st = GameState.new(rules, game_seed)
            while legal := st.legal_actions():
                st.apply(legal[draw(32) % len(legal)], st.to_act)
            hands += _hands_played(st.actions)
        return hands, _clock() - start

    return run


def _tiles_by_half(lo: int) -> tuple[tuple[int, ...], ...]:
    """For each 14-bit mask, the tile indices `lo + i` of its set bits, ascending."""
    return tuple(tuple(lo + i for i in range(14) if m >> i & 1) for m in range(1 << 14))


_LO = _tiles_by_half(0)
_HI = _tiles_by_half(14)
# The bids open to a seat by the highest bid so far (default rules: minimum 4),
# in the engine's order: pass, the numbers, the moon.
_BIDS = {high: (0, *(b for b in range(4, 8) if b > high), MOON) for high in (0, 4, 5, 6, 7)}


def bare_loop(players: int) -> Loop:
    """The ceiling: the same random hands with bare int masks and no state object.

    Default rules: minimum bid 4, an all-pass hand is redealt, points scoring to
    21 (a shared top score plays on), at most 100 hands a game.
    """
    n = players
    tile_bits = tuple(1 << t for t in tile_set(Rules(players=n)))
    lo, hi, bids_for = _LO, _HI, _BIDS

    def run(seed: int, seconds: float, games: int) -> tuple[int, float]:
        draw = random.Random(seed).getrandbits
        hands = 0
        start = _clock()
        deadline = start + seconds
        for game_seed in range(seed, seed + games):
            if _clock() >= deadline:
                break
            first = first_bidder(game_seed, n)
            scores = [0] * (2 if n == 4 else 3)
            for hand_no in range(100):
                held, widow = deal_masks(game_seed, hand_no, tile_bits, n)
                s, high, bidder = first, 0, -1
                first = first + 1 if first + 1 < n else 0
                for _ in range(n):
                    opts = bids_for[high]
                    b = opts[draw(32) % len(opts)]
                    if b:
                        high, bidder = b, s
                        if b == MOON:
                            break
                    s = s + 1 if s + 1 < n else 0
                if not high:
                    continue  # everyone passed: redeal
                if widow >= 0:  # take the widow, discard any of the eight
                    m = held[bidder] | 1 << widow
                    mine = lo[m & 0x3FFF] + hi[m >> 14]
                    held[bidder] = m ^ 1 << mine[draw(32) % 8]
                contract = draw(32) % 9
                follow, power = FOLLOW[contract], POWER[contract]
                won = [0] * n
                leader = bidder
                for _ in range(7):
                    m = held[leader]
                    mine = lo[m & 0x3FFF] + hi[m >> 14]
                    led = mine[draw(32) % len(mine)]
                    held[leader] = m ^ 1 << led
                    pw, must = power[led], follow[led]
                    best, best_seat = pw[led], leader
                    s = leader
                    for _ in range(n - 1):
                        s = s + 1 if s + 1 < n else 0
                        m = held[s]
                        f = m & must or m
                        mine = lo[f & 0x3FFF] + hi[f >> 14]
                        t = mine[draw(32) % len(mine)]
                        held[s] = m ^ 1 << t
                        if pw[t] > best:
                            best, best_seat = pw[t], s
                    won[best_seat] += 1
                    leader = best_seat
                hands += 1
                need = 7 if high == MOON else high
                if n == 3:
                    made = won[bidder] >= need
                    for s in range(3):
                        scores[s] += (high if made else -high) if s == bidder else won[s]
                else:
                    team = bidder & 1
                    taken = won[team] + won[team + 2]
                    scores[team] += (high if high == MOON else taken) if taken >= need else -high
                    scores[1 - team] += won[1 - team] + won[3 - team]
                top = max(scores)
                if top >= 21 and scores.count(top) == 1:
                    break
        return hands, _clock() - start

    return run


def _sample_points(count: int, seed: int) -> list[GameState]:
    """States at random points of random 3p hands (most of them during play)."""
    rng = random.Random(seed)
    rules = Rules()
    out: list[GameState] = []
    while len(out) < count:
        st = GameState.new(rules, rng.getrandbits(32))
        for _ in range(rng.randrange(4, 30)):
            legal = st.legal_ids()
            if not legal:
                break
            st.apply_id(rng.choice(legal))
        if not st.is_over:
            out.append(st)
    return out


def per_item_loop(make: Callable[[int], Sequence[T]], work: Callable[[T], object]) -> Loop:
    """Calls of `work` over a batch of 200 inputs made from the seed, cycled until time is up."""

    def run(seed: int, seconds: float, games: int) -> tuple[int, float]:
        items = make(seed)
        done = 0
        start = _clock()
        deadline = start + seconds
        while _clock() < deadline:
            for item in items:
                work(item)
            done += len(items)
        return done, _clock() - start

    return run


def copy_loop() -> Loop:
    """`GameState.copy()` calls."""
    return per_item_loop(lambda seed: _sample_points(200, seed), GameState.copy)


def observation_loop() -> Loop:
    """`state.observation(seat)` for the seat to act."""
    return per_item_loop(
        lambda seed: _sample_points(200, seed), lambda st: st.observation(st.to_act)
    )


def sample_loop() -> Loop:
    """`moon.sample_state(observation, rng)` from the seat to act's observation."""
    rng = random.Random(0)

    def make(seed: int) -> list[Observation]:
        return [st.observation(st.to_act) for st in _sample_points(200, seed)]

    return per_item_loop(make, lambda obs: sample_state(obs, rng))


def sampler_loop() -> Loop:
    """`Sampler.sample(rng)`: one more deal from an observation already prepared."""
    rng = random.Random(0)

    def make(seed: int) -> list[Sampler]:
        return [Sampler(st.observation(st.to_act)) for st in _sample_points(200, seed)]

    return per_item_loop(make, lambda sampler: sampler.sample(rng))


def _play_position(st: GameState) -> tuple[int, list[int], int, list[int], list[int], int]:
    """A play-phase state as the search code holds it: contract, hands, leader, trick,
    tricks won and the mask of tiles gone."""
    k = st.in_trick
    trick = [t for _, t in st.plays[len(st.plays) - k:]]
    leader = st.plays[-k][0] if k else st.to_act
    return st.contract, st.hands, leader, trick, st.tricks_won, sum(1 << t for _, t in st.plays)


def playout_loop() -> Loop:
    """Greedy playouts of the rest of the hand from play positions."""

    def make(seed: int) -> list[GameState]:
        return [st for st in _sample_points(400, seed) if st.phase == 3][:200]

    def work(st: GameState) -> object:
        c, hands, leader, trick, won, gone = _play_position(st)
        return playout(st.n, c, hands, leader, trick, won, gone)

    return per_item_loop(make, work)


def _tricks_left_points(count: int, left: int, seed: int) -> list[GameState]:
    """3p states at the start of a trick with `left` tricks to go."""
    rng = random.Random(seed)
    out: list[GameState] = []
    while len(out) < count:
        st = GameState.new(Rules(), rng.getrandbits(32))
        while not st.is_over:
            if st.phase == 3 and not st.in_trick and len(st.winners) == 7 - left:
                out.append(st)
                break
            st.apply_id(rng.choice(st.legal_ids()))
    return out


def solve_figures(left: int, count: int) -> tuple[float, float]:
    """Mean CPU ms per solve and nodes per CPU second, `left` tricks to go, from scratch.

    The value searched is the tricks of the seat to act; the two others play against it.
    """
    nodes = 0
    points = _tricks_left_points(count, left, 5)
    start = _clock()
    for st in points:
        root = st.to_act
        values = [0] * 512
        for code in range(512):
            won = [code >> 3 * s & 7 for s in range(3)]
            values[won_code(won)] = won[root]
        solver = Solver(3, st.contract, [s == root for s in range(3)], values)
        solver.solve(st.hands[:], root, [], st.tricks_won)
        nodes += solver.nodes
    took = _clock() - start
    return took / count * 1000, nodes / took


def median_rate(loop: Loop, seconds: float, runs: int) -> float:
    """The median over `runs` runs (seeds 1, 1001, ...) of work per CPU second."""
    rates = []
    for i in range(runs):
        done, took = loop(1000 * i + 1, seconds, sys.maxsize)
        rates.append(done / took)
    return statistics.median(rates)


def paired_rates(a: Loop, b: Loop, seconds: float, runs: int) -> tuple[float, float, float]:
    """Medians of `a` and `b` and of their ratio, with the runs interleaved a, b, a, b, ...

    On a shared machine the speed drifts within a minute; a ratio taken from runs that
    sat next to each other in time compares like with like.
    """
    ra, rb, ratios = [], [], []
    for i in range(runs):
        done_a, took_a = a(1000 * i + 1, seconds, sys.maxsize)
        done_b, took_b = b(1000 * i + 1, seconds, sys.maxsize)
        ra.append(done_a / took_a)
        rb.append(done_b / took_b)
        ratios.append(ra[-1] / rb[-1])
    return statistics.median(ra), statistics.median(rb), statistics.median(ratios)


def check(games: int) -> int:
    """Play `games` games through each hand loop from one seed: the hands must agree."""
    status = 0
    for n in (3, 4):
        counts = [loop(n)(7, math.inf, games)[0] for loop in (engine_loop, checked_loop, bare_loop)]
        same = len(set(counts)) == 1
        status |= not same
        print(f"check {n}p: engine, checked and bare loops played {counts} hands in {games} "
              f"games: {'same' if same else 'DIFFERENT'}")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and print every figure."""
    p = argparse.ArgumentParser(description="Engine speed figures, one `name: value unit` a line.")
    p.add_argument("--seconds", type=float, default=1.5,
                   help="CPU seconds per run (default 1.5)")
    p.add_argument("--runs", type=int, default=5,
                   help="runs per figure, the median is shown (default 5)")
    p.add_argument("--hands-only", action="store_true",
                   help="only the hands/s figures, not the checked path nor search costs")
    p.add_argument("--check", type=int, default=0, metavar="GAMES",
                   help="instead of timing, check that all hand loops play the same games")
    args = p.parse_args(argv)
    if not args.seconds > 0 or args.runs < 1:
        p.error("--seconds must be positive and --runs at least 1")
    if args.check:
        return check(args.check)
    sec, runs = args.seconds, args.runs

    def show(name: str, value: float, unit: str, fmt: str = ",.0f") -> None:
        print(f"{name}: {value:{fmt}} {unit}", flush=True)

    bare_3p = 0.0
    for n in (3, 4):
        engine, bare, ratio = paired_rates(engine_loop(n), bare_loop(n), sec, runs)
        bare_3p = bare if n == 3 else bare_3p
        show(f"random {n}p hands/s", engine, "hands/s")
        show(f"bare loop {n}p hands/s", bare, "hands/s")
        show(f"engine/bare {n}p", ratio, "ratio", ".2f")
    if not args.hands_only:
        show("checked 3p hands/s", median_rate(checked_loop(3), sec, runs), "hands/s")
        show("copy/s", median_rate(copy_loop(), sec, runs), "copies/s")
        show("observation/s", median_rate(observation_loop(), sec, runs), "observations/s")
        samples = median_rate(sample_loop(), sec, runs)
        show("sample_state/s", samples, "samples/s")
        show("sample_state/bare 3p", samples / bare_3p, "ratio", ".2f")
        show("sampler draws/s", median_rate(sampler_loop(), sec, runs), "samples/s")
        show("playouts/s", median_rate(playout_loop(), sec, runs), "playouts/s")
        rates = []
        for left in (3, 4, 5, 6):
            ms, rate = solve_figures(left, max(4, 40 >> max(0, left - 3)))
            rates.append(rate)
            show(f"solve 3p {left} left", ms, "ms", ".2f")
        show("solver nodes/s", statistics.median(rates), "nodes/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
