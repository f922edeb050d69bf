# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""A ROS request that sets only the rain rate keeps the sky (acres/set_conditions end to end)."""

from acres_interfaces.srv import SetConditions
import pytest
from simulation_interfaces.msg import Result
from support.sim_control_graph import control_session

pytestmark = pytest.mark.ros


def test_only_the_rain_rate_keeps_the_sky(ros_context):
    with control_session() as (emulator, graph):
        stormy = graph.call(SetConditions, 'acres/set_conditions', SetConditions.Request(
            set_weather=True, weather_preset=SetConditions.Request.WEATHER_STORM))
        assert stormy.result.result == Result.RESULT_OK, stormy.result.error_message
        rain_only = graph.call(SetConditions, 'acres/set_conditions', SetConditions.Request(
            set_weather=True, weather_rain_mm_h=6.5))
        assert rain_only.result.result == Result.RESULT_OK, rain_only.result.error_message
        assert rain_only.message == 'weather storm rain 6.5 mm/h'
        last = emulator.requests.last()
        assert last == {'op': 'set_conditions', 'weather': {'rain_mm_h': 6.5}, 'id': last['id']}
        assert emulator.world.conditions['weather'] == {'preset': 'storm', 'rain_mm_h': 6.5}
