"""Text renderings for the terminal: standings, brackets, ratings."""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Sequence

from clients.format_options import format_title
from proto.moon.v1 import rating_pb2, tournament_pb2
from store.rating_tables import OFFICIAL

__all__ = ["MAX_INTERVAL_ELO", "NOT_ENOUGH", "UNRATED", "bracket_text", "crosstable_text", "elo",
           "interval_text", "methods_table", "plural", "pool_rating", "ranking_text",
           "ratings_table", "rounds_text", "side_names", "standings_table", "tournament_list"]


def side_names(players: int, seats: Sequence[str]) -> list[str]:
    """The scoring sides' names: the seats (3 players), or each team's two seats (`a & b`,
    one name when a bot holds both seats of its team)."""
    names = list(seats)
    if players == 4 and len(names) == 4:
        return [a if a == b else f"{a} & {b}" for a, b in ((names[0], names[2]),
                                                          (names[1], names[3]))]
    return names


def plural(n: int, word: str, words: str = "") -> str:
    """`1 game`, `2 games` (`words`: the plural when it is not word + s)."""
    return f"{n} {word if n == 1 else words or word + 's'}"


def elo(value: float) -> str:
    """A rating as a whole number of Elo points (`round` gives an int: never `-0`, which
    formatting -0.4 with `.0f` prints)."""
    return str(round(value))


# An interval wider than this says nothing yet (±400 Elo: from 10-to-1 odds against to
# 10-to-1 for, against the pool mean): shown as NOT_ENOUGH instead, by every client.
MAX_INTERVAL_ELO = 800.0
NOT_ENOUGH = "not enough games yet"


def interval_text(low: float | None, high: float | None, width: int = 0) -> str:
    """A rating's interval as shown: `[-12, 140]` (each bound right-aligned to `width`),
    NOT_ENOUGH when it is wider than MAX_INTERVAL_ELO (the first fits of a bot, over a
    game or two: `[-3006, 2388]`), "" when there is none."""
    if low is None or high is None:
        return ""
    if high - low > MAX_INTERVAL_ELO:
        return NOT_ENOUGH
    return f"[{elo(low):>{width}}, {elo(high):>{width}}]"


def _width(names: Iterable[str], least: int = 22) -> int:
    """A name column wide enough for every name, and a gap."""
    return max([least, *(len(n) + 2 for n in names)])


UNRATED = "unrated"  # a bot with no rating in the pool yet: not a rating of 0


def pool_rating(rating: float, bot_ids: Sequence[str], rated: Collection[str] | None) -> str:
    """A pool rating as shown: whole Elo, or `unrated` for an entrant none of whose bots
    has a rating yet (`rated`: the bots the pool rates; None: not known, the number)."""
    if rated is not None and not any(b in rated for b in bot_ids):
        return UNRATED
    return elo(rating)


def standings_table(st: tournament_pb2.Standings, title: str = "", pool: str = "",
                    rated: Collection[str] | None = None) -> str:
    """The standings as an aligned table, with a line saying which rating is which (and a
    column of wins by forfeit shared, when there are any: never counted as draws); a bot
    not in `rated` (the pool's rated bots, when known) shows `unrated`."""
    lines = [title] if title else []
    w = _width(row.name + " (out)" for row in st.rows)
    own = any(row.HasField("tournament_rating") for row in st.rows)
    fw = any(row.forfeit_wins for row in st.rows)
    pw = 8 if rated is not None and any(row.bot_id not in rated for row in st.rows) else 7
    lines.append(f"{'#':>3}  {'bot':<{w}}{'games':>6}{'W':>5}{'FW' if fw else '':>4}{'D':>4}"
                 f"{'L':>5}{'pts':>7}{'score':>8}{'pool':>{pw}}{'event' if own else '':>7}"
                 f"{'ff':>4}")
    for row in st.rows:
        out = " (out)" if row.eliminated else ""
        event = elo(row.tournament_rating) if row.HasField("tournament_rating") else ""
        lines.append(f"{row.rank:>3}  {row.name + out:<{w}}{row.games:>6}{row.wins:>5}"
                     f"{row.forfeit_wins if fw else '':>4}"
                     f"{row.draws:>4}{row.losses:>5}{row.points:>7.1f}{row.score:>8}"
                     f"{pool_rating(row.rating, [row.bot_id], rated):>{pw}}{event:>7}"
                     f"{row.forfeits:>4}")
    where = f"the {pool} pool" if pool else "its pool"
    legend = f"pool: each bot's rating in {where} now"
    if own:
        legend += "; event: its rating over this tournament's games alone (final once it ends)"
    if fw:
        legend += ("; FW: won by forfeit, level with another (a bot forfeited and two shared "
                   "first place)")
    lines.append(f"({legend}; D: a draw, first place shared with nobody forfeiting; "
                 f"pts: 1 a win, 1/2 a D{' or an FW' if fw else ''}; ff: games lost by "
                 "forfeit)")
    return "\n".join(lines)


