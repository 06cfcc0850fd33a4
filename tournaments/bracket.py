"""Elimination brackets: a shape fixed before play, and who plays whom as results come in.

`build(kind, participants)` makes a `Bracket` from participant ids in seed
order (seed 1 first). Every match has a stable id and takes each slot from a
seed or from a rank (1 = winner, 2 = loser or runner-up) of an earlier match,
so the whole shape is known and can be shown before anything is played.
`resolve(bracket, outcomes)` is the pure step: given the finishing order of
the matches played so far, it says for every match who sits in it, whether it
is pending, ready, done, a bye or skipped, and who the champion is. A scheduler
plays every ready match it has not started; `render` draws the state as text.

Kinds:

- `single` (2v2, head-to-head): size = the next power of two; standard
  placement (1 meets the lowest seed, 2 the next lowest, seeds 1 and 2 in
  opposite halves); byes fall to the top seeds as first-round "matches" with
  one participant. Ids `W{round}-{i}`.
- `double` (2v2): the same winners bracket, a losers bracket `L{round}-{i}`
  and a grand final `GF`. Losers bracket round 1 pairs the losers of W1; even
  rounds 2r-2 take the losers of winners round r (dropped in reversed order
  when r is even and with the halves swapped when r is odd, so that early
  rematches are rare); odd rounds pair the survivors. The grand final puts the
  winners-bracket champion (slot 0) against the losers-bracket champion
  (slot 1); if the latter wins, both have one loss and the reset `GF2` decides.
  A first-round bye has no loser, so some losers-bracket matches are byes too.
- `tables` (3 players): tables of three whose winner advances. Every table
  that is played has three real bots: a round with m entrants plays just
  enough tables, among its lowest-ranked entrants, to bring the field down to
  the power of three below m; the rest (the top seeds) have a bye and enter the
  next round directly. A table sends on one bot and so removes two; from an
  even field one bot too many would be left, so exactly once, when the field is
  even, a table advances its top two (winner and runner-up). Entrants are
  ranked by expected strength (a table's winner ranks as its best seed, its
  runner-up as its second best) and tables are dealt like a snake draft
  (1, 2t, 2t+1 | 2, 2t-1, 2t+2 | ...), so top seeds meet late. Ids
  `T{round}-{i}`.

For 2v2 each head-to-head match is a series of duplicate pairs: `series_state`
says, from the pair winners so far (each from `standings.rank_group` over the
pair's two games), how the series stands and who advances. A 3p table's
outcome is `standings.rank_group` over its duplicate set, seeded by
`bracket.participants`. `seed_order` puts bots in seed order by rating.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from store.errors import InvalidArgument

__all__ = [
    "BYE",
    "Bracket",
    "BracketState",
    "FromMatch",
    "FromSeed",
    "Kind",
    "Match",
    "MatchState",
    "SeriesState",
    "Source",
    "Status",
    "build",
    "render",
    "resolve",
    "seed_order",
    "series_state",
]

BYE = ""  # a slot that no one will fill: the participant opposite it advances unplayed


class Kind(StrEnum):
    """The bracket formats."""

    SINGLE = "single"  # head-to-head single elimination (2v2 series)
    DOUBLE = "double"  # head-to-head double elimination with a grand final
    TABLES = "tables"  # 3-player single elimination by tables of three


class Status(StrEnum):
    """Where a match stands."""

    PENDING = "pending"  # some slot still waits for an earlier match
    READY = "ready"  # every slot is known: play it
    DONE = "done"  # played; its ranking is known
    BYE = "bye"  # one real participant, who advances without playing
    SKIPPED = "skipped"  # nobody to play, or a grand-final reset that is not needed


@dataclass(frozen=True, slots=True)
class FromSeed:
    """A slot filled by a seed (1-based); a seed beyond the field is a bye."""

    seed: int


@dataclass(frozen=True, slots=True)
class FromMatch:
    """A slot filled by the participant finishing `rank` (1 = winner, 2 = loser) in a match."""

    match_id: str
    rank: int


Source = FromSeed | FromMatch


@dataclass(frozen=True, slots=True)
class Match:
    """One bracket match (or 3p table): its stable id, place, and where its slots come from."""

    id: str
    section: str  # "W" winners, "L" losers, "GF" grand final, "T" tables
    round: int  # 1-based within the section
    sources: tuple[Source, ...]  # two slots head-to-head, three for a table
    advance: int = 1  # finishers that move on (2 for the one 3p table that sends two)
    reset: bool = False  # the grand-final reset: played only if slot 1 won the first final


@dataclass(frozen=True, slots=True)
class Bracket:
    """A bracket's fixed shape: its participants in seed order and its matches in play order."""

    kind: Kind
    participants: tuple[str, ...]
    matches: tuple[Match, ...]

    def match(self, match_id: str) -> Match:
        """The match with this id, or InvalidArgument."""
        for m in self.matches:
            if m.id == match_id:
                return m
        raise InvalidArgument(f"bracket has no match {match_id!r}")

    def certain_matches(self) -> frozenset[str]:
        """Ids of the matches that will be played whatever the results: every slot filled.

        Byes follow from the shape alone (a seed beyond the field, or the loser of a
        bye, is nobody), so this needs no results; the grand-final reset is never certain.
        """
        filled: dict[str, int] = {}
        certain: set[str] = set()
        for m in self.matches:
            count = sum(
                src.seed <= len(self.participants) if isinstance(src, FromSeed)
                else filled[src.match_id] >= src.rank
                for src in m.sources
            )
            filled[m.id] = count
            if count == len(m.sources) and not m.reset:
                certain.add(m.id)
        return frozenset(certain)

    def destinations(self, match_id: str) -> tuple[tuple[int, str, int], ...]:
        """Where a match's finishers go: (rank, next match id, slot) for each."""
        return tuple(
            (src.rank, m.id, slot)
            for m in self.matches
            if not m.reset
            for slot, src in enumerate(m.sources)
            if isinstance(src, FromMatch) and src.match_id == match_id
        )


