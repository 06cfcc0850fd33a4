"""The networked commands: referee, worker, bot register/run, match play/show.

Each command imports the heavy parts it runs (the referee, the worker, the SDK)
in its own function: a bot process never loads the referee's or the worker's
code (about 1 s and 90 MB less per process).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import logging
import math
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import grpc

from clients import flags
from clients.channel import Target, rpc_failure, target_of
from clients.parser import CommandError, Parser, UsageError
from clients.redisproc import FSYNC
from clients.wire import POOL_CHOICES
from moon import MoonError, Rules
from proto.moon.v1 import game_pb2
from store.bots import shown
from store.errors import InvalidArgument
from store.records import SandboxLimits

__all__ = [
    "add_all",
    "add_sandbox_flag",
    "admin_token",
    "check_out",
    "check_redis",
    "check_token",
    "data_folder",
    "newest_named",
    "optional_admin_token",
    "parse_duration_ms",
    "rpc_error",
    "rules_options",
    "sandbox_limits",
    "save_redis_url",
    "save_web_address",
    "server_address",
    "web_link",
]

DEFAULT_SERVER = "127.0.0.1:50051"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"
REDIS_WAIT_S = 60.0  # a referee or worker started while Redis is away waits this long
DATA_DIR = "moonshot-data"



def parse_duration_ms(text: str) -> int:
    """`2s`, `500ms`, `1.5s`, `1m` or a bare number of seconds, in milliseconds."""
    value = flags.parse_duration(text)
    if value is None or not math.isfinite(value):
        raise UsageError(f"moonshot: bad duration {text!r}: use a form like 2s, 500ms or 1m")
    return round(value)


def check_token(token: str, source: str) -> str:
    """`token` if it can travel in gRPC metadata; else a UsageError naming `source`."""
    problem = flags.token_problem(token)
    if problem:
        raise UsageError(f"moonshot: {source} {problem}")
    return token


def given_token(flag_value: str | None, flag: str, env_var: str) -> str | None:
    """The token from `flag` if given, else from $`env_var` if set, else None; checked
    (UsageError naming where it came from) so that it can travel in gRPC metadata."""
    if flag_value is not None:
        return check_token(flag_value, flag)
    env = os.environ.get(env_var)
    return check_token(env, f"${env_var}") if env else None


def server_address(args: argparse.Namespace) -> str:
    """--server (checked by its argparse type), else $MOONSHOT_SERVER, else the local
    default; UsageError for a $MOONSHOT_SERVER that is not HOST:PORT."""
    if args.server is not None:
        return str(args.server)
    env = os.environ.get("MOONSHOT_SERVER")
    if not env:
        return DEFAULT_SERVER
    problem = flags.address_problem(env)
    if problem:
        raise UsageError(f"moonshot: $MOONSHOT_SERVER {problem}")
    return env


def server_target(args: argparse.Namespace) -> Target:
    """The referee to talk to and how: --server, --tls (or $MOONSHOT_TLS=1), --ca-cert (or
    $MOONSHOT_CA_CERT; it implies TLS)."""
    ca = getattr(args, "ca_cert", None) or os.environ.get("MOONSHOT_CA_CERT") or None
    tls = bool(getattr(args, "tls", False)) or os.environ.get("MOONSHOT_TLS", "") in (
        "1", "true", "yes")
    try:
        return target_of(server_address(args), tls, ca)
    except OSError as exc:
        raise UsageError(f"moonshot: cannot read --ca-cert {ca}: {exc.strerror or exc}"
                         ) from None


_admin_source = ""  # where this command's admin token came from, for a refusal's message


def _data_token_path() -> Path:
    return Path(os.environ.get("MOONSHOT_DATA", DATA_DIR)) / "admin-token"


def admin_token(args: argparse.Namespace) -> str:
    """--admin-token, else $MOONSHOT_ADMIN_TOKEN, else the token `moonshot up` saved."""
    global _admin_source
    flag = getattr(args, "admin_token", None)
    token = given_token(flag, "--admin-token", "MOONSHOT_ADMIN_TOKEN")
    if token:
        _admin_source = "--admin-token" if flag is not None else "$MOONSHOT_ADMIN_TOKEN"
        return token
    saved = _data_token_path()
    if saved.exists() and not _saved_for_another(args):
        try:
            text = saved.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not text"
            raise UsageError(f"moonshot: cannot read the admin token from {saved}: "
                             f"{reason}") from None
        _admin_source = str(saved)
        return check_token(text.strip(), f"the admin token in {saved}")
    if saved.exists():
        raise UsageError(f"moonshot: the admin token in {saved} is the one of the stack "
                         f"`moonshot up` runs there, not of {server_address(args)}: pass "
                         "that referee's --admin-token (a token is never sent elsewhere)")
    raise UsageError(
        "moonshot: this command needs the admin token: pass --admin-token, "
        "set MOONSHOT_ADMIN_TOKEN, or run it where `moonshot up` saved moonshot-data/admin-token"
    )


def _token_refused(details: str) -> str:
    """A refused admin token (or none sent), said with where this command's token came
    from and where the right one is."""
    where = ("`moonshot up` prints it and saves it in <data folder>/admin-token; a referee "
             "started alone takes its --admin-token or $MOONSHOT_ADMIN_TOKEN, or prints the "
             "one it makes at its first start")
    if not _admin_source:
        return (f"{details.rstrip('.')}: this command sent no admin token: pass "
                "--admin-token, set MOONSHOT_ADMIN_TOKEN, or run it where `moonshot up` "
                f"saved moonshot-data/admin-token ({where})")
    if _admin_source.startswith(("--", "$")):
        source = f"given by {_admin_source}" if _admin_source.startswith("--") \
            else f"in {_admin_source}"
    else:
        source = f"saved in {_admin_source} (by a `moonshot up`, perhaps of another stack)"
    return (f"the referee rejected the admin token {source}: it is not this stack's admin "
            f"token ({where})")


def optional_admin_token(args: argparse.Namespace) -> str | None:
    """The admin token when one is given (--admin-token, $MOONSHOT_ADMIN_TOKEN) or saved
    by `moonshot up` in the data folder; None without one (a public view, then)."""
    given = (getattr(args, "admin_token", None) is not None
             or bool(os.environ.get("MOONSHOT_ADMIN_TOKEN")))
    if given:
        return admin_token(args)  # a bad one given on purpose is an error
    try:
        return admin_token(args)
    except UsageError:
        return None


WEB_FILE = "web.json"  # in the data folder: where `moonshot up` serves the pages, for whom
REDIS_URL_FILE = "redis-url"  # in the data folder: the Redis a running `moonshot up` uses
REFEREE_FILE = "referee"  # in the data folder: the address of `moonshot up`'s referee


def _saved_for_another(args: argparse.Namespace) -> bool:
    """True when the data folder says its admin token is another referee's than the one
    this command talks to (a folder from before that note says nothing)."""
    if getattr(args, "server", "missing") == "missing":
        return False  # a command with no referee of its own (the stack's own tools)
    try:
        referee = (Path(os.environ.get("MOONSHOT_DATA", DATA_DIR)) / REFEREE_FILE
                   ).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return False
    return referee != server_address(args)


def saved_admin_token_here(args: argparse.Namespace) -> str | None:
    """The admin token `moonshot up` saved, only when this command talks to that stack's
    own referee (the data folder says which): a token must never travel to another."""
    data = Path(os.environ.get("MOONSHOT_DATA", DATA_DIR))
    try:
        referee = (data / REFEREE_FILE).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if referee != server_address(args) or not _data_token_path().exists():
        return None
    return admin_token(argparse.Namespace(admin_token=None))


def save_web_address(data: Path, web: str, referee: str) -> Path:
    """Note where the web pages of the referee at `referee` are (`moonshot up` does)."""
    path = data / WEB_FILE
    path.write_text(json.dumps({"web": web, "referee": referee}) + "\n")
    return path


def save_redis_url(data: Path, url: str) -> Path:
    """Note the Redis a running `moonshot up` uses (readable by its owner only: a URL may
    hold a password), so `moonshot export` finds the games not archived yet."""
    path = data / REDIS_URL_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "w") as fh:
        fh.write(url + "\n")
    return path


def web_link(args: argparse.Namespace, page: str) -> str | None:
    """The address of a web page (`/t/<id>`, `/game/<id>`) when web pages of the referee
    this command talks to are up: $MOONSHOT_WEB, else the ones `moonshot up` serves for
    that referee (noted in its data folder). None when none answers."""
    import socket
    import urllib.parse

    base = os.environ.get("MOONSHOT_WEB", "").strip().rstrip("/")
    if not base:
        try:
            noted = json.loads((Path(os.environ.get("MOONSHOT_DATA", DATA_DIR))
                                / WEB_FILE).read_text())
            if noted.get("referee") != server_address(args):
                return None
            base = str(noted["web"]).rstrip("/")
        except (OSError, ValueError, KeyError, AttributeError, UsageError):
            return None
    parts = urllib.parse.urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    try:  # a page address only where something answers
        socket.create_connection((parts.hostname, parts.port or 80), timeout=0.5).close()
    except OSError:
        return None
    return base + page


def check_redis(url: str, source: str, prog: str, wait_s: float = 0.0) -> None:
    """Refuse a Redis URL that is malformed (UsageError), or that the server behind it
    refuses, e.g. a password or a database number it does not have (CommandError).

    A server that does not answer (down, restarting, still loading its append-only
    file) is waited for up to `wait_s` seconds, with backoff and jitter and one line
    on stderr, so a part started (or restarted) while Redis is away comes up with it
    instead of giving up; after that, CommandError.
    """
    import random
    import time

    import redis

    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=10)
    except ValueError as exc:
        why = "" if "scheme" in str(exc) else f" ({exc})"
        raise UsageError(f"{prog}: {source} must be a redis://, rediss:// or unix:// URL "
                         f"like {DEFAULT_REDIS}, got {shown(url)!r}{why}") from None
    end = time.monotonic() + wait_s
    pause, said = 0.2, False
    try:
        while True:
            try:
                client.ping()
                return
            except redis.AuthenticationError as exc:
                raise CommandError(f"Redis at {shown(url)} ({source}) refused the password: "
                                   f"{exc}") from None
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                if time.monotonic() >= end:
                    raise CommandError(f"cannot reach Redis at {shown(url)} ({source}): "
                                       f"{exc}") from None
                if not said:
                    print(f"{prog}: waiting up to {wait_s:g} s for Redis at {shown(url)}: "
                          f"{exc}", file=sys.stderr, flush=True)
                    said = True
                time.sleep(min(pause * random.uniform(0.5, 1.0), max(0.0, end - time.monotonic())))
                pause = min(pause * 2, 5.0)
            except redis.RedisError as exc:
                raise CommandError(f"Redis at {shown(url)} ({source}) refused the connection: "
                                   f"{exc}") from None
    finally:
        client.close()


def check_out(out: str | None, prog: str) -> None:
    """Refuse an --out file that cannot be written, before any work is done."""
    if not out:
        return
    path = Path(out)
    if path.is_dir():
        raise UsageError(f"{prog}: --out {out} is a folder: give a file name")
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(f"{prog}: cannot write --out {out}: no folder {parent}")
    if not os.access(path if path.exists() else parent, os.W_OK):
        raise UsageError(f"{prog}: cannot write --out {out}: permission denied")


def data_folder(data: str, prog: str) -> Path:
    """The --data folder, created if needed; UsageError if it cannot be."""
    path = Path(data)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{prog}: cannot use --data {data}: {exc.strerror or exc}") from None
    return path


def rules_options(players: int, assignments: list[str], prog: str) -> dict[str, str]:
    """The --rule KEY=VALUE options, checked here as the referee will check them, as the
    request's rules map (key and value stripped, so both sides read the same option)."""
    try:
        Rules.parse_assignments(players, assignments)  # fail fast, before the network
    except MoonError as exc:
        raise UsageError(f"{prog}: {exc}") from None
    options: dict[str, str] = {}
    for item in assignments:
        key, _, value = item.partition("=")
        options[key.strip()] = value.strip()
    return options


