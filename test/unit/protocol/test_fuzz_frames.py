# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Fuzzing of the frame reader: valid sessions, mutated, fed in random chunks.

The CI budget is fixed and derandomized (``ACRES_FUZZ_EXAMPLES`` unset: 200 examples per
test, the same ones on every run). A longer, random run::

    ACRES_FUZZ_EXAMPLES=5000 pytest -q --timeout=0 test/unit/protocol/test_fuzz_frames.py

Whatever the bytes, the reader raises only FrameError or TransportError, never holds a
buffer larger than the limit of the frame type under the current Hello, consumes exactly
the bytes of the frames it returns, and returns only frames that keep their layout.
"""

import functools
import json
import os
import socket
import threading

from hypothesis import example
from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import numpy as np
import pytest
from support.paths import DATA
from support.socket_doubles import ChunkedSocket

from acres_bridge.protocol import frames
from acres_bridge.protocol.errors import FrameError
from acres_bridge.protocol.errors import TransportError
from acres_bridge.protocol.frame_reader import FrameReader
from acres_bridge.protocol.frame_reader import READ_AHEAD_BYTES
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.hello import encode_hello_payload
from acres_bridge.protocol.hello import Hello
from acres_bridge.protocol.limits import LIDAR_POINT_STEP
from acres_bridge.protocol.stream_client import SensorStreamClient

EXAMPLES = int(os.environ.get('ACRES_FUZZ_EXAMPLES', '200'))
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                derandomize='ACRES_FUZZ_EXAMPLES' not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
COLUMNS, RINGS, WIDTH, HEIGHT = 5, 3, 4, 2
LIMIT = 1 << 20
WAIT_S = 10.0
KNOWN_TYPES = frozenset(int(kind) for kind in FrameType)


def _hello(**sections) -> dict:
    hello = json.loads((DATA / 'hello_polaris.json')
                       .read_text())
    hello['lidar'].update(columns=COLUMNS, rings=RINGS)
    hello['camera'].update(width=WIDTH, height=HEIGHT)
    for name, values in sections.items():
        hello[name].update(values)
    return hello


@functools.lru_cache(maxsize=1024)
def _frame(kind: int, payload: bytes, sequence: int) -> bytes:
    return frames.encode_frame(kind, payload, sequence=sequence, stamp_s=sequence / 120,
                               publish_s=sequence / 120)


@functools.lru_cache(maxsize=1024)
def _payload(kind: str, seed: int) -> tuple[int, bytes]:
    rng = np.random.default_rng(seed)
    if kind == 'hello':
        return FrameType.HELLO, encode_hello_payload(_hello())
    if kind == 'hello_core':
        return FrameType.HELLO, encode_hello_payload(_hello(camera={'enabled': False}))
    if kind == 'clock':
        return FrameType.CLOCK, frames.encode_clock_payload(seed / 120)
    if kind == 'ins':
        return FrameType.INS, frames.encode_ins_payload(rng.normal(size=40))
    if kind == 'lidar':
        return FrameType.LIDAR, frames.encode_lidar_payload(
            rng.normal(size=(COLUMNS, RINGS, 4)).astype(np.float32))
    if kind == 'camera':
        return FrameType.CAMERA, frames.encode_camera_payload(
            rng.integers(0, 256, (HEIGHT, WIDTH, 3), dtype=np.uint8))
    if kind == 'barrier':
        return FrameType.BARRIER, frames.encode_barrier_payload(seed)
    return 40 + seed % 20, bytes(seed % 300)


KINDS = ['hello', 'hello_core', 'clock', 'ins', 'lidar', 'camera', 'barrier', 'unknown']


@st.composite
def sessions(draw) -> bytes:
    """A Hello, then frames of any type (a second Hello too), numbered in order."""
    kinds = ['hello'] + draw(st.lists(st.sampled_from(KINDS), max_size=14))
    return b''.join(_frame(*_payload(kind, index), index) for index, kind in enumerate(kinds))


@st.composite
def mutated(draw) -> bytes:
    """A session with byte flips, inserts, deletes, a lying length and a truncation."""
    data = bytearray(draw(sessions()))
    for _ in range(draw(st.integers(0, 4))):
        if not data:
            break
        where = draw(st.integers(0, len(data) - 1))
        action = draw(st.sampled_from(['flip', 'insert', 'delete', 'length', 'magic']))
        if action == 'flip':
            data[where] ^= 1 << draw(st.integers(0, 7))
        elif action == 'insert':
            data[where:where] = draw(st.binary(min_size=1, max_size=64))
        elif action == 'delete':
            del data[where:where + draw(st.integers(1, 64))]
        elif action == 'length' and where + 16 <= len(data):
            data[where + 12:where + 16] = draw(
                st.sampled_from([0, 1, 8, 320, 0xFFFFFFFF, LIMIT, LIMIT + 1])
                | st.integers(0, 0xFFFFFFFF)).to_bytes(4, 'little')
        elif action == 'magic':
            data[where:where] = frames.encode_header(
                draw(st.integers(0, 0xFFFF)), sequence=0,
                payload_size=draw(st.integers(0, 0xFFFFFFFF)), stamp_s=0.0, publish_s=0.0)
    if draw(st.booleans()):
        del data[draw(st.integers(0, len(data))):]
    return bytes(data)


def check_frame(frame: frames.Frame, hello: Hello | None) -> None:
    """Check that a decoded frame keeps the layout of its type and of the Hello."""
    header = frame.header
    assert header.payload_size <= frames.max_payload_size(header.frame_type, hello)
    if isinstance(frame, frames.LidarFrame):
        assert frame.point_step == LIDAR_POINT_STEP
        assert len(frame.points) == frame.columns * frame.rings * frame.point_step
        if hello is not None and hello.lidar.enabled:
            assert (frame.columns, frame.rings) == (hello.lidar.columns, hello.lidar.rings)
    elif isinstance(frame, frames.CameraFrame):
        assert frame.encoding == 'bgr8' and frame.row_step >= 3 * frame.width
        assert len(frame.pixels) == frame.height * frame.row_step
        if hello is not None and hello.camera.enabled:
            assert (frame.width, frame.height) == (hello.camera.width, hello.camera.height)
    elif isinstance(frame, frames.InsFrame):
        assert len(frame.values) == frames.INS_FIELD_COUNT
    elif isinstance(frame, frames.HelloFrame):
        assert isinstance(frame.hello.raw, dict)
    else:
        assert isinstance(frame, frames.ClockFrame | frames.BarrierFrame)
        assert header.payload_size == 8


def read_everything(reader: FrameReader, sock: ChunkedSocket) -> list[frames.Frame]:
    """Read until the stream ends or loses its framing, checking every step."""
    decoded = []
    for _ in range(64):
        hello_before = reader.hello
        consumed = reader.bytes_read
        try:
            frame = reader.read_frame()
        except FrameError as exc:
            assert reader.buffer_size <= LIMIT
            if not exc.recoverable:
                break
            # A recoverable error consumed exactly the frame it refused.
            assert reader.last_header is not None
            continue
        except TransportError as exc:
            assert str(exc) == 'peer closed'
            assert sock.position == len(sock._data)
            break
        check_frame(frame, hello_before if not isinstance(frame, frames.HelloFrame) else None)
        assert reader.bytes_read - consumed >= frames.HEADER_SIZE + frame.header.payload_size
        # What was received is read or waits in the read-ahead, nothing more.
        assert reader.bytes_read + reader.buffered == sock.position
        assert reader.buffered <= READ_AHEAD_BYTES
        assert reader.buffer_size <= LIMIT
        decoded.append(frame)
    return decoded


@FUZZ
@given(data=sessions(), chunks=st.lists(st.integers(1, 400), min_size=1, max_size=6))
def test_any_valid_session_decodes_whole_in_any_chunking(data, chunks):
    reader = FrameReader(ChunkedSocket(data, chunks), max_frame_bytes=LIMIT)
    sock = reader._sock
    decoded = read_everything(reader, sock)
    # Every frame of a known type comes out, in order; unknown types are read away.
    expected = [sequence for sequence, kind in enumerate(_kinds(data)) if kind in KNOWN_TYPES]
    assert [frame.header.sequence for frame in decoded] == expected
    assert sock.position == len(data)


def _kinds(data: bytes) -> list[int]:
    kinds, offset = [], 0
    while offset < len(data):
        header = frames.decode_header(data[offset:offset + frames.HEADER_SIZE])
        kinds.append(header.frame_type)
        offset += frames.HEADER_SIZE + header.payload_size
    return kinds


@FUZZ
@given(data=mutated(), chunks=st.lists(st.integers(1, 700), min_size=1, max_size=6))
def test_mutated_sessions_raise_only_protocol_errors_within_limits(data, chunks):
    sock = ChunkedSocket(data, chunks)
    read_everything(FrameReader(sock, max_frame_bytes=LIMIT), sock)


@FUZZ
@given(kind=st.integers(0, 0xFFFF), size=st.integers(0, 0xFFFFFFFF),
       with_hello=st.booleans())
# Known types within their limit, whose FrameError the test checks: a LiDAR and an INS
# payload of zeros that their layouts refuse, a camera payload cut short by the peer.
@example(kind=int(FrameType.LIDAR), size=100, with_hello=True)
@example(kind=int(FrameType.INS), size=12, with_hello=False)
@example(kind=int(FrameType.CAMERA), size=8192, with_hello=False)
def test_any_claimed_length_is_refused_or_read_within_the_limit_of_its_type(
        kind, size, with_hello):
    hello = _frame(*_payload('hello', 0), 0) if with_hello else b''
    data = hello + frames.encode_header(kind, sequence=1, payload_size=size, stamp_s=0.0,
                                        publish_s=0.0) + bytes(min(size, 4096))
    sock = ChunkedSocket(data, [1 << 16])
    reader = FrameReader(sock)
    if with_hello:
        reader.read_frame()
    layout = reader.hello
    limit = frames.max_payload_size(kind, layout)
    try:
        reader.read_frame()
    except FrameError as exc:
        if size > limit:
            assert 'more than the limit' in str(exc) and not exc.recoverable
        elif size > 4096:
            # Within the limit, but the peer sent 4096 bytes of it and closed.
            assert str(exc).startswith('truncated frame: ') and not exc.recoverable, exc
        else:
            # The whole payload came: a layout its type refuses, read away whole.
            assert exc.recoverable, exc
            assert reader.bytes_read == len(data)
    except TransportError:
        assert kind not in KNOWN_TYPES and size <= 4096
    assert reader.buffer_size <= max(limit if size <= limit else 0,
                                     len(hello) - frames.HEADER_SIZE)


# --- the client thread on a real socket ------------------------------------------------------

class OneShotServer:
    """On 127.0.0.1:0, serve each accepted connection the next queued bytes, then close."""

    def __init__(self) -> None:
        self._server = socket.create_server(('127.0.0.1', 0))
        self._server.settimeout(0.05)
        self.port = self._server.getsockname()[1]
        self._items: list[bytes] = []
        self._lock = threading.Condition()
        self.served = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def push(self, data: bytes) -> int:
        with self._lock:
            self._items.append(data)
            return self.served + len(self._items)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            with conn:
                with self._lock:
                    data = self._items.pop(0) if self._items else b''
                try:
                    conn.sendall(data)
                except OSError:
                    pass
                with self._lock:
                    self.served += 1
                    self._lock.notify_all()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(WAIT_S)
        self._server.close()


@pytest.fixture(scope='module')
def fuzzed_client():
    server = OneShotServer()
    seen: list[frames.Frame] = []
    ends = threading.Condition()
    state = {'ends': 0}

    def on_frame(frame: frames.Frame) -> None:
        check_frame(frame, None if isinstance(frame, frames.HelloFrame) else client.hello)
        seen.append(frame)

    def on_connection(connected: bool, reason: str) -> None:
        if not connected:
            with ends:
                state['ends'] += 1
                ends.notify_all()

    client = SensorStreamClient('127.0.0.1', server.port, name='fuzz', on_frame=on_frame,
                                on_connection=on_connection, reconnect_s=0.005,
                                read_timeout_s=0.05, max_frame_bytes=LIMIT)
    client.start()
    yield server, client, ends, state
    client.stop()
    server.close()


@settings(FUZZ, max_examples=max(EXAMPLES // 3, 1))
@given(data=mutated())
def test_client_thread_survives_any_stream_and_checks_every_frame(fuzzed_client, data):
    server, client, ends, state = fuzzed_client
    with ends:
        before = state['ends']
    server.push(data)
    with ends:
        # The connection that carries these bytes ends (reported as a change of reason).
        assert ends.wait_for(lambda: state['ends'] > before or client.stats[
            'callback_errors'], WAIT_S)
    stats = client.stats
    assert stats['callback_errors'] == 0
    assert client._thread.is_alive()
