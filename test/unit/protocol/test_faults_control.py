# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Faults on the control channel, between the emulator and ControlClient (no ROS).

A FaultProxy sits between the emulator's control channel and a client. Each test breaks one
reply or the connection, and checks that the client stays up, says what happened (the error
of the request, stats) and serves the next request. The load test runs 8 callers x 500 calls.
"""

import concurrent.futures
import json
import socket
import threading
import time

import pytest

from acres_bridge.emulator.faults import FaultProxy
from acres_bridge.protocol.control_client import ControlClient
from acres_bridge.protocol.errors import ControlTimeout
from acres_bridge.protocol.errors import ControlUnavailable
from acres_devkit.ports import free_port

WAIT_S = 10.0
EMULATOR = {'drive': 'hold', 'render_every': 10, 'lockstep': True}


class Events:
    """Collect the events and connection changes of a client and wait for them."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.connections: list[tuple[bool, str]] = []
        self._changed = threading.Condition()

    def on_event(self, message: dict) -> None:
        with self._changed:
            self.events.append(message)
            self._changed.notify_all()

    def on_connection(self, connected: bool, reason: str) -> None:
        with self._changed:
            self.connections.append((connected, reason))
            self._changed.notify_all()

    def wait(self, predicate, what: str, timeout_s: float = WAIT_S) -> None:
        with self._changed:
            assert self._changed.wait_for(predicate, timeout_s), f'timed out waiting for {what}'

    def client(self, port: int, **options) -> ControlClient:
        return ControlClient('127.0.0.1', port, on_event=self.on_event,
                             on_connection=self.on_connection,
                             **{'reconnect_s': 0.05, 'timeout_s': 2.0, **options})


@pytest.fixture
def rig(emulator_factory):
    """Start an emulator, a proxy in front of its control channel and a connected client."""
    made = []

    def start(**options):
        emulator = emulator_factory(**EMULATOR)
        proxy = FaultProxy(emulator.control_port, protocol='control', name='control').start()
        events = Events()
        client = events.client(proxy.port, **options)
        made.append((client, proxy))
        client.start()
        events.wait(lambda: events.events, 'the episode event')
        return emulator, proxy, client, events

    yield start
    for client, proxy in made:
        client.stop()
        proxy.stop()


def serves(client: ControlClient) -> None:
    """Check that the client still gets a reply to a request, on a live reader thread."""
    reply = client.request('get_state')
    assert reply['ok'] and reply['state'] == 2
    assert client.connected


def test_late_reply_times_out_then_is_dropped_and_the_next_call_works(rig):
    _, proxy, client, _ = rig()
    fault = proxy.inject('delay', op='get_state', delay_s=60.0)
    with pytest.raises(ControlTimeout, match=r'^no reply to get_state within 0.3 s$') as info:
        client.request('get_state', timeout_s=0.3)
    assert info.value.op == 'get_state' and info.value.request_id == 1
    fault.release.set()
    assert fault.wait(WAIT_S)
    serves(client)
    stats = client.stats
    assert stats['timeouts'] == 1 and stats['late_replies'] == 1
    assert stats['replies'] == 1 and stats['pending'] == 0


def test_reply_that_is_not_json_is_counted_and_the_call_times_out(rig):
    _, proxy, client, _ = rig()
    proxy.inject('replace', line=b'\xff\xfe{"id": 1, not json')
    with pytest.raises(ControlTimeout):
        client.request('get_state', timeout_s=0.5)
    serves(client)
    stats = client.stats
    assert stats['bad_lines'] == 1 and stats['timeouts'] == 1
    assert stats['connections'] == 1


def test_reply_with_an_unknown_id_is_counted_and_the_call_times_out(rig):
    _, proxy, client, _ = rig()
    proxy.inject('rewrite_id', id_offset=1000)
    with pytest.raises(ControlTimeout):
        client.request('get_state', timeout_s=0.5)
    serves(client)
    stats = client.stats
    assert stats['unknown_replies'] == 1 and stats['late_replies'] == 0
    assert stats['replies'] == 1


@pytest.mark.parametrize('line', [
    b'garbage \x00\xff',
    b'[1, 2, 3]',
    b'"text"',
    b'{"id": "seven", "ok": true, "result": 1}',
    b'{"id": true, "ok": true, "result": 1}',
    b'{"event": "progress", "id": 99, "completed": 1, "remaining": 2}',
    b'{"event": "progress", "id": [1], "completed": 1}',
    b'{"event": 17}',
    b'{' * 100000,
    b'[' * 100000 + b']' * 100000,
    b'{"id": 1e999, "result": 1}',
    b'{"id": ' + b'9' * 5000 + b'}',
])
def test_unsolicited_lines_never_stop_the_reader(rig, line):
    _, proxy, client, _ = rig()
    assert proxy.send_to_clients(line + b'\n') == 1
    serves(client)
    serves(client)
    assert client.stats['connections'] == 1


def test_channel_closing_while_calls_wait_fails_them_and_the_client_reconnects(rig):
    _, proxy, client, events = rig()
    fault = proxy.inject('drop', op='step')
    calls = [client.request_async('step', steps=12, timeout_s=WAIT_S) for _ in range(5)]
    assert fault.wait(WAIT_S)
    for call in calls:
        error = call.exception(timeout=WAIT_S)
        assert isinstance(error, ControlUnavailable), error
        assert error.op == 'step'
    assert any('closed before the reply to step' in str(call.exception()) for call in calls)
    events.wait(lambda: len(events.events) == 2, 'the episode event of the new connection')
    serves(client)
    stats = client.stats
    assert stats['reconnects'] == 1 and stats['pending'] == 0
    # Each call waited and failed on the close, or was refused for want of a connection. A
    # send that failed (a broken pipe after the drop) is counted in send_failures as well: its
    # request still waited, and failed on the close.
    assert stats['failed_on_close'] + stats['refused_disconnected'] == 5


