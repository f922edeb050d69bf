# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
tools/bare_reader.py, the floor of the Foxglove view's benchmark, takes every message it claims.

It runs as tools/bench_foxglove_view.py runs it: a process of its own, given topic names, here
those of two publishers of this test. It must subscribe only once each topic has a publisher,
with a QoS that matches it, and count every message delivered before its stop.
"""

import json
import os
import queue
import signal
import subprocess
import sys
import threading

import pytest
from support.tools import TOOLS

pytestmark = pytest.mark.ros
BARE_READER = os.path.join(TOOLS, 'bare_reader.py')


def _lines(process: subprocess.Popen) -> queue.Queue:
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in process.stdout:
            lines.put(line.strip())

    threading.Thread(target=read, name='bare-reader-out', daemon=True).start()
    return lines


def _next_line(lines: queue.Queue, process: subprocess.Popen, timeout_s: float) -> str:
    try:
        return lines.get(timeout=timeout_s)
    except queue.Empty:
        pytest.fail(f'bare_reader said nothing within {timeout_s} s '
                    f'(exit code {process.poll()})')


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
    process = subprocess.Popen(
        [sys.executable, BARE_READER, '/bare_reader_test/clock', '/bare_reader_test/imu'],
        stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        lines = _lines(process)
        assert _next_line(lines, process, 60.0) == 'subscribed'
        for _ in range(7):
            clock.publish(Clock())
        imu.publish(Imu())
        # Acknowledged by the reader: in its history, so taken at the latest at the stop.
        assert clock.wait_for_all_acked(rclpy.duration.Duration(seconds=30))
        assert imu.wait_for_all_acked(rclpy.duration.Duration(seconds=30))
        process.send_signal(signal.SIGINT)
        counts = json.loads(_next_line(lines, process, 30.0))
        assert counts == {'/bare_reader_test/clock': 7, '/bare_reader_test/imu': 2}
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        node.destroy_node()
