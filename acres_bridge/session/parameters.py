# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The parameters of the acres_bridge node: a whole session, its control channel and every agent.

==================  =========================================================================
node                parameters
==================  =========================================================================
acres_bridge        host, port (5600, the control channel), sensor_ports, timeout_s,
                    ack_timeout_s, match_timeout_s, reconnect_s, frame_prefix,
                    publish_clock, publish_tf, world_frame, point_fields, lidar_sweep_s,
                    point_time_origin, compressed.format, compressed.jpeg_quality,
                    compressed.png_level, sensor_processes
==================  =========================================================================

The agents' settings are the sensor_bridge's (:mod:`acres_bridge.sensors.parameters`), given
once for every agent; :meth:`BridgeParameters.sensor` makes one agent's. The machinery is
:mod:`acres_bridge.runtime.parameters`.
"""

from collections.abc import Mapping
import dataclasses
from typing import Any

from rclpy.node import Node
from rclpy.parameter import Parameter

from acres_bridge.control.parameters import CONTROL_PORT
from acres_bridge.control.parameters import SimControlParameters
from acres_bridge.runtime.parameters import declare_settings
from acres_bridge.runtime.parameters import HOST
from acres_bridge.runtime.parameters import ParameterSpec
from acres_bridge.runtime.parameters import PORT_RANGE
from acres_bridge.runtime.parameters import RECONNECT_S
from acres_bridge.runtime.parameters import TIMEOUT_RANGE_S
from acres_bridge.runtime.parameters import TIMEOUT_S
from acres_bridge.runtime.parameters import values_of
from acres_bridge.sensors.parameters import AGENT_SENSOR_PARAMETERS
from acres_bridge.sensors.parameters import AgentSensorSettings
from acres_bridge.sensors.parameters import normalised_agent_values
from acres_bridge.sensors.parameters import sensor_bridge_parameters_from_values
from acres_bridge.sensors.parameters import SensorBridgeParameters

SENSOR_PROCESSES_CHOICES = ('auto', 'in_process', 'per_agent')
# Cores that sensor_processes auto leaves beside one per agent: the simulator's and the rest's
# (the session's own process, the subscribers). On two cores one process carried more agents
# than a process each, in less memory (docs/benchmarks.md, "A fleet over the cores").
AUTO_SPARE_CORES = 2

_T = Parameter.Type

SENSOR_PORTS = ParameterSpec(
    'sensor_ports', None, _T.INTEGER_ARRAY,
    'One sensor stream port per agent; empty: the sensor_stream port of each agent from the '
    'hello reply of the control channel.', integer_range=PORT_RANGE)
ACK_TIMEOUT_S = ParameterSpec(
    'ack_timeout_s', 5.0, _T.DOUBLE,
    'Lockstep: after a stream published the barrier of a step, how long the step waits for '
    'every reliable reader to acknowledge every message of it, s. A reader still silent then '
    'is named in /diagnostics and the log, and the step answers (successfully, saying what was '
    'late).', float_range=TIMEOUT_RANGE_S)
MATCH_TIMEOUT_S = ParameterSpec(
    'match_timeout_s', 5.0, _T.DOUBLE,
    'Lockstep: before a step is sent, how long it waits for the sensor writers to match every '
    'reader of their topics that the session knows (discovery of a new reader), s. A reader '
    'still unmatched then is named in the answer, /diagnostics and the log, and the step is '
    'sent anyway.', float_range=TIMEOUT_RANGE_S)
SENSOR_PROCESSES = ParameterSpec(
    'sensor_processes', 'auto', _T.STRING,
    'Where the sensor streams run: in_process (every agent in the session\'s process, one '
    'GIL), per_agent (one child process per agent, a sensor_bridge node in the agent\'s '
    'namespace; lockstep still waits for every agent), or auto (per_agent for several agents '
    'when the process may use a core for each agent and two more, otherwise in_process; see '
    'docs/benchmarks.md).', choices=SENSOR_PROCESSES_CHOICES)

BRIDGE_PARAMETERS = (HOST, CONTROL_PORT, SENSOR_PORTS, TIMEOUT_S, ACK_TIMEOUT_S,
                     MATCH_TIMEOUT_S, RECONNECT_S, *AGENT_SENSOR_PARAMETERS, SENSOR_PROCESSES)


@dataclasses.dataclass(frozen=True, slots=True)
class BridgeParameters(AgentSensorSettings):
    """The settings of a whole session in one process (the acres_bridge executable)."""

    host: str = '127.0.0.1'
    address: str = '127.0.0.1'
    port: int = 5600
    sensor_ports: tuple[int, ...] = ()
    timeout_s: float = 10.0
    ack_timeout_s: float = 5.0
    match_timeout_s: float = 5.0
    reconnect_s: float = 1.0
    sensor_processes: str = 'auto'

    def processes_per_agent(self, streams: int, cores: int) -> bool:
        """
        Whether a session of ``streams`` sensor streams runs each in a process of its own.

        :param cores: the cores this process may run on, for ``auto``: a process per agent pays
            for itself only with a core for each of them and ``AUTO_SPARE_CORES`` beside.
        """
        if self.sensor_processes == 'auto':
            return streams > 1 and cores >= streams + AUTO_SPARE_CORES
        return self.sensor_processes == 'per_agent'

    def control(self) -> SimControlParameters:
        """Return the settings of the control channel."""
        return SimControlParameters(host=self.host, address=self.address, port=self.port,
                                    timeout_s=self.timeout_s, reconnect_s=self.reconnect_s)

    def sensor(self, port: int, *, frame_prefix: str | None = None,
               publish_clock: bool | None = None) -> SensorBridgeParameters:
        """
        Return the settings of one agent's sensor bridge on ``port``.

        :param frame_prefix: this agent's prefix (default: the ``frame_prefix`` parameter).
        :param publish_clock: whether this agent publishes /clock (default: the parameter).
        :raises ParameterError: for a port out of range or a bad prefix.
        """
        values = {**self.agent_values(), 'host': self.host, 'port': port,
                  'reconnect_s': self.reconnect_s}
        if frame_prefix is not None:
            values['frame_prefix'] = frame_prefix
        if publish_clock is not None:
            values['publish_clock'] = publish_clock
        return sensor_bridge_parameters_from_values(values)


def bridge_parameters_from_values(values: Mapping[str, Any]) -> BridgeParameters:
    """
    Return validated session settings from a mapping (missing keys take defaults).

    :raises ParameterError: for an unknown key or a value the node cannot run with.
    """
    return BridgeParameters(**normalised_agent_values(values_of(BRIDGE_PARAMETERS, values)))


def declare_bridge_parameters(node: Node) -> BridgeParameters:
    """
    Declare, validate and freeze the parameters of the acres_bridge node (a whole session).

    :raises ParameterError: for a value the node cannot run with.
    """
    return declare_settings(node, BRIDGE_PARAMETERS, bridge_parameters_from_values)
