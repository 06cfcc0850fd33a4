"""Round-robin designs: tables of three for 3p, team pairings for 2v2, arranged in rounds.

Pure and deterministic: the same arguments always give the same schedule, so a
scheduler that reruns after a restart derives the same tables (and match ids).
Bots are indices `0..n-1`; the caller maps them to bot ids (e.g. in seed order).

3 players, `triple_design(n)` (tables of three, pair counts `λ(a, b)`):

- n ≡ 1, 3 (mod 6): a Steiner triple system, every pair exactly once,
  n(n-1)/6 tables (Bose's construction for n ≡ 3, Skolem's for n ≡ 1).
- n = 4: all four triples, every pair exactly twice.
- n ≡ 2, 4 (mod 6): an STS on n-1 bots plus one new bot z, who meets the others
  in tables {z, a, b} over a near-perfect matching of them and one more table
  {z, w, y} for the unmatched w. Every pair once or twice; (n²+2)/6 tables, the
  fewest any covering of the pairs can have; every bot sits n/2 tables except
  one that sits n/2 + 1.
- n ≡ 5 (mod 6), n ≥ 11: an STS on n-2 bots plus two new bots z1, z2 meeting
  the others over two disjoint perfect matchings of all but one old bot w, and
  the table {z1, z2, w}. Every pair once or twice; each bot sits (n-1)/2 or
  (n+1)/2 tables. n = 5: the five cyclic tables {i, i+1, i+3} mod 5 (each bot
  three tables, neighbours meet once, the others twice).
- n ≡ 0 (mod 6): an STS on n+1 points less a phantom point p: the tables that
  held p leave a perfect matching e_0..e_{m-1} (m = n/2) of unmet pairs, each
  covered by {a_j, b_j, a_{j+1}}; the pairs doubled by table j lie between e_j
  and e_{j+1}, so no pair is met a third time. Each bot sits n/2 or n/2 + 1
  tables; n(n+1)/6 tables.

So in every case: each pair meets once or twice (all exactly once, or all twice
for n = 4, when that is possible with triples), each bot's table count differs
from any other's by at most one, and there are at most n(n+1)/6 + 1 tables.
(A 2-fold triple system would balance every pair at two meetings for n ≡ 0, 4
(mod 6), at about twice the tables; it is not offered.)

2v2, `team_pairings(n, rotate_partners)`: see that function.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from store.errors import InvalidArgument

__all__ = [
    "DesignStats",
    "Round",
    "Table",
    "TeamGame",
    "TeamRound",
    "TeamStats",
    "design_stats",
    "rounds_of",
    "steiner_triples",
    "team_pairings",
    "team_stats",
    "triple_design",
]

Table = tuple[int, int, int]

# Passes of iterated greedy colouring in `rounds_of`, each O(tables): measured
# on n up to 1000, further passes save at most one round.
_RECOLOUR_ORDERS = ("reverse", "fullest")
# Candidate pairs the exact search for a perfect 2v2 class pairing may try
# before the greedy pairing is used instead (bounds its time for large n).
_SEARCH_BUDGET = 5000
# Re-pairings the hill-climb may try when no perfect pairing is found.
_IMPROVE_BUDGET = 100000


@dataclass(frozen=True, slots=True)
class Round:
    """One round: tables (or games) whose bots are all distinct, and the bots that sit out."""

    number: int  # 1-based
    tables: tuple[Table, ...]
    byes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DesignStats:
    """How balanced a design is: ranges of pair meetings and of tables per bot."""

    tables: int
    pair_min: int
    pair_max: int
    appear_min: int
    appear_max: int


# --- Steiner triple systems -------------------------------------------------


def _bose(v: int) -> list[Table]:
    """Bose's STS(v), v ≡ 3 (mod 6): points (x, i) = i*m + x over the quasigroup (x+y)/2 mod m."""
    m = v // 3
    half = (m + 1) // 2  # the inverse of 2 mod m
    out = [(x, m + x, 2 * m + x) for x in range(m)]
    for x in range(m):
        for y in range(x + 1, m):
            c = (x + y) * half % m
            out.extend((i * m + x, i * m + y, (i + 1) % 3 * m + c) for i in range(3))
    return out


