"""Organiser commands: tournament create/list/watch/show, and ratings."""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import grpc

from clients import flags, format_options
from clients.admin import Admin
from clients.commands import (
    _admin_flag,
    _rpc_error,
    _server_flag,
    add_sandbox_flag,
    admin_token,
    newest_named,
    optional_admin_token,
    rules_options,
    sandbox_limits,
    server_target,
    web_link,
)
from clients.flags import format_ms
from clients.follow import follow
from clients.parser import CommandError, Parser, UsageError
from clients.render import (
    bracket_text,
    crosstable_text,
    elo,
    interval_text,
    methods_table,
    plural,
    ranking_text,
    ratings_table,
    rounds_text,
    standings_table,
    tournament_list,
)
from clients.wire import POOL_CHOICES
from proto.moon.v1 import bot_pb2, rating_pb2, tournament_pb2
from store import ids
from store.pools import Pool
from store.records import DUPLICATE_MODES
from tournaments import formats
from tournaments.plan import board_label

__all__ = ["add_organiser", "find_tournament", "watch_tournament"]

def _dashed(name: str) -> str:
    return name.replace("_", "-")


# Every registered format as a flag value (`round-robin`), plus short aliases.
_FORMATS = {_dashed(name): name for name in formats.names()}
_ALIASES = {"rr": "round_robin", "single": "single_elimination",
            "double": "double_elimination"}
_FORMATS.update(_ALIASES)


def format_of(text: str) -> str:
    """The registered format a --format value names (any case, `_` or `-`, an alias);
    UsageError listing every format otherwise."""
    fmt = _FORMATS.get(text.strip().casefold().replace("_", "-"))
    if fmt is None:
        every = ", ".join(_dashed(n) for n in formats.names())
        short = ", ".join(f"{a} ({_dashed(n)})" for a, n in _ALIASES.items())
        raise UsageError(f"moonshot tournament create: --format {text!r} is not a format: "
                         f"use one of {every}, or for short {short}")
    return fmt
_FORMAT_BY_PB = {tournament_pb2.TournamentFormat.Value(f"TOURNAMENT_FORMAT_{n.upper()}"): n
                 for n in formats.names()}


def watch_tournament(admin: Admin, tournament_id: str, label: str = "",
                     quiet: bool = False, organiser: bool = False) -> tournament_pb2.Standings:
    """Follow a tournament to its end with a progress bar; return the final standings
    (at once for one that is over). See `clients.follow`."""
    return follow(admin, tournament_id, label, quiet, organiser)


CROSSTABLE_MAX_BOTS = 16  # wider than that, a terminal table stops being readable


def _pool(t: tournament_pb2.Tournament) -> str:
    return str(Pool.of(t.spec.players))


def _rated(admin: Admin, pool: str) -> set[str] | None:
    """The bots the pool rates now (None if the referee would not say)."""
    try:
        return {r.bot_id for r in admin.get_ratings(pool).ratings}
    except grpc.RpcError:
        return None


def _print_standings(st: tournament_pb2.Standings, title: str, pool: str,
                     rated: set[str] | None = None) -> None:
    # A format's own ranking replaces the common table.
    ranked = ranking_text(st, title, rated)
    print(ranked or standings_table(st, title, pool, rated))
    rounds = rounds_text(st, Pool.parse(pool).players)
    if rounds:
        print()
        print(rounds)
    text = bracket_text(st)
    if not text and len(st.rows) <= CROSSTABLE_MAX_BOTS:
        text = crosstable_text(st)
    if text:
        print()
        print(text)
    for note in st.notes:
        print(f"note: {note}")


