# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The camera model: a ray cast of the scene through the Hello's plumb_bob lens.

The image is rendered at 1/4 (or 1/2) of the resolution and upsampled by pixel repetition;
``project_points`` applies the same model, so LiDAR points projected with it land on the
objects that returned them. Where the polynomial of the lens stops growing (the outer corners
of the Polaris camera), the model continues the radius linearly so that it stays invertible.
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
from acres_bridge.emulator.sensors.lens import Lens
from acres_bridge.emulator.sensors.poses import Pose
from acres_bridge.emulator.sensors.props import Prop
from acres_bridge.emulator.sensors.props import solid_set
from acres_bridge.emulator.sensors.raycast import cast_solids
from acres_bridge.emulator.sensors.raycast import CHUNK_BEAMS
from acres_bridge.emulator.sensors.raycast import FAR
from acres_bridge.emulator.sensors.raycast import ground_hits
from acres_bridge.emulator.terrain import ROW_SPACING_M
from acres_bridge.emulator.terrain import SolidSet
from acres_bridge.emulator.terrain import SURFACE_MEAN_BGR
from acres_bridge.emulator.terrain import SURFACE_STRIPE_BGR
from acres_bridge.emulator.terrain import Terrain

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


@dataclasses.dataclass(frozen=True, eq=False)
class CameraTable:
    width: int
    height: int
    factor: int
    fx: float
    fy: float
    cx: float
    cy: float
    lens: Lens
    rays_x: np.ndarray              # (rows, cols) float32 undistorted x / z of each block
    rays_y: np.ndarray
    ray_norm: np.ndarray            # |(x, y, 1)|
    footprint: np.ndarray           # |(x, y, 1)|^2 x the angle that a block spans
    frustum: tuple[float, float]    # the largest |x / z| and |y / z| of the rays
    bands: tuple[slice, ...]        # row bands of at most CHUNK_BEAMS blocks
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
                         d: tuple[float, ...], factor: int, noise: bool) -> CameraTable:
    lens = Lens(d)
    if factor == 0:
        factor = _render_factor(width, height)
    rows, cols = -(-height // factor), -(-width // factor)
    v = np.arange(rows) * factor + (factor - 1) / 2.0
    u = np.arange(cols) * factor + (factor - 1) / 2.0
    xd = np.broadcast_to((u - cx) / fx, (rows, cols))
    yd = np.broadcast_to(((v - cy) / fy)[:, None], (rows, cols))
    x, y = lens.undistort(xd, yd)
    band = max(1, CHUNK_BEAMS // cols)
    frames = np.zeros((0, height, width, 3), np.uint8)
    if noise:
        generator = np.random.default_rng(width * 7919 + height)
        frames = generator.integers(-3, 4, (_NOISE_FRAMES, height, width, 3)).astype(np.uint8)
    return CameraTable(width, height, factor, fx, fy, cx, cy, lens,
                       x.astype(np.float32), y.astype(np.float32),
                       np.sqrt(x * x + y * y + 1.0).astype(np.float32),
                       (_block_angle(x, y) * (x * x + y * y + 1.0)).astype(np.float32),
                       (float(np.abs(x).max()) * 1.05 + 0.01,
                        float(np.abs(y).max()) * 1.05 + 0.01),
                       tuple(slice(k, k + band) for k in range(0, rows, band)), frames)


def camera_table(camera: dict[str, Any], *, factor: int = 0,
                 noise: bool = True) -> CameraTable:
    """Return the (cached) ray table of a camera section; factor 0 picks the render factor."""
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
    lidar_rotation, lidar_position = mount(layout['lidar'])
    rotation, position = mount(layout['camera'])
    base = np.asarray(points, dtype=np.float64) @ lidar_rotation.T + lidar_position
    return _project_optical(camera_table(layout['camera']), (base - position) @ rotation)


@np.errstate(invalid='ignore', divide='ignore', over='ignore')
def _project_optical(table: CameraTable, optical: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def _pixel_regions(table: CameraTable, corners: np.ndarray, rotation: np.ndarray,
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


def _visible(table: CameraTable, centers: np.ndarray, radii: np.ndarray,
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


def render(table: CameraTable, rotation: np.ndarray, origin_v: np.ndarray,
           solids: SolidSet, terrain: Terrain) -> np.ndarray:
    """Return the low-resolution image (rows, cols, 3) uint8 BGR seen along the rays."""
    channels = _render_channels(table, rotation, origin_v, solids, terrain)
    small = np.empty(table.rays_x.shape + (3,), np.uint8)
    for channel, out in enumerate(channels):
        # The tables keep every colour in [3, 252]: the noise of +-3 cannot wrap.
        small[..., channel] = out
    return small


@np.errstate(invalid='ignore', divide='ignore', over='ignore')
def _render_channels(table: CameraTable, rotation: np.ndarray, origin_v: np.ndarray,
                     solids: SolidSet, terrain: Terrain) -> list[np.ndarray]:
    """Return the blue, green and red (rows, cols) float32 planes seen along the rays."""
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
        tg = ground_hits(terrain, origin, bx, by, bz, _CAMERA_FAR_M)
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

    cast_solids(solids, picks, origin, (dx, dy, dz), t, channels, shade)
    return channels


def _upsample(small: np.ndarray, table: CameraTable) -> np.ndarray:
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


def _upsample_words(channels: list[np.ndarray], noise: np.ndarray, image: np.ndarray) -> None:
    """
    Write a 4 x 4 upsampled image with its noise from the low-resolution colour planes.

    Four pixels of three bytes are three little-endian words: (b g r b) (g r b g) (r b g r),
    so a full-resolution row is built with 4-byte stores and each of its 4 copies gets its
    noise in one add (the same bytes as pixel repetition, at half the cost).
    """
    b, g, r = (plane.astype('<u4') for plane in channels)
    rows, cols = b.shape
    words = np.empty((rows, cols, 3), '<u4')
    words[..., 0] = b | g << 8 | r << 16 | b << 24
    words[..., 1] = g | r << 8 | b << 16 | g << 24
    words[..., 2] = r | b << 8 | g << 16 | r << 24
    shape = (rows, 4, cols * 12)
    np.add(words.view(np.uint8).reshape(rows, 1, cols * 12), noise.reshape(shape),
           out=image.reshape(shape))


def camera_image(layout: dict[str, Any], body_pose: Pose, props: Iterable[Prop],
                 terrain: Terrain, *, rng: np.random.Generator,
                 out: np.ndarray | None = None) -> np.ndarray:
    """
    Return one camera image: (height, width, 3) uint8, blue-green-red, top row first.

    Rendered from the camera mount of ``layout['camera']`` with its intrinsics and plumb_bob
    lens: sky, ground with each field's crop rows and soil, buildings, trees and the props.

    :param out: a contiguous (height, width, 3) uint8 array to render into (e.g. the pixels
        of a frame payload); a new one when None.
    :raises ValueError: when the layout has no enabled camera.
    """
    camera = enabled_section(layout, 'camera')
    table = camera_table(camera)
    rotation, origin = mount_in_world(body_pose, *mount(camera))
    if out is None:
        out = np.empty((table.height, table.width, 3), np.uint8)
    noise = table.noise[int(rng.integers(0, _NOISE_FRAMES))]
    if table.factor == 4:
        channels = _render_channels(table, rotation, origin, solid_set(terrain, props), terrain)
        _upsample_words(channels, noise, out)
        return out
    small = render(table, rotation, origin, solid_set(terrain, props), terrain)
    np.add(_upsample(small, table), noise, out=out)
    return out
