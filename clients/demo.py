"""`moonshot demo`: the whole product on one machine, start to finish, in about a minute.

It brings up Redis, a referee and workers (`clients.stack`), registers the
built-in bots over gRPC and runs each as its own `moonshot bot run` process,
plays a 3-player round robin and a 2v2 single-elimination bracket with a live
progress bar, prints the standings, the bracket and the ratings, and stops
everything (or, with --keep, keeps it all running until Ctrl-C). It prints the
address of the web pages (`moonshot web`) at the start, where both tournaments can
be watched live and every game replayed.
"""

from __future__ import annotations

import argparse
import json
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from clients import flags
from clients.admin import Admin
from clients.commands import data_folder
from clients.organiser import watch_tournament
from clients.parser import CommandError, Parser
from clients.render import bracket_text, crosstable_text, ratings_table, standings_table
from clients.stack import LocalStack
from proto.moon.v1 import rating_pb2

__all__ = ["add_demo", "run_demo"]

# Seven bots: the 3p round robin then plays real duplicate boards (7 rounds of 2 disjoint
# tables sharing a board, every pair meeting twice), and no bot sees a board twice.
_BOTS = (("greedy", "greedy"), ("greedy", "greedy"), ("greedy", "greedy"),
         ("highest", "examples.highest_bot:HighestBot"),
         ("highest", "examples.highest_bot:HighestBot"),
         ("random", "random"), ("random", "random"))


NEXT_STEPS = """
The demo's pages went with it. What next:
  moonshot demo --keep      the same, then everything stays up (web pages, replays of
                            every game) until Ctrl-C
  examples/highest_bot.py   a whole bot in 20 lines; try yours against the built-ins:
                            moonshot selfplay --bots examples.highest_bot:HighestBot,random,random
  moonshot up               a referee, workers and web pages of your own, then
                            moonshot bot register / bot run / tournament create
                            (README.md: "Write a bot", "Run tournaments")"""


def _say(text: str) -> None:
    print(text, flush=True)


def _fitted(admin: Admin, pool: str, timeout: float = 60.0) -> rating_pb2.GetRatingsResponse:
    """The pool's ratings once the fit covers every released game (it runs just after the
    last results; a few seconds at most here)."""
    end = time.monotonic() + timeout
    while True:
        resp = admin.get_ratings(pool)
        if (resp.fitted_games == resp.games and not resp.provisional) or \
                time.monotonic() > end:
            return resp
        time.sleep(0.2)


