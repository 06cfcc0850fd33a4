"""The game state: deal, auction, widow, trumps, seven tricks, scoring, game end.

A game is its rules, its seed and its action list. `GameState.new(rules, seed)`
deals hand 0; every call to `apply` (checked) or `apply_id` (unchecked, for
replay and search) moves it on; hands are dealt and scored automatically. The
hot path keeps hands as 28-bit masks and reads precomputed tables, while the
public API speaks in `Tile`, `Action` and `Observation` values.
"""

from __future__ import annotations

from typing import Any

from moon.actions import (
    ACTIONS,
    DISCARD_BASE,
    MOON,
    PASS,
    PLAY_BASE,
    TRUMP_BASE,
    Action,
)
from moon.contracts import FOLLOW, POWER, contract_name
from moon.deal import check_seed, deal_masks, first_bidder
from moon.errors import IllegalActionError
from moon.observation import BidMade, Observation, Phase, Play, Trick
from moon.rules import Rules
from moon.tiles import ALL_TILES, BIT, tiles_of

__all__ = ["GameState", "Phase", "rule_constants", "tile_set"]


_BID, _DISCARD, _TRUMP, _PLAY, _OVER = 0, 1, 2, 3, 4

_FULL_SET = tuple(range(28))
_NO_BLANKS = tuple(t.index for t in ALL_TILES if t.low != 0 or t.high == 0)  # 22 tiles
_NO_ZEROS = tuple(t.index for t in ALL_TILES if t.low != 0)  # 21 tiles


def tile_set(rules: Rules) -> tuple[int, ...]:
    """Tile indices in play under `rules`: 22 (3p), 21 (3p without 0-0) or 28 (4p)."""
    if rules.players == 4:
        return _FULL_SET
    return _NO_BLANKS if rules.double_blank else _NO_ZEROS


def _ids_of_bits(base: int, lo: int, width: int) -> tuple[tuple[int, ...], ...]:
    return tuple(
        tuple(base + lo + i for i in range(width) if m >> i & 1) for m in range(1 << width)
    )


# Legal plays from a mask by two table lookups: low 14 tiles and high 14 tiles.
_PLAY_LO = _ids_of_bits(PLAY_BASE, 0, 14)
_PLAY_HI = _ids_of_bits(PLAY_BASE, 14, 14)
# Discards happen once a hand, so four small 7-bit tables do.
_DISCARD_0, _DISCARD_7, _DISCARD_14, _DISCARD_21 = (
    _ids_of_bits(DISCARD_BASE, lo, 7) for lo in (0, 7, 14, 21)
)
_TRUMP_IDS: tuple[int, ...] = tuple(range(TRUMP_BASE, TRUMP_BASE + 9))


def _bid_ids(min_bid: int, high: int, forced: bool) -> tuple[int, ...]:
    ids = [] if forced else [PASS]
    ids += [b for b in range(min_bid, 8) if b > high]
    ids.append(MOON)
    return tuple(ids)


# The bids open to a seat, per minimum bid and indexed by the highest bid so far
# (0 before any bid; a 21 ends the auction, so 0..7 is every case).
_BIDS_OPEN: dict[int, tuple[tuple[int, ...], ...]] = {
    m: tuple(_bid_ids(m, h, False) for h in range(8)) for m in (3, 4, 5)
}
# The last seat's bids after everyone passed, when all_pass is "forced": no pass.
_BIDS_FORCED: dict[int, tuple[int, ...]] = {m: _bid_ids(m, 0, True) for m in (3, 4, 5)}

# For observations. Their parts are immutable values, so one prebuilt instance
# per (seat, tile) play and per (seat, bid) call serves every observation (bids
# cover every id below TRUMP_BASE, all that `apply_id` files as a call).
_PLAY_VALUES = tuple(tuple(Play(s, tile) for tile in ALL_TILES) for s in range(4))
_BID_VALUES = tuple(tuple(BidMade(s, b) for b in range(TRUMP_BASE)) for s in range(4))
_PHASES = tuple(Phase)  # by value: _PHASES[p] is Phase(p)
# A hand's tiles highest first (as `tiles_of`) from four 7-bit table lookups.
_TILES_0, _TILES_7, _TILES_14, _TILES_21 = (
    tuple(tuple(ALL_TILES[lo + i] for i in reversed(range(7)) if m >> i & 1) for m in range(128))
    for lo in (0, 7, 14, 21)
)


