"""The referee's Prometheus metrics (served by `moonshot referee --metrics-listen`).

Counters only count: rates (decisions a second, ...) are the scraper's
`rate()`. Everything here is updated in memory on the event loop, at the cost of
a counter increment; nothing adds a Redis call to the hot path.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from telemetry import export

__all__ = [
    "AUTH_FAILURES",
    "DECISIONS",
    "DECISION_SECONDS",
    "PLAY_STREAMS",
    "REDIS_ERRORS",
    "REGISTRY",
    "REJECTED",
    "WATCH_STREAMS",
    "serve",
]

REGISTRY = export.registry()

PLAY_STREAMS = Gauge(
    "moonshot_referee_play_streams", "Bot Play streams open on this referee.",
    registry=REGISTRY)
WATCH_STREAMS = Gauge(
    "moonshot_referee_watch_streams",
    "WatchMatch and WatchTournament streams open on this referee.", registry=REGISTRY)
DECISIONS = Counter(
    "moonshot_referee_decisions",
    "Bot answers this referee accepted and forwarded to their match.", registry=REGISTRY)
DECISION_SECONDS = Histogram(
    "moonshot_referee_decision_seconds",
    "Seconds from a decision request written to the bot's stream to its answer accepted.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
             30.0, 60.0, 120.0),
    registry=REGISTRY)
REJECTED = Counter(
    "moonshot_referee_rejected",
    "Messages refused, by kind: not_yours (an answer for another bot's request), "
    "unknown_request (for no pending request: late, repeated or made up), undecodable "
    "(a body that does not parse), error (an answer the referee failed to handle).",
    ["kind"], registry=REGISTRY)
AUTH_FAILURES = Counter(
    "moonshot_referee_auth_failures",
    "Calls refused for their credentials, by kind: unauthenticated, permission_denied.",
    ["kind"], registry=REGISTRY)
REDIS_ERRORS = Counter(
    "moonshot_referee_redis_errors",
    "Redis connection errors and timeouts, by where: call (a call answered UNAVAILABLE), "
    "play (a Play stream ended by one), accept (the hot path reconnected), pubsub (the "
    "subscriber connection was lost), presence (a presence refresh failed).",
    ["where"], registry=REGISTRY)

# Every series exists from the start (at 0), so rate() and alerts see the first event.
for _kind in ("not_yours", "unknown_request", "undecodable", "error"):
    REJECTED.labels(_kind)
for _kind in ("unauthenticated", "permission_denied"):
    AUTH_FAILURES.labels(_kind)
for _where in ("call", "play", "accept", "pubsub", "presence"):
    REDIS_ERRORS.labels(_where)


def serve(listen: str) -> tuple[str, int]:
    """Serve these metrics at http://`listen`/metrics; (host, bound port)."""
    return export.serve(REGISTRY, listen)
