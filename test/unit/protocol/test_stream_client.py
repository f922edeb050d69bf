# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Tests of the sensor stream transport: loopback checks, the frame reader and the client."""

import json
import queue
import socket
import struct
import threading
import time

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import numpy as np
import pytest
from support.paths import DATA
from support.socket_doubles import ChunkedSocket
from support.socket_doubles import LoopbackServer
from support.waiting import wait_until

from acres_bridge.protocol import frames
from acres_bridge.protocol import stream_client
from acres_bridge.protocol.errors import FrameError
from acres_bridge.protocol.errors import TransportError
from acres_bridge.protocol.frame_reader import FrameReader
from acres_bridge.protocol.frame_reader import READ_AHEAD_BYTES
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.hello import encode_hello_payload
from acres_bridge.protocol.limits import MAX_SENSOR_PAYLOAD
from acres_bridge.protocol.sockets import require_loopback
from acres_bridge.protocol.stream_client import SensorStreamClient

WAIT_S = 5.0
COLUMNS, RINGS, WIDTH, HEIGHT = 6, 4, 5, 3


def hello_dict() -> dict:
    hello = json.loads((DATA / 'hello_polaris.json').read_text())
    hello['lidar'].update(columns=COLUMNS, rings=RINGS)
    hello['camera'].update(width=WIDTH, height=HEIGHT)
    return hello


def lidar_points(seed: float = 0.0, columns: int = COLUMNS) -> np.ndarray:
    size = columns * RINGS * 4
    return (np.arange(size, dtype=np.float32) + seed).reshape(columns, RINGS, 4)


def camera_pixels() -> np.ndarray:
    return (np.arange(HEIGHT * WIDTH * 3) % 256).astype(np.uint8).reshape(HEIGHT, WIDTH, 3)


def encode(frame_type: int, payload: bytes, sequence: int = 0, stamp_s: float = 0.5) -> bytes:
    return frames.encode_frame(frame_type, payload, sequence=sequence, stamp_s=stamp_s,
                               publish_s=time.monotonic())


def session_bytes(first_sequence: int = 0) -> list[bytes]:
    """Return a Hello and one frame of each other type."""
    payloads = [
        (FrameType.HELLO, encode_hello_payload(hello_dict())),
        (FrameType.CAMERA, frames.encode_camera_payload(camera_pixels())),
        (FrameType.LIDAR, frames.encode_lidar_payload(lidar_points())),
        (FrameType.CLOCK, frames.encode_clock_payload(0.325)),
        (FrameType.INS, frames.encode_ins_payload([float(i) for i in range(40)])),
        (FrameType.BARRIER, frames.encode_barrier_payload(12)),
    ]
    return [encode(kind, payload, first_sequence + index)
            for index, (kind, payload) in enumerate(payloads)]


def read_all(reader: FrameReader) -> list[frames.Frame]:
    decoded = []
    with pytest.raises(TransportError, match='peer closed'):
        while True:
            decoded.append(reader.read_frame())
    return decoded


def check_session(decoded: list[frames.Frame]) -> None:
    kinds = [type(frame) for frame in decoded]
    assert kinds == [frames.HelloFrame, frames.CameraFrame, frames.LidarFrame,
                     frames.ClockFrame, frames.InsFrame, frames.BarrierFrame]
    assert decoded[0].hello.raw == hello_dict()
    assert decoded[3].vehicle_time_s == 0.325
    assert decoded[4].values == tuple(float(i) for i in range(40))
    assert decoded[5].step == 12
    assert [frame.header.sequence for frame in decoded] == list(range(6))


# --- require_loopback ------------------------------------------------------------------------

@pytest.mark.parametrize('host, address', [
    ('127.0.0.1', '127.0.0.1'), ('127.1.2.3', '127.1.2.3'), ('localhost', '127.0.0.1'),
    (' 127.0.0.1 ', '127.0.0.1'), ('::1', '::1'), ('[::1]', '::1')])
def test_loopback_hosts_are_accepted(host, address):
    assert require_loopback(host) == address


@pytest.mark.parametrize('host, message', [
    ('0.0.0.0', 'any address'), ('10.1.2.3', 'not a loopback'), ('192.168.0.1', 'not a loopback'),
    ('::', 'any address'), ('::ffff:127.0.0.1', 'not a loopback'), ('', 'empty'),
    ('no-such-host.invalid', 'does not resolve')])
