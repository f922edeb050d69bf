# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The sensor_bridge node over real sockets and a real rclpy graph: each frame to its message.

The emulator runs in lockstep, so one step request of 12 physics steps gives exactly 12 clock,
10 INS, 1 LiDAR and 1 camera frame and a barrier. The node under test runs in the test's
Context behind a wire tap, which decodes a copy of the frames the simulator sent it; a recorder
node keeps every message a client sees, and the two are compared field by field. One test also
reads a twin emulator's raw stream to show the tap holds the simulator's bytes.
"""

import math
import time

import numpy as np
import pytest
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import ReliabilityPolicy
from sensor_msgs.msg import PointField
from support.emulator_probe import connect_stream
from support.emulator_probe import JsonChannel
from support.emulator_probe import read_frame
from support.emulator_probe import read_until_barrier
from support.sensor_bridge_graph import AGENT_TOPICS
from support.sensor_bridge_graph import GLOBAL_TOPICS
from support.sensor_bridge_graph import Recorder
from support.sensor_bridge_graph import streaming
from support.sensor_bridge_graph import wait_matched
from support.sensor_bridge_graph import wait_until
from support.wire_tap import WireTap

from acres_bridge.conversions.clock import stamp_to_time
from acres_bridge.conversions.lidar import cloud_to_array
from acres_bridge.geometry import rpy_deg_to_quaternion
from acres_bridge.protocol.frames import BarrierFrame
from acres_bridge.protocol.frames import CameraFrame
from acres_bridge.protocol.frames import ClockFrame
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.frames import HelloFrame
from acres_bridge.protocol.frames import InsField
from acres_bridge.protocol.frames import InsFrame
from acres_bridge.protocol.frames import LidarFrame
from acres_bridge.sensors.sensor_node import LARGE_DEPTH
from acres_bridge.sensors.sensor_node import SensorBridgeNode
from acres_bridge.sensors.sensor_node import SMALL_DEPTH
from acres_devkit.ports import free_port

pytestmark = pytest.mark.ros
F = InsField


class Bridge:
    """A SensorBridgeNode behind a wire tap, with a recorder, spun by the test's executor."""

    def __init__(self, context, spinning, port: int, *, namespace: str = '',
                 **parameters) -> None:
        self.tap = WireTap(port)
        overrides = [Parameter('port', value=self.tap.port), Parameter('reconnect_s', value=0.1)]
        overrides += [Parameter(name, value=value) for name, value in parameters.items()]
        self.node = SensorBridgeNode(context=context, namespace=namespace or None,
                                     parameter_overrides=overrides)
        prefix = f'/{namespace}/' if namespace else ''
        topics = {prefix + topic: kind for topic, kind in AGENT_TOPICS.items()}
        self.recorder = Recorder(context, {**topics, **GLOBAL_TOPICS})
        self.prefix = prefix
        spinning.add(self.node)
        spinning.add(self.recorder.node)
        wait_until(lambda: streaming(self.node.bridge), what='the Hello')
        self.tap.wait_hello()
        wait_matched(self.node.bridge.publishers.values())

    def close(self) -> None:
        for node in (self.node, self.recorder.node):
            node.destroy_node()
        self.tap.close()

    def topic(self, name: str) -> str:
        return self.prefix + name

    def step(self, channel: JsonChannel, steps: int, counts: dict[str, int]) -> dict:
        """Step the emulator and wait for the messages of the steps."""
        reply = channel.call('step', steps=steps)
        assert reply['result'] == 1, reply
        self.recorder.wait_counts({self.topic(name) if not name.startswith('/') else name:
                                   count for name, count in counts.items()})
        self.tap.wait_barrier(reply['barrier'])
        return reply


@pytest.fixture
def bridges(ros_context, spinning):
    started = []

    def start(port: int, **options) -> Bridge:
        bridge = Bridge(ros_context, spinning, port, **options)
        started.append(bridge)
        return bridge

    yield start
    # Nodes are destroyed once nothing spins them: rclpy's wait set races with destruction.
    spinning.shutdown()
    for bridge in started:
        bridge.close()


ONE_STEP = {'/clock': 12, 'ins/fix': 10, 'ins/imu': 10, 'ins/odometry': 10,
            'ground_truth/odometry': 10, 'lidar/points': 1, 'camera/image_raw': 1,
            'camera/camera_info': 1, 'step_barrier': 1}


def _xyz(message) -> tuple:
    return (message.x, message.y, message.z)


def _xyzw(message) -> tuple:
    return (message.x, message.y, message.z, message.w)


def _tree(message) -> dict[str, tuple]:
    return {t.child_frame_id: (t.header.frame_id, _xyz(t.transform.translation),
                               _xyzw(t.transform.rotation)) for t in message.transforms}


