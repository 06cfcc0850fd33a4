"""The `moonshot web` command: serve the web pages of the referee at --server."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import socket

from clients.channel import Target
from clients.commands import _server_flag, server_target
from clients.parser import CommandError, Parser, UsageError
from store.bots import watch_pass

__all__ = ["add_web", "listen_address", "serve"]

DEFAULT_LISTEN = "127.0.0.1:8080"


def listen_address(text: str, prog: str = "moonshot web") -> tuple[str, int]:
    """HOST:PORT (port 0 picks a free one) as (host, port); UsageError if it is not."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f"{prog}: --listen must be HOST:PORT with a port from 0 to 65535 "
                         f"(0 picks a free one), like {DEFAULT_LISTEN}; got {text!r}")
    return host, int(port)


def shown_host(host: str) -> str:
    """The host to print in a link: a wildcard address is reached on loopback."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def serve(server: str | Target, host: str, port: int, *, verbose: bool = False,
          linger: float = 30.0) -> None:
    """Serve the pages of the referee at `server` on host:port until SIGINT or SIGTERM;
    prints `web pages on http://HOST:PORT` once listening."""
    import uvicorn

    from clients.web.app import create_app

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CommandError(f"moonshot web: cannot listen on {host}:{port}: "
                           f"{exc.strerror or exc}") from None
    sock.listen(256)
    actual = sock.getsockname()[1]
    config = uvicorn.Config(create_app(server, linger=linger), lifespan="on",
                            log_level="info" if verbose else "warning", access_log=verbose,
                            timeout_graceful_shutdown=2)
    # Connections wait in the socket's backlog until the server takes them: the address
    # printed is good from this line on.
    print(f"web pages on http://{shown_host(host)}:{actual}", flush=True)
    shown = server.address if isinstance(server, Target) else server
    print(f"  (what the referee at {shown} shows the public; Ctrl-C stops)", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


def _run_web(args: argparse.Namespace) -> int:
    host, port = listen_address(args.listen)
    server = server_target(args)
    # The pages' live updates use watch slots the referee keeps for holders of the watch
    # pass. Given the admin token instead, derive the pass and forget the token: the web
    # server never holds it.
    token = os.environ.pop("MOONSHOT_ADMIN_TOKEN", "")
    if token and not os.environ.get("MOONSHOT_WATCH_PASS"):
        os.environ["MOONSHOT_WATCH_PASS"] = watch_pass(token)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        serve(server, host, port, verbose=args.verbose)
    return 0


def add_web(sub: argparse._SubParsersAction[Parser]) -> None:
    """Add the `web` command."""
    p = sub.add_parser("web", help="serve web pages of tournaments, ratings and game replays "
                                   "(a client of the referee's public API)",
                       epilog="Live pages use watch slots the referee keeps for web servers "
                              "when $MOONSHOT_WATCH_PASS holds the stack's watch pass (or "
                              "$MOONSHOT_ADMIN_TOKEN the admin token, from which it is "
                              "derived and then forgotten); `moonshot up` sets it.")
    p.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                   help=f"where to serve the pages (default {DEFAULT_LISTEN}; port 0 picks "
                        "a free one)")
    _server_flag(p)
    p.add_argument("-v", "--verbose", action="store_true", help="log every request")
    p.set_defaults(run=_run_web)
