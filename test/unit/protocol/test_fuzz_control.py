# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Fuzzing of the control channel: the client's reply handling and the emulator's request handling.

The CI budget is fixed and derandomized (``ACRES_FUZZ_EXAMPLES`` unset: 200 examples per
test); a longer, random run::

    ACRES_FUZZ_EXAMPLES=5000 pytest -q --timeout=0 test/unit/protocol/test_fuzz_control.py

Client: a server on 127.0.0.1 sends arbitrary lines (JSON of any shape, replies with ids of
any type, events, progress for no request, bytes that are not UTF-8, nesting deeper than the
stack), then a sync event; each line lands in exactly one counter of ``stats``, and the next
request still gets its own reply. Emulator: requests of every op with fields of any type get
exactly one reply each, with their id, a known result code, and never an internal error.
"""

import json
import os
import socket
import threading

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from acres_bridge.protocol.control_client import ControlClient

EXAMPLES = int(os.environ.get('ACRES_FUZZ_EXAMPLES', '200'))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                derandomize='ACRES_FUZZ_EXAMPLES' not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
WAIT_S = 10.0
COUNTERS = ('bad_lines', 'events', 'progress_events', 'orphan_progress', 'replies_without_id',
            'unknown_replies', 'late_replies', 'replies')

# --- lines a simulator (or something pretending to be one) could send ------------------------

_scalars = (st.none() | st.booleans() | st.integers(-(1 << 70), 1 << 70)
            | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20))
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
_ids = (st.integers(-5, 1 << 40) | st.none() | st.booleans() | st.floats() | st.text(max_size=5)
        | st.lists(st.integers(), max_size=2))


def _encode(value) -> bytes:
    return json.dumps(value).encode()


_replies = st.builds(
    lambda request_id, fields, drop_id: {**fields, **({} if drop_id else {'id': request_id})},
    _ids, st.dictionaries(st.sampled_from(['ok', 'result', 'error', 'state', 'x']), _json,
                          max_size=4), st.booleans()).map(_encode)
_events = st.builds(
    lambda event, request_id, fields: {'event': event, 'id': request_id, **fields},
    st.sampled_from(['episode', 'progress', 'other']) | _json, _ids,
    st.dictionaries(st.sampled_from(['completed', 'remaining', 'step', 'state']), _json,
                    max_size=3)).map(_encode)
_raw = (st.binary(max_size=80).map(lambda data: data.replace(b'\n', b' '))
        | st.integers(1, 3000).map(lambda depth: b'[' * depth + b']' * depth)
        | st.integers(1, 3000).map(lambda depth: b'{"a":' * depth + b'1' + b'}' * depth)
        | st.sampled_from([b'NaN', b'{"id": NaN}', b'{"id": Infinity}', b'  ', b'\r', b'{}',
                           b'{"id": 1e400}', b'{"id": ' + b'9' * 5000 + b'}',
                           '{"id": 3, "error": "\u00e9\u4e2d"}'.encode('utf-16')]))
lines = st.lists(_replies | _events | _raw | _json.map(_encode), min_size=1, max_size=8)


def expected_counts(batch: list[bytes]) -> int:
    """Return how many lines the client must count: those with any content."""
    count = 0
    for line in b'\n'.join(batch).split(b'\n'):
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            message = None
        count += isinstance(message, dict) or bool(line.strip())
    return count


class FuzzServer:
    """A control channel on 127.0.0.1:0: replies to each request, sends what it is given."""

    def __init__(self) -> None:
        self._server = socket.create_server(('127.0.0.1', 0))
        self.port = self._server.getsockname()[1]
        self._conn: socket.socket | None = None
        self._connected = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        conn, _ = self._server.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            self._conn = conn
            self._connected.set()
            for line in conn.makefile('rb'):
                request = json.loads(line)
                self.send(_encode({'id': request['id'], 'ok': True, 'result': 1,
                                   'echo': request.get('n')}) + b'\n')

    def send(self, data: bytes) -> None:
        assert self._connected.wait(WAIT_S)
        with self._lock:
            self._conn.sendall(data)

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass   # the client closed first
        self._thread.join(WAIT_S)
        self._server.close()


@pytest.fixture(scope='module')
def fuzzed():
    server = FuzzServer()
    synced = threading.Condition()
    state = {'sync': -1}

    def on_event(message: dict) -> None:
        if message.get('event') == 'sync':
            with synced:
                state['sync'] = message['n']
                synced.notify_all()

    client = ControlClient('127.0.0.1', server.port, on_event=on_event, timeout_s=WAIT_S)
    client.start()
    yield server, client, synced, state
    client.stop()
    server.close()


@FUZZ
@given(batch=lines)
def test_client_counts_every_line_and_still_answers_its_callers(fuzzed, batch):
    server, client, synced, state = fuzzed
    before = client.stats
    number = before['events']
    server.send(b'\n'.join(batch) + b'\n' + _encode({'event': 'sync', 'n': number}) + b'\n')
    with synced:
        assert synced.wait_for(lambda: state['sync'] == number, WAIT_S)
    after = client.stats
    counted = sum(after[key] - before[key] for key in COUNTERS)
    assert counted == expected_counts(batch) + 1   # and the sync event
    assert after['callback_errors'] == 0 and after['connections'] == 1
    assert client.request('ping', n=number) == {'id': after['requests'] + 1, 'ok': True,
                                                'result': 1, 'echo': number}


# --- the emulator's side ---------------------------------------------------------------------

# Ops that end the session, run for long, or write files are left out of the fuzzing.
SAFE_OPS = ['hello', 'get_state', 'get_entities', 'get_entity_state', 'set_entity_state',
            'spawn_entity', 'delete_entity', 'get_spawnables', 'get_named_poses',
            'set_conditions', 'set_vehicle_shift', 'get_vehicle_shifts', 'farm_state',
            'field_query', 'frobnicate']
FIELDS = ['entity', 'name', 'uri', 'pose', 'twist', 'frame', 'x', 'y', 'fields',
          'edge_band_m', 'agent', 'shift', 'clock', 'weather', 'soil', 'allow_renaming',
          'position', 'orientation', 'state', 'steps', 'scope', 'filter', 'initial_pose',
          'namespace', 'date', 'preset', 'lidar', 'camera', 'ins', 'soil_water',
          'restore_fields', 'wetness', 'rain_mm_h', 'hour', 'label', 'tags', 'categories']
RESULTS = {0, 1, 2, 3, 4, 101, 102, 103, 104, 107}
_values = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(FIELDS + ['z', 'w', 'linear', 'angular']), inner,
                      max_size=5),
    max_leaves=10)
requests = st.builds(lambda op, fields: {'op': op, **fields}, st.sampled_from(SAFE_OPS),
                     st.dictionaries(st.sampled_from(FIELDS), _values, max_size=4))


@pytest.fixture(scope='module')
def emulator_lines():
    from acres_bridge.emulator.server import Emulator
    emulator = Emulator(lockstep=True, drive='hold', render_every=10).start()
    sock = socket.create_connection(('127.0.0.1', emulator.control_port), timeout=WAIT_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    replies = sock.makefile('rb')
    assert json.loads(replies.readline())['event'] == 'episode'
    yield emulator, sock, replies
    sock.close()
    emulator.stop()


@FUZZ
@given(batch=st.lists(requests, min_size=1, max_size=5))
def test_emulator_answers_every_request_once_with_a_known_code(emulator_lines, batch, caplog):
    emulator, sock, replies = emulator_lines
    caplog.clear()
    first = emulator.requests.count
    data = b''.join(json.dumps({**request, 'id': first + index},
                               allow_nan=True).encode() + b'\n'
                    for index, request in enumerate(batch))
    sock.sendall(data)
    got = []
    while len(got) < len(batch):
        message = json.loads(replies.readline())
        if 'event' not in message:
            got.append(message)
    assert [reply['id'] for reply in got] == [first + index for index in range(len(batch))]
    for request, reply in zip(batch, got):
        assert reply['result'] in RESULTS, (request, reply)
        assert reply['ok'] is (reply['result'] == 1)
        # result 4 "<op> failed: <exception>" means an exception escaped the op's checks.
        internal = reply.get('error', '').startswith(f'{request["op"]} failed:')
        assert not internal, (request, reply)
