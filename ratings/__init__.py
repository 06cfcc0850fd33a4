"""Pure rating math: games in, ratings out; no I/O, no Redis, no gRPC.

- `registry`, `methods`: every rating method, registered by name, each turning games
  into the one result type, a `store.rating_tables.RatingTable`.
- `games`: `Game` (validated) and `games_from_rows` for result rows.
- `table`: `GameTable`, a pool's games as columns, what the fit reads in bulk (`fit_table`).
- `batch`: the official rating (`fit`, method `batch`), a Plackett-Luce / Bradley-Terry
  MAP fit with board luck (`luck`), board-clustered intervals at `LEVEL` and likelihood
  of superiority (`Fit`).
- `live`: the provisional figure (method `provisional`), a Weng-Lin update game by game.
- `recent`: the batch fit over the last 30 days' games (method `recent`).
- `intervals`, `los`, `luck`, `model`, `optimize`, `scale`: the parts the fit is made of.
- `sprt`: the test of a change: pair scores, the test's Elo, the GSPRT on pair counts, the
  fixed-games estimate.

3p and 2v2 are separate pools: fit each with its own call.
"""

from ratings.batch import LEVEL, PRIOR_SD, Fit, Rating, fit, fit_table
from ratings.errors import RatingError
from ratings.games import Game, canonical, games_from_rows
from ratings.live import ProvisionalRating, provisional_ratings
from ratings.methods import METHODS, Method
from ratings.scale import ELO_PER_NAT, to_elo, to_nat
from ratings.table import GameTable

__all__ = [
    "ELO_PER_NAT",
    "LEVEL",
    "METHODS",
    "PRIOR_SD",
    "Fit",
    "Game",
    "GameTable",
    "Method",
    "ProvisionalRating",
    "Rating",
    "RatingError",
    "canonical",
    "fit",
    "fit_table",
    "games_from_rows",
    "provisional_ratings",
    "to_elo",
    "to_nat",
]
