"""What the pages show, as plain data: protobuf messages in, dicts and lists out.

Pure functions (no I/O), so the templates stay simple and the same view serves the
first render of a page and each live update of it.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import urllib.parse
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import markupsafe
from google.protobuf.timestamp_pb2 import Timestamp

from clients import format_options
from clients.render import MAX_INTERVAL_ELO, elo, plural, pool_rating, side_names
from moon import Rules
from proto.moon.v1 import game_pb2, match_pb2, rating_pb2, tournament_pb2
from tournaments.plan import board_label

__all__ = [
    "boards_view",
    "bot_game",
    "bracket_view",
    "breakable",
    "crosstable_view",
    "games_by_board",
    "json_script",
    "live_singles",
    "match_row",
    "progress_view",
    "ranking_view",
    "ratings_view",
    "rounds_view",
    "standings_view",
    "status_of_match",
    "status_of_tournament",
    "tournament_row",
    "when",
]

Row = dict[str, Any]

_DUPLICATE_NAMES = {
    tournament_pb2.DUPLICATE_MODE_BOARDS: "duplicate boards",
    tournament_pb2.DUPLICATE_MODE_REPLAY: "duplicate replay",
    tournament_pb2.DUPLICATE_MODE_FRESH: "a fresh deal per game",
}
_SIDE_NAMES = {
    tournament_pb2.BRACKET_SIDE_WINNERS: "Winners",
    tournament_pb2.BRACKET_SIDE_LOSERS: "Losers",
    tournament_pb2.BRACKET_SIDE_GRAND_FINAL: "Grand final",
}
_T_STATUS: dict[int, str] = {tournament_pb2.TOURNAMENT_STATUS_RUNNING: "running",
                             tournament_pb2.TOURNAMENT_STATUS_FINISHED: "finished",
                             tournament_pb2.TOURNAMENT_STATUS_FAILED: "failed"}
_M_STATUS: dict[int, str] = {match_pb2.MATCH_STATUS_QUEUED: "queued",
                             match_pb2.MATCH_STATUS_RUNNING: "running",
                             match_pb2.MATCH_STATUS_FINISHED: "finished",
                             match_pb2.MATCH_STATUS_FAILED: "failed"}
_BM = tournament_pb2.BracketMatch
_BM_STATES = {_BM.STATE_WAITING: "waiting", _BM.STATE_PLAYING: "playing",
              _BM.STATE_DECIDED: "decided", _BM.STATE_BYE: "bye"}


def when(ts: Timestamp, present: bool = True) -> dict[str, str]:
    """A timestamp for people (`2026-05-01 12:03 UTC`) and machines (ISO 8601); empty
    strings when unset (`present` False)."""
    if not present or (ts.seconds == 0 and ts.nanos == 0):
        return {"text": "", "iso": ""}
    t = dt.datetime.fromtimestamp(ts.seconds, tz=dt.UTC)
    return {"text": t.strftime("%Y-%m-%d %H:%M UTC"), "iso": t.isoformat()}


def json_script(value: object) -> str:
    """JSON that is safe inside `<script type="application/json">` (no `</script>`)."""
    return (json.dumps(value, separators=(",", ":"))
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def status_of_tournament(status: int) -> str:
    """`running`, `finished`, `failed` (or `unknown`)."""
    return _T_STATUS.get(status, "unknown")


def status_of_match(status: int) -> str:
    """`queued`, `running`, `finished`, `failed` (or `unknown`)."""
    return _M_STATUS.get(status, "unknown")


def _percent(done: int, total: int) -> int:
    if total <= 0:
        return 0
    return max(0, min(100, round(100 * done / total)))


def tournament_row(t: tournament_pb2.Tournament) -> Row:
    """One tournament, as the list and the tournament's header show it."""
    spec = t.spec
    status = status_of_tournament(t.status)
    total = t.matches_total
    done = t.matches_done
    if status == "finished":
        total = max(total, done)
    title = format_options.format_title(spec)
    details = [title, "3 players" if spec.players == 3 else "2v2", f"{len(spec.bot_ids)} bots",
               *format_options.summary(spec)]
    details.append(_DUPLICATE_NAMES.get(spec.duplicate, "duplicate boards"))
    clock = ""
    if spec.HasField("clock"):
        clock = (f"{spec.clock.move_time_ms / 1000:g} s a move, "
                 f"{spec.clock.time_bank_ms / 1000:g} s bank")
    return {
        "id": t.tournament_id,
        "name": spec.name or t.tournament_id,
        "status": status,
        "done": done,
        "total": total,
        "percent": _percent(done, total),
        "players": spec.players,
        "format": title,
        "details": details,
        "rules": changed_rules(dict(spec.rules)),
        "sandbox": sandbox_text(spec.sandbox),
        "clock": clock,
        "bots": len(spec.bot_ids),
        "created": when(t.created_at),
        "finished": when(t.finished_at, t.HasField("finished_at")),
        "error": t.error,
        "notes": list(t.notes),
        "seed": spec.seed if spec.HasField("seed") else None,
    }


