# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The ``sim_control`` executable: the control channel as ROS services and an action (control/)."""

from collections.abc import Callable
import sys

from rclpy.executors import Executor
from rclpy.executors import SingleThreadedExecutor

from acres_bridge.control.sim_control_node import SimControlNode
from acres_bridge.runtime.process import run_until_shutdown


def main(args: list[str] | None = None) -> int:
    """Run sim_control until Ctrl-C or shutdown; 2 for a bad parameter."""
    def build(executor: Executor) -> Callable[[], None]:
        node = SimControlNode()
        executor.add_node(node)
        return node.destroy_node

    return run_until_shutdown('sim_control', SingleThreadedExecutor, build, args)


if __name__ == '__main__':
    sys.exit(main())
