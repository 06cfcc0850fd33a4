"""Property-based tests of the engine over random games and every rules option.

`Referee` below is an independent, deliberately plain model of RULES.md written
from the text (sets of `Tile`, strings for actions, no bitmasks and nothing from
`moon.contracts` or `moon.state`). Random games are driven through the engine's
checked API and mirrored step by step in the model: legal actions, whose turn it
is, trick winners, points, scores, the end of the game and every observation
must agree at every step.

The other engine test modules import the shared helpers (`rules_st`, `choose`,
`follows`, ...) from this module rather than from a conftest: `tests/net` has a
conftest of its own, and two modules named `conftest` cannot both be imported.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moon import ALL_TILES, Action, GameState, IllegalActionError, Observation, Rules, Tile
from moon.tiles import tiles_of

MOON = 21
TRUMP_NAMES = ["0", "1", "2", "3", "4", "5", "6", "doubles", "none"]
ALL_IDS = [0, 3, 4, 5, 6, 7, 21, *range(30, 39), *range(40, 68), *range(70, 98)]


# ----------------------------------- RULES.md restated, independent of moon.contracts

def tile_set(rules: Rules) -> set[Tile]:
    """28 tiles for 4 players; 3 players drop 1-0..6-0 (and 0-0 without double_blank)."""
    if rules.players == 4:
        return set(ALL_TILES)
    return {t for t in ALL_TILES if t.low > 0 or (t.high == 0 and rules.double_blank)}


def is_trump(t: Tile, contract: str) -> bool:
    """`contract` as the transcript writes it: "0".."6", "doubles" or "none"."""
    if contract == "none":
        return False
    if contract == "doubles":
        return t.high == t.low
    return int(contract) in (t.high, t.low)


def follows(t: Tile, led: Tile, contract: str) -> bool:
    """A trump led calls for trumps; otherwise the led tile's higher end, trumps excluded."""
    if is_trump(led, contract):
        return is_trump(t, contract)
    suit = led.high
    return suit in (t.high, t.low) and not is_trump(t, contract)


# ------------------------------------------------------------ random games

@st.composite
def rules_st(draw: st.DrawFn) -> Rules:
    """Any valid rule set, with small limits so that random games stay short."""
    players = draw(st.sampled_from([3, 4]))
    double_blank = True if players == 4 else draw(st.booleans())
    widow = players == 3 and double_blank
    return Rules.make(players, {
        "target": draw(st.sampled_from([1, 4, 10, 21, 40])),
        "min_bid": draw(st.sampled_from([3, 4, 5])),
        "all_pass": draw(st.sampled_from(["redeal", "forced"])),
        "double_blank": double_blank,
        "trump_before_widow": draw(st.booleans()) if widow else False,
        "scoring": draw(st.sampled_from(["points", "marks"])),
        "marks_target": draw(st.integers(1, 7)),
        "moon_wins": draw(st.booleans()),
        "max_hands": draw(st.sampled_from([1, 2, 3, 5, 8, 30])),
    })


seeds = st.integers(0, 2**64 - 1)
pass_biases = st.sampled_from([0.0, 0.5, 0.9])


def choose(state: GameState, rng: random.Random, pass_bias: float = 0.0) -> int:
    """A random legal action id; `pass_bias` makes passing (and so redeals) more common."""
    ids = state.legal_ids()
    if ids[0] == 0 and rng.random() < pass_bias:
        return 0
    return rng.choice(ids)


# ------------------------------------------------------ the reference model

def rank_in_suit(t: Tile, number: int) -> int:
    """The double heads its suit, then the other end, high to low."""
    if t.high == t.low:
        return 7
    return t.low if t.high == number else t.high


def trick_winner(plays: list[tuple[int, Tile]], contract: str) -> int:
    """The highest trump played wins; with no trump, the highest tile of the led suit."""
    trumps = [(s, t) for s, t in plays if is_trump(t, contract)]
    if trumps:
        if contract == "doubles":
            return max(trumps, key=lambda p: p[1].high)[0]
        return max(trumps, key=lambda p: rank_in_suit(p[1], int(contract)))[0]
    led = plays[0][1]
    suit = led.high
    followers = [(s, t) for s, t in plays if follows(t, led, contract)]
    return max(followers, key=lambda p: rank_in_suit(p[1], suit))[0]


