"""Pure rating math: games in, ratings out; no I/O, no Redis, no gRPC.

- `games`: `Game` (validated) and `games_from_rows` for result rows.
- `batch`: the official rating (`fit`), a Plackett-Luce / Bradley-Terry MAP fit with
  board luck (`luck`), board-clustered 95% intervals and likelihood of superiority (`Fit`).
- `live`: the provisional figure, a Weng-Lin update game by game.
- `intervals`, `los`, `luck`, `model`, `optimize`, `scale`: the parts the fit is made of.
- `sprt`: the test of a change: pair scores, the test's Elo, the GSPRT on pair counts, the
  fixed-games estimate.

3p and 2v2 are separate pools: fit each with its own call.
"""

from ratings.batch import LEVEL, PRIOR_SD, Fit, Rating, fit
from ratings.errors import RatingError
from ratings.games import Game, canonical, games_from_rows
from ratings.live import ProvisionalRating, provisional_ratings
from ratings.scale import ELO_PER_NAT, to_elo, to_nat

__all__ = [
    "ELO_PER_NAT",
    "LEVEL",
    "PRIOR_SD",
    "Fit",
    "Game",
    "ProvisionalRating",
    "Rating",
    "RatingError",
    "canonical",
    "fit",
    "games_from_rows",
    "provisional_ratings",
    "to_elo",
    "to_nat",
]
