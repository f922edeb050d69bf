# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The dataset's files, writer and reader without ROS: layout, dtypes, API, atomicity, refusal.

The scans are synthetic, from a sensor with the format's own geometry (beams from the lens
centre, a beam table with azimuth offsets), so the estimated calibration must find the table
and the points must come back within the range step. One test sends them as a RoboSense
driver's PointCloud2 (message types only, no rclpy graph).
"""

import json
import threading

import numpy as np
import pytest
from sensor_msgs.msg import PointCloud2
from sensor_msgs.msg import PointField

from acres_bridge.dataset import body_cells
from acres_bridge.dataset import data_root
from acres_bridge.dataset import DatasetError
from acres_bridge.dataset import format as dataset_format
from acres_bridge.dataset import LidarSet
from acres_bridge.dataset import SCAN_DTYPE
from acres_bridge.dataset import Sequence
from acres_bridge.dataset import TopView
from acres_bridge.dataset.calibration import column_azimuths_rad
from acres_bridge.dataset.calibration import lens_centres
from acres_bridge.dataset.cloud import cloud_to_organised
from acres_bridge.dataset.cloud import OrganisedCloud
from acres_bridge.dataset.recorder import LidarRecorder
from acres_bridge.dataset.writer import SequenceExists
from acres_bridge.dataset.writer import SequenceWriter

RINGS, COLUMNS = 32, 1800
ELEVATIONS = np.linspace(15.0, -55.0, RINGS)
OFFSETS = np.where(np.arange(RINGS) % 2 == 0, 0.9, -0.9) * np.linspace(1.0, 2.0, RINGS)


def _scan(k: int, *, rings: int = RINGS, columns: int = COLUMNS,
          near_body: bool = True) -> OrganisedCloud:
    """Return a scan of a Helios-like sensor in a room of walls 8 to 40 m away, 2 m up."""
    rng = np.random.default_rng(k)
    elevation = np.radians(ELEVATIONS[:rings])[:, np.newaxis]
    azimuth = (column_azimuths_rad(columns)[np.newaxis]
               + np.radians(OFFSETS[:rings])[:, np.newaxis])
    direction = np.stack([np.cos(elevation) * np.cos(azimuth),
                          np.cos(elevation) * np.sin(azimuth),
                          np.broadcast_to(np.sin(elevation), azimuth.shape)], axis=-1)
    wall = 8.0 + 32.0 * rng.random((1, columns))
    ground = np.where(direction[..., 2] < -0.01, 2.0 / np.maximum(-direction[..., 2], 1e-3),
                      np.inf)
    distance = np.minimum(wall / np.maximum(np.hypot(direction[..., 0], direction[..., 1]),
                                            1e-3), ground)
    distance[distance > 150.0] = np.nan
    distance[rng.random(distance.shape) < 0.05] = np.nan               # misses
    if near_body:
        distance[-1, 850:950] = 1.0                                    # the hood
    xyz = lens_centres(columns, 0.035)[np.newaxis] + distance[..., np.newaxis] * direction
    intensity = np.where(np.isfinite(distance), rng.integers(1, 256, distance.shape), 0)
    return OrganisedCloud(1_000_000_000 + k * 100_000_000, 'lidar', xyz.astype(np.float32),
                          intensity.astype(np.float32), None)


def _record(root, count: int, *, sequence: str = 's', close: bool = True,
            existing: str = 'append', skip=(), **options) -> LidarRecorder:
    recorder = LidarRecorder(root, 'set', sequence, existing=existing, **options)
    for k in range(count):
        if k not in skip:
            recorder.add_cloud(_scan(k))
    if close:
        recorder.close()
    return recorder


def test_layout_files_and_dtypes_are_the_seeds(tmp_path):
    _record(tmp_path, 300, split='train')
    folder = tmp_path / 'set' / 's'
    names = sorted(path.name for path in folder.iterdir())
    assert names == ['body_mask.npy', 'intensity-00000.npy', 'intensity-00001.npy',
                     'meta.json', 'range-00000.npy', 'range-00001.npy', 'scans.npy']
    first = np.load(folder / 'range-00000.npy')
    assert first.dtype == np.uint16 and first.shape == (256, RINGS, COLUMNS)
    assert np.load(folder / 'range-00001.npy').shape == (44, RINGS, COLUMNS)
    assert np.load(folder / 'intensity-00000.npy').dtype == np.uint8
    mask = np.load(folder / 'body_mask.npy')
    assert mask.dtype == bool and mask.shape == (RINGS, COLUMNS)
    assert mask[-1, 850:950].all() and mask.sum() == 100
    scans = np.load(folder / 'scans.npy')
    assert scans.dtype == SCAN_DTYPE and len(scans) == 300
    assert {name: scans.dtype[name].str for name in scans.dtype.names} == {
        't': '<f8', 'stamp_ns': '<i8', 'east': '<f8', 'north': '<f8', 'up': '<f8',
        'qw': '<f4', 'qx': '<f4', 'qy': '<f4', 'qz': '<f4', 'speed': '<f4',
        'lateral_speed': '<f4', 'yaw_rate': '<f4', 'pitch_rate': '<f4', 'roll_rate': '<f4',
        'pose_quality': '|u1', 'flags': '|u1', 'dropped_columns': '<u2', 'returns': '<u4',
        'body_returns': '<u4', 'source_index': '<u4'}
    assert scans['body_returns'][-1] == 100 and scans['body_returns'][0] == 0
    assert np.isnan(scans['east']).all() and not scans['pose_quality'].any()
    meta = json.loads((folder / 'meta.json').read_text())
    assert meta['schema'] == 'acres-lidar-dataset-1' and meta['split'] == 'train'
    assert meta['layers'] == ['range', 'intensity'] and meta['counts']['scans'] == 300
    for key in ('elevations_deg', 'azimuth_offsets_deg', 'clockwise', 'lens_center_m',
                'sweep_s', 'last_column_at_stamp', 'ring_firing_s', 'mount_xyz_m',
                'mount_rpy_deg', 'min_range_m', 'max_range_m'):
        assert key in meta['calibration'], key
    assert meta['calibration']['lens_center_m'] == 0.035
    assert meta['calibration']['sweep_s'] == pytest.approx(0.1)
    index = json.loads((tmp_path / 'set' / 'index.json').read_text())
    assert index['schema'] == 'acres-lidar-dataset-1'
    assert index['sequences']['s']['scans'] == 300 and index['sequences']['s']['split'] == 'train'


def test_the_estimated_beam_table_is_the_sensors_and_points_come_back(tmp_path):
    _record(tmp_path, 20)
    sequence = LidarSet.open('set', root=tmp_path)['s']
    calibration = sequence.calibration
    assert np.allclose(calibration.elevations_deg, ELEVATIONS, atol=2e-3)
    assert np.allclose(calibration.azimuth_offsets_deg, OFFSETS, atol=2e-3)
    errors = []
    for k in range(20):
        source = _scan(k).xyz
        returns = np.isfinite(source[..., 0])
        points = calibration.points(sequence.range_m(k))
        errors.append(np.linalg.norm(points[returns] - source[returns], axis=-1))
    error = np.concatenate(errors)
    assert np.sqrt(np.mean(error ** 2)) < 0.0009        # the range step: 2.5 mm / sqrt(12)
    assert error.max() < 0.0015


def test_reader_api(tmp_path, monkeypatch):
    _record(tmp_path, 300)
    monkeypatch.setenv('ACRES_DATA', str(tmp_path))
    assert data_root() == tmp_path
    dataset = LidarSet.open('set')
    assert dataset.names == ['s'] and 's' in dataset and len(dataset) == 1
    assert LidarSet.open('set', splits=('train',)).names == []
    with pytest.raises(KeyError):
        LidarSet.open('set', splits=('val',))['s']
    with pytest.raises(DatasetError, match='no data set'):
        LidarSet.open('nothing')
    sequence = dataset['s']
    assert isinstance(sequence, Sequence) and len(sequence) == 300
    one = sequence.range_m(10)
    assert one.shape == (RINGS, COLUMNS) and one.dtype == np.float32
    raw = sequence.range_raw(10)
    assert np.array_equal(np.isnan(one), raw == 0)
    assert np.allclose(one[raw > 0], raw[raw > 0] * 0.0025)
    assert sequence.range_m(slice(250, 260)).shape == (10, RINGS, COLUMNS)
    assert np.array_equal(sequence.range_m(slice(250, 260))[6], sequence.range_m(256),
                          equal_nan=True)
    picked = sequence.range_m([299, 3, -1])
    assert picked.shape == (3, RINGS, COLUMNS)
    assert np.array_equal(picked[0], picked[2], equal_nan=True)
    assert np.array_equal(picked[1], sequence.range_m(3), equal_nan=True)
    assert sequence.intensity(5).dtype == np.uint8
    assert sequence.intensity([1, 2]).shape == (2, RINGS, COLUMNS)
    assert sequence.scans.dtype == SCAN_DTYPE and len(sequence.scans) == 300
    assert sequence.body_mask.shape == (RINGS, COLUMNS)
    with pytest.raises(IndexError):
        sequence.range_m(300)
    assert sequence.label('material', 0) is None
    # A simulator's labels: per cell in shards, or one row per scan.
    labels = tmp_path / 'set' / 's' / 'labels'
    labels.mkdir()
    np.save(labels / 'material-00000.npy', np.full((256, RINGS, COLUMNS), 7, np.uint8))
    np.save(labels / 'material-00001.npy', np.full((44, RINGS, COLUMNS), 9, np.uint8))
    np.save(labels / 'commands.npy', np.arange(300 * 4, dtype=np.float32).reshape(300, 4))
    assert sequence.label('material', 299)[0, 0] == 9
    assert sequence.label('material', slice(255, 257))[:, 0, 0].tolist() == [7, 9]
    assert sequence.label('commands', 2).tolist() == [8.0, 9.0, 10.0, 11.0]
    # calibration.points in base_footprint needs a mount.
    with pytest.raises(DatasetError, match='mount'):
        sequence.calibration.points(one, 'base')
    with pytest.raises(DatasetError, match='frame'):
        sequence.calibration.points(one, 'map')
    drop = body_cells(sequence.calibration, one, sequence.body_mask)
    assert drop[-1, 850:950].all() and drop.sum() == 100
    grid = TopView()(sequence.calibration, one, drop=drop)
    assert grid.shape == (2, 256, 256)
    assert grid[0].sum() > 100


def test_a_read_of_one_scan_maps_one_shard(tmp_path):
    _record(tmp_path, 600)
    sequence = Sequence(tmp_path / 'set' / 's')
    sequence.range_m(300)
    assert set(sequence._maps) == {('range', 1)}
    sequence.intensity(599)
    assert set(sequence._maps) == {('range', 1), ('intensity', 2)}
    assert isinstance(sequence._maps[('range', 1)], np.memmap)


def test_a_crash_loses_only_the_open_shard(tmp_path):
    recorder = _record(tmp_path, 300, close=False)
    recorder.writer.close()             # the writes queued so far finish; 44 scans never commit
    sequence = Sequence(tmp_path / 'set' / 's')
    assert len(sequence) == 256
    assert list(sequence.scans['source_index']) == list(range(256))
    assert not (tmp_path / 'set' / 's' / 'range-00001.npy').exists()
    index = json.loads((tmp_path / 'set' / 'index.json').read_text())
    assert index['sequences']['s']['scans'] == 256


def test_a_write_that_fails_half_way_leaves_the_old_file(tmp_path, monkeypatch):
    _record(tmp_path, 10)
    folder = tmp_path / 'set' / 's'
    before = (folder / 'scans.npy').read_bytes()

    def broken(stream, array, allow_pickle):
        stream.write(b'\x93NUMPY half a file')
        raise OSError('disk full')

    monkeypatch.setattr(dataset_format.np, 'save', broken)
    with pytest.raises(OSError, match='disk full'):
        dataset_format.write_npy_atomic(folder / 'scans.npy', np.zeros(3))
    assert (folder / 'scans.npy').read_bytes() == before
    assert not list(folder.glob('.*'))


def test_a_short_shard_is_continued_on_append(tmp_path):
    _record(tmp_path, 200)
    _record(tmp_path, 100)              # the same sequence again: append
    sequence = Sequence(tmp_path / 'set' / 's')
    assert len(sequence) == 300
    assert np.load(tmp_path / 'set' / 's' / 'range-00000.npy').shape[0] == 256
    # Scans 0..199 from the first run, then 0..99 again from the second.
    assert np.array_equal(sequence.range_raw(200), sequence.range_raw(0))
    assert np.array_equal(sequence.range_raw(299), sequence.range_raw(99))
    assert sequence.meta['counts']['runs'] == 2
    indices = sequence.scans['source_index']
    assert np.all(np.diff(indices.astype(np.int64)) > 0)


def test_an_existing_sequence_is_refused_when_asked_and_never_overwritten(tmp_path):
    _record(tmp_path, 5)
    folder = tmp_path / 'set' / 's'
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    with pytest.raises(SequenceExists, match='exists'):
        _record(tmp_path, 3, existing='refuse')
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before
    # Another shape is never appended to.
    with pytest.raises(DatasetError, match='not appending'):
        SequenceWriter(tmp_path, 'set', 's', rings=8, columns=1800)
    # A folder with files but no meta.json is not taken over.
    stray = tmp_path / 'set' / 'other'
    stray.mkdir()
    (stray / 'notes.txt').write_text('mine')
    with pytest.raises(DatasetError, match='no meta.json'):
        SequenceWriter(tmp_path, 'set', 'other', rings=RINGS, columns=COLUMNS)
    assert (stray / 'notes.txt').read_text() == 'mine'
    with pytest.raises(DatasetError, match='name'):
        SequenceWriter(tmp_path, 'set', '../escape', rings=RINGS, columns=COLUMNS)
    with pytest.raises(DatasetError, match='split'):
        SequenceWriter(tmp_path, 'set', 'x', rings=RINGS, columns=COLUMNS, split='training')


def test_recorders_of_two_agents_share_the_index(tmp_path):
    errors = []

    def run(name: str) -> None:
        try:
            _record(tmp_path, 40, sequence=name)
        except Exception as exc:        # noqa: B902 (reported by the assertion below)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(name,)) for name in ('polaris', 'maxxum')]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sorted(LidarSet.open('set', root=tmp_path).names) == ['maxxum', 'polaris']
    index = json.loads((tmp_path / 'set' / 'index.json').read_text())
    assert {name: entry['scans'] for name, entry in index['sequences'].items()} == {
        'polaris': 40, 'maxxum': 40}


def test_a_hole_in_the_stamps_is_a_hole_in_source_index_and_a_gap(tmp_path):
    _record(tmp_path, 30, skip=(10, 11, 20))
    scans = Sequence(tmp_path / 'set' / 's').scans
    assert list(scans['source_index']) == [k for k in range(30) if k not in (10, 11, 20)]
    gaps = [int(index) for index, flag in zip(scans['source_index'], scans['flags']) if flag & 1]
    assert gaps == [12, 21]


def test_a_robosense_style_cloud_is_stored_like_the_bridges(tmp_path):
    """Rings along the height, x y z padded, a double timestamp, column 0 behind the car."""
    ring_offsets = np.linspace(0.0, 1.5e-6 * 31, RINGS)          # each ring of a block later
    layout = np.dtype({'names': ['x', 'y', 'z', 'intensity', 'ring', 'timestamp'],
                       'formats': ['<f4', '<f4', '<f4', '<f4', '<u2', '<f8'],
                       'offsets': [0, 4, 8, 16, 20, 24], 'itemsize': 32})
    recorder = LidarRecorder(tmp_path, 'set', 'helios')
    turn = 900                                  # the driver splits the sweep behind the car
    for k in range(12):
        scan = _scan(k)
        stamp_s = scan.stamp_ns * 1e-9
        points = np.zeros((RINGS, COLUMNS), layout)
        # Driver column j is the format's column (j + turn) mod 1800, fired j-th.
        source = (np.arange(COLUMNS) + turn) % COLUMNS
        for axis, name in enumerate('xyz'):
            points[name] = scan.xyz[:, source, axis]
        points['intensity'] = scan.intensity[:, source]
        points['ring'] = np.arange(RINGS)[:, np.newaxis]
        points['timestamp'] = (stamp_s - 0.1 + (np.arange(COLUMNS) + 1) * 0.1 / COLUMNS
                               )[np.newaxis] + ring_offsets[:, np.newaxis] - 1.5e-6 * 31
        cloud = PointCloud2(height=RINGS, width=COLUMNS, point_step=32, row_step=32 * COLUMNS,
                            is_bigendian=False, is_dense=False, fields=[
                                PointField(name=name, offset=layout.fields[name][1],
                                           datatype={'<f4': 7, '<u2': 4, '<f8': 8}[
                                               layout.fields[name][0].str], count=1)
                                for name in layout.names])
        cloud.header.stamp.sec, cloud.header.stamp.nanosec = divmod(scan.stamp_ns, 10 ** 9)
        cloud.header.frame_id = 'rslidar'
        cloud.data = points.tobytes()
        organised = cloud_to_organised(cloud)
        assert organised.xyz.shape == (RINGS, COLUMNS, 3)
        recorder.add_cloud(organised)
    recorder.close()
    sequence = LidarSet.open('set', root=tmp_path)['helios']
    for k in range(12):
        source = _scan(k).xyz
        returns = np.isfinite(source[..., 0])
        assert np.array_equal(sequence.range_raw(k) > 0, returns)
        distance = np.linalg.norm(source.astype(np.float64) - lens_centres(COLUMNS, 0.035),
                                  axis=-1)
        assert np.abs(sequence.range_raw(k) * 0.0025 - distance)[returns].max() <= 0.00125
    calibration = sequence.calibration
    assert np.allclose(calibration.elevations_deg, ELEVATIONS, atol=2e-3)
    assert calibration.sweep_s == pytest.approx(0.1, rel=1e-3)
    assert calibration.first_column == turn and calibration.firing_clockwise
    assert calibration.last_column_at_stamp
    assert np.allclose(calibration.ring_firing_s, ring_offsets - ring_offsets.mean(), atol=2e-7)


@pytest.mark.parametrize('change, message', [
    ({'height': 1, 'width': 8}, 'not organised'),
    ({'is_bigendian': True}, 'big-endian'),
    ({'fields': [PointField(name='x', offset=0, datatype=7, count=1)]}, 'no field y, z'),
    ({'row_step': 10 * 16}, 'bytes'),
    ({'data': bytes(16 * 8 * 4 - 1)}, 'bytes'),
])
def test_a_cloud_the_recorder_cannot_use_is_refused_with_the_reason(change, message):
    cloud = PointCloud2(height=4, width=8, point_step=16, row_step=16 * 8, is_dense=False,
                        fields=[PointField(name=name, offset=4 * i, datatype=7, count=1)
                                for i, name in enumerate(('x', 'y', 'z', 'intensity'))])
    cloud.data = bytes(16 * 8 * 4)
    for name, value in change.items():
        setattr(cloud, name, value)
    with pytest.raises(DatasetError, match=message):
        cloud_to_organised(cloud)
