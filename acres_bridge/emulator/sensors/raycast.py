# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Ray casting on the ground and on solids, shared by the LiDAR and the camera.

Directions are structure-of-arrays (dx, dy, dz) of float32 and need not be unit vectors; the
origin is one point given as Python floats, which keeps the arithmetic in float32. A miss is
the finite ray parameter FAR, and a selection is arithmetic with 0/1 masks: on this data
np.where and masked copies cost many times an add.
"""

from __future__ import annotations

import numpy as np

from acres_bridge.emulator.terrain import SolidSet
from acres_bridge.emulator.terrain import Terrain

# Rays a step of the LiDAR or the camera works on at once: a whole Polaris scan (57,600 beams)
# or image (28,672 rays). Fewer numpy calls beat the smaller temporaries (docs/benchmarks.md,
# "Figures behind choices in the code"); glibc's mmap threshold grows to the temporaries'
# size after the first ones are freed, so they come from the heap, not from fresh pages.
CHUNK_BEAMS = 60000

FAR = np.float32(1.0e6)
ONE = np.float32(1.0)


def ground_hits(terrain: Terrain, origin: tuple, dx: np.ndarray, dy: np.ndarray,
                dz: np.ndarray, t_max: float) -> np.ndarray:
    """
    Return the ray parameter of the ground hit (a plane), FAR where none within t_max.

    :param origin: x, y, z of the rays' origin: floats, or float32 arrays that broadcast with
        the directions (one origin per ray or per row of rays).
    """
    ox, oy, oz = origin
    h0, gx, gy = terrain.height_and_gradient(ox, oy)
    descent = float(gx) * dx + float(gy) * dy - dz
    t = np.asarray(oz - h0, np.float32) / descent
    return or_far(np.fmin(np.fmax(t, 0.0), FAR), (descent > 1e-6) & (t <= t_max) & (t > 0.0))


def or_far(t: np.ndarray, hit: np.ndarray) -> np.ndarray:
    """Return t where hit, FAR elsewhere; t must be finite and at most FAR."""
    return t * hit + ~hit * FAR


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
    t = or_far(np.fmin(np.fmax(near, 0.0), FAR), (near <= far) & (near > 0.0))
    # The face that the ray enters faces against the ray along its axis.
    face_x = near == xn
    face_y = (near == yn) & ~face_x
    face_z = ~(face_x | face_y)
    nlx = face_x * -np.sign(ddx)
    nly = face_y * -np.sign(ddy)
    return t, c * nlx - s * nly, s * nlx + c * nly, face_z * -np.sign(dz)


def _slab(low, high, direction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    inverse = ONE / direction
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
    t = or_far(t, (disc >= 0.0) & (t > 0.0) & (z_side >= z_min) & (z_side <= z_max)
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


def cast_solids(solids: SolidSet, picks: list[tuple[int, tuple[slice, slice]]],
                origin: tuple[float, float, float], rays: tuple[np.ndarray, ...],
                t: np.ndarray, outputs: list[np.ndarray], shade,
                row_origins: tuple[np.ndarray, ...] | None = None) -> None:
    """
    Cast blocks of rays against solids; where a solid is the nearest hit, shade the ray.

    :param picks: (solid index, (rows, columns)) pairs: each solid and the block of the 2-D
        ray grid that may hit it.
    :param rays: dx, dy, dz: the ray directions, contiguous 2-D arrays of the grid.
    :param t: the ray parameters so far (the ground), a contiguous 2-D array; lowered in place.
    :param outputs: contiguous 2-D arrays of the grid that ``shade`` writes.
    :param shade: ``shade(solid, t, dx, dy, dz, nx, ny, nz) -> values``, one value array per
        output; ``solid`` is a solid index or an array of them, one per ray.
    :param row_origins: x, y, z float32 arrays with one origin per row of the grid, for rays
        that leave from a moving sensor (a LiDAR sweep); ``origin`` is then not used.
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
            start = origin if row_origins is None else tuple(a[rows, None] for a in row_origins)
            cast.append((block, index, directions) + _KERNELS[kind](params, start,
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
            start = origin
            if row_origins is not None:
                rows_of_target = target // width
                start = tuple(np.take(a, rows_of_target) for a in row_origins)
            cast.append((target, solid, directions) + _KERNELS[kind](params, start,
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