def find_tournament(admin: Admin, text: str) -> tournament_pb2.Tournament:
    """A tournament by id, or by name (ignoring case; the newest when several share it,
    with a note on stderr); CommandError naming close names when none has it."""
    if ids.is_tournament_id(text):
        try:
            return admin.get_tournament(text)
        except grpc.RpcError as exc:
            if not hasattr(exc, "code") or exc.code() != grpc.StatusCode.NOT_FOUND:
                raise
    return newest_named(admin.list_tournaments(), text, lambda t: t.spec.name,
                        lambda t: t.tournament_id, "tournament", "moonshot tournament list")


def _seeding_note(t: tournament_pb2.Tournament, asked: str) -> str | None:
    """What seeding by rating came to, when no bot had a rating yet."""
    fmt = _FORMAT_BY_PB.get(t.spec.format)
    if (asked == "rating" and fmt is not None and formats.get(fmt).seeded
            and t.spec.seeding == tournament_pb2.SEEDING_GIVEN_ORDER):
        return (f"--seeding rating: no bot has a rating in the {_pool(t)} pool yet, so the "
                "draw is seeded in the --bots order")
    return None


def _offline(admin: Admin, bots: list[str]) -> list[str]:
    """The names of the bots (ids or names) that have no live stream now and are no
    active hosted version either (a host starts one when its game needs it)."""
    out = []
    for b in bots:
        bot = admin.get_bot(b)
        hosted = bot.HasField("hosted") and bot.hosted.status == bot_pb2.VERSION_STATUS_ACTIVE
        if not bot.connected and not hosted:
            out.append(bot.name)
    return out


def _keep_apart(given: list[str]) -> dict[str, list[str]]:
    """--keep-apart NAME=BOT,BOT,... flags as groups; UsageError for a bad one."""
    out: dict[str, list[str]] = {}
    for text in given:
        name, sep, bots = text.partition("=")
        members = [b.strip() for b in bots.split(",") if b.strip()]
        if not sep or not name.strip() or len(members) < 2:
            raise UsageError(f"moonshot tournament create: --keep-apart {text[:80]!r}: "
                             "expected NAME=BOT,BOT[,...] (two or more bots)")
        if name.strip() in out:
            raise UsageError(f"moonshot tournament create: --keep-apart: two groups named "
                             f"{name.strip()!r}")
        out[name.strip()] = members
    return out


def _run_create(args: argparse.Namespace) -> int:
    fmt = format_of(args.format)
    prog = "moonshot tournament create"
    options = rules_options(args.players, args.rule, prog)
    own = format_options.collect(args, fmt, prog)
    bots = [b.strip() for b in args.bots.split(",") if b.strip()]
    admin = Admin(server_target(args), admin_token(args))
    try:
        if args.require_online:
            away = _offline(admin, bots)
            if away:
                raise CommandError(f"--require-online: {plural(len(away), 'bot')} not "
                                   f"connected now: {', '.join(away)}; nothing created "
                                   "(start them with moonshot bot run)")
        t = admin.create_tournament(
            name=args.name, players=args.players, format=fmt, bot_ids=bots,
            rules=options, options=own, seed=args.seed,
            duplicate="fresh" if args.no_duplicate else args.duplicate,
            seeding=args.seeding, move_time_ms=args.time_per_move,
            time_bank_ms=args.time_bank, max_strikes=args.max_strikes,
            grace_ms=args.disconnect_grace, keep_apart=_keep_apart(args.keep_apart),
            sandbox=sandbox_limits(args.sandbox, "moonshot tournament create"),
        )
        away = _offline(admin, list(t.spec.bot_ids))
    except grpc.RpcError as exc:
        raise _rpc_error(exc, server_target(args)) from None
    print(f"tournament {t.tournament_id} created: {args.name} "
          f"({len(t.spec.bot_ids)} bots, seed {t.spec.seed})")
    for note in t.notes:
        print(f"note: {note}")
    seeding = _seeding_note(t, args.seeding)
    if seeding:
        print(f"note: {seeding}")
    if away:
        print(f"warning: {plural(len(away), 'bot')} not connected now: {', '.join(away)}: "
              f"each game of theirs waits for them, and they forfeit it after "
              f"--disconnect-grace ({format_ms(args.disconnect_grace)}) without a connection "
              "(--require-online refuses to create such a tournament)", file=sys.stderr)
    page = web_link(args, f"/t/{t.tournament_id}")
    if page:
        print(f"web page: {page}")
    if not args.watch:
        print(f"follow it with: moonshot tournament watch {t.tournament_id}")
        return 0
    try:
        st = watch_tournament(admin, t.tournament_id, quiet=args.quiet, organiser=True)
    except grpc.RpcError as exc:
        raise _rpc_error(exc, server_target(args)) from None
    _print_standings(st, f"final standings of {args.name}", _pool(t), _rated(admin, _pool(t)))
    return 0


