"""What one seat may see (RULES.md, "What each seat may see"), as a value.

An observation holds the seat's own hand, every public event of the hand (bids,
the contract, each trick's plays and winner), the scores and, for the bidder
only, the widow once taken and its own discard. It never holds another seat's
tiles, an untaken widow or another seat's discard; `moon.state` builds it and
the tests check that reshuffling the hidden tiles leaves it unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from moon.contracts import contract_name, parse_contract
from moon.errors import ParseError
from moon.rules import Rules
from moon.tiles import Tile

__all__ = ["BidMade", "Observation", "Phase", "Play", "Trick"]


class Phase(IntEnum):
    """What the seat to act is deciding."""

    BID = 0
    DISCARD = 1
    TRUMP = 2
    PLAY = 3
    OVER = 4


@dataclass(frozen=True, slots=True)
class BidMade:
    """One call of the auction: `bid` is 0 for a pass."""

    seat: int
    bid: int

    def __str__(self) -> str:
        return f"seat {self.seat}: {self.bid or 'pass'}"


@dataclass(frozen=True, slots=True)
class Play:
    """A tile played by a seat."""

    seat: int
    tile: Tile


@dataclass(frozen=True, slots=True)
class Trick:
    """A finished trick: who led, the plays in order, who won."""

    leader: int
    plays: tuple[Play, ...]
    winner: int


@dataclass(frozen=True, slots=True)
class Observation:
    """Everything `seat` may know at this moment of the game."""

    seat: int
    rules: Rules
    hand_number: int  # 1-based count of hands dealt so far, redeals included
    phase: Phase
    to_act: int
    first_bidder: int
    hand: tuple[Tile, ...]  # this seat's tiles, highest first
    bids: tuple[BidMade, ...]
    bidder: int | None
    bid: int | None
    contract: int | None  # 0..6, 7 doubles, 8 none; None until named
    widow: Tile | None  # only for the bidder, once taken
    discard: Tile | None  # only for the bidder, once made
    tricks: tuple[Trick, ...]  # finished tricks of this hand
    current: tuple[Play, ...]  # the trick in progress
    tricks_won: tuple[int, ...]  # per seat, this hand
    scores: tuple[int, ...]  # per seat (3p) or team (4p), before this hand
    hand_sizes: tuple[int, ...]  # tiles each seat holds now

    @property
    def players(self) -> int:
        """3 or 4."""
        return self.rules.players

    @property
    def leader(self) -> int | None:
        """Who led the trick in progress."""
        return self.current[0].seat if self.current else None

    def played_by(self, seat: int) -> tuple[Tile, ...]:
        """Every tile `seat` has played this hand, in order."""
        out = [p.tile for t in self.tricks for p in t.plays if p.seat == seat]
        out += [p.tile for p in self.current if p.seat == seat]
        return tuple(out)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (tiles as `6-4`, contract as `6`/`doubles`/`none`)."""
        return {
            "seat": self.seat,
            "players": self.rules.players,
            "rules": self.rules.options(),
            "hand_number": self.hand_number,
            "phase": self.phase.name.lower(),
            "to_act": self.to_act,
            "first_bidder": self.first_bidder,
            "hand": [str(t) for t in self.hand],
            "bids": [[b.seat, b.bid] for b in self.bids],
            "bidder": self.bidder,
            "bid": self.bid,
            "contract": None if self.contract is None else contract_name(self.contract),
            "widow": None if self.widow is None else str(self.widow),
            "discard": None if self.discard is None else str(self.discard),
            "tricks": [
                [t.leader, [[p.seat, str(p.tile)] for p in t.plays], t.winner] for t in self.tricks
            ],
            "current": [[p.seat, str(p.tile)] for p in self.current],
            "tricks_won": list(self.tricks_won),
            "scores": list(self.scores),
            "hand_sizes": list(self.hand_sizes),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Observation:
        """Inverse of `to_json`."""
        try:
            tile = Tile.parse
            return cls(
                seat=int(d["seat"]),
                rules=Rules.make(int(d["players"]), d["rules"]),
                hand_number=int(d["hand_number"]),
                phase=Phase[str(d["phase"]).upper()],
                to_act=int(d["to_act"]),
                first_bidder=int(d["first_bidder"]),
                hand=tuple(tile(t) for t in d["hand"]),
                bids=tuple(BidMade(int(s), int(b)) for s, b in d["bids"]),
                bidder=d["bidder"],
                bid=d["bid"],
                contract=None if d["contract"] is None else parse_contract(d["contract"]),
                widow=None if d["widow"] is None else tile(d["widow"]),
                discard=None if d["discard"] is None else tile(d["discard"]),
                tricks=tuple(
                    Trick(int(ld), tuple(Play(int(s), tile(x)) for s, x in plays), int(w))
                    for ld, plays, w in d["tricks"]
                ),
                current=tuple(Play(int(s), tile(x)) for s, x in d["current"]),
                tricks_won=tuple(int(x) for x in d["tricks_won"]),
                scores=tuple(int(x) for x in d["scores"]),
                hand_sizes=tuple(int(x) for x in d["hand_sizes"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ParseError(f"malformed observation: {exc}") from exc
