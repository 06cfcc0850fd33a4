"""The worked examples of RULES.md as unit tests.

Positions are built directly: `GameState`'s fields are public slots (hands are
28-bit masks by `Tile.index`), so a test can set hands, contract and leader and
then check what the engine allows and who wins. Every expected value below was
worked out by hand from RULES.md, not copied from the engine.
"""

from __future__ import annotations

import itertools
import random

import pytest

from moon import DOUBLES, NO_TRUMP, GameState, IllegalActionError, Phase, Rules, Tile
from moon.tiles import ALL_TILES, mask_of

PLAY = int(Phase.PLAY)


def T(text: str) -> Tile:
    return Tile.parse(text)


def position(players: int, hands: list[str], contract: int, *, leader: int,
             bidder: int | None = None, bid: int = 4, rules: Rules | None = None) -> GameState:
    """A state in the play phase: `hands[s]` is seat s's tiles, `leader` to lead trick 1."""
    rules = rules or Rules.make(players)
    st = GameState.new(rules, 0)
    st.hands = [mask_of(T(x) for x in h.split()) for h in hands]
    st.dealt = tuple(st.hands)
    st.widow = st.discard = -1
    st.bidder = leader if bidder is None else bidder
    st.bid = st.high = bid
    st.bids = [(st.bidder, bid)]
    st.contract = contract
    st.phase = PLAY
    st.to_act = leader
    st.plays, st.winners, st.in_trick = [], [], 0
    st.tricks_won = [0] * players
    return st


def legal_tiles(st: GameState) -> set[str]:
    return {str(a.tile) for a in st.legal_actions()}


def play(st: GameState, *tiles: str) -> None:
    for t in tiles:
        st.apply(f"play {t}", st.to_act)


def trick_winner(players: int, contract: int, leader: int, tiles: list[str]) -> int:
    """Each seat holds just its tile of the trick; play it and return the engine's winner."""
    hands = [""] * players
    for k, t in enumerate(tiles):
        hands[(leader + k) % players] = t
    st = position(players, hands, contract, leader=leader)
    play(st, *tiles)
    assert len(st.winners) == 1
    assert st.to_act == st.winners[0], "the winner of a trick leads the next"
    return st.winners[0]


# ----------------------------------------------------------- suits and ranks

SUIT_2 = ["2-2", "6-2", "5-2", "4-2", "3-2", "2-1", "2-0"]  # RULES.md: 2-2, 6-2, ..., 1-2, 0-2


def test_suit_2_ranks_as_rules_md_lists_it() -> None:
    # No trump, 4 players (so 2-0 is in play). A suit-2 trick is led by a tile whose
    # higher end is 2; every ordering of three suit-2 tiles plus an off-suit tile.
    checked = 0
    for lead in ("2-2", "2-1", "2-0"):
        for a, b in itertools.permutations([t for t in SUIT_2 if t != lead], 2):
            for leader in (0, 3):
                tiles = [lead, a, b, "6-5"]
                best = min((lead, a, b), key=SUIT_2.index)
                expected = (leader + tiles.index(best)) % 4
                assert trick_winner(4, NO_TRUMP, leader, tiles) == expected, tiles
                checked += 1
    assert checked == 3 * 30 * 2


@pytest.mark.parametrize("suit", range(1, 7))
def test_every_suit_ranks_double_then_other_end(suit: int) -> None:
    # Suit s is led by s-0, its lowest tile (high end s); every pair of the other six
    # tiles of the suit then plays in both orders, with an off-suit tile last.
    order = [T(f"{suit}-{suit}"), *sorted(
        (t for t in ALL_TILES if t.has(suit) and not t.is_double),
        key=lambda t: -(t.low if t.high == suit else t.high),
    )]
    assert len(order) == 7 and str(order[-1]) == f"{suit}-0"
    off = next(str(t) for t in ALL_TILES if not t.has(suit) and not t.is_double)
    for hi, lo in itertools.combinations(order[:-1], 2):
        assert trick_winner(4, NO_TRUMP, 1, [f"{suit}-0", str(lo), str(hi), off]) == 3
        assert trick_winner(4, NO_TRUMP, 1, [f"{suit}-0", str(hi), str(lo), off]) == 2