_BREAK_AFTER = re.compile(r"([:?&=/_.@])(?=.)")


def breakable(name: str) -> markupsafe.Markup:
    """A name, escaped, with a line-break opportunity (`<wbr>`) after each `:?&=/_.@`:
    a narrow column breaks `house:greedy` after its colon, not letter by letter."""
    pieces = _BREAK_AFTER.sub("\\1\0", name).split("\0")  # marked on the raw name
    return markupsafe.Markup("<wbr>").join(markupsafe.escape(p) for p in pieces)


def standings_view(st: tournament_pb2.Standings,
                   rated: Collection[str] | None = None) -> list[Row]:
    """The standings rows, best first; a bot not in `rated` (the pool's rated bots, when
    known) has the pool rating `unrated`, not the 0 it counts as."""
    return [{
        "rank": row.rank,
        "bot_id": row.bot_id,
        "name": row.name or row.bot_id,
        "games": row.games,
        "wins": row.wins,
        "draws": row.draws,
        "losses": row.losses,
        "points": f"{row.points:g}",
        "score": row.score,
        "rating": pool_rating(row.rating, [row.bot_id], rated),
        "tournament_rating": (elo(row.tournament_rating)
                              if row.HasField("tournament_rating") else ""),
        "forfeits": row.forfeits,
        "forfeit_wins": row.forfeit_wins,
        "eliminated": row.eliminated,
    } for row in st.rows]


def _points(x: float) -> str:
    """Game points as people write them: 1½, ¾, 0."""
    sign = "-" if x < 0 else ""
    whole, part = divmod(round(abs(x) * 4), 4)
    frac = {0: "", 1: "\u00bc", 2: "\u00bd", 3: "\u00be"}[part]
    return sign + (f"{whole}{frac}" if whole or not frac else frac)


def _value(key: str, x: float, bot_ids: Sequence[str] = (),
           rated: Collection[str] | None = None) -> str:
    """A ranking value for the page: points in quarters, a rating whole (`unrated` for an
    entrant with no rated bot), others short."""
    if key == "rating":
        return pool_rating(x, bot_ids, rated)
    if abs(x * 4 - round(x * 4)) < 1e-9:
        return _points(x)
    return f"{x:.2f}".rstrip("0").rstrip(".")


def ranking_view(st: tournament_pb2.Standings,
                 rated: Collection[str] | None = None) -> Row | None:
    """A format's own ranking (a Swiss's): its measures with their explanations, and each
    entrant's values and rounds; None when the format has none. `rated`: as for
    `standings_view`."""
    if not st.HasField("ranking"):
        return None
    names = names_of(st)
    rk = st.ranking
    columns = [{"key": c.key, "title": c.title, "short": c.short_title or c.title,
                "explanation": c.explanation} for c in rk.columns]
    count = max((len(row.rounds) for row in rk.rows), default=0)
    rows = []
    for row in rk.rows:
        rounds = []
        for n, e in enumerate(row.rounds, 1):
            pts = _points(e.points) if e.HasField("points") else ""
            where = "bye" if e.table == 0 else f"t{e.table}"
            title = (f"round {n}: " + ("sat out (a bye)" if e.table == 0 else f"table {e.table}")
                     + (f", {pts} points" if pts else ", result not public yet"))
            rounds.append({"where": where, "points": pts, "title": title,
                           "bye": e.table == 0})
        rounds += [{"where": "", "points": "", "title": "", "bye": False}] * (count - len(rounds))
        rows.append({
            "rank": row.rank,
            "bots": [{"bot_id": b, "name": names.get(b, b)} for b in row.bot_ids],
            "cells": [{"key": c["key"], "text": _value(c["key"], v, row.bot_ids, rated)}
                       for c, v in zip(columns, row.values, strict=False)],
            "games": row.games,
            "byes": row.byes,
            "rounds": rounds,
        })
    return {"columns": columns, "rows": rows, "round_numbers": list(range(1, count + 1))}


