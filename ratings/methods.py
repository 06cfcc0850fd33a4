"""Every rating method, registered once: use the registry through this module.

Adding a method: write its module (a `registry.Method` subclass returning a
`RatingTable`) and add it to `METHODS` below. The fit job rates every pool with each
method, in this order, and stores each table under the method's name; the referee
serves any of them by name (`GetRatings.method`), and the CLI and the pages list them.
The provisional figure comes first: it is quick, and stands in for the batch fit
(the official rating, `store.rating_tables.OFFICIAL`) while that one runs.
"""

from __future__ import annotations

from ratings.batch import BatchFit
from ratings.live import Provisional
from ratings.recent import Recent
from ratings.registry import Method, get, names, register
from store.rating_tables import OFFICIAL, PROVISIONAL

__all__ = ["METHODS", "OFFICIAL", "PROVISIONAL", "Method", "get", "names"]

METHODS = tuple(register(m) for m in (Provisional(), BatchFit(), Recent()))
assert {OFFICIAL, PROVISIONAL} <= set(names()), "the two methods with roles are registered"
