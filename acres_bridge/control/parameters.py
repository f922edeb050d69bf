# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The parameters of the sim_control node: the control channel client's.

==================  =========================================================================
node                parameters
==================  =========================================================================
sim_control         host, port (5600), timeout_s, reconnect_s
==================  =========================================================================

The machinery is :mod:`acres_bridge.runtime.parameters`.
"""

from collections.abc import Mapping
import dataclasses
from typing import Any

from rclpy.node import Node
from rclpy.parameter import Parameter

from acres_bridge.runtime.parameters import declare_settings
from acres_bridge.runtime.parameters import HOST
from acres_bridge.runtime.parameters import ParameterSpec
from acres_bridge.runtime.parameters import PORT_RANGE
from acres_bridge.runtime.parameters import RECONNECT_S
from acres_bridge.runtime.parameters import TIMEOUT_S
from acres_bridge.runtime.parameters import values_of

CONTROL_PORT = ParameterSpec(
    'port', 5600, Parameter.Type.INTEGER, 'The TCP port of the simulator control channel.',
    integer_range=PORT_RANGE)
SIM_CONTROL_PARAMETERS = (HOST, CONTROL_PORT, TIMEOUT_S, RECONNECT_S)


@dataclasses.dataclass(frozen=True, slots=True)
class SimControlParameters:
    """The settings of the control channel client."""

    host: str = '127.0.0.1'
    address: str = '127.0.0.1'
    port: int = 5600
    timeout_s: float = 10.0
    reconnect_s: float = 1.0


def sim_control_parameters_from_values(values: Mapping[str, Any]) -> SimControlParameters:
    """
    Return validated control channel settings from a mapping (missing keys take defaults).

    :raises ParameterError: for an unknown key or a value the node cannot run with.
    """
    return SimControlParameters(**values_of(SIM_CONTROL_PARAMETERS, values))


def declare_sim_control_parameters(node: Node) -> SimControlParameters:
    """
    Declare, validate and freeze the parameters of the sim_control node.

    :raises ParameterError: for a value the node cannot run with.
    """
    return declare_settings(node, SIM_CONTROL_PARAMETERS, sim_control_parameters_from_values)
