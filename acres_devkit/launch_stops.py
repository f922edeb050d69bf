# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
One Ctrl-C stop of a launch file, checked as a user sees it (test_launch_stops, stop_loop).

:func:`stop_once` starts ``ros2 launch acres_bridge <file>`` of the prefix in a process group
of its own (as a terminal does), against an emulator it starts unless the launch starts its
own, and waits until a client of its own has received a message on ``/clock`` and on every
agent's ``lidar/points`` (in lockstep, the client steps the simulation, and goes on stepping
through the stop). Then it sends SIGINT to the process group, as a terminal's Ctrl-C does,
and lists everything that was not clean: an exit code other than 0 of launch, of a process
launch started or of a sensor process of acres_bridge; a process of the session left
running; a traceback or a fatal signal in the output.
"""

from collections.abc import Callable
import dataclasses
import re
import threading
import time
from typing import Any

import pytest

from acres_devkit.ports import free_ports
from acres_devkit.ros2_tools import Background
from acres_devkit.ros2_tools import PACKAGE
from acres_devkit.ros2_tools import TRACEBACK

# How long a launch may take to come up and publish, and to end after Ctrl-C (the bridge's
# own bound is launch's sigterm_timeout of 20 s).
UP_WAIT_S = 90.0
STOP_WAIT_S = 60.0
# A step request whose answer has not come in this long is sent again: its response can be
# lost while the service's endpoints match (see conftest.call_across_processes). Only that
# request is sent again; a step is never repeated to hide a missing message.
STEP_RESEND_S = 5.0
STEPS_PER_CALL = 10
SPIN_PERIOD_S = 0.05
# What the output of a clean stop never holds (the last two: a failed rclpy task, a failed
# done-callback of a concurrent future).
NOT_CLEAN = (TRACEBACK, 'process has died', 'SIGSEGV', 'Segmentation fault',
             'Fatal Python error', 'core dumped', 'exit code -', 'exception was never retrieved',
             'exception calling callback')
_STARTED = re.compile(r'\[([\w.-]+)\]: process started with pid \[(\d+)\]')
_SENSOR_PROCESS = re.compile(r'sensor stream (\w+): process (\d+) \(')


@dataclasses.dataclass(frozen=True)
class LaunchCase:
    """A launch file with its arguments, and the session it makes."""

    launch_file: str
    vehicles: tuple[str, ...]
    lockstep: bool = False
    # The launch starts its own emulator; otherwise the caller starts one.
    own_emulator: bool = False
    # The session's sensor_processes argument; empty: the launch's default.
    sensor_processes: str = ''

    def arguments(self, control: int, sensors: list[int]) -> list[str]:
        """Return the launch arguments for the emulator's ports."""
        if self.launch_file == 'sensor_bridge.launch.py':
            return [f'namespace:={self.vehicles[0]}', f'port:={sensors[0]}']
        arguments = [f'port:={control}']
        if self.sensor_processes:
            arguments.append(f'sensor_processes:={self.sensor_processes}')
        if self.own_emulator:
            arguments += [f'vehicles:={",".join(self.vehicles)}',
                          f'sensor_ports:={",".join(map(str, sensors))}',
                          f'lockstep:={str(self.lockstep).lower()}']
        return arguments


# One case per launch file: one agent in its own sensor_bridge; Polaris and Maxxum playing, a
# sensor process each; the two in lockstep, stepped through the stop, emulator in the launch,
# the streams where sensor_processes auto puts them (in the session's process on two cores).
CASES = {
    'sensor_bridge': LaunchCase('sensor_bridge.launch.py', ('polaris',)),
    'acres_session': LaunchCase('acres_session.launch.py', ('polaris', 'maxxum'),
                                sensor_processes='per_agent'),
    'emulator_session': LaunchCase('emulator_session.launch.py', ('polaris', 'maxxum'),
                                   lockstep=True, own_emulator=True),
}


@dataclasses.dataclass
class StopOutcome:
    """What one stop showed: ``problems`` is empty for a clean stop."""

    problems: list[str]
    up_s: float = 0.0
    stop_s: float = 0.0
    output: str = ''

    @property
    def clean(self) -> bool:
        return not self.problems


