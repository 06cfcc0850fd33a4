"""Author accounts on the command line: signup, login, logout, whoami, audit; an author's
bots (bot list, rotate, retire, version); the admin's invite, role, limits and assign.

Credentials are kept the way `gh` and `kaggle` keep theirs: `moonshot login` (or
`moonshot signup`) writes the author token to `$XDG_CONFIG_HOME/moonshot/credentials.json`
(else `~/.config/moonshot/`; `$MOONSHOT_CONFIG` names the file outright), one entry per
referee address, in a file only its user can read (0600, in a 0700 folder). Every command
then sends it (`user_token`): an explicit `--admin-token` first, then `$MOONSHOT_TOKEN`,
then the login for that referee, then `$MOONSHOT_ADMIN_TOKEN`, then the admin token a
local `moonshot up` saved (only to that stack's own referee).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc

from clients import commands, flags
from clients.channel import Target
from clients.commands import (
    _admin_flag,
    _rpc_error,
    _server_flag,
    admin_token,
    check_token,
    server_target,
)
from clients.organiser import add_collusion_flags, run_collusion_audit
from clients.parser import CommandError, Parser, UsageError
from proto.moon.v1 import account_pb2, account_pb2_grpc, bot_pb2, bot_pb2_grpc

__all__ = ["add_all", "add_bot_commands", "credentials_path", "load_login", "user_token"]

_ROLE = {account_pb2.ROLE_BOT: "bot", account_pb2.ROLE_AUTHOR: "author",
         account_pb2.ROLE_ORGANISER: "organiser", account_pb2.ROLE_ADMIN: "admin"}


# ------------------------------------------------------------------ credentials


def credentials_path() -> Path:
    """Where logins are kept."""
    named = os.environ.get("MOONSHOT_CONFIG")
    if named:
        return Path(named)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "moonshot" / "credentials.json"


def _read_all(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise UsageError(f"moonshot: {path} can be read by others (mode {mode:o}): it holds "
                         f"tokens; run chmod 600 {path}, or moonshot login again")
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"moonshot: cannot read {path}: {exc}") from None
    return data if isinstance(data, dict) else {}


def _write_all(path: Path, data: dict[str, Any]) -> None:
    """Write the file whole or not at all: a fresh file of mode 0600 made beside it (never
    a name another user could have made first), then renamed over it; its folder made
    0700, or refused when someone else owns it or may write to it."""
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = folder.stat()
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o022:
        raise UsageError(f"moonshot: {folder} is not yours alone (owner or mode "
                         f"{stat.S_IMODE(info.st_mode):o}): tokens are kept in a folder only "
                         "you can write to; set $MOONSHOT_CONFIG to a file in one")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".credentials-", suffix=".tmp")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load_login(address: str) -> dict[str, str] | None:
    """The login kept for a referee address, if any."""
    entry = _read_all(credentials_path()).get("servers", {}).get(address)
    return entry if isinstance(entry, dict) and entry.get("token") else None


def _save_login(address: str, token: str, who: account_pb2.WhoAmIResponse) -> Path:
    path = credentials_path()
    data = _read_all(path)
    data.setdefault("servers", {})[address] = {
        "token": token, "author_id": who.author.author_id, "name": who.author.name}
    _write_all(path, data)
    return path


def user_token(args: argparse.Namespace, need: bool = True) -> str | None:
    """The token this command sends (module doc); with `need`, UsageError without one.

    An author's own token comes before an admin token from the environment (`moonshot up`
    suggests exporting one), so that a logged-in author's bots are theirs; the admin token
    a local `moonshot up` saved goes only to that stack's referee, never elsewhere."""
    if getattr(args, "admin_token", None) is not None:
        return admin_token(args)
    env = os.environ.get("MOONSHOT_TOKEN")
    if env:
        return check_token(env, "$MOONSHOT_TOKEN")
    login = load_login(commands.server_address(args))
    if login is not None:
        return check_token(login["token"], f"the login in {credentials_path()}")
    if os.environ.get("MOONSHOT_ADMIN_TOKEN"):
        return admin_token(args)
    saved = commands.saved_admin_token_here(args)
    if saved or not need:
        return saved
    raise UsageError("moonshot: this command needs an author token: run moonshot signup NAME "
                     "or moonshot login (or give --admin-token)")


