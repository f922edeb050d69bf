# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The entities that the sensors see: prop shapes, props, other vehicles, and their solids."""

from __future__ import annotations

import dataclasses
from typing import Iterable

import numpy as np

from acres_bridge.emulator.sensors.poses import Pose
from acres_bridge.emulator.terrain import SolidSet
from acres_bridge.emulator.terrain import Terrain


@dataclasses.dataclass(frozen=True)
class Shape:
    kind: str                       # 'box' or 'cylinder'
    length: float                   # along the yaw (box) or the diameter (cylinder)
    width: float
    height: float
    bgr: tuple[float, float, float]
    reflectivity: float
    forward_m: float = 0.0          # centre ahead of the reference point along the yaw
    description: str = ''


PROP_SHAPES: dict[str, Shape] = {
    'prop:cone': Shape('cylinder', 0.36, 0.36, 0.7, (20, 110, 250), 210.0,
                       description='traffic cone, 0.7 m tall'),
    'prop:box': Shape('box', 1.0, 1.0, 1.0, (70, 125, 175), 90.0, description='1 m box'),
    'prop:bale_round': Shape('cylinder', 1.5, 1.5, 1.2, (96, 182, 214), 72.0,
                             description='round bale, 1.5 m diameter'),
    'prop:bale_square': Shape('box', 2.4, 1.2, 0.9, (104, 194, 226), 76.0,
                              description='square bale, 2.4 x 1.2 x 0.9 m'),
    'person': Shape('box', 0.5, 0.4, 1.75, (40, 215, 235), 120.0,
                    description='a standing worker (needs -NpcWorkers or -NpcVehicles)'),
    # Other agents, as the sensors of an agent see them (not spawnable).
    'vehicle:polaris': Shape('box', 3.0, 1.6, 1.9, (52, 110, 60), 110.0, forward_m=0.95),
    'vehicle:maxxum': Shape('box', 5.0, 2.5, 3.0, (40, 45, 200), 110.0, forward_m=1.3),
}

SPAWNABLES: tuple[dict[str, str], ...] = tuple(
    {'uri': uri, 'description': shape.description}
    for uri, shape in PROP_SHAPES.items() if not uri.startswith('vehicle:'))


@dataclasses.dataclass(frozen=True, eq=False)
class Prop:
    """
    An entity that the sensors see: a spawned prop, a worker or another agent.

    :ivar position: (3,) world position of the bottom centre (base_footprint for a vehicle).
    :ivar yaw_rad: the yaw counter-clockwise from world east.
    """

    name: str
    uri: str
    position: np.ndarray
    yaw_rad: float = 0.0

    def __post_init__(self) -> None:
        """Check the uri and store the position as a float64 array."""
        if self.uri not in PROP_SHAPES:
            raise ValueError(f'unknown prop uri {self.uri!r}')
        object.__setattr__(self, 'position',
                           np.array(self.position, dtype=np.float64).reshape(3))

    @property
    def size_m(self) -> tuple[float, float, float]:
        """Return length (or diameter), width and height."""
        shape = PROP_SHAPES[self.uri]
        return shape.length, shape.width, shape.height


def vehicle_prop(name: str, vehicle: str, pose: Pose) -> Prop:
    """Return the prop by which other agents' sensors see a vehicle at a pose."""
    return Prop(name, f'vehicle:{vehicle}', pose.position, pose.yaw_rad)


def solid_set(terrain: Terrain, props: Iterable[Prop]) -> SolidSet:
    """Return the static solids of the tile and those of the props, as arrays."""
    props = list(props)
    if not props:
        return terrain.solid_set
    shapes = [PROP_SHAPES[prop.uri] for prop in props]
    position = np.array([prop.position for prop in props])
    yaw = np.array([prop.yaw_rad for prop in props])
    length, width, height, forward = (np.array([getattr(shape, name) for shape in shapes])
                                      for name in ('length', 'width', 'height', 'forward_m'))
    z = position[:, 2]
    return terrain.solid_set + SolidSet.build(
        [shape.kind for shape in shapes], position[:, 0] + forward * np.cos(yaw),
        position[:, 1] + forward * np.sin(yaw), z, z + height, length / 2.0, width / 2.0,
        length / 2.0, yaw, [shape.bgr for shape in shapes],
        [shape.reflectivity for shape in shapes])
