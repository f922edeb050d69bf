# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A stream's clouds (or its images), published in order on a thread of their own.

Sending a cloud to a subscriber takes rmw a while (docs/benchmarks.md, "What the two missed
targets are made of"); on the stream's reader thread the clock and INS frames behind it would
wait in the socket all that time. :class:`Outbox` takes
the serialised message from the reader and publishes it on ``sensor-tx:<name>`` with
``publish_serialised`` (no copy, the GIL released), while the reader goes on. A sensor bridge
has one outbox per type, so that a cloud never waits for the image that arrived with it.
Lockstep's barrier waits for :meth:`Outbox.drain` of each, so a step's barrier never overtakes
its clouds and images. :class:`SenderThread` is the hand-off and the thread without the
publishing; the compressed images' encoder (sensors/image_encoder.py) stands on it too.
"""

from collections import deque
from collections.abc import Callable
import threading
import time
from typing import Generic
from typing import TypeVar

from rclpy.publisher import Publisher

from acres_bridge.protocol.threads import name_native_thread
from acres_bridge.sensors.message_pool import PooledMessage
from acres_bridge.sensors.rcl_publish import publish_serialised

# Messages waiting; the pool's ring bounds the pooled ones, this bounds the rest.
CAPACITY = 8

ItemT = TypeVar('ItemT')


class SenderThread(Generic[ItemT]):
    """
    Items handed over by one thread and sent in order by a thread of their own.

    The hand-off (``_queue`` under ``_changed``) is filled by the subclass's own ``put``;
    the thread sends each item with :meth:`_send`, counts and reports what raises with
    :meth:`_failed`, and gives every item back with :meth:`_done`, sent or not.

    :param thread_name: the sending thread's name.
    """

    def __init__(self, thread_name: str) -> None:
        self._queue: deque[ItemT] = deque()
        self._changed = threading.Condition()
        self._sending = 0
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def drain(self, timeout_s: float) -> bool:
        """Wait until every item handed over so far is out; False after ``timeout_s``."""
        with self._changed:
            return self._changed.wait_for(
                lambda: not self._queue and not self._sending, timeout_s)

    @property
    def waiting(self) -> int:
        """Return the number of items handed over and not yet out."""
        with self._changed:
            return len(self._queue) + self._sending

    def stop(self, timeout_s: float = 5.0) -> None:
        """Send what is queued (``timeout_s`` at most), then end the thread and join it."""
        deadline = time.monotonic() + timeout_s
        if self._thread.is_alive():
            self.drain(timeout_s)
        with self._changed:
            self._stopping = True
            left = list(self._queue)
            self._queue.clear()
            self._changed.notify_all()
        for item in left:
            self._done(item)
        if self._thread.is_alive():
            self._thread.join(max(0.0, deadline - time.monotonic()))

    def _send(self, item: ItemT) -> None:
        raise NotImplementedError

    def _failed(self, item: ItemT, exc: Exception) -> None:
        raise NotImplementedError

    def _done(self, item: ItemT) -> None:
        """Give an item back once it is out or will never be (nothing to do by default)."""

    def _run(self) -> None:
        name_native_thread(self._thread.name)
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._stopping or self._queue)
                if self._stopping:
                    return
                item = self._queue.popleft()
                self._sending = 1
            try:
                self._send(item)
            except Exception as exc:
                # The top level of one item on this thread: count it and go on.
                self._failed(item, exc)
            finally:
                self._done(item)
                with self._changed:
                    self._sending = 0
                    self._changed.notify_all()


class Outbox(SenderThread[tuple[str, Publisher, PooledMessage]]):
    """
    Publish serialised messages in the order given, on a thread of their own.

    :param name: names the thread (``sensor-tx:<name>``).
    :param on_error: called on that thread with the message's kind and the exception of a
        publication that failed (counted in :attr:`failed`, which that thread alone writes).
    :param capacity: messages waiting at most; :meth:`put` blocks while it is full.
    """

    def __init__(self, name: str, *, on_error: Callable[[str, Exception], None],
                 capacity: int = CAPACITY) -> None:
        super().__init__(f'sensor-tx:{name}')
        self._on_error = on_error
        self._capacity = capacity
        self.failed: dict[str, int] = {}

    def put(self, kind: str, publisher: Publisher, message: PooledMessage,
            timeout_s: float) -> bool:
        """
        Queue a message; False (and the message released) if the queue stayed full or stops.

        :param kind: the frame type it comes from (``lidar``), for the counters.
        """
        with self._changed:
            if not self._changed.wait_for(
                    lambda: self._stopping or len(self._queue) < self._capacity, timeout_s) \
                    or self._stopping:
                message.release()
                return False
            self._queue.append((kind, publisher, message))
            self._changed.notify_all()
        return True

    def _send(self, item: tuple[str, Publisher, PooledMessage]) -> None:
        _, publisher, message = item
        publish_serialised(publisher, message.data)

    def _failed(self, item: tuple[str, Publisher, PooledMessage], exc: Exception) -> None:
        kind = item[0]
        self.failed[kind] = self.failed.get(kind, 0) + 1
        self._on_error(kind, exc)

    def _done(self, item: tuple[str, Publisher, PooledMessage]) -> None:
        item[2].release()