def _meta(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


def _accounts(target: Target) -> tuple[grpc.Channel, account_pb2_grpc.AccountServiceStub]:
    channel = target.channel()
    return channel, account_pb2_grpc.AccountServiceStub(channel)


def _call(target: Target, fn: Any, request: Any, token: str | None) -> Any:
    try:
        return fn(request, metadata=_meta(token), timeout=30)
    except grpc.RpcError as exc:
        raise _rpc_error(exc, target) from None


def _when(ts: Any) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts.seconds))


# ------------------------------------------------------------------ signup, login, whoami


def _run_signup(args: argparse.Namespace) -> int:
    target = server_target(args)
    channel, stub = _accounts(target)
    with channel:
        resp = _call(target, stub.SignUp, account_pb2.SignUpRequest(
            name=args.name, invitation=args.invitation or ""), None)
        who = _call(target, stub.WhoAmI, account_pb2.WhoAmIRequest(), resp.token)
    print(f"author {resp.author.name} ({resp.author.author_id})"
          + (" (an organiser)" if resp.author.organiser else ""))
    if args.no_save:
        print(f"token: {resp.token}")
        print("The token is shown only once: keep it (moonshot login reads it).")
    else:
        path = _save_login(commands.server_address(args), resp.token, who)
        print(f"logged in: the token is saved in {path} (only you can read it)")
    return 0


def _run_login(args: argparse.Namespace) -> int:
    token = args.token or os.environ.get("MOONSHOT_TOKEN")
    if not token:
        if sys.stdin.isatty():
            import getpass

            token = getpass.getpass("author token: ")
        else:
            token = sys.stdin.readline()
    token = check_token(token.strip(), "the token")
    target = server_target(args)
    channel, stub = _accounts(target)
    with channel:
        who = _call(target, stub.WhoAmI, account_pb2.WhoAmIRequest(), token)
    if who.role not in (account_pb2.ROLE_AUTHOR, account_pb2.ROLE_ORGANISER):
        raise CommandError(f"moonshot login: that is a {_ROLE.get(who.role, 'unknown')} token,"
                           " not an author's (moonshot signup makes an author)")
    path = _save_login(commands.server_address(args), token, who)
    print(f"logged in to {commands.server_address(args)} as {who.author.name} "
          f"({who.author.author_id}); the token is saved in {path}")
    return 0


def _run_logout(args: argparse.Namespace) -> int:
    path = credentials_path()
    data = _read_all(path)
    address = commands.server_address(args)
    if address not in data.get("servers", {}):
        print(f"not logged in to {address}")
        return 0
    del data["servers"][address]
    _write_all(path, data)
    print(f"logged out of {address} (the token is still valid: moonshot bot rotate replaces "
          "a bot's; ask the admin to replace an author's)")
    return 0


def _run_whoami(args: argparse.Namespace) -> int:
    token = user_token(args)
    target = server_target(args)
    channel, stub = _accounts(target)
    with channel:
        who = _call(target, stub.WhoAmI, account_pb2.WhoAmIRequest(), token)
    role = _ROLE.get(who.role, "nobody")
    if who.role == account_pb2.ROLE_BOT:
        print(f"bot {who.bot_id}")
        return 0
    if who.role == account_pb2.ROLE_ADMIN:
        print("the admin of this stack")
        return 0
    a, lim, use = who.author, who.limits, who.usage
    print(f"{a.name} ({a.author_id}), {role}, since {_when(a.created_at)}")
    print(f"bots: {len(a.bot_ids)}" + (f" ({', '.join(a.bot_ids)})" if a.bot_ids else ""))
    print(f"tests running: {use.tests} of {lim.tests}"
          + (f" ({', '.join(use.test_ids)})" if use.test_ids else ""))
    print(f"pairs in flight: {use.pairs} of {lim.pairs}")
    print(f"house-bot CPU today: {use.house_cpu_s:.0f} s of {lim.house_cpu_s:.0f} s "
          f"(starts over at {_when(use.day_ends_at)})")
    return 0


