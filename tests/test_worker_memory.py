"""workers.memory: a fit keeps its freed arrays while it runs and gives them back after."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from workers import memory
from workers.memory import fit_memory

MB = 1 << 20
glibc = pytest.mark.skipif(memory._LIBC is None, reason="mallopt is glibc's")


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _touch_and_free(size: int) -> None:
    a = np.ones(size // 8)  # every page written
    assert a[-1] == 1.0
    del a


def _huge() -> bool:
    from numpy._core.multiarray import _set_madvise_hugepage

    was = _set_madvise_hugepage(True)
    _set_madvise_hugepage(was)
    return bool(was)


@glibc
def test_freed_arrays_stay_while_a_fit_runs_and_go_back_after() -> None:
    base = _rss()
    with fit_memory():
        _touch_and_free(300 * MB)
        kept = _rss() - base
        _touch_and_free(300 * MB)  # the same memory again: no more of it
        again = _rss() - base
    after = _rss() - base
    assert kept > 250 * MB, kept
    assert again < kept + 50 * MB, (kept, again)
    assert after < 50 * MB, after  # given back on the way out
    _touch_and_free(300 * MB)  # and out of a fit, a large array is given back at once
    assert _rss() - base < 50 * MB


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