@dataclass
class Referee:
    """Moon as RULES.md states it, one plain step at a time."""

    rules: Rules
    first: int
    scores: list[int] = field(default_factory=list)
    hands_played: int = 0
    over: bool = False
    winner: int | None = None
    end: str | None = None
    log: list[dict[str, Any]] = field(default_factory=list)
    awaiting_deal: bool = True

    def __post_init__(self) -> None:
        self.n = self.rules.players
        self.scores = [0] * (2 if self.n == 4 else 3)

    def deal(self, hands: list[set[Tile]], widow: Tile | None) -> None:
        self.hands = [set(h) for h in hands]
        self.widow = widow
        self.widow_taken = False
        self.phase = "bid"
        self.to_act = self.first
        self.bids: list[tuple[int, int]] = []
        self.high = 0
        self.bidder: int | None = None
        self.bid: int | None = None
        self.contract: str | None = None
        self.discard: Tile | None = None
        self.tricks: list[tuple[list[tuple[int, Tile]], int]] = []
        self.trick: list[tuple[int, Tile]] = []
        self.tricks_won = [0] * self.n
        self.awaiting_deal = False

    def side(self, seat: int) -> int:
        return seat % 2 if self.n == 4 else seat

    def legal(self) -> set[str]:
        if self.phase == "bid":
            out = {f"bid {b}" for b in range(self.rules.min_bid, 8) if b > self.high}
            out.add("bid 21")  # 21 at any turn
            all_others_passed = len(self.bids) == self.n - 1 and self.high == 0
            if not (self.rules.all_pass == "forced" and all_others_passed):
                out.add("pass")
            return out
        if self.phase == "discard":
            return {f"discard {t}" for t in self.hands[self.to_act]}
        if self.phase == "trump":
            return {f"trump {c}" for c in TRUMP_NAMES}
        hand = self.hands[self.to_act]
        if self.trick:
            assert self.contract is not None
            led = self.trick[0][1]
            must = {t for t in hand if follows(t, led, self.contract)}
            if must:
                hand = must
        return {f"play {t}" for t in hand}

    def apply(self, label: str) -> None:
        assert not self.over and not self.awaiting_deal
        assert label in self.legal(), (label, self.legal())
        seat = self.to_act
        verb, _, arg = label.partition(" ")
        if self.phase == "bid":
            b = 0 if verb == "pass" else int(arg)
            self.bids.append((seat, b))
            if b:
                self.high, self.bidder = b, seat
            if b == MOON or len(self.bids) == self.n:
                if self.high == 0:
                    self._end_hand(played=False)
                    return
                self.bid = self.high
                self.to_act = seat = self.bidder  # type: ignore[assignment]
                if self.widow is not None and not self.rules.trump_before_widow:
                    self._take_widow()
                else:
                    self.phase = "trump"
            else:
                self.to_act = (seat + 1) % self.n
        elif self.phase == "discard":
            t = Tile.parse(arg)
            self.hands[seat].remove(t)
            self.discard = t
            self.phase = "trump" if self.contract is None else "play"
        elif self.phase == "trump":
            self.contract = arg
            if self.widow is not None and self.rules.trump_before_widow:
                self._take_widow()
            else:
                self.phase = "play"
        else:
            t = Tile.parse(arg)
            self.hands[seat].remove(t)  # a tile is played at most once
            self.trick.append((seat, t))
            if len(self.trick) < self.n:
                self.to_act = (seat + 1) % self.n
                return
            assert self.contract is not None
            w = trick_winner(self.trick, self.contract)
            self.tricks.append((self.trick, w))
            self.tricks_won[w] += 1
            self.trick = []
            self.to_act = w
            if len(self.tricks) == 7:
                self._end_hand(played=True)

    def _take_widow(self) -> None:
        assert self.bidder is not None and self.widow is not None
        self.hands[self.bidder].add(self.widow)
        self.widow_taken = True
        self.phase = "discard"

    def _end_hand(self, played: bool) -> None:
        n, r = self.n, self.rules
        points = [0] * len(self.scores)
        made: bool | None = None
        if played:
            assert self.bidder is not None and self.bid is not None
            b, bid = self.bidder, self.bid
            need = 7 if bid == MOON else bid
            if n == 3:
                made = self.tricks_won[b] >= need
                for s in range(3):
                    if r.scoring == "marks":
                        points[s] = int(made) if s == b else int(not made)
                    elif s == b:
                        points[s] = bid if made else -bid
                    else:
                        points[s] = self.tricks_won[s]
            else:
                team = b % 2
                took = [self.tricks_won[0] + self.tricks_won[2],
                        self.tricks_won[1] + self.tricks_won[3]]
                made = took[team] >= need
                if r.scoring == "marks":
                    points[team if made else 1 - team] = 1
                else:
                    points[team] = (MOON if bid == MOON else took[team]) if made else -bid
                    points[1 - team] = took[1 - team]
            for i, p in enumerate(points):
                self.scores[i] += p
        self.log.append({
            "bidder": self.bidder if played else None,
            "winners": [w for _, w in self.tricks],
            "tricks_won": list(self.tricks_won),
            "made": made,
            "points": points,
            "scores": list(self.scores),
        })
        self.hands_played += 1
        goal = r.marks_target if r.scoring == "marks" else r.target
        top = max(self.scores)
        unique = self.scores.count(top) == 1
        if played and made and self.bid == MOON and r.moon_wins:
            self._finish(self.side(self.bidder), "normal")  # type: ignore[arg-type]
        elif top >= goal and unique:
            self._finish(self.scores.index(top), "normal")
        elif self.hands_played >= r.max_hands:
            self._finish(self.scores.index(top) if unique else None, "hand_limit")
        else:
            self.first = (self.first + 1) % n
            self.awaiting_deal = True

    def _finish(self, winner: int | None, end: str) -> None:
        self.over, self.winner, self.end = True, winner, end

    # What `seat` may see, per RULES.md, for comparison with the engine's observation.
    def check_observation(self, obs: Observation, seat: int, *, as_json: bool = False) -> None:
        assert obs.seat == seat
        assert set(obs.hand) == self.hands[seat] and len(obs.hand) == len(self.hands[seat])
        assert list(obs.hand) == sorted(obs.hand, reverse=True)
        sees_widow = seat == self.bidder and self.widow_taken
        assert obs.widow == (self.widow if sees_widow else None)
        assert obs.discard == (self.discard if seat == self.bidder else None)
        assert [(b.seat, b.bid) for b in obs.bids] == self.bids
        assert obs.contract == (None if self.contract is None
                                else TRUMP_NAMES.index(self.contract))
        if self.phase != "bid":
            assert (obs.bidder, obs.bid) == (self.bidder, self.bid)
        assert obs.to_act == self.to_act and obs.first_bidder == self.first
        assert obs.hand_number == self.hands_played + 1
        assert [([(p.seat, p.tile) for p in t.plays], t.winner) for t in obs.tricks] == self.tricks
        assert all(t.leader == t.plays[0].seat for t in obs.tricks)
        assert [(p.seat, p.tile) for p in obs.current] == self.trick
        assert list(obs.tricks_won) == self.tricks_won
        assert list(obs.scores) == self.scores
        assert list(obs.hand_sizes) == [len(h) for h in self.hands]
        # Never another seat's tiles, an untaken widow or another seat's discard.
        visible = set(self.hands[seat])
        visible |= {t for trick, _ in self.tricks for _, t in trick}
        visible |= {t for _, t in self.trick}
        if sees_widow:
            visible |= {t for t in (self.widow, self.discard) if t is not None}
        shown = set(obs.hand) | {p.tile for t in obs.tricks for p in t.plays}
        shown |= {p.tile for p in obs.current}
        shown |= {t for t in (obs.widow, obs.discard) if t is not None}
        assert shown <= visible, shown - visible
        if not as_json:
            return
        text = str(obs.to_json())
        for other in range(self.n):
            for t in self.hands[other] - visible:
                assert f"'{t}'" not in text, f"seat {seat} sees {t} of seat {other}"