def _run_audit(args: argparse.Namespace) -> int:
    token = user_token(args)
    if args.what == "collusion":
        return run_collusion_audit(args, token)
    target = server_target(args)
    channel, stub = _accounts(target)
    with channel:
        resp = _call(target, stub.ListAudit, account_pb2.ListAuditRequest(
            author=args.author or "", page_size=args.limit), token)
    for e in resp.entries:
        print(f"{_when(e.at)}  {e.actor:<16} {e.action:<18} {e.target:<16} {e.detail}")
    if not resp.entries:
        print("no entries")
    return 0


# ------------------------------------------------------------------ the admin's


def _run_invite(args: argparse.Namespace) -> int:
    target = server_target(args)
    channel, stub = _accounts(target)
    with channel:
        resp = _call(target, stub.CreateInvitation, account_pb2.CreateInvitationRequest(
            ttl_s=args.days * 86400.0, organiser=args.organiser), admin_token(args))
    print(f"invitation: {resp.invitation}")
    print(f"good for one account until {_when(resp.expires_at)}: moonshot signup NAME "
          f"--invitation {resp.invitation}")
    return 0


def _run_role(args: argparse.Namespace) -> int:
    target = server_target(args)
    channel, stub = _accounts(target)
    with channel:
        resp = _call(target, stub.SetRole, account_pb2.SetRoleRequest(
            author=args.author, organiser=not args.revoke), admin_token(args))
    print(f"{resp.author.name} is {'an organiser' if resp.author.organiser else 'an author'}")
    return 0


def _run_limits(args: argparse.Namespace) -> int:
    target = server_target(args)
    given = [args.tests, args.pairs, args.house_cpu]
    only_slots = args.test_slots is not None and all(v is None for v in given)
    if not args.reset and not only_slots and any(v is None for v in given):
        raise UsageError("moonshot admin limits: give --tests, --pairs and --house-cpu "
                         "(or --reset, or --test-slots alone)")
    if args.test_slots is not None and args.author:
        raise UsageError("moonshot admin limits: --test-slots is the stack's setting: give "
                         "it without an author")
    req = account_pb2.SetLimitsRequest(author=args.author or "", reset=args.reset)
    if args.test_slots is not None:
        req.test_slots = args.test_slots
    if not args.reset and not only_slots:
        req.limits.CopyFrom(account_pb2.Limits(tests=args.tests, pairs=args.pairs,
                                               house_cpu_s=args.house_cpu))
    channel, stub = _accounts(target)
    with channel:
        resp = _call(target, stub.SetLimits, req, admin_token(args))
    who = args.author or "every author without limits of their own"
    lim = resp.limits
    print(f"limits of {who}: {lim.tests} tests at once, {lim.pairs} pairs in flight, "
          f"{lim.house_cpu_s:.0f} s of house-bot CPU a day")
    if not args.author:
        slots = (f"{resp.test_slots} (the admin's setting)" if resp.test_slots else
                 f"{resp.worker_slots} (what the live workers host)")
        print(f"game slots all tests share, round robin between the authors testing: {slots}")
    return 0


def _run_assign(args: argparse.Namespace) -> int:
    target = server_target(args)
    channel, stub = _accounts(target)
    with channel:
        resp = _call(target, stub.AssignBot, account_pb2.AssignBotRequest(
            bot_id=args.bot, author=args.author or ""), admin_token(args))
    print(f"{args.bot} now belongs to {resp.author_id or 'no one'}")
    return 0


# ------------------------------------------------------------------ an author's bots


def _bots(target: Target) -> tuple[grpc.Channel, bot_pb2_grpc.BotServiceStub]:
    channel = target.channel()
    return channel, bot_pb2_grpc.BotServiceStub(channel)


