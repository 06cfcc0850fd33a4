"""Moon as an OpenSpiel game: `pyspiel.load_game("moon", {"players": 3, ...})`.

Importing this module registers the game `moon` with pyspiel. Its parameters are
`players` (3, or 4 for 2v2) and every rules option of `moon.rules` under its own
name, with the same defaults. The engine plays the game: this module only adds
what OpenSpiel needs around it.

- **Chance.** The first bidder of the game is one chance node (a seat), then each
  hand's deal is one chance node per tile of every seat but the last (the tile at
  that position of a shuffle, uniform over the tiles not dealt yet), then, if there
  is a widow, one node for it (uniform over the 8 tiles left); the last seat holds
  what is left, a set no order of which matters, so it takes no node: 15 nodes a
  3p deal, 21 a 2v2 one. Seat `s` gets positions 7s..7s+6 and the widow the one
  after the last seat's, exactly as `moon.deal` lays out a seed's shuffle, so
  `chance_outcomes_of_seed` turns an engine seed into the chance outcomes that deal
  the same tiles (the equivalence tests use it).
- **Actions.** A player action's id is the engine's (`moon.actions`): 98 ids, the
  unused ones never legal.
- **Information.** A seat's information state and observation are built from
  `GameState.observation(seat)` and nothing else, so they hold what RULES.md lets
  the seat see. The observation already holds the whole public history of the
  hand in progress, and earlier hands matter only through the scores (each deal
  is independent), so the two strings are the same text and the two tensors the
  same vector (`encode`).
- **Returns.** The game's result as the stack scores a test of a change: in 3p
  the seats ranked by final score, 1 first, 0 second, -1 last (tied seats share
  what their places cover); in 2v2 a won game +1 for both partners, a lost one
  -1, a draw 0. Zero-sum.
- **Resampling.** `resample_from_infostate` deals the tiles hidden from the seat
  with the engine's own `moon.Sampler`, which keeps every void the play showed.
  The resampled state starts where the seat stands: its `history()` is empty.
"""

from __future__ import annotations

import json
import random
import struct
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any, cast

import numpy as np
import pyspiel

from moon import GameState, Observation, Rules
from moon.actions import ACTIONS, MOON
from moon.deal import deal_order, first_bidder
from moon.sampling import Sampler
from moon.state import tile_set
from moon.tiles import ALL_TILES

__all__ = [
    "GAME_NAME",
    "NUM_ACTIONS",
    "SCORE_SLOTS",
    "TENSOR_SIZE",
    "ChanceDealt",
    "MoonGame",
    "MoonState",
    "Played",
    "chance_outcomes_of_seed",
    "encode",
    "encode_state",
    "game_returns",
    "history_of_seed",
    "load",
    "resample",
    "rules_of",
    "tensor_of",
    "wrap",
]

GAME_NAME = "moon"
NUM_ACTIONS = 98  # engine ids 0..97 (moon.actions)
_DEFAULTS = Rules()
_PARAMETERS: dict[str, object] = {"players": 3, **_DEFAULTS.options()}
# A hand's player moves at most: 4 calls, a discard, trumps and 28 plays; its chance
# nodes at most 21 tiles (2v2: the first three seats'), and the game's first bidder.
_MOVES_PER_HAND = 4 + 2 + 28 + 21

_GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Moon (trick-taking dominoes)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=4,
    min_num_players=3,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=_PARAMETERS,
)


def rules_of(params: dict[str, Any]) -> Rules:
    """The engine's rules from OpenSpiel game parameters (`players` and rules options)."""
    options = {k: v for k, v in params.items() if k != "players"}
    return Rules.make(int(params.get("players", 3)), options)


def chance_outcomes_of_seed(rules: Rules, seed: int, hand: int) -> list[int]:
    """The chance outcomes that deal hand `hand` of the engine's game `seed`.

    Hand 0 starts with the first bidder's seat. Then come the tiles at the shuffle's
    positions of every seat but the last, then the widow's if there is one: the last
    seat holds the rest.
    """
    n = rules.players
    order = deal_order(seed, hand, tile_set(rules))
    tiles = order[:7 * (n - 1)] + order[7 * n:]
    return [first_bidder(seed, n), *tiles] if hand == 0 else tiles


