# Copyright 2026 The acres_bridge authors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
The simulated world of the emulator: agents, props, the physics clock, episodes and the farm.

The physics runs at 120 Hz, one step at a time (:meth:`World.advance`). The world time of step
``k`` is ``k * float32(1/120)`` in game mode (the game's single-precision step, e.g.
0.10000000521540642 at step 12) and exactly ``k / 120`` in core mode.

In each step each agent first applies a pending teleport, then drives its autopilot (a slow
circle; a teleported vehicle accelerates back to its cruise speed), and its sensors emit, to its
sink (the agent's sensor stream) and only while the sink has a client:

- Clock every step;
- INS, LiDAR and camera at ``ins.hz``, ``lidar.hz`` and ``camera.hz`` of the agent's Hello: an
  epoch is the first physics step at or after its due time ``n / hz`` (n = 1, 2, ...), so 100 Hz
  gives 10 epochs in each 12 steps with intervals of 1 or 2 steps. The LiDAR stamp is the end of
  its sweep, the camera stamp its sample time: both the time of that step. Core mode has no
  camera frames.

The LiDAR sweeps for one scan period (1 / ``lidar.hz``): each column is traced from the pose at
its firing time, interpolated between the poses of the last physics steps, as the game does;
ACRES Core does so only with its sweep option (``sweep``) and otherwise scans from one instant.
The Clock payload is the agent's vehicle time: the world time plus a lead of its own
(``VEHICLE_CLOCK_LEAD_S`` x (index + 1)), so the stamp is the vehicle time plus a constant
offset, as the seed says. Without a georeference (``georeferenced`` false) the Hello says so and
the INS values of the geographic reference are NaN, the fix status -1.

The random numbers of a frame come from ``(seed, agent index, sensor, step)``, so the data do not
depend on when a client connected.
"""

from collections import deque
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
import datetime
import math
import threading
from typing import Any
from typing import Protocol

import numpy as np

from acres_bridge.emulator import geodesy
from acres_bridge.emulator.episode_log import EpisodeLog
from acres_bridge.emulator.sensors.camera import camera_image
from acres_bridge.emulator.sensors.ins import ins_values
from acres_bridge.emulator.sensors.layouts import hello_layout
from acres_bridge.emulator.sensors.layouts import shifted_layout
from acres_bridge.emulator.sensors.lidar import column_offsets_s
from acres_bridge.emulator.sensors.lidar import ColumnPoses
from acres_bridge.emulator.sensors.lidar import lidar_scan
from acres_bridge.emulator.sensors.poses import NAMED_POSES
from acres_bridge.emulator.sensors.poses import Pose
from acres_bridge.emulator.sensors.poses import pose_from_utm
from acres_bridge.emulator.sensors.poses import utm_state
from acres_bridge.emulator.sensors.props import Prop as SeenProp
from acres_bridge.emulator.sensors.props import vehicle_prop
from acres_bridge.emulator.sensors.view import render_view_png
from acres_bridge.emulator.terrain import Terrain
from acres_bridge.geometry import quaternion_yaw
from acres_bridge.geometry import rpy_deg_to_matrix
from acres_bridge.geometry import rpy_to_matrices
from acres_bridge.geometry import rpy_to_quaternion
from acres_bridge.protocol.frames import encode_clock_payload
from acres_bridge.protocol.frames import encode_ins_payload
from acres_bridge.protocol.frames import encode_lidar_payload
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.limits import CAMERA_ENCODING_CODES
from acres_bridge.protocol.limits import LIDAR_POINT_STEP
from acres_bridge.protocol.limits import SUB_HEADER
from acres_bridge.protocol.lines import is_number

PHYSICS_HZ = 120
GAME_STEP_S = float(np.float32(1.0 / PHYSICS_HZ))
MAP_NAME = 'V03ACRE'
MAX_TELEPORT_SPEED_MPS = 8.0
# How far each agent's vehicle clock runs ahead of the world's, per agent number (1, 2, ...).
VEHICLE_CLOCK_LEAD_S = 1000.0
# The physics steps of pose history kept for a LiDAR sweep (a sweep of 0.1 s spans 12).
_HISTORY_STEPS = 32

# The autopilot: cruise speed (m/s), circle radius (m), acceleration (m/s^2).
_CRUISE_MPS = {'polaris': 2.0, 'maxxum': 1.5}
_LOOP_RADIUS_M = 25.0
_ACCEL_MPS2 = 1.0

_WEATHER_RAIN_MM_H = {'clear': 0.0, 'fair': 0.0, 'overcast': 0.0, 'rain': 4.0, 'storm': 20.0,
                      'fog': 0.0}
_SHIFT_NUMBERS = ('steering_offset_deg', 'ulc_speed_bias_mps', 'throttle_bias_pct',
                  'brake_bias_bar')
_SHIFT_VECTORS = ('camera_offset_m', 'camera_offset_rpy_deg', 'lidar_offset_m',
                  'lidar_offset_rpy_deg')

# The farm: wheel track widths (m), soil water (m3/m3) and ruts.
_TRACK_M = {'polaris': 1.3, 'maxxum': 1.9}
_THETA_WILTING = 0.12
_THETA_SATURATION = 0.45
_GRASS_THETA = 0.25
_RUT_THETA = 0.36
_RUT_DEPTH_M = 0.03
_SOIL_CELL_M = 4.0


class FarmState:
    """The mutable ground truth: crushed 1 m cells and ruts of each field, soil water."""

    def __init__(self, seed: int) -> None:
        self.crushed: dict[int, set[tuple[int, int]]] = {}
        self.ruts: dict[int, set[tuple[int, int]]] = {}
        rng = np.random.default_rng((seed, 0x50111))
        self.initial_theta = rng.uniform(0.2, 0.34, 60).tolist()
        self.water = list(self.initial_theta)

    def theta(self, number: int) -> float:
        """Return the mean water content of the soil surface of a field."""
        return self.water[number]

    def set_wetness(self, numbers: list[int], wetness: float) -> None:
        """Set the water of fields from 0 (wilting point) to 1 (saturation)."""
        theta = _THETA_WILTING + wetness * (_THETA_SATURATION - _THETA_WILTING)
        for number in numbers:
            self.water[number] = theta


_WHEELBASE_M = {'polaris': 2.3, 'maxxum': 2.8}
_POLARIS_STEERING_RATIO = 16.0
_MASK64 = (1 << 64) - 1

_SENSOR_CLOCK, _SENSOR_INS, _SENSOR_LIDAR, _SENSOR_CAMERA = range(4)


class SensorSink(Protocol):
    """Where an agent's frames go: its sensor stream."""

    @property
    def has_client(self) -> bool:
        """Whether frames are wanted now."""

    def queue(self, frame_type: int, payload: bytes, stamp_s: float) -> bool:
        """Queue one frame."""


def world_time_s(step: int, mode: str) -> float:
    """Return the world time of a physics step in ``mode`` (game or core)."""
    if mode == 'game':
        return step * GAME_STEP_S
    return step / PHYSICS_HZ


class _Schedule:
    """The epochs of one sensor rate over 120 Hz physics: due times n / hz, n >= 1."""

    def __init__(self, hz: float) -> None:
        ratio = _fraction(hz)
        self._numerator, self._denominator = ratio
        self.enabled = hz > 0

    def due(self, step: int) -> bool:
        if not self.enabled or step <= 0:
            return False
        scale = self._denominator * PHYSICS_HZ
        return (step * self._numerator) // scale > ((step - 1) * self._numerator) // scale


def _fraction(hz: float) -> tuple[int, int]:
    from fractions import Fraction
    value = Fraction(hz).limit_denominator(1000)
    return value.numerator, value.denominator


@dataclass
class Agent:
    """One vehicle of the session: its pose is that of base_footprint in the world frame."""

    name: str
    vehicle: str
    index: int
    layout: dict[str, Any]
    spawn_x: float
    spawn_y: float
    spawn_yaw: float
    x: float = 0.0
    y: float = 0.0
    z: float = 0.0
    yaw: float = 0.0
    roll: float = 0.0
    pitch: float = 0.0
    speed_mps: float = 0.0
    yaw_rate: float = 0.0
    accel_mps2: float = 0.0
    cruise_mps: float = 2.0
    implement: str = ''
    shift: dict[str, Any] | None = None
    sensor_layout: dict[str, Any] | None = None   # the layout with the shift's mount offsets
    pending: tuple[float, float, float, float] | None = None   # x, y, yaw, speed
    sink: SensorSink | None = None
    schedules: dict[int, _Schedule] = field(default_factory=dict)
    last_scan: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None   # cloud, R, origin
    # (world time, x, y, z, roll, pitch, yaw) of the last physics steps, for the LiDAR sweep.
    history: deque = field(default_factory=lambda: deque(maxlen=_HISTORY_STEPS))
    last_image: bytes | None = None
    frames_rendered: dict[int, int] = field(default_factory=dict)

    def orientation(self) -> list[float]:
        """Return the quaternion body -> world of the vehicle on the ground."""
        return list(rpy_to_quaternion(self.roll, self.pitch, self.yaw))

    def twist(self) -> dict[str, list[float]]:
        """Return the world-frame twist."""
        return {'linear': [self.speed_mps * math.cos(self.yaw),
                           self.speed_mps * math.sin(self.yaw), 0.0],
                'angular': [0.0, 0.0, self.yaw_rate]}

    @property
    def vehicle_clock_lead_s(self) -> float:
        """How far the vehicle time runs ahead of the world time: stamp = vehicle - lead."""
        return VEHICLE_CLOCK_LEAD_S * (self.index + 1)

    def pose(self) -> dict[str, list[float]]:
        """Return the pose of base_footprint in the world frame."""
        return {'position': [self.x, self.y, self.z], 'orientation': self.orientation()}

    def body_pose(self) -> Pose:
        """Return the pose for the sensor models."""
        return Pose(np.array([self.x, self.y, self.z]), np.array(self.orientation()))


@dataclass
class Prop:
    """One spawned entity."""

    name: str
    uri: str
    x: float
    y: float
    z: float
    orientation: list[float]

    def pose(self) -> dict[str, list[float]]:
        """Return the pose in the world frame."""
        return {'position': [self.x, self.y, self.z], 'orientation': list(self.orientation)}

    def scene_prop(self) -> SeenProp:
        """Return the prop for the sensor models."""
        return SeenProp(self.name, self.uri, np.array([self.x, self.y, self.z]),
                        quaternion_yaw(self.orientation))


class World:
    """
    The state of one emulated session.

    :param vehicles: one vehicle type per agent (``polaris`` or ``maxxum``).
    :param mode: ``game`` or ``core``.
    :param seed: the seed of the sensor noise.
    :param drive: ``loop`` (the autopilot drives slow circles) or ``hold`` (vehicles stand).
    :param render_every: the scene models render every Nth LiDAR and camera frame afresh; in
        between, a cloud is the last one moved to the sensor's new pose and an image repeats
        the last one. 1 (every frame) is the faithful default; more trades fidelity for speed.
    :param sweep: core mode: trace each LiDAR column from the pose at its firing time (ACRES
        Core's sweep option); without it a scan is from one instant. The game always sweeps.
    :param georeferenced: whether the map has a geographic reference (see the module).
    """

    def __init__(self, vehicles: Sequence[str] = ('polaris',), *, mode: str = 'game',
                 seed: int = 42, drive: str = 'loop', render_every: int = 1,
                 start_utc: datetime.datetime | None = None, sweep: bool = False,
                 georeferenced: bool = True) -> None:
        if mode not in ('game', 'core'):
            raise ValueError(f'mode must be game or core, not {mode!r}')
        if drive not in ('loop', 'hold'):
            raise ValueError(f'drive must be loop or hold, not {drive!r}')
        self.mode = mode
        self.map_name = MAP_NAME
        self.seed = seed
        self.drive = drive
        self.lock = threading.RLock()
        self.step = 0
        self.episode = 0
        self.reset_epoch = 0
        self.episode_start_step = 0
        start = start_utc or datetime.datetime.now(datetime.timezone.utc)
        self.session_id = start.strftime('%Y%m%dT%H%M%S')
        self.terrain = Terrain()
        self.farm = FarmState(seed)
        if render_every < 1:
            raise ValueError(f'render_every must be 1 or more, got {render_every}')
        self.render_every = render_every
        self.sweep = mode == 'game' or bool(sweep)
        self.georeferenced = bool(georeferenced)
        self._bit_generator = np.random.PCG64(seed)
        self._generator = np.random.Generator(self._bit_generator)
        self.agents: list[Agent] = []
        self.props: dict[str, Prop] = {}
        self.conditions: dict[str, Any] = {}
        self.shifts: dict[str, dict[str, Any]] = {}
        self.episode_log: EpisodeLog | None = None
        self.on_farm_event: Callable[[dict[str, Any]], None] | None = None
        self._add_agents(vehicles)

    # --- set-up -------------------------------------------------------------------------------

    def _add_agents(self, vehicles: Sequence[str]) -> None:
        spawn_poses = _spawn_poses()
        for index, vehicle in enumerate(vehicles):
            if vehicle not in _CRUISE_MPS:
                raise ValueError(f'unknown vehicle {vehicle!r}: polaris or maxxum')
            if self.mode == 'core' and vehicle != 'polaris':
                raise ValueError('ACRES Core has only Polaris agents')
            same = sum(1 for agent in self.agents if agent.vehicle == vehicle)
            name = vehicle if same == 0 else f'{vehicle}_{same}'
            layout = hello_layout(vehicle, name, mode=self.mode,
                                  georeferenced=self.georeferenced)
            x, y, yaw = spawn_poses[index % len(spawn_poses)]
            # Agents that share a spawn place stand side by side.
            offset = 6.0 * (index // len(spawn_poses))
            x -= offset * math.sin(yaw)
            y += offset * math.cos(yaw)
            agent = Agent(name=name, vehicle=vehicle, index=index, layout=layout,
                          spawn_x=x, spawn_y=y, spawn_yaw=yaw, cruise_mps=_CRUISE_MPS[vehicle])
            agent.schedules = {
                _SENSOR_INS: _Schedule(_rate(layout, 'ins')),
                _SENSOR_LIDAR: _Schedule(_rate(layout, 'lidar')),
                _SENSOR_CAMERA: _Schedule(0.0 if self.mode == 'core'
                                          else _rate(layout, 'camera')),
            }
            self._place(agent, x, y, yaw, 0.0)
            self.agents.append(agent)

    def _place(self, agent: Agent, x: float, y: float, yaw: float, speed_mps: float) -> None:
        agent.x, agent.y, agent.yaw = x, y, yaw
        agent.history.clear()   # a teleport: no sweep across the jump
        agent.speed_mps = speed_mps
        agent.accel_mps2 = 0.0
        agent.yaw_rate = self._yaw_rate(agent) if self.drive == 'loop' else 0.0
        self._settle(agent)

    def _settle(self, agent: Agent) -> None:
        """Put the vehicle on the ground: height, roll and pitch from the slope."""
        height, slope_x, slope_y = self.terrain.height_and_gradient(agent.x, agent.y)
        cos_yaw, sin_yaw = math.cos(agent.yaw), math.sin(agent.yaw)
        agent.z = float(height)
        agent.pitch = -math.atan(slope_x * cos_yaw + slope_y * sin_yaw)
        agent.roll = math.atan(-slope_x * sin_yaw + slope_y * cos_yaw)

    def _yaw_rate(self, agent: Agent) -> float:
        """Return the yaw rate of the autopilot's circle, with the shift's steering offset."""
        curvature = 1.0 / _LOOP_RADIUS_M
        if agent.shift is not None:
            offset_deg = agent.shift['steering_offset_deg']
            if agent.vehicle == 'polaris':
                offset_deg /= _POLARIS_STEERING_RATIO
            curvature += math.tan(math.radians(offset_deg)) / _WHEELBASE_M[agent.vehicle]
        return agent.speed_mps * curvature

    # --- clock --------------------------------------------------------------------------------

    @property
    def time_s(self) -> float:
        """The world time of the current step."""
        return world_time_s(self.step, self.mode)

    @property
    def episode_time_s(self) -> float:
        """The time since the start of the episode."""
        return self.time_s - world_time_s(self.episode_start_step, self.mode)

    @property
    def episode_id(self) -> str:
        """The identifier of the episode: the UTC start of the session and its number."""
        return f'{self.session_id}-{self.episode:04d}'

    def agent(self, name: str) -> Agent | None:
        """Return the agent of this name."""
        for agent in self.agents:
            if agent.name == name:
                return agent
        return None

    # --- stepping -----------------------------------------------------------------------------

    def advance(self, steps: int, *, on_step: Callable[[int], bool] | None = None) -> int:
        """
        Run physics steps one at a time and emit the sensor frames of each.

        :param on_step: called after each step with the number done; False stops early.
        :return: the number of steps done.
        """
        done = 0
        while done < steps:
            self.step_once()
            done += 1
            if on_step is not None and not on_step(done):
                break
        return done

    def step_once(self) -> None:
        """Run one physics step."""
        with self.lock:
            self._physics_step()

    def _physics_step(self) -> None:
        self.step += 1
        dt = 1.0 / PHYSICS_HZ
        for agent in self.agents:
            if agent.pending is not None:
                x, y, yaw, speed = agent.pending
                agent.pending = None
                self._place(agent, x, y, yaw, speed)
            elif self.drive == 'loop':
                self._drive(agent, dt)
                self._mark_ground(agent)
        time_s = self.time_s
        for agent in self.agents:
            agent.history.append((time_s, agent.x, agent.y, agent.z, agent.roll, agent.pitch,
                                  agent.yaw))
        for agent in self.agents:
            if agent.sink is not None and agent.sink.has_client:
                self._emit(agent, time_s)
        if self.episode_log is not None:
            for agent in self.agents:
                self.episode_log.write('/acres/agent_state', time_s, {
                    'step': self.step, 'agent': agent.name, 'pose': agent.pose(),
                    'twist': agent.twist()})

    def _drive(self, agent: Agent, dt: float) -> None:
        cruise = agent.cruise_mps
        if agent.shift is not None:
            # The speed controller believes the biased speed: the vehicle runs slower.
            cruise = max(0.0, cruise - agent.shift['ulc_speed_bias_mps'])
        speed = agent.speed_mps
        if speed < cruise:
            speed = min(cruise, speed + _ACCEL_MPS2 * dt)
        elif speed > cruise:
            speed = max(cruise, speed - _ACCEL_MPS2 * dt)
        agent.accel_mps2 = (speed - agent.speed_mps) / dt
        agent.speed_mps = speed
        agent.yaw_rate = self._yaw_rate(agent)
        agent.yaw = math.remainder(agent.yaw + agent.yaw_rate * dt, math.tau)
        agent.x += speed * math.cos(agent.yaw) * dt
        agent.y += speed * math.sin(agent.yaw) * dt
        self._settle(agent)

    def _emit(self, agent: Agent, time_s: float) -> None:
        sink = agent.sink
        step = self.step
        due = [sensor for sensor in (_SENSOR_INS, _SENSOR_CAMERA, _SENSOR_LIDAR)
               if agent.schedules[sensor].due(step)]
        pose = agent.body_pose() if due else None
        layout = agent.sensor_layout or agent.layout
        ins_payload = self._ins_payload(agent, layout, pose) if _SENSOR_INS in due else None
        # The game's physics thread queues a step's clock and INS frames one after the other
        # (seed 000); its INS model costs microseconds, ours a third of a millisecond, so it
        # runs before the clock frame is queued rather than between the two.
        sink.queue(FrameType.CLOCK, encode_clock_payload(time_s + agent.vehicle_clock_lead_s),
                   time_s)
        if ins_payload is not None:
            sink.queue(FrameType.INS, ins_payload, time_s)
        if _SENSOR_CAMERA in due:
            sink.queue(FrameType.CAMERA, self._camera_payload(agent, layout, pose), time_s)
        if _SENSOR_LIDAR in due:
            sink.queue(FrameType.LIDAR, self._lidar_payload(agent, layout, pose), time_s)

    def _ins_payload(self, agent: Agent, layout: dict[str, Any], pose: Pose) -> bytes:
        cos_yaw, sin_yaw = math.cos(agent.yaw), math.sin(agent.yaw)
        lateral = agent.speed_mps * agent.yaw_rate
        values = ins_values(
            layout, pose, velocity_world=agent.twist()['linear'],
            angular_velocity_world=(0.0, 0.0, agent.yaw_rate),
            acceleration_world=(agent.accel_mps2 * cos_yaw - lateral * sin_yaw,
                                agent.accel_mps2 * sin_yaw + lateral * cos_yaw, 0.0),
            rng=self._rng(agent, _SENSOR_INS))
        return encode_ins_payload(values)

    def _render_now(self, agent: Agent, sensor: int) -> bool:
        """Count a frame of a sensor; return whether the scene model renders it afresh."""
        count = agent.frames_rendered.get(sensor, 0)
        agent.frames_rendered[sensor] = count + 1
        return count % self.render_every == 0

    def _camera_payload(self, agent: Agent, layout: dict[str, Any], pose: Pose) -> bytes:
        if self._render_now(agent, _SENSOR_CAMERA) or agent.last_image is None:
            # The models render straight into the payload after its sub-header: no copy.
            width, height = int(layout['camera']['width']), int(layout['camera']['height'])
            payload = bytearray(SUB_HEADER.size + width * height * 3)
            SUB_HEADER.pack_into(payload, 0, width, height, CAMERA_ENCODING_CODES['bgr8'],
                                 width * 3)
            camera_image(layout, pose, self._seen_by(agent), self.terrain,
                         rng=self._rng(agent, _SENSOR_CAMERA),
                         out=np.frombuffer(payload, np.uint8, offset=SUB_HEADER.size).reshape(
                             height, width, 3))
            agent.last_image = payload
        return agent.last_image

    def _lidar_payload(self, agent: Agent, layout: dict[str, Any], pose: Pose) -> bytes:
        lidar = layout['lidar']
        rotation = pose.rotation @ rpy_deg_to_matrix(lidar['rpy_deg'])
        origin = pose.position + pose.rotation @ np.asarray(lidar['position_flu_m'], float)
        if self._render_now(agent, _SENSOR_LIDAR) or agent.last_scan is None:
            columns, rings = int(lidar['columns']), int(lidar['rings'])
            payload = bytearray(SUB_HEADER.size + columns * rings * LIDAR_POINT_STEP)
            SUB_HEADER.pack_into(payload, 0, columns, rings, LIDAR_POINT_STEP, 0)
            cloud = lidar_scan(layout, pose, self._seen_by(agent), self.terrain,
                               rng=self._rng(agent, _SENSOR_LIDAR),
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

    def _seen_by(self, agent: Agent) -> list[SeenProp]:
        """Return what the sensors of an agent see: the props and the other agents."""
        props = [prop.scene_prop() for prop in self.props.values()]
        props.extend(vehicle_prop(other.name, other.vehicle, other.body_pose())
                     for other in self.agents if other is not agent)
        return props

    def _rng(self, agent: Agent, sensor: int) -> np.random.Generator:
        """Return the generator of one frame: its state comes from (seed, agent, sensor, step)."""
        key = _mix64(_mix64(_mix64(self.seed) ^ agent.index) ^ (sensor << 8)) ^ self.step
        self._bit_generator.state = {
            'bit_generator': 'PCG64',
            'state': {'state': (_mix64(key) << 64) | _mix64(key ^ 0xA5A5A5A5),
                      'inc': (_mix64(key ^ 0x5A5A) << 1) | 1},
            'has_uint32': 0, 'uinteger': 0}
        return self._generator

    # --- episodes -----------------------------------------------------------------------------

    def reset(self, *, scope: int, restore_fields: bool) -> int:
        """
        Start a new episode; the physics clock goes on.

        :param scope: bit 2 puts the agents at their spawn poses (at the next step), bit 4
            removes the spawned entities.
        :return: the number of fields restored.
        """
        self.episode += 1
        self.episode_start_step = self.step
        if scope & 2:
            self.reset_epoch += 1
            for agent in self.agents:
                agent.pending = (agent.spawn_x, agent.spawn_y, agent.spawn_yaw, 0.0)
        if scope & 4:
            self.props.clear()
        if restore_fields:
            return self.restore_fields(None)
        return 0

    # --- entities -----------------------------------------------------------------------------

    def entity_names(self) -> list[str]:
        """Return the agents, then the spawned entities."""
        return [agent.name for agent in self.agents] + list(self.props)

    def has_entity(self, name: str) -> bool:
        """Return whether an agent or a spawned entity has this name."""
        return self.agent(name) is not None or name in self.props

    def entity_state(self, name: str) -> dict[str, Any] | None:
        """Return the get_entity_state reply of an entity, None when there is none."""
        agent = self.agent(name)
        if agent is not None:
            pose, twist = agent.pose(), agent.twist()
        elif name in self.props:
            pose = self.props[name].pose()
            twist = {'linear': [0.0, 0.0, 0.0], 'angular': [0.0, 0.0, 0.0]}
        else:
            return None
        utm = utm_state(Pose(np.array(pose['position']), np.array(pose['orientation'])))
        return {'time_s': self.time_s, 'frame': 'world', 'pose': pose, 'twist': twist,
                'utm': utm}

    def to_world(self, position: Sequence[float], orientation: Sequence[float],
                 frame: str) -> tuple[list[float], list[float]]:
        """Return a position and an orientation of ``frame`` (world or utm) in the world frame."""
        if frame == 'world':
            return list(position), list(orientation)
        pose = pose_from_utm(position, orientation)
        return pose.position.tolist(), pose.orientation.tolist()

    def set_entity_state(self, name: str, position: Sequence[float],
                         orientation: Sequence[float], *, frame: str = 'world',
                         speed_mps: float = 0.0) -> None:
        """Move an entity; a vehicle moves at the next physics step, on the ground."""
        position, orientation = self.to_world(position, orientation, frame)
        agent = self.agent(name)
        if agent is not None:
            agent.pending = (position[0], position[1], quaternion_yaw(orientation),
                             min(speed_mps, MAX_TELEPORT_SPEED_MPS))
            return
        prop = self.props[name]
        x, y, z = position
        if self.mode == 'core' and z == 0.0:
            z = self.terrain.height_at(x, y)
        prop.x, prop.y, prop.z, prop.orientation = x, y, z, list(orientation)

    def spawn(self, name: str, uri: str, position: Sequence[float],
              orientation: Sequence[float], *, frame: str = 'world') -> str:
        """Add a prop; return its name (with a number added when the name exists)."""
        position, orientation = self.to_world(position, orientation, frame)
        base = name or uri.rsplit(':', 1)[-1]
        unique = base if base and not self.has_entity(base) else None
        number = 1
        while unique is None:
            candidate = f'{base}_{number}'
            if not self.has_entity(candidate):
                unique = candidate
            number += 1
        x, y, z = position
        if z == 0.0:
            z = self.terrain.height_at(x, y)
        self.props[unique] = Prop(unique, uri, x, y, z, list(orientation))
        return unique

    def delete(self, name: str) -> None:
        """Remove a spawned entity."""
        del self.props[name]

    def named_poses(self) -> list[dict[str, Any]]:
        """Return the named places of the tile."""
        return [dict(place) for place in NAMED_POSES]

    # --- conditions and shifts ----------------------------------------------------------------

    def set_conditions(self, request: dict[str, Any]) -> tuple[list[str], list[str]]:
        """Apply the parts of a set_conditions request; return the applied texts and errors."""
        applied: list[str] = []
        errors: list[str] = []
        clock = request.get('clock')
        if clock is not None:
            try:
                date = clock.get('date') if isinstance(clock, dict) else None
                hour = clock.get('hour', 12.0) if isinstance(clock, dict) else None
                if date is None or not is_number(hour) or not 0 <= hour < 24:
                    raise ValueError('clock needs a date and an hour from 0 to 24')
                datetime.date.fromisoformat(str(date))
                self.conditions['clock'] = {'date': date, 'hour': float(hour)}
                applied.append(f'clock {date} {hour:.2f} h')
            except ValueError as exc:
                errors.append(f'clock: {exc}')
        weather = request.get('weather')
        if weather is not None:
            preset = weather.get('preset') if isinstance(weather, dict) else None
            rain = weather.get('rain_mm_h', -1.0) if isinstance(weather, dict) else None
            if (not isinstance(preset, str) or preset not in _WEATHER_RAIN_MM_H
                    or not is_number(rain)):
                errors.append('weather: preset must be one of '
                              + ', '.join(_WEATHER_RAIN_MM_H))
            else:
                rain = _WEATHER_RAIN_MM_H[preset] if rain < 0 else float(rain)
                self.conditions['weather'] = {'preset': preset, 'rain_mm_h': rain}
                applied.append(f'weather {preset} rain {rain:.1f} mm/h')
        soil = request.get('soil_water')
        if soil is not None:
            wetness = soil.get('wetness') if isinstance(soil, dict) else None
            fields = soil.get('fields') if isinstance(soil, dict) else None
            try:
                if not is_number(wetness) or not 0 <= wetness <= 1:
                    raise ValueError('wetness must be a number from 0 to 1')
                numbers = self._field_numbers(fields)
                self.farm.set_wetness(numbers, float(wetness))
                cells = sum(math.ceil((field_.x_max - field_.x_min) / _SOIL_CELL_M)
                            * math.ceil((field_.y_max - field_.y_min) / _SOIL_CELL_M)
                            for field_ in map(self.terrain.field, numbers))
                if self.mode == 'core':
                    applied.append(f'soil wetness {wetness:.2f} on {len(numbers)} fields')
                else:
                    applied.append(f'soil wetness {wetness:.2f} on {cells} cells')
            except ValueError as exc:
                errors.append(f'soil_water: {exc}')
        restore = request.get('restore_fields')
        if restore is not None:
            fields = restore.get('fields') if isinstance(restore, dict) else None
            try:
                count = self.restore_fields(self._field_numbers(fields))
                applied.append(f'restored {count} fields')
            except ValueError as exc:
                errors.append(f'restore_fields: {exc}')
        return applied, errors

    def set_vehicle_shift(self, agent_name: str, shift: dict[str, Any]) -> dict[str, Any]:
        """
        Replace the hardware shift of an agent; return it with every field.

        :raises ValueError: for a field of the wrong type.
        """
        normal: dict[str, Any] = {'agent': agent_name}
        label = shift.get('label', '')
        if not isinstance(label, str):
            raise ValueError('label must be a string')
        normal['label'] = label
        for key in _SHIFT_NUMBERS:
            value = shift.get(key, 0.0)
            if not is_number(value):
                raise ValueError(f'{key} must be a number')
            normal[key] = value
        for key in _SHIFT_VECTORS:
            value = shift.get(key, [0.0, 0.0, 0.0])
            if not (isinstance(value, list) and len(value) == 3
                    and all(is_number(item) for item in value)):
                raise ValueError(f'{key} must be a list of 3 numbers')
            normal[key] = value
        self.shifts[agent_name] = normal
        agent = self.agent(agent_name)
        agent.shift = normal
        mounts = dict(normal)
        if self.mode == 'core':
            # ACRES Core has no camera: it applies the actuator and the LiDAR offsets only.
            mounts.pop('camera_offset_m')
            mounts.pop('camera_offset_rpy_deg')
        agent.sensor_layout = shifted_layout(agent.layout, mounts)
        agent.last_scan = None
        agent.last_image = None
        return normal

    def view_renderer(self) -> Callable[[], bytes]:
        """Return a function that renders the main view now seen, as PNG bytes."""
        agents = [(agent.vehicle, agent.body_pose()) for agent in self.agents]
        props = [prop.scene_prop() for prop in self.props.values()]
        terrain = self.terrain
        return lambda: render_view_png(agents, props, terrain)

    # --- the farm -----------------------------------------------------------------------------

    def _field_numbers(self, numbers: Any) -> list[int]:
        """Return a list of field numbers (all fields for None); ValueError for a bad one."""
        count = len(self.terrain.fields)
        if numbers is None:
            return list(range(1, count + 1))
        if not isinstance(numbers, list) or not all(
                isinstance(number, int) and not isinstance(number, bool) for number in numbers):
            raise ValueError('fields must be a list of field numbers')
        bad = [number for number in numbers if not 1 <= number <= count]
        if bad:
            raise ValueError(f'no field {bad[0]}: the fields are 1 to {count}')
        return list(dict.fromkeys(numbers))

    def restore_fields(self, numbers: list[int] | None) -> int:
        """Remove the marks and the crop damage of fields (all for None); return the count."""
        numbers = self._field_numbers(numbers)
        for number in numbers:
            self.farm.crushed.pop(number, None)
            self.farm.ruts.pop(number, None)
        return len(numbers)

    def _mark_ground(self, agent: Agent) -> None:
        """Crush the crop under the wheel tracks; leave ruts where the soil is wet."""
        half = _TRACK_M[agent.vehicle] / 2.0
        dx, dy = -math.sin(agent.yaw) * half, math.cos(agent.yaw) * half
        for x, y in ((agent.x + dx, agent.y + dy), (agent.x - dx, agent.y - dy)):
            number = self.terrain.field_at(x, y)
            if not number or self.terrain.field(number).crop == 'empty':
                continue
            cell = (math.floor(x), math.floor(y))
            crushed = self.farm.crushed.setdefault(number, set())
            if cell in crushed:
                continue
            crushed.add(cell)
            rutted = self.farm.theta(number) > _RUT_THETA
            if rutted:
                self.farm.ruts.setdefault(number, set()).add(cell)
            if self.episode_log is not None:
                self.episode_log.write('/acres/farm_event', self.time_s, {
                    'step': self.step, 'agent': agent.name, 'field': number,
                    'cell': list(cell), 'crushed': True, 'rut': rutted})

    def farm_state(self, numbers: list[int] | None, edge_band_m: float) -> dict[str, Any]:
        """
        Return the farm_state reply.

        :raises KeyError: for an unknown field number.
        """
        if numbers is None:
            numbers = [field.number for field in self.terrain.fields
                       if field.crop != 'empty' or field.number in self.farm.crushed]
        fields = []
        crushed_total = 0
        for number in numbers:
            field_ = self.terrain.field(number)
            crushed = self.farm.crushed.get(number, set())
            in_band = sum(1 for cx, cy in crushed
                          if field_.edge_distance_m(cx + 0.5, cy + 0.5) < edge_band_m)
            crop_area = field_.area_m2 if field_.crop != 'empty' else 0.0
            fields.append({
                'field': number, 'name': field_.name,
                'crop': '' if field_.crop == 'empty' else field_.crop,
                'crop_area_m2': crop_area, 'crushed_m2': float(len(crushed)),
                'crushed_in_band_m2': float(in_band),
                'crushed_out_band_m2': float(len(crushed) - in_band),
                'harvested_m2': 0.0, 'tilled_m2': 0.0, 'seeded_m2': 0.0, 'sprayed_m2': 0.0,
                'theta_mean': self.farm.theta(number), 'pond_mean_m': 0.0,
                'rut_area_m2': float(len(self.farm.ruts.get(number, ())))})
        for crushed in self.farm.crushed.values():
            crushed_total += len(crushed)
        return {'crushed_m2': float(crushed_total), 'harvested_kg': 0.0, 'fields': fields,
                'time_s': self.time_s}

    def field_query(self, x: float, y: float, *, frame: str = 'world') -> dict[str, Any]:
        """Return the field_query reply of a point."""
        if frame == 'utm':
            x, y = geodesy.utm_to_world(x, y)
        number = self.terrain.field_at(x, y)
        surface = self.terrain.surface_at(x, y)
        cell = (math.floor(x), math.floor(y))
        if surface == 'hard':
            theta = -1.0
        else:
            theta = self.farm.theta(number) if number else _GRASS_THETA
        return {'field': number, 'surface': surface,
                'ground_z': float(self.terrain.height_at(x, y)), 'theta': theta, 'pond_m': 0.0,
                'rut_m': _RUT_DEPTH_M if cell in self.farm.ruts.get(number, ()) else 0.0,
                'worked': 0, 'crop': self.terrain.crop_at(x, y),
                'crop_crushed': 1.0 if cell in self.farm.crushed.get(number, ()) else 0.0,
                'edge_distance_m': self.terrain.edge_distance_m(x, y)}


def _rate(layout: dict[str, Any], sensor: str) -> float:
    section = layout.get(sensor, {})
    if not section.get('enabled', False):
        return 0.0
    return float(section.get('hz', 0.0))


def _spawn_poses() -> list[tuple[float, float, float]]:
    """Return (x, y, yaw) of the spawn places of the tile, the garage first."""
    poses = []
    for place in NAMED_POSES:
        if 'spawn' in place.get('tags', ()):
            pose = place['pose']
            poses.append((pose['position'][0], pose['position'][1],
                          quaternion_yaw(pose.get('orientation', (0, 0, 0, 1)))))
    return poses or [(0.0, 0.0, 0.0)]


def _mix64(value: int) -> int:
    """Return the splitmix64 finaliser of a 64-bit value: a cheap, well-mixed hash."""
    value = (value + 0x9E3779B97F4A7C15) & _MASK64
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & _MASK64
    return value ^ (value >> 31)
