"""Random pools for the rating tests: every shape a pool can take, from a seed.

`random.Random` only (its streams are stable across Python versions), so a case names
the same games in every run: `tests/golden/rating_fits.json` holds what the fit gave
for each before the columnar fit (`scripts/record_rating_fits.py`), and
`tests/test_ratings_table.py` holds today's fit to it.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from ratings import Game


@dataclass(frozen=True)
class Case:
    """One random pool's recipe."""

    seed: int
    sides: int = 3  # 3 (3p) or 2 (2v2)
    bots: int = 9
    games: int = 120
    boards: str = "some"  # "none": no units; "some": units of 1 to 5 games and a few without;
    # "all": every game on a board of 2 to 4 games
    ties: bool = True
    house: bool = False  # a house bot that sometimes sits on two sides of a game
    singles: int = 0  # extra bots that play exactly one game
    repeats: int = 0  # games given twice (identical), which the fit keeps once
    luck: float = 2.0  # sd of a board's luck at each seat position (performance units)

    @property
    def name(self) -> str:
        """A short label for test ids."""
        bits = [f"{self.sides if self.sides == 3 else 2}{'p' if self.sides == 3 else 'v2'}",
                f"s{self.seed}", f"b{self.bots}", f"g{self.games}", self.boards]
        bits += [x for x, on in (("ties", self.ties), ("house", self.house)) if on]
        bits += [f"one{self.singles}"] if self.singles else []
        bits += [f"rep{self.repeats}"] if self.repeats else []
        return "-".join(bits)


def _game_id(rng: random.Random, i: int) -> str:
    """Ids of several forms, so that the natural order (digit runs as numbers) matters."""
    form = rng.randrange(5)
    if form == 0:
        return f"g{i}"
    if form == 1:
        return f"g{i:04d}"  # leading zeros: equal numbers, the raw id breaks the tie
    if form == 2:
        return f"m-{rng.getrandbits(40):010x}"
    if form == 3:
        return f"m-a3pb{i // 7}t{i % 7}"
    return f"t{i % 3}/r{i // 3}/x{i}"


def _places(rng: random.Random, perf: list[float], ties: bool) -> tuple[int, ...]:
    """Competition ranking of performances (rounded coarsely when ties are wanted)."""
    scores = [round(p) if ties else p for p in perf]
    return tuple(1 + sum(q > p for q in scores) for p in scores)


def make(case: Case) -> list[Game]:
    """The games of a case (in a scrambled order, repeats included)."""
    rng = random.Random(case.seed)
    names = [f"bot{i:02d}" for i in range(case.bots)]
    strength = {n: rng.gauss(0, 1) for n in names}
    house = "house:pimc?samples=8"
    strength[house] = 0.5
    games: list[Game] = []
    unit_left = 0
    unit = ""
    board = 0
    luck = [0.0] * case.sides
    for i in range(case.games):
        if case.boards == "none":
            unit = ""
        elif unit_left <= 0:
            board += 1
            low, high = (2, 4) if case.boards == "all" else (1, 5)
            unit_left = rng.randint(low, high)
            unit = "" if case.boards == "some" and rng.random() < 0.15 else f"board-{board}"
            luck = [rng.gauss(0, case.luck) for _ in range(case.sides)]
        unit_left -= 1
        gid = _game_id(rng, i)
        if case.sides == 3:
            table = rng.sample(names, 3)
            if case.house and rng.random() < 0.3:
                table[rng.randrange(3)] = house
                if rng.random() < 0.4:  # the house bot on two sides
                    others = [s for s in range(3) if table[s] != house]
                    table[others[0]] = house
            sides: tuple[tuple[str, ...], ...] = tuple((b,) for b in table)
            perf = [strength[b] * 1.5 + luck[p] + rng.gauss(0, 1.5) for p, b in enumerate(table)]
        else:
            picks = rng.sample(names, 4)
            team_a = (picks[0],) if rng.random() < 0.3 else (picks[0], picks[1])
            team_b = (picks[2],) if rng.random() < 0.3 else (picks[2], picks[3])
            if case.house and rng.random() < 0.3:
                team_a = (team_a[0], house) if len(team_a) == 2 else (house,)
                if rng.random() < 0.4:  # the house bot on both teams
                    team_b = (house, team_b[-1]) if len(team_b) == 2 else (house,)
            sides = (team_a, team_b)
            perf = [sum(strength[b] for b in t) / len(t) * 1.5 + luck[p] + rng.gauss(0, 1.5)
                    for p, t in enumerate(sides)]
        places = _places(rng, perf, case.ties)
        games.append(Game(gid, unit, sides, places))
    # Ids must be distinct games: a repeated id (the forms can collide) gets a suffix.
    seen: set[str] = set()
    for k, g in enumerate(games):
        gid = g.game_id
        while gid in seen:
            gid += "x"
        seen.add(gid)
        games[k] = Game(gid, g.unit, g.sides, g.places)
    for s in range(case.singles):
        opponents = rng.sample(names, case.sides * (2 if case.sides == 2 else 1))
        lone = f"lone{s}"
        if case.sides == 3:
            sides = ((lone,), (opponents[0],), (opponents[1],))
            places = rng.choice([(1, 2, 3), (3, 1, 2), (2, 2, 1), (1, 1, 3)])
        else:
            sides = ((lone, opponents[0]), (opponents[1], opponents[2]))
            places = rng.choice([(1, 2), (2, 1), (1, 1)])
        games.append(Game(f"one-{s}", rng.choice(["", f"board-{rng.randint(1, board)}"]),
                          sides, places))
    for _ in range(case.repeats):
        games.append(rng.choice(games))
    rng.shuffle(games)
    return games


