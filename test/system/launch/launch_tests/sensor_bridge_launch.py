# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""launch_testing test of sensor_bridge.launch.py, against the emulator: see session_checks."""

from session_checks import AGENT
from session_checks import description
from session_checks import TestAfterShutdown  # noqa: F401 (run by launch_testing)
from session_checks import TestWhileRunning  # noqa: F401


def generate_test_description():
    """Start the emulator and the launch file with the agent's sensor port."""
    return description('sensor_bridge.launch.py',
                       {'namespace': AGENT, 'port': 'sensor_port'}, emulator=True,
                       nodes=[f'/{AGENT}/sensor_bridge'])
