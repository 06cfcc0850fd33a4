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
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy import optimize

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bots.pimc import PimcPlayer
from moon.rules import Rules
from moon.state import GameState
from ratings.collusion import CLIP, ScoreTable, audit, margins

FloatArray = NDArray[np.float64]


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
    args = ap.parse_args(argv)
    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)

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
