# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Emulator LiDAR scans of a short drive, as the dataset tests feed them to the recorder."""

import math

import numpy as np

from acres_bridge.conversions.clock import make_header
from acres_bridge.conversions.lidar import lidar_frame_to_cloud
from acres_bridge.conversions.lidar import PointTimes
from acres_bridge.emulator.sensors.layouts import hello_layout
from acres_bridge.emulator.sensors.lidar import lidar_scan
from acres_bridge.emulator.sensors.poses import Pose
from acres_bridge.emulator.sensors.props import vehicle_prop
from acres_bridge.emulator.terrain import Terrain
from acres_bridge.protocol.frames import FrameHeader
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.frames import LidarFrame

PERIOD_S = 0.1
GARAGE = (-38.7097, -140.5131)
MOUNT = ([2.5, 0.0, 2.039], [-1.518, 5.317, 0.0])        # the Polaris's Hello


def drive(scans: int, *, seed: int = 7) -> list[tuple[float, Pose, np.ndarray]]:
    """Return (stamp s, pose, (columns, rings, 4) points) of a drive north past the garage."""
    terrain = Terrain()
    layout = hello_layout('polaris', 'polaris')
    rng = np.random.default_rng(seed)
    x, y = GARAGE[0] + 6.0, GARAGE[1] + 14.0
    props = [vehicle_prop('maxxum', 'maxxum',
                          Pose.from_xyz_yaw(x, y, float(terrain.height_at(x, y)), 0.3))]
    out = []
    for k in range(scans):
        x, y = GARAGE[0], GARAGE[1] + 0.4 * k
        pose = Pose.from_xyz_yaw(x, y, float(terrain.height_at(x, y)), math.pi / 2)
        out.append((1.0 + PERIOD_S * k, pose, lidar_scan(layout, pose, props, terrain, rng=rng)))
    return out


def bridge_cloud(stamp_s: float, points: np.ndarray, *, fields: str = 'xyzirt',
                 frame_id: str = 'polaris/lidar', sequence: int = 0,
                 times: PointTimes | None = None):
    """
    Return the PointCloud2 the sensor bridge publishes for these points.

    :param stamp_s: the cloud's stamp (for ``times`` with origin start, one sweep before the
        frame's).
    :param times: the xyzirt time rule (default: a sweep of one period, cw, from the end).
    """
    columns, rings = points.shape[:2]
    header = FrameHeader(FrameType.LIDAR, 0, sequence, 16 + points.nbytes, stamp_s, stamp_s)
    frame = LidarFrame(header, columns, rings, 16, memoryview(points.tobytes()))
    return lidar_frame_to_cloud(frame, make_header(stamp_s, frame_id), fields=fields,
                                times=times or PointTimes(PERIOD_S))
