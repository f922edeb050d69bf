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

"""The life of an executable's process, shared by the three nodes' ``main()``."""

from collections.abc import Callable
import signal
import sys
import threading

import rclpy
from rclpy.executors import Executor
from rclpy.executors import ExternalShutdownException

from acres_bridge.nodes import dds
from acres_bridge.nodes.parameters import ParameterError


def run_until_shutdown(program: str, executor_type: Callable[[], Executor],
                       build: Callable[[Executor], Callable[[], None]],
                       args: list[str] | None = None) -> int:
    """
    Initialise rclpy, build the nodes on an executor and spin until Ctrl-C or shutdown.

    Works the same on Humble, Jazzy and Kilted. The protocol clients report connections and
    bad frames through the log handler the nodes give them, into the nodes' ROS logs.
    Fast DDS gets the bridge's own settings (:mod:`acres_bridge.nodes.dds`) unless the user
    gave a profile; once the nodes exist, one log line says which configuration is in force.

    :param program: the executable's name, the first word of a parameter error.
    :param executor_type: makes the executor (after ``rclpy.init``).
    :param build: adds the nodes to the executor and returns what destroys them.
    :param args: command-line arguments for ``rclpy.init`` (default: ``sys.argv``).
    :return: 0, or 2 with one line on stderr for a parameter the nodes cannot run with.
    """
    configuration = dds.configure()
    rclpy.init(args=args)
    executor = executor_type()
    destroy = None
    try:
        try:
            # Fast DDS reads its profile when the first node creates the participant.
            destroy = build(executor)
        except ParameterError as exc:
            print(f'{program}: {exc}', file=sys.stderr)
            return 2
        finally:
            dds.restore(configuration)
        _log_configuration(program, configuration)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        # Ctrl-C shuts the context down under the executor; a take in flight then fails
        # (Jazzy's rclpy: "Unable to convert call argument"). After shutdown that is the end
        # of the process, not an error; before it, it is one.
        if rclpy.ok():
            raise
    finally:
        _quiet_interrupts()
        executor.shutdown()
        if destroy is not None:
            destroy()
        rclpy.try_shutdown()
    return 0


def _quiet_interrupts() -> None:
    """
    Let no further SIGINT interrupt the shutdown.

    Ctrl-C under ros2 launch brings two SIGINTs: the terminal's, then launch's own. The second
    must not raise KeyboardInterrupt in the middle of destroying the nodes.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, lambda signum, frame: None)


def _log_configuration(program: str, configuration: dds.Configuration) -> None:
    logger = rclpy.logging.get_logger(program)
    logger.info(configuration.summary)
    for warning in configuration.warnings:
        logger.warning(warning)
    mismatch = dds.check_loaded(configuration)
    if mismatch is not None:
        logger.warning(mismatch)
