# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

# Over 500 lines in one module on purpose: LidarRecorder is one job, a sequence being written,
# and its steps (column order, lens-centre ranges, the scan table, the estimates) all work on
# the state of the open sequence; the pure helpers above it are those steps' arithmetic.

"""
Scans to a sequence: column order, lens-centre ranges, the scan table, calibration estimates.

:class:`LidarRecorder` is what the ``lidar_recorder`` node and ``convert_bag`` share. It takes
:class:`~acres_bridge.dataset.cloud.OrganisedCloud` scans, odometry samples, fix states and the
sensor mount, and writes them with a :class:`~acres_bridge.dataset.writer.SequenceWriter`.

* **Columns.** Stored column 0 looks straight ahead and the columns go clockwise (seen from
  above), 360 / columns degrees each. The recorder finds the source's column order from the
  first scan with returns in enough columns (the azimuth of each column's points): a ``cw``
  source is kept as it is, a ``ccw`` one (``azimuth_order`` ccw) is mirrored, source column k
  to stored column (columns - k) mod columns, and a source whose column 0 is not ahead is
  turned. ``firing_clockwise`` and ``first_column`` in the calibration say in which order the
  stored columns fired, from the time field: a bridge stream's ccw order lists the same
  clockwise sweep the other way, so it gets the format's rule; a sensor whose times show a
  counter-clockwise sweep gets ``firing_clockwise`` false.
* **Range.** The distance from the lens centre of the cell's column (0.035 m from the spin
  axis, in the column's azimuth, in the plane of the sensor's x and y) to the point, in steps
  of 2.5 mm (error at most 1.25 mm); 0 = no return, and a return beyond 163.8375 m is counted
  as clipped and stored as none.
* **Scan table.** The pose is the odometry interpolated at the scan's stamp (the nearest sample
  within 50 ms when no sample follows yet; NaN and quality 0 without one), which
  :class:`~acres_bridge.dataset.poses.ScanPoses` keeps and fills in. ``source_index`` is
  the scan's number in its source: given by the caller (a bag's message number), else counted
  in scan periods from the stamps, so a lost scan leaves a hole; ``flags`` bit 0 marks a scan
  whose time from the one before is not one period (within 25 %).
* **Calibration.** Each ring's elevation and azimuth offset are fitted to the data
  (:class:`~acres_bridge.dataset.calibration.BeamEstimate`); the sweep, the firing order and
  ``ring_firing_s`` come from the cloud's time field, or, without one, from the scan period
  (one sweep per period, the format's firing rule). A scan's ``t`` is the time of its last
  column: the stamp, or later when the time field starts the sweep at the stamp.
* **Body mask.** A cell that returned nearer than 1.5 m in at least 90 % of at least 10 scans.
"""

import datetime
import math
from pathlib import Path
import time
from typing import Any, Callable

import numpy as np

from acres_bridge.dataset.calibration import BeamEstimate
from acres_bridge.dataset.calibration import Calibration
from acres_bridge.dataset.calibration import lens_centres
from acres_bridge.dataset.cloud import OdometrySample
from acres_bridge.dataset.cloud import OrganisedCloud
from acres_bridge.dataset.format import DatasetError
from acres_bridge.dataset.format import FLAG_GAP
from acres_bridge.dataset.format import LENS_CENTER_M
from acres_bridge.dataset.format import MAX_RANGE_VALUE
from acres_bridge.dataset.format import RANGE_STEP_M
from acres_bridge.dataset.format import SCAN_DTYPE
from acres_bridge.dataset.poses import POSE_FIELDS
from acres_bridge.dataset.poses import ScanPoses
from acres_bridge.dataset.writer import SequenceWriter

BODY_RANGE_M = 1.5
BODY_SHARE = 0.9
BODY_MIN_SCANS = 10
GAP_TOLERANCE = 0.25
COMMIT_INTERVAL_S = 10.0
# Fit the beams on the first 8 scans, then on every 16th: enough data, little CPU at 10x.
BEAM_EARLY = 8
BEAM_STRIDE = 16
MIN_COLUMNS_FOR_ORDER = 16


