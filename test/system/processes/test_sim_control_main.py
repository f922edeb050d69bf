# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The sim_control executable: a bad parameter stops it, Ctrl-C ends it cleanly."""

import os
import signal
import subprocess
import sys

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from simulation_interfaces.srv import GetSimulationState
from support.sim_control_graph import unique_namespace
from support.waiting import call_across_processes

from acres_bridge.nodes.sim_control import main

pytestmark = pytest.mark.ros


def _sim_control(*ros_args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, '-m', 'acres_bridge.nodes.sim_control', '--ros-args', *ros_args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))


@pytest.mark.parametrize('argument, text', [
    ('host:=10.0.0.1', 'not a loopback address'),
    ('port:=70000', 'port'),
    ('timeout_s:=0.0', 'timeout_s'),
])
def test_a_bad_parameter_stops_the_node_with_one_line(argument, text, capsys):
    assert main(['sim_control', '--ros-args', '-p', argument]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith('sim_control: ') and text in lines[0], lines


def test_the_executable_serves_the_emulator_and_ends_on_sigint(emulator_factory, ros_context):
    emulator = emulator_factory(lockstep=True, drive='hold')
    namespace = unique_namespace()
    process = _sim_control('-p', f'port:={emulator.control_port}', '-r', f'__ns:={namespace}')
    node = rclpy.create_node('sim_control_main_test', context=ros_context, namespace=namespace)
    executor = SingleThreadedExecutor(context=ros_context)
    try:
        client = node.create_client(GetSimulationState, 'get_simulation_state')
        assert client.wait_for_service(timeout_sec=30.0)
        executor.add_node(node)
        response = call_across_processes(executor, client, GetSimulationState.Request())
        assert response.state.state == 2
        assert {'op': 'get_state'} in [
            {key: value for key, value in request.items() if key != 'id'}
            for request in emulator.requests.since()]
    finally:
        executor.shutdown()
        node.destroy_node()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
