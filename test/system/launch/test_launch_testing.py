# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Real launch_testing tests of each launch file, run by the ``launch_test`` tool from pytest.

launch_testing's own pytest plugin does not load under pytest 9 (setup.cfg turns it off), so
each file of launch_tests/ (beside this file) runs in ``launch_test`` (launch_testing's runner,
with the installed launch and launch_ros), in a shell that sourced setup.bash, on free ports.
The runner's xUnit report must list every test of the file, none failed or skipped.
"""

import os
from pathlib import Path
import xml.etree.ElementTree as ElementTree

import pytest

from acres_devkit.ports import free_ports
from acres_devkit.ros2_tools import run

pytestmark = [pytest.mark.ros, pytest.mark.ros2_tools]
LAUNCH_TESTS = Path(__file__).resolve().parent / 'launch_tests'
# The tests of session_checks.py each launch test runs.
EXPECTED = {'test_each_node_is_in_the_graph_once', 'test_the_agent_topics_and_the_clock_arrive',
            'test_every_process_exits_0', 'test_no_output_holds_a_traceback'}


@pytest.mark.parametrize('launch_file', ['sensor_bridge', 'acres_session', 'emulator_session'])
def test_launch_test_of_each_launch_file(launch_file: str, tmp_path: Path) -> None:
    control, sensor = free_ports(2)
    report = tmp_path / 'report.xml'
    result = run(['launch_test', '--junit-xml', str(report),
                  str(LAUNCH_TESTS / f'{launch_file}_launch.py'),
                  f'control_port:={control}', f'sensor_port:={sensor}'],
                 timeout_s=240.0, PYTHONPATH=_python_path())
    assert result.returncode == 0, result.stdout[-6000:]
    cases = ElementTree.parse(report).getroot().iter('testcase')
    outcomes = {case.get('name'): {child.tag for child in case} for case in cases}
    assert set(outcomes) == EXPECTED, outcomes
    bad = {name: tags for name, tags in outcomes.items()
           if tags & {'failure', 'error', 'skipped'}}
    assert not bad, f'failed or skipped: {bad}'


def _python_path() -> str:
    """Let the launch tests import session_checks, beside them."""
    return os.pathsep.join(filter(None, [str(LAUNCH_TESTS), os.environ.get('PYTHONPATH')]))
