"""The pool's form of late: the batch fit over the games of the last `DAYS` days only.

A bot is a fixed program, so the official rating (`ratings.batch`) counts every game a
pool ever played. But a pool changes: bots come back as new versions under old names,
the field's mix moves, and an organiser may ask how the bots compare on what they play
now. This method answers with the same fit (board luck, clustered intervals, LOS),
restricted to the games released in the `DAYS` days (30) before the fit's time; a bot
with no game in the window is not in its table. It shows the recipe of a rating method:
this module and one line in `ratings/methods.py` make the fit job store its table of
each pool and the referee serve it (`GetRatings` with `method: "recent"`,
`moonshot ratings --method recent`, the ratings page), with nothing else changed.

Games whose release time is unknown (`Game.at` None: a row stored without one) are
outside every window.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from ratings.batch import BatchFit
from ratings.games import Game
from ratings.registry import Method
from ratings.table import GameTable
from store.rating_tables import RatingTable

__all__ = ["DAYS", "Recent"]

DAYS = 30


class Recent(Method):
    """The batch fit over the games released in the last `days` days."""

    name = "recent"
    title = f"batch fit, last {DAYS} days"

    def __init__(self, days: float = DAYS) -> None:
        self.days = days
        self._fit = BatchFit()  # its own: the window's last fit starts the next

    def rate(self, games: Iterable[Game], as_of: float) -> RatingTable:
        """The batch fit's table over the window ending at `as_of` (module doc)."""
        since = as_of - self.days * 86400
        window = [g for g in games if g.at is not None and since <= g.at <= as_of]
        table = BatchFit().rate(window, as_of)
        return replace(table, method=f"{table.method}, games of the last {self.days:g} days")

    def rate_table(self, table: GameTable, as_of: float) -> RatingTable:
        """The same over columns: the window's rows, fitted from the window's last fit."""
        since = as_of - self.days * 86400
        if table.at is None:
            window = table.take(np.zeros(len(table), dtype=bool))
        else:
            window = table.take((table.at >= since) & (table.at <= as_of))  # NaN: outside
        out = self._fit.rate_table(window, as_of)
        return replace(out, method=f"{out.method}, games of the last {self.days:g} days")
