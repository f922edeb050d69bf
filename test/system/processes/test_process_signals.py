# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Signals to the executables while they publish: Ctrl-C under ros2 launch, SIGTERM, twice.

Under ``ros2 launch`` a Ctrl-C brings two SIGINTs, the terminal's and then launch's own, a
few milliseconds apart. The second may land anywhere in the shutdown: before the executor
stops, while the reader threads are joined, while the nodes are destroyed. Each must end
the process with exit 0 and no traceback (Jazzy's sensor_bridge once died of SIGSEGV there,
when rclpy's own signal thread shut the context down beside the main thread).
"""

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading

import pytest
from support.waiting import wait_until

from acres_bridge.protocol.frames import FrameType
from acres_bridge.runtime.cores import usable_cores

pytestmark = pytest.mark.ros
WAIT_S = 60.0
# Where the second SIGINT falls after the first: at once (one pending signal), then in the
# executor's stop, in the joins and in the destruction of the nodes.
SECOND_SIGINT_AFTER_S = [0.0, 0.002, 0.02, 0.1]


def _start(module: str, *ros_arguments: str, log) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, '-m', module, '--ros-args', *ros_arguments],
                            stdout=log, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ))


def _publishing(emulator, frames: int = 5) -> None:
    """Wait until every stream has a client and has sent it ``frames`` more clouds."""
    wait_until(lambda: all(stream.has_client for stream in emulator.streams), WAIT_S,
               'every sensor stream to have the bridge as client')
    sent = [stream.counters[FrameType.LIDAR].frames for stream in emulator.streams]
    wait_until(lambda: all(stream.counters[FrameType.LIDAR].frames >= start + frames
                           for stream, start in zip(emulator.streams, sent)), WAIT_S,
               f'{frames} more clouds on every stream')


def _interrupt_twice(process: subprocess.Popen, gap_s: float) -> int:
    process.send_signal(signal.SIGINT)
    if gap_s:
        threading.Event().wait(gap_s)    # a spread of the second signal, not a synchronisation
    process.send_signal(signal.SIGINT)
    try:
        return process.wait(WAIT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _output(log) -> str:
    log.seek(0)
    return log.read()


@pytest.mark.parametrize('gap_s', SECOND_SIGINT_AFTER_S)
def test_two_sigints_end_a_publishing_sensor_bridge_with_exit_0(emulator_factory, gap_s):
    emulator = emulator_factory(vehicles=('polaris',), rate=10.0)
    with tempfile.TemporaryFile(mode='w+') as log:
        bridge = _start('acres_bridge.nodes.sensor_bridge',
                        '-p', f'port:={emulator.sensor_ports[0]}', log=log)
        _publishing(emulator)
        code = _interrupt_twice(bridge, gap_s)
        output = _output(log)
    assert code == 0, output
    assert 'Traceback' not in output, output
    assert emulator.streams[0].wait_disconnected(10.0)


@pytest.mark.parametrize('gap_s', [0.0, 0.02])
@pytest.mark.parametrize('layout', ['per_agent', 'auto'])
def test_two_sigints_end_a_publishing_session_with_exit_0(emulator_factory, layout, gap_s):
    emulator = emulator_factory(vehicles=('polaris', 'maxxum'), rate=10.0)
    with tempfile.TemporaryFile(mode='w+') as log:
        bridge = _start('acres_bridge.nodes.acres_bridge', '-p', f'port:={emulator.control_port}',
                        '-p', f'sensor_processes:={layout}', log=log)
        _publishing(emulator)
        code = _interrupt_twice(bridge, gap_s)
        output = _output(log)
    assert code == 0, output
    assert 'Traceback' not in output, output
    cores = usable_cores()
    # auto: a process per agent only with a core for each agent and two more.
    expected = {'per_agent': 'one process per agent',
                'auto': ('one process per agent' if cores >= 4 else 'in this process')
                + f'; sensor_processes auto on {cores} cores'}[layout]
    assert f'sensor streams ({expected}): polaris on port' in output, output
    for stream in emulator.streams:
        assert stream.wait_disconnected(10.0)


def test_sigterm_ends_a_publishing_sensor_bridge_with_exit_0(emulator_factory):
    emulator = emulator_factory(vehicles=('polaris',), rate=10.0)
    with tempfile.TemporaryFile(mode='w+') as log:
        bridge = _start('acres_bridge.nodes.sensor_bridge',
                        '-p', f'port:={emulator.sensor_ports[0]}', log=log)
        _publishing(emulator)
        bridge.send_signal(signal.SIGTERM)
        try:
            code = bridge.wait(WAIT_S)
        finally:
            if bridge.poll() is None:
                bridge.kill()
                bridge.wait()
        output = _output(log)
    assert code == 0, output
    assert 'Traceback' not in output, output


def test_the_first_signal_asks_for_the_stop_and_a_second_sigterm_ends_at_once():
    script = textwrap.dedent('''
        import os, signal
        from acres_bridge.runtime.stop_request import StopRequest
        stop = StopRequest()
        stop.install()
        os.kill(os.getpid(), signal.SIGTERM)
        print('stop requested:', stop.requested, flush=True)
        os.kill(os.getpid(), signal.SIGINT)
        print('a second SIGINT is ignored', flush=True)
        os.kill(os.getpid(), signal.SIGTERM)
        print('still running after a second SIGTERM', flush=True)
    ''')
    ended = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                           timeout=WAIT_S)
    assert ended.returncode == -signal.SIGTERM, ended.stderr
    assert ended.stdout.splitlines() == ['stop requested: True', 'a second SIGINT is ignored']


def test_once_the_stop_began_sigterm_is_left_to_the_kernel():
    """
    However the stop began, a later SIGTERM must end the process even in native code.

    A sensor child stops when its parent's channel closes, without a signal. A Python handler
    runs only when the main thread returns to the interpreter: a teardown that hangs inside
    Fast DDS never does, and the parent's SIGTERM then did nothing (Jazzy, CI of 2026-12-05:
    SIGKILL 5 s later). With the kernel's default, SIGTERM ends it wherever it is.
    """
    script = textwrap.dedent('''
        import signal
        from acres_bridge.runtime.stop_request import StopRequest
        stop = StopRequest()
        stop.install()
        print('running:', signal.getsignal(signal.SIGTERM) == stop._on_signal, flush=True)
        stop.stopping()     # the channel closed: no signal began this stop
        print('stopping:', signal.getsignal(signal.SIGTERM) is signal.SIG_DFL,
              signal.getsignal(signal.SIGINT) is signal.SIG_IGN, flush=True)
    ''')
    ended = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                           timeout=WAIT_S)
    assert ended.returncode == 0, ended.stderr
    assert ended.stdout.splitlines() == ['running: True', 'stopping: True True']


def test_the_nodes_are_destroyed_only_after_the_callbacks_in_flight_returned():
    """
    A callback still at work on a thread of a MultiThreadedExecutor when the stop comes.

    Jazzy's executor left its threads running through shutdown(), so the nodes were destroyed
    under the callback (at Ctrl-C: "exception was never retrieved: cannot use Destroyable").
    """
    script = textwrap.dedent('''
        import os, signal, threading
        from rclpy.executors import MultiThreadedExecutor
        from rclpy.node import Node
        from acres_bridge.runtime.process import run_until_shutdown
        running = threading.Event()
        seen = []

        def build(executor):
            node = Node('slow_callback')

            def slow():
                if running.is_set() or seen:
                    return
                running.set()
                os.kill(os.getpid(), signal.SIGINT)
                threading.Event().wait(0.5)     # still at work while the stop begins
                running.clear()

            node.create_timer(0.05, slow)
            executor.add_node(node)

            def destroy():
                seen.append(running.is_set())
                node.destroy_node()
            return destroy

        code = run_until_shutdown('slow', lambda: MultiThreadedExecutor(num_threads=2), build,
                                  ['slow'])
        print('callback running at destroy:', seen, 'exit', code, flush=True)
    ''')
    ended = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                           timeout=WAIT_S, env=dict(os.environ))
    assert ended.returncode == 0, ended.stdout + ended.stderr
    assert ended.stdout.splitlines()[-1] == 'callback running at destroy: [False] exit 0', (
        ended.stdout + ended.stderr)
    assert 'never retrieved' not in ended.stderr, ended.stderr


# Defines spinning_node(name, executor): a node on the executor that prints SPINNING once the
# executor has run its first callback.
_SPINNING_NODE = textwrap.dedent('''
    from rclpy.node import Node

    def spinning_node(name, executor):
        node = Node(name)
        timer = None

        def spinning():
            timer.cancel()
            print('SPINNING', flush=True)
        timer = node.create_timer(0.01, spinning)
        executor.add_node(node)
        return node
''')


def _interrupt_when_spinning(script: str) -> tuple[int, str, str]:
    """
    Run a script after _SPINNING_NODE, SIGINT it once it prints SPINNING.

    :return: its exit code, stdout and stderr.
    """
    script = _SPINNING_NODE + script
    child = subprocess.Popen([sys.executable, '-c', script], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        assert child.stdout.readline().strip() == 'SPINNING', child.stderr.read()
        child.send_signal(signal.SIGINT)
        stdout, stderr = child.communicate(timeout=WAIT_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return child.returncode, stdout, stderr


# The executors of the executables: sensor_bridge and the sensor children, acres_bridge, the
# foxglove_view (the EventsExecutor, Jazzy and later).
EXECUTORS = {
    'single': 'from rclpy.executors import SingleThreadedExecutor as Chosen',
    'multi': 'from rclpy.executors import MultiThreadedExecutor as Chosen',
    'events': 'from rclpy.experimental import EventsExecutor as Chosen',
}


@pytest.mark.parametrize('executor', sorted(EXECUTORS))
def test_a_signal_ends_the_executors_wait_at_once(executor):
    """
    A SIGINT while the executor waits in rcl, with nothing to do for an hour.

    Python runs a signal handler only in Python code; the signal must wake the executor, or
    the stop waits for the spin period (here an hour, so the test fails at its time-out).
    """
    script = textwrap.dedent('''
        from acres_bridge.runtime import process
        process.SPIN_PERIOD_S = 3600.0

        def build(executor):
            return spinning_node('waiting', executor).destroy_node

        code = process.run_until_shutdown('waiting', Chosen, build, ['waiting'])
        print('exit', code, flush=True)
    ''')
    if executor == 'events':
        pytest.importorskip('rclpy.experimental', reason='Humble has no EventsExecutor')
    returncode, stdout, stderr = _interrupt_when_spinning(EXECUTORS[executor] + script)
    assert returncode == 0, stderr
    assert stdout.splitlines() == ['exit 0'], stdout + stderr
    assert 'Traceback' not in stderr, stderr


def test_a_stop_that_hangs_writes_where_each_thread_is():
    """A stop still going after ``report_stop_after_s`` names where it hangs, on stderr."""
    script = textwrap.dedent('''
        import threading
        from rclpy.executors import SingleThreadedExecutor
        from acres_bridge.runtime import process

        def build(executor):
            node = spinning_node('hanging', executor)

            def destroy_slowly():
                threading.Event().wait(3.0)     # the stop that hangs
                node.destroy_node()
            return destroy_slowly

        code = process.run_until_shutdown('hanging', SingleThreadedExecutor, build, ['hanging'],
                                          report_stop_after_s=0.5)
        print('exit', code, flush=True)
    ''')
    _, stdout, stderr = _interrupt_when_spinning(script)
    assert stdout.splitlines() == ['exit 0'], stdout + stderr
    assert 'most recent call first' in stderr and 'destroy_slowly' in stderr, stderr
