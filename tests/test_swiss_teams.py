"""2v2 Swiss pairing: fixed teams as a two-player Swiss, and rotating partners; the
breaches checked against an exact optimum counted independently."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from swiss_sim import optimum, partner_breaches, play_partners, play_teams, team_breaches, total

from store.errors import InvalidArgument
from tournaments.swiss_rules import Mode, default_rounds, max_rounds
from tournaments.swiss_teams import (
    PartnerRound,
    TeamRound,
    pair_partners,
    pair_teams,
    partner_history,
    team_history,
)


def _byes_fair(counts: Counter[int], n: int) -> bool:
    got = [counts[x] for x in range(n)]
    return max(got) - min(got) <= 1


@pytest.mark.parametrize("t", [*range(2, 25), 33, 40])
def test_teams_rematch_only_when_unavoidable_and_alternate_seat_pairs(t: int) -> None:
    rounds = min(max_rounds(Mode.TEAMS, t), default_rounds(Mode.TEAMS, t) + 2)
    byes: Counter[int] = Counter()
    for step in play_teams(t, rounds, seed=t):
        rnd = step.round
        assert isinstance(rnd, TeamRound)
        seen = [x for g in rnd.games for x in g] + list(rnd.byes)
        assert sorted(seen) == list(range(t))
        assert len(rnd.byes) == t % 2
        byes.update(rnd.byes)
        assert _byes_fair(byes, t)
        h = team_history(t, step.before)
        ours = total([team_breaches(g, h.met, h.sides) for g in rnd.games])
        best = optimum(sorted(seen[:len(seen) - len(rnd.byes)]), 2,
                       lambda g, h=h: team_breaches(g, h.met, h.sides))
        assert ours == best, (len(step.before) + 1, ours, best)


@pytest.mark.parametrize("t", [100, 101])
def test_many_teams_never_rematch_and_keep_seat_pairs_within_one(t: int) -> None:
    steps = list(play_teams(t, default_rounds(Mode.TEAMS, t), seed=1))
    h = team_history(t, [s.round for s in steps])  # type: ignore[misc]
    assert int(h.met.max()) == 1
    assert int(abs(h.sides[:, 0] - h.sides[:, 1]).max()) <= 1


def test_teams_round_one_is_the_top_half_against_the_bottom_half() -> None:
    rnd = pair_teams([0.0] * 8, [], seed=0)
    assert sorted(tuple(sorted(g)) for g in rnd.games) == [(0, 4), (1, 5), (2, 6), (3, 7)]
    odd = pair_teams([0.0] * 5, [], seed=0)
    assert odd.byes == (4,)  # the worst seed sits out first


@pytest.mark.parametrize("n", range(4, 17))
def test_partners_are_new_while_the_field_allows(n: int) -> None:
    rounds = min(max_rounds(Mode.PARTNERS, n), default_rounds(Mode.PARTNERS, n) + 2)
    byes: Counter[int] = Counter()
    for step in play_partners(n, rounds, seed=n):
        rnd = step.round
        assert isinstance(rnd, PartnerRound)
        seen = [x for t in rnd.tables for x in t] + list(rnd.byes)
        assert sorted(seen) == list(range(n))
        assert len(rnd.byes) == n % 4
        byes.update(rnd.byes)
        assert _byes_fair(byes, n)
        h = partner_history(n, step.before)
        ours = total([partner_breaches(t, h.partners, h.opponents, h.seats)
                      for t in rnd.tables])
        best = optimum(sorted(x for t in rnd.tables for x in t), 4,
                       lambda t, h=h: partner_breaches(t, h.partners, h.opponents, h.seats))
        assert ours == best, (len(step.before) + 1, ours, best)


@pytest.mark.parametrize("n", [17, 24, 33, 50, 64, 99, 100])
def test_larger_fields_rotate_partners_and_seats(n: int) -> None:
    steps = list(play_partners(n, default_rounds(Mode.PARTNERS, n), seed=2))
    h = partner_history(n, [s.round for s in steps])  # type: ignore[misc]
    assert int(h.partners.max()) == 1  # no one partners anyone twice
    assert int((h.seats.max(axis=1) - h.seats.min(axis=1)).max()) <= 1
    # opponents repeat only in small fields
    if n >= 33:
        assert int(h.opponents.max()) == 1


def test_partners_split_a_score_group_into_even_teams() -> None:
    # four bots on 3, 3, 1, 1 points: the two leaders do not partner each other
    rnd = pair_partners([3.0, 3.0, 1.0, 1.0], [], seed=0)
    (s0, s1, s2, s3), = rnd.tables
    assert {frozenset((s0, s2)), frozenset((s1, s3))} == {frozenset((0, 2)), frozenset((1, 3))} \
        or {frozenset((s0, s2)), frozenset((s1, s3))} == {frozenset((0, 3)), frozenset((1, 2))}


def test_partners_round_one_takes_one_bot_from_each_quarter() -> None:
    rnd = pair_partners([0.0] * 16, [], seed=0)
    for table in rnd.tables:
        assert sorted(x // 4 for x in table) == [0, 1, 2, 3]
        assert table[0] // 4 + table[2] // 4 == 3  # the best of a table partners the worst


def test_bad_input_is_an_invalid_argument() -> None:
    with pytest.raises(InvalidArgument, match="at least 2"):
        pair_teams([0.0], [], seed=0)
    with pytest.raises(InvalidArgument, match="at least 4"):
        pair_partners([0.0] * 3, [], seed=0)
    with pytest.raises(InvalidArgument, match="round 1"):
        pair_teams([0.0] * 4, [TeamRound(((0, 0),))], seed=0)
    with pytest.raises(InvalidArgument, match="round 1"):
        pair_partners([0.0] * 4, [PartnerRound(((0, 1, 2),))], seed=0)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="multiple of 1/4"):
        pair_teams([0.3, 0.0], [], seed=0)


def test_history_counts_partners_and_opponents() -> None:
    h = partner_history(4, [PartnerRound(((0, 1, 2, 3),))])
    assert h.partners[0, 2] == h.partners[1, 3] == 1 and h.partners[0, 1] == 0
    assert all(h.opponents[a, b] == 1 for a, b in itertools.product((0, 2), (1, 3)))
    assert h.seats.tolist() == [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
