"""A worker's Prometheus instruments (served by `moonshot worker --metrics-listen`, with
the queue figures of `workers.exporter`).

Updated in memory by the job threads, a counter increment at a time: nothing here
reads or writes Redis. Rates are the scraper's `rate()`.
"""

from __future__ import annotations

import math

from prometheus_client import Counter, Gauge, Histogram

from store.pools import Pool
from telemetry import export

__all__ = [
    "ARCHIVE_ERRORS",
    "ARCHIVE_MOVED",
    "ARCHIVE_PARKED",
    "ARCHIVE_SECONDS",
    "ARENA_STEPS",
    "ARENA_STEP_SECONDS",
    "ARENA_TABLES",
    "DECISIONS",
    "DECISION_SECONDS",
    "FAULTS",
    "FAULT_KINDS",
    "FINISHED",
    "FITS",
    "FIT_SECONDS",
    "HOUSE_DECISION_SECONDS",
    "HOUSE_OVERRUNS",
    "JOBS_REFUSED",
    "LIVE_MATCHES",
    "MATCH_DECISIONS",
    "REFUSAL_REASONS",
    "REGISTRY",
    "STEPS",
    "STEP_SECONDS",
    "decided",
    "fault",
    "finished",
    "house_decided",
    "refused",
    "stepped",
]

REGISTRY = export.registry()

LIVE_MATCHES = Gauge(
    "moonshot_worker_matches_live", "Matches this worker hosts now.", registry=REGISTRY)
HOUSE_DECISION_SECONDS = Histogram(
    "moonshot_worker_house_decision_seconds",
    "Time a house bot computed one decision (in its house process).",
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, math.inf),
    registry=REGISTRY)
HOUSE_OVERRUNS = Counter(
    "moonshot_worker_house_overruns",
    "House bot decisions that overran the move time and bank (a bug: replaced, a strike).",
    registry=REGISTRY)
FINISHED = Counter(
    "moonshot_worker_matches_finished",
    "Matches this worker counted finished, by how they ended (the transcript's end): a "
    "tournament game when its board is released, a single match as it ends.",
    ["end"], registry=REGISTRY)
MATCH_DECISIONS = Histogram(
    "moonshot_worker_match_decisions",
    "Decisions (actions) of each match this worker counted finished (see matches_finished).",
    buckets=(10, 25, 50, 100, 200, 400, 800, 1600, 3200, 6400, math.inf), registry=REGISTRY)
DECISIONS = Counter(
    "moonshot_worker_decisions",
    "Decisions settled by this worker's matches, by how: bot (a legal answer in time), "
    "late, illegal (each of the last two replaced by a random legal action, a strike).",
    ["by"], registry=REGISTRY)
DECISION_SECONDS = Histogram(
    "moonshot_worker_decision_seconds",
    "Seconds from a decision request going out to its answer accepted by a referee (or "
    "given up on), on Redis's clock.",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
             10.0, 30.0, 60.0, 120.0),
    registry=REGISTRY)
FAULT_KINDS = ("late", "illegal", "disconnect", "forfeit", "resumed", "redis_outage")
FAULTS = Counter(
    "moonshot_worker_faults",
    "Faults met by this worker's matches, by kind: late and illegal (answers replaced, "
    "each a strike), disconnect (a seat lost its stream while its match waited on it), "
    "forfeit (a match ended by one), resumed (a run took a match over from its log, after "
    "a crash or a hand-over), redis_outage (a hosted match lost Redis and waited).",
    ["kind"], registry=REGISTRY)
FITS = Counter(
    "moonshot_worker_fits", "Rating fits of a pool run by this worker.", ["pool"],
    registry=REGISTRY)
FIT_SECONDS = Histogram(
    "moonshot_worker_fit_seconds",
    "Seconds one fit of a pool took (its provisional and batch tables, stored).", ["pool"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0),
    registry=REGISTRY)
STEPS = Counter(
    "moonshot_worker_tournament_steps",
    "Tournament scheduling jobs run, by outcome: done, skipped (another run held the "
    "tournament, or moved it first).", ["outcome"], registry=REGISTRY)
STEP_SECONDS = Histogram(
    "moonshot_worker_tournament_step_seconds", "Seconds one scheduling job took.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
    registry=REGISTRY)

