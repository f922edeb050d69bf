# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""INS frames to NavSatFix, Imu and Odometry at the contract's value indices."""

import math
import struct

from nav_msgs.msg import Odometry
import numpy as np
import pytest
from rclpy.serialization import deserialize_message
from rclpy.serialization import serialize_message
from sensor_msgs.msg import Imu
from sensor_msgs.msg import NavSatFix
from sensor_msgs.msg import NavSatStatus
from std_msgs.msg import Header
from support.sensor_frames import distinct_ins_values
from support.sensor_frames import ins_frame
from support.sensor_frames import not_georeferenced
from tf2_msgs.msg import TFMessage

from acres_bridge.conversions.clock import make_header
from acres_bridge.conversions.ins import fix_status
from acres_bridge.conversions.ins import ins_frame_to_cdr
from acres_bridge.conversions.ins import ins_frame_to_ground_truth_odometry
from acres_bridge.conversions.ins import ins_frame_to_imu
from acres_bridge.conversions.ins import ins_frame_to_navsatfix
from acres_bridge.conversions.ins import ins_frame_to_odometry
from acres_bridge.conversions.ins import ins_frame_to_transform_cdr
from acres_bridge.conversions.tf import odometry_to_transform
from acres_bridge.emulator.sensors.ins import ins_values
from acres_bridge.emulator.sensors.layouts import hello_layout
from acres_bridge.emulator.sensors.poses import Pose
from acres_bridge.protocol.frames import InsField


def _v(index: int) -> float:
    return 1000.0 + index


def _xyz(message) -> tuple[float, float, float]:
    return (message.x, message.y, message.z)


def _xyzw(message) -> tuple[float, float, float, float]:
    return (message.x, message.y, message.z, message.w)


def test_the_fix_takes_values_16_to_21_and_29():
    frame = ins_frame(distinct_ins_values())
    header = make_header(frame.header.stamp_s, 'polaris/base_footprint')
    fix = ins_frame_to_navsatfix(frame, header)
    assert fix.header is header
    assert (fix.latitude, fix.longitude, fix.altitude) == (_v(16), _v(17), _v(18))
    assert list(fix.position_covariance) == [_v(19), 0, 0, 0, _v(20), 0, 0, 0, _v(21)]
    assert fix.position_covariance_type == NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN
    assert fix.status.status == NavSatStatus.STATUS_GBAS_FIX
    assert fix.status.service == NavSatStatus.SERVICE_GPS


def test_without_a_geographic_reference_the_fix_claims_nothing():
    fix = ins_frame_to_navsatfix(ins_frame(not_georeferenced(distinct_ins_values())), Header())
    assert fix.status.status == NavSatStatus.STATUS_NO_FIX
    assert fix.status.service == NavSatStatus.SERVICE_GPS
    assert fix.position_covariance_type == NavSatFix.COVARIANCE_TYPE_UNKNOWN
    # No NaN is presented as a variance; the position says "not available".
    assert list(fix.position_covariance) == [0.0] * 9
    assert all(math.isnan(value) for value in (fix.latitude, fix.longitude, fix.altitude))


def test_a_fix_status_that_does_not_match_its_values_is_not_trusted():
    values = not_georeferenced(distinct_ins_values())
    values[InsField.FIX_STATUS] = 2.0
    fix = ins_frame_to_navsatfix(ins_frame(values), Header())
    assert fix.status.status == NavSatStatus.STATUS_NO_FIX
    assert fix.position_covariance_type == NavSatFix.COVARIANCE_TYPE_UNKNOWN
    values = distinct_ins_values()
    values[InsField.COV_N] = math.nan
    fix = ins_frame_to_navsatfix(ins_frame(values), Header())
    assert fix.status.status == NavSatStatus.STATUS_GBAS_FIX
    assert fix.position_covariance_type == NavSatFix.COVARIANCE_TYPE_UNKNOWN
    assert list(fix.position_covariance) == [0.0] * 9


@pytest.mark.parametrize(('value', 'status'), [
    (2.0, 2), (1.0, 1), (0.0, 0), (-1.0, -1), (math.nan, -1), (1.5, -1), (7.0, -1),
    (-2.0, -1), (math.inf, -1)])
def test_fix_status_accepts_only_the_navsatstatus_codes(value, status):
    assert fix_status(value) == status


