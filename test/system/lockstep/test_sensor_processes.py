# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A session split over processes (``sensor_processes:=per_agent``).

The real ``acres_bridge`` executable runs sim_control and lockstep; each agent's sensor stream
runs in a child process of its own. The lockstep checks of test_lockstep_delivery.py (a
separate reliable subscriber process on every topic of the step) hold across the processes,
the child processes are real (own pid, own node in the agent's namespace), /diagnostics names
every agent, and no child outlives the session, however it ends.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading

from diagnostic_msgs.msg import DiagnosticArray
import psutil
import pytest
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from simulation_interfaces.msg import Result
from support.lockstep_delivery import AGENTS
from support.lockstep_delivery import check_a_stalled_reader_costs_one_time_out
from support.lockstep_delivery import check_steps
from support.lockstep_delivery import SIZES
from support.lockstep_delivery import stock_heartbeat_environment
from support.sim_control_graph import wait_for

from acres_bridge.sensors.agent_processes import _ChildChannel

pytestmark = [pytest.mark.ros, pytest.mark.delivery]
PER_AGENT = ('-p', 'sensor_processes:=per_agent')
CHILD_MODULE = 'acres_bridge.sensors.agent_processes'
WAIT_S = 30.0


def sensor_children(pid: int) -> dict[str, psutil.Process]:
    """Return the live sensor processes of a session by agent (from their command lines)."""
    children = {}
    for child in psutil.Process(pid).children():
        try:
            argv = child.cmdline()
            if CHILD_MODULE in argv and child.status() != psutil.STATUS_ZOMBIE:
                children[argv[argv.index('--name') + 1]] = child
        except psutil.Error:
            continue
    return children


def gone(process: psutil.Process) -> bool:
    """Whether a process has ended (reaped, or a zombie nobody reaped yet)."""
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


class Statuses:
    """Every /diagnostics status name seen by a node."""

    def __init__(self, node) -> None:
        self.names: set[str] = set()
        self._lock = threading.Lock()
        node.create_subscription(DiagnosticArray, '/diagnostics', self._on_message,
                                 QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))

    def _on_message(self, message: DiagnosticArray) -> None:
        with self._lock:
            self.names.update(status.name for status in message.status)

    def has(self, *fragments: str) -> bool:
        with self._lock:
            return all(any(fragment in name for name in self.names) for fragment in fragments)


def test_a_multi_process_session_answers_after_every_agents_barrier_and_acks(
        session_factory):
    session = session_factory(bridge_arguments=PER_AGENT)
    statuses = Statuses(session.node)
    reader = session.add_reader('lockstep_reader')
    children = wait_for(lambda: len(sensor_children(session.bridge.pid)) == len(AGENTS)
                        and sensor_children(session.bridge.pid), WAIT_S,
                        'a sensor process per agent')
    assert sorted(children) == sorted(AGENTS)
    session.ready()
    check_steps(session, reader, SIZES)
    status = session.lockstep_status(
        lambda status: status.message.startswith(f'{session.calls} steps delivered'))
    values = {value.key: value.value for value in status.values}
    assert values['late_steps'] == '0' and values['failed_steps'] == '0'
    # Each child publishes its own stream's status, the session one per child process.
    wait_for(lambda: statuses.has(*(f'{agent} sensor stream' for agent in AGENTS),
                                  *(f'acres_bridge: {agent} sensor process' for agent in AGENTS)),
             WAIT_S, 'a stream and a process status of every agent in /diagnostics')
    assert sorted(sensor_children(session.bridge.pid)) == sorted(AGENTS)   # still the same
    assert 'Traceback' not in session.output()
    print(f'\nper_agent lockstep: {len(SIZES)} calls, ack wait per step p50 '
          f'{values["ack_wait_p50_ms"]} ms max {values["ack_wait_max_ms"]} ms')


def test_the_answer_waits_for_the_acknowledgements_of_every_sensor_process(
        session_factory, tmp_path):
    # As in test_lockstep_delivery: the children's writers keep the 3 s heartbeat of the
    # user's profile (Fast DDS's stock period), so readers acknowledge only at a heartbeat, and
    # each answer waits for it: the children's acknowledgement waits reach the session's answer.
    session = session_factory(bridge_environment=stock_heartbeat_environment(tmp_path),
                              bridge_arguments=PER_AGENT)
    reader = session.add_reader('lockstep_reader')
    session.ready()
    waits = check_steps(session, reader, SIZES[:6])
    # Each answer waits for the readers' next heartbeat-driven acknowledgement: up to 3 s,
    # less when a slow step (a busy machine) ends close to the next heartbeat. An answer
    # that did not wait for the children comes within milliseconds, every time.
    assert max(waits) > 1.0, waits


