"""The Elo scale: rating = 400 * log10(gamma), so a natural-log strength is rating * ln 10 / 400."""

from __future__ import annotations

import math

__all__ = ["ELO_PER_NAT", "to_elo", "to_nat"]

# Elo points per unit of natural-log strength: 100 Elo more means odds 10^(1/4) ≈ 1.78 : 1.
ELO_PER_NAT = 400.0 / math.log(10.0)


def to_elo(theta: float) -> float:
    """A natural-log strength on the Elo scale."""
    return theta * ELO_PER_NAT


def to_nat(rating: float) -> float:
    """An Elo rating (or difference) as a natural-log strength."""
    return rating / ELO_PER_NAT
