# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
acres_devkit/clients/bare_reader.py, the Foxglove view benchmark's floor, takes all it claims.

It runs as tools/bench_foxglove_view.py runs it: a process of its own, given topic names, here
those of two publishers of this test. It must subscribe only once each topic has a publisher,
with a QoS that matches it, and count every message delivered before its stop.
"""

import json
import sys

import pytest

from acres_devkit.clients import CLIENTS
from acres_devkit.ros2_tools import Background

pytestmark = pytest.mark.ros
BARE_READER = str(CLIENTS / 'bare_reader.py')


def test_the_bare_reader_counts_every_message_of_each_topic(ros_context):
    import rclpy
    from rclpy.qos import DurabilityPolicy
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import Imu
    node = rclpy.create_node('bare_reader_test', context=ros_context)
    reliable = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    clock = node.create_publisher(Clock, '/bare_reader_test/clock', reliable)
    imu = node.create_publisher(Imu, '/bare_reader_test/imu', latched)
    imu.publish(Imu())     # before the reader: only a transient-local reader gets it
    reader = Background([sys.executable, BARE_READER, '/bare_reader_test/clock',
                         '/bare_reader_test/imu'])
    try:
        reader.wait_for(r'^subscribed$', timeout_s=60.0)
        for _ in range(7):
            clock.publish(Clock())
        imu.publish(Imu())
        # Acknowledged by the reader: in its history, so taken at the latest at the stop.
        assert clock.wait_for_all_acked(rclpy.duration.Duration(seconds=30))
        assert imu.wait_for_all_acked(rclpy.duration.Duration(seconds=30))
        assert reader.interrupt() == 0
        counts = json.loads([line for line in reader.lines() if line.startswith('{')][-1])
        assert counts == {'/bare_reader_test/clock': 7, '/bare_reader_test/imu': 2}
    finally:
        reader.kill()
        node.destroy_node()
