# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The LiDAR model: a ray cast of every beam of a scan on the ground, the fields and the solids.

Column 0 looks straight ahead, the columns follow ``azimuth_order`` with 360 / columns degrees
each; ring elevations are ``lidar_elevations_deg``. Without a sweep all beams of a scan leave
from one pose (ACRES Core without its sweep option). With one (:class:`ColumnPoses`, the game
and Core's ``--sweep``), each column is traced from the pose at its firing time
(:func:`column_offsets_s`, the LiDAR dataset's rule) and its points are in the sensor frame of
that instant, as the seed states.
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


def column_offsets_s(lidar: dict[str, Any], sweep_s: float) -> np.ndarray:
    """
    Return the firing time of each column relative to the scan's stamp (the sweep's end), <= 0.

    The head turns clockwise: in the cw order column c fires (columns - 1 - c) / columns x
    ``sweep_s`` before the stamp (column 0, straight ahead, first); a ccw column c is the beam
    of cw column (columns - c) mod columns. The array is cached: read-only.
    """
    return _column_offsets(int(lidar['columns']), str(lidar.get('azimuth_order', 'cw')),
                           float(sweep_s))


@functools.lru_cache(maxsize=16)
def _column_offsets(columns: int, order: str, sweep_s: float) -> np.ndarray:
    index = np.arange(columns)
    if order == 'ccw':
        index = (columns - index) % columns
    offsets = (index - (columns - 1)) * (sweep_s / columns)
    offsets.flags.writeable = False
    return offsets


@dataclasses.dataclass(frozen=True, eq=False)
class ColumnPoses:
    """
    The pose of base_footprint at the firing time of each column of a scan.

    :ivar positions: (columns, 3) world positions, metres.
    :ivar rotations: (columns, 3, 3) rotations body -> world.
    """

    positions: np.ndarray
    rotations: np.ndarray

    def sensor_frames(self, mount_rotation: np.ndarray,
                      mount_position: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the rotations sensor -> world and the world origins of the sensor."""
        # As (columns x 3, 3) matrices: one BLAS product instead of a stack of small ones.
        rows = self.rotations.reshape(-1, 3)
        return ((rows @ mount_rotation).reshape(self.rotations.shape),
                self.positions + (rows @ mount_position).reshape(self.positions.shape))


def _lidar_blocks(table: _LidarTable, solids: SolidSet, rotation: np.ndarray,
                  origin: np.ndarray, *, slack_m: float = 0.0,
                  slack_rad: float = 0.0) -> list[tuple[int, list[tuple[int, int]], slice]]:
    """
    Return the solids within range and the beams that may hit each one.

    Each item is (index, column ranges [start, stop), ring slice). The azimuths come from the
    corners of the solid's box in the sensor frame (exact for a box seen from outside), the
    elevations from its heights and its nearest and farthest horizontal distance.

    :param slack_m: how far the sensor moves from ``origin`` during the scan (a sweep).
    :param slack_rad: how far it turns from ``rotation``; both widen the blocks.
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
    # The sensor's travel turns the directions to a solid by at most asin(travel / distance).
    slack = slack_rad + np.arcsin(np.fmin(slack_m / closest, 1.0))
    margin = math.radians(0.5) + slack
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
        low_turn -= float(slack[k])
        high_turn += float(slack[k])
        if high_turn - low_turn >= math.pi:
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
               terrain: Terrain, *, rng: np.random.Generator,
               sweep: ColumnPoses | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """
    Return one organised LiDAR cloud: (columns, rings, 4) float32 x, y, z, intensity.

    The points are in the sensor frame (FLU at the mount pose of ``layout['lidar']``) at the
    firing time of their column. A beam without a return within ``range_m`` has NaN x, y, z
    and intensity 0; the intensity of a return is a reflectivity byte (an integer 1..255) from
    the surface and the incidence.

    :param body_pose: the pose of base_footprint (at the stamp, the end of the sweep).
    :param props: the entities to see (not the sensing vehicle itself).
    :param sweep: the pose of each column's firing time; None: every column from ``body_pose``.
    :param out: a contiguous (columns, rings, 4) float32 array to write into (e.g. the points
        of a frame payload); a new one when None.
    :raises ValueError: when the layout has no enabled LiDAR.
    """
    lidar = enabled_section(layout, 'lidar')
    table = _lidar_table(lidar)
    mount_rotation, mount_position = mount(lidar)
    rotation, origin_v = mount_in_world(body_pose, mount_rotation, mount_position)
    origin = tuple(float(v) for v in origin_v)
    beams = table.columns * table.rings
    rays = tuple(np.empty(beams, np.float32) for _ in range(3))
    t = np.empty(beams, np.float32)
    reflect = np.empty(beams, np.float32)
    row_origins = None
    slack_m = slack_rad = 0.0
    if sweep is None:
        _trace_ground(table, terrain, rotation.tolist(), origin, rays, t, reflect)
    else:
        rotations, origins = sweep.sensor_frames(mount_rotation, mount_position)
        if rotations.shape != (table.columns, 3, 3):
            raise ValueError(f'a sweep of {len(rotations)} poses for {table.columns} columns')
        row_origins = tuple(np.ascontiguousarray(origins[:, k], np.float32) for k in range(3))
        _trace_ground_sweep(table, terrain, rotations.astype(np.float32), row_origins, rays,
                            t, reflect)
        # The blocks of the solids from the middle of the sweep, widened by the motion: in a
        # tenth of a second it is monotonic, so the ends are the farthest from the middle
        # (and a tenth more for the curve between).
        middle = table.columns // 2
        rotation, origin_v = rotations[middle], origins[middle]
        firing = column_offsets_s(lidar, 1.0)
        ends = (int(np.argmin(firing)), int(np.argmax(firing)))    # the first and the last
        slack_m = 1.1 * max(float(np.linalg.norm(origins[k] - origin_v)) for k in ends)
        slack_rad = 1.1 * max(math.acos(max(-1.0, min(1.0, (float(np.einsum(
            'ij,ij->', rotations[k], rotation)) - 1.0) / 2.0))) for k in ends)
    dx, dy, dz = rays
    grid = (table.columns, table.rings)
    solids = solid_set(terrain, props)
    picks = [(index, (slice(start, stop), rings))
             for index, columns, rings in _lidar_blocks(table, solids, rotation, origin_v,
                                                        slack_m=slack_m, slack_rad=slack_rad)
             for start, stop in columns]
    reflectivity = solids.reflectivity

    def shade(solid, ts, ox, oy, oz, nx, ny, nz):
        cosine = np.abs(nx * ox + ny * oy + nz * oz)
        return [np.take(reflectivity, solid) * (0.3 + 0.7 * cosine)]

    cast_solids(solids, picks, origin, (dx.reshape(grid), dy.reshape(grid), dz.reshape(grid)),
                t.reshape(grid), [reflect.reshape(grid)], shade, row_origins=row_origins)
    noise = table.noise[int(rng.integers(0, beams)):][:beams]
    jitter = table.noise[int(rng.integers(0, beams)):][:beams]
    out = np.empty((beams, 4), np.float32) if out is None else out.reshape(beams, 4)
    for part in table.chunks:
        tk = t[part]
        valid = ((tk >= MIN_RANGE_M) & (tk <= table.range_m)).astype(np.float32)
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


def _trace_ground(table: _LidarTable, terrain: Terrain, r: list[list[float]],
                  origin: tuple[float, float, float], rays: tuple[np.ndarray, ...],
                  t: np.ndarray, reflect: np.ndarray) -> None:
    """Fill the world directions, the ground's ray parameters and reflectivity from one pose."""
    dx, dy, dz = rays
    for part in table.chunks:
        sx, sy, sz = table.sx[part], table.sy[part], table.sz[part]
        for row, out in zip(r, (dx[part], dy[part], dz[part])):
            np.multiply(sx, row[0], out=out)
            out += row[1] * sy
            out += row[2] * sz
        cx, cy, cz = dx[part], dy[part], dz[part]
        tg = ground_hits(terrain, origin, cx, cy, cz, table.range_m)
        t[part] = tg
        surface = terrain.surface_classes(origin[0] + tg * cx, origin[1] + tg * cy)
        # Near-level ground: the incidence cosine is the beam's downward component.
        np.multiply(np.take(SURFACE_REFLECTIVITY, surface), 0.3 + 0.7 * np.abs(cz),
                    out=reflect[part])


def _trace_ground_sweep(table: _LidarTable, terrain: Terrain, rotations: np.ndarray,
                        row_origins: tuple[np.ndarray, ...], rays: tuple[np.ndarray, ...],
                        t: np.ndarray, reflect: np.ndarray) -> None:
    """Fill the same as :func:`_trace_ground`, each column from its own sensor pose."""
    rings = table.rings
    for part in table.chunks:
        columns = slice(part.start // rings, part.stop // rings)
        shape = (columns.stop - columns.start, rings)
        sx, sy, sz = (a[part].reshape(shape) for a in (table.sx, table.sy, table.sz))
        r = rotations[columns]
        outputs = tuple(a[part].reshape(shape) for a in rays)
        for i, out in enumerate(outputs):
            np.multiply(sx, r[:, i, 0, None], out=out)
            out += r[:, i, 1, None] * sy
            out += r[:, i, 2, None] * sz
        cx, cy, cz = outputs
        ox, oy, oz = (a[columns, None] for a in row_origins)
        tg = ground_hits(terrain, (ox, oy, oz), cx, cy, cz, table.range_m)
        t[part] = tg.reshape(-1)
        surface = terrain.surface_classes(ox + tg * cx, oy + tg * cy)
        np.multiply(np.take(SURFACE_REFLECTIVITY, surface), 0.3 + 0.7 * np.abs(cz),
                    out=reflect[part].reshape(shape))
