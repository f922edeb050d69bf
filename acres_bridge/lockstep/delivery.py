# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A stream's side of a step: "barrier N published and every reader acknowledged".

* :class:`DeliverySource` is what lockstep asks of a stream. A stream of this process is a
  :class:`StreamDelivery`; a stream in a child process answers the same questions over its
  channel (sensors/agent_processes.py).
* :class:`StreamDelivery` waits for the stream's barrier (lockstep/barriers.py), then, on one of
  the lockstep's ``lockstep-ack`` threads, for its writers to match the readers and for their
  acknowledgements (lockstep/endpoints.py), and ends in a :class:`StreamReport`.

Discovery can finish on one side first: a client's reader may see a writer of the session
before that writer has matched the reader, and then ``wait_for_all_acked`` has nobody to wait
for. So before a step is sent, and again before the acknowledgement wait, each stream waits
until its writers have matched every reader of their topics that the session knows.
"""

from collections.abc import Callable
from collections.abc import Iterable
import concurrent.futures
import time
from typing import Protocol

from rclpy.node import Node
from rclpy.publisher import Publisher

from acres_bridge.lockstep.barriers import BarrierTimeout
from acres_bridge.lockstep.barriers import BarrierTracker
from acres_bridge.lockstep.endpoints import MATCH_POLL_S
from acres_bridge.lockstep.endpoints import MatchMemo
from acres_bridge.lockstep.endpoints import ReaderSet
from acres_bridge.lockstep.endpoints import wait_for_matches
from acres_bridge.lockstep.reports import StreamReport
from acres_bridge.runtime.futures import Deadlines
from acres_bridge.runtime.futures import settle

Topics = dict[str, tuple[str, ...]]


class StepCoordinator(Protocol):
    """What a stream of this process needs of the lockstep that made it (coordinator.py)."""

    node: Node
    match_memo: MatchMemo
    deadlines: Deadlines

    def submit(self, job: Callable[[], None],
               result: concurrent.futures.Future) -> None: ...

    def wait_for_delivery(self, publishers: Callable[[], Iterable[Publisher]],
                          readers: ReaderSet, step: int
                          ) -> tuple[Topics, Topics, Topics]: ...


class DeliverySource(Protocol):
    """The sensor side of a step: answers "barrier N published and acknowledged"."""

    name: str
    # The stream's topics are below it (besides SESSION_GLOBAL_TOPICS).
    namespace: str

    def matched(self, readers: ReaderSet, timeout_s: float) -> concurrent.futures.Future:
        """
        Return a future of topic -> readers not matched, once the stream's writers match.

        It waits until each writer of the stream has matched every reader of ``readers`` on
        its topic and every compatible reader the stream's own graph knows, at most
        ``timeout_s``; what is still unmatched then is the result (empty: all matched).
        """

    def delivered(self, step: int, barrier_timeout_s: float,
                  readers: ReaderSet) -> concurrent.futures.Future:
        """
        Return a future of the :class:`StreamReport` of ``step``.

        It fails with :class:`BarrierTimeout` when the barrier does not come within
        ``barrier_timeout_s``; once the barrier is out, the stream waits for its writers to
        match ``readers`` (as :meth:`matched`) and for the acknowledgements, bounded by the
        source's own time-out, and ends in a report.
        """


class StreamDelivery:
    """
    One stream of this process as a :class:`DeliverySource`.

    :param name: the stream's name.
    :param namespace: the namespace its topics are in.
    :param barriers: the stream's barrier bookkeeping.
    :param publishers: returns the publishers of the step's messages (clock, INS, clouds,
        images, camera info, barrier, /tf), asked when they are waited for.
    :param lockstep: the session's lockstep (its ack pool, node and time-out).
    :param ready: whether the stream can carry a step (it has had its Hello); a step is sent
        only once it is, within the match time-out. None: always.
    """

    def __init__(self, name: str, namespace: str, barriers: BarrierTracker,
                 publishers: Callable[[], Iterable[Publisher]], lockstep: StepCoordinator,
                 ready: Callable[[], bool] | None = None) -> None:
        self.name = name
        self.namespace = namespace
        self._barriers = barriers
        self._publishers = publishers
        self._lockstep = lockstep
        self._ready = ready

    def matched(self, readers: ReaderSet, timeout_s: float) -> concurrent.futures.Future:
        """Return a future of the readers not matched in time (see DeliverySource)."""
        result: concurrent.futures.Future = concurrent.futures.Future()

        def match() -> None:
            deadline = time.monotonic() + timeout_s
            while self._ready is not None and not self._ready():
                if time.monotonic() >= deadline:
                    settle(result, {f'sensor stream {self.name}': ('no Hello yet',)})
                    return
                time.sleep(MATCH_POLL_S)
            settle(result, wait_for_matches(self._lockstep.node, self._publishers, readers,
                                            max(0.0, deadline - time.monotonic()),
                                            self._lockstep.match_memo))
        self._lockstep.submit(match, result)
        return result

    def delivered(self, step: int, barrier_timeout_s: float,
                  readers: ReaderSet) -> concurrent.futures.Future:
        """Return a future of the stream's :class:`StreamReport` (see DeliverySource)."""
        report: concurrent.futures.Future = concurrent.futures.Future()
        barrier = self._barriers.future(step)

        def acknowledge(published_at: float) -> None:
            started = time.monotonic()
            unmatched, late, lagging = self._lockstep.wait_for_delivery(
                self._publishers, readers, step)
            settle(report, StreamReport(self.name, step, time.monotonic() - started, late,
                                        unmatched, lagging, published_at))

        def published(future: concurrent.futures.Future) -> None:
            if not (future.cancelled() or report.done()):
                published_at = time.monotonic()
                self._lockstep.submit(lambda: acknowledge(published_at), report)

        def expired() -> BaseException | None:
            return None if barrier.done() else BarrierTimeout(self.name, step, barrier_timeout_s)

        barrier.add_done_callback(published)
        report.add_done_callback(lambda _: barrier.cancel())
        self._lockstep.deadlines.fail_after(report, barrier_timeout_s, expired)
        return report
