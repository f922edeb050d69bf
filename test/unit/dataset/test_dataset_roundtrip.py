# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Emulator scans through the bridge's cloud conversion into the dataset and back.

The scans come from the emulator's LiDAR model (a drive past the garage, another vehicle in
view), are converted to PointCloud2 by the bridge's own ``lidar_frame_to_cloud`` (xyzi and
xyzirt), recorded by :class:`LidarRecorder` and read back with :class:`LidarSet`. No rclpy
graph: the node test (test_lidar_recorder.py) covers the topics.
"""


import numpy as np
import pytest
from support.dataset_drive import bridge_cloud
from support.dataset_drive import drive as emulator_drive
from support.dataset_drive import MOUNT
from support.dataset_drive import PERIOD_S

from acres_bridge.conversions.lidar import PointTimes
from acres_bridge.dataset import LidarSet
from acres_bridge.dataset import TopView
from acres_bridge.dataset.calibration import lens_centres
from acres_bridge.dataset.cloud import cloud_to_organised
from acres_bridge.dataset.cloud import OdometrySample
from acres_bridge.dataset.cloud import OrganisedCloud
from acres_bridge.dataset.format import FLAG_GAP
from acres_bridge.dataset.format import QUALITY_RTK
from acres_bridge.dataset.format import RANGE_STEP_M
from acres_bridge.dataset.picture import scan_picture
from acres_bridge.dataset.recorder import LidarRecorder
from acres_bridge.geometry import rpy_deg_to_matrix

SCANS = 12


@pytest.fixture(scope='module')
def drive() -> list:
    return emulator_drive(SCANS)


def _record(root, drive, *, fields: str, sequence: str, mirror: bool = False,
            skip: tuple[int, ...] = ()) -> LidarSet:
    recorder = LidarRecorder(root, 'roundtrip', sequence, split='val')
    for k, (stamp, pose, points) in enumerate(drive):
        x, y, z = pose.position
        qx, qy, qz, qw = pose.orientation
        stamp_ns = round(stamp * 1e9)
        for offset in (-5_000_000, 5_000_000):
            recorder.add_odometry(OdometrySample(stamp_ns + offset, (x, y, z), (qx, qy, qz, qw),
                                                 (4.0, 0.0, 0.0), (0.0, 0.0, 0.01)))
        recorder.add_fix_status(stamp_ns - 5_000_000, 2)
        if k in skip:
            continue
        cloud = cloud_to_organised(bridge_cloud(stamp, points, fields=fields, sequence=k))
        if mirror:
            # The same scene from a counter-clockwise LiDAR: source column k looks at +k steps
            # and fires in index order, (1799 - k) / 1800 sweeps before the stamp.
            index = (-np.arange(cloud.columns)) % cloud.columns
            cloud = OrganisedCloud(cloud.stamp_ns, cloud.frame_id, cloud.xyz[:, index],
                                   cloud.intensity[:, index], cloud.time_s)
        recorder.set_mount(MOUNT)
        recorder.add_cloud(cloud)
    recorder.close()
    return LidarSet.open('roundtrip', root=root)


@pytest.mark.parametrize('fields', ['xyzi', 'xyzirt'])
def test_stored_range_is_within_a_half_step_of_the_lens_distance_and_nan_stays_nan(
        tmp_path, drive, fields):
    sequence = _record(tmp_path, drive, fields=fields, sequence=fields)[fields]
    assert len(sequence) == SCANS
    lens = lens_centres(1800, 0.035)
    worst = 0.0
    for k, (_, _, points) in enumerate(drive):
        source = points[..., :3].transpose(1, 0, 2).astype(np.float64)   # (rings, columns, 3)
        returns = np.isfinite(source).all(axis=-1)
        stored = sequence.range_raw(k)
        assert np.array_equal(stored > 0, returns)
        assert np.array_equal(np.isnan(sequence.range_m(k)), ~returns)
        distance = np.linalg.norm(source - lens[np.newaxis], axis=-1)
        error = np.abs(stored * RANGE_STEP_M - distance)[returns]
        worst = max(worst, float(error.max()))
        intensity = sequence.intensity(k)
        assert np.array_equal(intensity[returns],
                              points[..., 3].T[returns].astype(np.uint8))
        assert not intensity[~returns].any()
    assert worst <= RANGE_STEP_M / 2
    print(f'largest range error {worst * 1e3:.4f} mm over {SCANS} scans ({fields})')


def test_calibration_points_give_back_the_source_points(tmp_path, drive):
    sequence = _record(tmp_path, drive, fields='xyzirt', sequence='points')['points']
    calibration = sequence.calibration
    assert calibration.raw['estimated']
    errors = []
    for k, (_, _, points) in enumerate(drive):
        source = points[..., :3].transpose(1, 0, 2)
        returns = np.isfinite(source).all(axis=-1)
        xyz = calibration.points(sequence.range_m(k), 'sensor')
        assert xyz.shape == (32, 1800, 3) and xyz.dtype == np.float32
        assert np.isnan(xyz[~returns]).all()
        errors.append(np.linalg.norm(xyz[returns] - source[returns], axis=-1))
    error = np.concatenate(errors)
    rms = float(np.sqrt(np.mean(error ** 2)))
    print(f'calibration.points: {error.size} returns, RMS {rms * 1e3:.3f} mm, largest '
          f'{error.max() * 1e3:.2f} mm, 99th percentile {np.percentile(error, 99) * 1e3:.2f} mm')
    assert rms <= 0.002
    # base_footprint: the mount of /tf_static, R = Rz Ry Rx.
    base = calibration.points(sequence.range_m(0), 'base')
    expected = (calibration.points(sequence.range_m(0)) @ rpy_deg_to_matrix(MOUNT[1]).T
                + MOUNT[0])
    assert np.allclose(base, expected, atol=1e-4, equal_nan=True)


def test_scan_table_has_poses_quality_and_counts(tmp_path, drive):
    sequence = _record(tmp_path, drive, fields='xyzi', sequence='table', skip=(5,))['table']
    scans = sequence.scans
    assert len(scans) == SCANS - 1
    assert list(scans['source_index']) == [k for k in range(SCANS) if k != 5]
    assert [bool(flag & FLAG_GAP) for flag in scans['flags']] == [
        k == 6 for k in range(SCANS) if k != 5]
    kept = [item for k, item in enumerate(drive) if k != 5]
    for row, (stamp, pose, points) in zip(scans, kept):
        assert row['stamp_ns'] == round(stamp * 1e9) and row['t'] == pytest.approx(stamp)
        assert (row['east'], row['north'], row['up']) == pytest.approx(tuple(pose.position))
        assert (row['qx'], row['qy'], row['qz'], row['qw']) == pytest.approx(
            tuple(pose.orientation), abs=1e-6)
        assert row['speed'] == pytest.approx(4.0) and row['yaw_rate'] == pytest.approx(0.01)
        assert row['pose_quality'] == QUALITY_RTK
        returns = np.isfinite(points[..., 0])
        assert row['returns'] == np.count_nonzero(returns)
        assert row['dropped_columns'] == np.count_nonzero(~returns.any(axis=1))
    assert sequence.split == 'val' and sequence.meta['simulated'] is True


def test_a_counter_clockwise_source_is_stored_in_the_clockwise_order(tmp_path, drive):
    dataset = _record(tmp_path, drive, fields='xyzirt', sequence='cw')
    mirrored = _record(tmp_path, drive, fields='xyzirt', sequence='ccw', mirror=True)
    cw, ccw = dataset['cw'], mirrored['ccw']
    assert np.array_equal(cw.range_raw(slice(None)), ccw.range_raw(slice(None)))
    assert np.array_equal(cw.intensity([0, 3]), ccw.intensity([0, 3]))
    # The firing order says which stored column fired when.
    assert cw.calibration.firing_clockwise and not ccw.calibration.firing_clockwise
    times_cw = cw.calibration.column_times_s()
    assert times_cw[-1] == pytest.approx(0.0, abs=1e-6)
    assert times_cw[0] == pytest.approx(-PERIOD_S * 1799 / 1800, abs=1e-6)
    times_ccw = ccw.calibration.column_times_s()
    # Source column k is stored at (1800 - k) mod 1800 and fired (1799 - k) / 1800 sweeps early.
    source = np.arange(1800)
    assert np.allclose(times_ccw[(-source) % 1800], (source - 1799) * PERIOD_S / 1800,
                       atol=1e-6)


def test_top_view_of_a_recorded_scan(tmp_path, drive):
    sequence = _record(tmp_path, drive, fields='xyzi', sequence='top')['top']
    view = TopView()
    grid = view(sequence.calibration, sequence.range_m(0))
    assert grid.shape == (2, 256, 256) and grid.dtype == np.float32
    several = view(sequence.calibration, sequence.range_m(slice(0, 3)))
    assert several.shape == (3, 2, 256, 256)
    assert np.array_equal(several[0], grid)
    occupied = grid[0] == 1.0
    assert occupied.sum() > 500
    assert np.all(grid[1][~occupied] == view.z_min)
    assert np.all((grid[1][occupied] >= view.z_min) & (grid[1][occupied] <= view.z_max))
    # The other vehicle, 6 m right... of the world's east, ahead and left of the Polaris
    # (yaw north): x forward = north, y left = west.
    points = sequence.calibration.points(sequence.range_m(0), 'base')
    x, y, z = points[..., 0], points[..., 1], points[..., 2]
    with np.errstate(invalid='ignore'):
        high = (z > 0.5) & (z < 3.0) & (np.hypot(x, y) < 25.0)
    cells = {(int((xi + 25.6) // 0.2), int((yi + 25.6) // 0.2)) for xi, yi in
             zip(x[high], y[high])}
    assert cells and all(grid[0][i, j] == 1.0 for i, j in cells)
    assert np.all(grid[1][tuple(np.array(sorted(cells)).T)] > 0.5)
    small = TopView(x_min=0.0, y_min=-12.8, cell_m=0.1)
    assert small(sequence.calibration, sequence.range_m(slice(0, 8))).shape == (8, 2, 256, 256)


def test_the_picture_of_a_scan_shows_its_range_image_and_top_view(tmp_path, drive):
    sequence = _record(tmp_path, drive, fields='xyzi', sequence='picture')['picture']
    picture = scan_picture(sequence, 0)
    assert picture.dtype == np.uint8 and picture.shape[2] == 3
    assert picture.shape[1] == 1800                     # the range image's columns
    strip = picture[:32 * 4]
    assert np.array_equal(strip[::4, :, 0] > 0, np.isfinite(sequence.range_m(0)))
    top = picture[32 * 4 + 8:]
    assert top.shape[0] == 256 * 3 and np.count_nonzero(top.any(axis=2)) > 1000


def test_a_ccw_bridge_stream_keeps_the_formats_firing_rule(tmp_path, drive):
    """The bridge's ccw order lists the same clockwise sweep the other way (its time says so)."""
    recorder = LidarRecorder(tmp_path, 'roundtrip', 'bridge-ccw')
    index = (-np.arange(1800)) % 1800
    for k, (stamp, _, points) in enumerate(drive[:4]):
        mirrored = np.ascontiguousarray(points[index])      # ccw column c = cw column -c
        cloud = bridge_cloud(stamp, mirrored, sequence=k,
                             times=PointTimes(PERIOD_S, 'ccw', 'end'))
        recorder.add_cloud(cloud_to_organised(cloud))
    recorder.close()
    sequence = LidarSet.open('roundtrip', root=tmp_path)['bridge-ccw']
    reference = _record(tmp_path, drive[:4], fields='xyzirt', sequence='reference')['reference']
    assert np.array_equal(sequence.range_raw(slice(None)), reference.range_raw(slice(None)))
    calibration = sequence.calibration
    assert calibration.firing_clockwise and calibration.first_column == 0
    assert np.allclose(calibration.column_times_s(),
                       (np.arange(1800) - 1799) * PERIOD_S / 1800, atol=1e-6)


def test_a_cloud_stamped_at_the_start_of_its_sweep_gets_the_time_of_its_last_column(
        tmp_path, drive):
    recorder = LidarRecorder(tmp_path, 'roundtrip', 'start')
    for k, (stamp, _, points) in enumerate(drive[:3]):
        times = PointTimes(PERIOD_S, 'cw', 'start')
        cloud = bridge_cloud(times.cloud_stamp_s(stamp), points, sequence=k, times=times)
        recorder.add_cloud(cloud_to_organised(cloud))
    recorder.close()
    sequence = LidarSet.open('roundtrip', root=tmp_path)['start']
    scans = sequence.scans
    for row, (stamp, _, _) in zip(scans, drive[:3]):
        assert row['stamp_ns'] == round((stamp - PERIOD_S) * 1e9)
        assert row['t'] == pytest.approx(stamp, abs=1e-6)
    assert not sequence.calibration.last_column_at_stamp
    assert sequence.calibration.sweep_s == pytest.approx(PERIOD_S, abs=1e-6)
