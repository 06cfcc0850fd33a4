"""`moonshot arena start|stop|show|watch`: the standing ladder of a pool."""

from __future__ import annotations

import argparse
import sys
import time

import grpc

from clients import flags
from clients.admin import Admin
from clients.commands import (
    _admin_flag,
    _rpc_error,
    _server_flag,
    add_sandbox_flag,
    admin_token,
    rules_options,
    sandbox_limits,
    server_target,
    web_link,
)
from clients.parser import Parser, UsageError
from clients.render import elo, interval_text, plural
from clients.wire import POOL_CHOICES, pool_from_pb, pool_to_pb
from proto.moon.v1 import arena_pb2, arena_pb2_grpc, game_pb2, rating_pb2
from store.pools import Pool

__all__ = ["add_arena", "arena_text"]

_POOLS = {p: pool_to_pb(p) for p in POOL_CHOICES}
_STATUS = {arena_pb2.ARENA_STATUS_RUNNING: "running", arena_pb2.ARENA_STATUS_STOPPED: "stopped"}
WATCH_EVERY_S = 2.0


def _stub(admin: Admin) -> arena_pb2_grpc.ArenaServiceStub:
    return arena_pb2_grpc.ArenaServiceStub(admin.channel)


def _pool_arg(parser: argparse.ArgumentParser) -> None:
    """The pool, as `moonshot arena start 3p` or `--pool 3p`."""
    parser.add_argument("pool", nargs="?", choices=tuple(_POOLS), metavar="POOL",
                        help="3p or 2v2 (or --pool)")
    parser.add_argument("--pool", dest="pool_flag", choices=tuple(_POOLS),
                        help=argparse.SUPPRESS)


def _pool(args: argparse.Namespace) -> str:
    """The pool given by position or by --pool; UsageError when neither, or both differ."""
    given = {p for p in (args.pool, args.pool_flag) if p}
    if len(given) != 1:
        what = "two different pools" if given else "no pool"
        raise UsageError(f"moonshot arena {args.arena_command}: {what}: name one, 3p or 2v2 "
                         f"(moonshot arena {args.arena_command} 3p)")
    args.pool = given.pop()
    return str(args.pool)


def _run_start(args: argparse.Namespace) -> int:
    _pool(args)
    sandbox = sandbox_limits(args.sandbox, "moonshot arena start")  # before any token
    admin = Admin(server_target(args), admin_token(args))
    settings = arena_pb2.ArenaSettings(
        rules=rules_options(Pool.parse(args.pool).players, args.rule, "moonshot arena start"),
        clock=game_pb2.ClockPolicy(move_time_ms=args.time_per_move,
                                   time_bank_ms=args.time_bank),
        faults=game_pb2.FaultPolicy(max_strikes=args.max_strikes,
                                    disconnect_grace_ms=args.disconnect_grace),
        concurrency=args.concurrency, anchors=args.anchor, max_wait_ms=args.max_wait,
        sandbox=sandbox)
    try:
        resp = _stub(admin).StartArena(arena_pb2.StartArenaRequest(
            pool=_POOLS[args.pool], settings=settings), metadata=admin.metadata, timeout=30)
    except grpc.RpcError as exc:
        raise _rpc_error(exc, server_target(args)) from None
    print(f"the {args.pool} arena is running: bots join it with "
          f"`moonshot bot run --arena {args.pool}`")
    print(arena_text(resp.arena, None))
    link = web_link(args, f"/arena/{args.pool}")
    if link:
        print(f"web page: {link}")
    return 0


def _run_stop(args: argparse.Namespace) -> int:
    _pool(args)
    admin = Admin(server_target(args), admin_token(args))
    try:
        resp = _stub(admin).StopArena(arena_pb2.StopArenaRequest(pool=_POOLS[args.pool]),
                                      metadata=admin.metadata, timeout=30)
    except grpc.RpcError as exc:
        raise _rpc_error(exc, server_target(args)) from None
    playing = resp.arena.playing
    print(f"the {args.pool} arena is stopped; "
          + (f"{plural(playing, 'game')} under way will finish and be released"
             if playing else "no game is under way"))
    return 0


def _fetch(admin: Admin, pool: str
           ) -> tuple[arena_pb2.Arena, rating_pb2.GetRatingsResponse]:
    arena = _stub(admin).GetArena(arena_pb2.GetArenaRequest(pool=_POOLS[pool]), timeout=30)
    return arena.arena, admin.get_ratings(pool)


