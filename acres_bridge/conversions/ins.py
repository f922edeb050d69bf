# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
INS frames to NavSatFix, Imu and Odometry messages (the values are indexed by ``InsField``).

=========================  =============================================================
message                    values
=========================  =============================================================
NavSatFix                  latitude, longitude, altitude = 16, 17, 18; covariance diagonal
                           = 19, 20, 21 (east, north, up: the ENU order of the message)
                           with COVARIANCE_TYPE_DIAGONAL_KNOWN; status = 29; service GPS
Imu                        orientation = 22..25 (x, y, z, w); angular_velocity = 10..12;
                           linear_acceleration = 13..15 (specific force, +9.81 z at rest)
Odometry (INS)             pose position = 26..28, orientation = 22..25; pose covariance
                           diagonal x, y, z = 19, 20, 21 when all three are finite and
                           not negative; twist linear = 7..9, angular = 10..12 (body
                           frame, the child frame)
Odometry (ground truth)    pose position = 32..34, orientation = 35..38; twist linear x = 39
=========================  =============================================================

Without a geographic reference the simulator sends NaN for 16 to 21 and status -1. The fix then
says so and claims nothing: status STATUS_NO_FIX, COVARIANCE_TYPE_UNKNOWN with a zero
covariance (never a NaN presented as a variance); latitude, longitude and altitude stay NaN,
the message definition's "not available". The same holds for any epoch whose position or
covariance is not finite, whatever its status value says. Covariances the INS does not give
(orientation, rates, acceleration, twist) are zero: unknown, as the messages define.

