# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The viewer's table: what each topic's messages tell of rates and ages, and its display.

No ROS here: the viewer (:mod:`acres_bridge.demo.viewer`) feeds each message's receive time,
stamp, size and send time in. The columns:

* ``msgs``: messages received so far.
* ``Hz wall``: messages per second of this computer's clock over the last five seconds.
* ``Hz sim``: messages per second of simulation time, from the header stamps over the same
  window (the sensor's own rate; equal to ``Hz wall`` when the simulation runs at real time,
  below its nominal value when messages were lost).
* ``age p50`` and ``age max``: the simulation time on ``/clock`` when the message arrived
  minus its header stamp, in milliseconds. Every stamp is simulation time, so this is the
  latency a ``use_sim_time`` client sees: how far the simulation had moved on when the data
  arrived. It includes the simulator's own delay (a sweep is stamped at its end and sent when
  rendered), the bridge and DDS, in steps of the clock (1/120 s); it is 0 when data and clock
  arrive together and negative when the data overtook ``/clock``. It does not grow while the
  simulation is paused.
* ``dds p50`` and ``dds max``: the middleware's receive time minus its send time, in
  milliseconds of this computer's clock: the last hop, bridge to client. (The bridge's own
  transport time, simulator to bridge, is in ``/diagnostics``.)

"Arrived" is the middleware's receive time of the message (rclpy passes it to two-argument
callbacks), so the viewer's own queueing and drawing do not count; where rclpy does not pass
it (Humble), it is the time of the callback and the ``dds`` columns stay empty.
"""

import bisect
from collections import deque
from collections.abc import Sequence
from typing import Any
from typing import TextIO

import numpy as np

from acres_bridge.conversions.cdr import time_nanoseconds


def stamp_seconds(raw: bytes, *, offset: int = 0) -> float | None:
    """
    Return the time a serialised message holds at ``offset``, in seconds; None if it cannot.

    The viewer counts a message it cannot read a stamp from rather than stop on it.
    """
    try:
        return time_nanoseconds(raw, offset=offset) / 1e9
    except ValueError:
        return None


class ClockHistory:
    """The ``/clock`` values and when they arrived, to tell the simulation time at any instant."""

    def __init__(self, *, keep_s: float = 10.0) -> None:
        self.keep_s = keep_s
        self._received: list[float] = []
        self._clock: list[float] = []
        self.latest_s: float | None = None
        self.first: tuple[float, float] | None = None

    def add(self, received_s: float, clock_s: float) -> None:
        """Add one /clock message: its wall-clock receive time and its value."""
        self.latest_s = clock_s
        if self.first is None:
            self.first = (received_s, clock_s)
        self._received.append(received_s)
        self._clock.append(clock_s)
        if self._received[0] < received_s - 2 * self.keep_s:
            cut = bisect.bisect_left(self._received, received_s - self.keep_s)
            del self._received[:cut], self._clock[:cut]

    def at(self, received_s: float) -> float | None:
        """
        Return the latest /clock received at or before a wall-clock time.

        None before the first /clock, and for times after the latest /clock taken so far: the
        executor may not have taken every /clock that arrived by then (a busy viewer has a
        backlog), and an older value would make the data look early.
        """
        if not self._received or received_s > self._received[-1]:
            return None
        index = bisect.bisect_right(self._received, received_s)
        return self._clock[index - 1] if index else None


class TopicStats:
    """Counts, rates and ages of one topic over a sliding window of wall-clock time."""

    def __init__(self, name: str, type_name: str, *, window_s: float = 5.0,
                 aged: bool = True) -> None:
        self.name = name
        self.type_name = type_name
        self.window_s = window_s
        self.aged = aged
        self.count = 0
        self.bytes = 0
        self.last_stamp_s: float | None = None
        self.last_received_s: float | None = None
        self._recent: deque[tuple[float, float | None, float | None]] = deque()

    def record(self, received_s: float, stamp_s: float | None, size: int = 0,
               sent_s: float | None = None) -> None:
        """Count one message: receive time, header stamp, payload bytes, publish time."""
        self.count += 1
        self.bytes += size
        if stamp_s is not None:
            self.last_stamp_s = stamp_s
        self.last_received_s = received_s
        self._recent.append((received_s, stamp_s, sent_s))
        self._trim(received_s)

    def _trim(self, now_s: float) -> None:
        while self._recent and self._recent[0][0] < now_s - self.window_s:
            self._recent.popleft()

    def row(self, now_s: float, clock: ClockHistory) -> dict[str, Any]:
        """Return the figures of this topic's line of the table (None: nothing measured)."""
        self._trim(now_s)
        received = sorted(item[0] for item in self._recent)
        rate_hz = None
        if len(received) >= 2 and received[-1] > received[0]:
            period_s = (received[-1] - received[0]) / (len(received) - 1)
            # Silent for longer than two periods: the rate is falling, count the silence too.
            span_s = now_s - received[0] if now_s - received[-1] > 2 * period_s else (
                received[-1] - received[0])
            rate_hz = (len(received) - 1) / span_s
        stamps = sorted(item[1] for item in self._recent if item[1] is not None)
        sim_rate_hz = None
        if len(stamps) >= 2 and stamps[-1] > stamps[0]:
            sim_rate_hz = (len(stamps) - 1) / (stamps[-1] - stamps[0])
        ages = []
        if self.aged:
            for received_s, stamp_s, _ in self._recent:
                clock_s = clock.at(received_s)
                if stamp_s is not None and clock_s is not None:
                    ages.append(clock_s - stamp_s)
        transit = [received_s - sent_s for received_s, _, sent_s in self._recent if sent_s]
        return {
            'topic': self.name, 'type': self.type_name, 'msgs': self.count,
            'rate_hz': rate_hz, 'sim_rate_hz': sim_rate_hz,
            **_percentiles('age', ages), **_percentiles('dds', transit),
            'mbytes': self.bytes / 1e6, 'last_stamp_s': self.last_stamp_s,
        }


