"""Keep freed memory in the process, so that a forward pass does not pay for fresh pages.

glibc's ``malloc`` returns large freed blocks to the system, so every batch of a ViT forward
pass faults hundreds of MiB of pages in again, each zeroed by the kernel: on a 2-core CPU that
made a pass 8 to 13 % slower (benchmarks/bench_allocator.py). :func:`keep_freed_memory`
raises glibc's mmap and trim thresholds, so the next batch reuses the freed blocks and the
process keeps the memory of its largest batch. The command line calls it at start; a notebook
or script calls it itself. Elsewhere than glibc it does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools

# mallopt(3) parameters, from glibc's malloc.h.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# Blocks below this size come from the heap; the heap is trimmed only when this much lies free.
KEPT_BYTES = 1 << 30


@functools.cache
def keep_freed_memory() -> bool:
    """Ask glibc's ``malloc`` to keep freed blocks of up to 1 GiB for reuse; True if it
    agreed, False where the C library is not glibc (macOS, Windows, musl). Idempotent."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, KEPT_BYTES)) and bool(mallopt(_M_TRIM_THRESHOLD, KEPT_BYTES))