def rounds_view(st: tournament_pb2.Standings, players: int) -> list[Row]:
    """The rounds paired so far, newest first: each table's seats in order and, once its
    board is released, each side's points; and the byes."""
    names = names_of(st)
    in_play = {b.board for b in st.boards_in_play}
    out = []
    for rnd in st.rounds:
        tables = []
        for t, table in enumerate(rnd.tables, 1):
            seats = [names.get(b, b) for b in table.bot_ids]
            sides = side_names(players, seats)
            points = [_points(p) for p in table.points]
            tables.append({
                "number": t,
                "match_id": table.match_id,
                "sides": [{"name": n, "points": points[i] if i < len(points) else ""}
                          for i, n in enumerate(sides)],
                "public": bool(table.points),
            })
        done = all(t["public"] for t in tables)
        out.append({
            "number": rnd.number,
            "board": rnd.board,
            "state": "released" if done else "in play" if rnd.board in in_play else "paired",
            "tables": tables,
            "byes": [names.get(b, b) for b in rnd.bye_bot_ids],
            "team_word": "vs" if players == 4 else "",
        })
    out.reverse()
    return out


def names_of(st: tournament_pb2.Standings) -> dict[str, str]:
    """Bot id -> name, from the standings rows."""
    return {row.bot_id: row.name or row.bot_id for row in st.rows}


def crosstable_view(st: tournament_pb2.Standings) -> Row | None:
    """Head to head, rows and columns in standings order; None without a crosstable."""
    if not st.crosstable:
        return None
    order = [row.bot_id for row in st.rows]
    names = names_of(st)
    cells: dict[tuple[str, str], tournament_pb2.CrosstableCell] = {}
    for xrow in st.crosstable:
        for cell in xrow.cells:
            cells[(xrow.bot_id, cell.opponent_bot_id)] = cell
    rows = []
    for i, a in enumerate(order, 1):
        out = []
        for b in order:
            if a == b:
                out.append({"text": "", "title": "", "cls": "self", "opponent": "", "draws": 0})
                continue
            c = cells.get((a, b))
            if c is None or c.games == 0:
                out.append({"text": "\u00b7", "title": "not met", "cls": "none", "opponent": b,
                            "draws": 0})
                continue
            text = f"{c.wins}\u2013{c.losses}"
            cls = "ahead" if c.wins > c.losses else "behind" if c.wins < c.losses else "even"
            title = (f"{names.get(a, a)} vs {names.get(b, b)}: {plural(c.games, 'game')}, "
                     f"{c.wins} ahead, {c.draws} level, {c.losses} behind")
            out.append({"text": text, "title": title, "cls": cls, "opponent": b,
                        "draws": c.draws})
        rows.append({"index": i, "bot_id": a, "name": names.get(a, a), "cells": out})
    return {"columns": [{"index": i, "name": names.get(b, b)} for i, b in enumerate(order, 1)],
            "rows": rows}


def bracket_view(st: tournament_pb2.Standings) -> Row | None:
    """The bracket by side, rounds as columns; None for a round robin."""
    if not st.HasField("bracket") or not st.bracket.rounds:
        return None
    names = names_of(st)
    sides: list[Row] = []
    by_side: dict[int, Row] = {}
    for rnd in st.bracket.rounds:
        side = by_side.get(rnd.side)
        if side is None:
            side = {"name": _SIDE_NAMES.get(rnd.side, ""), "rounds": []}
            by_side[rnd.side] = side
            sides.append(side)
        matches = []
        for m in rnd.matches:
            state = _BM_STATES.get(m.state, "waiting")
            slots = []
            for slot in m.slots:
                slots.append({
                    "bot_id": slot.bot_id,
                    "name": names.get(slot.bot_id, slot.bot_id) if slot.bot_id else "",
                    "seed": slot.seed,
                    "source": slot.source,
                    "wins": slot.wins,
                    "score": slot.score,
                    "won": bool(m.winner_bot_id) and slot.bot_id == m.winner_bot_id,
                    "bye": False,
                })
            if state == "bye" and len(slots) < 2:
                slots.append({"bot_id": "", "name": "", "seed": 0, "source": "bye",
                              "wins": 0, "score": 0, "won": False, "bye": True})
            matches.append({
                "id": m.bracket_match_id,
                "state": state,
                "winner": m.winner_bot_id,
                "winner_name": names.get(m.winner_bot_id, m.winner_bot_id),
                "winner_to": m.winner_to,
                "loser_to": m.loser_to,
                "games": list(m.match_ids),
                "slots": slots,
            })
        side["rounds"].append({"name": rnd.name, "number": rnd.number, "matches": matches})
    champion = st.bracket.champion_bot_id
    return {"sides": sides, "champion": champion,
            "champion_name": names.get(champion, champion) if champion else ""}