def crosstable_text(st: tournament_pb2.Standings) -> str:
    """Head to head: row bot's games ahead-behind of each column bot (columns by rank)."""
    if not st.crosstable:
        return ""
    order = [row.bot_id for row in st.rows]
    names = {row.bot_id: row.name for row in st.rows}
    w = _width(names.values())
    cells: dict[tuple[str, str], str] = {}
    for row in st.crosstable:
        for c in row.cells:
            cells[(row.bot_id, c.opponent_bot_id)] = f"{c.wins}-{c.losses}"
    cw = max([5, *(len(v) + 1 for v in cells.values())])
    lines = ["head to head (row bot ahead-behind of column bot, over the games they met)"]
    header = "".join(f"{i:>{cw}}" for i in range(1, len(order) + 1))
    lines.append(f"{'#':>3}  {'bot':<{w}}{header}")
    for i, a in enumerate(order, 1):
        row_cells = "".join(f"{'x' if a == b else cells.get((a, b), '.'):>{cw}}" for b in order)
        lines.append(f"{i:>3}  {names[a]:<{w}}{row_cells}")
    return "\n".join(lines)


def _num(x: float) -> str:
    """A score as short as it is exact: 2, 1.5, 0.75, -0.25."""
    return f"{x:g}"


def _measure(key: str, x: float, bot_ids: Sequence[str] = (),
             rated: Collection[str] | None = None) -> str:
    """A ranking value: exact when it is a multiple of a quarter (points: 3.25), a rating
    whole (`unrated` for an entrant with no rated bot), anything else (a mean) to two
    decimals, so that a column reads evenly."""
    if key == "rating":
        return pool_rating(x, bot_ids, rated)
    if abs(x * 4 - round(x * 4)) < 1e-9:
        return _num(x)
    return f"{x:.2f}"


def _entrant(names: dict[str, str], bot_ids: Sequence[str]) -> str:
    return " & ".join(names.get(b, b) for b in bot_ids)


def ranking_text(st: tournament_pb2.Standings, title: str = "",
                 rated: Collection[str] | None = None) -> str:
    """A format's own ranking (a Swiss's), with every measure explained and each
    entrant's rounds (`t2 1`: table 2, 1 point; `?` while the result is not public); an
    entrant with no bot in `rated` (when known) has the pool rating `unrated`."""
    if not st.HasField("ranking"):
        return ""
    names = {row.bot_id: row.name for row in st.rows}
    rk = st.ranking
    lines = [title] if title else []
    w = _width(_entrant(names, row.bot_ids) for row in rk.rows)
    heads = [c.title.lower() for c in rk.columns]
    cw = [max(8, len(h) + 2) for h in heads]
    rounds = max((len(row.rounds) for row in rk.rows), default=0)
    lines.append(f"{'#':>3}  {'entrant':<{w}}" + "".join(f"{h:>{c}}" for h, c in zip(
        heads, cw, strict=True)) + f"{'games':>7}{'byes':>6}  "
        + "  ".join(f"{'R' + str(r + 1):<7}" for r in range(rounds)).rstrip())
    for row in rk.rows:
        cells = "".join(f"{_measure(col.key, v, row.bot_ids, rated):>{c}}"
                        for v, col, c in zip(row.values, rk.columns, cw, strict=False))
        played = "  ".join(f"{_round_cell(e):<7}" for e in row.rounds)
        lines.append(f"{row.rank:>3}  {_entrant(names, row.bot_ids):<{w}}{cells}"
                     f"{row.games:>7}{row.byes:>6}  {played}".rstrip())
    lines.append("(ranked by " + ", then ".join(c.title.lower() for c in rk.columns) + ")")
    lines.extend(f"  {c.title.lower()}: {c.explanation}" for c in rk.columns)
    return "\n".join(lines)