def test_suit_0_is_led_only_by_0_0_which_heads_it() -> None:
    # Every other 0 has a higher end, so it leads that suit instead.
    for other in ("6-0", "1-0"):
        assert trick_winner(4, NO_TRUMP, 0, ["0-0", other, "6-6", "5-5"]) == 0
    assert trick_winner(4, NO_TRUMP, 0, ["1-0", "1-1", "6-0", "5-5"]) == 1


def test_suit_to_follow_is_the_higher_end() -> None:
    # Trump 6. 5-3 led calls suit 5, not 3.
    st = position(3, ["5-3", "3-2 4-1", "5-1 3-1"], 6, leader=0)
    play(st, "5-3")
    assert legal_tiles(st) == {"3-2", "4-1"}  # no 5: anything
    play(st, "3-2")
    assert legal_tiles(st) == {"5-1"}  # holds a 5: must follow with it
    play(st, "5-1")
    assert st.winners == [0]  # 5-3 beats 5-1 in suit 5; 3-2 did not follow
    assert trick_winner(3, 6, 0, ["5-3", "5-4", "3-3"]) == 1


def test_highest_of_led_suit_wins_when_no_trump_is_played() -> None:
    assert trick_winner(3, 6, 0, ["4-1", "5-5", "4-2"]) == 2  # 5-5 is off suit
    assert trick_winner(3, 6, 1, ["4-1", "5-2", "3-3"]) == 1  # nobody followed
    assert trick_winner(3, NO_TRUMP, 2, ["4-3", "4-4", "5-4"]) == 0  # double heads suit 4


def test_highest_trump_wins() -> None:
    # Trump 1: 1-1 > 6-1 > 5-1 > 4-1 > 3-1 > 2-1 (> 1-0 with 28 tiles).
    assert trick_winner(3, 1, 0, ["6-6", "2-1", "6-5"]) == 1  # lowest trump beats 6-6
    assert trick_winner(3, 1, 0, ["6-6", "2-1", "3-1"]) == 2
    assert trick_winner(3, 1, 0, ["2-1", "1-1", "6-1"]) == 1
    assert trick_winner(4, 1, 0, ["6-6", "1-0", "6-5", "6-4"]) == 1


@pytest.mark.parametrize("trump", range(7))
def test_number_trumps_rank_double_then_other_end(trump: int) -> None:
    order = [T(f"{trump}-{trump}"), *sorted(
        (t for t in ALL_TILES if t.has(trump) and not t.is_double),
        key=lambda t: -(t.low if t.high == trump else t.high),
    )]
    off = [str(t) for t in ALL_TILES if not t.has(trump)]
    for hi, lo in itertools.combinations(order, 2):
        assert trick_winner(4, trump, 0, [str(lo), str(hi), off[0], off[1]]) == 1
        assert trick_winner(4, trump, 0, [str(hi), str(lo), off[0], off[1]]) == 0


def test_doubles_trumps_rank_by_pips() -> None:
    doubles = [f"{n}-{n}" for n in range(6, -1, -1)]
    for hi, lo in itertools.combinations(doubles, 2):
        assert trick_winner(4, DOUBLES, 2, [lo, "6-5", hi, "4-1"]) == 0
        assert trick_winner(4, DOUBLES, 2, [hi, "6-5", lo, "4-1"]) == 2


# ------------------------------------------------------------- trumps

def test_a_trump_tile_belongs_to_the_trump_suit_only() -> None:
    # Trump 6: 6-3 is a trump and never a 3.
    st = position(3, ["3-1", "6-3 5-2", "6-4 3-2"], 6, leader=0)
    play(st, "3-1")
    assert legal_tiles(st) == {"6-3", "5-2"}  # 6-3 does not follow suit 3
    play(st, "6-3")
    assert legal_tiles(st) == {"3-2"}  # 3-2 follows; 6-4 is a trump, free but not forced
    play(st, "3-2")
    assert st.winners == [1]  # the trump wins

    st = position(3, ["6-3", "3-2 5-1", "6-1 3-3"], 6, leader=0)
    play(st, "6-3")  # a trump led
    assert legal_tiles(st) == {"3-2", "5-1"}  # 3-2 holds a 3 but does not follow a trump
    play(st, "3-2")
    assert legal_tiles(st) == {"6-1"}  # must play a trump
    play(st, "6-1")
    assert st.winners == [0]  # 6-3 > 6-1