def add_sandbox_flag(p: argparse.ArgumentParser) -> None:
    """`--sandbox NAME=VALUE`: an event's limits on its hosted bots' sandboxes."""
    p.add_argument("--sandbox", action="append", default=[], metavar="NAME=VALUE",
                   help="a limit on each hosted bot's sandbox while it plays here: "
                        "memory_mb, pids, cpu_s, cpu_cores or scratch_mb (memory_mb=256); "
                        "repeat for several (default: the hosts' own)")


def sandbox_limits(assignments: list[str], prog: str) -> game_pb2.SandboxLimits | None:
    """The --sandbox NAME=VALUE limits, checked here as the referee will check them (not
    against the hosts': the referee knows them), as a message (None: none)."""
    try:
        limits = SandboxLimits.parse(assignments)
    except InvalidArgument as exc:
        why = str(exc).removeprefix("sandbox.").removeprefix("sandbox: ")
        raise UsageError(f"{prog}: --sandbox {why}") from None
    return game_pb2.SandboxLimits(**limits.items()) if limits else None  # type: ignore[arg-type]


def _rpc_error(exc: grpc.RpcError, target: Target | None = None) -> CommandError:
    """One line for a failed call (`clients.channel.rpc_failure`: the referee's own
    message, never gRPC's status code, or why no referee answered); a refused admin token
    says where this command's came from."""
    code = exc.code() if hasattr(exc, "code") else None
    details = (exc.details() if hasattr(exc, "details") else "") or ""
    if code == grpc.StatusCode.UNAUTHENTICATED and "admin token" in details:
        return CommandError(_token_refused(details))
    return CommandError(rpc_failure(exc, target))


