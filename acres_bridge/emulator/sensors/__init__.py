# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The sensor models of the emulator: pure numpy functions of a pose, the scene and a generator.

Frames and units follow the sensor stream seed: the world frame is ENU on the tile's grid
(metres), the body frame of a vehicle is FLU at base_footprint, quaternions are (x, y, z, w)
and rotate body vectors into the reference frame, mounts are ``position_flu_m`` and
``rpy_deg`` from base_footprint with R = Rz(yaw) Ry(pitch) Rx(roll).

Every model is a function of its inputs and a ``numpy.random.Generator``: the same generator
state gives the same output. The functions hold no state besides caches of tables derived
from a layout (beam directions, pixel rays, noise pools), so the engine may call them from
several threads. The scene a sensor sees is the fixed ``Terrain`` (ground, fields, buildings,
trees) plus the props the engine passes, which should include the other agents
(``vehicle_prop``) but never the sensing vehicle itself.

- layouts.py: the Hello layouts of the vehicles, hardware shifts, sensor mounts;
- poses.py: the Pose type, the named places of the tile, the utm frame;
- props.py: the shapes of spawnable props and vehicles, and their solids;
- raycast.py: ray casting on the ground plane and on boxes and cylinders;
- ins.py: the INS epoch (40 values);
- lidar.py: the LiDAR ray cast;
- lens.py: the plumb_bob lens model;
- camera.py: the camera render and the projection of points into the image;
- view.py: the main view of the screenshot op (PNG).

tools/bench_emulator_scene.py measures the models.
"""
