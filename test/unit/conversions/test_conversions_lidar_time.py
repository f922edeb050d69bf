# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The xyzirt time field: column order, a sweep of 0, and the two origins (no rclpy.init)."""

import numpy as np
import pytest
from std_msgs.msg import Header
from support.sensor_frames import lidar_frame
from support.sensor_frames import lidar_points

from acres_bridge.conversions.lidar import cloud_to_array
from acres_bridge.conversions.lidar import column_times_s
from acres_bridge.conversions.lidar import lidar_frame_to_cloud
from acres_bridge.conversions.lidar import PointTimes
from acres_bridge.protocol.hello import LidarLayout

COLUMNS = 1800
SWEEP_S = 0.1


def _azimuth_deg(columns: int, order: str) -> np.ndarray:
    """The clockwise azimuth from ahead of each column (column 0 ahead in both orders)."""
    step = 360.0 / columns
    index = np.arange(columns)
    return (index * step if order == 'cw' else -index * step) % 360.0


def test_a_ccw_column_fires_when_the_cw_column_of_the_same_azimuth_fires():
    cw = column_times_s(COLUMNS, SWEEP_S, azimuth_order='cw')
    ccw = column_times_s(COLUMNS, SWEEP_S, azimuth_order='ccw')
    by_azimuth = dict(zip(np.round(_azimuth_deg(COLUMNS, 'cw'), 6), cw))
    assert [by_azimuth[azimuth] for azimuth in np.round(_azimuth_deg(COLUMNS, 'ccw'), 6)] == (
        list(ccw))
    # Column 0 (ahead) fires first in both orders; ccw column 1, one step left, at the stamp.
    assert ccw[0] == cw[0] == pytest.approx(-1799 / 1800 * SWEEP_S, abs=1e-7)
    assert ccw[1] == 0.0 == cw[-1]
    assert ccw[2] == pytest.approx(-SWEEP_S / 1800, abs=1e-9)
    assert (np.diff(ccw[1:]) < 0).all()   # ccw columns 1..1799 go back in time


def test_a_ccw_cloud_gets_the_ccw_rule():
    points = lidar_points(COLUMNS, 4)
    times = PointTimes(SWEEP_S, 'ccw')
    cloud = lidar_frame_to_cloud(lidar_frame(points), Header(), fields='xyzirt', times=times)
    view = cloud_to_array(cloud)
    expected = column_times_s(COLUMNS, SWEEP_S, azimuth_order='ccw')
    assert np.array_equal(view['time'], np.broadcast_to(expected[:, None], (COLUMNS, 4)))
    assert np.array_equal(view['x'], points[..., 0], equal_nan=True)


@pytest.mark.parametrize('order', ['cw', 'ccw'])
def test_a_sweep_of_0_gives_every_column_the_stamp_in_both_origins(order):
    for origin in ('end', 'start'):
        assert not column_times_s(COLUMNS, 0.0, azimuth_order=order, origin=origin).any()
    assert PointTimes(0.0, order, 'start').cloud_stamp_s(3.25) == 3.25


@pytest.mark.parametrize('order', ['cw', 'ccw'])
def test_the_start_origin_stamps_one_sweep_earlier_and_keeps_every_firing_time(order):
    end = PointTimes(SWEEP_S, order, 'end')
    start = PointTimes(SWEEP_S, order, 'start')
    stamp_s = 12.5
    assert end.cloud_stamp_s(stamp_s) == stamp_s
    assert start.cloud_stamp_s(stamp_s) == pytest.approx(stamp_s - SWEEP_S)
    end_times = column_times_s(COLUMNS, SWEEP_S, azimuth_order=order, origin='end')
    start_times = column_times_s(COLUMNS, SWEEP_S, azimuth_order=order, origin='start')
    assert (end_times <= 0).all() and end_times.max() == 0.0
    assert (start_times > 0).all() and start_times.max() == pytest.approx(SWEEP_S)
    assert start_times.min() == pytest.approx(SWEEP_S / COLUMNS)
    # Header stamp plus time is the column's firing time, whichever origin.
    np.testing.assert_allclose(start.cloud_stamp_s(stamp_s) + start_times.astype(float),
                               end.cloud_stamp_s(stamp_s) + end_times.astype(float),
                               atol=1e-6)
    if order == 'cw':
        # LIO-SAM takes the last point's time as the end of the scan: it is the sweep.
        assert start_times[-1] == start_times.max()


def test_the_options_default_to_one_scan_period_of_the_hello():
    lidar = LidarLayout(enabled=True, hz=20.0, columns=COLUMNS, rings=32, azimuth_order='ccw')
    assert PointTimes.of(lidar) == PointTimes(0.05, 'ccw', 'end')
    assert PointTimes.of(lidar, sweep_s=0.0, origin='start') == PointTimes(0.0, 'ccw', 'start')
    assert PointTimes.of(lidar, sweep_s=0.25) == PointTimes(0.25, 'ccw', 'end')
    assert PointTimes.of(LidarLayout(hz=0.0)) == PointTimes(0.0, 'cw', 'end')
    assert PointTimes.of(None, sweep_s=-1.0) == PointTimes(0.0, 'cw', 'end')


@pytest.mark.parametrize('fields', [
    {'sweep_s': float('nan')}, {'sweep_s': -0.1}, {'sweep_s': float('inf')},
    {'azimuth_order': 'up'}, {'origin': 'middle'}])
def test_bad_time_options_are_refused(fields):
    with pytest.raises(ValueError):
        PointTimes(**{'sweep_s': 0.1, **fields})