# ------------------------------------------------------- driving a game

def sync_deal(state: GameState, ref: Referee) -> None:
    """Hand the engine's new deal to the model, checking it is the whole set once."""
    hands = [set(tiles_of(m)) for m in state.dealt]
    widow = ALL_TILES[state.widow] if state.widow >= 0 else None
    assert [len(h) for h in hands] == [7] * ref.n
    everything = [t for h in hands for t in h] + ([widow] if widow else [])
    assert len(everything) == len(set(everything)) == len(tile_set(ref.rules))
    assert set(everything) == tile_set(ref.rules)
    assert state.hands == list(state.dealt)
    ref.deal(hands, widow)


def run_game(rules: Rules, seed: int, rng_seed: int, pass_bias: float = 0.0,
             observe: bool = True) -> tuple[GameState, Referee]:
    """Play a random game through the checked API, mirrored in the model at every step."""
    state = GameState.new(rules, seed, record=True)
    ref = Referee(rules, state.first_bidder)
    sync_deal(state, ref)
    rng = random.Random(rng_seed)
    steps = 0
    while not ref.over:
        assert not state.is_over
        assert state.to_act == ref.to_act
        ids = state.legal_ids()
        assert list(ids) == sorted(set(ids))
        assert ids == tuple(a.id for a in state.legal_actions())
        assert {Action.from_id(i).label for i in ids} == ref.legal()
        if observe:
            as_json = rng.random() < 0.1
            for seat in range(ref.n):
                ref.check_observation(state.observation(seat), seat, as_json=as_json)
        aid = choose(state, rng, pass_bias)
        hand = state.hand_index
        state.apply(aid, state.to_act)
        ref.apply(Action.from_id(aid).label)
        steps += 1
        if ref.awaiting_deal:
            assert state.hand_index == hand + 1
            sync_deal(state, ref)
        else:
            assert state.hand_index == ref.hands_played
        assert state.scores == ref.scores
        assert steps < 40 * rules.max_hands
    assert state.is_over and state.legal_ids() == ()
    assert (state.winner, state.end, state.scores) == (ref.winner, ref.end, ref.scores)
    return state, ref


