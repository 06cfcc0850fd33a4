"""A perfect-information solver of the tricks left in a hand: alpha-beta on the plays.

The value of a position is a number the root side wants high and every other
seat wants low (in 3 players the two others are taken to play together against
the root seat, the usual "paranoid" reduction that makes the game two-sided).
It is read from a table indexed by the tricks each seat ends the hand with
(`won_code`), so any scoring can be searched: `bots.pimc` fills it with the
hand's points. A transposition table keyed at each trick's start (the hands,
the leader, the tricks so far) holds bounds, and the last trick is scored
without a search.
"""

from __future__ import annotations

from collections.abc import Sequence

from bots.tables import tiles_of
from moon.contracts import FOLLOW, POWER

__all__ = ["Solver", "won_code"]

_INF = 1 << 30


def won_code(won: Sequence[int]) -> int:
    """Tricks per seat as one number: 3 bits a seat, seat 0 lowest."""
    code = 0
    for s, w in enumerate(won):
        code |= w << 3 * s
    return code


class Solver:
    """Solves positions of one hand: one contract, one root side, one value table."""

    __slots__ = ("_follow", "_lead_order", "_max", "_power", "_tt", "_value", "n", "nodes")

    def __init__(self, n: int, contract: int, maximizers: Sequence[bool],
                 value: Sequence[int]) -> None:
        self.n = n
        self._follow = FOLLOW[contract]
        self._power = POWER[contract]
        self._max = tuple(maximizers)
        self._value = value  # by won_code
        self._tt: dict[tuple[int, ...], tuple[int, int, int]] = {}
        # Leads tried strongest first: a strong lead settles a trick early.
        self._lead_order = {t: -POWER[contract][t][t] for t in range(28)}
        self.nodes = 0

    def solve(self, hands: list[int], leader: int, trick: Sequence[int], won: Sequence[int],
              alpha: int = -_INF, beta: int = _INF) -> int:
        """The value of the position when both sides play perfectly from here.

        `trick` holds the tiles of the trick in progress, led by `leader`; `hands`
        is restored before this returns. A value outside (alpha, beta) is only a
        bound on the true one, as in any alpha-beta search.
        """
        return self._node(hands, leader, tuple(trick), won_code(won), alpha, beta)

    def _node(self, hands: list[int], leader: int, trick: tuple[int, ...], code: int,
              alpha: int, beta: int) -> int:
        self.nodes += 1
        n = self.n
        k = len(trick)
        seat = (leader + k) % n
        hand = hands[seat]
        key: tuple[int, ...] | None = None
        if k == 0:
            if not hand:
                return self._value[code]
            if not hand & (hand - 1):
                return self._last_trick(hands, leader, code)
            key = (*hands, leader, code)
            hit = self._tt.get(key)
            moves = sorted(tiles_of(hand), key=self._lead_order.__getitem__)
            if hit is not None:
                lo, hi, good = hit
                if lo >= beta or lo == hi:
                    return lo
                if hi <= alpha:
                    return hi
                alpha, beta = max(alpha, lo), min(beta, hi)
                moves.remove(good)
                moves.insert(0, good)  # the lead that settled this position before
        else:
            legal = hand & self._follow[trick[0]] or hand
            moves = list(tiles_of(legal))
            if len(moves) > 1:
                pw = self._power[trick[0]]
                moves.sort(key=lambda t: -pw[t])
        a0, b0 = alpha, beta
        maximize = self._max[seat]
        best = -_INF if maximize else _INF
        good = moves[0]
        for t in moves:
            hands[seat] = hand ^ 1 << t
            if k + 1 == n:
                pw = self._power[trick[0]]
                w = 0
                whole = (*trick, t)
                for j in range(1, n):
                    if pw[whole[j]] > pw[whole[w]]:
                        w = j
                w = (leader + w) % n
                v = self._node(hands, w, (), code + (1 << 3 * w), alpha, beta)
            else:
                v = self._node(hands, leader, (*trick, t), code, alpha, beta)
            hands[seat] = hand
            if maximize:
                if v > best:
                    best, good = v, t
                    alpha = max(alpha, v)
            elif v < best:
                best, good = v, t
                beta = min(beta, v)
            if alpha >= beta:
                break
        if key is not None:
            lo, hi, _ = self._tt.get(key, (-_INF, _INF, good))
            if best <= a0:
                hi = min(hi, best)
            elif best >= b0:
                lo = max(lo, best)
            else:
                lo = hi = best
            self._tt[key] = (lo, hi, good)
        return best

    def _last_trick(self, hands: list[int], leader: int, code: int) -> int:
        n = self.n
        led = hands[leader].bit_length() - 1
        pw = self._power[led]
        w = leader
        top = pw[led]
        for j in range(1, n):
            s = (leader + j) % n
            p = pw[hands[s].bit_length() - 1]
            if p > top:
                top, w = p, s
        return self._value[code + (1 << 3 * w)]