rpc_error = _rpc_error


def _server_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server", type=flags.address, default=None, metavar="HOST:PORT",
                   help=f"referee address (default $MOONSHOT_SERVER or {DEFAULT_SERVER})")
    p.add_argument("--tls", action="store_true",
                   help="connect with TLS, trusting the system's CAs ($MOONSHOT_TLS=1)")
    p.add_argument("--ca-cert", default=None, metavar="FILE.pem",
                   help="connect with TLS, trusting this CA ($MOONSHOT_CA_CERT)")


def _admin_flag(p: argparse.ArgumentParser, what: str = "") -> None:
    p.add_argument("--admin-token", default=None,
                   help="organiser token (default $MOONSHOT_ADMIN_TOKEN, "
                        "else moonshot-data/admin-token)" + (f"; {what}" if what else ""))


def _setup_logging(verbose: bool, json_lines: bool = False) -> None:
    from telemetry import logs

    logs.setup(logging.DEBUG if verbose else logging.INFO, logs.wanted(json_lines))


def _redis_wait_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--redis-wait", type=flags.seconds_at_least_0, default=REDIS_WAIT_S,
                   metavar="SECONDS",
                   help="wait this long for a Redis that does not answer at start (down, "
                        f"restarting, loading its data) before giving up (default "
                        f"{REDIS_WAIT_S:g})")


def _archive_flag(p: argparse.ArgumentParser, default_help: str) -> None:
    p.add_argument("--archive", default=os.environ.get("MOONSHOT_ARCHIVE") or None,
                   metavar="URL",
                   help="the database of record for finished games: sqlite:///PATH or "
                        "postgresql://USER@HOST/DB (default $MOONSHOT_ARCHIVE, else "
                        f"{default_help})")


def stack_archive(given: str | None, redis_url: str, prog: str) -> str:
    """The stack's archive URL: `given` (checked, and noted in Redis for the parts started
    without one), else the one the stack noted; '' when it has none. One line for a URL
    that is no database's, or one that is not the stack's."""
    import redis

    from archive.db import check_url
    from archive.errors import BadURL
    from store import archiving

    r = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        if not given:
            return archiving.url(r)
        try:
            check_url(given)
        except BadURL as exc:
            raise UsageError(f"{prog}: --archive: {exc}") from None
        noted = archiving.set_url(r, given)
        if noted != given:
            raise CommandError(
                f"{prog}: the stack at {shown(redis_url)} archives to {_hide_password(noted)}; "
                "every part of a stack archives to one database: give that one (or no "
                "--archive: the stack's is used)")
        return given
    finally:
        r.close()


