# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
/clock is the world time of the frames' stamps, not the Clock payload's vehicle time.

"The stamp is the vehicle time plus a constant offset" (seed 000): the emulator gives each agent
a nonzero offset, so a bridge that published the payload on /clock fails here. Real sockets,
a real rclpy graph.
"""

import pytest
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from support.emulator_probe import JsonChannel
from support.sensor_bridge_graph import Recorder
from support.sensor_bridge_graph import streaming
from support.sensor_bridge_graph import wait_matched
from support.sensor_bridge_graph import wait_until
from support.wire_tap import WireTap

from acres_bridge.conversions.clock import stamp_to_time
from acres_bridge.protocol.frames import ClockFrame
from acres_bridge.sensors.sensor_node import SensorBridgeNode

pytestmark = pytest.mark.ros


@pytest.mark.parametrize('mode', ['game', 'core'])
def test_clock_carries_the_stamps_and_not_the_vehicle_time(emulator_factory, ros_context,
                                                           spinning, mode):
    emulator = emulator_factory(vehicles=('polaris',), lockstep=True, mode=mode)
    tap = WireTap(emulator.sensor_ports[0])
    node = spinning.add(SensorBridgeNode(
        context=ros_context, parameter_overrides=[Parameter('port', value=tap.port)]))
    recorder = Recorder(ros_context, {'/clock': Clock})
    spinning.add(recorder.node)
    try:
        wait_until(lambda: streaming(node.bridge), what='the Hello')
        wait_matched([node.bridge.publishers['/clock']])
        channel = JsonChannel(emulator.control_port)
        assert channel.call('step', steps=12)['result'] == 1
        channel.close()
        recorder.wait_counts({'/clock': 12})
        published = [message.clock for message in recorder.messages['/clock']]
    finally:
        spinning.shutdown()
        node.destroy_node()
        recorder.node.destroy_node()
        tap.close()
    frames = tap.of(ClockFrame)
    assert len(frames) == 12
    offsets = {frame.header.stamp_s - frame.vehicle_time_s for frame in frames}
    # One constant offset, and not zero: otherwise this test could not tell the two apart.
    assert len(offsets) == 1 and abs(offsets.pop()) > 1.0
    assert published == [stamp_to_time(frame.header.stamp_s) for frame in frames]
    assert all(message != stamp_to_time(frame.vehicle_time_s)
               for message, frame in zip(published, frames))
