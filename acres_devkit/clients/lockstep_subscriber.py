# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A subscriber process for the lockstep tests: every topic of a step, one line per message.

``python lockstep_subscriber.py NODE_NAME reliable|best_effort AGENT...`` subscribes (keep-last
1000, raw) to /clock and each agent's INS, cloud, image, camera info and barrier topics, prints
``matched`` once each subscription has a publisher, then ``<topic> <received_ns>`` for each
message, where received_ns is when DDS received it (system clock, MessageInfo), not when the
callback ran. It stops on SIGTERM or SIGINT.
"""

import signal
import sys

from acres_interfaces.msg import StepBarrier
from nav_msgs.msg import Odometry
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo
from sensor_msgs.msg import Image
from sensor_msgs.msg import Imu
from sensor_msgs.msg import NavSatFix
from sensor_msgs.msg import PointCloud2

AGENT_TOPICS = {'ins/fix': NavSatFix, 'ins/imu': Imu, 'ins/odometry': Odometry,
                'ground_truth/odometry': Odometry, 'lidar/points': PointCloud2,
                'camera/image_raw': Image, 'camera/camera_info': CameraInfo,
                'step_barrier': StepBarrier}


def step_topics(agents: list[str]) -> dict[str, type]:
    """Return every topic of a lockstep step of these agents and its type."""
    topics = {'/clock': Clock}
    for agent in agents:
        topics.update({f'/{agent}/{name}': kind for name, kind in AGENT_TOPICS.items()})
    return topics


def take_waiting(subscriptions) -> None:
    """
    Take what each subscription holds now and hand it to its callback.

    What a lockstep client does when a step's answer arrives: the step's messages are there.
    Called on the executor's thread, which then finds nothing left to take for them.
    """
    for subscription in subscriptions:
        take = subscription.handle.take_message
        while (taken := take(subscription.msg_type, subscription.raw)) is not None:
            subscription.callback(*taken)


def main(argv: list[str]) -> int:
    name, reliability, *agents = argv
    policy = (ReliabilityPolicy.RELIABLE if reliability == 'reliable'
              else ReliabilityPolicy.BEST_EFFORT)
    qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000, reliability=policy)
    signal.signal(signal.SIGTERM, lambda *_: rclpy.try_shutdown())
    rclpy.init()
    node = rclpy.create_node(name)

    def record(topic: str):
        def on_message(message: bytes, info) -> None:
            print(f'{topic} {info["received_timestamp"]}', flush=True)
        return on_message

    subscriptions = [node.create_subscription(kind, topic, record(topic), qos, raw=True)
                     for topic, kind in step_topics(agents).items()]

    def matched() -> None:
        if all(subscription.get_publisher_count() for subscription in subscriptions):
            print('matched', flush=True)
            timer.cancel()

    timer = node.create_timer(0.05, matched)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
