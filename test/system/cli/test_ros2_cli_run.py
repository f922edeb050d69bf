# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
``ros2 run acres_bridge <each executable>`` and ``ros2 launch acres_bridge <each file>``.

Each runs as a user runs it (a shell that sourced setup.bash, its own process group), against
an emulator started with ``ros2 run``, then gets Ctrl-C (SIGINT to the process group): exit 0,
no traceback, no process left. Each node shows once in ``ros2 node list`` (asked of the ros2
daemon, the tools' default: each test starts it and stops it after) and answers
``ros2 param``. ``rviz:=true`` without rviz2 fails before anything starts; ``record_dataset``
records each agent into ``$ACRES_DATA``.
"""

from collections.abc import Iterator
import os
from pathlib import Path
import signal
import socket

import pytest
import yaml

from acres_bridge.dataset import LidarSet
from acres_devkit.ports import free_ports
from acres_devkit.ros2_tools import assert_clean_exit
from acres_devkit.ros2_tools import Background
from acres_devkit.ros2_tools import PACKAGE
from acres_devkit.ros2_tools import param_list
from acres_devkit.ros2_tools import run
from acres_devkit.ros2_tools import start_daemon
from acres_devkit.ros2_tools import stop_daemon
from acres_devkit.ros2_tools import wait_for_nodes

pytestmark = [pytest.mark.ros, pytest.mark.ros2_tools]
PARAM = ['--timeout', '10']
HELLO = r'sensor stream polaris: hello from agent'


def _start_emulator(control: int | str, sensor: int) -> Background:
    """Start ``ros2 run acres_bridge acres_sim_emulator`` on these ports."""
    return Background(['ros2', 'run', PACKAGE, 'acres_sim_emulator', '--control-port',
                       str(control), '--sensor-ports', str(sensor)])


@pytest.fixture
def emulator_ports() -> Iterator[tuple[int, int]]:
    """Run the emulator with ``ros2 run`` until the test ends; give (control, sensor)."""
    # Ports the emulator binds itself: a port found free and then closed can be taken by any
    # connection of the machine before the emulator binds it (seen beside other test runs).
    start_daemon()
    process = _start_emulator('any', 0)
    try:
        ready = process.wait_for(r'ACRES_SIM_EMULATOR_READY control=(\d+) sensors=(\d+)')
        control, sensor = int(ready[1]), int(ready[2])
        assert control and sensor, ready[0]
        yield control, sensor
        code = process.interrupt()
        assert_clean_exit(process, code)
    finally:
        process.kill()
        stop_daemon()


def _param(node: str, name: str) -> object:
    result = run(['ros2', 'param', 'get', *PARAM, '--hide-type', node, name])
    assert result.returncode == 0, result.stdout
    return yaml.safe_load(result.stdout)


def _dump(node: str) -> dict:
    result = run(['ros2', 'param', 'dump', *PARAM, node])
    assert result.returncode == 0, result.stdout
    return yaml.safe_load(result.stdout)[node]['ros__parameters']


def _once(listed: list[str], *nodes: str) -> None:
    for node in nodes:
        assert listed.count(node) == 1, f'{node} in ros2 node list: {listed}'


def test_ros2_run_acres_sim_emulator_listens_and_ends_on_ctrl_c() -> None:
    control, sensor = free_ports(2)
    process = _start_emulator(control, sensor)
    try:
        ready = process.wait_for(r'ACRES_SIM_EMULATOR_READY control=(\d+) sensors=(\d+)')
        assert (int(ready[1]), int(ready[2])) == (control, sensor)
        for port in (control, sensor):
            socket.create_connection(('127.0.0.1', port), timeout=10.0).close()
        code = process.interrupt()
        assert_clean_exit(process, code)
    finally:
        process.kill()


# executable -> (its arguments for the emulator's ports, the line it is ready at, node, a
# parameter and the value it must have)
RUNS = {
    'sensor_bridge': (lambda control, sensor: ['-r', '__ns:=/polaris', '-p', f'port:={sensor}'],
                      HELLO, '/polaris/sensor_bridge', 'port', lambda c, s: s),
    'sim_control': (lambda control, sensor: ['-p', f'port:={control}', '-p', 'timeout_s:=7.5'],
                    'control channel: connected', '/sim_control', 'timeout_s',
                    lambda c, s: 7.5),
    'acres_bridge': (lambda control, sensor: ['-p', f'port:={control}'], HELLO,
                     '/acres_bridge', 'port', lambda c, s: c),
    'lidar_recorder': (lambda control, sensor: ['-r', '__ns:=/polaris', '-p', 'set:=cli'],
                       'recording /polaris/lidar/points', '/polaris/lidar_recorder',
                       'points_topic', lambda c, s: 'lidar/points'),
    'foxglove_view': (lambda control, sensor: ['-p', 'port:=0', '-p', 'include:=^/polaris/'],
                      'Foxglove view on ws://', '/foxglove_view', 'include',
                      lambda c, s: '^/polaris/'),
}


@pytest.mark.parametrize('executable', sorted(RUNS))
def test_ros2_run_each_executable_answers_ros2_param_and_ends_on_ctrl_c(
        executable: str, emulator_ports: tuple[int, int], tmp_path: Path) -> None:
    arguments, ready, node, parameter, expected = RUNS[executable]
    command = Background(['ros2', 'run', PACKAGE, executable, '--ros-args',
                          *arguments(*emulator_ports)], ACRES_DATA=str(tmp_path))
    try:
        command.wait_for(ready, timeout_s=60.0)
        nodes = [node, '/sim_control'] if executable == 'acres_bridge' else [node]
        _once(wait_for_nodes(nodes), *nodes)
        listed = param_list(node)
        assert parameter in listed and 'use_sim_time' in listed, listed
        assert _param(node, parameter) == expected(*emulator_ports)
        assert _dump(node)[parameter] == expected(*emulator_ports)
        code = command.interrupt()
        assert_clean_exit(command, code)
    finally:
        command.kill()


@pytest.mark.parametrize('launch_file, arguments, processes, nodes', [
    ('sensor_bridge.launch.py', lambda control, sensor: [f'port:={sensor}'],
     ['sensor_bridge'], ['/polaris/sensor_bridge']),
    ('acres_session.launch.py', lambda control, sensor: [f'port:={control}'],
     ['acres_bridge'], ['/acres_bridge', '/sim_control']),
])
def test_ros2_launch_against_the_emulator_and_ctrl_c(
        launch_file: str, arguments, processes: list[str], nodes: list[str],
        emulator_ports: tuple[int, int]) -> None:
    """(emulator_session.launch.py gets the same checks in test_ros2_cli.py.)"""
    launch = Background(['ros2', 'launch', PACKAGE, launch_file, *arguments(*emulator_ports)])
    try:
        launch.wait_for(HELLO, timeout_s=60.0)
        _once(wait_for_nodes(nodes), *nodes)
        assert 'already registered' not in launch.output
        code = launch.interrupt()
        assert_clean_exit(launch, code, processes)
    finally:
        launch.kill()


def test_ctrl_c_lets_the_bridge_end_a_sensor_process_that_hangs() -> None:
    """acres_bridge escalates on a stopped child for 10 s; launch waits for its clean end."""
    control, first, second = free_ports(3)
    launch = Background(['ros2', 'launch', PACKAGE, 'emulator_session.launch.py',
                         'vehicles:=polaris,maxxum', f'port:={control}',
                         f'sensor_ports:={first},{second}', 'sensor_processes:=per_agent'])
    try:
        child = int(launch.wait_for(r'sensor stream maxxum: process (\d+) ', timeout_s=60.0)[1])
        launch.wait_for(r'sensor stream maxxum: hello from agent', timeout_s=60.0)
        os.kill(child, signal.SIGSTOP)     # it takes no signal now but SIGKILL
        code = launch.interrupt(90.0)
        assert f'process {child} did not end in 5 s, sending SIGKILL' in launch.output
        assert_clean_exit(launch, code, ['acres_sim_emulator', 'acres_bridge'])
    finally:
        launch.kill()


@pytest.mark.parametrize('launch_file', ['acres_session.launch.py',
                                         'emulator_session.launch.py'])
def test_rviz_without_rviz2_fails_before_anything_starts(launch_file: str) -> None:
    if run(['ros2', 'pkg', 'prefix', 'rviz2']).returncode == 0:
        pytest.skip('rviz2 is installed in this environment')
    control, sensor = free_ports(2)
    launch = Background(['ros2', 'launch', PACKAGE, launch_file, 'rviz:=true',
                         f'port:={control}', f'sensor_ports:={sensor}'])
    try:
        code = launch.wait(60.0)
        assert code != 0
        assert 'rviz:=true needs the executable rviz2 of package rviz2' in launch.output
        assert 'process started' not in launch.output, launch.output
        assert not launch.descendants()
    finally:
        launch.kill()


def test_record_dataset_records_each_vehicle_and_ends_on_ctrl_c(tmp_path: Path) -> None:
    """emulator_session.launch.py record_dataset:=true: a recorder per vehicle, on /clock."""
    control, first, second = free_ports(3)
    launch = Background(['ros2', 'launch', PACKAGE, 'emulator_session.launch.py',
                         'vehicles:=polaris,maxxum', f'port:={control}',
                         f'sensor_ports:={first},{second}', 'record_dataset:=true',
                         'dataset_set:=cli', 'dataset_sequence:=run1'],
                        ACRES_DATA=str(tmp_path))
    recorders = ['/polaris/lidar_recorder', '/maxxum/lidar_recorder']
    start_daemon()
    try:
        launch.wait_for(r'sensor stream maxxum: hello from agent', timeout_s=60.0)
        _once(wait_for_nodes(['/acres_bridge', '/sim_control', *recorders]),
              '/acres_bridge', '/sim_control', *recorders)
        for recorder, agent in zip(recorders, ('polaris', 'maxxum')):
            assert _param(recorder, 'use_sim_time') is True
            assert _param(recorder, 'sequence') == f'run1-{agent}'
        # Each recorder opens its sequence at its first cloud.
        for agent in ('polaris', 'maxxum'):
            launch.wait_for(rf'recording \d+ x \d+ scans into .*/cli/run1-{agent}\b',
                            timeout_s=60.0)
        code = launch.interrupt(60.0)
        assert_clean_exit(launch, code, ['acres_sim_emulator', 'acres_bridge', 'lidar_recorder'])
        dataset = LidarSet.open('cli', root=tmp_path)    # what Ctrl-C committed
        assert sorted(dataset.names) == ['run1-maxxum', 'run1-polaris']
        for name in dataset.names:
            assert len(dataset[name]) > 0
    finally:
        launch.kill()
        stop_daemon()
