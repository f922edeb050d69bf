# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A lockstep session across processes and its readers, shared by the lockstep delivery tests.

The emulator runs two agents (Polaris, Maxxum) in lockstep; the session is the real
``acres_bridge`` executable in a process of its own, with the Fast DDS configuration of the
environment (stock by default); each subscriber is a separate process
(acres_devkit/clients/lockstep_subscriber.py) that prints when DDS received each message. The
test's process steps through ``step_simulation`` and ``simulate_steps`` and notes when each answer
arrived.
"""

import collections
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
import rclpy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from simulation_interfaces.action import SimulateSteps
from simulation_interfaces.msg import Result
from simulation_interfaces.srv import StepSimulation
from support.action_caller import ActionCaller
from support.spinning import SpinningExecutor
from support.waiting import wait_until

from acres_bridge.lockstep.endpoints import unnamed_reader_label
from acres_bridge.runtime import dds
from acres_devkit.clients import CLIENTS
from acres_devkit.clients.lockstep_subscriber import step_topics

AGENTS = ('polaris', 'maxxum')
PHYSICS_HZ = 120
WAIT_S = 30.0
# 20 step calls of mixed sizes; odd calls go through the action.
SIZES = (12, 12, 5, 7, 24, 1, 36, 36, 3, 17, 60, 2, 9, 11, 48, 1, 30, 6, 120, 13)


class Reception:
    """What a subscriber process received: DDS reception times (ns) per topic."""

    def __init__(self, process: subprocess.Popen, topics: set[str]) -> None:
        self.process = process
        self.topics = topics
        self.times: dict[str, list[int]] = collections.defaultdict(list)
        self.matched = threading.Event()
        self.baseline: dict[str, int] = {}
        self._condition = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            if line.strip() == 'matched':
                self.matched.set()
                continue
            topic, _, received = line.strip().partition(' ')
            if received.isdigit():
                with self._condition:
                    self.times[topic].append(int(received))
                    self._condition.notify_all()

    def wait_counts(self, counts: dict[str, int], timeout_s: float = WAIT_S) -> None:
        with self._condition:
            if not self._condition.wait_for(lambda: all(
                    len(self.times[topic]) >= count for topic, count in counts.items()),
                    timeout_s):
                short = {topic: (len(self.times[topic]), count)
                         for topic, count in counts.items() if len(self.times[topic]) < count}
                raise AssertionError(f'(received, expected) by the subscriber: {short}')

    def counts(self) -> dict[str, int]:
        with self._condition:
            return {topic: len(times) for topic, times in self.times.items()}

    def received_by(self, deadline_ns: int) -> dict[str, int]:
        with self._condition:
            return {topic: sum(1 for t in times if t <= deadline_ns)
                    for topic, times in self.times.items()}


def known_readers(status: DiagnosticStatus) -> int:
    """Return the lockstep status's count of the readers the session knows (0 before one)."""
    values = {value.key: value.value for value in status.values}
    try:
        return int(values.get('known_readers', 0))
    except ValueError:
        return 0


def expected_counts(emulator, total_steps: int, calls: int) -> dict[str, int]:
    """Every message a reader has after ``total_steps`` steps in ``calls`` step calls."""
    counts = {'/clock': total_steps}
    for agent in emulator.world.agents:
        layout = agent.layout

        def due(sensor: str) -> int:
            section = layout[sensor]
            return total_steps * section['hz'] // PHYSICS_HZ if section['enabled'] else 0
        ins, lidar, camera = due('ins'), due('lidar'), due('camera')
        counts.update({
            f'/{agent.name}/ins/fix': ins, f'/{agent.name}/ins/imu': ins,
            f'/{agent.name}/ins/odometry': ins, f'/{agent.name}/ground_truth/odometry': ins,
            f'/{agent.name}/lidar/points': lidar, f'/{agent.name}/camera/image_raw': camera,
            f'/{agent.name}/camera/camera_info': camera, f'/{agent.name}/step_barrier': calls})
    return counts


