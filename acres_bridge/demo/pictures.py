# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Pictures of what a client receives: LiDAR points over the camera image, a bird's-eye view.

Pure functions on message objects and arrays; no node, no clock. The viewer
(:mod:`acres_bridge.demo.viewer`) feeds them the latest messages.

* :class:`StaticTransforms` keeps the tree of ``/tf_static`` and composes rigid transforms
  between any two of its frames (4 x 4 matrices that map points of the source frame into the
  target frame).
* :func:`cloud_xyz` reads x, y, z of a ``PointCloud2`` by its field offsets and drops returns
  that are not finite (a beam without a return is NaN).
* :func:`project_points` projects points of the camera optical frame (z forward, x right,
  y down) with CameraInfo ``k`` and the ``plumb_bob`` distortion ``d``, as OpenCV does.
  The polynomial folds back beyond some radius; points past that radius are left out.
* :func:`camera_lidar_overlay` and :func:`birds_eye_view` draw, coloured by range and by
  height, and :func:`write_png` saves.
"""

from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
import math
from pathlib import Path

import numpy as np
from PIL import Image as PilImage

from acres_bridge.geometry import quaternion_to_matrix

# Colour map anchors (low -> high): a compact turbo-like ramp without its darkest end, RGB.
_RAMP = np.array([
    [70, 107, 227], [40, 187, 236], [49, 242, 153],
    [162, 252, 60], [237, 208, 58], [251, 128, 34], [220, 40, 20], [255, 60, 200],
], dtype=np.float32)

_FLOAT_TYPES = {7: '<f4', 8: '<f8'}   # sensor_msgs/PointField FLOAT32, FLOAT64


def transform_matrix(transform: object) -> np.ndarray:
    """Return the 4 x 4 matrix of a geometry_msgs/Transform (child points -> parent frame)."""
    matrix = np.eye(4)
    rotation = transform.rotation
    try:
        matrix[:3, :3] = quaternion_to_matrix((rotation.x, rotation.y, rotation.z, rotation.w))
    except ValueError:
        pass   # a zero quaternion draws as no rotation rather than stopping the pictures
    matrix[:3, 3] = (transform.translation.x, transform.translation.y, transform.translation.z)
    return matrix


def apply_transform(matrix: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Return (N, 3) points mapped by a 4 x 4 rigid transform."""
    return points @ matrix[:3, :3].T.astype(points.dtype) + matrix[:3, 3].astype(points.dtype)


class StaticTransforms:
    """The frame tree of ``/tf_static``: parent and transform of each child frame."""

    def __init__(self) -> None:
        self._parents: dict[str, tuple[str, np.ndarray]] = {}

    def add(self, transforms: Iterable[object]) -> None:
        """Add geometry_msgs/TransformStamped (a later one for the same child replaces it)."""
        for stamped in transforms:
            self._parents[stamped.child_frame_id] = (
                stamped.header.frame_id, transform_matrix(stamped.transform))

    @property
    def frames(self) -> set[str]:
        """Every frame the tree names."""
        return set(self._parents) | {parent for parent, _ in self._parents.values()}

    def root(self, frame: str) -> str:
        """Return the top of the tree that holds ``frame``."""
        return self._chain(frame)[0]

    def _chain(self, frame: str) -> tuple[str, np.ndarray]:
        matrix = np.eye(4)
        seen = {frame}
        while frame in self._parents:
            parent, to_parent = self._parents[frame]
            matrix = to_parent @ matrix
            frame = parent
            if frame in seen:        # a loop in a broken tree: stop rather than spin
                break
            seen.add(frame)
        return frame, matrix

    def lookup(self, target: str, source: str) -> np.ndarray | None:
        """Return the matrix mapping points of ``source`` into ``target``; None if unlinked."""
        source_root, root_from_source = self._chain(source)
        target_root, root_from_target = self._chain(target)
        if source_root != target_root:
            return None
        return np.linalg.inv(root_from_target) @ root_from_source


def cloud_xyz(cloud: object) -> np.ndarray:
    """Return the finite x, y, z of a sensor_msgs/PointCloud2 as an (N, 3) float32 array."""
    offsets = {field.name: field for field in cloud.fields}
    if not {'x', 'y', 'z'} <= offsets.keys():
        raise ValueError('the cloud has no x, y, z fields')
    count = cloud.width * cloud.height
    data = np.frombuffer(cloud.data, dtype=np.uint8)
    if count == 0 or data.size < count * cloud.point_step:
        return np.empty((0, 3), np.float32)
    formats = []
    for name in 'xyz':
        kind = _FLOAT_TYPES.get(offsets[name].datatype)
        if kind is None:
            raise ValueError(f'field {name} is not FLOAT32 or FLOAT64')
        formats.append(kind.replace('<', '>') if cloud.is_bigendian else kind)
    layout = np.dtype({'names': ['x', 'y', 'z'], 'formats': formats,
                       'offsets': [offsets[name].offset for name in 'xyz'],
                       'itemsize': cloud.point_step})
    records = np.frombuffer(data, dtype=layout, count=count)
    xyz = np.stack([records['x'], records['y'], records['z']], axis=1).astype(np.float32)
    return xyz[np.isfinite(xyz).all(axis=1)]


