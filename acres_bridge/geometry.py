# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Rotations: quaternions, roll-pitch-yaw and rotation matrices, one convention for the package.

Pure Python and numpy, no ROS, so every layer (conversions, dataset, emulator, demo) may
import it. The conventions, stated once:

* Axes are REP 103's: right-handed, x forward (east in a world frame), y left (north), z up;
  a positive angle turns counter-clockwise about its axis, so a yaw of +90 degrees takes x to y.
* Roll, pitch and yaw turn about the fixed axes x, y, z in that order:
  R = Rz(yaw) Ry(pitch) Rx(roll), as the contract's ``rpy_deg`` says. Names ending in ``_deg``
  take or give degrees; the others radians.
* A quaternion is (x, y, z, w), the field order of geometry_msgs/Quaternion. It is normalised
  before use; a zero (or NaN) one raises ``ValueError``.
* A rotation takes vectors of the child (body, sensor) frame into the parent frame, as a tf2
  transform's rotation does: ``v_parent = R @ v_child``.
"""

from collections.abc import Sequence
import math

import numpy as np

Quaternion = tuple[float, float, float, float]


def quaternion_multiply(a: Sequence[float], b: Sequence[float]) -> Quaternion:
    """Return the Hamilton product a * b (apply b, then a)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz)


def quaternion_from_yaw(yaw_rad: float) -> Quaternion:
    """Return the quaternion of a rotation about z."""
    return (0.0, 0.0, math.sin(yaw_rad / 2.0), math.cos(yaw_rad / 2.0))


def quaternion_yaw(q: Sequence[float]) -> float:
    """Return the yaw (rotation about z, from x towards y) of a quaternion, in radians."""
    x, y, z, w = q
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def quaternion_to_matrix(q: Sequence[float]) -> np.ndarray:
    """
    Return the 3 x 3 rotation matrix of a quaternion (x, y, z, w), normalised first.

    :raises ValueError: for a quaternion of length 0 or NaN.
    """
    x, y, z, w = (float(v) for v in q)
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    if not norm > 0.0:
        raise ValueError('a rotation quaternion of length 0')
    x, y, z, w = x / norm, y / norm, z / norm, w / norm
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def quaternions_to_matrices(quaternions: np.ndarray) -> np.ndarray:
    """Return the rotations (..., 3, 3) of quaternions (..., 4), each normalised first."""
    quaternions = np.asarray(quaternions, dtype=np.float64)
    x, y, z, w = np.moveaxis(
        quaternions / np.linalg.norm(quaternions, axis=-1, keepdims=True), -1, 0)
    return np.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
        2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
        2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        axis=-1).reshape(quaternions.shape[:-1] + (3, 3))


def matrix_to_quaternion(m: np.ndarray) -> Quaternion:
    """Return the unit quaternion (x, y, z, w), with w >= 0, of a 3 x 3 rotation matrix."""
    m = np.asarray(m, dtype=np.float64)
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0.0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = ((m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s,
             0.25 * s)
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = (0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s,
             (m[2, 1] - m[1, 2]) / s)
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = ((m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s,
             (m[0, 2] - m[2, 0]) / s)
    else:
        s = 2.0 * math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = ((m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s,
             (m[1, 0] - m[0, 1]) / s)
    sign = -1.0 if q[3] < 0.0 else 1.0
    return tuple(float(sign * v) for v in q)


def rpy_to_quaternion(roll: float, pitch: float, yaw: float) -> Quaternion:
    """Return the unit quaternion (x, y, z, w) of R = Rz(yaw) Ry(pitch) Rx(roll), radians."""
    cr, sr = math.cos(roll / 2.0), math.sin(roll / 2.0)
    cp, sp = math.cos(pitch / 2.0), math.sin(pitch / 2.0)
    cy, sy = math.cos(yaw / 2.0), math.sin(yaw / 2.0)
    return (sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy)


def rpy_deg_to_quaternion(rpy_deg: Sequence[float]) -> Quaternion:
    """Return the unit quaternion (x, y, z, w) of roll, pitch, yaw in degrees."""
    return rpy_to_quaternion(*(math.radians(float(value)) for value in rpy_deg))


def rpy_deg_to_matrix(rpy_deg: Sequence[float]) -> np.ndarray:
    """Return R = Rz(yaw) Ry(pitch) Rx(roll) of roll, pitch, yaw in degrees."""
    roll, pitch, yaw = (math.radians(float(v)) for v in rpy_deg)
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr]])


def rpy_to_matrices(roll: np.ndarray, pitch: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """Return R = Rz(yaw) Ry(pitch) Rx(roll) of arrays of radians: shape (..., 3, 3)."""
    cr, sr = np.cos(roll), np.sin(roll)
    cp, sp = np.cos(pitch), np.sin(pitch)
    cy, sy = np.cos(yaw), np.sin(yaw)
    cy_sp, sy_sp = cy * sp, sy * sp
    out = np.empty(np.shape(roll) + (3, 3))
    out[..., 0, 0] = cy * cp
    out[..., 0, 1] = cy_sp * sr - sy * cr
    out[..., 0, 2] = cy_sp * cr + sy * sr
    out[..., 1, 0] = sy * cp
    out[..., 1, 1] = sy_sp * sr + cy * cr
    out[..., 1, 2] = sy_sp * cr - cy * sr
    out[..., 2, 0] = -sp
    out[..., 2, 1] = cp * sr
    out[..., 2, 2] = cp * cr
    return out


def matrix_to_rpy_deg(m: np.ndarray) -> list[float]:
    """Return [roll, pitch, yaw] in degrees of a rotation R = Rz(yaw) Ry(pitch) Rx(roll)."""
    m = np.asarray(m, dtype=np.float64)
    pitch = math.asin(max(-1.0, min(1.0, -float(m[2, 0]))))
    roll = math.atan2(float(m[2, 1]), float(m[2, 2]))
    yaw = math.atan2(float(m[1, 0]), float(m[0, 0]))
    return [math.degrees(roll), math.degrees(pitch), math.degrees(yaw)]
