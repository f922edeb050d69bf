# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The compressed images' encoder: nothing without a subscriber, the newest kept, never a stall.

A real publisher and subscriber on one context; the encoder thread is started only when the
test has handed over what it wants queued, so which image is dropped is decided, not raced.
"""

import dataclasses
import io
import threading

import numpy as np
from PIL import Image as PillowImage
import pytest
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import CompressedImage
from support.sensor_frames import camera_frame
from support.waiting import wait_until

from acres_bridge.sensors.image_encoder import ImageEncoder


@pytest.fixture
def graph(ros_context, spinning):
    """Give a node's CompressedImage publisher, and a function that subscribes and collects."""
    node = spinning.add(Node('encoder_test', context=ros_context))
    publisher = node.create_publisher(CompressedImage, 'image/compressed', QoSProfile(depth=10))
    received: list[CompressedImage] = []
    arrived = threading.Condition()

    def on_message(message: CompressedImage) -> None:
        with arrived:
            received.append(message)
            arrived.notify_all()

    def subscribe():
        node.create_subscription(CompressedImage, 'image/compressed', on_message,
                                 QoSProfile(depth=10))
        wait_until(lambda: publisher.get_subscription_count() == 1, what='the subscriber')

        def wait_for(count: int) -> list[CompressedImage]:
            with arrived:
                assert arrived.wait_for(lambda: len(received) >= count, 10.0), received
                return list(received)
        return wait_for
    yield publisher, subscribe
    node.destroy_node()


def _frame(value: int, stamp_s: float):
    return camera_frame(np.full((8, 16, 3), value, dtype=np.uint8), stamp_s=stamp_s)


def test_wanted_only_with_a_subscriber(graph):
    publisher, subscribe = graph
    encoder = ImageEncoder('test', publisher, image_format='jpeg', jpeg_quality=95,
                           png_level=3, on_error=lambda exc: pytest.fail(str(exc)))
    assert not encoder.wanted()
    subscribe()
    assert encoder.wanted()


def test_a_full_hand_off_drops_the_oldest_and_the_newest_go_out_in_order(graph):
    publisher, subscribe = graph
    wait_for = subscribe()
    encoder = ImageEncoder('test', publisher, image_format='png', jpeg_quality=95,
                           png_level=1, on_error=lambda exc: pytest.fail(str(exc)), capacity=2)
    try:
        for index in range(3):          # not started: three images for a hand-off of two
            encoder.put(_frame(10 * index, 1.0 + index), 'camera_optical_frame')
        assert (encoder.dropped, encoder.waiting, encoder.encoded) == (1, 2, 0)
        encoder.start()
        assert encoder.drain(10.0)
        got = wait_for(2)
        assert [message.header.stamp.sec for message in got] == [2, 3]
        assert {message.header.frame_id for message in got} == {'camera_optical_frame'}
        assert {message.format for message in got} == {'bgr8; png compressed bgr8'}
        assert encoder.stats == {'format': 'png', 'encoded': 2, 'dropped': 1, 'failed': 0,
                                 'last_encode_ms': encoder.last_encode_ms}
    finally:
        encoder.stop(5.0)


def test_the_pixels_are_copied_at_the_hand_off(graph):
    publisher, subscribe = graph
    wait_for = subscribe()
    encoder = ImageEncoder('test', publisher, image_format='png', jpeg_quality=95,
                           png_level=1, on_error=lambda exc: pytest.fail(str(exc)))
    payload = bytearray(np.full((8, 16, 3), 7, dtype=np.uint8).tobytes())
    frame = dataclasses.replace(_frame(7, 1.0), pixels=memoryview(payload))
    try:
        encoder.put(frame, 'camera_optical_frame')
        payload[:] = bytes(len(payload))    # the reader reuses its buffer at once
        encoder.start()
        [message] = wait_for(1)
        decoded = np.asarray(PillowImage.open(io.BytesIO(bytes(message.data))))
        assert (decoded == 7).all()
        assert encoder.encoded == 1
    finally:
        encoder.stop(5.0)
