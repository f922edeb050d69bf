# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0


"""
The sensor-tx thread publishes clouds and images in order, without a copy, and never dies.

Real publishers and a subscriber on one context: what arrives is what was queued, in order;
:meth:`Outbox.drain` returns once the subscriber could have it; a publication that fails (a
destroyed publisher) is counted, reported and its buffer given back, and the next one goes out.
"""

import threading

import pytest
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.serialization import serialize_message
from std_msgs.msg import String
from support.waiting import wait_until

from acres_bridge.sensors import rcl_publish
from acres_bridge.sensors.message_pool import PooledMessage
from acres_bridge.sensors.outbox import Outbox


@pytest.fixture
def loopback(ros_context, spinning):
    """Give a node, its publisher of outbox/text, and wait_for(count) of its own subscriber."""
    node = spinning.add(Node('outbox_test', context=ros_context))
    received: list[str] = []
    arrived = threading.Condition()

    def on_message(message: String) -> None:
        with arrived:
            received.append(message.data)
            arrived.notify_all()
    node.create_subscription(String, 'outbox/text', on_message, QoSProfile(depth=100))
    publisher = node.create_publisher(String, 'outbox/text', QoSProfile(depth=100))
    wait_until(lambda: publisher.get_subscription_count() == 1, what='the subscriber')

    def wait_for(count: int) -> list[str]:
        with arrived:
            assert arrived.wait_for(lambda: len(received) >= count, 10.0), received
            return list(received)
    yield node, publisher, wait_for
    node.destroy_node()


def _message(text: str, released: list[str]) -> PooledMessage:
    data = bytearray(serialize_message(String(data=text)))
    return PooledMessage(memoryview(data), lambda: released.append(text))


def test_the_fast_path_is_in_use_in_this_prefix():
    assert rcl_publish.RCL_AVAILABLE


def test_a_serialised_message_goes_out_as_it_is_from_any_buffer(loopback):
    _, publisher, wait_for = loopback
    rcl_publish.publish_serialised(publisher, bytearray(serialize_message(String(data='one'))))
    rcl_publish.publish_serialised(publisher, serialize_message(String(data='two')))
    rcl_publish.publish_serialised(publisher, memoryview(serialize_message(String(data='3'))))
    assert wait_for(3) == ['one', 'two', '3']


def test_messages_go_out_in_order_and_their_buffers_come_back(loopback):
    _, publisher, wait_for = loopback
    outbox = Outbox('test', on_error=lambda kind, exc: pytest.fail(f'{kind}: {exc}'))
    outbox.start()
    released: list[str] = []
    texts = [f'message {index}' for index in range(50)]
    try:
        for text in texts:
            assert outbox.put('camera', publisher, _message(text, released), 10.0)
        assert outbox.drain(10.0)
        assert outbox.waiting == 0
        assert released == texts
        assert wait_for(50) == texts
    finally:
        outbox.stop()
    assert outbox.failed == {}


def test_a_failed_publication_is_counted_and_the_next_goes_out(ros_context, loopback):
    node, publisher, wait_for = loopback
    doomed = node.create_publisher(String, 'outbox/doomed', 10)
    node.destroy_publisher(doomed)
    errors: list[tuple[str, str]] = []
    outbox = Outbox('test', on_error=lambda kind, exc: errors.append((kind, type(exc).__name__)))
    outbox.start()
    released: list[str] = []
    try:
        assert outbox.put('lidar', doomed, _message('lost', released), 10.0)
        assert outbox.put('lidar', publisher, _message('kept', released), 10.0)
        assert outbox.drain(10.0)
    finally:
        outbox.stop()
    assert outbox.failed == {'lidar': 1}
    assert errors == [('lidar', 'InvalidHandle')]
    assert released == ['lost', 'kept']
    assert wait_for(1) == ['kept']


def test_a_full_outbox_refuses_after_its_wait_and_gives_the_buffer_back(loopback):
    _, publisher, _ = loopback
    outbox = Outbox('test', on_error=lambda kind, exc: None, capacity=2)
    released: list[str] = []
    # Not started: nothing leaves the queue.
    assert outbox.put('camera', publisher, _message('a', released), 0.0)
    assert outbox.put('camera', publisher, _message('b', released), 0.0)
    assert not outbox.put('camera', publisher, _message('c', released), 0.0)
    assert released == ['c']
    assert not outbox.drain(0.0)
    outbox.stop(0.0)
    assert sorted(released) == ['a', 'b', 'c']
    assert not outbox.put('camera', publisher, _message('d', released), 0.0)
    assert released[-1] == 'd'