def test_other_hosts_are_refused_saying_why(host, message):
    with pytest.raises(TransportError, match=message):
        require_loopback(host)


def test_a_name_that_resolves_elsewhere_is_refused(monkeypatch):
    real = socket.getaddrinfo

    def fake(host, *args, **kwargs):
        if host == 'sim.example':
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, '', ('127.0.0.1', 0)),
                    (socket.AF_INET, socket.SOCK_STREAM, 6, '', ('203.0.113.5', 0))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, 'getaddrinfo', fake)
    with pytest.raises(TransportError, match="'sim.example' resolves to 203.0.113.5"):
        require_loopback('sim.example')


# --- FrameReader -----------------------------------------------------------------------------

def test_reader_decodes_a_session_fed_one_byte_at_a_time():
    reader = FrameReader(ChunkedSocket(b''.join(session_bytes()), 1))
    decoded = []
    for _ in range(6):
        frame = reader.read_frame()
        if isinstance(frame, frames.LidarFrame):
            assert bytes(frame.points) == lidar_points().tobytes()
        if isinstance(frame, frames.CameraFrame):
            assert bytes(frame.pixels) == camera_pixels().tobytes()
        decoded.append(frame)
    check_session(decoded)
    assert reader.hello.agent == 'polaris'


def test_reader_decodes_frames_that_arrive_together_and_split_oddly():
    data = b''.join(session_bytes())
    for chunks in ([len(data)], [7, 3, 1000, 33], [31, 33]):
        check_session(read_all(FrameReader(ChunkedSocket(data, chunks))))


def test_small_frames_that_arrive_together_take_one_receive():
    data = b''.join(session_bytes())
    sock = ChunkedSocket(data)
    reader = FrameReader(sock)
    check_session(read_all(reader))
    # Six frames, then the end of the stream: two calls, not two per frame.
    assert sock.calls == 2
    assert reader.bytes_read == len(data) and reader.buffered == 0
    assert reader.buffer_size == 0


def test_payloads_beyond_the_read_ahead_land_in_one_reused_buffer():
    columns = READ_AHEAD_BYTES // (16 * RINGS) + 1
    hello = hello_dict()
    hello['lidar'].update(columns=columns)
    first_points, second_points = lidar_points(0.0, columns), lidar_points(1000.0, columns)
    data = b''.join((encode(FrameType.HELLO, encode_hello_payload(hello), 0),
                     encode(FrameType.LIDAR, frames.encode_lidar_payload(first_points), 1),
                     encode(FrameType.CLOCK, frames.encode_clock_payload(0.5), 2),
                     encode(FrameType.LIDAR, frames.encode_lidar_payload(second_points), 3)))
    reader = FrameReader(ChunkedSocket(data, [5000, 70_000, 3]))
    reader.read_frame()
    first = reader.read_frame()
    size = frames.lidar_payload_size(columns, RINGS)
    assert reader.buffer_size == size > READ_AHEAD_BYTES
    assert np.frombuffer(first.points, '<f4')[0] == 0.0
    assert isinstance(reader.read_frame(), frames.ClockFrame)
    second = reader.read_frame()
    assert reader.buffer_size == size
    # The first frame's view is only valid until the next read: it now shows the new points.
    assert np.frombuffer(first.points, '<f4')[0] == 1000.0
    assert bytes(second.points) == second_points.tobytes()


def test_header_claiming_4_gb_is_refused_before_any_allocation():
    data = session_bytes()[0] + frames.encode_header(
        FrameType.CAMERA, sequence=1, payload_size=0xFFFFFFFF, stamp_s=0.0, publish_s=0.0)
    reader = FrameReader(ChunkedSocket(data))
    reader.read_frame()
    hello_size = reader.buffer_size
    with pytest.raises(FrameError, match='claims 4294967295 payload bytes, more than the '
                       'limit of 61') as info:
        reader.read_frame()
    assert not info.value.recoverable
    assert reader.buffer_size == hello_size


@pytest.mark.parametrize('kind, size, limit', [
    (FrameType.CLOCK, 9, 8),
    (FrameType.INS, 1 << 20, 320),
    (FrameType.HELLO, 1 << 24, 1 << 20),
    (FrameType.LIDAR, MAX_SENSOR_PAYLOAD + 1, MAX_SENSOR_PAYLOAD),
    (9, 1 << 31, MAX_SENSOR_PAYLOAD)])