CASES = (
    Case(1),
    Case(2, boards="none"),
    Case(3, boards="all"),
    Case(4, ties=False, boards="all"),
    Case(5, house=True),
    Case(6, house=True, boards="all", singles=2),
    Case(7, singles=3, repeats=10),
    Case(8, bots=14, games=300, boards="all"),
    Case(9, bots=5, games=40),
    Case(10, bots=3, games=25, boards="all"),
    Case(11, sides=2),
    Case(12, sides=2, boards="none"),
    Case(13, sides=2, boards="all"),
    Case(14, sides=2, house=True, boards="all"),
    Case(15, sides=2, ties=False, singles=2, repeats=5),
    Case(16, sides=2, bots=12, games=300, boards="all", house=True),
    Case(17, sides=2, bots=4, games=30),
    Case(18, bots=12, games=200, boards="all", house=True, singles=1, repeats=3),
    Case(19, bots=10, games=60, boards="some", ties=False),
    Case(20, sides=2, bots=8, games=80, boards="some", house=True, singles=1),
    Case(21, luck=0.0, singles=1),
    Case(22, sides=2, luck=0.0, boards="all", house=True),
    Case(23, bots=20, games=400, boards="all", ties=False, luck=3.0),
    Case(24, sides=2, bots=10, games=200, boards="all", luck=3.0, singles=2),
)


def lucky(seed: int, bots: int, boards: int, sides: int, skill: float) -> list[Game]:
    """Bots on boards of disjoint tables whose seat positions share a luck -log(2 Z^2), as
    in bench/ratings.py, so that the fit estimates a board luck."""
    rng = random.Random(seed)
    names = [f"b{i:02d}" for i in range(bots)]
    strength = {n: rng.gauss(0, skill) for n in names}
    per_table = 3 if sides == 3 else 4
    games: list[Game] = []
    for b in range(boards):
        order = names[:]
        rng.shuffle(order)
        luck = [-math.log(2 * rng.gauss(0, 1) ** 2 + 1e-300) for _ in range(sides)]
        for t in range(bots // per_table):
            table = order[t * per_table:(t + 1) * per_table]
            if sides == 3:
                side_list: tuple[tuple[str, ...], ...] = tuple((x,) for x in table)
            else:
                side_list = ((table[0], table[2]), (table[1], table[3]))
            gumbel = [-math.log(-math.log(rng.random() or 1e-300)) for _ in side_list]
            u = [2 * sum(strength[x] for x in s) / len(s) + luck[p] + gumbel[p]
                 for p, s in enumerate(side_list)]
            places = tuple(1 + sum(q > x for q in u) for x in u)
            games.append(Game(f"g{b:03d}-{t}", f"board{b:03d}", side_list, places))
    return games


def extra_pools() -> list[tuple[str, list[Game]]]:
    """Pools of the shapes the luck tests and the benchmark fit."""
    return [
        ("lucky-3p-equal", lucky(1, 15, 40, 3, 0.0)),
        ("lucky-3p-skill", lucky(2, 15, 40, 3, 0.8)),
        ("lucky-2v2-skill", lucky(3, 16, 40, 2, 0.8)),
        ("lucky-3p-big", lucky(4, 30, 60, 3, 0.5)),
    ]


POOL_FIELDS = ("bots", "units", "slot_bot", "slot_weight", "slot_side", "unit_of", "pattern_of",
               "patterns", "played", "seat_of", "boards", "board_of", "lucky", "luck_of",
               "pair_index")


def digest(value: Any) -> str:
    """A digest of an array (dtype, shape and bytes) or of a tuple of strings."""
    h = hashlib.sha256()
    if isinstance(value, np.ndarray):
        h.update(f"{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    else:
        h.update(json.dumps(value).encode())
    return h.hexdigest()[:24]
