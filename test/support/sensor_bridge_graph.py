# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Helpers for the sensor bridge's integration tests: a recording subscriber node, Hello counts.

The node under test runs in the test's own rclpy Context (``ros_context``) on the ``spinning``
executor; the recorder keeps every message a client would see, and the frames the bridge was
sent come from a wire tap in front of the stream (support/wire_tap.py). Waits are on
conditions with time-outs; nothing sleeps to synchronise.
"""

from collections import defaultdict
import threading
from typing import Any, Callable

from acres_interfaces.msg import StepBarrier
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo
from sensor_msgs.msg import CompressedImage
from sensor_msgs.msg import Image
from sensor_msgs.msg import Imu
from sensor_msgs.msg import NavSatFix
from sensor_msgs.msg import PointCloud2
from support.waiting import wait_until
from tf2_msgs.msg import TFMessage


TIMEOUT_S = 15.0

# The topics of one agent, relative to its namespace.
AGENT_TOPICS: dict[str, type] = {
    'lidar/points': PointCloud2, 'camera/image_raw': Image, 'camera/camera_info': CameraInfo,
    'camera/image_raw/compressed': CompressedImage,
    'ins/fix': NavSatFix, 'ins/imu': Imu, 'ins/odometry': Odometry,
    'ground_truth/odometry': Odometry, 'step_barrier': StepBarrier,
}
GLOBAL_TOPICS: dict[str, type] = {
    '/clock': Clock, '/tf': TFMessage, '/tf_static': TFMessage, '/diagnostics': DiagnosticArray,
}


def published_hellos(bridge: Any) -> int:
    """Return how many Hellos a sensor bridge has published: one per connection that began."""
    return bridge.stats['by_type']['hello']['published']


def wait_hellos(bridge: Any, count: int, timeout_s: float = TIMEOUT_S) -> None:
    """Wait until a sensor bridge has published ``count`` Hellos, as its stats say."""
    wait_until(lambda: published_hellos(bridge) == count, timeout_s,
               f'Hello number {count} to be published')


def reliable(depth: int) -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


LATCHED = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                     reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)


class Recorder:
    """
    A node that subscribes to topics and keeps every message, for assertions.

    :param topics: topic name -> message type; ``/tf_static`` is subscribed transient local.
    """

    def __init__(self, context: Any, topics: dict[str, type], *, name: str = 'recorder'
                 ) -> None:
        self.node = Node(name, context=context)
        self.messages: dict[str, list[Any]] = defaultdict(list)
        self._condition = threading.Condition()
        for topic, message_type in topics.items():
            qos = LATCHED if topic == '/tf_static' else reliable(2000)
            self.node.create_subscription(message_type, topic, self._callback(topic), qos)

    def _callback(self, topic: str) -> Callable[[Any], None]:
        def record(message: Any) -> None:
            with self._condition:
                self.messages[topic].append(message)
                self._condition.notify_all()
        return record

    def count(self, topic: str) -> int:
        with self._condition:
            return len(self.messages[topic])

    def last(self, topic: str) -> Any:
        with self._condition:
            return self.messages[topic][-1]

    def wait_counts(self, counts: dict[str, int], timeout_s: float = TIMEOUT_S) -> None:
        """Wait until each topic has at least its count of messages."""
        def ready() -> bool:
            return all(len(self.messages[topic]) >= count for topic, count in counts.items())
        with self._condition:
            if not self._condition.wait_for(ready, timeout_s):
                have = {topic: len(self.messages[topic]) for topic in counts}
                raise AssertionError(f'timed out waiting for {counts}, have {have}')

    def wait_for(self, topic: str, predicate: Callable[[Any], bool],
                 timeout_s: float = TIMEOUT_S) -> Any:
        """Wait for a message on ``topic`` that satisfies ``predicate``; return it."""
        found: list[Any] = []

        def match() -> bool:
            for message in self.messages[topic]:
                if predicate(message):
                    found.append(message)
                    return True
            return False
        with self._condition:
            if not self._condition.wait_for(match, timeout_s):
                raise AssertionError(f'timed out waiting for a matching message on {topic}')
        return found[0]

    def clear(self) -> None:
        with self._condition:
            self.messages.clear()


def streaming(bridge: Any) -> bool:
    """
    Whether a sensor bridge holds the Hello of its current connection.

    Connected alone is not enough before a lockstep step: the TCP connection completes in the
    listen queue, and the emulator queues frames only once it has accepted the client, which
    it does before it sends the Hello.
    """
    return bridge.connected and bridge.hello is not None


def wait_matched(publishers: Any, timeout_s: float = TIMEOUT_S) -> None:
    """Wait until every publisher has matched at least one subscription."""
    publishers = list(publishers)
    wait_until(lambda: all(p.get_subscription_count() > 0 for p in publishers), timeout_s,
               'the recorder to match the publishers')


__all__ = ['AGENT_TOPICS', 'GLOBAL_TOPICS', 'LATCHED', 'published_hellos', 'Recorder',
           'reliable', 'streaming', 'TIMEOUT_S', 'wait_hellos', 'wait_matched', 'wait_until']
