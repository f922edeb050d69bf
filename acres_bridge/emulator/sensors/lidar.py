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
The LiDAR model: a ray cast of every beam of a scan on the ground, the fields and the solids.

Column 0 looks straight ahead, the columns follow ``azimuth_order`` with 360 / columns degrees
each, all beams of a scan at one instant; ring elevations are ``lidar_elevations_deg``.
Speed: the ground is a plane (one division per beam), the surface under a hit comes from a
raster, and each solid is culled to the block of beams that may see it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Iterable

import numpy as np

from acres_bridge.emulator.sensors.layouts import enabled_section
from acres_bridge.emulator.sensors.layouts import mount
from acres_bridge.emulator.sensors.layouts import mount_in_world
from acres_bridge.emulator.sensors.poses import Pose
from acres_bridge.emulator.sensors.props import Prop
from acres_bridge.emulator.sensors.props import solid_set
from acres_bridge.emulator.sensors.raycast import cast_solids
from acres_bridge.emulator.sensors.raycast import CHUNK_BEAMS
from acres_bridge.emulator.sensors.raycast import ground_hits
from acres_bridge.emulator.sensors.raycast import ONE
from acres_bridge.emulator.terrain import SolidSet
from acres_bridge.emulator.terrain import SURFACE_REFLECTIVITY
from acres_bridge.emulator.terrain import Terrain

MIN_RANGE_M = 0.2
RANGE_NOISE_M = 0.0022

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
    chunks: tuple[slice, ...]       # whole columns, at most CHUNK_BEAMS beams each
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
    count = -(-columns * rings // CHUNK_BEAMS)
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
    lidar = enabled_section(layout, 'lidar')
    table = _lidar_table(lidar)
    rotation, origin_v = mount_in_world(body_pose, *mount(lidar))
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
        tg = ground_hits(terrain, origin, cx, cy, cz, range_m)
        t[part] = tg
        surface = terrain.surface_classes(origin[0] + tg * cx, origin[1] + tg * cy)
        # Near-level ground: the incidence cosine is the beam's downward component.
        np.multiply(np.take(SURFACE_REFLECTIVITY, surface), 0.3 + 0.7 * np.abs(cz),
                    out=reflect[part])
    grid = (table.columns, table.rings)
    solids = solid_set(terrain, props)
    picks = [(index, (slice(start, stop), rings))
             for index, columns, rings in _lidar_blocks(table, solids, rotation, origin_v)
             for start, stop in columns]
    reflectivity = solids.reflectivity

    def shade(solid, ts, ox, oy, oz, nx, ny, nz):
        cosine = np.abs(nx * ox + ny * oy + nz * oz)
        return [np.take(reflectivity, solid) * (0.3 + 0.7 * cosine)]

    cast_solids(solids, picks, origin, (dx.reshape(grid), dy.reshape(grid), dz.reshape(grid)),
                t.reshape(grid), [reflect.reshape(grid)], shade)
    noise = table.noise[int(rng.integers(0, beams)):][:beams]
    jitter = table.noise[int(rng.integers(0, beams)):][:beams]
    out = np.empty((beams, 4), np.float32)
    for part in table.chunks:
        tk = t[part]
        valid = ((tk >= MIN_RANGE_M) & (tk <= range_m)).astype(np.float32)
        # sqrt(0) = 0 for a return, sqrt(-1) = NaN for none: NaN coordinates without a branch.
        distance = np.sqrt(valid - ONE)
        distance += tk
        distance += RANGE_NOISE_M * noise[part]
        np.multiply(distance, table.sx[part], out=out[part, 0])
        np.multiply(distance, table.sy[part], out=out[part, 1])
        np.multiply(distance, table.sz[part], out=out[part, 2])
        intensity = reflect[part] + 2.0 * jitter[part]
        np.rint(np.fmin(np.fmax(intensity, 1.0), 255.0), out=intensity)
        np.multiply(intensity, valid, out=out[part, 3])
    return out.reshape(table.columns, table.rings, 4)
