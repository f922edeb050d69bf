# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The INS model: one epoch of 40 values with white errors, in the order of InsField."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from acres_bridge.emulator import geodesy
from acres_bridge.emulator.sensors.poses import Pose
from acres_bridge.geometry import quaternion_multiply
from acres_bridge.geometry import quaternion_to_matrix
from acres_bridge.protocol.frames import InsField

_INS_ERROR_SIGMA = np.array([
    0.008, 0.008, 0.015,            # position east, north, up, m
    0.0004, 0.0004, 0.0009,         # attitude about world x, y, z, rad
    0.004, 0.004, 0.004,            # velocity, m/s
    0.0006, 0.0006, 0.0006,         # angular rate, rad/s
    0.012, 0.012, 0.012])           # specific force, m/s2
_INS_COVARIANCE = (0.008 ** 2, 0.008 ** 2, 0.015 ** 2)
_NOT_GEOREFERENCED = np.r_[InsField.UTM_E:InsField.UTM_QW + 1, InsField.LAT:InsField.COV_U + 1,
                           InsField.GRID_ROTATION_DEG, InsField.UTM_ZONE]


def ins_values(layout: dict[str, Any], pose: Pose, *,
               velocity_world: Sequence[float] = (0.0, 0.0, 0.0),
               angular_velocity_world: Sequence[float] = (0.0, 0.0, 0.0),
               acceleration_world: Sequence[float] = (0.0, 0.0, 0.0),
               rng: np.random.Generator, georeferenced: bool | None = None) -> np.ndarray:
    """
    Return one INS epoch: 40 float64 in the order of ``InsField``.

    Values 0 to 31 carry the INS model's errors (white, from ``rng``: about 1 cm in position,
    0.05 degree in attitude), values 32 to 39 are exact. The INS point is base_footprint plus
    ``ins.position_flu_m``; velocity, rate and specific force are those of base_footprint in
    the body frame (+9.81 m/s2 in z at rest).

    :param pose: the true pose of base_footprint.
    :param velocity_world: linear velocity in the world frame, m/s.
    :param angular_velocity_world: angular velocity in the world frame, rad/s.
    :param acceleration_world: linear acceleration in the world frame, m/s2.
    :param georeferenced: default ``layout['georeferenced']``; without a geographic reference
        values 0-6, 16-21, 30 and 31 are NaN and the fix status is -1.
    """
    ins = layout['ins']
    if georeferenced is None:
        georeferenced = bool(layout.get('georeferenced', True))
    rotation = quaternion_to_matrix(pose.orientation)
    body = rotation.T @ np.array([
        velocity_world, angular_velocity_world,
        (acceleration_world[0], acceleration_world[1],
         acceleration_world[2] + geodesy.GRAVITY_MPS2)], dtype=np.float64).T
    error = rng.standard_normal(15) * _INS_ERROR_SIGMA
    measured = body.T.ravel() + error[6:15]
    offset = ins.get('position_flu_m', (0.0, 0.0, 0.0))
    point = pose.position + rotation @ np.asarray(offset, dtype=np.float64)
    x, y, z = (float(v) for v in point + error[0:3])
    half = 0.5 * error[3:6]
    q_error = (float(half[0]), float(half[1]), float(half[2]), 1.0)
    norm = math.sqrt(1.0 + half[0] * half[0] + half[1] * half[1] + half[2] * half[2])
    q_true = tuple(float(v) for v in pose.orientation)
    q_meas = tuple(v / norm for v in quaternion_multiply(q_error, q_true))
    easting, northing = geodesy.world_to_utm(x, y)
    height = z + geodesy.ELLIPSOID_HEIGHT_OFFSET_M
    zone = int(ins.get('utm_zone', geodesy.UTM_ZONE))
    lat, lon = geodesy.utm_to_latlon(easting, northing, datum=ins.get('datum', 'nad83_2011'),
                                     zone=zone)
    q_grid = geodesy.quaternion_world_to_grid(q_meas)
    # In the order of InsField: UTM, body rates, geographic, ENU, status, truth.
    values = np.array([
        easting, northing, height, *q_grid,
        *measured,
        lat, lon, height, *_INS_COVARIANCE,
        *q_meas, x, y, z,
        2.0, geodesy.GRID_ROTATION_DEG, float(zone),
        *(float(v) for v in pose.position), *q_true, float(body[0, 0])], dtype=np.float64)
    if not georeferenced:
        values[_NOT_GEOREFERENCED] = np.nan
        values[InsField.FIX_STATUS] = -1.0
    return values
