"""moon-transcript/1: shape, replay, tamper detection, and the .jsonl helpers.

`assert_transcript_shape` pins the format of issue 2 field by field; the golden
and CLI tests import it from here.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_engine_properties import choose, pass_biases, rules_st, seeds

from clients.builtin import GreedyBot, RandomBot
from clients.selfplay import bot_seed, play_game
from moon import GameState, Rules, Tile, TranscriptError
from moon.transcript import FORMAT, actions_of, read_jsonl, replay, transcript, write_jsonl

# --------------------------------------------------------------- transcript shape

_TOP = {"format", "players", "seed", "rules", "seats", "hands", "final", "winner", "end"}
_RULES = ["target", "min_bid", "all_pass", "double_blank", "trump_before_widow", "scoring",
          "marks_target", "moon_wins", "max_hands"]
_HAND = {"first_bidder", "deal", "widow", "bids", "bidder", "bid", "trump", "discard",
         "tricks", "tricks_won", "made", "points", "scores"}
_TRUMPS = {"0", "1", "2", "3", "4", "5", "6", "doubles", "none"}


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _tile_text(x: object) -> Tile:
    """A tile written high end first, as the format requires."""
    assert isinstance(x, str), x
    t = Tile.parse(x)
    assert str(t) == x, f"tile {x!r} is not written high end first"
    return t


def assert_transcript_shape(rec: dict[str, Any]) -> None:
    """Fail unless `rec` has exactly the moon-transcript/1 shape of issue 2."""
    assert set(rec) == _TOP, sorted(set(rec) ^ _TOP)
    assert rec["format"] == "moon-transcript/1"
    n = rec["players"]
    assert n in (3, 4) and _is_int(n)
    sides = 2 if n == 4 else 3
    assert _is_int(rec["seed"]) and rec["seed"] >= 0
    assert list(rec["rules"]) == _RULES
    assert rec["rules"]["all_pass"] in ("redeal", "forced")
    assert rec["rules"]["scoring"] in ("points", "marks")
    for key in ("double_blank", "trump_before_widow", "moon_wins"):
        assert isinstance(rec["rules"][key], bool)
    for key in ("target", "min_bid", "marks_target", "max_hands"):
        assert _is_int(rec["rules"][key])
    assert isinstance(rec["seats"], list) and len(rec["seats"]) == n
    assert all(isinstance(s, str) for s in rec["seats"])
    has_widow = n == 3 and rec["rules"]["double_blank"]
    assert rec["hands"], "a finished game has at least one hand"
    for h in rec["hands"]:
        assert set(h) == _HAND, sorted(set(h) ^ _HAND)
        assert _is_int(h["first_bidder"]) and 0 <= h["first_bidder"] < n
        assert len(h["deal"]) == n
        for seat_tiles in h["deal"]:
            assert len(seat_tiles) == 7
            tiles = [_tile_text(x) for x in seat_tiles]
            assert tiles == sorted(tiles, reverse=True), "deal not sorted high end first"
        if has_widow:
            _tile_text(h["widow"])
        else:
            assert h["widow"] is None
        assert h["bids"], "everyone speaks, or a 21 ends the auction"
        for k, b in enumerate(h["bids"]):
            assert set(b) == {"seat", "bid"}
            assert b["seat"] == (h["first_bidder"] + k) % n, "bids not in speaking order"
            assert b["bid"] == "pass" or (_is_int(b["bid"]) and b["bid"] in (3, 4, 5, 6, 7, 21))
        numbers = [b["bid"] for b in h["bids"] if b["bid"] != "pass"]
        assert numbers == sorted(set(numbers)), "each bid higher than the last"
        assert 21 not in numbers or h["bids"][-1]["bid"] == 21, "21 ends the auction"
        assert len(h["bids"]) == n or h["bids"][-1]["bid"] == 21
        for key in ("tricks_won", "points", "scores"):
            assert all(_is_int(x) for x in h[key])
        assert len(h["tricks_won"]) == n
        assert len(h["points"]) == len(h["scores"]) == sides
        if h["bidder"] is None:
            assert h["bid"] is None and h["trump"] is None and h["discard"] is None
            assert h["made"] is None and h["tricks"] == []
            assert all(b["bid"] == "pass" for b in h["bids"]) and len(h["bids"]) == n
            assert h["points"] == [0] * sides and h["tricks_won"] == [0] * n
            continue
        assert _is_int(h["bidder"]) and _is_int(h["bid"])
        assert h["trump"] in _TRUMPS
        if has_widow:
            _tile_text(h["discard"])
        else:
            assert h["discard"] is None
        assert isinstance(h["made"], bool)
        assert len(h["tricks"]) == 7 and sum(h["tricks_won"]) == 7
        assert h["bid"] == numbers[-1] and h["bidder"] == next(
            b["seat"] for b in h["bids"] if b["bid"] == h["bid"])
        for trick in h["tricks"]:
            assert set(trick) == {"leader", "plays", "winner"}
            assert len(trick["plays"]) == n
            assert trick["plays"][0]["seat"] == trick["leader"]
            for k, p in enumerate(trick["plays"]):
                assert set(p) == {"seat", "tile"}
                assert p["seat"] == (trick["leader"] + k) % n
                _tile_text(p["tile"])
            assert _is_int(trick["winner"]) and 0 <= trick["winner"] < n
    running = [0] * sides
    for h in rec["hands"]:
        running = [a + b for a, b in zip(running, h["points"], strict=True)]
        assert h["scores"] == running, "scores are the cumulative points"
    assert rec["final"] == rec["hands"][-1]["scores"]
    assert rec["end"] in ("normal", "hand_limit")
    assert rec["winner"] is None or (_is_int(rec["winner"]) and 0 <= rec["winner"] < sides)
    if rec["winner"] is None:
        assert rec["end"] == "hand_limit"


# ------------------------------------------------------------------ tests

def _random_game(rules: Rules, seed: int, rng_seed: int, bias: float = 0.0) -> GameState:
    state = GameState.new(rules, seed)
    rng = random.Random(rng_seed)
    while not state.is_over:
        state.apply(choose(state, rng, bias), state.to_act)
    return state


@settings(max_examples=40, deadline=None)
@given(rules=rules_st(), seed=seeds, rng_seed=st.integers(0, 2**32), bias=pass_biases)
def test_transcripts_of_random_games_have_the_shape_and_replay(
    rules: Rules, seed: int, rng_seed: int, bias: float
) -> None:
    state = _random_game(rules, seed, rng_seed, bias)
    seats = [f"bot{i}" for i in range(rules.players)]
    rec = transcript(rules, seed, state.actions, seats)
    assert_transcript_shape(rec)
    assert (rec["players"], rec["seed"], rec["seats"]) == (rules.players, seed, seats)
    assert rec["rules"] == rules.options()
    assert (rec["final"], rec["winner"], rec["end"]) == (state.scores, state.winner, state.end)
    assert len(rec["hands"]) == state.hand_index
    assert actions_of(rec) == state.actions
    again = replay(json.loads(json.dumps(rec)))
    assert again.actions == state.actions and again.scores == state.scores


def _greedy_game(rules: Rules, seed: int) -> dict[str, Any]:
    bots = [GreedyBot(bot_seed(seed, s)) for s in range(rules.players)]
    return play_game(rules, seed, bots, ["greedy"] * rules.players)


@pytest.fixture(scope="module")
def game3() -> dict[str, Any]:
    rec = _greedy_game(Rules.make(3, {"trump_before_widow": True}), 6)
    assert any(h["bidder"] is None for h in rec["hands"])  # it has an all-pass hand
    assert any(h["bidder"] is not None for h in rec["hands"])
    return rec


def _first_played(rec: dict[str, Any]) -> dict[str, Any]:
    return next(h for h in rec["hands"] if h["bidder"] is not None)


def _swap_deal(rec: dict[str, Any]) -> None:
    h = rec["hands"][0]
    h["deal"][0][0], h["deal"][1][0] = h["deal"][1][0], h["deal"][0][0]


def _set(path: Callable[[dict[str, Any]], dict[str, Any]], key: str,
         value: object) -> Callable[[dict[str, Any]], None]:
    def tamper(rec: dict[str, Any]) -> None:
        path(rec)[key] = value
    return tamper


def _bump(path: Callable[[dict[str, Any]], Any], key: str | int,
          delta: int = 1) -> Callable[[dict[str, Any]], None]:
    def tamper(rec: dict[str, Any]) -> None:
        path(rec)[key] += delta
    return tamper


def _trick(k: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda rec: _first_played(rec)["tricks"][k]


def _swap_plays(rec: dict[str, Any]) -> None:
    plays = _first_played(rec)["tricks"][3]["plays"]
    plays[1]["tile"], plays[2]["tile"] = plays[2]["tile"], plays[1]["tile"]


def _other_trump(rec: dict[str, Any]) -> None:
    h = _first_played(rec)
    h["trump"] = "doubles" if h["trump"] != "doubles" else "none"


def _other_discard(rec: dict[str, Any]) -> None:
    h = _first_played(rec)
    h["discard"] = next(t for t in h["deal"][(h["bidder"] + 1) % 3])


def _low_end_first(rec: dict[str, Any]) -> None:
    play = next(p for t in _first_played(rec)["tricks"] for p in t["plays"]
                if not Tile.parse(p["tile"]).is_double)
    high, low = play["tile"].split("-")
    play["tile"] = f"{low}-{high}"


def _bid_changed(rec: dict[str, Any]) -> None:
    h = _first_played(rec)
    i = next(k for k, b in enumerate(h["bids"]) if b["seat"] == h["bidder"])
    h["bids"][i]["bid"] = "pass"


TAMPERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "format": _set(lambda r: r, "format", "moon-transcript/2"),
    "seed": _bump(lambda r: r, "seed"),
    "negative seed": _set(lambda r: r, "seed", -1),
    "seed as text": _set(lambda r: r, "seed", "12"),
    "players": _set(lambda r: r, "players", 4),
    "rules option": _set(lambda r: r["rules"], "min_bid", 5),
    "rules missing": _set(lambda r: r, "rules", None),
    "rules option missing": lambda r: r["rules"].pop("max_hands"),
    "rules as text": _set(lambda r: r["rules"], "min_bid", "4"),
    "rules flag as a number": _set(lambda r: r["rules"], "moon_wins", 0),
    "seats missing": lambda r: r.pop("seats"),
    "too few seats": lambda r: r["seats"].pop(),
    "deal": _swap_deal,
    "widow": _set(lambda r: r["hands"][0], "widow", "6-6"),
    "first bidder": _bump(lambda r: r["hands"][0], "first_bidder"),
    "bid": _bid_changed,
    "bidder": _bump(_first_played, "bidder"),
    "bid value": _bump(_first_played, "bid"),
    "trump": _other_trump,
    "discard": _other_discard,
    "plays swapped": _swap_plays,
    "play seat": _bump(lambda r: _trick(2)(r)["plays"][1], "seat"),
    "trick winner": _bump(_trick(5), "winner"),
    "trick leader": _bump(_trick(1), "leader"),
    "tricks_won": _bump(lambda r: _first_played(r)["tricks_won"], 0),
    "made": lambda r: _first_played(r).update(made=not _first_played(r)["made"]),
    "points": _bump(lambda r: _first_played(r)["points"], 1),
    "scores": _bump(lambda r: _first_played(r)["scores"], 2),
    "final": _bump(lambda r: r["final"], 0),
    "winner": lambda r: r.update(winner=(r["winner"] + 1) % 3),
    "no winner": _set(lambda r: r, "winner", None),
    "end": _set(lambda r: r, "end", "hand_limit"),
    "end unknown": _set(lambda r: r, "end", "forfeit"),
    "end missing": lambda r: r.pop("end"),
    "last hand dropped": lambda r: r["hands"].pop(),
    "hand repeated": lambda r: r["hands"].append(copy.deepcopy(r["hands"][-1])),
    "trick dropped": lambda r: _first_played(r)["tricks"].pop(),
    "bad tile": _set(lambda r: _trick(0)(r)["plays"][0], "tile", "7-7"),
    "tile written low end first": _low_end_first,
    "hands not a list": _set(lambda r: r, "hands", {}),
    "made as a number": lambda r: _first_played(r).update(made=int(_first_played(r)["made"])),
    "bid as text": lambda r: _first_played(r).update(bid=str(_first_played(r)["bid"])),
    "winner as text": lambda r: r.update(winner=str(r["winner"])),
    "a hand field missing": lambda r: _first_played(r).pop("tricks_won"),
}


@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_a_tampered_transcript_does_not_replay(name: str, game3: dict[str, Any]) -> None:
    replay(game3)  # the untouched transcript replays
    rec = copy.deepcopy(game3)
    TAMPERS[name](rec)
    assert json.dumps(rec) != json.dumps(game3)
    with pytest.raises(TranscriptError):
        replay(rec)


def test_not_a_transcript() -> None:
    for rec in ([], "moon", None, {"format": FORMAT}):
        with pytest.raises(TranscriptError):
            replay(rec)  # type: ignore[arg-type]


def test_added_fields_are_allowed(game3: dict[str, Any]) -> None:
    rec = copy.deepcopy(game3)
    rec["event"] = "club night"
    rec["hands"][0]["note"] = "first hand"
    replay(rec)


def test_an_unfinished_game_must_say_why_it_ended() -> None:
    rules = Rules.make(3)
    state = _random_game(rules, 3, 3)
    cut = len(state.actions) // 2
    partial = transcript(rules, 3, state.actions[:cut], ["a", "b", "c"])
    assert partial["end"] is None and partial["winner"] is None
    with pytest.raises(TranscriptError):
        replay(partial)
    forfeit = transcript(rules, 3, state.actions[:cut], ["a", "b", "c"],
                         extra={"end": "forfeit", "forfeit": 1})
    assert forfeit["end"] == "forfeit" and forfeit["forfeit"] == 1
    replay(forfeit)
    claims_normal = dict(forfeit, end="normal")
    with pytest.raises(TranscriptError):
        replay(claims_normal)


def test_seat_names_must_match_the_player_count() -> None:
    with pytest.raises(TranscriptError):
        transcript(Rules.make(4), 1, [], ["a", "b", "c"])


def test_actions_of_orders_trump_and_discard_by_the_rules() -> None:
    for tbw in (False, True):
        rules = Rules.make(3, {"trump_before_widow": tbw})
        state = _random_game(rules, 40, 1, 0.0)
        rec = transcript(rules, 40, state.actions, ["a", "b", "c"])
        assert actions_of(rec) == state.actions
        h = _first_played(rec)
        ids = actions_of(rec)
        trump_at = ids.index(30 + ["0", "1", "2", "3", "4", "5", "6", "doubles",
                                   "none"].index(h["trump"]))
        discard_at = ids.index(40 + Tile.parse(h["discard"]).index)
        assert (trump_at < discard_at) == tbw


def test_jsonl_round_trip(tmp_path: Path, game3: dict[str, Any]) -> None:
    path = tmp_path / "games.jsonl"
    other = _greedy_game(Rules.make(4, {"scoring": "marks"}), 3)
    assert write_jsonl(path, [game3]) == 1
    assert write_jsonl(path, [other]) == 1  # appends
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and all("\n" not in line for line in lines)
    assert list(read_jsonl(path)) == [game3, other]
    for rec in read_jsonl(path):
        replay(rec)


def test_read_jsonl_names_the_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"format": 1}\n\n{not json\n', encoding="utf-8")
    with pytest.raises(TranscriptError, match=r"bad\.jsonl:3"):
        list(read_jsonl(path))


def test_random_bot_games_replay() -> None:
    rules = Rules.make(3, {"double_blank": False, "all_pass": "forced"})
    bots = [RandomBot(1), GreedyBot(2), RandomBot(3)]
    rec = play_game(rules, 8, bots, ["random", "greedy", "random"])
    assert_transcript_shape(rec)
    replay(rec)


@pytest.mark.parametrize("cut_at", [1, 5, 17, 40, 61])
def test_a_forfeit_transcript_keeps_the_partial_hand(cut_at: int) -> None:
    # A forfeit can cut a game anywhere: mid-auction, before trumps, mid-trick.
    rules = Rules.make(3)
    state = _random_game(rules, 11, 5)
    cut = min(cut_at, len(state.actions) - 1)
    rec = transcript(rules, 11, state.actions[:cut], ["a", "b", "c"],
                     extra={"end": "forfeit", "forfeit": {"seat": 0, "reason": "test"},
                            "winner": 1})
    part = rec["partial_hand"]
    assert set(part) == {"first_bidder", "deal", "widow", "bids", "bidder", "bid", "trump",
                         "discard", "tricks", "tricks_won"}
    assert actions_of(rec) == state.actions[:cut]
    replay(rec)  # the adjudicated winner is not the rules' to check
    if part["tricks"]:
        bad = json.loads(json.dumps(rec))
        bad["partial_hand"]["tricks"][-1]["plays"][0]["tile"] = "0-0"
        with pytest.raises(TranscriptError):
            replay(bad)
    else:
        bad = json.loads(json.dumps(rec))
        bad["partial_hand"]["deal"][0][0] = "0-0"
        with pytest.raises(TranscriptError):
            replay(bad)
