"""`sample_state`: a full state consistent with what one seat has seen.

The sample must give the observing seat exactly the observation it had, deal
every unseen tile once among the hidden places with the right sizes, respect
every void that play revealed (checked with the rules restated in
test_engine_properties, not the engine's tables), and be playable on, legally,
to the end of the hand.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_engine_properties import TRUMP_NAMES, choose, follows, pass_biases, rules_st, seeds
from test_engine_properties import tile_set as rules_tile_set

import moon.sampling
from moon import GameState, Observation, Phase, Rules, sample_state
from moon.tiles import ALL_TILES, tiles_of


def _voids(obs: Observation) -> list[set[str]]:
    """Per seat, the tiles it cannot hold: those that would have followed a trick it did not."""
    out: list[set[str]] = [set() for _ in range(obs.players)]
    if obs.contract is None:
        return out
    contract = TRUMP_NAMES[obs.contract]
    for plays in [t.plays for t in obs.tricks] + [obs.current]:
        if not plays:
            continue
        led = plays[0].tile
        for p in plays[1:]:
            if not follows(p.tile, led, contract):
                out[p.seat] |= {str(t) for t in ALL_TILES if follows(t, led, contract)}
    return out


def check_sample(real: GameState, seat: int, rng: random.Random) -> GameState:
    """Sample for `seat`, check everything a sample must satisfy, and return it."""
    obs = real.observation(seat)
    sample = sample_state(obs, rng)
    assert sample.observation(seat) == obs
    # Every tile of the set exactly once: hands, played tiles, the middle, the discard.
    places = [t for m in sample.hands for t in tiles_of(m)]
    places += [ALL_TILES[t] for _, t in sample.plays]
    if sample.widow >= 0 and not sample.widow_taken:
        places.append(ALL_TILES[sample.widow])
    if sample.discard >= 0:
        places.append(ALL_TILES[sample.discard])
    assert len(places) == len(set(places))
    assert set(places) == rules_tile_set(obs.rules)
    assert [m.bit_count() for m in sample.hands] == [m.bit_count() for m in real.hands]
    assert (sample.widow >= 0) == (real.widow >= 0)
    assert (sample.discard >= 0) == (real.discard >= 0)
    for s, void in enumerate(_voids(obs)):
        held = {str(t) for t in tiles_of(sample.hands[s])}
        assert not held & void, f"seat {s} was void in {sorted(void)} but holds {held & void}"
    if obs.to_act == seat and not real.is_over:
        assert sample.legal_ids() == real.legal_ids()
    # The sample's deal is consistent: each seat was dealt 7 tiles, and a bidder who took
    # the widow holds, has played or discarded exactly its deal plus the widow.
    for s in range(obs.players):
        had = sample.hands[s] | sum(1 << t for p, t in sample.plays if p == s)
        if s == sample.bidder and sample.widow_taken:
            had |= 1 << sample.discard if sample.discard >= 0 else 0
            assert not sample.dealt[s] >> sample.widow & 1
            assert had == sample.dealt[s] | 1 << sample.widow
        else:
            assert had == sample.dealt[s]
        assert sample.dealt[s].bit_count() == 7
    assert sample.dealt[seat] == real.dealt[seat]  # the seat knows its own deal
    return sample


def play_out_hand(sample: GameState, rng: random.Random) -> None:
    """Play random legal moves (checked) until the hand is scored."""
    hand = sample.hand_index
    n = sample.n
    steps = 0
    while not sample.is_over and sample.hand_index == hand:
        sample.apply(rng.choice(sample.legal_ids()), sample.to_act)
        steps += 1
        assert steps <= 2 + 1 + n + 7 * n
    assert sample.is_over or sample.hand_index == hand + 1
    assert (sample.scores != [] and sample.legal_ids() != ()) or sample.is_over


@settings(max_examples=50, deadline=None)
@given(rules=rules_st(), seed=seeds, rng_seed=st.integers(0, 2**32), bias=pass_biases)
def test_samples_are_consistent_and_playable(rules: Rules, seed: int, rng_seed: int,
                                            bias: float) -> None:
    state = GameState.new(rules.replace(max_hands=min(rules.max_hands, 2)), seed)
    rng = random.Random(rng_seed)
    while not state.is_over:
        if rng.random() < 0.25:
            seat = rng.randrange(state.n)
            sample = check_sample(state, seat, rng)
            play_out_hand(sample, rng)
        state.apply(choose(state, rng, bias), state.to_act)


@pytest.mark.parametrize("players", [3, 4])
def test_backtracking_path_is_consistent_too(players: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # With no rejection rounds every sample comes from the randomised backtracking search,
    # the path taken when voids make a plain shuffle unlikely to fit.
    monkeypatch.setattr(moon.sampling, "_REJECTION_ROUNDS", 0)
    rng = random.Random(players)
    for seed in range(8):
        state = GameState.new(Rules.make(players, {"max_hands": 1}), seed)
        while not state.is_over:
            if state.current_phase is Phase.PLAY:
                for seat in range(players):
                    play_out_hand(check_sample(state, seat, rng), rng)
            state.apply(choose(state, rng), state.to_act)


def _late_position_with_voids(seed: int) -> tuple[GameState, int]:
    """A 4-player position deep in a hand where someone has shown a void."""
    rng = random.Random(seed)
    for game in range(200):
        state = GameState.new(Rules.make(4), seed * 1000 + game)
        while not state.is_over and state.hand_index == 0:
            state.apply(choose(state, rng), state.to_act)
            if state.current_phase is Phase.PLAY and len(state.winners) >= 4:
                for seat in range(4):
                    if any(_voids(state.observation(seat))):
                        return state, seat
    raise AssertionError("no position with a void found")


def test_voids_are_respected_deep_in_a_hand() -> None:
    for seed in range(5):
        state, seat = _late_position_with_voids(seed)
        rng = random.Random(seed)
        for _ in range(20):
            check_sample(state, seat, rng)


def test_samples_vary_and_are_fair_before_play() -> None:
    # Before any play the 15 tiles seat 0 cannot see fall 7, 7 and 1 (the widow) at
    # random: each should be the widow about 1/15 of the time.
    state = GameState.new(Rules(), 77)
    obs = state.observation(0)
    rng = random.Random(1)
    widows: Counter[int] = Counter()
    in_seat1: Counter[int] = Counter()
    runs = 1500
    for _ in range(runs):
        s = sample_state(obs, rng)
        assert s.observation(0) == obs
        widows[s.widow] += 1
        for t in tiles_of(s.hands[1]):
            in_seat1[t.index] += 1
    unseen = [t.index for t in ALL_TILES if t in rules_tile_set(Rules())
              and t not in obs.hand]
    assert len(unseen) == 15 and set(widows) == set(unseen)
    for t in unseen:
        assert 50 <= widows[t] <= 160, (ALL_TILES[t], widows[t])  # expected 100
        assert 600 <= in_seat1[t] <= 800, (ALL_TILES[t], in_seat1[t])  # expected 700


def test_same_rng_same_sample() -> None:
    state = GameState.new(Rules.make(4), 5)
    rng = random.Random(2)
    while state.current_phase is not Phase.PLAY or len(state.plays) < 9:
        state.apply(choose(state, rng), state.to_act)
    obs = state.observation(1)
    a, b = sample_state(obs, random.Random(9)), sample_state(obs, random.Random(9))
    assert a.hands == b.hands and a.widow == b.widow and a.seed == b.seed


def test_a_sample_can_be_copied_for_search() -> None:
    # Search bots sample, then copy the sample for each line they try.
    state = GameState.new(Rules(), 6)
    for seat in range(3):
        sample = sample_state(state.observation(seat), random.Random(seat))
        twin = sample.copy()
        play_out_hand(twin, random.Random(0))
        assert sample.observation(seat) == state.observation(seat)


def test_a_sampler_draws_what_sample_state_draws() -> None:
    # A search bot prepares one Sampler per decision and draws many deals from it; each
    # draw is what sample_state gives from the same generator state, and each is whole.
    rng = random.Random(4)
    for players in (3, 4):
        state = GameState.new(Rules.make(players, {"max_hands": 2}), 40 + players)
        while not state.is_over:
            seat = rng.randrange(players)
            obs = state.observation(seat)
            sampler = moon.sampling.Sampler(obs)
            for k in range(3):
                a = sampler.sample(random.Random(k))
                b = sample_state(obs, random.Random(k))
                assert (a.hands, a.widow, a.discard, a.dealt, a.seed) == (
                    b.hands, b.widow, b.discard, b.dealt, b.seed)
                assert a.observation(seat) == obs
            twin = sampler.sample(rng)
            play_out_hand(twin, rng)  # the template is untouched by a draw played on
            assert sampler.sample(random.Random(0)).observation(seat) == obs
            state.apply(choose(state, rng), state.to_act)
