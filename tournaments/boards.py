"""Duplicate boards for 3p: rounds of pairwise disjoint tables that all play one deal.

A board is one deal seed. In each round every table plays the round's board,
one game per table, and no bot sits at two tables, so a bot is never dealt a
board twice (a bot that remembers its games learns nothing about a deal it is
yet to play), while each seat position of a board is held by different bots at
different tables, so the luck of the deal cancels. Bots are indices
`0..n-1`; a table lists its bots in seat-position order (the board deals hand
k to position k). Everything is pure and deterministic: the same n always
gives the same schedule, whatever machine or Python builds it (searches use
fixed seeds), so a scheduler that reruns derives the same tables.

Guarantees, by residue class (every round's tables are pairwise disjoint and
every pair of bots meets at least once, in every case):

- n ≡ 1 (mod 3): a near-resolvable 2-(n,3,2) design, every pair exactly twice;
  n rounds of (n-1)/3 tables, one bye each (each bot one bye). Cyclic on Z_n
  (round x = base class + x) from the cube roots of unity when n is prime; a
  product of two such designs on Z_m x Z_q (q ≡ 1 mod 6 prime to 6; cyclic when
  gcd(m, q) = 1, e.g. 100 = 4 x 25, else on the group, e.g. 1000 = 40 x 25);
  else by local search (n <= 150). For n ≡ 10 (mod 12) no cyclic one exists
  (a triple has 0 or 2 odd differences, but an odd number, 6s + 5, are
  needed): a 1-rotational one is searched on Z_{n-1} + {∞}, n - 1 developed
  rounds plus one round of the cosets of {0, (n-1)/3, 2(n-1)/3} where ∞ sits
  out; n = 10 is a stored design.
- n ≡ 3 (mod 6): a Kirkman triple system when one is built, every pair
  exactly once in (n-1)/2 rounds of n/3 tables: AG(k,3) for n = 3^k, the
  schoolgirls for 15, tripling KTS(v) -> KTS(3v), or 1-rotational on
  Z_{n-1} + {∞} (searched; none exists unless n ≡ 3, 9 mod 24; n <= 150).
- n ≡ 0 (mod 3), n != 6, without a KTS: a 1-rotational resolvable 2-(n,3,2)
  design on Z_{n-1} + {∞}, every pair exactly twice, n - 1 rounds of n/3
  tables, no byes. From orbits of a multiplier group when n - 1 = k·p for a
  prime p ≡ 1 (mod 3) (extending the design for k + 1; 999 = 2·499 + 1), else
  by local search (n <= 150).
- n = 6: all 10 splits of the six bots into two tables, every pair 4 times.
- n ≡ 2 (mod 3): (n-2)/3 tables and two byes a round, every pair once or
  twice. Cyclic on Z_n, each bot two byes (searched, n <= 150; or from
  multiplier orbits); else from a near-resolvable design on Z_{n-1}: one base
  table {u, v, w} becomes {∞, u, v} and w takes the second bye (so n - 1
  rounds, ∞ never sits out and the others twice; 998 from Z_997).
- n < 6: no two tables can be disjoint: the tables of `triple_design(n)`, one
  a round (duplicate is False).
- Otherwise (no construction applies and the searches fail: in 3..150 these
  are 69, 111, 120, 121, 126, 130, 132, 138, 144, 145, 146, 147 and 150; above
  150 about half of all n): `rounds_of(triple_design(n))`, every pair once or
  twice, about n(n+1)/6 tables in rounds that are not all full. Total tables
  are at most n(n-1)/3 in every case but n = 6 (20).

Seat positions: each developed base table puts every bot at each position
once, so the cyclic designs balance positions exactly but for ∞'s table and
the extra round, which are oriented greedily; AG, tripled and 1-rotational
Kirkman systems rotate tables by round; stored and fallback rounds are
oriented greedily. Measured for n <= 300: a bot's three position counts differ
by at most 2 (3 in a few fallback schedules). `schedule_stats` reports it all.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from store.errors import InvalidArgument
from tournaments.design import rounds_of, triple_design

__all__ = [
    "BoardRound",
    "ScheduleStats",
    "TableSchedule",
    "clear_cache",
    "schedule_stats",
    "table_schedule",
]

Table: TypeAlias = tuple[int, int, int]

# Above this many bots the local searches are not tried: measured, they then
# mostly fail within their budget and only cost time (algebra covers the rest).
_SEARCH_MAX = 150
# Moves per search attempt and attempts (seeds 0, 1, ...): about 0.4 s per
# failed attempt at n = 150 on one core; solvable n <= 100 need well under one.
_BUDGET = 100_000
_SEEDS = 4
# Noise: a worsening move of cost delta is still taken with this * exp(-delta).
_NOISE = 0.02

# Kirkman's schoolgirls, KTS(15): the first resolution found by a lexicographic
# depth-first search (too slow to rerun at import: ~10^7 nodes). Tests check it.
_KTS15: tuple[tuple[Table, ...], ...] = (
    ((0, 1, 2), (3, 4, 5), (6, 7, 8), (9, 10, 11), (12, 13, 14)),
    ((0, 3, 6), (1, 4, 7), (2, 9, 12), (5, 10, 13), (8, 11, 14)),
    ((0, 4, 9), (1, 5, 11), (2, 7, 14), (3, 8, 13), (6, 10, 12)),
    ((0, 5, 14), (1, 3, 12), (2, 6, 11), (4, 8, 10), (7, 9, 13)),
    ((0, 7, 10), (1, 6, 13), (2, 5, 8), (3, 9, 14), (4, 11, 12)),
    ((0, 8, 12), (1, 10, 14), (2, 4, 13), (3, 7, 11), (5, 6, 9)),
    ((0, 11, 13), (1, 8, 9), (2, 3, 10), (4, 6, 14), (5, 7, 12)),
)


# A near-resolvable 2-(10,3,2) design without repeated tables (round i: bye i).
# None is cyclic (module doc) and the 1-rotational search finds none, so this is
# the first one a lexicographic depth-first search finds (~10^8 nodes).
_NR10: tuple[tuple[Table, ...], ...] = (
    ((1, 2, 3), (4, 5, 6), (7, 8, 9)),
    ((0, 2, 3), (4, 5, 7), (6, 8, 9)),
    ((0, 4, 6), (1, 5, 8), (3, 7, 9)),
    ((0, 4, 7), (1, 6, 8), (2, 5, 9)),
    ((0, 1, 9), (2, 6, 7), (3, 5, 8)),
    ((0, 2, 8), (1, 6, 7), (3, 4, 9)),
    ((0, 5, 9), (1, 3, 7), (2, 4, 8)),
    ((0, 1, 5), (2, 6, 9), (3, 4, 8)),
    ((0, 3, 6), (1, 4, 9), (2, 5, 7)),
    ((0, 7, 8), (1, 2, 4), (3, 5, 6)),
)


@dataclass(frozen=True, slots=True)
class BoardRound:
    """One round: pairwise disjoint tables that all play this round's board, and who sits out."""

    number: int  # 1-based
    tables: tuple[Table, ...]  # each in seat-position order (seat 0, 1, 2)
    byes: tuple[int, ...]


