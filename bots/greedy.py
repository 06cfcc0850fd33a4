"""The greedy player: bids its estimated tricks, names its longest suit trumps, takes
tricks as cheaply as it can and throws its lowest tiles otherwise. It never looks ahead.

Deterministic: the same observation and legal actions give the same action, so it
needs no seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from moon import Action, ActionKind, Observation, Phase, Tile
from moon.actions import MOON
from moon.contracts import FOLLOW, NO_TRUMP, POWER, TRUMP_MASK
from moon.tiles import ALL_TILES

__all__ = [
    "TRUMP_ORDER",
    "GreedyPlayer",
    "best_contract",
    "estimate_tricks",
    "greedy_action",
    "tile_cost",
]


def _trump_order(contract: int) -> tuple[int, ...]:
    """Trump tile indices of a contract, highest first."""
    mask = TRUMP_MASK[contract]
    # A trump's power when led under its own contract ranks it among trumps.
    lead = POWER[contract]
    tiles = [i for i in range(28) if mask >> i & 1]
    return tuple(sorted(tiles, key=lambda i: -lead[i][i]))


TRUMP_ORDER: tuple[tuple[int, ...], ...] = tuple(_trump_order(c) for c in range(9))


def estimate_tricks(hand: Sequence[Tile], contract: int, gone: int = 0) -> float:
    """A rough count of the tricks `hand` takes under `contract`.

    Trumps held in an unbroken run from the top of what is left count one each,
    other trumps most of one; doubles off trump count most of one (they head
    their suit); a tile right below a held double counts a little. `gone` is a
    mask of tiles already out of play.
    """
    held = 0
    for t in hand:
        held |= 1 << t.index
    est = 0.0
    if contract != NO_TRUMP:
        run = True
        for i in TRUMP_ORDER[contract]:
            if gone >> i & 1:
                continue
            if held >> i & 1:
                est += 1.0 if run else 0.6
            else:
                run = False
    trumps = TRUMP_MASK[contract] if contract != NO_TRUMP else 0
    for t in hand:
        if trumps >> t.index & 1:
            continue
        if t.is_double:
            est += 0.8
        elif t.high >= 5:
            partner = ALL_TILES[t.high * (t.high + 1) // 2 + t.high]
            if held >> partner.index & 1:
                est += 0.4
    return est


def _length(hand: Sequence[Tile], contract: int) -> int:
    if contract == NO_TRUMP:
        return 0
    mask = TRUMP_MASK[contract]
    return sum(1 for t in hand if mask >> t.index & 1)


def best_contract(hand: Sequence[Tile]) -> tuple[int, float]:
    """The contract it is longest in (ties by estimated tricks), and that estimate."""
    best = max(range(9), key=lambda c: (_length(hand, c), estimate_tricks(hand, c), -c))
    return best, estimate_tricks(hand, best)


def tile_cost(tile: Tile, contract: int) -> float:
    """How much giving this tile away hurts: trumps and doubles most."""
    cost = float(_pips(tile))
    if contract != NO_TRUMP and TRUMP_MASK[contract] >> tile.index & 1:
        cost += 100
    if tile.is_double:
        cost += 20
    return cost


def _pips(tile: Tile) -> int:
    return tile.high + tile.low


def greedy_action(obs: Observation, legal: Sequence[Action]) -> Action:
    """The greedy choice, by phase: bid, discard, trumps or a play."""
    if obs.phase is Phase.BID:
        return _bid(obs, legal)
    if obs.phase is Phase.DISCARD:
        return _discard(obs, legal)
    if obs.phase is Phase.TRUMP:
        return _trump(obs, legal)
    return _play(obs, legal)


@dataclass(frozen=True, slots=True)
class GreedyPlayer:
    """`greedy_action` as a house player (it needs no seed)."""

    def decide(self, obs: Observation, legal: Sequence[Action], seed: int) -> Action:
        """The greedy choice."""
        return greedy_action(obs, legal)


# -- auction ---------------------------------------------------------------


def bid_for(estimate: float, legal: Sequence[Action]) -> Action:
    """The bid the greedy player makes on an estimate of its tricks (widow and partner in)."""
    bids = {a.value: a for a in legal if a.kind is ActionKind.BID}
    if estimate >= 7.5 and MOON in bids:
        return bids[MOON]
    want = min(int(estimate), 7)
    options = [v for v in bids if v != MOON and v <= want]
    if options:
        return bids[max(options)]
    passes = [a for a in legal if a.kind is ActionKind.PASS]
    if passes:
        return passes[0]
    return min((a for a in legal if a.kind is ActionKind.BID), key=lambda a: a.value)


def _bid(obs: Observation, legal: Sequence[Action]) -> Action:
    _, est = best_contract(obs.hand)
    if obs.rules.has_widow:
        est += 0.3  # the widow usually improves the hand a little
    if obs.players == 4:
        est += 1.0  # a partner takes some tricks too
    return bid_for(est, legal)


# -- widow and trumps --------------------------------------------------------


def _discard(obs: Observation, legal: Sequence[Action]) -> Action:
    hand = list(obs.hand)
    fixed = obs.contract

    def score(a: Action) -> tuple[float, float]:
        rest = [t for t in hand if t != a.tile]
        if fixed is not None:
            return estimate_tricks(rest, fixed), -_pips(a.tile)
        _, est = best_contract(rest)
        return est, -_pips(a.tile)

    return max(legal, key=score)


def _trump(obs: Observation, legal: Sequence[Action]) -> Action:
    best, _ = best_contract(obs.hand)
    for a in legal:
        if a.value == best:
            return a
    return legal[0]


# -- play ----------------------------------------------------------------------


def _play(obs: Observation, legal: Sequence[Action]) -> Action:
    contract = obs.contract if obs.contract is not None else NO_TRUMP
    gone = 0
    for trick in obs.tricks:
        for p in trick.plays:
            gone |= 1 << p.tile.index
    for p in obs.current:
        gone |= 1 << p.tile.index
    if not obs.current:
        return _lead(legal, contract, gone)
    led = obs.current[0].tile.index
    power = POWER[contract][led]
    best = max(obs.current, key=lambda p: power[p.tile.index])
    best_power = power[best.tile.index]
    last = len(obs.current) == obs.players - 1
    partner_winning = obs.players == 4 and best.seat % 2 == obs.seat % 2
    if partner_winning and (last or best_power >= 100 or best.tile.is_double):
        return min(legal, key=lambda a: tile_cost(a.tile, contract))
    winners = [a for a in legal if power[a.tile.index] > best_power]
    if winners:
        return min(winners, key=lambda a: power[a.tile.index])
    return min(legal, key=lambda a: tile_cost(a.tile, contract))


def _lead(legal: Sequence[Action], contract: int, gone: int) -> Action:
    held = {a.tile.index: a for a in legal}
    if contract != NO_TRUMP:
        for i in TRUMP_ORDER[contract]:
            if gone >> i & 1:
                continue
            if i in held:
                return held[i]  # the top trump left: draw trumps with it
            break
    trumps = TRUMP_MASK[contract] if contract != NO_TRUMP else 0
    doubles = [a for a in legal if a.tile.is_double and not trumps >> a.tile.index & 1]
    if doubles:
        return max(doubles, key=lambda a: a.tile.high)
    # A tile that heads its suit among what is left also wins unless trumped.
    for a in sorted(legal, key=lambda a: -_pips(a.tile)):
        if trumps >> a.tile.index & 1:
            continue
        suit = FOLLOW[contract][a.tile.index]
        power = POWER[contract][a.tile.index]
        rivals = suit & ~gone & ~(1 << a.tile.index)
        if all(power[i] < power[a.tile.index] for i in range(28) if rivals >> i & 1):
            return a
    return min(legal, key=lambda a: tile_cost(a.tile, contract))
