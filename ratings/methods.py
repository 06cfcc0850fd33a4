"""Every rating method, registered once: use the registry through this module.

Adding a method: write its module (a `registry.Method` subclass returning a
`RatingTable`) and add it to `METHODS` below.
"""

from __future__ import annotations

from ratings.batch import BatchFit
from ratings.live import Provisional
from ratings.registry import Method, get, names, register

__all__ = ["METHODS", "Method", "get", "names"]

METHODS = tuple(register(m) for m in (BatchFit(), Provisional()))
