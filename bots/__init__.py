"""Pure players: an observation and the legal actions in, an action out.

`random`, `greedy` and `pimc` are the project's own players. The SDK's built-in
bots wrap them (`clients.builtin`), and the stack runs them as house bots, named
by ids that `bots.house.parse` checks (`house:pimc?samples=64`). A house
player's decision is a pure function of the seat's observation, the game's seed
and the seat (`bots.player`), so a replayed game gets the same moves. Imports
only `moon`.
"""

from bots.greedy import GreedyPlayer, greedy_action
from bots.house import BOTS, HouseBot, HouseBotError, is_house, parse
from bots.pimc import PimcPlayer
from bots.player import Player, decision_rng
from bots.random_play import RandomPlayer, random_action

__all__ = [
    "BOTS",
    "GreedyPlayer",
    "HouseBot",
    "HouseBotError",
    "PimcPlayer",
    "Player",
    "RandomPlayer",
    "decision_rng",
    "greedy_action",
    "is_house",
    "parse",
    "random_action",
]