def test_a_trump_led_must_be_followed_with_a_trump() -> None:
    st = position(4, ["5-2", "5-5 6-1", "2-2 1-0", "5-0 6-6"], 5, leader=0)
    play(st, "5-2")
    assert legal_tiles(st) == {"5-5"}
    play(st, "5-5")
    assert legal_tiles(st) == {"2-2", "1-0"}  # no 5: anything, 2-2 does not "follow" 5-2
    play(st, "2-2")
    assert legal_tiles(st) == {"5-0"}
    play(st, "5-0")
    assert st.winners == [1]


@pytest.mark.parametrize(("led", "contract"), [
    (led, c) for led, barred in (("3-2", {2, 3, 5}), ("5-1", {1, 3, 5}))
    for c in range(9) if c not in barred
])
def test_worked_case_5_3_must_be_played(led: str, contract: int) -> None:
    # RULES.md: trump is not 5 or 3, you hold 5-3 and no other 5 or 3: you must play it
    # when 3-2 is led (suit 3) and when 5-1 is led (suit 5). (Contracts that would
    # make the led tile itself a trump are left out: then a trump is led.)
    hand = "5-3 6-6 6-4 4-2 2-2 1-1 0-0"
    st = position(3, [led, hand, "6-5"], contract, leader=0)
    play(st, led)
    assert legal_tiles(st) == {"5-3"}
    with pytest.raises(IllegalActionError):
        st.apply("play 6-6", 1)


def test_worked_case_doubles_and_4_2_led() -> None:
    # RULES.md: doubles are trump and 4-2 is led: the suit is 4, its highest tile is 6-4;
    # 4-4 is a trump and may only be played by someone who holds no other 4.
    st = position(4, ["4-2", "4-4 4-1", "5-4 6-5", "6-4 3-3"], DOUBLES, leader=0)
    play(st, "4-2")
    assert legal_tiles(st) == {"4-1"}  # holds another 4: 4-4 is not allowed
    with pytest.raises(IllegalActionError):
        st.apply("play 4-4", 1)
    play(st, "4-1")
    assert legal_tiles(st) == {"5-4"}
    play(st, "5-4")
    assert legal_tiles(st) == {"6-4"}  # 3-3 is a double: it does not follow
    play(st, "6-4")
    assert st.winners == [3]  # 6-4 heads suit 4

    # With no other 4, 4-4 may be played, and as a trump it wins.
    st = position(4, ["4-2", "4-4 6-5", "6-4 1-1", "5-4 2-1"], DOUBLES, leader=0)
    play(st, "4-2")
    assert legal_tiles(st) == {"4-4", "6-5"}
    play(st, "4-4")
    play(st, "6-4", "5-4")
    assert st.winners == [1]


def test_doubles_belong_to_no_number_suit() -> None:
    st = position(3, ["6-2", "6-6 5-1", "2-2 6-1"], DOUBLES, leader=0)
    play(st, "6-2")  # suit 6
    assert legal_tiles(st) == {"6-6", "5-1"}  # 6-6 is not a 6 under doubles
    play(st, "5-1")
    assert legal_tiles(st) == {"6-1"}
    play(st, "6-1")
    assert st.winners == [0]  # 6-2 > 6-1

    st = position(3, ["3-3", "3-1 5-5", "3-2 6-5"], DOUBLES, leader=0)
    play(st, "3-3")  # a trump led: a double must be played if held
    assert legal_tiles(st) == {"5-5"}
    play(st, "5-5")
    assert legal_tiles(st) == {"3-2", "6-5"}
    play(st, "3-2")
    assert st.winners == [1]


def test_no_trump_doubles_stay_highest() -> None:
    assert trick_winner(3, NO_TRUMP, 0, ["5-2", "6-5", "5-5"]) == 2
    assert trick_winner(3, NO_TRUMP, 0, ["6-6", "6-5", "5-5"]) == 0
    st = position(3, ["6-5", "5-5 6-1", "3-3 4-2"], NO_TRUMP, leader=0)
    play(st, "6-5")
    assert legal_tiles(st) == {"6-1"}  # 5-5 holds no 6
    play(st, "6-1")
    assert legal_tiles(st) == {"3-3", "4-2"}
    play(st, "3-3")
    assert st.winners == [0]
    st = position(3, ["3-3", "6-3 5-5", "2-1 4-4"], NO_TRUMP, leader=0)
    play(st, "3-3")  # a double leads its own suit
    assert legal_tiles(st) == {"6-3"}
    play(st, "6-3", "2-1")
    assert st.winners == [0]


