# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Tests of the control channel client against a tiny JSON-lines server on 127.0.0.1:0."""

import concurrent.futures
import json
import math
import queue
import random
import socket
import threading
import time

import pytest
from support.socket_doubles import LoopbackServer

from acres_bridge.protocol.control_client import ControlClient
from acres_bridge.protocol.errors import ControlError
from acres_bridge.protocol.errors import ControlTimeout
from acres_bridge.protocol.errors import ControlUnavailable
from acres_bridge.protocol.errors import TransportError

WAIT_S = 5.0
EPISODE = {'event': 'episode', 'episode_id': '20261002T070414-0000', 'episode': 0,
           'reset_epoch': 0, 'step': 0, 'time_s': 0, 'episode_time_s': 0, 'state': 2,
           'lockstep': True, 'seed': 42, 'source': 'unreal', 'map': 'V03ACRE',
           'agents': ['polaris']}


class CloseConnection(Exception):
    """Raised by a handler to make the server close the connection."""


class Connection:
    """The server side of one connection, as a handler sees it."""

    def __init__(self, conn: socket.socket, index: int) -> None:
        self.conn = conn
        self.index = index

    def send(self, *messages: dict | bytes) -> None:
        self.conn.sendall(b''.join(
            message if isinstance(message, bytes) else json.dumps(message).encode() + b'\n'
            for message in messages))


def reply(request: dict, **fields) -> dict:
    return {'id': request['id'], 'ok': True, 'result': 1, **fields}


def echo(request: dict, connection: Connection) -> None:
    connection.send(reply(request, echo=request))


class LineServer(LoopbackServer):
    """
    A control channel on 127.0.0.1:0 that serves ``connections`` clients in turn.

    It sends an episode event on each connection, then calls ``handler(request, connection)``
    on its thread for each line it receives. ``requests`` gets every request.
    """

    def __init__(self, handler=echo, *, connections: int = 1) -> None:
        self._handler = handler
        self._connections = connections
        self.requests: queue.Queue = queue.Queue()
        super().__init__(WAIT_S)

    def serve(self) -> None:
        for index in range(self._connections):
            conn = self.accept()
            with conn, conn.makefile('rb') as lines:
                connection = Connection(conn, index)
                connection.send({**EPISODE, 'episode': index})
                try:
                    for line in lines:
                        request = json.loads(line)
                        self.requests.put(request)
                        self._handler(request, connection)
                except (CloseConnection, ConnectionError):
                    pass


class Recorder:
    """Collect the events and connection changes a client reports."""

    def __init__(self) -> None:
        self.events: queue.Queue = queue.Queue()
        self.connections: queue.Queue = queue.Queue()

    def on_event(self, message: dict) -> None:
        self.events.put((message, threading.current_thread().name))

    def on_connection(self, connected: bool, reason: str) -> None:
        self.connections.put((connected, reason))

    def client(self, port: int, **kwargs) -> ControlClient:
        return ControlClient('127.0.0.1', port, on_event=self.on_event,
                             on_connection=self.on_connection,
                             **{'reconnect_s': 0.05, **kwargs})

    def wait_connected(self) -> None:
        connected, reason = self.connections.get(timeout=WAIT_S)
        assert connected, reason


@pytest.fixture
def started():
    """Start a server and a connected client; stop both afterwards."""
    made = []

    def start(handler=echo, **kwargs) -> tuple[LineServer, ControlClient, Recorder]:
        server = LineServer(handler)
        recorder = Recorder()
        client = recorder.client(server.port, **kwargs)
        made.append((server, client))
        client.start()
        recorder.wait_connected()
        return server, client, recorder

    yield start
    for server, client in made:
        client.stop()
        server.close()


