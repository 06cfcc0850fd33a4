"""Groups kept apart on boards (`tournaments.apart`): in every format on boards, over many
random fields, no two bots of one author or declared group sit at tables of one board;
each board dealt apart is named in the notes; house bots are exempt; bad groups are
refused with one clear error."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from dataclasses import replace
from typing import Any

import pytest

from moon import Rules
from store.errors import InvalidArgument
from store.records import TournamentSpec
from tournaments import apart
from tournaments.apart import Group
from tournaments.formats import apart_notes, notes, plan
from tournaments.plan import Game, board_label
from tournaments.view import build_view
from workers.scheduler import FormatPlanner


def _spec(players: int, fmt: str, bots: tuple[str, ...], groups: tuple[Group, ...],
          seed: int = 7, **options: Any) -> TournamentSpec:
    return TournamentSpec(tournament_id="t-apart", name="apart", players=players, format=fmt,
                          bot_ids=bots, names=bots, rules=Rules.make(players), seed=seed,
                          options=options, apart=tuple((g.name, g.bots) for g in groups))


def _result(game: Game, players: int, rng: random.Random) -> dict[str, Any]:
    sides = 3 if players == 3 else 2
    winner = rng.randrange(sides)
    final = [40 if s == winner else rng.randrange(30) for s in range(sides)]
    if players == 3:
        order = sorted(range(3), key=lambda s: -final[s])
        placement = [order.index(s) + 1 for s in range(3)]
    else:
        placement = [1 if s % 2 == winner else 2 for s in range(4)]
    return {"match_id": game.match_id, "bot_ids": list(game.bot_ids), "players": players,
            "final": final, "winner": winner, "placement": placement, "end": "normal"}


def _play(spec: TournamentSpec, seed: int) -> tuple[list[Game], dict[str, Any]]:
    rng = random.Random(seed)
    results: dict[str, dict[str, Any]] = {}
    while not (p := plan(spec, results)).finished:
        new = [g for g in p.games if g.match_id not in results]
        assert new, "a plan that waits for nothing"
        for g in new:
            results[g.match_id] = _result(g, spec.players, rng)
    return p.games, p.state or {}


def _field(rng: random.Random, n: int, house: int = 0) -> tuple[tuple[str, ...], dict[str, str],
                                                                dict[str, list[str]]]:
    """`n` bots of a few authors (some with none), `house` house bots, a declared group or
    two of bots of different authors."""
    bots = [f"b{i}" for i in range(n)]
    owners = {b: (f"a{rng.randrange(max(2, n // 3))}" if rng.random() < 0.8 else "")
              for b in bots}
    declared: dict[str, list[str]] = {}
    free = bots[:]
    rng.shuffle(free)
    for k in range(rng.randrange(3)):
        size = rng.randint(2, 3)
        if len(free) >= size:
            declared[f"lab{k}"] = [free.pop() for _ in range(size)]
    houses = [f"house:greedy?seed={k}" for k in range(house)]
    return tuple(bots + houses), owners | dict.fromkeys(houses, ""), declared


def _check(games: list[Game], groups: tuple[Group, ...], state: dict[str, Any]) -> None:
    """No board seats two bots of one group at two tables; every split board is noted."""
    by_unit: dict[str, list[Game]] = defaultdict(list)
    for g in games:
        by_unit[g.unit].append(g)
    for unit, gs in by_unit.items():
        assert not apart.conflicts([g.bot_ids for g in gs], groups), unit
    dealt: dict[str, set[str]] = defaultdict(set)
    for g in games:
        for b in set(g.bot_ids):
            assert g.unit not in dealt[b] or all(
                set(x.bot_ids) == set(g.bot_ids) for x in by_unit[g.unit]), (b, g.unit)
            dealt[b].add(g.unit)
    noted = {a["unit"] for a in state.get("apart", [])}
    split = {u for u in by_unit if apart.APART_UNIT.fullmatch(u)}
    assert noted == split
    seeds = {gs[0].seed for gs in by_unit.values()}
    assert len(seeds) == len(by_unit)  # a board dealt apart has a deal of its own


CASES = [(3, "round_robin", {}), (4, "round_robin", {}), (4, "round_robin",
                                                         {"rotate_partners": True}),
         (3, "swiss", {}), (4, "swiss", {"rotate_partners": True}), (4, "swiss", {})]


@pytest.mark.parametrize(("players", "fmt", "options"), CASES)
def test_no_board_seats_two_bots_of_one_group_at_two_tables(
        players: int, fmt: str, options: dict[str, Any]) -> None:
    rng = random.Random(f"{players}{fmt}{options}")
    split_seen = 0
    for trial in range(25):
        least = 4 if options.get("rotate_partners") else 3
        n = rng.randint(least + 3, 14)
        bots, owners, declared = _field(rng, n, house=rng.randrange(2))
        groups = apart.resolve(owners, declared)
        spec = _spec(players, fmt, bots, groups, seed=trial, **options)
        games, state = _play(spec, trial)
        _check(games, groups, state)
        split_seen += len(state.get("apart", []))
        if state.get("apart"):
            text = apart_notes(spec, state)
            assert len(text) == len(state["apart"])
            assert all("dealt apart" in t and "board" in t for t in text)
            assert any("kept apart on boards" in t for t in notes(spec))
    assert split_seen  # the fields were hard enough to need boards dealt apart


def test_one_authors_five_bots_round_robin_deals_every_table_its_own_board() -> None:
    bots = tuple(f"b{i}" for i in range(6))
    owners = dict.fromkeys(bots, "alice")
    groups = apart.resolve(owners, {})
    spec = _spec(3, "round_robin", bots, groups)
    games, state = _play(spec, 1)
    _check(games, groups, state)
    by_unit: dict[str, int] = defaultdict(int)
    for g in games:
        by_unit[g.unit] += 1
    assert set(by_unit.values()) == {1}  # every table a board of its own
    view = build_view(spec, {}, plan(spec, {}), 0)
    assert any("one author's bots" in n for n in view.notes)
    assert all(f"round {r}, board 2" in " ".join(apart_notes(spec, state))
               for r in range(1, 3))
    # Each game of a board dealt apart says so in its own notes (the match the scheduler
    # creates), naming the board it left; a game of a board kept whole says nothing of it.
    planner = FormatPlanner(spec)
    split = 0
    for g in games:
        said = [n for n in planner.match_spec(g, g.seed).meta["notes"] if "dealt apart" in n]
        m = apart.APART_UNIT.fullmatch(g.unit)
        if m is None:
            assert said == [], g.unit
            continue
        split += 1
        assert said == [f"this board ({board_label(g.unit)}) was dealt apart from "
                        f"{board_label(m.group(1))}: its tables would otherwise have seated "
                        "two bots of one group at tables of one board"], said
    assert 0 < split == len(games) - len({apart.APART_UNIT.sub(r"\1", g.unit) for g in games})


def test_groups_kept_apart_change_nothing_when_the_plan_keeps_them_apart() -> None:
    bots = tuple(f"b{i}" for i in range(9))
    plain = _play(_spec(3, "round_robin", bots, ()), 3)[0]
    # Two bots of one author that a 9-bot round robin on boards never seats on one board
    # apart cannot exist (every round seats everyone), so group a bot with a house bot:
    # exempt, nothing changes.
    groups = apart.resolve({"b0": "alice", "house:greedy": "alice"} | dict.fromkeys(bots[1:], ""),
                           {})
    assert groups == ()
    assert _play(_spec(3, "round_robin", bots, groups), 3)[0] == plain


def test_house_bots_sit_at_every_table() -> None:
    tables = [("house:greedy", "b1", "b2"), ("house:greedy", "b3", "b4")]
    groups = apart.resolve({"b1": "a", "b3": "a", "house:greedy": "a"}, {})
    assert [g.name for g in groups] == ["author:a"]
    assert "house:greedy" not in groups[0].bots
    assert apart.classes(tables, groups) == [[0], [1]]
    assert apart.classes(tables, ()) == [[0, 1]]


def test_replay_seatings_of_one_table_are_one_table() -> None:
    tables = [("b1", "b2", "b3"), ("b2", "b3", "b1"), ("b3", "b1", "b2")]
    groups = (Group("author:a", ("b1", "b2")),)
    assert apart.classes(tables, groups) == [[0, 1, 2]]


def test_separate_keeps_ids_and_names_the_groups() -> None:
    games = [Game(f"t-x-r1-t{t}-g1", "r1", seats, 5) for t, seats in enumerate(
        [("a", "b", "c"), ("d", "e", "f"), ("g", "h", "i")], 1)]
    groups = (Group("lab", ("a", "e")), Group("author:z", ("b", "i")))
    out, split = apart.separate(games, groups, lambda u: hash(u) & 0xFFFF)
    assert [g.match_id for g in out] == [g.match_id for g in games]
    assert [g.unit for g in out] == ["r1", "r1-a2", "r1-a2"]
    assert split == [apart.Apart("r1-a2", "r1", ("author:z", "lab"),
                                 ("t-x-r1-t2-g1", "t-x-r1-t3-g1"))]


def test_public_notes_never_name_a_declared_group_or_its_bots() -> None:
    """Who is grouped with whom is the organiser's (ListGroups): the notes, which anyone
    reads, name an author's bots (a bot's author is public) but of a declared group, of an
    event or of the stack, only that there is one."""
    bots = ("a1", "a2", "x1", "x2", "s1", "s2", "o1", "o2", "o3")
    names = {b: f"name-{b}" for b in bots}
    groups = apart.resolve({"a1": "ann", "a2": "ann"} | dict.fromkeys(bots[2:], ""),
                           {"lab-secret": ["x1", "x2"],
                            apart.stack_name("team-secret"): ["s1", "s2"]})
    assert [g.name for g in groups] == ["author:ann", "lab-secret", "stack:team-secret"]
    note = apart.groups_note(groups, names)
    assert "one author's bots (name-a1, name-a2)" in note
    assert "2 declared groups (not named" in note
    for hidden in ("lab-secret", "team-secret", "stack:", "author:", "name-x", "name-s"):
        assert hidden not in note, (hidden, note)
    games = [Game(f"t-x-r1-t{t}-g1", "r1", seats, 5) for t, seats in enumerate(
        [("a1", "x1", "o1"), ("a2", "s1", "o2"), ("x2", "s2", "o3")], 1)]
    _, split = apart.separate(games, groups, lambda u: 9)
    assert [(a.unit, a.groups) for a in split] == [
        ("r1-a2", ("author:ann", "stack:team-secret")),
        ("r1-a3", ("lab-secret", "stack:team-secret"))]
    text = apart.apart_notes(split)
    assert text == [
        "r1-a2 dealt apart from r1 (1 table(s)): it would have seated two bots of one group "
        "(one author's bots; a declared group) at tables of one board",
        "r1-a3 dealt apart from r1 (1 table(s)): it would have seated two bots of one group "
        "(2 declared groups) at tables of one board"]
    assert apart.apart_note("b2", "b1", ["stack:team-secret", "author:ann"]) == (
        "this board (b2) was dealt apart from b1: its tables would otherwise have seated "
        "two bots of one group (one author's bots; a declared group) at tables of one board")


def test_bad_groups_are_refused_with_one_clear_error() -> None:
    with pytest.raises(InvalidArgument, match=r"keep_apart\.lab: 'zz' is not a bot of this event"):
        apart.check_declared({"lab": ["b1", "zz"]}, ["b1", "b2"])
    with pytest.raises(InvalidArgument, match="b2 is in two groups, lab and team"):
        apart.check_declared({"lab": ["b1", "b2"], "team": ["b2", "b3"]}, ["b1", "b2", "b3"])
    with pytest.raises(InvalidArgument, match="two or more bots"):
        apart.check_declared({"lab": ["b1", "b1"]}, ["b1"])
    with pytest.raises(InvalidArgument, match="house bot"):
        apart.check_declared({"lab": ["b1", "house:greedy"]}, None)
    with pytest.raises(InvalidArgument, match="name"):
        apart.check_declared({"author:x": ["b1", "b2"]}, None)
    with pytest.raises(InvalidArgument, match=r"keep_apart\.lab: 'zz' is not a bot"):
        _spec(3, "round_robin", ("b1", "b2", "b3"), (Group("lab", ("b1", "zz")),))


def test_a_spec_keeps_its_groups_through_json() -> None:
    spec = _spec(3, "round_robin", ("b1", "b2", "b3"), (Group("lab", ("b1", "b2")),))
    assert TournamentSpec.from_json(spec.to_json()) == spec
    plain = _spec(3, "round_robin", ("b1", "b2", "b3"), ())
    assert "\"apart\":" not in plain.to_json()


def test_the_arenas_batches_keep_groups_apart() -> None:
    from store.arena import ArenaInfo, ArenaSpec, ArenaStatus
    from tournaments import arena
    from workers.arena import ArenaPlanner

    rng = random.Random(29)
    split = 0
    for trial in range(200):
        n = rng.choice([6, 9, 12, 15, 24])
        bots, owners, declared = _field(rng, n, house=rng.randrange(3))
        groups = apart.resolve(owners, declared)
        order = list(bots)
        rng.shuffle(order)
        per = len(order) // 3
        boards = []
        for b in range(rng.randint(1, 3)):
            tables = [order[3 * t: 3 * t + 3] for t in range(b, per, 3)]
            if len(tables) >= 2:
                boards.append(arena.Board(f"arena-3p/b{5 + b}", tuple(
                    arena.Table(tuple(t), 0.0, 0.0) for t in tables)))
        planner = ArenaPlanner(ArenaInfo(ArenaSpec("3p", Rules.make(3), seed=trial),
                                         ArenaStatus.RUNNING, 0.0, None))
        st: dict[str, Any] = {"next_board": 5, "games": 0, "tables": 0,
                              "bots": {b: {"live": [], "games": 0, "free": None,
                                           "recent": [], "seats": []} for b in bots}}
        games = planner._seat(st, boards, 0.0, groups)
        assert sorted(g.bot_ids for g in games) == sorted(
            t.seats for bd in boards for t in bd.tables)  # every table seated once
        by_unit: dict[str, list[Game]] = defaultdict(list)
        for g in games:
            by_unit[g.unit].append(g)
        for gs in by_unit.values():
            assert not apart.conflicts([g.bot_ids for g in gs], groups)
        assert len({g.match_id for g in games}) == len(games)
        assert st["next_board"] == 5 + len(by_unit)
        split += int(st.get("apart", 0))
    assert split


# --- the arena's tables: no two bots of one group at one table -------------------------


def _planted(rng: random.Random, k: int, t: int) -> tuple[list[str], dict[str, frozenset[str]]]:
    """t * k bots and their groups, made so that a seating with no two bots of one group at
    one table exists (groups drawn across the tables of a planted seating): authors'
    groups disjoint, declared ones overlapping them, some as large as the tables allow."""
    ids = [f"b{i:02d}" for i in range(t * k)]
    order = ids[:]
    rng.shuffle(order)
    table_of = {b: i // k for i, b in enumerate(order)}
    by_table = [order[i * k:(i + 1) * k] for i in range(t)]
    member: dict[str, set[str]] = {b: set() for b in ids}
    owned: set[str] = set()
    for kind, count in (("author:a", rng.randint(1, 4)), ("stack:lab", rng.randint(0, 3))):
        for g in range(count):
            size = rng.randint(2, t)
            picked = []
            for tb in rng.sample(range(t), size):
                free = [b for b in by_table[tb] if kind == "stack:lab" or b not in owned]
                if free:
                    picked.append(rng.choice(free))
            if len(picked) < 2:
                continue
            for b in picked:
                member[b].add(f"{kind}{g}")
                if kind == "author:a":
                    owned.add(b)
    assert all(table_of[x] != table_of[y] for x, y in itertools.combinations(ids, 2)
               if member[x] & member[y])
    return ids, {b: frozenset(gs) for b, gs in member.items()}


def _kin_pairs(seats: tuple[str, ...], groups: dict[str, frozenset[str]]) -> int:
    return sum(bool(groups[a] & groups[b]) for a, b in itertools.combinations(seats, 2))


def _arena_request(pool: str, ids: list[str], groups: dict[str, frozenset[str]],
                   rng: random.Random, seed: int, objective: str = "") -> Any:
    from tournaments import arena

    k = arena.POOLS[pool]
    bots = []
    for b in ids:
        mates = rng.sample([x for x in ids if x != b], min(len(ids) - 1, 2 * (k - 1)))
        bots.append(arena.Candidate(
            b, rating=rng.gauss(0, 300), sd=rng.uniform(40, 400), games=rng.randrange(50),
            free_since=float(rng.randrange(5)), recent=tuple(mates),
            seats=tuple(rng.randrange(9) for _ in range(k)), groups=groups[b]))
    return arena.Request(pool, "arena-x", 1, 10.0, len(ids), tuple(bots), seed=seed,
                         settings=arena.Settings(batch=0.0, objective=objective))


@pytest.mark.parametrize("pool", ["3p", "2v2"])
def test_the_arena_never_seats_two_bots_of_one_group_at_one_table_where_it_can(
        pool: str) -> None:
    """Over many random fields that can be seated so (a planted seating proves it), with
    recent table-mates everywhere (a cost below a group's) and every objective: no table
    seats two bots of one author or declared group, partners or opponents."""
    from tournaments import arena

    rng = random.Random(f"kin-{pool}")
    k = arena.POOLS[pool]
    pairs_in_fields = 0
    for trial in range(120):
        t = rng.randint(2, 14)
        ids, groups = _planted(rng, k, t)
        pairs_in_fields += _kin_pairs(tuple(ids), groups) > 0
        objective = rng.choice(["", "variance", "information", "similar", "random"])
        step = arena.step(_arena_request(pool, ids, groups, rng, trial, objective))
        tables = [tb for b in step.boards for tb in b.tables]
        assert len(tables) == t and not step.waiting
        for tb in tables:
            assert _kin_pairs(tb.seats, groups) == 0, (trial, tb.seats)
            assert tb.kin == ()
    assert pairs_in_fields > 100  # the fields had groups to keep apart


def test_one_group_is_kept_apart_before_recent_table_mates() -> None:
    """a0 and a1 (one author) with six others, each of whom sat with a0 and a1 lately: the
    step repeats table-mates rather than seat a0 with a1."""
    from tournaments import arena

    ids = ["a0", "a1", *(f"o{i}" for i in range(4))]
    others = tuple(ids[2:])
    bots = tuple(arena.Candidate(b, groups=frozenset({"author:x"}) if b[0] == "a" else
                                 frozenset(), recent=others if b[0] == "a" else ("a0", "a1"))
                 for b in ids)
    for seed in range(20):
        step = arena.step(arena.Request("3p", "arena-x", 1, 0.0, 6, bots, seed=seed,
                                        settings=arena.Settings(batch=0.0, avoid=3)))
        for tb in step.boards[0].tables:
            assert {"a0", "a1"} - set(tb.seats), tb.seats
    plain = tuple(replace(c, groups=frozenset()) for c in bots)
    together = [arena.step(arena.Request("3p", "arena-x", 1, 0.0, 6, plain, seed=s,
                                         settings=arena.Settings(batch=0.0, avoid=3)))
                for s in range(20)]
    # Without the group, the repeats decide: a0 and a1 sit together every time.
    assert all(any({"a0", "a1"} <= set(tb.seats) for tb in s.boards[0].tables)
               for s in together)


@pytest.mark.parametrize("pool", ["3p", "2v2"])
def test_where_one_group_outnumbers_the_tables_the_arena_deals_fewest_pairs_and_says_so(
        pool: str) -> None:
    """A group of more bots than tables (one author's bots alone at worst) must share
    tables: the step still deals (module doc: why), with the fewest pairs of it at a table
    that the numbers allow, and names the group on each such table."""
    from tournaments import arena

    k = arena.POOLS[pool]
    rng = random.Random(f"over-{pool}")
    for trial in range(60):
        t = rng.randint(2, 6)
        ids = [f"b{i:02d}" for i in range(t * k)]
        size = rng.randint(t + 1, t * k)
        big = set(rng.sample(ids, size))
        groups = {b: frozenset({"author:big"}) if b in big else frozenset() for b in ids}
        step = arena.step(_arena_request(pool, ids, groups, rng, trial))
        tables = [tb for b in step.boards for tb in b.tables]
        assert len(tables) == t
        # The fewest pairs: the group's bots spread as evenly as the tables allow.
        low, extra = divmod(size, t)
        fewest = extra * (low + 1) * low // 2 + (t - extra) * low * (low - 1) // 2
        assert sum(_kin_pairs(tb.seats, groups) for tb in tables) == fewest, trial
        for tb in tables:
            assert tb.kin == (("author:big",) if _kin_pairs(tb.seats, groups) else ())