def test_the_imu_takes_orientation_22_to_25_rates_10_to_12_and_forces_13_to_15():
    frame = ins_frame(distinct_ins_values())
    header = make_header(frame.header.stamp_s, 'polaris/base_footprint')
    imu = ins_frame_to_imu(frame, header)
    assert imu.header is header
    assert _xyzw(imu.orientation) == (_v(22), _v(23), _v(24), _v(25))
    assert _xyz(imu.angular_velocity) == (_v(10), _v(11), _v(12))
    assert _xyz(imu.linear_acceleration) == (_v(13), _v(14), _v(15))
    for covariance in (imu.orientation_covariance, imu.angular_velocity_covariance,
                       imu.linear_acceleration_covariance):
        assert not np.any(covariance)


def test_the_ins_odometry_takes_position_26_to_28_and_twist_7_to_12():
    frame = ins_frame(distinct_ins_values())
    header = make_header(frame.header.stamp_s, 'world')
    odometry = ins_frame_to_odometry(frame, header, child_frame_id='polaris/base_footprint')
    assert odometry.header is header
    assert odometry.child_frame_id == 'polaris/base_footprint'
    assert _xyz(odometry.pose.pose.position) == (_v(26), _v(27), _v(28))
    assert _xyzw(odometry.pose.pose.orientation) == (_v(22), _v(23), _v(24), _v(25))
    assert _xyz(odometry.twist.twist.linear) == (_v(7), _v(8), _v(9))
    assert _xyz(odometry.twist.twist.angular) == (_v(10), _v(11), _v(12))


def test_the_ground_truth_odometry_takes_32_to_39():
    frame = ins_frame(distinct_ins_values())
    odometry = ins_frame_to_ground_truth_odometry(frame, make_header(2.5, 'world'),
                                                  child_frame_id='base_footprint')
    assert odometry.child_frame_id == 'base_footprint'
    assert _xyz(odometry.pose.pose.position) == (_v(32), _v(33), _v(34))
    assert _xyzw(odometry.pose.pose.orientation) == (_v(35), _v(36), _v(37), _v(38))
    assert _xyz(odometry.twist.twist.linear) == (_v(39), 0.0, 0.0)
    assert _xyz(odometry.twist.twist.angular) == (0.0, 0.0, 0.0)


def test_the_emulators_epoch_without_a_geographic_reference_keeps_the_world_pose():
    layout = hello_layout('polaris', 'polaris', georeferenced=False)
    pose = Pose.from_xyz_yaw(10.0, -20.0, 1.0, 0.3)
    values = ins_values(layout, pose, rng=np.random.default_rng(5))
    frame = ins_frame(list(values))
    fix = ins_frame_to_navsatfix(frame, Header())
    assert fix.status.status == NavSatStatus.STATUS_NO_FIX
    odometry = ins_frame_to_odometry(frame, Header(), child_frame_id='base_footprint')
    position = _xyz(odometry.pose.pose.position)
    assert all(math.isfinite(value) for value in position)
    assert position == pytest.approx((10.0, -20.0, 1.0), abs=0.1)
    truth = ins_frame_to_ground_truth_odometry(frame, Header(), child_frame_id='base_footprint')
    assert _xyz(truth.pose.pose.position) == (10.0, -20.0, 1.0)


# --- the same messages serialised -------------------------------------------------------------

def _fields(message) -> object:
    """Return a message as nested tuples, floats as their bytes (NaN equals NaN, -0.0 not 0.0)."""
    if isinstance(message, float):
        return struct.pack('<d', message)
    if isinstance(message, np.ndarray):
        return (message.dtype.str, message.tobytes())
    if isinstance(message, (list, tuple)):
        return tuple(_fields(item) for item in message)
    if hasattr(message, 'get_fields_and_field_types'):
        return (type(message).__name__, tuple(
            (name, _fields(getattr(message, name)))
            for name in message.get_fields_and_field_types()))
    return message


def _odd_values() -> list[float]:
    """Values with a negative variance, -0.0, an infinite rate and an unknown status code."""
    values = distinct_ins_values()
    values[InsField.COV_U] = -1.0
    values[InsField.ENU_QX] = -0.0
    values[InsField.GYRO_X + 1] = math.inf
    values[InsField.ACCEL_X] = math.nan
    values[InsField.FIX_STATUS] = 7.0
    return values


_CASES = [
    # (values, stamp_s, body frame id, world frame id): frame ids of 0 to 9 characters, so the
    # strings end at every offset modulo 8 and every padding after them is hit.
    *[(distinct_ins_values(), 2.5, 'b' * length, 'w' * ((length * 3) % 10))
      for length in range(10)],
    (not_georeferenced(distinct_ins_values()), 0.108333, 'polaris/base_footprint', 'world'),
    (_odd_values(), 12.75, 'base_footprint', 'map'),
    (distinct_ins_values(), -0.25, 'a', 'wo'),
    (distinct_ins_values(), -2147483648.0, 'äö/base', 'world'),
    (distinct_ins_values(), 2147483647.25, 'base', 'w'),
    (distinct_ins_values(), 1.0e9 + 0.123456789, 'x' * 255, ''),
]


