# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Ctrl-C stops of each launch file in a row, every one clean (issue 25, part 4).

Each launch runs with the real ``ros2 launch`` of the prefix, publishes to a client of the
test (a lockstep session is stepped through the stop), and gets SIGINT on its process group:
launch and every process of the session exit 0, none is left, no traceback and no fatal
signal (launch_stops.py). ``ACRES_LAUNCH_STOPS`` stops per launch file (3 by default);
tools/stop_loop.py runs the long rows and prints their figures.
"""

import os

import pytest

from acres_devkit.launch_stops import CASES
from acres_devkit.launch_stops import stop_once

pytestmark = [pytest.mark.ros, pytest.mark.ros2_tools]
STOPS = int(os.environ.get('ACRES_LAUNCH_STOPS', '3'))


@pytest.mark.parametrize('run', range(1, STOPS + 1))
@pytest.mark.parametrize('case', sorted(CASES))
def test_ctrl_c_ends_the_launch_and_every_process_of_it_cleanly(
        case: str, run: int, ros_context, emulator_factory) -> None:
    outcome = stop_once(CASES[case], ros_context, emulator_factory)
    assert outcome.clean, '\n'.join(outcome.problems) + '\noutput:\n' + outcome.output[-6000:]