def _skolem(v: int) -> list[Table]:
    """Skolem's STS(v), v ≡ 1 (mod 6): points (x, i) = i*2t + x and ∞ = v-1."""
    t = (v - 1) // 6
    m = 2 * t
    inf = v - 1
    out = [(x, m + x, 2 * m + x) for x in range(t)]
    for x in range(t):
        out.extend((i * m + x + t, (i + 1) % 3 * m + x, inf) for i in range(3))
    for x in range(m):
        for y in range(x + 1, m):
            s = (x + y) % m
            # A half-idempotent commutative quasigroup: x∘x = (x+t)∘(x+t) = x for x < t.
            c = s // 2 if s % 2 == 0 else t + s // 2
            out.extend((i * m + x, i * m + y, (i + 1) % 3 * m + c) for i in range(3))
    return out


def steiner_triples(v: int) -> tuple[Table, ...]:
    """A Steiner triple system on points 0..v-1 (v ≡ 1, 3 mod 6): every pair in exactly one."""
    if v < 3 or v % 6 not in (1, 3):
        raise InvalidArgument(f"a Steiner triple system needs v ≡ 1 or 3 (mod 6), got {v}")
    return _canonical(_sts(v))


def _sts(v: int) -> list[Table]:
    """The STS on v points as built, tables not yet sorted."""
    return _bose(v) if v % 6 == 3 else _skolem(v)


def _canonical(tables: Iterable[Sequence[int]]) -> tuple[Table, ...]:
    """Each table sorted, the tables sorted: one canonical form per design."""
    out: list[Table] = []
    for t in tables:
        a, b, c = sorted(t)
        out.append((a, b, c))
    out.sort()
    return tuple(out)


# --- designs for every n ----------------------------------------------------


def _plus_one(n: int) -> list[Table]:
    """n ≡ 2, 4 (mod 6): STS(n-1) and a new bot z = n-1 paired over a near-perfect matching."""
    z, w = n - 1, n - 2  # w is the old bot the matching leaves out
    out = _sts(n - 1)
    out.extend((a, a + 1, z) for a in range(0, n - 3, 2))
    out.append((0, w, z))  # doubles 0-z (met in {0, 1, z}) and 0-w (met in the STS)
    return out


def _plus_two(n: int) -> list[Table]:
    """n ≡ 5 (mod 6), n ≥ 11: STS(n-2) and z1, z2 over two disjoint matchings of 0..n-4."""
    z1, z2, w = n - 2, n - 1, n - 3
    k = n - 3  # old bots other than w, an even count >= 8
    out = _sts(n - 2)
    out.extend((a, a + 1, z1) for a in range(0, k, 2))
    out.extend((a, (a + 1) % k, z2) for a in range(1, k, 2))
    out.append((w, z1, z2))
    return out


def _less_one(n: int) -> list[Table]:
    """n ≡ 0 (mod 6): STS(n+1) less the point n; its matching is covered by a chain of tables."""
    p = n
    out: list[Table] = []
    matching: list[tuple[int, int]] = []
    for t in steiner_triples(n + 1):  # sorted: p = n, the largest point, comes last
        if t[2] == p:
            matching.append((t[0], t[1]))
        else:
            out.append(t)
    m = len(matching)
    for j, (a, b) in enumerate(matching):
        out.append((a, b, matching[(j + 1) % m][0]))
    return out