def _messages(values, stamp_s, body, world) -> tuple:
    frame = ins_frame(values, stamp_s=stamp_s)
    body_header = make_header(stamp_s, body)
    world_header = make_header(stamp_s, world)
    return frame, (
        ins_frame_to_navsatfix(frame, body_header), ins_frame_to_imu(frame, body_header),
        ins_frame_to_odometry(frame, world_header, child_frame_id=body),
        ins_frame_to_ground_truth_odometry(frame, world_header, child_frame_id=body))


@pytest.mark.parametrize(('values', 'stamp_s', 'body', 'world'), _CASES)
def test_the_serialised_messages_deserialise_to_the_messages(values, stamp_s, body, world):
    frame, messages = _messages(values, stamp_s, body, world)
    serialised = ins_frame_to_cdr(frame, body_frame_id=body, world_frame_id=world)
    assert len(serialised) == 4
    for data, message in zip(serialised, messages, strict=True):
        assert isinstance(data, bytes)
        assert data[:4] == b'\x00\x01\x00\x00'
        decoded = deserialize_message(data, type(message))
        assert _fields(decoded) == _fields(message)
        # rmw's own serialisation has the same length: the layout, not just the values, agree.
        assert len(data) == len(serialize_message(message))


@pytest.mark.parametrize(('values', 'stamp_s', 'body', 'world'), _CASES[::3])
def test_rmws_serialisation_deserialises_to_the_same_messages(values, stamp_s, body, world):
    frame, messages = _messages(values, stamp_s, body, world)
    serialised = ins_frame_to_cdr(frame, body_frame_id=body, world_frame_id=world)
    for data, message, message_type in zip(serialised, messages,
                                           (NavSatFix, Imu, Odometry, Odometry), strict=True):
        ours = deserialize_message(data, message_type)
        theirs = deserialize_message(serialize_message(message), message_type)
        assert _fields(ours) == _fields(theirs)


@pytest.mark.parametrize(('values', 'stamp_s', 'body', 'world'), _CASES)
@pytest.mark.parametrize('ground_truth', [False, True])
def test_the_serialised_transform_is_the_odometrys_transform(values, stamp_s, body, world,
                                                             ground_truth):
    _, messages = _messages(values, stamp_s, body, world)
    message = TFMessage(transforms=[odometry_to_transform(messages[3 if ground_truth else 2])])
    data = ins_frame_to_transform_cdr(ins_frame(values, stamp_s=stamp_s), body_frame_id=body,
                                      world_frame_id=world, ground_truth=ground_truth)
    assert _fields(deserialize_message(data, TFMessage)) == _fields(message)
    assert len(data) == len(serialize_message(message))
    theirs = deserialize_message(serialize_message(message), TFMessage)
    assert _fields(deserialize_message(data, TFMessage)) == _fields(theirs)


def test_the_serialised_messages_carry_the_values_of_the_contract():
    frame = ins_frame(distinct_ins_values(), stamp_s=12.75)
    fix, imu, odometry, truth = (
        deserialize_message(data, message_type) for data, message_type in zip(
            ins_frame_to_cdr(frame, body_frame_id='polaris/base_footprint',
                             world_frame_id='world'),
            (NavSatFix, Imu, Odometry, Odometry)))
    assert (fix.header.stamp.sec, fix.header.stamp.nanosec) == (12, 750000000)
    assert fix.header.frame_id == imu.header.frame_id == 'polaris/base_footprint'
    assert (fix.latitude, fix.longitude, fix.altitude) == (_v(16), _v(17), _v(18))
    assert fix.status.service == NavSatStatus.SERVICE_GPS
    assert _xyz(imu.linear_acceleration) == (_v(13), _v(14), _v(15))
    assert odometry.header.frame_id == truth.header.frame_id == 'world'
    assert odometry.child_frame_id == 'polaris/base_footprint'
    assert _xyz(odometry.twist.twist.angular) == (_v(10), _v(11), _v(12))
    assert _xyz(truth.twist.twist.linear) == (_v(39), 0.0, 0.0)


def test_serialising_refuses_what_the_messages_refuse():
    with pytest.raises(ValueError, match='stamp'):
        ins_frame_to_cdr(ins_frame(distinct_ins_values(), stamp_s=2.0 ** 31),
                         body_frame_id='b', world_frame_id='w')
    frame = ins_frame(distinct_ins_values())
    with pytest.raises(ValueError, match='40 values'):
        ins_frame_to_cdr(type(frame)(frame.header, frame.values[:-1]),
                         body_frame_id='b', world_frame_id='w')
