"""workers.memory: a fit keeps its freed arrays while it runs and gives them back after."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from workers import memory
from workers.memory import fit_memory

ROOT = Path(__file__).resolve().parent.parent

glibc = pytest.mark.skipif(memory._LIBC is None, reason="mallopt is glibc's, untuned")

# Run in a fresh process (the test's own has met other tests' allocations): on a thread,
# as the worker runs a fit, with or without `one_arena` first; prints the resident MB a
# fit kept after freeing 300 MB, after doing it again, and after it ended.
_PROBE = """
import json, sys, threading
import numpy as np
from workers import memory

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

def churn():
    a = np.ones(300 * 2**20 // 8)
    assert a[-1] == 1.0
    del a

out = {}
def fit():
    base = rss()
    with memory.fit_memory():
        churn()
        out["kept"] = rss() - base
        churn()
        out["again"] = rss() - base
    out["after"] = rss() - base
    churn()
    out["outside"] = rss() - base

if sys.argv[1] == "one":
    memory.one_arena()
t = threading.Thread(target=fit)
t.start()
t.join()
print(json.dumps(out))
"""


def _probe(mode: str) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    done = subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, env=env, check=True)
    out: dict[str, float] = json.loads(done.stdout)
    return out


@glibc
def test_a_fit_on_a_workers_thread_keeps_its_freed_arrays_and_gives_them_back_after() -> None:
    got = _probe("one")
    assert got["kept"] > 250, got  # 300 MB freed and kept in the process
    assert got["again"] < got["kept"] + 50, got  # the same memory used again
    assert got["after"] < 50, got  # given back on the way out
    assert got["outside"] < 50, got  # and out of a fit a large array goes back at once


@glibc
def test_without_one_arena_a_threads_large_arrays_go_back_at_once() -> None:
    # Why a worker calls `one_arena`: a thread's own arena maps each large array afresh.
    got = _probe("own")
    assert got["kept"] < 50, got


def _huge() -> bool:
    """Whether numpy asks for huge pages now."""
    was = memory._huge_pages(True)
    memory._huge_pages(was)
    return was


def test_numpy_asks_for_no_huge_pages_during_a_fit_and_as_before_after() -> None:
    before = _huge()
    with fit_memory():
        assert not _huge()
    assert _huge() == before


def test_fits_in_two_threads_share_one_setting_until_the_last_ends() -> None:
    before = _huge()
    inside = threading.Event()
    leave = threading.Event()

    def other() -> None:
        with fit_memory():
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=other)
    with fit_memory():
        t.start()
        assert inside.wait(10)
    assert not _huge()  # the other thread's fit still runs
    leave.set()
    t.join(10)
    assert _huge() == before