def triple_design(n: int, all_triples: bool = False) -> tuple[Table, ...]:
    """Tables of three for a 3p round-robin of bots 0..n-1 (balance: see the module doc)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 3:
        raise InvalidArgument(f"a 3-player round-robin needs at least 3 bots, got {n}")
    if all_triples:
        return tuple(itertools.combinations(range(n), 3))
    r = n % 6
    if r in (1, 3):
        return steiner_triples(n)
    if n == 4:
        return ((0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3))
    if n == 5:
        return _canonical((i, (i + 1) % 5, (i + 3) % 5) for i in range(5))
    if r in (2, 4):
        return _canonical(_plus_one(n))
    if r == 5:
        return _canonical(_plus_two(n))
    return _canonical(_less_one(n))


def design_stats(tables: Iterable[Sequence[int]], n: int) -> DesignStats:
    """Pair-meeting and tables-per-bot ranges over all pairs and bots 0..n-1."""
    meets = [0] * (n * n)  # meets[a * n + b] for a < b
    appear = [0] * n
    count = 0
    for t in tables:
        count += 1
        group = sorted(set(t))
        for i, a in enumerate(group):
            appear[a] += 1
            row = a * n
            for b in group[i + 1:]:
                meets[row + b] += 1
    pairs = [meets[a * n + b] for a in range(n) for b in range(a + 1, n)]
    return DesignStats(count, min(pairs, default=0), max(pairs, default=0),
                       min(appear), max(appear))


# --- rounds -----------------------------------------------------------------


def _first_fit(groups: Sequence[Table], n: int) -> list[list[Table]]:
    """Put each table, in order, into the first round where its three bots are free."""
    busy = [0] * n  # bit r set: the bot already plays in round r
    rounds: list[list[Table]] = []
    for t in groups:
        a, b, c = t
        taken = busy[a] | busy[b] | busy[c]
        bit = ~taken & (taken + 1)  # the lowest free round
        busy[a] |= bit
        busy[b] |= bit
        busy[c] |= bit
        r = bit.bit_length() - 1
        if r == len(rounds):
            rounds.append([t])
        else:
            rounds[r].append(t)
    return rounds


def _colour(groups: Sequence[Table], n: int) -> list[list[Table]]:
    """Rounds for tables: first fit in a scrambled order, then iterated greedy recolouring.

    The tables are first sorted, so the result depends only on their set; a
    golden-ratio stride scrambles them (first fit in sorted order packs badly).
    Refitting the rounds class by class never needs more rounds than before
    (Culberson's iterated greedy); reversing the class order, then fullest
    first, lets the sparse last rounds empty into earlier ones.
    """
    tables = sorted(groups)
    total = len(tables)
    step = int(total * 0.618034) | 1
    while math.gcd(step, total) != 1:
        step += 2
    rounds = _first_fit([tables[i * step % total] for i in range(total)], n)
    for p in _RECOLOUR_ORDERS:
        if p == "reverse":
            rounds.reverse()
        else:
            rounds.sort(key=len, reverse=True)
        rounds = _first_fit([t for r in rounds for t in r], n)
    for r in rounds:
        r.sort()
    rounds.sort(key=lambda r: (-len(r), r[0]))
    return rounds


def _with_byes(rounds: list[list[Table]], n: int) -> list[Round]:
    """Number the rounds and name the bots each leaves out."""
    out = []
    for i, r in enumerate(rounds):
        free = bytearray(b"\x01") * n
        for a, b, c in r:
            free[a] = free[b] = free[c] = 0
        out.append(Round(i + 1, tuple(r), tuple(b for b in range(n) if free[b])))
    return out


def rounds_of(tables: Sequence[Table], n: int) -> tuple[Round, ...]:
    """Arrange tables into rounds in which each bot sits at most one table; the rest have a bye.

    Deterministic, and a function of the set of tables only (not their order).
    A bot's byes are the rounds minus its tables, so byes differ across bots by
    no more than table counts do (at most one for `triple_design`). Fullest
    rounds come first. The round count is a greedy colouring's; against the
    bound max(tables per bot, ceil(tables / (n // 3))) it measured at most
    1.45x for n <= 60 (n = 6, 7 need their 7 rounds: any two of their tables
    share a bot), 1.18x at n = 100 and 1.06x at n = 1000; an exact search for
    n <= 14 finds at most one round fewer.
    """
    for t in tables:
        a, b, c = t if len(t) == 3 else (-1, -1, -1)
        if not (0 <= a < n and 0 <= b < n and 0 <= c < n and a != b != c != a):
            raise InvalidArgument(f"table {t} must hold 3 distinct bots from 0 to {n - 1}")
    if not tables:
        return ()
    return tuple(_with_byes(_colour(tables, n), n))


# --- 2v2 --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TeamGame:
    """One 2v2 game: team 0 takes seats 0 and 2, team 1 seats 1 and 3."""

    team0: tuple[int, int]
    team1: tuple[int, int]

    @property
    def seats(self) -> tuple[int, int, int, int]:
        """The bot at each seat 0..3 (seat s plays for team s % 2)."""
        return (self.team0[0], self.team1[0], self.team0[1], self.team1[1])

    @property
    def bots(self) -> frozenset[int]:
        """The distinct bots in the game (two when each team is one bot)."""
        return frozenset(self.team0 + self.team1)


@dataclass(frozen=True, slots=True)
class TeamRound:
    """One round of 2v2 games whose bots are all distinct, and the bots that sit out."""

    number: int  # 1-based
    games: tuple[TeamGame, ...]
    byes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TeamStats:
    """How balanced a 2v2 schedule is: games per bot, partner and opponent meetings per pair."""

    games: int
    games_min: int
    games_max: int
    partner_min: int
    partner_max: int
    opponent_min: int
    opponent_max: int


def _cyclic(n: int) -> tuple[int, int]:
    """(N, K): bots live in Z_N (plus ∞ = N when n is even); K classes of differences."""
    big_n = n if n % 2 else n - 1
    return big_n, (big_n - 1) // 2


def _edge(cls: int, r: int, big_n: int) -> tuple[int, int]:
    """The round-r pair of class `cls`: {∞, r} for class 0, else {r-cls, r+cls} mod N."""
    if cls == 0:
        return (r, big_n)
    return ((r - cls) % big_n, (r + cls) % big_n)


def _diffs(i: int, j: int, big_n: int) -> tuple[int, ...]:
    """Differences whose pairs become opponents (twice each) when classes i and j meet."""
    if i == 0 or j == 0:
        return (i + j,)
    s = (i + j) % big_n
    return (abs(i - j), min(s, big_n - s))


def _pair_classes(classes: list[int], big_n: int, k: int) -> list[tuple[int, int]]:
    """Pair up the classes so the opponent differences repeat as little as possible.

    A perfect pairing (every difference once: every pair of bots opponents
    exactly twice) is searched for within a budget; it does not exist for
    every n, and then a greedy pairing that adds the fewest repeats is used.
    """
    used = [0] * (k + 1)
    nodes = 0

    def dfs(free: list[int], acc: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
        nonlocal nodes
        if not free:
            return acc
        if nodes > _SEARCH_BUDGET:
            return None
        i = free[0]
        for j in reversed(free[1:]):
            nodes += 1
            ds = _diffs(i, j, big_n)
            if any(used[d] for d in ds):
                continue
            for d in ds:
                used[d] += 1
            found = dfs([x for x in free if x not in (i, j)], [*acc, (i, j)])
            for d in ds:
                used[d] -= 1
            if found is not None or nodes > _SEARCH_BUDGET:
                return found
        return None

    perfect = dfs(sorted(classes), [])
    if perfect is not None:
        return perfect
    return _improve(_greedy_pairing(classes, big_n, k), big_n, k)


def _greedy_pairing(classes: list[int], big_n: int, k: int) -> list[tuple[int, int]]:
    """Pair each class in turn with the partner whose differences are least used so far."""
    used = [0] * (k + 1)
    free = sorted(classes)
    out: list[tuple[int, int]] = []
    while free:
        i = free.pop(0)

        def load(c: int, i: int = i) -> tuple[int, int, int]:
            ds = _diffs(i, c, big_n)
            return (max(used[d] for d in ds), sum(used[d] for d in ds), -c)

        j = min(free, key=load)
        free.remove(j)
        for d in _diffs(i, j, big_n):
            used[d] += 1
        out.append((i, j))
    return out


def _improve(pairs: list[tuple[int, int]], big_n: int, k: int) -> list[tuple[int, int]]:
    """Hill-climb: re-pair two class pairs when that lowers the sum of squared difference use."""
    used = [0] * (k + 1)
    for i, j in pairs:
        for d in _diffs(i, j, big_n):
            used[d] += 1

    def cost(ds: list[int]) -> int:
        return sum(used[d] * used[d] for d in set(ds))

    def shift(ds: Iterable[int], by: int) -> None:
        for d in ds:
            used[d] += by

    tries = 0
    better = True
    while better and tries < _IMPROVE_BUDGET:
        better = False
        for x in range(len(pairs)):
            for y in range(x + 1, len(pairs)):
                tries += 1
                (a, b), (c, d) = pairs[x], pairs[y]
                old = [*_diffs(a, b, big_n), *_diffs(c, d, big_n)]
                for p, q in (((a, c), (b, d)), ((a, d), (b, c))):
                    new = [*_diffs(*p, big_n), *_diffs(*q, big_n)]
                    before = cost(old + new)
                    shift(old, -1)
                    shift(new, 1)
                    if cost(old + new) < before:
                        pairs[x], pairs[y] = (min(p), max(p)), (min(q), max(q))
                        better = True
                        break
                    shift(new, -1)
                    shift(old, 1)
    return pairs


def _head_to_head(n: int) -> tuple[TeamRound, ...]:
    """Circle method: every pair of bots once, each bot one team playing both its seats."""
    big_n, k = _cyclic(n)
    classes = range(0 if n % 2 == 0 else 1, k + 1)
    rounds = []
    for r in range(big_n):
        games = []
        for c in classes:
            a, b = sorted(_edge(c, r, big_n))
            # Alternate which bot takes team 0 so that seats even out over the rounds.
            if (r + c) % 2:
                a, b = b, a
            games.append(TeamGame((a, a), (b, b)))
        byes = (r,) if n % 2 else ()
        rounds.append(TeamRound(r + 1, tuple(games), byes))
    return tuple(rounds)


def _rotating(n: int) -> tuple[TeamRound, ...]:
    """Partners rotate: every pair of bots partners once (see `team_pairings`)."""
    big_n, k = _cyclic(n)
    classes = list(range(0 if n % 2 == 0 else 1, k + 1))
    spare = None
    if len(classes) % 2:
        spare = 1  # any class but K works with the shift-1 pairing below; never class 0 (a star)
        classes.remove(spare)
    pairing = _pair_classes(classes, big_n, k)
    rounds: list[TeamRound] = []
    for r in range(big_n):
        games = tuple(
            TeamGame(_edge(i, r, big_n), _edge(j, r, big_n)) for i, j in pairing
        )
        seated = {b for g in games for b in g.bots}
        byes = tuple(b for b in range(n) if b not in seated)
        rounds.append(TeamRound(r + 1, games, byes))
    if spare is None:
        return tuple(rounds)
    # The spare class's pairs {r-u, r+u} (one per round, N of them, N odd) meet
    # each other at shift 1, and the last one meets the first again: that one
    # pair of bots partners twice.
    extra = [
        TeamGame(_edge(spare, r, big_n), _edge(spare, (r + 1) % big_n, big_n))
        for r in range(0, big_n, 2)
    ]
    # First fit: each bot is in about three of these games, so about four rounds.
    packed: list[list[TeamGame]] = []
    for game in extra:
        slot = next((r for r in packed if not any(game.bots & g.bots for g in r)), None)
        if slot is None:
            packed.append([game])
        else:
            slot.append(game)
    for batch in packed:
        seated = {b for g in batch for b in g.bots}
        byes = tuple(b for b in range(n) if b not in seated)
        rounds.append(TeamRound(len(rounds) + 1, tuple(batch), byes))
    return tuple(rounds)


def team_pairings(n: int, rotate_partners: bool) -> tuple[TeamRound, ...]:
    """2v2 round-robin games in rounds.

    Without rotation (n >= 2): every pair of bots meets once, each bot being a
    whole team (it plays both seats of its team): the circle method, N = n - 1
    rounds for even n, n rounds with one bye each for odd n.

    With rotation (n >= 4): bots live in Z_N (plus ∞ when n is even); round r
    splits them into the pairs {r-i, r+i} (and {∞, r}) and pairs those pairs
    into games by a fixed pairing of the classes i. Guarantees: every pair of
    bots partners exactly once, except when n(n-1)/2 is odd (n ≡ 2, 3 mod 4),
    where exactly one pair partners twice; every bot plays n - 1 games (those
    two n). Opponents: every pair meets an even number of times, exactly twice
    when a perfect class pairing is found (n = 4, 5, 13, 17, 25, ...), and
    otherwise 0 to 4 times (see `team_stats` and the tests' measured ranges).
    For n = 4 this is the 3 ways to split four bots into two teams.
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise InvalidArgument(f"n must be an integer, got {n!r}")
    if rotate_partners:
        if n < 4:
            raise InvalidArgument(f"2v2 with rotating partners needs at least 4 bots, got {n}")
        return _rotating(n)
    if n < 2:
        raise InvalidArgument(f"a 2v2 round-robin needs at least 2 bots, got {n}")
    return _head_to_head(n)


def team_stats(rounds: Iterable[TeamRound], n: int) -> TeamStats:
    """Games per bot and partner/opponent meeting ranges over all pairs of bots 0..n-1."""
    games = [0] * n
    partners: Counter[tuple[int, int]] = Counter()
    opponents: Counter[tuple[int, int]] = Counter()
    count = 0
    for rnd in rounds:
        for g in rnd.games:
            count += 1
            for b in g.bots:
                games[b] += 1
            for team in (g.team0, g.team1):
                if team[0] != team[1]:
                    partners[min(team), max(team)] += 1
            for a in set(g.team0):
                for b in set(g.team1):
                    opponents[min(a, b), max(a, b)] += 1
    all_pairs = list(itertools.combinations(range(n), 2))
    part = [partners[p] for p in all_pairs]
    opp = [opponents[p] for p in all_pairs]
    return TeamStats(count, min(games), max(games), min(part), max(part), min(opp), max(opp))
