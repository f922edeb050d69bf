# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The Pose of the sensor models, the named places of the tile and the utm frame."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np

from acres_bridge.emulator import geodesy
from acres_bridge.emulator.terrain import ground_height
from acres_bridge.geometry import quaternion_from_yaw
from acres_bridge.geometry import quaternion_to_matrix
from acres_bridge.geometry import quaternion_yaw


@dataclasses.dataclass(frozen=True, eq=False)
class Pose:
    """
    A pose in the world frame.

    :ivar position: (3,) metres, ENU.
    :ivar orientation: (4,) quaternion x, y, z, w: body FLU -> world.
    """

    position: np.ndarray
    orientation: np.ndarray = dataclasses.field(
        default_factory=lambda: np.array([0.0, 0.0, 0.0, 1.0]))

    def __post_init__(self) -> None:
        """Store float64 arrays of the right shapes."""
        position = np.array(self.position, dtype=np.float64).reshape(3)
        orientation = np.array(self.orientation, dtype=np.float64).reshape(4)
        norm = float(np.linalg.norm(orientation))
        if not math.isfinite(norm) or norm == 0.0:
            raise ValueError('the orientation must be a non-zero quaternion')
        object.__setattr__(self, 'position', position)
        object.__setattr__(self, 'orientation', orientation / norm)

    @classmethod
    def from_xyz_yaw(cls, x: float, y: float, z: float, yaw_rad: float) -> Pose:
        """Return a level pose with a yaw counter-clockwise from world east."""
        return cls(np.array([x, y, z]), np.array(quaternion_from_yaw(yaw_rad)))

    @property
    def rotation(self) -> np.ndarray:
        """Return the 3 x 3 rotation body -> world."""
        return quaternion_to_matrix(self.orientation)

    @property
    def yaw_rad(self) -> float:
        """Return the yaw counter-clockwise from world east."""
        return quaternion_yaw(self.orientation)


def _place(name: str, description: str, tags: list[str], x: float, y: float,
           yaw_rad: float | None) -> dict[str, Any]:
    if yaw_rad is not None:
        tags = tags + ['heading']
    yaw = math.pi / 2.0 if yaw_rad is None else yaw_rad
    z = round(float(ground_height(x, y)), 4)
    orientation = list(quaternion_from_yaw(yaw))
    return {'name': name, 'description': description, 'tags': tags,
            'pose': {'position': [x, y, z], 'orientation': orientation}}


# The point places of the tile, in the reply format of get_named_poses (z: ground height).
NAMED_POSES: tuple[dict[str, Any], ...] = (
    _place('spawn-icsc-garage', 'Spawn: ICSC garage', ['spawn'], -38.7097, -140.5131,
           math.pi / 2.0),
    _place('spawn-beck-lot', 'Spawn: Beck lot', ['spawn'], 122.4, -180.0, 0.0),
    _place('field-53-entrance', 'Field 53: south entrance', ['field'], -38.71, -112.0, None),
    _place('field-48-corner', 'Field 48: south-west corner', ['field'], 326.0, 23.0, None),
    _place('west-yard', 'West yard', ['yard'], -137.6, -160.0, None),
)


# ---------------------------------------------------------------------------------------------
# utm frame helpers for the control channel

def utm_state(pose: Pose) -> dict[str, float]:
    """Return the utm block of get_entity_state: easting, northing, height, heading_deg."""
    easting, northing = geodesy.world_to_utm(float(pose.position[0]), float(pose.position[1]))
    return {'easting': float(easting), 'northing': float(northing),
            'height': float(pose.position[2]),
            'heading_deg': geodesy.heading_deg_from_world_yaw(pose.yaw_rad)}


def pose_from_utm(position: Sequence[float],
                  orientation: Sequence[float] = (0.0, 0.0, 0.0, 1.0)) -> Pose:
    """
    Return the world pose of a pose in the utm frame.

    :param position: easting, northing, height (the height is world z).
    :param orientation: quaternion body -> UTM grid (yaw counter-clockwise from grid east).
    """
    x, y = geodesy.utm_to_world(float(position[0]), float(position[1]))
    z = float(position[2]) if len(position) > 2 else 0.0
    return Pose(np.array([x, y, z]), np.array(geodesy.quaternion_grid_to_world(orientation)))


def pose_to_utm(pose: Pose) -> tuple[list[float], list[float]]:
    """Return (position, orientation) of a world pose in the utm frame."""
    easting, northing = geodesy.world_to_utm(float(pose.position[0]), float(pose.position[1]))
    return ([float(easting), float(northing), float(pose.position[2])],
            list(geodesy.quaternion_world_to_grid(pose.orientation)))
