# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The foxglove_view node, seen by a real Foxglove WebSocket protocol client.

A lockstep emulator, the session bridge, the view (its own executor) and a ROS client node share
one rclpy graph; :mod:`acres_devkit.clients.foxglove_client` speaks ``foxglove.sdk.v1`` over
``websockets``.
"""

import os
import signal
import subprocess
import sys
import threading

import pytest
import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rclpy.serialization import serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import PointCloud2
from simulation_interfaces.msg import Result
from simulation_interfaces.srv import StepSimulation
from support.sensor_bridge_graph import streaming
from support.spinning import SpinningExecutor
from support.waiting import wait_until
from tf2_msgs.msg import TFMessage
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from acres_bridge.foxglove.definitions import read_installed
from acres_bridge.foxglove.definitions import SEPARATOR
from acres_bridge.foxglove.view import FoxgloveViewNode
from acres_bridge.session.bridge import SessionBridge
from acres_devkit.clients import CLIENTS
from acres_devkit.clients.foxglove_client import FoxgloveClient
from acres_devkit.clients.foxglove_client import SUBPROTOCOL
from acres_devkit.clients.foxglove_client import wait_for_channels

pytestmark = pytest.mark.ros

WAIT_S = 30.0
CLIENT_SCRIPT = CLIENTS / 'foxglove_client.py'
SENSOR_TOPICS = ('/clock', '/tf_static', '/polaris/lidar/points', '/polaris/camera/image_raw',
                 '/polaris/camera/camera_info', '/polaris/ins/imu', '/polaris/ins/fix',
                 '/polaris/ins/odometry', '/polaris/ground_truth/odometry',
                 '/polaris/step_barrier')


class Rig:
    """The emulator, the session, the view and a ROS client node, in one context."""

    def __init__(self, context: object, emulator: object) -> None:
        self.emulator = emulator
        self.session_executor = MultiThreadedExecutor(num_threads=2, context=context)
        self.session = SessionBridge(self.session_executor, context=context, parameter_overrides=[
            Parameter('port', value=emulator.control_port),
            Parameter('sensor_processes', value='in_process')])
        self.view_executor = SingleThreadedExecutor(context=context)
        self.view = FoxgloveViewNode(context=context, parameter_overrides=[
            Parameter('port', value=0), Parameter('use_sim_time', value=True)])
        self.view_executor.add_node(self.view)
        self._threads = [threading.Thread(target=executor.spin, daemon=True)
                         for executor in (self.session_executor, self.view_executor)]
        for thread in self._threads:
            thread.start()
        self.client_spinner = SpinningExecutor(context)
        self.client = self.client_spinner.add(rclpy.create_node('view_test_client',
                                                                context=context))
        self.url = f'ws://127.0.0.1:{self.view.server.port}'

    def streaming(self) -> None:
        """Wait until the sensor stream is up and the view serves its topics."""
        session = self.session
        wait_until(lambda: session.bridges and all(streaming(b) for b in session.bridges),
                   what='the sensor stream to send its Hello', timeout_s=WAIT_S)
        wait_for_channels(self.url, SENSOR_TOPICS, WAIT_S)

    def step(self, steps: int) -> None:
        client = self.client.create_client(StepSimulation, '/step_simulation')
        assert client.wait_for_service(timeout_sec=WAIT_S)
        request = StepSimulation.Request()
        request.steps = steps
        response = self.client_spinner.wait(client.call_async(request), WAIT_S)
        assert response.result.result == Result.RESULT_OK, response.result.error_message
        self.client.destroy_client(client)

    def record(self, message_type: type, topic: str, *, depth: int = 1000,
               raw: bool = False) -> list:
        """Return the list a reliable subscriber in the graph appends each message to."""
        kept = []
        self.client.create_subscription(
            message_type, topic, kept.append,
            QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE), raw=raw)
        return kept

    def view_subscribes(self, topic: str) -> bool:
        """Whether the view's readers (not its time's, best effort) subscribe the topic."""
        return any(info.node_name == 'foxglove_view_readers'
                   and info.qos_profile.reliability == ReliabilityPolicy.RELIABLE
                   for info in self.client.get_subscriptions_info_by_topic(topic))

    def close(self) -> None:
        self.client_spinner.shutdown()
        for executor in (self.view_executor, self.session_executor):
            executor.shutdown(timeout_sec=5.0)
        self.view.destroy_node()
        self.session.destroy()
        for thread in self._threads:
            thread.join(timeout=5.0)


@pytest.fixture
def rig(ros_context, emulator_factory):
    emulator = emulator_factory(vehicles=('polaris',), lockstep=True, drive='hold')
    rig = Rig(ros_context, emulator)
    try:
        yield rig
    finally:
        rig.close()


@pytest.fixture
def clients():
    opened = []

    def open_client(url: str, **options: object) -> FoxgloveClient:
        client = FoxgloveClient(url, **options)
        opened.append(client)
        return client

    try:
        yield open_client
    finally:
        for client in opened:
            client.close()


def test_the_channels_are_the_graphs_topics_with_full_definitions(rig, clients):
    rig.streaming()
    client = clients(rig.url)

    def graph_topics() -> dict[str, str]:
        return {name: types[0] for name, types in rig.client.get_topic_names_and_types()
                if '/msg/' in types[0]}

    def advertised() -> dict[str, str]:
        return {channel['topic']: channel['schemaName'] for channel in client.channels.values()}

    wait_until(lambda: '/polaris/lidar/points' in graph_topics()
               and advertised() == graph_topics(), timeout_s=WAIT_S,
               what='the channels to be the topics of the graph')
    assert {'/clock', '/tf_static', '/polaris/camera/image_raw', '/polaris/ins/imu',
            '/diagnostics'} <= set(advertised())
    for channel in client.channels.values():
        assert (channel['encoding'], channel['schemaEncoding']) == ('cdr', 'ros2msg')
        package, _, name = channel['schemaName'].split('/')
        own = read_installed(package, 'msg', name).rstrip('\n')
        assert channel['schema'].split(f'\n{SEPARATOR}\n')[0].rstrip('\n') == own
    cloud = client.channel('/polaris/lidar/points')['schema']
    parts = cloud.split(f'\n{SEPARATOR}\n')
    assert [part.split('\n', 1)[0] for part in parts[1:]] == [
        'MSG: std_msgs/Header', 'MSG: builtin_interfaces/Time', 'MSG: sensor_msgs/PointField']
    assert client.server_info['capabilities'] and 'services' in client.server_info[
        'capabilities'] and 'time' in client.server_info['capabilities']


def test_a_cloud_is_byte_identical_to_the_serialised_ros_message(rig, clients):
    rig.streaming()
    raw = []
    rig.client.create_subscription(
        PointCloud2, '/polaris/lidar/points', raw.append,
        QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE), raw=True)
    client = clients(rig.url)
    client.subscribe('/polaris/lidar/points')
    wait_until(lambda: rig.view_subscribes('/polaris/lidar/points'), timeout_s=WAIT_S,
               what='the view to subscribe the cloud')
    rig.step(25)
    client.wait(lambda: client.counts['/polaris/lidar/points'] >= 2, WAIT_S, 'two clouds')
    wait_until(lambda: len(raw) >= 2, timeout_s=WAIT_S, what='two clouds in ROS')
    received = [payload for _, payload in client.messages['/polaris/lidar/points']]
    assert received == raw[:len(received)]
    assert len(received[0]) > 900_000       # 1800 columns x 32 rings x 16 bytes, and the header
    cloud = deserialize_message(received[0], PointCloud2)
    assert (cloud.height, cloud.width, cloud.point_step) == (1800, 32, 16)


def test_tf_static_reaches_a_client_that_connects_late(rig, clients):
    rig.streaming()
    latched = []
    rig.client.create_subscription(
        TFMessage, '/tf_static', latched.append,
        QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                   durability=DurabilityPolicy.TRANSIENT_LOCAL), raw=True)
    wait_until(lambda: latched, timeout_s=WAIT_S, what='the static transforms in ROS')
    client = clients(rig.url)
    client.subscribe('/tf_static')
    client.wait(lambda: client.counts['/tf_static'], WAIT_S, 'the static transforms')
    assert client.last['/tf_static'] == latched[-1]
    frames = {transform.child_frame_id for transform in
              deserialize_message(client.last['/tf_static'], TFMessage).transforms}
    assert {'base_link', 'lidar', 'camera'} <= frames


def test_unsubscribing_ends_the_ros_subscription(rig, clients):
    rig.streaming()
    client = clients(rig.url)
    first, = client.subscribe('/polaris/ins/imu')
    other = clients(rig.url)
    second, = other.subscribe('/polaris/ins/imu')
    wait_until(lambda: rig.view_subscribes('/polaris/ins/imu'), timeout_s=WAIT_S,
               what='the view to subscribe the IMU')
    assert not rig.view_subscribes('/polaris/ins/odometry')
    client.unsubscribe(first)
    other.close()      # the other ends by leaving
    wait_until(lambda: not rig.view_subscribes('/polaris/ins/imu'), timeout_s=WAIT_S,
               what='the view to end its IMU subscription')


def test_a_service_call_through_the_view_steps_the_emulator(rig, clients):
    rig.streaming()
    client = clients(rig.url)
    service = client.wait(lambda: client.services.get('/step_simulation'), WAIT_S,
                          'the step service')
    assert service['type'] == 'simulation_interfaces/srv/StepSimulation'
    assert service['request']['schemaName'] == 'simulation_interfaces/srv/StepSimulation_Request'
    assert 'get_parameters' not in ' '.join(client.services)
    request = StepSimulation.Request()
    request.steps = 7
    encoding, payload = client.call('/step_simulation', serialize_message(request))
    assert encoding == 'cdr', payload
    response = deserialize_message(payload, StepSimulation.Response)
    assert response.result.result == Result.RESULT_OK, response.result.error_message
    assert [r['steps'] for r in rig.emulator.requests.since() if r.get('op') == 'step'] == [7]


def test_a_client_of_the_older_subprotocol_alone_is_refused_with_http_400(rig):
    """foxglove-sdk speaks ``foxglove.sdk.v1`` only, as the README tells users of old clients."""
    with pytest.raises(InvalidStatus) as refused:
        connect(rig.url, subprotocols=['foxglove.websocket.v1'], open_timeout=WAIT_S).close()
    assert refused.value.response.status_code == 400
    with connect(rig.url, subprotocols=['foxglove.websocket.v1', SUBPROTOCOL],
                 open_timeout=WAIT_S) as offering_both:
        assert offering_both.subprotocol == SUBPROTOCOL


def test_bad_client_messages_get_errors_and_the_server_keeps_serving(rig, clients):
    rig.streaming()
    client = clients(rig.url)
    client.channel('/clock', WAIT_S)
    client.send_json({'op': 'subscribe', 'subscriptions': [{'id': 1, 'channelId': 999999}]})
    client.connection.send('this is not json')
    client.wait(lambda: len(client.statuses) >= 2, WAIT_S, 'two error statuses')
    assert all(status['level'] == 2 for status in client.statuses), client.statuses
    verdict, text = client.call('/step_simulation', b'\x00\x01\x00\x00\xff')
    assert verdict == 'failure' and 'StepSimulation' in text
    assert not [r for r in rig.emulator.requests.since() if r.get('op') == 'step']
    client.subscribe('/clock')
    # The view subscribes in ROS once the client has: a step before that is not the view's.
    wait_until(lambda: rig.view_subscribes('/clock'), timeout_s=WAIT_S,
               what='the view to subscribe the clock')
    rig.step(5)
    client.wait(lambda: client.counts['/clock'] >= 5, WAIT_S, 'the clock after the errors')


def test_a_paused_client_changes_nothing_for_a_ros_subscriber_and_another_client(
        rig, clients):
    rig.streaming()
    clocks = rig.record(Clock, '/clock', raw=True)
    clouds = rig.record(PointCloud2, '/polaris/lidar/points', depth=100, raw=True)
    paused = subprocess.Popen([sys.executable, str(CLIENT_SCRIPT), rig.url, *SENSOR_TOPICS],
                              stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        assert paused.stdout.readline().strip() == 'subscribed'
        wait_until(lambda: rig.view_subscribes('/polaris/camera/image_raw'), timeout_s=WAIT_S,
                   what='the view to subscribe for the paused client')
        other = clients(rig.url)
        other.subscribe('/clock', '/polaris/lidar/points')
        rig.step(10)
        other.wait(lambda: other.counts['/clock'] >= 10, WAIT_S, 'the first clocks')
        paused.send_signal(signal.SIGSTOP)
        for _ in range(100):     # 10 s of simulation: clouds and images it never reads
            rig.step(10)
        total = 1010            # 101 steps of 10 clocks
        other.wait(lambda: other.counts['/clock'] >= total, WAIT_S,
                   'every clock of the steps at the other client')
        wait_until(lambda: len(clocks) >= total, timeout_s=WAIT_S,
                   what='every clock at the ROS subscriber')
        wait_until(lambda: other.count('/polaris/lidar/points') == len(clouds), timeout_s=WAIT_S,
                   what='the other client to have every cloud the ROS subscriber has')
        assert (len(clocks), other.count('/clock')) == (total, total)
        assert [payload for _, payload in other.messages['/clock']] == clocks
        assert len(clouds) > 50
        assert [payload for _, payload in other.messages['/polaris/lidar/points']] == clouds
        assert paused.poll() is None      # paused, not gone
    finally:
        paused.send_signal(signal.SIGCONT)
        paused.kill()
        paused.communicate(timeout=WAIT_S)


def test_diagnostics_count_what_a_client_was_sent_on_the_channels_it_left_and_kept(
        rig, clients):
    rig.streaming()
    client = clients(rig.url)
    _, imu = client.subscribe('/clock', '/polaris/ins/imu')
    wait_until(lambda: rig.view_subscribes('/clock') and rig.view_subscribes('/polaris/ins/imu'),
               timeout_s=WAIT_S, what='the view to subscribe the clock and the IMU')

    def messages_sent() -> int:
        status, = [status for status in rig.view.statuses() if ': client ' in status.name]
        return int({kv.key: kv.value for kv in status.values}['messages_sent'])

    def received() -> int:
        return client.count('/clock') + client.count('/polaris/ins/imu')

    rig.step(10)
    client.wait(lambda: client.count('/clock') >= 10, WAIT_S, 'the clocks of the first step')
    wait_until(lambda: messages_sent() == received(), timeout_s=WAIT_S,
               what='messages_sent to be what the client received')
    imu_before = client.count('/polaris/ins/imu')
    assert imu_before > 0
    client.unsubscribe(imu)
    wait_until(lambda: not rig.view_subscribes('/polaris/ins/imu'), timeout_s=WAIT_S,
               what='the view to end its IMU subscription')
    rig.step(10)
    client.wait(lambda: client.count('/clock') >= 20, WAIT_S, 'the clocks of the second step')
    wait_until(lambda: messages_sent() == received(), timeout_s=WAIT_S,
               what='messages_sent to keep the IMU messages sent before the unsubscribe')
    assert client.count('/polaris/ins/imu') == imu_before
    assert messages_sent() == client.count('/clock') + imu_before


def test_the_views_time_is_the_simulation_time_without_a_clock_subscription_of_its_node(
        rig, clients):
    rig.streaming()
    clocks = rig.record(Clock, '/clock')
    client = clients(rig.url)
    client.subscribe('/polaris/ins/imu')
    wait_until(lambda: rig.view_subscribes('/polaris/ins/imu'), timeout_s=WAIT_S,
               what='the view to subscribe the IMU')
    rig.step(30)
    wait_until(lambda: len(clocks) >= 30, timeout_s=WAIT_S, what='the clocks of the step')
    last = clocks[-1].clock.sec * 1_000_000_000 + clocks[-1].clock.nanosec
    # The server broadcasts its time every 0.25 s: the step's last /clock, once it is read.
    client.wait(lambda: client.times and client.times[-1] == last, WAIT_S,
                "the server's time to be the step's last /clock")
    assert rig.view.get_clock().now().nanoseconds == last
    assert all(0 < log_time <= last for log_time, _ in client.messages['/polaris/ins/imu'])
    # rclpy's time source left the view's node: its /clock reader is the readers' node's.
    assert not [s for s in rig.view.subscriptions if s.topic_name == '/clock']

    def views_clock_readers() -> list:
        return [(info.node_name, info.qos_profile.reliability)
                for info in rig.client.get_subscriptions_info_by_topic('/clock')
                if info.node_name.startswith('foxglove_view')]

    time_reader = [('foxglove_view_readers', ReliabilityPolicy.BEST_EFFORT)]
    assert views_clock_readers() == time_reader
    # use_sim_time set at run time: the time's reader goes, and comes back.
    rig.view.set_parameters([Parameter('use_sim_time', value=False)])
    wait_until(lambda: views_clock_readers() == [], timeout_s=WAIT_S,
               what="the time's reader to go")
    rig.view.set_parameters([Parameter('use_sim_time', value=True)])
    wait_until(lambda: views_clock_readers() == time_reader, timeout_s=WAIT_S,
               what="the time's reader to come back")
