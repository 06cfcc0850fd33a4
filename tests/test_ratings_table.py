"""The fit against its recorded results: random pools of every shape (3p and 2v2, boards
or none, ties, a house bot on several sides, bots with one game, repeats), packed bit for
bit as before and fitted to the same figures (tests/golden/rating_fits.json, recorded
by scripts/record_rating_fits.py before the columnar fit)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rating_pools import CASES, POOL_FIELDS, digest, extra_pools, make

import ratings.table as table_module
from ratings import Fit, Game, GameTable, RatingError, canonical, fit, fit_table, games_from_rows
from ratings.games import game_order
from ratings.model import pack
from ratings.table import natural_order

GOLDEN = json.loads((Path(__file__).parent / "golden" / "rating_fits.json").read_text())
POOLS: list[tuple[str, list[Game]]] = [(c.name, make(c)) for c in CASES] + extra_pools()
# How far today's figures may be from the converged record: the ratings, intervals and
# LOS within 1e-9 (Elo), the covariance (Elo^2) within 1e-12 of its largest entry. From
# the record of the fit as it shipped (its luck sd stopped within 1e-6 in log tau^2):
# within 1e-4 Elo.
ELO_TOL = 1e-9
CI_TOL = 1e-9
COV_TOL = 1e-12
SHIPPED_TOL = 1e-4

def _digests(games: list[Game]) -> dict[str, str]:
    pool = pack(canonical(games))
    return {name: digest(getattr(pool, name)) for name in POOL_FIELDS}


@pytest.mark.parametrize(("name", "games"), POOLS, ids=[p[0] for p in POOLS])
def test_the_pool_packs_as_recorded(name: str, games: list[Game]) -> None:
    assert _digests(games) == GOLDEN["cases"][name]["pool"]


def _close(got: Any, want: Any, tol: float) -> bool:
    return bool(np.allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float),
                            rtol=0.0, atol=tol))


def _same_figures(got: Fit, want: dict[str, Any], tol: float, ci_tol: float,
                  cov_tol: float | None) -> None:
    assert [r.bot_id for r in got.ratings] == [r[0] for r in want["ratings"]]
    assert [r.games for r in got.ratings] == [r[4] for r in want["ratings"]]
    assert _close([r.rating for r in got.ratings], [r[1] for r in want["ratings"]], tol)
    assert _close([got.luck_sd, got.gain], [want["luck_sd"], want["gain"]], tol)
    values = [[r.ci_low, r.ci_high] for r in got.ratings]
    assert _close(values, [r[2:4] for r in want["ratings"]], ci_tol)
    nxt = [r.los_next for r in got.ratings]
    assert nxt[-1] is None and want["ratings"][-1][5] is None
    assert _close(nxt[:-1], [r[5] for r in want["ratings"]][:-1], ci_tol)
    if cov_tol is not None:
        scale = float(np.abs(want["covariance"]).max())
        assert _close(got.covariance.ravel(), want["covariance"], cov_tol * scale)


@pytest.mark.parametrize(("name", "games"), POOLS, ids=[p[0] for p in POOLS])
def test_the_fit_gives_the_recorded_figures(name: str, games: list[Game]) -> None:
    want = GOLDEN["cases"][name]
    got = fit(games)
    assert (got.method, got.games, got.units, got.dof) == (
        want["method"], want["games"], want["units"], want["dof"])
    _same_figures(got, want["converged"], ELO_TOL, CI_TOL, COV_TOL)
    _same_figures(got, want["shipped"], SHIPPED_TOL, SHIPPED_TOL, None)


# --- the columnar input ------------------------------------------------------------


def _columns(games: list[Game]) -> GameTable:
    """The table a reader would build: result rows' columns, bots as small integers in an
    order of its own (ids reversed), unit labels with "" for none."""
    rows = [games_from_rows([row])[0] for row in map(_row, games)]
    assert rows == games  # a row reads back as the game it came from
    names = sorted({b for g in games for b in g.bots}, reverse=True)
    code = {b: i for i, b in enumerate(names)}
    seats = 3 if len(games[0].sides) == 3 else 4
    seat_bot = np.array([[code[b] for b in _row(g)["bot_ids"]] for g in games]).reshape(-1, seats)
    place = np.array([_row(g)["placement"] for g in games]).reshape(-1, seats)
    return GameTable.of([g.game_id for g in games], [g.unit for g in games],
                        seat_bot.astype(np.int32), place.astype(np.int16), names)


def _row(g: Game) -> dict[str, Any]:
    """A result row of a game (`games_from_rows`' input)."""
    if len(g.sides) == 3:
        bots, places = [s[0] for s in g.sides], list(g.places)
    else:
        bots = [g.sides[0][0], g.sides[1][0], g.sides[0][-1], g.sides[1][-1]]
        places = [g.places[0], g.places[1]] * 2
    return {"match_id": g.game_id, "bot_ids": bots, "players": len(bots),
            "placement": places, "board": g.unit or None}


def _same_fit(a: Fit, b: Fit) -> None:
    """Every figure of two fits, to the last bit."""
    assert (a.method, a.games, a.units, a.level, a.dof, a.luck_sd, a.gain) == (
        b.method, b.games, b.units, b.level, b.dof, b.luck_sd, b.gain)
    assert a.ratings == b.ratings
    assert np.array_equal(a.covariance, b.covariance)


@pytest.mark.parametrize(("name", "games"), POOLS, ids=[p[0] for p in POOLS])
def test_a_table_of_columns_fits_as_the_games_to_the_last_bit(
        name: str, games: list[Game]) -> None:
    table = _columns(games)
    assert len(table) == len(games) and table.sides == len(games[0].sides)
    assert _digests(list(table.games())) == GOLDEN["cases"][name]["pool"]
    _same_fit(fit_table(table), fit(games))
    # Rows in another order, a repeat of some of them: the same set, the same fit.
    rng = np.random.default_rng(len(games))
    rows = np.concatenate([rng.permutation(len(table)), rng.integers(0, len(table), 7)])
    _same_fit(fit_table(table.take(rows)), fit(games))


@pytest.mark.parametrize("chunk", [1 << 16, 7], ids=["whole", "in-runs-of-7"])
def test_natural_order_is_game_order(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Runs of 7 ids: keys of different widths, joined (a million ids are keyed in runs).
    monkeypatch.setattr(table_module, "_KEY_CHUNK", chunk)
    rng = np.random.default_rng(5)
    alphabet = list("ab0123456789-/_zZ")
    for _ in range(200):
        ids = ["".join(rng.choice(alphabet, size=rng.integers(1, 13)))
               for _ in range(rng.integers(1, 60))]
        ids += [ids[i] for i in rng.integers(0, len(ids), 5)]
        want = sorted(range(len(ids)), key=lambda i: game_order(ids[i]))
        assert natural_order(ids).tolist() == want  # stable: a repeat keeps its place
    # Leading zeros (equal numbers, raw order decides), long numbers, beyond ASCII.
    ids = ["a0b", "a00b", "a1", "ab", "a", "a-1", "a01", "10", "9", "009x", "x9y10", "x9y9",
           "n" + "9" * 30, "n1" + "0" * 30, "g\u0663", "g2", "g\u00e9", "ge"]
    want = sorted(range(len(ids)), key=lambda i: game_order(ids[i]))
    assert natural_order(ids).tolist() == want
    assert natural_order(ids[:-4]).tolist() == sorted(range(len(ids) - 4),
                                                       key=lambda i: game_order(ids[i]))
    # Ids of one shape (digits in the same places) take a shortcut: the plain order.
    ids = [f"{rng.choice(list('xy'))}{rng.integers(0, 100):02d}-{rng.integers(0, 10)}"
           for _ in range(300)]
    want = sorted(range(len(ids)), key=lambda i: game_order(ids[i]))
    assert natural_order(ids).tolist() == want


def test_a_table_keeps_a_repeat_once_and_refuses_two_games_under_one_id() -> None:
    table = GameTable.of(["g2", "g10", "g2", "g1"], ["b", "b", "b", ""],
                         [[0, 1, 2], [1, 2, 3], [0, 1, 2], [3, 2, 1]],
                         [[1, 2, 3], [1, 1, 3], [1, 2, 3], [3, 2, 1]], ["a", "b", "c", "d"],
                         at=[5.0, 6.0, 7.0, np.nan])
    assert table.canonical_rows().tolist() == [3, 0, 1]
    assert [g.game_id for g in table.take(table.canonical_rows()).games()] == ["g1", "g2", "g10"]
    assert [g.at for g in table.games()] == [5.0, 6.0, 7.0, None]
    clash = table.take([0, 1, 2, 3, 1])
    object.__setattr__(clash, "place", np.array([[1, 2, 3], [1, 1, 3], [1, 2, 3], [3, 2, 1],
                                                 [1, 2, 3]]))
    with pytest.raises(RatingError, match="two different games under id 'g10'"):
        clash.canonical_rows()


def test_a_2v2_table_reads_seats_as_teams() -> None:
    # Seats 0 and 2 are team 0; a bot holding both seats of its team is a side of one.
    table = GameTable.of(["m1", "m2"], ["d", "d"], [[0, 1, 2, 3], [0, 1, 0, 2]],
                         [[2, 1, 2, 1], [1, 1, 1, 1]], ["a", "b", "c", "d"])
    assert table.sides == 2
    assert [(g.sides, g.places) for g in table.games()] == [
        ((("a", "c"), ("b", "d")), (2, 1)), ((("a",), ("b", "c")), (1, 1))]
    _same_fit(fit_table(table), fit(table.games()))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"place": [[1, 3, 3]]}, "competition ranking"),
        ({"place": [[0, 1, 2]]}, "competition ranking"),
        ({"seat_bot": [[0, 1, 5]]}, "index the 3 bot ids"),
        ({"seat_bot": [[0.0, 1.0, 2.0]]}, "must be integers"),
        ({"unit": [1]}, "-1 or index 1 unit labels"),
        ({"game_id": [""]}, "non-empty"),
        ({"game_id": ["g\x001"]}, "NUL"),
        ({"bots": ("a", "a", "c")}, "distinct"),
        ({"bots": ("a", "", "c")}, "non-empty"),
        ({"units": ("",)}, "non-empty"),
        ({"seat_bot": [[0, 1]], "place": [[1, 2]]}, "games x 3"),
        ({"game_id": ["g1", "g2"]}, "2 game ids need"),
        ({"at": [1.0, 2.0]}, "one time per game"),
        ({"seat_bot": [[0, 1, 2, 0]], "place": [[1, 2, 2, 2]]}, "seats of a team"),
    ],
)
def test_a_bad_table_raises(change: dict[str, Any], message: str) -> None:
    fields: dict[str, Any] = {"game_id": ["g1"], "unit": [0], "seat_bot": [[0, 1, 2]],
                              "place": [[1, 2, 3]], "bots": ("a", "b", "c"), "units": ("u",)}
    with pytest.raises(RatingError, match=message):
        GameTable(**(fields | change))


