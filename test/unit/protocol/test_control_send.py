# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The control client never blocks its caller, even when the simulator stops reading.

The simulator here is a raw socket that accepts and never reads, with a small receive buffer,
so the kernel's buffers fill after a few requests and the rest wait in the client's queue.
Each test makes its requests on a thread of its own and waits for that thread with a
time-out far shorter than the client's send time-out, so a request that blocked (as the
old ``sendall`` under a lock did) fails the test instead of passing late.
"""

import socket
import threading

import pytest

from acres_bridge.protocol.control_client import ControlClient
from acres_bridge.protocol.errors import ControlTimeout
from acres_bridge.protocol.errors import ControlUnavailable

WAIT_S = 10.0
BLOB = 'x' * (64 << 10)       # 64 KiB a request: the kernel's buffers fill after a few
MAX_REQUESTS = 2000           # 128 MiB: far beyond any loopback buffer


class DeafSimulator:
    """Accept connections on 127.0.0.1:0 and never read from them."""

    def __init__(self) -> None:
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.listener.bind(('127.0.0.1', 0))
        self.listener.listen(4)
        self.port = self.listener.getsockname()[1]
        self.connections: list[socket.socket] = []
        self.accepted = threading.Condition()
        self._thread = threading.Thread(target=self._accept, name='deaf-sim', daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self.accepted:
                self.connections.append(conn)
                self.accepted.notify_all()

    def wait_connections(self, count: int) -> None:
        with self.accepted:
            assert self.accepted.wait_for(lambda: len(self.connections) >= count, WAIT_S), (
                f'{len(self.connections)} connections, expected {count}')

    def close(self) -> None:
        try:
            self.listener.shutdown(socket.SHUT_RDWR)   # wakes the accept() of the thread
        except OSError:
            pass
        self.listener.close()
        self._thread.join(WAIT_S)
        for conn in self.connections:
            conn.close()


class Connections:
    """Record the connection changes of a client and wait for them."""

    def __init__(self) -> None:
        self.changes: list[tuple[bool, str]] = []
        self._changed = threading.Condition()

    def __call__(self, connected: bool, reason: str) -> None:
        with self._changed:
            self.changes.append((connected, reason))
            self._changed.notify_all()

    def wait(self, predicate, what: str) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: predicate(self.changes), WAIT_S), (
                f'timed out waiting for {what}: {self.changes}')


@pytest.fixture
def deaf():
    simulator = DeafSimulator()
    made: list[ControlClient] = []

    def connect(**options) -> tuple[ControlClient, Connections]:
        connections = Connections()
        client = ControlClient('127.0.0.1', simulator.port, on_connection=connections,
                               reconnect_s=0.05, **options)
        made.append(client)
        client.start()
        connections.wait(lambda changes: changes and changes[-1][0], 'the connection')
        simulator.wait_connections(1)
        return client, connections

    yield simulator, connect
    for client in made:
        client.stop()
    simulator.close()


def on_a_thread(work) -> list:
    """Run work() on a thread and return what it returned; fail if it does not end soon."""
    result: list = []
    done = threading.Event()

    def run() -> None:
        result.append(work())
        done.set()

    thread = threading.Thread(target=run, name='caller', daemon=True)
    thread.start()
    assert done.wait(WAIT_S), 'a request blocked its caller'
    return result[0]


def requests_until_one_fails(client: ControlClient, **fields) -> list:
    """Make requests until one is done at once (refused), at most MAX_REQUESTS."""
    futures = []
    for _ in range(MAX_REQUESTS):
        futures.append(client.request_async('set_state', blob=BLOB, **fields))
        if futures[-1].done():
            break
    return futures


def test_a_simulator_that_stops_reading_fills_the_queue_and_the_next_request_fails_at_once(
        deaf):
    _, connect = deaf
    # The send time-out is far longer than the wait for the caller: a blocking send fails.
    client, _ = connect(timeout_s=120.0, send_timeout_s=120.0, max_queued_bytes=1 << 20)
    futures = on_a_thread(lambda: requests_until_one_fails(client, state=2))
    refused = futures[-1]
    assert refused.done(), f'{len(futures)} requests and none refused'
    error = refused.exception(timeout=0)
    assert isinstance(error, ControlUnavailable), error
    assert 'send queue full' in str(error) and error.op == 'set_state'
    assert not any(future.done() for future in futures[:-1])
    stats = client.stats
    assert stats['queue_full'] == 1
    assert (1 << 20) - len(BLOB) < stats['queued_bytes'] <= (1 << 20) + len(BLOB)
    assert stats['pending'] == len(futures) - 1
    assert client.connected
    # The next one is refused as well, at once, while the simulator still reads nothing.
    again = on_a_thread(lambda: client.request_async('set_state', blob=BLOB, state=2))
    assert isinstance(again.exception(timeout=0), ControlUnavailable)
    assert client.stats['queue_full'] == 2


def test_requests_waiting_in_the_queue_time_out_and_a_stalled_channel_closes_and_reconnects(
        deaf):
    simulator, connect = deaf
    client, connections = connect(timeout_s=0.5, send_timeout_s=2.0, max_queued_bytes=1 << 20)
    futures = on_a_thread(lambda: requests_until_one_fails(client, state=2))[:-1]
    assert client.stats['queued_bytes'] > 0, 'the kernel took everything: nothing queued'
    for future in futures:
        error = future.exception(timeout=WAIT_S)
        assert isinstance(error, ControlTimeout), error
        assert str(error) == 'no reply to set_state within 0.5 s'
    assert client.stats['timeouts'] == len(futures)
    # Lines the simulator never read keep the connection stalled: it closes after 2 s.
    connections.wait(lambda changes: any(
        not connected and 'the simulator read no request for 2 s' in reason
        for connected, reason in changes), 'the stalled channel to close')
    simulator.wait_connections(2)
    connections.wait(lambda changes: changes[-1][0], 'the new connection')
    stats = client.stats
    assert stats['queued_bytes'] == 0 and stats['pending'] == 0
    assert stats['reconnects'] >= 1


def test_a_request_pending_when_the_stalled_channel_closes_fails_saying_why(deaf):
    _, connect = deaf
    client, _ = connect(timeout_s=120.0, send_timeout_s=1.0, max_queued_bytes=1 << 20)
    futures = on_a_thread(lambda: requests_until_one_fails(client, state=2))[:-1]
    for future in futures:
        error = future.exception(timeout=WAIT_S)
        assert isinstance(error, ControlUnavailable), error
        assert 'the simulator read no request for 1 s' in str(error)