def _run_watch(args: argparse.Namespace) -> int:
    token = optional_admin_token(args)
    admin = Admin(server_target(args), token)
    try:
        t = find_tournament(admin, args.tournament)
        page = web_link(args, f"/t/{t.tournament_id}")
        if page:
            print(f"web page: {page}")
        if t.status == tournament_pb2.TOURNAMENT_STATUS_RUNNING:
            print(f"following {t.spec.name} ({t.tournament_id}) to its end; Ctrl-C stops "
                  "following (the tournament goes on)", flush=True)
        st = watch_tournament(admin, t.tournament_id, quiet=args.quiet,
                              organiser=token is not None)
    except grpc.RpcError as exc:
        raise _rpc_error(exc, server_target(args)) from None
    _print_standings(st, f"final standings of {t.spec.name}", _pool(t),
                     _rated(admin, _pool(t)))
    return 0


def _progress_text(t: tournament_pb2.Tournament, st: tournament_pb2.Standings,
                   organiser: bool) -> str:
    """How far a tournament is: games played of the total, how many are public, boards
    in play."""
    status = tournament_pb2.TournamentStatus.Name(t.status).removeprefix(
        "TOURNAMENT_STATUS_").lower()
    total = max(t.matches_total, t.matches_done)
    text = f"{status}, {t.matches_done} of {plural(total, 'game')} played"
    if not organiser and st.matches_done < t.matches_done:
        text += (f", {st.matches_done} public (a result is public once every table of its "
                 "board has finished)")
    boards = [b for b in st.boards_in_play if b.games_finished]
    if boards:
        shown = ", ".join(f"{board_label(b.board)} {b.games_finished} of {b.games}"
                          for b in boards[:6])
        more = f" and {len(boards) - 6} more" if len(boards) > 6 else ""
        text += f"; boards in play (tables done): {shown}{more}"
    return text


def _run_show(args: argparse.Namespace) -> int:
    token = optional_admin_token(args)
    admin = Admin(server_target(args), token)
    try:
        t = find_tournament(admin, args.tournament)
        st = admin.standings(t.tournament_id, organiser=token is not None)
    except grpc.RpcError as exc:
        raise _rpc_error(exc, server_target(args)) from None
    print(f"{t.spec.name} ({t.tournament_id}): {_progress_text(t, st, token is not None)}")
    if t.status == tournament_pb2.TOURNAMENT_STATUS_FAILED:
        print(f"failed: {t.error}")
    page = web_link(args, f"/t/{t.tournament_id}")
    if page:
        print(f"web page: {page}")
    _print_standings(st, "", _pool(t), _rated(admin, _pool(t)))
    return 0


def _run_list(args: argparse.Namespace) -> int:
    admin = Admin(server_target(args), None)
    status = {"running": tournament_pb2.TOURNAMENT_STATUS_RUNNING,
              "finished": tournament_pb2.TOURNAMENT_STATUS_FINISHED,
              "failed": tournament_pb2.TOURNAMENT_STATUS_FAILED}.get(
                  args.status or "", tournament_pb2.TOURNAMENT_STATUS_UNSPECIFIED)
    try:
        found = list(itertools.islice(admin.list_tournaments(status, page_size=args.limit + 1),
                                      args.limit + 1))
    except grpc.RpcError as exc:
        raise _rpc_error(exc, server_target(args)) from None
    if not found:
        print("no tournaments yet" if not args.status else f"no {args.status} tournaments")
        return 0
    print(tournament_list(found[:args.limit]))
    if len(found) > args.limit:
        print(f"(newest {args.limit} shown: --limit N shows more)")
    return 0


