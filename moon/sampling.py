"""Determinization for search bots: a full state consistent with one seat's observation.

The tiles a seat has not seen are dealt among the places hidden from it (the
other hands, the untaken widow, another bidder's discard) so that every public
event stays true: each hand gets its exact size, and a seat that failed to
follow a led suit (or trump) receives no tile that would have followed. The
sample is uniform over consistent deals whenever a few quick rejection rounds
find one (the usual case); otherwise a randomised backtracking search builds
one, which is always possible because the true deal is consistent.

`Sampler(obs)` does the work that depends only on the observation once, so a
search bot that draws many deals for one decision pays it once; `sample_state`
is one `Sampler` and one draw.
"""

from __future__ import annotations

import random

from moon.contracts import FOLLOW, POWER
from moon.errors import MoonError
from moon.observation import Observation, Phase
from moon.rules import Rules
from moon.state import GameState, rule_constants, tile_set

__all__ = ["Sampler", "hidden_places", "sample_state"]

_REJECTION_ROUNDS = 64
_BID, _TRUMP = int(Phase.BID), int(Phase.TRUMP)
# The bits of a mask from four 7-bit table lookups, ascending, for the rejection shuffle.
_BITS_0, _BITS_7, _BITS_14, _BITS_21 = (
    tuple(tuple(1 << (lo + i) for i in range(7) if m >> i & 1) for m in range(128))
    for lo in (0, 7, 14, 21)
)
# The mask of the tiles in play by (players, double_blank), the options that choose it.
_SET_MASK: dict[tuple[int, bool], int] = {
    (n, blank): sum(1 << t for t in tile_set(Rules(players=n, double_blank=blank)))
    for n in (3, 4) for blank in (True, False) if n == 3 or blank
}


def hidden_places(obs: Observation) -> tuple[list[int], list[int], list[int]]:
    """The unseen tiles and, per hidden place, its size and allowed mask.

    Places are the seats 0..n-1 (size 0 for the observer) followed by one extra
    place for the widow or the discard when it is hidden from the observer.
    """
    sampler = Sampler(obs)
    return sampler.unseen, sampler.sizes[:], sampler.allowed


def _construct(unseen: list[int], sizes: list[int], allowed: list[int],
               rng: random.Random) -> list[int]:
    order = sorted(unseen, key=lambda t: (sum(a >> t & 1 for a in allowed), rng.random()))
    room = sizes[:]
    masks = [0] * len(sizes)

    def place(k: int) -> bool:
        if k == len(order):
            return True
        t = order[k]
        options = [p for p in range(len(sizes)) if room[p] and allowed[p] >> t & 1]
        rng.shuffle(options)
        for p in options:
            room[p] -= 1
            masks[p] |= 1 << t
            if place(k + 1):
                return True
            room[p] += 1
            masks[p] ^= 1 << t
        return False

    if not place(0):
        raise MoonError("observation is inconsistent: no deal of the unseen tiles fits it")
    return masks


