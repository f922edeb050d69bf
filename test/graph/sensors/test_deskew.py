# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
De-skewing a moving scan with the xyzirt ``time`` field straightens a wall (issue 13, item 10).

"The points are in the sensor frame at the firing time of their column": a LiDAR that drives
towards a wall at 8 m/s sees the right half of the wall ahead (column 0 on, the first to fire)
0.8 m farther than the left half (the last columns, at the stamp). Put in the world with the
pose of the stamp, the wall is two faces; put in the world with the pose of each point's time
(the stamp plus its ``time``, the ground truth odometry interpolated there), it is one plane.

Everything a user would have: the emulator over real sockets, the sensor bridge in a real rclpy
graph publishing xyzirt clouds and ground truth odometry, and the Hello's LiDAR mount.
"""

from nav_msgs.msg import Odometry
import numpy as np
import pytest
from rclpy.parameter import Parameter
from sensor_msgs.msg import PointCloud2
from support.emulator_probe import JsonChannel
from support.sensor_bridge_graph import Recorder
from support.sensor_bridge_graph import streaming
from support.sensor_bridge_graph import wait_matched
from support.sensor_bridge_graph import wait_until

from acres_bridge.conversions.clock import time_to_stamp
from acres_bridge.conversions.lidar import cloud_to_array
from acres_bridge.geometry import quaternions_to_matrices
from acres_bridge.geometry import rpy_deg_to_quaternion
from acres_bridge.sensors.sensor_node import SensorBridgeNode

pytestmark = pytest.mark.ros

# The north face of the ICSC garage is the plane y = -156 of the world; the Polaris starts 16 m
# north of it, facing it (south), at 8 m/s (the most a teleport gives).
WALL_Y_M = -156.0
START = {'position': [-38.7, -140.0, 0.0], 'orientation': [0.0, 0.0, -0.70710678, 0.70710678]}
SPEED_MPS = 8.0
# Columns within 30 degrees of straight ahead: 0 to 150 and 1650 to 1799 (0.2 degrees each).
AHEAD = np.r_[0:151, 1650:1800]


class Trajectory:
    """The ground truth poses of base_footprint, interpolated linearly between epochs."""

    def __init__(self, odometry: list) -> None:
        self.times = np.array([time_to_stamp(m.header.stamp) for m in odometry])
        self.positions = np.array([[m.pose.pose.position.x, m.pose.pose.position.y,
                                    m.pose.pose.position.z] for m in odometry])
        self.quaternions = np.array([[m.pose.pose.orientation.x, m.pose.pose.orientation.y,
                                      m.pose.pose.orientation.z, m.pose.pose.orientation.w]
                                     for m in odometry])

    def at(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the rotations and positions at ``times`` (inside the recorded span)."""
        assert self.times[0] <= times.min() and times.max() <= self.times[-1]
        positions = np.stack([np.interp(times, self.times, self.positions[:, k])
                              for k in range(3)], axis=1)
        quaternions = np.stack([np.interp(times, self.times, self.quaternions[:, k])
                                for k in range(4)], axis=1)
        return quaternions_to_matrices(quaternions), positions


def _plane_rms(points: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Return the RMS distance of points from their best plane, its normal and centroid."""
    centroid = points.mean(axis=0)
    _, _, axes = np.linalg.svd(points - centroid, full_matrices=False)
    normal = axes[-1]
    return float(np.sqrt(np.mean(((points - centroid) @ normal) ** 2))), normal, centroid


@pytest.mark.parametrize('mode, sweep', [('game', False), ('core', True)])
def test_a_moving_lidar_sees_a_bent_wall_that_de_skewing_straightens(
        emulator_factory, ros_context, spinning, mode, sweep):
    emulator = emulator_factory(vehicles=('polaris',), lockstep=True, mode=mode, sweep=sweep)
    node = spinning.add(SensorBridgeNode(
        context=ros_context, parameter_overrides=[
            Parameter('port', value=emulator.sensor_ports[0]),
            Parameter('point_fields', value='xyzirt')]))
    recorder = Recorder(ros_context, {'lidar/points': PointCloud2,
                                      'ground_truth/odometry': Odometry})
    spinning.add(recorder.node)
    try:
        wait_until(lambda: streaming(node.bridge), what='the Hello')
        hello = node.bridge.hello
        publishers = node.bridge.publishers
        wait_matched([publishers['lidar/points'], publishers['ground_truth/odometry']])
        channel = JsonChannel(emulator.control_port)
        reply = channel.call('set_entity_state', entity='polaris', pose=START,
                             twist={'linear': [0.0, -SPEED_MPS, 0.0]})
        assert reply['result'] == 1, reply
        # The teleport happens at the first step; the second scan sweeps after it.
        assert channel.call('step', steps=24)['result'] == 1
        recorder.wait_counts({'lidar/points': 2, 'ground_truth/odometry': 20})
        channel.close()
        cloud = recorder.messages['lidar/points'][1]
        trajectory = Trajectory(recorder.messages['ground_truth/odometry'])
    finally:
        spinning.shutdown()
        node.destroy_node()
        recorder.node.destroy_node()

    points = cloud_to_array(cloud)
    xyz = np.stack([points['x'], points['y'], points['z']], axis=-1).astype(np.float64)
    times = points['time'][:, 0].astype(np.float64)
    stamp = time_to_stamp(cloud.header.stamp)
    # The bridge's times: column 0 fired one scan period before the stamp, the last at it.
    assert times[0] == pytest.approx(-0.1 * 1799 / 1800, abs=1e-6) and times[-1] == 0.0
    mount_rotation = quaternions_to_matrices(
        np.array(rpy_deg_to_quaternion(hello.lidar.rpy_deg)))
    mount_position = np.array(hello.lidar.position_flu_m)
    in_body = xyz @ mount_rotation.T + mount_position               # base_footprint frame

    def to_world(column_times: np.ndarray) -> np.ndarray:
        rotations, positions = trajectory.at(column_times)
        return np.einsum('cij,crj->cri', rotations, in_body) + positions[:, None, :]

    skewed = to_world(np.full(len(times), stamp))     # every point with the pose of the stamp
    deskewed = to_world(stamp + times)                # each point with the pose of its time
    ground_z = trajectory.at(np.array([stamp]))[1][0, 2]
    # The wall: the returns ahead well above the ground (the same beams in both clouds).
    wall = np.zeros(xyz.shape[:2], bool)
    wall[AHEAD] = np.isfinite(xyz[AHEAD, :, 0]) & (skewed[AHEAD, :, 2] > ground_z + 0.5)
    assert wall.sum() > 2000

    before, _, _ = _plane_rms(skewed[wall])
    after, normal, centroid = _plane_rms(deskewed[wall])
    # Raw: two faces 0.8 m apart (the right half fired 0.1 s earlier), which the best plane
    # can only split; de-skewed: one plane, the wall's own, within the range noise (2.2 mm)
    # and the interpolation of the poses.
    assert before > 0.1, (before, after)
    assert after < 0.01, (before, after)
    assert abs(normal[1]) > 0.999
    assert centroid[1] == pytest.approx(WALL_Y_M, abs=0.03)
    right, left = skewed[:151][wall[:151]], skewed[1650:][wall[1650:]]
    assert np.median(right[:, 1]) - np.median(left[:, 1]) == pytest.approx(
        -SPEED_MPS * 0.1, abs=0.1)
