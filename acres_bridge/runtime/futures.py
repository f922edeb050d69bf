# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Futures completed on any thread, awaited in rclpy coroutines and failed at their deadlines.

* :func:`settle` completes a ``concurrent.futures.Future`` unless it is already done.
* :class:`FutureWaiter` is the one adaptor from a ``concurrent.futures.Future`` (completed on
  any thread) to an rclpy coroutine: sim_control awaits every control reply with it, and
  lockstep every step's delivery.
* :class:`Deadlines` is the one time-out mechanism for such futures: one thread and a heap of
  deadlines that fail the futures not done by then (a barrier that never comes).
"""

from collections.abc import Callable
import concurrent.futures
import heapq
import itertools
import threading
import time
from typing import Any

from rclpy.exceptions import InvalidHandle
from rclpy.executors import Executor

# A wake-up task re-creates itself while its coroutine has not resumed (see FutureWaiter), for
# at most this long after the future completed: only a coroutine that its executor no longer
# runs (its node removed) is not resumed by then.
REARM_LIMIT_S = 30.0
# Past this many wake-ups of one waiter, each further one first pauses, so that a coroutine
# held up for long (a starved thread on a loaded host) costs a wake-up a millisecond, not a core.
REARMS_AT_FULL_SPEED = 1_000
REARM_PAUSE_S = 0.001


def settle(future: concurrent.futures.Future, result: Any = None,
           error: BaseException | None = None) -> bool:
    """Complete a future unless it is already done; return whether this call completed it."""
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
    except concurrent.futures.InvalidStateError:
        return False
    return True


class FutureWaiter:
    """
    Await a ``concurrent.futures.Future`` in an rclpy coroutine without blocking a thread.

    rclpy (up to Kilted) resumes a coroutine by polling: whenever its executor wakes up, it
    runs every pending task that is not running, and a task whose coroutine still waits yields
    again. The waiter parks by yielding; the future's completion, on whatever thread, wakes
    the executor with a new task (``create_task``), and the executor's next pass resumes the
    coroutine.

    The race: a multi-threaded executor skips a task that is running. A completion that lands
    after the coroutine found the future pending, but before its task's run ended, wakes a
    pass that skips the task, and nothing wakes the executor again. So the wake-up task checks
    whether the coroutine has resumed and, if not, creates itself again: each time is one more
    executor pass, and the first pass after the parked run ended resumes the coroutine. The
    repetition ends on the coroutine's own progress; in the usual case (the future completes
    long after the coroutine parked) it costs one or two passes. A thread starved on a loaded
    host can hold the parked run for seconds, about 2,000 passes a second here, so a count
    would run out and lose the wake-up (a step that never answers); the wake-ups go on for
    ``REARM_LIMIT_S`` instead, pausing a millisecond each past the first thousand.
    ``rearms`` counts the wake-ups that found the coroutine not yet resumed.

    :param future: the future to await; its result or exception is the await's.
    :param executor: the executor running the awaiting coroutine (None: no wake-up, for a
        coroutine driven by hand).
    """

    def __init__(self, future: concurrent.futures.Future, executor: Executor | None) -> None:
        self._future = future
        self._executor = executor
        self._lock = threading.Lock()
        self._parked = False
        self._abandoned = False
        self._armed = False
        self._completed_at = 0.0
        self.rearms = 0

    def __await__(self):
        try:
            while True:
                with self._lock:
                    if self._future.done():
                        self._parked = False
                        break
                    self._parked = True
                    arm = not self._armed
                    self._armed = True
                if arm:
                    self._future.add_done_callback(self._completed)
                yield
        except GeneratorExit:
            with self._lock:
                self._abandoned = True
            raise
        return self._future.result()

    def _completed(self, future: concurrent.futures.Future) -> None:
        if self._executor is not None:
            with self._lock:
                self._completed_at = time.monotonic()
            self._schedule_wake()

    def _wake(self) -> None:
        with self._lock:
            again = (self._parked and not self._abandoned
                     and time.monotonic() - self._completed_at < REARM_LIMIT_S)
            if again:
                self.rearms += 1
            pause = again and self.rearms > REARMS_AT_FULL_SPEED
        if pause:
            time.sleep(REARM_PAUSE_S)    # only a multi-threaded executor gets here: a worker
        if again:
            self._schedule_wake()

    def _schedule_wake(self) -> None:
        """Queue the wake-up task (create_task wakes the executor), unless it has shut down."""
        try:
            self._executor.create_task(self._wake)
        except (AttributeError, InvalidHandle):
            # Ctrl-C in a step: the futures fail while the nodes are destroyed, after the
            # executor's shutdown(). Jazzy's create_task then triggers a guard condition that is
            # None or being destroyed (Kilted's checks). No coroutine runs again: nothing to wake.
            pass


class Deadlines:
    """
    Fail futures that are not done by their deadline: one thread and one heap per process part.

    :param name: the thread's name.
    """

    def __init__(self, name: str = 'lockstep-deadlines') -> None:
        self._name = name
        self._heap: list[tuple[float, int, concurrent.futures.Future,
                               Callable[[], BaseException | None]]] = []
        self._order = itertools.count()
        self._condition = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def fail_after(self, future: concurrent.futures.Future, timeout_s: float,
                   error: Callable[[], BaseException | None]) -> None:
        """
        Fail ``future`` with ``error()`` if it is not done ``timeout_s`` from now.

        ``error`` is called on the deadline thread and may return None to leave the future be.
        """
        with self._condition:
            if self._stopped:
                return
            heapq.heappush(self._heap, (time.monotonic() + timeout_s, next(self._order),
                                        future, error))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._condition.notify()

    def stop(self) -> None:
        """Stop the thread; pending deadlines are dropped."""
        with self._condition:
            self._stopped = True
            self._heap.clear()
            self._condition.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=5.0)

    def _run(self) -> None:
        while True:
            with self._condition:
                due = []
                while not self._stopped:
                    now = time.monotonic()
                    while self._heap and (self._heap[0][0] <= now or self._heap[0][2].done()):
                        deadline, _, future, error = heapq.heappop(self._heap)
                        if not future.done():
                            due.append((future, error))
                    if due:
                        break
                    self._condition.wait(self._heap[0][0] - now if self._heap else None)
                if self._stopped:
                    return
            for future, error in due:
                exception = error()
                if exception is not None:
                    settle(future, error=exception)
