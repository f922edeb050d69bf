# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The lockstep wing alone (coordinator, barriers, delivery, reports): the executor adaptor and
its race, deadlines, combining streams.

The delivery itself (barriers and acknowledgements across processes) is test_lockstep_delivery.
"""

import concurrent.futures
import logging
import threading

import pytest
import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rclpy.topic_endpoint_info import TopicEndpointInfo
from std_msgs.msg import String
from support.waiting import wait_until

from acres_bridge.lockstep.barriers import BarrierTimeout
from acres_bridge.lockstep.barriers import BarrierTracker
from acres_bridge.lockstep.coordinator import Lockstep
from acres_bridge.lockstep.endpoints import known_readers
from acres_bridge.lockstep.endpoints import reader_label
from acres_bridge.lockstep.endpoints import UNKNOWN_NODE_NAME
from acres_bridge.lockstep.endpoints import wait_for_matches
from acres_bridge.lockstep.reports import MatchReport
from acres_bridge.lockstep.reports import StepReport
from acres_bridge.lockstep.reports import StreamReport
from acres_bridge.runtime import futures
from acres_bridge.runtime.futures import Deadlines
from acres_bridge.runtime.futures import FutureWaiter

pytestmark = pytest.mark.ros
WAIT_S = 10.0


class ObservedWaiter(FutureWaiter):
    """A FutureWaiter that tells when its wake-up task has run."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.woken = threading.Event()

    def _wake(self) -> None:
        super()._wake()
        self.woken.set()


class InsideTheRun:
    """
    Await an awaitable, and run ``inside`` after it parked but before its task's run ends.

    That is the window of the race: the coroutine has found the future pending and yielded,
    and the task that runs it is still executing.
    """

    def __init__(self, inner: FutureWaiter, inside) -> None:
        self._inner = inner
        self._inside = inside

    def __await__(self):
        steps = self._inner.__await__()
        try:
            value = next(steps)
            while True:
                if self._inside is not None:
                    inside, self._inside = self._inside, None
                    inside()
                yield value
                value = steps.send(None)
        except StopIteration as stop:
            return stop.value


@pytest.fixture
def spun(ros_context):
    """A two-thread executor with no nodes, spinning: only tasks wake it."""
    executor = MultiThreadedExecutor(num_threads=2, context=ros_context)
    thread = threading.Thread(target=executor.spin, name='test-spin', daemon=True)
    thread.start()
    try:
        yield executor
    finally:
        executor.shutdown(timeout_sec=5.0)
        thread.join(timeout=5.0)


def _result(task, timeout_s: float = WAIT_S):
    done = threading.Event()
    task.add_done_callback(lambda _: done.set())
    assert done.wait(timeout_s), 'the coroutine was never resumed'
    return task.result()


def test_a_completion_inside_the_awaiting_run_still_resumes_the_coroutine(spun):
    future = concurrent.futures.Future()
    waiter = ObservedWaiter(future, spun)

    def complete_inside_the_run() -> None:
        # The completion lands now, while the coroutine's task is executing; the executor's
        # pass that the wake-up triggers finds the task running and skips it.
        future.set_result(42)
        assert waiter.woken.wait(WAIT_S)
        assert waiter.rearms >= 1      # the wake-up found the coroutine not resumed yet

    async def coroutine():
        return await InsideTheRun(waiter, complete_inside_the_run)

    task = spun.create_task(coroutine)
    # Nothing else wakes this executor: without the re-armed wake-up this would hang.
    assert _result(task) == 42


