"""The house bots' process pool is replaced once when it breaks, however many threads
find it broken at once: a thread that saw the old pool broken never shuts down the new
one under the decisions other threads have queued there (real process pools, threads)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

import pytest

from moon import GameState, Rules
from workers import house

BOT = "house:pimc?samples=256"  # ~0.15 s a decision: decisions queue up in the pool


class _SlowToFail:
    """A real pool that has broken, whose `submit` takes its time to say so: the first
    caller learns it at 0.1 s, the others at 0.6 s, after other threads have moved on."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.calls = 0
        self.lock = threading.Lock()

    def submit(self, *args: Any) -> Future[Any]:
        with self.lock:
            self.calls += 1
            first = self.calls == 1
        time.sleep(0.1 if first else 0.6)
        return self.pool.submit(*args)  # type: ignore[no-any-return]  # raises: broken

    def shutdown(self, **kwargs: Any) -> None:
        self.pool.shutdown(**kwargs)


@pytest.fixture
def decision(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, dict[str, Any], list[int]]]:
    """A decision to ask of house processes, two of them (so that most decisions wait in
    the pool, not in its call queue: that takes one more than there are processes)."""
    monkeypatch.setattr(house, "HOUSE_PROCESSES", 2)
    made: list[ProcessPoolExecutor] = []

    class Kept(ProcessPoolExecutor):
        """A pool that stays referenced after it is dropped, as one a thread is submitting
        to is: its shutdown then really cancels what waits in it (a pool collected at once
        would let its pending work run, hiding the fault by chance)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(house, "ProcessPoolExecutor", Kept)
    state = GameState.new(Rules.make(3, {}), 7)
    yield 7, state.observation(state.to_act).to_json(), list(state.legal_ids())
    house.shutdown()


def test_threads_that_find_the_pool_broken_replace_it_once(
        decision: tuple[int, dict[str, Any], list[int]]) -> None:
    seed, obs, legal = decision
    want = house.submit(BOT, seed, obs, legal).result(timeout=120)[0]
    broken = house._pool
    assert broken is not None
    for proc in list(broken._processes.values()):  # a house process dies: the pool breaks
        proc.kill()
    deadline = time.monotonic() + 30
    while not broken._broken and time.monotonic() < deadline:
        time.sleep(0.02)
    assert broken._broken
    house._pool = _SlowToFail(broken)  # type: ignore[assignment]

    def decide(delay: float) -> int:
        time.sleep(delay)
        return house.submit(BOT, seed, obs, legal).result(timeout=120)[0]

    # Two threads find the old pool broken (one at 0.1 s, one at 0.6 s); twelve more ask
    # the new pool meanwhile, at 0.2 s, and their decisions wait there for its processes.
    delays = [0.0, 0.0] + [0.2] * 12
    with ThreadPoolExecutor(len(delays)) as threads:
        got = list(threads.map(decide, delays))
    assert got == [want] * len(delays)
