# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The georeference of the emulated ACRE tile.

The world frame is the grid of the tile: x east, y north, z up, in metres. The utm frame is
UTM zone 16N (NAD83(2011) by default). The tile's grid is the UTM grid turned by
``GRID_ROTATION_DEG`` (the UTM grid azimuth of the tile's north, clockwise) and shifted so that
the world origin lies at ``UTM_ORIGIN_EN``; both values reproduce the control channel seed's
``get_entity_state`` example (world (-38.7087, -141.6659) at UTM (500438.0926, 4479958.1254),
heading 0.0958 deg for a yaw of 89.958 deg). Heights in the utm frame are world z, as the
channel's ``utm.height`` is; the INS's ellipsoidal height is world z plus
``ELLIPSOID_HEIGHT_OFFSET_M``. Quaternions are (x, y, z, w); the rotation math is
:mod:`acres_bridge.geometry`'s.
"""

import functools
import math
from typing import Sequence

import numpy as np
import pyproj

from acres_bridge.geometry import quaternion_from_yaw
from acres_bridge.geometry import quaternion_multiply

UTM_ZONE = 16
GRID_ROTATION_DEG = 0.0534
UTM_ORIGIN_EN = (500476.9333, 4480099.7552)
ELLIPSOID_HEIGHT_OFFSET_M = 181.286
GRAVITY_MPS2 = 9.80665

_COS_G = math.cos(math.radians(GRID_ROTATION_DEG))
_SIN_G = math.sin(math.radians(GRID_ROTATION_DEG))
# Rotation about z by -GRID_ROTATION_DEG: world (tile grid) axes -> UTM grid axes.
_Q_WORLD_TO_GRID = quaternion_from_yaw(-math.radians(GRID_ROTATION_DEG))
_Q_GRID_TO_WORLD = (0.0, 0.0, -_Q_WORLD_TO_GRID[2], _Q_WORLD_TO_GRID[3])

_DATUM_EPSG = {
    # datum: (UTM north zone n -> EPSG code, geographic EPSG code)
    'nad83_2011': (lambda zone: 6329 + zone, 6318),
    'wgs84_g2139': (lambda zone: 32600 + zone, 4326),
}


def world_to_utm(x: float | np.ndarray, y: float | np.ndarray) -> tuple:
    """Return (easting, northing) of world (x, y); scalars or arrays."""
    return (UTM_ORIGIN_EN[0] + x * _COS_G + y * _SIN_G,
            UTM_ORIGIN_EN[1] - x * _SIN_G + y * _COS_G)


def utm_to_world(easting: float | np.ndarray, northing: float | np.ndarray) -> tuple:
    """Return world (x, y) of a UTM (easting, northing); scalars or arrays."""
    de = easting - UTM_ORIGIN_EN[0]
    dn = northing - UTM_ORIGIN_EN[1]
    return de * _COS_G - dn * _SIN_G, de * _SIN_G + dn * _COS_G


def world_yaw_to_grid(yaw_rad: float) -> float:
    """Return the yaw counter-clockwise from UTM grid east of a world yaw (from world east)."""
    return yaw_rad - math.radians(GRID_ROTATION_DEG)


def heading_deg_from_world_yaw(yaw_rad: float) -> float:
    """Return the heading clockwise from UTM grid north, in [0, 360), of a world yaw."""
    return (90.0 - math.degrees(world_yaw_to_grid(yaw_rad))) % 360.0


def quaternion_world_to_grid(q: Sequence[float]) -> tuple[float, float, float, float]:
    """Return the body -> UTM grid attitude of a body -> world quaternion."""
    return quaternion_multiply(_Q_WORLD_TO_GRID, q)


def quaternion_grid_to_world(q: Sequence[float]) -> tuple[float, float, float, float]:
    """Return the body -> world attitude of a body -> UTM grid quaternion."""
    return quaternion_multiply(_Q_GRID_TO_WORLD, q)


@functools.lru_cache(maxsize=8)
def _to_geographic(datum: str, zone: int) -> pyproj.Transformer:
    try:
        projected, geographic = _DATUM_EPSG[datum]
    except KeyError:
        raise ValueError(f'unknown datum {datum!r}') from None
    return pyproj.Transformer.from_crs(projected(zone), geographic, always_xy=True)


# The ellipsoid of each datum's UTM projection: semi-major axis (m), inverse flattening.
_ELLIPSOIDS = {'nad83_2011': (6378137.0, 298.257222101), 'wgs84_g2139': (6378137.0, 298.257223563)}
_UTM_K0 = 0.9996
_UTM_FALSE_EASTING_M = 500000.0


@functools.lru_cache(maxsize=8)
def _kruger(datum: str) -> tuple[float, float, tuple[float, ...]]:
    """Return the rectifying radius x k0, e and the beta series of the inverse projection."""
    try:
        a, inverse_flattening = _ELLIPSOIDS[datum]
    except KeyError:
        raise ValueError(f'unknown datum {datum!r}') from None
    f = 1.0 / inverse_flattening
    n = f / (2.0 - f)
    n2, n3, n4, n5, n6 = n ** 2, n ** 3, n ** 4, n ** 5, n ** 6
    radius = a / (1.0 + n) * (1.0 + n2 / 4.0 + n4 / 64.0 + n6 / 256.0)
    beta = (n / 2.0 - 2.0 * n2 / 3.0 + 37.0 * n3 / 96.0 - n4 / 360.0 - 81.0 * n5 / 512.0
            + 96199.0 * n6 / 604800.0,
            n2 / 48.0 + n3 / 15.0 - 437.0 * n4 / 1440.0 + 46.0 * n5 / 105.0
            - 1118711.0 * n6 / 3870720.0,
            17.0 * n3 / 480.0 - 37.0 * n4 / 840.0 - 209.0 * n5 / 4480.0 + 5569.0 * n6 / 90720.0,
            4397.0 * n4 / 161280.0 - 11.0 * n5 / 504.0 - 830251.0 * n6 / 7257600.0,
            4583.0 * n5 / 161280.0 - 108847.0 * n6 / 3991680.0,
            20648693.0 * n6 / 638668800.0)
    return _UTM_K0 * radius, math.sqrt(f * (2.0 - f)), beta


def utm_to_latlon(easting: float, northing: float, *, datum: str = 'nad83_2011',
                  zone: int = UTM_ZONE) -> tuple[float, float]:
    """
    Return (latitude, longitude) in degrees of a UTM north position.

    Krüger's series to the 6th order in n and Newton's method for the latitude: within a few
    nanometres of PROJ over a zone, and much faster than a pyproj call (pyproj builds a
    transformer in each new thread, and the control channel steps in a new thread each time).
    """
    radius, e, beta = _kruger(datum)
    xi = northing / radius
    eta = (easting - _UTM_FALSE_EASTING_M) / radius
    xi_p, eta_p = xi, eta
    for j, b in enumerate(beta, start=1):
        xi_p -= b * math.sin(2.0 * j * xi) * math.cosh(2.0 * j * eta)
        eta_p -= b * math.cos(2.0 * j * xi) * math.sinh(2.0 * j * eta)
    # tau' = tan(conformal latitude); solve tau' = tau sqrt(1 + s^2) - s sqrt(1 + tau^2).
    tau_p = math.sin(xi_p) / math.hypot(math.sinh(eta_p), math.cos(xi_p))
    tau = tau_p
    for _ in range(5):
        root = math.hypot(1.0, tau)
        sigma = math.sinh(e * math.atanh(e * tau / root))
        tau_i = tau * math.hypot(1.0, sigma) - sigma * root
        slope = ((1.0 - e * e) * math.hypot(1.0, tau_i) * root
                 / ((1.0 + (1.0 - e * e) * tau * tau)))
        tau += (tau_p - tau_i) / slope
    central = math.radians(6.0 * zone - 183.0)
    longitude = central + math.atan2(math.sinh(eta_p), math.cos(xi_p))
    return math.degrees(math.atan(tau)), math.degrees(longitude)


def latlon_to_utm(latitude: float, longitude: float, *, datum: str = 'nad83_2011',
                  zone: int = UTM_ZONE) -> tuple[float, float]:
    """Return (easting, northing) of a latitude and longitude in degrees."""
    easting, northing = _to_geographic(datum, zone).transform(
        longitude, latitude, direction=pyproj.enums.TransformDirection.INVERSE)
    return easting, northing
