# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The acres_interfaces services and the episode event <-> the control channel's ops.

Pure functions. Each acres service mirrors its op: the request builders here turn a request
into the op's keys (leaving out empty texts and lists, so the simulator's defaults apply), and
the response fillers copy the reply's keys into the fields of the same name, nested objects
into their messages (AgentInfo, FieldState, VehicleShift).
"""

from typing import Any

from acres_interfaces.msg import AgentInfo
from acres_interfaces.msg import Episode
from acres_interfaces.msg import FieldState
from acres_interfaces.msg import VehicleShift

from acres_bridge.conversions.replies.responses import fill_message
from acres_bridge.conversions.replies.responses import message_fields
from acres_bridge.conversions.replies.responses import Reply


def episode_from_event(event: Reply) -> Episode:
    """Return the Episode message of an episode event (its keys are the message's fields)."""
    return fill_message(Episode(), event)


def hello_response(reply: Reply, response: Any) -> Any:
    """
    Fill an acres_interfaces Hello response from a hello reply (not its ``result``).

    ``source`` is ``unreal`` when the reply has no such key: only ACRES Core sends it.
    """
    fill_message(response, reply, nested={'agents': AgentInfo}, skip=('result',))
    if 'source' not in reply:
        response.source = response.SOURCE_UNREAL
    return response


def farm_state_response(reply: Reply, response: Any) -> Any:
    """Fill an acres_interfaces FarmState response from a farm_state reply."""
    return fill_message(response, reply, nested={'fields': FieldState}, skip=('result',))


def vehicle_shifts_response(reply: Reply, response: Any) -> Any:
    """Fill an acres_interfaces GetVehicleShifts response from a get_vehicle_shifts reply."""
    return fill_message(response, reply, nested={'shifts': VehicleShift}, skip=('result',))


def vehicle_shift_fields(shift: VehicleShift) -> dict[str, Any]:
    """Return the ``shift`` object of a set_vehicle_shift request (no agent: agent 0)."""
    fields = message_fields(shift)
    if not fields['agent']:
        del fields['agent']
    return fields


def set_conditions_fields(request: Any) -> dict[str, Any]:
    """
    Return the fields of a set_conditions request: one object per part whose flag is set.

    Empty texts and lists are left out, so the simulator's defaults apply (keep the sky, all
    fields); a date must be given for the clock part.
    """
    fields: dict[str, Any] = {}
    if request.set_clock:
        clock: dict[str, Any] = {'hour': request.clock_hour}
        if request.clock_date:
            clock['date'] = request.clock_date
        fields['clock'] = clock
    if request.set_weather:
        weather: dict[str, Any] = {'rain_mm_h': request.weather_rain_mm_h}
        if request.weather_preset:
            weather['preset'] = request.weather_preset
        fields['weather'] = weather
    if request.set_soil_water:
        soil: dict[str, Any] = {'wetness': request.soil_water_wetness}
        if len(request.soil_water_fields):
            soil['fields'] = list(request.soil_water_fields)
        fields['soil_water'] = soil
    if request.restore_fields:
        restore: dict[str, Any] = {}
        if len(request.restore_fields_fields):
            restore['fields'] = list(request.restore_fields_fields)
        fields['restore_fields'] = restore
    return fields


def farm_state_fields(request: Any) -> dict[str, Any]:
    """Return the fields of a farm_state request (no field numbers: the simulator's choice)."""
    fields: dict[str, Any] = {'edge_band_m': request.edge_band_m}
    if len(request.fields):
        fields['fields'] = list(request.fields)
    return fields


def field_query_fields(request: Any) -> dict[str, Any]:
    """Return the fields of a field_query request."""
    fields: dict[str, Any] = {'x': request.x, 'y': request.y}
    if request.frame:
        fields['frame'] = request.frame
    return fields


def record_fields(request: Any) -> dict[str, Any]:
    """Return the fields of a record request (no path: the simulator's default)."""
    fields: dict[str, Any] = {'action': request.action}
    if request.path:
        fields['path'] = request.path
    return fields
