# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The frame reader receiving payloads into a caller's buffer (``payload_target``).

The target is asked only after the header passed its limits, the payload lands in the view it
gives and the frame's views point there; a view of the wrong size is refused, and a client
counts a target that fails and reads into its own buffer instead.
"""

import json
import queue
import socket
import threading

import numpy as np
import pytest
from support.paths import DATA
from support.socket_doubles import ChunkedSocket

from acres_bridge.protocol import frames
from acres_bridge.protocol.errors import FrameError
from acres_bridge.protocol.frame_reader import FrameReader
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.hello import encode_hello_payload
from acres_bridge.protocol.limits import SUB_HEADER_SIZE
from acres_bridge.protocol.stream_client import SensorStreamClient

COLUMNS, RINGS = 6, 4
WAIT_S = 5.0


def _hello() -> bytes:
    hello = json.loads((DATA / 'hello_polaris.json').read_text())
    hello['lidar'].update(columns=COLUMNS, rings=RINGS)
    return encode_hello_payload(hello)


def _points(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-9, 9, (COLUMNS, RINGS, 4)).astype(np.float32)


def _frame(frame_type: int, payload: bytes, sequence: int) -> bytes:
    return frames.encode_frame(frame_type, payload, sequence=sequence, stamp_s=float(sequence),
                               publish_s=0.0)


class Target:
    """A payload target with one buffer for LiDAR frames; records every header it is asked."""

    def __init__(self, size: int) -> None:
        self.buffer = bytearray(size + 8)
        self.asked: list[frames.FrameHeader] = []

    def __call__(self, header: frames.FrameHeader) -> memoryview | None:
        self.asked.append(header)
        if header.frame_type != FrameType.LIDAR:
            return None
        return memoryview(self.buffer)[4:4 + header.payload_size]


def test_the_payload_lands_in_the_target_and_the_frame_points_there():
    size = frames.lidar_payload_size(COLUMNS, RINGS)
    target = Target(size)
    data = b''.join((_frame(FrameType.HELLO, _hello(), 0),
                     _frame(FrameType.LIDAR, frames.encode_lidar_payload(_points(1)), 1),
                     _frame(FrameType.CLOCK, frames.encode_clock_payload(1.0), 2),
                     _frame(FrameType.LIDAR, frames.encode_lidar_payload(_points(2)), 3)))
    reader = FrameReader(ChunkedSocket(data, [7, 1000, 3]), payload_target=target)
    assert isinstance(reader.read_frame(), frames.HelloFrame)
    first = reader.read_frame()
    assert first.points.obj is target.buffer
    assert bytes(first.points) == _points(1).tobytes()
    assert target.buffer[4 + SUB_HEADER_SIZE:4 + size] == _points(1).tobytes()
    assert isinstance(reader.read_frame(), frames.ClockFrame)
    second = reader.read_frame()
    assert bytes(second.points) == _points(2).tobytes()
    assert [header.frame_type for header in target.asked] == [
        FrameType.HELLO, FrameType.LIDAR, FrameType.CLOCK, FrameType.LIDAR]
    # The Hello and the clock came through the read-ahead; the large-payload buffer was
    # never needed.
    assert reader.buffer_size == 0


def test_a_header_beyond_the_limit_is_refused_before_the_target_is_asked():
    target = Target(1 << 20)
    claim = frames.encode_header(FrameType.LIDAR, sequence=1, stamp_s=0.0, publish_s=0.0,
                                 payload_size=frames.lidar_payload_size(COLUMNS, RINGS) + 16)
    reader = FrameReader(ChunkedSocket(_frame(FrameType.HELLO, _hello(), 0) + claim),
                         payload_target=target)
    reader.read_frame()
    with pytest.raises(FrameError, match='more than the limit') as error:
        reader.read_frame()
    assert not error.value.recoverable
    assert [header.frame_type for header in target.asked] == [FrameType.HELLO]


def test_a_target_of_the_wrong_size_is_refused():
    def wrong(header):
        return memoryview(bytearray(header.payload_size + 1))
    reader = FrameReader(ChunkedSocket(_frame(FrameType.CLOCK, frames.encode_clock_payload(1.0),
                                              0)), payload_target=wrong)
    with pytest.raises(ValueError, match='payload_target gave 9 bytes'):
        reader.read_frame()


def test_a_client_counts_a_failing_target_and_reads_into_its_own_buffer():
    server = socket.create_server(('127.0.0.1', 0))
    received: queue.Queue = queue.Queue()
    calls = []

    def target(header):
        calls.append(header.frame_type)
        if len(calls) == 2:
            raise RuntimeError('target failed')
        return memoryview(b'read-only')     # neither writable nor of the right size

    def serve():
        conn, _ = server.accept()
        with conn:
            conn.sendall(b''.join(_frame(FrameType.CLOCK, frames.encode_clock_payload(t), t)
                                  for t in range(3)))
            conn.recv(1)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client = SensorStreamClient('127.0.0.1', server.getsockname()[1], name='target',
                                on_frame=lambda frame: received.put(frame.vehicle_time_s),
                                payload_target=target, read_timeout_s=0.05)
    client.start()
    try:
        assert [received.get(timeout=WAIT_S) for _ in range(3)] == [0.0, 1.0, 2.0]
        # The target of each frame is asked (and counted) before its on_frame runs.
        stats = client.stats
        assert stats['callback_errors'] == 3
        assert stats['bad_frames'] == 0
        assert stats['connections'] == 1
    finally:
        client.stop()
        server.close()
        thread.join(WAIT_S)
