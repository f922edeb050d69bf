# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
camera/image_raw/compressed: as image_transport's compressed plugin, and only while subscribed.

The emulator plays at 1x (or steps in lockstep); a client subscribes as image_transport's
republisher or rviz2 would, and decodes each compressed image with Pillow against the raw image
of the same stamp: within JPEG's loss at quality 95, exactly with PNG.
"""

import io
import threading

from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
from PIL import Image as PillowImage
import pytest
import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.parameter import Parameter
from sensor_msgs.msg import CompressedImage
from sensor_msgs.msg import Image
from simulation_interfaces.msg import Result
from simulation_interfaces.srv import StepSimulation
from support.sensor_bridge_graph import Recorder
from support.sensor_bridge_graph import streaming
from support.sensor_bridge_graph import wait_matched
from support.spinning import SpinningExecutor
from support.waiting import wait_until

from acres_bridge.sensors.sensor_node import SensorBridgeNode
from acres_bridge.session.bridge import SessionBridge

RAW = 'camera/image_raw'
COMPRESSED = 'camera/image_raw/compressed'
WAIT_S = 20.0
# JPEG at quality 95 of a rendered image: the mean error of a channel value, out of 255.
JPEG_MEAN_ERROR = 2.0


def _stamp(message) -> tuple[int, int]:
    return (message.header.stamp.sec, message.header.stamp.nanosec)


def _raw_bgr(image: Image) -> np.ndarray:
    rows = np.frombuffer(bytes(image.data), dtype=np.uint8).reshape(image.height, image.step)
    return rows[:, :image.width * 3].reshape(image.height, image.width, 3)


def _decoded_bgr(compressed: CompressedImage) -> np.ndarray:
    rgb = np.asarray(PillowImage.open(io.BytesIO(bytes(compressed.data))).convert('RGB'))
    return rgb[..., ::-1]


def _check_pair(raw: Image, compressed: CompressedImage, image_format: str) -> None:
    assert compressed.header == raw.header
    assert compressed.format == f'bgr8; {image_format} compressed bgr8'
    decoded = _decoded_bgr(compressed).astype(np.int16)
    expected = _raw_bgr(raw).astype(np.int16)
    assert decoded.shape == expected.shape
    if image_format == 'png':
        assert np.array_equal(decoded, expected)
    else:
        assert np.abs(decoded - expected).mean() <= JPEG_MEAN_ERROR


@pytest.fixture
def playing_bridge(ros_context, spinning, emulator_factory):
    """Give a function that starts a sensor bridge on a 1x playing emulator, and its recorder."""
    made = []

    def start(topics, **parameters):
        emulator = emulator_factory(vehicles=('polaris',))
        overrides = [Parameter('port', value=emulator.sensor_ports[0])] + [
            Parameter(name, value=value) for name, value in parameters.items()]
        node = spinning.add(SensorBridgeNode(context=ros_context, parameter_overrides=overrides))
        recorder = Recorder(ros_context, topics)
        spinning.add(recorder.node)
        made.append((node, recorder))
        return node, recorder
    try:
        yield start
    finally:
        spinning.shutdown()
        for node, recorder in made:
            node.destroy_node()
            recorder.node.destroy_node()


@pytest.mark.parametrize('image_format', ['jpeg', 'png'])
def test_a_subscriber_gets_every_image_at_1x_compressed_as_the_plugin_does(
        playing_bridge, image_format):
    node, recorder = playing_bridge({RAW: Image, COMPRESSED: CompressedImage},
                                    **{'compressed.format': image_format,
                                       'compressed.png_level': 1})
    wait_matched([node.bridge.publishers[RAW], node.bridge.publishers[COMPRESSED]])
    recorder.wait_counts({COMPRESSED: 21}, timeout_s=WAIT_S)
    # The bridge's counts when the 21st image came: the decoding below loads this process,
    # which starves the bridge's encoder thread in it, and its drops from then on are the
    # test's doing, not the bridge's.
    stats = dict(node.bridge.stats['compressed'])
    raws = {_stamp(image): image for image in list(recorder.messages[RAW])}
    compressed = list(recorder.messages[COMPRESSED])
    first, last = _stamp(compressed[0]), _stamp(compressed[-1])
    # From the first compressed image on, every raw image has its compressed image.
    assert sorted(stamp for stamp in raws if first <= stamp <= last) == [
        _stamp(message) for message in compressed]
    for message in compressed:
        _check_pair(raws[_stamp(message)], message, image_format)
    assert stats['encoded'] >= len(compressed) and stats['dropped'] == 0


def test_with_no_subscriber_nothing_is_encoded_and_diagnostics_says_so(playing_bridge):
    node, recorder = playing_bridge({RAW: Image, '/diagnostics': DiagnosticArray})
    wait_matched([node.bridge.publishers[RAW]])
    recorder.wait_counts({RAW: 20}, timeout_s=WAIT_S)
    status = recorder.wait_for('/diagnostics', lambda array: any(
        value.key == 'compressed.encoded' for status in array.status for value in status.values))
    values = {value.key: value.value for status in status.status for value in status.values
              if value.key.startswith('compressed.')}
    assert (values['compressed.format'], values['compressed.encoded']) == ('jpeg', '0')
    assert node.bridge.stats['compressed']['encoded'] == 0


def test_compressed_format_none_makes_no_topic(playing_bridge):
    node, _ = playing_bridge({RAW: Image}, **{'compressed.format': 'none'})
    assert COMPRESSED not in node.bridge.publishers
    assert 'compressed' not in node.bridge.stats


@pytest.fixture
def lockstep_session(ros_context, emulator_factory):
    """Start a lockstep emulator, the session (PNG compressed images) and a client node."""
    emulator = emulator_factory(vehicles=('polaris',), lockstep=True, drive='loop')
    session_executor = MultiThreadedExecutor(num_threads=2, context=ros_context)
    session = SessionBridge(session_executor, context=ros_context, parameter_overrides=[
        Parameter('port', value=emulator.control_port),
        Parameter('sensor_processes', value='in_process'),
        Parameter('compressed.format', value='png')])
    spinner = threading.Thread(target=session_executor.spin, daemon=True)
    spinner.start()
    client_spinner = SpinningExecutor(ros_context)
    client = client_spinner.add(rclpy.create_node('compressed_client', context=ros_context))
    try:
        yield session, client, client_spinner
    finally:
        client_spinner.shutdown()
        session_executor.shutdown(timeout_sec=5.0)
        session.destroy()
        spinner.join(timeout=5.0)


def test_in_lockstep_the_steps_compressed_image_is_there_when_the_step_answers(
        ros_context, lockstep_session):
    session, client, spinner = lockstep_session
    received: dict[str, list] = {RAW: [], COMPRESSED: []}
    lock = threading.Lock()

    def keep(topic):
        def add(message):
            with lock:
                received[topic].append(message)
        return add
    subscriptions = [client.create_subscription(kind, f'/polaris/{topic}', keep(topic), 100)
                     for topic, kind in ((RAW, Image), (COMPRESSED, CompressedImage))]
    wait_until(lambda: len(session.bridges) == 1 and streaming(session.bridges[0]),
               what='the sensor stream to send its Hello', timeout_s=WAIT_S)
    wait_until(lambda: all(s.get_publisher_count() > 0 for s in subscriptions),
               what='the client to be matched', timeout_s=WAIT_S)
    service = client.create_client(StepSimulation, '/step_simulation')
    assert service.wait_for_service(timeout_sec=WAIT_S)
    for _ in range(3):
        request = StepSimulation.Request()
        request.steps = 12          # 0.1 s at 120 Hz: one camera image
        with lock:
            before = len(received[RAW])
        response = spinner.wait(service.call_async(request), WAIT_S)
        assert response.result.result == Result.RESULT_OK, response.result.error_message
        with lock:
            raws = received[RAW][before:]
            by_stamp = {_stamp(message): message for message in received[COMPRESSED]}
        assert raws, 'the step had no image'
        for raw in raws:
            # At the answer, the compressed image of each of the step's images is in.
            assert _stamp(raw) in by_stamp
            _check_pair(raw, by_stamp[_stamp(raw)], 'png')
