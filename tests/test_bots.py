"""The players of `bots/`: the greedy rules on masks choose what greedy_action chooses,
playouts end as the engine ends them, and house decisions are pure functions of
(observation, game seed, seat): asked again, after a restart, they answer the same."""

from __future__ import annotations

import random

import pytest
from test_engine_properties import choose

from bots import GreedyPlayer, PimcPlayer, RandomPlayer, decision_rng, greedy_action
from bots import playout as po
from bots.player import decision_key
from bots.scoring import hand_points
from clients.builtin import GreedyBot, PimcBot, RandomBot
from clients.selfplay import play_game
from moon import Action, ActionKind, GameState, Observation, Phase, Rules, Tile, sample_state
from moon.actions import DISCARD_BASE, PLAY_BASE, TRUMP_BASE

VARIANTS = [(3, {}), (3, {"trump_before_widow": True}), (3, {"all_pass": "forced"}),
            (3, {"double_blank": False}), (3, {"min_bid": 3}), (4, {}), (4, {"min_bid": 5})]


def _mask(obs: Observation) -> int:
    return sum(1 << t.index for t in obs.hand)


@pytest.mark.parametrize(("players", "options"), VARIANTS)
def test_the_mask_rules_choose_what_the_greedy_player_chooses(players: int,
                                                              options: dict[str, object]) -> None:
    rules = Rules.make(players, {**options, "max_hands": 3})
    checked = 0
    for seed in range(12):
        rng = random.Random(seed)
        st = GameState.new(rules, seed)
        while not st.is_over:
            seat = st.to_act
            obs = st.observation(seat)
            want = greedy_action(obs, st.legal_actions()).id
            if obs.phase is Phase.PLAY:
                k = st.in_trick
                trick = [t for _, t in st.plays[len(st.plays) - k:]]
                leader = st.plays[-k][0] if k else seat
                gone = sum(1 << t for _, t in st.plays)
                got = PLAY_BASE + po.greedy_tile(players, st.contract, st.hands[seat], leader,
                                                 trick, gone)
            elif obs.phase is Phase.BID:
                got = po.greedy_bid(_mask(obs), st.high, rules.min_bid, 0 in st.legal_ids(),
                                    rules.has_widow, players == 4)
            elif obs.phase is Phase.DISCARD:
                got = DISCARD_BASE + po.greedy_discard(_mask(obs), obs.contract)
            else:
                got = TRUMP_BASE + po.greedy_contract(_mask(obs))
            assert got == want, (obs.phase, seed)
            checked += 1
            # Mostly greedy, sometimes not, so that odd positions come up too.
            st.apply_id(want if rng.random() < 0.7 else choose(st, rng))
    assert checked > 200


@pytest.mark.parametrize("players", [3, 4])
def test_a_playout_ends_the_hand_as_the_engine_does_with_greedy_players(players: int) -> None:
    for seed in range(40):
        rng = random.Random(seed)
        st = GameState.new(Rules.make(players, {"max_hands": 1}), seed)
        while st.phase != 3 or rng.random() < 0.6:  # a random point of the play
            if st.is_over:
                break
            st.apply_id(choose(st, rng))
        if st.is_over:
            continue
        k = st.in_trick
        trick = [t for _, t in st.plays[len(st.plays) - k:]]
        leader = st.plays[-k][0] if k else st.to_act
        gone = sum(1 << t for _, t in st.plays)
        won = po.playout(players, st.contract, st.hands, leader, trick, st.tricks_won, gone)[0]
        ref = st.copy()
        ref.record = True
        while not ref.hand_log:
            ref.apply(greedy_action(ref.observation(ref.to_act), ref.legal_actions()))
        assert ref.hand_log[-1]["tricks_won"] == won
        made = ref.hand_log[-1]["points"]
        assert hand_points(st.rules, st.bidder, st.bid, won) == made


def test_a_decision_key_differs_for_every_decision_of_a_game() -> None:
    st = GameState.new(Rules.make(3, {"max_hands": 6}), 3)
    rng = random.Random(3)
    keys = set()
    count = 0
    while not st.is_over:
        keys.add((st.to_act, decision_key(st.observation(st.to_act), 99)))
        count += 1
        st.apply_id(choose(st, rng))
    assert len(keys) == count
    obs = GameState.new(Rules(), 3).observation(0)
    assert decision_key(obs, 1) != decision_key(obs, 2)
    assert decision_rng(obs, 1).random() == decision_rng(obs, 1).random()


def test_the_random_player_is_uniform_over_its_choices_and_bids_21_only_when_forced() -> None:
    """Over many decisions (a position's every seed), each legal action but `bid 21` is
    picked about as often as the others: a chi-square test at the 0.1% level, which a
    skew of a tenth of a share fails. `bid 21` comes only as the one legal bid."""
    rules = Rules.make(3, {"all_pass": "forced"})
    st = GameState.new(rules, 8)
    while st.phase != Phase.PLAY:
        st.apply_id(choose(st, random.Random(1)))
    obs, legal = st.observation(st.to_act), st.legal_actions()
    assert len(legal) >= 2
    player, draws = RandomPlayer(), 20_000
    counts = dict.fromkeys(legal, 0)
    for seed in range(draws):
        counts[player.decide(obs, legal, seed)] += 1
    expected = draws / len(legal)
    chi2 = sum((c - expected) ** 2 / expected for c in counts.values())
    assert chi2 < {2: 10.8, 3: 13.8, 4: 16.3, 5: 18.5, 6: 20.5, 7: 22.5}[len(legal)], counts
    # The auction: bid 21 is never picked while anything else is legal.
    bids = GameState.new(rules, 5)
    obs, legal = bids.observation(bids.to_act), bids.legal_actions()
    moon = [a for a in legal if a.kind is ActionKind.BID and a.value == 21]
    assert moon and len(legal) > 1
    assert all(player.decide(obs, legal, seed) not in moon for seed in range(2_000))
    assert player.decide(obs, moon, 3) == moon[0]