class Session:
    """The bridge executable, subscriber processes and a client node in this process."""

    def __init__(self, emulator, context, ack_timeout_s: float,
                 bridge_environment: dict[str, str] | None = None,
                 bridge_arguments: tuple[str, ...] = ()) -> None:
        self.emulator = emulator
        self.log = tempfile.TemporaryFile(mode='w+')
        self.bridge = subprocess.Popen(
            [sys.executable, '-m', 'acres_bridge.nodes.acres_bridge', '--ros-args',
             '-p', f'port:={emulator.control_port}', '-p', f'ack_timeout_s:={ack_timeout_s}',
             *bridge_arguments],
            stdout=self.log, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, **(bridge_environment or {})})
        self.readers: list[Reception] = []
        self.spinner = SpinningExecutor(context)
        self.node = self.spinner.add(rclpy.create_node('lockstep_client', context=context))
        self.statuses: list[DiagnosticStatus] = []
        self._status_lock = threading.Lock()
        self.node.create_subscription(
            DiagnosticArray, '/diagnostics', self._on_diagnostics,
            QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        self.service = self.node.create_client(StepSimulation, '/step_simulation')
        self.action = ActionCaller(context, SimulateSteps, '/simulate_steps',
                                   node_name='lockstep_action_client')
        self.total_steps = 0
        self.calls = 0

    def _on_diagnostics(self, message: DiagnosticArray) -> None:
        with self._status_lock:
            self.statuses.extend(status for status in message.status
                                 if status.name.endswith(': lockstep'))

    def lockstep_status(self, predicate=lambda status: True) -> DiagnosticStatus:
        found: list[DiagnosticStatus] = []

        def seen() -> bool:
            with self._status_lock:
                found[:] = [status for status in self.statuses if predicate(status)]
            return bool(found)
        wait_until(seen, what='a lockstep status in /diagnostics', timeout_s=WAIT_S)
        return found[-1]

    def last_status(self) -> str:
        with self._status_lock:
            return self.statuses[-1].message if self.statuses else 'none'

    def add_reader(self, name: str, reliability: str = 'reliable',
                   agents: tuple[str, ...] = AGENTS) -> Reception:
        """Start a subscriber process of /clock and the topics of ``agents``."""
        process = subprocess.Popen(
            [sys.executable, str(CLIENTS / 'lockstep_subscriber.py'), name, reliability,
             *agents], stdout=subprocess.PIPE, text=True)
        reader = Reception(process, set(step_topics(list(agents))))
        self.readers.append(reader)
        return reader

    def ready(self) -> None:
        """
        Wait for what a client can see, as the README's lockstep rule says; no step.

        The service, the action server, every subscriber process matched with a publisher on
        each of its topics, and, as those readers are in other processes than this client,
        the session's lockstep status in /diagnostics counting all of them among its
        ``known_readers``.
        """
        assert self.service.wait_for_service(timeout_sec=WAIT_S), self.output()
        assert self.action.wait_for_server(WAIT_S), self.output()
        for reader in self.readers:
            assert reader.matched.wait(WAIT_S), 'a subscriber process never matched'
        wanted = sum(len(reader.topics) for reader in self.readers)
        self.lockstep_status(lambda status: known_readers(status) >= wanted)
        self.ready_expected = self.expected()
        for reader in self.readers:
            reader.baseline = reader.counts()

    def reader_labels(self, node_name: str, agents: tuple[str, ...] = AGENTS) -> set[str]:
        """
        Every name the bridge may give a node's readers: the node's, or each one's GID.

        The bridge names a reader by its GID if the node's name had not reached the bridge's
        process (lockstep.reader_label); a stopped reader never sends it after the stop.
        """
        topics = list(step_topics(list(agents)))
        found: set[str] = set()

        def named_on_every_topic() -> bool:
            found.clear()
            for topic in topics:
                mine = [info for info in self.node.get_subscriptions_info_by_topic(topic)
                        if info.node_name == node_name]
                if not mine:
                    return False
                found.update(unnamed_reader_label(info.endpoint_gid) for info in mine)
            return True
        wait_until(named_on_every_topic, what=f'{node_name} named in this graph',
                   timeout_s=WAIT_S)
        return {f'/{node_name}', *found}

    def expected(self) -> dict[str, int]:
        return expected_counts(self.emulator, self.total_steps, self.calls)

    def expected_by(self, reader: Reception) -> dict[str, int]:
        """Every message the reader must hold now: its baseline and all since."""
        return {topic: reader.baseline.get(topic, 0) + count - self.ready_expected[topic]
                for topic, count in self.expected().items() if topic in reader.topics}

    def step(self, steps: int, *, action: bool,
             answer_timeout_s: float = WAIT_S + 60) -> tuple[int, Result, float]:
        """Step; return the wall time (ns) at which the answer arrived, its result, the wait."""
        answered = threading.Event()
        outcome = {}

        def finish(result: Result) -> None:
            outcome['at_ns'] = time.time_ns()
            outcome['result'] = result
            answered.set()

        started = time.monotonic()
        deadline = started + answer_timeout_s
        if action:
            # Sent and spun by this thread (see action_caller.py).
            goal = SimulateSteps.Goal()
            goal.steps = steps
            try:
                handle = self.action.send_goal(goal, timeout_s=answer_timeout_s)
                wrapped = self.action.result(handle, max(0.0, deadline - time.monotonic()))
                # The future's done callbacks would run as tasks of the caller's executor,
                # which stops spinning once the future is done: take the answer here.
                finish(wrapped.result.result)
            except TimeoutError:
                pass
        else:
            request = StepSimulation.Request()
            request.steps = steps
            self.service.call_async(request).add_done_callback(
                lambda done: finish(done.result().result))
        if not answered.wait(max(0.0, deadline - time.monotonic())):
            self.spinner.check()    # a spinning thread that died answers nothing
        assert answered.is_set(), (
            f'no answer to a step of {steps} in {answer_timeout_s:g} s: the world is at step '
            f'{self.emulator.world.step} after {self.total_steps} answered; last lockstep '
            f'status: {self.last_status()}\n{self.output()}')
        self.total_steps += steps
        self.calls += 1
        return outcome['at_ns'], outcome['result'], time.monotonic() - started

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def close(self) -> None:
        for reader in self.readers:
            reader.process.send_signal(signal.SIGCONT)
            reader.process.terminate()
        self.spinner.shutdown()
        self.bridge.send_signal(signal.SIGINT)
        try:
            self.bridge.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            self.bridge.kill()
        for reader in self.readers:
            try:
                reader.process.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                reader.process.kill()
        self.action.close()
        self.node.destroy_node()
        self.log.close()


def stock_heartbeat_environment(folder: pathlib.Path) -> dict[str, str]:
    """Return a bridge's environment whose user profile keeps Fast DDS's stock 3 s heartbeat."""
    fast_dds = dds.find_fast_dds()
    profile = folder / 'stock_heartbeat.xml'
    profile.write_text(dds.profile_xml(fast_dds.major, local_discovery=True,
                                       heartbeat_period_ms=3000))
    return {dds.profile_variable(fast_dds): str(profile)}


def check_steps(session: Session, reader: Reception, sizes: tuple[int, ...]) -> list[float]:
    """Step through ``sizes``; at each answer the reader must hold every message so far."""
    waits = []
    for call, steps in enumerate(sizes):
        at_ns, result, wait_s = session.step(steps, action=call % 2 == 1)
        assert result.result == Result.RESULT_OK, result.error_message
        assert result.error_message == '', result.error_message
        expected = session.expected_by(reader)
        reader.wait_counts(expected)
        received = reader.received_by(at_ns)
        missing = {topic: f'{received.get(topic, 0)} of {count}'
                   for topic, count in expected.items() if received.get(topic, 0) != count}
        assert not missing, (f'call {call + 1} ({steps} steps, '
                             f'{"action" if call % 2 else "service"}): at the answer the '
                             f'reader had {missing}')
        waits.append(wait_s)
    return waits


def missing_at_answer(session: Session, reader: Reception, at_ns: int,
                      topics: set[str]) -> dict[str, str]:
    """Return what of ``topics`` the reader lacked at the answer (it gets them all later)."""
    expected = session.expected_by(reader)
    reader.wait_counts(expected)
    received = reader.received_by(at_ns)
    return {topic: f'{received.get(topic, 0)} of {count}' for topic, count in expected.items()
            if topic in topics and received.get(topic, 0) != count}


def check_a_stalled_reader_costs_one_time_out(session: Session, ack_timeout_s: float) -> None:
    """
    Stop a reader of Polaris's topics beside a live reader of every topic, and step.

    The first step after the stop waits ``ack_timeout_s``; the next ten do not wait for the
    topics it reads (each answer names them and it), while the live reader has every message
    of the other topics at each answer; the status and the log name it too.

    Not checked: that the resumed reader counts again. With stock Fast DDS 3.2, in CI's full
    suite, a reader resumed after the writers found its shared-memory port full and unanswered
    received nothing more (2026-12-06: 30 s, in process and per agent), so its topics stayed
    lagging, as they must while it lacks their samples (docs/ros_interface.md).
    """
    stalled = session.add_reader('stalled_reader', agents=('polaris',))
    live = session.add_reader('live_reader')
    session.ready()
    labels = session.reader_labels('stalled_reader', agents=('polaris',))
    check_steps(session, stalled, (12,))    # every writer has matched it: now it stalls
    stalled.process.send_signal(signal.SIGSTOP)     # as Ctrl-Z stops `ros2 topic echo`

    def names_the_reader(text: str) -> bool:
        return any(label in text for label in labels)
    at_ns, result, wait_s = session.step(12, action=False)
    assert result.result == Result.RESULT_OK        # the world did step
    assert 'not acknowledged in time' in result.error_message, result.error_message
    assert names_the_reader(result.error_message), result.error_message
    assert wait_s >= ack_timeout_s      # it waited for the time-out before answering
    assert not missing_at_answer(session, live, at_ns, live.topics)
    others = live.topics - stalled.topics
    for call in range(10):
        at_ns, result, wait_s = session.step((12, 1)[call % 2], action=call % 3 == 1)
        assert result.result == Result.RESULT_OK, result.error_message
        assert 'not waited for until a lagging reader catches up' in result.error_message, (
            result.error_message)
        assert 'not acknowledged in time' not in result.error_message, result.error_message
        assert names_the_reader(result.error_message), result.error_message
        assert '/polaris/lidar/points' in result.error_message, result.error_message
        assert '/maxxum/' not in result.error_message, result.error_message
        assert wait_s < ack_timeout_s / 2, f'call {call + 1} waited {wait_s:.3f} s'
        missing = missing_at_answer(session, live, at_ns, others)
        assert not missing, f'call {call + 1}: at the answer the live reader had {missing}'
    status = session.lockstep_status(
        lambda status: 'not waited for' in status.message and names_the_reader(status.message))
    assert status.level == DiagnosticStatus.WARN
    assert names_the_reader(session.output())       # and in the bridge's log
    stalled.process.send_signal(signal.SIGCONT)