def _history_table(resp: rating_pb2.GetRatingHistoryResponse, title: str) -> str:
    """A bot's rating points as a text table, oldest first."""
    if not resp.points:
        return f"{title}: no fitted rating yet"
    lines = [title, f"{'when (UTC)':<19}  {'games':>5}  {'rating':>6}  95% interval"]
    for p in resp.points:
        at = p.as_of.ToDatetime().strftime("%Y-%m-%d %H:%M:%S")
        interval = interval_text(p.ci_low if p.HasField("ci_low") else None,
                                 p.ci_high if p.HasField("ci_high") else None)
        lines.append(f"{at:<19}  {p.games:>5}  {elo(p.rating):>6}  {interval}")
    return "\n".join(lines)


def _run_ratings(args: argparse.Namespace) -> int:
    admin = Admin(server_target(args), None)
    if args.bot and (args.method or args.methods):
        raise UsageError("moonshot ratings: --bot shows the official rating's history; "
                         "--method and --methods do not go with it")
    if args.bot:
        blocks = []
        for pool in [args.pool] if args.pool else list(POOL_CHOICES):
            try:
                hist = admin.rating_history(args.bot, pool)
            except grpc.RpcError as exc:
                raise _rpc_error(exc, server_target(args)) from None
            blocks.append(_history_table(hist, f"rating history of {args.bot}, {pool} pool"))
        print("\n\n".join(blocks))
        return 0
    pool = args.pool or "3p"
    try:
        resp = admin.get_ratings(pool, args.method or "")
    except grpc.RpcError as exc:
        raise _rpc_error(exc, server_target(args)) from None
    if args.methods:
        print(methods_table(resp, f"rating methods, {pool} pool"))
        return 0
    shown = f" ({resp.method_name})" if args.method else ""
    print(ratings_table(resp, f"ratings, {pool} pool{shown}"))
    if args.chart:
        # matplotlib is loaded only to draw: every other command starts without it.
        from clients.chart import ratings_chart

        try:
            path = ratings_chart(
                [(x.name, x.rating, x.ci_low if x.HasField("ci_low") else x.rating,
                  x.ci_high if x.HasField("ci_high") else x.rating, x.games)
                 for x in resp.ratings], Path(args.chart),
                f"{pool} ratings ({plural(resp.games, 'game')})")
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
                   help=", ".join(_dashed(n) for n in formats.names()))
    p.add_argument("--bots", required=True, help="comma-separated bot ids or names")
    p.add_argument("--seed", type=flags.int_in(*flags.SEED), default=None,
                   help="fixes every deal of the tournament (default: random, then shown)")
    p.add_argument("--rule", action="append", default=[], metavar="KEY=VALUE",
                   help="a rules option, repeat for several (see moonshot selfplay --help)")
    p.add_argument("--duplicate", choices=DUPLICATE_MODES, default="boards",
                   help="how games share deals: boards (disjoint tables play one board, "
                        "no bot twice), replay (the same bots replay a deal at every seating: "
                        "trusts them to keep no memory), fresh (a deal per game)")
    p.add_argument("--no-duplicate", action="store_true", help="the same as --duplicate fresh")
    p.add_argument("--seeding", choices=("rating", "given"), default="rating",
                   help="for " + ", ".join(formats.get(n).title for n in formats.names()
                                           if formats.get(n).seeded)
                        + ": seeds by pool rating now (the given order when no bot has one "
                          "yet), or in --bots order; a round robin always seats its bots in "
                          "--bots order (default rating)")
    format_options.add_flags(p)
    p.add_argument("--time-per-move", type=flags.duration_ms(*flags.MOVE_TIME_MS), default="2s",
                   help="per-decision limit, e.g. 500ms, 2s (default 2s)")
    p.add_argument("--time-bank", type=flags.duration_ms(*flags.TIME_BANK_MS), default="30s",
                   help="extra time per seat per game once a decision overruns (default 30s)")
    p.add_argument("--max-strikes", type=flags.int_in(*flags.MAX_STRIKES), default=3,
                   help="late or illegal answers before a bot forfeits (default 3)")
    p.add_argument("--disconnect-grace", type=flags.duration_ms(*flags.GRACE_MS),
                   default="30s",
                   help="how long a bot may stay disconnected before it forfeits (default 30s)")
    p.add_argument("--require-online", action="store_true",
                   help="create nothing unless every bot is connected now (without it, "
                        "bots not connected are named in a warning)")
    p.add_argument("--keep-apart", action="append", default=[], metavar="NAME=BOT,BOT",
                   help="a group of bots never seated at tables of one board (a team, a "
                        "lab), besides each author's bots and the stack's groups; repeat "
                        "for several (a bot in one group of them at most)")
    add_sandbox_flag(p)
    p.add_argument("--watch", action="store_true", help="follow it to the end")
    p.add_argument("--quiet", action="store_true", help="with --watch: no progress bar")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_create)
    p = tour.add_parser("list", help="list tournaments, newest first")
    p.add_argument("--status", choices=("running", "finished", "failed"), default=None,
                   help="only tournaments in this status")
    p.add_argument("--limit", type=flags.int_in(1, 1000), default=20,
                   help="show at most this many (default 20)")
    _server_flag(p)
    p.set_defaults(run=_run_list)
    p = tour.add_parser("watch", help="follow a tournament live to its end")
    p.add_argument("tournament", metavar="ID_OR_NAME",
                   help="the tournament's id, or its name (the newest of that name)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _server_flag(p)
    _admin_flag(p, "with it, each result counts as it is recorded; without it, a board "
                   "at a time")
    p.set_defaults(run=_run_watch)
    p = tour.add_parser("show", help="print a tournament's standings and bracket")
    p.add_argument("tournament", metavar="ID_OR_NAME",
                   help="the tournament's id, or its name (the newest of that name)")
    _server_flag(p)
    _admin_flag(p, "with it, the standings count every game played; without it, the "
                   "released ones")
    p.set_defaults(run=_run_show)

    _add_groups(sub)

    p = sub.add_parser("ratings", help="print the ratings of a pool")
    p.add_argument("--pool", choices=POOL_CHOICES, default=None,
                   help="3p or 2v2 (default 3p; with --bot, both)")
    p.add_argument("--chart", default=None, metavar="FILE.png",
                   help="also draw the ratings with their intervals to this PNG file")
    p.add_argument("--bot", default=None, metavar="ID_OR_NAME",
                   help="print this bot's rating history instead (one line per fit), in "
                        "both pools unless --pool names one")
    p.add_argument("--method", default=None, metavar="NAME",
                   help="the table of this rating method (--methods lists them: e.g. "
                        "recent, the fit over the last 30 days' games); default the "
                        "official rating, the batch fit")
    p.add_argument("--methods", action="store_true",
                   help="list the rating methods of the pool instead: name, what it is, "
                        "the games and time of its latest table")
    _server_flag(p)
    p.set_defaults(run=_run_ratings)


def audit_text(resp: rating_pb2.AuditCollusionResponse, pool: str) -> str:
    """An audit as text: what was read, the pairs listed, and what the numbers mean."""
    lines = [f"collusion audit, {pool} pool: {plural(resp.games, 'game')}, "
             f"{plural(resp.boards, 'board')} of two or more tables, {plural(resp.bots, 'bot')}"
             f"; {plural(resp.tested, 'pair')} tested (>= {resp.min_shared} shared boards), "
             f"{resp.untested} not; alpha {resp.alpha:g}",
             f"suspected: {resp.suspected}"]
    if resp.pairs:
        lines.append(f"{'':1}{'pair':<40} {'shared':>6} {'gain':>12} {'z':>6} "
                     f"{'p':>9} {'p_holm':>9}")
        for p in resp.pairs:
            mark = "!" if p.suspected else " "
            pair = f"{p.name_a} + {p.name_b}"
            lines.append(f"{mark}{pair[:40]:<40} {p.shared:>6} "
                         f"{p.gain:>+6.2f}±{p.se:<5.2f} {p.z:>6.2f} {p.p:>9.2e} "
                         f"{p.p_adjusted:>9.2e}")
        for p in resp.pairs:
            if p.suspected:
                lines.append(f"boards of {p.name_a} + {p.name_b}: {', '.join(p.boards)}")
    lines.append("")
    lines.append(resp.meaning)
    return "\n".join(lines)


def _run_group_set(args: argparse.Namespace) -> int:
    bots = [b.strip() for b in args.bots.split(",") if b.strip()] if args.bots else []
    admin = Admin(server_target(args), admin_token(args))
    try:
        g = admin.set_group(args.name, bots)
    except grpc.RpcError as exc:
        raise _rpc_error(exc, server_target(args)) from None
    if g.bot_ids:
        print(f"group {g.name}: {', '.join(g.bot_ids)} kept apart on boards of every "
              "tournament and arena made from now on")
    else:
        print(f"group {args.name}: deleted")
    return 0


def _run_group_list(args: argparse.Namespace) -> int:
    admin = Admin(server_target(args), admin_token(args))
    try:
        groups = admin.list_groups()
    except grpc.RpcError as exc:
        raise _rpc_error(exc, server_target(args)) from None
    for g in groups:
        print(f"{g.name}: {', '.join(g.bot_ids)}")
    if not groups:
        print("no groups of the stack (each author's bots are kept apart all the same)")
    return 0


def add_collusion_flags(p: Parser) -> None:
    """The flags of `moonshot audit collusion` (its parser is `moonshot audit`'s)."""
    p.add_argument("--pool", choices=POOL_CHOICES, default="3p",
                   help="collusion: 3p or 2v2")
    p.add_argument("--alpha", type=float, default=0.0,
                   help="collusion: the pool-wide false-alarm rate (default 0.01)")
    p.add_argument("--min-shared", type=flags.int_in(2, 100000), default=None,
                   help="collusion: boards a pair must have shared to be tested (default 5)")
    p.add_argument("--max-pairs", type=flags.int_in(1, 200), default=20,
                   help="collusion: pairs to list, the suspected then the most suspect")


def run_collusion_audit(args: argparse.Namespace, token: str | None) -> int:
    """`moonshot audit collusion`: a pool's audit, with an organiser's token."""
    admin = Admin(server_target(args), token)
    try:
        resp = admin.audit_collusion(args.pool, args.alpha, args.min_shared or 0,
                                     args.max_pairs)
    except grpc.RpcError as exc:
        raise _rpc_error(exc, server_target(args)) from None
    print(audit_text(resp, args.pool))
    return 0


def _add_groups(sub: argparse._SubParsersAction[Parser]) -> None:
    """`moonshot group set|list` (an organiser's)."""
    group = sub.add_parser("group", help="groups of the stack kept apart on boards "
                                         "(organiser)").add_subparsers(
        dest="group_command", required=True, parser_class=Parser)
    p = group.add_parser("set", help="declare or replace a group (no --bots: delete it)")
    p.add_argument("name", help="1-64 of A-Za-z0-9_.:@-")
    p.add_argument("--bots", default="", help="comma-separated bot ids or names")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_group_set)
    p = group.add_parser("list", help="list the stack's groups")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_group_list)
