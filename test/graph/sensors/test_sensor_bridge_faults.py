# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The sensor bridge when the stream fails: restarts, broken frames, refusals, bad parameters.

A lost connection is logged, retried every ``reconnect_s`` (0.1 s here) and visible in
``/diagnostics``; data flows again once the stream is back. ``main()`` turns a bad parameter
into one line on stderr and exit code 2, and a Ctrl-C into a clean exit.
"""

import logging
import os
import signal
import subprocess
import sys
import threading

import pytest
from rclpy.parameter import Parameter
from support.emulator_probe import JsonChannel
from support.sensor_bridge_graph import AGENT_TOPICS
from support.sensor_bridge_graph import GLOBAL_TOPICS
from support.sensor_bridge_graph import Recorder
from support.sensor_bridge_graph import wait_hellos
from support.sensor_bridge_graph import wait_matched
from support.sensor_bridge_graph import wait_until

from acres_bridge.emulator.faults import FaultProxy
from acres_bridge.nodes import sensor_bridge
from acres_bridge.protocol.frames import FrameType
from acres_bridge.runtime.parameters import ParameterError
from acres_bridge.sensors.sensor_node import SensorBridgeNode
from acres_devkit.ports import free_port

pytestmark = pytest.mark.ros
TOPICS = {**AGENT_TOPICS, **GLOBAL_TOPICS}


@pytest.fixture
def start_bridge(ros_context, spinning):
    """Start a SensorBridgeNode on a port, with a recorder: ``start_bridge(port)``."""
    made = []

    def start(port: int, **parameters):
        overrides = [Parameter('port', value=port), Parameter('reconnect_s', value=0.1)]
        overrides += [Parameter(name, value=value) for name, value in parameters.items()]
        node = SensorBridgeNode(context=ros_context, parameter_overrides=overrides)
        recorder = Recorder(ros_context, TOPICS)
        made.extend((node, recorder.node))
        spinning.add(node)
        spinning.add(recorder.node)
        return node, recorder

    yield start
    # Nodes are destroyed once nothing spins them: rclpy's wait set races with destruction.
    spinning.shutdown()
    for node in made:
        node.destroy_node()


def _status(message) -> tuple[bytes, str, dict[str, str]]:
    [status] = message.status
    return status.level, status.message, {value.key: value.value for value in status.values}


def _step(emulator, recorder, barriers: int) -> None:
    assert JsonChannel(emulator.control_port).call('step', steps=12)['result'] == 1
    recorder.wait_counts({'step_barrier': barriers})


def test_a_restarted_stream_brings_the_data_back_with_the_new_layout(
        emulator_factory, start_bridge, capfd):
    first = emulator_factory(vehicles=('polaris',), lockstep=True)
    port = first.sensor_ports[0]
    node, recorder = start_bridge(port, point_fields='xyzirt')
    wait_hellos(node.bridge, 1)
    wait_matched(node.bridge.publishers.values())
    _step(first, recorder, 1)
    recorder.wait_for('/tf_static', lambda m: _lidar_mount(m) == (2.5, 0.0, 2.039))
    first.stop()
    wait_until(lambda: not node.bridge.connected, what='the disconnection')
    down = recorder.wait_for('/diagnostics', lambda m: _status(m)[0] == m.status[0].ERROR)
    level, text, values = _status(down)
    assert text.startswith('disconnected: ')
    assert values['connected'] == 'false'

    # The simulator comes back on the same port with another vehicle: a new Hello, new layout.
    second = emulator_factory(vehicles=('maxxum',), lockstep=True, sensor_ports=(port,))
    assert second.sensor_ports == [port]
    wait_hellos(node.bridge, 2)
    _step(second, recorder, 2)
    recorder.wait_counts({'lidar/points': 2, 'camera/image_raw': 2, 'camera/camera_info': 2})
    assert [m.step for m in recorder.messages['step_barrier']] == [12, 12]
    clouds = recorder.messages['lidar/points']
    assert [(c.height, c.width, c.point_step) for c in clouds] == [(1800, 32, 24), (180, 8, 24)]
    assert [i.width for i in recorder.messages['camera/camera_info']] == [896, 640]
    assert recorder.wait_for('/tf_static', lambda m: _lidar_mount(m) == (2.05, 0.0, 3.15))
    stats = node.bridge.stats
    assert (stats['connections'], stats['reconnects'], stats['disconnects']) == (2, 1, 1)
    up = recorder.wait_for('/diagnostics', lambda m: _status(m)[2]['reconnects'] == '1'
                           and _status(m)[2]['connected'] == 'true')
    assert _status(up)[0] == up.status[0].OK
    log = capfd.readouterr().err
    assert ('sensor stream sensor_bridge: disconnected: peer closed; reconnecting every 0.1 s'
            in log)
    assert 'hello from agent maxxum (maxxum): lidar 180 x 8 at 10 Hz' in log


def _lidar_mount(message) -> tuple[float, float, float] | None:
    for transform in message.transforms:
        if transform.child_frame_id == 'lidar':
            translation = transform.transform.translation
            return (translation.x, translation.y, translation.z)
    return None


def test_broken_frames_close_the_connection_which_comes_back(emulator_factory, start_bridge):
    emulator = emulator_factory(vehicles=('polaris',), lockstep=True)
    with FaultProxy(emulator.sensor_ports[0]) as proxy:
        node, recorder = start_bridge(proxy.port)
        wait_hellos(node.bridge, 1)
        wait_matched(node.bridge.publishers.values())
        for hellos, action in enumerate(('bad_magic', 'cut', 'huge_header'), start=2):
            fault = proxy.inject(action, frame_type=FrameType.LIDAR)
            assert JsonChannel(emulator.control_port).call('step', steps=12)['result'] == 1
            assert fault.wait(15.0)
            wait_hellos(node.bridge, hellos)
        _step(emulator, recorder, 1)
        [barrier] = recorder.messages['step_barrier']
        assert barrier.step == 48
        stats = node.bridge.stats
        assert stats['bad_frames'] == 3 and stats['reconnects'] == 3
        # A bad magic has no trustworthy type; the cut and the lying frame were LiDAR frames.
        assert stats['by_type']['lidar']['bad'] == 2
        report = recorder.wait_for('/diagnostics',
                                   lambda m: _status(m)[2]['reconnects'] == '3')
        values = _status(report)[2]
        assert values['bad_frames'] == '3'
        assert 'limit' in values['last_bad_frame']
        # The same Hello on each new connection: /tf_static is not sent again.
        assert recorder.count('/tf_static') == 1


def test_a_refused_port_is_an_error_until_the_simulator_starts(emulator_factory, start_bridge):
    port = free_port()
    node, recorder = start_bridge(port)
    refused = recorder.wait_for('/diagnostics', lambda m: _status(m)[0] == m.status[0].ERROR)
    assert _status(refused)[1] == (
        f'disconnected: cannot connect to 127.0.0.1:{port}: connection refused')
    assert node.bridge.stats['connect_failures'] >= 1
    emulator = emulator_factory(vehicles=('polaris',), lockstep=True, sensor_ports=(port,))
    wait_hellos(node.bridge, 1)
    wait_matched(node.bridge.publishers.values())
    _step(emulator, recorder, 1)


def test_destroy_node_joins_the_reader_before_the_publishers_go(emulator_factory, ros_context):
    emulator = emulator_factory(vehicles=('polaris',), lockstep=True)
    node = SensorBridgeNode(context=ros_context, parameter_overrides=[
        Parameter('port', value=emulator.sensor_ports[0])])
    wait_until(lambda: node.bridge.connected, what='the connection')
    reader = [thread for thread in threading.enumerate()
              if thread.name == 'sensor-rx:sensor_bridge']
    assert len(reader) == 1
    node.destroy_node()
    assert not reader[0].is_alive()
    assert emulator.streams[0].wait_disconnected(10.0)


def test_a_bad_parameter_stops_the_node_with_one_line(ros_context):
    with pytest.raises(ParameterError, match='parameter host: .*not a loopback address'):
        SensorBridgeNode(context=ros_context,
                         parameter_overrides=[Parameter('host', value='10.0.0.1')])
    assert not any(thread.name.startswith('sensor-rx:') for thread in threading.enumerate())


def test_main_returns_2_with_the_reason_for_a_bad_parameter(capsys):
    protocol_log = logging.getLogger('acres_bridge.protocol')
    level = protocol_log.level
    code = sensor_bridge.main(['sensor_bridge', '--ros-args', '-p', 'publish_tf:=odom'])
    assert protocol_log.level == level, 'main() muted the protocol layer'
    assert code == 2
    assert capsys.readouterr().err == (
        "sensor_bridge: parameter publish_tf: 'odom' is not one of none, ins, truth\n")


def _run(*args: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, '-m', 'acres_bridge.nodes.sensor_bridge', *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ), **popen)


def test_the_executable_exits_2_for_a_remote_host_and_0_on_ctrl_c(emulator_factory):
    refused = _run('--ros-args', '-p', 'host:=10.0.0.1')
    out, err = refused.communicate(timeout=60)
    assert refused.returncode == 2
    assert err.strip().splitlines() == [
        "sensor_bridge: parameter host: host '10.0.0.1' resolves to 10.0.0.1, which is not a "
        'loopback address: the simulator listens on 127.0.0.1 only']

    emulator = emulator_factory(vehicles=('polaris',), lockstep=True)
    running = _run('--ros-args', '-p', f'port:={emulator.sensor_ports[0]}')
    try:
        wait_until(lambda: emulator.streams[0].has_client, 60.0, 'the executable to connect')
        running.send_signal(signal.SIGINT)
        out, err = running.communicate(timeout=30)
    finally:
        if running.poll() is None:
            running.kill()
    assert running.returncode == 0, err
    assert 'Traceback' not in err
    assert emulator.streams[0].wait_disconnected(10.0)
