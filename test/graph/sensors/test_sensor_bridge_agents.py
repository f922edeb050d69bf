# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Several agents in one process and one executor: bridges attached to one node, the lockstep hook.

This is how the ``acres_bridge`` executable hosts a session: one node, a ``SensorBridge`` per
agent under the agent's namespace with the agent's frame prefix, ``/clock`` from agent 0
only, one ``/tf_static`` and one ``/diagnostics`` for all.
"""

import concurrent.futures
import threading

import pytest
from rclpy.node import Node
from rclpy.parameter import Parameter
from support.emulator_probe import JsonChannel
from support.sensor_bridge_graph import AGENT_TOPICS
from support.sensor_bridge_graph import GLOBAL_TOPICS
from support.sensor_bridge_graph import Recorder
from support.sensor_bridge_graph import streaming
from support.sensor_bridge_graph import wait_matched
from support.sensor_bridge_graph import wait_until
from support.wire_tap import WireTap

from acres_bridge.conversions.clock import stamp_to_time
from acres_bridge.lockstep.coordinator import Lockstep
from acres_bridge.protocol.frames import ClockFrame
from acres_bridge.sensors.parameters import sensor_bridge_parameters_from_values
from acres_bridge.sensors.publishers import SharedPublishers
from acres_bridge.sensors.sensor_node import SensorBridge
from acres_bridge.sensors.sensor_node import SensorBridgeNode

pytestmark = pytest.mark.ros
AGENTS = ('polaris', 'maxxum')


def _agent_topics() -> dict[str, type]:
    return {f'/{agent}/{topic}': kind for agent in AGENTS for topic, kind in AGENT_TOPICS.items()}


def _counts(steps_of_12: int) -> dict[str, int]:
    counts = {'/clock': 12 * steps_of_12}
    for agent in AGENTS:
        counts.update({f'/{agent}/ins/fix': 10 * steps_of_12,
                       f'/{agent}/lidar/points': steps_of_12,
                       f'/{agent}/camera/image_raw': steps_of_12,
                       f'/{agent}/step_barrier': steps_of_12})
    return counts


@pytest.fixture
def session(ros_context, spinning, emulator_factory):
    """Two bridges on one node 'acres_bridge', started, with a recorder."""
    emulator = emulator_factory(vehicles=AGENTS, lockstep=True)
    node = Node('acres_bridge', context=ros_context)
    shared = SharedPublishers(node)
    base = sensor_bridge_parameters_from_values({'reconnect_s': 0.1})
    taps = {agent: WireTap(port) for agent, port in zip(AGENTS, emulator.sensor_ports)}
    bridges = [
        SensorBridge(node, base.replace(port=taps[agent].port, frame_prefix=agent,
                                        publish_clock=index == 0),
                     namespace=agent, shared=shared)
        for index, agent in enumerate(AGENTS)]
    recorder = Recorder(ros_context, {**_agent_topics(), **GLOBAL_TOPICS})
    spinning.add(node)
    spinning.add(recorder.node)
    for bridge in bridges:
        bridge.start()
    wait_until(lambda: all(streaming(bridge) for bridge in bridges), what='the Hellos')
    wait_matched(publisher for bridge in bridges for publisher in bridge.publishers.values())
    yield emulator, node, bridges, taps, recorder, spinning
    # Nodes are destroyed once nothing spins them: rclpy's wait set races with destruction.
    spinning.shutdown()
    for bridge in bridges:
        bridge.destroy()
    shared.destroy()
    for each in (node, recorder.node):
        each.destroy_node()
    for tap in taps.values():
        tap.close()


def test_each_agent_publishes_under_its_name_and_clock_comes_from_agent_0(session):
    emulator, node, bridges, taps, recorder, spinning = session
    assert [bridge.name for bridge in bridges] == list(AGENTS)
    assert sorted(bridges[0].publishers) == sorted(
        ['/clock'] + [f'polaris/{topic}' for topic in AGENT_TOPICS])
    assert '/clock' not in bridges[1].publishers
    reply = JsonChannel(emulator.control_port).call('step', steps=12)
    assert reply['result'] == 1
    recorder.wait_counts(_counts(1))
    messages = recorder.messages
    assert recorder.node.count_publishers('/clock') == 1
    assert [m.clock for m in messages['/clock']] == [
        stamp_to_time(frame.header.stamp_s) for frame in taps['polaris'].of(ClockFrame)]
    [polaris] = messages['/polaris/lidar/points']
    [maxxum] = messages['/maxxum/lidar/points']
    assert (polaris.height, polaris.width, polaris.header.frame_id) == (1800, 32, 'polaris/lidar')
    assert (maxxum.height, maxxum.width, maxxum.header.frame_id) == (180, 8, 'maxxum/lidar')
    assert polaris.header.stamp == maxxum.header.stamp   # one world clock for all streams
    assert messages['/maxxum/ins/fix'][0].header.frame_id == 'maxxum/base_footprint'
    assert messages['/polaris/camera/image_raw'][0].header.frame_id == (
        'polaris/camera_optical_frame')

    # One latched /tf_static holds both agents' trees.
    static = recorder.wait_for('/tf_static', lambda m: len(m.transforms) == 12)
    children = {t.child_frame_id for t in static.transforms}
    assert {'polaris/lidar', 'maxxum/lidar', 'polaris/camera_optical_frame',
            'maxxum/gnss'} <= children

    # One /diagnostics array with a status per stream.
    def both(message) -> bool:
        return len(message.status) == 2
    statuses = recorder.wait_for('/diagnostics', both).status
    assert [status.name for status in statuses] == [
        'acres_bridge: polaris sensor stream', 'acres_bridge: maxxum sensor stream']
    assert [status.hardware_id for status in statuses] == [
        f'127.0.0.1:{taps[agent].port}' for agent in AGENTS]


def test_a_cloud_goes_out_while_the_image_that_came_with_it_is_still_in_rmw(
        session, monkeypatch):
    """
    A step's camera and LiDAR frames arrive back to back; each type has a sensor-tx thread.

    With one thread for both, the cloud waited for the image's publication (0.5 ms at 10x, the
    cloud's median hand-off was 0.6-0.7 ms). Here every image publication is held until the
    clouds are out: with one thread they never would be.
    """
    from acres_bridge.sensors import outbox
    emulator, node, bridges, taps, recorder, spinning = session
    images = {id(bridge.publishers[f'{bridge.name}/camera/image_raw']) for bridge in bridges}
    release = threading.Event()
    publish = outbox.publish_serialised

    def held_for_images(publisher, data) -> None:
        if id(publisher) in images:
            release.wait(30.0)
        publish(publisher, data)

    monkeypatch.setattr(outbox, 'publish_serialised', held_for_images)
    try:
        assert JsonChannel(emulator.control_port).call('step', steps=12)['result'] == 1
        recorder.wait_counts({f'/{agent}/lidar/points': 1 for agent in AGENTS})
        assert [recorder.count(f'/{agent}/camera/image_raw') for agent in AGENTS] == [0, 0]
    finally:
        release.set()
    recorder.wait_counts(_counts(1))


def _lockstep(node, bridges, barrier_timeout_s: float = 30.0) -> tuple[Lockstep, list]:
    lockstep = Lockstep(node, barrier_timeout_s=barrier_timeout_s, ack_timeout_s=10.0)
    streams = [lockstep.stream(bridge.name, bridge.topic_namespace, bridge.barriers,
                               bridge.step_publishers)
               for bridge in bridges]
    return lockstep, streams


def test_lockstep_tells_when_every_stream_published_its_barrier_and_was_acknowledged(session):
    emulator, node, bridges, taps, recorder, spinning = session
    channel = JsonChannel(emulator.control_port)
    lockstep, streams = _lockstep(node, bridges)
    try:
        pending = lockstep.step_delivered(12, streams)
        assert not pending.done()
        reply = channel.call('step', steps=12)
        assert reply['result'] == 1 and reply['barrier'] == 12
        report = pending.result(timeout=15.0)
        assert report.step == 12 and report.warning is None and report.late == {}
        assert [stream.stream for stream in report.streams] == list(AGENTS)
        assert [bridge.last_barrier[0] for bridge in bridges] == [12, 12]
        # The barrier comes after every frame of the step (test_lockstep_delivery.py checks
        # that a reader in another process has them all when a step answers).
        for bridge in bridges:
            by_type = bridge.stats['by_type']
            assert by_type['barrier']['published'] == 1 and by_type['lidar']['published'] == 1
            assert all(kind['published'] == kind['frames'] for kind in by_type.values())
        recorder.wait_counts(_counts(1))

        # A step already published completes at once; a later one when its barrier comes.
        assert lockstep.step_delivered(12, streams).result(timeout=15.0).step == 12
        later = lockstep.step_delivered(24, streams[1:])
        assert not later.done()
        assert channel.call('step', steps=12)['result'] == 1
        assert later.result(timeout=15.0).streams[0].stream == 'maxxum'
    finally:
        lockstep.destroy()

    # A barrier that never comes fails with every stream that lacks it.
    lockstep, streams = _lockstep(node, bridges, barrier_timeout_s=0.2)
    try:
        with pytest.raises(TimeoutError, match='no barrier of step 999 within 0.2 s on the '
                                               'sensor stream of maxxum, polaris'):
            lockstep.step_delivered(999, streams).result(timeout=15.0)
        cancelled = bridges[0].barriers.future(36)
        assert cancelled.cancel()
        assert channel.call('step', steps=12)['result'] == 1
        assert bridges[1].barriers.future(36).result(timeout=15.0) == 36
        assert cancelled.cancelled()
        assert lockstep.stats['failed_steps'] == 1
    finally:
        lockstep.destroy()
    with pytest.raises(concurrent.futures.CancelledError):
        cancelled.result(timeout=0)


def test_destroying_a_bridge_joins_its_reader_and_keeps_the_others_tree(session):
    emulator, node, bridges, taps, recorder, spinning = session
    recorder.wait_for('/tf_static', lambda m: len(m.transforms) == 12)
    assert bridges[1].client.running and bridges[0].client.running
    static_count = recorder.count('/tf_static')
    bridges[1].destroy()    # while the node spins
    assert not bridges[1].client.running
    assert bridges[0].client.running

    # Before the maxxum connected, /tf_static also held 6 transforms (the polaris's alone):
    # wait for a message that has only the polaris's after the destroy.
    def only_polaris(message) -> bool:
        return len(message.transforms) == 6 and all(
            t.child_frame_id.startswith('polaris/') for t in message.transforms)

    wait_until(lambda: any(only_polaris(message)
                           for message in recorder.messages['/tf_static'][static_count:]),
               what='a /tf_static without the maxxum')
    wait_until(lambda: recorder.node.count_publishers('/maxxum/lidar/points') == 0,
               what='the maxxum publishers to go')
    assert recorder.node.count_publishers('/polaris/lidar/points') == 1
    bridges[1].destroy()    # twice is harmless


def test_two_namespaced_sensor_bridge_nodes_share_one_executor(ros_context, spinning,
                                                               emulator_factory):
    emulator = emulator_factory(vehicles=AGENTS, lockstep=True)
    nodes = [SensorBridgeNode(context=ros_context, namespace=agent, parameter_overrides=[
        Parameter('port', value=port), Parameter('frame_prefix', value=agent),
        Parameter('publish_clock', value=index == 0)])
        for index, (agent, port) in enumerate(zip(AGENTS, emulator.sensor_ports))]
    recorder = Recorder(ros_context, {'/polaris/lidar/points': AGENT_TOPICS['lidar/points'],
                                      '/maxxum/lidar/points': AGENT_TOPICS['lidar/points'],
                                      '/clock': GLOBAL_TOPICS['/clock']})
    try:
        for each in (*nodes, recorder.node):
            spinning.add(each)
        assert [node.bridge.name for node in nodes] == list(AGENTS)
        wait_matched([nodes[0].bridge.publishers['lidar/points'],
                      nodes[1].bridge.publishers['lidar/points'],
                      nodes[0].bridge.publishers['/clock']])
        assert '/clock' not in nodes[1].bridge.publishers
        assert JsonChannel(emulator.control_port).call('step', steps=12)['result'] == 1
        recorder.wait_counts({'/polaris/lidar/points': 1, '/maxxum/lidar/points': 1,
                              '/clock': 12})
        assert recorder.messages['/maxxum/lidar/points'][0].width == 8
        assert all(node.bridge.barriers.future(12).result(timeout=15.0) == 12
                   for node in nodes)
    finally:
        spinning.shutdown()
        for each in (*nodes, recorder.node):
            each.destroy_node()
    assert not any(thread.name.startswith('sensor-rx:') for thread in threading.enumerate())