def test_a_coroutine_held_up_long_after_the_completion_is_still_resumed(spun, monkeypatch):
    # A thread starved on a loaded host can hold the parked run for seconds: the wake-ups must
    # outlast it. They once stopped after a count, and the step's answer was never sent.
    monkeypatch.setattr(futures, 'REARMS_AT_FULL_SPEED', 20)
    future = concurrent.futures.Future()
    waiter = ObservedWaiter(future, spun)
    held_past = 200     # wake-ups that found the coroutine not resumed, ten times the full speed

    def hold_the_run_after_completing() -> None:
        future.set_result('late')
        wait_until(lambda: waiter.rearms > held_past, what=f'{held_past} wake-ups')

    async def coroutine():
        return await InsideTheRun(waiter, hold_the_run_after_completing)

    task = spun.create_task(coroutine)
    assert _result(task) == 'late'
    assert waiter.rearms > held_past


def test_the_adaptor_returns_results_and_exceptions_on_any_executor(ros_context):
    for executor in (SingleThreadedExecutor(context=ros_context),
                     MultiThreadedExecutor(num_threads=2, context=ros_context)):
        thread = threading.Thread(target=executor.spin, daemon=True)
        thread.start()
        try:
            ready = concurrent.futures.Future()
            ready.set_result('at once')
            late = concurrent.futures.Future()
            failing = concurrent.futures.Future()

            async def both():
                first = await FutureWaiter(ready, executor)
                second = await FutureWaiter(late, executor)
                try:
                    await FutureWaiter(failing, executor)
                except ValueError as exc:
                    return first, second, str(exc)

            task = executor.create_task(both)
            threading.Thread(target=late.set_result, args=('later',)).start()
            threading.Thread(target=failing.set_exception, args=(ValueError('no'),)).start()
            assert _result(task) == ('at once', 'later', 'no')
        finally:
            executor.shutdown(timeout_sec=5.0)
            thread.join(timeout=5.0)


def test_one_deadline_thread_fails_what_is_late_and_leaves_the_rest():
    deadlines = Deadlines(name='test-deadlines')
    try:
        spared, late, kept = (concurrent.futures.Future() for _ in range(3))
        deadlines.fail_after(spared, 0.05, lambda: None)        # its owner says: leave it
        deadlines.fail_after(late, 0.1, lambda: TimeoutError('late'))
        deadlines.fail_after(kept, 60.0, lambda: TimeoutError('never'))
        kept.set_result('done in time')
        with pytest.raises(TimeoutError, match='late'):
            late.result(timeout=WAIT_S)
        assert not spared.done()        # its deadline came before late's
        assert kept.result() == 'done in time'
        assert [t.name for t in threading.enumerate()].count('test-deadlines') == 1
    finally:
        deadlines.stop()
    assert 'test-deadlines' not in [t.name for t in threading.enumerate()]


def test_barriers_are_remembered_until_the_world_goes_back():
    barriers = BarrierTracker(history=3)
    waiting = barriers.future(12)
    cancelled = barriers.future(12)
    assert cancelled.cancel()
    barriers.published(12, 0.1)
    assert waiting.result(timeout=0) == 12 and cancelled.cancelled()
    assert barriers.future(12).done() and barriers.last == (12, 0.1)
    for step in (24, 36, 48):
        barriers.published(step, step / 120)
    assert not barriers.future(12).done()       # beyond the history
    barriers.published(6, 0.05)                 # a reset: the old steps are gone
    assert not barriers.future(48).done() and barriers.future(6).done()