def test_trump_0_with_22_tiles_is_the_single_trump_0_0() -> None:
    st = GameState.new(Rules(), 3)
    tiles_in_play = [ALL_TILES[i] for i in range(28)
                     if any(m >> i & 1 for m in st.dealt) or i == st.widow]
    assert [str(t) for t in tiles_in_play if t.has(0)] == ["0-0"]
    st = position(3, ["0-0 4-1", "6-6 5-1", "6-2 3-3"], 0, leader=0)
    play(st, "0-0")
    assert legal_tiles(st) == {"6-6", "5-1"}  # nobody else can hold a trump
    play(st, "6-6", "6-2")
    assert st.winners == [0]
    assert trick_winner(3, 0, 0, ["6-6", "6-1", "0-0"]) == 2  # 0-0 trumps 6-6


def test_trump_0_with_28_tiles_has_seven_trumps() -> None:
    trumps = ["0-0", "6-0", "5-0", "4-0", "3-0", "2-0", "1-0"]
    for hi, lo in itertools.combinations(trumps, 2):
        assert trick_winner(4, 0, 0, [lo, hi, "6-6", "5-5"]) == 1
    st = position(4, ["6-6", "6-0 6-1", "4-0 5-1", "1-0 2-2"], 0, leader=0)
    play(st, "6-6")
    assert legal_tiles(st) == {"6-1"}  # 6-0 is a trump, not a 6
    play(st, "6-1")
    assert legal_tiles(st) == {"4-0", "5-1"}
    play(st, "5-1", "1-0")
    assert st.winners == [3]  # the lowest trump beats the double six


def test_illegal_plays_are_rejected_with_the_seat_named() -> None:
    st = position(3, ["5-3", "5-1 6-6", "4-1"], 6, leader=0)
    play(st, "5-3")
    with pytest.raises(IllegalActionError) as exc:
        st.apply("play 6-6", 1)
    assert exc.value.seat == 1 and "seat 1" in str(exc.value)
    assert exc.value.legal == ("play 5-1",)
    assert "play 5-1" in str(exc.value) and "6-6" in str(exc.value)
    with pytest.raises(IllegalActionError) as exc:
        st.apply("play 4-1", 2)  # out of turn
    assert exc.value.seat == 2 and "out of turn" in str(exc.value)
    with pytest.raises(IllegalActionError):
        st.apply("play 4-1")  # not in the hand of the seat to act
    assert len(st.plays) == 1 and st.to_act == 1


# ------------------------------------------------------------- the auction

def _new(players: int = 3, seed: int = 11, **options: object) -> GameState:
    return GameState.new(Rules.make(players, options), seed)


def labels(st: GameState) -> list[str]:
    return [a.label for a in st.legal_actions()]


def test_each_seat_speaks_once_clockwise_and_bids_rise() -> None:
    st = _new()
    first = st.to_act
    assert labels(st) == ["pass", "bid 4", "bid 5", "bid 6", "bid 7", "bid 21"]
    st.apply("pass", first)
    assert st.to_act == (first + 1) % 3
    st.apply("bid 5", (first + 1) % 3)
    assert st.to_act == (first + 2) % 3
    assert labels(st) == ["pass", "bid 6", "bid 7", "bid 21"]  # strictly higher
    with pytest.raises(IllegalActionError):
        st.apply("bid 5", (first + 2) % 3)
    st.apply("pass", (first + 2) % 3)
    # Everyone has spoken once: the auction is over, the 5 wins.
    assert st.bidder == (first + 1) % 3 and st.bid == 5
    assert st.current_phase is Phase.DISCARD and st.to_act == st.bidder


def test_bids_after_a_seven_and_four_players() -> None:
    st = _new(4, seed=5)
    first = st.to_act
    st.apply("bid 4", first)
    st.apply("bid 7", (first + 1) % 4)
    assert labels(st) == ["pass", "bid 21"]
    st.apply("pass", (first + 2) % 4)
    st.apply("pass", (first + 3) % 4)
    assert st.bidder == (first + 1) % 4 and st.bid == 7
    assert st.current_phase is Phase.TRUMP  # 4 players: no widow


@pytest.mark.parametrize("speaker", [0, 1, 2])
def test_21_may_be_bid_at_any_turn_and_ends_the_auction(speaker: int) -> None:
    st = _new(seed=2)
    first = st.to_act
    for k in range(speaker):
        st.apply("bid 7" if k == 0 else "pass", (first + k) % 3)
    assert "bid 21" in labels(st)
    st.apply("bid 21", (first + speaker) % 3)
    assert st.bidder == (first + speaker) % 3 and st.bid == 21
    assert len(st.bids) == speaker + 1, "nobody speaks after a 21"
    assert st.current_phase is Phase.DISCARD


