# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""keep_freed_buffers: megabyte buffers come from the heap, where freed ones are reused."""

import subprocess
import sys

# Run in a fresh interpreter (thresholds at glibc's defaults): allocate 20 MB and print how far
# the program break moved, in MB. From the heap it moves by the block; an mmap leaves it.
PROBE = '''
import ctypes, sys
from acres_bridge.runtime.heap import keep_freed_buffers
libc = ctypes.CDLL(None)
libc.sbrk.restype = ctypes.c_void_p
libc.sbrk.argtypes = (ctypes.c_ssize_t,)
kept = keep_freed_buffers() if sys.argv[1] == 'kept' else None
before = libc.sbrk(0)
block = bytearray(20_000_000)
print(kept, (libc.sbrk(0) - before) // 1_000_000)
'''


def break_moved_mb(mode: str) -> tuple[str, int]:
    out = subprocess.run([sys.executable, '-c', PROBE, mode], check=True,
                         capture_output=True, text=True, timeout=60).stdout.split()
    return out[0], int(out[1])


def test_a_20_mb_block_comes_from_the_heap_once_freed_buffers_are_kept():
    assert break_moved_mb('kept') == ('True', 20)


def test_glibc_maps_a_20_mb_block_by_default():
    assert break_moved_mb('default') == ('None', 0)
