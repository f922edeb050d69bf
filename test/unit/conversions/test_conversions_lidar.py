# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""LiDAR frames to PointCloud2: every row of the contract's table, without rclpy.init."""

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import numpy as np
import pytest
from sensor_msgs.msg import PointField
from std_msgs.msg import Header
from support.sensor_frames import lidar_frame
from support.sensor_frames import lidar_points

from acres_bridge.conversions.clock import make_header
from acres_bridge.conversions.lidar import cloud_to_array
from acres_bridge.conversions.lidar import column_times_s
from acres_bridge.conversions.lidar import lidar_frame_to_cloud
from acres_bridge.conversions.lidar import point_fields

COLUMNS, RINGS = 1800, 32


def _fields(cloud) -> list[tuple[str, int, int, int]]:
    return [(field.name, field.offset, field.datatype, field.count) for field in cloud.fields]


def test_an_xyzi_cloud_is_organised_columns_by_rings_with_the_frames_bytes():
    points = lidar_points(COLUMNS, RINGS)
    frame = lidar_frame(points)
    header = make_header(frame.header.stamp_s, 'polaris/lidar')
    cloud = lidar_frame_to_cloud(frame, header)
    assert cloud.header is header
    assert (cloud.height, cloud.width) == (COLUMNS, RINGS)
    assert _fields(cloud) == [('x', 0, PointField.FLOAT32, 1), ('y', 4, PointField.FLOAT32, 1),
                              ('z', 8, PointField.FLOAT32, 1),
                              ('intensity', 12, PointField.FLOAT32, 1)]
    assert cloud.point_step == 16
    assert cloud.row_step == 16 * RINGS
    assert cloud.is_dense is False
    assert cloud.is_bigendian is False
    assert bytes(cloud.data) == bytes(frame.points) == points.astype('<f4').tobytes()


def test_misses_stay_nan_with_intensity_0_at_their_cell():
    points = lidar_points(20, 4, misses=0.5)
    cloud = lidar_frame_to_cloud(lidar_frame(points), Header())
    view = cloud_to_array(cloud)
    miss = np.isnan(points[..., 0])
    assert miss.any() and (~miss).any()
    assert np.array_equal(np.isnan(view['x']), miss)
    assert np.isnan(view['z'][miss]).all()
    assert (view['intensity'][miss] == 0).all()
    # Cell (c, r) of the frame is row c, column r of the cloud.
    assert np.array_equal(view['y'][~miss], points[..., 1][~miss])


def test_the_nan_payload_bits_are_kept():
    points = lidar_points(3, 2, misses=0.0)
    raw = points.view(np.uint32)
    raw[1, 1, 0] = 0x7FC12345   # a NaN with a payload: a copy through float math would lose it
    cloud = lidar_frame_to_cloud(lidar_frame(points), Header())
    assert np.frombuffer(cloud.data, np.uint32)[(1 * 2 + 1) * 4] == 0x7FC12345


def test_an_xyzirt_cloud_adds_ring_and_time_after_the_frames_points():
    points = lidar_points(COLUMNS, RINGS)
    frame = lidar_frame(points, stamp_s=7.5)
    cloud = lidar_frame_to_cloud(frame, Header(), fields='xyzirt', sweep_s=0.1)
    assert _fields(cloud) == [('x', 0, PointField.FLOAT32, 1), ('y', 4, PointField.FLOAT32, 1),
                              ('z', 8, PointField.FLOAT32, 1),
                              ('intensity', 12, PointField.FLOAT32, 1),
                              ('ring', 16, PointField.UINT16, 1),
                              ('time', 20, PointField.FLOAT32, 1)]
    assert (cloud.height, cloud.width, cloud.point_step, cloud.row_step) == (
        COLUMNS, RINGS, 24, 24 * RINGS)
    assert cloud.is_dense is False and cloud.is_bigendian is False
    cells = np.frombuffer(cloud.data, np.uint8).reshape(COLUMNS * RINGS, 24)
    assert cells[:, :16].tobytes() == bytes(frame.points)
    assert not cells[:, 18:20].any()   # the padding is zero
    view = cloud_to_array(cloud)
    assert np.array_equal(view['ring'], np.broadcast_to(np.arange(RINGS), (COLUMNS, RINGS)))


