"""Who may sit where in one match: pure validation of MatchSpec."""

from __future__ import annotations

import pytest

from store.errors import InvalidArgument
from store.records import MatchSpec


def _spec(players: int, bots: list[str]) -> MatchSpec:
    return MatchSpec.build(match_id="m-1", players=players, bot_ids=bots, seat_names=bots,
                           rules={}, seed=1)


@pytest.mark.parametrize(("players", "bots", "field"), [
    (3, ["a", "a", "b"], "bot_ids[1]"),
    (3, ["a", "b", "a"], "bot_ids[2]"),
    (4, ["a", "a", "b", "b"], "bot_ids[1]"),
    (4, ["a", "b", "c", "a"], "bot_ids[3]"),
])
def test_a_bot_may_not_play_against_itself(players: int, bots: list[str], field: str) -> None:
    with pytest.raises(InvalidArgument, match=rf"^{field.replace('[', '.').replace(']', '.')}"):
        _spec(players, bots)


@pytest.mark.parametrize("bots", [["a", "b", "a", "b"], ["a", "b", "a", "c"], ["a", "b", "c", "d"]])
def test_a_2v2_bot_may_play_both_seats_of_its_team(bots: list[str]) -> None:
    assert _spec(4, bots).bot_ids == tuple(bots)


def test_a_stored_match_from_before_the_rule_still_loads() -> None:
    legal = _spec(4, ["a", "b", "c", "d"])
    old = legal.to_json().replace('"bot_ids":["a","b","c","d"]', '"bot_ids":["a","a","b","b"]')
    assert '"a","a"' in old
    assert MatchSpec.from_json(old).bot_ids == ("a", "a", "b", "b")
