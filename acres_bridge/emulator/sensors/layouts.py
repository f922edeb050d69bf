# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The Hello layouts of the vehicles, hardware shifts and the sensor mounts in base_footprint."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from acres_bridge.emulator.sensors.poses import Pose
from acres_bridge.geometry import matrix_to_rpy_deg
from acres_bridge.geometry import quaternion_to_matrix
from acres_bridge.geometry import rpy_deg_to_matrix

SCHEMA = 'acres-sensor-stream-1'
MOUNT_CONVENTION = 'FLU mounts from base_footprint; rpy about fixed axes, R = Rz Ry Rx'

# Camera optical frame (z forward, x right, y down) -> camera FLU frame.
_FLU_FROM_OPTICAL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])

# ---------------------------------------------------------------------------------------------
# Hello layouts

_LAYOUTS: dict[str, dict[str, Any]] = {
    'polaris': {
        'body_origin_flu_m': [1.14808, 0, 0.65536],
        'lidar': {
            'enabled': True, 'frame_id': 'lidar', 'hz': 10,
            'columns': 1800, 'rings': 32, 'range_m': 161.3,
            'azimuth_order': 'cw',
            'position_flu_m': [2.5, 0, 2.039],
            'rpy_deg': [-1.518, 5.317, 0],
        },
        'camera': {
            'enabled': True, 'hz': 10,
            'width': 896, 'height': 512,
            'fx': 599.526, 'fy': 592.378, 'cx': 440.130, 'cy': 270.805,
            'distortion_model': 'plumb_bob',
            'd': [-0.55389, 0.40842, -0.0099785, 0.0044239, -0.16673],
            'encoding': 'bgr8',
            'position_flu_m': [2.745, 0.606, 1.887],
            'rpy_deg': [-3.49, 16.52, -2.63],
        },
        'ins': {
            'enabled': True, 'hz': 100,
            'position_flu_m': [0, 0, 0],
            'utm_zone': 16, 'datum': 'nad83_2011',
            'imu_position_flu_m': [0.95, -0.45, 0.7],
            'gnss_antenna_flu_m': [1.1, 0, 2.15],
        },
    },
    # A Case IH Maxxum tractor: an 8-ring LiDAR on the cab roof, a forward camera without a lens
    # model, and the INS the game adds to a vehicle without one (it reports base_footprint).
    'maxxum': {
        'body_origin_flu_m': [1.35, 0, 0.95],
        'lidar': {
            'enabled': True, 'frame_id': 'lidar', 'hz': 10,
            'columns': 180, 'rings': 8, 'range_m': 100.0,
            'azimuth_order': 'cw',
            'position_flu_m': [2.05, 0, 3.15],
            'rpy_deg': [0, 4.0, 0],
        },
        'camera': {
            'enabled': True, 'hz': 10,
            'width': 640, 'height': 480,
            'fx': 480.0, 'fy': 480.0, 'cx': 319.5, 'cy': 239.5,
            'distortion_model': 'plumb_bob',
            'd': [0.0, 0.0, 0.0, 0.0, 0.0],
            'encoding': 'bgr8',
            'position_flu_m': [2.3, 0, 2.95],
            'rpy_deg': [0, 14.0, 0],
        },
        'ins': {
            'enabled': True, 'hz': 100,
            'position_flu_m': [0, 0, 0],
            'utm_zone': 16, 'datum': 'nad83_2011',
            'imu_position_flu_m': [0, 0, 0],
            'gnss_antenna_flu_m': [0, 0, 0],
        },
    },
}

VEHICLES = tuple(_LAYOUTS)


def hello_layout(vehicle: str, agent: str, *, mode: str = 'game',
                 georeferenced: bool = True) -> dict[str, Any]:
    """
    Return the Hello object of an agent: every key of the seed's schema.

    :param vehicle: 'polaris' or 'maxxum'.
    :param agent: the name of the agent.
    :param mode: 'game', or 'core' (ACRES Core: ``camera.enabled`` is false).
    :param georeferenced: whether the map has a geographic reference.
    :return: a new dict, safe to change.
    :raises ValueError: for an unknown vehicle or mode.
    """
    if vehicle not in _LAYOUTS:
        raise ValueError(f'unknown vehicle {vehicle!r}; expected one of {", ".join(VEHICLES)}')
    if mode not in ('game', 'core'):
        raise ValueError(f"unknown mode {mode!r}; expected 'game' or 'core'")
    sensors = copy.deepcopy(_LAYOUTS[vehicle])
    if mode == 'core':
        sensors['camera']['enabled'] = False
    return {
        'schema': SCHEMA,
        'agent': agent,
        'vehicle': vehicle,
        'georeferenced': bool(georeferenced),
        'mount_convention': MOUNT_CONVENTION,
        'body_origin_flu_m': sensors['body_origin_flu_m'],
        'lidar': sensors['lidar'],
        'camera': sensors['camera'],
        'ins': sensors['ins'],
    }


def shifted_layout(layout: dict[str, Any], shift: dict[str, Any]) -> dict[str, Any]:
    """
    Return a copy of a layout with the mount offsets of a hardware shift applied.

    The Hello keeps the calibrated mounts; the engine passes the shifted copy to the sensor
    models. A rotation offset turns the mount about the fixed base axes: R = R(offset) R(mount).

    :param shift: the object of ``set_vehicle_shift`` (missing keys count as zero).
    """
    shifted = copy.deepcopy(layout)
    for sensor in ('lidar', 'camera'):
        offset = [float(v) for v in shift.get(f'{sensor}_offset_m', (0, 0, 0))]
        rpy = [float(v) for v in shift.get(f'{sensor}_offset_rpy_deg', (0, 0, 0))]
        section = shifted[sensor]
        section['position_flu_m'] = [float(p) + o
                                     for p, o in zip(section['position_flu_m'], offset)]
        if any(rpy):
            rotation = rpy_deg_to_matrix(rpy) @ rpy_deg_to_matrix(section['rpy_deg'])
            section['rpy_deg'] = matrix_to_rpy_deg(rotation)
    return shifted


def enabled_section(layout: dict[str, Any], sensor: str) -> dict[str, Any]:
    """Return a sensor's section of a layout; ValueError when the sensor is not enabled."""
    section = layout[sensor]
    if not section.get('enabled', False):
        raise ValueError(f'the layout has no enabled {sensor}')
    return section


def mount(section: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """
    Return the rotation and the position of a sensor's frame in base_footprint.

    A camera's frame is its optical frame (z forward, x right, y down).
    """
    rotation = rpy_deg_to_matrix(section['rpy_deg'])
    if 'fx' in section:
        rotation = rotation @ _FLU_FROM_OPTICAL
    return rotation, np.asarray(section['position_flu_m'], dtype=np.float64)


def mount_in_world(body_pose: Pose, mount_rotation: np.ndarray,
                   mount_position: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the rotation sensor -> world and the world position of a mount."""
    body_rotation = quaternion_to_matrix(body_pose.orientation)
    return (body_rotation @ mount_rotation,
            body_pose.position + body_rotation @ mount_position)