def game_returns(st: GameState) -> list[float]:
    """Each player's return of a finished game (zero-sum; see the module's docstring)."""
    n = st.n
    if n == 4:
        if st.winner is None:
            return [0.0] * 4
        return [1.0 if s % 2 == st.winner else -1.0 for s in range(4)]
    scores = st.scores
    # (beaten + tied / 2) / 2 is the seat's game score in [0, 1]; twice it less one.
    return [
        sum((v > w) + (v == w) / 2 for j, w in enumerate(scores) if j != s) - 1.0
        for s, v in enumerate(scores)
    ]


# The tensor: fixed offsets, 4 seats wide whatever the player count.
_SEAT, _TO_ACT, _FIRST, _PHASE, _HAND = 0, 4, 8, 12, 17
_CALLS = 45  # per seat: not yet spoken, pass, 3, 4, 5, 6, 7, 21
_BIDDER, _BID, _CONTRACT, _WIDOW, _DISCARD = 77, 81, 87, 96, 124
_PLAYED = 152  # per tile: the trick (7) and the seat (4) it was played in
_WON, _SCORES, _SIZES, _HAND_NO = 460, 464, 467, 471
TENSOR_SIZE = 472
SCORE_SLOTS = slice(_SCORES, _SCORES + 3)  # scores over the target: the unbounded slots
_CALL_SLOT = {0: 1, 3: 2, 4: 3, 5: 4, 6: 5, 7: 6, MOON: 7}
_BID_SLOT = {3: 0, 4: 1, 5: 2, 6: 3, 7: 4, MOON: 5}


def encode(obs: Observation, out: np.ndarray[Any, np.dtype[np.float32]]) -> None:
    """Write `obs` into `out` (TENSOR_SIZE floats): one-hots, tile bits and scaled counts."""
    out.fill(0.0)
    rules = obs.rules
    out[_SEAT + obs.seat] = 1
    out[_TO_ACT + obs.to_act] = 1
    out[_FIRST + obs.first_bidder] = 1
    out[_PHASE + int(obs.phase)] = 1
    for t in obs.hand:
        out[_HAND + t.index] = 1
    spoke = [False] * 4
    for b in obs.bids:
        out[_CALLS + 8 * b.seat + _CALL_SLOT[b.bid]] = 1
        spoke[b.seat] = True
    for s in range(rules.players):
        if not spoke[s]:
            out[_CALLS + 8 * s] = 1
    if obs.bidder is not None:
        out[_BIDDER + obs.bidder] = 1
    if obs.bid is not None:
        out[_BID + _BID_SLOT[obs.bid]] = 1
    if obs.contract is not None:
        out[_CONTRACT + obs.contract] = 1
    if obs.widow is not None:
        out[_WIDOW + obs.widow.index] = 1
    if obs.discard is not None:
        out[_DISCARD + obs.discard.index] = 1
    for k, plays in enumerate((*(t.plays for t in obs.tricks), obs.current)):
        for p in plays:
            base = _PLAYED + 11 * p.tile.index
            out[base + k] = 1
            out[base + 7 + p.seat] = 1
    for s, w in enumerate(obs.tricks_won):
        out[_WON + s] = w / 7
    goal = rules.marks_target if rules.scoring == "marks" else rules.target
    for i, v in enumerate(obs.scores):
        out[_SCORES + i] = v / goal
    for s, size in enumerate(obs.hand_sizes):
        out[_SIZES + s] = size / 8
    out[_HAND_NO] = obs.hand_number / rules.max_hands


# The same tensor straight from the engine's state (`encode_state`), as bytes of
# float32 assembled from tables: no `Observation`, no per-tile loop.
_F32 = 4