def test_request_gets_its_reply_and_the_episode_event_goes_to_on_event(started):
    server, client, recorder = started()
    event, thread = recorder.events.get(timeout=WAIT_S)
    assert event == EPISODE
    assert thread == 'control-rx'
    sent = time.monotonic()
    answer = client.request('get_state')
    assert answer == {'id': 1, 'ok': True, 'result': 1, 'echo': {'id': 1, 'op': 'get_state'}}
    assert client.request('step', steps=12)['echo'] == {'id': 2, 'op': 'step', 'steps': 12}
    both_ms = (time.monotonic() - sent) * 1e3
    stats = client.stats
    assert (stats['requests'], stats['replies'], stats['events'], stats['pending']) == (
        2, 2, 1, 0)
    # Two round trips: the median is the longer one (index 1 of 2), both within the calls.
    assert 0.0 < stats['round_trip_p50_ms'] == stats['round_trip_max_ms'] <= both_ms


def test_a_reply_with_ok_false_is_a_result_not_an_exception(started):
    def refuse(request: dict, connection: Connection) -> None:
        connection.send({'id': request['id'], 'ok': False, 'result': 0,
                         'error': f'unknown op "{request["op"]}"'})

    server, client, recorder = started(refuse)
    answer = client.request('frobnicate')
    assert answer == {'id': 1, 'ok': False, 'result': 0, 'error': 'unknown op "frobnicate"'}


def test_concurrent_callers_each_get_their_own_reply(started):
    server, client, recorder = started()

    def caller(who: int) -> list[tuple[int, int]]:
        mismatches = []
        for index in range(200):
            answer = client.request('echo', who=who, index=index)
            if (answer['echo']['who'], answer['echo']['index']) != (who, index):
                mismatches.append((who, index))
        return mismatches

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(caller, range(8)))
    assert results == [[]] * 8
    ids = [server.requests.get(timeout=WAIT_S)['id'] for _ in range(1600)]
    assert ids == list(range(1, 1601))  # unique and increasing in the order they were sent
    stats = client.stats
    assert (stats['requests'], stats['replies'], stats['pending']) == (1600, 1600, 0)


def test_replies_out_of_order_match_their_requests(started):
    held: list[dict] = []

    def shuffle(request: dict, connection: Connection) -> None:
        held.append(request)
        if len(held) == 50:
            random.Random(3).shuffle(held)
            connection.send(*(reply(waiting, n=waiting['n']) for waiting in held))

    server, client, recorder = started(shuffle)
    futures = [client.request_async('echo', n=index) for index in range(50)]
    assert [future.result(WAIT_S)['n'] for future in futures] == list(range(50))


def test_a_request_without_a_reply_times_out_and_its_late_reply_is_dropped(started):
    def slow(request: dict, connection: Connection) -> None:
        if request['op'] == 'slow':
            server.release.wait(WAIT_S)
        echo(request, connection)

    server, client, recorder = started(slow)
    future = client.request_async('slow', timeout_s=0.1)
    with pytest.raises(ControlTimeout, match=r'^no reply to slow within 0.1 s$') as info:
        future.result(WAIT_S)
    assert (info.value.request_id, info.value.op) == (1, 'slow')
    server.release.set()
    # The late reply of id 1 comes before the reply of id 2 on the same stream.
    assert client.request('ping')['echo'] == {'id': 2, 'op': 'ping'}
    stats = client.stats
    assert (stats['timeouts'], stats['late_replies'], stats['unknown_replies']) == (1, 1, 0)
    assert (stats['replies'], stats['pending']) == (1, 0)


def test_time_outs_of_many_requests_resolve_each_in_turn(started):
    server, client, recorder = started(lambda request, connection: None)
    futures = [client.request_async('never', timeout_s=timeout_s)
               for timeout_s in (0.3, 0.1, 0.2, math.inf)]
    for future in futures[:3]:
        assert isinstance(future.exception(WAIT_S), ControlTimeout)
    assert not futures[3].done()
    client.stop()
    assert isinstance(futures[3].exception(WAIT_S), ControlUnavailable)


def test_blocking_request_raises_the_time_out(started):
    server, client, recorder = started(lambda request, connection: None)
    with pytest.raises(ControlTimeout, match='no reply to step within 0.05 s'):
        client.request('step', timeout_s=0.05, steps=1)