def _play(rules: Rules, seed: int, players: list[object], stop_after: int = -1) -> list[int]:
    """A game's actions with house players deciding from (observation, seed) only."""
    st = GameState.new(rules, seed)
    while not st.is_over and len(st.actions) != stop_after:
        seat = st.to_act
        player = players[seat]
        st.apply(player.decide(st.observation(seat), st.legal_actions(), seed), seat)  # type: ignore[attr-defined]
    return st.actions


@pytest.mark.parametrize("players", [3, 4])
def test_house_players_repeat_their_moves_after_a_restart(players: int) -> None:
    rules = Rules.make(players, {"max_hands": 2})
    seats: list[object] = [PimcPlayer(samples=4), RandomPlayer(), GreedyPlayer()]
    seats = [*seats, PimcPlayer(samples=3, solve=0)][:players]
    first = _play(rules, 11, seats)
    # A crash mid-game: new player objects replay the log, then carry on.
    again = _play(rules, 11, [type(p)(**{k: getattr(p, k) for k in p.__slots__})  # type: ignore[attr-defined]
                               for p in seats])
    assert again == first
    # Replaying the first half from the log asks the same questions: same answers.
    half = len(first) // 2
    st = GameState.new(rules, 11)
    for aid in first[:half]:
        seat = st.to_act
        assert seats[seat].decide(  # type: ignore[attr-defined]
            st.observation(seat), st.legal_actions(), 11).id == aid
        st.apply_id(aid)


def test_a_pimc_decision_depends_on_the_seed_and_nothing_hidden() -> None:
    # Two states that differ only in tiles the seat cannot see give it one observation,
    # hence one decision; another game seed may give another.
    st = GameState.new(Rules(), 21)
    rng = random.Random(0)
    while st.phase != 3 or len(st.plays) < 5:
        st.apply_id(choose(st, rng))
    seat = st.to_act
    obs = st.observation(seat)
    twin = PimcPlayer(samples=6)
    other = sample_state(obs, random.Random(1))
    assert other.observation(seat) == obs
    legal = st.legal_actions()
    assert twin.decide(obs, legal, 5) == twin.decide(other.observation(seat), legal, 5)
    assert twin.decide(Observation.from_json(obs.to_json()), legal, 5) == twin.decide(obs, legal, 5)
    seen = {twin.decide(obs, legal, s).id for s in range(30)}
    assert seen <= {a.id for a in legal}


def test_the_sdk_built_ins_wrap_the_players() -> None:
    rules = Rules.make(3, {"max_hands": 2})
    a = play_game(rules, 5, [RandomBot(1), GreedyBot(2), PimcBot(3)], ["r", "g", "p"])
    b = play_game(rules, 5, [RandomBot(1), GreedyBot(2), PimcBot(3)], ["r", "g", "p"])
    assert a == b  # seeded SDK bots, PIMC included, play one game the same way twice
    st = GameState.new(rules, 8)
    obs = st.observation(st.to_act)
    assert GreedyBot(None).act(obs, st.legal_actions()) == greedy_action(obs, st.legal_actions())


def test_pimc_bids_and_names_trumps_by_search() -> None:
    # Six sixes from the top and 5-5 take every trick: it shoots the moon. A hand with no
    # long suit and no double passes.
    rules = Rules.make(3)
    strong = tuple(Tile.parse(t) for t in ("6-6", "6-5", "6-4", "6-3", "6-2", "6-1", "5-5"))
    weak = tuple(Tile.parse(t) for t in ("2-1", "3-1", "4-2", "5-3", "6-2", "5-4", "6-3"))
    base = GameState.new(rules, 1).observation(0)
    player = PimcPlayer(samples=64)
    for seed in (1, 2):
        strong_bid = player.decide(_with_hand(base, strong), _legal_bids(), seed)
        assert strong_bid.id == 21  # all seven tricks are sure: shoot the moon
        assert player.decide(_with_hand(base, weak), _legal_bids(), seed).id == 0
    # Having won the auction, taken the widow (6-6) and discarded 1-1, it names sixes.
    data = {**base.to_json(), "phase": "trump", "seat": 0, "to_act": 0, "first_bidder": 0,
            "hand": [str(t) for t in strong], "bids": [[0, 5], [1, 0], [2, 0]], "bidder": 0,
            "bid": 5, "widow": "6-6", "discard": "1-1", "hand_sizes": [7, 7, 7]}
    trumps = [Action.from_id(i) for i in range(30, 39)]
    assert player.decide(Observation.from_json(data), trumps, 1).id == 36


def _with_hand(obs: Observation, hand: tuple[Tile, ...]) -> Observation:
    data = obs.to_json()
    data["hand"] = [str(t) for t in hand]
    data["to_act"] = data["seat"] = data["first_bidder"]
    data["bids"] = []
    return Observation.from_json(data)


def _legal_bids() -> list[Action]:
    return [Action.from_id(i) for i in (0, 4, 5, 6, 7, 21)]
