"""A stopping worker ends its command channel in bounded time, against a real Redis."""

from __future__ import annotations

import time
from pathlib import Path

from clients.redisproc import RedisServer
from workers.queues import rq_connection
from workers.worker import make_worker


def test_unsubscribing_never_waits_for_the_listeners_minute(tmp_path: Path) -> None:
    """RQ's listening thread reads with a 60 s timeout. If it has read an UNSUBSCRIBE's
    reply before it is told to stop, it waits 60 s for a subscription that never comes,
    and RQ's unsubscribe joined it without a timeout: a CI run's worker did not exit
    within 10 s of SIGTERM. Put in that state on purpose, the worker's unsubscribe
    still returns at once."""
    with RedisServer(tmp_path / "redis", appendonly=False) as srv:
        worker = make_worker(rq_connection(srv.url), name="stopping", concurrency=1)
        worker.subscribe()  # type: ignore[no-untyped-call]
        pubsub, thread = worker.pubsub, worker.pubsub_thread
        assert pubsub is not None and thread is not None
        deadline = time.monotonic() + 10
        while not pubsub.subscribed and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pubsub.subscribed
        pubsub.unsubscribe()  # type: ignore[no-untyped-call]  # the reply reaches the thread first
        while pubsub.subscribed and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pubsub.subscribed  # the thread read it: it now waits up to 60 s
        time.sleep(0.3)
        started = time.monotonic()
        worker.unsubscribe()
        assert time.monotonic() - started < 20  # not the minute the listener waits