def image_rgb(image: object) -> np.ndarray:
    """Return a sensor_msgs/Image (bgr8, rgb8, mono8, bgra8 or rgba8) as (H, W, 3) RGB."""
    channels = {'bgr8': 3, 'rgb8': 3, 'mono8': 1, 'bgra8': 4, 'rgba8': 4}.get(image.encoding)
    if channels is None:
        raise ValueError(f'cannot draw encoding {image.encoding!r}')
    data = np.frombuffer(image.data, dtype=np.uint8)
    rows = data[:image.height * image.step].reshape(image.height, image.step)
    pixels = rows[:, :image.width * channels].reshape(image.height, image.width, channels)
    if channels == 1:
        return np.repeat(pixels, 3, axis=2)
    if image.encoding.startswith('bgr'):
        return np.ascontiguousarray(pixels[:, :, 2::-1])
    return np.ascontiguousarray(pixels[:, :, :3])


@dataclass(frozen=True, slots=True)
class Projection:
    """Points projected into an image: pixel coordinates and the rows of the input they are."""

    uv: np.ndarray          # (M, 2) float, column and row
    index: np.ndarray       # (M,) int, row of each in the input points
    in_front: int           # points in front of the camera (z > 0), inside or outside the image


def _monotone_radius(d: Sequence[float]) -> float:
    """Return the undistorted radius up to which plumb_bob's radial polynomial still grows."""
    k1, k2, _, _, k3 = (list(d) + [0.0] * 5)[:5]
    radius = np.linspace(0.0, 10.0, 10001)
    r2 = radius * radius
    slope = 1.0 + 3.0 * k1 * r2 + 5.0 * k2 * r2 * r2 + 7.0 * k3 * r2 * r2 * r2
    bad = np.flatnonzero(slope <= 0.0)
    return float(radius[bad[0]]) if bad.size else math.inf


def project_points(points: np.ndarray, k: Sequence[float], d: Sequence[float],
                   width: int, height: int) -> Projection:
    """
    Project points of the camera optical frame into the image.

    :param points: (N, 3) points, z forward, x right, y down, in metres.
    :param k: the 9 values of CameraInfo ``k`` (row-major 3 x 3).
    :param d: CameraInfo ``d`` for ``plumb_bob`` (k1, k2, p1, p2, k3); empty for none.
    :param width: the image width in pixels.
    :param height: the image height in pixels.
    :return: the points that land inside the image.
    """
    fx, _, cx, _, fy, cy = (float(value) for value in list(k)[:6])
    front = np.flatnonzero(points[:, 2] > 1e-3)
    z = points[front, 2].astype(np.float64)
    x = points[front, 0] / z
    y = points[front, 1] / z
    coefficients = (list(d) + [0.0] * 5)[:5]
    if any(coefficients):
        k1, k2, p1, p2, k3 = coefficients
        r2 = x * x + y * y
        sane = r2 < _monotone_radius(coefficients) ** 2
        front, x, y, r2 = front[sane], x[sane], y[sane], r2[sane]
        radial = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3))
        x, y = (x * radial + 2.0 * p1 * x * y + p2 * (r2 + 2.0 * x * x),
                y * radial + p1 * (r2 + 2.0 * y * y) + 2.0 * p2 * x * y)
    u = fx * x + cx
    v = fy * y + cy
    inside = (u >= 0) & (u < width) & (v >= 0) & (v < height)
    return Projection(uv=np.stack([u[inside], v[inside]], axis=1), index=front[inside],
                      in_front=int(z.size))