def _wait_for_a_stop() -> None:
    """Block until Ctrl-C, SIGTERM or SIGHUP (each handled, so a demo started in the
    background, where SIGINT is ignored, still stops cleanly)."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(0.5):
        pass


def run_demo(data_dir: Path | None = None, workers: int = 2, quick: bool = False,
             keep: bool = False) -> int:
    """Run the demo; returns the exit code. With `keep`, everything keeps running at the
    end (the web pages replay the games) until Ctrl-C."""
    started = time.monotonic()
    finished = False  # ran to the end without --keep: say what to do next
    temp = data_dir is None
    data = Path(tempfile.mkdtemp(prefix="moonshot-demo-")) if temp else data_dir
    assert data is not None
    stack = LocalStack(data, listen="127.0.0.1:0", workers=workers)
    try:
        _say(f"starting Redis, a referee and {workers} workers (data in {data}) ...")
        stack.start()
        _say(f"referee listening on {stack.address}")
        web = stack.web_address
        if web:
            _say(f"web pages on {web}: watch the tournaments live there, then replay any game")
        admin = Admin(stack.address, stack.admin_token)
        suffix = "" if temp else "-" + secrets.token_hex(2)
        bots: list[tuple[str, str]] = []  # (bot id, name)
        counts: dict[str, int] = {}
        for kind, spec in _BOTS:
            counts[kind] = counts.get(kind, 0) + 1
            name = f"{kind}-{counts[kind]}{suffix}"
            reg = stack.spawn(f"register-{name}", ["bot", "register", name, "--json",
                                                   "--server", stack.address])
            reg.popen.wait(30)
            if reg.popen.returncode != 0:
                raise RuntimeError(f"registering {name} failed:\n{reg.output()}")
            info = json.loads(reg.output().strip().splitlines()[-1])
            bot = stack.spawn(f"bot-{name}", ["bot", "run", "--bot", spec, "--server",
                                              stack.address, "--token", info["token"]])
            bot.wait_for(r"connected to ", timeout=30)
            bots.append((info["bot_id"], name))
        _say(f"registered and connected {len(bots)} bot processes: "
             f"{', '.join(n for _, n in bots)}")

        ids = [b for b, _ in bots]
        _say("\n== 3-player round robin on duplicate boards (two disjoint tables a board) ==")
        rr = admin.create_tournament(
            name="demo round robin", players=3, format="round_robin", bot_ids=ids,
            seeding="given", seed=2026, rules={"max_hands": "30" if quick else "100"})
        if web:
            _say(f"watch it live: {web}/t/{rr.tournament_id}")
        st = watch_tournament(admin, rr.tournament_id, "round robin", organiser=True)
        _say(standings_table(st, f"standings ({st.matches_done} games)", "3p"))
        _say("")
        _say(crosstable_text(st))

        _say("\n== 2v2 single elimination (one bot per team), each game on a board of its own ==")
        ko = admin.create_tournament(
            name="demo knockout", players=4, format="single_elimination", bot_ids=ids,
            seeding="given", seed=2027, options={"series_length": 1 if quick else 3},
            rules={"max_hands": "30" if quick else "100"})
        if web:
            _say(f"watch it live: {web}/t/{ko.tournament_id}")
        st2 = watch_tournament(admin, ko.tournament_id, "knockout", organiser=True)
        _say(bracket_text(st2))
        _say("")
        _say(standings_table(st2, f"knockout standings ({st2.matches_done} games)", "2v2"))

        _say("")
        _say(ratings_table(_fitted(admin, "3p"), "ratings, 3p pool"))
        _say("")
        _say(ratings_table(_fitted(admin, "2v2"), "ratings, 2v2 pool"))
        admin.close()
        if keep:
            _say(f"\ndemo finished in {time.monotonic() - started:.0f} s; --keep: everything "
                 f"keeps running until Ctrl-C (referee {stack.address})")
            if web:
                _say(f"  the round robin:  {web}/t/{rr.tournament_id}\n"
                     f"  the knockout:     {web}/t/{ko.tournament_id}\n"
                     f"  ratings:          {web}/ratings/3p and {web}/ratings/2v2\n"
                     f"  every game:       {web}/games (each one replays)")
            _say(f"  from a shell: export MOONSHOT_SERVER={stack.address} "
                 f"MOONSHOT_ADMIN_TOKEN={stack.admin_token}; moonshot tournament list")
            _wait_for_a_stop()
            _say("stopping ...")
            return 0
        _say(f"\ndemo finished in {time.monotonic() - started:.0f} s; stopping ...")
        finished = True
        return 0
    except KeyboardInterrupt:
        print("interrupted; stopping ...", file=sys.stderr)
        return 130
    finally:
        stack.stop()
        if temp:
            shutil.rmtree(data, ignore_errors=True)
        _say("stopped")
        if finished:
            _say(NEXT_STEPS)


def _run_demo(args: argparse.Namespace) -> int:
    data = data_folder(args.data, "moonshot demo") if args.data else None
    try:
        return run_demo(data, workers=args.workers, quick=args.quick, keep=args.keep)
    except RuntimeError as exc:
        raise CommandError(str(exc)) from None


def add_demo(sub: argparse._SubParsersAction[Parser]) -> None:
    """Add the demo command."""
    p = sub.add_parser("demo", help="run a whole demo: stack, bots, a round robin and a bracket")
    p.add_argument("--data", default=None, help="keep the demo's data here (default: a temp dir)")
    p.add_argument("--workers", type=flags.int_in(*flags.WORKERS), default=2,
                   help="RQ worker processes to start")
    p.add_argument("--quick", action="store_true", help="smaller tournaments (for tests)")
    p.add_argument("--keep", action="store_true",
                   help="keep everything running at the end (to replay the games on the web "
                        "pages) until Ctrl-C")
    p.set_defaults(run=_run_demo)