def _rot(t: Table, r: int) -> Table:
    """The table rotated left by r positions."""
    return (t[r % 3], t[(r + 1) % 3], t[(r + 2) % 3])


# --- plans: how round i is derived ------------------------------------------


@dataclass(frozen=True, slots=True)
class _Cyclic:
    """Round x < modulus: every base table + x (mod modulus), and ∞ = bot `modulus` with
    inf + x when inf is set; then the fixed `extra` rounds."""

    modulus: int
    base: tuple[Table, ...]
    inf: tuple[int, int] | None = None
    extra: tuple[tuple[Table, ...], ...] = ()
    spin: tuple[int, ...] = ()  # per round, the rotation of ∞'s table (default: the round mod 3)

    @property
    def rounds(self) -> int:
        """Rounds in the plan."""
        return self.modulus + len(self.extra)

    def tables(self, i: int) -> tuple[Table, ...]:
        """The tables of round i (0-based)."""
        m = self.modulus
        if i >= m:
            return self.extra[i - m]
        out = [((a + i) % m, (b + i) % m, (c + i) % m) for a, b, c in self.base]
        if self.inf is not None:
            # ∞ is in every round: rotating its table spreads its positions (see `_spun`).
            t = (m, (self.inf[0] + i) % m, (self.inf[1] + i) % m)
            out.append(_rot(t, self.spin[i] if self.spin else i))
        return tuple(out)


def _spun(c: _Cyclic) -> _Cyclic:
    """Orient ∞'s tables and the extra rounds greedily to level seat positions.

    Developed base tables put every bot at each position equally often, so
    only these tables make imbalance: a finite bot sits at ∞'s table twice,
    ∞ at every one.
    """
    m = c.modulus
    held = [[0, 0, 0] for _ in range(m + 1)]

    def cost(t: Table) -> int:
        return held[t[0]][0] + held[t[1]][1] + held[t[2]][2]

    def take(t: Table) -> Table:
        for k in range(3):
            held[t[k]][k] += 1
        return t

    spin = []
    if c.inf is not None:
        for i in range(m):
            t = (m, (c.inf[0] + i) % m, (c.inf[1] + i) % m)
            costs = [cost(_rot(t, r)) for r in range(3)]
            r = costs.index(min(costs))
            take(_rot(t, r))
            spin.append(r)
    extra = tuple(tuple(take(min(_orders(t), key=cost)) for t in r) for r in c.extra)
    return _Cyclic(m, c.base, c.inf, extra, tuple(spin))


def _orders(t: Sequence[int]) -> list[Table]:
    """The six seatings of a table's three bots."""
    return [(p[0], p[1], p[2]) for p in itertools.permutations(t)]