@pytest.mark.parametrize(("min_bid", "bids"), [(3, [3, 4, 5, 6, 7]), (4, [4, 5, 6, 7]),
                                               (5, [5, 6, 7])])
def test_min_bid(min_bid: int, bids: list[int]) -> None:
    st = _new(min_bid=min_bid)
    assert labels(st) == ["pass", *[f"bid {b}" for b in bids], "bid 21"]
    if min_bid > 3:
        with pytest.raises(IllegalActionError):
            st.apply(f"bid {min_bid - 1}", st.to_act)


@pytest.mark.parametrize("players", [3, 4])
def test_all_pass_redeals_with_the_next_player_first(players: int) -> None:
    st = _new(players, seed=9)
    first = st.first_bidder
    dealt = st.dealt
    for k in range(players):
        st.apply("pass", (first + k) % players)
    assert st.hand_index == 1 and st.current_phase is Phase.BID
    assert st.first_bidder == st.to_act == (first + 1) % players
    assert st.dealt != dealt  # a fresh deal
    assert st.scores == [0] * (2 if players == 4 else 3)
    assert st.bids == [] and st.bidder == -1


def test_a_redealt_hand_counts_toward_max_hands() -> None:
    st = _new(max_hands=2, seed=9)
    for _ in range(2):
        for _ in range(3):
            st.apply("pass", st.to_act)
    assert st.is_over and st.end == "hand_limit" and st.winner is None
    assert st.hand_index == 2
    with pytest.raises(IllegalActionError):
        st.apply("pass")


@pytest.mark.parametrize("players", [3, 4])
def test_forced_bid_when_all_others_passed(players: int) -> None:
    st = _new(players, seed=4, all_pass="forced", min_bid=3)
    first = st.to_act
    for k in range(players - 1):
        assert "pass" in labels(st)
        st.apply("pass", (first + k) % players)
    last = (first + players - 1) % players
    # Our documented choice: the last speaker may make any legal bid, not only the minimum.
    assert labels(st) == ["bid 3", "bid 4", "bid 5", "bid 6", "bid 7", "bid 21"]
    with pytest.raises(IllegalActionError):
        st.apply("pass", last)
    st.apply("bid 6", last)
    assert st.bidder == last and st.bid == 6 and st.hand_index == 0


def test_forced_bid_does_not_apply_once_someone_bid() -> None:
    st = _new(all_pass="forced", seed=4)
    first = st.to_act
    st.apply("bid 4", first)
    st.apply("pass", (first + 1) % 3)
    assert labels(st)[0] == "pass"
    st.apply("pass", (first + 2) % 3)
    assert st.bidder == first


# --------------------------------------------------------- deal and widow

def _all_dealt(st: GameState) -> list[Tile]:
    out = [t for t in ALL_TILES for m in st.dealt if m >> t.index & 1]
    if st.widow >= 0:
        out.append(ALL_TILES[st.widow])
    return out


@pytest.mark.parametrize(("players", "options", "expected"), [
    (3, {}, {t for t in ALL_TILES if not (t.low == 0 and t.high > 0)}),
    (3, {"double_blank": False}, {t for t in ALL_TILES if t.low > 0}),
    (4, {}, set(ALL_TILES)),
])
def test_each_deal_is_the_whole_tile_set_once(players: int, options: dict[str, object],
                                              expected: set[Tile]) -> None:
    assert len(expected) == {3: 22 if options == {} else 21, 4: 28}[players]
    for seed in range(20):
        st = _new(players, seed=seed, **options)
        tiles = _all_dealt(st)
        assert len(tiles) == len(set(tiles)) == len(expected)
        assert set(tiles) == expected
        assert all(m.bit_count() == 7 for m in st.dealt)
        assert (st.widow >= 0) == (len(expected) == 22)


def _win_auction(st: GameState, bid: str = "bid 5") -> int:
    seat = st.to_act
    st.apply(bid, seat)
    while st.current_phase is Phase.BID:
        st.apply("pass", st.to_act)
    return seat


