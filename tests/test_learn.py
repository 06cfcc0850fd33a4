"""Moon for learning agents (learn/): the ecosystem's own checks, equivalence with the
engine, and that no adapter shows a seat anything RULES.md hides from it.

- OpenSpiel's `random_sim_test` (with serialisation) on the 3p and the 2v2 game;
  PettingZoo's `api_test` and `seed_test`; Gymnasium's `check_env`;
- the same seed and actions through the engine, the OpenSpiel game and the PettingZoo
  environment give the same transcript and returns, over random games of every rules
  variant;
- changing the tiles hidden from a seat changes none of its strings, tensors,
  environment observations or resamples;
- the runner plays OpenSpiel's ISMCTS legally and reproducibly, and `load_bot` runs it.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyspiel
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st
from open_spiel.python import policy as open_spiel_policy
from pettingzoo.test import api_test, seed_test

from bots.player import DecisionKeys, decision_key
from bots.random_play import RandomPlayer, random_id
from clients.builtin import load_bot
from learn.gym import MoonSeatEnv
from learn.openspiel import (
    TENSOR_SIZE,
    ChanceDealt,
    MoonState,
    Played,
    encode,
    encode_state,
    game_returns,
    history_of_seed,
    load,
    wrap,
)
from learn.pettingzoo import MoonEnv
from learn.runner import IsmctsPlayer, PolicyPlayer, SpielPlayer, ismcts_bot
from learn.spaces import observe
from moon import GameState, Rules
from moon.state import tile_set
from moon.transcript import transcript

SHORT = {"max_hands": 2}
# One entry per rules option of RULES.md's table, each away from its default.
VARIANTS: list[tuple[int, dict[str, object]]] = [
    (3, {}),
    (3, {"double_blank": False}),
    (3, {"trump_before_widow": True}),
    (3, {"scoring": "marks", "marks_target": 2}),
    (3, {"all_pass": "forced"}),
    (3, {"min_bid": 3}),
    (3, {"min_bid": 5}),
    (3, {"moon_wins": True}),
    (3, {"target": 5}),
    (4, {}),
    (4, {"scoring": "marks", "marks_target": 2}),
    (4, {"all_pass": "forced", "min_bid": 3}),
    (4, {"moon_wins": True, "target": 5}),
]


@pytest.mark.parametrize("players", [3, 4])
def test_openspiel_random_simulation_with_serialisation(players: int) -> None:
    game = load(players, {"max_hands": 3})
    pyspiel.random_sim_test(game, num_sims=4, serialize=True, verbose=False)
    assert game.num_players() == players
    assert pyspiel.load_game("moon", {"players": players}).num_players() == players


@pytest.mark.parametrize("players", [3, 4])
def test_pettingzoo_api_and_seed_tests(players: int) -> None:
    api_test(MoonEnv(players=players, rules=SHORT), num_cycles=400)
    seed_test(lambda: MoonEnv(players=players, rules=SHORT), num_cycles=400)


@pytest.mark.parametrize(("players", "seat"), [(3, 0), (3, 2), (4, 1)])
def test_gymnasium_check_env(players: int, seat: int) -> None:
    check_env(MoonSeatEnv(players=players, seat=seat, rules=SHORT), skip_render_check=True)


def _gym_run(seed: int, choices: int) -> list[Any]:
    env = MoonSeatEnv(players=3, seat=1, opponents=["house:greedy", "house:random"], rules=SHORT)
    obs, info = env.reset(seed=seed)
    pick = random.Random(choices)
    out: list[Any] = [obs["observation"].tolist(), info["game_seed"]]
    done = False
    while not done:
        legal = np.flatnonzero(info["action_mask"])
        obs, reward, done, _, info = env.step(int(pick.choice(legal)))
        out += [obs["observation"].tolist(), reward]
    out.append(env.state.actions)
    return out


def test_gymnasium_is_seeded_and_reproducible() -> None:
    assert _gym_run(5, 1) == _gym_run(5, 1)
    assert _gym_run(5, 1) != _gym_run(6, 1)


def _random_game(rules: Rules, seed: int, choices: int) -> GameState:
    draw = random.Random(choices)
    engine = GameState.new(rules, seed, record=True)
    while not engine.is_over:
        engine.apply_id(draw.choice(engine.legal_ids()))
    return engine


@pytest.mark.parametrize(("players", "options"), VARIANTS)
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), choices=st.integers(0, 2**32))
def test_engine_openspiel_and_pettingzoo_agree(players: int, options: dict[str, object],
                                              seed: int, choices: int) -> None:
    rules = Rules.make(players, {"max_hands": 3, **options})
    engine = _random_game(rules, seed, choices)
    record = transcript(rules, seed, engine.actions, [f"s{i}" for i in range(players)])
    returns = game_returns(engine)
    assert sum(returns) == pytest.approx(0.0)

    game = load(players, rules.options())
    state = game.new_initial_state()
    state.engine.record = True  # its transcript (the game's engine keeps none by default)
    for action in history_of_seed(rules, seed, engine.actions):
        state.apply_action(action)
    assert state.is_terminal()
    spiel = state.engine
    assert (spiel.hand_log, spiel.scores, spiel.winner, spiel.end) == (
        record["hands"], record["final"], record["winner"], record["end"])
    assert state.returns() == returns

    env = MoonEnv(players=players, rules=rules.options())
    env.reset(seed=seed)
    for action in engine.actions:
        env.step(action)
    zoo = env.state
    assert zoo.actions == engine.actions
    assert transcript(rules, seed, zoo.actions, [f"s{i}" for i in range(players)]) == record
    assert (zoo.scores, zoo.winner, zoo.end) == (record["final"], record["winner"], record["end"])
    assert [env._cumulative_rewards[a] for a in env.possible_agents] == returns
    assert all(env.terminations.values())


def _hidden_swaps(engine: GameState, seat: int, rng: random.Random) -> GameState:
    """A copy of `engine` with tiles hidden from `seat` moved between hidden places."""
    out = engine.copy()
    n = out.n
    others = [s for s in range(n) if s != seat and out.hands[s]]
    places: list[tuple[str, int]] = [("hand", s) for s in others]
    if out.widow >= 0 and not out.widow_taken:  # face down in the middle
        places.append(("widow", -1))
    if out.discard >= 0 and seat != out.bidder:
        places.append(("discard", -1))

    def take(place: tuple[str, int]) -> int:
        kind, s = place
        if kind == "hand":
            tiles = [t for t in range(28) if out.hands[s] >> t & 1]
            t = rng.choice(tiles)
            out.hands[s] ^= 1 << t
            return t
        return out.widow if kind == "widow" else out.discard

    def put(place: tuple[str, int], t: int) -> None:
        kind, s = place
        if kind == "hand":
            out.hands[s] |= 1 << t
        elif kind == "widow":
            out.widow = t
        else:
            out.discard = t

    for _ in range(3):
        if len(places) < 2:
            break
        a, b = rng.sample(places, 2)
        ta, tb = take(a), take(b)
        put(a, tb)
        put(b, ta)
    return out


def _views(game: Any, state: MoonState, seat: int) -> list[Any]:
    views: list[Any] = [state.information_state_string(seat), state.observation_string(seat),
                        state.information_state_tensor(seat), state.observation_tensor(seat)]
    engine = state.engine
    zoo = observe(engine, seat)
    views += [zoo["observation"].tolist(), zoo["action_mask"].tolist()]
    if not state.is_chance_node() and engine.to_act == seat:
        sampler = pyspiel.UniformProbabilitySampler(7, 0.0, 1.0)
        again = state.resample_from_infostate(seat, sampler)
        st = again.engine
        views += [st.hands, st.widow, st.discard, st.dealt, again.legal_actions()]
    return views


@pytest.mark.parametrize(("players", "options"), [(3, {}), (3, {"trump_before_widow": True}),
                                                  (3, {"double_blank": False}), (4, {})])
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32), stop=st.integers(0, 80))
def test_no_view_depends_on_a_hidden_tile(players: int, options: dict[str, object], seed: int,
                                          stop: int) -> None:
    game = load(players, {"max_hands": 2, **options})
    rng = random.Random(seed)
    state = game.new_initial_state()
    for _ in range(stop):  # a random point of a game: a deal, an auction, a trick
        if state.is_terminal():
            break
        if state.is_chance_node():
            state.apply_action(rng.choice([a for a, _ in state.chance_outcomes()]))
        else:
            state.apply_action(rng.choice(state.legal_actions()))
    if state.is_terminal():
        return
    for seat in range(players):
        changed = state.clone()
        changed._core.st = _hidden_swaps(state.engine, seat, rng)
        assert _views(game, changed, seat) == _views(game, state, seat)
        # ... while a change of the seat's own tiles shows (the views are not blind).
        other = (seat + 1) % players
        mine, theirs = state.engine.hands[seat], state.engine.hands[other]
        if mine and theirs and not state.is_chance_node():
            a, b = mine & -mine, theirs & -theirs
            changed._core.st = state.engine.copy()
            changed.engine.hands[seat] ^= a | b
            changed.engine.hands[other] ^= a | b
            assert changed.information_state_string(seat) != state.information_state_string(seat)
            assert changed.information_state_tensor(seat) != state.information_state_tensor(seat)


def test_resampled_states_keep_the_information_state() -> None:
    game = load(3, SHORT)
    rng = random.Random(3)
    for _ in range(5):
        engine = _random_game(Rules.make(3, SHORT), rng.getrandbits(32), 1)
        st = GameState.new(engine.rules, engine.seed)
        for a in engine.actions[:rng.randrange(1, 30)]:
            st.apply_id(a)
        state = wrap(game, st)
        seat = st.to_act
        for _ in range(4):
            again = state.resample_from_infostate(seat, pyspiel.UniformProbabilitySampler(0., 1.))
            assert again.information_state_string(seat) == state.information_state_string(seat)
            assert again.legal_actions() == state.legal_actions()


def test_ismcts_plays_legally_and_reproducibly() -> None:
    rules = Rules.make(3, {"max_hands": 1})
    player = SpielPlayer(ismcts_bot(simulations=8))
    engine = GameState.new(rules, 11)
    chosen = []
    while not engine.is_over:
        obs, legal = engine.observation(engine.to_act), engine.legal_actions()
        action = player.decide(obs, legal, 99)
        assert action in legal
        assert player.decide(obs, legal, 99) == action  # a decision is a function of its inputs
        chosen.append(action)
        engine.apply(action, obs.seat)
    assert len(chosen) >= 22


class _Highest:
    """A policy that plays the highest legal id, and keeps what it was shown."""

    def __init__(self, engine: GameState) -> None:
        self.engine = engine  # the real game, to compare the seat's view with
        self.seen: list[tuple[str, str]] = []

    def action_probabilities(self, state: Any, player_id: int | None = None
                             ) -> dict[int, float]:
        assert player_id is not None
        game = state.get_game()
        real = wrap(game, self.engine.copy())
        self.seen.append((state.information_state_string(player_id),
                          real.information_state_string(player_id)))
        return {max(state.legal_actions(player_id)): 1.0}


def test_a_policy_plays_by_its_probabilities_on_what_the_seat_sees() -> None:
    """`PolicyPlayer` asks the policy about the seat's information set (its string the
    real game's), plays the likeliest action when greedy, and draws by the
    probabilities otherwise: OpenSpiel's own uniform policy picks every legal action
    over the seeds of one decision, the same one each time for one seed."""
    rules = Rules.make(3, {"max_hands": 1})
    engine = GameState.new(rules, 21)
    highest = _Highest(engine)
    player = PolicyPlayer(highest, greedy=True)
    while not engine.is_over:
        obs, legal = engine.observation(engine.to_act), engine.legal_actions()
        action = player.decide(obs, legal, 5)
        assert action.id == max(a.id for a in legal)
        engine.apply(action, obs.seat)
    assert len(highest.seen) >= 15
    assert all(mine == real for mine, real in highest.seen)
    game = load(3, {"max_hands": 1})
    pos = GameState.new(rules, 4)  # the first bid: pass, 3 to 7 and 21
    obs, legal = pos.observation(pos.to_act), pos.legal_actions()
    assert len(legal) >= 3
    uniform = PolicyPlayer(open_spiel_policy.UniformRandomPolicy(game))
    picks = [uniform.decide(obs, legal, seed) for seed in range(60)]
    assert set(picks) == set(legal)
    assert [uniform.decide(obs, legal, seed) for seed in range(60)] == picks
    first = PolicyPlayer(open_spiel_policy.FirstActionPolicy(game))
    assert {first.decide(obs, legal, seed) for seed in range(10)} == {legal[0]}


class _Fixed:
    def __init__(self, probs: object) -> None:
        self.probs = probs

    def action_probabilities(self, state: Any, player_id: int | None = None) -> Any:
        return self.probs


@pytest.mark.parametrize(("probs", "says"), [
    ({97: 1.0}, r"97: 1.0 \(not a legal action\); legal: 0 \(pass\), 4 \(bid 4\)"),
    ({}, "no action a positive probability"),
    ({0: 0.0}, "no action a positive probability"),
    ({0: -0.5, 3: 1.5}, "negative"),
    ({0: float("nan")}, "not finite"),
    ([0.5, 0.5], "not a mapping"),
    ({"pass": 1.0}, "not a mapping"),
    ({4.7: 1.0}, "not an integer action id"),
])
def test_a_bad_policy_gets_a_clear_error(probs: object, says: str) -> None:
    engine = GameState.new(Rules.make(3, {"max_hands": 1}), 2)
    obs, legal = engine.observation(engine.to_act), engine.legal_actions()
    with pytest.raises(pyspiel.SpielError, match=says):
        PolicyPlayer(_Fixed(probs)).decide(obs, legal, 1)


def test_load_bot_runs_a_player_class() -> None:
    class Tiny(IsmctsPlayer):
        simulations = 4

    import learn.runner
    learn.runner.Tiny = Tiny  # type: ignore[attr-defined]
    try:
        cls = load_bot("learn.runner:Tiny")
    finally:
        del learn.runner.Tiny  # type: ignore[attr-defined]
    bot = cls(5)
    engine = GameState.new(Rules.make(4, {"max_hands": 1}), 3)
    obs, legal = engine.observation(engine.to_act), engine.legal_actions()
    assert bot.act(obs, legal) in legal
    with pytest.raises(ValueError, match="decide"):
        load_bot("learn.openspiel:MoonObserver")


@pytest.mark.parametrize(("players", "options"), VARIANTS[:4] + VARIANTS[9:11])
def test_fast_paths_answer_what_pyspiel_and_the_observation_do(
        players: int, options: dict[str, object]) -> None:
    """The tensor from the engine's masks is `encode(observation)` to the bit, cached or
    not, at every node and seat; the Python overrides of pyspiel's queries answer what
    pyspiel's own C++ `State` answers; the environments serve the same tensor."""
    game = load(players, {"max_hands": 2, **options})
    base = pyspiel.State
    for k in range(6):
        rng = random.Random(k)
        state = game.new_initial_state()
        caches = [Played() for _ in range(players)]
        while True:
            assert state.current_player() == base.current_player(state)
            assert state.is_chance_node() == base.is_chance_node(state)
            assert state.is_player_node() == base.is_player_node(state)
            assert state.is_terminal() == base.is_terminal(state)
            assert state.legal_actions() == base.legal_actions(state)
            for p in range(players):
                assert state.legal_actions(p) == base.legal_actions(state, p)
            if state.is_chance_node():
                assert state.chance_outcomes() == base.chance_outcomes(state)
            engine = state.engine
            for seat in range(players):
                ref = np.zeros(TENSOR_SIZE, np.float32)
                encode(engine.observation(seat), ref)
                assert encode_state(engine, seat) == ref.tobytes()
                assert encode_state(engine, seat, caches[seat]) == ref.tobytes()
                assert state.observation_tensor(seat) == ref.tolist()
                if not state.is_chance_node():
                    assert observe(engine, seat)["observation"].tobytes() == ref.tobytes()
            if state.is_terminal():
                break
            state.apply_action(rng.choice(state.legal_actions()))


