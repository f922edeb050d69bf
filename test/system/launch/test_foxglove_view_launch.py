# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
``ros2 launch acres_bridge emulator_session.launch.py view:=foxglove``, as a user runs it.

A Foxglove protocol client connects to the view of the launch, receives clouds, images and
/clock, and steps the lockstep session through the view's step_simulation service.
"""

import pytest
from rclpy.serialization import deserialize_message
from rclpy.serialization import serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image
from sensor_msgs.msg import PointCloud2
from simulation_interfaces.msg import Result
from simulation_interfaces.srv import StepSimulation

from acres_devkit.clients.foxglove_client import FoxgloveClient
from acres_devkit.clients.foxglove_client import wait_for_channels
from acres_devkit.ports import free_ports
from acres_devkit.ros2_tools import assert_clean_exit
from acres_devkit.ros2_tools import Background
from acres_devkit.ros2_tools import PACKAGE
from acres_devkit.ros2_tools import stop_daemon

pytestmark = [pytest.mark.ros, pytest.mark.ros2_tools]
TOPICS = ('/clock', '/polaris/lidar/points', '/polaris/camera/image_raw')
STEPS = 30


def _stamps(client: FoxgloveClient, topic: str, message_type: type) -> list[float]:
    """Return the stamps (s) of the messages of a topic the client received."""
    stamps = []
    for _, payload in client.messages[topic]:
        message = deserialize_message(payload, message_type)
        stamp = message.clock if message_type is Clock else message.header.stamp
        stamps.append(stamp.sec + stamp.nanosec * 1e-9)
    return stamps


def test_the_launched_view_serves_the_session_and_steps_it() -> None:
    control_port, sensor_port = free_ports(2)
    launch = Background(['ros2', 'launch', PACKAGE, 'emulator_session.launch.py',
                         f'port:={control_port}', f'sensor_ports:={sensor_port}',
                         'lockstep:=true', 'view:=foxglove', 'view_port:=0'])
    client = None
    try:
        url = launch.wait_for(r'Foxglove view on (ws://127\.0\.0\.1:\d+) ', timeout_s=60.0)[1]
        launch.wait_for(r'sensor stream polaris: hello from agent', timeout_s=60.0)
        wait_for_channels(url, TOPICS, timeout_s=60.0)
        client = FoxgloveClient(url)
        client.subscribe(*TOPICS)
        request = StepSimulation.Request()
        request.steps = STEPS
        # Two steps, as a user clicks them right after subscribing: the view lets its new
        # readers match the bridge's writers before it forwards a call, so both arrive whole.
        for _ in range(2):
            verdict, payload = client.call('/step_simulation', serialize_message(request))
            assert verdict == 'cdr', payload
            response = deserialize_message(payload, StepSimulation.Response)
            assert response.result.result == Result.RESULT_OK, response.result.error_message
        # 60 steps of 1/120 s (the game's physics) end at 0.5 s: clouds and images at 0.1 s
        # intervals of simulation time (10 Hz), and the clocks in order.
        # (Counted, not decoded, while waiting: the reader thread waits for the same lock.)
        client.wait(lambda: client.counts['/polaris/lidar/points'] >= 5
                    and client.counts['/polaris/camera/image_raw'] >= 5
                    and client.counts['/clock'] >= 2 * STEPS, 60.0,
                    '0.5 s of clocks, clouds and images')
        for topic, message_type in (('/polaris/lidar/points', PointCloud2),
                                    ('/polaris/camera/image_raw', Image)):
            stamps = _stamps(client, topic, message_type)
            assert [round(stamp, 6) for stamp in stamps] == [0.1, 0.2, 0.3, 0.4, 0.5], topic
        clocks = _stamps(client, '/clock', Clock)
        assert len(clocks) == 2 * STEPS and all(
            round(later - earlier, 6) == round(1 / 120, 6)
            for earlier, later in zip(clocks, clocks[1:])), clocks
        # The server's time follows /clock: the view sends it on a 0.25 s timer, so it
        # reaches the last clock of the steps within a period after the view took it.
        last = deserialize_message(client.messages['/clock'][-1][1], Clock).clock
        last_clock_ns = last.sec * 10**9 + last.nanosec
        client.wait(lambda: client.times and client.times[-1] == last_clock_ns, 10.0,
                    f'the server time of the last clock, {last_clock_ns} ns')
        client.close()
        client = None
        code = launch.interrupt()
        assert_clean_exit(launch, code, ['acres_sim_emulator', 'acres_bridge', 'foxglove_view'])
    finally:
        if client is not None:
            client.close()
        launch.kill()
        stop_daemon()