def test_one_lockstep_step_of_the_polaris_reaches_every_topic_field_by_field(
        emulator_factory, bridges):
    emulator = emulator_factory(vehicles=('polaris',), lockstep=True)
    bridge = bridges(emulator.sensor_ports[0], frame_prefix='polaris')
    channel = JsonChannel(emulator.control_port)
    reply = bridge.step(channel, 12, ONE_STEP)
    messages = bridge.recorder.messages
    hello = bridge.tap.of(HelloFrame)[0].hello

    clocks = bridge.tap.of(ClockFrame)
    assert len(clocks) == 12
    assert [m.clock for m in messages['/clock']] == [
        stamp_to_time(frame.header.stamp_s) for frame in clocks]

    epochs = bridge.tap.of(InsFrame)
    assert len(epochs) == 10
    for frame, fix, imu, odometry, truth in zip(
            epochs, messages['ins/fix'], messages['ins/imu'], messages['ins/odometry'],
            messages['ground_truth/odometry']):
        v = frame.values
        stamp = stamp_to_time(frame.header.stamp_s)
        for message in (fix, imu, odometry, truth):
            assert message.header.stamp == stamp
        assert fix.header.frame_id == imu.header.frame_id == 'polaris/base_footprint'
        assert (fix.latitude, fix.longitude, fix.altitude) == (v[F.LAT], v[F.LON], v[F.HEIGHT])
        assert list(fix.position_covariance[::4]) == [v[F.COV_E], v[F.COV_N], v[F.COV_U]]
        assert fix.position_covariance_type == fix.COVARIANCE_TYPE_DIAGONAL_KNOWN
        assert (fix.status.status, fix.status.service) == (2, fix.status.SERVICE_GPS)
        assert _xyzw(imu.orientation) == v[F.ENU_QX:F.ENU_QW + 1]
        assert _xyz(imu.angular_velocity) == v[F.GYRO_X:F.GYRO_Z + 1]
        assert _xyz(imu.linear_acceleration) == v[F.ACCEL_X:F.ACCEL_Z + 1]
        assert (odometry.header.frame_id, odometry.child_frame_id) == (
            'world', 'polaris/base_footprint')
        assert _xyz(odometry.pose.pose.position) == v[F.ENU_X:F.ENU_Z + 1]
        assert _xyzw(odometry.pose.pose.orientation) == v[F.ENU_QX:F.ENU_QW + 1]
        assert _xyz(odometry.twist.twist.linear) == v[F.VEL_X:F.VEL_Z + 1]
        assert _xyz(odometry.twist.twist.angular) == v[F.GYRO_X:F.GYRO_Z + 1]
        assert (truth.header.frame_id, truth.child_frame_id) == (
            'world', 'polaris/base_footprint')
        assert _xyz(truth.pose.pose.position) == v[F.TRUTH_X:F.TRUTH_Z + 1]
        assert _xyzw(truth.pose.pose.orientation) == v[F.TRUTH_QX:F.TRUTH_QW + 1]
        assert truth.twist.twist.linear.x == v[F.TRUTH_SPEED]

    [scan] = bridge.tap.of(LidarFrame)
    [cloud] = messages['lidar/points']
    assert cloud.header.stamp == stamp_to_time(scan.header.stamp_s)
    assert cloud.header.frame_id == 'polaris/lidar'
    assert (cloud.height, cloud.width) == (1800, 32) == (scan.columns, scan.rings)
    assert [(f.name, f.offset, f.datatype, f.count) for f in cloud.fields] == [
        ('x', 0, PointField.FLOAT32, 1), ('y', 4, PointField.FLOAT32, 1),
        ('z', 8, PointField.FLOAT32, 1), ('intensity', 12, PointField.FLOAT32, 1)]
    assert (cloud.point_step, cloud.row_step) == (16, 16 * 32)
    assert cloud.is_dense is False and cloud.is_bigendian is False
    assert bytes(cloud.data) == bytes(scan.points)
    points = cloud_to_array(cloud)
    assert np.isnan(points['x']).any() and np.isfinite(points['x']).any()

    [picture] = bridge.tap.of(CameraFrame)
    [image] = messages['camera/image_raw']
    [info] = messages['camera/camera_info']
    assert image.header.stamp == stamp_to_time(picture.header.stamp_s)
    assert image.header.frame_id == 'polaris/camera_optical_frame'
    assert (image.width, image.height, image.encoding, image.step) == (896, 512, 'bgr8', 2688)
    assert bytes(image.data) == bytes(picture.pixels)
    assert info.header == image.header
    assert (info.width, info.height, info.distortion_model) == (896, 512, 'plumb_bob')
    assert list(info.d) == list(hello.camera.d)
    camera = hello.camera
    assert list(info.k) == [camera.fx, 0, camera.cx, 0, camera.fy, camera.cy, 0, 0, 1]
    assert list(info.r) == [1, 0, 0, 0, 1, 0, 0, 0, 1]
    assert list(info.p) == [camera.fx, 0, camera.cx, 0, 0, camera.fy, camera.cy, 0, 0, 0, 1, 0]

    [barrier_frame] = bridge.tap.of(BarrierFrame)
    [barrier] = messages['step_barrier']
    assert barrier.step == barrier_frame.step == reply['barrier'] == 12
    assert barrier.header.stamp == stamp_to_time(barrier_frame.header.stamp_s)
    assert barrier.header.stamp == stamp_to_time(reply['time_s'])
    assert bridge.node.bridge.last_barrier == (12, barrier_frame.header.stamp_s)
    assert bridge.node.bridge.barriers.future(12).done()

    static = bridge.recorder.wait_for('/tf_static', lambda m: len(m.transforms) == 6)
    tree = _tree(static)
    assert tree['polaris/lidar'] == ('polaris/base_footprint', (2.5, 0.0, 2.039),
                                     rpy_deg_to_quaternion((-1.518, 5.317, 0.0)))
    assert tree['polaris/camera_optical_frame'][0] == 'polaris/camera'
    assert set(tree) == {'polaris/base_link', 'polaris/lidar', 'polaris/camera',
                         'polaris/camera_optical_frame', 'polaris/imu', 'polaris/gnss'}
    assert bridge.recorder.node.count_publishers('/tf') == 0
    assert bridge.recorder.count('/tf') == 0

    # The tap holds the simulator's bytes: a twin emulator (same seed, same steps) read raw.
    twin = emulator_factory(vehicles=('polaris',), lockstep=True)
    sock = connect_stream(twin.sensor_ports[0])
    assert read_frame(sock)[0] == FrameType.HELLO
    assert JsonChannel(twin.control_port).call('step', steps=12)['result'] == 1
    raw = {kind: payload for kind, _, _, payload in read_until_barrier(sock)}
    sock.close()
    assert raw[FrameType.LIDAR][16:] == bytes(cloud.data)
    assert raw[FrameType.CAMERA][16:] == bytes(image.data)
    last_fix = messages['ins/fix'][-1]
    assert np.frombuffer(raw[FrameType.INS], '<f8')[16] == last_fix.latitude


