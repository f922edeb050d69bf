# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
point_fields autoware: Autoware's PointXYZIRCAEDT, checked against its definition and by hand.

The expected layout is written out from Autoware's own definition, not from our module:
``struct PointXYZIRCAEDT`` and ``is_data_layout_compatible_with_point_xyzircaedt`` in
autowarefoundation/autoware_core, common/autoware_point_types (release 1.9.0). The values are
computed again here point by point, in float64 with ``math``, from the frame's x, y, z.
"""

import math
import struct

import numpy as np
import pytest
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import PointCloud2
from sensor_msgs.msg import PointField
from support.sensor_frames import lidar_frame
from support.sensor_frames import lidar_points

from acres_bridge.conversions.clock import make_header
from acres_bridge.conversions.clock import stamp_to_sec_nanosec
from acres_bridge.conversions.lidar import cloud_to_array
from acres_bridge.conversions.lidar import CloudBuffer
from acres_bridge.conversions.lidar import lidar_frame_to_cloud
from acres_bridge.conversions.lidar import lidar_frame_to_cloud_cdr
from acres_bridge.conversions.lidar import PointTimes

# Autoware's definition: name, offset (offsetof in the struct), PointField datatype, count.
POINT_XYZIRCAEDT = [
    ('x', 0, PointField.FLOAT32, 1), ('y', 4, PointField.FLOAT32, 1),
    ('z', 8, PointField.FLOAT32, 1), ('intensity', 12, PointField.UINT8, 1),
    ('return_type', 13, PointField.UINT8, 1), ('channel', 14, PointField.UINT16, 1),
    ('azimuth', 16, PointField.FLOAT32, 1), ('elevation', 20, PointField.FLOAT32, 1),
    ('distance', 24, PointField.FLOAT32, 1), ('time_stamp', 28, PointField.UINT32, 1)]
SIZEOF_POINT_XYZIRCAEDT = 32        # 3 floats, 2 bytes, uint16, 3 floats, uint32
SINGLE_STRONGEST, INVALID = 1, 0    # autoware::point_types::ReturnType
COLUMNS, RINGS = 90, 8
SWEEP_S = 0.1


def _fields(cloud: PointCloud2) -> list[tuple[str, int, int, int]]:
    return [(field.name, field.offset, field.datatype, field.count) for field in cloud.fields]


def _cloud(points, fields='autoware', order='cw', stamp_s=12.5):
    frame = lidar_frame(points, stamp_s=stamp_s)
    times = PointTimes(SWEEP_S, order, 'start')
    header = make_header(times.cloud_stamp_s(stamp_s), 'polaris/lidar')
    return frame, lidar_frame_to_cloud(frame, header, fields=fields, times=times)


def _expected_point(x, y, z, intensity, ring, column, order):
    """One point of the frame, by hand: what Autoware's fields mean, in float64."""
    cw_column = column if order == 'cw' else (COLUMNS - column) % COLUMNS
    time_ns = round((cw_column + 1) * SWEEP_S / COLUMNS * 1e9)
    if math.isnan(x):
        return (INVALID, 0, ring, math.nan, math.nan, math.nan, time_ns)
    azimuth = math.atan2(-y, x) % (2.0 * math.pi)
    elevation = math.atan2(z, math.sqrt(x * x + y * y))
    distance = math.sqrt(x * x + y * y + z * z)
    return (SINGLE_STRONGEST, round(intensity), ring, azimuth, elevation, distance, time_ns)


def _angle_close(a: float, b: float) -> bool:
    difference = abs(a - b) % (2.0 * math.pi)
    return min(difference, 2.0 * math.pi - difference) < 2e-6


def test_the_layout_is_exactly_autowares_point_xyzircaedt():
    frame, cloud = _cloud(lidar_points(COLUMNS, RINGS))
    assert _fields(cloud) == POINT_XYZIRCAEDT
    assert cloud.point_step == SIZEOF_POINT_XYZIRCAEDT
    assert (cloud.height, cloud.width) == (COLUMNS, RINGS)
    assert cloud.row_step == SIZEOF_POINT_XYZIRCAEDT * RINGS
    assert len(cloud.data) == COLUMNS * RINGS * SIZEOF_POINT_XYZIRCAEDT
    assert cloud.is_bigendian is False and cloud.is_dense is False


