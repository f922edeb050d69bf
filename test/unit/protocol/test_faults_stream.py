# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Faults on the sensor stream, between the emulator and SensorStreamClient (no ROS).

Each test puts a FaultProxy between a running emulator and a client, breaks the stream once,
and checks that the client stays up, says what happened (stats, on_connection, the log), and
delivers valid frames again: a LiDAR frame of the Hello's layout after the fault.
"""

import json
import logging
import socket
import threading
import time
import tracemalloc

import pytest
from support.paths import DATA
from support.waiting import wait_until

from acres_bridge.emulator.faults import FaultProxy
from acres_bridge.emulator.faults import UNKNOWN_FRAME_TYPE
from acres_bridge.protocol import frames
from acres_bridge.protocol.errors import FrameError
from acres_bridge.protocol.frame_reader import FrameReader
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.hello import encode_hello_payload
from acres_bridge.protocol.limits import LIDAR_POINT_STEP
from acres_bridge.protocol.limits import MAX_SENSOR_PAYLOAD
from acres_bridge.protocol.stream_client import SensorStreamClient
from acres_devkit.ports import free_port

WAIT_S = 10.0
EMULATOR = {'drive': 'hold', 'render_every': 10}


class Watcher:
    """Collect what a client reports, and wait for conditions on it."""

    def __init__(self) -> None:
        self.frames: list[tuple[int, str, int, int]] = []   # (connection, type, seq, bytes)
        self.valid_lidar: list[tuple[int, int]] = []        # (connection, sequence)
        self.connections: list[tuple[bool, str]] = []
        self.bad: list[str] = []
        self.threads: set[str] = set()
        self._connection = 0
        self._changed = threading.Condition()

    def on_frame(self, frame: frames.Frame) -> None:
        with self._changed:
            self.threads.add(threading.current_thread().name)
            kind = type(frame).__name__
            size = 0
            if isinstance(frame, frames.LidarFrame):
                size = len(frame.points)
                if size == frame.columns * frame.rings * LIDAR_POINT_STEP:
                    self.valid_lidar.append((self._connection, frame.header.sequence))
            self.frames.append((self._connection, kind, frame.header.sequence, size))
            self._changed.notify_all()

    def on_connection(self, connected: bool, reason: str) -> None:
        with self._changed:
            if connected:
                self._connection += 1
            self.connections.append((connected, reason))
            self._changed.notify_all()

    def on_bad_frame(self, error: Exception) -> None:
        with self._changed:
            self.bad.append(str(error))
            self._changed.notify_all()

    def wait(self, predicate, what: str, timeout_s: float = WAIT_S) -> None:
        with self._changed:
            assert self._changed.wait_for(predicate, timeout_s), f'timed out waiting for {what}'

    def lidar_on(self, connection: int) -> bool:
        return any(index == connection for index, _ in self.valid_lidar)

    def hellos_on(self, connection: int) -> int:
        return sum(1 for index, kind, _, _ in self.frames
                   if index == connection and kind == 'HelloFrame')

    def client(self, port: int, **options) -> SensorStreamClient:
        return SensorStreamClient('127.0.0.1', port, name='faults', on_frame=self.on_frame,
                                  on_connection=self.on_connection,
                                  on_bad_frame=self.on_bad_frame,
                                  **{'reconnect_s': 0.05, 'read_timeout_s': 0.05, **options})


@pytest.fixture
def rig(emulator_factory):
    """Start an emulator, a proxy in front of its stream and a client on the proxy."""
    made = []

    def start(**options):
        emulator = emulator_factory(**{**EMULATOR, **options})
        proxy = FaultProxy(emulator.sensor_ports[0], name='stream').start()
        watcher = Watcher()
        client = watcher.client(proxy.port)
        made.append((client, proxy))
        client.start()
        watcher.wait(lambda: watcher.lidar_on(1), 'a first LiDAR frame')
        return emulator, proxy, client, watcher

    yield start
    for client, proxy in made:
        client.stop()
        proxy.stop()


def recovered(watcher: Watcher, client: SensorStreamClient, connection: int = 2) -> None:
    """Check the client reconnected, got a new Hello and valid LiDAR data, on its own thread."""
    watcher.wait(lambda: watcher.lidar_on(connection), f'valid LiDAR on connection {connection}')
    assert watcher.hellos_on(connection) == 1
    assert client.connected
    assert client.stats['reconnects'] == connection - 1
    assert watcher.threads == {'sensor-rx:faults'}
    assert client.hello is not None and client.hello.lidar.columns == 1800


def test_bad_magic_mid_stream_reconnects_and_data_flows_again(rig, caplog):
    caplog.set_level(logging.WARNING, logger='acres_bridge.protocol.stream_client')
    _, proxy, client, watcher = rig()
    assert proxy.inject('bad_magic', frame_type=FrameType.LIDAR).wait(WAIT_S)
    recovered(watcher, client)
    stats = client.stats
    assert stats['bad_frames'] == 1
    assert stats['by_type']['lidar']['bad'] == 0   # the type of a header with bad magic is moot
    assert "bad magic b'XXXX'" in stats['last_bad_frame']
    assert (False, "bad frame: bad magic b'XXXX', expected b'TSS1'") in watcher.connections
    assert any('bad magic' in record.getMessage() for record in caplog.records)


def test_frame_cut_mid_payload_reconnects_and_data_flows_again(rig):
    _, proxy, client, watcher = rig()
    assert proxy.inject('cut', frame_type=FrameType.CAMERA, keep=1000).wait(WAIT_S)
    recovered(watcher, client)
    stats = client.stats
    assert stats['bad_frames'] == 1
    assert stats['last_bad_frame'] == (
        'truncated frame: the peer closed after 1000 of 1376272 bytes')
    assert stats['by_type']['camera']['bad'] == 1
    assert stats['disconnects'] == 1


@pytest.mark.parametrize('claimed', [0xFFFFFFFF, 3 << 30, MAX_SENSOR_PAYLOAD + 1])
def test_header_claiming_gigabytes_is_refused_and_data_flows_again(rig, claimed):
    _, proxy, client, watcher = rig()
    assert proxy.inject('huge_header', frame_type=FrameType.LIDAR, size=claimed).wait(WAIT_S)
    recovered(watcher, client)
    stats = client.stats
    assert stats['last_bad_frame'] == (
        f'lidar frame claims {claimed} payload bytes, more than the limit of 921616')
    assert stats['by_type']['lidar']['bad'] == 1


def test_random_bytes_after_the_hello_reconnect_and_data_flows_again(rig):
    _, proxy, client, watcher = rig()
    proxy.drop_all()
    watcher.wait(lambda: client.stats['connections'] == 2, 'the second connection')
    # The fault fires on the first frame after the new Hello: the bytes follow the Hello.
    assert proxy.inject('garbage', size=4096, seed=8).wait(WAIT_S)
    recovered(watcher, client, connection=3)
    assert client.stats['bad_frames'] == 1
    assert client.stats['last_bad_frame'].startswith('bad magic')


def test_unknown_frame_type_is_skipped_without_reconnecting(rig):
    _, proxy, client, watcher = rig()
    before = client.stats['frames']
    assert proxy.inject('unknown_type', frame_type=FrameType.CLOCK, size=70000).wait(WAIT_S)
    watcher.wait(lambda: client.stats['unknown_frames'] == 1, 'the unknown frame counted')
    watcher.wait(lambda: len(watcher.valid_lidar) >= 2, 'more LiDAR frames')
    stats = client.stats
    assert stats['unknown_bytes'] == frames.HEADER_SIZE + 70000
    assert stats['frames'] > before
    assert stats['connections'] == 1
    assert stats['bad_frames'] == stats['sequence_gaps'] == 0
    assert str(UNKNOWN_FRAME_TYPE) not in stats['by_type']


def test_stalled_stream_keeps_the_connection_and_resumes(rig):
    emulator, proxy, client, watcher = rig()
    fault = proxy.inject('stall', frame_type=FrameType.CLOCK)
    assert fault.wait(WAIT_S)
    # Every frame the proxy sent before the stalled one has reached the client.
    before = (fault.sequence - 1) & 0xFFFFFFFF
    wait_until(lambda: any(item['last_sequence'] == before
                           for item in client.stats['by_type'].values()),
               WAIT_S, 'the frames before the stalled one')
    counted = client.stats['by_type']['clock']['frames']
    # The stream is silent while stalled: the emulator goes on making clock frames (20 more
    # than the proxy holds back) and not one of them reaches the client.
    made = emulator.streams[0].counters[FrameType.CLOCK].frames
    wait_until(lambda: emulator.streams[0].counters[FrameType.CLOCK].frames >= made + 20,
               WAIT_S, '20 more clock frames from the emulator')
    assert client.stats['by_type']['clock']['frames'] == counted
    assert client.connected
    fault.release.set()
    watcher.wait(lambda: client.stats['by_type']['clock']['frames'] > counted + 5,
                 'clock frames after the stall')
    watcher.wait(lambda: len(watcher.valid_lidar) >= 3, 'LiDAR frames after the stall')
    stats = client.stats
    assert stats['connections'] == 1 and stats['bad_frames'] == 0
    assert stats['sequence_gaps'] == 0


def test_dropped_connection_reconnects_with_a_new_hello(rig):
    _, proxy, client, watcher = rig()
    assert proxy.inject('drop', frame_type=FrameType.INS).wait(WAIT_S)
    recovered(watcher, client)
    assert (False, 'peer closed') in watcher.connections
    assert client.stats['bad_frames'] == 0


def test_simulator_restart_mid_stream_reconnects_to_the_new_one(emulator_factory):
    port = free_port()
    first = emulator_factory(sensor_ports=(port,), **EMULATOR)
    watcher = Watcher()
    client = watcher.client(port)
    client.start()
    try:
        watcher.wait(lambda: watcher.lidar_on(1), 'LiDAR from the first simulator')
        first.stop()
        watcher.wait(lambda: not client.connected, 'the disconnect')
        watcher.wait(lambda: any('refused' in reason for _, reason in watcher.connections),
                     'a refused reconnect')
        emulator_factory(sensor_ports=(port,), seed=7, **EMULATOR)
        recovered(watcher, client)
        reasons = [reason for connected, reason in watcher.connections if not connected]
        assert reasons[0] == 'peer closed'
        assert reasons[1] == f'cannot connect to 127.0.0.1:{port}: connection refused'
        # The new simulator numbers from 0 again; the first frame after a Hello is not a gap.
        assert client.stats['sequence_gaps'] == 0
    finally:
        client.stop()


def test_second_client_waits_until_the_first_leaves(emulator_factory):
    emulator = emulator_factory(**EMULATOR)
    first, second = Watcher(), Watcher()
    one = first.client(emulator.sensor_ports[0])
    two = second.client(emulator.sensor_ports[0])
    one.start()
    try:
        first.wait(lambda: first.lidar_on(1), 'LiDAR on the first client')
        two.start()
        # The second stays in the listen queue: connected at TCP level, no Hello, no frames.
        second.wait(lambda: two.connected, 'the queued connection')
        assert not first.bad and not second.frames
        count = len(first.valid_lidar)
        first.wait(lambda: len(first.valid_lidar) > count + 1, 'the first client going on')
        assert not second.frames
        one.stop()
        second.wait(lambda: second.lidar_on(1), 'LiDAR on the second client')
        assert second.frames[0][1] == 'HelloFrame'
        assert first.bad == second.bad == []
    finally:
        one.stop()
        two.stop()


# --- memory --------------------------------------------------------------------------------

def _held_server(*parts: bytes):
    """Serve one connection on 127.0.0.1:0: send the parts, then hold it until released."""
    server = socket.create_server(('127.0.0.1', 0))
    release = threading.Event()

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.sendall(b''.join(parts))
            release.wait(WAIT_S)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server, release, thread


def _hello_bytes(**changes) -> bytes:
    hello = json.loads((DATA / 'hello_polaris.json')
                       .read_text())
    for section, values in changes.items():
        hello[section].update(values)
    return frames.encode_frame(FrameType.HELLO, encode_hello_payload(hello), sequence=0,
                               stamp_s=0.0, publish_s=time.monotonic())


@pytest.mark.parametrize('claimed', [0xFFFFFFFF, 1 << 30, MAX_SENSOR_PAYLOAD + 1])
def test_memory_never_follows_a_header_claiming_gigabytes(claimed):
    claim = frames.encode_header(FrameType.LIDAR, sequence=1, payload_size=claimed,
                                 stamp_s=0.0, publish_s=0.0)
    server, release, thread = _held_server(_hello_bytes(), claim, bytes(100))
    watcher = Watcher()
    client = watcher.client(server.getsockname()[1], reconnect_s=30.0)
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        client.start()
        # The refusal is reported before the reader could allocate anything for the claim.
        watcher.wait(lambda: watcher.bad, 'the refusal')
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        client.stop()
        release.set()
        thread.join(WAIT_S)
        server.close()
    assert watcher.bad == [f'lidar frame claims {claimed} payload bytes, more than the limit '
                           'of 921616']
    assert peak - base < 1 << 20


class _Trickle:
    """A socket double: serves its bytes in 4 KiB pieces, then the end of the stream."""

    def __init__(self, data: bytes) -> None:
        self._data = memoryview(data)
        self.position = 0

    def recv_into(self, view: memoryview, count: int) -> int:
        size = min(count, len(self._data) - self.position, 4096)
        view[:size] = self._data[self.position:self.position + size]
        self.position += size
        return size


def _memory_for_claim(kind: int, claimed: int, hello: bytes) -> int:
    """Return the traced memory a reader takes for a claim followed by only 100 bytes."""
    claim = frames.encode_header(kind, sequence=1, payload_size=claimed, stamp_s=0.0,
                                 publish_s=0.0)
    reader = FrameReader(_Trickle(hello + claim + bytes(100)))
    reader.read_frame()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        with pytest.raises(FrameError, match='truncated frame: the peer closed after 100 of '
                           f'{claimed} bytes'):
            reader.read_frame()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - base


def test_memory_for_a_claim_within_the_layout_is_the_layout():
    size = frames.lidar_payload_size(1800, 32)
    assert size <= _memory_for_claim(FrameType.LIDAR, size, _hello_bytes()) < size + (64 << 10)


def test_memory_for_a_disabled_sensor_follows_the_bytes_present_not_the_claim():
    # The Hello does not size the camera: the claim may be up to MAX_SENSOR_PAYLOAD (64 MiB).
    hello = _hello_bytes(camera={'enabled': False})
    grown = _memory_for_claim(FrameType.CAMERA, MAX_SENSOR_PAYLOAD, hello)
    assert grown < (1 << 20) + (64 << 10)