_Constants = tuple[tuple[int, ...], tuple[int, ...], tuple[tuple[int, ...], ...], tuple[int, ...]]
# Keyed by the only options they depend on, so the cache stays small (24 entries at most).
_CONSTANTS: dict[tuple[int, bool, int, str], _Constants] = {}


def rule_constants(rules: Rules) -> _Constants:
    """The per-rules constants a state holds: tile bits, next seat, open and forced bids."""
    key = (rules.players, rules.double_blank, rules.min_bid, rules.all_pass)
    found = _CONSTANTS.get(key)
    if found is None:
        found = _CONSTANTS[key] = (
            tuple(BIT[t] for t in tile_set(rules)),
            (*range(1, rules.players), 0),
            _BIDS_OPEN[rules.min_bid],
            _BIDS_FORCED[rules.min_bid] if rules.all_pass == "forced" else (),
        )
    return found


class GameState:
    """A mutable game in progress; `copy()` is cheap, for search."""

    __slots__ = (
        "_bid_forced",
        "_bid_open",
        "_next",
        "_tile_bits",
        "actions",
        "best_power",
        "best_seat",
        "bid",
        "bidder",
        "bids",
        "contract",
        "dealt",
        "discard",
        "end",
        "first_bidder",
        "hand_index",
        "hand_log",
        "hands",
        "high",
        "in_trick",
        "n",
        "phase",
        "plays",
        "powers",
        "record",
        "rules",
        "scores",
        "seed",
        "to_act",
        "tricks_won",
        "widow",
        "winner",
        "winners",
    )

    rules: Rules
    seed: int
    n: int
    hand_index: int
    first_bidder: int
    phase: int
    to_act: int
    dealt: tuple[int, ...]
    widow: int
    hands: list[int]
    bids: list[tuple[int, int]]
    high: int
    bidder: int
    bid: int
    contract: int
    discard: int
    plays: list[tuple[int, int]]
    winners: list[int]
    in_trick: int
    powers: tuple[int, ...]
    best_seat: int
    best_power: int
    tricks_won: list[int]
    scores: list[int]
    actions: list[int]
    winner: int | None
    end: str | None
    record: bool
    hand_log: list[dict[str, Any]]
    # Constants of the rules, fixed by `new` (so `moon.sampling`, which builds its
    # states with `new`, gets them too) and shared by copies: the hot path reads
    # one attribute instead of recomputing them from `rules`.
    _tile_bits: tuple[int, ...]  # 1 << t for each tile t in play, for `deal_masks`
    _next: tuple[int, ...]  # the seat after each seat, clockwise
    _bid_open: tuple[tuple[int, ...], ...]  # legal bids by the highest bid so far
    _bid_forced: tuple[int, ...]  # legal bids of a forced last seat; () if never forced

    # ------------------------------------------------------------------ setup

    @classmethod
    def new(cls, rules: Rules | None = None, seed: int = 0, *, record: bool = False) -> GameState:
        """A new game: hand 0 dealt, the first bidder to speak.

        With `record=True` the state keeps a transcript record of every finished hand
        in `hand_log` (used by `moon.transcript`).
        """
        self = cls.__new__(cls)
        self.rules = rules = rules or Rules()
        self.seed = check_seed(seed)
        self.n = rules.players
        self.hand_index = 0
        self.scores = [0] * (2 if rules.teams else 3)
        self.actions = []
        self.winner = None
        self.end = None
        self.record = record
        self.hand_log = []
        self._tile_bits, self._next, self._bid_open, self._bid_forced = rule_constants(rules)
        # The trick in progress: set by each lead and read only while in_trick > 0;
        # set here too so that a state copies before its first trick.
        self.powers = ()
        self.best_seat = -1
        self.best_power = 0
        self._deal(first_bidder(seed, self.n))
        return self

    def _deal(self, first: int) -> None:
        self.hands, self.widow = deal_masks(self.seed, self.hand_index, self._tile_bits, self.n)
        self.dealt = tuple(self.hands)
        self.first_bidder = first
        self.to_act = first
        self.phase = _BID
        self.bids = []
        self.high = 0
        self.bidder = -1
        self.bid = 0
        self.contract = -1
        self.discard = -1
        self.plays = []
        self.winners = []
        self.in_trick = 0
        self.tricks_won = [0] * self.n

    def copy(self) -> GameState:
        """An independent copy (lists copied, immutable parts shared).

        Every slot is spelled out, which is several times faster than a loop of
        getattr/setattr: a search bot copies often. A new slot must be added here.
        """
        c = GameState.__new__(GameState)
        # Immutable values, shared.
        c.rules = self.rules
        c.seed = self.seed
        c.n = self.n
        c.record = self.record
        c._tile_bits = self._tile_bits
        c._next = self._next
        c._bid_open = self._bid_open
        c._bid_forced = self._bid_forced
        c.hand_index = self.hand_index
        c.first_bidder = self.first_bidder
        c.phase = self.phase
        c.to_act = self.to_act
        c.dealt = self.dealt
        c.widow = self.widow
        c.high = self.high
        c.bidder = self.bidder
        c.bid = self.bid
        c.contract = self.contract
        c.discard = self.discard
        c.in_trick = self.in_trick
        c.powers = self.powers
        c.best_seat = self.best_seat
        c.best_power = self.best_power
        c.winner = self.winner
        c.end = self.end
        # Mutable lists, copied (their items are immutable).
        c.hands = self.hands[:]
        c.bids = self.bids[:]
        c.plays = self.plays[:]
        c.winners = self.winners[:]
        c.tricks_won = self.tricks_won[:]
        c.scores = self.scores[:]
        c.actions = self.actions[:]
        c.hand_log = self.hand_log[:]
        return c

    # ------------------------------------------------------------- queries

    @property
    def is_over(self) -> bool:
        """True once the game has ended."""
        return self.phase == _OVER

    @property
    def current_phase(self) -> Phase:
        """The phase as an enum."""
        return Phase(self.phase)

    @property
    def widow_taken(self) -> bool:
        """True once the bidder holds (or has held) the widow this hand."""
        if self.widow < 0 or self.bidder < 0:
            return False
        if self.phase == _BID:
            return False
        return not (self.phase == _TRUMP and self.rules.trump_before_widow)

    def legal_ids(self) -> tuple[int, ...]:
        """Ids of the legal actions for the seat to act, ascending; empty when over."""
        ph = self.phase
        if ph == _PLAY:
            h = self.hands[self.to_act]
            k = self.in_trick
            if k:  # follow the led tile if the hand can
                f = h & FOLLOW[self.contract][self.plays[-k][1]]
                if f:
                    h = f
            return _PLAY_LO[h & 0x3FFF] + _PLAY_HI[h >> 14]
        if ph == _BID:
            high = self.high
            if not high and self._bid_forced and len(self.bids) == self.n - 1:
                return self._bid_forced
            return self._bid_open[high]
        if ph == _TRUMP:
            return _TRUMP_IDS
        if ph == _DISCARD:
            h = self.hands[self.to_act]
            return (
                _DISCARD_0[h & 0x7F]
                + _DISCARD_7[h >> 7 & 0x7F]
                + _DISCARD_14[h >> 14 & 0x7F]
                + _DISCARD_21[h >> 21]
            )
        return ()

    def observation(self, seat: int) -> Observation:
        """What `seat` may see now (RULES.md); never another seat's hidden tiles."""
        n = self.n
        if not 0 <= seat < n:
            raise IllegalActionError(f"no seat {seat} in a {n}-player game", seat=seat)
        is_bidder = seat == self.bidder and self.phase != _BID
        widow_seen = is_bidder and self.widow_taken
        played = self.bidder >= 0 and self.phase != _BID
        h = self.hands[seat]
        values = _PLAY_VALUES
        plays = [values[s][t] for s, t in self.plays]
        done = len(self.winners)
        tricks = tuple(
            Trick(plays[k * n].seat, tuple(plays[k * n : (k + 1) * n]), w)
            for k, w in enumerate(self.winners)
        )
        return Observation(
            seat=seat,
            rules=self.rules,
            hand_number=self.hand_index + (self.phase != _OVER),
            phase=_PHASES[self.phase],
            to_act=self.to_act,
            first_bidder=self.first_bidder,
            hand=_TILES_21[h >> 21] + _TILES_14[h >> 14 & 0x7F] + _TILES_7[h >> 7 & 0x7F]
            + _TILES_0[h & 0x7F],
            bids=tuple([_BID_VALUES[s][b] for s, b in self.bids]),
            bidder=self.bidder if played else None,
            bid=self.bid if played else None,
            contract=self.contract if self.contract >= 0 else None,
            widow=ALL_TILES[self.widow] if widow_seen else None,
            discard=ALL_TILES[self.discard] if is_bidder and self.discard >= 0 else None,
            tricks=tricks,
            current=tuple(plays[done * n :]),
            tricks_won=tuple(self.tricks_won),
            scores=tuple(self.scores),
            hand_sizes=tuple(map(int.bit_count, self.hands)),
        )

    def legal_actions(self) -> tuple[Action, ...]:
        """The legal actions for the seat to act, sorted by id."""
        return tuple(map(ACTIONS.__getitem__, self.legal_ids()))

    # -------------------------------------------------------------- moves

    def apply(self, action: Action | int | str, seat: int | None = None) -> None:
        """Checked apply: raise IllegalActionError naming seat, action and what was legal."""
        if isinstance(action, str):
            action = Action.parse(action)
        elif isinstance(action, int):
            action = Action.from_id(action)
        if self.phase == _OVER:
            raise IllegalActionError(
                f"the game is over; seat {seat if seat is not None else '?'} tried {action}",
                seat=seat,
                action=action.label,
            )
        legal = self.legal_ids()
        if action.id in legal and (seat is None or seat == self.to_act):
            self.apply_id(action.id)
            return
        what = ("bid", "discard", "name trumps", "play")[self.phase]
        if seat is not None and seat != self.to_act:
            raise IllegalActionError(
                f"seat {seat} played {action} out of turn: seat {self.to_act} is to {what}",
                seat=seat,
                action=action.label,
                legal=tuple(ACTIONS[i].label for i in legal),
            )
        labels = tuple(ACTIONS[i].label for i in legal)
        raise IllegalActionError(
            f"seat {self.to_act} may not {action} in hand {self.hand_index + 1} "
            f"(phase {what}); legal: {', '.join(labels)}",
            seat=self.to_act,
            action=action.label,
            legal=labels,
        )

    def apply_id(self, aid: int) -> None:
        """Unchecked apply by action id: the fast path for replay and search."""
        self.actions.append(aid)
        s = self.to_act
        if aid >= PLAY_BASE:
            t = aid - PLAY_BASE
            self.hands[s] ^= BIT[t]
            self.plays.append((s, t))
            k = self.in_trick
            if k:
                p = self.powers[t]
                if p > self.best_power:
                    self.best_power = p
                    self.best_seat = s
                if k + 1 == self.n:  # the trick is complete
                    w = self.best_seat
                    self.tricks_won[w] += 1
                    winners = self.winners
                    winners.append(w)
                    self.in_trick = 0
                    self.to_act = w
                    if len(winners) == 7:
                        self._end_hand()
                    return
                self.in_trick = k + 1
            else:  # a lead: it picks the power table of this trick
                pw = self.powers = POWER[self.contract][t]
                self.best_seat = s
                self.best_power = pw[t]
                self.in_trick = 1
            self.to_act = self._next[s]
            return
        if aid < TRUMP_BASE:  # pass or bid
            bids = self.bids
            bids.append((s, aid))
            if aid:
                self.high = aid
                self.bidder = s
                if aid == MOON:
                    self._auction_won()
                    return
            if len(bids) == self.n:
                if self.high:
                    self._auction_won()
                else:
                    self._end_hand()
                return
            self.to_act = self._next[s]
            return
        if aid < DISCARD_BASE:  # name trumps
            self.contract = aid - TRUMP_BASE
            if self.widow >= 0 and self.rules.trump_before_widow:
                self.hands[s] |= BIT[self.widow]
                self.phase = _DISCARD
            else:
                self.phase = _PLAY
            return
        # discard
        t = aid - DISCARD_BASE
        self.hands[s] ^= BIT[t]
        self.discard = t
        self.phase = _PLAY if self.contract >= 0 else _TRUMP

    def _auction_won(self) -> None:
        b = self.bidder
        self.bid = self.high
        self.to_act = b
        if self.widow >= 0 and not self.rules.trump_before_widow:
            self.hands[b] |= BIT[self.widow]
            self.phase = _DISCARD
        else:
            self.phase = _TRUMP

    def _end_hand(self) -> None:
        rules = self.rules
        scores = self.scores
        b = self.bidder
        made: bool | None = None
        moon_made = False
        if b < 0:  # everyone passed: nothing scores, the hand is redealt
            points = [0] * len(scores)
        else:
            v, tw = self.bid, self.tricks_won
            need = 7 if v == MOON else v
            marks = rules.scoring == "marks"
            if self.n == 3:
                made = tw[b] >= need
                if marks:  # a made bid marks the bidder, a set marks each other seat
                    points = [0, 0, 0] if made else [1, 1, 1]
                    points[b] = 1 if made else 0
                else:  # the others score their tricks
                    points = tw[:]
                    points[b] = v if made else -v
            else:
                team = b & 1
                other = 1 - team
                taken = tw[team] + tw[team + 2]
                made = taken >= need
                points = [0, 0]
                if marks:
                    points[team] = 1 if made else 0
                    points[other] = 0 if made else 1
                else:
                    points[team] = (MOON if v == MOON else taken) if made else -v
                    points[other] = tw[other] + tw[other + 2]
            moon_made = made and v == MOON
            for i, p in enumerate(points):
                scores[i] += p
        if self.record:
            self.hand_log.append(self._hand_record(made, points))
        self.hand_index += 1
        top = max(scores)
        goal = rules.marks_target if rules.scoring == "marks" else rules.target
        if moon_made and rules.moon_wins:
            self._finish(self.side_of(b), "normal")
        elif top >= goal and scores.count(top) == 1:
            self._finish(scores.index(top), "normal")
        elif self.hand_index >= rules.max_hands:
            self._finish(scores.index(top) if scores.count(top) == 1 else None, "hand_limit")
        else:
            self._deal(self._next[self.first_bidder])

    def _finish(self, winner: int | None, end: str) -> None:
        self.winner = winner
        self.end = end
        self.phase = _OVER

    def hand_record(self) -> dict[str, Any]:
        """The hand in progress in transcript form: deal, auction, contract and tricks so far.

        An unfinished last trick has `"winner": None`; `_end_hand` adds `made`,
        `points` and `scores` once the hand is scored.
        """
        n = self.n
        won = self.bidder >= 0 and self.phase != _BID
        done = len(self.winners)
        tricks = []
        for k in range(0, len(self.plays), n):
            chunk = self.plays[k : k + n]
            tricks.append(
                {
                    "leader": chunk[0][0],
                    "plays": [{"seat": s, "tile": str(ALL_TILES[t])} for s, t in chunk],
                    "winner": self.winners[k // n] if k // n < done else None,
                }
            )
        return {
            "first_bidder": self.first_bidder,
            "deal": [[str(t) for t in tiles_of(m)] for m in self.dealt],
            "widow": str(ALL_TILES[self.widow]) if self.widow >= 0 else None,
            "bids": [{"seat": s, "bid": b if b else "pass"} for s, b in self.bids],
            "bidder": self.bidder if won else None,
            "bid": self.bid if won else None,
            "trump": contract_name(self.contract) if self.contract >= 0 else None,
            "discard": str(ALL_TILES[self.discard]) if self.discard >= 0 else None,
            "tricks": tricks,
            "tricks_won": list(self.tricks_won),
        }

    def _hand_record(self, made: bool | None, points: list[int]) -> dict[str, Any]:
        record = self.hand_record()
        record.update(made=made, points=points, scores=list(self.scores))
        return record

    # ----------------------------------------------------------- results

    def side_of(self, seat: int) -> int:
        """The scoring side of a seat: itself in 3p, its team (seat % 2) in 4p."""
        return seat % 2 if self.n == 4 else seat

    def summary(self) -> str:
        """One line for logs and errors."""
        phase = Phase(self.phase).name.lower()
        return (
            f"hand {self.hand_index + 1}, {phase}, seat {self.to_act} to act, "
            f"scores {self.scores}"
        )

    def __repr__(self) -> str:
        return f"<GameState {self.rules.players}p seed={self.seed} {self.summary()}>"
