"""Keeping groups apart on boards: no two bots of one author or declared group at tables
of one board.

Every table of a board is dealt the same deal, hand k to seat position k, so two bots at
different tables of one board hold two hands of one deal (or, at one position, the same
hand with one table further on than the other): if they talk, each learns hidden tiles
of its own table. The stack cannot hear them talk, so it keeps apart those it knows to
be one party: the bots of one author, and the groups an organiser declares (a team, a
lab) for the whole stack or for one event. House bots are the stack's own players,
trusted to keep nothing between games (DESIGN.md, "Threat model"): they belong to no
group and sit at every table of a board.

A `Group` is a name and its bots; `resolve` makes an event's groups from the bots'
owners and the declared groups (each group of at least two bots of the event). A bot
may be in several (its author's and a team). Two tables of a board *conflict* when a
bot at one and a different bot at the other share a group and the tables are not the
same bots (replay's seatings of one table are one table). `classes` splits a board's
tables into as few conflict-free boards as a greedy colouring finds (tables in order,
each to the first board it does not conflict with), so a plan that keeps its groups
apart is unchanged and one that cannot deals the tables it must a board of their own.
`separate` applies that to the games a plan creates: the tables of a unit that conflict
with its first tables go to units `<unit>-a2`, `<unit>-a3`, ..., each with a deal of its
own, and `Apart` records say which, and why, for the notes.

The notes are public (standings, games), but who is grouped with whom is not (ListGroups
is an organiser's): a note says "one author's bots" of an author's group (a bot's author
is public: GetBot's owner, the bot's page) and "a declared group" of the others, never a
declared group's name or its bots (`kinds`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bots.house import is_house
from store.errors import InvalidArgument
from tournaments.plan import Game

__all__ = [
    "APART_UNIT",
    "Apart",
    "Group",
    "apart_note",
    "apart_notes",
    "author_group",
    "check_declared",
    "classes",
    "conflicts",
    "groups_note",
    "is_author_group",
    "kinds",
    "membership",
    "resolve",
    "separate",
    "stack_name",
]

MAX_GROUPS = 1000  # declared groups of one event or of the stack
MAX_NAME = 64
_NAME = re.compile(r"[A-Za-z0-9_.:@-]{1,64}")
APART_UNIT = re.compile(r"(.+)-a(\d+)")  # a unit dealt apart from `<unit>`


@dataclass(frozen=True, slots=True)
class Group:
    """Bots kept apart on boards: an author's (`author:<id>`) or a declared group."""

    name: str
    bots: tuple[str, ...]

    def to_json(self) -> list[Any]:
        """`[name, [bot ids]]`."""
        return [self.name, list(self.bots)]

    @staticmethod
    def from_json(data: Sequence[Any]) -> Group:
        """Inverse of `to_json`."""
        name, bots = data
        return Group(str(name), tuple(str(b) for b in bots))


def author_group(author_id: str) -> str:
    """The name of an author's group: `author:<id>`."""
    return f"author:{author_id}"


def check_declared(declared: Mapping[str, Sequence[str]], known: Iterable[str] | None,
                   field: str = "keep_apart", disjoint: bool = True) -> dict[str, tuple[str, ...]]:
    """Declared groups checked: names of 1-64 of `A-Za-z0-9_.:@-`, two or more distinct bots
    each; every bot among `known` when given (an event's bots); with `disjoint`, no bot in
    two groups (of one event). InvalidArgument naming the field, the group and the bot."""
    if len(declared) > MAX_GROUPS:
        raise InvalidArgument(f"{field}: at most {MAX_GROUPS} groups, got {len(declared)}")
    pool = None if known is None else set(known)
    seen: dict[str, str] = {}
    out: dict[str, tuple[str, ...]] = {}
    for name, bots in declared.items():
        if not _NAME.fullmatch(name) or name.startswith(("author:", "stack:")):
            raise InvalidArgument(f"{field}: a group's name is 1 to {MAX_NAME} of "
                                  f"A-Za-z0-9_.:@-, not author:... or stack:..., got "
                                  f"{name[:80]!r}")
        members = tuple(dict.fromkeys(bots))
        if len(members) < 2:
            raise InvalidArgument(f"{field}.{name}: a group keeps two or more bots apart, "
                                  f"got {len(members)}")
        for bot in members:
            if pool is not None and bot not in pool:
                raise InvalidArgument(f"{field}.{name}: {bot[:100]!r} is not a bot of this "
                                      "event")
            if is_house(bot):
                raise InvalidArgument(f"{field}.{name}: {bot} is a house bot, which sits at "
                                      "every table of a board and belongs to no group")
            if disjoint and bot in seen:
                raise InvalidArgument(f"{field}: {bot} is in two groups, {seen[bot]} and "
                                      f"{name}; a bot belongs to one group of an event")
            seen[bot] = name
        out[name] = members
    return out


