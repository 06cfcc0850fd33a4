"""Duplicate boards: no bot is ever dealt a board it has played before, in any format
and at any field size, and what the public may see of a match is decided in one place."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from typing import Any

import pytest

from moon import Rules
from moon.actions import ACTIONS, ActionKind
from store.match_events import (
    ActionTaken,
    Audience,
    Fault,
    HandEnded,
    MatchFinished,
    Sight,
    Started,
    WatchEvent,
    for_audience,
    sight,
)
from store.records import TournamentSpec
from tournaments.formats import notes, plan
from tournaments.plan import Game

DISCARD = next(a.id for a in ACTIONS.values() if a.kind is ActionKind.DISCARD)
PLAY = next(a.id for a in ACTIONS.values() if a.kind is ActionKind.PLAY)


def _spec(players: int, fmt: str, n: int, duplicate: str = "boards", **kw: Any
          ) -> TournamentSpec:
    bots = tuple(f"b{i}" for i in range(n))
    return TournamentSpec(tournament_id="t-fair", name="fair", players=players, format=fmt,
                          bot_ids=bots, names=bots, rules=Rules.make(players), seed=7,
                          duplicate=duplicate, options=kw)


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


def _all_games(spec: TournamentSpec) -> list[Game]:
    rng = random.Random(1)
    results: dict[str, dict[str, Any]] = {}
    while not (p := plan(spec, results)).finished:
        for g in p.games:
            if g.match_id not in results:
                results[g.match_id] = _result(g, spec.players, rng)
    return p.games


CASES = [(3, "round_robin", {}), (3, "round_robin", {"rounds": 2}),
         (3, "round_robin", {"all_triples": True}), (4, "round_robin", {}),
         (4, "round_robin", {"rotate_partners": True}), (3, "single_elimination", {}),
         (4, "single_elimination", {"series_length": 3}),
         (4, "double_elimination", {"series_length": 3}),
         (3, "swiss", {}), (4, "swiss", {}), (4, "swiss", {"rotate_partners": True})]


FIELDS = [(p, f, kw, n) for p, f, kw in CASES for n in range(3, 17)
          if n >= (4 if kw.get("rotate_partners") else 3)]  # the fewest each format takes


@pytest.mark.parametrize(("players", "fmt", "kw", "n"), FIELDS,
                         ids=[f"{p}p-{f}-{'-'.join(k) or 'plain'}-{n}" for p, f, k, n in FIELDS])
def test_no_bot_is_ever_dealt_a_board_twice(players: int, fmt: str, kw: dict[str, Any],
                                            n: int) -> None:
    games = _all_games(_spec(players, fmt, n, **kw))
    boards: dict[str, set[int]] = defaultdict(set)
    for g in games:
        for bot in set(g.bot_ids):
            assert g.seed not in boards[bot], f"{bot} is dealt board {g.unit} again"
            boards[bot].add(g.seed)
    by_board: dict[int, list[Game]] = defaultdict(list)
    for g in games:
        by_board[g.seed].append(g)
    for same in by_board.values():
        # The tables of one board are disjoint: no bot sits at two of them.
        seated = [b for g in same for b in set(g.bot_ids)]
        assert len(seated) == len(set(seated))


@pytest.mark.parametrize("n", [6, 7, 9, 12, 16])
def test_a_3p_round_robin_shares_each_board_between_disjoint_tables(n: int) -> None:
    games = _all_games(_spec(3, "round_robin", n))
    by_board: dict[int, list[Game]] = defaultdict(list)
    for g in games:
        by_board[g.seed].append(g)
    assert all(len(tables) >= 2 for tables in by_board.values())
    assert len(by_board) < len(games)
    assert notes(_spec(3, "round_robin", n)) == []


def test_seven_bots_play_seven_rounds_of_two_tables_every_pair_twice() -> None:
    games = _all_games(_spec(3, "round_robin", 7))
    rounds: dict[str, list[Game]] = defaultdict(list)
    for g in games:
        rounds[g.unit].append(g)
    assert len(rounds) == 7 and all(len(r) == 2 for r in rounds.values())
    meets = defaultdict(int)
    for g in games:
        for a, b in itertools.combinations(sorted(g.bot_ids), 2):
            meets[(a, b)] += 1
    assert set(meets.values()) == {2} and len(meets) == 21


def test_2v2_boards_put_the_teams_in_opposite_seats_at_half_the_tables() -> None:
    games = _all_games(_spec(4, "round_robin", 8))
    rounds: dict[str, list[Game]] = defaultdict(list)
    for g in games:
        rounds[g.unit].append(g)
    for same in rounds.values():
        assert len(same) == 4  # 8 bots, one bot a team: 4 disjoint tables a board
    # Every bot holds each side of the board (seats 0/2 and 1/3) about equally often.
    sides: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for g in games:
        sides[g.bot_ids[0]][0] += 1
        sides[g.bot_ids[1]][1] += 1
    assert all(abs(a - b) <= 2 for a, b in sides.values()), dict(sides)


def test_too_few_bots_still_make_a_tournament_and_say_so() -> None:
    for players, n, least in ((3, 5, 6), (4, 3, 4)):
        spec = _spec(players, "round_robin", n)
        games = _all_games(spec)
        assert len({g.seed for g in games}) == len(games)  # a fresh board per table
        assert any(f"at least {least} bots" in x for x in notes(spec))


def test_replay_is_the_old_scheme_and_says_it_trusts_the_bots() -> None:
    spec = _spec(3, "round_robin", 7, duplicate="replay")
    games = _all_games(spec)
    assert len(games) == 7 * 6  # every seating of every table
    assert any("trusts them" in x for x in notes(spec))
    bot0 = [g.seed for g in games if "b0" in g.bot_ids]
    assert len(bot0) > len(set(bot0))  # the same bots replay a deal: what replay means


# ----------------------------------------------------------- audiences

EVENTS: list[WatchEvent] = [
    Started(1.0),
    ActionTaken(1.0, 0, 1, ActionKind.DISCARD, DISCARD, 9),
    ActionTaken(1.0, 1, 1, ActionKind.PLAY, PLAY, 10),
    Fault(1.0, 0, "late", DISCARD, 1, "no answer"),
    Fault(1.0, 0, "illegal", PLAY, 2, "bad"),
    Fault(1.0, 2, "disconnected", None, 0, "away"),
    Fault(1.0, 2, "reconnected", None, 0, "back"),
    HandEnded(1.0, 1, 0, 5, "6", True, [5, 1, 1], [5, 1, 1], [5, 1, 1]),
    MatchFinished(1.0, "finished", {"final": [21, 3, 2]}, ""),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: f"{type(e).__name__}")
@pytest.mark.parametrize("audience", list(Audience))
def test_every_event_kind_against_every_audience(event: WatchEvent, audience: Audience) -> None:
    seen = for_audience(event, audience)
    if audience is Audience.ORGANISER:
        assert seen == event
        return
    hidden_tile = (isinstance(event, ActionTaken) and event.action == DISCARD) or (
        isinstance(event, Fault) and event.replacement == DISCARD)
    if hidden_tile:  # a discard, played by the bot or for it, shows as its kind only
        assert seen != event
        assert getattr(seen, "action", None) is None
        assert getattr(seen, "replacement", None) is None
    else:
        assert seen == event


def test_sight_of_a_match_by_audience_and_board() -> None:
    org, pub = Audience.ORGANISER, Audience.PUBLIC
    for over in (False, True):
        for released in (False, True):
            assert sight(org, tournament_game=True, over=over, released=released) is Sight.ALL
    # A tournament game's board still in play: the public learns that it exists, no more.
    assert sight(pub, tournament_game=True, over=False, released=False) is Sight.STATUS
    assert sight(pub, tournament_game=True, over=True, released=False) is Sight.STATUS
    assert sight(pub, tournament_game=True, over=True, released=True) is Sight.ALL
    # A single match shares no board: watchable live, everything once over.
    assert sight(pub, tournament_game=False, over=False, released=False) is Sight.LIVE
    assert sight(pub, tournament_game=False, over=True, released=True) is Sight.ALL