def test_widow_taken_then_discard_then_trumps() -> None:
    st = _new(seed=21)
    widow = ALL_TILES[st.widow]
    b = _win_auction(st)
    eight = set(st.observation(b).hand)
    assert st.current_phase is Phase.DISCARD and st.to_act == b
    obs = st.observation(b)
    assert len(obs.hand) == 8 and widow in obs.hand and obs.widow == widow
    assert {a.tile for a in st.legal_actions()} == set(obs.hand)  # any tile, the widow too
    for other in range(3):
        if other != b:
            assert st.observation(other).widow is None
            assert widow not in st.observation(other).hand
    st.apply(f"discard {widow}", b)  # discarding the widow itself is allowed
    assert set(st.observation(b).hand) == eight - {widow}
    assert st.observation(b).discard == widow
    assert st.current_phase is Phase.TRUMP and st.to_act == b
    assert labels(st) == [f"trump {c}" for c in ("0", "1", "2", "3", "4", "5", "6",
                                                 "doubles", "none")]
    st.apply("trump doubles", b)
    assert st.current_phase is Phase.PLAY and st.to_act == b and st.contract == DOUBLES
    assert {a.tile for a in st.legal_actions()} == set(st.observation(b).hand)
    assert all(m.bit_count() == 7 for m in st.hands)


def test_trump_before_widow_reverses_the_order() -> None:
    st = _new(seed=21, trump_before_widow=True)
    widow = ALL_TILES[st.widow]
    b = _win_auction(st)
    assert st.current_phase is Phase.TRUMP and st.to_act == b
    obs = st.observation(b)
    assert len(obs.hand) == 7 and widow not in obs.hand and obs.widow is None
    st.apply("trump 6", b)
    assert st.current_phase is Phase.DISCARD and st.contract == 6
    obs = st.observation(b)
    assert len(obs.hand) == 8 and widow in obs.hand and obs.widow == widow
    keep = next(t for t in obs.hand if t != widow)
    st.apply(f"discard {keep}", b)
    assert st.current_phase is Phase.PLAY and st.to_act == b
    assert widow in st.observation(b).hand and st.observation(b).discard == keep


def test_without_double_blank_there_is_no_widow_and_no_discard() -> None:
    st = _new(seed=21, double_blank=False)
    assert st.widow == -1
    b = _win_auction(st)
    assert st.current_phase is Phase.TRUMP
    assert not any(a.label.startswith("discard") for a in st.legal_actions())
    st.apply("trump 0", b)
    assert st.current_phase is Phase.PLAY and len(st.observation(b).hand) == 7


# ----------------------------------------------------------------- scoring

def last_trick(players: int, tiles: list[str], *, bidder: int, bid: int,
               won_before: list[int], scores: list[int] | None = None, contract: int = 6,
               hand_index: int = 0, first_bidder: int = 0, **options: object) -> GameState:
    """A state at the seventh trick: seat s holds only `tiles[s]`, seat 0 leads.

    Only the count of earlier tricks matters to scoring, so the six earlier tricks
    are represented by `won_before` (per seat) and placeholder winners.
    """
    st = position(players, tiles, contract, leader=0, bidder=bidder, bid=bid,
                  rules=Rules.make(players, options))
    st.winners = [0] * 6
    st.tricks_won = list(won_before)
    assert sum(won_before) == 6
    if scores is not None:
        st.scores = list(scores)
    st.hand_index = hand_index
    st.first_bidder = first_bidder
    return st


# Seat 0 leads 6-6 under trump 6 and takes the seventh trick.
TRICK3 = ["6-6", "5-4", "3-2"]
TRICK4 = ["6-6", "5-4", "3-2", "2-1"]


@pytest.mark.parametrize(("bidder", "bid", "won_before", "points"), [
    (0, 5, [4, 1, 1], [5, 1, 1]),  # made 5 with 5 tricks: the bid, no more
    (0, 4, [6, 0, 0], [4, 0, 0]),  # made 4 with 7 tricks: still 4
    (1, 5, [3, 3, 0], [4, -5, 0]),  # set with 3 tricks: loses the bid; others 1 per trick
    (0, 21, [6, 0, 0], [21, 0, 0]),  # a made moon scores 21
    (1, 21, [0, 6, 0], [1, -21, 0]),  # a failed moon loses 21
    (2, 7, [0, 0, 6], [1, 0, -7]),  # six tricks do not make 7
])
def test_three_player_points(bidder: int, bid: int, won_before: list[int],
                             points: list[int]) -> None:
    st = last_trick(3, TRICK3, bidder=bidder, bid=bid, won_before=won_before,
                    scores=[1, 2, 3], max_hands=1)
    play(st, *TRICK3)
    assert st.is_over  # max_hands=1 keeps the hand's result on the state
    assert st.scores == [1 + points[0], 2 + points[1], 3 + points[2]]