def stack_name(name: str) -> str:
    """How a group of the whole stack is named among an event's: `stack:<name>`."""
    return f"stack:{name}"


def resolve(owners: Mapping[str, str], declared: Mapping[str, Sequence[str]]
            ) -> tuple[Group, ...]:
    """The groups of an event's bots: each author's (`owners`: bot id -> author id, "" for
    none) and each declared group, cut to the event's bots; only groups of two or more, in
    a stable order (authors by id, then declared by name). House bots are in none."""
    by_author: dict[str, list[str]] = defaultdict(list)
    for bot, owner in owners.items():
        if owner and not is_house(bot):
            by_author[owner].append(bot)
    out = [Group(author_group(a), tuple(sorted(bs))) for a, bs in sorted(by_author.items())
           if len(bs) > 1]
    for name in sorted(declared):
        members = tuple(sorted({b for b in declared[name] if b in owners and not is_house(b)}))
        if len(members) > 1:
            out.append(Group(name, members))
    return tuple(out)


def membership(groups: Sequence[Group]) -> dict[str, frozenset[int]]:
    """Each grouped bot's groups, as indices into `groups`."""
    out: dict[str, set[int]] = defaultdict(set)
    for i, g in enumerate(groups):
        for b in g.bots:
            out[b].add(i)
    return {b: frozenset(s) for b, s in out.items()}


def _clash(a: Sequence[str], b: Sequence[str], member: Mapping[str, frozenset[int]]
           ) -> set[int]:
    """The groups two tables of one board would join across them (none: they do not
    conflict)."""
    if set(a) == set(b):
        return set()  # one table at two seatings (replay): nothing it does not hold
    out: set[int] = set()
    for x in a:
        gx = member.get(x)
        if not gx:
            continue
        for y in b:
            if y != x and (gy := member.get(y)):
                out |= gx & gy
    return out


def conflicts(tables: Sequence[Sequence[str]], groups: Sequence[Group]
              ) -> list[tuple[int, int, str]]:
    """Every (table, table, group) of a board that seats two bots of one group apart."""
    member = membership(groups)
    return [(i, j, groups[g].name) for i in range(len(tables)) for j in range(i + 1, len(tables))
            for g in sorted(_clash(tables[i], tables[j], member))]


def classes(tables: Sequence[Sequence[str]], groups: Sequence[Group]) -> list[list[int]]:
    """The tables of a board split into boards with no conflict (indices, in order; the
    first board holds table 0): one board when the groups are kept apart already."""
    member = membership(groups)
    out: list[list[int]] = []
    for t, seats in enumerate(tables):
        for cls in out:
            if not any(_clash(seats, tables[u], member) for u in cls):
                cls.append(t)
                break
        else:
            out.append([t])
    return out


