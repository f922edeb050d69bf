# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The plumb_bob lens model of a Hello camera, with a monotone continuation of its radius."""

from __future__ import annotations

from typing import Sequence

import numpy as np


class Lens:
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