def _onehots(width: int) -> tuple[bytes, ...]:
    """`width` one-hot rows of float32 bytes, then the all-zero row (index -1 or width)."""
    rows = np.vstack([np.eye(width, dtype="<f4"), np.zeros((1, width), "<f4")])
    return tuple(r.tobytes() for r in rows)


def _bit_rows(width: int) -> tuple[bytes, ...]:
    """Row m: the `width` low bits of m as float32 bytes."""
    m = np.arange(1 << width, dtype=np.uint32)[:, None]
    bits = (m >> np.arange(width, dtype=np.uint32) & 1).astype("<f4")
    return tuple(r.tobytes() for r in bits)


_ONE4, _ONE5, _ONE9, _ONE28 = _onehots(4), _onehots(5), _onehots(9), _onehots(28)
_HEAD = tuple(  # seat, to act, first bidder, phase
    _ONE4[s] + _ONE4[a] + _ONE4[f] + _ONE5[p]
    for s in range(4) for a in range(4) for f in range(4) for p in range(5))
_BITS14 = _bit_rows(14)
_MID = {  # bidder, bid, contract (each -1 when not shown)
    (b, v, c): _ONE4[b] + _onehots(6)[_BID_SLOT.get(v, -1)] + _ONE9[c]
    for b in range(-1, 4) for v in (-1, *_BID_SLOT) for c in range(-1, 9)}
_CALL_ROWS = {v: _onehots(8)[k] for v, k in _CALL_SLOT.items()}
_NOT_SPOKEN = _onehots(8)[0]
_SILENT = _onehots(8)[-1]
_CALLS_OF: dict[tuple[int, tuple[tuple[int, int], ...]], bytes] = {}
_TAIL = struct.Struct("<12f")  # tricks won (4), scores (3), hand sizes (4), hand number
_PLAYED_BYTES = (_WON - _PLAYED) * _F32


def _calls(n: int, bids: tuple[tuple[int, int], ...]) -> bytes:
    """The calls' slots of the auction `bids` (seat, bid) so far: 4 seats of 8."""
    found = _CALLS_OF.get((n, bids))
    if found is None:
        rows = [_NOT_SPOKEN if s < n else _SILENT for s in range(4)]
        for s, b in bids:
            rows[s] = _CALL_ROWS[b]
        found = _CALLS_OF[(n, bids)] = b"".join(rows)
    return found


# A played tile's 11 slots (its trick's one-hot, then its seat's) as float32 bytes, by
# trick * 4 + seat: a tile is played once a hand, so its slots are written in one go.
_PLAY_BLOCK = tuple(_onehots(7)[k] + _ONE4[s] for k in range(7) for s in range(4))
_BLOCK = 11 * _F32


