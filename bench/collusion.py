"""The collusion detector's power and false-alarm rate, by simulation with known truth.

Run `nice -n 15 python bench/collusion.py [--pools 200] [--seed 1]`. It prints
`name: value unit` lines:

- `delta`: the colluder's edge in the simulation's units (below), calibrated so that
  a colluder wins `--win` (default 0.483) of 3p games against two equals, par 1/3.
- `false_alarm_rate`: the share of pools with no colluder in which the audit
  (`ratings.collusion.audit`, Holm at `--alpha`) names any pair at all, with its 95%
  interval (`_low`, `_high`); `pairs_tested` the pairs a pool's audit tests.
- `power_S` (S = 10, 30, 100): the share of pools with one planted colluding pair
  sharing S boards in which the audit names that pair; `wrong_S` the share naming any
  other pair (an honest pair suspected beside them).
- the same at `--weak` (default 0.40, a colluder that gains less than the engine's
  figure: `power_weak_S`).

The simulation (not the engine: an engine pool of thousands of PIMC games a pool would
take hours; the figure it is calibrated on comes from the engine, issue 29): a pool of
`--bots` bots (skills normal, sd `--skill` in noise units) plays `--boards` boards of
`--tables` tables of three, each board's bots drawn at random. A seat's performance at a
table is skill + the deal's luck for its seat position (the same at every table of the
board: sd from `--luck`, the share of a game's variance the deal decides) + the seat's
own noise (sd 1), plus `delta` for a colluder on a board shared with its partner; places
follow performance. The engine figure: a PIMC player handed the true deal instead of
sampling it wins 0.483 of 3p games against two honest PIMC players of the same budget
(par 1/3), so delta solves P(X + delta > max(Y, Z)) = 0.483 for X, Y, Z alike. A
colluder sees one other hand, not all; the weak effect is the check on that.
The planted pair sits at different tables of exactly S boards and never otherwise on
one board; their other games are their baseline.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import integrate, optimize, stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ratings.collusion import audit
from ratings.table import GameTable


def win_share(delta: float, scale: float) -> float:
    """P(X + delta > max(Y, Z)) for X, Y, Z normal with sd `scale`."""
    d = delta / scale
    value, _ = integrate.quad(lambda t: stats.norm.pdf(t) * stats.norm.cdf(t + d) ** 2,
                              -10, 10)
    return float(value)


def calibrate(win: float, scale: float) -> float:
    """The edge that wins `win` of games against two equals."""
    return float(optimize.brentq(lambda d: win_share(d, scale) - win, 0.0, 10 * scale))


def pool(rng: np.random.Generator, bots: int, boards: int, tables: int, skill: float,
         luck_sd: float, delta: float, shared: int) -> GameTable:
    """A pool's games; with `shared`, bots 0 and 1 collude on that many boards."""
    skills = rng.normal(0, skill, bots)
    per = 3 * tables
    ids, units, seat_bot, perf = [], [], [], []
    together = set(rng.choice(boards, size=shared, replace=False).tolist()) if shared else set()
    for k in range(boards):
        if k in together:
            rest = rng.choice(np.arange(2, bots), size=per - 2, replace=False)
            t0, t1 = rng.choice(tables, size=2, replace=False)
            seats = list(rest)
            seats.insert(int(t0) * 3 + int(rng.integers(3)), 0)
            t1_slot = int(t1) * 3 + int(rng.integers(3))
            seats.insert(t1_slot, 1)
            drawn = np.array(seats[:per])
        else:
            drawn = rng.choice(bots, size=per, replace=False)
            if shared and 0 in drawn and 1 in drawn:  # keep the pair off other boards
                others = np.setdiff1d(np.arange(2, bots), drawn)
                drawn[drawn == 1] = rng.choice(others)
        luck = rng.normal(0, luck_sd, 3)
        for t in range(tables):
            seats3 = drawn[3 * t: 3 * t + 3]
            x = skills[seats3] + luck + rng.normal(0, 1, 3)
            if k in together:
                x = x + delta * np.isin(seats3, (0, 1))
            ids.append(f"g{k}-{t}")
            units.append(f"b{k}")
            seat_bot.append(seats3)
            perf.append(x)
    perf_a = np.array(perf)
    place = 1 + (perf_a[:, None, :] > perf_a[:, :, None]).sum(axis=2)
    return GameTable.of(ids, units, np.array(seat_bot), place, [f"bot{i}" for i in range(bots)])


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
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pools", type=int, default=200)
    ap.add_argument("--bots", type=int, default=60)
    ap.add_argument("--boards", type=int, default=1500)
    ap.add_argument("--tables", type=int, default=4)
    ap.add_argument("--skill", type=float, default=0.3)
    ap.add_argument("--luck", type=float, default=0.5)
    ap.add_argument("--win", type=float, default=0.483)
    ap.add_argument("--weak", type=float, default=0.40)
    ap.add_argument("--alpha", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    started = time.perf_counter()
    luck_sd = float(np.sqrt(args.luck / (1 - args.luck)))
    scale = float(np.sqrt(1 + luck_sd ** 2))
    rng = np.random.default_rng(args.seed)

    def run(delta: float, shared: int) -> tuple[int, int, int, int]:
        named = wrong = pairs = 0
        for _ in range(args.pools):
            a = audit(pool(rng, args.bots, args.boards, args.tables, args.skill, luck_sd,
                           delta, shared), alpha=args.alpha)
            pairs += len(a.pairs)
            hit = {(s.bot_a, s.bot_b) for s in a.suspected}
            named += ("bot0", "bot1") in hit
            wrong += bool(hit - {("bot0", "bot1")})
        return named, wrong, pairs, args.pools

    show("pools", args.pools, "", "d")
    show("luck_share", args.luck)
    delta = calibrate(args.win, scale)
    weak = calibrate(args.weak, scale)
    show("delta", delta, "noise sd")
    show("delta_weak", weak, "noise sd")
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
