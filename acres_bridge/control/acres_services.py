# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
sim_control's acres_interfaces services: their rows of the service table and handlers.

Each ACRES-only op of seed 004 (hello, set_conditions, set_vehicle_shift, get_vehicle_shifts,
record, farm_state, field_query, screenshot) has an ``acres/*`` service that mirrors it: the
request's fields are the op's keys and the reply's keys fill the response's fields of the same
name (conversions/replies/acres.py turns the nested parts into messages).
"""

from collections.abc import Awaitable
from collections.abc import Callable
from typing import Any

from acres_bridge.conversions.replies.acres import farm_state_fields
from acres_bridge.conversions.replies.acres import farm_state_response
from acres_bridge.conversions.replies.acres import field_query_fields
from acres_bridge.conversions.replies.acres import hello_response
from acres_bridge.conversions.replies.acres import record_fields
from acres_bridge.conversions.replies.acres import set_conditions_fields
from acres_bridge.conversions.replies.acres import vehicle_shift_fields
from acres_bridge.conversions.replies.acres import vehicle_shifts_response
from acres_bridge.conversions.replies.responses import fill_message
from acres_bridge.conversions.replies.responses import Reply


class AcresServices:
    """
    The acres_interfaces handlers of sim_control's node (control/sim_control_node.py).

    A mixin: the node that composes it provides ``_call`` (send an op, put its result into the
    response) and ``_remember_hello`` (the hello cache).
    """

    def _acres_service_specs(self) -> list[tuple[str, str, str, str,
                                                 Callable[..., Awaitable[None]]]]:
        """Return (ROS name, package, type, op, handler) of every acres_interfaces service."""
        acres = 'acres_interfaces'
        return [
            ('acres/hello', acres, 'Hello', 'hello', self._hello_service),
            ('acres/set_conditions', acres, 'SetConditions', 'set_conditions',
             self._set_conditions),
            ('acres/set_vehicle_shift', acres, 'SetVehicleShift', 'set_vehicle_shift',
             self._set_vehicle_shift),
            ('acres/get_vehicle_shifts', acres, 'GetVehicleShifts', 'get_vehicle_shifts',
             self._get_vehicle_shifts),
            ('acres/record', acres, 'Record', 'record', self._record),
            ('acres/farm_state', acres, 'FarmState', 'farm_state', self._farm_state),
            ('acres/field_query', acres, 'FieldQuery', 'field_query', self._field_query),
            ('acres/screenshot', acres, 'Screenshot', 'screenshot', self._screenshot),
        ]

    async def _hello_service(self, request: Any, response: Any) -> None:
        reply = await self._call(response, 'hello')
        if reply is not None:
            hello_response(reply, response)
            self._remember_hello(reply)

    async def _set_conditions(self, request: Any, response: Any) -> None:
        await self._mirror(response, 'set_conditions', set_conditions_fields(request))

    async def _set_vehicle_shift(self, request: Any, response: Any) -> None:
        await self._mirror(response, 'set_vehicle_shift',
                           {'shift': vehicle_shift_fields(request.shift)})

    async def _get_vehicle_shifts(self, request: Any, response: Any) -> None:
        await self._mirror(response, 'get_vehicle_shifts', {}, vehicle_shifts_response)

    async def _record(self, request: Any, response: Any) -> None:
        await self._mirror(response, 'record', record_fields(request))

    async def _farm_state(self, request: Any, response: Any) -> None:
        await self._mirror(response, 'farm_state', farm_state_fields(request),
                           farm_state_response)

    async def _field_query(self, request: Any, response: Any) -> None:
        await self._mirror(response, 'field_query', field_query_fields(request))

    async def _screenshot(self, request: Any, response: Any) -> None:
        await self._mirror(response, 'screenshot', {'path': request.path})

    async def _mirror(self, response: Any, op: str, fields: dict[str, Any],
                      fill: Callable[[Reply, Any], Any] | None = None) -> None:
        """Send an op and copy the reply's keys into the response fields of the same name."""
        reply = await self._call(response, op, **fields)
        if reply is None:
            return
        if fill is None:
            fill_message(response, reply, skip=('result',))
        else:
            fill(reply, response)
