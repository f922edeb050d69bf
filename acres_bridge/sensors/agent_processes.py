# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

# Over 500 lines in one module on purpose: it holds both ends of one private channel, the
# parent's SensorProcess and the child's _ChildChannel and child_main, so that a message's
# sender and its reader (and their JSON shapes) change together.

"""
One agent's sensor stream in a process of its own, for a session split over processes.

With ``sensor_processes`` ``per_agent`` the ``acres_bridge`` executable keeps sim_control and
lockstep, and starts one child per agent (``python -m acres_bridge.sensors.agent_processes``):
a ``sensor_bridge`` node in the agent's namespace (``/polaris/sensor_bridge``), with its own
rclpy context, DDS participant, ``/diagnostics`` publisher and GIL.

:class:`SensorProcess` is the parent's handle and the session's lockstep
:class:`~acres_bridge.lockstep.delivery.DeliverySource` for that agent. It asks the child
"barrier N published and acknowledged" over a Unix socket pair (one end passed to the child),
in JSON lines; the child answers with its own :class:`~acres_bridge.lockstep.coordinator.Lockstep`,
so the acknowledgement wait covers its own writers:

    parent -> child   {"id": 6, "match": {"/polaris/ins/imu": {"<gid hex>": "/client"}},
                       "timeout_s": 5.0}
    child -> parent   {"id": 6, "unmatched": {}}
    parent -> child   {"id": 7, "step": 120, "timeout_s": 10.0, "readers": {...}}
    child -> parent   {"id": 7, "ack_wait_s": 0.025, "late": {"/polaris/lidar/points": [...]},
                       "unmatched": {}, "lagging": {}, "published_at": 8123.4}
                      {"id": 7, "barrier_timeout": true}     {"id": 7, "error": "..."}

The readers are those the parent's graph knows on the stream's topics: before a step is sent,
and again before the acknowledgement wait, the child waits until its writers have matched
them and every compatible reader of its own graph (readers.wait_for_matches), because a
client's readers may be known to sim_control's participant before this one has matched them.

A child whose stream is not connected answers at once with no wait, as a disconnected stream
of one process is left out of a step.

A child never outlives its parent: it ends when the channel closes, which the kernel does when
the parent exits in any way (Ctrl-C, SIGTERM, an exception, SIGKILL), and on its own SIGINT or
SIGTERM. It runs in a process group of its own, so a terminal's Ctrl-C reaches the parent
only, which ends its children in :meth:`SensorProcess.stop`: it closes the channel, waits,
then sends SIGTERM and SIGKILL.
"""

import argparse
from collections.abc import Callable
import concurrent.futures
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus
from diagnostic_msgs.msg import KeyValue

from acres_bridge.lockstep.barriers import BarrierTimeout
from acres_bridge.lockstep.delivery import StreamDelivery
from acres_bridge.lockstep.endpoints import ReaderSet
from acres_bridge.lockstep.reports import StreamReport
from acres_bridge.runtime.futures import Deadlines
from acres_bridge.runtime.futures import settle
from acres_bridge.sensors.parameters import SensorBridgeParameters

MODULE = 'acres_bridge.sensors.agent_processes'
NODE_NAME = 'sensor_bridge'
# Past the child's own barrier and acknowledgement time-outs, how long the parent still waits
# for its answer before it fails the step (a child that hangs).
CHANNEL_SLACK_S = 5.0
STOP_TIMEOUT_S = 5.0
MAX_LINE = 1 << 20
# A process group of its own (Python 3.10, Humble: a session of its own instead).
_OWN_GROUP: dict[str, Any] = ({'process_group': 0} if sys.version_info >= (3, 11)
                              else {'start_new_session': True})


def _lines(channel: socket.socket) -> Any:
    """Yield the JSON objects of a channel until it closes; skip what is not one."""
    reader = channel.makefile('rb')
    try:
        while line := reader.readline(MAX_LINE):
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                yield message
    except OSError:
        return
    finally:
        reader.close()


