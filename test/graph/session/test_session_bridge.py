# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The acres_bridge executable's session: sim_control and a sensor bridge per agent in one process.

The emulator runs in lockstep; the session under test and a client node (services and
subscriptions, as an autonomy stack would have) share a real rclpy graph.
"""

import collections
import os
import signal
import subprocess
import sys
import threading

from acres_interfaces.msg import StepBarrier
import pytest
import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image
from sensor_msgs.msg import Imu
from sensor_msgs.msg import PointCloud2
from simulation_interfaces.msg import Result
from simulation_interfaces.srv import GetSimulationState
from simulation_interfaces.srv import StepSimulation
from support.sensor_bridge_graph import streaming
from support.spinning import SpinningExecutor
from support.waiting import wait_until

from acres_bridge.session.bridge import session_layout
from acres_bridge.session.bridge import SessionBridge

WAIT_S = 20.0
STEPS = 12


class Recorder:
    """Record every message of a few topics and the moment each arrived."""

    def __init__(self, node: object, topics: dict[str, type]) -> None:
        self.messages: dict[str, list] = collections.defaultdict(list)
        self._lock = threading.Lock()
        qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        self._subscriptions = [
            node.create_subscription(message_type, topic,
                                     lambda message, topic=topic: self._add(topic, message), qos)
            for topic, message_type in topics.items()]

    def matched(self) -> bool:
        """Whether every subscription has matched a publisher (not only discovered one)."""
        return all(subscription.get_publisher_count() > 0
                   for subscription in self._subscriptions)

    def _add(self, topic: str, message: object) -> None:
        with self._lock:
            self.messages[topic].append(message)

    def count(self, topic: str) -> int:
        with self._lock:
            return len(self.messages[topic])

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {topic: len(messages) for topic, messages in self.messages.items()}


@pytest.fixture
def session_graph(ros_context, emulator_factory):
    """Start a two-agent lockstep emulator, the session under test and a client node."""
    emulator = emulator_factory(vehicles=('polaris', 'maxxum'), lockstep=True, drive='hold')
    session_executor = MultiThreadedExecutor(num_threads=2, context=ros_context)
    session = SessionBridge(session_executor, context=ros_context, parameter_overrides=[
        Parameter('port', value=emulator.control_port),
        Parameter('sensor_processes', value='in_process')])   # the bridges of this process
    spinner = threading.Thread(target=session_executor.spin, daemon=True)
    spinner.start()
    client_spinner = SpinningExecutor(ros_context)
    client = client_spinner.add(rclpy.create_node('session_client', context=ros_context))
    try:
        yield emulator, session, client, client_spinner
    finally:
        client_spinner.shutdown()
        session_executor.shutdown(timeout_sec=5.0)
        session.destroy()
        spinner.join(timeout=5.0)


def call(spinner: SpinningExecutor, client_node, service_type, name: str, request):
    client = client_node.create_client(service_type, name)
    assert client.wait_for_service(timeout_sec=WAIT_S), f'{name} is not served'
    return spinner.wait(client.call_async(request), WAIT_S)


def test_agents_are_paired_with_their_ports_from_hello_or_the_parameter():
    hello = {'agents': [{'name': 'maxxum', 'index': 1, 'sensor_stream': 5602},
                        {'name': 'polaris', 'index': 0, 'sensor_stream': 5601},
                        {'name': 'ghost', 'index': 2, 'sensor_stream': 0}]}
    assert session_layout(hello, ()).streams == (('polaris', 5601), ('maxxum', 5602))
    assert session_layout(hello, (6001, 6002)).streams == (('polaris', 6001), ('maxxum', 6002))


def test_each_step_answers_after_every_message_of_the_step_was_published(session_graph):
    emulator, session, client, spinner = session_graph
    topics = {'/polaris/step_barrier': StepBarrier, '/maxxum/step_barrier': StepBarrier,
              '/clock': Clock, '/polaris/lidar/points': PointCloud2,
              '/polaris/camera/image_raw': Image, '/maxxum/lidar/points': PointCloud2,
              '/polaris/ins/imu': Imu, '/maxxum/ins/imu': Imu}
    recorder = Recorder(client, topics)
    wait_until(lambda: len(session.bridges) == 2 and all(streaming(b) for b in session.bridges),
               what='both sensor streams to send their Hello', timeout_s=WAIT_S)
    barrier_publisher = session.node.get_publishers_info_by_topic('/maxxum/step_barrier')
    assert barrier_publisher, 'the session has no barrier publisher for the second agent'
    wait_until(recorder.matched, what='the client to be matched', timeout_s=WAIT_S)

    for request_number in range(1, 4):
        request = StepSimulation.Request()
        request.steps = STEPS
        response = call(spinner, client, StepSimulation, '/step_simulation', request)
        assert response.result.result == Result.RESULT_OK, response.result.error_message
        step = STEPS * request_number
        # The guarantee: when the answer comes, every stream has published the step's barrier.
        for bridge in session.bridges:
            assert bridge.last_barrier is not None and bridge.last_barrier[0] == step
        # ...so a client receives all of the step: per agent, 12 clocks (agent 0 only),
        # 10 INS epochs, one cloud, one image (the Polaris), then the barrier.
        expected = {'/clock': 12, '/polaris/ins/imu': 10, '/maxxum/ins/imu': 10,
                    '/polaris/lidar/points': 1, '/maxxum/lidar/points': 1,
                    '/polaris/camera/image_raw': 1, '/polaris/step_barrier': 1,
                    '/maxxum/step_barrier': 1}
        wait_until(lambda: all(recorder.count(topic) >= count * request_number
                               for topic, count in expected.items()),
                   what=f'every message of step request {request_number}', timeout_s=WAIT_S)
        for topic in ('/polaris/step_barrier', '/maxxum/step_barrier'):
            assert recorder.messages[topic][-1].step == step

    assert {topic: count for topic, count in recorder.snapshot().items()} == {
        topic: count * 3 for topic, count in expected.items()}
    steps_sent = [r['steps'] for r in emulator.requests.since() if r.get('op') == 'step']
    assert steps_sent == [STEPS] * 3


def test_two_agents_are_namespaced_and_prefixed_and_services_keep_their_names(session_graph):
    emulator, session, client, spinner = session_graph
    clouds = Recorder(client, {'/polaris/lidar/points': PointCloud2,
                               '/maxxum/lidar/points': PointCloud2})
    wait_until(lambda: len(session.bridges) == 2 and all(streaming(b) for b in session.bridges),
               what='both sensor streams to send their Hello', timeout_s=WAIT_S)
    wait_until(clouds.matched, what='the client to be matched', timeout_s=WAIT_S)
    state = call(spinner, client, GetSimulationState, '/get_simulation_state',
                 GetSimulationState.Request())
    assert state.result.result == Result.RESULT_OK
    request = StepSimulation.Request()
    request.steps = STEPS
    assert call(spinner, client, StepSimulation, '/step_simulation',
                request).result.result == Result.RESULT_OK
    wait_until(lambda: clouds.count('/polaris/lidar/points') and clouds.count(
        '/maxxum/lidar/points'), what='a cloud from each agent', timeout_s=WAIT_S)
    assert clouds.messages['/polaris/lidar/points'][0].header.frame_id.startswith('polaris/')
    assert clouds.messages['/maxxum/lidar/points'][0].header.frame_id.startswith('maxxum/')
    assert (clouds.messages['/maxxum/lidar/points'][0].height,
            clouds.messages['/maxxum/lidar/points'][0].width) == (180, 8)
    clock_publishers = session.node.get_publishers_info_by_topic('/clock')
    assert len(clock_publishers) == 1


def test_the_executable_runs_a_session_and_stops_on_ctrl_c(emulator_factory):
    emulator = emulator_factory(vehicles=('polaris',), lockstep=True, drive='hold')
    environment = dict(os.environ)
    process = subprocess.Popen(
        [sys.executable, '-m', 'acres_bridge.nodes.acres_bridge', '--ros-args',
         '-p', f'port:={emulator.control_port}'],
        env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until(lambda: emulator.streams[0].has_client,
                   what='the session to connect the sensor stream', timeout_s=WAIT_S)
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=WAIT_S)
    assert process.returncode == 0, output


def test_the_executable_refuses_a_remote_host_with_one_line():
    result = subprocess.run(
        [sys.executable, '-m', 'acres_bridge.nodes.acres_bridge', '--ros-args',
         '-p', 'host:=10.1.2.3'], capture_output=True, text=True, timeout=WAIT_S)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith('acres_bridge:')]
    assert len(lines) == 1 and '10.1.2.3' in lines[0]