@pytest.mark.parametrize(("bidder", "won_before", "points"), [
    (1, [0, 6, 0], [0, 1, 0]),  # made: a mark to the bidder
    (1, [3, 3, 0], [1, 0, 1]),  # set: a mark to each other player
])
def test_three_player_marks(bidder: int, won_before: list[int], points: list[int]) -> None:
    st = last_trick(3, TRICK3, bidder=bidder, bid=5, won_before=won_before, scoring="marks",
                    max_hands=1)
    play(st, *TRICK3)
    assert st.scores == points


@pytest.mark.parametrize(("bidder", "bid", "won_before", "points"), [
    (1, 4, [1, 3, 0, 2], [2, 5]),  # team 1 (seats 1, 3) took 5 >= 4: scores its 5 tricks
    (1, 6, [2, 3, 0, 1], [3, -6]),  # took 4 < 6: set; team 0 one point per trick
    (0, 5, [3, 1, 2, 0], [6, 1]),  # team 0 took 6 (incl. the last): scores 6
    (2, 21, [2, 0, 4, 0], [21, 0]),  # a made 21 by the team scores 21
    (3, 21, [1, 0, 0, 5], [2, -21]),  # a failed 21
])
def test_four_player_points(bidder: int, bid: int, won_before: list[int],
                            points: list[int]) -> None:
    st = last_trick(4, TRICK4, bidder=bidder, bid=bid, won_before=won_before, max_hands=1)
    play(st, *TRICK4)
    assert st.winners[-1] == 0
    assert st.scores == points


@pytest.mark.parametrize(("bidder", "won_before", "points"), [
    (1, [0, 3, 0, 3], [0, 1]),
    (3, [3, 0, 3, 0], [1, 0]),
    (2, [1, 0, 3, 2], [1, 0]),
])
def test_four_player_marks(bidder: int, won_before: list[int], points: list[int]) -> None:
    st = last_trick(4, TRICK4, bidder=bidder, bid=5, won_before=won_before, scoring="marks",
                    max_hands=1)
    play(st, *TRICK4)
    assert st.scores == points


# --------------------------------------------------------------- game end

def test_first_at_target_wins() -> None:
    st = last_trick(3, TRICK3, bidder=0, bid=4, won_before=[3, 2, 1], scores=[18, 10, 5])
    play(st, *TRICK3)  # seat 0 makes 4: 22
    assert st.is_over and st.winner == 0 and st.end == "normal"
    assert st.scores == [22, 12, 6]


def test_highest_of_several_over_target_wins() -> None:
    st = last_trick(3, TRICK3, bidder=1, bid=4, won_before=[2, 4, 0], scores=[20, 18, 0])
    play(st, *TRICK3)  # seat 0 takes 3 tricks: 23; seat 1 makes 4: 22
    assert st.scores == [23, 22, 0] and st.winner == 0 and st.end == "normal"


def test_shared_top_score_plays_on() -> None:
    st = last_trick(3, TRICK3, bidder=0, bid=4, won_before=[3, 3, 0], scores=[17, 18, 0],
                    first_bidder=2)
    play(st, *TRICK3)  # seat 0: +4 = 21, seat 1: +3 = 21
    assert st.scores == [21, 21, 0]
    assert not st.is_over and st.hand_index == 1 and st.current_phase is Phase.BID
    assert st.first_bidder == st.to_act == 0  # clockwise from seat 2


def test_shared_top_below_a_lone_leader_does_not_matter() -> None:
    st = last_trick(3, TRICK3, bidder=0, bid=4, won_before=[3, 3, 0], scores=[19, 18, 21])
    play(st, *TRICK3)  # 23, 21, 21: seat 0 alone on top
    assert st.is_over and st.winner == 0