def _round_cell(e: tournament_pb2.EntrantRound) -> str:
    """`t2 1` (table 2, 1 point), `bye 0.5`, `t1 ?` (not public yet)."""
    where = "bye" if e.table == 0 else f"t{e.table}"
    return f"{where} {_num(e.points) if e.HasField('points') else '?'}"


def rounds_text(st: tournament_pb2.Standings, players: int) -> str:
    """Each round's tables (seats in order) and byes, with the sides' points once public."""
    if not st.rounds:
        return ""
    names = {row.bot_id: row.name for row in st.rows}
    lines = []
    for rnd in st.rounds:
        lines.append(f"round {rnd.number} (board {rnd.board}):")
        for t, table in enumerate(rnd.tables, 1):
            sides = side_names(players, [names.get(b, b) for b in table.bot_ids])
            points = (" -> " + ", ".join(_num(p) for p in table.points)) if table.points \
                else ""
            lines.append(f"  table {t}: {' vs '.join(sides) if players == 4 else ', '.join(sides)}"
                         f"{points}")
        if rnd.bye_bot_ids:
            lines.append(f"  bye: {', '.join(names.get(b, b) for b in rnd.bye_bot_ids)}")
    return "\n".join(lines)


def bracket_text(st: tournament_pb2.Standings) -> str:
    """The bracket, round by round, with series scores and winners."""
    if not st.HasField("bracket") or not st.bracket.rounds:
        return ""
    names = {row.bot_id: row.name for row in st.rows}
    state_names = {
        tournament_pb2.BracketMatch.STATE_WAITING: "waiting",
        tournament_pb2.BracketMatch.STATE_PLAYING: "playing",
        tournament_pb2.BracketMatch.STATE_DECIDED: "decided",
        tournament_pb2.BracketMatch.STATE_BYE: "bye",
    }
    lines = []
    for rnd in st.bracket.rounds:
        lines.append(f"{rnd.name}:")
        for m in rnd.matches:
            slots = []
            for slot in m.slots:
                if slot.bot_id:
                    who = names.get(slot.bot_id, slot.bot_id)
                elif m.state == tournament_pb2.BracketMatch.STATE_BYE:
                    who = "(bye)"  # nobody will fill this slot
                else:
                    who = f"({slot.source})"  # filled later, e.g. "winner of W1-2"
                if slot.bot_id and m.state != tournament_pb2.BracketMatch.STATE_BYE:
                    who += f" [{slot.wins}]"
                slots.append(who)
            winner = names.get(m.winner_bot_id, m.winner_bot_id)
            result = f" -> {winner}" if winner else ""
            lines.append(f"  {m.bracket_match_id:<6} {' vs '.join(slots):<52} "
                         f"{state_names.get(m.state, '')}{result}")
    if st.bracket.champion_bot_id:
        champion = names.get(st.bracket.champion_bot_id, st.bracket.champion_bot_id)
        lines.append(f"champion: {champion}")
    return "\n".join(lines)


