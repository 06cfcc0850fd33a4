"""A pool's games as columns: what the fit reads in bulk, without one object per game.

`GameTable` holds, row by row, a game's id, its unit (the board it was dealt from, as
a code into `units`, or -1 for a game that is its own unit), and per seat the bot (a
code into `bots`) and the place. 3p tables have three seats, each its own side; 2v2
tables have four, seat s playing for team s % 2 (both seats of a team share its
place, and a bot holding both seats of its team is a side of one), exactly as
`games.games_from_rows` reads a result row. A reader fills it from a cursor or from
arrays in a few vectorised steps, e.g. for 3p rows (match_id, board or "", bot0, bot1,
bot2, place0, place1, place2), the bots as small integers into a list of their ids:

    ids, boards, *seats = zip(*cursor.fetchall())  # or columns the archive hands out
    table = GameTable.of(ids, boards, np.column_stack(seats[:3]),
                         np.column_stack(seats[3:]), bot_ids)

(`GameTable.of` takes the unit labels, "" for a game without one, and codes them;
the constructor takes the codes.) A table may hold a game more than once and in
any order, as the games `canonical` reads may: `canonical_rows` gives its set in
game-id order (digit runs as numbers, `games.game_order`, computed on arrays), an
identical repeat once, and refuses two different games under one id. So
`ratings.fit_table` of a table and `ratings.fit` of the same games give the same fit
to the last bit (the fit of games makes their table, `from_games`, and fits that).

Ids, bot ids and unit labels are strings without NUL characters (a game's own unit
is labelled with its id after a NUL, as before); bot ids and unit labels non-empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ratings.errors import RatingError
from ratings.games import Game, game_order, side_count

__all__ = ["GameTable", "natural_order"]

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]
StrArray = NDArray[np.str_]


def _strings(values: ArrayLike, what: str) -> StrArray:
    """A 1-d array of strings ('U'), refusing other types and NUL characters."""
    out = np.asarray(values)
    if out.size == 0:
        return np.zeros(0, dtype="<U1")
    if out.ndim != 1 or out.dtype.kind != "U":
        if out.ndim == 1 and out.dtype == object and all(isinstance(x, str) for x in out):
            out = out.astype(str)
        else:
            raise RatingError(f"{what} must be a sequence of strings")
    out = np.array(out, dtype=out.dtype.newbyteorder("="), order="C")  # the table's own copy
    points = out.view(np.uint32).reshape(out.size, -1)
    # numpy pads with NUL, so a NUL inside an id shows as a zero before a non-zero.
    if points.shape[1] > 1 and bool((points[:, 1:] != 0)[points[:, :-1] == 0].any()):
        raise RatingError(f"{what} must not contain NUL characters")
    return out


def _codes(values: ArrayLike, shape_of: str, what: str) -> IntArray:
    """An int64 array of codes (any integer dtype in, int64 out)."""
    out = np.asarray(values)
    if out.size and out.dtype.kind not in "iu":
        raise RatingError(f"{what} must be integers ({shape_of})")
    return out.astype(np.int64)  # a copy: the table's own


# Ids keyed at once: the key's passes then work in cache, and their temporaries are
# reused rather than fetched fresh from the kernel (a million ids keyed whole took 3 to
# 5 s of CPU, in runs of 65,536 about 1 s).
_KEY_CHUNK = 1 << 16


def _natural_keys(ids: StrArray) -> NDArray[np.bytes_]:
    """Byte strings whose plain order is the natural order of ASCII ids (`game_order`),
    computed in runs of _KEY_CHUNK ids (`_run_keys`), padded to one width with zeros (the
    keys' own end)."""
    if ids.size <= _KEY_CHUNK:
        return _run_keys(ids)
    parts = [_run_keys(ids[i:i + _KEY_CHUNK]) for i in range(0, ids.size, _KEY_CHUNK)]
    width = max(p.dtype.itemsize for p in parts)
    out: NDArray[np.bytes_] = np.concatenate([p.astype(f"S{width}") for p in parts])
    return out


def _run_keys(ids: StrArray) -> NDArray[np.bytes_]:
    """Byte strings whose plain order is the natural order of ASCII ids (`game_order`).

    Each text run becomes 1, its characters, 0; each digit run 2, the count of its
    digits without leading zeros, those digits; the end is 0 (numpy's padding). So a
    text part precedes a number in the same place, numbers compare by value, and a
    shorter tuple of parts comes first, as in `game_order`. Ids that differ only in
    leading zeros get equal keys: the caller orders them by the raw id.
    """
    n = ids.size
    text = ids.view(np.uint32).reshape(n, -1).astype(np.uint8)
    length = text.shape[1]
    kind = np.zeros((n, length + 2), dtype=np.int8)  # 0 none, 1 text, 2 digit; a pad each end
    body = kind[:, 1:-1]
    np.not_equal(text, 0, out=body, casting="unsafe")
    body += (text - np.uint8(48)) < 10
    change = kind[:, 1:] != kind[:, :-1]  # between characters j - 1 and j
    present = body != 0
    start = change[:, :-1] & present
    end = change[:, 1:] & present
    digit = body == 2
    letter = body == 1
    pos = np.arange(length, dtype=np.int16)
    run_start = np.maximum.accumulate(np.where(start, pos, np.int16(0)), axis=1)
    last_nonzero = np.maximum.accumulate(np.where(digit & (text != 48), pos, np.int16(-1)),
                                         axis=1)
    emitted = letter | (digit & (last_nonzero >= run_start))  # leading zeros left out
    head = start.view(np.int8) + (start & digit).view(np.int8)  # a marker, a number's count
    count = head + emitted.view(np.int8) + (end & letter).view(np.int8)
    total = np.cumsum(count, axis=1, dtype=np.int16)
    width = int(total[:, -1].max(initial=0)) + 1
    before = (total - count).ravel()
    out = np.zeros(n * width, dtype=np.uint8)

    def at(flat: IntArray) -> IntArray:
        """Where the tokens of the characters at these flat positions start in `out`."""
        where: IntArray = (flat // length) * width + before[flat]
        return where

    run_first, run_last = np.flatnonzero(start), np.flatnonzero(end)
    number = digit.ravel()[run_first]
    out[at(run_first)] = np.where(number, 2, 1).astype(np.uint8)
    sig = np.cumsum(emitted & digit, axis=1, dtype=np.int16).ravel()
    run_first, run_last = run_first[number], run_last[number]
    size = sig[run_last] - sig[run_first] + emitted.ravel()[run_first]
    out[at(run_first) + 1] = size.astype(np.uint8)
    chars = np.flatnonzero(emitted)
    out[at(chars) + head.ravel()[chars]] = text.ravel()[chars]
    keys: NDArray[np.bytes_] = out.view(f"S{width}")
    return keys


def natural_order(ids: ArrayLike) -> IntArray:
    """The permutation that sorts ids as `sorted(ids, key=games.game_order)` does (stably)."""
    return _natural_order(_strings(ids, "game ids"))


def _natural_order(arr: StrArray) -> IntArray:
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    points = arr.view(np.uint32)
    if bool((points >= 128).any()) or arr.dtype.itemsize // 4 > 200:
        # Beyond ASCII Python's idea of a digit is wider (and a digit run's count must fit
        # in a byte): its own sort decides.
        listed = arr.tolist()
        return np.array(sorted(range(arr.size), key=lambda i: game_order(listed[i])),
                        dtype=np.int64)
    text = points.reshape(arr.size, -1)
    digit = (text >= 48) & (text <= 57)
    if bool((digit == digit[0]).all()) and bool((text[:, -1] != 0).all()):
        # Every id of one length with its digits in the same places (g0000001, ...): the
        # parts line up, numbers of one width compare as text, so the plain order is it.
        return np.argsort(arr, kind="stable").astype(np.int64)
    keys = _natural_keys(arr)
    order = np.argsort(keys, kind="stable")
    ranked = keys[order]
    tied = ranked[1:] == ranked[:-1]
    if bool(tied.any()):
        # Equal keys (a repeated id, or ids that differ in leading zeros): by the raw id.
        group = np.concatenate([[0], np.cumsum(~tied)])
        order = order[np.lexsort((arr[order], group))]
    return order.astype(np.int64)


def _competition(place: IntArray) -> bool:
    """Whether every row of places is a competition ranking (1 best, ties share)."""
    expected = 1 + (place[:, None, :] < place[:, :, None]).sum(axis=2)
    return bool((place == expected).all())


@dataclass(frozen=True, slots=True, eq=False)
class GameTable:
    """Games as columns (module doc); validated on construction, arrays made read-only."""

    game_id: StrArray  # (games,)
    unit: IntArray  # (games,): code into `units`, -1 for a game that is its own unit
    seat_bot: IntArray  # (games, seats): code into `bots`; seats 3 (3p) or 4 (2v2)
    place: IntArray  # (games, seats): each seat's place, 1 best (a 2v2 team's seats alike)
    bots: tuple[str, ...]  # distinct bot ids, any order
    units: tuple[str, ...] = ()  # distinct unit labels, any order
    at: FloatArray | None = None  # (games,): release time (s since the epoch), NaN unknown

    def __post_init__(self) -> None:
        ids = _strings(self.game_id, "game ids")
        if ids.size and bool((ids == "").any()):
            raise RatingError("game ids must be non-empty strings")
        games = ids.size
        unit = _codes(self.unit, "one per game", "unit codes").reshape(-1)
        seat_bot = _codes(self.seat_bot, "games x seats", "seat bots")
        place = _codes(self.place, "games x seats", "places")
        if seat_bot.size == 0:
            seat_bot = seat_bot.reshape(games, seat_bot.shape[-1] if seat_bot.ndim == 2 else 3)
        if place.size == 0:
            place = place.reshape(seat_bot.shape)
        if seat_bot.ndim != 2 or seat_bot.shape[1] not in (3, 4):
            raise RatingError("seat_bot must be games x 3 (3p) or games x 4 (2v2)")
        if unit.shape != (games,) or seat_bot.shape[0] != games or place.shape != seat_bot.shape:
            raise RatingError(f"{games} game ids need {games} units and a seat_bot and a place"
                              f" of {games} rows alike")
        bots, units = tuple(self.bots), tuple(self.units)
        for name, labels in (("bot ids", bots), ("unit labels", units)):
            if any(not isinstance(x, str) or not x or "\0" in x for x in labels):
                raise RatingError(f"{name} must be non-empty strings without NUL")
            if len(set(labels)) != len(labels):
                raise RatingError(f"{name} must be distinct")
        if games and not (bool((unit >= -1).all()) and bool((unit < len(units)).all())):
            raise RatingError(f"unit codes must be -1 or index {len(units)} unit labels")
        if games and not (bool((seat_bot >= 0).all()) and bool((seat_bot < len(bots)).all())):
            raise RatingError(f"seat bots must index the {len(bots)} bot ids")
        if seat_bot.shape[1] == 4:
            if not bool((place[:, 2:] == place[:, :2]).all()):
                bad = int(np.flatnonzero((place[:, 2:] != place[:, :2]).any(axis=1))[0])
                raise RatingError(f"game {str(ids[bad])!r}: the seats of a team have"
                                  " different places")
            sides = place[:, :2]
        else:
            sides = place
        if games and not _competition(sides):
            bad = int(np.flatnonzero(
                (sides != 1 + (sides[:, None, :] < sides[:, :, None]).sum(axis=2)).any(axis=1)
            )[0])
            raise RatingError(
                f"game {str(ids[bad])!r}: places {sides[bad].tolist()} are not a competition"
                " ranking (1 best; tied sides share a place and the next place is skipped)")
        at = None
        if self.at is not None:
            at = np.array(self.at, dtype=np.float64).reshape(-1)
            if at.shape != (games,):
                raise RatingError(f"at needs one time per game ({games})")
        for name, value in (("game_id", ids), ("unit", unit), ("seat_bot", seat_bot),
                            ("place", place), ("at", at)):
            if value is not None:
                value.setflags(write=False)  # each is the table's own copy
            object.__setattr__(self, name, value)
        object.__setattr__(self, "bots", bots)
        object.__setattr__(self, "units", units)

    @classmethod
    def of(cls, game_id: ArrayLike, unit: ArrayLike, seat_bot: ArrayLike, place: ArrayLike,
           bots: Sequence[str], at: ArrayLike | None = None) -> GameTable:
        """A table from unit labels ("" for a game that is its own unit) rather than codes."""
        labels = _strings(unit, "unit labels")
        names, code = np.unique(labels, return_inverse=True)
        if names.size and names[0] == "":
            names, code = names[1:], code - 1
        return cls(np.asarray(game_id), code.reshape(-1), np.asarray(seat_bot),
                   np.asarray(place), tuple(bots), tuple(names.tolist()),
                   None if at is None else np.asarray(at, dtype=np.float64))

    @classmethod
    def from_games(cls, games: Iterable[Game]) -> GameTable:
        """The table of some games of one pool (RatingError if they mix 3p and 2v2)."""
        games = tuple(games)
        for g in games:
            if not isinstance(g, Game):
                raise RatingError(f"expected a Game, got {g!r}")
            if "\0" in g.game_id:
                raise RatingError(f"game {g.game_id!r}: ids must not contain NUL characters")
        sides = side_count(games) or 3
        bot_index: dict[str, int] = {}
        unit_index: dict[str, int] = {}
        seats = 3 if sides == 3 else 4
        seat_bot = np.zeros((len(games), seats), dtype=np.int64)
        place = np.zeros((len(games), seats), dtype=np.int64)
        unit = np.full(len(games), -1, dtype=np.int64)
        for row, g in enumerate(games):
            if g.unit:
                unit[row] = unit_index.setdefault(g.unit, len(unit_index))
            for s, side in enumerate(g.sides):
                first = bot_index.setdefault(side[0], len(bot_index))
                last = bot_index.setdefault(side[-1], len(bot_index))
                seat_bot[row, s] = first
                place[row, s] = g.places[s]
                if seats == 4:
                    seat_bot[row, s + 2] = last
                    place[row, s + 2] = g.places[s]
        known = [g.at for g in games]
        at = (None if all(x is None for x in known)
              else np.array([np.nan if x is None else x for x in known], dtype=np.float64))
        ids = np.array([g.game_id for g in games], dtype=str) if games else np.zeros(0, "<U1")
        return cls(ids, unit, seat_bot, place, tuple(bot_index), tuple(unit_index), at)

    def __len__(self) -> int:
        return int(self.game_id.size)

    @property
    def sides(self) -> int:
        """Sides a game: 3 (3p) or 2 (2v2)."""
        return 3 if self.seat_bot.shape[1] == 3 else 2

    def canonical_rows(self) -> IntArray:
        """The rows of the table's set of games in game-id order: of an id given more than
        once, its first row; RatingError when two rows under one id are different games."""
        order = _natural_order(self.game_id)
        ids = self.game_id[order]
        repeat = np.flatnonzero(ids[1:] == ids[:-1]) + 1
        if repeat.size:
            a, b = order[repeat - 1], order[repeat]
            # Runs of one id: each row is compared with the one before it, so all alike.
            differ = ((self.unit[a] != self.unit[b])
                      | (self.seat_bot[a] != self.seat_bot[b]).any(axis=1)
                      | (self.place[a] != self.place[b]).any(axis=1))
            if bool(differ.any()):
                gid = str(self.game_id[a[np.flatnonzero(differ)[0]]])
                raise RatingError(f"two different games under id {gid!r}")
            keep = np.ones(order.size, dtype=bool)
            keep[repeat] = False
            order = order[keep]
        return order

    @classmethod
    def concat(cls, tables: Sequence[GameTable]) -> GameTable:
        """The rows of several tables of one kind of pool, in order, as one table (their
        bots and units named once)."""
        tables = [t for t in tables if len(t)] or list(tables[:1])
        if len(tables) == 1:
            return tables[0]
        if len({t.seat_bot.shape[1] for t in tables}) != 1:
            raise RatingError("tables of 3p and 2v2 games do not join")
        bots = tuple(dict.fromkeys(b for t in tables for b in t.bots))
        units = tuple(dict.fromkeys(u for t in tables for u in t.units))
        bot_at = {b: i for i, b in enumerate(bots)}
        unit_at = {u: i for i, u in enumerate(units)}
        seat_bot, unit = [], []
        for t in tables:
            seat_bot.append(np.array([bot_at[b] for b in t.bots], dtype=np.int64)[t.seat_bot]
                            if t.bots else t.seat_bot)
            codes = np.array([unit_at[u] for u in t.units] + [-1], dtype=np.int64)
            unit.append(codes[t.unit])  # -1 indexes the last: a game its own unit stays so
        known = any(t.at is not None for t in tables)
        at = (np.concatenate([np.full(len(t), np.nan) if t.at is None else t.at
                              for t in tables]) if known else None)
        return cls(np.concatenate([t.game_id for t in tables]), np.concatenate(unit),
                   np.concatenate(seat_bot), np.concatenate([t.place for t in tables]),
                   bots, units, at)

    def take(self, rows: ArrayLike) -> GameTable:
        """The table of some rows (indices or a boolean mask), names kept."""
        index = np.asarray(rows)
        return GameTable(self.game_id[index], self.unit[index], self.seat_bot[index],
                         self.place[index], self.bots, self.units,
                         None if self.at is None else self.at[index])

    def games(self) -> tuple[Game, ...]:
        """The rows as `Game`s, in table order (for small pools and the tests)."""
        out = []
        four = self.seat_bot.shape[1] == 4
        at: list[Any] = [None] * len(self) if self.at is None else self.at.tolist()
        for row in range(len(self)):
            bots = [self.bots[b] for b in self.seat_bot[row]]
            places = self.place[row].tolist()
            if four:
                sides = tuple((bots[t],) if bots[t] == bots[t + 2] else (bots[t], bots[t + 2])
                              for t in (0, 1))
                places = places[:2]
            else:
                sides = tuple((b,) for b in bots)
            when = at[row]
            out.append(Game(str(self.game_id[row]),
                            self.units[self.unit[row]] if self.unit[row] >= 0 else "",
                            sides, tuple(places),
                            None if when is None or np.isnan(when) else float(when)))
        return tuple(out)
