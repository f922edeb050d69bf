# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The operating system's name of the calling thread, so that top, perf and gdb show its job.

Python before 3.14 leaves every thread of a process with the process's name, so a native
profile cannot tell the stream's reader from the executor. Linux keeps 15 bytes of a name
(``sensor-rx:polaris`` shows as ``sensor-rx:polar``). Elsewhere, or where libc cannot be
reached, naming does nothing.
"""

import ctypes
import ctypes.util
import sys

_PR_SET_NAME = 15
_NAME_BYTES = 15


def _prctl() -> object | None:
    if not sys.platform.startswith('linux'):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def name_native_thread(name: str) -> bool:
    """
    Give the calling thread ``name`` (its first 15 bytes) in the operating system.

    :return: whether the name was set.
    """
    if _PRCTL is None:
        return False
    encoded = name.encode('utf-8', errors='replace')[:_NAME_BYTES]
    return _PRCTL(_PR_SET_NAME, ctypes.c_char_p(encoded), 0, 0, 0) == 0