def check_hand_log(state: GameState, ref: Referee) -> None:
    """The engine's per-hand record agrees with the model's scorer and trick winners."""
    assert len(state.hand_log) == len(ref.log) == ref.hands_played <= state.rules.max_hands
    for rec, mine in zip(state.hand_log, ref.log, strict=True):
        assert rec["bidder"] == mine["bidder"]
        assert [t["winner"] for t in rec["tricks"]] == mine["winners"]
        assert rec["tricks_won"] == mine["tricks_won"]
        assert rec["made"] == mine["made"]
        assert rec["points"] == mine["points"]
        assert rec["scores"] == mine["scores"]
        if rec["bidder"] is None:
            assert rec["tricks"] == []
            continue
        assert len(rec["tricks"]) == 7  # seven tricks in every played hand
        played = [p["tile"] for t in rec["tricks"] for p in t["plays"]]
        assert len(played) == len(set(played)) == 7 * state.n  # each tile played once at most
        for t in rec["tricks"]:
            # The model's trick rule, on the recorded plays.
            plays = [(p["seat"], Tile.parse(p["tile"])) for p in t["plays"]]
            assert trick_winner(plays, rec["trump"]) == t["winner"]
        for seat in range(state.n):
            mine_played = {p["tile"] for t in rec["tricks"] for p in t["plays"]
                           if p["seat"] == seat}
            owned = set(rec["deal"][seat])
            if seat == rec["bidder"] and rec["widow"] is not None:
                owned = (owned | {rec["widow"]}) - {rec["discard"]}
            assert mine_played == owned


# ------------------------------------------------------------------- tests

@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=rules_st(), seed=seeds, rng_seed=st.integers(0, 2**32), bias=pass_biases)
def test_random_games_agree_with_the_rules(rules: Rules, seed: int, rng_seed: int,
                                           bias: float) -> None:
    state, ref = run_game(rules, seed, rng_seed, bias)
    check_hand_log(state, ref)


def test_every_option_combination_plays_legal_games() -> None:
    # Every combination of the choice and flag options (96 rule sets), one short game each.
    combos = 0
    for players, db, tbw, min_bid, all_pass, scoring, moon_wins in itertools.product(
        (3, 4), (True, False), (False, True), (3, 4, 5), ("redeal", "forced"),
        ("points", "marks"), (False, True),
    ):
        if (players == 4 and not db) or (tbw and not (players == 3 and db)):
            continue
        rules = Rules.make(players, {
            "double_blank": db, "trump_before_widow": tbw, "min_bid": min_bid,
            "all_pass": all_pass, "scoring": scoring, "moon_wins": moon_wins,
            "max_hands": 2, "target": 10, "marks_target": 2,
        })
        state, ref = run_game(rules, combos, combos, 0.5 if combos % 2 else 0.0,
                              observe=combos % 4 == 0)
        check_hand_log(state, ref)
        combos += 1
    assert combos == 96