class FakeSource:
    """A delivery source whose futures the test completes (as a remote sensor side would)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.namespace = f'/{name}'
        self.asked: list[tuple[int, concurrent.futures.Future]] = []
        self.matches: list[tuple[dict, concurrent.futures.Future]] = []

    def matched(self, readers: dict, timeout_s: float) -> concurrent.futures.Future:
        future = concurrent.futures.Future()
        self.matches.append((readers, future))
        return future

    def delivered(self, step: int, barrier_timeout_s: float,
                  readers: dict) -> concurrent.futures.Future:
        future = concurrent.futures.Future()
        self.asked.append((step, future))
        return future


def test_a_step_combines_its_streams_and_says_what_was_late(ros_context):
    node = rclpy.create_node('lockstep_combine', context=ros_context)
    lockstep = Lockstep(node, barrier_timeout_s=5.0, ack_timeout_s=1.0)
    try:
        polaris, maxxum = FakeSource('polaris'), FakeSource('maxxum')
        step = lockstep.step_delivered(12, [polaris, maxxum])
        [(asked, maxxum_future)] = maxxum.asked
        assert asked == 12
        maxxum_future.set_result(StreamReport('maxxum', 12, 0.002))
        assert not step.done()
        polaris.asked[0][1].set_result(StreamReport(
            'polaris', 12, 1.0, {'/polaris/lidar/points': ('/ns/viewer', '/recorder')}))
        report = step.result(timeout=WAIT_S)
        assert [stream.stream for stream in report.streams] == ['polaris', 'maxxum']
        assert report.ack_wait_s == 1.0
        assert report.warning == ('not acknowledged in time: /polaris/lidar/points (reliable '
                                  'readers: /ns/viewer, /recorder)')
        assert StepReport(24, ()).warning is None

        failing = lockstep.step_delivered(24, [polaris, maxxum])
        polaris.asked[1][1].set_exception(BarrierTimeout('polaris', 24, 5.0))
        maxxum.asked[1][1].set_exception(BarrierTimeout('maxxum', 24, 5.0))
        with pytest.raises(TimeoutError, match='no barrier of step 24 within 5 s on the sensor '
                                               'stream of maxxum, polaris'):
            failing.result(timeout=WAIT_S)
        stats = lockstep.stats
        assert (stats['steps'], stats['late_steps'], stats['failed_steps']) == (1, 1, 1)
        assert stats['ack_wait_max_ms'] == 1000.0
        [status] = lockstep.diagnostic_statuses()
        assert status.level == status.WARN and '/recorder' in status.message
        [status] = lockstep.diagnostic_statuses()
        assert status.level == status.OK        # no new late step since the last report
    finally:
        lockstep.destroy()
        node.destroy_node()


def test_a_reader_is_named_by_its_node_or_else_by_its_gid():
    named = TopicEndpointInfo(node_name='stalled_reader', node_namespace='/',
                              endpoint_gid=[1, 15, 171])
    nested = TopicEndpointInfo(node_name='reader', node_namespace='/polaris/',
                               endpoint_gid=[2])
    unnamed = TopicEndpointInfo(node_name=UNKNOWN_NODE_NAME,
                                node_namespace='_NODE_NAMESPACE_UNKNOWN_',
                                endpoint_gid=[1, 15, 171])
    assert reader_label(named) == '/stalled_reader'
    assert reader_label(nested) == '/polaris/reader'
    assert reader_label(unnamed) == 'unnamed reader 01.0f.ab'


def test_a_step_is_sent_once_every_stream_matched_and_names_who_was_not(ros_context):
    node = rclpy.create_node('lockstep_match', context=ros_context)
    lockstep = Lockstep(node, barrier_timeout_s=5.0, ack_timeout_s=1.0)
    try:
        polaris, maxxum = FakeSource('polaris'), FakeSource('maxxum')
        ready = lockstep.step_matched([polaris, maxxum])
        wait_until(lambda: polaris.matches and maxxum.matches, what='both streams asked')
        maxxum.matches[0][1].set_result({})
        assert not ready.done()
        polaris.matches[0][1].set_result({'/polaris/ins/imu': ('/client',)})
        report = ready.result(timeout=WAIT_S)
        assert report.unmatched == {'/polaris/ins/imu': ('/client',)}
        assert report.warning == ('before the step, readers not matched in time: '
                                  '/polaris/ins/imu (/client)')
        assert MatchReport(0.0).warning is None
        stats = lockstep.stats
        assert stats['unmatched_steps'] == 1 and '/client' in stats['last_unmatched']
        [status] = lockstep.diagnostic_statuses()
        assert status.level == status.WARN and '/client' in status.message
    finally:
        lockstep.destroy()
        node.destroy_node()


def test_a_delivery_wait_that_raises_fails_the_step_instead_of_leaving_it_unanswered(
        ros_context):
    node = rclpy.create_node('lockstep_raising', context=ros_context)
    lockstep = Lockstep(node, barrier_timeout_s=5.0, ack_timeout_s=1.0)

    def publishers():
        raise RuntimeError('the graph query failed')
    try:
        barriers = BarrierTracker()
        stream = lockstep.stream('polaris', '/polaris', barriers, publishers)
        with pytest.raises(RuntimeError, match='the graph query failed'):
            lockstep.step_matched([stream]).result(timeout=WAIT_S)
        step = lockstep.step_delivered(7, [stream])
        barriers.published(7, 0.7)
        with pytest.raises(RuntimeError, match='the graph query failed'):
            step.result(timeout=WAIT_S)
        assert lockstep.stats['failed_steps'] == 1
    finally:
        lockstep.destroy()
        node.destroy_node()


@pytest.fixture
def two_participants():
    """A writer's process and a client's process: two contexts, two DDS participants."""
    contexts = [rclpy.Context() for _ in range(2)]
    for context in contexts:
        rclpy.init(context=context)
    nodes = [rclpy.create_node(name, context=context)
             for name, context in zip(('bridge_side', 'client_side'), contexts)]
    yield nodes
    for node, context in zip(nodes, contexts):
        node.destroy_node()
        rclpy.try_shutdown(context=context)


def test_a_writer_waits_for_the_readers_the_session_knows(two_participants):
    bridge, client = two_participants
    reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    publisher = bridge.create_publisher(String, '/polaris/status', reliable)
    # A reader that can never match the volatile writer is not waited for.
    client.create_subscription(String, '/polaris/status', lambda _: None, QoSProfile(
        depth=1, reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL))
    client.create_subscription(String, '/polaris/status', lambda _: None, reliable)
    # What the client's own graph knows: the session may know readers before the writer.
    wait_until(lambda: len(client.get_subscriptions_info_by_topic('/polaris/status')) == 2,
               what='both readers in the client\'s graph')
    readers = known_readers(client, ['/polaris'])
    assert set(readers) == {'/polaris/status'} and len(readers['/polaris/status']) == 2
    assert wait_for_matches(bridge, lambda: [publisher], readers, WAIT_S) == {}
    assert publisher.get_subscription_count() == 1


def test_a_reader_that_the_writer_never_matches_is_named_at_the_deadline(two_participants):
    bridge, _ = two_participants
    publisher = bridge.create_publisher(String, '/polaris/status', 10)
    ghost = {'/polaris/status': {bytes(range(16)): '/ghost_reader'}}
    assert wait_for_matches(bridge, lambda: [publisher], ghost, 0.05) == {
        '/polaris/status': ('/ghost_reader',)}


def test_a_completion_after_the_executor_shut_down_wakes_nothing_and_raises_nothing(
        ros_context, caplog):
    """
    Ctrl-C in a step: the main thread shuts the executor down, then destroying the nodes fails
    the step's futures. Jazzy's ``create_task`` raises once ``shutdown()`` has destroyed its
    guard condition, which concurrent.futures logged with a traceback from the done-callback.
    """
    executor = SingleThreadedExecutor(context=ros_context)
    future = concurrent.futures.Future()
    waiter = ObservedWaiter(future, executor)

    async def step():
        return await waiter

    task = executor.create_task(step)
    executor.spin_once(timeout_sec=1.0)     # runs the coroutine here: it parks on the future
    assert not task.done()
    executor.shutdown(timeout_sec=5.0)
    with caplog.at_level(logging.DEBUG, logger='concurrent.futures'):
        future.set_exception(RuntimeError('the sensor process of maxxum has ended'))
    assert not caplog.records, caplog.text
    assert not waiter.woken.is_set()