def default_sequence_name(namespace: str = '', now: float | None = None) -> str:
    """Return a sequence name from the start time (UTC), with the namespace's last part."""
    stamp = datetime.datetime.fromtimestamp(time.time() if now is None else now,
                                            tz=datetime.timezone.utc)
    name = stamp.strftime('%Y%m%dT%H%M%SZ')
    agent = namespace.strip('/').replace('/', '-')
    return f'{name}-{agent}' if agent else name


def column_order(xyz: np.ndarray, valid: np.ndarray) -> tuple[int, int] | None:
    """
    Return (k0, sign) such that stored column c is source column (k0 - sign x c) mod columns.

    sign is -1 for a source whose columns go clockwise, +1 for counter-clockwise; k0 is the
    source column that looks straight ahead. None when too few columns have returns.
    """
    columns = xyz.shape[1]
    step = 2.0 * math.pi / columns
    with np.errstate(invalid='ignore'):
        horizontal = np.where(valid[..., np.newaxis], xyz[..., :2], 0.0).astype(np.float64)
    length = np.hypot(horizontal[..., 0], horizontal[..., 1])
    unit = np.where(length[..., np.newaxis] > 1e-6,
                    horizontal / np.maximum(length, 1e-6)[..., np.newaxis], 0.0)
    summed = unit.sum(axis=0)                                   # (columns, 2)
    seen = np.hypot(summed[:, 0], summed[:, 1]) > 1e-6
    if np.count_nonzero(seen) < MIN_COLUMNS_FOR_ORDER:
        return None
    azimuth = np.arctan2(summed[seen, 1], summed[seen, 0])
    index = np.flatnonzero(seen)
    best = None
    for sign in (-1, 1):
        phasor = np.exp(1j * (azimuth - sign * index * step)).mean()
        if best is None or abs(phasor) > best[0]:
            best = (abs(phasor), sign, math.atan2(phasor.imag, phasor.real))
    coherence, sign, phase = best
    if coherence < 0.5:
        raise DatasetError('the columns of the cloud do not step evenly in azimuth: not an '
                           f'organised scan of a spinning LiDAR (coherence {coherence:.2f})')
    # Source column k looks at phase + sign * k * step; straight ahead is k0 = -phase / step.
    k0 = int(round(-phase / (sign * step))) % columns
    return k0, sign


def firing_from_times(times: np.ndarray) -> dict[str, Any]:
    """
    Return the firing keys of the calibration from the per-point times of a scan.

    :param times: seconds relative to the stamp, (rings, columns) in the stored column order.
    :return: sweep_s, last_column_at_stamp, ring_firing_s, first_column, firing_clockwise, and
        end_s: the time of the last column relative to the stamp (0 for the bridge's clouds).
    """
    rings, columns = times.shape
    with np.errstate(invalid='ignore'):
        column_time = np.nanmedian(np.where(np.isfinite(times), times, np.nan), axis=0)
    if not np.isfinite(column_time).all():
        column_time = np.where(np.isfinite(column_time), column_time,
                               np.nanmedian(column_time))
    span = float(column_time.max() - column_time.min())
    result: dict[str, Any] = {}
    if not span > 1e-7:
        result.update(sweep_s=0.0, first_column=0, firing_clockwise=True,
                      last_column_at_stamp=bool(abs(float(column_time.mean())) < 1e-6),
                      end_s=float(column_time.mean()))
        fitted = np.full(columns, float(column_time.mean()))
    else:
        first = int(np.argmin(column_time))
        clockwise = column_time[(first + 1) % columns] < column_time[(first - 1) % columns]
        index = np.arange(columns)
        order = (index - first) % columns if clockwise else (first - index) % columns
        slope, intercept = np.polyfit(order, column_time, 1)
        end = intercept + slope * (columns - 1)
        result.update(sweep_s=float(slope * columns), first_column=first,
                      firing_clockwise=bool(clockwise),
                      last_column_at_stamp=bool(abs(end) <= abs(intercept)), end_s=float(end))
        fitted = intercept + slope * order
    with np.errstate(invalid='ignore'):
        ring = np.nanmedian(times - fitted[np.newaxis], axis=1)
    result['ring_firing_s'] = [0.0 if not math.isfinite(v) else float(v) for v in ring]
    return result