def test_calls_while_disconnected_fail_at_once_saying_why(emulator_factory):
    port = free_port()
    events = Events()
    client = events.client(port)
    client.start()
    try:
        events.wait(lambda: events.connections, 'the failed connection')
        with pytest.raises(ControlUnavailable, match=r'^control channel not connected \(cannot '
                           rf'connect to 127.0.0.1:{port}: connection refused\): get_state not '
                           r'sent$'):
            client.request('get_state')
        emulator_factory(control_port=port, **EMULATOR)
        events.wait(lambda: events.events, 'the episode event')
        serves(client)
    finally:
        client.stop()


def test_simulator_restart_fails_waiting_calls_and_the_client_serves_the_new_one(
        emulator_factory):
    port = free_port()
    first = emulator_factory(control_port=port, **EMULATOR)
    events = Events()
    client = events.client(port)
    client.start()
    try:
        events.wait(lambda: events.events, 'the episode event')
        serves(client)
        # A step of a million physics steps is still running when the simulator goes away.
        waiting = client.request_async('step', steps=1_000_000, timeout_s=WAIT_S * 6)
        first.stop()
        error = waiting.exception(timeout=WAIT_S)
        assert isinstance(error, ControlUnavailable)
        assert str(error).startswith('control channel closed before the reply to step (id 2)')
        second = emulator_factory(control_port=port, seed=7, **EMULATOR)
        events.wait(lambda: len(events.events) == 2, 'the new episode event')
        serves(client)
        assert events.events[1]['seed'] == 7
        assert second.requests.last()['op'] == 'get_state'
    finally:
        client.stop()


def test_second_client_waits_until_the_first_leaves(emulator_factory):
    emulator = emulator_factory(**EMULATOR)
    first, second = Events(), Events()
    one = first.client(emulator.control_port)
    two = second.client(emulator.control_port)
    one.start()
    try:
        first.wait(lambda: first.events, 'the first episode event')
        two.start()
        second.wait(lambda: second.connections, 'the queued connection')
        # Queued by the simulator: its request gets no reply while the first client is there.
        with pytest.raises(ControlTimeout):
            two.request('get_state', timeout_s=0.3)
        serves(one)
        assert not second.events
        one.stop()
        second.wait(lambda: second.events, 'the episode event of the second client')
        # The queued request reached the simulator once the first left; its reply is late.
        second.wait(lambda: two.stats['late_replies'] == 1, 'the late reply')
        serves(two)
    finally:
        one.stop()
        two.stop()


def test_eight_callers_of_500_calls_each_get_their_own_replies(emulator_factory):
    emulator = emulator_factory(**EMULATOR)
    events = Events()
    client = events.client(emulator.control_port, timeout_s=WAIT_S)
    client.start()
    callers, calls = 8, 500
    try:
        events.wait(lambda: events.events, 'the episode event')

        def caller(index: int) -> int:
            mismatches = 0
            for call in range(calls):
                name = f'nobody-{index}-{call}'
                reply = client.request('get_entity_state', entity=name)
                mismatches += reply['result'] != 2 or reply['error'] != f'no entity "{name}"'
            return mismatches

        began = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(callers) as pool:
            mismatches = list(pool.map(caller, range(callers)))
        elapsed = time.perf_counter() - began
        assert mismatches == [0] * callers
        stats = client.stats
        assert stats['replies'] == stats['requests'] == callers * calls
        assert stats['timeouts'] == stats['unknown_replies'] == stats['pending'] == 0
        print(f'\nload: {callers} callers x {calls} calls through one ControlClient in '
              f'{elapsed:.2f} s, {callers * calls / elapsed:.0f} calls/s, round trip p50 '
              f'{stats["round_trip_p50_ms"]:.2f} ms, max {stats["round_trip_max_ms"]:.2f} ms')
    finally:
        client.stop()


@pytest.mark.parametrize('line', [b'[' * 100000, b'\xff\xfe', b'{"id": -1, "op": "hello"}',
                                  b'{"id": 1.5, "op": "hello"}', b'{"op": ["hello"]}'])
def test_emulator_answers_bad_requests_and_keeps_serving(emulator_factory, line):
    emulator = emulator_factory(**EMULATOR)
    with socket.create_connection(('127.0.0.1', emulator.control_port), timeout=WAIT_S) as sock:
        lines = sock.makefile('rb')
        assert json.loads(lines.readline())['event'] == 'episode'
        sock.sendall(line + b'\n' + b'{"id": 5, "op": "get_state"}\n')
        refusal = json.loads(lines.readline())
        assert refusal['ok'] is False and refusal['result'] in (0, 4) and 'id' not in refusal
        assert json.loads(lines.readline())['id'] == 5


def test_emulator_refuses_a_weather_preset_that_is_not_text(emulator_factory):
    # Found by test_fuzz_control.py: a list as preset raised TypeError inside the op.
    emulator = emulator_factory(**EMULATOR)
    with socket.create_connection(('127.0.0.1', emulator.control_port), timeout=WAIT_S) as sock:
        lines = sock.makefile('rb')
        lines.readline()
        sock.sendall(b'{"id": 1, "op": "set_conditions", "weather": {"preset": []}}\n')
        reply = json.loads(lines.readline())
        assert reply['result'] == 4 and reply['error'].startswith('weather: preset must be one of')
