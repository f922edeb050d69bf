# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The ``acres_bridge`` executable: a whole session, every agent and sim_control (session/)."""

from collections.abc import Callable
import sys

from rclpy.executors import Executor
from rclpy.executors import MultiThreadedExecutor

from acres_bridge.runtime.process import run_until_shutdown
from acres_bridge.session.bridge import SessionBridge


def main(args: list[str] | None = None) -> int:
    """Run a whole session until Ctrl-C or shutdown; 2 for a bad parameter."""
    def build(executor: Executor) -> Callable[[], None]:
        return SessionBridge(executor).destroy

    return run_until_shutdown('acres_bridge', lambda: MultiThreadedExecutor(num_threads=2),
                              build, args)


if __name__ == '__main__':
    sys.exit(main())
