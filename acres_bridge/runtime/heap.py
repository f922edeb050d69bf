# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The heap of a process that handles megabyte messages: keep freed buffers for the next ones.

glibc serves an allocation above its mmap threshold (128 KiB at start, raised as large blocks
are freed) with fresh pages and gives freed heap memory back once its top passes the trim
threshold. A process that takes a 1 MB cloud, copies it and frees it ten times a second then
faults in every page of every copy, as the Foxglove view forwarding one Polaris did
(docs/benchmarks.md, "The Foxglove view's cost"). Fixed thresholds keep those buffers in the
heap, where the next message reuses them.
"""

import ctypes

# mallopt's parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# glibc's largest mmap threshold on 64-bit (HEAP_MAX_SIZE / 2): below it, blocks come from
# the heap. Freed memory above the heap's top is kept up to TRIM_THRESHOLD_BYTES.
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
TRIM_THRESHOLD_BYTES = 64 * 1024 * 1024


def keep_freed_buffers() -> bool:
    """Set glibc's thresholds for megabyte messages; False where the C library has no mallopt."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):     # not glibc (musl, macOS)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
                and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
