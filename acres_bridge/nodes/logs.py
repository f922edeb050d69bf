# Copyright 2026 The acres_bridge authors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

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
