# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The lidar_recorder node against the emulator and the sensor bridge, over real sockets.

The emulator runs in lockstep: a step of 12 physics steps gives one LiDAR frame, ten INS
frames and a barrier. The sensor bridge (publishing xyzirt clouds) and the recorder run in the
test's Context; a tap keeps the frames the bridge decoded, so every stored scan is compared
with the simulator's own points. Waits are on conditions with time-outs.
"""

from diagnostic_msgs.msg import DiagnosticStatus
import numpy as np
import pytest
from rclpy.parameter import Parameter
from sensor_msgs.msg import PointCloud2
from sensor_msgs.msg import PointField
from support.dataset_drive import bridge_cloud
from support.emulator_probe import JsonChannel
from support.sensor_bridge_graph import streaming
from support.sensor_bridge_graph import wait_matched
from support.sensor_bridge_graph import wait_until
from support.wire_tap import WireTap

from acres_bridge.conversions.lidar import cloud_to_array
from acres_bridge.dataset import LidarSet
from acres_bridge.dataset.calibration import lens_centres
from acres_bridge.dataset.format import QUALITY_RTK
from acres_bridge.dataset.format import QUALITY_TRUTH
from acres_bridge.dataset.format import RANGE_STEP_M
from acres_bridge.protocol.frames import HelloFrame
from acres_bridge.protocol.frames import LidarFrame
from acres_bridge.recording.recorder_node import LidarRecorderNode
from acres_bridge.runtime.parameters import ParameterError
from acres_bridge.sensors.sensor_node import SensorBridgeNode

pytestmark = pytest.mark.ros
SCANS = 24
TIMEOUT_S = 30.0


def _recorder(context, root, **parameters) -> LidarRecorderNode:
    overrides = [Parameter('root', value=str(root))]
    overrides += [Parameter(name, value=value) for name, value in parameters.items()]
    return LidarRecorderNode(context=context, namespace='polaris', parameter_overrides=overrides)


@pytest.fixture
def session(ros_context, spinning, emulator_factory, tmp_path):
    """Start the emulator (lockstep), a sensor bridge behind a wire tap, and a step channel."""
    emulator = emulator_factory(lockstep=True)
    tap = WireTap(emulator.sensor_ports[0])
    bridge = SensorBridgeNode(context=ros_context, namespace='polaris',
                              parameter_overrides=[
                                  Parameter('port', value=tap.port),
                                  Parameter('point_fields', value='xyzirt'),
                                  Parameter('reconnect_s', value=0.1)])
    spinning.add(bridge)
    wait_until(lambda: streaming(bridge.bridge), TIMEOUT_S, 'the Hello')
    channel = JsonChannel(emulator.control_port)
    nodes = [bridge]

    def add(node):
        nodes.append(spinning.add(node))
        return node

    yield tap, channel, bridge, add
    channel.close()
    spinning.shutdown()
    for node in reversed(nodes):
        node.destroy_node()
    tap.close()


def _step(channel: JsonChannel, scans: int) -> None:
    reply = channel.call('step', steps=12 * scans)
    assert reply['result'] == 1, reply


def test_the_recorder_stores_every_scan_the_bridge_published(session, tmp_path):
    tap, channel, bridge, add = session
    recorder = add(_recorder(bridge.context, tmp_path, set='graph', sequence='run',
                             split='train'))
    wait_matched([bridge.bridge.publishers['lidar/points']], TIMEOUT_S)
    wait_until(lambda: 'lidar' in recorder.static_frames, TIMEOUT_S, 'the /tf_static mount')
    for _ in range(SCANS // 4):
        _step(channel, 4)
    wait_until(lambda: recorder.scans == SCANS, TIMEOUT_S, f'{SCANS} recorded scans')
    frames = tap.of(LidarFrame)
    last_ns = round(frames[-1].header.stamp_s * 1e9)
    wait_until(lambda: recorder.recorder.odometry_stamp_ns >= last_ns, TIMEOUT_S,
               'the odometry of the last scan')
    assert len(frames) == SCANS
    hello = tap.of(HelloFrame)[-1].hello
    recorder.close()

    sequence = LidarSet.open('graph', root=tmp_path, splits=('train',))['run']
    assert len(sequence) == SCANS
    scans = sequence.scans
    assert list(scans['source_index']) == list(range(SCANS))
    assert not (scans['flags'] & 1).any()
    lens = lens_centres(1800, 0.035)
    for row, frame in zip(scans, frames):
        assert row['stamp_ns'] == round(frame.header.stamp_s * 1e9)
        points = np.frombuffer(frame.points, '<f4').reshape(frame.columns, frame.rings, 4)
        source = points[..., :3].transpose(1, 0, 2).astype(np.float64)
        returns = np.isfinite(source).all(axis=-1)
        raw = sequence.range_raw(int(row['source_index']))
        assert np.array_equal(raw > 0, returns)
        error = np.abs(raw * RANGE_STEP_M - np.linalg.norm(source - lens, axis=-1))[returns]
        assert error.max() <= RANGE_STEP_M / 2
        assert row['returns'] == np.count_nonzero(returns)
    # Every scan has its INS pose; the game's fix is RTK.
    assert np.isfinite(scans['east']).all() and (scans['pose_quality'] == QUALITY_RTK).all()
    calibration = sequence.calibration
    assert calibration.mount_xyz_m == pytest.approx(tuple(hello.lidar.position_flu_m), abs=1e-6)
    assert calibration.mount_rpy_deg == pytest.approx(tuple(hello.lidar.rpy_deg), abs=1e-6)
    assert calibration.sweep_s == pytest.approx(1.0 / hello.lidar.hz, abs=1e-6)
    assert calibration.firing_clockwise and calibration.last_column_at_stamp
    source = sequence.meta['source']
    assert source['points_topic'] == '/polaris/lidar/points'
    assert source['odometry_topic'] == '/polaris/ins/odometry'
    assert source['frame_id'] == 'lidar'


def test_ground_truth_odometry_gives_truth_quality(session, tmp_path):
    tap, channel, bridge, add = session
    recorder = add(_recorder(bridge.context, tmp_path, set='graph', sequence='truth',
                             odometry_topic='ground_truth/odometry'))
    wait_matched([bridge.bridge.publishers['lidar/points']], TIMEOUT_S)
    _step(channel, 5)
    wait_until(lambda: recorder.scans == 5, TIMEOUT_S, '5 recorded scans')
    last_ns = round(tap.of(LidarFrame)[-1].header.stamp_s * 1e9)
    wait_until(lambda: recorder.recorder.odometry_stamp_ns >= last_ns, TIMEOUT_S,
               'the odometry of the last scan')
    recorder.close()
    scans = LidarSet.open('graph', root=tmp_path)['truth'].scans
    assert len(scans) == 5 and (scans['pose_quality'] == QUALITY_TRUTH).all()


def test_bad_parameters_and_an_existing_sequence_stop_the_node(ros_context, tmp_path):
    with pytest.raises(ParameterError, match='split'):
        _recorder(ros_context, tmp_path, split='training')
    with pytest.raises(ParameterError, match='sequence'):
        _recorder(ros_context, tmp_path, sequence='../up')
    folder = tmp_path / 'bridge' / 'taken'
    folder.mkdir(parents=True)
    (folder / 'meta.json').write_text('{}')
    with pytest.raises(ParameterError, match='exists'):
        _recorder(ros_context, tmp_path, sequence='taken', existing='refuse')
    assert (folder / 'meta.json').read_text() == '{}'


def test_a_cloud_that_is_not_organised_is_skipped_and_recording_goes_on(session, tmp_path):
    tap, channel, bridge, add = session
    recorder = add(_recorder(bridge.context, tmp_path, set='graph', sequence='skip',
                             points_topic='/test/points'))
    publisher = bridge.create_publisher(PointCloud2, '/test/points', 10)
    wait_until(lambda: publisher.get_subscription_count() == 1, TIMEOUT_S, 'the recorder')
    flat = PointCloud2(height=1, width=4, point_step=16, row_step=64, is_dense=False,
                       fields=[PointField(name=n, offset=4 * i, datatype=7, count=1)
                               for i, n in enumerate('xyz')])
    flat.data = bytes(64)
    publisher.publish(flat)
    wait_until(lambda: recorder.skipped == 1, TIMEOUT_S, 'the flat cloud skipped')
    assert recorder.failed is None and recorder.scans == 0
    status = recorder.diagnostic_status()
    assert status.level == DiagnosticStatus.WARN and status.message == '1 clouds skipped'
    assert {item.key: item.value for item in status.values}['skipped_clouds'] == '1'
    assert recorder.diagnostic_status().level == DiagnosticStatus.OK
    _step(channel, 1)
    tap.wait(lambda t: t.of(LidarFrame), what='a LiDAR frame')
    frame = tap.of(LidarFrame)[-1]
    points = np.frombuffer(frame.points, '<f4').reshape(frame.columns, frame.rings, 4)
    cloud = bridge_cloud(frame.header.stamp_s, points.copy(), fields='xyzi', frame_id='lidar')
    assert cloud_to_array(cloud).shape == (1800, 32)
    publisher.publish(cloud)
    wait_until(lambda: recorder.scans == 1, TIMEOUT_S, 'the organised cloud recorded')
    recorder.close()
    assert len(LidarSet.open('graph', root=tmp_path)['skip']) == 1
    bridge.destroy_publisher(publisher)