def colour_ramp(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """Return (N, 3) uint8 RGB colours of values on a near-to-far ramp from low to high."""
    span = max(high - low, 1e-9)
    position = np.clip((values - low) / span, 0.0, 1.0) * (len(_RAMP) - 1)
    below = np.minimum(position.astype(np.int64), len(_RAMP) - 2)
    weight = (position - below)[:, None].astype(np.float32)
    return (_RAMP[below] * (1.0 - weight) + _RAMP[below + 1] * weight).astype(np.uint8)


def draw_dots(canvas: np.ndarray, uv: np.ndarray, colours: np.ndarray, radius: int = 1) -> None:
    """Draw square dots of side 2 radius + 1 at pixel positions (column, row), far ones first."""
    height, width = canvas.shape[:2]
    columns = np.round(uv[:, 0]).astype(np.int64)
    rows = np.round(uv[:, 1]).astype(np.int64)
    for du in range(-radius, radius + 1):
        for dv in range(-radius, radius + 1):
            c = columns + du
            r = rows + dv
            ok = (c >= 0) & (c < width) & (r >= 0) & (r < height)
            canvas[r[ok], c[ok]] = colours[ok]


@dataclass(frozen=True, slots=True)
class Picture:
    """A drawn picture and what went into it."""

    rgb: np.ndarray
    points: int             # points drawn
    total: int              # finite points offered


def camera_lidar_overlay(rgb: np.ndarray, points_optical: np.ndarray, k: Sequence[float],
                         d: Sequence[float], *, max_range_m: float = 80.0) -> Picture:
    """
    Draw LiDAR points over a camera image, coloured by range (near blue, far red).

    :param rgb: the (H, W, 3) image; not modified.
    :param points_optical: (N, 3) points in the camera optical frame.
    :param k: CameraInfo ``k``.
    :param d: CameraInfo ``d`` (plumb_bob).
    :param max_range_m: the range at the far end of the colour ramp.
    """
    height, width = rgb.shape[:2]
    projection = project_points(points_optical, k, d, width, height)
    ranges = np.linalg.norm(points_optical[projection.index], axis=1)
    order = np.argsort(-ranges)              # near points drawn last, on top
    canvas = (rgb.astype(np.float32) * 0.7).astype(np.uint8)
    draw_dots(canvas, projection.uv[order], colour_ramp(ranges[order], 0.0, max_range_m))
    return Picture(rgb=canvas, points=int(ranges.size), total=int(points_optical.shape[0]))


def birds_eye_view(points: np.ndarray, *, extent_m: float = 60.0, resolution_m: float = 0.15,
                   ring_step_m: float = 10.0,
                   height_range_m: tuple[float, float] = (-0.3, 3.0)) -> Picture:
    """
    Draw points of a body frame (x forward, y left, z up) from above, coloured by height.

    Forward is up in the picture, left is left. Range rings every ``ring_step_m`` and a
    triangle at the origin show the scale and the vehicle.

    :param points: (N, 3) points in metres.
    :param extent_m: half the side of the square shown.
    :param resolution_m: metres per pixel.
    :param ring_step_m: the spacing of the range rings.
    :param height_range_m: the heights at the ends of the colour ramp (ground blue).
    """
    size = int(round(2 * extent_m / resolution_m))
    canvas = np.full((size, size, 3), 16, np.uint8)
    centre = size / 2.0
    grid_v, grid_u = np.mgrid[0:size, 0:size]
    radius_m = np.hypot(grid_u - centre, grid_v - centre) * resolution_m
    ring = np.abs(radius_m - np.round(radius_m / ring_step_m) * ring_step_m) < resolution_m * 0.6
    canvas[ring & (radius_m > resolution_m)] = (60, 60, 60)
    columns = centre - points[:, 1] / resolution_m
    rows = centre - points[:, 0] / resolution_m
    inside = (columns >= 0) & (columns < size) & (rows >= 0) & (rows < size)
    heights = points[inside, 2]
    order = np.argsort(heights)              # higher points drawn last, on top
    uv = np.stack([columns[inside], rows[inside]], axis=1)[order]
    colours = colour_ramp(heights[order], *height_range_m)
    # Ground thin, anything standing out of it bold.
    raised = heights[order] > height_range_m[0] + 0.3 * (height_range_m[1] - height_range_m[0])
    draw_dots(canvas, uv[~raised], colours[~raised], radius=0)
    draw_dots(canvas, uv[raised], colours[raised], radius=1)
    vehicle = np.array([[0.0, 2.5], [-1.0, -1.0], [1.0, -1.0]]) / resolution_m
    tip = (vehicle[:, 0] + centre, centre - vehicle[:, 1])
    _fill_triangle(canvas, np.stack(tip, axis=1), (255, 255, 255))
    return Picture(rgb=canvas, points=int(heights.size), total=int(points.shape[0]))


def _fill_triangle(canvas: np.ndarray, corners: np.ndarray, colour: tuple[int, int, int]) -> None:
    low = np.floor(corners.min(axis=0)).astype(int)
    high = np.ceil(corners.max(axis=0)).astype(int) + 1
    grid_v, grid_u = np.mgrid[low[1]:high[1], low[0]:high[0]]
    signs = []
    for a, b in ((0, 1), (1, 2), (2, 0)):
        (ua, va), (ub, vb) = corners[a], corners[b]
        signs.append((ub - ua) * (grid_v - va) - (vb - va) * (grid_u - ua))
    inside = ((signs[0] >= 0) & (signs[1] >= 0) & (signs[2] >= 0)) | (
        (signs[0] <= 0) & (signs[1] <= 0) & (signs[2] <= 0))
    ok = inside & (grid_u >= 0) & (grid_u < canvas.shape[1]) & (grid_v >= 0) & (
        grid_v < canvas.shape[0])
    canvas[grid_v[ok], grid_u[ok]] = colour


def write_png(path: Path, rgb: np.ndarray) -> Path:
    """Write an RGB array as a PNG atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + '.part')
    PilImage.fromarray(rgb, 'RGB').save(partial, format='PNG', compress_level=1)
    partial.replace(path)
    return path
