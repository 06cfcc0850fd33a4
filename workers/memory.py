"""Memory for a large fit: the fit's freed arrays are kept in the process while it runs.

A batch fit of a million games makes and drops hundreds of arrays of 10 to 100 MB
(a game's 3 x 3 Hessian for every game, the boards' blocks, the keys of the ids). glibc
serves every allocation above 32 MB with a fresh `mmap` and gives it back at `free`,
so the kernel faults in and zeroes every page of every such array again: measured on
the 2-core machine, a cold fit of a million games took 21 to 26 s of CPU, and 15 s
with those arrays kept (bench/archive.py, docs/PERFORMANCE.md). numpy also asks for
transparent huge pages on large arrays (`madvise`); where the kernel must compact
memory to find one, the first touch stalls (a million ids keyed: 1.3 s with the huge
pages at hand, 4.9 s without).

`fit_memory()` turns both off while a fit runs: glibc serves large arrays from its
heap (`M_MMAP_MAX` 0) and keeps what is freed (`M_TRIM_THRESHOLD` raised), numpy asks
for no huge pages. On the way out it gives the memory back (`malloc_trim`: the peak of
3 GB went back to the 0.65 GB the table and the result hold) and leaves glibc with a
32 MB mmap threshold and a 64 MB trim threshold, the largest its own dynamic threshold
would reach (setting any of these options ends that adjustment for the process).
Fits in several threads of one worker share one setting (counted).

The worker runs a fit on one of its threads, and glibc gives each thread an arena of
its own, in which a request above 64 MB is always a fresh `mmap` whatever the options:
so a worker keeps every thread on the main arena (`one_arena`, at its start). Python
threads allocate holding the GIL, so they hardly contend for it; a fit on another
thread then gains what it gains on the main one (20 arrays of 100 MB: 0.96 s of CPU
on a thread of its own arena, 0.13 s on the main arena).

Where the operator tuned glibc's malloc (a `MALLOC_*_` variable or `GLIBC_TUNABLES`)
or the C library is not glibc (musl, macOS), malloc is left alone: only numpy's huge
pages are turned off during a fit.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["fit_memory", "one_arena"]

# mallopt's parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8
_KEEP = 2**31 - 1  # bytes of free heap kept while a fit runs (mallopt takes an int)
_AFTER_MMAP_THRESHOLD = 32 << 20
_AFTER_TRIM_THRESHOLD = 64 << 20
_AFTER_MMAP_MAX = 65536  # glibc's default

_lock = threading.Lock()
_active = 0
_huge_before = True


def _operator_tuned() -> bool:
    """Whether glibc's malloc was tuned from the environment."""
    return ("glibc.malloc" in os.environ.get("GLIBC_TUNABLES", "")
            or any(k.startswith("MALLOC_") and k.endswith("_") for k in os.environ))


def _libc() -> Any:
    """glibc, or None where mallopt is not glibc's or its malloc was tuned already."""
    if _operator_tuned():
        return None
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018 (glibc only)
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()


def _huge_pages(on: bool) -> bool:
    """Whether numpy asked for huge pages before; sets it to `on` (a no-op where numpy
    has no such switch)."""
    for where in ("numpy._core.multiarray", "numpy.core.multiarray"):  # numpy 2, 1
        try:
            switch = importlib.import_module(where)._set_madvise_hugepage
        except (ImportError, AttributeError):
            continue
        return bool(switch(on))
    return False


def one_arena() -> None:
    """Every thread of this process allocates from glibc's main arena from now on (a
    thread that allocated before keeps its own): call it before a worker's threads
    start (module doc)."""
    if _LIBC is not None:
        _LIBC.mallopt(_M_ARENA_MAX, 1)


@contextmanager
def fit_memory() -> Iterator[None]:
    """Keep freed memory in the process while the body runs (module doc)."""
    global _active, _huge_before
    with _lock:
        if _active == 0:
            _huge_before = _huge_pages(False)
            if _LIBC is not None:
                _LIBC.mallopt(_M_MMAP_MAX, 0)
                _LIBC.mallopt(_M_TRIM_THRESHOLD, _KEEP)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                _huge_pages(_huge_before)
                if _LIBC is not None:
                    _LIBC.mallopt(_M_MMAP_MAX, _AFTER_MMAP_MAX)
                    _LIBC.mallopt(_M_MMAP_THRESHOLD, _AFTER_MMAP_THRESHOLD)
                    _LIBC.mallopt(_M_TRIM_THRESHOLD, _AFTER_TRIM_THRESHOLD)
                    _LIBC.malloc_trim(0)
