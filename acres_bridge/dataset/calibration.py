# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The beam geometry of a sequence (meta.json ``calibration``) and its estimate from the data.

The stored cell (ring r, column c) is one beam. Its column has the azimuth (yaw in the sensor
frame, FLU, counter-clockwise positive) ``a_c = -c x 360 / columns`` degrees when the columns go
clockwise (the format's order; ``+c x 360 / columns`` otherwise). The beam leaves the lens
centre ``L_c = lens_center_m x (cos a_c, sin a_c, 0)``, in the direction of elevation
``elevations_deg[r]`` and azimuth ``a_c + azimuth_offsets_deg[r]``, and its point is
``L_c + range x direction``.

A cloud gives points, not beams: :class:`BeamEstimate` fits each ring's elevation and azimuth
offset to the directions from the lens centre to the points, weighted by the squared range so
that it minimises the distance between the stored and the source points.
"""

import dataclasses
import math
from typing import Any

import numpy as np

from acres_bridge.dataset.format import DatasetError
from acres_bridge.dataset.format import LENS_CENTER_M
from acres_bridge.geometry import rpy_deg_to_matrix

FRAMES = ('sensor', 'base')


def column_azimuths_rad(columns: int, *, clockwise: bool = True) -> np.ndarray:
    """Return the azimuth of each column in the sensor frame, radians (column 0 ahead)."""
    step = 2.0 * math.pi / columns
    index = np.arange(columns, dtype=np.float64)
    return -index * step if clockwise else index * step


def lens_centres(columns: int, lens_center_m: float, *, clockwise: bool = True) -> np.ndarray:
    """Return the lens centre of each column, (columns, 3) float64, sensor frame."""
    azimuth = column_azimuths_rad(columns, clockwise=clockwise)
    return np.stack([lens_center_m * np.cos(azimuth), lens_center_m * np.sin(azimuth),
                     np.zeros(columns)], axis=-1)


def _floats(values: Any, count: int, name: str) -> np.ndarray:
    if values is None:
        return np.full(count, np.nan)
    array = np.array([np.nan if value is None else value for value in values], dtype=np.float64)
    if array.shape != (count,):
        raise DatasetError(f'calibration {name} has {array.size} values for {count}')
    return array


@dataclasses.dataclass(frozen=True, eq=False)
class Calibration:
    """
    The calibration of one sequence (the ``calibration`` object of meta.json).

    A value that is not known is NaN (``null`` in the file); a ring that never returned has
    NaN angles, and its points are NaN.
    """

    rings: int
    columns: int
    elevations_deg: np.ndarray
    azimuth_offsets_deg: np.ndarray
    clockwise: bool = True
    lens_center_m: float = LENS_CENTER_M
    sweep_s: float = 0.0
    last_column_at_stamp: bool = True
    ring_firing_s: np.ndarray | None = None
    mount_xyz_m: tuple[float, float, float] | None = None
    mount_rpy_deg: tuple[float, float, float] | None = None
    min_range_m: float = float('nan')
    max_range_m: float = float('nan')
    first_column: int = 0
    firing_clockwise: bool = True
    raw: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> 'Calibration':
        """
        Return the calibration of a meta.json document.

        :raises DatasetError: when keys are missing or have the wrong size.
        """
        try:
            rings, columns = int(meta['rings']), int(meta['columns'])
            # A sequence committed before its first scan has no calibration yet: NaN angles.
            values = meta.get('calibration') or {}
        except (KeyError, TypeError, ValueError) as exc:
            raise DatasetError(f'meta.json lacks rings or columns: {exc}') from exc
        mount_xyz = values.get('mount_xyz_m')
        mount_rpy = values.get('mount_rpy_deg')

        def number(key: str, default: float) -> float:
            value = values.get(key, default)
            return float('nan') if value is None else float(value)

        return cls(
            rings=rings, columns=columns,
            elevations_deg=_floats(values.get('elevations_deg'), rings, 'elevations_deg'),
            azimuth_offsets_deg=_floats(values.get('azimuth_offsets_deg'), rings,
                                        'azimuth_offsets_deg'),
            clockwise=bool(values.get('clockwise', True)),
            lens_center_m=number('lens_center_m', LENS_CENTER_M),
            sweep_s=number('sweep_s', 0.0),
            last_column_at_stamp=bool(values.get('last_column_at_stamp', True)),
            ring_firing_s=_floats(values.get('ring_firing_s', [0.0] * rings), rings,
                                  'ring_firing_s'),
            mount_xyz_m=None if mount_xyz is None else tuple(float(v) for v in mount_xyz),
            mount_rpy_deg=None if mount_rpy is None else tuple(float(v) for v in mount_rpy),
            min_range_m=number('min_range_m', float('nan')),
            max_range_m=number('max_range_m', float('nan')),
            first_column=int(values.get('first_column', 0)),
            firing_clockwise=bool(values.get('firing_clockwise', values.get('clockwise', True))),
            raw=dict(values))

    def to_meta(self) -> dict[str, Any]:
        """Return the ``calibration`` object of meta.json (NaN becomes null when written)."""
        values = dict(self.raw)
        values.update({
            'elevations_deg': [float(v) for v in self.elevations_deg],
            'azimuth_offsets_deg': [float(v) for v in self.azimuth_offsets_deg],
            'clockwise': self.clockwise, 'lens_center_m': self.lens_center_m,
            'sweep_s': self.sweep_s, 'last_column_at_stamp': self.last_column_at_stamp,
            'ring_firing_s': [float(v) for v in (
                self.ring_firing_s if self.ring_firing_s is not None else np.zeros(self.rings))],
            'mount_xyz_m': None if self.mount_xyz_m is None else list(self.mount_xyz_m),
            'mount_rpy_deg': None if self.mount_rpy_deg is None else list(self.mount_rpy_deg),
            'min_range_m': self.min_range_m, 'max_range_m': self.max_range_m,
            'first_column': self.first_column, 'firing_clockwise': self.firing_clockwise})
        return values

    @property
    def lens(self) -> np.ndarray:
        """The lens centre of each column, (columns, 3) float64, sensor frame."""
        return lens_centres(self.columns, self.lens_center_m, clockwise=self.clockwise)

    @property
    def directions(self) -> np.ndarray:
        """The unit direction of each beam, (rings, columns, 3) float64, sensor frame."""
        return self._tables()[1]

    def _tables(self) -> tuple[np.ndarray, np.ndarray]:
        cached = self.__dict__.get('_cached_tables')
        if cached is None:
            azimuth = (column_azimuths_rad(self.columns, clockwise=self.clockwise)[np.newaxis]
                       + np.radians(self.azimuth_offsets_deg)[:, np.newaxis])
            elevation = np.radians(self.elevations_deg)[:, np.newaxis]
            directions = np.stack([np.cos(elevation) * np.cos(azimuth),
                                   np.cos(elevation) * np.sin(azimuth),
                                   np.broadcast_to(np.sin(elevation), azimuth.shape)], axis=-1)
            cached = (self.lens, directions)
            object.__setattr__(self, '_cached_tables', cached)
        return cached

    def mount_matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """
        Return (rotation, translation) of the sensor frame in base_footprint.

        :raises DatasetError: when the sequence has no mount (no /tf_static was seen).
        """
        if self.mount_xyz_m is None or self.mount_rpy_deg is None:
            raise DatasetError('the sequence has no sensor mount (mount_xyz_m is null), so '
                               'points in "base" are not known; use frame "sensor"')
        return rpy_deg_to_matrix(self.mount_rpy_deg), np.asarray(self.mount_xyz_m, np.float64)

    def points(self, range_m: np.ndarray, frame: str = 'sensor') -> np.ndarray:
        """
        Return the point of each cell: shape ``range_m.shape + (3,)``, float32 metres.

        :param range_m: ranges (..., rings, columns) in metres, NaN for no return (as
            :meth:`Sequence.range_m` gives them).
        :param frame: ``sensor`` (the LiDAR's frame) or ``base`` (base_footprint).
        :raises DatasetError: for another frame, a wrong shape, or ``base`` without a mount.
        """
        if frame not in FRAMES:
            raise DatasetError(f'frame {frame!r} is not one of {", ".join(FRAMES)}')
        range_m = np.asarray(range_m, dtype=np.float32)
        if range_m.shape[-2:] != (self.rings, self.columns):
            raise DatasetError(f'ranges of shape {range_m.shape} are not (..., {self.rings}, '
                               f'{self.columns})')
        lens, directions = self._tables()
        if frame == 'base':
            rotation, translation = self.mount_matrix()
            lens = lens @ rotation.T + translation
            directions = directions @ rotation.T
        lens32 = lens.astype(np.float32)
        directions32 = directions.astype(np.float32)
        out = range_m[..., np.newaxis] * directions32
        out += lens32[np.newaxis, :, :]
        return out

    def column_times_s(self) -> np.ndarray:
        """
        Return the firing time of each column relative to the scan's time, float64 seconds.

        Column c is the f-th to fire, f = (c - first_column) mod columns in the firing
        direction, and fires (columns - 1 - f) / columns x sweep_s before the scan's time
        (after it, f / columns x sweep_s, when the first column is at the stamp).
        """
        index = np.arange(self.columns)
        if self.firing_clockwise == self.clockwise:
            order = (index - self.first_column) % self.columns
        else:
            order = (self.first_column - index) % self.columns
        step = self.sweep_s / self.columns
        if self.last_column_at_stamp:
            return (order - (self.columns - 1)) * step
        return order * step


class BeamEstimate:
    """
    Running estimate of each ring's elevation and azimuth offset from stored-order points.

    :param rings: the rings of the sequence.
    :param columns: the columns (already in the format's order: column 0 ahead, clockwise).
    """

    def __init__(self, rings: int, columns: int, *,
                 lens_center_m: float = LENS_CENTER_M) -> None:
        self.rings = rings
        self.columns = columns
        self.lens = lens_centres(columns, lens_center_m)
        self._azimuth = column_azimuths_rad(columns).astype(np.float32)
        self.weight = np.zeros(rings)
        self.elevation = np.zeros(rings)
        self.offset = np.zeros(rings)
        self.scans = 0

    def add(self, xyz: np.ndarray, valid: np.ndarray) -> None:
        """
        Add one scan: ``xyz`` (rings, columns, 3) float32 sensor frame, ``valid`` its returns.

        The directions are taken from the lens centre of each cell's column.
        """
        # Every 4th column is plenty for 32 angles per ring, at a quarter of the cost.
        xyz, valid = xyz[:, ::4], valid[:, ::4]
        if not valid.any():
            return
        ring_of = np.broadcast_to(np.arange(self.rings)[:, np.newaxis], valid.shape)[valid]
        vector = xyz[valid].astype(np.float64) - self.lens[::4][np.newaxis].repeat(
            self.rings, axis=0)[valid]
        squared = np.einsum('ij,ij->i', vector, vector)
        distance = np.sqrt(squared)
        keep = distance > 1e-3
        vector, squared, distance, ring_of = (vector[keep], squared[keep], distance[keep],
                                              ring_of[keep])
        elevation = np.arcsin(np.clip(vector[:, 2] / distance, -1.0, 1.0))
        column_of = np.broadcast_to(np.arange(0, self.columns, 4)[np.newaxis],
                                    valid.shape)[valid][keep]
        offset = np.arctan2(vector[:, 1], vector[:, 0]) - self._azimuth[column_of]
        offset = (offset + math.pi) % (2.0 * math.pi) - math.pi
        self.weight += np.bincount(ring_of, squared, self.rings)
        self.elevation += np.bincount(ring_of, squared * elevation, self.rings)
        self.offset += np.bincount(ring_of, squared * offset, self.rings)
        self.scans += 1

    def state(self) -> dict[str, list[float]]:
        """Return the sums (to continue an estimate when a sequence is appended to)."""
        return {'weight': self.weight.tolist(), 'elevation': self.elevation.tolist(),
                'offset': self.offset.tolist(), 'scans': self.scans}

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state` of an earlier run."""
        self.weight = np.asarray(state['weight'], np.float64)
        self.elevation = np.asarray(state['elevation'], np.float64)
        self.offset = np.asarray(state['offset'], np.float64)
        self.scans = int(state.get('scans', 0))

    def angles_deg(self) -> tuple[np.ndarray, np.ndarray]:
        """Return (elevations, azimuth offsets) in degrees; NaN for a ring without returns."""
        with np.errstate(invalid='ignore', divide='ignore'):
            known = self.weight > 0.0
            elevation = np.where(known, self.elevation / np.where(known, self.weight, 1.0),
                                 np.nan)
            offset = np.where(known, self.offset / np.where(known, self.weight, 1.0), np.nan)
        return np.degrees(elevation), np.degrees(offset)
