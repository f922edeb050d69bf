# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The ros2 commands of a user against ``ros2 launch acres_bridge emulator_session.launch.py``.

One session (emulator and bridge, default arguments but the ports) serves the whole module:
``ros2 pkg``, ``ros2 node list``, ``ros2 param list/get/dump`` of each node, ``ros2 topic
echo/hz`` and ``ros2 action send_goal``, each run in a shell that sourced the prefix's
setup.bash, asking the ros2 daemon as the tools do by default: the module starts it before
the session and stops it after. (``ros2 service call`` of the
ros-tooling wheels needs Kilted's rclpy: on Jazzy it fails before it calls.)
"""

from collections.abc import Iterator
import dataclasses
from importlib import metadata
import re

import pytest
from support.waiting import call_across_processes
import yaml

from acres_devkit.ports import free_ports
from acres_devkit.ros2_tools import assert_clean_exit
from acres_devkit.ros2_tools import Background
from acres_devkit.ros2_tools import PACKAGE
from acres_devkit.ros2_tools import param_list
from acres_devkit.ros2_tools import PREFIX
from acres_devkit.ros2_tools import run
from acres_devkit.ros2_tools import start_daemon
from acres_devkit.ros2_tools import stop_daemon
from acres_devkit.ros2_tools import wait_for_nodes

pytestmark = [pytest.mark.ros, pytest.mark.ros2_tools]
# ros2 param get/dump: wait this long for the node to be discovered.
PARAM = ['--timeout', '10']
AGENT = 'polaris'


@dataclasses.dataclass
class Session:
    launch: Background
    control_port: int
    sensor_port: int


@pytest.fixture(scope='module')
def session() -> Iterator[Session]:
    """Run the emulator session until the module ends, then Ctrl-C it (exit 0, all gone)."""
    start_daemon()
    control_port, sensor_port = free_ports(2)
    launch = Background(['ros2', 'launch', PACKAGE, 'emulator_session.launch.py',
                         f'port:={control_port}', f'sensor_ports:={sensor_port}'])
    try:
        launch.wait_for(rf'sensor stream {AGENT}: hello from agent', timeout_s=60.0)
        yield Session(launch, control_port, sensor_port)
        code = launch.interrupt()
        assert_clean_exit(launch, code, ['acres_sim_emulator', 'acres_bridge'])
    finally:
        launch.kill()
        stop_daemon()


def _ok(args: list[str], timeout_s: float = 60.0) -> str:
    result = run(args, timeout_s=timeout_s)
    assert result.returncode == 0, f'{" ".join(args)}: exit {result.returncode}\n{result.stdout}'
    return result.stdout


def test_ros2_pkg_prefix_is_the_prefix() -> None:
    assert _ok(['ros2', 'pkg', 'prefix', PACKAGE]).strip() == str(PREFIX)


def test_ros2_pkg_executables_lists_every_console_script() -> None:
    scripts = {entry.name for entry in metadata.distribution(PACKAGE).entry_points
               if entry.group == 'console_scripts'}
    listed = [line.split() for line in _ok(['ros2', 'pkg', 'executables', PACKAGE]).splitlines()]
    assert all(package == PACKAGE for package, _ in listed)
    assert sorted(name for _, name in listed) == sorted(scripts)


def test_ros2_node_list_shows_each_node_once(session: Session) -> None:
    listed = wait_for_nodes(['/acres_bridge', '/sim_control'])
    assert sorted(listed) == ['/acres_bridge', '/sim_control']
    assert 'already registered' not in session.launch.output     # rcl: two nodes, one name


@pytest.mark.parametrize('node, parameter, expected', [
    ('/acres_bridge', 'publish_tf', 'ins'),           # from config/acres_session.yaml
    ('/acres_bridge', 'timeout_s', 10.0),
    ('/sim_control', 'use_sim_time', False),          # the bridge keeps the system clock
])
def test_ros2_param_list_get_dump_of_each_node(session: Session, node: str, parameter: str,
                                               expected: object) -> None:
    wait_for_nodes([node])
    names = param_list(node)
    assert parameter in names and 'use_sim_time' in names
    got = _ok(['ros2', 'param', 'get', *PARAM, '--hide-type', node, parameter]).strip()
    assert yaml.safe_load(got) == expected
    dumped = yaml.safe_load(_ok(['ros2', 'param', 'dump', *PARAM, node]))
    assert dumped[node]['ros__parameters'][parameter] == expected
    if node == '/acres_bridge':
        assert dumped[node]['ros__parameters']['port'] == session.control_port


@pytest.mark.parametrize('topic, message_type, field', [
    (f'/{AGENT}/ins/fix', 'sensor_msgs/msg/NavSatFix', 'latitude'),
    ('/clock', 'rosgraph_msgs/msg/Clock', 'clock'),
    (f'/{AGENT}/camera/camera_info', 'sensor_msgs/msg/CameraInfo', 'distortion_model'),
])
def test_ros2_topic_echo_once(session: Session, topic: str, message_type: str,
                              field: str) -> None:
    # With the type given, echo subscribes at once instead of waiting to discover it.
    message = yaml.safe_load(_ok(['ros2', 'topic', 'echo', '--once', '--timeout', '20',
                                  topic, message_type]).split('\n---')[0])
    assert field in message


@pytest.mark.delivery
@pytest.mark.parametrize('topic', [f'/{AGENT}/lidar/points', f'/{AGENT}/camera/image_raw'])
def test_ros2_topic_hz_shows_10_hz_at_1x(session: Session, topic: str) -> None:
    """The clouds and images reach a plain ros2 CLI subscriber at the sensors' 10 Hz."""
    # Timed on /clock (--use-sim-time), as a user of a simulation would: 10 Hz of simulation
    # time is every frame the simulator made, however far a loaded machine lets it fall behind
    # real time (8.3 Hz of wall time once, with five test runs side by side on 2 cores). The
    # average is over every message since hz started: a frame that comes late and the next
    # on time move a 30-message window by 10 %, this one by under 3 %.
    hz = Background(['ros2', 'topic', 'hz', '--use-sim-time', topic])
    try:
        hz.wait_for(r'window: (1[0-9][0-9]|[2-9][0-9][0-9])\b', timeout_s=90.0)
        reports = re.findall(r'average rate: ([\d.]+)\s+min: \S+ max: \S+ std dev: \S+ '
                             r'window: (\d+)', hz.output)
        rate, window = next((float(rate), int(window)) for rate, window in reports
                            if int(window) >= 100)
        assert 9.0 <= rate <= 11.0, f'{topic}: {rate} Hz of 10 over {window} messages'
    finally:
        hz.interrupt()


def _set_simulation_state(context: object, state: int) -> None:
    """Set the simulation state with an rclpy client (works on every distribution)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from simulation_interfaces.srv import SetSimulationState
    node = rclpy.create_node('cli_test_state', context=context)
    executor = SingleThreadedExecutor(context=context)
    try:
        executor.add_node(node)
        client = node.create_client(SetSimulationState, '/set_simulation_state')
        assert client.wait_for_service(timeout_sec=30.0)
        request = SetSimulationState.Request()
        request.state.state = state
        response = call_across_processes(executor, client, request)
        # A request sent again after a lost response finds the world in the state already.
        assert response.result.result in (
            1, SetSimulationState.Response.ALREADY_IN_TARGET_STATE), response
    finally:
        executor.shutdown()
        node.destroy_node()


def test_ros2_action_send_goal_simulate_steps(session: Session, ros_context: object) -> None:
    """Pause, step with ros2 action send_goal (feedback every 12 steps), play again."""
    _set_simulation_state(ros_context, 2)
    try:
        sent = _ok(['ros2', 'action', 'send_goal', '--feedback', '/simulate_steps',
                    'simulation_interfaces/action/SimulateSteps', '{steps: 36}'])
        assert 'Goal accepted' in sent, sent
        assert 'Goal finished with status: SUCCEEDED' in sent, sent
        assert 'Feedback:' in sent, sent
    finally:
        _set_simulation_state(ros_context, 1)
