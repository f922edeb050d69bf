# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The things of the emulated world: agents (vehicles), spawned props, and sensor schedules.

An :class:`Agent` is a vehicle of the session: its pose is that of base_footprint in the world
frame, with the state its physics, its sensors and its hardware shift need. A :class:`Prop` is
a spawned entity. A :class:`Schedule` says at which of the 120 Hz physics steps a sensor of a
given rate has an epoch: the first step at or after each due time ``n / hz`` (n = 1, 2, ...),
so 100 Hz gives 10 epochs in each 12 steps with intervals of 1 or 2 steps.
"""

from collections import deque
from dataclasses import dataclass
from dataclasses import field
from fractions import Fraction
import math
from typing import Any
from typing import Protocol

import numpy as np

from acres_bridge.emulator.sensors.poses import Pose
from acres_bridge.emulator.sensors.props import Prop as SeenProp
from acres_bridge.geometry import quaternion_yaw
from acres_bridge.geometry import rpy_to_quaternion

PHYSICS_HZ = 120
# How far each agent's vehicle clock runs ahead of the world's, per agent number (1, 2, ...).
VEHICLE_CLOCK_LEAD_S = 1000.0
# The physics steps of pose history kept for a LiDAR sweep (a sweep of 0.1 s spans 12).
_HISTORY_STEPS = 32

SENSOR_CLOCK, SENSOR_INS, SENSOR_LIDAR, SENSOR_CAMERA = range(4)


class SensorSink(Protocol):
    """Where an agent's frames go: its sensor stream."""

    @property
    def has_client(self) -> bool:
        """Whether frames are wanted now."""

    def queue(self, frame_type: int, payload: bytes, stamp_s: float) -> bool:
        """Queue one frame."""


class Schedule:
    """The epochs of one sensor rate over 120 Hz physics: due times n / hz, n >= 1."""

    def __init__(self, hz: float) -> None:
        ratio = _fraction(hz)
        self._numerator, self._denominator = ratio
        self.enabled = hz > 0

    def due(self, step: int) -> bool:
        """Return whether physics step ``step`` is an epoch of this rate."""
        if not self.enabled or step <= 0:
            return False
        scale = self._denominator * PHYSICS_HZ
        return (step * self._numerator) // scale > ((step - 1) * self._numerator) // scale


def _fraction(hz: float) -> tuple[int, int]:
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
    schedules: dict[int, Schedule] = field(default_factory=dict)
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