def test_lengths_beyond_the_limit_of_the_type_are_refused(kind, size, limit):
    data = frames.encode_header(kind, sequence=0, payload_size=size, stamp_s=0.0, publish_s=0.0)
    reader = FrameReader(ChunkedSocket(data + bytes(64)))
    with pytest.raises(FrameError, match=f'more than the limit of {limit}$'):
        reader.read_frame()
    assert reader.buffer_size == 0


def test_max_frame_bytes_caps_every_type():
    data = encode(FrameType.HELLO, encode_hello_payload(hello_dict()))
    reader = FrameReader(ChunkedSocket(data), max_frame_bytes=100)
    with pytest.raises(FrameError, match='limit of 100$'):
        reader.read_frame()


def test_truncated_frame_is_a_frame_error_that_is_not_recoverable():
    data = b''.join(session_bytes()[:3])[:-10]
    reader = FrameReader(ChunkedSocket(data, 100))
    reader.read_frame()
    reader.read_frame()
    with pytest.raises(FrameError, match=r'truncated frame: the peer closed after \d+ of 400'
                       ) as info:
        reader.read_frame()
    assert not info.value.recoverable


def test_truncated_header_is_a_frame_error_of_no_type():
    reader = FrameReader(ChunkedSocket(session_bytes()[0] + session_bytes()[3][:20]))
    reader.read_frame()
    assert reader.last_header.frame_type == FrameType.HELLO
    with pytest.raises(FrameError, match='after 20 of 32 bytes'):
        reader.read_frame()
    assert reader.last_header is None


def test_bad_magic_mid_stream_is_a_frame_error_that_is_not_recoverable():
    parts = session_bytes()
    data = parts[0] + parts[3] + b'XSS1' + parts[4][4:] + parts[5]
    reader = FrameReader(ChunkedSocket(data, 5))
    reader.read_frame()
    reader.read_frame()
    with pytest.raises(FrameError, match='bad magic') as info:
        reader.read_frame()
    assert not info.value.recoverable


def test_unknown_types_are_read_away_in_chunks_and_counted():
    skipped = []
    unknown = encode(9, bytes(300_000), 1) + encode(200, b'', 2)
    parts = session_bytes()
    data = parts[0] + unknown + parts[3]
    reader = FrameReader(ChunkedSocket(data, [4096, 1]), on_skipped=skipped.append)
    assert isinstance(reader.read_frame(), frames.HelloFrame)
    clock = reader.read_frame()
    assert isinstance(clock, frames.ClockFrame)
    assert [(header.frame_type, header.payload_size) for header in skipped] == [
        (9, 300_000), (200, 0)]
    assert (reader.skipped_frames, reader.skipped_bytes) == (2, 300_000)
    assert reader.buffer_size < 300_000


def test_frame_that_breaks_its_layout_is_recoverable_and_reading_goes_on():
    parts = session_bytes()
    wrong = frames.encode_lidar_payload(
        np.zeros((RINGS, COLUMNS, 4), dtype=np.float32))  # same size, other shape
    data = parts[0] + encode(FrameType.LIDAR, wrong, 1) + parts[3]
    reader = FrameReader(ChunkedSocket(data))
    reader.read_frame()
    with pytest.raises(FrameError, match='the Hello says 6 x 4') as info:
        reader.read_frame()
    assert info.value.recoverable
    assert reader.last_header.frame_type == FrameType.LIDAR
    assert isinstance(reader.read_frame(), frames.ClockFrame)


def test_a_second_hello_replaces_the_layout():
    parts = session_bytes()
    bigger = hello_dict()
    bigger['lidar'].update(columns=COLUMNS * 2)
    big_points = np.zeros((COLUMNS * 2, RINGS, 4), dtype=np.float32)
    data = (parts[0] + encode(FrameType.HELLO, encode_hello_payload(bigger), 1)
            + encode(FrameType.LIDAR, frames.encode_lidar_payload(big_points), 2))
    reader = FrameReader(ChunkedSocket(data))
    reader.read_frame()
    reader.read_frame()
    assert reader.read_frame().columns == COLUMNS * 2


def connected_pair() -> tuple[socket.socket, socket.socket]:
    with socket.create_server(('127.0.0.1', 0)) as server:
        client = socket.create_connection(server.getsockname())
        peer, _ = server.accept()
    return client, peer