def test_chance_dealt_starts_a_hand_as_the_engine_does_without_its_tiles() -> None:
    """`ChanceDealt._deal` sets every slot `GameState._deal` sets, to the same value, but
    the hands, the widow and the deal (chance deals them); copies keep the class."""
    for players, options in VARIANTS[:2] + VARIANTS[9:10]:
        rules = Rules.make(players, options)
        engine = _random_game(rules, 5, 7)
        base = GameState.new(rules, 5)
        for a in engine.actions[:40]:
            base.apply_id(a)
        for first in range(players):
            ours = base.copy()
            ours.__class__ = ChanceDealt
            theirs = base.copy()
            ours._deal(first)
            theirs._deal(first)
            for slot in GameState.__slots__:
                if slot in ("hands", "widow", "dealt"):
                    continue
                assert getattr(ours, slot) == getattr(theirs, slot), slot
            assert (ours.hands, ours.widow, ours.dealt) == ([0] * players, -1, ())
            assert type(ours.copy()) is ChanceDealt


@pytest.mark.parametrize(("players", "options"), VARIANTS[:5] + VARIANTS[9:12])
def test_house_random_from_the_engine_state_is_the_house_bot(
        players: int, options: dict[str, object]) -> None:
    """At every decision of random games, `DecisionKeys` gives `decision_key` of the
    seat's observation and `random_id` the id `RandomPlayer.decide` picks."""
    rules = Rules.make(players, {"max_hands": 3, **options})
    player = RandomPlayer()
    for seed in (1, 2**63 + 5, 2**64 - 1):
        keys = DecisionKeys(seed)
        st = GameState.new(rules, seed)
        while not st.is_over:
            s = st.to_act
            obs, legal = st.observation(s), st.legal_actions()
            key = keys.key(st, s)
            assert key == decision_key(obs, seed)
            chosen = player.decide(obs, legal, seed)
            assert random_id(st.legal_ids(), key) == chosen.id
            st.apply_id(chosen.id)


