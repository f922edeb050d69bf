# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The Foxglove view's ROS readers, taken in batches by a thread of their own.

An executor wakes once per message and builds each message's Python objects: for a view of
every topic of a Polaris at 1x, some 530 wakes a second, and rclpy's time source alone (a
``rosgraph_msgs/Clock`` object per /clock message, 120 a second) took a fifth of the view's
CPU. Here the serialised subscriptions belong to a node that no executor spins
(``<view>_readers``), and one thread takes whatever every reader holds each ``period_s``, as
:func:`rclpy.wait_for_message` takes from the subscription it waits on. A message waits at most
a period in its reader's history, where Fast DDS has already acknowledged it: a lockstep step
never waits for this thread. The same pass reads the simulation time from a /clock reader of
its own (best effort, depth 1, as rclpy's time source has it) when the view follows
``use_sim_time``, or from the client's /clock when one is subscribed. A pass forwards in the
order of arrival, and a busy one (``BUSY_PASS``) is followed sooner and lets the SDK's sending
thread run after each message. :meth:`ViewSubscriptions.drain` takes everything at once, for a
caller that must forward what has arrived before it goes on (a service's answer after the
step's messages).
"""

from collections.abc import Callable
import ctypes
import dataclasses
import operator
import threading
import time
from typing import Any

from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rclpy.subscription import Subscription
from rosgraph_msgs.msg import Clock

from acres_bridge.conversions.cdr import time_nanoseconds
from acres_bridge.protocol.threads import name_native_thread

try:
    from rclpy.event_handler import SubscriptionEventCallbacks
except ImportError:  # Humble
    from rclpy.qos_event import SubscriptionEventCallbacks

# How long a message may wait for the view's thread: below a viewer's frame (16 ms at 60 Hz),
# and few enough wakes a second that their CPU is small against the messages'
# (docs/benchmarks.md, "The Foxglove view's cost", has a wake's cost).
TAKE_PERIOD_S = 0.01
# A pass that takes more than BUSY_PASS messages (at 1x a pass takes about 5, at 10x some 55
# in 10 ms) is followed after BUSY_PERIOD_S, and yields the CPU after each message it hands to
# the SDK: its sending thread then writes each at once, as it did when an executor woke per
# message. Without the yield a protocol client got markedly less at 10x on two cores (the SDK
# drops what a client's queue cannot hold; docs/benchmarks.md, "The Foxglove view's cost").
BUSY_PASS = 8
BUSY_PERIOD_S = 0.001
CLOCK_TOPIC = '/clock'

# forward(topic, cdr, log_time_ns) and on_time(nanoseconds), both called on the taking thread.
Forward = Callable[[str, bytes, int], None]
OnTime = Callable[[int], None]


@dataclasses.dataclass(frozen=True)
class _TopicSubscription:
    """A subscription, with what a take needs looked up once."""

    subscription: Subscription
    handle: Any
    message_type: type

    @classmethod
    def of(cls, subscription: Subscription) -> '_TopicSubscription':
        return cls(subscription, subscription.handle, subscription.msg_type)

    def take(self) -> tuple[bytes, dict] | None:
        """Return the next message's CDR and its info (rclpy's MessageInfo), or None."""
        return self.handle.take_message(self.message_type, True)


# sched_yield(2) that keeps the GIL (a PyDLL call does): the SDK's thread needs the CPU, not
# the GIL. os.sched_yield lets the GIL go, and where other Python threads are busy (the view in
# one process with the session, as test_foxglove_view has it, on a loaded machine) each message
# then waited for the GIL again: the view fell behind and its readers' histories overflowed.
_yield_cpu = ctypes.PyDLL(None).sched_yield


# A batch's items are (received timestamp, topic, CDR): the order of arrival is the first.
_received = operator.itemgetter(0)


def _never_called(_: Any) -> None:
    """Do nothing: the callback of a reader that no executor spins."""


class ViewSubscriptions:
    """
    Serialised subscriptions of a node of their own, taken every ``period_s`` by one thread.

    :param view: the view node; the readers' node is named after it (``_readers``), in its
        namespace and context.
    :param forward: called for each message taken, with the log time of its pass.
    :param now_ns: the view's time, read once per pass that takes something.
    :param on_time: called with the nanoseconds of the last /clock of a pass, while the clock
        is followed (:meth:`follow_clock`).
    """

    def __init__(self, view: Node, forward: Forward, now_ns: Callable[[], int],
                 on_time: OnTime, period_s: float = TAKE_PERIOD_S) -> None:
        self.node = Node(f'{view.get_name()}_readers', namespace=view.get_namespace(),
                         context=view.context, use_global_arguments=False,
                         start_parameter_services=False, enable_rosout=False)
        self._forward = forward
        self._now_ns = now_ns
        self._on_time = on_time
        self._period_s = period_s
        # Held while taking and while readers are made or destroyed: a take never meets a
        # subscription being destroyed.
        self._lock = threading.Lock()
        self._readers: dict[str, _TopicSubscription] = {}
        self._following_clock = False
        # The reader of /clock for the time alone, while no client's /clock reader is there.
        self._clock: _TopicSubscription | None = None
        self._last_time_ns: int | None = None
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name='foxglove-readers', daemon=True)
        self._thread.start()

    def _subscription(self, topic: str, message_type: type, qos: QoSProfile) -> Subscription:
        return self.node.create_subscription(
            message_type, topic, _never_called, qos, raw=True,
            # No QoS event handlers: nothing would take their events.
            event_callbacks=SubscriptionEventCallbacks(use_default_callbacks=False))

    def subscribe(self, topic: str, message_type: type, qos: QoSProfile) -> Subscription:
        """Make the topic's serialised reader, if it has none, and return it."""
        with self._lock:
            reader = self._readers.get(topic)
            if reader is None:
                reader = self._readers[topic] = _TopicSubscription.of(
                    self._subscription(topic, message_type, qos))
                self._keep_time_reader()
            return reader.subscription

    def unsubscribe(self, topic: str) -> None:
        """Destroy the topic's reader, if it has one; what it held is not forwarded."""
        with self._lock:
            reader = self._readers.pop(topic, None)
            if reader is not None:
                self.node.destroy_subscription(reader.subscription)
                self._keep_time_reader()

    def subscription(self, topic: str) -> Subscription | None:
        """Return the topic's serialised reader, None if it has none."""
        with self._lock:
            reader = self._readers.get(topic)
            return None if reader is None else reader.subscription

    def count(self, topic: str) -> int:
        """Return how many readers of a topic are these (the time's among them)."""
        with self._lock:
            return (topic in self._readers) + (topic == CLOCK_TOPIC and self._clock is not None)

    def follow_clock(self, follow: bool) -> None:
        """Read the simulation time from /clock (or stop)."""
        with self._lock:
            self._following_clock = follow
            if not follow:
                self._last_time_ns = None
            self._keep_time_reader()

    def _keep_time_reader(self) -> None:
        """Have a reader of /clock for the time only while following it and no client's is."""
        wanted = self._following_clock and CLOCK_TOPIC not in self._readers
        if wanted and self._clock is None:
            qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
            self._clock = _TopicSubscription.of(self._subscription(CLOCK_TOPIC, Clock, qos))
        elif not wanted and self._clock is not None:
            self.node.destroy_subscription(self._clock.subscription)
            self._clock = None

    def drain(self) -> int:
        """Take and forward everything the readers hold now; return how many messages."""
        with self._lock:
            batch = [(info['received_timestamp'], topic, data)
                     for topic, reader in self._readers.items()
                     for data, info in iter(reader.take, None)]
            if self._following_clock:
                self._take_time(batch)
            if batch:
                # In the order they arrived, as an executor would have forwarded them: a client
                # whose queue overflows loses the oldest of every topic alike.
                batch.sort(key=_received)
                log_time_ns = self._now_ns()
                busy = len(batch) > BUSY_PASS
                for _, topic, data in batch:
                    self._forward(topic, data, log_time_ns)
                    if busy:
                        _yield_cpu()
            return len(batch)

    def _take_time(self, batch: list[tuple[int, str, bytes]]) -> None:
        """Set the time to the last /clock: the time reader's, or the batch's."""
        last = None
        if self._clock is not None:
            for last, _ in iter(self._clock.take, None):
                pass
        else:
            last = next((data for _, topic, data in reversed(batch) if topic == CLOCK_TOPIC),
                        None)
        if last is None:
            return
        try:
            nanoseconds = time_nanoseconds(last)
        except ValueError:
            return      # not a Clock in plain CDR: the time stays
        if nanoseconds != self._last_time_ns:
            self._last_time_ns = nanoseconds
            self._on_time(nanoseconds)

    def _run(self) -> None:
        name_native_thread('foxglove-rx')     # top -H and perf show it apart
        period_s = self._period_s
        while not self._stopping:
            time.sleep(period_s)
            period_s = BUSY_PERIOD_S if self.drain() > BUSY_PASS else self._period_s

    def destroy(self) -> None:
        """Stop the thread, then destroy the readers and their node."""
        self._stopping = True
        self._thread.join()
        self.follow_clock(False)
        with self._lock:
            for reader in self._readers.values():
                self.node.destroy_subscription(reader.subscription)
            self._readers.clear()
        self.node.destroy_node()