def test_reader_on_a_real_socket_stops_when_the_event_is_set():
    client, peer = connected_pair()
    stop = threading.Event()
    client.settimeout(0.05)
    errors = queue.Queue()

    def read() -> None:
        try:
            FrameReader(client, stop=stop).read_frame()
        except TransportError as exc:
            errors.put(exc)

    with client, peer:
        peer.sendall(session_bytes()[0][:10])
        thread = threading.Thread(target=read)
        thread.start()
        stop.set()
        thread.join(WAIT_S)
        assert str(errors.get(timeout=WAIT_S)) == 'stopped'


def _stream_segments():
    valid = st.sampled_from(session_bytes())
    header = st.builds(
        lambda kind, size, magic: magic + frames.encode_header(
            kind, sequence=0, payload_size=size, stamp_s=0.0, publish_s=0.0)[4:],
        st.integers(0, 12), st.integers(0, (1 << 32) - 1) | st.integers(0, 600),
        st.sampled_from([b'TSS1', b'TSS1', b'XXXX']))
    return st.lists(valid | header | st.binary(max_size=200), max_size=12)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segments=_stream_segments(), chunks=st.lists(st.integers(1, 700), min_size=1,
                                                    max_size=5))
def test_arbitrary_streams_raise_only_protocol_errors_and_stay_within_limits(segments, chunks):
    limit = 1 << 20
    reader = FrameReader(ChunkedSocket(b''.join(segments), chunks), max_frame_bytes=limit)
    for _ in range(50):
        try:
            reader.read_frame()
        except FrameError as exc:
            if not exc.recoverable:
                break
        except TransportError:
            break
        assert reader.buffer_size <= limit
    assert reader.buffer_size <= limit


# --- SensorStreamClient ----------------------------------------------------------------------

class StreamServer(LoopbackServer):
    """A sensor stream on 127.0.0.1:0 that runs one script per accepted connection."""

    def __init__(self, *scripts) -> None:
        self._scripts = list(scripts)
        super().__init__(WAIT_S)

    def serve(self) -> None:
        for script in self._scripts:
            conn = self.accept()
            with conn:
                script(conn, self)


def send_then_close(*parts: bytes):
    def script(conn: socket.socket, server: StreamServer) -> None:
        conn.sendall(b''.join(parts))
    return script


def send_then_hold(*parts: bytes):
    def script(conn: socket.socket, server: StreamServer) -> None:
        conn.sendall(b''.join(parts))
        server.release.wait(WAIT_S)
    return script


class Recorder:
    """Collect the callbacks of a client, with the thread each ran on."""

    def __init__(self) -> None:
        self.frames: queue.Queue = queue.Queue()
        self.connections: queue.Queue = queue.Queue()
        self.bad: queue.Queue = queue.Queue()
        self.threads: set[str] = set()

    def on_frame(self, frame: frames.Frame) -> None:
        self.threads.add(threading.current_thread().name)
        copy = bytes(frame.points) if isinstance(frame, frames.LidarFrame) else None
        self.frames.put((frame, copy))

    def on_connection(self, connected: bool, reason: str) -> None:
        self.connections.put((connected, reason))

    def on_bad_frame(self, error: FrameError) -> None:
        self.bad.put(error)

    def client(self, port: int, **kwargs) -> SensorStreamClient:
        return SensorStreamClient('localhost', port, name='test', on_frame=self.on_frame,
                                  on_connection=self.on_connection,
                                  on_bad_frame=self.on_bad_frame,
                                  **{'reconnect_s': 0.05, 'read_timeout_s': 0.05, **kwargs})

    def next_frames(self, count: int) -> list[frames.Frame]:
        return [self.frames.get(timeout=WAIT_S)[0] for _ in range(count)]


def test_client_delivers_frames_on_its_thread_and_counts_them():
    built = time.monotonic()     # session_bytes() stamps each frame's publish time after it
    server = StreamServer(send_then_hold(*session_bytes()))
    recorder = Recorder()
    client = recorder.client(server.port)
    client.start()
    try:
        assert recorder.connections.get(timeout=WAIT_S) == (
            True, f'connected to 127.0.0.1:{server.port}')
        check_session(recorder.next_frames(6))
        assert recorder.threads == {'sensor-rx:test'}
        assert client.connected
        assert client.hello.agent == 'polaris'
        stats = client.stats
        read_ms = (time.monotonic() - built) * 1e3
    finally:
        client.stop()
        server.close()
    assert (stats['connected'], stats['connections'], stats['reconnects']) == (True, 1, 0)
    assert stats['frames'] == 6
    assert stats['bytes'] == sum(len(part) for part in session_bytes())
    lidar = stats['by_type']['lidar']
    assert (lidar['frames'], lidar['bytes'], lidar['bad']) == (1, 32 + 16 + 384, 0)
    assert lidar['last_sequence'] == 2 and lidar['last_stamp_s'] == 0.5
    # One LiDAR frame: its latency is the median and the maximum, within the test's own time.
    assert 0.0 < lidar['latency_p50_ms'] == lidar['latency_max_ms'] <= read_ms
    assert lidar['rate_hz'] > 0.0
    assert stats['by_type']['hello']['frames'] == 1
    assert stats['sequence_gaps'] == 0 and stats['bad_frames'] == 0
    assert not client.connected
    assert recorder.connections.get(timeout=WAIT_S) == (False, 'stopped')


