# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The Foxglove view's readers: batches taken by their own thread, and the time read from /clock.

The readers' node is made beside a plain node standing for the view, in a real graph; a
publisher node sends the messages, and what the readers forward must be its messages' CDR, in
order, with the simulation time of /clock. (Messages are compared deserialised: Fast CDR leaves
the padding bytes unset, so two serialisations of one message may differ there.)
"""

import struct
import threading

from builtin_interfaces.msg import Time
import pytest
import rclpy
from rclpy.duration import Duration
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rclpy.serialization import serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Imu
from support.waiting import wait_until

from acres_bridge.conversions.cdr import time_nanoseconds
from acres_bridge.foxglove.subscriptions import ViewSubscriptions

WAIT_S = 20.0
RELIABLE = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


def clock(sec: int, nanosec: int) -> Clock:
    return Clock(clock=Time(sec=sec, nanosec=nanosec))


def test_time_nanoseconds_reads_a_clock_or_a_header_in_either_byte_order():
    assert time_nanoseconds(serialize_message(clock(12, 345))) == 12_000_000_345
    imu = Imu()
    imu.header.stamp = Time(sec=-2, nanosec=5)
    assert time_nanoseconds(serialize_message(imu)) == -1_999_999_995
    big_endian = b'\x00\x00\x00\x00' + struct.pack('>iI', 3, 7)
    assert time_nanoseconds(big_endian) == 3_000_000_007


@pytest.mark.parametrize('data', [b'', b'\x00\x01\x00\x00\x01\x00\x00',
                                  b'\x00\x07\x00\x00' + bytes(8)])
def test_time_nanoseconds_refuses_short_bytes_and_other_encapsulations(data):
    with pytest.raises(ValueError, match='not a CDR message that starts with a time'):
        time_nanoseconds(data)


class Forwarded:
    """What the readers forward and the times they set, as the view's callbacks get them."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, bytes, int]] = []
        self.times: list[int] = []
        self.threads: set[str] = set()
        self.now_ns = 0
        self._changed = threading.Condition()

    def forward(self, topic: str, data: bytes, log_time_ns: int) -> None:
        with self._changed:
            self.messages.append((topic, data, log_time_ns))
            self.threads.add(threading.current_thread().name)

    def on_time(self, nanoseconds: int) -> None:
        self.times.append(nanoseconds)
        self.now_ns = nanoseconds

    def of(self, topic: str) -> list[bytes]:
        with self._changed:
            return [data for name, data, _ in self.messages if name == topic]


@pytest.fixture
def graph(ros_context):
    view = rclpy.create_node('readers_test_view', context=ros_context)
    publisher = rclpy.create_node('readers_test_publisher', context=ros_context)
    forwarded = Forwarded()
    readers = ViewSubscriptions(view, forwarded.forward, lambda: forwarded.now_ns,
                                forwarded.on_time)
    try:
        yield view, publisher, readers, forwarded
    finally:
        readers.destroy()
        publisher.destroy_node()
        view.destroy_node()


def matched(publisher) -> bool:
    return publisher.get_subscription_count() > 0


def test_the_thread_forwards_each_message_as_published_in_order(graph):
    view, publisher_node, readers, forwarded = graph
    publisher = publisher_node.create_publisher(Imu, '/readers_test/imu', RELIABLE)
    subscription = readers.subscribe('/readers_test/imu', Imu, RELIABLE)
    assert readers.subscribe('/readers_test/imu', Imu, RELIABLE) is subscription
    assert readers.node.get_name() == 'readers_test_view_readers'
    wait_until(lambda: matched(publisher), timeout_s=WAIT_S, what='the reader to match')
    sent = []
    for index in range(50):
        message = Imu()
        message.header.stamp = Time(sec=index, nanosec=index)
        message.header.frame_id = f'imu {index}'
        publisher.publish(message)
        sent.append(message)
    wait_until(lambda: len(forwarded.of('/readers_test/imu')) == 50, timeout_s=WAIT_S,
               what='the readers to forward the 50 messages')
    assert [deserialize_message(data, Imu) for data in forwarded.of('/readers_test/imu')] == sent
    assert forwarded.threads == {'foxglove-readers'}
    assert readers.drain() == 0
    assert readers.count('/readers_test/imu') == 1


def test_drain_forwards_what_arrived_before_it_returns(graph):
    view, publisher_node, readers, forwarded = graph
    publisher = publisher_node.create_publisher(Imu, '/readers_test/drained', RELIABLE)
    readers.subscribe('/readers_test/drained', Imu, RELIABLE)
    wait_until(lambda: matched(publisher), timeout_s=WAIT_S, what='the reader to match')
    publisher.publish(Imu())
    # Once Fast DDS has acknowledged the message it is in the reader: a drain forwards it, by
    # the readers' thread or by this call.
    assert publisher.wait_for_all_acked(Duration(seconds=WAIT_S))
    readers.drain()
    assert [deserialize_message(data, Imu)
            for data in forwarded.of('/readers_test/drained')] == [Imu()]


def test_an_unsubscribed_topic_is_no_longer_read(graph):
    view, publisher_node, readers, forwarded = graph
    publisher = publisher_node.create_publisher(Imu, '/readers_test/left', RELIABLE)
    readers.subscribe('/readers_test/left', Imu, RELIABLE)
    wait_until(lambda: matched(publisher), timeout_s=WAIT_S, what='the reader to match')
    readers.unsubscribe('/readers_test/left')
    wait_until(lambda: not matched(publisher), timeout_s=WAIT_S, what='the reader to go')
    assert readers.count('/readers_test/left') == 0
    publisher.publish(Imu())
    readers.drain()
    assert forwarded.of('/readers_test/left') == []


def test_the_time_follows_clock_from_its_own_reader_or_the_forwarded_one(graph):
    view, publisher_node, readers, forwarded = graph
    publisher = publisher_node.create_publisher(Clock, '/clock', RELIABLE)
    assert readers.count('/clock') == 0
    readers.follow_clock(True)
    assert readers.count('/clock') == 1       # the time's reader, best effort
    wait_until(lambda: matched(publisher), timeout_s=WAIT_S, what='the time reader to match')
    publisher.publish(clock(1, 500))
    wait_until(lambda: forwarded.times[-1:] == [1_000_000_500], timeout_s=WAIT_S,
               what='the time of the first /clock')
    assert forwarded.of('/clock') == []        # the time's reader forwards nothing

    readers.subscribe('/clock', Clock, RELIABLE)
    assert readers.count('/clock') == 1       # a client's reader, and the time from it
    wait_until(lambda: publisher.get_subscription_count() == 1, timeout_s=WAIT_S,
               what="the time's reader to go")
    publisher.publish(clock(2, 0))
    wait_until(lambda: forwarded.times[-1:] == [2_000_000_000], timeout_s=WAIT_S,
               what='the time of the forwarded /clock')
    assert [deserialize_message(data, Clock) for data in forwarded.of('/clock')] == [clock(2, 0)]
    assert forwarded.messages[-1][2] == 2_000_000_000    # its log time: the time it set

    readers.unsubscribe('/clock')
    assert readers.count('/clock') == 1       # the time's reader again
    readers.follow_clock(False)
    assert readers.count('/clock') == 0
    wait_until(lambda: not matched(publisher), timeout_s=WAIT_S, what='every reader to go')
    assert forwarded.times == [1_000_000_500, 2_000_000_000]
