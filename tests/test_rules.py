"""Rules options (RULES.md variants table): defaults, parsing, and clear errors."""

from __future__ import annotations

import pytest

from moon import MoonError, Rules, RulesError

OPTIONS = ["target", "min_bid", "all_pass", "double_blank", "trump_before_widow", "scoring",
           "marks_target", "moon_wins", "max_hands"]


def test_defaults_are_those_of_rules_md() -> None:
    r = Rules()
    assert r == Rules.make() == Rules.make(3, {})
    assert r.options() == {
        "target": 21, "min_bid": 4, "all_pass": "redeal", "double_blank": True,
        "trump_before_widow": False, "scoring": "points", "marks_target": 7,
        "moon_wins": False, "max_hands": 100,
    }
    # The transcript writes the options in this order (moon-transcript/1).
    assert list(r.options()) == OPTIONS
    assert r.players == 3 and r.has_widow and not r.teams
    four = Rules.make(4)
    assert four.teams and not four.has_widow and four.options() == r.options()


def test_no_double_blank_has_no_widow() -> None:
    r = Rules.make(3, {"double_blank": False})
    assert not r.has_widow


@pytest.mark.parametrize(("name", "raw", "value"), [
    ("target", "30", 30), ("target", 1, 1), ("target", " 1000 ", 1000),
    ("min_bid", "3", 3), ("min_bid", 5, 5),
    ("all_pass", "forced", "forced"), ("all_pass", " Redeal ", "redeal"),
    ("double_blank", "false", False), ("double_blank", "off", False), ("double_blank", "0", False),
    ("double_blank", "no", False), ("double_blank", True, True),
    ("trump_before_widow", "true", True), ("trump_before_widow", "YES", True),
    ("trump_before_widow", "on", True), ("trump_before_widow", "1", True),
    ("scoring", "marks", "marks"), ("marks_target", "3", 3),
    ("moon_wins", "true", True), ("max_hands", "1", 1), ("max_hands", 100000, 100000),
])
def test_option_values_are_parsed(name: str, raw: object, value: object) -> None:
    r = Rules.make(3, {name: raw})
    got = getattr(r, name)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize(("name", "raw", "allowed"), [
    ("min_bid", 6, "3, 4, 5"), ("min_bid", "2", "3, 4, 5"), ("min_bid", "four", "3, 4, 5"),
    ("all_pass", "pass", "redeal, forced"), ("scoring", "elo", "points, marks"),
    ("double_blank", "maybe", "true or false"), ("moon_wins", 2, "true or false"),
    ("trump_before_widow", None, "true or false"),
    ("target", 0, "an integer from 1 to 1000"), ("target", "21.5", "an integer from 1 to 1000"),
    ("target", True, "an integer from 1 to 1000"), ("target", 21.0, "an integer from 1 to 1000"),
    ("marks_target", 0, "an integer from 1 to 100"),
    ("max_hands", 0, "an integer from 1 to 100000"), ("max_hands", -5, "an integer from 1"),
])
def test_bad_values_are_errors_that_list_what_is_allowed(name: str, raw: object,
                                                          allowed: str) -> None:
    with pytest.raises(RulesError) as exc:
        Rules.make(3, {name: raw})
    msg = str(exc.value)
    assert name in msg and allowed in msg and "\n" not in msg


def test_unknown_option_lists_every_option() -> None:
    with pytest.raises(RulesError) as exc:
        Rules.make(3, {"trumps": "6"})
    msg = str(exc.value)
    assert "'trumps'" in msg
    for name in OPTIONS:
        assert name in msg


@pytest.mark.parametrize("players", [0, 2, 5, "3", True, None])
def test_bad_player_count(players: object) -> None:
    with pytest.raises(RulesError, match="3 or 4"):
        Rules.make(players, {})  # type: ignore[arg-type]


def test_double_blank_false_is_a_three_player_option() -> None:
    with pytest.raises(RulesError, match="double_blank"):
        Rules.make(4, {"double_blank": False})
    with pytest.raises(RulesError, match="double_blank"):
        Rules(players=4, double_blank=False)


@pytest.mark.parametrize(("players", "options"), [
    (4, {"trump_before_widow": True}),
    (3, {"trump_before_widow": True, "double_blank": False}),
])
def test_trump_before_widow_needs_a_widow(players: int, options: dict[str, object]) -> None:
    with pytest.raises(RulesError, match="widow"):
        Rules.make(players, options)


def test_direct_construction_is_validated_too() -> None:
    with pytest.raises(RulesError):
        Rules(min_bid="4")  # type: ignore[arg-type]
    with pytest.raises(RulesError):
        Rules(target=True)  # a bool is not a score
    with pytest.raises(RulesError):
        Rules(all_pass="Forced")  # the canonical spelling only
    with pytest.raises(RulesError):
        Rules().replace(max_hands=0)
    assert Rules().replace(max_hands=3).max_hands == 3


def test_parse_assignments() -> None:
    r = Rules.parse_assignments(3, ["min_bid=5", " moon_wins = true", "target=31"])
    assert (r.min_bid, r.moon_wins, r.target) == (5, True, 31)
    assert Rules.parse_assignments(4, []) == Rules.make(4)
    for bad in (["min_bid"], ["=5"], ["min_bid:5"]):
        with pytest.raises(RulesError):
            Rules.parse_assignments(3, bad)


def test_rules_errors_are_moon_errors_and_value_errors() -> None:
    with pytest.raises(MoonError):
        Rules.make(3, {"min_bid": 9})
    with pytest.raises(ValueError, match="min_bid"):
        Rules.make(3, {"min_bid": 9})


def test_rules_are_frozen_values() -> None:
    r = Rules.make(3, {"min_bid": 5})
    assert r == Rules.make(3, {"min_bid": "5"})
    assert hash(r) == hash(Rules.make(3, {"min_bid": "5"}))
    with pytest.raises(AttributeError):
        r.min_bid = 4  # type: ignore[misc]