def test_client_reconnects_after_the_peer_closes_and_gets_a_new_hello():
    parts = session_bytes()
    server = StreamServer(send_then_close(parts[0], parts[3], parts[5]),
                          send_then_hold(*session_bytes(10)))
    recorder = Recorder()
    client = recorder.client(server.port)
    client.start()
    try:
        first = recorder.next_frames(3)
        second = recorder.next_frames(6)
        stats = client.stats
    finally:
        client.stop()
        server.close()
    assert [frame.header.sequence for frame in first + second] == [0, 3, 5, *range(10, 16)]
    events = [recorder.connections.get(timeout=WAIT_S) for _ in range(4)]
    assert [connected for connected, _ in events] == [True, False, True, False]
    assert events[1][1] == 'peer closed'
    assert (stats['connections'], stats['reconnects'], stats['disconnects']) == (2, 1, 1)
    assert stats['by_type']['hello']['frames'] == 2
    # 3 -> 5 is a gap; the first frame after each Hello is not checked.
    assert stats['sequence_gaps'] == 1


@pytest.mark.parametrize('bad, message', [
    (b'XSS1' + bytes(28), 'bad frame: bad magic'),
    (session_bytes()[2][:-1], 'bad frame: truncated frame'),
    (frames.encode_header(FrameType.LIDAR, sequence=1, payload_size=1 << 31, stamp_s=0.0,
                          publish_s=0.0), 'bad frame: lidar frame claims 2147483648')])
def test_client_reconnects_after_a_frame_that_loses_the_framing(bad, message):
    parts = session_bytes()
    server = StreamServer(send_then_close(parts[0], bad), send_then_hold(parts[0], parts[3]))
    recorder = Recorder()
    client = recorder.client(server.port)
    client.start()
    try:
        assert len(recorder.next_frames(3)) == 3
        error = recorder.bad.get(timeout=WAIT_S)
        stats = client.stats
    finally:
        client.stop()
        server.close()
    assert not error.recoverable
    events = [recorder.connections.get(timeout=WAIT_S) for _ in range(3)]
    assert events[1][0] is False and events[1][1].startswith(message)
    assert (stats['bad_frames'], stats['reconnects']) == (1, 1)
    assert stats['last_bad_frame'] == str(error)


def test_client_skips_a_frame_that_breaks_its_layout_without_reconnecting():
    parts = session_bytes()
    wrong = frames.encode_lidar_payload(np.zeros((RINGS, COLUMNS, 4), dtype=np.float32))
    server = StreamServer(send_then_hold(parts[0], encode(FrameType.LIDAR, wrong, 1),
                                         encode(77, b'xyz', 2), parts[3]))
    recorder = Recorder()
    client = recorder.client(server.port)
    client.start()
    try:
        hello, clock = recorder.next_frames(2)
        error = recorder.bad.get(timeout=WAIT_S)
        stats = client.stats
    finally:
        client.stop()
        server.close()
    assert isinstance(clock, frames.ClockFrame)
    assert error.recoverable
    assert stats['connections'] == 1
    assert stats['by_type']['lidar']['bad'] == 1 and stats['bad_frames'] == 1
    assert (stats['unknown_frames'], stats['unknown_bytes']) == (1, 35)


