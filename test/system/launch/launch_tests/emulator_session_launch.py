# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""launch_testing test of emulator_session.launch.py (it starts the emulator): session_checks."""

from session_checks import description
from session_checks import TestAfterShutdown  # noqa: F401 (run by launch_testing)
from session_checks import TestWhileRunning  # noqa: F401


def generate_test_description():
    """Start the launch file with both ports."""
    return description('emulator_session.launch.py',
                       {'port': 'control_port', 'sensor_ports': 'sensor_port'}, emulator=False,
                       nodes=['/acres_bridge', '/sim_control'])
