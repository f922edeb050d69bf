# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Reports at most once per interval: ``LogThrottle`` and the text of the reports it held back.

A repeated report (a bad frame, a lost connection, a publish that failed) goes out once per
``LOG_INTERVAL_S``; the next one that goes out says how many were held back since, with
:func:`held_text`. Used by the protocol clients and by the nodes for their own reports.
"""

import threading
import time

LOG_INTERVAL_S = 5.0


def held_text(held: int) -> str:
    """Return the note of the reports held back, to end a report with; empty for none."""
    return f' ({held} more since the last report)' if held else ''


class LogThrottle:
    """Let one report through per interval and count the ones held back."""

    def __init__(self, interval_s: float) -> None:
        self._interval_s = interval_s
        self._next = 0.0
        self._held = 0
        self._lock = threading.Lock()

    def ready(self) -> int | None:
        """Return the reports held back since the last one when one may go out, else None."""
        now = time.monotonic()
        with self._lock:
            if now < self._next:
                self._held += 1
                return None
            held, self._held = self._held, 0
            self._next = now + self._interval_s
            return held