def test_pending_requests_fail_when_the_channel_closes(started):
    def hold_then_close(request: dict, connection: Connection) -> None:
        if request['id'] == 3:
            raise CloseConnection

    server, client, recorder = started(hold_then_close)
    futures = [client.request_async('hold', timeout_s=math.inf) for _ in range(3)]
    for request_id, future in enumerate(futures, 1):
        error = future.exception(WAIT_S)
        assert isinstance(error, ControlUnavailable)
        assert str(error) == (f'control channel closed before the reply to hold (id '
                              f'{request_id}): peer closed')
    assert recorder.connections.get(timeout=WAIT_S) == (False, 'peer closed')
    stats = client.stats
    assert (stats['failed_on_close'], stats['pending'], stats['disconnects']) == (3, 0, 1)


def test_client_reconnects_and_serves_requests_again():
    def close_first(request: dict, connection: Connection) -> None:
        if connection.index == 0:
            raise CloseConnection
        echo(request, connection)

    server = LineServer(close_first, connections=2)
    recorder = Recorder()
    client = recorder.client(server.port)
    client.start()
    try:
        recorder.wait_connected()
        first = client.request_async('get_state')
        assert isinstance(first.exception(WAIT_S), ControlUnavailable)
        assert recorder.connections.get(timeout=WAIT_S) == (False, 'peer closed')
        recorder.wait_connected()
        assert client.request('get_state')['ok'] is True
        episodes = [recorder.events.get(timeout=WAIT_S)[0]['episode'] for _ in range(2)]
        stats = client.stats
    finally:
        client.stop()
        server.close()
    assert episodes == [0, 1]
    assert (stats['connections'], stats['reconnects'], stats['disconnects']) == (2, 1, 1)
    assert recorder.connections.get(timeout=WAIT_S) == (False, 'stopped')


def test_requests_fail_fast_while_disconnected():
    with socket.create_server(('127.0.0.1', 0)) as probe:
        port = probe.getsockname()[1]
    recorder = Recorder()
    client = recorder.client(port)
    future = client.request_async('get_state')
    assert future.done()
    with pytest.raises(ControlUnavailable, match=r'not connected \(not started\)'):
        future.result()
    client.start()
    try:
        connected, reason = recorder.connections.get(timeout=WAIT_S)
        assert (connected, reason) == (
            False, f'cannot connect to 127.0.0.1:{port}: connection refused')
        with pytest.raises(ControlUnavailable,
                           match=r'^control channel not connected \(cannot connect to '
                                 rf'127.0.0.1:{port}: connection refused\): step not sent$'):
            client.request('step', steps=1)
        assert client.stats['refused_disconnected'] == 2
    finally:
        client.stop()


def test_progress_events_go_to_their_own_request(started):
    steps: list[dict] = []

    def step(request: dict, connection: Connection) -> None:
        if request['op'] == 'step':
            steps.append(request)
            connection.send(
                {'event': 'progress', 'id': request['id'], 'completed': 12, 'remaining': 24},
                {'event': 'progress', 'id': 999999, 'completed': 1, 'remaining': 1},
                {'event': 'progress', 'id': request['id'], 'completed': 24, 'remaining': 12})
            return
        # The other request is answered while the step still waits, then the step.
        connection.send(reply(request), reply(steps[0], step=36, barrier=36))

    server, client, recorder = started(step)
    progress: queue.Queue = queue.Queue()
    stepping = client.request_async(
        'step', steps=36, progress=True,
        on_progress=lambda event: progress.put((event, threading.current_thread().name)))
    other_progress: list[dict] = []
    other = client.request_async('get_state', on_progress=other_progress.append)
    assert other.result(WAIT_S)['ok']
    assert stepping.result(WAIT_S)['step'] == 36
    events = [progress.get_nowait() for _ in range(progress.qsize())]
    assert [(event['completed'], thread) for event, thread in events] == [
        (12, 'control-rx'), (24, 'control-rx')]
    assert other_progress == []
    stats = client.stats
    assert (stats['progress_events'], stats['orphan_progress'], stats['events']) == (2, 1, 1)


