"""A ratings chart: one horizontal bar per bot, its 95% interval as an error bar, saved as PNG."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: never open a window (servers and CI have no display)

import matplotlib.pyplot as plt  # after use(): the backend must be chosen first

__all__ = ["ratings_chart"]

ChartRow = tuple[str, float, float, float, int]


def ratings_chart(rows: Sequence[ChartRow], path: str | Path, title: str) -> Path:
    """Draw (name, rating, ci_low, ci_high, games) rows, best first, as a PNG at `path`."""
    rows = list(rows)
    height = max(2.5, 0.42 * len(rows) + 1.4)
    fig, ax = plt.subplots(figsize=(8.5, height), dpi=110)
    try:
        ys = list(range(len(rows)))
        ratings = [r[1] for r in rows]
        below = [r[1] - r[2] for r in rows]
        above = [r[3] - r[1] for r in rows]
        ax.errorbar(ratings, ys, xerr=[below, above], fmt="o", color="#1f5fa8",
                    ecolor="#7fa6d6", elinewidth=3, capsize=4, markersize=6)
        ax.axvline(0.0, color="#999999", linewidth=0.8, linestyle="--")
        ax.set_yticks(ys, [f"{r[0]}  ({r[4]} g)" for r in rows])
        ax.invert_yaxis()  # best at the top, as the rows come
        for y, r in zip(ys, rows, strict=True):
            ax.annotate(f"{r[1]:+.0f}", (r[3], y), xytext=(6, 0), textcoords="offset points",
                        va="center", fontsize=8, color="#333333")
        ax.set_xlabel("Elo (pool mean 0), 95% interval")
        ax.set_title(title)
        ax.grid(axis="x", alpha=0.3)
        if rows:
            lo, hi = min(r[2] for r in rows), max(r[3] for r in rows)
            pad = max(20.0, 0.08 * (hi - lo))
            ax.set_xlim(lo - pad, hi + 1.8 * pad)  # room for the labels right of the bars
        fig.tight_layout()
        out = Path(path)
        fig.savefig(out, format="png")
        return out
    finally:
        plt.close(fig)
