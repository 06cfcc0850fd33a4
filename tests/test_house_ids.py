"""House bot ids: parsed, canonicalised, and refused with a message naming what is wrong."""

from __future__ import annotations

import pytest

from bots import BOTS, GreedyPlayer, HouseBotError, PimcPlayer, RandomPlayer, is_house, parse
from bots.pimc import DEFAULT_SAMPLES, DEFAULT_SOLVE


def test_every_house_bot_parses_to_one_canonical_id() -> None:
    assert parse("house:random").id == "house:random"
    assert parse("house:greedy").id == "house:greedy"
    full = f"house:pimc?samples={DEFAULT_SAMPLES}&solve={DEFAULT_SOLVE}"
    # Defaults spelled out or not, options in any order: one bot, one id.
    for spelling in ("house:pimc", f"house:pimc?samples={DEFAULT_SAMPLES}",
                     f"house:pimc?solve={DEFAULT_SOLVE}&samples={DEFAULT_SAMPLES}", full,
                     f"house:pimc?samples=0{DEFAULT_SAMPLES}"):
        assert parse(spelling).id == full
    assert parse("house:pimc?samples=64").id == f"house:pimc?samples=64&solve={DEFAULT_SOLVE}"
    assert parse("house:pimc?solve=0&samples=8").id == "house:pimc?samples=8&solve=0"
    # The canonical id parses to itself.
    for bot_id in ("house:random", "house:pimc?samples=8&solve=0"):
        assert parse(parse(bot_id).id).id == parse(bot_id).id
    assert set(BOTS) == {"random", "greedy", "pimc"}


def test_a_house_id_builds_its_player() -> None:
    assert parse("house:random").player() == RandomPlayer()
    assert parse("house:greedy").player() == GreedyPlayer()
    assert parse("house:pimc?samples=9&solve=2").player() == PimcPlayer(samples=9, solve=2)
    assert parse("house:pimc").player() == PimcPlayer()


@pytest.mark.parametrize(("bot_id", "names"), [
    ("house:foo", ["'foo'", "house:pimc"]),
    ("house:", ["''", "house:random"]),
    ("house:PIMC", ["'PIMC'"]),
    ("house:pimc?depth=3", ["'depth'", "samples, solve"]),
    ("house:random?samples=4", ["'random'", "'samples'", "none"]),
    ("house:pimc?samples=0", ["samples='0'", "out of range", "1 to 256"]),
    ("house:pimc?samples=257", ["samples='257'", "out of range"]),
    ("house:pimc?samples=-4", ["samples='-4'", "not an integer"]),
    ("house:pimc?samples=1e3", ["samples='1e3'", "not an integer"]),
    ("house:pimc?samples= 8", ["samples=' 8'", "not an integer"]),
    ("house:pimc?samples=99999999999999999999", ["not an integer"]),
    ("house:pimc?solve=4", ["solve='4'", "0 to 3"]),
    ("house:pimc?samples=8&samples=9", ["'samples'", "twice"]),
    ("house:pimc?", ["bad option ''"]),
    ("house:pimc?samples", ["bad option 'samples'", "OPTION=VALUE"]),
    ("house:pimc?=8", ["bad option '=8'"]),
    ("house:pimc?samples=8&", ["bad option ''"]),
    ("greedy", ["not a house bot id", "'greedy'"]),
    ("HOUSE:pimc", ["not a house bot id", "lower case"]),
    ("house:pimc?" + "samples=1&" * 30, ["characters long", "200"]),
])
def test_bad_ids_are_refused_naming_the_problem(bot_id: str, names: list[str]) -> None:
    with pytest.raises(HouseBotError) as err:
        parse(bot_id)
    assert isinstance(err.value, ValueError)  # the gateway maps it to INVALID_ARGUMENT
    for name in names:
        assert name in str(err.value), (bot_id, str(err.value))


def test_a_non_string_is_refused() -> None:
    with pytest.raises(HouseBotError):
        parse(7)  # type: ignore[arg-type]


def test_the_house_prefix_is_recognised_in_any_case() -> None:
    # A user may not register "House:Greedy" either: the referee asks is_house.
    assert is_house("house:greedy") and is_house("House:Greedy") and is_house("HOUSE:")
    assert not is_house("greedy") and not is_house("houses:x") and not is_house("")