def ratings_table(resp: rating_pb2.GetRatingsResponse, title: str = "") -> str:
    """Ratings, best first: rating, interval, games, and LOS over the next bot."""
    lines = [title] if title else []
    w = _width(row.name for row in resp.ratings)
    level = f"{resp.level:.0%}" if resp.level else "95%"
    intervals = [interval_text(row.ci_low if row.HasField("ci_low") else None,
                               row.ci_high if row.HasField("ci_high") else None, 6)
                 for row in resp.ratings]
    iw = max([17, *(len(x) for x in intervals)])
    lines.append(f"{'#':>3}  {'bot':<{w}}{'rating':>8}  {level + ' interval':>{iw}}"
                 f"{'games':>7}{'LOS>next':>10}")
    for i, (row, interval) in enumerate(zip(resp.ratings, intervals, strict=True), 1):
        los = f"{row.los_next:.1%}" if row.HasField("los_next") else ""
        lines.append(f"{i:>3}  {row.name:<{w}}{elo(row.rating):>8}  {interval:>{iw}}"
                     f"{row.games:>7}{los:>10}")
    when = ""
    if resp.HasField("as_of"):
        when = time.strftime(" at %Y-%m-%d %H:%M:%S UTC", time.gmtime(resp.as_of.seconds))
    covered = (f"{resp.fitted_games} of {plural(resp.games, 'game')}"
               if resp.fitted_games != resp.games else plural(resp.games, "game"))
    lines.append(f"({resp.method}; {covered}, {plural(resp.boards, 'board')}{when}"
                 f"{'; provisional until the next fit' if resp.provisional else ''})")
    if resp.ratings:
        lines.append("(Elo, pool mean 0; LOS>next: the chance that the bot is stronger "
                     "than the one just below it)")
    if NOT_ENOUGH in intervals:
        lines.append(f"({NOT_ENOUGH}: an interval wider than {MAX_INTERVAL_ELO:g} Elo, "
                     "which says nothing yet)")
    return "\n".join(lines)


def methods_table(resp: rating_pb2.GetRatingsResponse, title: str = "") -> str:
    """The rating methods of a pool (from a GetRatings response): name, what it is, and
    what its latest table covers; the one served by default marked."""
    lines = [title] if title else []
    w = _width(m.name for m in resp.methods)
    t = _width(m.title for m in resp.methods)
    for m in resp.methods:
        when = (time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(m.as_of.seconds))
                if m.HasField("as_of") else "no table yet")
        games = plural(m.fitted_games, "game") if m.HasField("as_of") else ""
        mark = "  (default)" if m.name == OFFICIAL else ""
        lines.append(f"  {m.name:<{w}}  {m.title:<{t}}  {games:>11}  {when}{mark}")
    lines.append("(moonshot ratings --method NAME shows one; the default is the official "
                 "rating, or the provisional figure while a fit runs)")
    return "\n".join(lines)


_STATUS = {tournament_pb2.TOURNAMENT_STATUS_RUNNING: "running",
           tournament_pb2.TOURNAMENT_STATUS_FINISHED: "finished",
           tournament_pb2.TOURNAMENT_STATUS_FAILED: "failed"}


def tournament_list(ts: Iterable[tournament_pb2.Tournament]) -> str:
    """Tournaments as a table: id, status, games played, format, bots, when, name."""
    lines = [f"{'id':<14}{'status':<10}{'games':>11}  {'format':<17}{'bots':>5}  "
             f"{'created (UTC)':<17}  name"]
    for t in ts:
        total = max(t.matches_total, t.matches_done)
        title = format_title(t.spec, "?").replace("elimination", "elim.")
        kind = f"{'3p' if t.spec.players == 3 else '2v2'} {title}"
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(t.created_at.seconds))
        lines.append(f"{t.tournament_id:<14}{_STATUS.get(t.status, '?'):<10}"
                     f"{f'{t.matches_done}/{total}':>11}  {kind:<17}{len(t.spec.bot_ids):>5}  "
                     f"{when:<17}  {t.spec.name}")
    return "\n".join(lines)