@dataclass(frozen=True, slots=True)
class _Grid:
    """Z_m x Z_q (not cyclic: gcd(m, q) > 1), bot x·q + y being (x, y); round i = (i // q, i % q)
    translates every base table."""

    m: int
    q: int
    base: tuple[Table, ...]

    @property
    def rounds(self) -> int:
        """Rounds in the plan."""
        return self.m * self.q

    def tables(self, i: int) -> tuple[Table, ...]:
        """The tables of round i (0-based)."""
        m, q = self.m, self.q
        dx, dy = divmod(i, q)
        # Translation acts on each coordinate: a lookup table per round keeps it O(n).
        move = [(x + dx) % m * q + (y + dy) % q for x in range(m) for y in range(q)]
        return tuple((move[a], move[b], move[c]) for a, b, c in self.base)


@dataclass(frozen=True, slots=True)
class _Kirkman1R:
    """1-rotational KTS: Z_2m + {∞}, round x < m: {∞, x, x+m} and T + x, T + m + x."""

    half: int  # m
    reps: tuple[Table, ...]

    @property
    def rounds(self) -> int:
        """Rounds in the plan."""
        return self.half

    def tables(self, i: int) -> tuple[Table, ...]:
        """The tables of round i (0-based)."""
        m = self.half
        big = 2 * m
        out = [_rot((big, i, i + m), i)]
        for s in (i, i + m):
            out.extend(((a + s) % big, (b + s) % big, (c + s) % big) for a, b, c in self.reps)
        return tuple(out)


def _add3(p: int, d: int, k: int) -> int:
    """Digit-wise sum mod 3 of two points of AG(k,3) written in base 3."""
    out, place = 0, 1
    for _ in range(k):
        out += (p % 3 + d % 3) % 3 * place
        p, d, place = p // 3, d // 3, place * 3
    return out


@dataclass(frozen=True, slots=True)
class _Affine:
    """AG(k,3): one round per direction, its lines the tables."""

    dims: int
    directions: tuple[tuple[int, int], ...]  # (direction, place of its lowest nonzero digit)

    @property
    def rounds(self) -> int:
        """Rounds in the plan."""
        return len(self.directions)

    def tables(self, i: int) -> tuple[Table, ...]:
        """The tables of round i (0-based)."""
        d, place = self.directions[i]
        k = self.dims
        out = []
        for p in range(3**k):
            if p // place % 3 == 0:  # the line's point whose pivot digit is 0 leads
                q = _add3(p, d, k)
                # A bot's position is its pivot digit; directions of one pivot come
                # in runs of a multiple of 3 (but the last), so rotating by round
                # index gives each bot each position equally often.
                out.append(_rot((p, q, _add3(q, d, k)), i))
        return tuple(out)