def played_slots(plays: Sequence[tuple[int, int]], n: int, start: int = 0,
                 buf: bytearray | None = None) -> bytearray:
    """The played tiles' slots (trick, seat) of `plays` (seat, tile) from `start` on.

    `buf` (the slots of `plays[:start]`, all zero but theirs) is written in place.
    """
    if buf is None:
        buf = bytearray(_PLAYED_BYTES)
    for i in range(start, len(plays)):
        s, t = plays[i]
        o = _BLOCK * t
        buf[o:o + _BLOCK] = _PLAY_BLOCK[i // n * 4 + s]
    return buf


class Played:
    """A hand's public slots that only grow: the played tiles and the calls.

    Within a hand the engine only appends to its `plays` and `bids` lists (a new
    hand, or a copy of the state, has new lists), so `encode_state` follows them by
    what was appended since its last call with this cache.
    """

    __slots__ = ("bids", "buf", "calls", "done", "plays", "spoken")

    def __init__(self) -> None:
        self.plays: list[tuple[int, int]] | None = None
        self.done = 0  # plays written into buf
        self.buf = bytearray(_PLAYED_BYTES)
        self.bids: list[tuple[int, int]] | None = None
        self.spoken = -1  # calls in `calls`
        self.calls = b""


_SEVENTHS = tuple(w / 7 for w in range(8))
_FLOAT32 = np.dtype(np.float32)
_JOIN = bytearray().join  # a new bytearray of the parts (the empty separator unchanged)
_EIGHTHS = tuple(k / 8 for k in range(9))


def _parts(st: GameState, seat: int, played: Played | None
           ) -> tuple[bytes | bytearray, ...]:
    """`encode_state`'s float32 bytes in the tensor's order, not joined yet."""
    phase = st.phase
    rules = st.rules
    bidder = st.bidder
    shown = bidder >= 0 and phase != 0
    hands = st.hands
    h = hands[seat]
    if shown and seat == bidder:
        widow = st.widow if st.widow >= 0 and st.widow_taken else -1
        discard = st.discard
    else:
        widow = discard = -1
    goal = rules.marks_target if rules.scoring == "marks" else rules.target
    tw = st.tricks_won
    sc = st.scores
    e = _EIGHTHS
    hand_no = (st.hand_index + (phase != 4)) / rules.max_hands
    if st.n == 3:
        tail = _TAIL.pack(_SEVENTHS[tw[0]], _SEVENTHS[tw[1]], _SEVENTHS[tw[2]], 0.0,
                          sc[0] / goal, sc[1] / goal, sc[2] / goal,
                          e[hands[0].bit_count()], e[hands[1].bit_count()],
                          e[hands[2].bit_count()], 0.0, hand_no)
    else:
        tail = _TAIL.pack(_SEVENTHS[tw[0]], _SEVENTHS[tw[1]], _SEVENTHS[tw[2]],
                          _SEVENTHS[tw[3]], sc[0] / goal, sc[1] / goal, 0.0,
                          e[hands[0].bit_count()], e[hands[1].bit_count()],
                          e[hands[2].bit_count()], e[hands[3].bit_count()], hand_no)
    if played is None:
        played = Played()
    plays = st.plays
    done = played.done
    if plays is not played.plays or len(plays) < done:
        played.plays = plays
        played.buf = bytearray(_PLAYED_BYTES)
        done = 0
    k = len(plays)
    if k > done:
        if k == done + 1:  # one play since the last call, as a step makes
            s, t = plays[done]
            o = _BLOCK * t
            played.buf[o:o + _BLOCK] = _PLAY_BLOCK[done // st.n * 4 + s]
        else:
            played_slots(plays, st.n, done, played.buf)
        played.done = k
    bids = st.bids
    if bids is not played.bids or len(bids) != played.spoken:
        played.bids, played.spoken = bids, len(bids)
        played.calls = _calls(st.n, tuple(bids))
    return (
        _HEAD[((seat * 4 + st.to_act) * 4 + st.first_bidder) * 5 + phase],
        _BITS14[h & 0x3FFF], _BITS14[h >> 14], played.calls,
        _MID[(bidder if shown else -1, st.bid if shown else -1, st.contract)],
        _ONE28[widow], _ONE28[discard], played.buf, tail,
    )


def encode_state(st: GameState, seat: int, played: Played | None = None) -> bytes:
    """`encode(st.observation(seat))` as float32 bytes, built from the engine's masks.

    Reads only what `GameState.observation(seat)` shows: the seat's own hand, the
    widow and the discard only for the bidder once `observation` would show them.
    `played` (the caller's cache of the hand's public slots) saves redoing the hand.
    """
    return b"".join(_parts(st, seat, played))


def tensor_of(st: GameState, seat: int, played: Played | None = None
              ) -> np.ndarray[Any, np.dtype[np.float32]]:
    """A new writable array of `encode_state` (joined straight into its own buffer)."""
    return np.frombuffer(_JOIN(_parts(st, seat, played)), _FLOAT32)


def _text(obs: Observation) -> str:
    """The observation as one line of JSON: everything the seat sees, nothing else."""
    return json.dumps(obs.to_json(), separators=(",", ":"))


class MoonGame(pyspiel.Game):
    """The OpenSpiel game: the engine's rules from the parameters."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        merged = {**_PARAMETERS, **(params or {})}
        self.rules = rules_of(merged)
        info = pyspiel.GameInfo(
            num_distinct_actions=NUM_ACTIONS,
            max_chance_outcomes=28,
            num_players=self.rules.players,
            min_utility=-1.0,
            max_utility=1.0,
            utility_sum=0.0,
            max_game_length=_MOVES_PER_HAND * self.rules.max_hands + 1,
        )
        super().__init__(_GAME_TYPE, info, merged)

    def new_initial_state(self) -> MoonState:
        """The game before its first chance node (the first bidder)."""
        return MoonState(self)

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> MoonObserver:
        """The observer of both the information state and the observation (the same)."""
        if params:
            raise ValueError(f"the moon observer takes no parameters; got {params}")
        return MoonObserver()


class _Core:
    """What a state holds: the engine's state and the deal being dealt.

    OpenSpiel clones a Python state by deep-copying its `__dict__` into a fresh initial
    state, so everything lives in this one object, which copies itself the engine's
    cheap way.
    """

    __slots__ = ("dealt", "first_pending", "left", "st")

    def __init__(self, st: GameState, first_pending: bool, dealt: int | None) -> None:
        self.st = st
        self.first_pending = first_pending
        self.dealt = dealt  # tiles dealt so far this hand, None when not dealing
        # The tiles not dealt yet, ascending (all of them outside a deal).
        self.left = list(tile_set(st.rules))

    def __deepcopy__(self, memo: dict[int, object]) -> _Core:
        c = _Core.__new__(_Core)
        c.st = self.st.copy()
        c.first_pending = self.first_pending
        c.dealt = self.dealt
        c.left = self.left[:]
        return c


# The uniform probability of each count of outcomes (1 to 28).
_UNIFORM = tuple(0.0 if k == 0 else 1.0 / k for k in range(29))
# A tile's chance outcome when k tiles are left: _OUTCOME[k][t] is (t, 1/k).
_OUTCOME = tuple(tuple((t, _UNIFORM[k]) for t in range(28)) for k in range(29))
# The first bidder's chance outcomes, per player count.
_FIRST_OUTCOMES = {n: tuple((s, 1.0 / n) for s in range(n)) for n in (3, 4)}
_CHANCE = int(pyspiel.PlayerId.CHANCE)
_TERMINAL = int(pyspiel.PlayerId.TERMINAL)


class ChanceDealt(GameState):
    """The engine's state in the OpenSpiel game, whose deals chance makes.

    The engine deals a new hand from the game's seed as the last one ends (`_deal`);
    here the chance nodes that follow deal it, so the new hand starts with no tiles
    (no hands, no widow) and the seed's shuffle is not drawn for nothing. Everything
    else a new hand starts with is the engine's (`GameState._deal`, which a test
    compares slot by slot). Its copies are of this class too.
    """

    __slots__ = ()

    def _deal(self, first: int) -> None:
        n = self.n
        self.hands = [0] * n
        self.widow = -1
        self.dealt = ()
        self.first_bidder = first
        self.to_act = first
        self.phase = 0
        self.bids = []
        self.high = 0
        self.bidder = -1
        self.bid = 0
        self.contract = -1
        self.discard = -1
        self.plays = []
        self.winners = []
        self.in_trick = 0
        self.tricks_won = [0] * n

    def copy(self) -> ChanceDealt:
        """An independent copy (`GameState.copy`), of this class."""
        c = GameState.copy(self)
        c.__class__ = ChanceDealt
        return cast(ChanceDealt, c)


# A new game's engine state per rules, copied for each new state (cheaper than a deal).
_FRESH: dict[Rules, ChanceDealt] = {}


def _fresh(rules: Rules) -> ChanceDealt:
    st = _FRESH.get(rules)
    if st is None:
        st = _FRESH[rules] = cast(ChanceDealt, ChanceDealt.new(rules, 0))
        st.first_bidder = st.to_act = 0  # until chance names the first bidder
    return st.copy()


class MoonState(pyspiel.State):
    """A game in progress: an engine state plus the deal being dealt, if any.

    `current_player`, `is_terminal`, `is_chance_node`, `is_player_node`,
    `legal_actions` and `chance_outcomes` answer Python callers here, from the engine,
    without the round trip through pyspiel's C++ `State` (which calls back into
    `current_player` and `_legal_actions`); they answer exactly what pyspiel's own
    would. `apply_action` stays pyspiel's, which keeps the history.
    """

    def __init__(self, game: MoonGame, core: _Core | None = None) -> None:
        super().__init__(game)
        if core is None:
            rules = getattr(game, "rules", None) or rules_of(game.get_parameters())
            core = _Core(_fresh(rules), True, 0)
        self._core = core

    @property
    def engine(self) -> GameState:
        """The engine's state (not a copy; a `ChanceDealt` from a new state).

        It keeps no transcript of its hands (`record` off, as the referee's fast path);
        set `state.engine.record = True` on a new state to have them in `hand_log`.
        """
        return self._core.st

    def current_player(self) -> int:
        """The seat to act, CHANCE while dealing, TERMINAL at the end."""
        core = self._core
        st = core.st
        if st.phase == 4:
            return _TERMINAL
        if core.dealt is not None:
            return _CHANCE
        return st.to_act

    def is_terminal(self) -> bool:
        """True once the engine says the game is over."""
        return self._core.st.phase == 4

    def is_chance_node(self) -> bool:
        """True while dealing (the first bidder, then the tiles)."""
        core = self._core
        return core.dealt is not None and core.st.phase != 4

    def is_player_node(self) -> bool:
        """True when a seat is to act."""
        core = self._core
        return core.dealt is None and core.st.phase != 4

    def legal_actions(self, player: int | None = None) -> list[int]:
        """The legal actions (chance outcomes at a chance node), as pyspiel's own."""
        core = self._core
        st = core.st
        if st.phase == 4:
            return []
        if core.dealt is not None:  # whoever asks, as pyspiel's
            return list(range(st.n)) if core.first_pending else core.left[:]
        if player is not None and player != st.to_act:
            if player < 0:
                raise pyspiel.SpielError(f"Called LegalActions for pseudo-player {player}")
            return []
        return list(st.legal_ids())

    def _legal_actions(self, player: int) -> list[int]:
        return list(self._core.st.legal_ids())

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """The first bidder's seat, or the tiles not dealt yet: uniform."""
        core = self._core
        if core.first_pending:
            return list(_FIRST_OUTCOMES[core.st.n])
        left = core.left
        if len(left) > 1:  # itemgetter of several keys gives a tuple (the fastest way)
            return [*itemgetter(*left)(_OUTCOME[len(left)])]
        return [_OUTCOME[1][t] for t in left]

    def _apply_action(self, action: int) -> None:
        core = self._core
        st = core.st
        dealt = core.dealt
        if dealt is None:
            hand = st.hand_index
            st.apply_id(action)
            if st.hand_index != hand and st.phase != 4:  # a new hand: deal it
                st.hands = [0] * st.n
                st.widow = -1
                st.dealt = ()
                core.dealt = 0
                core.left = list(tile_set(st.rules))
            return
        if core.first_pending:
            st.first_bidder = st.to_act = action
            core.first_pending = False
            return
        # Seat s < n-1 holds positions 7s..7s+6 of the shuffle, a node each; then
        # the widow (if any), a node of its own; the last seat holds what is left.
        left = core.left
        left.remove(action)
        hands = st.hands
        last = 7 * (st.n - 1)
        if dealt < last:
            hands[dealt // 7] |= 1 << action
            dealt += 1
            if dealt < last or len(left) != 7:
                core.dealt = dealt
                return
        else:
            st.widow = action
        rest = 0
        for t in left:
            rest |= 1 << t
        hands[-1] = rest
        left.clear()
        st.dealt = tuple(hands)
        core.dealt = None

    def _action_to_string(self, player: int, action: int) -> str:
        core = self._core
        if player == pyspiel.PlayerId.CHANCE:
            if core.first_pending:
                return f"first bidder {action}"
            if not 0 <= action < 28:
                return f"no tile {action}"
            position = core.dealt or 0
            where = f"seat {position // 7}" if position < 7 * (core.st.n - 1) else "the widow"
            return f"deal {ALL_TILES[action]} to {where}"
        found = ACTIONS.get(action)
        return found.label if found is not None else f"no action {action}"

    def returns(self) -> list[float]:
        """Each player's return: 0 until the end, then `game_returns`."""
        st = self._core.st
        if not st.is_over:
            return [0.0] * st.n
        return game_returns(st)

    def observation_of(self, player: int) -> Observation:
        """What `player` sees now (the engine's observation)."""
        return self._core.st.observation(player)

    def resample_from_infostate(self, player_id: int, probability_sampler: Callable[[], float]
                                ) -> MoonState:
        """A state `player_id` cannot tell from this one, its hidden tiles dealt anew."""
        seed = int(probability_sampler() * (1 << 53)) ^ int(probability_sampler() * (1 << 26))
        return resample(self.get_game(), self.observation_of(player_id), random.Random(seed))

    def __str__(self) -> str:
        st = self._core.st
        hands = " | ".join(
            " ".join(str(ALL_TILES[t]) for t in range(28) if h >> t & 1) for h in st.hands
        )
        return f"{st.summary()}; hands {hands}; actions {st.actions}"


def resample(game: MoonGame, obs: Observation, rng: random.Random) -> MoonState:
    """A state of `game` consistent with `obs`, the hidden tiles dealt by `moon.Sampler`."""
    return wrap(game, Sampler(obs).sample(rng))


def wrap(game: MoonGame, st: GameState) -> MoonState:
    """A state of `game` at the engine's state `st` (a decision, not a deal), which it owns.

    Its next hands are dealt by chance nodes: a plain `GameState` deals them from its
    seed first, which `_apply_action` then clears (a `ChanceDealt` skips that).
    """
    return MoonState(game, _Core(st, False, None))


class MoonObserver:
    """OpenSpiel's observer (PyObserver): the seat's observation as text and as a tensor."""

    def __init__(self) -> None:
        self.tensor: np.ndarray[Any, np.dtype[np.float32]] = np.zeros(TENSOR_SIZE, np.float32)
        self.dict = {"observation": self.tensor}

    def set_from(self, state: MoonState, player: int) -> None:
        """Fill `tensor` with what `player` sees in `state` (`encode_state`)."""
        st = state.engine
        if not 0 <= player < st.n:
            raise ValueError(f"no player {player} in a {st.n}-player game")
        self.tensor[:] = np.frombuffer(encode_state(st, player), np.float32)

    def string_from(self, state: MoonState, player: int) -> str:
        """What `player` sees in `state`, as text."""
        return _text(state.observation_of(player))


def load(players: int = 3, options: dict[str, object] | None = None) -> MoonGame:
    """The game for `players` and rules options (strings parsed as `Rules.make` does)."""
    rules = Rules.make(players, options)
    game = pyspiel.load_game(GAME_NAME, {"players": players, **rules.options()})
    assert isinstance(game, MoonGame)
    return game


def history_of_seed(rules: Rules, seed: int, actions: Sequence[int]) -> list[int]:
    """The OpenSpiel action history (chance outcomes included) of the engine's game."""
    game = load(rules.players, rules.options())
    state = game.new_initial_state()
    out: list[int] = []
    queue = list(actions)
    pending: list[int] = []
    while not state.is_terminal():
        if state.is_chance_node():
            if not pending:
                pending = chance_outcomes_of_seed(rules, seed, state.engine.hand_index)
            action = pending.pop(0)
        else:
            if not queue:
                break
            action = queue.pop(0)
        state.apply_action(action)
        out.append(action)
    return out


pyspiel.register_game(_GAME_TYPE, MoonGame)
