"""Memory for a large fit: the fit's freed arrays are kept in the process while it runs.

A batch fit of a million games makes and drops hundreds of arrays of 10 to 100 MB
(a game's 3 x 3 Hessian for every game, the boards' blocks, the keys of the ids). glibc
serves every allocation above 32 MB with a fresh `mmap` and gives it back at `free`,
so the kernel faults in and zeroes every page of every such array again: measured on
the 2-core machine, a cold fit of a million games took 21 to 26 s of CPU, of which
about 6 s were those faults; numpy also asks for transparent huge pages on large
arrays (`madvise`), and where the kernel must compact memory to find one the first
touch stalls (a million ids keyed: 1.3 s with the huge pages at hand, 4.9 s without).

`fit_memory()` turns both off while a fit runs: glibc serves large arrays from its
heap (`M_MMAP_MAX` 0) and keeps what is freed (`M_TRIM_THRESHOLD` raised), numpy asks
for no huge pages; the same fit takes 15 s. On the way out it gives the memory back
(`malloc_trim`: the peak of 3 GB went back to the 0.65 GB the table and the result
hold) and leaves glibc with a fixed 32 MB threshold and a 64 MB trim, the values its
own dynamic threshold reaches (setting any of these options ends that adjustment).
Fits in several threads of one worker share one setting (counted). Elsewhere than
glibc (musl, macOS) only numpy's huge pages are turned off.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["fit_memory"]

log = logging.getLogger("moonshot.memory")

# mallopt's parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_MMAP_MAX = -4
_KEEP = 2**31 - 1  # bytes of free heap kept while a fit runs (mallopt takes an int)
_AFTER_MMAP_THRESHOLD = 32 << 20
_AFTER_TRIM_THRESHOLD = 64 << 20
_AFTER_MMAP_MAX = 65536  # glibc's default

_lock = threading.Lock()
_active = 0
_huge_before = True


def _libc() -> Any:
    """glibc, or None where mallopt is not glibc's."""
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
    try:
        from numpy._core.multiarray import (  # type: ignore[attr-defined]
            _set_madvise_hugepage,
        )
    except ImportError:
        return False
    return bool(_set_madvise_hugepage(on))


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