def _gym_game(env: MoonSeatEnv, seed: int, choices: int) -> list[Any]:
    obs, info = env.reset(seed=seed)
    pick = random.Random(choices)
    out: list[Any] = [obs["observation"].tobytes(), obs["action_mask"].tobytes(),
                      info["action_mask"].tobytes()]
    done = False
    while not done:
        legal = np.flatnonzero(info["action_mask"])
        obs, reward, done, _, info = env.step(int(pick.choice(legal)))
        out += [obs["observation"].tobytes(), obs["action_mask"].tobytes(),
                info["action_mask"].tobytes(), reward]
    return [*out, env.state.actions]


@pytest.mark.parametrize(("players", "seat"), [(3, 0), (3, 2), (4, 1)])
def test_gymnasium_house_random_fast_path_plays_the_house_bots_game(players: int,
                                                                    seat: int) -> None:
    """The environment's `house:random` seats (decided from the engine's state) play the
    game `RandomPlayer.decide` plays from their observations, bit for bit."""
    names = ["house:random", "house:greedy", "house:random"][:players - 1]
    fast = MoonSeatEnv(players=players, seat=seat, opponents=names, rules=SHORT)
    slow = MoonSeatEnv(players=players, seat=seat, opponents=names, rules=SHORT)
    assert fast._fast
    slow._fast = frozenset()  # every seat through `decide`, as on a referee
    for seed in range(6):
        assert _gym_game(fast, seed, seed) == _gym_game(slow, seed, seed)


