# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The sensor bridge's time, covariance and datum choices over real sockets and a real graph.

xyzirt times with the sweep and origin parameters against the emulator, the ccw column order
from a stream that sends a ccw Hello, the INS odometry's pose covariance, and the INS datum in
``/diagnostics``.
"""

import contextlib
import json
import socket
import threading
import time

import numpy as np
import pytest
from rclpy.parameter import Parameter
from support.emulator_probe import JsonChannel
from support.sensor_bridge_graph import AGENT_TOPICS
from support.sensor_bridge_graph import GLOBAL_TOPICS
from support.sensor_bridge_graph import Recorder
from support.sensor_bridge_graph import streaming
from support.sensor_bridge_graph import wait_matched
from support.sensor_bridge_graph import wait_until
from support.sensor_frames import lidar_points
from support.sensor_frames import polaris_hello_dict
from support.wire_tap import WireTap

from acres_bridge.conversions.clock import stamp_to_time
from acres_bridge.conversions.lidar import cloud_to_array
from acres_bridge.conversions.lidar import column_times_s
from acres_bridge.protocol.frames import encode_frame
from acres_bridge.protocol.frames import encode_lidar_payload
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.frames import HelloFrame
from acres_bridge.protocol.frames import InsField
from acres_bridge.protocol.frames import InsFrame
from acres_bridge.protocol.frames import LidarFrame
from acres_bridge.protocol.hello import encode_hello_payload
from acres_bridge.sensors.sensor_node import SensorBridgeNode

pytestmark = pytest.mark.ros
F = InsField


class Bridge:
    """A SensorBridgeNode behind a wire tap, with a recorder, spun by the test's executor."""

    def __init__(self, context, spinning, port: int, **parameters) -> None:
        self.tap = WireTap(port)
        overrides = [Parameter('port', value=self.tap.port), Parameter('reconnect_s', value=0.1)]
        overrides += [Parameter(name, value=value) for name, value in parameters.items()]
        self.node = SensorBridgeNode(context=context, parameter_overrides=overrides)
        self.recorder = Recorder(context, {**AGENT_TOPICS, **GLOBAL_TOPICS})
        spinning.add(self.node)
        spinning.add(self.recorder.node)
        wait_until(lambda: streaming(self.node.bridge), what='the Hello')
        self.tap.wait_hello()
        wait_matched(self.node.bridge.publishers.values())


@pytest.fixture
def bridge(ros_context, spinning):
    started = []

    def start(port: int, **parameters) -> Bridge:
        started.append(Bridge(ros_context, spinning, port, **parameters))
        return started[-1]

    yield start
    spinning.shutdown()
    for each in started:
        for node in (each.node, each.recorder.node):
            node.destroy_node()
        each.tap.close()


def _step(emulator, bridge: Bridge, counts: dict[str, int]) -> None:
    reply = JsonChannel(emulator.control_port).call('step', steps=12)
    assert reply['result'] == 1, reply
    bridge.recorder.wait_counts(counts)
    bridge.tap.wait_barrier(reply['barrier'])


def test_a_sweep_of_0_gives_every_point_the_stamp(emulator_factory, bridge):
    emulator = emulator_factory(vehicles=('polaris',), mode='core', lockstep=True)
    polaris = bridge(emulator.sensor_ports[0], point_fields='xyzirt', lidar_sweep_s=0.0)
    _step(emulator, polaris, {'lidar/points': 1})
    [scan] = polaris.tap.of(LidarFrame)
    [cloud] = polaris.recorder.messages['lidar/points']
    assert cloud.header.stamp == stamp_to_time(scan.header.stamp_s)
    assert not cloud_to_array(cloud)['time'].any()