def test_client_retries_a_refused_port_until_the_stream_opens():
    with socket.create_server(('127.0.0.1', 0)) as probe:
        port = probe.getsockname()[1]
    recorder = Recorder()
    client = recorder.client(port)
    client.start()
    try:
        wait_until(lambda: client.stats['connect_failures'] >= 3, WAIT_S, 'three refusals')
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(('127.0.0.1', port))
        listener.listen()
        listener.settimeout(WAIT_S)
        with listener:
            conn, _ = listener.accept()
            with conn:
                conn.sendall(session_bytes()[0])
                assert isinstance(recorder.next_frames(1)[0], frames.HelloFrame)
                client.stop()
    finally:
        client.stop()
    events = [recorder.connections.get(timeout=WAIT_S) for _ in range(3)]
    # A refused port is reported once however often it is retried.
    assert events == [(False, f'cannot connect to 127.0.0.1:{port}: connection refused'),
                      (True, f'connected to 127.0.0.1:{port}'), (False, 'stopped')]
    assert recorder.connections.empty()


def test_an_exception_in_on_frame_is_counted_and_reading_goes_on():
    parts = session_bytes()
    server = StreamServer(send_then_hold(parts[0], parts[3], parts[5]))
    seen = queue.Queue()

    def on_frame(frame: frames.Frame) -> None:
        seen.put(frame)
        if isinstance(frame, frames.ClockFrame):
            raise RuntimeError('a converter failed')

    client = SensorStreamClient('127.0.0.1', server.port, name='raising', on_frame=on_frame,
                                read_timeout_s=0.05)
    client.start()
    try:
        kinds = [type(seen.get(timeout=WAIT_S)) for _ in range(3)]
        stats = client.stats
    finally:
        client.stop()
        server.close()
    assert kinds[-1] is frames.BarrierFrame
    assert stats['callback_errors'] == 1


def test_stop_from_inside_a_callback_ends_the_thread():
    server = StreamServer(send_then_hold(*session_bytes()))
    done = threading.Event()
    holder: list[SensorStreamClient] = []

    def on_frame(frame: frames.Frame) -> None:
        holder[0].stop()
        done.set()

    client = SensorStreamClient('127.0.0.1', server.port, name='self-stop', on_frame=on_frame,
                                read_timeout_s=0.05)
    holder.append(client)
    client.start()
    try:
        assert done.wait(WAIT_S)
        client._thread.join(WAIT_S)
        assert not client._thread.is_alive()
    finally:
        client.stop()
        server.close()


def test_stop_joins_an_idle_connected_client():
    server = StreamServer(send_then_hold(session_bytes()[0]))
    recorder = Recorder()
    client = recorder.client(server.port, read_timeout_s=10.0)
    client.start()
    recorder.next_frames(1)
    client.stop(timeout_s=WAIT_S)
    assert not client._thread.is_alive()
    server.close()


@pytest.mark.parametrize('host, port, message', [
    ('127.0.0.1', 0, 'port 0'), ('127.0.0.1', 70000, 'port 70000'),
    ('10.0.0.1', 5601, 'not a loopback')])
def test_client_refuses_bad_hosts_and_ports(host, port, message):
    with pytest.raises(TransportError, match=message):
        SensorStreamClient(host, port, name='x', on_frame=print)


def test_stats_rate_and_latency_cover_the_window():
    stats = stream_client._TypeStats()
    client = SensorStreamClient('127.0.0.1', 5601, name='rates', on_frame=print,
                                stats_window_s=1.0)
    now = time.monotonic()
    for index in range(10):
        stats.samples.append((now - 0.05 * index, 0.001 * (index + 1)))
    stats.samples.append((now - 5.0, 1.0))  # outside the window
    figures = client._type_snapshot(stats, list(stats.samples), now, now - 1.0)
    assert figures['rate_hz'] == pytest.approx(10.0)
    assert figures['latency_p50_ms'] == pytest.approx(6.0)
    assert figures['latency_max_ms'] == pytest.approx(10.0)


def test_a_stream_of_many_frames_keeps_its_order_and_bytes():
    count = 300
    payloads = [frames.encode_lidar_payload(lidar_points(float(index))) for index in range(count)]
    parts = [session_bytes()[0]] + [encode(FrameType.LIDAR, payload, index + 1)
                                    for index, payload in enumerate(payloads)]
    server = StreamServer(send_then_hold(*parts))
    recorder = Recorder()
    client = recorder.client(server.port)
    client.start()
    try:
        received = [recorder.frames.get(timeout=WAIT_S) for _ in range(count + 1)]
    finally:
        client.stop()
        server.close()
    assert [copy for _, copy in received[1:]] == [payload[16:] for payload in payloads]
    assert struct.unpack_from('<f', received[-1][1])[0] == float(count - 1)