def test_a_table_is_its_own_copy_and_read_only() -> None:
    seats = np.array([[0, 1, 2]])
    table = GameTable(np.array(["g1"]), np.array([-1]), seats, np.array([[1, 2, 3]]),
                      ("a", "b", "c"))
    seats[0, 0] = 2
    assert table.seat_bot.tolist() == [[0, 1, 2]]
    with pytest.raises(ValueError, match="read-only"):
        table.seat_bot[0, 0] = 1


def test_empty_and_mixed() -> None:
    empty = fit_table(GameTable(np.zeros(0, str), np.zeros(0, int), np.zeros((0, 3), int),
                                np.zeros((0, 3), int), ()))
    assert (empty.games, empty.ratings) == (0, ())
    with pytest.raises(RatingError, match="mix"):
        GameTable.from_games([Game("a", "", (("x",), ("y",), ("z",)), (1, 2, 3)),
                              Game("b", "", (("x",), ("y",)), (1, 2))])


def test_a_table_from_a_sql_cursor_as_the_module_doc_reads_one() -> None:
    games = make(CASES[0])
    bot_ids = sorted({b for g in games for b in g.bots})
    code = {b: i for i, b in enumerate(bot_ids)}
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE games (match_id TEXT, board TEXT, bot0 INT, bot1 INT, bot2 INT,"
               " place0 INT, place1 INT, place2 INT)")
    db.executemany("INSERT INTO games VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   [(g.game_id, g.unit, *(code[s[0]] for s in g.sides), *g.places)
                    for g in games])
    cursor = db.execute("SELECT * FROM games")
    ids, boards, *seats = zip(*cursor.fetchall(), strict=True)
    table = GameTable.of(ids, boards, np.column_stack(seats[:3]),
                         np.column_stack(seats[3:]), bot_ids)
    _same_fit(fit_table(table), fit(games))


@pytest.mark.parametrize(("name", "games"), POOLS[:8], ids=[p[0] for p in POOLS[:8]])
def test_tables_joined_fit_as_one_table_of_all_their_games(
        name: str, games: list[Game]) -> None:
    """The fit job joins the archive's columns and what Redis holds: the join of two
    tables (their bots and boards named apart) is the pool of all their games."""
    half = len(games) // 2
    a, b = GameTable.from_games(games[:half]), GameTable.from_games(games[half:][::-1])
    joined = GameTable.concat([a, b, GameTable.from_games([])])
    assert joined.games() == tuple(games[:half]) + tuple(games[half:][::-1])
    _same_fit(fit_table(joined), fit(games))


def test_tables_of_3p_and_2v2_games_do_not_join() -> None:
    three = GameTable.from_games([Game("g1", "", (("a",), ("b",), ("c",)), (1, 2, 3))])
    teams = GameTable.from_games([Game("g2", "", (("a", "b"), ("c", "d")), (1, 2))])
    with pytest.raises(RatingError, match="do not join"):
        GameTable.concat([three, teams])
