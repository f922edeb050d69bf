# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Organised ``sensor_msgs/PointCloud2`` clouds, ``nav_msgs/Odometry`` and ``/tf_static`` to arrays.

The functions read messages by their field names only (``height``, ``fields``, ``data``, ...),
so they take rclpy's messages and the rosbags library's alike and import neither. A cloud is
organised when one axis is the rings and the other the columns: the bridge's (height = columns,
width = rings) and drivers' such as the RoboSense one (height = rings, width = columns). A
``ring`` field tells which axis is which; without one, the shorter axis is the rings.
"""

import dataclasses
import math
from typing import Any, Iterable

import numpy as np

from acres_bridge.dataset.format import DatasetError
from acres_bridge.geometry import matrix_to_rpy_deg
from acres_bridge.geometry import quaternion_to_matrix

# sensor_msgs/PointField datatypes
_TYPES = {1: 'i1', 2: 'u1', 3: 'i2', 4: 'u2', 5: 'i4', 6: 'u4', 7: 'f4', 8: 'f8'}
# Time fields of common drivers: name -> seconds per unit (None: absolute seconds).
_TIME_FIELDS = (('time', 1.0), ('t', 1e-9), ('timestamp', None), ('offset_time', 1e-9))


@dataclasses.dataclass(frozen=True)
class OrganisedCloud:
    """
    One scan as arrays in the source's column order: (rings, columns) for every layer.

    :ivar xyz: float32 (rings, columns, 3), sensor frame, NaN where no return; a read-only
        view of the message's data where its layout allows.
    :ivar intensity: (rings, columns) in the cloud's type, or None without intensity.
    :ivar time_s: float64 (rings, columns) seconds relative to the stamp, or None.
    """

    stamp_ns: int
    frame_id: str
    xyz: np.ndarray
    intensity: np.ndarray | None
    time_s: np.ndarray | None

    @property
    def rings(self) -> int:
        return self.xyz.shape[0]

    @property
    def columns(self) -> int:
        return self.xyz.shape[1]


def stamp_ns_of(header: Any) -> int:
    """Return the ``builtin_interfaces/Time`` of a header as integer nanoseconds."""
    stamp = header.stamp
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def cloud_to_organised(cloud: Any) -> OrganisedCloud:
    """
    Return the arrays of an organised cloud with fields x, y, z (and intensity, ring, time).

    :raises DatasetError: for a cloud that is not organised, lacks x, y or z, is big-endian,
        or whose data is shorter than height x row_step.
    """
    height, width = int(cloud.height), int(cloud.width)
    if height < 2 or width < 2:
        raise DatasetError(f'a cloud of {height} x {width} points is not organised (rings x '
                           'columns); the recorder needs an organised cloud')
    if cloud.is_bigendian:
        raise DatasetError('a big-endian cloud is not supported')
    fields = {field.name: field for field in cloud.fields}
    missing = [name for name in ('x', 'y', 'z') if name not in fields]
    if missing:
        raise DatasetError(f'the cloud has no field {", ".join(missing)}')
    point_step, row_step = int(cloud.point_step), int(cloud.row_step)
    data = cloud.data
    nbytes = len(data) if not isinstance(data, np.ndarray) else data.nbytes
    if row_step < width * point_step or nbytes < height * row_step:
        raise DatasetError(f'the cloud has {nbytes} bytes for {height} rows of {row_step} '
                           f'bytes ({width} points of {point_step})')
    names, formats, offsets = [], [], []
    for name in ('x', 'y', 'z', 'intensity', 'ring') + tuple(n for n, _ in _TIME_FIELDS):
        field = fields.get(name)
        if field is None or int(field.datatype) not in _TYPES or int(field.count) != 1:
            continue
        names.append(name)
        formats.append('<' + _TYPES[int(field.datatype)])
        offsets.append(int(field.offset))
    dtype = np.dtype({'names': names, 'formats': formats, 'offsets': offsets,
                      'itemsize': point_step})
    raw = np.frombuffer(data, dtype=np.uint8, count=height * row_step)
    rows = raw.reshape(height, row_step)[:, :width * point_step]
    points = np.ascontiguousarray(rows).view(dtype).reshape(height, width)
    rings_on_width = _rings_on_width(points, height, width)
    if rings_on_width:
        points = points.T
    xyz = _xyz_view(points, fields)
    if xyz is None:
        xyz = np.stack([points['x'], points['y'], points['z']], axis=-1).astype(np.float32)
    intensity = points['intensity'] if 'intensity' in names else None
    stamp_ns = stamp_ns_of(cloud.header)
    time_s = None
    for name, scale in _TIME_FIELDS:
        if name in names:
            values = points[name].astype(np.float64)
            if scale is None:
                # Absolute seconds (RoboSense): relative to the stamp.
                values = values - stamp_ns * 1e-9
            else:
                values = values * scale
            time_s = values
            break
    return OrganisedCloud(stamp_ns, str(cloud.header.frame_id), xyz, intensity, time_s)


def _xyz_view(points: np.ndarray, fields: dict[str, Any]) -> np.ndarray | None:
    """Return x, y, z as one float32 view (no copy) when they are consecutive float32s."""
    offsets = [int(fields[name].offset) for name in ('x', 'y', 'z')]
    if any(int(fields[name].datatype) != 7 for name in ('x', 'y', 'z')) or offsets != [
            offsets[0], offsets[0] + 4, offsets[0] + 8] or points.dtype.itemsize % 4:
        return None
    return np.lib.stride_tricks.as_strided(
        points['x'], shape=points.shape + (3,), strides=points.strides + (4,),
        writeable=False)


def _rings_on_width(points: np.ndarray, height: int, width: int) -> bool:
    if 'ring' in (points.dtype.names or ()):
        ring = points['ring']
        along_width = np.count_nonzero(np.diff(ring[0].astype(np.int64)))
        along_height = np.count_nonzero(np.diff(ring[:, 0].astype(np.int64)))
        if along_width != along_height:
            return along_width > along_height
    return width < height


@dataclasses.dataclass(frozen=True, slots=True)
class OdometrySample:
    """The pose and twist of base_footprint at one stamp (Odometry, child base_footprint)."""

    stamp_ns: int
    position: tuple[float, float, float]
    orientation_xyzw: tuple[float, float, float, float]
    linear: tuple[float, float, float]
    angular: tuple[float, float, float]


def odometry_to_sample(odometry: Any) -> OdometrySample:
    """Return the values of a ``nav_msgs/Odometry`` message the scan table needs."""
    pose, twist = odometry.pose.pose, odometry.twist.twist
    return OdometrySample(
        stamp_ns_of(odometry.header),
        (float(pose.position.x), float(pose.position.y), float(pose.position.z)),
        (float(pose.orientation.x), float(pose.orientation.y), float(pose.orientation.z),
         float(pose.orientation.w)),
        (float(twist.linear.x), float(twist.linear.y), float(twist.linear.z)),
        (float(twist.angular.x), float(twist.angular.y), float(twist.angular.z)))


def transforms_of(message: Any) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """Return (parent, child, translation, rotation matrix) of each transform of a TFMessage."""
    out = []
    for transform in message.transforms:
        translation = transform.transform.translation
        rotation = transform.transform.rotation
        try:
            matrix = quaternion_to_matrix((rotation.x, rotation.y, rotation.z, rotation.w))
        except ValueError:
            continue
        out.append((str(transform.header.frame_id).lstrip('/'),
                    str(transform.child_frame_id).lstrip('/'),
                    np.array([translation.x, translation.y, translation.z], np.float64),
                    matrix))
    return out


def mount_of(transforms: Iterable[tuple[str, str, np.ndarray, np.ndarray]], frame_id: str,
             ) -> tuple[list[float], list[float]] | None:
    """
    Return (xyz, rpy_deg) of ``frame_id`` in its base_footprint, or None when not known.

    The chain is walked from ``frame_id`` to the first frame named ``base_footprint`` (or
    ``<prefix>/base_footprint``); without one, to the root of the tree.
    """
    parent_of = {child: (parent, translation, rotation)
                 for parent, child, translation, rotation in transforms}
    frame = frame_id.lstrip('/')
    if frame not in parent_of:
        return None
    rotation, translation = np.eye(3), np.zeros(3)
    seen = set()
    while frame in parent_of and not _is_base(frame) and frame not in seen:
        seen.add(frame)
        parent, step_translation, step_rotation = parent_of[frame]
        translation = step_rotation @ translation + step_translation
        rotation = step_rotation @ rotation
        frame = parent
    return [float(v) for v in translation], matrix_to_rpy_deg(rotation)


def _is_base(frame: str) -> bool:
    return frame == 'base_footprint' or frame.endswith('/base_footprint')


def finite_or_nan(value: float) -> float:
    """Return a float, NaN for anything that is not finite."""
    value = float(value)
    return value if math.isfinite(value) else float('nan')