def test_xyzirt_time_follows_the_column_firing_rule_of_the_lidar_dataset():
    cloud = lidar_frame_to_cloud(lidar_frame(lidar_points(COLUMNS, RINGS)), Header(),
                                 fields='xyzirt', sweep_s=0.1)
    time = cloud_to_array(cloud)['time']
    # Column c fires (1799 - c) / 1800 x sweep_s before the stamp; every ring of a column alike.
    expected = np.array([-(1799 - c) / 1800 * 0.1 for c in range(COLUMNS)], dtype=np.float32)
    assert np.array_equal(time[:, 0], expected)
    assert (time == time[:, :1]).all()
    assert time[-1, 0] == 0.0
    assert time[0, 0] == pytest.approx(-0.1 + 0.1 / 1800, abs=1e-7)
    assert (np.diff(time[:, 0]) > 0).all()


def test_a_sweep_of_0_gives_every_point_the_stamp():
    cloud = lidar_frame_to_cloud(lidar_frame(lidar_points(8, 2)), Header(), fields='xyzirt')
    assert not cloud_to_array(cloud)['time'].any()


def test_the_cached_ring_and_time_do_not_leak_between_clouds():
    first = lidar_frame_to_cloud(lidar_frame(lidar_points(6, 3, seed=1)), Header(),
                                 fields='xyzirt', sweep_s=0.1)
    second = lidar_frame_to_cloud(lidar_frame(lidar_points(6, 3, seed=2)), Header(),
                                  fields='xyzirt', sweep_s=0.1)
    third = lidar_frame_to_cloud(lidar_frame(lidar_points(6, 3, seed=1)), Header(),
                                 fields='xyzirt', sweep_s=0.1)
    assert bytes(first.data) == bytes(third.data) != bytes(second.data)


@settings(max_examples=40, deadline=None)
@given(columns=st.integers(1, 40), rings=st.integers(1, 16), seed=st.integers(0, 1000),
       sweep_s=st.sampled_from([0.0, 0.05, 0.1, 1.0]))
def test_any_layout_keeps_the_points_and_the_organisation(columns, rings, seed, sweep_s):
    points = lidar_points(columns, rings, seed=seed)
    frame = lidar_frame(points)
    xyzi = lidar_frame_to_cloud(frame, Header())
    xyzirt = lidar_frame_to_cloud(frame, Header(), fields='xyzirt', sweep_s=sweep_s)
    assert bytes(xyzi.data) == points.tobytes()
    assert len(xyzirt.data) == columns * rings * 24 == xyzirt.row_step * xyzirt.height
    view = cloud_to_array(xyzirt)
    for name, channel in (('x', 0), ('y', 1), ('z', 2), ('intensity', 3)):
        assert np.array_equal(view[name], points[..., channel], equal_nan=True)
    assert np.array_equal(view['time'][:, 0], column_times_s(columns, sweep_s))


def test_unknown_fields_and_bad_sweeps_are_refused():
    frame = lidar_frame(lidar_points(4, 2))
    with pytest.raises(ValueError, match='xyz'):
        lidar_frame_to_cloud(frame, Header(), fields='xyz')
    with pytest.raises(ValueError, match='sweep'):
        lidar_frame_to_cloud(frame, Header(), fields='xyzirt', sweep_s=float('nan'))
    with pytest.raises(ValueError, match='sweep'):
        lidar_frame_to_cloud(frame, Header(), fields='xyzirt', sweep_s=-0.1)
    with pytest.raises(ValueError):
        point_fields('xyzrgb')


def test_point_fields_match_the_clouds():
    frame = lidar_frame(lidar_points(4, 2))
    for fields in ('xyzi', 'xyzirt'):
        cloud = lidar_frame_to_cloud(frame, Header(), fields=fields, sweep_s=0.1)
        assert _fields(cloud) == [(f.name, f.offset, f.datatype, f.count)
                                  for f in point_fields(fields)]
