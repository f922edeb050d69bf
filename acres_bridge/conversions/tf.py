# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Frame ids and transforms: the Hello's mounts as static transforms, odometry as a transform.

The static tree of one agent (every name with the frame prefix)::

    base_footprint -> base_link             body_origin_flu_m, no rotation
    base_footprint -> <lidar.frame_id>      lidar.position_flu_m, lidar.rpy_deg    (lidar on)
    base_footprint -> camera                camera.position_flu_m, camera.rpy_deg  (camera on)
    camera         -> camera_optical_frame  z forward, x right, y down             (camera on)
    base_footprint -> imu                   ins.imu_position_flu_m, no rotation     (INS on)
    base_footprint -> gnss                  ins.gnss_antenna_flu_m, no rotation     (INS on)

Mounts are FLU positions from base_footprint in metres and roll, pitch, yaw in degrees about
the fixed axes, R = Rz(yaw) Ry(pitch) Rx(roll); a transform's rotation takes vectors from the
child frame into the parent frame, as tf2's do. A sensor the Hello calls disabled gets no
frame (ACRES Core has no camera). The world frame is shared by every agent and carries no
prefix.
"""

from collections.abc import Sequence
import dataclasses

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Quaternion
from geometry_msgs.msg import Transform
from geometry_msgs.msg import TransformStamped
from geometry_msgs.msg import Vector3
from nav_msgs.msg import Odometry
from std_msgs.msg import Header

from acres_bridge.geometry import rpy_deg_to_quaternion
from acres_bridge.protocol.hello import Hello

# Camera (FLU) -> optical frame: the optical axes are z = x_flu, x = -y_flu, y = -z_flu.
OPTICAL_ROTATION_XYZW = (-0.5, 0.5, -0.5, 0.5)


def prefixed(frame_prefix: str, name: str) -> str:
    """Return a frame id with a prefix and a slash: ``polaris`` + ``lidar`` = ``polaris/lidar``."""
    prefix = frame_prefix.strip('/')
    return f'{prefix}/{name}' if prefix else name


@dataclasses.dataclass(frozen=True, slots=True)
class AgentFrames:
    """The frame ids of one agent, prefixed; build them with :meth:`of`."""

    base_footprint: str
    base_link: str
    lidar: str
    camera: str
    camera_optical: str
    imu: str
    gnss: str

    @classmethod
    def of(cls, hello: Hello | None, frame_prefix: str = '') -> 'AgentFrames':
        """Return the frame ids of the Hello's agent (the LiDAR frame id from the Hello)."""
        lidar = hello.lidar.frame_id if hello is not None and hello.lidar.frame_id else 'lidar'
        return cls(*(prefixed(frame_prefix, name) for name in (
            'base_footprint', 'base_link', lidar, 'camera', 'camera_optical_frame', 'imu',
            'gnss')))


def make_transform(parent: str, child: str, stamp: Time, translation: Sequence[float],
                   rotation_xyzw: Sequence[float] = (0.0, 0.0, 0.0, 1.0)) -> TransformStamped:
    """Return the transform of ``child`` in ``parent`` (it maps child vectors to parent)."""
    x, y, z = (float(value) for value in translation)
    qx, qy, qz, qw = (float(value) for value in rotation_xyzw)
    return TransformStamped(
        header=Header(stamp=stamp, frame_id=parent), child_frame_id=child,
        transform=Transform(translation=Vector3(x=x, y=y, z=z),
                            rotation=Quaternion(x=qx, y=qy, z=qz, w=qw)))


def hello_to_static_transforms(hello: Hello, stamp: Time, *,
                               frame_prefix: str = '') -> list[TransformStamped]:
    """
    Return the static transforms of an agent's Hello (the tree in the module docstring).

    :param stamp: the stamp of every transform (tf2 ignores the stamps of static transforms).
    :param frame_prefix: prepended to every frame id (``polaris`` -> ``polaris/lidar``).
    """
    frames = AgentFrames.of(hello, frame_prefix)
    base = frames.base_footprint
    transforms = [make_transform(base, frames.base_link, stamp, hello.body_origin_flu_m)]
    if hello.lidar.enabled:
        transforms.append(make_transform(base, frames.lidar, stamp, hello.lidar.position_flu_m,
                                         rpy_deg_to_quaternion(hello.lidar.rpy_deg)))
    if hello.camera.enabled:
        transforms.append(make_transform(
            base, frames.camera, stamp, hello.camera.position_flu_m,
            rpy_deg_to_quaternion(hello.camera.rpy_deg)))
        transforms.append(make_transform(frames.camera, frames.camera_optical, stamp,
                                         (0.0, 0.0, 0.0), OPTICAL_ROTATION_XYZW))
    if hello.ins.enabled:
        transforms.append(make_transform(base, frames.imu, stamp, hello.ins.imu_position_flu_m))
        transforms.append(make_transform(base, frames.gnss, stamp,
                                         hello.ins.gnss_antenna_flu_m))
    return transforms


def odometry_to_transform(odometry: Odometry) -> TransformStamped:
    """Return the transform of an odometry's child frame in its frame, with its stamp."""
    pose = odometry.pose.pose
    return TransformStamped(
        header=odometry.header, child_frame_id=odometry.child_frame_id,
        transform=Transform(
            translation=Vector3(x=pose.position.x, y=pose.position.y, z=pose.position.z),
            rotation=pose.orientation))
