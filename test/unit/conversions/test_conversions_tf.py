# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The Hello's mounts as static transforms, odometry as a transform, frame ids."""

import copy

from builtin_interfaces.msg import Time
from nav_msgs.msg import Odometry
import numpy as np
from support.sensor_frames import hello_frame
from support.sensor_frames import polaris_hello_dict

from acres_bridge.conversions.clock import make_header
from acres_bridge.conversions.tf import AgentFrames
from acres_bridge.conversions.tf import hello_to_static_transforms
from acres_bridge.conversions.tf import odometry_to_transform
from acres_bridge.conversions.tf import OPTICAL_ROTATION_XYZW
from acres_bridge.conversions.tf import prefixed
from acres_bridge.emulator.sensors.layouts import hello_layout
from acres_bridge.geometry import quaternion_to_matrix
from acres_bridge.geometry import rpy_deg_to_matrix
from acres_bridge.geometry import rpy_deg_to_quaternion
from acres_bridge.protocol.hello import encode_hello_payload
from acres_bridge.protocol.hello import parse_hello


def _tree(transforms) -> dict[str, tuple]:
    return {t.child_frame_id: (
        t.header.frame_id,
        (t.transform.translation.x, t.transform.translation.y, t.transform.translation.z),
        (t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z,
         t.transform.rotation.w)) for t in transforms}


def test_the_polaris_static_tree_follows_its_hello():
    hello = hello_frame().hello
    stamp = Time(sec=0, nanosec=0)
    transforms = hello_to_static_transforms(hello, stamp, frame_prefix='polaris')
    tree = _tree(transforms)
    assert set(tree) == {'polaris/base_link', 'polaris/lidar', 'polaris/camera',
                         'polaris/camera_optical_frame', 'polaris/imu', 'polaris/gnss'}
    assert all(t.header.stamp == stamp for t in transforms)
    base = 'polaris/base_footprint'
    assert tree['polaris/base_link'] == (base, (1.14808, 0.0, 0.65536), (0.0, 0.0, 0.0, 1.0))
    assert tree['polaris/lidar'][:2] == (base, (2.5, 0.0, 2.039))
    assert tree['polaris/lidar'][2] == rpy_deg_to_quaternion((-1.518, 5.317, 0.0))
    assert tree['polaris/camera'][:2] == (base, (2.745, 0.606, 1.887))
    assert tree['polaris/camera'][2] == rpy_deg_to_quaternion((-3.49, 16.52, -2.63))
    assert tree['polaris/camera_optical_frame'] == (
        'polaris/camera', (0.0, 0.0, 0.0), OPTICAL_ROTATION_XYZW)
    assert tree['polaris/imu'] == (base, (0.95, -0.45, 0.7), (0.0, 0.0, 0.0, 1.0))
    assert tree['polaris/gnss'] == (base, (1.1, 0.0, 2.15), (0.0, 0.0, 0.0, 1.0))


def test_the_optical_frame_looks_along_x_with_x_right_and_y_down():
    rotation = quaternion_to_matrix(OPTICAL_ROTATION_XYZW)
    assert np.allclose(rotation @ [0, 0, 1], [1, 0, 0])    # optical z = forward
    assert np.allclose(rotation @ [1, 0, 0], [0, -1, 0])   # optical x = right
    assert np.allclose(rotation @ [0, 1, 0], [0, 0, -1])   # optical y = down


def test_the_optical_chain_is_the_camera_mount_then_the_optical_axes():
    # optical -> base_footprint = R(camera rpy) @ (optical -> camera FLU), as the emulator's
    # camera model renders: columns are the optical x, y, z axes in FLU.
    flu_from_optical = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
    hello = hello_frame().hello
    tree = _tree(hello_to_static_transforms(hello, Time()))
    chain = quaternion_to_matrix(tree['camera'][2]) @ quaternion_to_matrix(
        tree['camera_optical_frame'][2])
    assert np.allclose(chain, rpy_deg_to_matrix(hello.camera.rpy_deg) @ flu_from_optical)


def test_disabled_sensors_get_no_frames_and_the_lidar_frame_id_comes_from_the_hello():
    layout = hello_layout('polaris', 'polaris', mode='core')
    layout['lidar']['frame_id'] = 'helios'
    hello = parse_hello(encode_hello_payload(layout))
    tree = _tree(hello_to_static_transforms(hello, Time()))
    assert set(tree) == {'base_link', 'helios', 'imu', 'gnss'}
    bare = copy.deepcopy(polaris_hello_dict())
    for sensor in ('lidar', 'camera', 'ins'):
        bare[sensor]['enabled'] = False
    tree = _tree(hello_to_static_transforms(parse_hello(encode_hello_payload(bare)), Time()))
    assert set(tree) == {'base_link'}


def test_frame_ids_carry_the_prefix():
    hello = hello_frame().hello
    assert AgentFrames.of(hello, 'maxxum') == AgentFrames(
        'maxxum/base_footprint', 'maxxum/base_link', 'maxxum/lidar', 'maxxum/camera',
        'maxxum/camera_optical_frame', 'maxxum/imu', 'maxxum/gnss')
    assert AgentFrames.of(None).lidar == 'lidar'
    assert prefixed('', 'imu') == 'imu'
    assert prefixed('a/b/', 'imu') == 'a/b/imu'


def test_odometry_becomes_the_transform_of_its_child_frame():
    odometry = Odometry(header=make_header(4.25, 'world'), child_frame_id='polaris/base_footprint')
    odometry.pose.pose.position.x, odometry.pose.pose.position.y = 3.0, -4.0
    odometry.pose.pose.position.z = 0.5
    odometry.pose.pose.orientation.z, odometry.pose.pose.orientation.w = 0.6, 0.8
    transform = odometry_to_transform(odometry)
    assert transform.header == odometry.header
    assert transform.child_frame_id == 'polaris/base_footprint'
    assert _tree([transform])['polaris/base_footprint'] == (
        'world', (3.0, -4.0, 0.5), (0.0, 0.0, 0.6, 0.8))
