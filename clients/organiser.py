"""Organiser commands: tournament create/watch/show, and ratings."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import grpc

from clients import flags
from clients.admin import Admin
from clients.commands import (
    _admin_flag,
    _rpc_error,
    _server_flag,
    admin_token,
    rules_options,
    server_target,
)
from clients.parser import CommandError, Parser, UsageError
from clients.progress import Progress
from clients.render import bracket_text, crosstable_text, ratings_table, standings_table
from proto.moon.v1 import rating_pb2, tournament_pb2
from store.records import DUPLICATE_MODES
from tournaments import formats

__all__ = ["add_organiser", "watch_tournament"]

# Every registered format as a flag value (`round-robin`), plus short aliases.
_FORMATS = {name.replace("_", "-"): name for name in formats.names()}
_FORMATS.update({"rr": "round_robin", "single": "single_elimination",
                 "double": "double_elimination"})


def watch_tournament(admin: Admin, tournament_id: str, label: str = "",
                     quiet: bool = False) -> tournament_pb2.Standings:
    """Follow a tournament to its end with a progress bar; return the final standings.

    Reconnects after a dropped stream from the last event seen, so nothing is missed
    or shown twice.
    """
    t = admin.get_tournament(tournament_id)
    bar = Progress(max(t.matches_total, 1), label or t.spec.name, unit="games",
                   enabled=None if not quiet else False, plain=not quiet)
    bar.update(t.matches_done, total=max(t.matches_total, 1))
    after = 0
    final: tournament_pb2.Standings | None = None
    failures = 0
    while final is None:
        try:
            for ev in admin.watch(tournament_id, after):
                after = ev.sequence
                failures = 0
                kind = ev.WhichOneof("event")
                if kind == "match_finished":
                    mf = ev.match_finished
                    bar.update(mf.matches_done, total=max(mf.matches_total, 1))
                elif kind == "tournament_finished":
                    final = ev.tournament_finished.standings
                    bar.update(final.matches_done, total=final.matches_done)
            if final is None:
                t = admin.get_tournament(tournament_id)
                if t.status != tournament_pb2.TOURNAMENT_STATUS_RUNNING:
                    final = admin.standings(tournament_id)
        except grpc.RpcError as exc:
            code = exc.code() if hasattr(exc, "code") else None
            if code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                            grpc.StatusCode.CANCELLED) or failures >= 30:
                raise
            failures += 1
            time.sleep(min(0.2 * 2 ** failures, 5.0))
    bar.close()
    t = admin.get_tournament(tournament_id)
    if t.status == tournament_pb2.TOURNAMENT_STATUS_FAILED:
        raise CommandError(f"tournament {tournament_id} failed: {t.error}")
    return final


CROSSTABLE_MAX_BOTS = 16  # wider than that, a terminal table stops being readable


def _print_standings(admin: Admin, st: tournament_pb2.Standings, title: str) -> None:
    print(standings_table(st, title))
    text = bracket_text(st)
    if not text and len(st.rows) <= CROSSTABLE_MAX_BOTS:
        text = crosstable_text(st)
    if text:
        print()
        print(text)
    for note in st.notes:
        print(f"note: {note}")


def _run_create(args: argparse.Namespace) -> int:
    fmt = _FORMATS.get(args.format)
    if fmt is None:
        raise UsageError(f"moonshot tournament create: --format must be one of "
                         f"{', '.join(sorted(k for k in _FORMATS if '-' in k))}")
    options = rules_options(args.players, args.rule, "moonshot tournament create")
    bots = [b.strip() for b in args.bots.split(",") if b.strip()]
    admin = Admin(server_target(args), admin_token(args))
    try:
        t = admin.create_tournament(
            name=args.name, players=args.players, format=fmt, bot_ids=bots,
            rules=options, rounds=args.rounds,
            series_length=args.series, seed=args.seed,
            duplicate="fresh" if args.no_duplicate else args.duplicate,
            rotate_partners=args.rotate_partners, seeding=args.seeding,
            all_triples=args.all_triples, move_time_ms=args.time_per_move,
            time_bank_ms=args.time_bank, max_strikes=args.max_strikes,
            grace_ms=args.disconnect_grace,
        )
    except grpc.RpcError as exc:
        raise _rpc_error(exc) from None
    print(f"tournament {t.tournament_id} created: {args.name} "
          f"({len(t.spec.bot_ids)} bots, seed {t.spec.seed})")
    for note in t.notes:
        print(f"note: {note}")
    if not args.watch:
        print(f"follow it with: moonshot tournament watch {t.tournament_id}")
        return 0
    try:
        st = watch_tournament(admin, t.tournament_id, quiet=args.quiet)
    except grpc.RpcError as exc:
        raise _rpc_error(exc) from None
    _print_standings(admin, st, f"final standings of {args.name}")
    return 0


def _run_watch(args: argparse.Namespace) -> int:
    admin = Admin(server_target(args), None)
    try:
        st = watch_tournament(admin, args.tournament_id, quiet=args.quiet)
    except grpc.RpcError as exc:
        raise _rpc_error(exc) from None
    _print_standings(admin, st, "final standings")
    return 0


def _run_show(args: argparse.Namespace) -> int:
    admin = Admin(server_target(args), None)
    try:
        t = admin.get_tournament(args.tournament_id)
        st = admin.standings(args.tournament_id)
    except grpc.RpcError as exc:
        raise _rpc_error(exc) from None
    status = tournament_pb2.TournamentStatus.Name(t.status).removeprefix("TOURNAMENT_STATUS_")
    print(f"{t.spec.name} ({t.tournament_id}): {status.lower()}, "
          f"{st.matches_done}/{st.matches_total} games")
    _print_standings(admin, st, "")
    return 0


def _history_table(resp: rating_pb2.GetRatingHistoryResponse, title: str) -> str:
    """A bot's rating points as a text table, oldest first."""
    if not resp.points:
        return f"{title}: no fitted rating yet"
    lines = [title, f"{'when (UTC)':<19}  {'games':>5}  {'rating':>6}  95% interval"]
    for p in resp.points:
        at = p.as_of.ToDatetime().strftime("%Y-%m-%d %H:%M:%S")
        interval = (f"[{p.ci_low:.0f}, {p.ci_high:.0f}]" if p.HasField("ci_low")
                    and p.HasField("ci_high") else "")
        lines.append(f"{at:<19}  {p.games:>5}  {p.rating:>6.0f}  {interval}")
    return "\n".join(lines)