def _run_bot_register(args: argparse.Namespace) -> int:
    from clients.sdk import register

    token = user_token(args, need=bool(args.previous))  # logged in: the bot is yours
    try:
        bot_id, secret = register(server_target(args), args.name, token, previous=args.previous)
    except grpc.RpcError as exc:
        raise _rpc_error(exc, server_target(args)) from None
    if args.json:
        print(json.dumps({"bot_id": bot_id, "name": args.name, "token": secret}))
    else:
        print(f"bot id:  {bot_id}")
        print(f"token:   {secret}")
        print("The token is shown only once: keep it to run the bot "
              "(moonshot bot run --token ...).")
    return 0


def _run_bot_list(args: argparse.Namespace) -> int:
    token = user_token(args, need=not args.all and not args.owner)
    target = server_target(args)
    req = bot_pb2.ListBotsRequest(page_size=1000, mine=not args.all and not args.owner,
                                  owner=args.owner or "", active_only=args.active)
    rows = []
    channel, stub = _bots(target)
    with channel:
        while True:
            resp = _call(target, stub.ListBots, req, token)
            rows += list(resp.bots)
            if not resp.next_page_token:
                break
            req.page_token = resp.next_page_token
    if args.json:
        print(json.dumps([{"bot_id": b.bot_id, "name": b.name, "owner": b.owner_name,
                           "previous": b.previous_id, "connected": b.connected,
                           "retired": b.HasField("retired_at")} for b in rows]))
        return 0
    if not rows:
        print("no bots" + ("" if args.all or args.owner else
                           " yet: moonshot bot register NAME makes one yours"))
        return 0
    names = {b.bot_id: b.name for b in rows}
    print(f"{'name':<24} {'id':<16} {'owner':<14} {'state':<10} previous")
    for b in rows:
        state = "retired" if b.HasField("retired_at") else (
            "connected" if b.connected else "offline")
        print(f"{b.name:<24} {b.bot_id:<16} {b.owner_name or '-':<14} {state:<10} "
              f"{names.get(b.previous_id, b.previous_id) or '-'}")
    return 0


def _run_bot_rotate(args: argparse.Namespace) -> int:
    target = server_target(args)
    channel, stub = _bots(target)
    with channel:
        resp = _call(target, stub.RotateBotToken, bot_pb2.RotateBotTokenRequest(
            bot_id=args.bot), user_token(args))
    if args.json:
        print(json.dumps({"bot": args.bot, "token": resp.token}))
        return 0
    print(f"new token: {resp.token}")
    print("The old token stopped working now, and the bot's connections ended. The new one "
          "is shown only once: moonshot bot run --token ...")
    return 0


def _run_bot_retire(args: argparse.Namespace) -> int:
    target = server_target(args)
    channel, stub = _bots(target)
    with channel:
        resp = _call(target, stub.RetireBot, bot_pb2.RetireBotRequest(bot_id=args.bot),
                     user_token(args))
    print(f"{resp.bot.name} is retired: it plays no new game; its games and ratings stay")
    if resp.left_pools:
        print(f"left the arena of {', '.join(resp.left_pools)}")
    if resp.stopped_test_ids:
        print(f"stopped tests: {', '.join(resp.stopped_test_ids)} (pairs in flight finish)")
    return 0


def _run_bot_version(args: argparse.Namespace) -> int:
    target = server_target(args)
    channel, stub = _bots(target)
    with channel:
        resp = _call(target, stub.SetPreviousVersion, bot_pb2.SetPreviousVersionRequest(
            bot_id=args.bot, previous=args.previous or ""), user_token(args))
    if resp.bot.previous_id:
        print(f"{resp.bot.name} is the next version of {args.previous}: a test of it "
              "defaults to this one as its baseline")
    else:
        print(f"{resp.bot.name} is nobody's next version")
    return 0