def test_environments_hand_out_new_arrays_and_never_change_them() -> None:
    """Observations kept by an agent (a replay buffer) stay what they were when handed
    out, no two share memory, and what an agent writes into its own arrays reaches
    no other observation (the masks are copies of cached bytes)."""
    kept: list[tuple[np.ndarray[Any, Any], bytes]] = []
    scribbled: list[np.ndarray[Any, Any]] = []

    def keep(*arrays: np.ndarray[Any, Any]) -> None:
        for arr in arrays:
            assert arr.flags.writeable
            kept.append((arr, arr.tobytes()))

    env = MoonEnv(players=3, rules=SHORT)
    env.reset(seed=4)
    rng = random.Random(4)
    while not env.terminations[env.agent_selection]:
        for agent in env.possible_agents:
            keep(*env.observe(agent).values())
        obs = env.observe(env.agent_selection)
        legal = np.flatnonzero(obs["action_mask"])
        assert legal.tolist() == list(env.state.legal_ids())
        obs["action_mask"][:] = 1  # the agent writes into its own arrays
        obs["observation"][:] = 7
        scribbled += obs.values()
        env.step(int(rng.choice(legal)))
    gym = MoonSeatEnv(players=3, seat=1, opponents="house:random", rules=SHORT)
    obs, info = gym.reset(seed=4)
    done = False
    while not done:
        keep(obs["observation"], info["action_mask"])
        legal = np.flatnonzero(obs["action_mask"])
        assert legal.tolist() == list(gym.state.legal_ids())
        assert np.array_equal(info["action_mask"], obs["action_mask"])
        obs["action_mask"][:] = 0
        scribbled.append(obs["action_mask"])
        obs, _, done, _, info = gym.step(int(rng.choice(legal)))
    arrays = [a for a, _ in kept] + scribbled
    for arr, before in kept:
        assert arr.tobytes() == before
    for i, a in enumerate(arrays):
        assert not any(np.shares_memory(a, b) for b in arrays[i + 1:])