@dataclass(frozen=True, slots=True)
class _Tripled:
    """KTS(3v) from KTS(v): bot x + v·j is (x, j); each sub-round gives three rounds of
    tables {(a, j), (b, j+s), (c, j+2s)}, s = 0, 1, 2; a last round {x} x Z_3."""

    sub: _Plan
    v: int

    @property
    def rounds(self) -> int:
        """Rounds in the plan."""
        return 3 * self.sub.rounds + 1

    def tables(self, i: int) -> tuple[Table, ...]:
        """The tables of round i (0-based)."""
        v = self.v
        if i == 3 * self.sub.rounds:
            return tuple((x, x + v, x + 2 * v) for x in range(v))
        s = i % 3
        out = []
        for a, b, c in self.sub.tables(i // 3):
            for j in range(3):
                t = (a + v * j, b + v * ((j + s) % 3), c + v * ((j + 2 * s) % 3))
                # Rotating by s moves each bot through the three positions over s = 0, 1, 2.
                out.append(_rot(t, s))
        return tuple(out)


@dataclass(frozen=True, slots=True)
class _Explicit:
    """Rounds kept as built (small or fallback designs)."""

    all: tuple[tuple[Table, ...], ...]

    @property
    def rounds(self) -> int:
        """Rounds in the plan."""
        return len(self.all)

    def tables(self, i: int) -> tuple[Table, ...]:
        """The tables of round i (0-based)."""
        return self.all[i]


_Plan: TypeAlias = "_Cyclic | _Grid | _Kirkman1R | _Affine | _Tripled | _Explicit"


def _oriented(rounds: Sequence[Sequence[Sequence[int]]], n: int) -> _Explicit:
    """Order each table's bots, in round order, to keep every bot's position counts level."""
    held = [[0, 0, 0] for _ in range(n)]
    out = []
    for tables in rounds:
        row: list[Table] = []
        for t in tables:
            best = min(_orders(sorted(t)), key=lambda p: sum(held[p[k]][k] for k in range(3)))
            for k in range(3):
                held[best[k]][k] += 1
            row.append(best)
        out.append(tuple(row))
    return _Explicit(tuple(out))


# --- number theory ------------------------------------------------------------


def _is_prime(n: int) -> bool:
    """Trial division (n is at most a few thousand here)."""
    return n >= 2 and all(n % d for d in range(2, math.isqrt(n) + 1))


def _prime_factors(n: int) -> list[int]:
    """The distinct primes dividing n, ascending."""
    out, d = [], 2
    while d * d <= n:
        if n % d == 0:
            out.append(d)
            while n % d == 0:
                n //= d
        d += 1
    if n > 1:
        out.append(n)
    return out


def _primitive_root(p: int) -> int:
    """The least generator of the units mod the prime p."""
    qs = _prime_factors(p - 1)
    return next(g for g in range(2, p) if all(pow(g, (p - 1) // q, p) != 1 for q in qs))


def _crt(a: int, m: int, b: int, q: int) -> int:
    """The x mod m·q with x ≡ a (mod m), x ≡ b (mod q), for coprime m and q."""
    return (a * q * pow(q, -1, m) + b * m * pow(m, -1, q)) % (m * q) if m > 1 else b % q


# --- local search for a base class -------------------------------------------


@dataclass(frozen=True, slots=True)
class _Problem:
    """Groups of values of Z_N whose differences must hit prescribed counts per class."""

    modulus: int
    members: tuple[tuple[int, ...], ...]  # values per key (an orbit); one is placed
    sizes: tuple[int, ...]  # group sizes, summing to the number of keys
    active: tuple[bool, ...]  # whether a group's differences count (a bye group's do not)
    cls: tuple[int, ...]  # class of each difference d, with cls[d] == cls[-d]
    target: tuple[int, ...]  # wanted count per class
    weight: tuple[int, ...]  # cost of a unit of error per class
    goal: int  # the cost of a solution


def _classes_of(grp: list[int], cls: Sequence[int], big_n: int) -> list[int]:
    """The classes of a group's pairwise differences."""
    return [cls[(grp[i] - grp[j]) % big_n] for i in range(len(grp)) for j in range(i)]


class _IndexSet:
    """A set of ints with O(1) add, discard and uniform random choice."""

    def __init__(self) -> None:
        self.items: list[int] = []
        self.pos: dict[int, int] = {}

    def set(self, c: int, on: bool) -> None:
        """Add c when on, else discard it."""
        if on:
            if c not in self.pos:
                self.pos[c] = len(self.items)
                self.items.append(c)
        elif c in self.pos:
            i = self.pos.pop(c)
            last = self.items.pop()
            if i < len(self.items):
                self.items[i] = last
                self.pos[last] = i


def _anneal(pb: _Problem, seed: int, budget: int) -> list[list[int]] | None:
    """Min-conflicts local search with a little noise; the groups, or None after `budget` moves.

    The cost is the weighted sum over classes of (count - target)^2, updated
    incrementally: a move changes at most 8 differences. Most moves are aimed:
    take a pair of an over-full class, move one of its ends to where it makes a
    difference of an under-full class with a partner, swapping with whatever is
    there (or, for orbits, another value of the same orbit).
    """
    rng = random.Random(seed)
    rnd = rng.random
    big_n, cls, tgt, wt, members = pb.modulus, pb.cls, pb.target, pb.weight, pb.members
    active = pb.active
    key_of = [-1] * big_n
    for k, ms in enumerate(members):
        for v in ms:
            key_of[v] = k
    order = list(range(len(members)))
    rng.shuffle(order)
    groups: list[list[int]] = []
    where = [0] * len(members)
    slot = [0] * len(members)
    keys: Iterator[int] = iter(order)
    for g, size in enumerate(pb.sizes):
        grp = []
        for s in range(size):
            k = next(keys)
            grp.append(members[k][int(rnd() * len(members[k]))])
            where[k], slot[k] = g, s
        groups.append(grp)
    cnt = [0] * len(tgt)
    occ: list[set[int]] = [set() for _ in tgt]
    reps: list[list[int]] = [[] for _ in tgt]
    for d in range(1, big_n):
        reps[cls[d]].append(d)
    for g, grp in enumerate(groups):
        if active[g]:
            for c in _classes_of(grp, cls, big_n):
                cnt[c] += 1
                occ[c].add(g)
    cost = sum(w * (x - t) ** 2 for w, x, t in zip(wt, cnt, tgt, strict=True))
    over, under = _IndexSet(), _IndexSet()
    for c, t in enumerate(tgt):
        over.set(c, cnt[c] > t)
        under.set(c, cnt[c] < t)
    ch: list[tuple[int, int]] = []
    for _ in range(budget):
        if cost <= pb.goal:
            return groups
        if over.items and rnd() < 0.8:
            c = over.items[int(rnd() * len(over.items))]
            gs = tuple(occ[c])
            a = gs[int(rnd() * len(gs))]
            grp = groups[a]
            size = len(grp)
            ends = [(i, j) for i in range(size) for j in range(i)
                    if cls[(grp[i] - grp[j]) % big_n] == c]
            i, j = ends[int(rnd() * len(ends))]
            ix = i if rnd() < 0.5 else j
            if under.items and rnd() < 0.7:
                r = reps[under.items[int(rnd() * len(under.items))]]
                o = int(rnd() * (size - 1))
                o += o >= ix
                y = (grp[o] + r[int(rnd() * len(r))]) % big_n
            else:
                y = int(rnd() * big_n)
        else:
            kx = int(rnd() * len(members))
            a, ix = where[kx], slot[kx]
            y = int(rnd() * big_n)
        ga = groups[a]
        x = ga[ix]
        ky = key_of[y]
        if ky < 0 or y == x:
            continue
        b, iy = where[ky], slot[ky]
        if b == a and iy != ix:
            continue  # y is already a partner of x
        ch.clear()
        if active[a]:
            for t, u in enumerate(ga):
                if t != ix:
                    ch.append((cls[(x - u) % big_n], -1))
                    ch.append((cls[(y - u) % big_n], 1))
        nb = x
        gb = groups[b]
        if b != a:
            ms = members[key_of[x]]
            if len(ms) > 1 and rnd() < 0.5:
                nb = ms[int(rnd() * len(ms))]
            if active[b]:
                yc = gb[iy]
                for t, u in enumerate(gb):
                    if t != iy:
                        ch.append((cls[(yc - u) % big_n], -1))
                        ch.append((cls[(nb - u) % big_n], 1))
        delta = 0
        for c, sgn in ch:
            delta += wt[c] * (2 * (cnt[c] - tgt[c]) * sgn + 1)
            cnt[c] += sgn
        if delta > 0 and rnd() >= _NOISE * math.exp(-delta):
            for c, sgn in ch:
                cnt[c] -= sgn
            continue
        cost += delta
        touched = (a,) if b == a else (a, b)
        for g in touched:
            if active[g]:
                for c in _classes_of(groups[g], cls, big_n):
                    occ[c].discard(g)
        ga[ix] = y
        where[ky], slot[ky] = a, ix
        if b != a:
            gb[iy] = nb
            where[key_of[nb]], slot[key_of[nb]] = b, iy
        for g in touched:
            if active[g]:
                for c in _classes_of(groups[g], cls, big_n):
                    occ[c].add(g)
        for c, _ in ch:
            over.set(c, cnt[c] > tgt[c])
            under.set(c, cnt[c] < tgt[c])
    return groups if cost <= pb.goal else None


def _search(pb: _Problem) -> list[list[int]] | None:
    """The first solution over the fixed seeds, or None."""
    for seed in range(_SEEDS):
        found = _anneal(pb, seed, _BUDGET)
        if found is not None:
            return found
    return None


def _plain(big_n: int, sizes: Sequence[int], active: Sequence[bool],
           target: dict[int, int], weight: dict[int, int] | None = None,
           goal: int = 0) -> _Problem:
    """A search over all of Z_N: classes min(d, N-d), target 2 unless set in `target`."""
    half = big_n // 2
    tgt = [0] + [target.get(c, 2) for c in range(1, half + 1)]
    wt = [1] + [(weight or {}).get(c, 1) for c in range(1, half + 1)]
    return _Problem(big_n, tuple((v,) for v in range(big_n)), tuple(sizes), tuple(active),
                    tuple(min(d, big_n - d) for d in range(big_n)), tuple(tgt), tuple(wt), goal)


def _half(big_n: int, value: int) -> dict[int, int]:
    """{N/2: value} when N is even (the self-inverse difference class), else nothing."""
    return {big_n // 2: value} if big_n % 2 == 0 else {}


def _shifted(groups: Sequence[Sequence[int]], by: int, big_n: int) -> list[Table]:
    """The triples among the groups, translated by `by`."""
    return [((g[0] + by) % big_n, (g[1] + by) % big_n, (g[2] + by) % big_n)
            for g in groups if len(g) == 3]


# --- n ≡ 1 (mod 3): near-resolvable, every pair twice ----------------------


def _cube_roots(p: int) -> tuple[Table, ...]:
    """The cosets {x, xw, xw²} of the cube roots of unity in GF(p)*, p ≡ 1 (mod 6) prime."""
    w = next(x for x in (pow(a, (p - 1) // 3, p) for a in range(2, p)) if x != 1)
    seen = bytearray(p)
    out = []
    for x in range(1, p):
        if not seen[x]:
            t = (x, x * w % p, x * w * w % p)
            for y in t:
                seen[y] = 1
            out.append(t)
    return tuple(out)


def _product(a: _Cyclic, b: _Cyclic) -> _Cyclic | _Grid:
    """Z_m x Z_q: {(a, j), (b, 2j), (c, 3j)} for each base table of Z_m and j in Z_q, and
    {0} x the base of Z_q; q prime to 6 makes j, 2j, 3j and their differences permutations.
    Cyclic (by the Chinese remainder theorem) when gcd(m, q) = 1."""
    m, q = a.modulus, b.modulus
    coprime = math.gcd(m, q) == 1

    def at(x: int, y: int) -> int:
        return _crt(x, m, y % q, q) if coprime else x * q + y % q

    out = [(at(x, j), at(y, 2 * j), at(z, 3 * j)) for x, y, z in a.base for j in range(q)]
    out.extend((at(0, x), at(0, y), at(0, z)) for x, y, z in b.base)
    return _Cyclic(m * q, tuple(out)) if coprime else _Grid(m, q, tuple(out))


@functools.cache
def _near_resolvable(n: int) -> tuple[_Cyclic | _Grid, str] | None:
    """A base class partitioning Z_n minus {0} whose differences hit each class twice."""
    if _is_prime(n):
        return _Cyclic(n, _cube_roots(n)), f"cyclic on Z_{n}, cube roots of unity"
    for q in range(7, n // 4 + 1, 6):  # q ≡ 1 (mod 6)
        m = n // q
        if n % q == 0 and m % 3 == 1:
            left, right = _near_resolvable(m), _near_resolvable(q)
            if left is not None and right is not None and isinstance(left[0], _Cyclic) \
                    and isinstance(right[0], _Cyclic):
                return _product(left[0], right[0]), f"product of Z_{m} and Z_{q}"
    if n % 12 == 10 or n > _SEARCH_MAX:  # none exists for n ≡ 10 (mod 12): see the module doc
        return None
    found = _search(_plain(n, [1] + [3] * (n // 3), [False] + [True] * (n // 3), _half(n, 1)))
    if found is None:
        return None
    return _Cyclic(n, tuple(_shifted(found, -found[0][0], n))), f"cyclic on Z_{n}, searched"


def _near_rotational(n: int) -> tuple[_Cyclic | _Grid, str] | None:
    """n ≡ 1 (mod 3): Z_{n-1} + {∞}, a developed base class with one bye, plus the round of
    cosets of {0, N/3, 2N/3} (which meets each pair of that class once) with ∞ out."""
    big_n = n - 1
    third = big_n // 3
    if n > _SEARCH_MAX:
        return None
    found = _search(_plain(big_n, [1, 2] + [3] * (third - 1), [False] + [True] * third,
                           {third: 1, **_half(big_n, 1)}))
    if found is None:
        return None
    by = -found[0][0]
    inf = ((found[1][0] + by) % big_n, (found[1][1] + by) % big_n)
    cosets = tuple((x, x + third, x + 2 * third) for x in range(third))
    return (_Cyclic(big_n, tuple(_shifted(found, by, big_n)), inf, (cosets,)),
            f"1-rotational on Z_{big_n} + {{∞}}, searched")


# --- n ≡ 0 (mod 3): 1-rotational resolvable, every pair twice ---------------


def _quotient(big_n: int, p: int, f: int, sub: _Cyclic) -> _Cyclic | None:
    """Extend a base class on pZ_N ≅ Z_k (k = N/p) to Z_N with tables invariant under a
    multiplier group M of odd order f (units ≡ 1 mod k, of order f mod p).

    The points outside pZ_N fall into free M-orbits, and so do the differences
    outside pZ_N: a search over orbit representatives (N/f keys instead of N)
    makes every free difference class appear exactly twice.
    """
    k = big_n // p
    g = _primitive_root(p)
    mu = pow(g, (p - 1) // f, p)
    units = [_crt(1, k, pow(mu, i, p), p) for i in range(f)]
    orbit = [-1] * big_n
    members: list[tuple[int, ...]] = []
    for v in range(big_n):
        if v % p and orbit[v] < 0:
            members.append(tuple(u * v % big_n for u in units))
            for w in members[-1]:
                orbit[w] = len(members) - 1
    ids: dict[int, int] = {}
    cls = [0] * big_n  # class 0: differences in pZ_N, which the free tables must not have
    for d in range(1, big_n):
        if d % p:
            cls[d] = ids.setdefault(min(orbit[d], orbit[big_n - d]), len(ids) + 1)
    t = len(members) // 3
    pb = _Problem(big_n, tuple(members), (3,) * t, (True,) * t, tuple(cls),
                  (0,) + (2,) * len(ids), (1,) * (len(ids) + 1), 0)
    found = _search(pb)
    if found is None:
        return None
    step = p * pow(p, -1, k) % big_n if k > 1 else 0  # Z_k -> pZ_N, x -> x·step

    def lift(x: int) -> int:
        return x * step % big_n

    base = [(lift(a), lift(b), lift(c)) for a, b, c in sub.base]
    base.extend((u * a % big_n, u * b % big_n, u * c % big_n) for a, b, c in found for u in units)
    inf = None if sub.inf is None else (lift(sub.inf[0]), lift(sub.inf[1]))
    return _Cyclic(big_n, tuple(base), inf)


def _multiplier_orders(p: int) -> list[int]:
    """Multiplier group orders f > 1 to try: divisors of p - 1 prime to 6, largest first."""
    return [f for f in range(p - 1, 1, -1) if (p - 1) % f == 0 and math.gcd(f, 6) == 1]


@functools.cache
def _rotational(n: int) -> tuple[_Cyclic, str] | None:
    """A base class on Z_{n-1} + {∞} for a resolvable 2-(n,3,2) design (n ≡ 0 mod 3)."""
    big_n = n - 1
    if n == 3:
        return _Cyclic(2, (), (0, 1)), "one table on Z_2 + {∞}"
    if n == 6:
        return None  # no resolvable 2-(6,3,2) design exists
    for p in _prime_factors(big_n):
        sub = _rotational(big_n // p + 1) if p % 3 == 1 and big_n % (p * p) else None
        if sub is None:
            continue
        for f in _multiplier_orders(p):
            lifted = _quotient(big_n, p, f, sub[0])
            if lifted is not None:
                return lifted, \
                    f"1-rotational on Z_{big_n} + {{∞}}, orbits of multipliers of order {f}"
    if n > _SEARCH_MAX:
        return None
    found = _search(_plain(big_n, [2] + [3] * (n // 3 - 1), [True] * (n // 3),
                           _half(big_n, 1)))
    if found is None:
        return None
    return _Cyclic(big_n, tuple(_shifted(found, 0, big_n)), (found[0][0], found[0][1])), \
        f"1-rotational on Z_{big_n} + {{∞}}, searched"


def _affine(k: int) -> _Affine:
    """AG(k,3): directions with lowest nonzero digit 1, in runs by that digit's place."""
    dirs = []
    for j in range(k):
        place = 3**j
        for high in range(3 ** (k - 1 - j)):
            dirs.append((place + high * 3 * place, place))
    return _Affine(k, tuple(dirs))


def _kirkman_search(n: int) -> _Kirkman1R | None:
    """A 1-rotational KTS: reps T, T + m together partitioning Z_2m minus {0, m}, and the
    differences of the reps hitting each class 1..m-1 once (only n ≡ 3, 9 mod 24 can work)."""
    m = (n - 1) // 2
    t = (m - 1) // 3
    pb = _Problem(2 * m, tuple((r, r + m) for r in range(1, m)), (3,) * t, (True,) * t,
                  tuple(min(d, 2 * m - d) for d in range(2 * m)), (0,) + (1,) * (m - 1) + (0,),
                  (1,) * (m + 1), 0)
    found = _search(pb)
    return None if found is None else _Kirkman1R(m, tuple(_shifted(found, 0, 2 * m)))


@functools.cache
def _kirkman(n: int) -> tuple[_Plan, str] | None:
    """A Kirkman triple system on n ≡ 3 (mod 6) bots, when one of the constructions applies."""
    k = round(math.log(n, 3))
    if 3**k == n:
        return _affine(k), f"Kirkman triple system: the lines of AG({k},3)"
    if n == 15:
        return _oriented(_KTS15, 15), "Kirkman triple system: Kirkman's schoolgirls"
    if n % 18 == 9:
        sub = _kirkman(n // 3)
        if sub is not None:
            return _Tripled(sub[0], n // 3), f"Kirkman triple system: KTS({n // 3}) tripled"
    if n % 24 in (3, 9) and n <= _SEARCH_MAX:
        found = _kirkman_search(n)
        if found is not None:
            return found, f"Kirkman triple system: 1-rotational on Z_{n - 1} + {{∞}}, searched"
    return None


# --- n ≡ 2 (mod 3): two byes a round ----------------------------------------


def _derived(n: int) -> tuple[_Cyclic, str] | None:
    """From a near-resolvable base on Z_{n-1}: one table {u, v, w} gives way to ∞ + {u, v}
    and a second bye w, choosing w so that its two lost classes are distinct and not N/2."""
    big_n = n - 1
    nr = _near_resolvable(big_n)
    if nr is None or not isinstance(nr[0], _Cyclic):
        return None
    base = nr[0].base

    def cl(d: int) -> int:
        return min(d % big_n, -d % big_n)

    for i, t in enumerate(base):
        for u, v, w in ((t[0], t[1], t[2]), (t[1], t[2], t[0]), (t[0], t[2], t[1])):
            lost = {cl(u - w), cl(v - w)}
            if len(lost) == 2 and 2 * max(lost) != big_n:
                rest = base[:i] + base[i + 1:]
                return _Cyclic(big_n, rest, (u, v)), \
                    f"1-rotational, from the design on Z_{big_n} ({nr[1]})"
    return None


@functools.cache
def _two_byes(n: int) -> tuple[_Cyclic, str] | None:
    """A base class on Z_n (or Z_{n-1} + {∞}) with two byes, every pair once or twice."""
    if n <= _SEARCH_MAX:
        # Two byes leave n - 2 differences for n - 1 wanted, so one class is short:
        # the weight keeps it off class n/2, whose pairs would then never meet.
        found = _search(_plain(n, [2] + [3] * (n // 3), [False] + [True] * (n // 3),
                               _half(n, 1), _half(n, 3), goal=1))
        if found is not None:
            return _Cyclic(n, tuple(_shifted(found, -found[0][0], n))), f"cyclic on Z_{n}, searched"
    for p in _prime_factors(n):
        k = n // p
        sub = _two_byes(k) if p % 3 == 1 and k >= 8 and n % (p * p) else None
        if sub is not None and sub[0].inf is None:
            for f in _multiplier_orders(p):
                lifted = _quotient(n, p, f, sub[0])
                if lifted is not None:
                    return lifted, f"cyclic on Z_{n}, orbits of multipliers of order {f}"
    return _derived(n)


# --- the schedule -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TableSchedule:
    """Rounds of pairwise disjoint tables for bots 0..n-1, each round one board."""

    n: int
    rounds: int
    method: str  # how it was built, and its pair balance
    duplicate: bool  # True when rounds hold two or more tables (real duplicate boards)
    _plan: _Plan = field(repr=False)

    def round(self, i: int) -> BoardRound:
        """Round i + 1 (i is 0-based), derived in O(n)."""
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < self.rounds:
            raise InvalidArgument(f"round index i must be from 0 to {self.rounds - 1}, got {i!r}")
        tables = self._plan.tables(i)
        free = bytearray(b"\x01") * self.n
        for t in tables:
            for b in t:
                free[b] = 0
        return BoardRound(i + 1, tables, tuple(b for b in range(self.n) if free[b]))


def _build(n: int) -> tuple[_Plan, str]:
    """The best plan built for n, and its description."""
    if n < 6:
        design = triple_design(n)
        return _oriented([(t,) for t in design], n), \
            "one table a round (triple_design), no duplicate boards"
    if n == 6:
        splits = [((0, a, b), tuple(x for x in range(1, 6) if x not in (a, b)))
                  for a, b in itertools.combinations(range(1, 6), 2)]
        return _oriented(splits, 6), "all 10 splits into two tables; every pair 4 times"
    if n % 3 == 0:
        kts = _kirkman(n) if n % 6 == 3 else None
        if kts is not None:
            return kts[0], f"{kts[1]}; every pair once"
        r1 = _rotational(n)
        if r1 is not None:
            return r1[0], f"resolvable 2-(n,3,2) design, {r1[1]}; every pair twice"
    elif n == 10:
        return _oriented(_NR10, 10), \
            "near-resolvable 2-(n,3,2) design, found by exhaustive search; every pair twice"
    elif n % 3 == 1:
        nr = _near_resolvable(n) or _near_rotational(n)
        if nr is not None:
            return nr[0], f"near-resolvable 2-(n,3,2) design, {nr[1]}; every pair twice"
    else:
        tb = _two_byes(n)
        if tb is not None:
            return tb[0], f"two byes a round, {tb[1]}; every pair once or twice"
    rounds = rounds_of(triple_design(n), n)
    return _oriented([r.tables for r in rounds], n), \
        "greedy rounds of triple_design, no exact design built; every pair once or twice"


@functools.cache
def _schedule(n: int) -> TableSchedule:
    """The cached schedule for a valid n."""
    plan, method = _build(n)
    if isinstance(plan, _Cyclic) and (plan.inf is not None or plan.extra):
        plan = _spun(plan)
    return TableSchedule(n, plan.rounds, method, n >= 6, plan)


def table_schedule(n: int) -> TableSchedule:
    """Rounds of disjoint tables for n >= 3 bots with the best pair balance built (module doc)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 3:
        raise InvalidArgument(f"n must be an integer of at least 3 bots, got {n!r}")
    return _schedule(n)


def clear_cache() -> None:
    """Forget every schedule and base class built so far (benchmarks time first builds)."""
    for cached in (_schedule, _near_resolvable, _rotational, _kirkman, _two_byes):
        cached.cache_clear()


# --- statistics ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScheduleStats:
    """How a schedule balances pairs, tables, seat positions and byes."""

    tables: int
    rounds: int
    pair_min: int  # meetings of a pair of bots
    pair_max: int
    appear_min: int  # tables per bot
    appear_max: int
    seat_min: int  # times a bot holds one seat position, over bots and positions
    seat_max: int
    seat_spread: int  # the largest max - min of one bot's three position counts
    per_round_min: int  # tables per round
    per_round_max: int
    bye_min: int  # byes per bot
    bye_max: int


def schedule_stats(s: TableSchedule) -> ScheduleStats:
    """Measure a schedule by walking all its rounds (O(tables + n²))."""
    n = s.n
    meets = [0] * (n * n)
    seats = [[0, 0, 0] for _ in range(n)]
    byes = [0] * n
    sizes = []
    for i in range(s.rounds):
        r = s.round(i)
        sizes.append(len(r.tables))
        for b in r.byes:
            byes[b] += 1
        for t in r.tables:
            for k, b in enumerate(t):
                seats[b][k] += 1
            a, b, c = sorted(t)
            meets[a * n + b] += 1
            meets[a * n + c] += 1
            meets[b * n + c] += 1
    pairs = [meets[a * n + b] for a in range(n) for b in range(a + 1, n)]
    flat = [x for row in seats for x in row]
    return ScheduleStats(
        sum(sizes), s.rounds, min(pairs), max(pairs),
        min(sum(row) for row in seats), max(sum(row) for row in seats),
        min(flat), max(flat), max(max(row) - min(row) for row in seats),
        min(sizes), max(sizes), min(byes), max(byes))
