# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Stamps in seconds to builtin_interfaces/Time, Clock frames to /clock (messages and CDR)."""

import math

from hypothesis import given
from hypothesis import strategies as st
import pytest
from rclpy.serialization import deserialize_message
from rclpy.serialization import serialize_message
from rosgraph_msgs.msg import Clock
from support.sensor_frames import decode

from acres_bridge.conversions.clock import clock_frame_to_cdr
from acres_bridge.conversions.clock import clock_frame_to_clock
from acres_bridge.conversions.clock import make_header
from acres_bridge.conversions.clock import stamp_to_time
from acres_bridge.conversions.clock import time_to_stamp
from acres_bridge.protocol.frames import encode_clock_payload
from acres_bridge.protocol.frames import FrameType


@pytest.mark.parametrize(('stamp_s', 'sec', 'nanosec'), [
    (0.0, 0, 0), (0.108333, 0, 108333000), (1.5, 1, 500000000),
    (0.9999999999, 1, 0), (2.0000000004, 2, 0), (-0.25, -1, 750000000),
    (2147483647.0, 2147483647, 0)])
def test_stamps_round_to_the_nanosecond(stamp_s, sec, nanosec):
    time = stamp_to_time(stamp_s)
    assert (time.sec, time.nanosec) == (sec, nanosec)


@given(st.floats(0.0, 1.0e6))
def test_a_stamp_comes_back_within_half_a_nanosecond_and_a_rounding(stamp_s):
    time = stamp_to_time(stamp_s)
    assert 0 <= time.nanosec < 1_000_000_000
    assert time_to_stamp(time) == pytest.approx(stamp_s, abs=1e-9 + 1e-15 * stamp_s)


@pytest.mark.parametrize('stamp_s', [math.nan, math.inf, -math.inf, 2.0 ** 31, -2.0 ** 31 - 1])
def test_stamps_time_cannot_hold_are_refused(stamp_s):
    with pytest.raises(ValueError, match='stamp'):
        stamp_to_time(stamp_s)


def test_the_clock_is_the_frames_world_stamp_not_the_vehicle_time():
    frame = decode(FrameType.CLOCK, encode_clock_payload(0.3249), stamp_s=0.325)
    clock = clock_frame_to_clock(frame)
    assert (clock.clock.sec, clock.clock.nanosec) == (0, 325000000)


def test_a_header_has_the_stamp_and_the_frame_id():
    header = make_header(12.75, 'polaris/lidar')
    assert (header.stamp.sec, header.stamp.nanosec, header.frame_id) == (
        12, 750000000, 'polaris/lidar')


@pytest.mark.parametrize('stamp_s', [
    0.0, 0.325, 0.9999999999, -0.25, -2147483648.0, 2147483647.25, 1.0e9 + 0.123456789])
def test_the_serialised_clock_is_the_clock_message(stamp_s):
    frame = decode(FrameType.CLOCK, encode_clock_payload(1.0), stamp_s=stamp_s)
    message = clock_frame_to_clock(frame)
    data = clock_frame_to_cdr(frame)
    assert isinstance(data, bytes)
    assert deserialize_message(data, Clock) == message
    # A Clock has no padding: the bytes are exactly rmw's.
    assert data == serialize_message(message)


def test_serialising_refuses_a_stamp_time_cannot_hold():
    frame = decode(FrameType.CLOCK, encode_clock_payload(1.0), stamp_s=2.0 ** 31)
    with pytest.raises(ValueError, match='stamp'):
        clock_frame_to_cdr(frame)
