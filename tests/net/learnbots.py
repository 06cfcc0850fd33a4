"""OpenSpiel bots for the end-to-end tests, run as `moonshot bot run --bot learnbots:NAME`."""

from __future__ import annotations

from learn.runner import IsmctsPlayer


class SmallIsmcts(IsmctsPlayer):
    """OpenSpiel's ISMCTS on a small budget, so that a test's games stay short."""

    simulations = 24
