# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""launch_testing test of acres_session.launch.py, against the emulator: see session_checks."""

from session_checks import description
from session_checks import TestAfterShutdown  # noqa: F401 (run by launch_testing)
from session_checks import TestWhileRunning  # noqa: F401


def generate_test_description():
    """Start the emulator and the launch file with its control port."""
    return description('acres_session.launch.py', {'port': 'control_port'}, emulator=True,
                       nodes=['/acres_bridge', '/sim_control'])
