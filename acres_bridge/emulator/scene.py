# Copyright 2026 The acres_bridge authors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
Pure numpy sensor models of the emulator: Hello layouts, LiDAR ray cast, camera, INS, PNG.

Frames and units follow the sensor stream seed: the world frame is ENU on the tile's grid
(metres), the body frame of a vehicle is FLU at base_footprint, quaternions are (x, y, z, w)
and rotate body vectors into the reference frame, mounts are ``position_flu_m`` and
``rpy_deg`` from base_footprint with R = Rz(yaw) Ry(pitch) Rx(roll).

Every model is a function of its inputs and a ``numpy.random.Generator``: the same generator
state gives the same output. The functions hold no state besides caches of tables derived
from a layout (beam directions, pixel rays, noise pools), so the engine may call them from
several threads. The scene a sensor sees is the fixed ``Terrain`` (ground, fields, buildings,
trees) plus the props the engine passes, which should include the other agents
(``vehicle_prop``) but never the sensing vehicle itself.

LiDAR: column 0 looks straight ahead, the columns follow ``azimuth_order`` with 360 / columns
degrees each, all beams of a scan at one instant; ring elevations are ``lidar_elevations_deg``.
Camera: the image is rendered at 1/4 (or 1/2) of the resolution through the Hello's plumb_bob
model and upsampled by pixel repetition; ``project_points`` applies the same model, so LiDAR
points projected with it land on the objects that returned them. Where the polynomial of the
lens stops growing (the outer corners of the Polaris camera), the model continues the radius
linearly so that it stays invertible.

Speed: every ray of a scan or an image is numpy arithmetic on float32 arrays: the ground is a
plane (one division per ray), the surface under a hit comes from a raster, each solid is
culled to the block of beams or pixels that may see it, and small blocks are cast together in
one batch per kind of solid. tools/bench_emulator_scene.py measures the models.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import io
import math
from typing import Any, Iterable, Sequence

import numpy as np
from PIL import Image

from acres_bridge.emulator import geodesy
from acres_bridge.emulator.geodesy import quaternion_multiply
from acres_bridge.emulator.geodesy import quaternion_to_matrix
from acres_bridge.emulator.geodesy import rpy_to_matrix
from acres_bridge.emulator.terrain import Field
from acres_bridge.emulator.terrain import ground_height
from acres_bridge.emulator.terrain import ROW_SPACING_M
from acres_bridge.emulator.terrain import Solid
from acres_bridge.emulator.terrain import SolidSet
from acres_bridge.emulator.terrain import SURFACE_MEAN_BGR
from acres_bridge.emulator.terrain import SURFACE_REFLECTIVITY
from acres_bridge.emulator.terrain import SURFACE_STRIPE_BGR
from acres_bridge.emulator.terrain import Terrain
from acres_bridge.protocol.frames import InsField

__all__ = [
    'Field', 'NAMED_POSES', 'PROP_SHAPES', 'Pose', 'Prop', 'SPAWNABLES', 'Solid', 'Terrain',
    'VEHICLES', 'camera_image', 'hello_layout', 'ins_values', 'lidar_beam_directions',
    'lidar_elevations_deg', 'lidar_scan', 'pose_from_utm', 'pose_to_utm', 'project_points',
    'render_view_png', 'shifted_layout', 'utm_state', 'vehicle_prop',
]

SCHEMA = 'acres-sensor-stream-1'
MOUNT_CONVENTION = 'FLU mounts from base_footprint; rpy about fixed axes, R = Rz Ry Rx'
MIN_RANGE_M = 0.2
RANGE_NOISE_M = 0.0022

# Camera optical frame (z forward, x right, y down) -> camera FLU frame.
_FLU_FROM_OPTICAL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
# Beams a step of the LiDAR works on at once: index and float64 temporaries stay below
# malloc's mmap threshold (128 KiB) and come from the heap instead of fresh pages.
_CHUNK_BEAMS = 16000
_NOISE_FRAMES = 3
_SUN = np.array([0.35, -0.45, 0.82]) / np.linalg.norm([0.35, -0.45, 0.82])
_SKY_HORIZON_BGR = np.array([236.0, 218.0, 196.0], np.float32)
_SKY_ZENITH_BGR = np.array([205.0, 140.0, 86.0], np.float32)
_FOG_M = 1400.0
_CAMERA_FAR_M = 4000.0
# The look of the camera's rays by class: the ground's surface classes and then the sky (its
# stripes are the elevation). Per channel, rows are the class: the mean less the horizon's
# colour, and the amplitude of the stripes. A pixel is horizon + (mean - horizon) k +
# amplitude k stripes, with k = exp(-distance / _FOG_M) the light that the haze lets through.
_SKY = len(SURFACE_MEAN_BGR)
_LOOK_MEAN = np.ascontiguousarray(
    np.vstack([SURFACE_MEAN_BGR, _SKY_HORIZON_BGR]).T - _SKY_HORIZON_BGR[:, None])
_LOOK_STRIPES = np.ascontiguousarray(
    np.vstack([SURFACE_STRIPE_BGR, _SKY_ZENITH_BGR - _SKY_HORIZON_BGR]).T)
_ROW_SPACING = np.append(ROW_SPACING_M, np.float32(1.0))


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
        mount = shifted[sensor]
        mount['position_flu_m'] = [float(p) + o for p, o in zip(mount['position_flu_m'], offset)]
        if any(rpy):
            rotation = rpy_to_matrix(rpy) @ rpy_to_matrix(mount['rpy_deg'])
            mount['rpy_deg'] = list(geodesy.matrix_to_rpy(rotation))
    return shifted


# ---------------------------------------------------------------------------------------------
# Poses, props and places

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
        return cls(np.array([x, y, z]), np.array(geodesy.quaternion_from_yaw(yaw_rad)))

    @property
    def rotation(self) -> np.ndarray:
        """Return the 3 x 3 rotation body -> world."""
        return quaternion_to_matrix(self.orientation)

    @property
    def yaw_rad(self) -> float:
        """Return the yaw counter-clockwise from world east."""
        return geodesy.quaternion_yaw(self.orientation)