def readers_to_json(readers: ReaderSet) -> dict[str, dict[str, str]]:
    """Return a ReaderSet as JSON: topic -> {GID in hex: label}."""
    return {topic: {gid.hex(): label for gid, label in found.items()}
            for topic, found in readers.items()}


def readers_from_json(value: Any) -> ReaderSet:
    """Return the ReaderSet of readers_to_json's JSON; what is not of its form is skipped."""
    readers: ReaderSet = {}
    if not isinstance(value, dict):
        return readers
    for topic, found in value.items():
        if not isinstance(found, dict):
            continue
        entries = {}
        for gid, label in found.items():
            try:
                entries[bytes.fromhex(gid)] = str(label)
            except (TypeError, ValueError):
                continue
        readers[str(topic)] = entries
    return readers


def _topic_readers(value: Any) -> dict[str, tuple[str, ...]]:
    """Return a child's topic -> readers answer (late or unmatched) as tuples."""
    if not isinstance(value, dict):
        return {}
    return {str(topic): tuple(str(reader) for reader in readers)
            for topic, readers in value.items() if isinstance(readers, list)}


class _Writer:
    """Send JSON lines on a channel from any thread; a closed channel is ignored."""

    def __init__(self, channel: socket.socket) -> None:
        self._channel = channel
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> bool:
        data = (json.dumps(message) + '\n').encode()
        with self._lock:
            try:
                self._channel.sendall(data)
            except OSError:
                return False
        return True


# --- the parent's side ---------------------------------------------------------------------


