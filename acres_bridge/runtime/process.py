# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""The life of an executable's process, shared by the nodes' ``main()``."""

from collections.abc import Callable
import concurrent.futures
import faulthandler
import sys

import rclpy
from rclpy.executors import Executor
from rclpy.executors import ExternalShutdownException
from rclpy.signals import SignalHandlerOptions

from acres_bridge.runtime import dds
from acres_bridge.runtime.parameters import ParameterError
from acres_bridge.runtime.stop_request import StopRequest

# How long the executor waits for work before the main thread looks at the stop request again.
# A signal wakes the executor at once (StopRequest), and so does a context shut down by another
# thread (a sensor child's channel closing), so this bounds only a stop that neither brought.
# Each wake of a SingleThreadedExecutor rebuilds its wait set in Python, which a short period
# pays for even in an idle process (docs/benchmarks.md, "Throughput per core", has the cost).
SPIN_PERIOD_S = 2.0


def run_until_shutdown(program: str, executor_type: Callable[[], Executor],
                       build: Callable[[Executor], Callable[[], None]],
                       args: list[str] | None = None, *,
                       report_stop_after_s: float | None = None) -> int:
    """
    Initialise rclpy, build the nodes on an executor and spin until Ctrl-C, SIGTERM or shutdown.

    Works the same on Humble, Jazzy and Kilted. The protocol clients report connections and
    bad frames through the log handler the nodes give them, into the nodes' ROS logs.
    Fast DDS gets the bridge's own settings (:mod:`acres_bridge.runtime.dds`) unless the user
    gave a profile; once the nodes exist, one log line says which configuration is in force.

    rclpy's own signal handlers are not installed: on a signal they shut the context down from
    a thread of their own, which races with the main thread destroying the nodes (Ctrl-C under
    ``ros2 launch`` brings two SIGINTs a few milliseconds apart; Jazzy's rclpy crashed there
    once). Here a signal only asks for the stop, and the main thread alone stops the executor
    (once the callbacks its threads still run have returned), destroys the nodes (each joins its
    threads first) and then shuts the context down.

    :param program: the executable's name, the first word of a parameter error.
    :param executor_type: makes the executor (after ``rclpy.init``).
    :param build: adds the nodes to the executor and returns what destroys them.
    :param args: command-line arguments for ``rclpy.init`` (default: ``sys.argv``).
    :param report_stop_after_s: a stop still going after this long (the process not ended)
        writes every thread's Python stack to stderr, once: where a stop hangs.
    :return: 0, or 2 with one line on stderr for a parameter the nodes cannot run with.
    """
    configuration = dds.configure()
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = StopRequest()
    executor = executor_type()
    # A task, not executor.wake(): a wake alone only makes rclpy wait again.
    stop.install(wake=lambda: executor.create_task(_nothing))
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
        while not stop.requested and rclpy.ok():
            executor.spin_once(timeout_sec=SPIN_PERIOD_S)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        # A thread of the process (a sensor child's channel) may shut the context down under
        # the executor; a take in flight then fails (Jazzy's rclpy: "Unable to convert call
        # argument"). After shutdown that is the end of the process, not an error; before it,
        # it is one.
        if rclpy.ok():
            raise
    finally:
        stop.stopping()
        if report_stop_after_s is not None:
            # Not cancelled: the interpreter's own end (Fast DDS's destructors) is in the stop.
            faulthandler.dump_traceback_later(report_stop_after_s)
        stop.uninstall()
        _finish_callbacks(executor)
        executor.shutdown()
        if destroy is not None:
            destroy()
        rclpy.try_shutdown()
    return 0


def _nothing() -> None:
    """Do nothing: the task that makes ``spin_once`` return."""


def _finish_callbacks(executor: Executor) -> None:
    """
    Wait for the callbacks that the last ``spin_once`` gave the executor's threads.

    ``Executor.shutdown()`` does not wait for them (up to Kilted), and Jazzy's
    MultiThreadedExecutor never ends its thread pool (Kilted's does, but after shutdown()). A
    callback still running there meets the guard condition that shutdown() destroyed ("The
    following exception was never retrieved: cannot use Destroyable because destruction was
    requested") or nodes being destroyed. No callback starts now: nothing spins any more. The
    pool is the executor's private ``_executor``, only read here.
    """
    pool = getattr(executor, '_executor', None)
    if isinstance(pool, concurrent.futures.ThreadPoolExecutor):
        pool.shutdown(wait=True)


def _log_configuration(program: str, configuration: dds.Configuration) -> None:
    logger = rclpy.logging.get_logger(program)
    logger.info(configuration.summary)
    for warning in configuration.warnings:
        logger.warning(warning)
    mismatch = dds.check_loaded(configuration)
    if mismatch is not None:
        logger.warning(mismatch)
