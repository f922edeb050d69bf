# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Autoware's LiDAR point layout, PointXYZIRCAEDT, from a LiDAR frame's points (numpy, no ROS).

The definition is Autoware's own: ``struct PointXYZIRCAEDT`` and its PCL registration in
``common/autoware_point_types/include/autoware/point_types/types.hpp`` of the repository
autowarefoundation/autoware_core, release 1.9.0 (commit f25f83c632c1984ec276c894c41857d4abc0dad8;
unchanged at 2d693b8229147fc81ce4807e630b5bcb7ac625a4, 2026-08-20), and the exact check its
preprocessing makes of a cloud's fields, ``is_data_layout_compatible_with_point_xyzircaedt`` in
``memory.hpp`` beside it: these ten fields, in this order, at these offsets, count 1::

    offset  field        type      filled with
    0       x            FLOAT32   the frame's x, y, z (m, LiDAR frame, FLU), bit for bit
    4       y            FLOAT32
    8       z            FLOAT32
    12      intensity    UINT8     the reflectivity byte (the frame's float, 0 to 255)
    13      return_type  UINT8     1 SINGLE_STRONGEST for a return, 0 INVALID for none
    14      channel      UINT16    the ring index r
    16      azimuth      FLOAT32   rad, clockwise from x (ahead): atan2(-y, x), in [0, 2 pi)
    20      elevation    FLOAT32   rad, up from the x-y plane: atan2(z, hypot(x, y))
    24      distance     FLOAT32   m from the frame's origin: |(x, y, z)|
    28      time_stamp   UINT32    ns after the header stamp (the column's firing time)

point step 32. What is exact and why: x, y, z and the ring are the frame's; the frame has no
beam angles and no range (the stream carries points, not the sensor's ring table), so azimuth,
elevation and distance are the point's own direction and distance from the LiDAR frame's
origin. That is how Autoware defines them where it computes them (its distortion corrector sets
``distance`` to the norm of x, y, z and ``azimuth`` to a fixed sign and quarter-turn offset of
atan2(y, x)), and how its RoboSense driver (tier4/nebula's ``robosense_decoder.hpp``: x =
r cos(el) cos(az), y = -r cos(el) sin(az)) relates them, with the azimuth clockwise: the
Helios of the Polaris is a RoboSense sensor. It is not the lens range of the LiDAR dataset
(seed 003), measured from a lens centre 0.035 m off the spin axis. ``time_stamp`` is the
column's firing time by the dataset's rule (the frame carries no ring firing offsets), so the
header is stamped at the start of the sweep, as the drivers stamp a scan at its first point.

A cell without a return keeps its place (the organised layout of the other field sets): NaN x,
y, z, azimuth, elevation and distance, intensity 0, return type INVALID, its channel and its
column's time. Autoware's drivers publish only returns, in one row (``height`` 1, is_dense):
:func:`returns_only` gives that form.
"""

import numpy as np
from sensor_msgs.msg import PointField

POINT_STEP = 32
# Autoware's ReturnType (types.hpp): INVALID 0, SINGLE_STRONGEST 1; each beam of the stream has
# one return, the strongest (seed 000).
RETURN_INVALID = 0
RETURN_SINGLE_STRONGEST = 1

# (name, offset, datatype) of each field, in the order of the definition.
FIELDS = (('x', 0, PointField.FLOAT32), ('y', 4, PointField.FLOAT32),
          ('z', 8, PointField.FLOAT32), ('intensity', 12, PointField.UINT8),
          ('return_type', 13, PointField.UINT8), ('channel', 14, PointField.UINT16),
          ('azimuth', 16, PointField.FLOAT32), ('elevation', 20, PointField.FLOAT32),
          ('distance', 24, PointField.FLOAT32), ('time_stamp', 28, PointField.UINT32))

DTYPE = np.dtype({
    'names': [name for name, _, _ in FIELDS],
    'formats': ['<f4', '<f4', '<f4', 'u1', 'u1', '<u2', '<f4', '<f4', '<f4', '<u4'],
    'offsets': [offset for _, offset, _ in FIELDS],
    'itemsize': POINT_STEP,
})
# The float32 columns of azimuth, elevation and distance in a point seen as 8 float32.
_AZIMUTH, _ELEVATION, _DISTANCE = (DTYPE.fields[name][1] // 4
                                   for name in ('azimuth', 'elevation', 'distance'))
_TWO_PI = np.float32(2.0 * np.pi)
_ITEM = np.dtype((np.void, POINT_STEP))


def template(columns: int, rings: int, times_ns: np.ndarray) -> np.ndarray:
    """
    Return an organised cloud's points with channel and time_stamp set, the rest zero.

    :param times_ns: each column's time after the stamp, ns (``columns`` values).
    """
    points = np.zeros((columns, rings), dtype=DTYPE)
    points['channel'] = np.arange(rings, dtype='<u2')
    points['time_stamp'] = np.asarray(times_ns, dtype='<u4')[:, np.newaxis]
    return points


def fill(cells: np.ndarray, points: memoryview | bytes) -> None:
    """
    Write a frame's points into Autoware points whose channel and time_stamp are set.

    :param cells: a writable array of ``DTYPE``, one per cell in the frame's order (flat).
    :param points: the frame's points, 16 bytes each (x, y, z, intensity float32).
    """
    source = np.frombuffer(points, dtype='<f4').reshape(-1, 4)
    floats = cells.view('<f4').reshape(-1, POINT_STEP // 4)
    # A copy of one float type to the same type moves the bits: NaN payloads stay as they are.
    floats[:, :3] = source[:, :3]
    x, y, z = np.ascontiguousarray(source[:, :3].T)
    intensity = np.rint(np.clip(source[:, 3], 0.0, 255.0))
    intensity[np.isnan(intensity)] = 0.0
    cells['intensity'] = intensity
    cells['return_type'] = np.isfinite(x).view('u1') * np.uint8(RETURN_SINGLE_STRONGEST)
    planar_squared = x * x + y * y
    floats[:, _DISTANCE] = np.sqrt(planar_squared + z * z)
    floats[:, _ELEVATION] = np.arctan2(z, np.sqrt(planar_squared))
    azimuth = np.arctan2(-y, x)
    azimuth += (azimuth < 0.0) * _TWO_PI
    azimuth[azimuth >= _TWO_PI] = 0.0       # a tiny negative angle rounds up to a full turn
    floats[:, _AZIMUTH] = azimuth


def returns_only(cells: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """
    Return the points of the cells with a return, in the frame's order.

    :param out: where to write them, bytes of exactly that many points (a new array if None);
        :func:`return_count` gives the count.
    """
    # Whole points as 32-byte items, gathered by index: no alignment needed, one copy.
    items = cells.view(_ITEM)
    kept = np.flatnonzero(cells['return_type'] != RETURN_INVALID)
    if out is None:
        return items.take(kept).view(DTYPE)
    target = out.view(_ITEM)
    items.take(kept, out=target, mode='clip')   # clip: raise would buffer out; kept is valid
    return target.view(DTYPE)


def return_count(cells: np.ndarray) -> int:
    """Return how many cells have a return."""
    return int(np.count_nonzero(cells['return_type'] != RETURN_INVALID))