@dataclass(frozen=True, slots=True)
class Apart:
    """A board dealt apart: its unit, the unit it was split from, the groups that would
    have met on one board, and its games."""

    unit: str
    of: str
    groups: tuple[str, ...]
    games: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The form kept in a plan's state."""
        return {"unit": self.unit, "of": self.of, "groups": list(self.groups),
                "games": list(self.games)}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Apart:
        """Inverse of `to_json`."""
        return Apart(str(d["unit"]), str(d["of"]), tuple(d["groups"]), tuple(d["games"]))


def separate(games: Sequence[Game], groups: Sequence[Group], seed_of: Callable[[str], int]
             ) -> tuple[list[Game], list[Apart]]:
    """The games with every unit split into conflict-free boards: the tables of a unit
    that conflict with its first ones move to units `<unit>-a2`, ... (dealt `seed_of` of
    the new unit); the game ids stay. Games of one unit are one table each (or the
    seatings of one table). Without groups, or with none that meet, the games unchanged."""
    if not groups:
        return list(games), []
    member = membership(groups)
    by_unit: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(games):
        by_unit[g.unit].append(i)
    out = list(games)
    apart: list[Apart] = []
    for unit, idx in by_unit.items():
        tables = [games[i].bot_ids for i in idx]
        if not any(b in member for t in tables for b in t):
            continue
        split = classes(tables, groups)
        if len(split) == 1:
            continue
        for k, cls in enumerate(split[1:], 2):
            new = f"{unit}-a{k}"
            seed = seed_of(new)
            met: set[int] = set()
            for t in cls:
                for u in range(len(tables)):
                    if u not in cls:
                        met |= _clash(tables[t], tables[u], member)
                g = games[idx[t]]
                out[idx[t]] = Game(g.match_id, new, g.bot_ids, seed, g.bracket_match)
            apart.append(Apart(new, unit, tuple(sorted(groups[m].name for m in met)),
                               tuple(games[idx[t]].match_id for t in cls)))
    return out, apart


def is_author_group(name: str) -> bool:
    """True for an author's group (`author:<id>`), False for a declared one."""
    return name.startswith("author:")


def kinds(names: Iterable[str]) -> str:
    """What a public note says of groups (by name): how many authors' bots and how many
    declared groups, never a declared group's name or bots (module doc)."""
    distinct = set(names)
    authors = sum(1 for n in distinct if is_author_group(n))
    declared = len(distinct) - authors
    out = []
    if authors:
        out.append("one author's bots" if authors == 1 else f"{authors} authors' bots")
    if declared:
        out.append("a declared group" if declared == 1 else f"{declared} declared groups")
    return "; ".join(out)


def groups_note(groups: Sequence[Group], names: Mapping[str, str] | None = None) -> str:
    """What an event's notes say of its groups (one sentence): each author's bots by name,
    the declared groups only counted (module doc)."""
    said = [f"one author's bots ({', '.join((names or {}).get(b, b) for b in g.bots)})"
            for g in groups if is_author_group(g.name)]
    if declared := kinds(g.name for g in groups if not is_author_group(g.name)):
        said.append(f"{declared} (not named: who is grouped with whom is the organiser's "
                    "to know)")
    return ("kept apart on boards (no two bots of one group at tables of one board; a table "
            "that would sit with one is dealt a board of its own): " + "; ".join(said))


def apart_note(board: str, of: str, groups: Iterable[str] = ()) -> str:
    """A game's note when its board was dealt apart from another: which, and why (the
    kinds of group, when the caller knows them)."""
    kind = kinds(groups)
    return (f"this board ({board}) was dealt apart from {of}: its tables would otherwise "
            f"have seated two bots of one group{f' ({kind})' if kind else ''} at tables of "
            "one board")


def apart_notes(apart: Iterable[Apart], label: Callable[[str], str] = str) -> list[str]:
    """One note per board dealt apart, naming it, the board it left and the kinds of group
    (`kinds`)."""
    return [f"{label(a.unit)} dealt apart from {label(a.of)} ({len(a.games)} table(s)): "
            f"it would have seated two bots of one group ({kinds(a.groups)}) at tables of "
            "one board"
            for a in apart]
