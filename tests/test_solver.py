"""The trick solver against brute force: every line of play tried through the engine.

The brute force below knows nothing of the solver's tables: it asks the engine
for the legal plays, lets the engine resolve every trick, and takes plain
minimax (root side maximises, the others minimise) over an arbitrary value per
final trick count, so a wrong follow, a wrong trick winner, a bad cut-off or a
stale transposition entry shows up as a different value.
"""

from __future__ import annotations

import random
from itertools import product

import pytest
from test_engine_properties import choose

from bots.playout import playout
from bots.solver import Solver, won_code
from moon import GameState, Rules

PLAY = 3


def _position(players: int, tricks_left: int, seed: int, mid_trick: int = 0) -> GameState:
    """A random hand's play phase with `tricks_left` tricks to go, `mid_trick` tiles into one."""
    rng = random.Random(seed)
    game = seed
    while True:
        st = GameState.new(Rules.make(players, {"max_hands": 1}), game)
        while not st.is_over:
            if (st.phase == PLAY and len(st.winners) == 7 - tricks_left
                    and st.in_trick == mid_trick):
                return st
            st.apply_id(choose(st, rng))
        game += 1000


def _brute(st: GameState, root: int, values: dict[tuple[int, ...], int]) -> int:
    """Plain minimax through the engine, no pruning, no memory."""
    hand = st.hand_index
    if st.hand_index != hand or len(st.winners) == 7:
        raise AssertionError("called on a finished hand")
    n = st.n
    best: int | None = None
    maximize = (st.to_act % 2 == root % 2) if n == 4 else st.to_act == root
    for aid in st.legal_ids():
        nxt = st.copy()
        nxt.record = True
        nxt.apply_id(aid)
        if nxt.hand_index != hand:  # the seventh trick ended the hand
            v = values[tuple(nxt.hand_log[-1]["tricks_won"])]
        else:
            v = _brute(nxt, root, values)
        if best is None or (v > best if maximize else v < best):
            best = v
    assert best is not None
    return best


def _random_values(n: int, rng: random.Random) -> tuple[list[int], dict[tuple[int, ...], int]]:
    table = [0] * (1 << 3 * n)
    values = {}
    for won in product(range(8), repeat=n):
        if sum(won) == 7:
            values[won] = table[won_code(won)] = rng.randrange(-20, 21)
    return table, values


@pytest.mark.parametrize(("players", "tricks_left", "cases"),
                         [(3, 1, 12), (3, 2, 12), (3, 3, 12), (3, 4, 4),
                          (4, 1, 12), (4, 2, 12), (4, 3, 6)])
def test_the_solver_agrees_with_brute_force(players: int, tricks_left: int, cases: int) -> None:
    rng = random.Random(players * 10 + tricks_left)
    for case in range(cases):
        st = _position(players, tricks_left, seed=case, mid_trick=case % players)
        root = st.to_act if case % 2 else (st.to_act + 1) % players
        table, values = _random_values(players, rng)
        brute = _brute(st, root, values)
        maximizers = [s % 2 == root % 2 if players == 4 else s == root for s in range(players)]
        solver = Solver(players, st.contract, maximizers, table)
        k = st.in_trick
        trick = [t for _, t in st.plays[len(st.plays) - k:]]
        leader = st.plays[-k][0] if k else st.to_act
        hands = st.hands[:]
        assert solver.solve(hands, leader, trick, st.tricks_won) == brute, (case, st)
        assert hands == st.hands  # the hands are given back as they were
        # Solved again with the transposition table full: the same value.
        assert solver.solve(hands, leader, trick, st.tricks_won) == brute


def test_a_narrow_window_gives_a_true_bound() -> None:
    rng = random.Random(5)
    for case in range(10):
        st = _position(3, 3, seed=100 + case)
        table, values = _random_values(3, rng)
        root = st.to_act
        exact = _brute(st, root, values)
        maximizers = [s == root for s in range(3)]
        for alpha, beta in ((exact - 1, exact + 1), (exact, exact + 5), (exact - 5, exact)):
            v = Solver(3, st.contract, maximizers, table).solve(
                st.hands[:], st.to_act, [], st.tricks_won, alpha, beta)
            if alpha < v < beta:
                assert v == exact
            elif v <= alpha:
                assert exact <= v
            else:
                assert exact >= v


def test_with_one_trick_left_the_solver_and_greedy_play_agree() -> None:
    # Nothing is left to choose in the last trick: the solved tricks are the played ones.
    for seed in range(20):
        st = _position(3, 1, seed=200 + seed)
        root = st.to_act
        table = [0] * 512
        for won in product(range(8), repeat=3):
            if sum(won) == 7:
                table[won_code(won)] = won[root]
        greedy = playout(3, st.contract, st.hands, st.to_act, [], st.tricks_won, 0)[0]
        solved = Solver(3, st.contract, [s == root for s in range(3)], table).solve(
            st.hands[:], st.to_act, [], st.tricks_won)
        assert solved == greedy[root]