def _hide_password(url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy reads: say nothing of it
        return "(another URL)"


def _telemetry_flags(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--metrics-listen", type=flags.listen_address, default=None,
                   metavar="HOST:PORT",
                   help=f"serve the {what}'s Prometheus metrics at http://HOST:PORT/metrics "
                        "(port 0: a free one, printed at start); for operators only: keep "
                        "it off any address bots can reach")
    p.add_argument("--log-json", action="store_true",
                   help="log one JSON object a line on stderr, with match and bot ids "
                        "($MOONSHOT_LOG_JSON=1)")


# ------------------------------------------------------------ referee


def _run_referee(args: argparse.Namespace) -> int:
    from server.app import serve

    token = given_token(args.admin_token, "--admin-token", "MOONSHOT_ADMIN_TOKEN")
    check_redis(args.redis, "--redis", "moonshot referee", args.redis_wait)
    _setup_logging(args.verbose, args.log_json)
    if args.replace_admin_token and not token:
        raise UsageError("moonshot referee: --replace-admin-token needs the new token in "
                         "--admin-token or $MOONSHOT_ADMIN_TOKEN")
    if bool(args.tls_cert) != bool(args.tls_key):
        raise UsageError("moonshot referee: --tls-cert and --tls-key go together")
    tls = None
    if args.tls_cert:
        try:
            tls = (Path(args.tls_key).read_bytes(), Path(args.tls_cert).read_bytes())
        except OSError as exc:
            raise UsageError(f"moonshot referee: cannot read {exc.filename}: "
                             f"{exc.strerror}") from None
    archive_url = stack_archive(args.archive, args.redis, "moonshot referee")
    from server.accounts import Settings

    serve(args.listen, args.redis, args.admin_token,
          settings=Settings(args.signup, args.registration, args.registrations_per_hour,
                            args.versions_per_day),
          replace_admin_token=args.replace_admin_token,
          auth_free_failures=args.auth_free_failures, tls=tls,
          metrics_listen=args.metrics_listen, archive_url=archive_url,
          listen_unix=args.listen_unix or "")
    return 0


def _run_worker(args: argparse.Namespace) -> int:
    import redis

    from workers import failpoints
    from workers.queues import rq_connection
    from workers.recovery import start_recovery_thread
    from workers.worker import NameTaken, make_worker

    check_redis(args.redis, "--redis", "moonshot worker", args.redis_wait)
    try:
        failpoints.check()
    except ValueError as exc:
        raise UsageError(f"moonshot worker: {exc}") from None
    _setup_logging(args.verbose, args.log_json)
    conn = rq_connection(args.redis)
    try:
        conn.ping()
    except redis.ConnectionError as exc:
        raise CommandError(f"cannot reach Redis at {shown(args.redis)}: {exc}") from None
    if args.metrics_listen:
        from workers import exporter

        try:
            host, port = exporter.serve(args.metrics_listen, args.redis)
        except OSError as exc:
            raise CommandError(str(exc)) from None
        print(f"worker metrics listening on {host}:{port}", flush=True)
    archive_url = stack_archive(args.archive, args.redis, "moonshot worker")
    _use_archive(archive_url)
    if archive_url:
        from store import archiving, bots

        with contextlib.closing(bots.connect(args.redis)) as r:
            again = archiving.unpark(r)
        if again:
            logging.getLogger("moonshot.archive").warning(
                "archive: %d games it refused before are queued again", again)
    worker = make_worker(conn, name=args.name, concurrency=args.concurrency)
    # Recovery (re-queueing what a crash left behind) runs in a thread of every worker,
    # one pass per period across them all (see workers.recovery for why not RQ's scheduler);
    # a worker in burst mode only keeps its liveness, so its matches are left to it.
    start_recovery_thread(args.redis, instance=worker.instance, recovery=not args.burst,
                          slots=worker.concurrency)
    try:
        worker.work(burst=args.burst, logging_level="DEBUG" if args.verbose else "INFO")
    except NameTaken as exc:
        raise CommandError(f"moonshot worker: {exc}") from None
    # The loop has ended and its matches handed over: the process exits now. Should
    # something hold it (a thread that will not end), every thread's stack goes to
    # stderr after 5 s, so that the operator sees what, not just a worker that hangs.
    import faulthandler

    faulthandler.dump_traceback_later(5.0)
    return 0


def _run_host(args: argparse.Namespace) -> int:
    import signal
    import socket
    import threading

    from archive.db import open_archive
    from hosting.host import Host
    from hosting.sandbox import check
    from store import bots
    from store.hosted import Limits
    from workers.queues import rq_connection

    why = check()
    if why is not None:
        raise CommandError(f"moonshot host: cannot build sandboxes here: {why}")
    try:
        limits = Limits(memory_mb=args.memory_mb, pids=args.pids, cpu_s=args.cpu_s,
                        cpu_cores=args.cpu_cores, scratch_mb=args.scratch_mb)
    except InvalidArgument as exc:
        raise UsageError(f"moonshot host: {exc}") from None
    check_redis(args.redis, "--redis", "moonshot host", args.redis_wait)
    _setup_logging(args.verbose, args.log_json)
    archive_url = stack_archive(args.archive, args.redis, "moonshot host")
    if not archive_url:
        raise CommandError("moonshot host: the stack keeps no archive, where hosted "
                           "versions' packages live: start the stack with --archive URL")
    data = Path(args.data).resolve()
    data.mkdir(parents=True, exist_ok=True)
    name = args.name or f"{socket.gethostname()}-{os.getpid()}"
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    referee = f"unix:{Path(args.referee_socket).resolve()}" if args.referee_socket \
        else args.referee
    host = Host(bots.connect(args.redis), rq_connection(args.redis), open_archive(archive_url),
                referee, name, data, slots=args.slots, idle_s=args.idle, limits=limits,
                direct=bool(args.referee_socket), loosen_after_s=args.loosen_after,
                keep_unpacked_s=args.keep_unpacked)
    print(f"host {name} running hosted versions ({args.slots} slots) for the referee at "
          f"{referee}", flush=True)
    host.run(stopping)
    return 0


def default_archive_url(data: Path) -> str:
    """`moonshot up`'s archive: SQLite in its data folder."""
    from archive.db import default_url

    return default_url(data.resolve())


class ArchiveWatch:
    """What `moonshot up` says of the archive: when finished games pile up in Redis (the
    archive away, or slower than play), every minute while they grow, and once when they
    drain again."""

    EVERY_S = 60.0
    WAITING = 1000  # games waiting past which it is worth a line

    def __init__(self, redis_url: str) -> None:
        self.redis_url = redis_url
        self.at = 0.0
        self.last = 0
        self.warned = False

    def look(self) -> str:
        """A line to print now, or ''."""
        import redis

        from store import archiving

        now = time.monotonic()
        if not self.redis_url or now - self.at < self.EVERY_S:
            return ""
        self.at = now
        try:
            r = redis.Redis.from_url(self.redis_url, decode_responses=True)
            waiting = archiving.pending_count(r)
            r.close()
        except redis.RedisError:
            return ""
        grew, self.last = waiting > self.last, waiting
        if waiting >= self.WAITING and grew:
            self.warned = True
            return (f"{waiting} finished games wait in Redis for the archive and their "
                    "number grows: is the archive reachable? (see logs/worker-*.log)")
        if self.warned and waiting < self.WAITING:
            self.warned = False
            return f"the archive caught up: {waiting} finished games wait in Redis"
        return ""


def _use_archive(url: str) -> None:
    """Archive finished games there: opened (and migrated) now, so that a schema too new is
    one line at start; a database away is not: play goes on, games wait in Redis."""
    import logging

    from archive.errors import SchemaTooNew, Unavailable
    from workers import jobs

    log = logging.getLogger("moonshot.archive")
    if not url:
        log.warning("this stack has no archive (--archive, or `moonshot up`): finished games "
                    "stay in Redis")
        return
    jobs.use_archive(url)
    try:
        jobs.open_archive_once()
    except SchemaTooNew as exc:
        raise CommandError(f"moonshot worker: {exc}") from None
    except Unavailable as exc:
        log.warning("%s; finished games wait in Redis until it is back", exc)


def _run_up(args: argparse.Namespace) -> int:
    import signal

    from clients.stack import MAX_RESTARTS, RESTART_WINDOW_S, LocalStack

    given_token(None, "", "MOONSHOT_ADMIN_TOKEN")  # checked before anything starts
    redis_url = args.redis if args.redis is not None else os.environ.get("REDIS_URL") or None
    if redis_url is not None:
        if args.redis_fsync is not None:
            raise UsageError("moonshot up: --redis-fsync is for the Redis that `moonshot up` "
                             "starts; with --redis or $REDIS_URL, set appendfsync on that "
                             "Redis itself")
        check_redis(redis_url, "--redis" if args.redis is not None else "$REDIS_URL",
                    "moonshot up")
    data = data_folder(args.data, "moonshot up")
    if args.log_json:
        os.environ["MOONSHOT_LOG_JSON"] = "1"  # the referee and workers inherit it
    archive_url = args.archive or default_archive_url(data)
    stack = LocalStack(data, listen=args.listen, workers=args.workers, redis_url=redis_url,
                       replace_admin_token=args.replace_admin_token,
                       web_listen=None if args.no_web else args.web,
                       metrics_listen=args.metrics_listen,
                       redis_fsync=args.redis_fsync or "everysec", archive_url=archive_url)
    stopping = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_signal)  # its terminal closed: stop cleanly, not orphan
    try:
        stack.start()
    except RuntimeError as exc:
        stack.stop()
        raise CommandError(str(exc)) from None
    except BaseException:
        stack.stop()  # nothing it started may outlive it
        raise
    token_file = Path(args.data) / "admin-token"
    (data / REFEREE_FILE).write_text(stack.address + "\n")  # whose admin token it is
    web_file = save_web_address(data, stack.web_address, stack.address) \
        if stack.web_address else None
    redis_file = save_redis_url(data, stack.redis_url or "")
    lines = [f"moonshot is up ({args.workers} workers); Ctrl-C stops everything",
             f"  referee:     {stack.address}"]
    if stack.web_address:
        lines.append(f"  web pages:   {stack.web_address}")
    lines += [f"  metrics:     http://{where}/metrics ({part})"
              for part, where in stack.metrics.items()]
    web_env = f" MOONSHOT_WEB={stack.web_address}" if stack.web_address else ""
    lines += [f"  redis:       {shown(stack.redis_url or '')}",
              f"  archive:     {_hide_password(archive_url)}",
              f"  hosting:     {stack.host_note or 'bots submitted as code run here'}",
              f"  admin token: {stack.admin_token}",
              f"  data:        {Path(args.data).resolve()} (logs in logs/, token in "
              f"{token_file.name})",
              f"  export MOONSHOT_SERVER={stack.address} MOONSHOT_ADMIN_TOKEN="
              f"{stack.admin_token}{web_env}"]
    # One write: a reader that sees the first line sees them all.
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
    failed = False
    watch = ArchiveWatch(stack.redis_url or "")
    try:
        while not stopping:
            said = watch.look()
            if said:
                print(f"moonshot up: {said}", file=sys.stderr, flush=True)
            restarted, given_up = stack.revive()
            for name in restarted:
                print(f"moonshot up: {name} stopped unexpectedly and was started again; see "
                      f"{Path(args.data) / 'logs'}", file=sys.stderr, flush=True)
            if given_up:
                print(f"moonshot up: {', '.join(given_up)} died {MAX_RESTARTS} times within "
                      f"{RESTART_WINDOW_S / 60:.0f} minutes: not starting it again; stopping "
                      f"everything (see {Path(args.data) / 'logs'})", file=sys.stderr,
                      flush=True)
                failed = True
                break
            time.sleep(0.5)
    finally:
        try:
            print("stopping ...", flush=True)
        finally:  # even with nowhere left to print to, stop what was started
            stack.stop()
            if web_file is not None:
                web_file.unlink(missing_ok=True)
            redis_file.unlink(missing_ok=True)
    print("stopped", flush=True)
    return 1 if failed else 0