@dataclass(frozen=True, slots=True)
class MatchState:
    """A match as the results so far leave it."""

    match: Match
    status: Status
    slots: tuple[str | None, ...]  # participant per slot: None = not known yet, BYE = no one
    ranking: tuple[str, ...] = ()  # finishing order known so far (done or bye), best first

    @property
    def winner(self) -> str | None:
        """The participant who finished first, once done (or advanced by a bye)."""
        return self.ranking[0] if self.ranking else None

    @property
    def participants(self) -> tuple[str, ...]:
        """The real participants known so far."""
        return tuple(p for p in self.slots if p)


@dataclass(frozen=True, slots=True)
class BracketState:
    """Every match's state and the champion, given the outcomes so far."""

    bracket: Bracket
    matches: tuple[MatchState, ...]
    champion: str | None

    def match(self, match_id: str) -> MatchState:
        """The state of the match with this id, or InvalidArgument."""
        for m in self.matches:
            if m.match.id == match_id:
                return m
        raise InvalidArgument(f"bracket has no match {match_id!r}")

    def ready(self) -> tuple[MatchState, ...]:
        """Matches whose participants are all known and that are not played yet."""
        return tuple(m for m in self.matches if m.status is Status.READY)

    @property
    def finished(self) -> bool:
        """True once the champion is known."""
        return self.champion is not None


@dataclass(frozen=True, slots=True)
class SeriesState:
    """A best-of-N series of duplicate pairs between two participants."""

    best_of: int
    wins: tuple[int, int]
    winner: str | None  # set once one side has a majority of best_of
    pairs_played: int

    @property
    def decided(self) -> bool:
        """True once a side has won the series: play no more pairs."""
        return self.winner is not None


# --- building ---------------------------------------------------------------