def test_a_reader_that_never_acknowledges_is_named_from_every_sensor_process(
        session_factory):
    session = session_factory(ack_timeout_s=1.0, bridge_arguments=PER_AGENT)
    reader = session.add_reader('stalled_reader')
    session.ready()
    labels = session.reader_labels('stalled_reader')
    check_steps(session, reader, (12,))     # every writer has matched it: now it stalls
    reader.process.send_signal(signal.SIGSTOP)
    at_ns, result, wait_s = session.step(12, action=False)
    assert result.result == Result.RESULT_OK        # the world did step
    assert 'not acknowledged in time' in result.error_message
    assert any(label in result.error_message for label in labels), result.error_message
    for agent in AGENTS:     # each child waited for its own writers and said which were late
        assert f'/{agent}/lidar/points' in result.error_message, result.error_message
    assert wait_s >= 1.0


def test_a_stalled_reader_costs_one_time_out_per_agent(session_factory):
    session = session_factory(ack_timeout_s=2.0, bridge_arguments=PER_AGENT)
    check_a_stalled_reader_costs_one_time_out(session, 2.0)


def test_a_step_waits_for_the_barrier_of_a_stopped_sensor_process(
        session_factory):
    session = session_factory(ack_timeout_s=1.0,
                              bridge_arguments=(*PER_AGENT, '-p', 'timeout_s:=2.0'))
    session.add_reader('lockstep_reader')
    session.ready()
    maxxum = sensor_children(session.bridge.pid)['maxxum']
    maxxum.suspend()        # its barrier can neither be published nor reported
    try:
        at_ns, result, wait_s = session.step(12, action=False)
    finally:
        maxxum.resume()
    assert result.result != Result.RESULT_OK
    assert 'maxxum' in result.error_message and 'polaris' not in result.error_message, (
        result.error_message)
    at_ns, result, wait_s = session.step(12, action=True)    # and the session goes on
    assert result.result == Result.RESULT_OK, result.error_message


@pytest.mark.parametrize('ending', ['ctrl-c', 'ctrl-c-while-starting', 'sigterm', 'sigkill'])
def test_no_sensor_process_outlives_the_session(emulator_factory, ending):
    emulator = emulator_factory(vehicles=AGENTS, lockstep=True, drive='hold')
    with tempfile.TemporaryFile(mode='w+') as log:
        session = subprocess.Popen(
            [sys.executable, '-m', 'acres_bridge.nodes.acres_bridge', '--ros-args',
             '-p', f'port:={emulator.control_port}', *PER_AGENT],
            stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            children = wait_for(lambda: len(sensor_children(session.pid)) == len(AGENTS)
                                and sensor_children(session.pid), WAIT_S,
                                'a sensor process per agent')
            if ending != 'ctrl-c-while-starting':   # else the children are still importing
                wait_for(lambda: all(stream.has_client for stream in emulator.streams), WAIT_S,
                         'both sensor streams connected')
            if ending.startswith('ctrl-c'):     # a terminal's SIGINT: the whole process group
                os.killpg(session.pid, signal.SIGINT)
            else:
                session.send_signal(signal.SIGTERM if ending == 'sigterm' else signal.SIGKILL)
            code = session.wait(WAIT_S)
            wait_for(lambda: all(gone(child) for child in children.values()), WAIT_S,
                     'every sensor process to end with the session')
        finally:
            if session.poll() is None:
                os.killpg(session.pid, signal.SIGKILL)
                session.wait()
        log.seek(0)
        output = log.read()
    assert code == (-signal.SIGKILL if ending == 'sigkill' else 0), output
    if ending != 'sigkill':
        assert 'Traceback' not in output, output
        assert 'ended (exit code' not in output, output     # no child died unexpectedly
    if ending in ('ctrl-c', 'sigterm'):     # each child, running, ended as it was stopped
        for agent, child in children.items():
            assert f'sensor stream {agent}: process {child.pid} ended with exit code 0' in (
                output), output
    wait_for(lambda: not any(stream.has_client for stream in emulator.streams), WAIT_S,
             'the emulator to lose every sensor client')


class _BridgeNotBuilt:
    """A child's node whose sensor bridge fails once when asked for, then is not there."""

    def __init__(self) -> None:
        self.asked = 0
        self.shut_down = threading.Event()
        self.context = self

    @property
    def bridge(self):
        self.asked += 1
        if self.asked == 1:
            raise AttributeError('bridge is being built')
        return None

    def try_shutdown(self) -> None:
        self.shut_down.set()


def test_a_question_the_child_cannot_answer_gets_an_error_and_the_next_is_answered():
    parent_end, child_end = socket.socketpair()
    parent_end.settimeout(WAIT_S)
    node = _BridgeNotBuilt()
    child = _ChildChannel(child_end, node, ack_timeout_s=1.0)
    child.start()
    answers = parent_end.makefile('rb')
    try:
        for request in (1, 2):
            parent_end.sendall(json.dumps({'id': request, 'match': {}, 'timeout_s': 1.0})
                               .encode() + b'\n')
        first, second = (json.loads(answers.readline()) for _ in range(2))
        assert first == {'id': 1, 'error': 'AttributeError: bridge is being built'}
        assert second == {'id': 2, 'unmatched': {}}     # no stream yet: nothing to wait for
    finally:
        answers.close()
        parent_end.close()
    assert node.shut_down.wait(WAIT_S)      # the channel's end still ends the child