# ---------------------------------------------------------------- bot


def _run_bot_run(args: argparse.Namespace) -> int:
    import asyncio

    from clients.builtin import load_bot
    from clients.sdk import BotRunner, FatalStreamError

    _setup_logging(args.verbose)
    try:
        cls = load_bot(args.bot)
    except ValueError as exc:
        raise UsageError(f"moonshot bot run: {exc}") from None
    token = given_token(args.token, "--token", "MOONSHOT_BOT_TOKEN")
    if not token:
        raise UsageError("moonshot bot run: --token (or $MOONSHOT_BOT_TOKEN) is required")
    try:  # built once now: a bot that cannot be built says so here, not in every game
        cls(0)
    except Exception as exc:
        logging.getLogger("moonshot.bot").debug("building %s", args.bot, exc_info=True)
        first = (str(exc).strip().splitlines() or [""])[0]
        raise CommandError(f"moonshot bot run: {args.bot} could not be built: "
                           f"{type(exc).__name__}: {first} (-v: its traceback)") from None
    arenas = tuple(dict.fromkeys(args.arena))  # each pool once, in the order given
    runner = BotRunner(cls, server_target(args), token, threads=args.threads,
                       wait=args.wait, arenas=arenas)
    try:
        # Ctrl-C finishes the games under way (a second one leaves at once) and leaves
        # the arenas: a clean stop; a crash is a disconnect (the grace, then forfeits).
        asyncio.run(runner.run_interruptible())
    except FatalStreamError as exc:
        raise CommandError(str(exc)) from None
    except KeyboardInterrupt:  # before the runner could handle it
        if arenas:
            with contextlib.suppress(Exception):
                asyncio.run(runner.leave_arenas())
    return 0


# -------------------------------------------------------------- match


def _run_match_play(args: argparse.Namespace) -> int:
    from clients.admin import Admin

    bots = [b.strip() for b in args.bots.split(",") if b.strip()]
    if len(bots) != args.players:
        raise UsageError(f"moonshot match play: --bots names {len(bots)} bots for "
                         f"{args.players} seats")
    options = rules_options(args.players, args.rule, "moonshot match play")
    check_out(args.out, "moonshot match play")
    admin = Admin(server_target(args), admin_token(args))
    try:
        match = admin.create_match(
            players=args.players, bot_ids=bots, seed=args.seed, rules=options,
            move_time_ms=args.time_per_move, time_bank_ms=args.time_bank,
            max_strikes=args.max_strikes, grace_ms=args.disconnect_grace,
        )
        print(f"match {match.match_id} queued: {', '.join(match.seat_names)} "
              f"(seed {match.seed})", flush=True)
        page = web_link(args, f"/game/{match.match_id}")
        if page:
            print(f"web page: {page} (live while it plays, then its replay)", flush=True)
        final = admin.wait_match(match.match_id, timeout=args.timeout)
    except grpc.RpcError as exc:
        raise _rpc_error(exc, server_target(args)) from None
    except TimeoutError:
        follow = f"moonshot match show {match.match_id}"
        if args.server is not None:
            follow += f" --server {args.server}"
        raise CommandError(f"match {match.match_id} is still running after --timeout "
                           f"{args.timeout:g} s; follow it with: {follow}") from None
    return _print_match(final, args.out)


def transcript_path(match_id: str, out: str | None) -> Path:
    """Where a match's transcript goes: --out, else `<data folder>/transcripts/<id>.jsonl`
    (beside what `moonshot up` keeps, out of the way of the current folder's files)."""
    if out:
        return Path(out)
    return Path(os.environ.get("MOONSHOT_DATA", DATA_DIR)) / "transcripts" / f"{match_id}.jsonl"


