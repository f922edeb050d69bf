# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
JSON lines, the framing of the control channel: one JSON object per line, ended by LF.

``LineSplitter`` cuts a byte stream into its lines and keeps the unfinished rest, so that the
client, the emulator and the fault proxy read the channel the same way; ``is_int`` and
``is_number`` are the checks of the values a line carries (JSON has no integer type of its
own, and Python's ``True`` is an ``int``).
"""

import math
from typing import Any


class LineSplitter:
    """
    Cut bytes as they arrive into lines ended by a newline.

    ``feed`` returns the lines it completed, without their newlines; ``pending`` is the size
    of the unfinished line, for the caller to hold against its limit.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()

    @property
    def pending(self) -> int:
        """Return the bytes of the line not yet ended."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes]:
        """Add received bytes; return the lines they complete, in order, newline removed."""
        buffer = self._buffer
        buffer += data
        if b'\n' not in data:
            return []
        lines = []
        start = 0
        while (end := buffer.find(b'\n', start)) >= 0:
            lines.append(bytes(buffer[start:end]))
            start = end + 1
        del buffer[:start]
        return lines


def is_int(value: Any) -> bool:
    """Return whether a JSON value is an integer (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """Return whether a JSON value is a finite number (not a bool)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))