def arena_text(a: arena_pb2.Arena, ratings: rating_pb2.GetRatingsResponse | None) -> str:
    """An arena as text: status and settings, the leaderboard with intervals (and who is
    online and playing), the boards in play."""
    pool = str(pool_from_pb(a.pool))
    s = a.settings
    lines = [f"{pool} arena: {_STATUS.get(a.status, '?')}; {a.online} online, "
             f"{a.playing} playing, {a.waiting} waiting; {plural(a.games, 'game')} on "
             f"{plural(a.boards, 'board')}, {a.released} released",
             f"  {s.concurrency} at once per bot, "
             f"{flags.format_ms(s.clock.move_time_ms)} a move + "
             f"{flags.format_ms(s.clock.time_bank_ms)} bank, grace "
             f"{flags.format_ms(s.faults.disconnect_grace_ms)}"
             + (f", anchors {', '.join(s.anchors)}" if s.anchors else "")]
    if a.holding and a.status == arena_pb2.ARENA_STATUS_RUNNING:
        lines.append(f"  holding: {a.holding}")
    bots = {b.bot_id: b for b in a.bots}
    if ratings is not None:
        lines.append("")
        w = max([len(r.name) for r in ratings.ratings] + [3])
        lines.append(f"{'#':>3}  {'bot':<{w}}{'rating':>8}  {'95% interval':>20}{'games':>7}"
                     f"  {'arena':<16}")
        for i, row in enumerate(ratings.ratings, 1):
            interval = interval_text(row.ci_low if row.HasField("ci_low") else None,
                                     row.ci_high if row.HasField("ci_high") else None, 6)
            b = bots.get(row.bot_id)
            where = "" if b is None else _presence(b)
            lines.append(f"{i:>3}  {row.name:<{w}}{elo(row.rating):>8}  {interval:>20}"
                         f"{row.games:>7}  {where:<16}")
        unrated = [b for b in a.bots if b.bot_id not in {r.bot_id for r in ratings.ratings}]
        for b in unrated:
            lines.append(f"{'-':>3}  {b.name:<{w}}{'':>8}  {'not rated yet':>20}{'':>7}  "
                         f"{_presence(b):<16}")
        lines.append(f"({ratings.method}; {plural(ratings.games, 'game')} in the pool"
                     f"{'; provisional until the next fit' if ratings.provisional else ''})")
    if a.boards_in_play:
        shown = ", ".join(f"{b.board} {b.finished}/{b.games}" for b in a.boards_in_play[:8])
        more = len(a.boards_in_play) - 8
        lines.append(f"boards in play (tables done): {shown}"
                     + (f" and {more} more" if more > 0 else ""))
    return "\n".join(lines)


def _presence(b: arena_pb2.ArenaBot) -> str:
    """`playing 2`, `waiting`, `offline`, ... for one bot of the arena."""
    if not b.online:
        return "offline"
    text = f"playing {b.playing}" if b.playing else "waiting" if b.waiting else "online"
    return text + (", waiting" if b.waiting and b.playing else "") + (
        " (house)" if b.house else "")


def _run_show(args: argparse.Namespace) -> int:
    _pool(args)
    admin = Admin(server_target(args), None)
    try:
        arena, ratings = _fetch(admin, args.pool)
    except grpc.RpcError as exc:
        raise _rpc_error(exc, server_target(args)) from None
    print(arena_text(arena, ratings))
    return 0


def _run_watch(args: argparse.Namespace) -> int:
    _pool(args)
    admin = Admin(server_target(args), None)
    live = sys.stdout.isatty()
    last = ""
    try:
        while True:
            try:
                arena, ratings = _fetch(admin, args.pool)
            except grpc.RpcError as exc:
                if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                    time.sleep(WATCH_EVERY_S)  # a referee restarting: try again
                    continue
                raise _rpc_error(exc, server_target(args)) from None
            text = arena_text(arena, ratings)
            if text != last:
                if live:
                    print("\x1b[H\x1b[2J", end="")
                else:
                    print(time.strftime("--- %H:%M:%S"))
                print(text, flush=True)
                last = text
            if args.once:
                return 0
            time.sleep(WATCH_EVERY_S)
    except KeyboardInterrupt:
        return 0


def add_arena(sub: argparse._SubParsersAction[Parser]) -> None:
    """Add `moonshot arena ...`."""
    arena = sub.add_parser("arena", help="the standing ladder of a pool: start, stop, show, "
                                         "watch").add_subparsers(
        dest="arena_command", required=True, parser_class=Parser)
    p = arena.add_parser("start", help="start the arena of a pool (admin)")
    _pool_arg(p)
    p.add_argument("--concurrency", type=flags.int_in(1, 100), default=2,
                   help="games one bot may play at once, 1 to 100 (default 2)")
    p.add_argument("--anchor", action="append", default=[], metavar="HOUSE_BOT",
                   help="a house bot that always plays (house:greedy, house:pimc?samples=32);"
                        " repeat for several")
    p.add_argument("--rule", action="append", default=[], metavar="KEY=VALUE",
                   help="a rules option, repeat for several (see moonshot selfplay --help)")
    p.add_argument("--time-per-move", type=flags.duration_ms(*flags.MOVE_TIME_MS),
                   default="2s", help="per-decision limit (default 2s)")
    p.add_argument("--time-bank", type=flags.duration_ms(*flags.TIME_BANK_MS), default="30s",
                   help="time bank per seat and game (default 30s)")
    p.add_argument("--max-strikes", type=flags.int_in(*flags.MAX_STRIKES), default=3)
    p.add_argument("--disconnect-grace", type=flags.duration_ms(*flags.GRACE_MS),
                   default="30s", help="(default 30s)")
    p.add_argument("--max-wait", type=flags.duration_ms(0, 3_600_000), default="10s",
                   help="a free bot waits at most this for a board of several tables "
                        "(default 10s)")
    add_sandbox_flag(p)
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_start)
    p = arena.add_parser("stop", help="stop the arena of a pool (admin): no new tables")
    _pool_arg(p)
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_stop)
    for name, helps, run in (
            ("show", "the leaderboard with intervals, who is online and playing", _run_show),
            ("watch", "the same, live (Ctrl-C stops)", _run_watch)):
        p = arena.add_parser(name, help=helps)
        _pool_arg(p)
        if name == "watch":
            p.add_argument("--once", action="store_true", help=argparse.SUPPRESS)
        _server_flag(p)
        p.set_defaults(run=run)