def add_bot_commands(bot: argparse._SubParsersAction[Parser]) -> None:
    """`moonshot bot register | list | rotate | retire | version`."""
    p = bot.add_parser("register", help="register a bot (yours, once logged in) and print its "
                                        "id and token")
    p.add_argument("name")
    p.add_argument("--previous", default="",
                   help="one of your bots this one is the next version of")
    p.add_argument("--json", action="store_true", help="print JSON")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_bot_register)
    p = bot.add_parser("list", help="list your bots (--all: everyone's)")
    p.add_argument("--all", action="store_true", help="every bot of the stack")
    p.add_argument("--owner", default=None, help="the bots of this author (id or name)")
    p.add_argument("--active", action="store_true", help="leave out retired bots")
    p.add_argument("--json", action="store_true", help="print JSON")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_bot_list)
    p = bot.add_parser("rotate", help="replace a bot's token: the old one stops at once")
    p.add_argument("bot", help="the bot's id or name")
    p.add_argument("--json", action="store_true", help="print JSON")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_bot_rotate)
    p = bot.add_parser("retire", help="retire a bot: it leaves arenas and plays no new game")
    p.add_argument("bot", help="the bot's id or name")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_bot_retire)
    p = bot.add_parser("version", help="declare a bot the next version of another of yours")
    p.add_argument("bot", help="the new version (id or name)")
    p.add_argument("previous", nargs="?", default="",
                   help="the version before it; empty: none")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_bot_version)


def add_all(sub: argparse._SubParsersAction[Parser]) -> None:
    """`moonshot signup | login | logout | whoami | audit | admin ...`."""
    p = sub.add_parser("signup", help="make an author account and log in with it")
    p.add_argument("name", help="1 to 64 characters of A-Z a-z 0-9 _ . -")
    p.add_argument("--invitation", default=None, help="an invitation from the stack's admin")
    p.add_argument("--no-save", action="store_true",
                   help="print the token instead of saving it")
    _server_flag(p)
    p.set_defaults(run=_run_signup)
    p = sub.add_parser("login", help="save an author token for a referee")
    p.add_argument("--token", default=None,
                   help="the token (default $MOONSHOT_TOKEN, else read from the terminal "
                        "or standard input)")
    _server_flag(p)
    p.set_defaults(run=_run_login)
    p = sub.add_parser("logout", help="forget the token saved for a referee")
    _server_flag(p)
    p.set_defaults(run=_run_logout)
    p = sub.add_parser("whoami", help="who this command runs as: role, bots, limits, use")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_whoami)
    p = sub.add_parser("audit", help="the audit log: yours (the admin's: the stack's); "
                                     "`audit collusion`: an organiser's collusion audit")
    p.add_argument("what", nargs="?", choices=("log", "collusion"), default="log",
                   help="log (default): the audit log; collusion: test every pair of bots "
                        "that sat at different tables of the same boards (an organiser's "
                        "token)")
    add_collusion_flags(p)
    p.add_argument("--author", default=None, help="(admin) one author's entries")
    p.add_argument("--limit", type=int, default=50, help="entries to show, newest first")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_audit)

    admin = sub.add_parser("admin", help="the admin's account calls: invite, role, limits, "
                                         "assign").add_subparsers(
        dest="admin_command", required=True, parser_class=Parser)
    p = admin.add_parser("invite", help="issue a one-use invitation to sign up")
    p.add_argument("--days", type=float, default=7.0, help="how long it is good for")
    p.add_argument("--organiser", action="store_true", help="the account is an organiser")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_invite)
    p = admin.add_parser("role", help="make an author an organiser (--revoke: take it)")
    p.add_argument("author", help="the author's id or name")
    p.add_argument("--revoke", action="store_true")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_role)
    p = admin.add_parser("limits", help="set an author's limits, or every author's default")
    p.add_argument("author", nargs="?", default="", help="the author (empty: the default)")
    p.add_argument("--tests", type=int, default=None, help="tests at once")
    p.add_argument("--pairs", type=int, default=None, help="pairs in flight")
    p.add_argument("--house-cpu", type=float, default=None,
                   help="house-bot CPU seconds a day")
    p.add_argument("--reset", action="store_true", help="back to the defaults")
    p.add_argument("--test-slots", type=flags.int_in(0, 1_000_000), default=None, metavar="N",
                   help="the game slots all tests share, split round robin between the "
                        "authors testing (0: as many as the live workers host); no author")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_limits)
    p = admin.add_parser("assign", help="give a bot to an author (no author: to no one)")
    p.add_argument("bot", help="the bot's id or name")
    p.add_argument("author", nargs="?", default="", help="the author's id or name")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_assign)
