"""What `moonshot worker --metrics-listen` serves: the worker's own instruments
(`workers.metrics`) and the cluster's backlog, read from Redis when scraped.

The backlog figures (queue depths, RQ registries, scheduling steps and fits waiting,
open matches) are the same whichever worker is scraped: aggregate them with
`max`, not `sum`. They cost three pipelined round trips per scrape (RQ's queues,
the fit requests, the open matches) and nothing between scrapes. A scrape while
Redis is away still answers, with `moonshot_backlog_up 0` and no backlog figures.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import redis
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from store import archiving as store_archiving
from store import arena as store_arena
from store import ids
from store import matches as store_matches
from store import ratings as store_ratings
from telemetry import export
from workers.fit import POOLS
from workers.metrics import REGISTRY
from workers.queues import CONTROL_QUEUE, MATCH_QUEUE, RESUME_QUEUE, queue

__all__ = ["QUEUES", "Backlog", "serve"]

log = logging.getLogger("moonshot.worker")

QUEUES = (CONTROL_QUEUE, RESUME_QUEUE, MATCH_QUEUE)
REGISTRIES = ("started", "failed", "deferred", "scheduled")
_SCAN_CONTROL = 10_000  # control jobs classified per scrape (the queue is short in practice)


class Backlog(Collector):
    """Reads the queues and backlogs at scrape time (see the module doc)."""

    def __init__(self, r: redis.Redis, pools: Sequence[str] = POOLS) -> None:
        self.r = r
        self.pools = tuple(pools)
        self._queues = [queue(r, name) for name in QUEUES]  # for their key names only

    def describe(self) -> Iterable[Metric]:
        """Nothing up front: registering must not read Redis."""
        return []

    def collect(self) -> Iterable[Metric]:
        """The figures, read in a few pipelined round trips."""
        up = GaugeMetricFamily("moonshot_backlog_up",
                               "1 when this scrape could read the backlog from Redis.")
        try:
            figures = self._read()
        except redis.RedisError as exc:
            log.warning("metrics: cannot read the backlog from Redis: %s", exc)
            up.add_metric([], 0)
            return [up]
        up.add_metric([], 1)
        return [up, *figures]

    def _read(self) -> list[Metric]:
        pipe = self.r.pipeline(transaction=False)
        for q in self._queues:
            pipe.llen(q.key)
            for reg in (q.started_job_registry, q.failed_job_registry,
                        q.deferred_job_registry, q.scheduled_job_registry):
                pipe.zcard(reg.key)
        pipe.lrange(self._queues[0].key, 0, _SCAN_CONTROL - 1)
        got = iter(pipe.execute())
        requests = store_ratings.requests(self.r, self.pools)

        depth = GaugeMetricFamily("moonshot_queue_depth",
                                  "Jobs waiting in each moonshot RQ queue (cluster-wide).",
                                  labels=["queue"])
        held = GaugeMetricFamily(
            "moonshot_queue_registry_jobs",
            "Jobs in each RQ registry of each moonshot queue: started (running), failed "
            "(RQ gave up), deferred, scheduled (cluster-wide).", labels=["queue", "registry"])
        for name in QUEUES:
            depth.add_metric([name], int(next(got)))
            for reg in REGISTRIES:
                held.add_metric([name, reg], int(next(got)))
        control = [str(j.decode() if isinstance(j, bytes) else j) for j in next(got)]
        steps = GaugeMetricFamily(
            "moonshot_scheduler_backlog",
            "Tournament scheduling steps waiting in the control queue (cluster-wide).",
            value=sum(j.startswith(ids.advance_job_id("")) for j in control))
        fits = GaugeMetricFamily(
            "moonshot_fit_backlog", "Rating fit jobs waiting in the control queue "
            "(cluster-wide).", value=sum(j.startswith(ids.fit_job_id("")) for j in control))
        asked = GaugeMetricFamily(
            "moonshot_fit_requested",
            "1 when a fit of the pool is asked for and no fit job has taken it up yet.",
            labels=["pool"])
        waiting = GaugeMetricFamily(
            "moonshot_fit_tournaments_waiting",
            "Tournaments waiting for a fit of their own games, by pool.", labels=["pool"])
        for pool in self.pools:
            asked.add_metric([pool], int(requests[pool][0]))
            waiting.add_metric([pool], requests[pool][1])
        open_matches = GaugeMetricFamily(
            "moonshot_matches_open", "Matches without a result yet: queued, running or "
            "waiting to be resumed (cluster-wide).", value=store_matches.open_count(self.r))
        archive = [
            GaugeMetricFamily("moonshot_archive_pending", "Finished, public games waiting "
                              "in Redis to move to the archive (cluster-wide): it grows "
                              "while the archive is away.",
                              value=store_archiving.pending_count(self.r)),
            GaugeMetricFamily("moonshot_archive_parked", "Games the archive refused, set "
                              "aside in Redis (ms:archive:parked says why; cluster-wide).",
                              value=store_archiving.parked_count(self.r)),
            GaugeMetricFamily("moonshot_archive_events_waiting", "Ended tournaments and "
                              "tests waiting to move to the archive (cluster-wide).",
                              value=store_archiving.ended_count(self.r))]
        return [depth, held, steps, fits, asked, waiting, open_matches, *archive,
                *self._arenas()]

    def _arenas(self) -> list[Metric]:
        """Each arena's bots as its latest matchmaking step saw them."""
        seen = store_arena.figures(self.r)
        out: list[Metric] = []
        for name, what in (("online", "joined bots with a live stream, anchors included"),
                           ("waiting", "online bots with a free slot the latest step left "
                                       "waiting (holding for a batch, or the remainder)"),
                           ("playing", "games under way")):
            g = GaugeMetricFamily(f"moonshot_arena_bots_{name}" if name != "playing"
                                  else "moonshot_arena_games_playing",
                                  f"The arena of each pool: {what} (cluster-wide).",
                                  labels=["pool"])
            for pool, figs in seen.items():
                if figs:
                    g.add_metric([pool], int(figs.get(name, 0)))
            out.append(g)
        return out


def serve(listen: str, redis_url: str) -> tuple[str, int]:
    """Serve the worker's metrics and the backlog at http://`listen`/metrics; (host, port)."""
    r = redis.Redis.from_url(redis_url, decode_responses=True, socket_timeout=5,
                             socket_connect_timeout=5)
    REGISTRY.register(Backlog(r))
    return export.serve(REGISTRY, listen)