class SensorProcess:
    """
    One agent's sensor_bridge in a child process: start, lockstep source, diagnostics, stop.

    :param name: the agent (the stream's name in lockstep and diagnostics).
    :param namespace: the child node's full namespace (``/polaris``).
    :param settings: the stream's settings, given to the child node as parameters.
    :param ack_timeout_s: the child's acknowledgement time-out after each barrier.
    :param deadlines: the session lockstep's deadlines (bounds the child's answer).
    :param node: the session's node: its log, its name (first word of the diagnostic status)
        and its context (a child that ends while the session shuts down is no error).
    """

    def __init__(self, name: str, namespace: str, settings: SensorBridgeParameters, *,
                 ack_timeout_s: float, deadlines: Deadlines, node: Any) -> None:
        self.name = name
        self.namespace = namespace
        self.settings = settings
        self.ack_timeout_s = ack_timeout_s
        self._deadlines = deadlines
        self._node = node
        self._logger = node.get_logger()
        self._lock = threading.Lock()
        # request -> (future, its step or None for a match, its time-out)
        self._pending: dict[int, tuple[concurrent.futures.Future, int | None, float]] = {}
        self._ids = itertools.count(1)
        self._stopping = False
        self._ended = threading.Event()
        self._requests = 0
        self._answers = 0
        self.process: subprocess.Popen | None = None
        self._channel: socket.socket | None = None
        self._writer: _Writer | None = None
        self._reader: threading.Thread | None = None

    def argv(self, channel_fd: int) -> list[str]:
        """Return the child's command line."""
        values = self.settings.values()
        return [sys.executable, '-m', MODULE, '--channel', str(channel_fd),
                '--name', self.name, '--namespace', self.namespace,
                '--ack-timeout-s', repr(self.ack_timeout_s),
                '--parameters', json.dumps(values)]

    def start(self) -> None:
        """
        Start the child; its output goes where the parent's goes.

        It runs in a process group of its own, so that a terminal's Ctrl-C reaches the parent
        only (a child interrupted while it imports would print a traceback); it ends when the
        parent closes the channel or exits. Not a session of its own: with the kernel's
        autogroup scheduling that would change its share of the CPU, and the emulator then fell
        short of 10x on a loaded machine (docs/benchmarks.md, "Sensor streams: one process or
        one per agent").
        """
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.process = subprocess.Popen(self.argv(theirs.fileno()),
                                            pass_fds=(theirs.fileno(),),
                                            stdin=subprocess.DEVNULL, **_OWN_GROUP)
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        self._channel = ours
        self._writer = _Writer(ours)
        self._reader = threading.Thread(target=self._read, name=f'sensor-process:{self.name}',
                                        daemon=True)
        self._reader.start()
        self._logger.info(f'sensor stream {self.name}: process {self.process.pid} '
                          f'({self.namespace}/{NODE_NAME}) on port {self.settings.port}')

    @property
    def running(self) -> bool:
        """Whether the child is running and its channel open."""
        return self.process is not None and not self._ended.is_set()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    # --- lockstep -------------------------------------------------------------------------

    def matched(self, readers: ReaderSet, timeout_s: float) -> concurrent.futures.Future:
        """Ask the child to match ``readers`` (a DeliverySource); topic -> unmatched readers."""
        return self._ask({'match': readers_to_json(readers), 'timeout_s': timeout_s},
                         step=None, timeout_s=timeout_s, limit_s=timeout_s + CHANNEL_SLACK_S,
                         what='the readers\' matches')

    def delivered(self, step: int, barrier_timeout_s: float,
                  readers: ReaderSet) -> concurrent.futures.Future:
        """Ask the child for the :class:`StreamReport` of ``step`` (a DeliverySource)."""
        return self._ask({'step': step, 'timeout_s': barrier_timeout_s,
                          'readers': readers_to_json(readers)},
                         step=step, timeout_s=barrier_timeout_s,
                         limit_s=barrier_timeout_s + self.ack_timeout_s + CHANNEL_SLACK_S,
                         what=f'step {step}')

    def _ask(self, message: dict[str, Any], *, step: int | None, timeout_s: float,
             limit_s: float, what: str) -> concurrent.futures.Future:
        """Send one question to the child; its answer, or an error past ``limit_s``."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            request = next(self._ids)
            self._pending[request] = (future, step, timeout_s)
            self._requests += 1
        future.add_done_callback(lambda _: self._forget(request))
        if not self.running or not self._writer.send({'id': request, **message}):
            settle(future, error=self._ended_error())
            return future

        def expired() -> BaseException:
            return TimeoutError(f'the sensor process of {self.name} did not answer for {what} '
                                f'within {limit_s:g} s')
        self._deadlines.fail_after(future, limit_s, expired)
        return future

    def _forget(self, request: int) -> None:
        with self._lock:
            self._pending.pop(request, None)

    def _ended_error(self) -> RuntimeError:
        code = self.process.poll() if self.process is not None else None
        return RuntimeError(f'the sensor process of {self.name} has ended (exit code {code})')

    def _read(self) -> None:
        for message in _lines(self._channel):
            with self._lock:
                entry = self._pending.get(message.get('id'))
                self._answers += 1
            if entry is None:
                continue        # answered too late: the step was failed or cancelled
            future, step, timeout_s = entry
            unmatched = _topic_readers(message.get('unmatched'))
            if message.get('barrier_timeout'):
                settle(future, error=BarrierTimeout(self.name, step, timeout_s))
            elif 'error' in message:
                settle(future, error=RuntimeError(
                    f'the sensor process of {self.name}: {message["error"]}'))
            elif step is None:
                settle(future, unmatched)
            else:
                settle(future, StreamReport(
                    self.name, step, float(message.get('ack_wait_s', 0.0)),
                    _topic_readers(message.get('late')), unmatched,
                    _topic_readers(message.get('lagging')),
                    float(message.get('published_at', 0.0))))
        self._ended.set()
        with self._lock:
            pending = [future for future, _, _ in self._pending.values()]
            stopping = self._stopping
        for future in pending:
            settle(future, error=self._ended_error())
        if not stopping and self._node.context.ok():
            try:
                code = self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                code = None
            self._logger.error(f'sensor stream {self.name}: its process {self.pid} ended '
                               f'(exit code {code}); its topics are not published until the '
                               'session restarts')

    # --- diagnostics and the end ------------------------------------------------------------

    def diagnostic_statuses(self) -> list[DiagnosticStatus]:
        """Return the status of the child process (the child publishes its stream's own)."""
        code = self.process.poll() if self.process is not None else None
        with self._lock:
            values = {'pid': self.pid, 'node': f'{self.namespace}/{NODE_NAME}',
                      'running': self.running, 'exit_code': code,
                      'lockstep_requests': self._requests, 'lockstep_answers': self._answers}
        if self.running:
            level, message = DiagnosticStatus.OK, f'running as process {self.pid}'
        else:
            level, message = DiagnosticStatus.ERROR, f'ended with exit code {code}'
        return [DiagnosticStatus(
            level=level, name=f'{self._node.get_name()}: {self.name} sensor process',
            message=message,
            hardware_id=f'{self.settings.address}:{self.settings.port}',
            values=[KeyValue(key=key, value=str(value)) for key, value in values.items()])]

    def close_channel(self) -> None:
        """Tell the child to end (it ends when the channel closes); no wait."""
        with self._lock:
            self._stopping = True
        if self._channel is not None:
            try:
                self._channel.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> int | None:
        """End the child: close the channel, wait, then SIGTERM and SIGKILL; the exit code."""
        self.close_channel()
        process = self.process
        code = None
        if process is not None:
            for escalate in (None, signal.SIGTERM, signal.SIGKILL):
                if escalate is not None:
                    self._logger.warning(f'sensor stream {self.name}: process {process.pid} '
                                         f'did not end in {timeout_s:g} s, sending '
                                         f'{escalate.name}')
                    process.send_signal(escalate)
                try:
                    code = process.wait(timeout_s)
                    break
                except subprocess.TimeoutExpired:
                    continue
            # The one sign of how the child ended: it is not launch's process, but ours. Two
            # call sites: rclpy refuses one call site logging at two severities.
            ended = f'sensor stream {self.name}: process {process.pid} ended with exit code {code}'
            if code == 0:
                self._logger.info(ended)
            else:
                self._logger.error(ended)
        if self._reader is not None:
            self._reader.join(timeout_s)
        if self._channel is not None:
            self._channel.close()
        return code


# --- the child's side ----------------------------------------------------------------------


class _ChildChannel:
    """The child's end: answers the parent's lockstep questions, ends the process at EOF."""

    def __init__(self, channel: socket.socket, node: Any, ack_timeout_s: float) -> None:
        from acres_bridge.lockstep.coordinator import Lockstep
        self._channel = channel
        self._node = node
        self._writer = _Writer(channel)
        self._lockstep = Lockstep(node, barrier_timeout_s=1.0, ack_timeout_s=ack_timeout_s)
        self._closing = False
        self._thread = threading.Thread(target=self._read, name='sensor-process-channel',
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _read(self) -> None:
        for message in _lines(self._channel):
            try:
                self._serve(message)
            except Exception as exc:  # noqa: B902 - one question fails, the channel goes on
                # The parent would otherwise wait out its own limit, and every later question
                # would go unanswered.
                self._writer.send({'id': message.get('id'),
                                   'error': f'{type(exc).__name__}: {exc}'})
        if not self._closing:
            # The parent closed the channel or is gone: this process ends with it.
            self._node.context.try_shutdown()

    def _serve(self, message: dict[str, Any]) -> None:
        step, timeout_s = message.get('step'), message.get('timeout_s')
        if not isinstance(timeout_s, (int, float)):
            return
        readers = readers_from_json(message.get('match', message.get('readers')))
        if 'match' in message:
            self._match(message.get('id'), readers, float(timeout_s))
        elif isinstance(step, int):
            self._answer(message.get('id'), step, float(timeout_s), readers)

    def _delivery(self, *, starting: bool = False) -> StreamDelivery | None:
        """
        Return the stream's delivery, None while it is not connected (nothing to wait for).

        With ``starting`` (before a step is sent) a stream that has not had its first Hello
        is waited for too (see bridge.SessionBridge._streams).
        """
        bridge = self._node.bridge
        if bridge is None or not (bridge.connected or (starting and bridge.hello is None)):
            return None
        return self._lockstep.stream(bridge.name, bridge.topic_namespace, bridge.barriers,
                                     bridge.step_publishers,
                                     ready=lambda: bridge.hello is not None)

    def _match(self, request: Any, readers: ReaderSet, timeout_s: float) -> None:
        delivery = self._delivery(starting=True)
        if delivery is None:
            self._writer.send({'id': request, 'unmatched': {}})
            return

        def done(future: concurrent.futures.Future) -> None:
            if future.cancelled():
                return
            error = future.exception()
            if error is not None:
                self._writer.send({'id': request, 'error': f'{type(error).__name__}: {error}'})
            else:
                self._writer.send({'id': request, 'unmatched': {
                    topic: list(names) for topic, names in future.result().items()}})
        delivery.matched(readers, timeout_s).add_done_callback(done)

    def _answer(self, request: Any, step: int, timeout_s: float, readers: ReaderSet) -> None:
        delivery = self._delivery()
        if delivery is None:
            self._writer.send({'id': request, 'ack_wait_s': 0.0, 'late': {}})
            return
        future = delivery.delivered(step, timeout_s, readers)

        def done(future: concurrent.futures.Future) -> None:
            if future.cancelled():
                return
            error = future.exception()
            if isinstance(error, BarrierTimeout):
                self._writer.send({'id': request, 'barrier_timeout': True})
            elif error is not None:
                self._writer.send({'id': request, 'error': f'{type(error).__name__}: {error}'})
            else:
                report: StreamReport = future.result()
                self._writer.send({'id': request, 'ack_wait_s': report.ack_wait_s,
                                   'late': {topic: list(names)
                                            for topic, names in report.late.items()},
                                   'unmatched': {topic: list(names)
                                                 for topic, names in report.unmatched.items()},
                                   'lagging': {topic: list(names)
                                               for topic, names in report.lagging.items()},
                                   'published_at': report.published_at})
        future.add_done_callback(done)

    def close(self) -> None:
        self._closing = True
        self._lockstep.destroy()
        try:
            self._channel.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._thread.join(STOP_TIMEOUT_S)
        self._channel.close()


def child_main(argv: list[str] | None = None) -> int:
    """Run one agent's sensor_bridge for a parent session until the channel closes."""
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from acres_bridge.runtime.process import run_until_shutdown
    from acres_bridge.sensors.sensor_node import SensorBridgeNode

    parser = argparse.ArgumentParser(prog=MODULE, description=__doc__.split('\n\n')[0])
    parser.add_argument('--channel', type=int, required=True)
    parser.add_argument('--name', required=True)
    parser.add_argument('--namespace', required=True)
    parser.add_argument('--ack-timeout-s', type=float, required=True)
    parser.add_argument('--parameters', type=json.loads, required=True)
    args, ros_arguments = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    channel = socket.socket(fileno=args.channel)
    os.set_inheritable(channel.fileno(), False)

    def build(executor: Any) -> Callable[[], None]:
        overrides = [Parameter(name, value=value) for name, value in args.parameters.items()]
        node = SensorBridgeNode(NODE_NAME, namespace=args.namespace,
                                parameter_overrides=overrides)
        executor.add_node(node)
        served = _ChildChannel(channel, node, args.ack_timeout_s)
        served.start()

        def destroy() -> None:
            served.close()
            node.destroy_node()
        return destroy

    # The parent sends SIGTERM STOP_TIMEOUT_S after it closed the channel: a stop that hangs
    # (seen on Jazzy, rarely, right after start) says where before that.
    return run_until_shutdown(f'sensor_bridge {args.name}', SingleThreadedExecutor, build,
                              [MODULE, *ros_arguments],
                              report_stop_after_s=STOP_TIMEOUT_S - 1.0)


if __name__ == '__main__':
    sys.exit(child_main())
