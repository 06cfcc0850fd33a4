"""Actions a seat can take, each with a stable integer id and a readable label.

Ids are part of the wire protocol and never change:

| id      | action                                   | label            |
|---------|------------------------------------------|------------------|
| 0       | pass                                     | `pass`           |
| 3..7,21 | bid that number                          | `bid 5`          |
| 30..38  | name trumps: 30+N for N, 37 doubles, 38 none | `trump 6`    |
| 40..67  | discard tile with index i (40+i)          | `discard 6-4`    |
| 70..97  | play tile with index i (70+i)             | `play 6-4`       |

A tile's index is `high*(high+1)/2 + low` (`0-0` is 0, `6-6` is 27).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from moon.contracts import contract_name, parse_contract
from moon.errors import ParseError
from moon.tiles import ALL_TILES, Tile

__all__ = [
    "ACTIONS",
    "BID_IDS",
    "DISCARD_BASE",
    "MOON",
    "PASS",
    "PLAY_BASE",
    "TRUMP_BASE",
    "Action",
    "ActionKind",
]

PASS = 0
MOON = 21
TRUMP_BASE = 30
DISCARD_BASE = 40
PLAY_BASE = 70
BID_IDS: tuple[int, ...] = (3, 4, 5, 6, 7, MOON)


class ActionKind(IntEnum):
    """What an action does."""

    PASS = 0
    BID = 1
    TRUMP = 2
    DISCARD = 3
    PLAY = 4


@dataclass(frozen=True, slots=True, order=True)
class Action:
    """One action; ordered by id. `value` is the bid, the contract or the tile index."""

    id: int
    kind: ActionKind
    value: int

    @property
    def label(self) -> str:
        """Readable form: `pass`, `bid 5`, `trump doubles`, `discard 6-4`, `play 6-4`."""
        return _LABELS[self.id]

    @property
    def tile(self) -> Tile:
        """The tile of a discard or a play."""
        if self.kind not in (ActionKind.DISCARD, ActionKind.PLAY):
            raise ParseError(f"{self.label!r} has no tile")
        return ALL_TILES[self.value]

    def __str__(self) -> str:
        return self.label

    @staticmethod
    def from_id(action_id: int) -> Action:
        """The action with this id."""
        try:
            return ACTIONS[action_id]
        except (KeyError, TypeError):
            raise ParseError(f"no action has id {action_id!r}") from None

    @staticmethod
    def parse(label: str) -> Action:
        """The action a label names (`bid 5`, `play 6-4`, ...)."""
        text = " ".join(label.strip().lower().split())
        hit = _BY_LABEL.get(text)
        if hit is not None:
            return hit
        verb, _, arg = text.partition(" ")
        try:
            if verb == "trump":
                return ACTIONS[TRUMP_BASE + parse_contract(arg)]
            if verb in ("discard", "play"):
                base = DISCARD_BASE if verb == "discard" else PLAY_BASE
                return ACTIONS[base + Tile.parse(arg).index]
        except ParseError:
            pass
        raise ParseError(
            f"not an action: {label!r} (expected pass, bid N, trump X, discard A-B or play A-B)"
        )

    @staticmethod
    def bid(n: int) -> Action:
        """The bid of `n` (3..7 or 21)."""
        if n not in BID_IDS:
            raise ParseError(f"not a bid: {n!r} (bids are 3..7 or 21)")
        return ACTIONS[n]

    @staticmethod
    def trump(contract: int) -> Action:
        """Naming a contract (0..6, 7 doubles, 8 none)."""
        return Action.from_id(TRUMP_BASE + contract)

    @staticmethod
    def discard(tile: Tile) -> Action:
        """Discarding `tile`."""
        return ACTIONS[DISCARD_BASE + tile.index]

    @staticmethod
    def play(tile: Tile) -> Action:
        """Playing `tile`."""
        return ACTIONS[PLAY_BASE + tile.index]


def _build() -> dict[int, Action]:
    acts = [Action(PASS, ActionKind.PASS, 0)]
    acts += [Action(n, ActionKind.BID, n) for n in BID_IDS]
    acts += [Action(TRUMP_BASE + c, ActionKind.TRUMP, c) for c in range(9)]
    acts += [Action(DISCARD_BASE + t.index, ActionKind.DISCARD, t.index) for t in ALL_TILES]
    acts += [Action(PLAY_BASE + t.index, ActionKind.PLAY, t.index) for t in ALL_TILES]
    return {a.id: a for a in acts}


def _label(a: Action) -> str:
    if a.kind is ActionKind.PASS:
        return "pass"
    if a.kind is ActionKind.BID:
        return f"bid {a.value}"
    if a.kind is ActionKind.TRUMP:
        return f"trump {contract_name(a.value)}"
    verb = "discard" if a.kind is ActionKind.DISCARD else "play"
    return f"{verb} {ALL_TILES[a.value]}"


ACTIONS: dict[int, Action] = _build()
_LABELS: dict[int, str] = {i: _label(a) for i, a in ACTIONS.items()}
_BY_LABEL: dict[str, Action] = {_LABELS[i]: a for i, a in ACTIONS.items()}
