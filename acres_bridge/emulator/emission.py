# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Sensor emission: the frames an agent's sensors give at a physics step, queued to its sink.

Each step an agent's sink (its sensor stream) gets, while it has a client:

- Clock every step;
- INS, LiDAR and camera at ``ins.hz``, ``lidar.hz`` and ``camera.hz`` of the agent's Hello, at
  the epochs of their :class:`~acres_bridge.emulator.agents.Schedule`. The LiDAR stamp is the
  end of its sweep, the camera stamp its sample time: both the time of that step. Core mode
  has no camera frames.

The LiDAR sweeps for one scan period (1 / ``lidar.hz``): each column is traced from the pose at
its firing time, interpolated between the poses of the last physics steps, as the game does;
ACRES Core does so only with its sweep option (``sweep``) and otherwise scans from one instant.
The Clock payload is the agent's vehicle time: the world time plus a lead of its own
(``VEHICLE_CLOCK_LEAD_S`` x (index + 1)), so the stamp is the vehicle time plus a constant
offset, as the seed says.

The random numbers of a frame come from ``(seed, agent index, sensor, step)``, so the data do not
depend on when a client connected.
"""

from collections.abc import Callable
import math
from typing import Any

import numpy as np

from acres_bridge.emulator.agents import Agent
from acres_bridge.emulator.agents import Schedule
from acres_bridge.emulator.agents import SENSOR_CAMERA
from acres_bridge.emulator.agents import SENSOR_INS
from acres_bridge.emulator.agents import SENSOR_LIDAR
from acres_bridge.emulator.sensors.camera import camera_image
from acres_bridge.emulator.sensors.ins import ins_values
from acres_bridge.emulator.sensors.lidar import column_offsets_s
from acres_bridge.emulator.sensors.lidar import ColumnPoses
from acres_bridge.emulator.sensors.lidar import lidar_scan
from acres_bridge.emulator.sensors.poses import Pose
from acres_bridge.emulator.sensors.props import Prop as SeenProp
from acres_bridge.emulator.terrain import Terrain
from acres_bridge.geometry import rpy_deg_to_matrix
from acres_bridge.geometry import rpy_to_matrices
from acres_bridge.protocol.frames import encode_clock_payload
from acres_bridge.protocol.frames import encode_ins_payload
from acres_bridge.protocol.frames import encode_lidar_payload
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.limits import CAMERA_ENCODING_CODES
from acres_bridge.protocol.limits import LIDAR_POINT_STEP
from acres_bridge.protocol.limits import SUB_HEADER

_MASK64 = (1 << 64) - 1

SeenBy = Callable[[], list[SeenProp]]


def sensor_schedules(layout: dict[str, Any], mode: str) -> dict[int, Schedule]:
    """Return the schedules of the INS, the LiDAR and the camera of a Hello layout."""
    return {
        SENSOR_INS: Schedule(_rate(layout, 'ins')),
        SENSOR_LIDAR: Schedule(_rate(layout, 'lidar')),
        SENSOR_CAMERA: Schedule(0.0 if mode == 'core' else _rate(layout, 'camera')),
    }


class SensorEmitter:
    """
    The sensor models of a world, run for each agent at each physics step.

    :param terrain: the ground the sensors see.
    :param seed: the seed of the sensor noise.
    :param render_every: the scene models render every Nth LiDAR and camera frame afresh; in
        between, a cloud is the last one moved to the sensor's new pose and an image repeats
        the last one.
    :param sweep: trace each LiDAR column from the pose at its firing time.
    """

    def __init__(self, terrain: Terrain, *, seed: int, render_every: int, sweep: bool) -> None:
        self.terrain = terrain
        self.seed = seed
        self.render_every = render_every
        self.sweep = sweep
        self._step = 0
        self._bit_generator = np.random.PCG64(seed)
        self._generator = np.random.Generator(self._bit_generator)

    def emit(self, agent: Agent, step: int, time_s: float, seen: SeenBy) -> None:
        """
        Queue the frames of an agent's sensors at a physics step to its sink.

        :param seen: returns what the agent's sensors see (props and the other agents); it is
            called only when a LiDAR or camera frame is rendered afresh.
        """
        self._step = step
        sink = agent.sink
        due = [sensor for sensor in (SENSOR_INS, SENSOR_CAMERA, SENSOR_LIDAR)
               if agent.schedules[sensor].due(step)]
        pose = agent.body_pose() if due else None
        layout = agent.sensor_layout or agent.layout
        ins_payload = self._ins_payload(agent, layout, pose) if SENSOR_INS in due else None
        # The game's physics thread queues a step's clock and INS frames one after the other
        # (seed 000); its INS model costs microseconds, ours a third of a millisecond, so it
        # runs before the clock frame is queued rather than between the two.
        sink.queue(FrameType.CLOCK, encode_clock_payload(time_s + agent.vehicle_clock_lead_s),
                   time_s)
        if ins_payload is not None:
            sink.queue(FrameType.INS, ins_payload, time_s)
        if SENSOR_CAMERA in due:
            sink.queue(FrameType.CAMERA, self._camera_payload(agent, layout, pose, seen), time_s)
        if SENSOR_LIDAR in due:
            sink.queue(FrameType.LIDAR, self._lidar_payload(agent, layout, pose, seen), time_s)

    def _ins_payload(self, agent: Agent, layout: dict[str, Any], pose: Pose) -> bytes:
        cos_yaw, sin_yaw = math.cos(agent.yaw), math.sin(agent.yaw)
        lateral = agent.speed_mps * agent.yaw_rate
        values = ins_values(
            layout, pose, velocity_world=agent.twist()['linear'],
            angular_velocity_world=(0.0, 0.0, agent.yaw_rate),
            acceleration_world=(agent.accel_mps2 * cos_yaw - lateral * sin_yaw,
                                agent.accel_mps2 * sin_yaw + lateral * cos_yaw, 0.0),
            rng=self._rng(agent, SENSOR_INS))
        return encode_ins_payload(values)

    def _render_now(self, agent: Agent, sensor: int) -> bool:
        """Count a frame of a sensor; return whether the scene model renders it afresh."""
        count = agent.frames_rendered.get(sensor, 0)
        agent.frames_rendered[sensor] = count + 1
        return count % self.render_every == 0

    def _camera_payload(self, agent: Agent, layout: dict[str, Any], pose: Pose,
                        seen: SeenBy) -> bytes:
        if self._render_now(agent, SENSOR_CAMERA) or agent.last_image is None:
            # The models render straight into the payload after its sub-header: no copy.
            width, height = int(layout['camera']['width']), int(layout['camera']['height'])
            payload = bytearray(SUB_HEADER.size + width * height * 3)
            SUB_HEADER.pack_into(payload, 0, width, height, CAMERA_ENCODING_CODES['bgr8'],
                                 width * 3)
            camera_image(layout, pose, seen(), self.terrain,
                         rng=self._rng(agent, SENSOR_CAMERA),
                         out=np.frombuffer(payload, np.uint8, offset=SUB_HEADER.size).reshape(
                             height, width, 3))
            agent.last_image = payload
        return agent.last_image

    def _lidar_payload(self, agent: Agent, layout: dict[str, Any], pose: Pose,
                       seen: SeenBy) -> bytes:
        lidar = layout['lidar']
        rotation = pose.rotation @ rpy_deg_to_matrix(lidar['rpy_deg'])
        origin = pose.position + pose.rotation @ np.asarray(lidar['position_flu_m'], float)
        if self._render_now(agent, SENSOR_LIDAR) or agent.last_scan is None:
            columns, rings = int(lidar['columns']), int(lidar['rings'])
            payload = bytearray(SUB_HEADER.size + columns * rings * LIDAR_POINT_STEP)
            SUB_HEADER.pack_into(payload, 0, columns, rings, LIDAR_POINT_STEP, 0)
            cloud = lidar_scan(layout, pose, seen(), self.terrain,
                               rng=self._rng(agent, SENSOR_LIDAR),
                               sweep=self._column_poses(agent, lidar) if self.sweep else None,
                               out=np.frombuffer(payload, '<f4', offset=SUB_HEADER.size)
                               .reshape(columns, rings, 4))
            agent.last_scan = (cloud, rotation, origin)
            return payload
        # Between fresh scans: the last cloud moved into the sensor's new pose (a static world).
        cloud, last_rotation, last_origin = agent.last_scan
        turn = (rotation.T @ last_rotation).tolist()
        shift = (rotation.T @ (last_origin - origin)).tolist()
        points = cloud.reshape(-1, 4)
        moved = np.empty_like(points)
        work = np.empty(len(points), np.float32)
        for axis in range(3):
            np.multiply(points[:, 0], turn[axis][0], out=work)
            work += shift[axis]
            work += turn[axis][1] * points[:, 1]
            work += turn[axis][2] * points[:, 2]
            moved[:, axis] = work
        moved[:, 3] = points[:, 3]
        return encode_lidar_payload(moved.reshape(cloud.shape))

    def _column_poses(self, agent: Agent, lidar: dict[str, Any]) -> ColumnPoses:
        """Return the pose of each column's firing time, interpolated in the pose history."""
        history = np.array(agent.history)
        times = history[-1, 0] + column_offsets_s(lidar, 1.0 / float(lidar['hz']))
        x, y, z, roll, pitch = (np.interp(times, history[:, 0], history[:, k])
                                for k in range(1, 6))
        yaw = np.interp(times, history[:, 0], np.unwrap(history[:, 6]))
        return ColumnPoses(np.stack([x, y, z], axis=1),
                           rpy_to_matrices(roll, pitch, yaw))

    def _rng(self, agent: Agent, sensor: int) -> np.random.Generator:
        """Return the generator of one frame: its state comes from (seed, agent, sensor, step)."""
        key = _mix64(_mix64(_mix64(self.seed) ^ agent.index) ^ (sensor << 8)) ^ self._step
        self._bit_generator.state = {
            'bit_generator': 'PCG64',
            'state': {'state': (_mix64(key) << 64) | _mix64(key ^ 0xA5A5A5A5),
                      'inc': (_mix64(key ^ 0x5A5A) << 1) | 1},
            'has_uint32': 0, 'uinteger': 0}
        return self._generator


def _rate(layout: dict[str, Any], sensor: str) -> float:
    section = layout.get(sensor, {})
    if not section.get('enabled', False):
        return 0.0
    return float(section.get('hz', 0.0))


def _mix64(value: int) -> int:
    """Return the splitmix64 finaliser of a 64-bit value: a cheap, well-mixed hash."""
    value = (value + 0x9E3779B97F4A7C15) & _MASK64
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & _MASK64
    return value ^ (value >> 31)
