# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The sensor_bridge node under faults the other sensor bridge tests leave out.

A FaultProxy sits between a playing emulator and a SensorBridgeNode. Each test breaks the
stream once and checks the node stays up, says what happened (its log and ``/diagnostics``),
and publishes valid data again: a cloud of the Hello's layout. (Bad magic, a cut frame, a
lying length and a restarted simulator are in ``test_sensor_bridge_faults.py``.)
"""

import gc
import os
import subprocess
import sys
import threading
import tracemalloc

from diagnostic_msgs.msg import DiagnosticStatus
import pytest
from rclpy.parameter import Parameter
from support import paths
from support.sensor_bridge_graph import AGENT_TOPICS
from support.sensor_bridge_graph import GLOBAL_TOPICS
from support.sensor_bridge_graph import Recorder
from support.sensor_bridge_graph import wait_hellos
from support.sensor_bridge_graph import wait_matched
from support.sensor_bridge_graph import wait_until

from acres_bridge.emulator.faults import FaultProxy
from acres_bridge.protocol.frames import FrameType
from acres_bridge.sensors.sensor_node import SensorBridgeNode

pytestmark = pytest.mark.ros
TOPICS = {**AGENT_TOPICS, **GLOBAL_TOPICS}
EMULATOR = {'drive': 'hold', 'render_every': 10}
WAIT_S = 15.0
CLOUD_BYTES = 1800 * 32 * 16


def _values(message) -> dict[str, str]:
    [status] = message.status
    return {value.key: value.value for value in status.values}


class Rig:
    """An emulator, a proxy in front of its stream, a SensorBridgeNode and a recorder."""

    def __init__(self, context, spinning, port: int, name: str = 'sensor_bridge') -> None:
        self.node = SensorBridgeNode(
            name, context=context,
            parameter_overrides=[Parameter('port', value=port),
                                 Parameter('reconnect_s', value=0.1)])
        self.recorder = Recorder(context, TOPICS, name=f'{name}_recorder')
        self._spinning = spinning
        spinning.add(self.node)
        spinning.add(self.recorder.node)

    def ready(self) -> 'Rig':
        wait_hellos(self.node.bridge, 1)
        wait_matched(self.node.bridge.publishers.values())
        self.clouds_after(0)
        return self

    def clouds_after(self, count: int) -> None:
        """Wait for a valid cloud beyond the first ``count`` ones."""
        self.recorder.wait_for('lidar/points', lambda message: (
            self.recorder.count('lidar/points') > count and len(message.data) == CLOUD_BYTES
            and (message.height, message.width) == (1800, 32)))

    def diagnostics(self, predicate) -> dict[str, str]:
        return _values(self.recorder.wait_for('/diagnostics',
                                              lambda message: predicate(_values(message))))

    def close(self) -> None:
        for node in (self.node, self.recorder.node):
            self._spinning.executor.remove_node(node)
            node.destroy_node()


@pytest.fixture
def rigs(ros_context, spinning):
    made = []

    def start(port: int, **options) -> Rig:
        rig = Rig(ros_context, spinning, port, **options)
        made.append(rig)
        return rig

    yield start
    for rig in made:
        rig.close()


@pytest.fixture
def proxied(emulator_factory, rigs):
    emulator = emulator_factory(**EMULATOR)
    with FaultProxy(emulator.sensor_ports[0], name='node') as proxy:
        yield emulator, proxy, rigs(proxy.port).ready()


def test_random_bytes_after_the_hello_reconnect_and_clouds_come_back(proxied, capfd):
    _, proxy, rig = proxied
    proxy.drop_all()
    wait_hellos(rig.node.bridge, 2)
    # Fires on the first frame after the new Hello: the bytes come right after it.
    assert proxy.inject('garbage', size=2000, seed=3).wait(WAIT_S)
    wait_hellos(rig.node.bridge, 3)
    rig.clouds_after(rig.recorder.count('lidar/points'))
    values = rig.diagnostics(lambda values: values['bad_frames'] == '1'
                             and values['connected'] == 'true')
    assert values['reconnects'] == '2' and values['last_bad_frame'].startswith('bad magic')
    assert 'bad frame (reconnecting): bad magic' in capfd.readouterr().err


def test_unknown_frame_type_is_counted_without_reconnecting(proxied):
    _, proxy, rig = proxied
    assert proxy.inject('unknown_type', frame_type=FrameType.INS, size=5000).wait(WAIT_S)
    clouds = rig.recorder.count('lidar/points')
    rig.clouds_after(clouds)
    values = rig.diagnostics(lambda values: values['unknown_frames'] == '1')
    assert values['reconnects'] == '0' and values['bad_frames'] == '0'
    assert values['connected'] == 'true' and values['sequence_gaps'] == '0'


def test_stalled_stream_stays_connected_and_resumes(proxied):
    _, proxy, rig = proxied
    fault = proxy.inject('stall', frame_type=FrameType.CLOCK)
    assert fault.wait(WAIT_S)
    # The status says so in words, not only in figures: the report that first says so was
    # made after every frame before the held one had arrived, however late it was delivered.
    stalled = rig.recorder.wait_for('/diagnostics', lambda message: any(
        'no frame for' in status.message for status in message.status), WAIT_S)
    assert stalled.status[0].level == DiagnosticStatus.WARN
    first = _values(stalled)
    # Two reports after it (reports arrive in the order they were made): the count stands.
    reports = 1 + next(index for index, message in enumerate(rig.recorder.messages[
        '/diagnostics']) if message is stalled)
    rig.recorder.wait_counts({'/diagnostics': reports + 2}, WAIT_S)
    last = _values(rig.recorder.messages['/diagnostics'][reports + 1])
    assert last['connected'] == 'true' and last['clock.frames'] == first['clock.frames']
    # Once the stats window (5 s) holds no frame, the rates say the stream is silent.
    silent = rig.diagnostics(lambda values: values['clock.rate_hz'] == '0.000'
                             and values['lidar.rate_hz'] == '0.000')
    assert silent['connected'] == 'true' and silent['reconnects'] == '0'
    stamps = rig.recorder.count('/clock')
    fault.release.set()
    rig.recorder.wait_counts({'/clock': stamps + 60})
    rig.clouds_after(rig.recorder.count('lidar/points'))
    clock = [message.clock.sec + message.clock.nanosec * 1e-9
             for message in rig.recorder.messages['/clock']]
    assert clock == sorted(clock)
    assert rig.node.bridge.stats['reconnects'] == 0


def test_dropped_connection_comes_back_and_diagnostics_say_so(proxied):
    _, proxy, rig = proxied
    assert proxy.inject('drop', frame_type=FrameType.CAMERA).wait(WAIT_S)
    wait_hellos(rig.node.bridge, 2)
    rig.clouds_after(rig.recorder.count('lidar/points'))
    values = rig.diagnostics(lambda values: values['reconnects'] == '1'
                             and values['connected'] == 'true')
    assert values['disconnects'] == '1' and values['bad_frames'] == '0'


def test_second_node_on_the_same_stream_waits_for_the_first(emulator_factory, rigs):
    emulator = emulator_factory(**EMULATOR)
    port = emulator.sensor_ports[0]
    first = rigs(port).ready()
    second = rigs(port, name='second_bridge')
    # Queued by the simulator: connected at the TCP level, but no Hello and no data.
    wait_until(lambda: second.node.bridge.connected, what='the queued connection')
    first.clouds_after(first.recorder.count('lidar/points'))
    assert second.node.bridge.stats['frames'] == 0
    # ...and its diagnostics say why nothing comes.
    waiting = second.recorder.wait_for('/diagnostics', lambda message: any(
        'no Hello' in status.message for status in message.status))
    assert {status.level for status in waiting.status if 'no Hello' in status.message} == {
        DiagnosticStatus.WARN}
    first.close()
    second.ready()
    assert second.node.bridge.stats['bad_frames'] == 0


def _emulator_process() -> tuple[subprocess.Popen, int]:
    root = str(paths.ROOT)
    process = subprocess.Popen(
        [sys.executable, '-m', 'acres_bridge.emulator', '--control-port', '0',
         '--sensor-ports', '0', '--drive', 'hold', '--render-every', '10'],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env=dict(os.environ, PYTHONPATH=root))
    line = process.stdout.readline().split()
    assert line and line[0] == 'ACRES_SIM_EMULATOR_READY', line
    return process, int(dict(item.split('=') for item in line[1:])['sensors'])


def test_memory_of_the_node_never_follows_a_claimed_length(rigs):
    # The simulator runs in its own process, so that this one traces only proxy and node.
    process, port = _emulator_process()
    try:
        with FaultProxy(port, name='memory') as proxy:
            rig = rigs(proxy.port).ready()
            gc.collect()
            tracemalloc.start()
            try:
                base, _ = tracemalloc.get_traced_memory()
                for count, kind in enumerate((FrameType.LIDAR, FrameType.CAMERA) * 3, start=2):
                    assert proxy.inject('huge_header', frame_type=kind).wait(WAIT_S)
                    wait_hellos(rig.node.bridge, count)
                rig.clouds_after(rig.recorder.count('lidar/points'))
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            assert rig.node.bridge.stats['bad_frames'] == 6
            # Six claims of 4 GiB each; a few frames in flight are all the memory may grow.
            assert peak - base < 64 << 20, (peak - base) >> 20
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_reader_thread_is_the_only_one_and_outlives_every_fault(proxied):
    _, proxy, rig = proxied
    for action in ('garbage', 'unknown_type', 'bad_magic', 'drop', 'cut'):
        assert proxy.inject(action, frame_type=FrameType.LIDAR).wait(WAIT_S)
    rig.clouds_after(rig.recorder.count('lidar/points'))
    readers = [thread.name for thread in threading.enumerate()
               if thread.name.startswith('sensor-rx:')]
    assert readers == ['sensor-rx:sensor_bridge']
    assert rig.node.bridge.connected
