"""What each seat may see (RULES.md): its own hand and public events, nothing hidden.

The step-by-step comparison of every observation with the reference model is in
test_engine_properties.py; here: the reshuffle property (an observation does not
change when the tiles its seat cannot see are redealt among the places hidden
from it), the widow and discard timeline, and the JSON form.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_engine_properties import choose, pass_biases, rules_st, seeds

from moon import GameState, IllegalActionError, Observation, ParseError, Phase, Rules, Tile
from moon.tiles import ALL_TILES, tiles_of


def _reshuffle_hidden(state: GameState, seat: int, rng: random.Random) -> None:
    """Deal the tiles `seat` cannot see at random among the places hidden from it."""
    n = state.n
    places: list[tuple[str, int]] = [("hand", s) for s in range(n) if s != seat]
    widow_in_middle = state.widow >= 0 and not state.widow_taken
    if widow_in_middle:
        places.append(("widow", 0))
    if state.discard >= 0 and state.bidder != seat:
        places.append(("discard", 0))

    def tiles_at(place: tuple[str, int]) -> list[int]:
        kind, s = place
        if kind == "hand":
            return [t.index for t in tiles_of(state.hands[s])]
        return [state.widow if kind == "widow" else state.discard]

    contents = [tiles_at(p) for p in places]
    pool = [t for c in contents for t in c]
    rng.shuffle(pool)
    for (kind, s), old in zip(places, contents, strict=True):
        new, pool = pool[: len(old)], pool[len(old):]
        if kind == "hand":
            state.hands[s] = sum(1 << t for t in new)
        elif kind == "widow":
            state.widow = new[0]
        else:
            state.discard = new[0]
    if state.widow >= 0 and state.widow_taken and state.bidder != seat:
        # Which of the bidder's tiles came from the widow is hidden too.
        b = state.bidder
        pick = [t.index for t in tiles_of(state.hands[b])]
        pick += [state.discard] if state.discard >= 0 else []
        if pick:
            state.widow = rng.choice(pick)
    # The deal itself is hidden (only the seat's own part is known, through play).
    state.dealt = tuple(rng.sample(list(state.dealt), len(state.dealt)))


@settings(max_examples=40, deadline=None)
@given(rules=rules_st(), seed=seeds, rng_seed=st.integers(0, 2**32), bias=pass_biases)
def test_observation_ignores_hidden_tiles(rules: Rules, seed: int, rng_seed: int,
                                          bias: float) -> None:
    # Each seat's observation does not change when the tiles it cannot see are
    # reshuffled among the other hidden places (other hands, middle, other's discard).
    state = GameState.new(rules.replace(max_hands=min(rules.max_hands, 3)), seed)
    rng = random.Random(rng_seed)
    while not state.is_over:
        if rng.random() < 0.3:
            saved = (list(state.hands), state.widow, state.discard, state.dealt)
            for seat in range(state.n):
                obs = state.observation(seat)
                for _ in range(2):
                    _reshuffle_hidden(state, seat, rng)
                    assert state.observation(seat) == obs
                    assert state.observation(seat).to_json() == obs.to_json()
                state.hands[:] = saved[0]
                state.widow, state.discard, state.dealt = saved[1], saved[2], saved[3]
        state.apply(choose(state, rng, bias), state.to_act)


def _mentioned_tiles(obs: Observation) -> set[str]:
    """Every tile named anywhere in the observation's JSON form."""
    text = json.dumps(obs.to_json())
    return {str(t) for t in ALL_TILES if f'"{t}"' in text}


@pytest.mark.parametrize("players", [3, 4])
def test_a_seat_sees_only_its_own_hand(players: int) -> None:
    st_ = GameState.new(Rules.make(players), 8)
    for seat in range(players):
        obs = st_.observation(seat)
        own = {str(t) for t in tiles_of(st_.hands[seat])}
        assert {str(t) for t in obs.hand} == own
        assert _mentioned_tiles(obs) == own  # not a partner's, not the widow
        assert obs.widow is None and obs.discard is None
        assert obs.bidder is None and obs.bid is None and obs.contract is None
        assert obs.hand_sizes == (7,) * players


