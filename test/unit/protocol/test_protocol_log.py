# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
One logging path: the protocol clients report through the handler their caller gives.

Without a handler the reports go to Python logging (a user embedding the protocol layer gets
them); with one, nothing reaches Python logging; a node logs each report once, in its ROS log.
"""

import logging
import socket
import threading
import time

from rclpy.parameter import Parameter

from acres_bridge.protocol.control_client import ControlClient
from acres_bridge.protocol.stream_client import SensorStreamClient
from acres_bridge.sensors.sensor_node import SensorBridgeNode
from acres_devkit.ports import free_port

WAIT_S = 10.0


class Lines:
    """Collect (level, text) reports and wait for them."""

    def __init__(self) -> None:
        self.lines: list[tuple[int, str]] = []
        self._changed = threading.Condition()

    def __call__(self, level: int, text: str) -> None:
        with self._changed:
            self.lines.append((level, text))
            self._changed.notify_all()

    def wait(self, count: int) -> list[tuple[int, str]]:
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.lines) >= count, WAIT_S), self.lines
            return list(self.lines)


class ClosingServer:
    """Accept each connection on 127.0.0.1:0, send its bytes and close it."""

    def __init__(self, data: bytes = b'') -> None:
        self.listener = socket.create_server(('127.0.0.1', 0))
        self.port = self.listener.getsockname()[1]
        self._data = data
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                conn.sendall(self._data)

    def close(self) -> None:
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        self._thread.join(WAIT_S)


def test_a_client_with_a_handler_reports_through_it_and_not_through_python_logging(caplog):
    caplog.set_level(logging.DEBUG, logger='acres_bridge.protocol')
    server = ClosingServer()
    lines = Lines()
    client = ControlClient('127.0.0.1', server.port, reconnect_s=30.0, log=lines)
    client.start()
    try:
        first, second = lines.wait(2)[:2]
    finally:
        client.stop()
        server.close()
    assert first == (logging.INFO, f'control channel: connected to 127.0.0.1:{server.port}')
    assert second == (logging.WARNING,
                      'control channel: disconnected: peer closed; reconnecting every 30 s')
    assert lines.lines[-1] == (logging.INFO, 'control channel: stopped')
    assert not [record for record in caplog.records
                if record.name.startswith('acres_bridge.protocol')]


def test_a_client_without_a_handler_reports_to_python_logging(caplog):
    caplog.set_level(logging.INFO, logger='acres_bridge.protocol')
    server = ClosingServer(b'XSS1' + bytes(28))
    reported = threading.Event()
    client = SensorStreamClient('127.0.0.1', server.port, name='polaris', reconnect_s=30.0,
                                on_frame=print,
                                on_connection=lambda up, reason: up or reported.set())
    client.start()
    try:
        assert reported.wait(WAIT_S)
    finally:
        client.stop()
        server.close()
    texts = [(record.name, record.levelno, record.getMessage()) for record in caplog.records]
    assert texts[0] == ('acres_bridge.protocol.stream_client', logging.INFO,
                        f'sensor stream polaris: connected to 127.0.0.1:{server.port}')
    assert texts[1][:2] == ('acres_bridge.protocol.stream_client', logging.WARNING)
    assert texts[1][2].startswith('sensor stream polaris: bad frame (reconnecting): bad magic')
    assert texts[2][2].startswith('sensor stream polaris: disconnected: bad frame: bad magic')


def test_a_node_logs_each_report_of_its_client_once(ros_context, capfd, caplog):
    caplog.set_level(logging.DEBUG, logger='acres_bridge.protocol')
    port = free_port()
    node = SensorBridgeNode(context=ros_context, parameter_overrides=[
        Parameter('port', value=port), Parameter('reconnect_s', value=0.05)])
    try:
        pause = threading.Event()
        deadline = time.monotonic() + WAIT_S
        while node.bridge.stats['connect_failures'] < 3:
            assert time.monotonic() < deadline, 'three failed connection attempts'
            pause.wait(0.02)
    finally:
        node.destroy_node()
    err = capfd.readouterr().err
    refused = (f'sensor stream sensor_bridge: disconnected: cannot connect to 127.0.0.1:{port}: '
               'connection refused; reconnecting every 0.05 s')
    assert err.count(refused) == 1, err
    assert not [record for record in caplog.records
                if record.name.startswith('acres_bridge.protocol')]
