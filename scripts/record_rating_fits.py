"""Record the batch fit of the test pools: `python scripts/record_rating_fits.py`.

Writes tests/golden/rating_fits.json: for each pool of `tests/rating_pools.py` (and a
few of the luck tests' shapes), a digest of each array the pool packs into, and the
fit's figures twice: as the fit gives them (`shipped`: ratings, intervals, LOS, luck
sd, gain, method) and with the fit's tolerances tightened until it has converged
(`converged`, the covariance too: the optimum the fit approximates, whatever path it
takes to it). The file in the repository was recorded by the fit before the columnar
input and the faster solver (commit 9990c6a, whose shipped tolerances stop the luck's
sd within 1e-6 in log tau^2, so within about 1e-4 Elo); tests/test_ratings_table.py
holds today's fit to it: the packed arrays bit for bit, the figures within 1e-9 Elo of
`converged` and 1e-4 Elo of `shipped`. Run it again only to record a deliberate change
of the fit's results.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from rating_pools import CASES, POOL_FIELDS, digest, extra_pools, make  # noqa: E402

from ratings import Game, canonical, fit, luck, optimize  # noqa: E402
from ratings.model import pack  # noqa: E402

TARGET = ROOT / "tests" / "golden" / "rating_fits.json"


# The converged record: the tolerances of `ratings.luck` and `ratings.optimize` set to these.
TIGHT = {"luck._RHO_TOL": 1e-12, "optimize._GTOL": 1e-13, "luck._GTOL_FINAL": 1e-13}


def figures(games: list[Game], covariance: bool) -> dict[str, Any]:
    """The fit's figures (with its covariance, or not)."""
    f = fit(games)
    out: dict[str, Any] = {
        "ratings": [[r.bot_id, r.rating, r.ci_low, r.ci_high, r.games, r.los_next]
                    for r in f.ratings],
        "luck_sd": f.luck_sd, "gain": f.gain,
    }
    if covariance:
        out["covariance"] = f.covariance.ravel().tolist()
    return out


def record(games: list[Game]) -> dict[str, Any]:
    """One pool's record: how it packs, what the fit says, shipped and converged."""
    f = fit(games)
    pool = pack(canonical(games))
    out = {"method": f.method, "games": f.games, "units": f.units, "dof": f.dof,
           "pool": {name: digest(getattr(pool, name)) for name in POOL_FIELDS},
           "shipped": figures(games, False)}
    modules = {"luck": luck, "optimize": optimize}
    where = {name: (modules[name.split(".")[0]], name.split(".")[1]) for name in TIGHT}
    saved = {name: getattr(*where[name]) for name in TIGHT}
    try:
        for name, value in TIGHT.items():
            setattr(*where[name], value)
        out["converged"] = figures(games, True)
    finally:
        for name, value in saved.items():
            setattr(*where[name], value)
    return out


def main() -> None:
    """Record every pool's fit."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True, check=False).stdout.strip()
    out: dict[str, Any] = {"recorded_at_commit": commit, "converged_tolerances": TIGHT,
                           "cases": {}}
    for case in CASES:
        out["cases"][case.name] = record(make(case))
    for name, games in extra_pools():
        out["cases"][name] = record(games)
    TARGET.write_text(json.dumps(out, indent=0) + "\n")
    print(f"{len(out['cases'])} fits written to {TARGET.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
