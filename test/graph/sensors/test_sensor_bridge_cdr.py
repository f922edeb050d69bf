# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Clouds and images received into the messages' own buffers, over a real socket and graph.

A scripted stream sends good frames, frames of the Hello's exact size that break the layout
(received into a message buffer, then refused), a short frame and a truncated one; a
subscriber in the graph must get exactly the messages of the good frames, in order, and the
bad ones are counted, never published. After the first frame of the layout the payloads go
straight into the pooled messages (checked with a spy on ``MessagePool.payload_target``).
"""

import contextlib
import queue
import socket
import threading
import time

import numpy as np
import pytest
from rclpy.parameter import Parameter
from support.sensor_bridge_graph import AGENT_TOPICS
from support.sensor_bridge_graph import Recorder
from support.sensor_bridge_graph import TIMEOUT_S
from support.sensor_bridge_graph import wait_matched
from support.sensor_frames import camera_frame
from support.sensor_frames import lidar_frame
from support.sensor_frames import lidar_points
from support.sensor_frames import polaris_hello_dict

from acres_bridge.conversions.camera import camera_frame_to_image
from acres_bridge.conversions.camera import camera_info_from_hello
from acres_bridge.conversions.clock import make_header
from acres_bridge.conversions.lidar import lidar_frame_to_cloud
from acres_bridge.conversions.lidar import PointTimes
from acres_bridge.protocol import frames
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.hello import encode_hello_payload
from acres_bridge.protocol.hello import parse_hello
from acres_bridge.protocol.limits import SUB_HEADER
from acres_bridge.sensors.message_pool import MessagePool
from acres_bridge.sensors.sensor_node import SensorBridgeNode

pytestmark = pytest.mark.ros

COLUMNS, RINGS, WIDTH, HEIGHT = 40, 4, 16, 8


class Stream:
    """A sensor stream on loopback: each accepted connection is handed to the test."""

    def __init__(self) -> None:
        self.listener = socket.create_server(('127.0.0.1', 0))
        self.port = self.listener.getsockname()[1]
        self.connections: queue.Queue = queue.Queue()
        self._sequence = 0
        self._thread = threading.Thread(target=self._accept, name='test-stream', daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                self.connections.put(self.listener.accept()[0])

    def accept(self) -> socket.socket:
        return self.connections.get(timeout=TIMEOUT_S)

    def frame(self, frame_type: int, payload: bytes, stamp_s: float) -> bytes:
        self._sequence += 1
        return frames.encode_frame(frame_type, payload, sequence=self._sequence,
                                   stamp_s=stamp_s, publish_s=time.monotonic())

    def close(self) -> None:
        self.listener.close()
        self._thread.join(5.0)


def _hello() -> dict:
    hello = polaris_hello_dict()
    hello['lidar'].update(columns=COLUMNS, rings=RINGS, enabled=True)
    hello['camera'].update(width=WIDTH, height=HEIGHT, enabled=True)
    return hello


def _pixels(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (HEIGHT, WIDTH, 3), dtype=np.uint8)


@pytest.fixture
def stream():
    server = Stream()
    yield server
    server.close()


@pytest.mark.parametrize('point_fields', ['xyzi', 'xyzirt', 'autoware', 'autoware_dense'])
def test_only_the_good_frames_are_published_and_they_go_straight_into_the_messages(
        ros_context, spinning, stream, monkeypatch, point_fields):
    targets = []
    original = MessagePool.payload_target

    def spy(pool, header):
        view = original(pool, header)
        targets.append((header.frame_type, view is not None))
        return view
    monkeypatch.setattr(MessagePool, 'payload_target', spy)
    node = SensorBridgeNode(context=ros_context, parameter_overrides=[
        Parameter('port', value=stream.port), Parameter('reconnect_s', value=0.1),
        Parameter('frame_prefix', value='polaris'),
        Parameter('point_fields', value=point_fields)])
    topics = {topic: AGENT_TOPICS[topic]
              for topic in ('lidar/points', 'camera/image_raw', 'camera/camera_info')}
    recorder = Recorder(ros_context, topics)
    try:
        spinning.add(node)
        spinning.add(recorder.node)
        wait_matched(node.bridge.publishers[topic] for topic in topics)
        hello_dict = _hello()
        hello = parse_hello(encode_hello_payload(hello_dict))
        good_points = [lidar_points(COLUMNS, RINGS, seed=seed) for seed in range(4)]
        good_pixels = [_pixels(seed) for seed in range(4)]
        stamps = [1.0, 2.0, 3.0, 4.0]
        lidar_size = frames.lidar_payload_size(COLUMNS, RINGS)
        bad_step = bytearray(frames.encode_lidar_payload(lidar_points(COLUMNS, RINGS, seed=9)))
        SUB_HEADER.pack_into(bad_step, 0, COLUMNS, RINGS, 20, 0)
        short = frames.encode_lidar_payload(lidar_points(COLUMNS - 1, RINGS, seed=8))
        bad_camera = bytearray(frames.encode_camera_payload(_pixels(9)))
        SUB_HEADER.pack_into(bad_camera, 0, WIDTH, HEIGHT, 9, WIDTH * 3)
        truncated = stream.frame(FrameType.LIDAR, frames.encode_lidar_payload(
            lidar_points(COLUMNS, RINGS, seed=7)), 3.5)

        def good(index: int) -> bytes:
            return b''.join((
                stream.frame(FrameType.LIDAR, frames.encode_lidar_payload(good_points[index]),
                             stamps[index]),
                stream.frame(FrameType.CAMERA, frames.encode_camera_payload(good_pixels[index]),
                             stamps[index])))

        first = stream.accept()
        first.sendall(b''.join((
            stream.frame(FrameType.HELLO, encode_hello_payload(hello_dict), 0.0),
            good(0), good(1),
            stream.frame(FrameType.LIDAR, bytes(bad_step), 2.5),
            stream.frame(FrameType.LIDAR, short, 2.6),
            stream.frame(FrameType.CAMERA, bytes(bad_camera), 2.7),
            good(2),
            truncated[:frames.HEADER_SIZE + lidar_size // 2])))
        first.shutdown(socket.SHUT_RDWR)
        first.close()
        second = stream.accept()
        second.sendall(b''.join((
            stream.frame(FrameType.HELLO, encode_hello_payload(hello_dict), 0.0),
            good(3))))
        recorder.wait_counts({'lidar/points': 4, 'camera/image_raw': 4,
                              'camera/camera_info': 4})

        bridge = node.bridge
        times = PointTimes.of(hello.lidar, origin=node.parameters.point_time_origin)
        clouds = [lidar_frame_to_cloud(
            lidar_frame(points, stamp_s=stamp),
            make_header(times.cloud_stamp_s(stamp), bridge.frames.lidar),
            fields=point_fields, times=times) for points, stamp in zip(good_points, stamps)]
        images = [camera_frame_to_image(
            camera_frame(pixels, stamp_s=stamp), make_header(stamp, bridge.frames.camera_optical))
            for pixels, stamp in zip(good_pixels, stamps)]
        infos = [camera_info_from_hello(hello, make_header(stamp, bridge.frames.camera_optical))
                 for stamp in stamps]
        # Delivery is reliable and in order: a published bad frame would shift these lists.
        assert recorder.messages['lidar/points'][:4] == clouds
        assert recorder.messages['camera/image_raw'][:4] == images
        assert recorder.messages['camera/camera_info'][:4] == infos
        stats = bridge.stats
        assert stats['bad_frames'] == 4
        assert stats['by_type']['lidar']['published'] == 4
        assert stats['by_type']['camera']['published'] == 4
        assert stats['dropped'] == 0
        assert stats['connections'] == 2
        # The first frame of each kind makes its buffer; later ones of the Hello's size are
        # received into it (xyzirt and autoware clouds never: their points are spread out).
        in_place = {kind: sum(used for frame_type, used in targets if frame_type == kind)
                    for kind in (FrameType.LIDAR, FrameType.CAMERA)}
        assert in_place[FrameType.CAMERA] == 4      # good 1 to 3 and the bad camera frame
        # good 1 to 3, the bad point step and the truncated frame; not the short one
        assert in_place[FrameType.LIDAR] == (5 if point_fields == 'xyzi' else 0)
    finally:
        spinning.shutdown()
        node.destroy_node()
        recorder.node.destroy_node()