def _run_ratings(args: argparse.Namespace) -> int:
    admin = Admin(server_target(args), None)
    if args.bot:
        try:
            hist = admin.rating_history(args.bot, args.pool)
        except grpc.RpcError as exc:
            raise _rpc_error(exc) from None
        print(_history_table(hist, f"rating history of {args.bot}, {args.pool} pool"))
        return 0
    try:
        resp = admin.get_ratings(args.pool)
    except grpc.RpcError as exc:
        raise _rpc_error(exc) from None
    print(ratings_table(resp, f"ratings, {args.pool} pool"))
    if args.chart:
        # matplotlib is loaded only to draw: every other command starts without it.
        from clients.chart import ratings_chart

        try:
            path = ratings_chart(
                [(x.name, x.rating, x.ci_low if x.HasField("ci_low") else x.rating,
                  x.ci_high if x.HasField("ci_high") else x.rating, x.games)
                 for x in resp.ratings], Path(args.chart),
                f"{args.pool} ratings ({resp.games} games)")
        except OSError as exc:
            raise CommandError(f"cannot write --chart {args.chart}: {exc.strerror or exc}"
                               ) from None
        print(f"chart: {path}")
    return 0


def add_organiser(sub: argparse._SubParsersAction[Parser]) -> None:
    """Add tournament and ratings commands."""
    tour = sub.add_parser("tournament", help="create, watch or show tournaments").add_subparsers(
        dest="tournament_command", required=True, parser_class=Parser)
    p = tour.add_parser("create", help="create a tournament (admin)")
    p.add_argument("--name", required=True, help="a name to show (1-200 characters)")
    p.add_argument("--players", type=int, choices=(3, 4), default=3,
                   help="3 for 3-player tables, 4 for 2v2 (default 3)")
    p.add_argument("--format", default="round-robin",
                   help="round-robin, single-elimination or double-elimination")
    p.add_argument("--bots", required=True, help="comma-separated bot ids or names")
    p.add_argument("--rounds", type=flags.int_in(*flags.ROUNDS), default=1,
                   help=f"round robin: times through the schedule, {flags.ROUNDS[0]} to "
                        f"{flags.ROUNDS[1]} (default 1)")
    p.add_argument("--series", type=flags.int_in(*flags.SERIES, odd=True), default=1,
                   help=f"brackets: best of N duplicate sets per match (N odd, up to "
                        f"{flags.SERIES[1]}; default 1)")
    p.add_argument("--seed", type=flags.int_in(*flags.SEED), default=None,
                   help="fixes every deal of the tournament (default: random, then shown)")
    p.add_argument("--rule", action="append", default=[], metavar="KEY=VALUE",
                   help="a rules option, repeat for several (see moonshot selfplay --help)")
    p.add_argument("--duplicate", choices=DUPLICATE_MODES, default="boards",
                   help="how games share deals: boards (disjoint tables play one board, "
                        "no bot twice), replay (the same bots replay a deal at every seating: "
                        "trusts them to keep no memory), fresh (a deal per game)")
    p.add_argument("--no-duplicate", action="store_true", help="the same as --duplicate fresh")
    p.add_argument("--rotate-partners", action="store_true",
                   help="2v2 round robin: rotate partners for individual results")
    p.add_argument("--seeding", choices=("rating", "given"), default="rating",
                   help="brackets: seed by current rating or in --bots order (default rating)")
    p.add_argument("--all-triples", action="store_true",
                   help="3p round robin: every triple of bots, not a balanced design")
    p.add_argument("--time-per-move", type=flags.duration_ms(*flags.MOVE_TIME_MS), default="2s",
                   help="per-decision limit, e.g. 500ms, 2s (default 2s)")
    p.add_argument("--time-bank", type=flags.duration_ms(*flags.TIME_BANK_MS), default="30s",
                   help="extra time per seat per game once a decision overruns (default 30s)")
    p.add_argument("--max-strikes", type=flags.int_in(*flags.MAX_STRIKES), default=3,
                   help="late or illegal answers before a bot forfeits (default 3)")
    p.add_argument("--disconnect-grace", type=flags.duration_ms(*flags.GRACE_MS),
                   default="30s",
                   help="how long a bot may stay disconnected before it forfeits (default 30s)")
    p.add_argument("--watch", action="store_true", help="follow it to the end")
    p.add_argument("--quiet", action="store_true", help="with --watch: no progress bar")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_create)
    p = tour.add_parser("watch", help="follow a tournament live to its end")
    p.add_argument("tournament_id")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _server_flag(p)
    p.set_defaults(run=_run_watch)
    p = tour.add_parser("show", help="print a tournament's standings and bracket")
    p.add_argument("tournament_id")
    _server_flag(p)
    p.set_defaults(run=_run_show)

    p = sub.add_parser("ratings", help="print the ratings of a pool")
    p.add_argument("--pool", choices=("3p", "2v2"), default="3p")
    p.add_argument("--chart", default=None, metavar="FILE.png",
                   help="also draw the ratings with their intervals to this PNG file")
    p.add_argument("--bot", default=None, metavar="ID_OR_NAME",
                   help="print this bot's rating history instead (one line per fit)")
    _server_flag(p)
    p.set_defaults(run=_run_ratings)