def match_row(m: match_pb2.Match) -> Row:
    """One match in a list: its sides and status, and (once public) the result."""
    status = status_of_match(m.status)
    seats = list(m.seat_names) or list(m.bot_ids)
    names = side_names(m.players, seats)
    sides: list[Row] = [{"name": n, "score": None, "won": False} for n in names]
    end = ""
    winner = ""
    notes: list[str] = []
    has_result = m.HasField("result")
    if has_result:
        res = m.result
        for side, score in zip(sides, res.final_scores, strict=False):
            side["score"] = score
        forfeit = res.forfeit.seat if res.HasField("forfeit") and res.end == "forfeit" else None
        if forfeit is not None and forfeit < len(seats):
            notes.append(f"{seats[forfeit]} forfeited")
        elif res.end == "hand_limit":
            notes.append("hand limit")
        if res.HasField("winner") and 0 <= res.winner < len(sides):
            sides[res.winner]["won"] = True
            winner = names[res.winner]
        else:  # no single winner: a draw, or both others won by a forfeit, level
            level = [names[s % len(names)] for s, p in enumerate(res.placement) if p == 1]
            winner = "won by forfeit, shared" if forfeit is not None else "draw"
            notes.append(f"{' and '.join(dict.fromkeys(level))} won by forfeit, level"
                         if forfeit is not None else "draw")
        end = {"forfeit": "forfeit", "hand_limit": "hand limit"}.get(res.end, "")
    short = m.match_id
    event = m.tournament_id or m.test_id  # what scheduled it: a tournament or a test
    if event and short.startswith(event + "-"):
        short = short[len(event) + 1:]
    return {
        "id": m.match_id,
        "short": short,
        "status": status,
        "players": m.players,
        "seats": seats,
        "bot_ids": list(m.bot_ids),
        "sides": sides,
        "has_result": has_result,
        "winner": winner,
        "end": end,
        "notes": notes,
        "board": m.board,
        "tournament_id": m.tournament_id,
        "tournament_name": m.tournament_id,  # the name, once looked up (Pages.name_tournaments)
        "test_id": m.test_id,
        "arena": m.arena,  # the pool of the arena that dealt it, or ''
        # A tournament's, a test's or an arena's game: hidden until its board is released.
        "boarded": bool(m.tournament_id or m.test_id or m.arena),
        "created": when(m.created_at),
        "finished": when(m.finished_at, m.HasField("finished_at")),
        "finished_at": m.finished_at.seconds + m.finished_at.nanos / 1e9,
        "error": m.error,
    }


_DEFAULTS = Rules.make(3, {}).options()


def sandbox_text(limits: game_pb2.SandboxLimits) -> str:
    """An event's limits on hosted bots' sandboxes, for people ("" when it sets none: the
    hosts' own limits apply)."""
    parts = []
    if limits.HasField("memory_mb"):
        parts.append(f"{limits.memory_mb} MB")
    if limits.HasField("pids"):
        parts.append(plural(limits.pids, "process", "processes"))
    if limits.HasField("cpu_cores"):
        parts.append(f"{limits.cpu_cores:g} {'core' if limits.cpu_cores == 1 else 'cores'}")
    if limits.HasField("cpu_s"):
        parts.append(f"{limits.cpu_s} CPU s")
    if limits.HasField("scratch_mb"):
        parts.append(f"{limits.scratch_mb} MB scratch")
    return ", ".join(parts)