def _check_participants(participants: Sequence[str], least: int) -> tuple[str, ...]:
    """The participants as a tuple, or InvalidArgument naming what is wrong."""
    ids = tuple(participants)
    if len(ids) < least:
        raise InvalidArgument(f"participants: a bracket needs at least {least}, got {len(ids)}")
    if any(not isinstance(p, str) or not p for p in ids):
        raise InvalidArgument("participants: every id must be a non-empty string")
    if len(set(ids)) != len(ids):
        raise InvalidArgument("participants: an id appears twice")
    return ids


def _placement(size: int) -> list[int]:
    """Seeds in bracket-line order: 1 meets `size`, and each half holds one of the top two."""
    order = [1]
    while len(order) < size:
        width = 2 * len(order)
        order = [s for seed in order for s in (seed, width + 1 - seed)]
    return order


def _winners(n: int) -> tuple[list[Match], int]:
    """The winners bracket for n head-to-head participants, and its round count."""
    size, rounds = 2, 1
    while size < n:
        size, rounds = size * 2, rounds + 1
    order = _placement(size)
    matches = [
        Match(f"W1-{j + 1}", "W", 1, (FromSeed(order[2 * j]), FromSeed(order[2 * j + 1])))
        for j in range(size // 2)
    ]
    for r in range(2, rounds + 1):
        matches.extend(
            Match(f"W{r}-{j}", "W", r, (FromMatch(f"W{r - 1}-{2 * j - 1}", 1),
                                        FromMatch(f"W{r - 1}-{2 * j}", 1)))
            for j in range(1, size // 2**r + 1)
        )
    return matches, rounds


def _drop_order(r: int, m: int) -> list[int]:
    """Which winners-round-r match's loser enters each of the m losers-bracket slots."""
    if r % 2 == 0:
        return list(range(m, 0, -1))
    return [(j + m // 2) % m + 1 for j in range(m)]


def _losers(rounds: int) -> list[Match]:
    """The losers bracket fed by a winners bracket of `rounds` rounds (none for two players)."""
    if rounds < 2:
        return []
    size = 2**rounds
    out = [
        Match(f"L1-{j}", "L", 1, (FromMatch(f"W1-{2 * j - 1}", 2), FromMatch(f"W1-{2 * j}", 2)))
        for j in range(1, size // 4 + 1)
    ]
    for r in range(2, rounds + 1):
        m = size // 2**r
        drop = _drop_order(r, m)
        lr = 2 * r - 2
        out.extend(
            Match(f"L{lr}-{j}", "L", lr, (FromMatch(f"L{lr - 1}-{j}", 1),
                                          FromMatch(f"W{r}-{drop[j - 1]}", 2)))
            for j in range(1, m + 1)
        )
        if r < rounds:
            out.extend(
                Match(f"L{lr + 1}-{j}", "L", lr + 1, (FromMatch(f"L{lr}-{2 * j - 1}", 1),
                                                      FromMatch(f"L{lr}-{2 * j}", 1)))
                for j in range(1, m // 2 + 1)
            )
    return out


def _tables(n: int) -> list[Match]:
    """The 3p table bracket for n >= 3 seeds (see the module doc)."""
    # Entrants as (strength, source): strength is the seed expected to fill the slot.
    entrants: list[tuple[int, Source]] = [(s, FromSeed(s)) for s in range(1, n + 1)]
    out: list[Match] = []
    r = 0
    while True:
        r += 1
        m = len(entrants)
        if m == 3:
            out.append(Match(f"T{r}-1", "T", r, tuple(src for _, src in entrants)))
            return out
        target = 3
        while target * 3 < m:
            target *= 3
        drop = m - target  # bots this round must eliminate
        twos = drop % 2 if 3 * (drop + 1) // 2 <= m else 0  # tables that advance two
        count = drop // 2 + twos
        playing = entrants[m - 3 * count:]
        nxt = entrants[: m - 3 * count]  # the byes: the best-ranked entrants
        for j in range(count):
            seat = sorted((playing[j], playing[2 * count - 1 - j], playing[2 * count + j]),
                          key=lambda e: e[0])
            two = twos and j == count - 1
            mid = f"T{r}-{j + 1}"
            out.append(Match(mid, "T", r, tuple(src for _, src in seat), 2 if two else 1))
            nxt.append((seat[0][0], FromMatch(mid, 1)))
            if two:
                nxt.append((seat[1][0], FromMatch(mid, 2)))
        entrants = sorted(nxt, key=lambda e: e[0])


def seed_order(
    bot_ids: Sequence[str], ratings: Mapping[str, float] | None = None, default: float = 1500.0
) -> tuple[str, ...]:
    """Bots in seed order: by rating, highest first (unrated at `default`), ties as given.

    Without ratings the given order is the seed order.
    """
    if ratings is None:
        return tuple(bot_ids)
    order = {b: i for i, b in enumerate(bot_ids)}
    return tuple(sorted(bot_ids, key=lambda b: (-ratings.get(b, default), order[b])))


def build(kind: Kind | str, participants: Sequence[str]) -> Bracket:
    """The bracket of this kind for participant ids in seed order (seed 1 first)."""
    try:
        k = Kind(kind)
    except ValueError:
        raise InvalidArgument(
            f"format must be one of {', '.join(x.value for x in Kind)}, got {kind!r}"
        ) from None
    if k is Kind.TABLES:
        ids = _check_participants(participants, 3)
        return Bracket(k, ids, tuple(_tables(len(ids))))
    ids = _check_participants(participants, 2)
    matches, rounds = _winners(len(ids))
    if k is Kind.DOUBLE:
        matches.extend(_losers(rounds))
        lb = f"L{2 * rounds - 2}-1" if rounds >= 2 else "W1-1"
        lb_rank = 1 if rounds >= 2 else 2
        final = (FromMatch(f"W{rounds}-1", 1), FromMatch(lb, lb_rank))
        matches.append(Match("GF", "GF", 1, final))
        matches.append(Match("GF2", "GF", 2, final, reset=True))
    return Bracket(k, ids, tuple(matches))


# --- resolving --------------------------------------------------------------


def _ranking(m: Match, slots: tuple[str, ...], outcome: str | Sequence[str]) -> tuple[str, ...]:
    """The finishing order an outcome gives a ready match, checked against its participants."""
    order = (outcome,) if isinstance(outcome, str) else tuple(outcome)
    if not order or len(set(order)) != len(order) or not set(order) <= set(slots):
        raise InvalidArgument(
            f"outcome of {m.id}: {list(order)} must rank some of its participants {list(slots)}"
        )
    need = m.advance if len(slots) == 3 else 1
    if len(order) < need:
        raise InvalidArgument(f"outcome of {m.id}: give the top {need} in order, got {list(order)}")
    if len(slots) == 2 and len(order) == 1:
        order = (order[0], *(p for p in slots if p != order[0]))
    return order


def resolve(bracket: Bracket, outcomes: Mapping[str, str | Sequence[str]]) -> BracketState:
    """Every match's state given the outcomes so far: match id -> winner, or finishing order.

    A head-to-head outcome may be just the winner; a table's must list at least
    as many finishers as the table advances. An outcome for an unknown match or
    for one that is not ready raises InvalidArgument.
    """
    ids = {m.id for m in bracket.matches}
    for mid in outcomes:
        if mid not in ids:
            raise InvalidArgument(f"outcome for unknown match {mid!r}")
    states: dict[str, MatchState] = {}

    def fill(src: Source) -> str | None:
        if isinstance(src, FromSeed):
            field = bracket.participants
            return field[src.seed - 1] if src.seed <= len(field) else BYE
        prior = states[src.match_id]
        if prior.status in (Status.PENDING, Status.READY):
            return None
        return prior.ranking[src.rank - 1] if src.rank <= len(prior.ranking) else BYE

    for m in bracket.matches:
        if m.reset:
            states[m.id] = _reset_state(m, states["GF"], outcomes.get(m.id))
            continue
        slots = tuple(fill(s) for s in m.sources)
        real = tuple(p for p in slots if p)
        if any(p is None for p in slots):
            state = MatchState(m, Status.PENDING, slots)
        elif len(real) < len(slots):
            state = MatchState(m, Status.BYE if real else Status.SKIPPED, slots, real)
        elif m.id in outcomes:
            state = MatchState(m, Status.DONE, slots, _ranking(m, real, outcomes[m.id]))
        else:
            state = MatchState(m, Status.READY, slots)
        if m.id in outcomes and state.status is not Status.DONE:
            raise InvalidArgument(f"outcome for {m.id}, which is {state.status.value}")
        states[m.id] = state
    return BracketState(bracket, tuple(states.values()), _champion(bracket, states))


def _reset_state(m: Match, first: MatchState, outcome: str | Sequence[str] | None) -> MatchState:
    """The grand-final reset: pending until GF is done, then played only if slot 1 won it."""
    if first.status in (Status.PENDING, Status.READY):
        state = MatchState(m, Status.PENDING, (None, None))
    elif first.status is not Status.DONE or first.ranking[0] == first.slots[0]:
        state = MatchState(m, Status.SKIPPED, (BYE, BYE))
    elif outcome is not None:
        real = tuple(p for p in first.slots if p)
        return MatchState(m, Status.DONE, first.slots, _ranking(m, real, outcome))
    else:
        return MatchState(m, Status.READY, first.slots)
    if outcome is not None:
        raise InvalidArgument(f"outcome for {m.id}, which is {state.status.value}")
    return state


def _champion(bracket: Bracket, states: Mapping[str, MatchState]) -> str | None:
    """The champion once the deciding match is done."""
    last = states[bracket.matches[-1].id]
    if bracket.kind is Kind.DOUBLE and last.status is Status.SKIPPED:
        last = states["GF"]  # no reset: the first final decided it
    if last.status in (Status.DONE, Status.BYE):
        return last.ranking[0]
    return None


# --- series -----------------------------------------------------------------


def series_state(a: str, b: str, pair_winners: Sequence[str], best_of: int) -> SeriesState:
    """How a best-of-N series of duplicate pairs between a and b stands after these pairs."""
    if best_of < 1 or best_of % 2 == 0:
        raise InvalidArgument(f"best_of must be a positive odd number, got {best_of}")
    need = best_of // 2 + 1
    wins = [0, 0]
    for i, w in enumerate(pair_winners):
        if max(wins) >= need:
            raise InvalidArgument(f"series {a} vs {b}: pair {i + 1} played after it was decided")
        if w not in (a, b):
            raise InvalidArgument(f"series {a} vs {b}: pair {i + 1} won by {w!r}, not a player")
        wins[0 if w == a else 1] += 1
    winner = a if wins[0] >= need else b if wins[1] >= need else None
    return SeriesState(best_of, (wins[0], wins[1]), winner, len(pair_winners))


# --- rendering --------------------------------------------------------------

_SECTION = {"W": "Winners round", "L": "Losers round", "GF": "Grand final", "T": "Round"}


def render(state: BracketState) -> str:
    """A text picture of the bracket: every match by round, its players and its result."""
    seeds = {p: i + 1 for i, p in enumerate(state.bracket.participants)}

    def name(p: str | None) -> str:
        if p is None:
            return "?"
        return f"{p} ({seeds[p]})" if p else "bye"

    lines: list[str] = []
    heading = ""
    for ms in state.matches:
        m = ms.match
        head = _SECTION[m.section] if m.section == "GF" else f"{_SECTION[m.section]} {m.round}"
        if head != heading:
            heading = head
            lines.append(head)
        players = " vs ".join(name(p) for p in ms.slots)
        if ms.status is Status.DONE:
            note = "-> " + ", ".join(ms.ranking[: max(m.advance, 1)])
        elif ms.status is Status.BYE:
            note = f"-> {ms.ranking[0]} (bye)"
        else:
            note = ms.status.value
        if m.reset:
            note += " (reset: played only if the losers-bracket champion wins GF)"
        if m.advance == 2:
            note += " (top two advance)"
        lines.append(f"  {m.id:<7} {players:<44} {note}")
    lines.append(f"Champion: {state.champion}" if state.champion else "Champion: to be decided")
    return "\n".join(lines)