class SessionClient:
    """
    A client on a node of its own: waits for the session's topics, steps in lockstep.

    One thread spins the node and sends the steps, so that no response can come before its
    future is recorded (Jazzy's rclpy clients).
    """

    def __init__(self, context: Any, vehicles: tuple[str, ...], *, step: bool) -> None:
        import rclpy
        from rclpy.qos import QoSProfile
        from rclpy.qos import ReliabilityPolicy
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import PointCloud2
        from simulation_interfaces.srv import StepSimulation

        self._context = context
        self.node = rclpy.create_node('stop_test_client', context=context)
        qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
        topics = {'/clock': Clock, **{f'/{agent}/lidar/points': PointCloud2
                                      for agent in vehicles}}
        self.received = {topic: threading.Event() for topic in topics}
        for topic, message_type in topics.items():
            self.node.create_subscription(message_type, topic, self._taker(topic), qos,
                                          raw=True)
        self._step_type = StepSimulation
        self._client = self.node.create_client(StepSimulation, '/step_simulation') if step \
            else None
        self.steps_answered = 0
        self.stepped = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, name='stop-test-client', daemon=True)
        self._thread.start()

    def _taker(self, topic: str) -> Callable[[Any], None]:
        return lambda _: self.received[topic].set()

    def _spin(self) -> None:
        from rclpy.executors import SingleThreadedExecutor
        executor = SingleThreadedExecutor(context=self._context)
        executor.add_node(self.node)
        future, sent = None, 0.0
        try:
            while not self._stop.is_set():
                if self._client is not None:
                    future, sent = self._step(future, sent)
                executor.spin_once(timeout_sec=SPIN_PERIOD_S)
        finally:
            executor.shutdown()

    def _step(self, future: Any, sent: float) -> tuple[Any, float]:
        """Keep one step request in flight; count the answers."""
        if future is not None and future.done():
            if future.result().result.result == future.result().result.RESULT_OK:
                self.steps_answered += 1
                self.stepped.set()
            future = None
        elif future is not None and time.monotonic() - sent > STEP_RESEND_S:
            self._client.remove_pending_request(future)
            future = None
        if future is None and self._client.service_is_ready():
            future = self._client.call_async(self._step_type.Request(steps=STEPS_PER_CALL))
            sent = time.monotonic()
        return future, sent

    def wait_up(self, timeout_s: float) -> list[str]:
        """Wait for a message on every topic (and a step answered); return what is missing."""
        deadline = time.monotonic() + timeout_s
        waits = dict(self.received)
        if self._client is not None:
            waits['an answered step_simulation'] = self.stepped
        return [name for name, event in waits.items()
                if not event.wait(max(deadline - time.monotonic(), 0.0))]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10.0)
        self.node.destroy_node()


def stop_once(case: LaunchCase, context: Any,
              start_emulator: Callable[..., Any] | None = None) -> StopOutcome:
    """
    Launch ``case``, wait until its session publishes, Ctrl-C it and check the end.

    :param context: an initialised rclpy Context for the client.
    :param start_emulator: makes and starts an emulator (keyword arguments of ``Emulator``),
        for a launch without its own; the caller stops it.
    """
    emulator = None
    if case.own_emulator:
        control, *sensors = free_ports(1 + len(case.vehicles))
    else:
        emulator = start_emulator(vehicles=case.vehicles, lockstep=case.lockstep, rate=1.0)
        control, sensors = emulator.control_port, emulator.sensor_ports
    launch = Background(['ros2', 'launch', PACKAGE, case.launch_file,
                         *case.arguments(control, sensors)])
    client = None
    started = time.monotonic()
    try:
        client = SessionClient(context, case.vehicles, step=case.lockstep)
        for agent in case.vehicles:
            launch.wait_for(rf'sensor stream {agent}: hello from agent', timeout_s=UP_WAIT_S)
        missing = client.wait_up(max(UP_WAIT_S - (time.monotonic() - started), 1.0))
        if missing:
            return StopOutcome([f'not up within {UP_WAIT_S:g} s: no {", ".join(missing)}'],
                               output=launch.output)
        outcome = StopOutcome([], up_s=time.monotonic() - started)
        interrupted = time.monotonic()
        try:
            code = launch.interrupt(STOP_WAIT_S)
        except (AssertionError, pytest.fail.Exception) as exc:
            outcome.problems.append(str(exc).splitlines()[0])
            code = launch.process.poll()
        outcome.stop_s = time.monotonic() - interrupted
        outcome.output = launch.output
        outcome.problems += _unclean(code, outcome.output)
        if emulator is not None:
            outcome.problems += [f'the bridge is still connected to the {stream.agent} stream'
                                 for stream in emulator.streams
                                 if not stream.wait_disconnected(10.0)]
        return outcome
    except pytest.fail.Exception as exc:     # Background.wait_for: not up
        return StopOutcome([str(exc).splitlines()[0]], output=launch.output)
    finally:
        if client is not None:
            client.close()
        launch.kill()


def _unclean(code: int | None, output: str) -> list[str]:
    """List what the output of a stopped launch shows to be not clean."""
    problems = [] if code == 0 else [f'ros2 launch exited with {code}']
    problems += [f'the output holds {text!r}' for text in NOT_CLEAN if text in output]
    for name, pid in _STARTED.findall(output):
        if f'[{name}]: process has finished cleanly [pid {pid}]' not in output:
            problems.append(f'launch did not see {name} (pid {pid}) finish cleanly')
    for agent, pid in _SENSOR_PROCESS.findall(output):
        if f'sensor stream {agent}: process {pid} ended with exit code 0' not in output:
            problems.append(f'the sensor process of {agent} (pid {pid}) did not end with '
                            'exit code 0')
    return problems