@pytest.mark.parametrize(("players", "options"), VARIANTS[:4] + VARIANTS[9:11])
def test_environment_observations_are_the_observation_encoded(
        players: int, options: dict[str, object]) -> None:
    """Every seat's observation through `MoonEnv.observe`, at every step, is
    `encode(observation)` to the bit and the mask the engine's legal ids."""
    env = MoonEnv(players=players, rules={"max_hands": 2, **options})
    for seed in range(3):
        env.reset(seed=seed)
        rng = random.Random(seed)
        while not env.terminations[env.agent_selection]:
            st = env.state
            for seat, agent in enumerate(env.possible_agents):
                ref = np.zeros(TENSOR_SIZE, np.float32)
                encode(st.observation(seat), ref)
                got = env.observe(agent)
                assert got["observation"].tobytes() == ref.tobytes()
                want = np.zeros(98, np.int8)
                if seat == st.to_act:
                    want[list(st.legal_ids())] = 1
                assert got["action_mask"].tobytes() == want.tobytes()
            env.step(rng.choice(st.legal_ids()))


@pytest.mark.parametrize(("players", "options"), [(3, {}), (3, {"double_blank": False}), (4, {})])
def test_a_plain_engine_state_and_a_chance_dealt_one_play_the_same_game(
        players: int, options: dict[str, object]) -> None:
    """`wrap` of a plain `GameState` (the engine deals its next hands from the seed, then
    chance deals over them) and of a `ChanceDealt` (no seed deal) fed the same actions
    hold the same slots at every node; each deal is a partition of the tile set."""
    game = load(players, {"max_hands": 3, **options})
    rules = game.rules
    for seed in range(3):
        plain = GameState.new(rules, seed)
        rng = random.Random(seed)
        for _ in range(rng.randrange(1, 20)):
            plain.apply_id(rng.choice(plain.legal_ids()))
        dealt = plain.copy()
        dealt.__class__ = ChanceDealt
        a, b = wrap(game, plain), wrap(game, dealt)
        while not a.is_terminal():
            if a.is_chance_node() and len(a.legal_actions()) == len(tile_set(rules)):
                assert a.engine.hands == [0] * players
            moves = a.legal_actions()
            assert moves == b.legal_actions()
            action = rng.choice(moves)
            dealing = a.is_chance_node()
            a.apply_action(action)
            b.apply_action(action)
            if dealing and not a.is_chance_node():  # the deal is complete
                hands = a.engine.hands
                widow = [a.engine.widow] if a.engine.widow >= 0 else []
                tiles = [t for h in hands for t in range(28) if h >> t & 1] + widow
                assert sorted(tiles) == list(tile_set(rules))
                assert [h.bit_count() for h in hands] == [7] * players
            for slot in GameState.__slots__:
                assert getattr(a.engine, slot) == getattr(b.engine, slot), slot
        assert type(b.engine) is ChanceDealt
