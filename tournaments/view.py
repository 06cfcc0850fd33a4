"""Everything a standings screen shows, as a pure function of the spec, the results and
the plan (read back from the scheduler's state, or folded from the results).

`standings(spec, inputs)` is the whole view of a stored tournament: the store reads
the inputs for one audience (`store.tournaments.standings_inputs`), this makes the
view, the referee encodes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from store.records import StandingsInputs, TournamentSpec
from tournaments import bracket as brk
from tournaments import formats
from tournaments.plan import Plan, redeal_notes
from tournaments.ranking import PlayRound, Ranking
from tournaments.standings import STATS, Tally, crosstable_of, standings_of, totals

__all__ = ["StandingsView", "build_view", "standings", "standings_rows"]


def standings_rows(spec: TournamentSpec, total: Tally) -> list[dict[str, Any]]:
    """Standings as plain rows (every bot of the tournament, played or not)."""
    table = standings_of(total)
    rows = {s.bot_id: s for s in table}
    names = dict(zip(spec.bot_ids, spec.names, strict=True))
    order = [s.bot_id for s in table]
    order += [b for b in spec.bot_ids if b not in rows]
    out = []
    for rank, bot in enumerate(order, 1):
        s = rows.get(bot)
        out.append({
            "rank": rank, "bot_id": bot, "name": names.get(bot, bot),
            "games": s.games if s else 0, "wins": s.wins if s else 0,
            "draws": s.draws if s else 0, "losses": s.losses if s else 0,
            "points": s.score if s else 0.0, "score": s.points if s else 0,
            "forfeits": total.bots[bot][STATS.index("forfeits")] if s else 0,
            "forfeit_wins": s.forfeit_wins if s else 0,
        })
    return out


@dataclass
class StandingsView:
    """Rows, crosstable, bracket state and progress of one tournament."""

    tournament_id: str
    sequence: int
    done: int
    total: int
    rows: list[dict[str, Any]]
    crosstable: dict[str, dict[str, list[int]]]  # bot -> opponent -> [games, W, D, L]
    bracket: brk.BracketState | None = None
    bracket_games: dict[str, list[str]] = field(default_factory=dict)
    slot_scores: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # The boards in play: unit, games, finished, running.
    boards: list[tuple[str, int, int, int]] = field(default_factory=list)
    ranking: Ranking | None = None  # the format's own ranking, if it has one
    rounds: list[PlayRound] = field(default_factory=list)  # the rounds paired so far


def build_view(spec: TournamentSpec, results: Mapping[str, Mapping[str, Any]], p: Plan,
               sequence: int, ratings: Mapping[str, float] | None = None,
               own_ratings: Mapping[str, float] | None = None) -> StandingsView:
    """The view, as a pure function of the spec, the results, the plan, the bots' pool
    ratings (0, the pool mean, for a bot without one) and the ratings over this
    tournament's own games (left out when there are none)."""
    total = totals(results.values())
    rows = standings_rows(spec, total)
    alive: set[str] = set()
    if p.bracket is not None:
        for ms in p.bracket.matches:
            if ms.status in (brk.Status.PENDING, brk.Status.READY):
                alive.update(x for x in ms.slots if x)
        if p.bracket.champion:
            alive.add(p.bracket.champion)
    for row in rows:
        rating = (ratings or {}).get(row["bot_id"])
        row["rating"] = round(rating, 1) if rating is not None else 0.0
        own = (own_ratings or {}).get(row["bot_id"])
        if own is not None:
            row["tournament_rating"] = round(own, 1)
        row["eliminated"] = p.bracket is not None and row["games"] > 0 \
            and row["bot_id"] not in alive
    if p.bracket is not None:
        # A bracket ranks by how far each bot got; results order bots out at the same stage.
        reach = _reach(p.bracket, alive)
        rows.sort(key=lambda row: reach.get(row["bot_id"], (0, 0, 0)), reverse=True)
        for rank, row in enumerate(rows, 1):
            row["rank"] = rank
    cross: dict[str, dict[str, list[int]]] = {b: {} for b in spec.bot_ids}
    for (a, b), h in crosstable_of(total).items():
        draws = h.games - h.a_ahead - h.b_ahead
        cross.setdefault(a, {})[b] = [h.games, h.a_ahead, draws, h.b_ahead]
        cross.setdefault(b, {})[a] = [h.games, h.b_ahead, draws, h.a_ahead]
    view = StandingsView(spec.tournament_id, sequence, len(results), p.total, rows, cross,
                         p.bracket, dict(p.bracket_games), notes=formats.notes(spec))
    if p.state is not None:
        fmt = formats.get(spec.format)
        view.ranking = fmt.ranking(spec, p.state, results, {
            b: float(v) for b, v in (ratings or {}).items()})
        view.rounds = fmt.rounds(spec, p.state, results)
    if view.ranking is not None:
        # The format's ranking orders the rows (a team's bots together, in its order).
        place = {b: (row.rank, i) for row in view.ranking.rows
                 for i, b in enumerate(row.bot_ids)}
        rows.sort(key=lambda row: place.get(row["bot_id"], (len(rows) + 1, 0)))
        for row in rows:
            row["rank"] = place.get(row["bot_id"], (len(rows), 0))[0]
    if p.bracket is not None:
        for mid, game_ids in view.bracket_games.items():
            series = p.series.get(mid)
            ms = p.bracket.match(mid)
            for i, bot in enumerate(ms.participants):
                score = 0
                game_wins = 0
                for gid in game_ids:
                    res = results.get(gid)
                    if res is None:
                        continue
                    side = res["bot_ids"].index(bot)
                    side = side % 2 if res["players"] == 4 else side
                    score += res["final"][side]
                    game_wins += res["winner"] == side
                wins = series.wins[i] if series is not None and i < 2 else game_wins
                view.slot_scores[(mid, bot)] = (wins, score)
    return view


def standings(spec: TournamentSpec, inputs: StandingsInputs) -> StandingsView:
    """The view of a stored tournament: the plan read back from the scheduler's state
    (folded from the results before its first step), over the results an audience may
    see, with the boards in play."""
    if inputs.state is None:  # before the first scheduling step: nothing planned yet
        p = formats.plan(spec, {})
    else:
        p = formats.get(spec.format).bracket(spec, inputs.state["plan"])
        p.total = int(inputs.state["total"])
        p.state = inputs.state["plan"]
    view = build_view(spec, inputs.results, p, inputs.sequence, inputs.ratings,
                      inputs.own_ratings)
    view.boards = list(inputs.boards)
    view.notes += formats.apart_notes(spec, p.state) + redeal_notes(inputs.redealt)
    return view


_SECTION_ORDER = {"W": 0, "T": 0, "L": 1, "GF": 2}


def _reach(state: brk.BracketState, alive: set[str]) -> dict[str, tuple[int, int, int]]:
    """How far each bot got, comparable: (still in or champion, section, round of its exit).

    Matches are in play order, so a bot's last decided match is the one that put it out.
    """
    reach: dict[str, tuple[int, int, int]] = {}
    for ms in state.matches:
        if ms.status is not brk.Status.DONE:
            continue
        stage = (_SECTION_ORDER.get(ms.match.section, 0), ms.match.round)
        for bot in ms.participants:
            reach[bot] = (0, *stage)
    for bot in alive:
        reach[bot] = (2 if bot == state.champion else 1, 0, 0)
    return reach
