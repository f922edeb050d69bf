# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The pose of each scan of a sequence: the odometry at the scan's time and the fix's quality.

The pose is the odometry interpolated at the time of the scan's last column (the nearest sample
within 50 ms while no sample follows yet, provisionally; NaN and quality 0 without one). The
quality is 4 for the simulator's ground truth, else from the NavSatFix status in force at the
scan: RTK for a GBAS fix, INS for a fix or SBAS, degraded for no fix (dead reckoning).
"""

from collections import deque
import math

import numpy as np

from acres_bridge.dataset.cloud import OdometrySample
from acres_bridge.dataset.format import QUALITY_DEGRADED
from acres_bridge.dataset.format import QUALITY_INS
from acres_bridge.dataset.format import QUALITY_NONE
from acres_bridge.dataset.format import QUALITY_RTK
from acres_bridge.dataset.format import QUALITY_TRUTH

NEAREST_POSE_NS = 50_000_000
POSE_KEEP_NS = 2_000_000_000
FIXES_KEPT = 4096
# The pose fields of a scan row, NaN while it has no pose.
POSE_FIELDS = ('east', 'north', 'up', 'qw', 'qx', 'qy', 'qz', 'speed', 'lateral_speed',
               'yaw_rate', 'pitch_rate', 'roll_rate')
# NavSatStatus.status -> pose_quality: -1 no fix (dead reckoning), 0 fix, 1 SBAS, 2 GBAS (RTK).
_FIX_QUALITY = {-1: QUALITY_DEGRADED, 0: QUALITY_INS, 1: QUALITY_INS, 2: QUALITY_RTK}


class ScanPoses:
    """
    Odometry samples and fix states kept for the poses of the scan rows around them.

    :param ground_truth: the odometry is the simulator's ground truth (pose quality 4).
    """

    def __init__(self, *, ground_truth: bool = False) -> None:
        self.ground_truth = ground_truth
        self._odometry: deque[OdometrySample] = deque()
        self.odometry_stamp_ns = -1           # the latest odometry stamp received
        self._fixes: deque[tuple[int, int]] = deque()

    def add_odometry(self, sample: OdometrySample) -> None:
        """Keep an odometry sample for the poses of the scans around it."""
        self._odometry.append(sample)
        self.odometry_stamp_ns = max(self.odometry_stamp_ns, sample.stamp_ns)

    def add_fix_status(self, stamp_ns: int, status: int) -> None:
        """Keep the NavSatFix status of a stamp (the pose quality of the scans after it)."""
        self._fixes.append((int(stamp_ns), int(status)))
        while len(self._fixes) > FIXES_KEPT:
            self._fixes.popleft()

    def resolve(self, rows: np.ndarray, start: int) -> int:
        """
        Fill the pose of ``rows[start:]``, which lack their final one, from the odometry kept.

        :return: the first row that still lacks its final pose (no sample after it yet).
        """
        if start >= len(rows) or not self._odometry:
            return start
        samples = list(self._odometry)
        stamps = np.array([sample.stamp_ns for sample in samples], dtype=np.int64)
        order = np.argsort(stamps, kind='stable')
        stamps = stamps[order]
        values = np.array([sample.position + sample.orientation_xyzw + sample.linear
                           + sample.angular for sample in samples], dtype=np.float64)[order]
        fixes = list(self._fixes)
        fix_stamps = np.array([stamp for stamp, _ in fixes], dtype=np.int64)
        final = start
        for i in range(start, len(rows)):
            stamp = int(rows[i]['stamp_ns']) + round(
                (float(rows[i]['t']) - int(rows[i]['stamp_ns']) * 1e-9) * 1e9)
            after = int(np.searchsorted(stamps, stamp, side='left'))
            value = None
            resolved = False
            if after < len(stamps) and stamps[after] == stamp:
                value, resolved = values[after], True
            elif 0 < after < len(stamps):
                before = after - 1
                if stamps[after] - stamps[before] <= POSE_KEEP_NS:
                    share = (stamp - stamps[before]) / (stamps[after] - stamps[before])
                    value = values[before] + share * (values[after] - values[before])
                resolved = True
            else:
                # No sample after the scan yet (or none before): the nearest, provisionally.
                nearest = min(after, len(stamps) - 1)
                if abs(int(stamps[nearest]) - stamp) <= NEAREST_POSE_NS:
                    value = values[nearest]
                resolved = after == 0
            self._fill(rows[i:i + 1], value, fix_stamps, fixes)
            if resolved and final == i:
                final = i + 1
        # Keep what the unresolved rows may still need.
        keep_from = (int(rows[final]['stamp_ns']) if final < len(rows)
                     else int(rows[-1]['stamp_ns'])) - POSE_KEEP_NS
        while len(self._odometry) > 2 and self._odometry[0].stamp_ns < keep_from:
            self._odometry.popleft()
        return final

    def _fill(self, row: np.ndarray, value: np.ndarray | None, fix_stamps: np.ndarray,
              fixes: list[tuple[int, int]]) -> None:
        if value is None or not np.isfinite(value[:7]).all():
            for name in POSE_FIELDS:
                row[name] = np.nan
            row['pose_quality'] = QUALITY_NONE
            return
        x, y, z, qx, qy, qz, qw, vx, vy, _, wx, wy, wz = value
        norm = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw) or 1.0
        row['east'], row['north'], row['up'] = x, y, z
        row['qw'], row['qx'], row['qy'], row['qz'] = qw / norm, qx / norm, qy / norm, qz / norm
        row['speed'], row['lateral_speed'] = vx, vy
        row['yaw_rate'], row['pitch_rate'], row['roll_rate'] = wz, wy, wx
        if self.ground_truth:
            row['pose_quality'] = QUALITY_TRUTH
            return
        stamp = round(float(row['t'][0]) * 1e9)
        at = int(np.searchsorted(fix_stamps, stamp, side='right')) - 1 if len(fixes) else -1
        if at < 0 and len(fixes):
            at = 0
        row['pose_quality'] = (_FIX_QUALITY.get(fixes[at][1], QUALITY_DEGRADED) if at >= 0
                               else QUALITY_INS)
