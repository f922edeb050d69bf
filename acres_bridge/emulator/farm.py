# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The farm of the emulated tile: crop crushed under the wheels, ruts, and soil water per field.

The ground truth that the farm ops read (``farm_state``, ``field_query``) and that driving and
``set_conditions`` change. Crop is crushed in 1 m cells under each wheel track; where the soil
of a field is wetter than a rut threshold, a crushed cell is a rut too. Soil water is the mean
volumetric water content (m3/m3) of a field's surface, set as a wetness from 0 (wilting point)
to 1 (saturation).
"""

import math
from typing import Any

import numpy as np

from acres_bridge.emulator import geodesy
from acres_bridge.emulator.agents import Agent
from acres_bridge.emulator.terrain import Terrain

# Wheel track widths (m), soil water (m3/m3) and ruts.
_TRACK_M = {'polaris': 1.3, 'maxxum': 1.9}
_THETA_WILTING = 0.12
_THETA_SATURATION = 0.45
_GRASS_THETA = 0.25
_RUT_THETA = 0.36
_RUT_DEPTH_M = 0.03
_SOIL_CELL_M = 4.0


class Farm:
    """The mutable ground truth: crushed 1 m cells and ruts of each field, soil water."""

    def __init__(self, seed: int, terrain: Terrain) -> None:
        self.terrain = terrain
        self.crushed: dict[int, set[tuple[int, int]]] = {}
        self.ruts: dict[int, set[tuple[int, int]]] = {}
        rng = np.random.default_rng((seed, 0x50111))
        self.initial_theta = rng.uniform(0.2, 0.34, 60).tolist()
        self.water = list(self.initial_theta)

    def theta(self, number: int) -> float:
        """Return the mean water content of the soil surface of a field."""
        return self.water[number]

    def set_wetness(self, numbers: list[int], wetness: float) -> int:
        """Set the water of fields from 0 (wilting point) to 1 (saturation); return the cells."""
        theta = _THETA_WILTING + wetness * (_THETA_SATURATION - _THETA_WILTING)
        for number in numbers:
            self.water[number] = theta
        return sum(math.ceil((field_.x_max - field_.x_min) / _SOIL_CELL_M)
                   * math.ceil((field_.y_max - field_.y_min) / _SOIL_CELL_M)
                   for field_ in map(self.terrain.field, numbers))

    def field_numbers(self, numbers: Any) -> list[int]:
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
        numbers = self.field_numbers(numbers)
        for number in numbers:
            self.crushed.pop(number, None)
            self.ruts.pop(number, None)
        return len(numbers)

    def mark_ground(self, agent: Agent) -> list[tuple[int, tuple[int, int], bool]]:
        """
        Crush the crop under an agent's wheel tracks; leave ruts where the soil is wet.

        :return: (field, cell, rut) of each cell crushed now.
        """
        marks = []
        half = _TRACK_M[agent.vehicle] / 2.0
        dx, dy = -math.sin(agent.yaw) * half, math.cos(agent.yaw) * half
        for x, y in ((agent.x + dx, agent.y + dy), (agent.x - dx, agent.y - dy)):
            number = self.terrain.field_at(x, y)
            if not number or self.terrain.field(number).crop == 'empty':
                continue
            cell = (math.floor(x), math.floor(y))
            crushed = self.crushed.setdefault(number, set())
            if cell in crushed:
                continue
            crushed.add(cell)
            rutted = self.theta(number) > _RUT_THETA
            if rutted:
                self.ruts.setdefault(number, set()).add(cell)
            marks.append((number, cell, rutted))
        return marks

    def farm_state(self, numbers: list[int] | None, edge_band_m: float, *,
                   time_s: float) -> dict[str, Any]:
        """
        Return the farm_state reply at world time ``time_s``.

        :raises KeyError: for an unknown field number.
        """
        if numbers is None:
            numbers = [field.number for field in self.terrain.fields
                       if field.crop != 'empty' or field.number in self.crushed]
        fields = []
        crushed_total = 0
        for number in numbers:
            field_ = self.terrain.field(number)
            crushed = self.crushed.get(number, set())
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
                'theta_mean': self.theta(number), 'pond_mean_m': 0.0,
                'rut_area_m2': float(len(self.ruts.get(number, ())))})
        for crushed in self.crushed.values():
            crushed_total += len(crushed)
        return {'crushed_m2': float(crushed_total), 'harvested_kg': 0.0, 'fields': fields,
                'time_s': time_s}

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
            theta = self.theta(number) if number else _GRASS_THETA
        return {'field': number, 'surface': surface,
                'ground_z': float(self.terrain.height_at(x, y)), 'theta': theta, 'pond_m': 0.0,
                'rut_m': _RUT_DEPTH_M if cell in self.ruts.get(number, ()) else 0.0,
                'worked': 0, 'crop': self.terrain.crop_at(x, y),
                'crop_crushed': 1.0 if cell in self.crushed.get(number, ()) else 0.0,
                'edge_distance_m': self.terrain.edge_distance_m(x, y)}