@dataclasses.dataclass(frozen=True)
class _Shape:
    kind: str                       # 'box' or 'cylinder'
    length: float                   # along the yaw (box) or the diameter (cylinder)
    width: float
    height: float
    bgr: tuple[float, float, float]
    reflectivity: float
    forward_m: float = 0.0          # centre ahead of the reference point along the yaw
    description: str = ''


PROP_SHAPES: dict[str, _Shape] = {
    'prop:cone': _Shape('cylinder', 0.36, 0.36, 0.7, (20, 110, 250), 210.0,
                        description='traffic cone, 0.7 m tall'),
    'prop:box': _Shape('box', 1.0, 1.0, 1.0, (70, 125, 175), 90.0, description='1 m box'),
    'prop:bale_round': _Shape('cylinder', 1.5, 1.5, 1.2, (96, 182, 214), 72.0,
                              description='round bale, 1.5 m diameter'),
    'prop:bale_square': _Shape('box', 2.4, 1.2, 0.9, (104, 194, 226), 76.0,
                               description='square bale, 2.4 x 1.2 x 0.9 m'),
    'person': _Shape('box', 0.5, 0.4, 1.75, (40, 215, 235), 120.0,
                     description='a standing worker (needs -NpcWorkers or -NpcVehicles)'),
    # Other agents, as the sensors of an agent see them (not spawnable).
    'vehicle:polaris': _Shape('box', 3.0, 1.6, 1.9, (52, 110, 60), 110.0, forward_m=0.95),
    'vehicle:maxxum': _Shape('box', 5.0, 2.5, 3.0, (40, 45, 200), 110.0, forward_m=1.3),
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


def _place(name: str, description: str, tags: list[str], x: float, y: float,
           yaw_rad: float | None) -> dict[str, Any]:
    if yaw_rad is not None:
        tags = tags + ['heading']
    yaw = math.pi / 2.0 if yaw_rad is None else yaw_rad
    z = round(float(ground_height(x, y)), 4)
    orientation = [0.0, 0.0, math.sin(yaw / 2.0), math.cos(yaw / 2.0)]
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


# ---------------------------------------------------------------------------------------------
# INS

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


# ---------------------------------------------------------------------------------------------
# Ray casting: ground and solids. Directions are structure-of-arrays (dx, dy, dz) of float32
# and need not be unit vectors; the origin is one point given as Python floats, which keeps
# the arithmetic in float32. A miss is the finite ray parameter FAR, and a selection is
# arithmetic with 0/1 masks: on this data np.where and masked copies cost 30 times an add.

FAR = np.float32(1.0e6)
_ONE = np.float32(1.0)


def _ground_hits(terrain: Terrain, origin: tuple[float, float, float], dx: np.ndarray,
                 dy: np.ndarray, dz: np.ndarray, t_max: float) -> np.ndarray:
    """Return the ray parameter of the ground hit (a plane), FAR where none within t_max."""
    ox, oy, oz = origin
    h0, gx, gy = (float(v) for v in terrain.height_and_gradient(ox, oy))
    descent = gx * dx + gy * dy - dz
    t = np.float32(oz - h0) / descent
    return _or_far(np.fmin(np.fmax(t, 0.0), FAR), (descent > 1e-6) & (t <= t_max) & (t > 0.0))


def _or_far(t: np.ndarray, hit: np.ndarray) -> np.ndarray:
    """Return t where hit, FAR elsewhere; t must be finite and at most FAR."""
    return t * hit + ~hit * FAR


def _enabled(layout: dict[str, Any], sensor: str) -> dict[str, Any]:
    """Return a sensor's section of a layout; ValueError when the sensor is not enabled."""
    section = layout[sensor]
    if not section.get('enabled', False):
        raise ValueError(f'the layout has no enabled {sensor}')
    return section


def _mount(section: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """
    Return the rotation and the position of a sensor's frame in base_footprint.

    A camera's frame is its optical frame (z forward, x right, y down).
    """
    rotation = rpy_to_matrix(section['rpy_deg'])
    if 'fx' in section:
        rotation = rotation @ _FLU_FROM_OPTICAL
    return rotation, np.asarray(section['position_flu_m'], dtype=np.float64)


def _mount_in_world(body_pose: Pose, mount_rotation: np.ndarray,
                    mount_position: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the rotation sensor -> world and the world position of a mount."""
    body_rotation = quaternion_to_matrix(body_pose.orientation)
    return (body_rotation @ mount_rotation,
            body_pose.position + body_rotation @ mount_position)


def _solid_set(terrain: Terrain, props: Iterable[Prop]) -> SolidSet:
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


def _box_hits(params: tuple, origin: tuple[float, float, float], dx: np.ndarray,
              dy: np.ndarray, dz: np.ndarray) -> tuple[np.ndarray, ...]:
    """
    Return t (FAR on a miss) and the world normal of the hits of rays on boxes.

    :param params: x, y, cos(yaw), sin(yaw), half_x, half_y, z_min, z_max: floats for one box
        or arrays with one value per ray.
    """
    x, y, c, s, half_x, half_y, z_min, z_max = params
    px, py = origin[0] - x, origin[1] - y
    lx, ly = c * px + s * py, c * py - s * px
    ddx = c * dx + s * dy
    ddy = c * dy - s * dx
    xn, xf = _slab(-half_x - lx, half_x - lx, ddx)
    yn, yf = _slab(-half_y - ly, half_y - ly, ddy)
    zn, zf = _slab(z_min - origin[2], z_max - origin[2], dz)
    near = np.fmax(np.fmax(xn, yn), zn)
    far = np.fmin(np.fmin(xf, yf), zf)
    t = _or_far(np.fmin(np.fmax(near, 0.0), FAR), (near <= far) & (near > 0.0))
    # The face that the ray enters faces against the ray along its axis.
    face_x = near == xn
    face_y = (near == yn) & ~face_x
    face_z = ~(face_x | face_y)
    nlx = face_x * -np.sign(ddx)
    nly = face_y * -np.sign(ddy)
    return t, c * nlx - s * nly, s * nlx + c * nly, face_z * -np.sign(dz)


def _slab(low, high, direction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    inverse = _ONE / direction
    t1 = low * inverse
    t2 = high * inverse
    return np.fmin(t1, t2), np.fmax(t1, t2)


def _cylinder_hits(params: tuple, origin: tuple[float, float, float], dx: np.ndarray,
                   dy: np.ndarray, dz: np.ndarray) -> tuple[np.ndarray, ...]:
    """
    Return t (FAR on a miss) and the world normal of the hits of rays on upright cylinders.

    :param params: x, y, radius, z_min, z_max: floats for one cylinder or arrays with one value
        per ray. A ray from inside a cylinder's footprint misses it.
    """
    x, y, r, z_min, z_max = params
    px, py, oz = origin[0] - x, origin[1] - y, origin[2]
    c = px * px + py * py - r * r
    a = dx * dx + dy * dy
    b = px * dx + py * dy
    disc = b * b - a * c
    t = np.fmin(np.fmax((-b - np.sqrt(np.maximum(disc, 0.0))) / a, 0.0), FAR)
    z_side = oz + t * dz
    t = _or_far(t, (disc >= 0.0) & (t > 0.0) & (z_side >= z_min) & (z_side <= z_max)
                & (c > 0.0))
    t_top = np.fmin(np.fmax((z_max - oz) / dz, 0.0), FAR)
    hx = px + t_top * dx
    hy = py + t_top * dy
    top = (hx * hx + hy * hy <= r * r) & (t_top > 0.0) & (t_top < t) & (c > 0.0)
    t += top * (t_top - t)
    side = ~top / r
    return t, (px + t * dx) * side, (py + t * dy) * side, top.astype(np.float32)


_KERNELS = {'box': _box_hits, 'cylinder': _cylinder_hits}


# A block of rays with more rays than this is cast alone on its 2-D view; smaller blocks are
# gathered into one batch per kind of solid, which pays numpy's per-call cost once.
_BATCH_BLOCK = 2048


def _cast_solids(solids: SolidSet, picks: list[tuple[int, tuple[slice, slice]]],
                 origin: tuple[float, float, float], rays: tuple[np.ndarray, ...],
                 t: np.ndarray, outputs: list[np.ndarray], shade) -> None:
    """
    Cast blocks of rays against solids; where a solid is the nearest hit, shade the ray.

    :param picks: (solid index, (rows, columns)) pairs: each solid and the block of the 2-D
        ray grid that may hit it.
    :param rays: dx, dy, dz: the ray directions, contiguous 2-D arrays of the grid.
    :param t: the ray parameters so far (the ground), a contiguous 2-D array; lowered in place.
    :param outputs: contiguous 2-D arrays of the grid that ``shade`` writes.
    :param shade: ``shade(solid, t, dx, dy, dz, nx, ny, nz) -> values``, one value array per
        output; ``solid`` is a solid index or an array of them, one per ray.
    """
    width = t.shape[1]
    cast = []
    batches: dict[str, tuple[list, list]] = {'box': ([], []), 'cylinder': ([], [])}
    for index, block in picks:
        rows, cols = block
        kind = solids.kinds[index]
        count = (rows.stop - rows.start) * (cols.stop - cols.start)
        if count > _BATCH_BLOCK:
            directions = tuple(a[block] for a in rays)
            params = tuple(float(v) for v in getattr(solids, kind)[index])
            cast.append((block, index, directions) + _KERNELS[kind](params, origin,
                                                                    *directions))
        elif count > 0:
            batches[kind][0].append((np.arange(rows.start, rows.stop)[:, None] * width
                                     + np.arange(cols.start, cols.stop)).reshape(-1))
            batches[kind][1].append(np.full(count, index))
    flat_t = t.reshape(-1)
    for kind, (targets, owners) in batches.items():
        if targets:
            target = np.concatenate(targets)
            solid = np.concatenate(owners)
            table = getattr(solids, kind)[solid]
            params = tuple(table[:, k] for k in range(table.shape[1]))
            directions = tuple(np.take(a.reshape(-1), target) for a in rays)
            cast.append((target, solid, directions) + _KERNELS[kind](params, origin,
                                                                     *directions))
    for target, _, _, ts, *_ in cast:
        if isinstance(target, tuple):
            np.fmin(t[target], ts, out=t[target])
        else:
            np.minimum.at(flat_t, target, ts)
    for target, solid, directions, ts, *normal in cast:
        if isinstance(target, tuple):
            won = (ts < FAR) & (ts <= t[target])
            if won.any():
                for out, value in zip(outputs, shade(solid, ts, *directions, *normal)):
                    part = out[target]
                    part += won * (value - part)
        else:
            won = np.flatnonzero((ts < FAR) & (ts <= np.take(flat_t, target)))
            if won.size:
                values = shade(solid[won], ts[won], *(a[won] for a in directions),
                               *(a[won] for a in normal))
                for out, value in zip(outputs, values):
                    out.reshape(-1)[target[won]] = value


# ---------------------------------------------------------------------------------------------
# LiDAR

_HELIOS_UPPER_DEG = (15.0, 13.0, 11.0, 9.0, 7.0, 5.5, 4.0, 2.67, 1.33, 0.0)
_MAXXUM_DEG = (2.0, 0.0, -2.0, -4.0, -6.5, -9.5, -13.0, -17.0)


def lidar_elevations_deg(rings: int) -> np.ndarray:
    """
    Return the elevation of each ring in the sensor frame, ring 0 first (the top ring).

    32 rings: a Helios 1615-like table, +15 to -25 degrees, denser about the horizon; 8 rings:
    the Maxxum's sensor, +2 to -17 degrees; other counts: evenly from +15 to -25 degrees.
    """
    if rings == 32:
        lower = [-25.0 * k / 22.0 for k in range(1, 23)]
        return np.array(_HELIOS_UPPER_DEG + tuple(lower))
    if rings == 8:
        return np.array(_MAXXUM_DEG)
    return np.linspace(15.0, -25.0, rings)


@dataclasses.dataclass(frozen=True, eq=False)
class _LidarTable:
    columns: int
    rings: int
    range_m: float
    clockwise: bool
    directions: np.ndarray          # (beams, 3) float32 unit vectors, sensor frame
    sx: np.ndarray
    sy: np.ndarray
    sz: np.ndarray
    noise: np.ndarray               # (2 * beams,) float32 standard normal pool
    chunks: tuple[slice, ...]       # whole columns, at most _CHUNK_BEAMS beams each
    elevations: np.ndarray          # (rings,) radians, falling from ring 0


@functools.lru_cache(maxsize=16)
def _lidar_table_cached(columns: int, rings: int, range_m: float, order: str) -> _LidarTable:
    if order not in ('cw', 'ccw'):
        raise ValueError(f"azimuth_order must be 'cw' or 'ccw', not {order!r}")
    clockwise = order == 'cw'
    azimuth = np.radians(np.arange(columns) * (360.0 / columns))
    if clockwise:
        azimuth = -azimuth
    elevation = np.radians(lidar_elevations_deg(rings))
    az, el = np.meshgrid(azimuth, elevation, indexing='ij')         # (columns, rings)
    directions = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)],
                          axis=-1).reshape(-1, 3).astype(np.float32)
    noise = np.random.default_rng(columns * 1000 + rings).standard_normal(
        2 * columns * rings, dtype=np.float32)
    count = -(-columns * rings // _CHUNK_BEAMS)
    width = -(-columns // count) * rings
    chunks = tuple(slice(k, min(k + width, columns * rings))
                   for k in range(0, columns * rings, width))
    return _LidarTable(columns, rings, range_m, clockwise, directions,
                       np.ascontiguousarray(directions[:, 0]),
                       np.ascontiguousarray(directions[:, 1]),
                       np.ascontiguousarray(directions[:, 2]), noise, chunks, elevation.copy())


def _lidar_table(lidar: dict[str, Any]) -> _LidarTable:
    return _lidar_table_cached(int(lidar['columns']), int(lidar['rings']),
                               float(lidar['range_m']), str(lidar.get('azimuth_order', 'cw')))


def lidar_beam_directions(layout: dict[str, Any]) -> np.ndarray:
    """Return the unit direction of each beam in the sensor frame, (columns, rings, 3)."""
    table = _lidar_table(layout['lidar'])
    return table.directions.reshape(table.columns, table.rings, 3).copy()


def _lidar_blocks(table: _LidarTable, solids: SolidSet, rotation: np.ndarray,
                  origin: np.ndarray) -> list[tuple[int, list[tuple[int, int]], slice]]:
    """
    Return the solids within range and the beams that may hit each one.

    Each item is (index, column ranges [start, stop), ring slice). The azimuths come from the
    corners of the solid's box in the sensor frame (exact for a box seen from outside), the
    elevations from its heights and its nearest and farthest horizontal distance.
    """
    offsets = solids.centers - origin
    gap = np.sqrt(np.einsum('ij,ij->i', offsets, offsets)) - solids.radii
    near = np.flatnonzero(gap < table.range_m)
    if near.size == 0:
        return []
    center = offsets[near] @ rotation                               # (m, 3) sensor frame
    corner = (solids.corners[near] - origin) @ rotation             # (m, 8, 3)
    middle = np.arctan2(center[:, 1], center[:, 0])
    turn = np.arctan2(corner[..., 1], corner[..., 0]) - middle[:, None]
    turn = (turn + math.pi) % (2.0 * math.pi) - math.pi
    distance = np.hypot(center[:, 0], center[:, 1])
    reach = np.hypot(corner[..., 0] - center[:, None, 0],
                     corner[..., 1] - center[:, None, 1]).max(axis=1)
    closest = np.maximum(distance - reach, 0.05)
    farthest = distance + reach
    top, bottom = corner[..., 2].max(axis=1), corner[..., 2].min(axis=1)
    margin = math.radians(0.5)
    high = np.arctan2(top, np.where(top > 0.0, closest, farthest)) + margin
    low = np.arctan2(bottom, np.where(bottom < 0.0, closest, farthest)) - margin
    # Ring elevations fall from ring 0 on.
    falling = -table.elevations
    first = np.searchsorted(falling, -high, side='left')
    last = np.searchsorted(falling, -low, side='right')
    step = 2.0 * math.pi / table.columns
    sign = -1.0 if table.clockwise else 1.0
    blocks = []
    for k, index in enumerate(near.tolist()):
        if first[k] >= last[k]:
            continue
        rings = slice(int(first[k]), int(last[k]))
        low_turn, high_turn = float(turn[k].min()), float(turn[k].max())
        if high_turn - low_turn >= math.pi:
            # The sensor is above or inside the footprint: every azimuth.
            blocks.append((index, [(0, table.columns)], rings))
            continue
        ends = sorted((sign * (middle[k] + low_turn) / step,
                       sign * (middle[k] + high_turn) / step))
        start = math.floor(ends[0]) - 1
        span = math.ceil(ends[1]) + 2 - start
        if span >= table.columns:
            blocks.append((index, [(0, table.columns)], rings))
            continue
        start %= table.columns
        stop = start + span
        if stop <= table.columns:
            blocks.append((index, [(start, stop)], rings))
        else:
            blocks.append((index, [(start, table.columns), (0, stop - table.columns)], rings))
    return blocks


@np.errstate(invalid='ignore', divide='ignore', over='ignore')
def lidar_scan(layout: dict[str, Any], body_pose: Pose, props: Iterable[Prop],
               terrain: Terrain, *, rng: np.random.Generator) -> np.ndarray:
    """
    Return one organised LiDAR cloud: (columns, rings, 4) float32 x, y, z, intensity.

    The points are in the sensor frame (FLU at the mount pose of ``layout['lidar']``). A beam
    without a return within ``range_m`` has NaN x, y, z and intensity 0; the intensity of a
    return is a reflectivity byte (an integer 1..255) from the surface and the incidence.

    :param body_pose: the pose of base_footprint.
    :param props: the entities to see (not the sensing vehicle itself).
    :raises ValueError: when the layout has no enabled LiDAR.
    """
    lidar = _enabled(layout, 'lidar')
    table = _lidar_table(lidar)
    rotation, origin_v = _mount_in_world(body_pose, *_mount(lidar))
    origin = tuple(float(v) for v in origin_v)
    r = rotation.tolist()
    beams = table.columns * table.rings
    range_m = table.range_m
    dx = np.empty(beams, np.float32)
    dy = np.empty(beams, np.float32)
    dz = np.empty(beams, np.float32)
    t = np.empty(beams, np.float32)
    reflect = np.empty(beams, np.float32)
    for part in table.chunks:
        sx, sy, sz = table.sx[part], table.sy[part], table.sz[part]
        for row, out in zip(r, (dx[part], dy[part], dz[part])):
            np.multiply(sx, row[0], out=out)
            out += row[1] * sy
            out += row[2] * sz
        cx, cy, cz = dx[part], dy[part], dz[part]
        tg = _ground_hits(terrain, origin, cx, cy, cz, range_m)
        t[part] = tg
        surface = terrain.surface_classes(origin[0] + tg * cx, origin[1] + tg * cy)
        # Near-level ground: the incidence cosine is the beam's downward component.
        np.multiply(np.take(SURFACE_REFLECTIVITY, surface), 0.3 + 0.7 * np.abs(cz),
                    out=reflect[part])
    grid = (table.columns, table.rings)
    solids = _solid_set(terrain, props)
    picks = [(index, (slice(start, stop), rings))
             for index, columns, rings in _lidar_blocks(table, solids, rotation, origin_v)
             for start, stop in columns]
    reflectivity = solids.reflectivity

    def shade(solid, ts, ox, oy, oz, nx, ny, nz):
        cosine = np.abs(nx * ox + ny * oy + nz * oz)
        return [np.take(reflectivity, solid) * (0.3 + 0.7 * cosine)]

    _cast_solids(solids, picks, origin, (dx.reshape(grid), dy.reshape(grid), dz.reshape(grid)),
                 t.reshape(grid), [reflect.reshape(grid)], shade)
    noise = table.noise[int(rng.integers(0, beams)):][:beams]
    jitter = table.noise[int(rng.integers(0, beams)):][:beams]
    out = np.empty((beams, 4), np.float32)
    for part in table.chunks:
        tk = t[part]
        valid = ((tk >= MIN_RANGE_M) & (tk <= range_m)).astype(np.float32)
        # sqrt(0) = 0 for a return, sqrt(-1) = NaN for none: NaN coordinates without a branch.
        distance = np.sqrt(valid - _ONE)
        distance += tk
        distance += RANGE_NOISE_M * noise[part]
        np.multiply(distance, table.sx[part], out=out[part, 0])
        np.multiply(distance, table.sy[part], out=out[part, 1])
        np.multiply(distance, table.sz[part], out=out[part, 2])
        intensity = reflect[part] + 2.0 * jitter[part]
        np.rint(np.fmin(np.fmax(intensity, 1.0), 255.0), out=intensity)
        np.multiply(intensity, valid, out=out[part, 3])
    return out.reshape(table.columns, table.rings, 4)


# ---------------------------------------------------------------------------------------------
# Camera model: plumb_bob with a monotone continuation of the radial polynomial

class _Lens:
    """
    The plumb_bob model of a Hello camera, in normalised image coordinates.

    OpenCV's polynomial up to the knee, the radius where the radial polynomial's slope falls
    to _SLOPE_FLOOR (just short of where it folds back); beyond it the radius grows linearly
    with that slope and the tangential terms keep their value at the knee, so the model stays
    invertible over the whole image.
    """

    _SLOPE_FLOOR = 0.05

    def __init__(self, d: Sequence[float]) -> None:
        k1, k2, p1, p2, k3 = (float(v) for v in (list(d) + [0.0] * 5)[:5])
        self.k1, self.k2, self.k3, self.p1, self.p2 = k1, k2, k3, p1, p2
        radius = np.linspace(0.0, 6.0, 60001)
        r2 = radius * radius
        slope = 1.0 + 3.0 * k1 * r2 + 5.0 * k2 * r2 * r2 + 7.0 * k3 * r2 * r2 * r2
        low = np.flatnonzero(slope < self._SLOPE_FLOOR)
        self.r_knee = float(radius[low[0]]) if low.size else float(radius[-1])
        self.f_knee = float(self._poly_radius(self.r_knee))
        keep = radius <= self.r_knee
        self._r_table = radius[keep]
        self._f_table = self._poly_radius(self._r_table)
        self.knee_slope = (self._SLOPE_FLOOR if low.size else float(slope[-1]))

    def _poly_radius(self, r):
        r2 = r * r
        return r * (1.0 + r2 * (self.k1 + r2 * (self.k2 + r2 * self.k3)))

    def radial(self, r: np.ndarray) -> np.ndarray:
        """Return the distorted radius of undistorted radii (monotone)."""
        return np.where(r <= self.r_knee, self._poly_radius(np.minimum(r, self.r_knee)),
                        self.f_knee + (r - self.r_knee) * self.knee_slope)

    def radial_inverse(self, rd: np.ndarray) -> np.ndarray:
        """Return the undistorted radius of distorted radii."""
        inside = np.interp(rd, self._f_table, self._r_table)
        for _ in range(2):
            # Newton steps on the polynomial refine the table's linear interpolation.
            r2 = inside * inside
            slope = 1.0 + r2 * (3.0 * self.k1 + r2 * (5.0 * self.k2 + r2 * 7.0 * self.k3))
            inside = np.minimum(inside - (self._poly_radius(inside) - rd) / slope, self.r_knee)
        return np.where(rd <= self.f_knee, inside,
                        self.r_knee + (rd - self.f_knee) / self.knee_slope)

    def _tangential(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the tangential terms, frozen beyond the knee at their value there."""
        r = np.sqrt(x * x + y * y)
        with np.errstate(divide='ignore', invalid='ignore'):
            scale = np.where(r > self.r_knee, self.r_knee / r, 1.0)
        x, y = x * scale, y * scale
        r2, xy = x * x + y * y, x * y
        return (2.0 * self.p1 * xy + self.p2 * (r2 + 2.0 * x * x),
                self.p1 * (r2 + 2.0 * y * y) + 2.0 * self.p2 * xy)

    def distort(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return distorted normalised coordinates of undistorted ones."""
        r = np.sqrt(x * x + y * y)
        with np.errstate(divide='ignore', invalid='ignore'):
            scale = np.where(r > 1e-9, self.radial(r) / r, 1.0)
        tx, ty = self._tangential(x, y)
        return x * scale + tx, y * scale + ty

    def undistort(self, xd: np.ndarray, yd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """
        Return undistorted normalised coordinates of distorted ones.

        A fixed point on the tangential terms starts it, Newton's method on the whole model
        (a numerical Jacobian) finishes it; it runs once per camera table.
        """
        x, y = xd, yd
        for _ in range(10):
            tx, ty = self._tangential(x, y)
            ux, uy = xd - tx, yd - ty
            rd = np.hypot(ux, uy)
            with np.errstate(divide='ignore', invalid='ignore'):
                scale = np.where(rd > 1e-12, self.radial_inverse(rd) / rd, 1.0)
            x, y = ux * scale, uy * scale
        step = 1e-7
        for _ in range(8):
            fx, fy = self.distort(x, y)
            ax, ay = self.distort(x + step, y)
            bx, by = self.distort(x, y + step)
            jxx, jyx = (ax - fx) / step, (ay - fy) / step
            jxy, jyy = (bx - fx) / step, (by - fy) / step
            ex, ey = fx - xd, fy - yd
            det = jxx * jyy - jxy * jyx
            x = x - (jyy * ex - jxy * ey) / det
            y = y - (jxx * ey - jyx * ex) / det
        return x, y


@dataclasses.dataclass(frozen=True, eq=False)
class _CameraTable:
    width: int
    height: int
    factor: int
    fx: float
    fy: float
    cx: float
    cy: float
    lens: _Lens
    rays_x: np.ndarray              # (rows, cols) float32 undistorted x / z of each block
    rays_y: np.ndarray
    ray_norm: np.ndarray            # |(x, y, 1)|
    footprint: np.ndarray           # |(x, y, 1)|^2 x the angle that a block spans
    frustum: tuple[float, float]    # the largest |x / z| and |y / z| of the rays
    bands: tuple[slice, ...]        # row bands of at most _CHUNK_BEAMS blocks
    noise: np.ndarray               # (frames, height, width, 3) uint8, small offsets mod 256


def _block_angle(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Return the angle (radians) between the rays of neighbouring blocks, the larger one."""
    unit = np.stack([x, y, np.ones_like(x)], axis=-1)
    unit /= np.linalg.norm(unit, axis=-1, keepdims=True)
    across = np.linalg.norm(np.diff(unit, axis=1, append=unit[:, -2:-1]), axis=-1)
    down = np.linalg.norm(np.diff(unit, axis=0, append=unit[-2:-1]), axis=-1)
    return np.maximum(across, down)


def _render_factor(width: int, height: int) -> int:
    for factor in (4, 2):
        if width % factor == 0 and height % factor == 0 and width * height >= 40000 * factor:
            return factor
    return 1


@functools.lru_cache(maxsize=16)
def _camera_table_cached(width: int, height: int, fx: float, fy: float, cx: float, cy: float,
                         d: tuple[float, ...], factor: int, noise: bool) -> _CameraTable:
    lens = _Lens(d)
    if factor == 0:
        factor = _render_factor(width, height)
    rows, cols = -(-height // factor), -(-width // factor)
    v = np.arange(rows) * factor + (factor - 1) / 2.0
    u = np.arange(cols) * factor + (factor - 1) / 2.0
    xd = np.broadcast_to((u - cx) / fx, (rows, cols))
    yd = np.broadcast_to(((v - cy) / fy)[:, None], (rows, cols))
    x, y = lens.undistort(xd, yd)
    band = max(1, _CHUNK_BEAMS // cols)
    frames = np.zeros((0, height, width, 3), np.uint8)
    if noise:
        generator = np.random.default_rng(width * 7919 + height)
        frames = generator.integers(-3, 4, (_NOISE_FRAMES, height, width, 3)).astype(np.uint8)
    return _CameraTable(width, height, factor, fx, fy, cx, cy, lens,
                        x.astype(np.float32), y.astype(np.float32),
                        np.sqrt(x * x + y * y + 1.0).astype(np.float32),
                        (_block_angle(x, y) * (x * x + y * y + 1.0)).astype(np.float32),
                        (float(np.abs(x).max()) * 1.05 + 0.01,
                         float(np.abs(y).max()) * 1.05 + 0.01),
                        tuple(slice(k, k + band) for k in range(0, rows, band)), frames)


def _camera_table(camera: dict[str, Any], *, factor: int = 0,
                  noise: bool = True) -> _CameraTable:
    return _camera_table_cached(
        int(camera['width']), int(camera['height']), float(camera['fx']), float(camera['fy']),
        float(camera['cx']), float(camera['cy']), tuple(float(v) for v in camera.get('d', ())),
        factor, noise)


def project_points(layout: dict[str, Any], points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """
    Project LiDAR points into the camera image of the same layout.

    Uses the mounts of the layout, the intrinsics and the plumb_bob model of camera_image.

    :param points: (..., 3) in the LiDAR sensor frame (NaN rows are allowed).
    :return: pixel coordinates (..., 2) (u right, v down; pixel centres at integers) and a
        mask of the points in front of the camera and inside the image.
    """
    lidar_rotation, lidar_position = _mount(layout['lidar'])
    rotation, position = _mount(layout['camera'])
    base = np.asarray(points, dtype=np.float64) @ lidar_rotation.T + lidar_position
    return _project_optical(_camera_table(layout['camera']), (base - position) @ rotation)


@np.errstate(invalid='ignore', divide='ignore', over='ignore')
def _project_optical(table: _CameraTable, optical: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    z = optical[..., 2]
    front = z > 0.05
    with np.errstate(divide='ignore', invalid='ignore'):
        xd, yd = table.lens.distort(optical[..., 0] / z, optical[..., 1] / z)
    uv = np.stack([table.fx * xd + table.cx, table.fy * yd + table.cy], axis=-1)
    inside = (front & (uv[..., 0] >= -0.5) & (uv[..., 0] < table.width - 0.5)
              & (uv[..., 1] >= -0.5) & (uv[..., 1] < table.height - 0.5))
    return uv, inside


def _edge_weights(samples: int) -> np.ndarray:
    """Return weights (points, 8) that blend box corners into points along the 12 edges."""
    edges = [(0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4),
             (0, 4), (1, 5), (2, 6), (3, 7)]
    rows = []
    for a, b in edges:
        for f in np.linspace(0.0, 1.0, samples):
            weight = np.zeros(8)
            weight[a] += 1.0 - f
            weight[b] += f
            rows.append(weight)
    return np.array(rows)


# Points on the edges of a box (corners and 3 inner points per edge): under the lens's
# distortion an edge bends, so its ends alone do not bound its image. _EDGE_PAIRS are the
# neighbours along each edge, _NEAR_M the near plane of the camera.
_EDGE_SAMPLES = 5
_EDGE_WEIGHTS = _edge_weights(_EDGE_SAMPLES)
_EDGE_PAIRS = tuple(np.array([k + i for k in range(0, len(_EDGE_WEIGHTS), _EDGE_SAMPLES)
                              for i in range(_EDGE_SAMPLES - 1)]) + j for j in (0, 1))
_NEAR_M = 0.05


def _pixel_regions(table: _CameraTable, corners: np.ndarray, rotation: np.ndarray,
                   origin: np.ndarray) -> list[tuple[slice, slice] | None]:
    """
    Return the block rows and columns of the low-resolution image each solid may cover.

    The bound is that of the points along the box's edges in front of the camera, and of the
    points where the edges cross the near plane (they project to the image border that the
    solid reaches).

    :param corners: (m, 8, 3) the corners of the solids' boxes in the world frame.
    :return: one (rows, columns) pair of slices per solid, None for a solid out of view.
    """
    optical = (np.einsum('pk,mkj->mpj', _EDGE_WEIGHTS, corners) - origin) @ rotation
    z = optical[..., 2] - _NEAR_M
    a, b = optical[:, _EDGE_PAIRS[0]], optical[:, _EDGE_PAIRS[1]]
    za, zb = z[:, _EDGE_PAIRS[0]], z[:, _EDGE_PAIRS[1]]
    crossing = za * zb < 0.0
    with np.errstate(invalid='ignore', divide='ignore'):
        fraction = np.where(crossing, za / (za - zb), 0.0)[..., None]
    points = np.concatenate([optical, a + fraction * (b - a)], axis=1)
    points[..., 2] = np.maximum(points[..., 2], _NEAR_M)
    valid = np.concatenate([z >= 0.0, crossing], axis=1)
    uv, _ = _project_optical(table, points)
    f = table.factor
    u = (uv[..., 0] - (f - 1) / 2.0) / f
    v = (uv[..., 1] - (f - 1) / 2.0) / f
    rows, cols = table.rays_x.shape
    with np.errstate(invalid='ignore'):
        c0 = np.clip(np.floor(np.where(valid, u, np.inf).min(axis=1)) - 1, 0, cols)
        c1 = np.clip(np.ceil(np.where(valid, u, -np.inf).max(axis=1)) + 2, 0, cols)
        r0 = np.clip(np.floor(np.where(valid, v, np.inf).min(axis=1)) - 1, 0, rows)
        r1 = np.clip(np.ceil(np.where(valid, v, -np.inf).max(axis=1)) + 2, 0, rows)
    seen = valid.any(axis=1) & (c0 < c1) & (r0 < r1)
    return [(slice(int(r0[k]), int(r1[k])), slice(int(c0[k]), int(c1[k]))) if seen[k] else None
            for k in range(len(corners))]


def _visible(table: _CameraTable, centers: np.ndarray, radii: np.ndarray,
             rotation: np.ndarray, origin: np.ndarray) -> np.ndarray:
    """Return the indices of the spheres in the view frustum that cover at least a block."""
    optical = (centers - origin) @ rotation
    x, y, z = optical[:, 0], optical[:, 1], optical[:, 2]
    x_lim, y_lim = table.frustum
    keep = ((z > -radii)
            & (np.abs(x) - x_lim * z < radii * math.hypot(1.0, x_lim))
            & (np.abs(y) - y_lim * z < radii * math.hypot(1.0, y_lim))
            & (radii * table.fx > 0.3 * table.factor * np.maximum(z, 1e-3)))
    return np.flatnonzero(keep)


@np.errstate(invalid='ignore', divide='ignore', over='ignore')
def _render(table: _CameraTable, rotation: np.ndarray, origin_v: np.ndarray,
            solids: SolidSet, terrain: Terrain) -> np.ndarray:
    """Return the low-resolution image (rows, cols, 3) uint8 BGR seen along the rays."""
    r = rotation.tolist()
    origin = tuple(float(v) for v in origin_v)
    shape = table.rays_x.shape
    dx, dy, dz, t = (np.empty(shape, np.float32) for _ in range(4))
    channels = [np.empty(shape, np.float32) for _ in range(3)]
    for band in table.bands:
        x, y, norm = table.rays_x[band], table.rays_y[band], table.ray_norm[band]
        for row, out in zip(r, (dx[band], dy[band], dz[band])):
            np.multiply(x, row[0], out=out)
            out += row[1] * y
            out += row[2]
        bx, by, bz = dx[band], dy[band], dz[band]
        tg = _ground_hits(terrain, origin, bx, by, bz, _CAMERA_FAR_M)
        t[band] = tg
        sky = tg == FAR
        hx = origin[0] + tg * bx
        surface = terrain.surface_classes(hx, origin[1] + tg * by)
        surface += sky * (_SKY - surface)
        spacing = np.take(_ROW_SPACING, surface)
        # A pixel's footprint on the ground: its size across the ray, stretched by the
        # grazing angle; rows finer than two of it fade to their mean colour (no aliasing).
        footprint = tg * table.footprint[band] / (np.abs(bz) + np.float32(1e-3))
        contrast = np.fmin(np.fmax(1.0 - 2.0 * footprint / spacing, 0.0), 1.0)
        stripes = np.cos(hx * np.float32(2.0 * math.pi) / spacing) * contrast
        up = np.sqrt(np.fmin(np.fmax(2.0 * bz / norm, 0.0), 1.0))
        stripes += sky * (up - stripes)
        through = np.exp((tg * ~sky) * norm * np.float32(-1.0 / _FOG_M))
        stripes *= through
        for channel, out in enumerate(channels):
            colour = np.take(_LOOK_MEAN[channel], surface) * through
            colour += np.take(_LOOK_STRIPES[channel], surface) * stripes
            np.add(colour, _SKY_HORIZON_BGR[channel], out=out[band])
    visible = _visible(table, solids.centers, solids.radii, rotation, origin_v)
    regions = _pixel_regions(table, solids.corners[visible], rotation, origin_v)
    picks = [(index, region) for index, region in zip(visible.tolist(), regions)
             if region is not None]
    colours = solids.bgr

    def shade(solid, ts, ox, oy, oz, nx, ny, nz):
        light = 0.55 + 0.45 * np.maximum(nx * _SUN[0] + ny * _SUN[1] + nz * _SUN[2], 0.0)
        through = np.exp(ts * np.sqrt(ox * ox + oy * oy + oz * oz) * np.float32(-1.0 / _FOG_M))
        bgr = colours[solid]
        return [_SKY_HORIZON_BGR[channel] + (bgr[..., channel] * light
                                             - _SKY_HORIZON_BGR[channel]) * through
                for channel in range(3)]

    _cast_solids(solids, picks, origin, (dx, dy, dz), t, channels, shade)
    small = np.empty(shape + (3,), np.uint8)
    for channel, out in enumerate(channels):
        # The tables keep every colour in [3, 252]: the noise of +-3 cannot wrap.
        small[..., channel] = out
    return small


def _upsample(small: np.ndarray, table: _CameraTable) -> np.ndarray:
    """Return the full image of a low-resolution uint8 image by pixel repetition."""
    f = table.factor
    rows, cols, _ = small.shape
    if f == 1:
        return np.ascontiguousarray(small[:table.height, :table.width])
    wide = np.repeat(small.view('V3').reshape(rows, cols), f, axis=1)
    full = np.empty((rows, f, cols * f * 3), np.uint8)
    full[:] = wide.view(np.uint8).reshape(rows, 1, cols * f * 3)
    image = full.reshape(rows * f, cols * f, 3)
    if image.shape[:2] != (table.height, table.width):
        image = np.ascontiguousarray(image[:table.height, :table.width])
    return image


def camera_image(layout: dict[str, Any], body_pose: Pose, props: Iterable[Prop],
                 terrain: Terrain, *, rng: np.random.Generator) -> np.ndarray:
    """
    Return one camera image: (height, width, 3) uint8, blue-green-red, top row first.

    Rendered from the camera mount of ``layout['camera']`` with its intrinsics and plumb_bob
    lens: sky, ground with each field's crop rows and soil, buildings, trees and the props.

    :raises ValueError: when the layout has no enabled camera.
    """
    camera = _enabled(layout, 'camera')
    table = _camera_table(camera)
    rotation, origin = _mount_in_world(body_pose, *_mount(camera))
    small = _render(table, rotation, origin, _solid_set(terrain, props), terrain)
    image = _upsample(small, table)
    np.add(image, table.noise[int(rng.integers(0, _NOISE_FRAMES))], out=image)
    return image


# ---------------------------------------------------------------------------------------------
# The main view of the screenshot op

def render_view_png(agents: Sequence[tuple[str, Pose]], props: Iterable[Prop],
                    terrain: Terrain, *, view: str = 'chase', width: int = 960,
                    height: int = 540) -> bytes:
    """
    Return a PNG of the main view: a chase camera behind the first agent, or a top view.

    :param agents: (vehicle, pose of base_footprint) of each agent, agent 0 first; all are
        drawn as boxes.
    :param view: 'chase' (9 m behind, 4.5 m up) or 'top' (60 m above agent 0, its forward up).
    """
    if view not in ('chase', 'top'):
        raise ValueError(f"view must be 'chase' or 'top', not {view!r}")
    focal = 0.75 * width if view == 'chase' else 0.9 * width
    camera = {'width': width, 'height': height, 'fx': focal, 'fy': focal,
              'cx': (width - 1) / 2.0, 'cy': (height - 1) / 2.0, 'd': [0.0] * 5,
              'position_flu_m': [-9.0, 0.0, 4.5] if view == 'chase' else [0.0, 0.0, 60.0],
              'rpy_deg': [0.0, 14.0, 0.0] if view == 'chase' else [0.0, 90.0, 0.0]}
    table = _camera_table(camera, factor=1, noise=False)
    all_props = list(props) + [vehicle_prop(f'agent{i}', vehicle, pose)
                               for i, (vehicle, pose) in enumerate(agents)]
    if agents:
        pose = agents[0][1]
        level = Pose.from_xyz_yaw(*pose.position, pose.yaw_rad)
    else:
        level = Pose.from_xyz_yaw(-38.7097, -140.5131, 0.6392, math.pi / 2.0)
    rotation, origin = _mount_in_world(level, *_mount(camera))
    image = _render(table, rotation, origin, _solid_set(terrain, all_props), terrain)
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image[..., ::-1]), 'RGB').save(buffer, format='PNG')
    return buffer.getvalue()