def _print_match(match: Any, out: str | None) -> int:
    from clients.render import side_names
    from proto.moon.v1 import match_pb2

    if match.status == match_pb2.MATCH_STATUS_FAILED:
        raise CommandError(f"match {match.match_id} failed: {match.error}")
    res = match.result
    print(f"match {match.match_id}: {res.end}")
    for seat, name in enumerate(match.seat_names):
        side = seat % 2 if match.players == 4 else seat
        print(f"  seat {seat} {name:<20} score {res.final_scores[side]:>5}   "
              f"place {res.placement[seat]}")
    sides = side_names(match.players, list(match.seat_names))
    if res.HasField("forfeit"):
        seat = res.forfeit.seat
        print(f"  forfeit: seat {seat} ({match.seat_names[seat]}) lost by forfeit: "
              f"{res.forfeit.reason}")
    forfeited = res.HasField("forfeit") and res.end == "forfeit"
    if res.HasField("winner") and 0 <= res.winner < len(sides):
        print(f"  winner: {sides[res.winner]}{' (won by forfeit)' if forfeited else ''}")
    else:
        level = dict.fromkeys(sides[s % len(sides)] for s, p in enumerate(res.placement)
                              if p == 1)
        if forfeited:  # never a draw: both won by the forfeit, level with each other
            print(f"  won by forfeit: {' and '.join(level)}, level: they share first place "
                  "(half a win each)")
        else:
            print(f"  a draw: {' and '.join(level)} share first place")
    if match.transcript_json:
        path = transcript_path(match.match_id, out)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(match.transcript_json.strip() + "\n")
        except OSError as exc:
            raise CommandError(f"cannot write the transcript to {path}: "
                               f"{exc.strerror or exc}") from None
        print(f"transcript: {path}")
    return 0


def _run_match_show(args: argparse.Namespace) -> int:
    from clients.admin import Admin

    check_out(args.out, "moonshot match show")
    admin = Admin(server_target(args), None)
    try:
        match = admin.get_match(args.match_id)
    except grpc.RpcError as exc:
        raise _rpc_error(exc, server_target(args)) from None
    from proto.moon.v1 import match_pb2

    if match.status != match_pb2.MATCH_STATUS_FINISHED:
        print(f"match {match.match_id}: {match_pb2.MatchStatus.Name(match.status)}, "
              f"{match.actions_played} actions played")
        return 0
    return _print_match(match, args.out)


_STATUSES = ("queued", "running", "finished", "failed")


def _run_match_list(args: argparse.Namespace) -> int:
    from clients.admin import Admin
    from clients.render import side_names
    from clients.wire import pool_to_pb
    from proto.moon.v1 import game_pb2, match_pb2
    from store import ids
    from store.refs import EventKind, EventRef

    req = match_pb2.ListMatchesRequest()
    if args.event is not None:
        try:
            ref = EventRef.parse(args.event.strip())
        except InvalidArgument as exc:
            raise UsageError(f"moonshot match list: --event: {exc} (use tournament:t-..., "
                             "test:c-..., arena:3p or arena:2v2)") from None
        if ref.kind is EventKind.TOURNAMENT:
            req.tournament_id = ref.id
        elif ref.kind is EventKind.TEST:
            req.test_id = ref.id
        else:
            req.arena = ref.id
    if args.pool is not None:
        req.pool = pool_to_pb(args.pool)
    if args.status is not None:
        req.status = match_pb2.MatchStatus.Value(f"MATCH_STATUS_{args.status.upper()}")
    if args.since is not None:
        req.finished_after.FromNanoseconds(int(args.since * 1e9))
    if args.until is not None:
        req.finished_before.FromNanoseconds(int(args.until * 1e9))
    if args.since is not None and args.until is not None and args.until <= args.since:
        raise UsageError("moonshot match list: --until is not after --since: no game can "
                         "finish in that range")
    target = server_target(args)
    admin = Admin(target, None)
    shown_any = False
    try:
        if args.bot is not None:
            bot = args.bot.strip()
            req.bot_id = bot if ids.is_bot_id(bot) else admin.get_bot(bot).bot_id
        for m in admin.list_matches(req, args.limit):
            if not shown_any:
                print(f"{'match':<22} {'finished (UTC)':<17} {'event':<24} result")
                shown_any = True
            when = (time.strftime("%Y-%m-%d %H:%M", time.gmtime(m.finished_at.seconds))
                    if m.HasField("finished_at") else "")
            kind = game_pb2.EventKind.Name(m.event.kind).removeprefix("EVENT_KIND_").lower()
            event = (f"{kind}:{m.event.id}" if m.event.id and m.event.kind else ""
                     ) + (f" {m.board}" if m.board else "")
            if m.status == match_pb2.MATCH_STATUS_FINISHED and m.result.end:
                sides = side_names(m.players, list(m.seat_names))
                firsts = {s % len(sides) for s, p in enumerate(m.result.placement) if p == 1}
                result = " \u00b7 ".join(
                    f"{name} {m.result.final_scores[i]}{' (1st)' if i in firsts else ''}"
                    for i, name in enumerate(sides) if i < len(m.result.final_scores))
                if m.result.end == "forfeit":
                    result += " (a forfeit)"
            elif m.status == match_pb2.MATCH_STATUS_FAILED:
                result = f"failed: {m.error[:80]}"
            else:
                result = (match_pb2.MatchStatus.Name(m.status).removeprefix("MATCH_STATUS_")
                          .lower() + ": " + ", ".join(m.seat_names))
            print(f"{m.match_id:<22} {when:<17} {event[:24]:<24} {result}")
    except grpc.RpcError as exc:
        raise _rpc_error(exc, target) from None
    finally:
        admin.close()
    if not shown_any:
        print("no matches found", file=sys.stderr)
    return 0


# ------------------------------------------------------------- parser


