# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The conditions of the emulated session: clock, weather, soil water, and vehicle shifts.

What the ``set_conditions`` and ``set_vehicle_shift`` ops change. :func:`apply_conditions`
checks each part of a request on its own (an error in one part does not stop the others) and
records the clock and the weather in the session's conditions; soil water and restored fields
go to the :class:`~acres_bridge.emulator.farm.Farm`. A vehicle shift is a hardware offset:
actuator biases that the autopilot feels and sensor mount offsets that move the agent's LiDAR
and camera (ACRES Core has no camera and applies the LiDAR and actuator offsets only).
"""

import datetime
from typing import Any

from acres_bridge.emulator.agents import Agent
from acres_bridge.emulator.farm import Farm
from acres_bridge.emulator.sensors.layouts import shifted_layout
from acres_bridge.protocol.lines import is_number

_WEATHER_RAIN_MM_H = {'clear': 0.0, 'fair': 0.0, 'overcast': 0.0, 'rain': 4.0, 'storm': 20.0,
                      'fog': 0.0}
_SHIFT_NUMBERS = ('steering_offset_deg', 'ulc_speed_bias_mps', 'throttle_bias_pct',
                  'brake_bias_bar')
_SHIFT_VECTORS = ('camera_offset_m', 'camera_offset_rpy_deg', 'lidar_offset_m',
                  'lidar_offset_rpy_deg')


def apply_conditions(request: dict[str, Any], conditions: dict[str, Any], farm: Farm, *,
                     mode: str) -> tuple[list[str], list[str]]:
    """
    Apply the parts of a set_conditions request; return the applied texts and errors.

    :param conditions: the session's clock and weather, updated in place.
    """
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
            conditions['clock'] = {'date': date, 'hour': float(hour)}
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
            conditions['weather'] = {'preset': preset, 'rain_mm_h': rain}
            applied.append(f'weather {preset} rain {rain:.1f} mm/h')
    soil = request.get('soil_water')
    if soil is not None:
        wetness = soil.get('wetness') if isinstance(soil, dict) else None
        fields = soil.get('fields') if isinstance(soil, dict) else None
        try:
            if not is_number(wetness) or not 0 <= wetness <= 1:
                raise ValueError('wetness must be a number from 0 to 1')
            numbers = farm.field_numbers(fields)
            cells = farm.set_wetness(numbers, float(wetness))
            if mode == 'core':
                applied.append(f'soil wetness {wetness:.2f} on {len(numbers)} fields')
            else:
                applied.append(f'soil wetness {wetness:.2f} on {cells} cells')
        except ValueError as exc:
            errors.append(f'soil_water: {exc}')
    restore = request.get('restore_fields')
    if restore is not None:
        fields = restore.get('fields') if isinstance(restore, dict) else None
        try:
            count = farm.restore_fields(farm.field_numbers(fields))
            applied.append(f'restored {count} fields')
        except ValueError as exc:
            errors.append(f'restore_fields: {exc}')
    return applied, errors


def normal_shift(agent_name: str, shift: dict[str, Any]) -> dict[str, Any]:
    """
    Return a set_vehicle_shift request's shift with every field.

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
    return normal


def shift_agent(agent: Agent, normal: dict[str, Any], *, mode: str) -> None:
    """Give an agent a (normal) shift: its autopilot's biases and its sensor mounts."""
    agent.shift = normal
    mounts = dict(normal)
    if mode == 'core':
        # ACRES Core has no camera: it applies the actuator and the LiDAR offsets only.
        mounts.pop('camera_offset_m')
        mounts.pop('camera_offset_rpy_deg')
    agent.sensor_layout = shifted_layout(agent.layout, mounts)
    agent.last_scan = None
    agent.last_image = None
