"""The collusion detector's power and false-alarm rate, by simulation calibrated on the
engine's games, with known truth.

Run `nice -n 15 python bench/collusion.py [--pools 100] [--seed 1]`. It prints
`name: value unit` lines:

- The engine's figures the simulation is built on (`engine_*`): `--engine-boards`
  boards, each played at `--engine-tables` tables by three PIMC players (`bots.pimc`,
  `--engine-samples` deals a decision; each table its own decision seeds), default
  rules. A seat's *margin* is its final points less its opponents' mean (what the
  detector scores, `ratings.collusion`). `engine_margin_sd` is its spread,
  `engine_deal_share` the share of it the deal explains (the board's hand s, read off
  every table that held it), `engine_noise_sd` what is left: how a table played it.
- `delta`: the colluder's edge in margin points, calibrated so that a colluder wins
  `--win` (default 0.483, issue 29's engine figure: a PIMC player handed the true deal
  against two honest PIMC players of the same budget, par 1/3) of 3p games against two
  equals under the engine's deal and noise; `delta_weak` the same at `--weak`.
- `false_alarm_rate`: the share of pools with no colluder in which the audit (Holm at
  `--alpha` over every pair of the pool) names any pair at all, with its 95% interval
  (`_low`, `_high`); `pairs_tested` the pairs a pool's audit tests.
- `power_S` (S = 10, 30, 100): the share of pools with one planted colluding pair
  sharing S boards in which the audit names that pair; `wrong_S` the share naming any
  other pair beside it; `power_weak_S` the same for the weak edge.

What is simulated, and what is the engine's: a pool of `--bots` bots (strengths normal,
sd `--skill` of the engine's noise sd) plays `--boards` boards of `--tables` tables of
three, each board's twelve bots drawn at random. A seat's margin at a table is the
deal's worth for its hand (a board of the engine run, drawn at random: the same at every
table of the simulated board) + its strength less its opponents' mean + a table's noise
(the residuals of a table of the engine run, drawn at random, so the engine's skew and
tails, and a table's margins summing to zero), plus `delta` for a colluder on a board
shared with its partner (its two opponents lose half of it each). The colluder's edge
is the issue's engine figure, converted to points through this model, not measured in
points on the engine: a colluder sees one other hand, not the whole deal, and the weak
edge is the check on that. The planted pair sits at different tables of exactly S
boards and never otherwise on one board.

The second pool (`mix_*`, `--part mix`): very unequal honest bots on boards of two
tables, as the arena seats a small pool (where the detector's null was weak,
docs/architecture.md, "Collusion across tables"). Its games are the engine's, not
drawn from a model: a library of one-hand games (`max_hands=1`, the live test's
rules) of `--mix-deals` deals, each played by every ordering of three kinds of
player at the three seats (random, greedy, PIMC of `--mix-samples` deals a
decision: 27 orders), twice with other decision seeds (a board's tables alternate
between the two, so two tables of one order do not replay one game). A pool is
`--mix-bots` bots, a third of each kind, seated by the arena's own step
(`tournaments.arena.step`: batches, recent table-mates, seats by least held) as they
come free, a PIMC's games lasting four times a random's or a greedy's, so that most
boards have two tables; a table's margins are the library's game of its deal and its
seats' kinds. So each honest
bot's strength, its spread, its effect on its table-mates and every interaction
between kinds are the engine's, and nobody colludes:

- `mix_false_alarm_rate` (and `_low`, `_high`): pools of `--mix-boards` boards in
  which the audit names any pair; `mix_pairs_tested`.
- `mix_fixed_false_alarm_rate`: the same bots on boards of two tables whose seats
  never rotate (each bot holds one hand position on every board, so a pair is always
  in the same hand or always in different ones): a stress of the statistic's
  per-board spread.
- `mix_power_S`, `mix_wrong_S` (S = 10, 30, 100): a random bot and a PIMC bot (the
  kinds of the honest pair the live test once named) gain `mix_delta` on every
  board where both sit, their opponents losing half of it each; the pool grows
  until they have sat at two tables of S boards, then the audit runs.
  `mix_delta` is the issue's engine edge (`--win`) converted as above, on the
  library's all-PIMC tables of one-hand games.
- `switch_power_S`, `switch_wrong_S` (S = 10, 30): the live test's colluders, a
  caricature: two random bots that play as PIMC, with `mix_delta` more, on every
  board where both sit and as random bots elsewhere. The pair that gains is then
  misfitted everywhere (their strength is an average of two players), which leaks
  into the residuals of the bots beside them: `switch_wrong_S` counts the pools where
  another pair is named too.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy import optimize

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bots.greedy import GreedyPlayer
from bots.pimc import PimcPlayer
from bots.player import Player
from bots.random_play import RandomPlayer
from moon.rules import Rules
from moon.state import GameState
from ratings.collusion import CLIP, ScoreTable, audit, margins
from tournaments import arena

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def engine_boards(boards: int, tables: int, samples: int, seed: int
                  ) -> tuple[FloatArray, FloatArray]:
    """Margins (boards, tables, 3) of PIMC players playing each board at every table."""
    rules = Rules()
    player = PimcPlayer(samples=samples)
    out = np.zeros((boards, tables, 3))
    for b in range(boards):
        for t in range(tables):
            st = GameState.new(rules, seed * 100_003 + b)
            decision = 0
            while not st.is_over:
                s = st.to_act
                legal = st.legal_actions()
                decision += 1
                act = player.decide(st.observation(s), legal,
                                    (seed * 7919 + b * 131 + t) * 1_000_003 + decision)
                st.apply(act, s)
            out[b, t] = st.scores
    m = margins(out.reshape(-1, 3)).reshape(boards, tables, 3)
    return m, out


def decompose(m: FloatArray) -> tuple[FloatArray, FloatArray, float, float]:
    """The deal's worth per (board, hand), the tables' noise vectors, and their sds."""
    tables = m.shape[1]
    deal = m.mean(axis=1)  # (boards, 3)
    noise = (m - deal[:, None, :]) * np.sqrt(tables / (tables - 1))
    noise_sd = float(noise.std())
    deal_var = max(float(deal.var()) - noise_sd ** 2 / tables, 0.0)
    deal_c = deal - deal.mean(axis=0)
    scale = np.sqrt(deal_var / deal_c.var()) if deal_c.var() > 0 else 0.0
    return deal_c * scale, noise.reshape(-1, 3), noise_sd, float(np.sqrt(deal_var))


def win_share(delta: float, deal: FloatArray, noise: FloatArray) -> float:
    """How often seat 0 with `delta` more (its opponents half of it less each) tops."""
    x = deal + noise + np.array([delta, -delta / 2, -delta / 2])
    return float((x[:, 0] > x[:, 1:].max(axis=1)).mean())


def calibrate(win: float, deal: FloatArray, noise: FloatArray, rng: np.random.Generator,
              draws: int = 200_000) -> float:
    """The edge (points) that wins `win` of games against two equals."""
    d = deal[rng.integers(len(deal), size=draws)]
    perm = np.argsort(rng.random((draws, 3)), axis=1)  # a random hand for the colluder
    d = np.take_along_axis(d, perm, axis=1)
    n = noise[rng.integers(len(noise), size=draws)]
    n = np.take_along_axis(n, np.argsort(rng.random((draws, 3)), axis=1), axis=1)
    hi = 10 * float(noise.std()) + 10
    return float(optimize.brentq(lambda x: win_share(x, d, n) - win, -hi, hi, xtol=1e-3))


def pool(rng: np.random.Generator, bots: int, boards: int, tables: int, skill_sd: float,
         deal: FloatArray, noise: FloatArray, delta: float, shared: int) -> ScoreTable:
    """A pool's games (3p margins as points); with `shared`, bots 0 and 1 collude on that
    many boards."""
    skills = rng.normal(0, skill_sd, bots)
    per = 3 * tables
    together = np.zeros(boards, dtype=bool)
    if shared:
        together[rng.choice(boards, size=shared, replace=False)] = True
    drawn = np.argsort(rng.random((boards, bots)), axis=1)[:, :per]
    for k in np.flatnonzero(together):
        rest = rng.permutation(np.arange(2, bots))[:per - 2]
        t0, t1 = rng.choice(tables, size=2, replace=False)
        row = list(rest)
        row.insert(int(t0) * 3 + int(rng.integers(3)), 0)
        row.insert(int(t1) * 3 + int(rng.integers(3)), 1)
        drawn[k] = row[:per]
        assert (drawn[k] == 0).sum() == 1 and (drawn[k] == 1).sum() == 1
    if shared:  # keep the pair off every other board
        for k in np.flatnonzero(~together & (drawn == 0).any(axis=1)
                                & (drawn == 1).any(axis=1)):
            others = np.setdiff1d(np.arange(2, bots), drawn[k])
            drawn[k][drawn[k] == 1] = rng.choice(others)
    seat_bot = drawn.reshape(boards * tables, 3)
    luck = np.repeat(deal[rng.integers(len(deal), size=boards)], tables, axis=0)
    s = skills[seat_bot]
    x = luck + (s - (s.sum(axis=1, keepdims=True) - s) / 2)
    x += noise[rng.integers(len(noise), size=boards * tables)]
    if shared:
        game_on = np.repeat(together, tables)
        c = np.isin(seat_bot, (0, 1)) & game_on[:, None]
        x += delta * c - delta / 2 * (c.sum(axis=1, keepdims=True) - c)
    ids = [f"g{i}" for i in range(boards * tables)]
    return ScoreTable(tuple(ids), np.repeat(np.arange(boards), tables).astype(np.int64),
                      seat_bot.astype(np.int64), x, tuple(f"bot{i}" for i in range(bots)),
                      tuple(f"b{k}" for k in range(boards)))


def rate(hits: int, n: int) -> tuple[float, float, float]:
    """A share and its Wilson 95% interval."""
    if n == 0:
        return 0.0, 0.0, 1.0
    z = 1.96
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return p, max(0.0, centre - half), min(1.0, centre + half)


def show(name: str, value: float, unit: str = "", fmt: str = ".3f") -> None:
    """One `name: value unit` line."""
    print(f"{name}: {value:{fmt}} {unit}".rstrip(), flush=True)


# ----------------------------------------------------------------- the unequal pool

KINDS = "RGP"  # random, greedy, PIMC
ORDERS = tuple(itertools.product(range(3), repeat=3))  # a kind per seat
ORDER_INDEX = {o: i for i, o in enumerate(ORDERS)}


def _library_part(deals: Sequence[int], samples: int, seed: int) -> FloatArray:
    """Points (deals, 2 decision seeds, 27 orders, 3) of one-hand games (a worker's part)."""
    rules = Rules.make(3, {"max_hands": 1})
    players: list[Player] = [RandomPlayer(), GreedyPlayer(), PimcPlayer(samples=samples)]
    out = np.zeros((len(deals), 2, len(ORDERS), 3))
    for i, deal in enumerate(deals):
        for rep, (o, order) in itertools.product(range(2), enumerate(ORDERS)):
            st = GameState.new(rules, seed * 1_000_003 + deal)
            decision = 0
            while not st.is_over:
                s = st.to_act
                decision += 1
                act = players[order[s]].decide(
                    st.observation(s), st.legal_actions(),
                    ((seed * 7919 + deal) * 64 + rep * 32 + o) * 1_000_003 + decision)
                st.apply(act, s)
            out[i, rep, o] = st.scores
    return out


def library(deals: int, samples: int, seed: int, jobs: int) -> FloatArray:
    """Margins (deals, 2, 27, 3) of the engine's one-hand games (module doc)."""
    parts = [list(range(deals))[j::jobs] for j in range(jobs)]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as ex:
            done = list(ex.map(_library_part, parts, [samples] * jobs, [seed] * jobs))
    else:
        done = [_library_part(parts[0], samples, seed)]
    pts = np.zeros((deals, 2, len(ORDERS), 3))
    for part, got in zip(parts, done, strict=True):
        pts[part] = got
    return margins(pts.reshape(-1, 3)).reshape(pts.shape)


def seatings(rng: np.random.Generator, kinds: IntArray, fixed: bool = False
             ) -> Iterator[list[tuple[int, ...]]]:
    """Boards (tables of bot indices, by seat) as the arena's step forms them while the bots
    come free, one game at a time each (a PIMC's lasting 4 times the others'); with
    `fixed`, boards of two tables whose seats never rotate (bot i always at hand i % 3)."""
    n = len(kinds)
    if fixed:
        by_hand = [np.flatnonzero(np.arange(n) % 3 == h) for h in range(3)]
        while True:
            picks = [rng.permutation(x)[:2] for x in by_hand]
            yield [tuple(int(picks[h][t]) for h in range(3)) for t in range(2)]
    ids = [f"b{i:03d}" for i in range(n)]
    busy = np.zeros(n)
    games = np.zeros(n, dtype=np.int64)
    recent: list[list[str]] = [[] for _ in range(n)]
    seats = [[0, 0, 0] for _ in range(n)]
    free_since = np.zeros(n)
    now, number = 0.0, 0
    settings = arena.Settings(concurrency=1, max_wait_s=1.0)
    while True:
        free = [i for i in range(n) if busy[i] <= now]
        step = arena.step(arena.Request(
            "3p", "bench", number, now, n, tuple(arena.Candidate(
                ids[i], games=int(games[i]), free_since=float(free_since[i]),
                recent=tuple(recent[i]), seats=tuple(seats[i])) for i in free),
            seed=int(rng.integers(1 << 30)), settings=settings))
        number = step.next_board
        for board in step.boards:
            tables = [tuple(ids.index(b) for b in t.seats) for t in board.tables]
            for table in tables:
                ends = now + max(4.0 if kinds[i] == 2 else 1.0 for i in table) * float(
                    rng.uniform(0.8, 1.25))
                for seat, i in enumerate(table):
                    busy[i], free_since[i] = ends, ends
                    games[i] += 1
                    seats[i][seat] += 1
                    recent[i] = ([ids[x] for x in table if x != i] + recent[i])[:4]
            yield tables
        later = busy[busy > now]
        nxt = float(later.min()) if later.size else now + 0.1
        if step.retry_at is not None:
            nxt = min(nxt, step.retry_at)
        now = max(nxt, now + 1e-6)


def mix_table(boards: Sequence[Sequence[tuple[int, ...]]], kinds: IntArray, lib: FloatArray,
              rng: np.random.Generator, delta: float = 0.0, pair: tuple[int, int] = (0, 1),
              switch: int | None = None) -> ScoreTable:
    """The boards' games from the library (a deal each, at random); the pair, on every board
    where both sit, plays as kind `switch` (if given) and gains `delta`."""
    deals = rng.integers(len(lib), size=len(boards))
    seat_bot, points, unit = [], [], []
    for k, tables in enumerate(boards):
        both = {i for t in tables for i in t} >= set(pair)
        for t, table in enumerate(tables):
            order = kinds[list(table)].copy()
            c = np.isin(table, pair) & both
            if switch is not None:
                order[c] = switch
            m = lib[deals[k], t % 2, ORDER_INDEX[tuple(int(x) for x in order)]].copy()
            m += delta * c - delta / 2 * (c.sum() - c)
            seat_bot.append(table)
            points.append(m)
            unit.append(k)
    n = len(kinds)
    return ScoreTable(tuple(f"g{i}" for i in range(len(points))),
                      np.array(unit, dtype=np.int64), np.array(seat_bot, dtype=np.int64),
                      np.array(points), tuple(f"bot{i}" for i in range(n)),
                      tuple(f"b{k}" for k in range(len(boards))))


def apart(tables: Sequence[tuple[int, ...]], pair: tuple[int, int]) -> bool:
    """Whether the pair sat at two different tables of this board."""
    where = {i: t for t, table in enumerate(tables) for i in table}
    return pair[0] in where and pair[1] in where and where[pair[0]] != where[pair[1]]


def run_mix(args: argparse.Namespace, rng: np.random.Generator) -> None:
    """The unequal pool's figures (module doc)."""
    started = time.perf_counter()
    cache = Path(args.library) if args.library else None
    if cache is not None and cache.exists():
        lib = np.load(cache)  # built by an earlier run with the same --mix-* and --seed
    else:
        lib = library(args.mix_deals, args.mix_samples, args.seed, args.jobs)
        if cache is not None:
            np.save(cache, lib)
    show("mix_library_games", lib.shape[0] * lib.shape[1] * lib.shape[2], "", "d")
    show("mix_library_minutes", (time.perf_counter() - started) / 60, "", ".1f")
    for kind in range(3):
        seat_kind = np.array(ORDERS)[None, None, :, :] == kind
        show(f"mix_margin_{KINDS[kind]}", float(lib[np.broadcast_to(seat_kind, lib.shape)]
                                                .mean()), "points")
    pimc = lib[:, :, ORDER_INDEX[(2, 2, 2)]]  # (deals, 2 tables, 3)
    deal, noise, noise_sd, deal_sd = decompose(pimc)
    show("mix_pimc_noise_sd", noise_sd, "points")
    show("mix_pimc_deal_share", deal_sd ** 2 / (deal_sd ** 2 + noise_sd ** 2))
    delta = calibrate(args.win, deal, noise, rng)
    show("mix_delta", delta, "points")
    n = args.mix_bots
    kinds = np.arange(n) * 3 // n  # a third random, a third greedy, a third PIMC
    pools = args.mix_pools or args.pools

    def calibration(label: str, z: Sequence[float]) -> None:
        """How honest pairs' z spread: sd (1 when the statistic's spread is right) and the
        share of them past the one-sided 0.1% point (0.001 when its tail is right)."""
        zs = np.array(z)
        show(f"{label}_z_sd", float(zs.std()))
        for name, value in zip(("", "_low", "_high"), rate(int((zs > 3.0902).sum()), zs.size),
                               strict=True):
            show(f"{label}_z_tail_001{name}", value, "", ".4f")

    def null(label: str, fixed: bool) -> None:
        named = pairs = 0
        z: list[float] = []
        for _ in range(pools):
            boards = list(itertools.islice(seatings(rng, kinds, fixed), args.mix_boards))
            a = audit(mix_table(boards, kinds, lib, rng), alpha=args.alpha, clip=args.clip)
            named += bool(a.suspected)
            pairs += len(a.pairs)
            z += [x.z for x in a.pairs]
        for name, value in zip(("", "_low", "_high"), rate(named, pools), strict=True):
            show(f"{label}_false_alarm_rate{name}", value)
        show(f"{label}_pairs_tested", pairs / pools, "pairs a pool", ".0f")
        calibration(label, z)

    null("mix", False)
    null("mix_fixed", True)

    def grown(label: str, pair: tuple[int, int], switch: int | None, marks: Sequence[int]
              ) -> None:
        named = dict.fromkeys(marks, 0)
        wrong = dict.fromkeys(marks, 0)
        others: list[float] = []  # the other pairs' z at the last mark
        for _ in range(pools):
            boards: list[list[tuple[int, ...]]] = []
            shared = 0
            for tables in seatings(rng, kinds):
                boards.append(tables)
                shared += apart(tables, pair)
                if shared in named and apart(tables, pair):
                    a = audit(mix_table(boards, kinds, lib, rng, delta, pair, switch),
                              alpha=args.alpha, clip=args.clip)
                    hit = {frozenset((s.bot_a, s.bot_b)) for s in a.suspected}
                    planted = frozenset((f"bot{pair[0]}", f"bot{pair[1]}"))
                    named[shared] += planted in hit
                    wrong[shared] += bool(hit - {planted})
                    if shared == max(marks):
                        others += [x.z for x in a.pairs
                                   if frozenset((x.bot_a, x.bot_b)) != planted]
                        break
        for s_ in marks:
            for name, value in zip(("", "_low", "_high"), rate(named[s_], pools), strict=True):
                show(f"{label}_power_{s_}{name}", value)
            show(f"{label}_wrong_{s_}", rate(wrong[s_], pools)[0])
        calibration(f"{label}_others_{max(marks)}", others)

    grown("mix", (0, n - 1), None, (10, 30, 100))  # a random bot and a PIMC bot
    grown("switch", (0, 1), 2, (10, 30))  # two random bots, PIMC when both sit
    show("mix_minutes", (time.perf_counter() - started) / 60, "", ".1f")


def main(argv: Sequence[str] | None = None) -> int:
    """Print the figures."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--pools", type=int, default=100)
    ap.add_argument("--bots", type=int, default=60)
    ap.add_argument("--boards", type=int, default=1500)
    ap.add_argument("--tables", type=int, default=4)
    ap.add_argument("--skill", type=float, default=0.3)
    ap.add_argument("--win", type=float, default=0.483)
    ap.add_argument("--weak", type=float, default=0.40)
    ap.add_argument("--alpha", type=float, default=0.01)
    ap.add_argument("--engine-boards", type=int, default=30)
    ap.add_argument("--engine-tables", type=int, default=4)
    ap.add_argument("--engine-samples", type=int, default=16)
    ap.add_argument("--clip", type=float, default=CLIP,
                    help="the detector's clipping of standardised residuals (0: none)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--part", choices=("main", "mix", "both"), default="both",
                    help="the pool of four tables (main), the unequal one (mix), or both")
    ap.add_argument("--mix-bots", type=int, default=12)
    ap.add_argument("--mix-boards", type=int, default=300)
    ap.add_argument("--mix-deals", type=int, default=250)
    ap.add_argument("--mix-samples", type=int, default=16)
    ap.add_argument("--mix-pools", type=int, default=0, help="default: --pools")
    ap.add_argument("--jobs", type=int, default=2, help="processes for the engine's library")
    ap.add_argument("--library", default="",
                    help="a .npy file: the engine's library is read from it if it exists, "
                         "else built and saved there (the same --mix-* and --seed)")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    if args.part != "main":
        run_mix(args, rng)
        if args.part == "mix":
            show("run_minutes", (time.perf_counter() - started) / 60, "", ".1f")
            return 0

    m, _ = engine_boards(args.engine_boards, args.engine_tables, args.engine_samples,
                         args.seed)
    deal, noise, noise_sd, deal_sd = decompose(m)
    show("engine_games", m.shape[0] * m.shape[1], "", "d")
    show("engine_minutes", (time.perf_counter() - started) / 60, "", ".1f")
    show("engine_margin_sd", float(m.std()), "points")
    show("engine_deal_share", deal_sd ** 2 / (deal_sd ** 2 + noise_sd ** 2))
    show("engine_noise_sd", noise_sd, "points")
    show("engine_win_share_seat0", float((m[:, :, 0] > m[:, :, 1:].max(axis=2)).mean()))
    delta = calibrate(args.win, deal, noise, rng)
    weak = calibrate(args.weak, deal, noise, rng)
    show("delta", delta, "points")
    show("delta_weak", weak, "points")
    show("pools", args.pools, "", "d")

    def run(d: float, shared: int) -> tuple[int, int, int, int]:
        named = wrong = pairs = 0
        for _ in range(args.pools):
            a = audit(pool(rng, args.bots, args.boards, args.tables, args.skill * noise_sd,
                           deal, noise, d, shared), alpha=args.alpha, clip=args.clip)
            pairs += len(a.pairs)
            hit = {frozenset((s.bot_a, s.bot_b)) for s in a.suspected}
            planted = frozenset(("bot0", "bot1"))
            named += planted in hit
            wrong += bool(hit - {planted})
        return named, wrong, pairs, args.pools

    _, wrong, pairs, n = run(0.0, 0)
    p, lo, hi = rate(wrong, n)
    show("false_alarm_rate", p)
    show("false_alarm_rate_low", lo)
    show("false_alarm_rate_high", hi)
    show("pairs_tested", pairs / n, "pairs a pool", ".0f")
    for name, d in (("", delta), ("_weak", weak)):
        for shared in (10, 30, 100):
            named, wrong, _, n = run(d, shared)
            p, lo, hi = rate(named, n)
            show(f"power{name}_{shared}", p)
            show(f"power{name}_{shared}_low", lo)
            show(f"power{name}_{shared}_high", hi)
            show(f"wrong{name}_{shared}", rate(wrong, n)[0])
    show("run_minutes", (time.perf_counter() - started) / 60, "", ".1f")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