def test_diagnostics_report_the_stream_once_a_second(emulator_factory, bridges):
    started = time.monotonic()   # the emulator stamps publish times on this clock after it
    emulator = emulator_factory(vehicles=('polaris',), lockstep=True)
    bridge = bridges(emulator.sensor_ports[0])
    bridge.step(JsonChannel(emulator.control_port), 12, ONE_STEP)

    def streamed(message) -> bool:
        values = {v.key: v.value for v in message.status[0].values}
        return values['lidar.published'] == '1' and values['clock.published'] == '12'
    message = bridge.recorder.wait_for('/diagnostics', streamed)
    [status] = message.status
    values = {v.key: v.value for v in status.values}
    assert status.level == status.OK and status.message == 'streaming'
    assert status.name == 'sensor_bridge: sensor_bridge sensor stream'
    assert status.hardware_id == f'127.0.0.1:{bridge.tap.port}'
    assert values['connected'] == 'true'
    assert values['reconnects'] == '0' and values['bad_frames'] == '0'
    assert values['ins.frames'] == values['ins.published'] == '10'
    assert values['camera.dropped'] == '0'
    p50_ms, max_ms = float(values['lidar.latency_p50_ms']), float(values['lidar.latency_max_ms'])
    assert 0.0 < p50_ms <= max_ms <= (time.monotonic() - started) * 1e3
    assert float(values['clock.rate_hz']) > 0.0


