"""House bots at the table: the stack's own players, run by the worker hosting the match.

A house seat gets no decision request and needs no connection. The match job
asks this module, which has the decision made in a pool of processes of the
worker (`HOUSE_PROCESSES`, started with `spawn` and niced): a search bot's
thinking holds no lock that the worker's match threads share (they share one
GIL), so it delays no other match's decisions beyond the CPU it takes, and the
lower priority hands that CPU to the match threads first. A house player's
decision is a pure function of the seat's observation, the game's seed and the
seat (`bots.player`), so a match resumed from its action log after a crash
gets exactly the moves it would have had.

The CPU a decision takes (the house process's thread time) comes back with it: the match
host counts it against the author of a test of a change (`store.authors.add_cpu`), whose
tests start no new pair once their house-bot CPU of the day is used up.

The clock applies as to any bot: a decision is charged the time the player
computed (in its process, not the time it waited for one), and one that
overruns the move time and the bank is replaced and counts a strike, like a
late answer; for a house bot that is a bug, counted in
`moonshot_worker_house_overruns_total`.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from bots import HouseBot, parse
from moon import Observation
from moon.actions import ACTIONS

__all__ = ["HOUSE_NICE", "HOUSE_PROCESSES", "BrokenProcessPool", "decide_here", "shutdown",
           "submit"]

HOUSE_PROCESSES = int(os.environ.get("MOONSHOT_HOUSE_PROCESSES") or os.cpu_count() or 1)
HOUSE_NICE = 10  # the house processes yield the CPU to the worker's match threads

_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()
_players: dict[str, Any] = {}  # in each house process: canonical id -> player


def _init() -> None:
    """A house process starts at a lower priority than the worker."""
    with contextlib.suppress(OSError):  # not allowed here: run at the worker's priority
        os.nice(HOUSE_NICE)


def decide_here(bot_id: str, seed: int, observation: Mapping[str, Any],
                legal: Sequence[int]) -> tuple[int, float, float]:
    """The house bot's action id, the milliseconds it computed and the CPU seconds it
    took (this thread's: a house process decides one at a time), in this process."""
    started = time.perf_counter()
    cpu = time.thread_time()
    player = _players.get(bot_id)
    if player is None:
        player = _players[bot_id] = parse(bot_id).player()
    obs = Observation.from_json(dict(observation))
    action = player.decide(obs, [ACTIONS[i] for i in legal], seed)
    return action.id, (time.perf_counter() - started) * 1000, time.thread_time() - cpu


def _pool_now(broken: ProcessPoolExecutor | None = None) -> ProcessPoolExecutor:
    """The pool, started if need be; `broken`: the pool the caller found broken, replaced
    unless another thread replaced it first.

    Many match threads may find one pool broken at once: each names the pool it saw, so
    only the first replaces it, and the others use the new pool rather than shutting it
    down under the decisions queued in it (a shutdown that cancelled them, failing their
    matches, or refused their submissions)."""
    global _pool
    with _pool_lock:
        if broken is not None and _pool is broken:  # a house process died: start them again
            _pool = None
            broken.shutdown(wait=False)  # broken: its futures have failed already
        if _pool is None:
            _pool = ProcessPoolExecutor(HOUSE_PROCESSES, initializer=_init,
                                        mp_context=multiprocessing.get_context("spawn"))
        return _pool


_TRIES = 3  # pools started for one decision before its BrokenProcessPool goes up


def submit(bot: HouseBot | str, seed: int, observation: Mapping[str, Any],
           legal: Sequence[int]) -> Future[tuple[int, float, float]]:
    """Have a house process decide; the future gives (action id, ms computed, CPU s). A pool
    broken by a house process that died is started again (once, whoever finds it)."""
    bot_id = bot.id if isinstance(bot, HouseBot) else bot
    pool = _pool_now()
    for _ in range(_TRIES - 1):
        try:
            return pool.submit(decide_here, bot_id, seed, observation, list(legal))
        except BrokenProcessPool:
            pool = _pool_now(broken=pool)
    return pool.submit(decide_here, bot_id, seed, observation, list(legal))


def shutdown() -> None:
    """Stop the house processes (the worker is stopping)."""
    global _pool
    with _pool_lock:
        if _pool is not None:
            _pool.shutdown(wait=False, cancel_futures=True)
            _pool = None