def changed_rules(options: Mapping[str, object]) -> list[tuple[str, str]]:
    """The rules options that differ from the defaults, as text (the rest go unsaid)."""
    out = []
    for key, value in sorted(options.items()):
        default = _DEFAULTS.get(key)
        text = str(value).lower() if isinstance(value, bool) else str(value)
        default_text = (str(default).lower() if isinstance(default, bool) else str(default))
        if default is None or text != default_text:
            out.append((key, text))
    return out


def bot_game(bot_id: str, m: match_pb2.Match) -> Row:
    """One game from one bot's side: its seat(s), and its outcome once public."""
    row = match_row(m)
    seats = [i for i, b in enumerate(m.bot_ids) if b == bot_id]
    side = (seats[0] if m.players == 3 else seats[0] % 2) if seats else -1
    outcome = ""  # win, draw, shared (won by forfeit, level), loss; empty while unknown
    label = ""  # for people: a forfeit is named, never a draw
    score: int | None = None
    place: int | None = None
    if m.HasField("result") and side >= 0:
        res = m.result
        if side < len(res.final_scores):
            score = res.final_scores[side]
        if seats and seats[0] < len(res.placement):
            place = res.placement[seats[0]]
        forfeiter = res.forfeit.seat if res.HasField("forfeit") and res.end == "forfeit" else -1
        outcome = (("win" if res.winner == side else "loss") if res.HasField("winner")
                   else ("shared" if forfeiter >= 0 else "draw") if place == 1 else "loss")
        if forfeiter in seats:
            label = "lost by forfeit"
        elif forfeiter >= 0:  # never a draw: both others won by the forfeit, level
            label = {"win": "won by forfeit", "loss": "lost (another forfeited)",
                     "shared": "won by forfeit, level"}[outcome]
        else:
            label = {"win": "won", "loss": "lost", "draw": "draw"}[outcome]
    opponents = [n for i, n in enumerate(row["seats"])
                 if i not in seats and not (m.players == 4 and seats and i % 2 == seats[0] % 2)]
    partners = [n for i, n in enumerate(row["seats"])
                if m.players == 4 and seats and i not in seats and i % 2 == seats[0] % 2]
    opponents = list(dict.fromkeys(opponents))
    partners = list(dict.fromkeys(partners))
    row.update(seat=",".join(str(s) for s in seats), outcome=outcome, label=label, score=score,
               place=place, opponents=opponents, partners=partners,
               forfeited=label == "lost by forfeit")
    return row


def ratings_view(resp: rating_pb2.GetRatingsResponse) -> Row:
    """The ratings table, best first, and the figures the chart draws."""
    rows = []
    for i, r in enumerate(resp.ratings, 1):
        has_ci = r.HasField("ci_low") and r.HasField("ci_high")
        thin = has_ci and r.ci_high - r.ci_low > MAX_INTERVAL_ELO  # says nothing yet
        rows.append({
            "rank": i,
            "bot_id": r.bot_id,
            "name": r.name or r.bot_id,
            "rating": round(r.rating),
            "low": round(r.ci_low) if has_ci and not thin else None,
            "high": round(r.ci_high) if has_ci and not thin else None,
            "thin": thin,
            "games": r.games,
            "los": f"{r.los_next:.0%}" if r.HasField("los_next") else "",
            "provisional": r.provisional,
        })
    chart = [{"name": r["name"], "rating": r["rating"], "low": r["low"], "high": r["high"],
              "href": f"/bot/{urllib.parse.quote(str(r['bot_id']), safe='')}"} for r in rows]
    covered = (f"{resp.fitted_games} of {plural(resp.games, 'game')}"
               if resp.fitted_games != resp.games else plural(resp.games, "game"))
    methods = [{"name": m.name, "title": m.title, "games": m.fitted_games,
                "fitted": m.HasField("as_of")} for m in resp.methods]
    return {
        "rows": rows,
        "chart": chart,
        "method": resp.method,
        "method_name": resp.method_name,
        "methods": methods,
        "games": resp.games,
        "covered": covered,
        "boards": resp.boards,
        "provisional": resp.provisional,
        "level": f"{resp.level:.0%}" if resp.level else "95%",
        "as_of": when(resp.as_of, resp.HasField("as_of")),
    }


def rating_of(resp: rating_pb2.GetRatingsResponse, bot_id: str) -> Row | None:
    """One bot's row of a pool's ratings, with its rank; None if it is not rated there."""
    view = ratings_view(resp)
    for row in view["rows"]:
        if row["bot_id"] == bot_id:
            return {**row, "of": len(view["rows"]), "method": view["method"]}
    return None