def test_the_start_origin_stamps_the_cloud_at_the_start_of_the_sweep(emulator_factory, bridge):
    emulator = emulator_factory(vehicles=('polaris',), lockstep=True)
    polaris = bridge(emulator.sensor_ports[0], point_fields='xyzirt',
                     point_time_origin='start')
    _step(emulator, polaris, {'lidar/points': 1, 'ins/fix': 10})
    [scan] = polaris.tap.of(LidarFrame)
    [cloud] = polaris.recorder.messages['lidar/points']
    sweep_s = 1.0 / polaris.tap.of(HelloFrame)[0].hello.lidar.hz
    assert cloud.header.stamp == stamp_to_time(scan.header.stamp_s - sweep_s)
    times = cloud_to_array(cloud)['time']
    assert np.array_equal(times[:, 0], column_times_s(1800, sweep_s, origin='start'))
    assert times.min() > 0.0 and times[-1, 0] == np.float32(sweep_s)
    # Only the cloud moves: the other topics keep the frame stamps.
    fix = polaris.recorder.messages['ins/fix'][0]
    assert fix.header.stamp == stamp_to_time(polaris.tap.of(InsFrame)[0].header.stamp_s)


class _StreamServer:
    """One sensor stream client served a given Hello and then given frames, on loopback."""

    def __init__(self, hello: dict) -> None:
        self.listener = socket.create_server(('127.0.0.1', 0))
        self.port = self.listener.getsockname()[1]
        self.hello = hello
        self.client: socket.socket | None = None
        self.accepted = threading.Event()
        self.thread = threading.Thread(target=self._accept, name='test-stream', daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            self.client, _ = self.listener.accept()
            self.send(FrameType.HELLO, encode_hello_payload(self.hello), 0.0)
            self.accepted.set()

    def send(self, frame_type: int, payload: bytes, stamp_s: float) -> None:
        self._sequence = getattr(self, '_sequence', -1) + 1
        self.client.sendall(encode_frame(frame_type, payload, sequence=self._sequence,
                                         stamp_s=stamp_s, publish_s=time.monotonic()))

    def close(self) -> None:
        for sock in (self.client, self.listener):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        self.thread.join(5.0)


def test_a_ccw_lidar_gets_the_ccw_firing_rule(bridge):
    hello = polaris_hello_dict()
    hello['lidar'].update(columns=360, rings=4, azimuth_order='ccw', hz=20)
    hello['camera']['enabled'] = False
    stream = _StreamServer(json.loads(json.dumps(hello)))
    try:
        polaris = bridge(stream.port, point_fields='xyzirt')
        assert stream.accepted.wait(10.0)
        points = lidar_points(360, 4)
        stream.send(FrameType.LIDAR, encode_lidar_payload(points), 4.0)
        polaris.recorder.wait_counts({'lidar/points': 1})
        [cloud] = polaris.recorder.messages['lidar/points']
        times = cloud_to_array(cloud)['time'][:, 0]
        assert np.array_equal(times, column_times_s(360, 0.05, azimuth_order='ccw'))
        # Column 0 (ahead) first, column 1 (one step left of ahead) at the stamp.
        assert times[0] == np.float32(-359 / 360 * 0.05) and times[1] == 0.0
    finally:
        stream.close()


def test_the_ins_odometry_carries_the_position_variances(emulator_factory, bridge):
    emulator = emulator_factory(vehicles=('polaris',), lockstep=True)
    polaris = bridge(emulator.sensor_ports[0])
    _step(emulator, polaris, {'ins/odometry': 10, 'ground_truth/odometry': 10})
    frames = polaris.tap.of(InsFrame)
    for frame, odometry, truth in zip(frames, polaris.recorder.messages['ins/odometry'],
                                      polaris.recorder.messages['ground_truth/odometry'],
                                      strict=True):
        covariance = np.array(odometry.pose.covariance).reshape(6, 6)
        variances = frame.values[F.COV_E:F.COV_U + 1]
        assert all(value > 0 for value in variances)
        assert tuple(np.diag(covariance)[:3]) == variances
        assert not np.diag(covariance)[3:].any()
        assert not (covariance - np.diag(np.diag(covariance))).any()
        assert not any(truth.pose.covariance)


def test_the_diagnostics_name_the_datum_of_the_fix(emulator_factory, bridge):
    emulator = emulator_factory(vehicles=('polaris',), lockstep=True)
    polaris = bridge(emulator.sensor_ports[0])
    datum = polaris.tap.of(HelloFrame)[0].hello.ins.datum
    assert datum == 'nad83_2011'

    def with_datum(message) -> bool:
        return any({(value.key, value.value) for value in status.values} >= {
            ('ins.datum', datum), ('georeferenced', 'true')} for status in message.status)
    polaris.recorder.wait_for('/diagnostics', with_datum)