The INS odometry's position variances are the fix's (east, north, up) put on x, y, z of the world
frame: the map grid is turned from true east by a few degrees, which matters only when the east
and north variances differ. Its orientation rows and columns, the position cross terms and the
twist covariance stay zero: not measured, never "exact" (a filter such as robot_localization
must not fuse the odometry's orientation or twist as if they were). Without a geographic
reference (NaN variances) the whole pose covariance is zero: unknown. The ground truth is exact
and says nothing: its covariances are all zero.

``ins_frame_to_cdr`` gives the same four messages already serialised, for
``Publisher.publish(bytes)``: about a tenth of the cost of building the message objects.
"""

import dataclasses
import functools
import math
import struct

from geometry_msgs.msg import Point
from geometry_msgs.msg import Quaternion
from geometry_msgs.msg import Vector3
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Imu
from sensor_msgs.msg import NavSatFix
from sensor_msgs.msg import NavSatStatus
from std_msgs.msg import Header

from acres_bridge.conversions import cdr
from acres_bridge.conversions.clock import stamp_to_sec_nanosec
from acres_bridge.protocol.frames import INS_FIELD_COUNT
from acres_bridge.protocol.frames import InsField
from acres_bridge.protocol.frames import InsFrame

_F = InsField
_KNOWN_STATUSES = frozenset((NavSatStatus.STATUS_NO_FIX, NavSatStatus.STATUS_FIX,
                             NavSatStatus.STATUS_SBAS_FIX, NavSatStatus.STATUS_GBAS_FIX))
_UNKNOWN_COVARIANCE = (0.0,) * 9


def _values(frame: InsFrame) -> tuple[float, ...]:
    values = frame.values
    if len(values) != INS_FIELD_COUNT:
        raise ValueError(f'an INS frame has {INS_FIELD_COUNT} values, got {len(values)}')
    return values


def _vector(values: tuple[float, ...], first: int) -> Vector3:
    return Vector3(x=values[first], y=values[first + 1], z=values[first + 2])


def _point(values: tuple[float, ...], first: int) -> Point:
    return Point(x=values[first], y=values[first + 1], z=values[first + 2])


def _quaternion(values: tuple[float, ...], first: int) -> Quaternion:
    return Quaternion(x=values[first], y=values[first + 1], z=values[first + 2],
                      w=values[first + 3])


def fix_status(value: float) -> int:
    """
    Return the ``NavSatStatus`` status of value 29: -1, 0, 1 or 2.

    Anything else (NaN, a fraction, an unknown code) is STATUS_NO_FIX: a fix is never claimed
    from a value that does not say one.
    """
    if not math.isfinite(value) or value != int(value) or int(value) not in _KNOWN_STATUSES:
        return NavSatStatus.STATUS_NO_FIX
    return int(value)


def _fix_fields(values: tuple[float, ...]) -> tuple[int, tuple[float, ...], int]:
    """Return the status, the position covariance and its type of the fix of an epoch."""
    status = fix_status(values[_F.FIX_STATUS])
    position = values[_F.LAT:_F.LAT + 3]
    variances = values[_F.COV_E:_F.COV_E + 3]
    position_known = all(math.isfinite(value) for value in position)
    covariance_known = all(math.isfinite(value) and value >= 0.0 for value in variances)
    if not position_known:
        status = NavSatStatus.STATUS_NO_FIX
    if position_known and covariance_known:
        return status, (variances[0], 0.0, 0.0,
                        0.0, variances[1], 0.0,
                        0.0, 0.0, variances[2]), NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN
    return status, _UNKNOWN_COVARIANCE, NavSatFix.COVARIANCE_TYPE_UNKNOWN


def ins_frame_to_navsatfix(frame: InsFrame, header: Header) -> NavSatFix:
    """Return the GNSS fix of an INS epoch (``header`` used as given)."""
    values = _values(frame)
    status, covariance, covariance_type = _fix_fields(values)
    fix = NavSatFix(
        header=header,
        status=NavSatStatus(status=status, service=NavSatStatus.SERVICE_GPS),
        latitude=values[_F.LAT], longitude=values[_F.LON], altitude=values[_F.HEIGHT])
    fix.position_covariance = list(covariance)
    fix.position_covariance_type = covariance_type
    return fix


def ins_frame_to_imu(frame: InsFrame, header: Header) -> Imu:
    """Return the IMU message of an INS epoch (body frame base_footprint; ``header`` as given)."""
    values = _values(frame)
    return Imu(header=header,
               orientation=_quaternion(values, _F.ENU_QX),
               angular_velocity=_vector(values, _F.GYRO_X),
               linear_acceleration=_vector(values, _F.ACCEL_X))


def position_variances(values: tuple[float, ...]) -> tuple[float, float, float]:
    """Return the east, north, up variances of an epoch (19..21), or zeros if any is unusable."""
    variances = values[_F.COV_E:_F.COV_E + 3]
    if all(math.isfinite(value) and value >= 0.0 for value in variances):
        return variances
    return (0.0, 0.0, 0.0)


def _odometry(header: Header, child_frame_id: str, values: tuple[float, ...], position: int,
              orientation: int) -> Odometry:
    odometry = Odometry(header=header, child_frame_id=child_frame_id)
    odometry.pose.pose.position = _point(values, position)
    odometry.pose.pose.orientation = _quaternion(values, orientation)
    return odometry


def ins_frame_to_odometry(frame: InsFrame, header: Header, *, child_frame_id: str) -> Odometry:
    """
    Return the INS odometry of an epoch: base_footprint in the world frame.

    :param header: frame id = the world frame; used as given.
    :param child_frame_id: the body frame (base_footprint with its prefix).
    """
    values = _values(frame)
    odometry = _odometry(header, child_frame_id, values, _F.ENU_X, _F.ENU_QX)
    covariance = [0.0] * 36
    covariance[0], covariance[7], covariance[14] = position_variances(values)
    odometry.pose.covariance = covariance
    odometry.twist.twist.linear = _vector(values, _F.VEL_X)
    odometry.twist.twist.angular = _vector(values, _F.GYRO_X)
    return odometry


def ins_frame_to_ground_truth_odometry(frame: InsFrame, header: Header, *,
                                       child_frame_id: str) -> Odometry:
    """
    Return the exact pose of an epoch: base_footprint in the world frame, forward speed.

    :param header: frame id = the world frame; used as given.
    :param child_frame_id: the body frame (base_footprint with its prefix).
    """
    values = _values(frame)
    odometry = _odometry(header, child_frame_id, values, _F.TRUTH_X, _F.TRUTH_QX)
    odometry.twist.twist.linear.x = values[_F.TRUTH_SPEED]
    return odometry


@dataclasses.dataclass(frozen=True, slots=True)
class _CdrLayout:
    """The structs of the four INS messages for one body and world frame id."""

    fix: struct.Struct
    imu: struct.Struct
    odometry: struct.Struct
    transform: struct.Struct
    body: bytes
    world: bytes
    child: bytes


@functools.lru_cache(maxsize=64)
def _cdr_layout(body_frame_id: str, world_frame_id: str) -> _CdrLayout:
    body_format, body, body_end = cdr.string(body_frame_id, cdr.HEADER_END)
    # NavSatFix: NavSatStatus (int8 status, uint16 service), latitude, longitude, altitude,
    # position_covariance[9], uint8 position_covariance_type.
    status_pad, status_end = cdr.pad(body_end + 1, 2)
    fix_pad, _ = cdr.pad(status_end + 2, 8)
    fix = f'{cdr.HEADER_FORMAT}{body_format}b{status_pad}H{fix_pad}12dB'
    # Imu: orientation, angular_velocity, linear_acceleration, each with a zero covariance[9]
    # (72 zero bytes: unknown).
    imu_pad, _ = cdr.pad(body_end, 8)
    imu = f'{cdr.HEADER_FORMAT}{body_format}{imu_pad}4d72x3d72x3d72x'
    # Odometry: header (world), child_frame_id (body), pose (position, orientation,
    # covariance[36]: the diagonal's x, y, z at 0, 7 and 14, the rest zero), twist (linear,
    # angular, covariance[36] zero).
    world_format, world, world_end = cdr.string(world_frame_id, cdr.HEADER_END)
    child_format, child, child_end = cdr.string(body_frame_id, world_end)
    odometry_pad, _ = cdr.pad(child_end, 8)
    odometry = (f'{cdr.HEADER_FORMAT}{world_format}{child_format}{odometry_pad}'
                '7dd48xd48xd168x6d288x')
    # TFMessage of one TransformStamped: uint32 count 1, then the odometry's header and child
    # frame id 4 bytes further on, then translation and rotation.
    world_format, _, world_end = cdr.string(world_frame_id, cdr.HEADER_END + 4)
    child_format, _, child_end = cdr.string(body_frame_id, world_end)
    transform_pad, _ = cdr.pad(child_end, 8)
    transform = f'<4sIiI{world_format}{child_format}{transform_pad}7d'
    return _CdrLayout(struct.Struct(fix), struct.Struct(imu), struct.Struct(odometry),
                      struct.Struct(transform), body, world, child)


def ins_frame_to_cdr(frame: InsFrame, *, body_frame_id: str,
                     world_frame_id: str) -> tuple[bytes, bytes, bytes, bytes]:
    """
    Return the four messages of an INS epoch serialised (CDR), stamped with the frame's stamp.

    They deserialise to the messages of :func:`ins_frame_to_navsatfix`,
    :func:`ins_frame_to_imu`, :func:`ins_frame_to_odometry` and
    :func:`ins_frame_to_ground_truth_odometry` with ``make_header(stamp, body_frame_id)``
    (fix, IMU) and ``make_header(stamp, world_frame_id)`` with ``child_frame_id =
    body_frame_id`` (the odometries).

    :return: (NavSatFix, Imu, Odometry, ground-truth Odometry).
    :raises ValueError: for a stamp ``builtin_interfaces/Time`` cannot hold, or a frame
        without 40 values.
    """
    values = _values(frame)
    sec, nanosec = stamp_to_sec_nanosec(frame.header.stamp_s)
    layout = _cdr_layout(body_frame_id, world_frame_id)
    status, covariance, covariance_type = _fix_fields(values)
    encapsulation = cdr.ENCAPSULATION
    body = layout.body
    fix = layout.fix.pack(encapsulation, sec, nanosec, body, status, NavSatStatus.SERVICE_GPS,
                          *values[_F.LAT:_F.LAT + 3], *covariance, covariance_type)
    imu = layout.imu.pack(encapsulation, sec, nanosec, body, *values[_F.ENU_QX:_F.ENU_QX + 4],
                          *values[_F.GYRO_X:_F.GYRO_X + 3], *values[_F.ACCEL_X:_F.ACCEL_X + 3])
    pack_odometry = layout.odometry.pack
    world, child = layout.world, layout.child
    # Twist linear (7..9) and angular (10..12, the rates) are adjacent values.
    odometry = pack_odometry(encapsulation, sec, nanosec, world, child,
                             *values[_F.ENU_X:_F.ENU_X + 3], *values[_F.ENU_QX:_F.ENU_QX + 4],
                             *position_variances(values), *values[_F.VEL_X:_F.GYRO_X + 3])
    # Ground truth: position (32..34) and orientation (35..38) are adjacent values; it is
    # exact and claims no covariance.
    truth = pack_odometry(encapsulation, sec, nanosec, world, child,
                          *values[_F.TRUTH_X:_F.TRUTH_QX + 4], 0.0, 0.0, 0.0,
                          values[_F.TRUTH_SPEED], 0.0, 0.0, 0.0, 0.0, 0.0)
    return fix, imu, odometry, truth


def ins_frame_to_transform_cdr(frame: InsFrame, *, body_frame_id: str, world_frame_id: str,
                               ground_truth: bool = False) -> bytes:
    """
    Return the ``/tf`` message of an INS epoch serialised (CDR): the odometry's pose.

    It deserialises to ``TFMessage(transforms=[odometry_to_transform(odometry)])`` of the
    odometry of :func:`ins_frame_to_cdr` (``ground_truth``: of the ground-truth odometry).

    :raises ValueError: as :func:`ins_frame_to_cdr`.
    """
    values = _values(frame)
    sec, nanosec = stamp_to_sec_nanosec(frame.header.stamp_s)
    layout = _cdr_layout(body_frame_id, world_frame_id)
    if ground_truth:
        pose = values[_F.TRUTH_X:_F.TRUTH_QX + 4]
    else:
        pose = (*values[_F.ENU_X:_F.ENU_X + 3], *values[_F.ENU_QX:_F.ENU_QX + 4])
    return layout.transform.pack(cdr.ENCAPSULATION, 1, sec, nanosec, layout.world,
                                 layout.child, *pose)
