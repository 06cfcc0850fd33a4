"""PIMC: perfect-information Monte Carlo search, the house's strongest player.

For each decision it deals the tiles the seat has not seen, consistently with
everything it has seen (`moon.sampling.Sampler`), `samples` times; on each deal
it tries every legal action and plays the hand out, and it takes the action
with the best total over the deals (ties: the lowest action id). Every phase
is decided so, by the same simulation:

- a play: after the tile, the greedy policy plays on (`bots.playout`) until
  `solve` tricks are left, and the exact solver (`bots.solver`) takes the
  rest; `solve=0` plays out to the end, `solve=7` solves the whole hand;
- a bid: the seats still to speak bid as the greedy player would on their
  dealt hands; whoever wins names trumps and discards as the greedy player
  would, except this seat, which takes the contract that does best over all
  deals (it will choose it by the same search, knowing no more than now);
- a discard: every discard with every contract (or the one named), on a
  quarter of the deals when trumps are still to be named (72 lines a deal);
- trumps: every contract.

What a hand is worth to the seat is `bots.scoring.utility`: its side's points
less the others'. The deals come from `bots.player.decision_rng`, so a
decision is a pure function of the observation, the game's seed and the seat.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from bots.player import decision_rng
from bots.playout import bid_estimate, bid_on, greedy_contract, greedy_discard, playout
from bots.scoring import utility, value_table
from bots.solver import Solver, won_code
from moon import Action, ActionKind, Observation, Phase, Rules
from moon.actions import MOON
from moon.contracts import POWER
from moon.sampling import Sampler

__all__ = ["DEFAULT_SAMPLES", "DEFAULT_SOLVE", "PimcPlayer"]

DEFAULT_SAMPLES = 128
DEFAULT_SOLVE = 0
_CONTRACTS = tuple(range(9))


@lru_cache(maxsize=1024)
def _table(rules: Rules, seat: int, bidder: int, bid: int) -> tuple[int, ...]:
    return tuple(value_table(rules, seat, bidder, bid))


@dataclass(frozen=True, slots=True)
class PimcPlayer:
    """The PIMC player: `samples` deals a decision, the solver for the last `solve` tricks."""

    samples: int = DEFAULT_SAMPLES
    solve: int = DEFAULT_SOLVE

    def decide(self, obs: Observation, legal: Sequence[Action], seed: int) -> Action:
        """The legal action with the best total over the deals."""
        if len(legal) == 1:
            return legal[0]
        return legal[_argmax(self.values(obs, legal, decision_rng(obs, seed)))]

    def values(self, obs: Observation, legal: Sequence[Action],
               rng: random.Random) -> list[int]:
        """Each legal action's total worth over `samples` deals drawn with `rng`."""
        sampler = Sampler(obs)
        if obs.phase is Phase.PLAY:
            return self._play(obs, legal, sampler, rng)
        if obs.phase is Phase.BID:
            return self._bid(obs, legal, sampler, rng)
        if obs.phase is Phase.DISCARD:
            return self._discard(obs, legal, sampler, rng)
        return self._trump(obs, legal, sampler, rng)

    # -- play --------------------------------------------------------------------------

    def _play(self, obs: Observation, legal: Sequence[Action], sampler: Sampler,
              rng: random.Random) -> list[int]:
        n, me = obs.players, obs.seat
        contract = obs.contract
        assert contract is not None and obs.bidder is not None and obs.bid is not None
        table = _table(obs.rules, me, obs.bidder, obs.bid)
        maximizers = [_side(n, s) == _side(n, me) for s in range(n)]
        trick = [p.tile.index for p in obs.current]
        leader = obs.current[0].seat if obs.current else me
        gone = sum(1 << p.tile.index for done in obs.tricks for p in done.plays)
        gone |= sum(1 << t for t in trick)
        own = sum(1 << tile.index for tile in obs.hand)
        tiles = [a.value for a in legal]
        totals = [0] * len(legal)
        power = POWER[contract]
        for _ in range(self.samples):
            hands = sampler.deal(rng)[:n]
            hands[me] = own
            # One solver a deal: its transposition table serves every action tried on it.
            solver = Solver(n, contract, maximizers, table) if self.solve else None
            for i, t in enumerate(tiles):
                hands[me] = own ^ 1 << t
                won = list(obs.tricks_won)
                after = [*trick, t]
                lead = leader
                if len(after) == n:
                    pw = power[after[0]]
                    w = max(range(n), key=lambda j: pw[after[j]])
                    lead = (leader + w) % n
                    won[lead] += 1
                    after = []
                totals[i] += self._finish(n, contract, hands, lead, after, won, gone | 1 << t,
                                          solver, table)
            hands[me] = own
        return totals

    def _finish(self, n: int, contract: int, hands: list[int], leader: int, trick: list[int],
                won: list[int], gone: int, solver: Solver | None,
                table: Sequence[int]) -> int:
        """The worth of a position: greedy play until `solve` tricks are left, then solved."""
        if 7 - sum(won) > self.solve:
            won, hands, leader, gone = playout(n, contract, hands, leader, trick, won, gone,
                                               self.solve)
            trick = []
        if solver is None or sum(won) == 7:
            return table[won_code(won)]
        return solver.solve(hands, leader, trick, won)

    # -- auction ---------------------------------------------------------------------

    def _bid(self, obs: Observation, legal: Sequence[Action], sampler: Sampler,
             rng: random.Random) -> list[int]:
        rules, n, me = obs.rules, obs.players, obs.seat
        own = sum(1 << t.index for t in obs.hand)
        high0 = max((b.bid for b in obs.bids), default=0)
        holder0 = next((b.seat for b in obs.bids if b.bid and b.bid == high0), -1)
        others = [0] * len(legal)  # worth summed over deals where another seat bids
        mine: list[list[tuple[int, list[list[int]]]]] = [[] for _ in legal]
        for _ in range(self.samples):
            masks = sampler.deal(rng)
            hands = masks[:n]
            hands[me] = own
            widow = masks[n] if len(masks) > n else 0
            est = [bid_estimate(h, rules.has_widow, n == 4) for h in hands]
            my_won: list[list[int]] | None = None
            their_won: dict[int, list[int]] = {}
            for i, a in enumerate(legal):
                bidder, bid = _auction(obs, a, est, high0, holder0)
                if bidder < 0:
                    continue  # everyone passed: the hand is dealt again, worth nothing
                if bidder == me:
                    if my_won is None:
                        my_won = [self._as_bidder(rules, hands, widow, me, c) for c in _CONTRACTS]
                    mine[i].append((bid, my_won))
                    continue
                if bidder not in their_won:
                    their_won[bidder] = _greedy_hand(rules, hands, widow, bidder)
                others[i] += utility(rules, me, bidder, bid, their_won[bidder])
        totals = []
        for i in range(len(legal)):
            best = max(sum(utility(rules, me, me, bid, won[c]) for bid, won in mine[i])
                       for c in _CONTRACTS) if mine[i] else 0
            totals.append(others[i] + best)
        return totals

    def _as_bidder(self, rules: Rules, hands: list[int], widow: int, me: int,
                   contract: int) -> list[int]:
        """Tricks per seat when this seat wins the auction and names `contract`."""
        hands = hands[:]
        if widow:
            held = hands[me] | widow
            hands[me] = held & ~(1 << greedy_discard(held, contract))
        return playout(rules.players, contract, hands, me, [], [0] * rules.players, 0)[0]

    # -- widow and trumps --------------------------------------------------------------

    def _discard(self, obs: Observation, legal: Sequence[Action], sampler: Sampler,
                 rng: random.Random) -> list[int]:
        rules, n, me = obs.rules, obs.players, obs.seat
        assert obs.bid is not None
        own = sum(1 << t.index for t in obs.hand)
        contracts = _CONTRACTS if obs.contract is None else (obs.contract,)
        sums = [[0] * 9 for _ in legal]
        # Before trumps are named a deal costs 72 playouts (8 discards, 9 contracts), eight
        # times a bid's: a quarter of the deals keeps the decision's time near a bid's.
        deals = self.samples if obs.contract is not None else max(1, self.samples // 4)
        for _ in range(deals):
            hands = sampler.deal(rng)[:n]
            for i, a in enumerate(legal):
                hands[me] = own & ~(1 << a.value)
                for c in contracts:
                    won = playout(n, c, hands, me, [], [0] * n, 0)[0]
                    sums[i][c] += utility(rules, me, me, obs.bid, won)
        return [max(row[c] for c in contracts) for row in sums]

    def _trump(self, obs: Observation, legal: Sequence[Action], sampler: Sampler,
               rng: random.Random) -> list[int]:
        rules, n, me = obs.rules, obs.players, obs.seat
        assert obs.bid is not None
        own = sum(1 << t.index for t in obs.hand)
        totals = [0] * len(legal)
        for _ in range(self.samples):
            masks = sampler.deal(rng)
            hands = masks[:n]
            # Trumps named before the widow is seen: the widow is one of the hidden tiles.
            widow = masks[n] if len(masks) > n and obs.widow is None else 0
            hands[me] = own
            for i, a in enumerate(legal):
                won = self._as_bidder(rules, hands, widow, me, a.value)
                totals[i] += utility(rules, me, me, obs.bid, won)
        return totals


def _argmax(values: Sequence[int]) -> int:
    """The index of the highest value, the first one on a tie."""
    best = 0
    for i in range(1, len(values)):
        if values[i] > values[best]:
            best = i
    return best


def _side(n: int, seat: int) -> int:
    return seat & 1 if n == 4 else seat


def _auction(obs: Observation, action: Action, est: list[float], high: int,
             holder: int) -> tuple[int, int]:
    """The auction's end (bidder, bid; -1 and 0 when all pass) after `action`, the seats
    still to speak bidding as the greedy player would on their estimates `est`."""
    n, me, rules = obs.players, obs.seat, obs.rules
    if action.kind is ActionKind.BID:
        high, holder = action.value, me
        if high == MOON:
            return me, MOON
    spoken = len(obs.bids) + 1
    seat = (me + 1) % n
    forced = rules.all_pass == "forced"
    while spoken < n:
        can_pass = not (forced and high == 0 and spoken == n - 1)
        b = bid_on(est[seat], high, rules.min_bid, can_pass)
        if b:
            high, holder = b, seat
            if b == MOON:
                break
        spoken += 1
        seat = (seat + 1) % n
    return (holder, high) if high else (-1, 0)


def _greedy_hand(rules: Rules, hands: list[int], widow: int, bidder: int) -> list[int]:
    """Tricks per seat when `bidder` won the auction and names trumps as the greedy player."""
    n = rules.players
    hands = hands[:]
    held = hands[bidder]
    if widow and rules.trump_before_widow:
        contract = greedy_contract(held)
        held |= widow
        hands[bidder] = held & ~(1 << greedy_discard(held, contract))
    elif widow:
        held |= widow
        held &= ~(1 << greedy_discard(held, None))
        hands[bidder] = held
        contract = greedy_contract(held)
    else:
        contract = greedy_contract(held)
    return playout(n, contract, hands, bidder, [], [0] * n, 0)[0]