def add_all(sub: argparse._SubParsersAction[Parser],
            bot_commands: Callable[[argparse._SubParsersAction[Parser]], None] | None = None
            ) -> None:
    """Add the networked commands to the `moonshot` parser (`bot_commands` adds the
    author's `bot` subcommands: register, list, rotate, ..., `clients.accounts`)."""
    p = sub.add_parser("referee", help="run a gRPC referee")
    p.add_argument("--listen", default="127.0.0.1:50051", metavar="HOST:PORT")
    p.add_argument("--listen-unix", default=None, metavar="PATH",
                   help="also listen on this unix socket, plaintext, for the hosted bots of a "
                        "host on this machine (moonshot host --referee-socket PATH)")
    p.add_argument("--redis", default=os.environ.get("REDIS_URL", DEFAULT_REDIS), metavar="URL",
                   help=f"Redis URL (default $REDIS_URL, else {DEFAULT_REDIS})")  # no password
    p.add_argument("--admin-token", default=None,
                   help="admin token (default $MOONSHOT_ADMIN_TOKEN; else one is generated "
                        "on first start and printed); must match the cluster's token")
    p.add_argument("--replace-admin-token", action="store_true",
                   help="make --admin-token the token of every referee of this Redis "
                        "(rotation), instead of refusing to start when it differs")
    p.add_argument("--registration", choices=("open", "authors", "admin"), default="open",
                   help="who may register bots: anyone (open, the default; a bot registered "
                        "without a token is no one's), authors and the admin, or the admin")
    p.add_argument("--signup", choices=("open", "invite", "closed"), default="open",
                   help="who may make an author account: anyone (open, the default), or "
                        "only with an invitation from the admin (invite, closed)")
    p.add_argument("--registrations-per-hour", type=flags.int_in(0, 1_000_000), default=20,
                   metavar="N", help="sign-ups, and bot registrations, allowed from one "
                                     "address in an hour (0: no limit; the admin's own are "
                                     "not counted)")
    p.add_argument("--versions-per-day", type=flags.int_in(0, 1_000_000), default=50,
                   metavar="N", help="hosted versions one author may submit in a UTC day "
                                     "(moonshot bot submit; 0: no limit; default 50)")
    p.add_argument("--tls-cert", default=None, metavar="FILE.pem",
                   help="serve TLS with this certificate (chain), with --tls-key")
    p.add_argument("--tls-key", default=None, metavar="FILE.pem",
                   help="the private key of --tls-cert")
    p.add_argument("--auth-free-failures", type=flags.int_in(0, 1_000_000), default=5,
                   help="failed token checks a minute one address gets answered at once; "
                        "later ones wait, 0.1 s doubling up to 5 s")
    _telemetry_flags(p, "referee")
    _redis_wait_flag(p)
    _archive_flag(p, "the one the stack's workers noted in Redis")
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(run=_run_referee)

    p = sub.add_parser("up", help="run Redis, a referee and workers on this machine")
    p.add_argument("--data", default=os.environ.get("MOONSHOT_DATA", DATA_DIR),
                   help=f"data folder: Redis files, logs, admin token (default {DATA_DIR})")
    p.add_argument("--listen", default="127.0.0.1:50051", metavar="HOST:PORT")
    p.add_argument("--workers", type=flags.int_in(*flags.WORKERS), default=2,
                   help="RQ worker processes to start")
    p.add_argument("--redis", default=None, metavar="URL",
                   help="use this Redis instead of starting one (default $REDIS_URL)")
    p.add_argument("--redis-fsync", choices=FSYNC, default=None,
                   help="when the Redis it starts syncs its append-only file to disk: "
                        "everysec (a power cut may lose the last second) or always "
                        "(nothing acknowledged is lost; slower: see docs/PERFORMANCE.md); "
                        "default everysec")
    p.add_argument("--replace-admin-token", action="store_true",
                   help="make $MOONSHOT_ADMIN_TOKEN the admin token (saved in the data "
                        "folder, and of every referee of this Redis)")
    p.add_argument("--web", default="127.0.0.1:0", metavar="HOST:PORT",
                   help="where `moonshot web` serves the pages (default: a free port on "
                        "127.0.0.1)")
    p.add_argument("--no-web", action="store_true", help="start no web server")
    p.add_argument("--metrics-listen", type=flags.listen_address, default=None,
                   metavar="HOST:PORT",
                   help="serve Prometheus metrics: the referee's on HOST:PORT, worker i's on "
                        "PORT+i (port 0: free ones, printed)")
    p.add_argument("--log-json", action="store_true",
                   help="the referee and workers log JSON lines ($MOONSHOT_LOG_JSON=1)")
    _archive_flag(p, "SQLite in the data folder, archive.sqlite3")
    p.set_defaults(run=_run_up)

    p = sub.add_parser("worker", help="run an RQ worker that hosts matches")
    p.add_argument("--redis", default=os.environ.get("REDIS_URL", DEFAULT_REDIS), metavar="URL",
                   help=f"Redis URL (default $REDIS_URL, else {DEFAULT_REDIS})")  # no password
    p.add_argument("--name", default=None, help="worker name (default: generated)")
    p.add_argument("--burst", action="store_true", help="quit when the queues are empty")
    p.add_argument("--concurrency", type=flags.int_in(1, 5000), default=100,
                   help="matches hosted at once, each on its own thread (default 100)")
    _telemetry_flags(p, "worker")
    _redis_wait_flag(p)
    _archive_flag(p, "the one the stack noted in Redis; none: games stay in Redis")
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(run=_run_worker)

    p = sub.add_parser("host", help="run hosted versions of bots in sandboxes "
                                    "(bubblewrap, seccomp, cgroups) when matches need them")
    p.add_argument("--redis", default=os.environ.get("REDIS_URL", DEFAULT_REDIS), metavar="URL",
                   help=f"Redis URL (default $REDIS_URL, else {DEFAULT_REDIS})")
    p.add_argument("--referee", default=os.environ.get("MOONSHOT_SERVER", DEFAULT_SERVER),
                   metavar="HOST:PORT",
                   help="the referee the sandboxes' bots connect to (default "
                        f"$MOONSHOT_SERVER, else {DEFAULT_SERVER})")
    p.add_argument("--referee-socket", default=None, metavar="PATH",
                   help="the unix socket of a referee on this machine (moonshot referee "
                        "--listen-unix PATH): bound into each sandbox as its way out, one hop "
                        "shorter than the relay to --referee")
    p.add_argument("--name", default=None, help="host name (default: machine name and pid)")
    p.add_argument("--slots", type=flags.int_in(1, 1000), default=8,
                   help="sandboxes run at once (default 8)")
    p.add_argument("--idle", type=flags.seconds_at_least_0, default=60.0, metavar="SECONDS",
                   help="stop a sandbox with no game for this long (default 60)")
    p.add_argument("--loosen-after", type=flags.seconds_at_least_0, default=30.0,
                   metavar="SECONDS",
                   help="start a sandbox again under looser limits once every game under way "
                        "has allowed them for this long (after a tighter event's games; "
                        "default 30)")
    p.add_argument("--keep-unpacked", type=flags.seconds_at_least_0, default=86400.0,
                   metavar="SECONDS",
                   help="remove a version's unpacked files from --data once no sandbox has "
                        "used them for this long (default 86400, a day; the package stays in "
                        "the archive)")
    p.add_argument("--memory-mb", type=int, default=512, metavar="MB",
                   help="memory of one sandbox, its processes together (default 512). This "
                        "and the four below are the most a sandbox of this host gets; an "
                        "event may ask for less (--sandbox), never more")
    p.add_argument("--pids", type=int, default=64, metavar="N",
                   help="processes and threads of one sandbox (default 64)")
    p.add_argument("--cpu-s", type=int, default=3600, metavar="SECONDS",
                   help="CPU seconds one sandbox may spend before it is stopped (it starts "
                        "again when a game needs it; default 3600)")
    p.add_argument("--cpu-cores", type=float, default=1.0, metavar="CORES",
                   help="cores one sandbox may use at once (default 1)")
    p.add_argument("--scratch-mb", type=int, default=16, metavar="MB",
                   help="its private /tmp (default 16)")
    p.add_argument("--data", default="moonshot-host", metavar="DIR",
                   help="where unpacked versions and sandboxes' work folders live "
                        "(default ./moonshot-host)")
    p.add_argument("--log-json", action="store_true", help="log JSON lines")
    _redis_wait_flag(p)
    _archive_flag(p, "the one the stack noted in Redis")
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(run=_run_host)

    bot = sub.add_parser("bot", help="register or run a bot").add_subparsers(
        dest="bot_command", required=True, parser_class=Parser)
    if bot_commands is not None:
        bot_commands(bot)
    p = bot.add_parser("run", help="connect a bot to a referee and play its matches")
    p.add_argument("--bot", required=True, help="random, greedy, pimc or MODULE:CLASS")
    p.add_argument("--token", default=None, help="bot token (default $MOONSHOT_BOT_TOKEN)")
    p.add_argument("--threads", type=flags.int_in(*flags.THREADS), default=8,
                   help="decisions computed at once across matches; 0 decides inline")
    p.add_argument("--wait", action="store_true",
                   help="keep trying until a referee answers (without it, the bot stops at "
                        "once when none answers at the start, saying why; once connected, "
                        "it always reconnects)")
    p.add_argument("--arena", action="append", default=[], choices=POOL_CHOICES,
                   help="join the arena of this pool (3p or 2v2; repeat for both): the bot "
                        "plays its matchmaking whenever it is connected, and leaves it on "
                        "Ctrl-C")
    p.epilog = ("Ctrl-C takes no new arena games and finishes the games under way, naming "
                "them; a second Ctrl-C leaves at once, naming the games it forfeits (after "
                "their disconnect grace, unless the bot comes back).")
    _server_flag(p)
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(run=_run_bot_run)

    match = sub.add_parser("match", help="play or show single matches").add_subparsers(
        dest="match_command", required=True, parser_class=Parser)
    p = match.add_parser("play", help="queue one match (admin), wait and print its result")
    p.add_argument("--players", type=int, choices=(3, 4), default=3)
    p.add_argument("--bots", required=True, help="comma-separated bot ids or names, in seat order")
    p.add_argument("--seed", type=flags.int_in(*flags.SEED), default=None)
    p.add_argument("--rule", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--time-per-move", type=flags.duration_ms(*flags.MOVE_TIME_MS),
                   default="2s", help="per-decision limit (default 2s)")
    p.add_argument("--time-bank", type=flags.duration_ms(*flags.TIME_BANK_MS), default="30s",
                   help="time bank per seat (default 30s)")
    p.add_argument("--max-strikes", type=flags.int_in(*flags.MAX_STRIKES), default=3)
    p.add_argument("--disconnect-grace", type=flags.duration_ms(*flags.GRACE_MS),
                   default="30s", help="(default 30s)")
    p.add_argument("--timeout", type=flags.positive_seconds, default=3600.0,
                   help="seconds to wait for the end")
    p.add_argument("--out", default=None,
                   help="transcript file (default moonshot-data/transcripts/<match_id>.jsonl)")
    _server_flag(p)
    _admin_flag(p)
    p.set_defaults(run=_run_match_play)
    p = match.add_parser(
        "list", help="list matches, newest first (in play, waiting, and the archive's)",
        description="List matches newest first: those Redis holds (in play, or finished "
                    "and not archived yet), then the archive's. A game whose board is not "
                    "released yet shows only that it is in play.")
    p.add_argument("--bot", default=None, help="only this bot's games (an id or a name)")
    p.add_argument("--event", default=None, metavar="KIND:ID",
                   help="only this event's games: tournament:t-..., test:c-..., arena:3p")
    p.add_argument("--pool", choices=POOL_CHOICES, default=None,
                   help="only games of this rating pool")
    p.add_argument("--status", choices=_STATUSES, default=None)
    p.add_argument("--since", type=flags.iso_time, default=None, metavar="WHEN",
                   help="only games finished at or after WHEN (ISO 8601; UTC without an "
                        "offset)")
    p.add_argument("--until", type=flags.iso_time, default=None, metavar="WHEN",
                   help="only games finished before WHEN")
    p.add_argument("--limit", type=flags.int_in(1, 1_000_000), default=50,
                   help="most matches to print (default 50)")
    _server_flag(p)
    p.set_defaults(run=_run_match_list)
    p = match.add_parser("show", help="print a match's status or result")
    p.add_argument("match_id")
    p.add_argument("--out", default=None,
                   help="transcript file (default moonshot-data/transcripts/<match_id>.jsonl)")
    _server_flag(p)
    p.set_defaults(run=_run_match_show)


_Named = TypeVar("_Named")


def newest_named(every: Iterable[_Named], text: str, name_of: Callable[[_Named], str],
                 id_of: Callable[[_Named], str], kind: str, listing: str) -> _Named:
    """The first of `every` (newest first) whose name is `text`, ignoring case, with a note
    on stderr when several share it; CommandError naming close names when none has it
    (`kind`: "tournament", "test"; `listing`: the command that lists them)."""
    every = list(every)
    named = [x for x in every if name_of(x).casefold() == text.casefold()]
    if not named:
        names = {name_of(x).casefold(): name_of(x) for x in every}
        close = difflib.get_close_matches(text.casefold(), names, n=3, cutoff=0.6)
        hint = f"; close: {', '.join(repr(names[c]) for c in close)}" if close else ""
        raise CommandError(f"no {kind} with id or name {text!r}{hint} ({listing} shows them)")
    if len(named) > 1:
        print(f"note: {len(named)} {kind}s are named {text!r}: this is the newest, "
              f"{id_of(named[0])}; name another by its id", file=sys.stderr)
    return named[0]
