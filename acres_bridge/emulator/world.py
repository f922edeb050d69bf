# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The simulated world of the emulator: agents, props, the physics clock, episodes and entities.

The physics runs at 120 Hz, one step at a time (:meth:`World.advance`). The world time of step
``k`` is ``k * float32(1/120)`` in game mode (the game's single-precision step, e.g.
0.10000000521540642 at step 12) and exactly ``k / 120`` in core mode.

In each step each agent first applies a pending teleport, then drives its autopilot (a slow
circle; a teleported vehicle accelerates back to its cruise speed) and marks the farm's ground;
then its sensors emit to its sink, only while the sink has a client
(:mod:`acres_bridge.emulator.emission`). The farm's state is :mod:`acres_bridge.emulator.farm`'s,
the conditions and vehicle shifts are :mod:`acres_bridge.emulator.conditions`'. Without a
georeference (``georeferenced`` false) the Hello says so and the INS values of the geographic
reference are NaN, the fix status -1.
"""

from collections.abc import Callable
from collections.abc import Sequence
import datetime
import functools
import math
import threading
from typing import Any

import numpy as np

from acres_bridge.emulator.agents import Agent
from acres_bridge.emulator.agents import PHYSICS_HZ
from acres_bridge.emulator.agents import Prop
from acres_bridge.emulator.conditions import apply_conditions
from acres_bridge.emulator.conditions import normal_shift
from acres_bridge.emulator.conditions import shift_agent
from acres_bridge.emulator.emission import sensor_schedules
from acres_bridge.emulator.emission import SensorEmitter
from acres_bridge.emulator.episode_log import EpisodeLog
from acres_bridge.emulator.farm import Farm
from acres_bridge.emulator.sensors.layouts import hello_layout
from acres_bridge.emulator.sensors.poses import NAMED_POSES
from acres_bridge.emulator.sensors.poses import Pose
from acres_bridge.emulator.sensors.poses import pose_from_utm
from acres_bridge.emulator.sensors.poses import utm_state
from acres_bridge.emulator.sensors.props import Prop as SeenProp
from acres_bridge.emulator.sensors.props import vehicle_prop
from acres_bridge.emulator.sensors.view import render_view_png
from acres_bridge.emulator.terrain import Terrain
from acres_bridge.geometry import quaternion_yaw

GAME_STEP_S = float(np.float32(1.0 / PHYSICS_HZ))
MAP_NAME = 'V03ACRE'
MAX_TELEPORT_SPEED_MPS = 8.0

# The autopilot: cruise speed (m/s), circle radius (m), acceleration (m/s^2).
_CRUISE_MPS = {'polaris': 2.0, 'maxxum': 1.5}
_LOOP_RADIUS_M = 25.0
_ACCEL_MPS2 = 1.0

_WHEELBASE_M = {'polaris': 2.3, 'maxxum': 2.8}
_POLARIS_STEERING_RATIO = 16.0


def world_time_s(step: int, mode: str) -> float:
    """Return the world time of a physics step in ``mode`` (game or core)."""
    if mode == 'game':
        return step * GAME_STEP_S
    return step / PHYSICS_HZ


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
        self.farm = Farm(seed, self.terrain)
        if render_every < 1:
            raise ValueError(f'render_every must be 1 or more, got {render_every}')
        self.sensors = SensorEmitter(self.terrain, seed=seed, render_every=render_every,
                                     sweep=mode == 'game' or bool(sweep))
        self.georeferenced = bool(georeferenced)
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
            agent.schedules = sensor_schedules(layout, self.mode)
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
                self.sensors.emit(agent, self.step, time_s,
                                  functools.partial(self._seen_by, agent))
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

    def _seen_by(self, agent: Agent) -> list[SeenProp]:
        """Return what the sensors of an agent see: the props and the other agents."""
        props = [prop.scene_prop() for prop in self.props.values()]
        props.extend(vehicle_prop(other.name, other.vehicle, other.body_pose())
                     for other in self.agents if other is not agent)
        return props

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
            return self.farm.restore_fields(None)
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
        return apply_conditions(request, self.conditions, self.farm, mode=self.mode)

    def set_vehicle_shift(self, agent_name: str, shift: dict[str, Any]) -> dict[str, Any]:
        """
        Replace the hardware shift of an agent; return it with every field.

        :raises ValueError: for a field of the wrong type.
        """
        normal = normal_shift(agent_name, shift)
        self.shifts[agent_name] = normal
        shift_agent(self.agent(agent_name), normal, mode=self.mode)
        return normal

    def view_renderer(self) -> Callable[[], bytes]:
        """Return a function that renders the main view now seen, as PNG bytes."""
        agents = [(agent.vehicle, agent.body_pose()) for agent in self.agents]
        props = [prop.scene_prop() for prop in self.props.values()]
        terrain = self.terrain
        return lambda: render_view_png(agents, props, terrain)

    def _mark_ground(self, agent: Agent) -> None:
        """Crush the crop under the wheel tracks, and log each cell crushed."""
        marks = self.farm.mark_ground(agent)
        if self.episode_log is not None:
            for number, cell, rutted in marks:
                self.episode_log.write('/acres/farm_event', self.time_s, {
                    'step': self.step, 'agent': agent.name, 'field': number,
                    'cell': list(cell), 'crushed': True, 'rut': rutted})


def _spawn_poses() -> list[tuple[float, float, float]]:
    """Return (x, y, yaw) of the spawn places of the tile, the garage first."""
    poses = []
    for place in NAMED_POSES:
        if 'spawn' in place.get('tags', ()):
            pose = place['pose']
            poses.append((pose['position'][0], pose['position'][1],
                          quaternion_yaw(pose.get('orientation', (0, 0, 0, 1)))))
    return poses or [(0.0, 0.0, 0.0)]
