# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The ``foxglove_view`` executable: the ROS graph served to Foxglove clients (foxglove/)."""

from rclpy.executors import Executor
try:
    from rclpy.experimental import EventsExecutor as ViewExecutor
except ImportError:  # Humble has no EventsExecutor
    from rclpy.executors import SingleThreadedExecutor as ViewExecutor

from acres_bridge.foxglove.view import FoxgloveViewNode
from acres_bridge.runtime.heap import keep_freed_buffers
from acres_bridge.runtime.process import run_until_shutdown

# A stop still going after this long writes every thread's Python stack to stderr (the launch
# log): ros2 launch sends SIGTERM 5 s after SIGINT, which ends the process where it stands.
STOP_REPORT_S = 4.0


def main(args: list[str] | None = None) -> int:
    """
    Run the foxglove_view node until Ctrl-C; 2 with one line on stderr for a bad parameter.

    The executor (rclpy's EventsExecutor from Jazzy on) runs the graph's timers and the service
    calls; the messages go through the readers' thread. Every message is copied twice on its way
    (from Fast DDS, into a Python bytes), so freed buffers stay in the heap for the next
    (:mod:`acres_bridge.runtime.heap`).
    """
    keep_freed_buffers()

    def build(executor: Executor):
        node = FoxgloveViewNode()
        executor.add_node(node)
        return node.destroy_node

    return run_until_shutdown('foxglove_view', ViewExecutor, build, args,
                              report_stop_after_s=STOP_REPORT_S)


if __name__ == '__main__':
    raise SystemExit(main())