@pytest.mark.parametrize('order', ['cw', 'ccw'])
def test_every_field_matches_a_point_by_point_computation(order):
    points = lidar_points(COLUMNS, RINGS, misses=0.3).astype(np.float32)
    points[0, 0, :3] = (5.0, 0.0, 0.0)          # straight ahead: azimuth 0
    points[1, 1, :3] = (0.0, -5.0, 1.0)         # right: a quarter turn clockwise
    points[2, 2, :3] = (3.0, 1e-7, -1.0)        # just left of ahead: almost a full turn
    frame, cloud = _cloud(points, order=order)
    data = bytes(cloud.data)
    assert (~np.isnan(points[..., 0])).any() and np.isnan(points[..., 0]).any()
    for column in range(COLUMNS):
        for ring in range(RINGS):
            x, y, z, intensity = (float(v) for v in points[column, ring])
            offset = (column * RINGS + ring) * SIZEOF_POINT_XYZIRCAEDT
            got = struct.unpack_from('<fffBBHfffI', data, offset)
            # x, y, z are the frame's own bits.
            assert data[offset:offset + 12] == points[column, ring, :3].tobytes()
            want = _expected_point(x, y, z, intensity, ring, column, order)
            return_type, level, channel, azimuth, elevation, distance, time_ns = want
            assert got[3:6] == (level, return_type, channel)
            assert got[9] == time_ns
            if return_type == INVALID:
                assert all(math.isnan(value) for value in got[6:9])
                continue
            assert 0.0 <= got[6] < 2.0 * math.pi
            assert _angle_close(got[6], azimuth), (column, ring, got[6], azimuth)
            assert got[7] == pytest.approx(elevation, abs=2e-6)
            assert got[8] == pytest.approx(distance, rel=2e-7, abs=1e-6)
    view = cloud_to_array(cloud)
    assert view[0, 0]['azimuth'] == pytest.approx(0.0, abs=1e-7)
    assert view[1, 1]['azimuth'] == pytest.approx(math.pi / 2, abs=1e-6)


def test_the_stamp_is_the_sweeps_start_and_stamp_plus_time_is_the_columns_firing():
    stamp_s = 100.0
    frame, cloud = _cloud(lidar_points(COLUMNS, RINGS), stamp_s=stamp_s)
    sec, nanosec = stamp_to_sec_nanosec(stamp_s - SWEEP_S)
    assert (cloud.header.stamp.sec, cloud.header.stamp.nanosec) == (sec, nanosec)
    times = cloud_to_array(cloud)['time_stamp']
    # The last column fires at the frame's stamp (the end of the sweep), column 0 one column
    # step after the start.
    assert times[-1, 0] == round(SWEEP_S * 1e9)
    assert times[0, 0] == round(SWEEP_S / COLUMNS * 1e9)
    assert (np.diff(times[:, 0].astype(np.int64)) > 0).all()


def test_dense_is_the_returns_in_one_row_as_autowares_drivers_publish_them():
    points = lidar_points(COLUMNS, RINGS, misses=0.4)
    _, organised = _cloud(points)
    _, dense = _cloud(points, fields='autoware_dense')
    hits = ~np.isnan(points[..., 0])
    assert _fields(dense) == POINT_XYZIRCAEDT
    assert (dense.height, dense.width) == (1, int(hits.sum()))
    assert dense.row_step == SIZEOF_POINT_XYZIRCAEDT * int(hits.sum())
    assert dense.is_dense is True
    assert dense.header == organised.header
    kept = cloud_to_array(organised)[hits]
    assert bytes(cloud_to_array(dense).reshape(-1).tobytes()) == kept.tobytes()
    assert (cloud_to_array(dense)['return_type'] == SINGLE_STRONGEST).all()


@pytest.mark.parametrize('fields', ['autoware', 'autoware_dense'])
def test_the_serialised_cloud_is_the_message(fields):
    points = lidar_points(COLUMNS, RINGS, misses=0.3)
    frame, cloud = _cloud(points, fields=fields)
    times = PointTimes(SWEEP_S, 'cw', 'start')
    buffer = CloudBuffer(COLUMNS, RINGS, frame_id='polaris/lidar', fields=fields, times=times)
    for _ in range(2):      # the buffer is reused: nothing of one frame leaks into the next
        assert deserialize_message(buffer.serialise(frame), PointCloud2) == cloud
    assert deserialize_message(lidar_frame_to_cloud_cdr(
        frame, frame_id='polaris/lidar', fields=fields, times=times), PointCloud2) == cloud


def test_times_before_the_stamp_are_refused_for_unsigned_time_stamps():
    frame = lidar_frame(lidar_points(COLUMNS, RINGS))
    with pytest.raises(ValueError, match='start origin'):
        lidar_frame_to_cloud(frame, make_header(1.0, 'lidar'), fields='autoware',
                             times=PointTimes(SWEEP_S, 'cw', 'end'))
    with pytest.raises(ValueError, match='start origin'):
        CloudBuffer(COLUMNS, RINGS, frame_id='lidar', fields='autoware_dense',
                    times=PointTimes(SWEEP_S, 'cw', 'end'))
