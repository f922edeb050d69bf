# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The pose covariance of the INS odometry (values 19-21) and the ground truth's (none)."""

import math

from nav_msgs.msg import Odometry
import pytest
from rclpy.serialization import deserialize_message
from std_msgs.msg import Header
from support.sensor_frames import distinct_ins_values
from support.sensor_frames import ins_frame
from support.sensor_frames import not_georeferenced

from acres_bridge.conversions.ins import ins_frame_to_cdr
from acres_bridge.conversions.ins import ins_frame_to_ground_truth_odometry
from acres_bridge.conversions.ins import ins_frame_to_odometry
from acres_bridge.conversions.ins import position_variances
from acres_bridge.protocol.frames import InsField

F = InsField


def _with_variances(east: float, north: float, up: float) -> list[float]:
    values = distinct_ins_values()
    values[F.COV_E], values[F.COV_N], values[F.COV_U] = east, north, up
    return values


def _both(values: list[float]) -> list[Odometry]:
    """The INS odometry as a message and from its serialised bytes."""
    frame = ins_frame(values)
    message = ins_frame_to_odometry(frame, Header(frame_id='world'),
                                    child_frame_id='base_footprint')
    data = ins_frame_to_cdr(frame, body_frame_id='base_footprint', world_frame_id='world')[2]
    return [message, deserialize_message(data, Odometry)]


def test_the_ins_odometry_carries_the_east_north_up_variances_on_its_diagonal():
    for odometry in _both(_with_variances(0.0004, 0.0009, 0.0025)):
        covariance = list(odometry.pose.covariance)
        assert covariance[0] == 0.0004 and covariance[7] == 0.0009 and covariance[14] == 0.0025
        # Orientation and cross terms are not measured: zero, as is the twist's.
        assert [value for index, value in enumerate(covariance)
                if index not in (0, 7, 14)] == [0.0] * 33
        assert not any(odometry.twist.covariance)


@pytest.mark.parametrize('variances', [
    (math.nan, math.nan, math.nan),          # no geographic reference
    (0.0004, -1.0, 0.0025),                  # a negative variance is no variance
    (0.0004, 0.0009, math.inf)])
def test_an_unusable_variance_leaves_the_whole_pose_covariance_unknown(variances):
    assert position_variances(_with_variances(*variances)) == (0.0, 0.0, 0.0)
    for odometry in _both(_with_variances(*variances)):
        assert not any(odometry.pose.covariance)


def test_an_epoch_without_a_geographic_reference_has_no_variance():
    for odometry in _both(not_georeferenced(distinct_ins_values())):
        assert not any(odometry.pose.covariance)


def test_the_ground_truth_claims_no_covariance():
    values = _with_variances(0.0004, 0.0009, 0.0025)
    frame = ins_frame(values)
    truth = ins_frame_to_ground_truth_odometry(frame, Header(), child_frame_id='base_footprint')
    data = ins_frame_to_cdr(frame, body_frame_id='base_footprint', world_frame_id='world')[3]
    for odometry in (truth, deserialize_message(data, Odometry)):
        assert not any(odometry.pose.covariance) and not any(odometry.twist.covariance)
        assert odometry.twist.twist.linear.x == values[F.TRUTH_SPEED]
