# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The ``sensor_bridge`` executable: one agent's sensor stream to ROS topics (sensors/)."""

from collections.abc import Callable
import sys

from rclpy.executors import Executor
from rclpy.executors import SingleThreadedExecutor

from acres_bridge.runtime.process import run_until_shutdown
from acres_bridge.sensors.sensor_node import SensorBridgeNode


def main(args: list[str] | None = None) -> int:
    """Run the sensor_bridge node until Ctrl-C or shutdown; 2 for a bad parameter."""
    def build(executor: Executor) -> Callable[[], None]:
        node = SensorBridgeNode()
        executor.add_node(node)
        return node.destroy_node

    return run_until_shutdown('sensor_bridge', SingleThreadedExecutor, build, args)


if __name__ == '__main__':
    sys.exit(main())
