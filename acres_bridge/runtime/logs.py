# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The protocol layer's reports in a node's ROS log: one line each, nothing muted."""

import logging
from typing import Callable

from rclpy.impl.rcutils_logger import RcutilsLogger


def protocol_log(logger: RcutilsLogger) -> Callable[[int, str], None]:
    """
    Return a ``log(level, text)`` handler for the protocol clients that writes to ``logger``.

    :param logger: the node's logger (``node.get_logger()``).
    :return: the handler; ``level`` is a Python ``logging`` level.
    """
    def log(level: int, text: str) -> None:
        if level >= logging.ERROR:
            logger.error(text)
        elif level >= logging.WARNING:
            logger.warning(text)
        elif level >= logging.INFO:
            logger.info(text)
        else:
            logger.debug(text)

    return log