class Sampler:
    """Deals of the tiles hidden from `obs.seat`, and full states built on them."""

    __slots__ = (
        "_bits",
        "_cuts",
        "_forbid",
        "_hidden",
        "_template",
        "_void",
        "_widow_taken",
        "obs",
        "played",
        "sizes",
    )

    def __init__(self, obs: Observation) -> None:
        # The hidden places (as `hidden_places`, faster) and a template state holding
        # everything but the hidden tiles and the seed: bench/engine.py's
        # `sample_state/s` pays for both on every call.
        self.obs = obs
        n = obs.rules.players
        own = 0
        for tile in obs.hand:
            own |= 1 << tile.index
        plays = [(p.seat, p.tile.index) for trick in obs.tricks for p in trick.plays]
        if obs.current:
            plays += [(p.seat, p.tile.index) for p in obs.current]
        played = [0] * n
        for s, t in plays:
            played[s] |= 1 << t
        void = [0] * n
        if obs.contract is not None and plays:
            follow = FOLLOW[obs.contract]
            for k in range(0, len(plays), n):
                fmask = follow[plays[k][1]]
                for s, t in plays[k + 1 : k + n]:
                    if not fmask >> t & 1:
                        void[s] |= fmask
        self.played = played
        self._places(own, played, void)
        self._template = self._build_template(own, plays)

    def _places(self, own: int, played: list[int], void: list[int]) -> None:
        """The unseen tiles, the hidden places' sizes and the tiles each may not hold."""
        obs = self.obs
        rules = obs.rules
        seen = own
        for m in played:
            seen |= m
        if obs.widow is not None:
            seen |= 1 << obs.widow.index
        if obs.discard is not None:
            seen |= 1 << obs.discard.index
        hidden = _SET_MASK[rules.players, rules.double_blank] & ~seen
        bits = self._bits = (
            _BITS_0[hidden & 0x7F] + _BITS_7[hidden >> 7 & 0x7F]
            + _BITS_14[hidden >> 14 & 0x7F] + _BITS_21[hidden >> 21]
        )
        sizes = self.sizes = list(obs.hand_sizes)
        sizes[obs.seat] = 0
        extra = len(bits) - sum(sizes)
        if extra not in (0, 1):
            raise MoonError(f"observation is inconsistent: {len(bits)} unseen tiles, "
                            f"{sum(sizes)} hidden hand places")
        cuts = []
        pos = 0
        forbid = False
        for size, v in zip(sizes, void, strict=True):
            banned = v & hidden
            forbid = forbid or banned != 0
            cuts.append((pos, pos + size, banned))
            pos += size
        if extra:
            sizes.append(1)
            void.append(0)
            cuts.append((pos, pos + 1, 0))
        self._cuts = cuts
        self._forbid = forbid
        self._hidden = hidden
        self._void = void
        phase = int(obs.phase)
        self._widow_taken = rules.has_widow and phase != _BID and not (
            phase == _TRUMP and rules.trump_before_widow
        )

    def _build_template(self, own: int, plays: list[tuple[int, int]]) -> GameState:
        """A state holding everything the seat sees: its own hand, no other tile, no seed."""
        obs = self.obs
        n = obs.players
        contract = obs.contract
        current = obs.current
        st = GameState.__new__(GameState)
        rules = st.rules = obs.rules
        st._tile_bits, st._next, st._bid_open, st._bid_forced = rule_constants(rules)
        st.n = n
        st.record = False
        st.hand_log = []
        st.winner = st.end = None
        st.seed = 0
        st.hand_index = obs.hand_number - 1
        st.scores = list(obs.scores)
        st.first_bidder = obs.first_bidder
        st.to_act = obs.to_act
        st.phase = int(obs.phase)
        bids = st.bids = [(b.seat, b.bid) for b in obs.bids]
        high = 0
        last = -1
        for s, b in bids:
            if b > high:
                high, last = b, s
        st.high = high
        st.bidder = obs.bidder if obs.bidder is not None else last
        st.bid = obs.bid or 0
        st.contract = -1 if contract is None else contract
        st.plays = plays
        st.winners = [t.winner for t in obs.tricks]
        st.tricks_won = list(obs.tricks_won)
        st.in_trick = len(current)
        st.powers = ()
        st.best_seat = -1
        st.best_power = 0
        if current:
            powers = st.powers = POWER[st.contract][plays[-len(current)][1]]
            for s, t in plays[-len(current):]:
                if powers[t] > st.best_power or st.best_seat < 0:
                    st.best_seat, st.best_power = s, powers[t]
        st.actions = []
        st.hands = [0] * n
        st.hands[obs.seat] = own
        st.widow = st.discard = -1
        st.dealt = ()
        return st

    def deal(self, rng: random.Random) -> list[int]:
        """A mask per hidden place (see `hidden_places`), drawn uniformly when it can be."""
        bits = list(self._bits)
        shuffle = rng.shuffle
        cuts = self._cuts
        rounds = _REJECTION_ROUNDS
        if not self._forbid and rounds:  # no voids: every shuffle fits
            shuffle(bits)
            return [sum(bits[a:b]) for a, b, _ in cuts]
        for _ in range(rounds):
            shuffle(bits)
            masks = []
            for a, b, forbid in cuts:
                m = sum(bits[a:b])
                if m & forbid:
                    break
                masks.append(m)
            else:
                return masks
        return _construct(self.unseen, self.sizes, self.allowed, rng)

    @property
    def unseen(self) -> list[int]:
        """The tiles hidden from the seat, ascending."""
        return [b.bit_length() - 1 for b in self._bits]

    @property
    def allowed(self) -> list[int]:
        """Per hidden place, the mask of unseen tiles it may hold."""
        return [self._hidden & ~v for v in self._void]

    def sample(self, rng: random.Random) -> GameState:
        """A full state that `obs.seat` could be in, drawn with `rng`.

        The sample's future deals come from a fresh seed drawn from `rng`; its
        action list holds only this hand's actions.
        """
        return self._fill(self._template.copy(), rng)

    def _fill(self, st: GameState, rng: random.Random) -> GameState:
        """Deal the hidden tiles into `st`, a copy of the template (or the template itself)."""
        masks = self.deal(rng)
        n = st.n
        seat = self.obs.seat
        own = st.hands[seat]
        hands = st.hands = masks[:n]
        hands[seat] = own
        st.seed = rng.getrandbits(63)
        # What each seat was dealt: its hand now plus what it has played.
        played = self.played
        dealt = [hands[s] | played[s] for s in range(n)]
        extra_tile = masks[n].bit_length() - 1 if len(masks) > n else -1
        if self._widow_taken:
            b = st.bidder
            obs = self.obs
            # The discard: the bidder's own, another seat's hidden one, or none made yet.
            d = st.discard = obs.discard.index if obs.discard is not None else extra_tile
            eight = dealt[b] | (1 << d if d >= 0 else 0)
            if obs.widow is not None:
                w = obs.widow.index
            else:
                # Which of the bidder's eight tiles was the widow is hidden; any will do.
                w = rng.choice([i for i in range(28) if eight >> i & 1])
            st.widow = w
            dealt[b] = eight & ~(1 << w)
        elif st.rules.has_widow:
            st.widow = extra_tile  # still face down in the middle
        st.dealt = tuple(dealt)
        return st


def sample_state(obs: Observation, rng: random.Random) -> GameState:
    """A full state that `obs.seat` could be in, drawn with `rng`.

    The sample's future deals come from a fresh seed drawn from `rng`; its
    action list holds only this hand's actions. To draw many for one
    observation, build one `Sampler(obs)` and call its `sample`.
    """
    sampler = Sampler(obs)
    return sampler._fill(sampler._template, rng)  # used once: no copy needed
