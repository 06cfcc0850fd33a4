"""Moon, the trick-taking domino game: a pure engine with no I/O.

The public surface: `Rules`, `GameState`, `Action`, `Tile`, `Observation`,
`sample_state` and `Sampler` (deals for search bots), and the transcript helpers
in `moon.transcript`.
"""

from moon.actions import Action, ActionKind
from moon.contracts import DOUBLES, NO_TRUMP, contract_name, parse_contract
from moon.errors import IllegalActionError, MoonError, ParseError, RulesError, TranscriptError
from moon.observation import BidMade, Observation, Phase, Play, Trick
from moon.rules import Rules
from moon.sampling import Sampler, sample_state
from moon.state import GameState
from moon.tiles import ALL_TILES, Tile

__all__ = [
    "ALL_TILES",
    "DOUBLES",
    "NO_TRUMP",
    "Action",
    "ActionKind",
    "BidMade",
    "GameState",
    "IllegalActionError",
    "MoonError",
    "Observation",
    "ParseError",
    "Phase",
    "Play",
    "Rules",
    "RulesError",
    "Sampler",
    "Tile",
    "TranscriptError",
    "Trick",
    "contract_name",
    "parse_contract",
    "sample_state",
]
