# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The ``lidar_recorder`` executable: LiDAR clouds written as a dataset sequence (recording/)."""

from rclpy.executors import Executor
from rclpy.executors import SingleThreadedExecutor

from acres_bridge.recording.recorder_node import LidarRecorderNode
from acres_bridge.runtime.process import run_until_shutdown


def main(args: list[str] | None = None) -> int:
    """Run the lidar_recorder node until Ctrl-C; 2 with one line on stderr for a bad parameter."""
    def build(executor: Executor):
        node = LidarRecorderNode()
        executor.add_node(node)
        return node.destroy_node

    return run_until_shutdown('lidar_recorder', SingleThreadedExecutor, build, args)


if __name__ == '__main__':
    raise SystemExit(main())
