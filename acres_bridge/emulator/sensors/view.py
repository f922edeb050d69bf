# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The main view of the screenshot op: a chase or top camera, rendered to PNG."""

from __future__ import annotations

import io
import math
from typing import Iterable, Sequence

import numpy as np
from PIL import Image

from acres_bridge.emulator.sensors.camera import camera_table
from acres_bridge.emulator.sensors.camera import render
from acres_bridge.emulator.sensors.layouts import mount
from acres_bridge.emulator.sensors.layouts import mount_in_world
from acres_bridge.emulator.sensors.poses import Pose
from acres_bridge.emulator.sensors.props import Prop
from acres_bridge.emulator.sensors.props import solid_set
from acres_bridge.emulator.sensors.props import vehicle_prop
from acres_bridge.emulator.terrain import Terrain


def render_view_png(agents: Sequence[tuple[str, Pose]], props: Iterable[Prop],
                    terrain: Terrain, *, view: str = 'chase', width: int = 960,
                    height: int = 540) -> bytes:
    """
    Return a PNG of the main view: a chase camera behind the first agent, or a top view.

    :param agents: (vehicle, pose of base_footprint) of each agent, agent 0 first; all are
        drawn as boxes.
    :param view: 'chase' (9 m behind, 4.5 m up) or 'top' (60 m above agent 0, its forward up).
    """
    if view not in ('chase', 'top'):
        raise ValueError(f"view must be 'chase' or 'top', not {view!r}")
    focal = 0.75 * width if view == 'chase' else 0.9 * width
    camera = {'width': width, 'height': height, 'fx': focal, 'fy': focal,
              'cx': (width - 1) / 2.0, 'cy': (height - 1) / 2.0, 'd': [0.0] * 5,
              'position_flu_m': [-9.0, 0.0, 4.5] if view == 'chase' else [0.0, 0.0, 60.0],
              'rpy_deg': [0.0, 14.0, 0.0] if view == 'chase' else [0.0, 90.0, 0.0]}
    table = camera_table(camera, factor=1, noise=False)
    all_props = list(props) + [vehicle_prop(f'agent{i}', vehicle, pose)
                               for i, (vehicle, pose) in enumerate(agents)]
    if agents:
        pose = agents[0][1]
        level = Pose.from_xyz_yaw(*pose.position, pose.yaw_rad)
    else:
        level = Pose.from_xyz_yaw(-38.7097, -140.5131, 0.6392, math.pi / 2.0)
    rotation, origin = mount_in_world(level, *mount(camera))
    image = render(table, rotation, origin, solid_set(terrain, all_props), terrain)
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image[..., ::-1]), 'RGB').save(buffer, format='PNG')
    return buffer.getvalue()
