"""The fair share of the stack between authors (`tournaments.share`): pure.

Max-min fair splits with the leftovers round robin, an author's limit of pairs in flight
over all their tests (held while shares move), the share as a bound on games in play, the
house-bot CPU of the day, and the words that say which rule holds a test back."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tournaments import change
from tournaments.share import Allowance, Claim, Holder, allowance, split


class _Judge:
    def judge(self, counts: object) -> tuple[float, str]:
        return 0.0, "pending"

    def estimate(self, counts: object) -> object:
        class E:
            elo = low = high = 0.0
        return E()


def test_split_is_even_when_everyone_wants_more() -> None:
    assert split(8, {"a": 10, "b": 10}) == {"a": 4, "b": 4}
    assert split(9, {"a": 10, "b": 10, "c": 10}) == {"a": 3, "b": 3, "c": 3}


def test_what_one_does_not_want_goes_to_the_others() -> None:
    assert split(12, {"a": 2, "b": 100, "c": 100}) == {"a": 2, "b": 5, "c": 5}
    assert split(12, {"a": 0, "b": 100}) == {"a": 0, "b": 12}
    assert split(4, {"a": 1, "b": 1}) == {"a": 1, "b": 1}  # nobody gets more than they want


def test_the_leftover_goes_round_robin_by_turn() -> None:
    firsts = [split(5, {"a": 9, "b": 9}, turn) for turn in range(4)]
    assert firsts == [{"a": 3, "b": 2}, {"a": 2, "b": 3}, {"a": 3, "b": 2}, {"a": 2, "b": 3}]
    assert split(1, {"a": 9, "b": 9, "c": 9}, 2) == {"a": 0, "b": 0, "c": 1}


@given(st.integers(0, 200), st.dictionaries(st.sampled_from("abcdefg"), st.integers(0, 60)),
       st.integers(0, 10))
def test_split_is_max_min_fair_and_wastes_nothing(total: int, wants: dict[str, int],
                                                  turn: int) -> None:
    got = split(total, wants, turn)
    assert set(got) == set(wants)
    assert all(0 <= got[k] <= wants[k] for k in wants)
    assert sum(got.values()) == min(total, sum(wants.values()))
    # Max-min: whoever got less than they wanted got at least everyone else's share - 1.
    for k, want in wants.items():
        if got[k] < want:
            assert all(got[k] >= got[j] - 1 for j in wants)


def _alice(pairs: int | None = 8, cpu_out: str = "") -> dict[str, Holder]:
    return {"u-alice": Holder("alice", pairs, cpu_out), "u-bob": Holder("bob", 8),
            "": Holder("the admin")}


def test_an_author_alone_under_no_slots_gets_what_the_test_wants_up_to_the_limit() -> None:
    me = Claim("c-1", "u-alice", 16, 0)
    assert allowance(me, [], _alice(), None) == Allowance(
        8, "alice's limit: 8 pairs in flight over all their tests")
    assert allowance(Claim("c-1", "u-alice", 5, 0), [], _alice(), None) == Allowance(5)
    assert allowance(Claim("c-1", "", 500, 0), [], _alice(), None) == Allowance(500)


def test_the_limit_counts_pairs_in_flight_of_the_authors_other_tests() -> None:
    other = Claim("c-0", "u-alice", 8, 8)  # all 8 in flight
    me = Claim("c-1", "u-alice", 8, 0)
    got = allowance(me, [other], _alice(), None)
    assert got.pairs == 0  # the other test's pairs must finish first
    assert got.reason == "alice's limit: 8 pairs in flight over all their tests"
    # Once they have finished down to its half, the two tests split the limit.
    assert allowance(me, [Claim("c-0", "u-alice", 8, 4)], _alice(), None).pairs == 4
    # Another author's pairs do not count against alice's limit.
    assert allowance(me, [Claim("c-9", "u-bob", 8, 8)], _alice(), None).pairs == 8


def test_an_admins_test_has_no_limit_of_pairs_but_holds_a_share() -> None:
    me = Claim("c-1", "", 50, 0)
    assert allowance(me, [Claim("c-0", "", 50, 50)], _alice(), None).pairs == 50
    got = allowance(me, [Claim("c-2", "u-alice", 8, 0)], _alice(), 40)
    # 20 pairs: alice wants 8 at most, the admin takes the rest: 12 pairs' games.
    assert (got.pairs, got.games) == (50, 24)
    assert "the admin's fair share" in got.reason


def test_used_up_cpu_starts_nothing_and_says_why() -> None:
    why = "alice's house-bot CPU of the day is used up"
    me = Claim("c-1", "u-alice", 8, 0)
    assert allowance(me, [], _alice(cpu_out=why), None) == Allowance(0, why, 0)
    # ... and leaves her share of the slots to the others.
    bob = Claim("c-2", "u-bob", 8, 0)
    assert allowance(bob, [me], _alice(cpu_out=why), 16) == Allowance(8, "", 16)


def test_slots_are_shared_between_authors_not_tests() -> None:
    holders = {"u-alice": Holder("alice", 100), "u-bob": Holder("bob", 100)}
    alice = [Claim(f"c-a{k}", "u-alice", 16, 0) for k in range(3)]
    bob = Claim("c-b", "u-bob", 16, 0)
    # 24 slots: 12 pairs, 6 to each author; alice's three tests split her six. The share
    # bounds games in play; the pairs in flight are bound by the limit alone.
    assert allowance(bob, alice, holders, 24) == Allowance(
        16, "bob's fair share of the stack: 24 game slots for tests, shared by 2 authors "
            "testing", 12)
    assert [allowance(a, [*alice, bob], holders, 24).games for a in alice] == [4, 4, 4]


def test_a_newcomer_shrinks_the_first_authors_share() -> None:
    holders = {"u-alice": Holder("alice", 100), "u-bob": Holder("bob", 100)}
    long = Claim("c-long", "u-alice", 16, 8)
    assert allowance(long, [], holders, 16) == Allowance(16, "alice's fair share of the "
                                                             "stack: 16 game slots for "
                                                             "tests, shared by 1 author "
                                                             "testing", 16)
    short = Claim("c-short", "u-bob", 16, 0)
    # The newcomer starts its share at once; the long test starts nothing until it is
    # back under its own (its games in play finish).
    assert allowance(short, [long], holders, 16).games == 8
    assert allowance(long, [short], holders, 16).games == 8
    # A newcomer that wants no pair (waiting for a bot) takes nothing of the share.
    assert allowance(long, [Claim("c-short", "u-bob", 0, 0)], holders, 16).games == 16


def test_a_test_that_wants_nothing_gets_nothing_and_no_reason() -> None:
    assert allowance(Claim("c-1", "u-alice", 0, 3), [], _alice(), 16) == Allowance(0, "", 0)


@given(st.lists(st.tuples(st.sampled_from(["u-a", "u-b", "u-c", ""]), st.integers(0, 20),
                          st.integers(0, 20)), min_size=1, max_size=8),
       st.one_of(st.none(), st.integers(0, 80)), st.integers(0, 5))
def test_pairs_started_never_take_an_author_past_their_limit(
        tests: list[tuple[str, int, int]], slots: int | None, turn: int) -> None:
    holders = {"u-a": Holder("a", 6), "u-b": Holder("b", 3), "u-c": Holder("c", 10),
               "": Holder("the admin")}
    claims = [Claim(f"c-{k}", a, w, f) for k, (a, w, f) in enumerate(tests)]
    for me in claims:
        got = allowance(me, claims, holders, slots, turn)
        assert 0 <= got.pairs <= me.wants
        assert (got.games is None) == (slots is None)
        room = min(got.pairs, me.wants if got.games is None else got.games // 2)
        assert (room < me.wants) == bool(got.reason) or me.wants == 0
        limit = holders[me.author].pairs
        if limit is not None and got.pairs > me.flying:  # the test may start pairs
            others = sum(c.flying for c in claims if c.author == me.author and c is not me)
            assert others + got.pairs <= limit


@given(st.lists(st.tuples(st.sampled_from(["u-a", "u-b", "u-c", ""]), st.integers(0, 20)),
                min_size=1, max_size=8), st.integers(0, 80), st.integers(0, 5))
def test_the_games_allowed_fit_the_slots_and_use_them(tests: list[tuple[str, int]], slots: int,
                                                      turn: int) -> None:
    holders = {"u-a": Holder("a", 6), "u-b": Holder("b", 3), "u-c": Holder("c", 10)}
    claims = [Claim(f"c-{k}", a, w, 0) for k, (a, w) in enumerate(tests)]
    games = [allowance(me, claims, holders, slots, turn).games or 0 for me in claims]
    assert sum(games) <= slots
    by_author: dict[str, int] = {}
    for c in claims:
        by_author[c.author] = by_author.get(c.author, 0) + c.wants
    demand = sum(min(w, holders[a].pairs or w) if a in holders else w
                 for a, w in by_author.items())
    assert sum(games) == 2 * min(slots // 2, demand)  # nothing wanted is left idle


def test_a_cap_of_zero_starts_nothing_says_why_and_the_test_goes_on() -> None:
    spec = change.ChangeSpec(test_id="c-00aa", players=3, candidate="b-c", baseline="b-b",
                             opponents=("house:greedy", "house:random"), seed=1, in_flight=4)
    judge = _Judge()
    held = "alice's limit: 8 pairs in flight over all their tests"
    step = change.start(spec, judge, None, 0, held=held)
    assert step.games == []
    assert step.progress.held == held and step.state["waits"] == 1
    assert not step.progress.finished
    again = change.feed(spec, step.state, [], judge, None, 0, held=held)
    assert again.state["waits"] == 1  # the same words: no new announcement
    going = change.feed(spec, again.state, [], judge, None, 2)
    assert len(going.games) == 4 and going.progress.held == ""
    assert going.state["waits"] == 2
    # Waiting for a bot says that, not the limit.
    away = change.feed(spec, going.state, [], judge, None, 0, offline=["b-b"],
                       held=held)
    assert away.progress.waiting == ("b-b",) and away.progress.held == ""


def test_the_games_bound_lets_a_new_pair_beside_a_half_finished_one() -> None:
    spec = change.ChangeSpec(test_id="c-00ab", players=3, candidate="b-c", baseline="b-b",
                             opponents=("house:greedy", "house:random"), seed=1, in_flight=8)
    judge = _Judge()
    step = change.start(spec, judge, None, 8, games=5)
    assert len(step.games) == 4  # two pairs: four games in play, a fifth would split a pair
    c_game = step.games[0]
    row = {"match_id": c_game.match_id, "bot_ids": list(c_game.bot_ids),
           "placement": [1, 2, 3], "final": [30, 20, 10], "end": "normal"}
    half = change.feed(spec, step.state, [row], judge, None, 8, games=5)
    # Board 1's C game is done: three games in play, room for one more pair.
    assert [g.match_id for g in half.games] == [f"{spec.test_id}-p3-c", f"{spec.test_id}-p3-b"]
    assert half.progress.in_flight == 3