def test_four_player_team_target_and_shared_top() -> None:
    st = last_trick(4, TRICK4, bidder=1, bid=4, won_before=[2, 2, 0, 2], scores=[18, 17])
    play(st, *TRICK4)  # team 0: 3 tricks -> 21; team 1 made 4 with 4 -> 21
    assert st.scores == [21, 21] and not st.is_over
    st = last_trick(4, TRICK4, bidder=1, bid=4, won_before=[1, 2, 1, 2], scores=[18, 17])
    play(st, *TRICK4)  # team 0: 1+1+1 = 3 -> 21; team 1 made 4 with 2+2 -> 21
    assert st.scores == [21, 21] and not st.is_over
    st = last_trick(4, TRICK4, bidder=0, bid=4, won_before=[2, 2, 0, 2], scores=[18, 17])
    play(st, *TRICK4)  # team 0 bid 4, took 2+1+0 = 3: set, 18-4 = 14; team 1: 4 -> 21
    assert st.scores == [14, 21] and st.is_over and st.winner == 1


def test_marks_target() -> None:
    st = last_trick(3, TRICK3, bidder=0, bid=4, won_before=[4, 1, 1], scores=[6, 6, 0],
                    scoring="marks")
    play(st, *TRICK3)
    assert st.scores == [7, 6, 0] and st.is_over and st.winner == 0
    st = last_trick(3, TRICK3, bidder=0, bid=4, won_before=[1, 4, 1], scores=[6, 6, 0],
                    scoring="marks", target=1)
    play(st, *TRICK3)  # set: 6, 7, 1; the points target plays no part under marks
    assert st.scores == [6, 7, 1] and st.is_over and st.winner == 1


@pytest.mark.parametrize("moon_wins", [False, True])
def test_moon_wins(moon_wins: bool) -> None:
    st = last_trick(3, TRICK3, bidder=0, bid=21, won_before=[6, 0, 0], scores=[-40, 15, 10],
                    moon_wins=moon_wins)
    play(st, *TRICK3)
    assert st.scores == [-19, 15, 10]
    if moon_wins:
        assert st.is_over and st.winner == 0 and st.end == "normal"
    else:
        assert not st.is_over


def test_moon_wins_for_a_team() -> None:
    st = last_trick(4, TRICK4, bidder=3, bid=21, won_before=[0, 3, 0, 3], scores=[20, -5],
                    moon_wins=True)
    play(st, *TRICK4)
    assert st.winners[-1] == 0  # seat 0 takes the last trick: the moon fails
    assert st.scores == [21, -26] and st.winner == 0


def test_moon_wins_needs_a_made_moon() -> None:
    st = last_trick(3, TRICK3, bidder=0, bid=7, won_before=[6, 0, 0], moon_wins=True)
    play(st, *TRICK3)  # all seven tricks on a bid of 7 is not a moon
    assert not st.is_over and st.scores == [7, 0, 0]


@pytest.mark.parametrize(("scores", "winner"), [([5, 5, 0], None), ([6, 5, 0], 0),
                                                ([-30, -40, -41], 0)])
def test_hand_limit_adjudication(scores: list[int], winner: int | None) -> None:
    # The tenth and last allowed hand. Seat 0 leads 2-1, seat 2 trumps it with 6-6 and so
    # takes all 7 tricks on a bid of 4: it gains 4, seats 0 and 1 gain nothing.
    before = [scores[0], scores[1], scores[2] - 4]
    st = last_trick(3, ["2-1", "5-4", "6-6"], bidder=2, bid=4, won_before=[0, 0, 6],
                    scores=before, hand_index=9, max_hands=10)
    play(st, "2-1", "5-4", "6-6")
    assert st.winners[-1] == 2
    assert st.scores == scores
    assert st.is_over and st.end == "hand_limit" and st.winner == winner


def test_first_bidder_rotates_clockwise_each_hand() -> None:
    for players in (3, 4):
        st = _new(players, seed=17, max_hands=12, target=1000)
        rng = random.Random(5)
        seen = [st.first_bidder]
        while not st.is_over:
            hand = st.hand_index
            st.apply(rng.choice(st.legal_ids()), st.to_act)
            if st.hand_index != hand and not st.is_over:
                seen.append(st.first_bidder)
                assert st.to_act == st.first_bidder
        assert seen == [(seen[0] + k) % players for k in range(len(seen))]
        assert len(seen) == 12


def test_same_seed_same_first_bidder_and_deal() -> None:
    for seed in (0, 1, 2**64 - 1):
        a, b = GameState.new(Rules(), seed), GameState.new(Rules(), seed)
        assert (a.first_bidder, a.dealt, a.widow) == (b.first_bidder, b.dealt, b.widow)
    firsts = {GameState.new(Rules(), s).first_bidder for s in range(30)}
    assert firsts == {0, 1, 2}, "the first bidder is chosen at random"