class LidarRecorder:
    """
    Record scans, poses and the mount into one sequence.

    :param root: the data root.
    :param set_name: the data set (a folder below the root).
    :param sequence: the sequence name.
    :param split: the split tag.
    :param source: meta.json ``source`` (kind, topics, bag, ...).
    :param ground_truth: the odometry is the simulator's ground truth (pose quality 4).
    :param existing: ``append`` or ``refuse`` for a sequence that exists.
    :param log: called with one line for each notable event (first scan, column order, ...).
    :param clock: monotonic seconds, for the commit interval.
    """

    def __init__(self, root: Path, set_name: str, sequence: str, *, split: str = 'none',
                 source: dict[str, Any] | None = None, ground_truth: bool = False,
                 existing: str = 'append', log: Callable[[str], None] | None = None,
                 commit_interval_s: float = COMMIT_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.root = Path(root)
        self.set_name = set_name
        self.sequence = sequence
        self.split = split
        self.source = dict(source or {})
        self.existing = existing
        self._log = log or (lambda line: None)
        self._clock = clock
        self.commit_interval_s = commit_interval_s
        self.writer: SequenceWriter | None = None
        self._table = np.zeros(1024, dtype=SCAN_DTYPE)
        self._rows = 0
        self._count = 0
        self._poses = ScanPoses(ground_truth=ground_truth)
        self._mount: tuple[list[float], list[float]] | None = None
        self._order: tuple[int, int] | None = None
        self._map: np.ndarray | None = None
        self._beams: BeamEstimate | None = None
        self._firing: dict[str, Any] | None = None
        self._firing_from = 'none'
        self._periods: list[int] = []
        self._period_ns: int | None = None
        self._last_stamp_ns: int | None = None
        self._last_source_index = -1
        self._body_near: np.ndarray | None = None
        self._body_scans = 0
        self._body_mask: np.ndarray | None = None
        self._unresolved = 0          # rows before this one have their final pose
        self._last_commit = clock()
        self._range_limits = [math.inf, 0.0]
        self.counts = {'returns': 0, 'clipped_returns': 0, 'gaps': 0, 'scans_recorded': 0,
                       'runs': 1}
        self.started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')

    # --- inputs ----------------------------------------------------------------------------

    def add_odometry(self, sample: OdometrySample) -> None:
        """Keep an odometry sample for the poses of the scans around it."""
        self._poses.add_odometry(sample)

    def add_fix_status(self, stamp_ns: int, status: int) -> None:
        """Keep the NavSatFix status of a stamp (the pose quality of the scans after it)."""
        self._poses.add_fix_status(stamp_ns, status)

    @property
    def ground_truth(self) -> bool:
        """Whether the odometry is the simulator's ground truth (pose quality 4)."""
        return self._poses.ground_truth

    @property
    def odometry_stamp_ns(self) -> int:
        """The latest odometry stamp received (-1 before one)."""
        return self._poses.odometry_stamp_ns

    @property
    def mount(self) -> tuple[list[float], list[float]] | None:
        """The sensor frame in base_footprint, (xyz m, rpy deg), or None before /tf_static."""
        return self._mount

    def set_mount(self, mount: tuple[list[float], list[float]] | None) -> None:
        """Set the sensor frame in base_footprint: (xyz m, rpy deg)."""
        if mount is not None and mount != self._mount:
            self._mount = mount
            self._log(f'sensor mount from /tf_static: xyz {[round(v, 4) for v in mount[0]]} m, '
                      f'rpy {[round(v, 3) for v in mount[1]]} deg')

    def add_cloud(self, cloud: OrganisedCloud, *, source_index: int | None = None) -> int:
        """
        Record one scan; return its index in the sequence.

        :param source_index: the scan's number in its source (default: from the stamps).
        :raises DatasetError: for a scan of another shape than the sequence's, or when the
            writer failed.
        """
        if self.writer is None:
            self._open(cloud)
        writer = self.writer
        if (cloud.rings, cloud.columns) != (writer.rings, writer.columns):
            raise DatasetError(f'a scan of {cloud.rings} x {cloud.columns} cells in a sequence '
                               f'of {writer.rings} x {writer.columns}')
        xyz = cloud.xyz
        if self._order is None:
            order = column_order(xyz, np.isfinite(xyz[..., 0]))
            if order is not None:
                self._set_order(order)
        index = self._map
        if index is not None and self._order == (0, -1):
            index = None                                # the format's order already
        # The arithmetic runs column by column, (columns, rings): the memory order of the
        # bridge's clouds, so the float copies read the message in order; only the small
        # results are turned to (rings, columns). float64, so that the only error of a stored
        # range is its 2.5 mm step.
        by_column = np.swapaxes(xyz, 0, 1)
        vector = (by_column if index is None else by_column[index]).astype(np.float64)
        beam_xyz = (np.swapaxes(vector, 0, 1).astype(np.float32) if self._beam_due()
                    else None)
        vector -= self._lens[:, np.newaxis]
        distance_by_column = np.sqrt(np.einsum('ijk,ijk->ij', vector, vector))
        with np.errstate(invalid='ignore'):
            value = np.rint(distance_by_column * (1.0 / RANGE_STEP_M))
            keep_by_column = value <= MAX_RANGE_VALUE    # False for NaN: no return
            clipped = int(np.count_nonzero(value > MAX_RANGE_VALUE))
            np.maximum(value, 1.0, out=value)
        np.copyto(value, 0.0, where=~keep_by_column)
        range_value = np.ascontiguousarray(value.astype(np.uint16).T)
        intensity = None
        if cloud.intensity is not None:
            source = np.swapaxes(cloud.intensity, 0, 1)
            source = source if index is None else source[index]
            with np.errstate(invalid='ignore'):
                source = np.clip(np.rint(source), 0.0, 255.0)
            np.copyto(source, 0.0, where=~keep_by_column)
            intensity = np.ascontiguousarray(source.astype(np.uint8).T)
        keep = keep_by_column.T
        distance = distance_by_column.T
        if beam_xyz is not None:
            self._beams.add(beam_xyz, keep)
        if self._firing is None or self._firing_from == 'scan period':
            self._estimate_firing(cloud, index)
        returns = int(np.count_nonzero(keep))
        if returns and self._count % BEAM_STRIDE == 0:
            kept = distance[keep]
            self._range_limits[0] = min(self._range_limits[0], float(kept.min()))
            self._range_limits[1] = max(self._range_limits[1], float(kept.max()))
        body_returns = self._body(keep, distance)
        row = np.zeros(1, dtype=SCAN_DTYPE)[0]
        for name in POSE_FIELDS:
            row[name] = np.nan
        row['stamp_ns'] = cloud.stamp_ns
        # The time of a scan is the time of its last column: the stamp, unless the cloud's
        # time field says otherwise (the start of the sweep for LIO-SAM-style clouds).
        end_s = float((self._firing or {}).get('end_s', 0.0))
        row['t'] = cloud.stamp_ns * 1e-9 + end_s
        row['dropped_columns'] = int(np.count_nonzero(~keep.any(axis=0)))
        row['returns'] = returns
        row['body_returns'] = body_returns
        row['flags'], row['source_index'] = self._timing(cloud.stamp_ns, source_index)
        self.counts['returns'] += returns
        self.counts['clipped_returns'] += clipped
        self.counts['scans_recorded'] += 1
        if row['flags'] & FLAG_GAP:
            self.counts['gaps'] += 1
        scan = writer.add(range_value, intensity)
        self._append_row(row)
        self._count += 1
        if writer.full:
            self.commit()
        elif (self._count % BEAM_STRIDE == 0
              and self._clock() - self._last_commit >= self.commit_interval_s):
            self.commit()
        return scan

    def _beam_due(self) -> bool:
        return self._count < BEAM_EARLY or self._count % BEAM_STRIDE == 0

    @property
    def rows(self) -> np.ndarray:
        """The scan table so far (earlier runs included), a view."""
        return self._table[:self._rows]

    def _append_row(self, row: np.void) -> None:
        if self._rows == len(self._table):
            self._table = np.concatenate([self._table, np.zeros_like(self._table)])
        self._table[self._rows] = row
        self._rows += 1

    # --- opening and resuming ---------------------------------------------------------------

    def _open(self, cloud: OrganisedCloud) -> None:
        rings, columns = cloud.rings, cloud.columns
        self._lens = lens_centres(columns, LENS_CENTER_M)
        self._beams = BeamEstimate(rings, columns)
        self._body_near = np.zeros((rings, columns), dtype=np.int64)
        self.writer = SequenceWriter(
            self.root, self.set_name, self.sequence, rings=rings, columns=columns,
            split=self.split, intensity=cloud.intensity is not None, existing=self.existing,
            meta={'source': {**self.source, 'frame_id': cloud.frame_id}},
            on_error=lambda exc: self._log(f'writing the sequence failed: {exc}'))
        previous = self.writer.previous_meta
        if previous is None:
            self._log(f'recording {rings} x {columns} scans into {self.writer.folder}')
            return
        rows = np.load(self.writer.folder / 'scans.npy', allow_pickle=False)
        self._table = np.zeros(max(1024, 2 * len(rows)), dtype=SCAN_DTYPE)
        self._table[:len(rows)] = rows
        self._rows = len(rows)
        self._unresolved = len(rows)
        state = previous.get('recorder_state', {})
        order = state.get('column_order')
        if order:
            self._set_order((int(order[0]), int(order[1])))
        if state.get('beams'):
            self._beams.restore(state['beams'])
        if state.get('firing'):
            self._firing = state['firing']
            self._firing_from = state.get('firing_from', 'none')
        self._period_ns = state.get('period_ns')
        self._last_source_index = int(state.get('last_source_index', len(self.rows) - 1))
        self._last_stamp_ns = state.get('last_stamp_ns')
        mask_path = self.writer.folder / 'body_mask.npy'
        if mask_path.exists():
            mask = np.load(mask_path, allow_pickle=False)
            self._body_near = mask.astype(np.int64) * BODY_MIN_SCANS
            self._body_scans = BODY_MIN_SCANS if mask.any() else 0
        counts = previous.get('counts', {})
        for key in ('returns', 'clipped_returns', 'gaps', 'scans_recorded'):
            self.counts[key] = int(counts.get(key, 0))
        self.counts['runs'] = int(counts.get('runs', 1)) + 1
        self._log(f'appending to {self.writer.folder} after its {len(self.rows)} scans')

    def _set_order(self, order: tuple[int, int]) -> None:
        k0, sign = order
        columns = self.writer.columns
        self._order = order
        self._map = (k0 - sign * np.arange(columns)) % columns
        direction = 'clockwise' if sign < 0 else 'counter-clockwise (mirrored)'
        self._log(f'source columns go {direction}; source column {k0} is straight ahead')

    # --- per-scan estimates -----------------------------------------------------------------

    def _estimate_firing(self, cloud: OrganisedCloud, index: np.ndarray) -> None:
        if cloud.time_s is not None:
            times = cloud.time_s if index is None else cloud.time_s[:, index]
            self._firing = firing_from_times(times)
            self._firing_from = 'time field'
            return
        if self._period_ns is None:
            return
        # No time field: the format's rule (the bridge's for cw and ccw streams alike, whose
        # ccw order only lists the same clockwise sweep the other way).
        self._firing = {
            'sweep_s': self._period_ns * 1e-9, 'last_column_at_stamp': True,
            'ring_firing_s': [0.0] * self.writer.rings, 'first_column': 0,
            'firing_clockwise': True, 'end_s': 0.0}
        self._firing_from = 'scan period'

    def _body(self, keep: np.ndarray, distance: np.ndarray) -> int:
        with np.errstate(invalid='ignore'):
            near = keep & (distance < BODY_RANGE_M)
        self._body_near += near
        self._body_scans += 1
        if self._body_scans >= BODY_MIN_SCANS:
            self._body_mask = self._body_near >= BODY_SHARE * self._body_scans
        if self._body_mask is None:
            return 0
        return int(np.count_nonzero(keep & self._body_mask))

    def _timing(self, stamp_ns: int, source_index: int | None) -> tuple[int, int]:
        flags = 0
        last = self._last_stamp_ns
        if last is not None and stamp_ns > last:
            step = stamp_ns - last
            if len(self._periods) < 16:
                self._periods.append(step)
                self._period_ns = min(self._periods + (
                    [self._period_ns] if self._period_ns else []))
            periods = step / self._period_ns
            if abs(periods - 1.0) > GAP_TOLERANCE:
                flags |= FLAG_GAP
            advance = max(1, int(round(periods)))
        else:
            advance = 1
            if last is not None:
                flags |= FLAG_GAP          # a stamp that does not grow
        self._last_stamp_ns = stamp_ns
        if source_index is None:
            source_index = self._last_source_index + advance
        self._last_source_index = int(source_index)
        return flags, int(source_index)

    # --- commits ----------------------------------------------------------------------------

    def calibration(self) -> Calibration:
        """Return the calibration as estimated so far."""
        writer = self.writer
        elevations, offsets = self._beams.angles_deg()
        firing = self._firing or {}
        low, high = self._range_limits
        return Calibration(
            rings=writer.rings, columns=writer.columns, elevations_deg=elevations,
            azimuth_offsets_deg=offsets, clockwise=True, lens_center_m=LENS_CENTER_M,
            sweep_s=float(firing.get('sweep_s', float('nan'))),
            last_column_at_stamp=bool(firing.get('last_column_at_stamp', True)),
            ring_firing_s=np.asarray(firing.get('ring_firing_s', [0.0] * writer.rings)),
            mount_xyz_m=None if self._mount is None else tuple(self._mount[0]),
            mount_rpy_deg=None if self._mount is None else tuple(self._mount[1]),
            min_range_m=low if math.isfinite(low) else float('nan'),
            max_range_m=high if high > 0 else float('nan'),
            first_column=int(firing.get('first_column', 0)),
            firing_clockwise=bool(firing.get('firing_clockwise', True)),
            raw={'estimated': {
                'elevations_deg, azimuth_offsets_deg': (
                    f'fitted to the returns of {self._beams.scans} scans, weighted by the '
                    'squared range (NaN: a ring without returns)'),
                'sweep_s, last_column_at_stamp, ring_firing_s, first_column, firing_clockwise': (
                    f'from the {self._firing_from}' + (
                        ": one sweep per period, the format's firing rule"
                        if self._firing_from == 'scan period' else '')),
                'min_range_m, max_range_m': 'the shortest and longest ranges recorded, not the '
                                            "sensor's limits",
                'mount_xyz_m, mount_rpy_deg': '/tf_static (null: not received)'},
                'column_rule': 'stored column 0 straight ahead, clockwise; a ccw source is '
                               'mirrored (firing_clockwise false)',
                'body_box_base_m': None})

    def commit(self) -> None:
        """Commit the open shard, the scan table and meta.json (the writer writes them)."""
        writer = self.writer
        if writer is None:
            return
        self._unresolved = self._poses.resolve(self.rows, self._unresolved)
        meta = {
            'source': {**writer.meta.get('source', {}), **self.source},
            'identity': {'recorded_by': 'acres_bridge lidar_recorder', 'started': self.started},
            'simulated': self._simulated(),
            'calibration': self.calibration().to_meta(),
            'counts': dict(self.counts),
            'recorder_state': {
                'column_order': None if self._order is None else list(self._order),
                'beams': self._beams.state(), 'firing': self._firing,
                'firing_from': self._firing_from, 'period_ns': self._period_ns,
                'last_stamp_ns': self._last_stamp_ns,
                'last_source_index': self._last_source_index},
        }
        mask = self._body_mask if self._body_mask is not None else np.zeros(
            (writer.rings, writer.columns), dtype=bool)
        writer.commit(self.rows, meta=meta, body_mask=mask)
        self._last_commit = self._clock()

    def _simulated(self) -> bool | None:
        if not len(self.rows):
            return None
        # A simulated scan's time starts at the start of the simulation; a real one is Unix.
        return bool(float(self.rows['t'][0]) < 1e8)

    def poll(self) -> None:
        """Commit the open shard when the commit interval passed (call it from a timer)."""
        if (self.writer is not None and self.writer.scans > self.writer.committed
                and self._clock() - self._last_commit >= self.commit_interval_s):
            self.commit()

    def close(self) -> None:
        """Commit what is open and wait for the writes."""
        if self.writer is None:
            return
        if self.writer.scans > self.writer.committed or self._unresolved < len(self.rows):
            self.commit()
        self.writer.close()
