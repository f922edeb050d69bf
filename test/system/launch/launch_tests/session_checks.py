# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
What every launch_testing test of a launch file checks (its three files import this module).

``description()`` includes the installed launch file (as ``ros2 launch`` finds it) with the ports
the pytest driver (test/system/launch/test_launch_testing.py) passes as launch arguments, and the
emulator when the launch file does not start one itself. While it runs: each node is in the graph
exactly once, and the agent's INS and /clock reach a subscriber. After launch_testing's shutdown
(SIGINT to every process): every exit code is 0 and no output holds a traceback.
"""

import unittest

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.actions import ExecuteProcess
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch.substitutions import PathJoinSubstitution
from launch_ros.substitutions import ExecutableInPackage
from launch_ros.substitutions import FindPackageShare
import launch_testing
import launch_testing.actions
import launch_testing.asserts
from launch_testing_ros import WaitForTopics
import rclpy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import NavSatFix

PACKAGE = 'acres_bridge'
AGENT = 'polaris'
TIMEOUT_S = 60.0


def description(launch_file: str, arguments: dict, *, emulator: bool,
                nodes: list[str]) -> tuple[LaunchDescription, dict]:
    """
    Return the test's launch description and what its tests receive.

    :param arguments: the launch file's arguments; values may name the launch arguments
        ``control_port`` and ``sensor_port`` of the test as LaunchConfiguration.
    :param emulator: start ``acres_sim_emulator`` on those ports first.
    :param nodes: the fully qualified names of the nodes the launch file starts.
    """
    control, sensor = LaunchConfiguration('control_port'), LaunchConfiguration('sensor_port')
    actions = [DeclareLaunchArgument('control_port'), DeclareLaunchArgument('sensor_port')]
    if emulator:
        actions.append(ExecuteProcess(
            cmd=[ExecutableInPackage('acres_sim_emulator', PACKAGE), '--control-port', control,
                 '--sensor-ports', sensor],
            name='acres_sim_emulator', output='screen'))
    actions += [
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(
                PathJoinSubstitution([FindPackageShare(PACKAGE), 'launch', launch_file])),
            launch_arguments=[(name, {'control_port': control, 'sensor_port': sensor}.get(
                value, value)) for name, value in arguments.items()]),
        launch_testing.actions.ReadyToTest(),
    ]
    return LaunchDescription(actions), {'nodes': nodes}


class TestWhileRunning(unittest.TestCase):
    """The graph of the launch, seen from this process."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.context = rclpy.Context()
        rclpy.init(context=cls.context)
        cls.node = rclpy.create_node('launch_test_observer', context=cls.context)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.node.destroy_node()
        cls.context.try_shutdown()

    def test_each_node_is_in_the_graph_once(self, nodes: list[str]) -> None:
        for name in nodes:
            self.assertTrue(self.node.wait_for_node(name, TIMEOUT_S), f'no {name}')
        listed = [f'{namespace.rstrip("/")}/{name}' for name, namespace in
                  self.node.get_node_names_and_namespaces()]
        for name in nodes:
            self.assertEqual(listed.count(name), 1, f'{name} in {sorted(listed)}')

    def test_the_agent_topics_and_the_clock_arrive(self) -> None:
        wait = WaitForTopics([(f'/{AGENT}/ins/fix', NavSatFix), ('/clock', Clock)],
                             timeout=TIMEOUT_S)
        try:
            self.assertTrue(wait.wait(), f'nothing on {wait.topics_not_received()}')
        finally:
            wait.shutdown()


@launch_testing.post_shutdown_test()
class TestAfterShutdown(unittest.TestCase):
    """launch_testing's shutdown sends SIGINT to every process: all must end cleanly."""

    def test_every_process_exits_0(self, proc_info) -> None:
        launch_testing.asserts.assertExitCodes(proc_info)

    def test_no_output_holds_a_traceback(self, proc_output) -> None:
        for event in proc_output:
            text = event.text.decode(errors='replace')
            self.assertNotIn('Traceback (most recent call last)', text,
                             f'{event.process_name}: {text}')