def test_core_mode_with_xyzirt_truth_tf_and_a_namespace(emulator_factory, bridges):
    emulator = emulator_factory(vehicles=('polaris',), mode='core', lockstep=True)
    bridge = bridges(emulator.sensor_ports[0], namespace='polaris', point_fields='xyzirt',
                     publish_tf='truth')
    assert bridge.node.bridge.publishers.keys() >= {'lidar/points', '/clock'}
    assert bridge.recorder.node.count_publishers('/polaris/lidar/points') == 1
    hello_frame = bridge.tap.of(HelloFrame)[0]
    assert hello_frame.hello.camera.enabled is False
    counts = {name: count for name, count in ONE_STEP.items() if 'camera' not in name}
    bridge.step(JsonChannel(emulator.control_port), 12, {**counts, '/tf': 10})
    messages = bridge.recorder.messages

    [scan] = bridge.tap.of(LidarFrame)
    [cloud] = messages['/polaris/lidar/points']
    assert cloud.header.frame_id == 'lidar'    # no prefix
    assert (cloud.point_step, cloud.row_step) == (24, 24 * 32)
    assert [(f.name, f.offset, f.datatype) for f in cloud.fields][4:] == [
        ('ring', 16, PointField.UINT16), ('time', 20, PointField.FLOAT32)]
    cells = np.frombuffer(cloud.data, np.uint8).reshape(-1, 24)
    assert cells[:, :16].tobytes() == bytes(scan.points)
    view = cloud_to_array(cloud)
    assert (view['ring'] == np.arange(32)).all()
    sweep_s = 1.0 / hello_frame.hello.lidar.hz
    assert view['time'][0, 0] == pytest.approx(-1799 / 1800 * sweep_s, abs=1e-7)
    assert view['time'][1799, 5] == 0.0

    assert bridge.tap.of(CameraFrame) == []
    assert bridge.recorder.count('/polaris/camera/image_raw') == 0
    static = bridge.recorder.wait_for('/tf_static', lambda m: len(m.transforms) == 4)
    assert set(_tree(static)) == {'base_link', 'lidar', 'imu', 'gnss'}

    for transforms, truth in zip(messages['/tf'], messages['/polaris/ground_truth/odometry']):
        [transform] = transforms.transforms
        assert transform.header == truth.header
        assert (transform.header.frame_id, transform.child_frame_id) == (
            'world', 'base_footprint')
        assert _xyz(transform.transform.translation) == _xyz(truth.pose.pose.position)
        assert _xyzw(transform.transform.rotation) == _xyzw(truth.pose.pose.orientation)


def test_ins_tf_without_clock_and_another_world_frame(emulator_factory, bridges):
    emulator = emulator_factory(vehicles=('maxxum',), lockstep=True)
    bridge = bridges(emulator.sensor_ports[0], publish_tf='ins', publish_clock=False,
                     world_frame='map', frame_prefix='maxxum')
    assert '/clock' not in bridge.node.bridge.publishers
    counts = {name: count for name, count in ONE_STEP.items() if name != '/clock'}
    bridge.step(JsonChannel(emulator.control_port), 12, {**counts, '/tf': 10})
    messages = bridge.recorder.messages
    assert bridge.recorder.node.count_publishers('/clock') == 0
    assert messages['/clock'] == []
    assert len(bridge.tap.of(ClockFrame)) == 12
    for transforms, odometry in zip(messages['/tf'], messages['ins/odometry']):
        [transform] = transforms.transforms
        assert (transform.header.frame_id, transform.child_frame_id) == (
            'map', 'maxxum/base_footprint')
        assert transform.header.stamp == odometry.header.stamp
        assert _xyz(transform.transform.translation) == _xyz(odometry.pose.pose.position)
    [cloud] = messages['lidar/points']
    assert (cloud.height, cloud.width, cloud.header.frame_id) == (180, 8, 'maxxum/lidar')
    [image] = messages['camera/image_raw']
    assert (image.width, image.height, image.step) == (640, 480, 1920)
    assert math.isfinite(messages['ins/fix'][0].latitude)


def test_publishers_are_reliable_keep_last_and_users_override_them(ros_context):
    node = SensorBridgeNode(context=ros_context, autostart=False, parameter_overrides=[
        Parameter('port', value=free_port()),
        Parameter('qos_overrides./lidar/points.publisher.reliability', value='best_effort'),
        Parameter('qos_overrides./lidar/points.publisher.depth', value=3)])
    try:
        publishers = node.bridge.publishers
        for topic, depth in (('/clock', SMALL_DEPTH), ('ins/imu', SMALL_DEPTH),
                             ('camera/image_raw', LARGE_DEPTH), ('step_barrier', SMALL_DEPTH)):
            profile = publishers[topic].qos_profile
            assert (profile.reliability, profile.history, profile.depth, profile.durability) == (
                ReliabilityPolicy.RELIABLE, HistoryPolicy.KEEP_LAST, depth,
                DurabilityPolicy.VOLATILE), topic
        cloud = publishers['lidar/points'].qos_profile
        assert (cloud.reliability, cloud.depth) == (ReliabilityPolicy.BEST_EFFORT, 3)
        # What subscribers discover agrees; /tf_static is latched like tf2's.
        [info] = node.get_publishers_info_by_topic('/lidar/points')
        assert info.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
        [latched] = node.get_publishers_info_by_topic('/tf_static')
        assert latched.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL
        assert latched.qos_profile.reliability == ReliabilityPolicy.RELIABLE
        assert node.get_parameter('qos_overrides./clock.publisher.depth').value == SMALL_DEPTH
    finally:
        node.destroy_node()
