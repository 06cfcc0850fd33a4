"""The referee process: a grpc.aio server with health checking and reflection.

`serve()` wires the servicers to one Redis, installs the admin token, starts the
hub, and runs until SIGTERM or SIGINT, then stops gracefully: new calls are
refused, streams get a grace period, presence is withdrawn so match jobs pause
the clocks of bots that were connected here until they reconnect elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass

import grpc
import redis
import redis.asyncio as aioredis
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from proto.moon.v1 import (
    account_pb2,
    account_pb2_grpc,
    arena_pb2,
    arena_pb2_grpc,
    bot_pb2,
    bot_pb2_grpc,
    change_pb2,
    change_pb2_grpc,
    match_pb2,
    match_pb2_grpc,
    rating_pb2,
    rating_pb2_grpc,
    tournament_pb2,
    tournament_pb2_grpc,
)
from server import metrics
from server.access import Gate
from server.accounts import AccountServicer, Settings
from server.archived import Archived
from server.arena import ArenaServicer
from server.bots import BotServicer, serialize_play
from server.changes import TestServicer
from server.edge import FREE_FAILURES, THROTTLE, add_service
from server.hub import Hub
from server.lanes import BOT_THREADS, READ_THREADS, WATCH_THREADS, Lane, WatchGate, lane
from server.matches import MatchServicer
from server.tournaments import RatingServicer, TournamentServicer
from store import bots as store_bots
from store.errors import FailedPrecondition
from workers.queues import rq_connection

__all__ = ["Referee", "serve"]

log = logging.getLogger("moonshot.referee")

SERVICE_NAMES: tuple[str, ...] = (
    bot_pb2.DESCRIPTOR.services_by_name["BotService"].full_name,
    match_pb2.DESCRIPTOR.services_by_name["MatchService"].full_name,
    tournament_pb2.DESCRIPTOR.services_by_name["TournamentService"].full_name,
    rating_pb2.DESCRIPTOR.services_by_name["RatingService"].full_name,
    change_pb2.DESCRIPTOR.services_by_name["TestService"].full_name,
    arena_pb2.DESCRIPTOR.services_by_name["ArenaService"].full_name,
    account_pb2.DESCRIPTOR.services_by_name["AccountService"].full_name,
)


# The largest request a referee reads: a Play message is ~100 B; a SubmitVersion chunk of
# 1 MiB (server.hosted.MAX_CHUNK) and its framing fit, so a chunk over it is refused with
# the referee's own message, not gRPC's.
MAX_MESSAGE_BYTES = (1 << 20) + 4096


@dataclass
class Referee:
    """A running referee: its server, hub and the port it listens on."""

    server: grpc.aio.Server
    hub: Hub
    port: int
    health: health.aio.HealthServicer
    admin_token: str | None
    lanes: tuple[Lane, ...] = ()

    async def stop(self, grace: float = 5.0) -> None:
        """Graceful stop: NOT_SERVING, end streams, stop the server."""
        await self.health.enter_graceful_shutdown()
        await self.hub.stop()
        await self.server.stop(grace)
        for one in self.lanes:
            one.close()


async def start(listen: str, redis_url: str, admin_token: str | None = None,
                settings: Settings | None = None, replace_admin_token: bool = False,
                tls: tuple[bytes, bytes] | None = None, archive_url: str = "",
                listen_unix: str = "") -> Referee:
    """Start a referee on `listen` (HOST:PORT; port 0 picks a free one).

    `admin_token` must match the one the cluster has, if any, unless
    `replace_admin_token` makes it the new token of every referee. `archive_url` is the
    stack's archive (finished games that left Redis), opened on first use.
    """
    r = store_bots.connect(redis_url)
    r.ping()
    # The hub's own connections carry bot traffic; each other kind of work has its lane.
    ar = aioredis.Redis.from_url(redis_url, decode_responses=True)
    hub = Hub(ar, redis_url)
    await hub.start()
    bots = lane("bots", redis_url, BOT_THREADS)
    reads = lane("reads", redis_url, READ_THREADS)
    watch = lane("watch", redis_url, WATCH_THREADS)
    gate = WatchGate()
    settings = (settings or Settings()).check()
    guard = Gate(bots, reads).guard  # every call's rule (server.access)
    rq_conn = rq_connection(redis_url)
    archived = Archived(archive_url, pool_size=READ_THREADS + WATCH_THREADS)
    server = grpc.aio.server(options=[
        ("grpc.keepalive_time_ms", 20_000),
        ("grpc.keepalive_timeout_ms", 10_000),
        ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        # A second referee on a port in use must fail, not share it and get every other call.
        ("grpc.so_reuseport", 0),
    ])
    add_service(bot_pb2_grpc.add_BotServiceServicer_to_server,
                BotServicer(bots, reads, hub, settings, rq_conn, archived), server,
                SERVICE_NAMES[0],
                {"Play": serialize_play}, guard)
    add_service(match_pb2_grpc.add_MatchServiceServicer_to_server,
                MatchServicer(reads, watch, rq_conn, gate, archived), server,
                SERVICE_NAMES[1], guard=guard)
    add_service(tournament_pb2_grpc.add_TournamentServiceServicer_to_server,
                TournamentServicer(reads, watch, rq_conn, gate, archived), server,
                SERVICE_NAMES[2], guard=guard)
    add_service(rating_pb2_grpc.add_RatingServiceServicer_to_server,
                RatingServicer(reads, archived), server, SERVICE_NAMES[3], guard=guard)
    add_service(change_pb2_grpc.add_TestServiceServicer_to_server,
                TestServicer(reads, watch, rq_conn, gate, archived), server,
                SERVICE_NAMES[4], guard=guard)
    add_service(arena_pb2_grpc.add_ArenaServiceServicer_to_server,
                ArenaServicer(reads, rq_conn), server, SERVICE_NAMES[5], guard=guard)
    add_service(account_pb2_grpc.add_AccountServiceServicer_to_server,
                AccountServicer(bots, reads, settings), server, SERVICE_NAMES[6], guard=guard)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for name in (*SERVICE_NAMES, ""):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    reflection.enable_server_reflection(
        (*SERVICE_NAMES, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    try:
        if tls is None:
            port = server.add_insecure_port(listen)
        else:  # (private key, certificate chain), PEM
            port = server.add_secure_port(listen, grpc.ssl_server_credentials([tls]))
        if listen_unix and port:
            # This machine's hosted bots' way in (a host binds it into each sandbox):
            # plaintext, local only. A socket left by a referee that died goes first.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(listen_unix)
            if not server.add_insecure_port(f"unix:{listen_unix}"):
                raise RuntimeError(listen_unix)
    except RuntimeError:  # grpc's way of saying the bind failed
        port = 0
    try:
        if port == 0:
            where = f"{listen} and unix:{listen_unix}" if listen_unix else listen
            raise OSError(f"cannot listen on {where}: the address is in use or not valid here")
        # Only a referee that got its port may install an admin token for the whole cluster.
        generated = store_bots.ensure_admin_token(r, admin_token, replace=replace_admin_token)
    except BaseException:
        await server.stop(None)
        await hub.stop()
        await ar.aclose()
        r.close()
        for one in (bots, reads, watch):
            one.close()
        raise
    r.close()
    await server.start()
    if listen_unix:
        os.chmod(listen_unix, 0o777)  # sandboxes run as uids of their own
    return Referee(server, hub, port, health_servicer, generated, (bots, reads, watch))


async def _serve(listen: str, redis_url: str, admin_token: str | None,
                 settings: Settings, replace_admin_token: bool,
                 tls: tuple[bytes, bytes] | None, metrics_listen: str | None = None,
                 archive_url: str = "", listen_unix: str = "") -> None:
    # Bound first: a referee that cannot serve its metrics stops before it changes anything.
    scrape = metrics.serve(metrics_listen) if metrics_listen else None
    ref = await start(listen, redis_url, admin_token, settings, replace_admin_token,
                      tls, archive_url, listen_unix)
    host = listen.rsplit(":", 1)[0]
    print(f"referee listening on {host}:{ref.port}{' (TLS)' if tls else ''}", flush=True)
    if listen_unix:
        print(f"referee listening on unix:{listen_unix} (for this machine's hosted bots)",
              flush=True)
    if scrape is not None:
        print(f"referee metrics listening on {scrape[0]}:{scrape[1]}", flush=True)
    if ref.admin_token:
        print(f"admin token (shown once, keep it): {ref.admin_token}", flush=True)
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    await stopping.wait()
    print("referee stopping", flush=True)
    await ref.stop()
    print("referee stopped", flush=True)


def serve(listen: str, redis_url: str, admin_token: str | None = None,
          settings: Settings | None = None, replace_admin_token: bool = False,
          auth_free_failures: int = FREE_FAILURES,
          tls: tuple[bytes, bytes] | None = None, metrics_listen: str | None = None,
          archive_url: str = "", listen_unix: str = "") -> None:
    """Run a referee until SIGTERM/SIGINT; `auth_free_failures` authentication failures of
    one peer a minute are answered at once, the next ones slowed (`server.edge`); with
    `metrics_listen` (HOST:PORT, port 0: a free one) it serves Prometheus metrics there."""
    THROTTLE.free = auth_free_failures
    token = admin_token or os.environ.get("MOONSHOT_ADMIN_TOKEN") or None
    try:
        asyncio.run(_serve(listen, redis_url, token, (settings or Settings()).check(),
                           replace_admin_token,
                           tls, metrics_listen, archive_url, listen_unix))
    except redis.ConnectionError as exc:
        raise SystemExit(f"moonshot referee: cannot reach Redis at "
                         f"{store_bots.shown(redis_url)}: {exc}") from None
    except (OSError, FailedPrecondition) as exc:
        raise SystemExit(f"moonshot referee: {exc}") from None


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m server.app LISTEN REDIS_URL` for quick runs; the CLI is the usual way."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    serve(args[0], args[1])


if __name__ == "__main__":
    main()