def test_lines_that_are_not_replies_are_counted_and_skipped(started):
    def noisy(request: dict, connection: Connection) -> None:
        text = json.dumps(reply(request, done=True)).encode()
        connection.send(b'not json\n', b'[1, 2]\n', b'\n', b'\xff\xfe\n',
                        b'{"ok": false, "result": 4, "error": "bad line"}\n',
                        b'{"id": true, "ok": true, "result": 1}\n',
                        b'{"id": 424242, "ok": true, "result": 1}\n',
                        b'{"event": "something_new", "x": 1}\n' + text[:5])
        connection.send(text[5:] + b'\n')

    server, client, recorder = started(noisy)
    assert client.request('noisy')['done'] is True
    stats = client.stats
    assert stats['bad_lines'] == 3
    assert stats['replies_without_id'] == 2
    assert stats['unknown_replies'] == 1
    assert stats['events'] == 2
    assert recorder.events.get(timeout=WAIT_S)[0]['event'] == 'episode'
    assert recorder.events.get(timeout=WAIT_S)[0] == {'event': 'something_new', 'x': 1}


def test_an_exception_in_a_callback_is_counted_and_reading_goes_on():
    server = LineServer(echo)
    connected = threading.Event()

    def on_event(message: dict) -> None:
        raise RuntimeError('a converter failed')

    client = ControlClient('127.0.0.1', server.port, on_event=on_event,
                           on_connection=lambda up, reason: up and connected.set())
    client.start()
    try:
        assert connected.wait(WAIT_S)
        assert client.request('get_state')['ok']
        assert client.stats['callback_errors'] == 1
    finally:
        client.stop()
        server.close()


def test_a_cancelled_request_drops_its_reply(started):
    def hold(request: dict, connection: Connection) -> None:
        if request['op'] == 'slow':
            server.release.wait(WAIT_S)
        echo(request, connection)

    server, client, recorder = started(hold)
    future = client.request_async('slow', timeout_s=math.inf)
    assert future.cancel()
    server.release.set()
    assert client.request('ping')['echo']['op'] == 'ping'
    assert client.stats['replies'] == 2


def test_stop_fails_pending_requests_and_joins(started):
    server, client, recorder = started(lambda request, connection: None)
    future = client.request_async('step', timeout_s=math.inf, steps=1000)
    client.stop()
    with pytest.raises(ControlUnavailable, match=r'\(id 1\): (stopped|client stopped)$'):
        future.result(WAIT_S)
    assert not client.connected
    assert recorder.connections.get(timeout=WAIT_S) == (False, 'stopped')
    with pytest.raises(ControlUnavailable):
        client.request('get_state')


def test_bad_requests_are_refused_before_sending(started):
    server, client, recorder = started()
    future = client.request_async('set_entity_state', pose={'position': [math.nan, 0, 0]})
    error = future.exception(WAIT_S)
    assert type(error) is ControlError
    assert 'cannot be written as JSON' in str(error)
    with pytest.raises(ValueError, match='chooses the id'):
        client.request_async('get_state', id=5)
    with pytest.raises(ValueError, match='more than 0 s'):
        client.request_async('get_state', timeout_s=0)
    assert client.request('get_state')['id'] == 2
    assert server.requests.get(timeout=WAIT_S)['id'] == 2


@pytest.mark.parametrize('host, port, message', [
    ('127.0.0.1', 0, 'port 0'), ('0.0.0.0', 5600, 'any address'),
    ('192.168.1.10', 5600, 'not a loopback')])
def test_client_refuses_bad_hosts_and_ports(host, port, message):
    with pytest.raises(TransportError, match=message):
        ControlClient(host, port)


def test_stop_from_inside_a_callback_ends_the_thread():
    server = LineServer(echo)
    stopped = threading.Event()
    holder: list[ControlClient] = []

    def on_event(message: dict) -> None:
        holder[0].stop()
        stopped.set()

    client = ControlClient('127.0.0.1', server.port, on_event=on_event)
    holder.append(client)
    client.start()
    try:
        assert stopped.wait(WAIT_S)
        client._thread.join(WAIT_S)
        assert not client._thread.is_alive()
        assert isinstance(client.request_async('get_state').exception(WAIT_S),
                          ControlUnavailable)
    finally:
        client.stop()
        server.close()
