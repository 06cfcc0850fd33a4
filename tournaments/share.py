"""A fair share of the stack between the authors of tests of a change: pure.

Tests cost the stack's game slots (a worker hosts `--concurrency` games at once) and its
house bots' CPU. What one test may have in flight is the least of:

- what the test itself can take now (`wants`: its bots' capacity, 0 once it starts no
  more pairs or waits for a bot);
- its author's share of the stack: the game slots tests may take (`slots`, a pair is two
  games) split between the *authors* with a test that wants pairs, max-min fair (an
  author who wants less than an even split keeps only what they want, and the rest is
  split between the others), the pairs an even split leaves over going one each to the
  authors in turn (`turn` rotates who is first: round robin over time); then an author's
  share split the same way between their own tests. The admin's tests are one more
  holder of a share (named "the admin"), so nobody's long test starves anyone's;
- its author's limit of pairs in flight (`Holder.pairs`) over all their tests: at most
  the limit less what their other tests have in flight now, so the limit holds while
  shares move (a share that shrank leaves pairs in flight above it, which finish);
- nothing at all while the author's house-bot CPU of the day is used up
  (`Holder.cpu_out` says so, until the UTC day ends).

`allowance` gives one test's pairs (the limit's bound, on pairs in flight) and games
(the share's bound, on games in play: a pair whose first game has finished holds one
game slot, so a game slot it frees goes to a new pair at once) and, when a limit or the
share is what holds it below what it wants, why, in words for people
(`Allowance.reason`). The words change
only when the rule that binds changes (not with every pair that starts or ends), since
a test announces each change (`WaitingChanged`).

The inputs come from the caller (`workers.changes`): each running test's claim as its
last step left it (`store.changes.claims`), each author's limits and CPU of the day.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Allowance", "Claim", "Holder", "allowance", "split"]


@dataclass(frozen=True, slots=True)
class Claim:
    """A running test as the share sees it: its author ("" the admin), the pairs it could
    take now (0: none: it starts no more, or waits for a bot) and the pairs in flight."""

    test_id: str
    author: str
    wants: int
    flying: int


@dataclass(frozen=True, slots=True)
class Holder:
    """An author as the share sees them: a name for people, their limit of pairs in flight
    over all their tests (None: none, the admin) and, when their house-bot CPU of the day
    is used up, why no pair starts (empty otherwise)."""

    name: str
    pairs: int | None = None
    cpu_out: str = ""


@dataclass(frozen=True, slots=True)
class Allowance:
    """What a test may have now: pairs in flight (started, a game not finished: its
    author's limit), games in play (its share of the slots, two a pair; None: no bound),
    and why less than it wants (empty: nothing holds it back)."""

    pairs: int
    reason: str = ""
    games: int | None = None


def split(total: int, wants: Mapping[str, int], turn: int = 0) -> dict[str, int]:
    """`total` units split max-min fair between claimants wanting `wants` each: nobody gets
    more than they want, and what one does not want goes to the others in equal parts; the
    units an equal part leaves over go one each to the claimants still wanting, in sorted
    order from the `turn`-th (mod their number) on. Every claimant is in the result."""
    got = dict.fromkeys(wants, 0)
    active = sorted(k for k, w in wants.items() if w > 0)
    left = max(0, total)
    while active and left > 0:
        even = left // len(active)
        if even == 0:
            first = turn % len(active)
            for k in (active[first:] + active[:first])[:left]:
                got[k] += 1
            break
        full = [k for k in active if wants[k] - got[k] <= even]
        if full:
            for k in full:
                left -= wants[k] - got[k]
                got[k] = wants[k]
            active = [k for k in active if k not in full]
            continue
        for k in active:
            got[k] += even
        left -= even * len(active)
    return got


def _limit_cap(me: Claim, mine: Sequence[Claim], holder: Holder, turn: int) -> int:
    """What the author's own limit of pairs allows the test, with no share of the stack."""
    if holder.pairs is None:
        return me.wants
    within = split(min(holder.pairs, sum(c.wants for c in mine)),
                   {c.test_id: c.wants for c in mine}, turn)[me.test_id]
    others = sum(c.flying for c in mine if c.test_id != me.test_id)
    return min(within, max(0, holder.pairs - others))


def allowance(me: Claim, others: Sequence[Claim], holders: Mapping[str, Holder],
              slots: int | None, turn: int = 0) -> Allowance:
    """Pairs test `me` may have in flight now, among the running tests `others` (its own
    claim there is ignored), with each author's `holders` entry (a missing one: no limit)
    and the stack's game `slots` for tests (None: no bound but the limits)."""
    claims = [me, *(c for c in others if c.test_id != me.test_id)]
    holder = holders.get(me.author) or Holder(me.author or "the admin")
    if holder.cpu_out:
        return Allowance(0, holder.cpu_out, 0)
    if me.wants <= 0:
        return Allowance(0, "", None if slots is None else 0)
    mine = [c for c in claims if c.author == me.author]
    limit = _limit_cap(me, mine, holder, turn)
    if slots is None:
        share = me.wants
        wanting = 1
    else:
        demand: dict[str, int] = {}
        for c in claims:
            h = holders.get(c.author) or Holder(c.author)
            demand[c.author] = demand.get(c.author, 0) + (0 if h.cpu_out else c.wants)
        for author, h in holders.items():
            if author in demand and h.pairs is not None:
                demand[author] = min(demand[author], h.pairs)
        wanting = sum(1 for d in demand.values() if d > 0)
        ours = split(slots // 2, demand, turn)[me.author]
        share = split(ours, {c.test_id: c.wants for c in mine}, turn)[me.test_id]
    pairs = min(me.wants, limit)
    games = None if slots is None else 2 * min(pairs, share)
    if min(pairs, share) >= me.wants:
        return Allowance(pairs, "", games)
    if pairs <= share:
        assert holder.pairs is not None  # only a limit holds a test below what it wants
        return Allowance(pairs, f"{holder.name}'s limit: {holder.pairs} pairs in flight over "
                                "all their tests", games)
    return Allowance(pairs, f"{holder.name}'s fair share of the stack: {slots} game slots "
                            f"for tests, shared by {wanting} "
                            f"{'author' if wanting == 1 else 'authors'} testing", games)