@pytest.mark.parametrize("tbw", [False, True])
def test_widow_and_discard_are_seen_by_the_bidder_only(tbw: bool) -> None:
    st_ = GameState.new(Rules.make(3, {"trump_before_widow": tbw, "max_hands": 1}), 30)
    widow = ALL_TILES[st_.widow]
    b = st_.to_act
    st_.apply("bid 4", b)
    for k in (1, 2):
        st_.apply("pass", (b + k) % 3)
    others = [(b + 1) % 3, (b + 2) % 3]
    discarded: Tile | None = None
    rng = random.Random(3)
    while not st_.is_over:
        phase = st_.current_phase
        bidder_obs = st_.observation(b)
        taken = phase in (Phase.DISCARD, Phase.PLAY) or (phase is Phase.TRUMP and not tbw)
        assert bidder_obs.widow == (widow if taken else None), phase
        assert bidder_obs.discard == discarded
        assert bidder_obs.bidder == b and bidder_obs.bid == 4
        for s in others:
            obs = st_.observation(s)
            assert obs.widow is None and obs.discard is None
            assert obs.bidder == b and obs.bid == 4
            hidden = {str(widow)} | ({str(discarded)} if discarded else set())
            played = {str(p.tile) for t in obs.tricks for p in t.plays}
            played |= {str(p.tile) for p in obs.current}
            assert not (_mentioned_tiles(obs) & (hidden - played))
        if phase is Phase.DISCARD:
            discarded = widow if tbw else next(t for t in bidder_obs.hand if t != widow)
            st_.apply(f"discard {discarded}", b)
        else:
            st_.apply(rng.choice(st_.legal_ids()), st_.to_act)


def test_observation_of_the_auction() -> None:
    st_ = GameState.new(Rules(), 12)
    first = st_.to_act
    st_.apply("bid 5", first)
    obs = st_.observation((first + 2) % 3)
    assert [(b.seat, b.bid) for b in obs.bids] == [(first, 5)]
    assert obs.phase is Phase.BID and obs.to_act == (first + 1) % 3
    assert obs.first_bidder == first and obs.hand_number == 1
    assert obs.scores == (0, 0, 0) and obs.tricks == () and obs.current == ()


def test_hand_number_counts_redeals() -> None:
    st_ = GameState.new(Rules(), 12)
    for hand in (1, 2, 3):
        assert st_.observation(0).hand_number == hand
        for _ in range(3):
            st_.apply("pass", st_.to_act)
    assert st_.observation(1).first_bidder == (st_.first_bidder) and st_.hand_index == 3


def test_hand_number_at_the_end_of_the_game() -> None:
    # "hand_number: 1-based count of hands dealt so far": no hand is dealt after the last.
    st_ = GameState.new(Rules.make(3, {"max_hands": 2}), 12)
    for _ in range(6):
        st_.apply("pass", st_.to_act)
    assert st_.is_over and st_.end == "hand_limit"
    assert st_.observation(0).hand_number == 2


def test_played_by_and_leader() -> None:
    st_ = GameState.new(Rules.make(3, {"double_blank": False}), 4)
    b = st_.to_act
    st_.apply("bid 4", b)
    st_.apply("pass", (b + 1) % 3)
    st_.apply("pass", (b + 2) % 3)
    st_.apply("trump none", b)
    first = st_.legal_actions()[0]
    st_.apply(first, b)
    obs = st_.observation((b + 1) % 3)
    assert obs.leader == b and obs.played_by(b) == (first.tile,)
    assert obs.played_by((b + 1) % 3) == ()
    assert obs.hand_sizes[b] == 6


def test_no_such_seat() -> None:
    st_ = GameState.new(Rules(), 1)
    for seat in (-1, 3):
        with pytest.raises(IllegalActionError):
            st_.observation(seat)


@settings(max_examples=30, deadline=None)
@given(rules=rules_st(), seed=seeds, rng_seed=st.integers(0, 2**32), bias=pass_biases)
def test_json_round_trip(rules: Rules, seed: int, rng_seed: int, bias: float) -> None:
    state = GameState.new(rules.replace(max_hands=min(rules.max_hands, 2)), seed)
    rng = random.Random(rng_seed)
    while True:
        if state.is_over or rng.random() < 0.25:
            for seat in range(state.n):
                obs = state.observation(seat)
                data = json.loads(json.dumps(obs.to_json()))
                assert Observation.from_json(data) == obs
        if state.is_over:
            break
        state.apply(choose(state, rng, bias), state.to_act)


def test_from_json_rejects_malformed_input() -> None:
    good = GameState.new(Rules(), 1).observation(0).to_json()
    for key, value in (("hand", ["9-9"]), ("phase", "dance"), ("contract", "7"),
                       ("rules", {"min_bid": 9}), ("seat", "x")):
        bad = dict(good)
        bad[key] = value
        with pytest.raises(ParseError):
            Observation.from_json(bad)
    bad = dict(good)
    del bad["scores"]
    with pytest.raises(ParseError):
        Observation.from_json(bad)
