# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The rotation conventions of acres_bridge.geometry, checked against independent values."""

import math

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import numpy as np
import pytest

from acres_bridge.geometry import matrix_to_quaternion
from acres_bridge.geometry import matrix_to_rpy_deg
from acres_bridge.geometry import quaternion_from_yaw
from acres_bridge.geometry import quaternion_multiply
from acres_bridge.geometry import quaternion_to_matrix
from acres_bridge.geometry import quaternion_yaw
from acres_bridge.geometry import quaternions_to_matrices
from acres_bridge.geometry import rpy_deg_to_matrix
from acres_bridge.geometry import rpy_deg_to_quaternion
from acres_bridge.geometry import rpy_to_matrices
from acres_bridge.geometry import rpy_to_quaternion

ANGLES = st.tuples(st.floats(-179.0, 179.0), st.floats(-89.0, 89.0), st.floats(-179.0, 179.0))
HALF = math.sqrt(0.5)


def _about_axes(roll_deg: float, pitch_deg: float, yaw_deg: float) -> np.ndarray:
    """Return Rz(yaw) @ Ry(pitch) @ Rx(roll), each a textbook single-axis rotation."""
    r, p, y = (math.radians(v) for v in (roll_deg, pitch_deg, yaw_deg))
    rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    return rz @ ry @ rx


def test_positive_angles_turn_counter_clockwise_about_rep_103_axes():
    # A yaw of 90 degrees turns x (forward) into y (left).
    assert np.allclose(rpy_deg_to_matrix((0, 0, 90)) @ [1, 0, 0], [0, 1, 0])
    # A pitch of 90 degrees about y turns x into -z (nose down in FLU).
    assert np.allclose(rpy_deg_to_matrix((0, 90, 0)) @ [1, 0, 0], [0, 0, -1])
    # A roll of 90 degrees about x turns y into z.
    assert np.allclose(rpy_deg_to_matrix((90, 0, 0)) @ [0, 1, 0], [0, 0, 1])


def test_known_quaternions_in_x_y_z_w_order():
    assert rpy_deg_to_quaternion((0, 0, 90)) == pytest.approx((0.0, 0.0, HALF, HALF))
    assert rpy_deg_to_quaternion((90, 0, 0)) == pytest.approx((HALF, 0.0, 0.0, HALF))
    assert rpy_deg_to_quaternion((0, 0, 0)) == (0.0, 0.0, 0.0, 1.0)
    assert np.allclose(quaternion_to_matrix((0.0, 0.0, HALF, HALF)),
                       [[0, -1, 0], [1, 0, 0], [0, 0, 1]])
    # Half a turn about x + y: x and y swap, z flips.
    assert np.allclose(quaternion_to_matrix((HALF, HALF, 0.0, 0.0)),
                       [[0, 1, 0], [1, 0, 0], [0, 0, -1]])


def test_rpy_is_rz_ry_rx_about_fixed_axes():
    rpy_deg = (10.0, -20.0, 30.0)
    assert np.allclose(rpy_deg_to_matrix(rpy_deg), _about_axes(*rpy_deg), atol=1e-15)
    # About fixed axes, roll first; the other order (Rx Ry Rz) is another rotation.
    moving_axes = _about_axes(10, 0, 0) @ _about_axes(0, -20, 0) @ _about_axes(0, 0, 30)
    assert not np.allclose(rpy_deg_to_matrix(rpy_deg), moving_axes)


@settings(max_examples=60, deadline=None)
@given(ANGLES)
def test_rpy_follows_r_equals_rz_ry_rx(rpy_deg):
    quaternion = rpy_deg_to_quaternion(rpy_deg)
    assert np.linalg.norm(quaternion) == pytest.approx(1.0)
    assert np.allclose(quaternion_to_matrix(quaternion), _about_axes(*rpy_deg), atol=1e-12)
    assert np.allclose(rpy_deg_to_matrix(rpy_deg), _about_axes(*rpy_deg), atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(ANGLES)
def test_round_trips_through_matrices_and_quaternions(rpy_deg):
    matrix = rpy_deg_to_matrix(rpy_deg)
    assert matrix_to_rpy_deg(matrix) == pytest.approx(list(rpy_deg), abs=1e-9)
    quaternion = matrix_to_quaternion(matrix)
    assert quaternion[3] >= 0.0
    same_sign = 1.0 if rpy_deg_to_quaternion(rpy_deg)[3] >= 0.0 else -1.0
    assert quaternion == pytest.approx(
        [same_sign * v for v in rpy_deg_to_quaternion(rpy_deg)], abs=1e-12)
    assert np.allclose(quaternion_to_matrix(quaternion), matrix, atol=1e-12)


def test_the_array_forms_match_the_scalar_ones():
    angles = np.radians([[10.0, -20.0, 30.0], [0.0, 0.0, 0.0], [179.0, 89.0, -179.0]])
    matrices = rpy_to_matrices(angles[:, 0], angles[:, 1], angles[:, 2])
    quaternions = np.array([rpy_to_quaternion(*row) for row in angles])
    for row, matrix, from_quaternion in zip(angles, matrices,
                                            quaternions_to_matrices(quaternions * 3.0)):
        expected = _about_axes(*np.degrees(row))
        assert np.allclose(matrix, expected, atol=1e-12)
        assert np.allclose(from_quaternion, expected, atol=1e-12)


def test_yaw_quaternions_and_products():
    q = quaternion_from_yaw(math.radians(30.0))
    assert quaternion_yaw(q) == pytest.approx(math.radians(30.0))
    # b then a: two yaws add up.
    both = quaternion_multiply(quaternion_from_yaw(math.radians(50.0)), q)
    assert quaternion_yaw(both) == pytest.approx(math.radians(80.0))
    # The product applies b first: a yaw after a roll is Rz @ Rx.
    roll_then_yaw = quaternion_multiply(rpy_deg_to_quaternion((0, 0, 90)),
                                        rpy_deg_to_quaternion((90, 0, 0)))
    assert np.allclose(quaternion_to_matrix(roll_then_yaw), _about_axes(90, 0, 90))


def test_quaternions_are_normalised_and_a_zero_one_is_refused():
    assert np.allclose(quaternion_to_matrix((0.0, 0.0, 2.0, 2.0)),
                       quaternion_to_matrix((0.0, 0.0, HALF, HALF)))
    with pytest.raises(ValueError, match='length 0'):
        quaternion_to_matrix((0.0, 0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match='length 0'):
        quaternion_to_matrix((math.nan, 0.0, 0.0, 1.0))