def _percentiles(name: str, values_s: Sequence[float]) -> dict[str, float | None]:
    """Return ``<name>_p50_ms`` and ``<name>_max_ms`` of durations in seconds."""
    values = np.asarray(values_s, dtype=np.float64)
    return {f'{name}_p50_ms': float(np.median(values) * 1e3) if values.size else None,
            f'{name}_max_ms': float(values.max() * 1e3) if values.size else None}


def format_table(rows: Sequence[dict[str, Any]], header: str) -> list[str]:
    """Return the lines of the table of topic rows under a header line."""
    def number(value: float | None, digits: int) -> str:
        return '-' if value is None else f'{value:.{digits}f}'

    width = max([len(row['topic']) for row in rows] + [5])
    lines = [header, f'{"topic":<{width}}  {"msgs":>7}  {"Hz wall":>7}  {"Hz sim":>7}  '
             f'{"age p50":>7}  {"age max":>7}  {"dds p50":>7}  {"dds max":>7}  {"MB":>7}']
    for row in rows:
        lines.append(
            f'{row["topic"]:<{width}}  {row["msgs"]:>7}  {number(row["rate_hz"], 1):>7}  '
            f'{number(row["sim_rate_hz"], 1):>7}  {number(row["age_p50_ms"], 1):>7}  '
            f'{number(row["age_max_ms"], 1):>7}  {number(row["dds_p50_ms"], 2):>7}  '
            f'{number(row["dds_max_ms"], 2):>7}  {row["mbytes"]:>7.1f}')
    return lines


class Display:
    """A block of lines redrawn in place on a terminal, printed now and then otherwise."""

    def __init__(self, stream: TextIO, *, tty: bool | None = None) -> None:
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self._drawn = 0

    def show(self, lines: Sequence[str]) -> None:
        """Draw the block: over the previous one on a terminal, below it otherwise."""
        if self.tty:
            # Cursor up to the first line of the previous block, clear to the end, redraw.
            prefix = f'\x1b[{self._drawn}F\x1b[J' if self._drawn else ''
            self.stream.write(prefix + '\n'.join(lines) + '\n')
            self._drawn = len(lines)
        else:
            self.stream.write('\n'.join(lines) + '\n\n')
        self.stream.flush()

    def note(self, line: str) -> None:
        """Print a line that stays (above the block on a terminal)."""
        if self.tty and self._drawn:
            self.stream.write(f'\x1b[{self._drawn}F\x1b[J')
            self._drawn = 0
        self.stream.write(line + '\n')
        self.stream.flush()