REFUSAL_REASONS = ("unreadable", "foreign", "arguments", "malformed", "missing")
JOBS_REFUSED = Counter(
    "moonshot_worker_jobs_refused",
    "Jobs this worker took from a queue and refused, never ran (workers.intake), by reason: "
    "unreadable (not the project's JSON job: a pickle, an old version's, garbage), foreign "
    "(another function or a callback), arguments (a project job with arguments it does not "
    "take), malformed (the job hash lacks its data or does not parse), missing (an id with "
    "no hash). Each but missing is in its queue's failed registry.", ["reason"],
    registry=REGISTRY)

ARCHIVE_MOVED = Counter(
    "moonshot_worker_archive_moved",
    "Finished games this worker moved from Redis to the archive.", registry=REGISTRY)
ARCHIVE_ERRORS = Counter(
    "moonshot_worker_archive_errors",
    "Archiving batches that failed (the archive away): the games wait in Redis.",
    registry=REGISTRY)
ARCHIVE_PARKED = Counter(
    "moonshot_worker_archive_parked",
    "Finished games the archive refused (a record it cannot take): set aside in Redis "
    "(ms:archive:parked, with why) so the others move; queued again at a worker's start.",
    registry=REGISTRY)
ARCHIVE_SECONDS = Histogram(
    "moonshot_worker_archive_batch_seconds",
    "Seconds one archiving batch took (read from Redis, write, drop from Redis).",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0), registry=REGISTRY)

ARENA_TABLES = Counter(
    "moonshot_worker_arena_tables",
    "Tables (games) the arena's matchmaking steps run by this worker formed, by pool; "
    "tables a minute is the scraper's rate() times 60.", ["pool"], registry=REGISTRY)
ARENA_STEPS = Counter(
    "moonshot_worker_arena_steps",
    "Arena matchmaking passes run by this worker, by outcome: done, skipped (another run "
    "saved first, or the arena is gone).", ["outcome"], registry=REGISTRY)
ARENA_STEP_SECONDS = Histogram(
    "moonshot_worker_arena_step_seconds",
    "Seconds one arena matchmaking pass took (load, fold results, the step, deal, save, "
    "create), by pool.", ["pool"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
    registry=REGISTRY)

# Children bound once (a label lookup takes a lock), and every series there from the start.
_BY = {by: DECISIONS.labels(by) for by in ("bot", "late", "illegal")}
_KIND = {kind: FAULTS.labels(kind) for kind in FAULT_KINDS}
_STRIKE = {"late": _KIND["late"], "illegal": _KIND["illegal"]}
for _outcome in ("done", "skipped"):
    STEPS.labels(_outcome)
    ARENA_STEPS.labels(_outcome)
for _reason in REFUSAL_REASONS:
    JOBS_REFUSED.labels(_reason)
for _pool in Pool:
    FITS.labels(_pool)
    ARENA_TABLES.labels(_pool)
    ARENA_STEP_SECONDS.labels(_pool)


def stepped(kind: str, event_id: str, seconds: float, outcome: str) -> None:
    """One pass of the scheduling step of an event (`kind` and id): an arena's pass counts
    on the arena's series, a tournament's or a test's on the tournament steps'."""
    if kind == "arena":
        ARENA_STEPS.labels(outcome).inc()
        ARENA_STEP_SECONDS.labels(event_id).observe(seconds)
    else:
        STEPS.labels(outcome).inc()
        STEP_SECONDS.observe(seconds)


def decided(by: str, us: float) -> None:
    """One decision settled (`by` as in the match log), its round trip `us` microseconds."""
    counter = _BY.get(by)
    (counter if counter is not None else DECISIONS.labels(by)).inc()
    DECISION_SECONDS.observe(us / 1e6)
    strike = _STRIKE.get(by)
    if strike is not None:
        strike.inc()


def fault(kind: str) -> None:
    """One fault of `kind` (one of FAULT_KINDS)."""
    _KIND[kind].inc()


def house_decided(ms: float) -> None:
    """A house bot computed one decision in `ms` milliseconds."""
    HOUSE_DECISION_SECONDS.observe(ms / 1000)


def finished(end: str, decisions: int) -> None:
    """A match this worker stored the result of, and how it ended."""
    FINISHED.labels(end).inc()
    MATCH_DECISIONS.observe(decisions)
    if end == "forfeit":
        _KIND["forfeit"].inc()


def refused(reason: str) -> None:
    """A job taken from a queue was refused for `reason` (see JOBS_REFUSED)."""
    JOBS_REFUSED.labels(reason).inc()
