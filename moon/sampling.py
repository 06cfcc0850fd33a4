"""Determinization for search bots: a full state consistent with one seat's observation.

The tiles a seat has not seen are dealt among the places hidden from it (the
other hands, the untaken widow, another bidder's discard) so that every public
event stays true: each hand gets its exact size, and a seat that failed to
follow a led suit (or trump) receives no tile that would have followed. The
sample is uniform over consistent deals whenever a few quick rejection rounds
find one (the usual case); otherwise a randomised backtracking search builds
one, which is always possible because the true deal is consistent.
"""

from __future__ import annotations

import random

from moon.contracts import FOLLOW, POWER
from moon.errors import MoonError
from moon.observation import Observation, Phase
from moon.state import GameState, tile_set

__all__ = ["hidden_places", "sample_state"]

_REJECTION_ROUNDS = 64


def hidden_places(obs: Observation) -> tuple[list[int], list[int], list[int]]:
    """The unseen tiles and, per hidden place, its size and allowed mask.

    Places are the seats 0..n-1 (size 0 for the observer) followed by one extra
    place for the widow or the discard when it is hidden from the observer.
    """
    n = obs.players
    seen = 0
    for t in obs.hand:
        seen |= 1 << t.index
    for trick in obs.tricks:
        for p in trick.plays:
            seen |= 1 << p.tile.index
    for p in obs.current:
        seen |= 1 << p.tile.index
    if obs.widow is not None:
        seen |= 1 << obs.widow.index
    if obs.discard is not None:
        seen |= 1 << obs.discard.index
    unseen = [i for i in tile_set(obs.rules) if not seen >> i & 1]

    void = [0] * n
    if obs.contract is not None:
        follow = FOLLOW[obs.contract]
        for plays in [t.plays for t in obs.tricks] + [obs.current]:
            if not plays:
                continue
            led = plays[0].tile.index
            fmask = follow[led]
            for p in plays[1:]:
                if not fmask >> p.tile.index & 1:
                    void[p.seat] |= fmask
    sizes = [0 if s == obs.seat else obs.hand_sizes[s] for s in range(n)]
    extra = len(unseen) - sum(sizes)
    if extra not in (0, 1):
        raise MoonError(f"observation is inconsistent: {len(unseen)} unseen tiles, "
                        f"{sum(sizes)} hidden hand places")
    full = sum(1 << i for i in unseen)
    allowed = [full & ~v for v in void]
    if extra:
        sizes.append(1)
        allowed.append(full)
    return unseen, sizes, allowed


def _reject(unseen: list[int], sizes: list[int], allowed: list[int],
            rng: random.Random) -> list[int] | None:
    tiles = unseen[:]
    for _ in range(_REJECTION_ROUNDS):
        rng.shuffle(tiles)
        masks = []
        pos = 0
        ok = True
        for size, allow in zip(sizes, allowed, strict=True):
            m = 0
            for t in tiles[pos : pos + size]:
                m |= 1 << t
            pos += size
            if m & ~allow:
                ok = False
                break
            masks.append(m)
        if ok:
            return masks
    return None


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


def sample_state(obs: Observation, rng: random.Random) -> GameState:
    """A full state that `obs.seat` could be in, drawn with `rng`.

    The sample's future deals come from a fresh seed drawn from `rng`; its
    action list holds only this hand's actions.
    """
    unseen, sizes, allowed = hidden_places(obs)
    masks = _reject(unseen, sizes, allowed, rng) or _construct(unseen, sizes, allowed, rng)
    n = obs.players
    hands = [masks[s] for s in range(n)]
    hands[obs.seat] = sum(1 << t.index for t in obs.hand)
    extra = masks[n] if len(masks) > n else 0
    extra_tile = extra.bit_length() - 1 if extra else -1

    st = GameState.new(obs.rules, rng.getrandbits(63))
    st.hand_index = obs.hand_number - 1
    st.scores = list(obs.scores)
    st.first_bidder = obs.first_bidder
    st.to_act = obs.to_act
    st.phase = int(obs.phase)
    st.bids = [(b.seat, b.bid) for b in obs.bids]
    st.high = max((b.bid for b in obs.bids), default=0)
    st.bidder = obs.bidder if obs.bidder is not None else next(
        (b.seat for b in obs.bids if b.bid and b.bid == st.high), -1
    )
    st.bid = obs.bid or 0
    st.contract = -1 if obs.contract is None else obs.contract
    st.plays = [(p.seat, p.tile.index) for t in obs.tricks for p in t.plays]
    st.plays += [(p.seat, p.tile.index) for p in obs.current]
    st.winners = [t.winner for t in obs.tricks]
    st.tricks_won = list(obs.tricks_won)
    st.hands = hands

    # What each seat was dealt: its hand now plus what it has played.
    dealt = hands[:]
    for seat, t in st.plays:
        dealt[seat] |= 1 << t
    st.widow = st.discard = -1
    if obs.rules.has_widow:
        taken = obs.phase != Phase.BID and not (
            obs.phase == Phase.TRUMP and obs.rules.trump_before_widow
        )
        if not taken:
            st.widow = extra_tile  # still face down in the middle
        else:
            b = st.bidder
            if obs.discard is not None:
                st.discard = obs.discard.index
            else:
                st.discard = extra_tile  # another seat's discard, or none made yet
            eight = dealt[b] | (1 << st.discard if st.discard >= 0 else 0)
            if obs.widow is not None:
                st.widow = obs.widow.index
            else:
                # Which of the bidder's eight tiles was the widow is hidden; any will do.
                st.widow = rng.choice([i for i in range(28) if eight >> i & 1])
            dealt[b] = eight & ~(1 << st.widow)
    st.dealt = tuple(dealt)
    st.in_trick = len(obs.current)
    if obs.current:
        led = obs.current[0].tile.index
        st.powers = POWER[st.contract][led]
        best = max(obs.current, key=lambda p: st.powers[p.tile.index])
        st.best_seat = best.seat
        st.best_power = st.powers[best.tile.index]
    st.actions = []
    return st
