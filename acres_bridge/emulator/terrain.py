# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The emulated ACRE tile: ground height, surfaces, the 59 fields and the static objects.

The layout is a grid of 8 x 10 cells with a pitch of 130 m (``GRID_ORIGIN_XY`` is its
south-west corner). Each cell holds a 120 m square (a field, a farm yard or grass) and gaps of
10 m: the east-west gaps are gravel roads, the north-south gaps grass. Fields are numbered
from 1 row by row, north to south and west to east, so that field 53 holds the control
channel seed's point (-38.71, -81.67) with the seed's edge distance (28.918 m); field 48 is a
plot of 84.968 m x 60 m (the seed's 5098.08 m2). The ICSC garage and its spawn pose lie in the
yard south of field 53.

The ground is a gentle plane (0.5 degree): ``height_at`` is 0.6392 m at the garage spawn pose
and 0.14 m at the seed's field point, as the seed's replies give them. A plane keeps the ray
cast exact and cheap. Everything here is fixed: the mutable farm state (crushed crop, water,
ruts) belongs to the engine.
"""

import dataclasses
import functools
import math

from typing import Sequence

import numpy as np

PITCH_M = 130.0
SQUARE_M = 120.0
GRID_COLUMNS = 8
GRID_ROWS = 10
GRID_ORIGIN_XY = (-587.628, -500.7)
FIELD_COUNT = 59
CROPS = ('corn', 'soybean', 'potato', 'empty')

# Surface classes of the ground (index into the colour and reflectivity tables).
SURFACE_GRASS = 0
SURFACE_ROAD = 1
SURFACE_YARD = 2
SURFACE_CORN = 3
SURFACE_SOYBEAN = 4
SURFACE_POTATO = 5
SURFACE_BARE = 6
SURFACE_NAMES = ('grass', 'gravel', 'concrete', 'corn', 'soybean', 'potato', 'soil')
_CROP_SURFACE = {'corn': SURFACE_CORN, 'soybean': SURFACE_SOYBEAN, 'potato': SURFACE_POTATO,
                 'empty': SURFACE_BARE}
# Reflectivity byte of each surface class at normal incidence.
SURFACE_REFLECTIVITY = np.array([46.0, 24.0, 38.0, 40.0, 36.0, 33.0, 18.0], np.float32)
# The camera's look of each class: colour = mean + stripes x amplitude (blue, green, red),
# where stripes in [-1, 1] are the crop rows (or the tillage, or the mowing) of the given
# spacing, fading out where a pixel covers more than a row.
_SOIL_BGR = np.array([48.0, 78.0, 112.0])
_CROP_BGR = np.array([[40.0, 150.0, 74.0], [58.0, 165.0, 98.0], [70.0, 140.0, 92.0]])
SURFACE_MEAN_BGR = np.array(
    [[62.0, 142.0, 88.0], [140.0, 152.0, 160.0], [170.0, 176.0, 178.0],
     *(_SOIL_BGR + 0.55 * (_CROP_BGR - _SOIL_BGR)), [52.0, 84.0, 118.0]], np.float32)
SURFACE_STRIPE_BGR = np.array(
    [[3.0, 7.0, 4.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0],
     *(0.4 * (_CROP_BGR - _SOIL_BGR)), [6.0, 10.0, 14.0]], np.float32)
ROW_SPACING_M = np.array([2.5, 1.0, 1.0, 0.76, 0.76, 0.91, 3.0], np.float32)
# The cell of the raster of the surface classes that the sensors read.
RASTER_M = 0.5

_CELL_FIELD = 0
_CELL_YARD = 1
_CELL_GRASS = 2

# The ground is a plane through the garage's spawn pose, falling gently to the north.
GROUND_ANCHOR = (-38.7097, -140.5131, 0.6392)
GROUND_SLOPE = (0.0021, -0.0084819)       # dh/dx, dh/dy


def ground_height(x, y):
    """Return the height of the ground of the tile in metres (scalars or arrays)."""
    return (GROUND_ANCHOR[2] + GROUND_SLOPE[0] * (x - GROUND_ANCHOR[0])
            + GROUND_SLOPE[1] * (y - GROUND_ANCHOR[1]))


@dataclasses.dataclass(frozen=True, slots=True)
class Field:
    """One field of the tile: an axis-aligned rectangle of the world frame."""

    number: int
    name: str
    crop: str
    x_min: float
    y_min: float
    x_max: float
    y_max: float

    @property
    def area_m2(self) -> float:
        """Return the area of the field."""
        return (self.x_max - self.x_min) * (self.y_max - self.y_min)

    def contains(self, x: float, y: float) -> bool:
        """Return whether the point lies in the field."""
        return self.x_min <= x < self.x_max and self.y_min <= y < self.y_max

    def edge_distance_m(self, x: float, y: float) -> float:
        """Return the distance of a point of the field to its edge (0 outside)."""
        if not self.contains(x, y):
            return 0.0
        return min(x - self.x_min, self.x_max - x, y - self.y_min, self.y_max - y)


@dataclasses.dataclass(frozen=True, slots=True)
class Solid:
    """
    A box or an upright cylinder that the sensors see.

    ``kind`` is 'box' (``half_x``, ``half_y`` along its yaw) or 'cylinder' (``radius``). It spans
    z from ``z_min`` to ``z_max``; ``bgr`` is its colour and ``reflectivity`` its LiDAR byte.
    """

    kind: str
    x: float
    y: float
    z_min: float
    z_max: float
    half_x: float = 0.0
    half_y: float = 0.0
    radius: float = 0.0
    yaw_rad: float = 0.0
    bgr: tuple[float, float, float] = (128.0, 128.0, 128.0)
    reflectivity: float = 60.0


@dataclasses.dataclass(frozen=True, eq=False)
class SolidSet:
    """
    Solids as arrays for the vectorised ray casts: one row per solid.

    ``box`` rows are x, y, cos(yaw), sin(yaw), half_x, half_y, z_min, z_max; ``cylinder`` rows
    x, y, radius, z_min, z_max (float32; a row of the other kind is unused). ``corners`` are
    those of a box that holds each solid (a cylinder's is upright), ``radii`` those of a sphere
    about ``centers`` that holds it. ``bgr`` lies in [6, 252], so that a shaded and hazy colour
    stays in [3, 252].
    """

    kinds: tuple[str, ...]
    centers: np.ndarray
    radii: np.ndarray
    corners: np.ndarray
    box: np.ndarray
    cylinder: np.ndarray
    reflectivity: np.ndarray
    bgr: np.ndarray

    @classmethod
    def build(cls, kinds: Sequence[str], x, y, z_min, z_max, half_x, half_y, radius, yaw_rad,
              bgr, reflectivity) -> 'SolidSet':
        """Return the set of solids given field by field as arrays (one value per solid)."""
        x, y, z_min, z_max, half_x, half_y, radius, yaw_rad = (
            np.asarray(v, dtype=np.float64).reshape(-1)
            for v in (x, y, z_min, z_max, half_x, half_y, radius, yaw_rad))
        cylinder = np.array([kind == 'cylinder' for kind in kinds], bool)
        half_x = np.where(cylinder, radius, half_x)
        half_y = np.where(cylinder, radius, half_y)
        yaw_rad = np.where(cylinder, 0.0, yaw_rad)
        c, s = np.cos(yaw_rad), np.sin(yaw_rad)
        lx = half_x[:, None] * np.array([-1.0, 1.0, 1.0, -1.0] * 2)
        ly = half_y[:, None] * np.array([-1.0, -1.0, 1.0, 1.0] * 2)
        corners = np.stack([x[:, None] + c[:, None] * lx - s[:, None] * ly,
                            y[:, None] + s[:, None] * lx + c[:, None] * ly,
                            np.repeat(np.stack([z_min, z_max], axis=1), 4, axis=1)], axis=-1)
        horizontal = np.where(cylinder, radius, np.hypot(half_x, half_y))
        return cls(tuple(kinds), np.stack([x, y, 0.5 * (z_min + z_max)], axis=1),
                   np.hypot(horizontal, 0.5 * (z_max - z_min)), corners,
                   np.stack([x, y, c, s, half_x, half_y, z_min, z_max], axis=1).astype(
                       np.float32),
                   np.stack([x, y, np.maximum(radius, 1e-3), z_min, z_max], axis=1).astype(
                       np.float32),
                   np.asarray(reflectivity, np.float32).reshape(-1),
                   np.clip(np.asarray(bgr, np.float32).reshape(-1, 3), 6.0, 252.0))

    @classmethod
    def of(cls, solids: Sequence[Solid]) -> 'SolidSet':
        """Return the set of a sequence of solids."""
        fields = [[getattr(s, name) for s in solids] for name in (
            'x', 'y', 'z_min', 'z_max', 'half_x', 'half_y', 'radius', 'yaw_rad', 'bgr',
            'reflectivity')]
        return cls.build([s.kind for s in solids], *fields)

    def __add__(self, other: 'SolidSet') -> 'SolidSet':
        """Return the set of the solids of both sets, these first."""
        if not other.kinds:
            return self
        return SolidSet(self.kinds + other.kinds, *(
            np.concatenate([getattr(self, name), getattr(other, name)])
            for name in ('centers', 'radii', 'corners', 'box', 'cylinder', 'reflectivity',
                         'bgr')))


def _crop_of(number: int) -> str:
    rest = number % 5
    if rest in (0, 2):
        return 'corn'
    if rest in (1, 3):
        return 'soybean'
    return 'potato' if number % 10 == 4 else 'empty'


def _plot_size(number: int) -> tuple[float, float]:
    return (84.968, 60.0) if number == 48 else (SQUARE_M, SQUARE_M)


class Terrain:
    """
    The fixed ground of the ACRE tile.

    Lookups take scalars or numpy arrays (of the same shape) and answer in kind.
    """

    def __init__(self) -> None:
        """Lay out the fields, the cells and the static objects."""
        self.cell_kind = np.full((GRID_ROWS, GRID_COLUMNS), _CELL_GRASS, np.int8)
        self.cell_field = np.zeros((GRID_ROWS, GRID_COLUMNS), np.int16)
        fields = []
        number = 0
        for row in range(GRID_ROWS - 1, -1, -1):
            for column in range(GRID_COLUMNS):
                if number == FIELD_COUNT:
                    break
                number += 1
                x0 = GRID_ORIGIN_XY[0] + column * PITCH_M
                y0 = GRID_ORIGIN_XY[1] + row * PITCH_M
                width, height = _plot_size(number)
                fields.append(Field(number, f'F{number}', _crop_of(number), x0, y0,
                                    x0 + width, y0 + height))
                self.cell_kind[row, column] = _CELL_FIELD
                self.cell_field[row, column] = number
        for row, column in ((2, 3), (2, 4), (2, 5)):
            self.cell_kind[row, column] = _CELL_YARD
        self.fields: tuple[Field, ...] = tuple(fields)
        self._field_size = np.zeros((FIELD_COUNT + 1, 2), np.float32)
        self._field_surface = np.full(FIELD_COUNT + 1, SURFACE_GRASS, np.int8)
        for field in fields:
            self._field_size[field.number] = (field.x_max - field.x_min,
                                              field.y_max - field.y_min)
            self._field_surface[field.number] = _CROP_SURFACE[field.crop]
        self.solids: tuple[Solid, ...] = tuple(_static_solids(self))
        self.solid_set = SolidSet.of(self.solids)

    def surface_classes(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """
        Return the surface class of points from a raster of 0.5 m (the sensors' fast path).

        Points off the grid (also inf and NaN) are grass. The result is intp, ready to index
        the tables of the surface classes.
        """
        raster, x0, y0 = _surface_raster()
        cols = raster.shape[1]
        fx = np.fmin(np.fmax((x - x0) * (1.0 / RASTER_M), 0.0), cols - 1.0)
        index = ((y - y0) * (1.0 / RASTER_M)).astype(np.intp)
        index *= cols
        index += fx.astype(np.intp)
        # Off the raster to the south or the north, 'clip' lands in the grass border.
        return np.take(raster.ravel(), index, mode='clip').astype(np.intp)

    def field(self, number: int) -> Field:
        """Return field ``number`` (1 to 59); KeyError for another number."""
        if not 1 <= number <= len(self.fields):
            raise KeyError(number)
        return self.fields[number - 1]

    def height_at(self, x, y):
        """Return the height of the ground in metres."""
        return ground_height(x, y)

    def height_and_gradient(self, x, y) -> tuple:
        """Return the height of the ground and its slopes dh/dx and dh/dy."""
        return ground_height(x, y), GROUND_SLOPE[0], GROUND_SLOPE[1]

    def classify(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """
        Return the surface class (int8) and the field number (int16, 0 outside) of points.

        :param x: world x of the points, a float array.
        :param y: world y of the points, of the same shape.
        """
        gx = (x - GRID_ORIGIN_XY[0]) * (1.0 / PITCH_M)
        gy = (y - GRID_ORIGIN_XY[1]) * (1.0 / PITCH_M)
        column = np.floor(gx)
        row = np.floor(gy)
        u = (gx - column) * PITCH_M
        v = (gy - row) * PITCH_M
        inside = (column >= 0) & (column < GRID_COLUMNS) & (row >= 0) & (row < GRID_ROWS)
        column = np.where(inside, column, 0).astype(np.intp)
        row = np.where(inside, row, 0).astype(np.intp)
        kind = np.where(inside, self.cell_kind[row, column], _CELL_GRASS)
        number = np.where(inside, self.cell_field[row, column], 0)
        size = self._field_size[number]
        in_field = (u < size[..., 0]) & (v < size[..., 1]) & (number > 0)
        in_square = (u < SQUARE_M) & (v < SQUARE_M)
        surface = np.where(in_square & (kind == _CELL_YARD), SURFACE_YARD, SURFACE_GRASS)
        surface = np.where(inside & (v >= SQUARE_M), SURFACE_ROAD, surface)
        surface = np.where(in_field, self._field_surface[number], surface).astype(np.int8)
        return surface, np.where(in_field, number, 0).astype(np.int16)

    def locate(self, x: float, y: float) -> tuple[int, int]:
        """
        Return the surface class and the field number (0 outside) of one point.

        The same answer as classify, in plain Python: a few microseconds for a point that the
        engine asks about at every physics step.
        """
        gx = (x - GRID_ORIGIN_XY[0]) / PITCH_M
        gy = (y - GRID_ORIGIN_XY[1]) / PITCH_M
        column, row = math.floor(gx), math.floor(gy)
        if not (0 <= column < GRID_COLUMNS and 0 <= row < GRID_ROWS):
            return SURFACE_GRASS, 0
        u, v = (gx - column) * PITCH_M, (gy - row) * PITCH_M
        number = int(self.cell_field[row, column])
        if number:
            field = self.fields[number - 1]
            if u < field.x_max - field.x_min and v < field.y_max - field.y_min:
                return _CROP_SURFACE[field.crop], number
        if v >= SQUARE_M:
            return SURFACE_ROAD, 0
        if u < SQUARE_M and self.cell_kind[row, column] == _CELL_YARD:
            return SURFACE_YARD, 0
        return SURFACE_GRASS, 0

    def field_at(self, x: float, y: float) -> int:
        """Return the number of the field at a world point, 0 outside every field."""
        return self.locate(x, y)[1]

    def surface_at(self, x: float, y: float) -> str:
        """Return 'soil' or 'hard' (roads and the farm yards), as field_query does."""
        return 'hard' if self.locate(x, y)[0] in (SURFACE_ROAD, SURFACE_YARD) else 'soil'

    def surface_name_at(self, x: float, y: float) -> str:
        """Return the name of the surface class at a point (grass, gravel, corn, ...)."""
        return SURFACE_NAMES[self.locate(x, y)[0]]

    def edge_distance_m(self, x: float, y: float) -> float:
        """Return the distance to the edge of the field at a point, 0 outside a field."""
        number = self.field_at(x, y)
        return self.field(number).edge_distance_m(x, y) if number else 0.0

    def crop_at(self, x: float, y: float) -> str:
        """Return the crop at a point: corn, soybean, potato, or '' outside a planted field."""
        number = self.field_at(x, y)
        crop = self.field(number).crop if number else 'empty'
        return '' if crop == 'empty' else crop


@functools.cache
def _surface_raster() -> tuple[np.ndarray, float, float]:
    """Return the surface class raster (rows = y, columns = x) and its south-west corner."""
    x0 = GRID_ORIGIN_XY[0] - RASTER_M
    y0 = GRID_ORIGIN_XY[1] - RASTER_M
    cols = int(math.ceil(GRID_COLUMNS * PITCH_M / RASTER_M)) + 2
    rows = int(math.ceil(GRID_ROWS * PITCH_M / RASTER_M)) + 2
    raster = np.full((rows, cols), SURFACE_GRASS, np.uint8)

    def span(low: float, high: float, origin: float) -> slice:
        # The raster cells whose centres lie in [low, high).
        return slice(int(math.ceil((low - origin) / RASTER_M - 0.5)),
                     int(math.ceil((high - origin) / RASTER_M - 0.5)))

    terrain = Terrain()
    for row in range(GRID_ROWS):
        for column in range(GRID_COLUMNS):
            cx = GRID_ORIGIN_XY[0] + column * PITCH_M
            cy = GRID_ORIGIN_XY[1] + row * PITCH_M
            raster[span(cy + SQUARE_M, cy + PITCH_M, y0), span(cx, cx + PITCH_M, x0)] = (
                SURFACE_ROAD)
            if terrain.cell_kind[row, column] == _CELL_YARD:
                raster[span(cy, cy + SQUARE_M, y0), span(cx, cx + SQUARE_M, x0)] = SURFACE_YARD
    for field in terrain.fields:
        raster[span(field.y_min, field.y_max, y0), span(field.x_min, field.x_max, x0)] = (
            _CROP_SURFACE[field.crop])
    return raster, x0, y0


def _tree(x: float, y: float, height: float, radius: float) -> list[Solid]:
    trunk = Solid('cylinder', x, y, -0.5, 0.45 * height, radius=0.25, bgr=(38, 58, 88),
                  reflectivity=42.0)
    crown = Solid('cylinder', x, y, 0.4 * height, height, radius=radius, bgr=(44, 112, 52),
                  reflectivity=34.0)
    return [trunk, crown]


def _box(x: float, y: float, length: float, width: float, height: float,
         bgr: tuple[float, float, float], reflectivity: float, yaw_rad: float = 0.0) -> Solid:
    return Solid('box', x, y, -0.5, height, half_x=length / 2.0, half_y=width / 2.0,
                 yaw_rad=yaw_rad, bgr=bgr, reflectivity=reflectivity)


_BUILDING = 96.0
_FOLIAGE = 34.0
_FOLIAGE_BGR = (44, 112, 52)


def _static_solids(terrain: Terrain) -> list[Solid]:
    """
    Return the buildings, windbreaks, groves and trees of the tile (the same for every run).

    A windbreak (a row of trees) is one box and a grove one wide cylinder: few solids keep the
    sensors' ray casts cheap and still give the top view its structure.
    """
    solids = [
        # The ICSC garage south of its spawn pose, a machine shed and a silo in its yard.
        _box(-38.7, -166.0, 30.0, 20.0, 7.0, (176, 172, 168), _BUILDING),
        _box(18.0, -182.0, 24.0, 16.0, 6.0, (60, 70, 150), _BUILDING),
        Solid('cylinder', 32.0, -140.0, -0.5, 14.0, radius=3.5, bgr=(190, 196, 200),
              reflectivity=120.0),
        # The Beck lot (the yard to the east) and the yard to the west.
        _box(122.4, -210.0, 40.0, 18.0, 8.0, (168, 168, 170), _BUILDING),
        _box(-137.6, -190.0, 26.0, 14.0, 6.5, (70, 80, 160), _BUILDING, yaw_rad=0.35),
        # Windbreaks along the west and the south side of the garage yard.
        _box(-62.0, -182.0, 4.0, 100.0, 9.0, _FOLIAGE_BGR, _FOLIAGE),
        _box(12.0, -236.0, 70.0, 4.0, 8.0, _FOLIAGE_BGR, _FOLIAGE),
    ]
    for x, y in ((46.0, -205.0), (47.0, -172.0), (-8.0, -128.0)):
        solids += _tree(x, y, 9.0, 2.6)
    # One grove on each grass cell of the two southern rows.
    rng = np.random.default_rng(20261002)
    for row in (0, 1):
        for column in range(GRID_COLUMNS):
            x, y = rng.uniform(20.0, SQUARE_M - 20.0, 2)
            solids.append(Solid(
                'cylinder', GRID_ORIGIN_XY[0] + column * PITCH_M + float(x),
                GRID_ORIGIN_XY[1] + row * PITCH_M + float(y), -0.5,
                float(rng.uniform(7.0, 13.0)), radius=float(rng.uniform(6.0, 14.0)),
                bgr=_FOLIAGE_BGR, reflectivity=_FOLIAGE))
    heights = ground_height(np.array([s.x for s in solids]), np.array([s.y for s in solids]))
    return [dataclasses.replace(s, z_min=s.z_min + float(h), z_max=s.z_max + float(h))
            for s, h in zip(solids, heights)]
