"""The `moonshot` command line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import grpc

from clients import accounts, arena, changes, commands, demo, export, hosted, organiser
from clients.builtin import load_bot
from clients.flags import GAMES, SEED, int_in
from clients.parser import CommandError, Parser, UsageError
from clients.progress import Progress
from clients.selfplay import BotFailure, selfplay
from clients.web.command import add_web
from moon import MoonError, Rules
from moon.deal import MAX_SEED
from moon.rules import OPTION_HELP
from moon.transcript import write_jsonl

__all__ = ["main"]


def _rules_epilog() -> str:
    lines = ["rules options (--rule KEY=VALUE):"]
    lines += [f"  {k:<20} {v}" for k, v in OPTION_HELP.items()]
    return "\n".join(lines)


def _add_selfplay(sub: argparse._SubParsersAction[Parser]) -> None:
    p = sub.add_parser(
        "selfplay",
        help="play games between built-in or local bots, in this process",
        epilog=_rules_epilog(),
    )
    p.add_argument("--players", type=int, choices=(3, 4), default=3)
    p.add_argument("--games", type=int_in(*GAMES), default=100,
                   help=f"number of games, up to {GAMES[1]} (default 100)")
    p.add_argument("--seed", type=int_in(*SEED), default=0,
                   help="seed of the first game; game k uses seed+k")
    p.add_argument("--bots", default=None,
                   help="comma-separated bot per seat: random, greedy, pimc or MODULE:CLASS "
                        "(default: greedy in every seat)")
    p.add_argument("--rule", action="append", default=[], metavar="KEY=VALUE",
                   help="a rules option; repeat for several")
    p.add_argument("--out", default=None, metavar="FILE.jsonl",
                   help="append one moon-transcript/1 line per game to this file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=_run_selfplay)


def _run_selfplay(args: argparse.Namespace) -> int:
    rules = Rules.parse_assignments(args.players, args.rule)
    last = MAX_SEED - args.games + 1  # game k uses seed+k: the last one must be a seed too
    if args.seed > last:
        raise UsageError(f"moonshot selfplay: --seed {args.seed} with --games {args.games} "
                         f"would run past the last seed {MAX_SEED}: --seed must be from 0 "
                         f"to {last} for that many --games")
    specs = args.bots.split(",") if args.bots else ["greedy"] * args.players
    specs = [s.strip() for s in specs]
    if len(specs) != args.players:
        raise UsageError(
            f"moonshot selfplay: --bots names {len(specs)} bots for {args.players} seats"
        )
    try:
        classes = [load_bot(s) for s in specs]
    except ValueError as exc:
        raise UsageError(f"moonshot selfplay: {exc}") from None
    if args.out:
        try:
            open(args.out, "a").close()
        except OSError as exc:
            raise UsageError(f"moonshot selfplay: cannot write --out {args.out}: {exc}") from None
    bar = Progress(args.games, "selfplay", enabled=None if not args.quiet else False)
    out = args.out

    def on_game(i: int, record: dict[str, object]) -> None:
        if out:
            write_jsonl(out, [record])
        bar.update(i + 1)

    try:
        report = selfplay(rules, classes, specs, args.games, args.seed, on_game)
    except BotFailure as exc:
        bar.close()
        print(f"moonshot selfplay: {exc}", file=sys.stderr)
        if exc.bot_traceback:
            print(exc.bot_traceback, end="", file=sys.stderr)
        return 1
    bar.close()
    for line in report.lines():
        print(line)
    if out:
        print(f"transcripts: {out}")
    return 0


def _bot_commands(bot: argparse._SubParsersAction[Parser]) -> None:
    """`moonshot bot register | list | rotate | retire | version | submit | show`."""
    accounts.add_bot_commands(bot)
    hosted.add_commands(bot)


def build_parser() -> Parser:
    """The full command-line parser."""
    parser = Parser(prog="moonshot", description="Moon dominoes: engine, referee, tournaments.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    _add_selfplay(sub)
    commands.add_all(sub, _bot_commands)
    accounts.add_all(sub)
    organiser.add_organiser(sub)
    changes.add_test(sub)
    arena.add_arena(sub)
    export.add_export(sub)
    demo.add_demo(sub)
    add_web(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `moonshot` command."""
    try:
        args = build_parser().parse_args(argv)
        code: int = args.run(args)
        return code
    except UsageError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except MoonError as exc:
        print(f"moonshot: {exc}", file=sys.stderr)
        return 2
    except CommandError as exc:  # one that names its command already is shown as it is
        text = str(exc)
        print(text if text.startswith("moonshot ") else f"moonshot: {text}", file=sys.stderr)
        return exc.code
    except grpc.RpcError as exc:  # a call no command caught: its message, not a traceback
        print(f"moonshot: {commands.rpc_error(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("moonshot: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`moonshot ... | head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