def history_chart(resp: rating_pb2.GetRatingHistoryResponse) -> list[Row]:
    """A bot's rating points for the rating-history chart: games, rating, interval, time.
    An interval wider than MAX_INTERVAL_ELO (a first fit over a game or two) is left out
    and the point marked `thin`: the chart says "not enough games yet" there."""
    out = []
    for p in resp.points:
        has_ci = p.HasField("ci_low") and p.HasField("ci_high")
        thin = has_ci and p.ci_high - p.ci_low > MAX_INTERVAL_ELO
        out.append({"games": p.games, "rating": round(p.rating),
                    "low": round(p.ci_low) if has_ci and not thin else None,
                    "high": round(p.ci_high) if has_ci and not thin else None,
                    "thin": thin, "at": when(p.as_of)})
    return out


def bot_results_chart(games: Sequence[Row]) -> list[Row]:
    """The bot's public results in the order played, for the results-over-time chart."""
    out = []
    for g in games:
        if g["outcome"]:
            out.append({"id": g["id"], "outcome": g["outcome"], "label": g["label"],
                        "score": g["score"], "place": g["place"], "players": g["players"]})
    return out


def _bid_text(bid: object) -> str:
    return "pass" if bid == "pass" else str(bid)


def _contract_text(trump: object) -> str:
    if trump is None:
        return ""
    if trump == "doubles":
        return "doubles"
    if trump == "none":
        return "no trump"
    return f"{trump}s"


def transcript_view(record: dict[str, Any]) -> Row:
    """A transcript's summary for the page around the replay viewer: sides, the result,
    and every hand's auction, contract and scores (the viewer draws the rest)."""
    players = int(record.get("players", 3))
    seats = [str(s) for s in record.get("seats", [])]
    sides = side_names(players, seats)
    hands = list(record.get("hands", []))
    partial = record.get("partial_hand")
    rows = []
    for n, h in enumerate([*hands, *([partial] if partial else [])], 1):
        bidder = h.get("bidder")
        rows.append({
            "n": n,
            "partial": h is partial,
            "first": seats[h["first_bidder"]] if "first_bidder" in h else "",
            "bids": ", ".join(f"{seats[b['seat']]} {_bid_text(b['bid'])}" for b in h["bids"]),
            "bidder": seats[bidder] if bidder is not None else "",
            "bid": h.get("bid"),
            "contract": _contract_text(h.get("trump")),
            "made": h.get("made"),
            "points": h.get("points") or [],
            "scores": h.get("scores") or [],
            "tricks_won": h.get("tricks_won") or [],
        })
    winner = record.get("winner")
    final = list(record.get("final", []))
    forfeit = record.get("forfeit")
    forfeiter = (seats[forfeit["seat"]] if isinstance(forfeit, dict)
                 and isinstance(forfeit.get("seat"), int) and forfeit["seat"] < len(seats)
                 else "")
    if isinstance(winner, int) and 0 <= winner < len(sides):
        headline = f"{sides[winner]} won"
    else:  # first place shared: won by forfeit by the others, level, else a draw
        out = forfeit["seat"] % len(sides) if forfeiter and isinstance(forfeit, dict) else -1
        best = max((v for i, v in enumerate(final) if i != out), default=0)
        level = [sides[i] for i, v in enumerate(final) if v == best and i != out
                 and i < len(sides)]
        headline = (f"{forfeiter} forfeited; {' and '.join(level)} won by forfeit, level "
                    "(first place shared)" if forfeiter
                    else f"A draw: {' and '.join(level)} share first place")
    return {
        "headline": headline,
        "players": players,
        "seats": seats,
        "sides": sides,
        "hands": rows,
        "final": list(zip(sides, final, strict=False)),
        "winner": sides[winner] if isinstance(winner, int) and 0 <= winner < len(sides) else "",
        "end": record.get("end", ""),
        "forfeit": (f"{seats[forfeit['seat']]}: {forfeit.get('reason', '')}"
                    if isinstance(forfeit, dict) and forfeit.get("seat") is not None
                    and forfeit["seat"] < len(seats) else ""),
        "faults": len(record.get("faults") or []),
        "notes": [str(n) for n in record.get("notes") or []],
        "board": record.get("board", ""),
        "seed": record.get("seed"),
        "rules": changed_rules(record.get("rules") or {}),
    }


