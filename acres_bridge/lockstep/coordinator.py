# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Lockstep: a step answers once every message of it has reached every reliable reader.

A step is *delivered* when each sensor stream of the session has published the barrier of the
step (so every frame the simulator sent before it is published) and every reliable reader
matched at that moment has acknowledged every message of the stream's publishers
(``Publisher.wait_for_all_acked``). sim_control awaits :meth:`Lockstep.match_hook` before it
sends a step and :meth:`Lockstep.hook` before it answers ``step_simulation`` or
``simulate_steps``.

:class:`Lockstep` combines the streams of a step (lockstep/delivery.py: anything with ``name``
and ``delivered(step) -> Future[StreamReport]`` plugs in), bounds the wait, keeps the figures
and reports late readers in ``/diagnostics`` and the log (lockstep/reports.py).

The readers a step waits for are those the process that received the request knows when the
step is sent (sim_control's participant has seen the client that sent it), and those in each
stream's own graph (lockstep/endpoints.py). A reader not matched within ``match_timeout_s``
before the step (``ack_timeout_s`` after its barrier) is named like a late one.

Waiting for acknowledgements blocks, so it runs on a small pool of ``lockstep-ack`` threads,
never on an executor thread. A reader that does not acknowledge within ``ack_timeout_s`` does
not fail the step (the world did step): the answer succeeds and names the late topics and
their reliable readers. From then on the topic lags (lockstep/lagging.py): later steps do not
wait for it, and each answer names it, until every reader of it has acknowledged everything.
Best-effort readers are never waited for: DDS does not track their acknowledgements.
"""

from collections import deque
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
import concurrent.futures
import statistics
import threading
import time
import traceback
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.executors import Executor
from rclpy.node import Node
from rclpy.publisher import Publisher

from acres_bridge.lockstep.barriers import BarrierTimeout
from acres_bridge.lockstep.barriers import BarrierTracker
from acres_bridge.lockstep.delivery import DeliverySource
from acres_bridge.lockstep.delivery import StreamDelivery
from acres_bridge.lockstep.endpoints import known_readers
from acres_bridge.lockstep.endpoints import MatchMemo
from acres_bridge.lockstep.endpoints import ReaderSet
from acres_bridge.lockstep.endpoints import wait_for_acks
from acres_bridge.lockstep.endpoints import wait_for_matches
from acres_bridge.lockstep.lagging import LaggingTopics
from acres_bridge.lockstep.lagging import topic_of
from acres_bridge.lockstep.reports import lagging_text
from acres_bridge.lockstep.reports import lockstep_stats_to_status
from acres_bridge.lockstep.reports import MatchReport
from acres_bridge.lockstep.reports import StepReport
from acres_bridge.runtime.futures import Deadlines
from acres_bridge.runtime.futures import FutureWaiter
from acres_bridge.runtime.futures import settle

ACK_WORKERS = 8
MATCH_TIMEOUT_S = 5.0
FIGURES_KEPT = 200
LATE_LOG_INTERVAL_S = 5.0
# Where a step's time goes (see Lockstep._record_phases), as named in Lockstep.stats.
PHASES = ('to_sent', 'to_reply', 'to_published', 'to_acked')


class Lockstep:
    """
    The delivery of a session's steps: combine the streams, bound the wait, report.

    :param node: the node whose graph names late readers and whose log reports them.
    :param barrier_timeout_s: how long a step waits for the barriers of its streams; past it
        the step fails, naming the streams that lack it.
    :param ack_timeout_s: how long a stream waits for acknowledgements after its barrier; past
        it the step succeeds and reports the late topics and their readers.
    :param match_timeout_s: how long a step waits, before it is sent, for the streams' writers
        to match the readers the session knows; past it the step is sent and names them.
        Matching is discovery's one-off work for a new reader, which a loaded host can take
        seconds over, so it has its own bound: a short ``ack_timeout_s``, chosen to hear of
        a stalled reader soon, must not cost a new reader its first step.
    """

    def __init__(self, node: Node, *, barrier_timeout_s: float, ack_timeout_s: float,
                 match_timeout_s: float = MATCH_TIMEOUT_S, workers: int = ACK_WORKERS) -> None:
        self.node = node
        self.barrier_timeout_s = barrier_timeout_s
        self.ack_timeout_s = ack_timeout_s
        self.match_timeout_s = match_timeout_s
        self.deadlines = Deadlines()
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix='lockstep-ack')
        self._lock = threading.Lock()
        self._waits_s: deque[float] = deque(maxlen=FIGURES_KEPT)
        self._steps = 0
        self._late_steps = 0
        self._failed_steps = 0
        self._last: StepReport | None = None
        self._last_late: StepReport | None = None
        self._previous_late_steps = 0
        self._match_waits_s: deque[float] = deque(maxlen=FIGURES_KEPT)
        self._unmatched_steps = 0
        self._previous_unmatched_steps = 0
        self._last_unmatched: str | None = None
        self._lagging = LaggingTopics()
        self.match_memo = MatchMemo()
        # The readers the last step was sent for: its acknowledgement wait is for them.
        self._sent_readers: ReaderSet | None = None
        self._lagging_steps = 0
        # (request in, step sent) of the step in flight, and where each step's time went.
        self._request: tuple[float, float] | None = None
        self._phases: deque[tuple[float, float, float, float]] = deque(maxlen=FIGURES_KEPT)

    def submit(self, job: Callable[[], None], result: concurrent.futures.Future) -> None:
        """
        Run a blocking job on an ack thread; the job settles ``result``.

        Whatever the job raises fails ``result`` and is logged. Left to the pool, it would
        stay in the pool's own future, unseen, and ``result`` would never be settled: a step
        that never answers and says nothing. A pool that is shut down (the session is going)
        fails ``result`` at once. Once the context is shut down (Ctrl-C with a step in
        flight: "publisher's context is invalid") the failure is the stop's, not news: the
        step still fails, without a log line.
        """
        def run() -> None:
            try:
                job()
            except Exception as exc:  # noqa: B902 - every step answers, whatever went wrong
                if self.node.context.ok():
                    self.node.get_logger().error(
                        f'lockstep: {exc!r} in a delivery wait:\n{traceback.format_exc()}')
                settle(result, error=exc)
        try:
            self._pool.submit(run)
        except RuntimeError as exc:
            settle(result, error=exc)

    def wait_for_delivery(self, publishers: Callable[[], Iterable[Publisher]],
                          readers: ReaderSet, step: int
                          ) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]],
                                     dict[str, tuple[str, ...]]]:
        """
        Block until the publishers matched ``readers`` and are acknowledged (an ack thread).

        One deadline, ``ack_timeout_s``, for both waits. The publishers of lagging topics are
        not waited for (see lockstep/lagging.py): they are looked at after the others, with the
        grace's bound or the probe's, and a topic whose wait ran out lags from then on.

        :return: the readers not matched and the topics not acknowledged at the deadline, and
            the topics still lagging.
        """
        deadline = time.monotonic() + self.ack_timeout_s
        unmatched = wait_for_matches(self.node, publishers, readers, self.ack_timeout_s,
                                     self.match_memo)
        waited, behind = self._lagging.split(list(publishers()))
        late = wait_for_acks(self.node, waited, max(0.0, deadline - time.monotonic()))
        lagging = wait_for_acks(self.node, behind, self._lagging.probe_s(
            behind, max(0.0, deadline - time.monotonic()))) if behind else {}
        self._lagging.update(step, set(late), set(lagging),
                             {topic_of(publisher) for publisher in behind} - set(lagging))
        return unmatched, late, lagging

    def stream(self, name: str, namespace: str, barriers: BarrierTracker,
               publishers: Callable[[], Iterable[Publisher]],
               ready: Callable[[], bool] | None = None) -> StreamDelivery:
        """Return the :class:`StreamDelivery` of one stream of this process."""
        return StreamDelivery(name, namespace, barriers, publishers, self, ready)

    def session_readers(self, sources: Sequence[DeliverySource]) -> ReaderSet:
        """Return the readers this process's graph knows on the step topics of ``sources``."""
        return known_readers(self.node, [source.namespace for source in sources])

    def step_matched(self, sources: Sequence[DeliverySource]) -> concurrent.futures.Future:
        """
        Return a future of the :class:`MatchReport` of the sources before a step is sent.

        The readers known to this process's graph are asked on an ack thread (a graph query
        per topic), then every source waits for its writers to match them, at most
        ``match_timeout_s``. It never fails for a reader: one not matched is in the report.
        """
        combined: concurrent.futures.Future = concurrent.futures.Future()
        started = time.monotonic()

        def ask() -> None:
            readers = self.session_readers(sources)
            with self._lock:
                self._sent_readers = readers
            parts = [source.matched(readers, self.match_timeout_s) for source in sources]
            unmatched: dict[str, tuple[str, ...]] = {}
            for part in parts:
                try:
                    unmatched.update(part.result())
                except Exception as exc:  # noqa: B902 - a source that went: the step says so
                    settle(combined, error=exc)
                    return
            settle(combined, MatchReport(time.monotonic() - started, unmatched))

        combined.add_done_callback(self._record_match)
        if not sources:
            settle(combined, MatchReport(0.0))
            return combined
        self.submit(ask, combined)
        return combined

    def step_delivered(self, step: int,
                       sources: Sequence[DeliverySource]) -> concurrent.futures.Future:
        """
        Return a future of the :class:`StepReport` of ``step`` over ``sources``.

        The readers waited for are those :meth:`step_matched` found before the step was sent
        (asked again only without one). It fails with ``TimeoutError`` naming every stream
        whose barrier did not come within ``barrier_timeout_s``, or with the first other
        error of a source.
        """
        combined: concurrent.futures.Future = concurrent.futures.Future()
        lock = threading.Lock()
        outcomes: dict[str, concurrent.futures.Future] = {}
        order = [source.name for source in sources]

        def settled(name: str, future: concurrent.futures.Future) -> None:
            with lock:
                outcomes[name] = future
                if len(outcomes) < len(order):
                    return
            if any(outcome.cancelled() for outcome in outcomes.values()):
                return
            errors = [outcomes[name].exception() for name in order]
            late = [error.stream for error in errors if isinstance(error, BarrierTimeout)]
            if late:
                settle(combined, error=TimeoutError(
                    f'no barrier of step {step} within {self.barrier_timeout_s:g} s on the '
                    f'sensor stream of {", ".join(sorted(late))}'))
            elif any(error is not None for error in errors):
                settle(combined, error=next(error for error in errors if error is not None))
            else:
                settle(combined, StepReport(step, tuple(outcomes[name].result()
                                                        for name in order)))

        combined.add_done_callback(self._record)
        if not sources:
            settle(combined, StepReport(step, ()))
            return combined
        with self._lock:
            readers, self._sent_readers = self._sent_readers, None
        if readers is None:     # no step_matched before (a caller without a match hook)
            readers = self.session_readers(sources)
        parts = [source.delivered(step, self.barrier_timeout_s, readers) for source in sources]
        combined.add_done_callback(lambda _: [part.cancel() for part in parts])
        for name, part in zip(order, parts):
            part.add_done_callback(lambda future, name=name: settled(name, future))
        return combined

    def hook(self, executor: Executor,
             sources: Callable[[], Sequence[DeliverySource]]) -> Callable[[int], Awaitable]:
        """Return sim_control's ``barrier_hook``: await the delivery of a step's sources."""
        def barrier_hook(step: int) -> Awaitable:
            replied = time.monotonic()
            delivered = self.step_delivered(step, sources())
            delivered.add_done_callback(lambda future: self._record_phases(future, replied))
            return FutureWaiter(delivered, executor)
        return barrier_hook

    def match_hook(self, executor: Executor,
                   sources: Callable[[], Sequence[DeliverySource]]) -> Callable[[], Awaitable]:
        """
        Return sim_control's ``match_hook``: await the sources' matches before a step.

        ``sources`` may include streams that have not had their first Hello yet: a step sent
        before a stream is up would reach none of its readers.
        """
        def match_hook() -> Awaitable:
            requested = time.monotonic()
            matched = self.step_matched(sources())
            matched.add_done_callback(lambda _: self._sent(requested))
            return FutureWaiter(matched, executor)
        return match_hook

    def _sent(self, requested: float) -> None:
        with self._lock:
            self._request = (requested, time.monotonic())

    def _record_phases(self, future: concurrent.futures.Future, replied: float) -> None:
        """
        Note where a step's time went, from the request to the last acknowledgement.

        Four phases: request in -> step sent (the match wait), -> the simulator's reply (the
        barriers come with it), -> the last stream's barrier published, -> every reader
        acknowledged. The answer's way back to the client is the client's to measure.
        """
        acked = time.monotonic()
        with self._lock:
            request, self._request = self._request, None
        if request is None or future.cancelled() or future.exception() is not None:
            return
        report: StepReport = future.result()
        published = max([replied] + [stream.published_at for stream in report.streams])
        with self._lock:
            self._phases.append((request[1] - request[0], replied - request[1],
                                 published - replied, acked - published))

    def _record_match(self, future: concurrent.futures.Future) -> None:
        if future.cancelled() or future.exception() is not None:
            return
        report: MatchReport = future.result()
        with self._lock:
            self._match_waits_s.append(report.wait_s)
            if report.unmatched:
                self._unmatched_steps += 1
                self._last_unmatched = report.warning
        if report.unmatched:
            self.node.get_logger().warning(
                f'lockstep: a step was sent after {self.match_timeout_s:g} s without every '
                f'reader matched: {report.warning}', throttle_duration_sec=LATE_LOG_INTERVAL_S)

    def _record(self, future: concurrent.futures.Future) -> None:
        if future.cancelled() or future.exception() is not None:
            with self._lock:
                self._failed_steps += 1
            return
        report: StepReport = future.result()
        late = bool(report.late or report.unmatched)
        with self._lock:
            self._steps += 1
            self._waits_s.append(report.ack_wait_s)
            self._last = report
            if late:
                self._late_steps += 1
                self._last_late = report
            if report.lagging:
                self._lagging_steps += 1
        if late:
            self.node.get_logger().warning(
                f'lockstep: step {report.step} answered after {self.ack_timeout_s:g} s '
                f'without every acknowledgement: {report.warning}',
                throttle_duration_sec=LATE_LOG_INTERVAL_S)
        elif report.lagging:
            self.node.get_logger().warning(
                f'lockstep: step {report.step} {lagging_text(report.lagging)}',
                throttle_duration_sec=LATE_LOG_INTERVAL_S)

    @property
    def stats(self) -> dict[str, Any]:
        """The figures of the steps delivered so far (waits over the last 200 steps)."""
        with self._lock:
            waits = list(self._waits_s)
            last, last_late = self._last, self._last_late
            match_waits = list(self._match_waits_s)
            phases = list(self._phases)
            stats = {'steps': self._steps, 'late_steps': self._late_steps,
                     'failed_steps': self._failed_steps,
                     'unmatched_steps': self._unmatched_steps,
                     'last_unmatched': self._last_unmatched,
                     'lagging_steps': self._lagging_steps}
        stats.update({
            'last_step': last.step if last is not None else None,
            'ack_wait_last_ms': last.ack_wait_s * 1e3 if last is not None else None,
            'ack_wait_p50_ms': statistics.median(waits) * 1e3 if waits else None,
            'ack_wait_max_ms': max(waits) * 1e3 if waits else None,
            'match_wait_max_ms': max(match_waits) * 1e3 if match_waits else None,
            'ack_timeout_s': self.ack_timeout_s,
            'match_timeout_s': self.match_timeout_s,
            'last_late_step': last_late.step if last_late is not None else None,
            'last_late': last_late.warning if last_late is not None else None,
            'lagging': lagging_text(last.lagging) if last is not None else None,
        })
        for index, phase in enumerate(PHASES):
            values = sorted(times[index] for times in phases)
            stats[f'{phase}_p50_ms'] = values[len(values) // 2] * 1e3 if values else None
            stats[f'{phase}_p90_ms'] = values[len(values) * 9 // 10] * 1e3 if values else None
        return stats

    def diagnostic_statuses(self, sources: Sequence[DeliverySource] = ()
                            ) -> list[DiagnosticStatus]:
        """
        Return the lockstep status for ``/diagnostics`` (WARN while steps come out late).

        With the session's ``sources``, ``known_readers`` counts the readers (one per topic)
        that this process's graph knows on their step topics: those a step is sure to reach.
        """
        stats = self.stats
        if sources:
            stats['known_readers'] = sum(
                len(found) for found in self.session_readers(sources).values())
        late_now = stats['late_steps'] > self._previous_late_steps
        unmatched_now = stats['unmatched_steps'] > self._previous_unmatched_steps
        self._previous_late_steps = stats['late_steps']
        self._previous_unmatched_steps = stats['unmatched_steps']
        return [lockstep_stats_to_status(stats, name=f'{self.node.get_name()}: lockstep',
                                         late_now=late_now, unmatched_now=unmatched_now)]

    def destroy(self) -> None:
        """Stop the deadline thread and the ack threads (waits in progress run to their end)."""
        self.deadlines.stop()
        self._pool.shutdown(wait=False, cancel_futures=True)