@settings(max_examples=15, deadline=None)
@given(players=st.sampled_from([3, 4]), seed=seeds, rng_seed=st.integers(0, 2**32))
def test_long_games_end_by_the_hand_limit(players: int, seed: int, rng_seed: int) -> None:
    # Random bidding (21s included) drags every score down; the game still ends.
    rules = Rules.make(players, {"max_hands": 40})
    state, ref = run_game(rules, seed, rng_seed, observe=False)
    top = max(state.scores)
    if ref.end == "hand_limit":
        assert ref.hands_played == 40
        assert top < 21 or state.scores.count(top) > 1
    else:
        assert ref.hands_played <= 40 and top >= 21 and state.scores.count(top) == 1


def _fingerprint(state: GameState) -> tuple[object, ...]:
    return (
        tuple(state.observation(s) for s in range(state.n)),
        tuple(state.scores), tuple(state.actions), state.legal_ids(), state.to_act,
        state.hand_index, state.winner, state.end, state.is_over,
    )


@settings(max_examples=40, deadline=None)
@given(rules=rules_st(), seed=seeds, rng_seed=st.integers(0, 2**32), bias=pass_biases,
       cut=st.floats(0, 1))
def test_replay_reproduces_the_state(rules: Rules, seed: int, rng_seed: int, bias: float,
                                     cut: float) -> None:
    state = GameState.new(rules, seed)
    rng = random.Random(rng_seed)
    prints = [_fingerprint(state)]
    while not state.is_over:
        state.apply(choose(state, rng, bias), state.to_act)
        prints.append(_fingerprint(state))
    # The whole game, by the unchecked fast path.
    again = GameState.new(rules, seed)
    for aid in state.actions:
        again.apply_id(aid)
    assert _fingerprint(again) == prints[-1]
    # And a prefix, by the checked path.
    k = int(cut * len(state.actions))
    part = GameState.new(rules, seed)
    for aid in state.actions[:k]:
        part.apply(aid, part.to_act)
    assert _fingerprint(part) == prints[k]


@settings(max_examples=25, deadline=None)
@given(rules=rules_st(), seed=seeds, rng_seed=st.integers(0, 2**32))
def test_checked_apply_rejects_every_illegal_or_out_of_turn_action(
    rules: Rules, seed: int, rng_seed: int
) -> None:
    state = GameState.new(rules.replace(max_hands=1), seed)
    rng = random.Random(rng_seed)
    while not state.is_over:
        seat = state.to_act
        legal = set(state.legal_ids())
        before = (len(state.actions), seat, list(state.hands))
        for aid in ALL_IDS:
            if aid in legal:
                continue
            try:
                state.apply(aid, seat)
            except IllegalActionError as exc:
                assert exc.seat == seat and f"seat {seat}" in str(exc)
                assert exc.action == Action.from_id(aid).label
                assert set(exc.legal) == {Action.from_id(i).label for i in legal}
            else:
                raise AssertionError(f"illegal {Action.from_id(aid)} accepted")
        some = rng.choice(sorted(legal))
        for other in range(state.n):
            if other != seat:
                try:
                    state.apply(some, other)
                except IllegalActionError as exc:
                    assert exc.seat == other and f"seat {other}" in str(exc)
                else:
                    raise AssertionError(f"seat {other} acted out of turn")
        assert (len(state.actions), state.to_act, state.hands) == before
        state.apply(some, seat)
    for aid in ALL_IDS:
        try:
            state.apply(aid, 0)
        except IllegalActionError:
            pass
        else:
            raise AssertionError("an action was accepted after the game ended")


@settings(max_examples=40, deadline=None)
@given(rules=rules_st(), seed=seeds, rng_seed=st.integers(0, 2**32), at=st.floats(0, 1))
def test_copy_is_independent(rules: Rules, seed: int, rng_seed: int, at: float) -> None:
    rng = random.Random(rng_seed)
    # Find the length of the game first, then copy at a point `at` of it.
    probe = GameState.new(rules, seed)
    while not probe.is_over:
        probe.apply_id(rng.choice(probe.legal_ids()))
    k = int(at * len(probe.actions))
    state = GameState.new(rules, seed)
    for aid in probe.actions[:k]:
        state.apply_id(aid)
    before = _fingerprint(state)
    twin = state.copy()
    assert _fingerprint(twin) == before
    while not twin.is_over:
        twin.apply(rng.choice(twin.legal_ids()), twin.to_act)
    assert _fingerprint(state) == before, "playing on a copy changed the original"
    # And the other way round: the original plays on, the copy stays.
    twin = state.copy()
    twin_before = _fingerprint(twin)
    for aid in probe.actions[k:]:
        state.apply(aid, state.to_act)
    assert _fingerprint(twin) == twin_before
