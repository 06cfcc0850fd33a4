"""Tiles of a double-six set: values, indices, parsing, masks; and action ids and labels."""

from __future__ import annotations

import pytest

from moon import ALL_TILES, Action, ActionKind, ParseError, Tile
from moon.tiles import mask_of, tiles_of


def test_double_six_set_has_28_distinct_tiles() -> None:
    pairs = {(a, b) for a in range(7) for b in range(7) if b <= a}
    assert len(ALL_TILES) == 28
    assert {(t.high, t.low) for t in ALL_TILES} == pairs


@pytest.mark.parametrize(("text", "index"), [("0-0", 0), ("1-0", 1), ("1-1", 2), ("2-0", 3),
                                              ("3-2", 8), ("6-4", 25), ("6-5", 26), ("6-6", 27)])
def test_documented_indices(text: str, index: int) -> None:
    # actions.py documents the index as high*(high+1)/2 + low.
    t = Tile.parse(text)
    assert t.index == index
    assert ALL_TILES[index] == t


def test_indices_are_0_to_27_in_table_order() -> None:
    assert [t.index for t in ALL_TILES] == list(range(28))


@pytest.mark.parametrize("tile", ALL_TILES, ids=str)
def test_print_and_parse_round_trip(tile: Tile) -> None:
    text = str(tile)
    assert text == f"{tile.high}-{tile.low}"
    assert int(text[0]) >= int(text[2]), "a tile prints high end first"
    assert Tile.parse(text) == tile
    assert Tile.parse(f"{tile.low}-{tile.high}") == tile
    assert Tile.parse(f"  {text} ") == tile


@pytest.mark.parametrize("bad", ["", "6", "64", "6-", "-4", "7-1", "6-7", "6_4", "a-b",
                                 "6-4-1", "-1-2", "10-1", "6 - 4x"])
def test_parse_rejects_non_tiles(bad: str) -> None:
    with pytest.raises(ParseError):
        Tile.parse(bad)


@pytest.mark.parametrize(("high", "low"), [(2, 5), (7, 0), (0, -1), (-1, -1)])
def test_constructor_rejects_non_tiles(high: int, low: int) -> None:
    with pytest.raises(ParseError):
        Tile(high, low)


def test_doubles_and_ends() -> None:
    assert [str(t) for t in ALL_TILES if t.is_double] == [f"{n}-{n}" for n in range(7)]
    t = Tile.parse("5-3")
    assert t.has(5) and t.has(3)
    assert not any(t.has(n) for n in (0, 1, 2, 4, 6))


def test_mask_round_trip_and_highest_first() -> None:
    tiles = [Tile.parse(x) for x in ("0-0", "6-6", "3-1", "6-4", "5-5", "2-0")]
    m = mask_of(tiles)
    assert m == mask_of(t.index for t in tiles)
    assert m.bit_count() == 6
    assert [str(t) for t in tiles_of(m)] == ["6-6", "6-4", "5-5", "3-1", "2-0", "0-0"]
    assert tiles_of(0) == ()
    assert tiles_of((1 << 28) - 1) == tuple(reversed(ALL_TILES))


def test_tiles_order_by_high_then_low() -> None:
    assert Tile.parse("6-0") > Tile.parse("5-5") > Tile.parse("5-4")


# ------------------------------------------------------------------ actions

_DOCUMENTED = [
    (0, ActionKind.PASS, "pass"),
    (3, ActionKind.BID, "bid 3"),
    (5, ActionKind.BID, "bid 5"),
    (7, ActionKind.BID, "bid 7"),
    (21, ActionKind.BID, "bid 21"),
    (30, ActionKind.TRUMP, "trump 0"),
    (36, ActionKind.TRUMP, "trump 6"),
    (37, ActionKind.TRUMP, "trump doubles"),
    (38, ActionKind.TRUMP, "trump none"),
    (40, ActionKind.DISCARD, "discard 0-0"),
    (40 + 25, ActionKind.DISCARD, "discard 6-4"),
    (67, ActionKind.DISCARD, "discard 6-6"),
    (70, ActionKind.PLAY, "play 0-0"),
    (70 + 25, ActionKind.PLAY, "play 6-4"),
    (97, ActionKind.PLAY, "play 6-6"),
]


@pytest.mark.parametrize(("aid", "kind", "label"), _DOCUMENTED)
def test_action_ids_and_labels_are_the_documented_ones(aid: int, kind: ActionKind,
                                                       label: str) -> None:
    a = Action.from_id(aid)
    assert (a.id, a.kind, a.label, str(a)) == (aid, kind, label, label)
    assert Action.parse(label) == a
    assert Action.parse(label.upper().replace(" ", "   ")) == a


def test_every_action_id_round_trips_through_its_label() -> None:
    ids = [0, 3, 4, 5, 6, 7, 21, *range(30, 39), *range(40, 68), *range(70, 98)]
    for aid in ids:
        a = Action.from_id(aid)
        assert Action.parse(a.label).id == aid
    assert len({Action.from_id(i).label for i in ids}) == len(ids)


def test_action_constructors() -> None:
    t = Tile.parse("6-4")
    assert Action.play(t).id == 95 and Action.play(t).tile == t
    assert Action.discard(t).id == 65 and Action.discard(t).tile == t
    assert Action.bid(21).id == 21
    assert Action.trump(7).label == "trump doubles"
    assert Action.parse("play 4-6") == Action.play(t)
    assert Action.parse("trump follow me").label == "trump none"


@pytest.mark.parametrize("aid", [1, 2, 8, 20, 22, 29, 39, 68, 69, 98, -1])
def test_unknown_action_ids(aid: int) -> None:
    with pytest.raises(ParseError):
        Action.from_id(aid)


@pytest.mark.parametrize("label", ["bid 8", "bid 2", "play 7-7", "trump 7", "discard", "fold",
                                   ""])
def test_unknown_action_labels(label: str) -> None:
    with pytest.raises(ParseError):
        Action.parse(label)


def test_bids_outside_3_to_7_and_21_are_not_actions() -> None:
    for n in (0, 1, 2, 8, 20, 22):
        with pytest.raises(ParseError):
            Action.bid(n)
    with pytest.raises(ParseError):
        _ = Action.bid(5).tile