def progress_view(t: tournament_pb2.Tournament, st: tournament_pb2.Standings) -> Row:
    """How far a tournament is, as anyone may know it: games played (finished) of the
    total, how many of them are public (their boards released), how many are in play."""
    played = t.matches_done
    total = max(t.matches_total, played)
    public = min(st.matches_done, played) if status_of_tournament(t.status) == "running" \
        else st.matches_done
    return {
        "played": played,
        "total": total,
        "percent": _percent(played, total),
        "public": public,
        "hidden": max(0, played - public),
        "running": sum(b.games_running for b in st.boards_in_play),
    }


def boards_view(t: tournament_pb2.Tournament, st: tournament_pb2.Standings) -> list[Row]:
    """The boards in play that have begun (a game started or finished), oldest first: how
    many of each board's tables (games) are done. Counts only: results stay hidden."""
    word = "table" if t.spec.duplicate == tournament_pb2.DUPLICATE_MODE_BOARDS else "game"
    out = []
    for b in st.boards_in_play:
        if not (b.games_finished or b.games_running):
            continue
        out.append({
            "board": b.board,
            "label": board_label(b.board),
            "games": b.games,
            "finished": b.games_finished,
            "running": b.games_running,
            "percent": _percent(b.games_finished, b.games),
            "text": f"{b.games_finished} of {plural(b.games, word)} done"
                    + (f", {b.games_running} playing" if b.games_running else ""),
        })
    return out


_ROUND = re.compile(r"(?:x(\d+)-)?r(\d+)(?:-t(\d+))?|p(\d+)")


def _round_key(board: str) -> tuple[int, int, int] | None:
    """Where a board comes in its event's schedule, from its unit (`x1-r3`: pass 1, round
    3; a test's pair `p12`); None for a unit that says nothing of it (a bracket's)."""
    m = _ROUND.fullmatch(board.rpartition("/")[2])
    if m is None:
        return None
    if m.group(4) is not None:
        return (0, int(m.group(4)), 0)
    return (int(m.group(1) or 1), int(m.group(2)), int(m.group(3) or 0))


def games_by_board(rows: Sequence[Row], in_play: Sequence[str] = ()) -> list[Row]:
    """Games grouped by the board they are dealt from (the duplicate comparison: each
    table of a board held the same hands): boards in play first, then released boards
    (the latest round first), then boards not begun, each in round order (whenever its
    games happened to finish: a slow table does not move its round); a single match is a
    group of its own. Units that name no round (a bracket's) keep the order they were
    made in."""
    groups: dict[str, Row] = {}
    for g in rows:
        board = g["board"] or g["id"]
        group = groups.get(board)
        if group is None:
            group = groups[board] = {"board": board, "label": board_label(board) if g["board"]
                                     else g["short"], "games": [], "order": len(groups)}
        unit = board.rpartition("/")[2]
        g["in_board"] = g["short"][len(unit) + 1:] if g["short"].startswith(unit + "-") else ""
        group["games"].append(g)
    playing = set(in_play)
    out = []
    for group in groups.values():
        games = group["games"]
        done = sum(1 for g in games if g["status"] in ("finished", "failed"))
        released = all(g["has_result"] or g["status"] == "failed" for g in games)
        state = ("released" if released and done == len(games) else
                 "waiting" if not done and all(g["status"] == "queued" for g in games)
                 and group["board"] not in playing else "in play")
        group.update(state=state, done=done, count=len(games),
                     last=max(g["finished_at"] for g in games))
        out.append(group)
    keys = {g["board"]: _round_key(g["board"]) for g in out}
    if None in keys.values():  # the listing is newest first: made earlier, later in it
        keys = {g["board"]: (0, -g["order"], 0) for g in out}
    rank = {"in play": 0, "released": 1, "waiting": 2}

    def order(group: Row) -> tuple[int, tuple[int, ...]]:
        key = keys[group["board"]]
        assert key is not None
        sign = -1 if group["state"] == "released" else 1  # released: the latest round first
        return rank[group["state"]], tuple(sign * k for k in key)

    out.sort(key=order)
    return out


def live_singles(rows: Sequence[Row]) -> list[Row]:
    """The single matches (no tournament, test or arena) of a listing that are queued or
    being played."""
    return [g for g in rows if not g["boarded"] and g["status"] in ("queued", "running")]
