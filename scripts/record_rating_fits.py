"""Record the batch fit of the test pools: `python scripts/record_rating_fits.py`.

Writes tests/golden/rating_fits.json: for each pool of `tests/rating_pools.py` (and a
few of the luck tests' and the benchmark's shapes), the fit's every figure (ratings,
intervals, LOS, covariance, luck sd, gain, method) and a digest of each array the
pool packs into. The file in the repository was recorded by the fit before the
columnar input and the faster solver (commit 9990c6a); tests/test_ratings_table.py
holds today's fit to it: the packed arrays bit for bit, the figures within a bound.
Run it again only to record a deliberate change of the fit's results.
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

from ratings import Game, canonical, fit  # noqa: E402
from ratings.model import pack  # noqa: E402

TARGET = ROOT / "tests" / "golden" / "rating_fits.json"


def record(games: list[Game]) -> dict[str, Any]:
    """Every figure of one fit and the digests of its pool."""
    f = fit(games)
    pool = pack(canonical(games))
    return {
        "method": f.method, "games": f.games, "units": f.units, "dof": f.dof,
        "luck_sd": f.luck_sd, "gain": f.gain,
        "ratings": [[r.bot_id, r.rating, r.ci_low, r.ci_high, r.games, r.los_next]
                    for r in f.ratings],
        "covariance": f.covariance.ravel().tolist(),
        "pool": {name: digest(getattr(pool, name)) for name in POOL_FIELDS},
    }


def main() -> None:
    """Record every pool's fit."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True, check=False).stdout.strip()
    out: dict[str, Any] = {"recorded_at_commit": commit, "cases": {}}
    for case in CASES:
        out["cases"][case.name] = record(make(case))
    for name, games in extra_pools():
        out["cases"][name] = record(games)
    TARGET.write_text(json.dumps(out, indent=0) + "\n")
    print(f"{len(out['cases'])} fits written to {TARGET.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
