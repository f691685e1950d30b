"""Keep freed memory in the process, so that a forward pass does not pay for fresh pages.

On Linux, glibc's ``malloc`` serves blocks above its mmap threshold (128 KiB at first,
rising as such blocks are freed, to 32 MiB at most) with ``mmap`` and returns them to the
system when they are freed, and trims the top of its heap as soon as twice that threshold
lies free there. A forward pass of ViT-S at 224 px frees and reallocates hundreds of MiB
of activations per batch, so every batch faults the same pages in again, one per 4 KiB,
each zeroed by the kernel: on a 2-core CPU, 75,000 to 113,000 faults per pass, which made
it 8 to 13 % slower (benchmarks/bench_allocator.py).

:func:`keep_freed_memory` raises both limits, so freed blocks go back to the heap and the
next batch reuses them. The process then keeps the memory of its largest batch until it
exits, which a training or profiling process needs again at its next step anyway. The
command line calls it at start; elsewhere (a notebook, a script) call it yourself. Other
platforms and C libraries keep their own policies, and it does nothing there.
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
