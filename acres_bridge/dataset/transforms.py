# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Transforms of the reader: the top view of a scan and the cells of the vehicle body."""

import dataclasses

import numpy as np

from acres_bridge.dataset.calibration import Calibration


def body_cells(calibration: Calibration, range_m: np.ndarray,
               body_mask: np.ndarray | None = None) -> np.ndarray:
    """
    Return the cells whose return is from the vehicle body, bool of ``range_m``'s shape.

    A return is from the body when its cell is in ``body_mask`` or its point (in
    base_footprint) is inside the calibration's ``body_box_base_m`` (``{"min": [x, y, z],
    "max": [x, y, z]}``), when the sequence has one.
    """
    range_m = np.asarray(range_m, dtype=np.float32)
    returns = np.isfinite(range_m)
    body = np.zeros(range_m.shape, dtype=bool)
    if body_mask is not None:
        body |= np.broadcast_to(np.asarray(body_mask, dtype=bool), range_m.shape) & returns
    box = calibration.raw.get('body_box_base_m')
    if box and calibration.mount_xyz_m is not None:
        low = np.asarray(box['min'], np.float32)
        high = np.asarray(box['max'], np.float32)
        points = calibration.points(range_m, 'base')
        with np.errstate(invalid='ignore'):
            body |= np.all((points >= low) & (points <= high), axis=-1)
    return body


@dataclasses.dataclass(frozen=True)
class TopView:
    """
    A grid in base_footprint (x forward, y left) of the returns of a scan.

    ``TopView()(calibration, range_m, drop=cells)`` gives (2, cells_x, cells_y) float32 for one
    scan, (n, 2, cells_x, cells_y) for n: channel 0 is 1 where a cell has a return, channel 1
    the largest height of its returns (``z_min`` where it has none). Cell (i, j) covers x from
    ``x_min + i x cell_m`` and y from ``y_min + j x cell_m``; only heights from ``z_min`` to
    ``z_max`` count. Without a sensor mount the sensor frame stands in for base_footprint.
    """

    x_min: float = -25.6
    y_min: float = -25.6
    cell_m: float = 0.2
    cells_x: int = 256
    cells_y: int = 256
    z_min: float = -1.0
    z_max: float = 3.0

    def __call__(self, calibration: Calibration, range_m: np.ndarray,
                 drop: np.ndarray | None = None) -> np.ndarray:
        """
        Return the top view of one scan (rings, columns) or of several (n, rings, columns).

        :param drop: cells to leave out (e.g. :func:`body_cells`), of ``range_m``'s shape or
            (rings, columns).
        """
        range_m = np.asarray(range_m, dtype=np.float32)
        single = range_m.ndim == 2
        scans = range_m[np.newaxis] if single else range_m
        frame = 'base' if calibration.mount_xyz_m is not None else 'sensor'
        points = calibration.points(scans, frame)
        keep = np.isfinite(scans)
        if drop is not None:
            keep &= ~np.broadcast_to(np.asarray(drop, dtype=bool), scans.shape)
        count = scans.shape[0]
        cells = self.cells_x * self.cells_y
        grid = np.zeros((count, 2, self.cells_x, self.cells_y), dtype=np.float32)
        grid[:, 1] = self.z_min
        scan_of = np.broadcast_to(np.arange(count)[:, np.newaxis, np.newaxis], scans.shape)[keep]
        x, y, z = (points[..., axis][keep] for axis in range(3))
        i = np.floor((x - self.x_min) / self.cell_m)
        j = np.floor((y - self.y_min) / self.cell_m)
        inside = ((i >= 0) & (i < self.cells_x) & (j >= 0) & (j < self.cells_y)
                  & (z >= self.z_min) & (z <= self.z_max))
        flat = (scan_of[inside] * cells + i[inside].astype(np.int64) * self.cells_y
                + j[inside].astype(np.int64))
        z = z[inside]
        occupancy = grid[:, 0].reshape(-1)
        height = grid[:, 1].reshape(-1)
        occupancy[flat] = 1.0
        # The highest return of each cell: sort by cell, then height; keep each cell's last.
        order = np.lexsort((z, flat))
        flat, z = flat[order], z[order]
        last = np.ones(flat.size, dtype=bool)
        last[:-1] = flat[1:] != flat[:-1]
        height[flat[last]] = z[last]
        grid[:, 0] = occupancy.reshape(count, self.cells_x, self.cells_y)
        grid[:, 1] = height.reshape(count, self.cells_x, self.cells_y)
        return grid[0] if single else grid
