# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
convert_bag: a rosbag2 bag (sqlite3 and MCAP) written here with rosbags from emulator data.

The messages are the bridge's own (``lidar_frame_to_cloud``), serialised by rclpy as a ROS
recorder would store them: an organised xyzirt cloud at 10 Hz, odometry and NavSatFix at
100 Hz, one /tf_static.
"""

from pathlib import Path
import subprocess
import sys

from builtin_interfaces.msg import Time
from geometry_msgs.msg import TransformStamped
from nav_msgs.msg import Odometry
import numpy as np
import pytest
from rclpy.serialization import serialize_message
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer
from rosbags.typesys import get_typestore
from rosbags.typesys import Stores
from sensor_msgs.msg import NavSatFix
from support.dataset_drive import bridge_cloud
from support.dataset_drive import drive
from support.dataset_drive import MOUNT
from support.paths import ROOT
from tf2_msgs.msg import TFMessage

from acres_bridge.dataset import LidarSet
from acres_bridge.dataset.calibration import lens_centres
from acres_bridge.dataset.convert_bag import convert
from acres_bridge.dataset.format import QUALITY_RTK
from acres_bridge.dataset.format import RANGE_STEP_M
from acres_bridge.geometry import rpy_deg_to_quaternion

SCANS = 10
INS_HZ = 100


def _time(stamp_s: float) -> Time:
    ns = round(stamp_s * 1e9)
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def _write_bag(path: Path, storage: StoragePlugin, scans: list) -> None:
    typestore = get_typestore(Stores.ROS2_JAZZY)
    with Writer(path, version=9, storage_plugin=storage) as writer:
        topics = {
            '/polaris/lidar/points': 'sensor_msgs/msg/PointCloud2',
            '/polaris/ins/odometry': 'nav_msgs/msg/Odometry',
            '/polaris/ins/fix': 'sensor_msgs/msg/NavSatFix',
            '/tf_static': 'tf2_msgs/msg/TFMessage'}
        connection = {topic: writer.add_connection(topic, kind, typestore=typestore)
                      for topic, kind in topics.items()}

        def put(topic: str, stamp_s: float, message) -> None:
            writer.write(connection[topic], round(stamp_s * 1e9), serialize_message(message))

        static = TransformStamped()
        static.header.frame_id = 'polaris/base_footprint'
        static.child_frame_id = 'polaris/lidar'
        static.transform.translation.x, static.transform.translation.y, \
            static.transform.translation.z = MOUNT[0]
        x, y, z, w = rpy_deg_to_quaternion(MOUNT[1])
        static.transform.rotation.x, static.transform.rotation.y = x, y
        static.transform.rotation.z, static.transform.rotation.w = z, w
        put('/tf_static', 0.5, TFMessage(transforms=[static]))
        first, last = scans[0][0] - 0.05, scans[-1][0] + 0.05
        for k in range(int(round((last - first) * INS_HZ)) + 1):
            stamp = first + k / INS_HZ
            share = (stamp - scans[0][0]) / (scans[-1][0] - scans[0][0])
            a, b = scans[0][1].position, scans[-1][1].position
            odometry = Odometry()
            odometry.header.stamp = _time(stamp)
            odometry.header.frame_id = 'world'
            odometry.child_frame_id = 'polaris/base_footprint'
            position = a + share * (b - a)
            odometry.pose.pose.position.x, odometry.pose.pose.position.y, \
                odometry.pose.pose.position.z = (float(v) for v in position)
            qx, qy, qz, qw = (float(v) for v in scans[0][1].orientation)
            odometry.pose.pose.orientation.x, odometry.pose.pose.orientation.y = qx, qy
            odometry.pose.pose.orientation.z, odometry.pose.pose.orientation.w = qz, qw
            odometry.twist.twist.linear.x = 4.0
            put('/polaris/ins/odometry', stamp, odometry)
            fix = NavSatFix()
            fix.header.stamp = _time(stamp)
            fix.status.status = 2
            put('/polaris/ins/fix', stamp, fix)
            for index, (scan_stamp, _, points) in enumerate(scans):
                if abs(scan_stamp - stamp) < 0.5 / INS_HZ:
                    # The cloud is logged a little after the INS epoch of its stamp.
                    put('/polaris/lidar/points', stamp + 0.002,
                        bridge_cloud(scan_stamp, points, sequence=index))


@pytest.fixture(scope='module')
def scans() -> list:
    return drive(SCANS, seed=11)


@pytest.mark.parametrize('storage', [StoragePlugin.SQLITE3, StoragePlugin.MCAP],
                         ids=['sqlite3', 'mcap'])
def test_a_bag_converts_to_the_same_scans(tmp_path, scans, storage):
    bag = tmp_path / 'drive_bag'
    _write_bag(bag, storage, scans)
    summary = convert(bag, set_name='bags', split='test', root=tmp_path / 'data', log=print)
    assert summary['points_topic'] == '/polaris/lidar/points'
    assert summary['odometry_topic'] == '/polaris/ins/odometry'
    assert (summary['scans'], summary['clouds'], summary['skipped']) == (SCANS, SCANS, 0)
    sequence = LidarSet.open('bags', root=tmp_path / 'data', splits=('test',))['drive_bag']
    assert sequence.meta['source']['kind'] == 'rosbag2'
    assert list(sequence.scans['source_index']) == list(range(SCANS))
    assert not (sequence.scans['flags'] & 1).any()
    lens = lens_centres(1800, 0.035)
    for k, (stamp, pose, points) in enumerate(scans):
        source = points[..., :3].transpose(1, 0, 2).astype(np.float64)
        returns = np.isfinite(source).all(axis=-1)
        raw = sequence.range_raw(k)
        assert np.array_equal(raw > 0, returns)
        distance = np.linalg.norm(source - lens[np.newaxis], axis=-1)
        assert np.abs(raw * RANGE_STEP_M - distance)[returns].max() <= RANGE_STEP_M / 2
        row = sequence.scans[k]
        assert row['stamp_ns'] == round(stamp * 1e9)
        assert (row['east'], row['north']) == pytest.approx(tuple(pose.position[:2]), abs=1e-6)
        assert row['pose_quality'] == QUALITY_RTK and row['speed'] == 4.0
    calibration = sequence.calibration
    assert calibration.mount_xyz_m == pytest.approx(tuple(MOUNT[0]))
    assert calibration.mount_rpy_deg == pytest.approx(tuple(MOUNT[1]), abs=1e-9)
    assert calibration.sweep_s == pytest.approx(0.1, abs=1e-6)
    assert sequence.calibration.points(sequence.range_m(0), 'base').shape == (32, 1800, 3)


def test_the_command_line_converts_and_refuses_to_overwrite(tmp_path, scans):
    bag = tmp_path / 'cli_bag'
    _write_bag(bag, StoragePlugin.MCAP, scans[:3])
    command = [sys.executable, '-m', 'acres_bridge.dataset.convert_bag', str(bag),
               '--set', 'cli', '--sequence', 'first', '--root', str(tmp_path / 'data')]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert '3 scans of 3 clouds (0 skipped)' in done.stdout
    folder = tmp_path / 'data' / 'cli' / 'first'
    before = (folder / 'range-00000.npy').read_bytes()
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and 'exists' in again.stderr
    assert (folder / 'range-00000.npy').read_bytes() == before
    appended = subprocess.run(command + ['--existing', 'append'], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
    assert appended.returncode == 0, appended.stderr
    assert len(LidarSet.open('cli', root=tmp_path / 'data')['first']) == 6
    wrong = subprocess.run(command[:-4] + ['--set', 'cli', '--points-topic', '/nothing',
                                           '--root', str(tmp_path / 'data')],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 1 and 'no points topic /nothing' in wrong.stderr
