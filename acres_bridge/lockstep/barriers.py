# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
One stream's barriers: which steps it has published, and the error of one that never came.

A step's barrier is the stream's last frame of the step: once the reader thread published it,
every frame the simulator sent before it is published too. :class:`BarrierTracker` is fed by
that thread and completes the futures lockstep waits on (lockstep/delivery.py).
"""

from collections import deque
import concurrent.futures
import threading

BARRIER_HISTORY = 256


class BarrierTracker:
    """
    The barriers one stream has published: the last 256 steps and the futures waiting for one.

    The reader thread calls :meth:`published` after each barrier went out; a step already
    published completes a new :meth:`future` at once. The steps are forgotten when the
    world's step goes back (a reset).
    """

    def __init__(self, history: int = BARRIER_HISTORY) -> None:
        self._lock = threading.Lock()
        self._steps: deque[int] = deque(maxlen=history)
        self._last: tuple[int, float] | None = None
        self._waiting: list[tuple[int, concurrent.futures.Future]] = []

    @property
    def last(self) -> tuple[int, float] | None:
        """The (step, stamp_s) of the last barrier published, None before one."""
        with self._lock:
            return self._last

    def future(self, step: int) -> concurrent.futures.Future:
        """Return a future that completes with ``step`` once its barrier is out (cancellable)."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            if step not in self._steps:
                self._waiting.append((step, future))
                return future
        future.set_result(step)
        return future

    def published(self, step: int, stamp_s: float) -> None:
        """Record that the reader thread published the barrier of ``step``."""
        with self._lock:
            if self._last is not None and step < self._last[0]:
                self._steps.clear()
            self._steps.append(step)
            self._last = (step, stamp_s)
            ready = [future for waiting, future in self._waiting if waiting == step]
            self._waiting = [(waiting, future) for waiting, future in self._waiting
                             if waiting != step and not future.done()]
        for future in ready:
            if future.set_running_or_notify_cancel():
                future.set_result(step)


class BarrierTimeout(TimeoutError):
    """The barrier of a step did not come in time on one stream."""

    def __init__(self, stream: str, step: int, timeout_s: float) -> None:
        super().__init__(f'no barrier of step {step} within {timeout_s:g} s on the sensor '
                         f'stream of {stream}')
        self.stream = stream
        self.step = step
        self.timeout_s = timeout_s
