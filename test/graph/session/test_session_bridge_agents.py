# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Which agent is agent 0, and when frame ids carry agent names, in the acres_bridge session.

Agent 0 is the agent whose ``index`` in hello is 0 (it alone publishes /clock), and "more than
one agent" counts every agent of hello, also those without a sensor stream.
"""

import threading

import pytest
from rclpy.executors import MultiThreadedExecutor
from rclpy.parameter import Parameter
from support.sensor_bridge_graph import AGENT_TOPICS
from support.sensor_bridge_graph import GLOBAL_TOPICS
from support.sensor_bridge_graph import Recorder
from support.sensor_bridge_graph import streaming
from support.sensor_bridge_graph import wait_matched
from support.sensor_bridge_graph import wait_until

from acres_bridge.session.bridge import session_layout
from acres_bridge.session.bridge import SessionBridge
from acres_bridge.session.bridge import SessionLayout

pytestmark = pytest.mark.ros


def test_agent_0_is_index_0_and_every_agent_counts():
    hello = {'agents': [{'name': 'maxxum', 'index': 1, 'sensor_stream': 5602},
                        {'name': 'polaris', 'index': 0, 'sensor_stream': 0},
                        {'name': 'ghost', 'index': 2, 'sensor_stream': 0}]}
    layout = session_layout(hello, ())
    assert layout == SessionLayout((('maxxum', 5602),), 3, 'polaris')
    assert layout.several
    # The sensor_ports parameter goes in index order, over agents with or without a stream.
    assert session_layout(hello, (6001, 6002)).streams == (('polaris', 6001), ('maxxum', 6002))
    one = session_layout({'agents': [{'name': 'polaris', 'index': 0, 'sensor_stream': 5601}]},
                         ())
    assert one == SessionLayout((('polaris', 5601),), 1, 'polaris') and not one.several
    # Without indices, the list order of the seed (agent 0 first).
    unnumbered = session_layout({'agents': [{'name': 'a', 'sensor_stream': 5601},
                                            {'name': 'b', 'sensor_stream': 5602}]}, ())
    assert unnumbered == SessionLayout((('a', 5601), ('b', 5602)), 2, 'a')
    assert session_layout({}, ()) == SessionLayout((), 0, None)


@pytest.fixture
def session(ros_context, emulator_factory):
    """A two-agent emulator whose agent 0 has no sensor stream, and the session under test."""
    emulator = emulator_factory(vehicles=('polaris', 'maxxum'), sensor_ports=(None, 0),
                                lockstep=True, drive='hold')
    executor = MultiThreadedExecutor(num_threads=2, context=ros_context)
    bridge = SessionBridge(executor, context=ros_context, parameter_overrides=[
        Parameter('port', value=emulator.control_port)])
    recorder = Recorder(ros_context, {**{f'/maxxum/{topic}': kind
                                         for topic, kind in AGENT_TOPICS.items()},
                                      **GLOBAL_TOPICS})
    executor.add_node(recorder.node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        yield emulator, bridge, recorder
    finally:
        executor.shutdown(timeout_sec=5.0)
        bridge.destroy()
        recorder.node.destroy_node()
        spinner.join(timeout=5.0)


def test_without_a_stream_for_agent_0_nothing_publishes_clock_and_names_are_prefixed(session):
    emulator, bridge, recorder = session
    wait_until(lambda: len(bridge.bridges) == 1 and streaming(bridge.bridges[0]),
               what="the maxxum's stream to connect and send its Hello")
    [maxxum] = bridge.bridges
    assert maxxum.name == 'maxxum'
    assert '/clock' not in maxxum.publishers
    assert maxxum.parameters.frame_prefix == 'maxxum'   # two agents in hello, one stream
    # Matched, not only discovered: the world holds still after the step, so a message
    # published before the match would be the last one (once seen under load).
    stepped = [publisher for publisher in maxxum.publishers.values()
               if publisher.topic_name in ('/maxxum/lidar/points', '/maxxum/ins/fix')]
    assert len(stepped) == 2
    wait_matched(stepped)
    # The session holds the emulator's one control client: step through it.
    assert bridge.control.control.request('step', steps=12, timeout_s=20.0)['result'] == 1
    recorder.wait_counts({'/maxxum/lidar/points': 1, '/maxxum/ins/fix': 10})
    [cloud] = recorder.messages['/maxxum/lidar/points']
    assert cloud.header.frame_id == 'maxxum/lidar'
    assert recorder.messages['/maxxum/ins/fix'][0].header.frame_id == 'maxxum/base_footprint'
    assert recorder.node.count_publishers('/clock') == 0
    assert recorder.count('/clock') == 0
