# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The sensor stream socket: a frame reader and a reconnecting client thread.

The game listens on 127.0.0.1 and sends frames (``frames`` gives the layout) to one client,
which sends nothing. The first frame of each connection is a Hello. ``FrameReader`` reads
frames from a blocking socket with a short time-out into buffers it reuses, with
``recv_into``. Each receive takes what the socket holds into a 32 KiB read-ahead, so the small
frames that arrive together (a step's clock and INS) cost one system call; a larger payload is
received straight into its buffer after the bytes already read ahead. Frames are handed out as
memoryviews valid until the next read. Before reading a payload the reader checks the claimed
length against the limit of its type under the current Hello (``frames.max_payload_size``), so
a header can never make it allocate more; beyond 1 MiB the buffer grows only as fast as the
payload arrives, so a claim within the limit that the peer does not fill costs no more than the
bytes it sent.
Frames of unknown types are read away in bounded chunks and counted. A caller may receive a
payload into a buffer of its own (``payload_target``: the message it will publish), chosen
once the header passed those checks.

``SensorStreamClient`` owns one reader thread, ``sensor-rx:<name>``: it connects, reads,
calls back on that thread, and reconnects every ``reconnect_s`` after any failure (refused,
peer closed, bad magic, a length beyond the limit, a truncated frame). A frame whose payload
was read whole but breaks its layout is counted and skipped without reconnecting.
"""

from collections import deque
import dataclasses
import logging
import socket
import threading
import time
from typing import Any, Callable

from acres_bridge.protocol.errors import FrameError
from acres_bridge.protocol.errors import TransportError
from acres_bridge.protocol.frames import decode_header
from acres_bridge.protocol.frames import decode_payload
from acres_bridge.protocol.frames import Frame
from acres_bridge.protocol.frames import frame_name
from acres_bridge.protocol.frames import FrameHeader
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.frames import HEADER_SIZE
from acres_bridge.protocol.frames import HelloFrame
from acres_bridge.protocol.frames import max_payload_size
from acres_bridge.protocol.hello import Hello
from acres_bridge.protocol.limits import MAX_SENSOR_PAYLOAD
from acres_bridge.protocol.sockets import CONNECT_TIMEOUT_S
from acres_bridge.protocol.sockets import LogHandler
from acres_bridge.protocol.sockets import ReconnectingClient

READ_TIMEOUT_S = 0.2
# What one recv_into may take beyond the frame being read; payloads up to this size are read
# in it, larger ones straight into their buffer.
READ_AHEAD_BYTES = 1 << 15
_GROW_START = 1 << 20
_SAMPLES = 8192
_KNOWN_TYPES = frozenset(int(kind) for kind in FrameType)


def payload_view_problem(target: object, size: int) -> str:
    """
    Say what keeps ``target`` from receiving a payload of ``size`` bytes; empty if nothing.

    A payload is received into a writable byte memoryview of exactly its size, so that the
    decoded frame's views cover the payload and nothing else.
    """
    if not isinstance(target, memoryview):
        return f'{type(target).__name__}, not a memoryview, for a payload of {size}'
    if target.readonly or target.nbytes != size or target.format != 'B':
        return (f'{target.nbytes} bytes (format {target.format!r}, read-only '
                f'{target.readonly}) for a payload of {size}')
    return ''


class FrameReader:
    """
    Read frames from a connected, blocking stream socket.

    The socket should have a short time-out (``READ_TIMEOUT_S``): at each time-out the reader
    checks ``stop``. The reader keeps the Hello of its connection and checks every later
    frame against it.

    :param sock: the connected socket; the reader never closes it.
    :param stop: when set, a read in progress raises ``TransportError('stopped')``.
    :param max_frame_bytes: a cap on any payload, below the limits of ``max_payload_size``.
    :param on_skipped: called with the header of each frame of an unknown type, after its
        payload was read away.
    :param payload_target: called with the header of each frame of a known type within the
        limits, before its payload is read: a writable byte memoryview of exactly
        ``payload_size`` bytes to receive the payload into (the decoded frame's views then
        point into it), or None for the reader's own buffer.
    """

    def __init__(self, sock: socket.socket, *, stop: threading.Event | None = None,
                 max_frame_bytes: int = MAX_SENSOR_PAYLOAD,
                 on_skipped: Callable[[FrameHeader], None] | None = None,
                 payload_target: Callable[[FrameHeader], memoryview | None] | None = None
                 ) -> None:
        self._sock = sock
        self._stop = stop if stop is not None else threading.Event()
        self._max_frame_bytes = max_frame_bytes
        self._on_skipped = on_skipped
        self._payload_target = payload_target
        # Bytes received and not yet consumed are ahead[head:tail].
        self._ahead = bytearray(READ_AHEAD_BYTES)
        self._ahead_view = memoryview(self._ahead)
        self._head = 0
        self._tail = 0
        self._buffer = bytearray()
        self._view = memoryview(self._buffer)
        self._hello: Hello | None = None
        self.last_header: FrameHeader | None = None
        self.bytes_read = 0
        self.skipped_frames = 0
        self.skipped_bytes = 0

    @property
    def hello(self) -> Hello | None:
        """Return the last Hello of this connection, None before the first."""
        return self._hello

    @property
    def buffer_size(self) -> int:
        """Return the bytes of the large-payload buffer (it grows to the largest such frame)."""
        return len(self._buffer)

    @property
    def buffered(self) -> int:
        """Return the bytes received beyond the last frame read: the start of the next ones."""
        return self._tail - self._head

    def read_frame(self) -> Frame:
        """
        Read and decode the next frame of a known type.

        :return: the frame; its memoryviews stay valid until the next call.
        :raises FrameError: for a frame that breaks the layout. ``recoverable`` tells whether
            the reader still stands at a frame boundary; if not, close the connection.
        :raises TransportError: when the peer closed at a frame boundary, the socket failed
            or ``stop`` was set.
        """
        while True:
            if self._stop.is_set():
                raise TransportError('stopped')
            self.last_header = None
            header = decode_header(self._take(HEADER_SIZE, boundary=True))
            self.last_header = header
            kind = header.frame_type
            size = header.payload_size
            limit = min(max_payload_size(kind, self._hello), self._max_frame_bytes)
            if size > limit:
                raise FrameError(f'{frame_name(kind)} frame claims {size} payload bytes, more '
                                 f'than the limit of {limit}')
            if kind not in _KNOWN_TYPES:
                self._skip(size)
                self.skipped_frames += 1
                self.skipped_bytes += size
                if self._on_skipped is not None:
                    self._on_skipped(header)
                continue
            target = None if self._payload_target is None else self._payload_target(header)
            if target is None:
                payload = self._read_payload(size)
            else:
                problem = payload_view_problem(target, size)
                if problem:
                    raise ValueError(f'payload_target gave {problem}')
                self._read_into(target, size)
                payload = target
            try:
                frame = decode_payload(header, payload, self._hello)
            except FrameError as exc:
                raise FrameError(str(exc), recoverable=True) from exc
            if isinstance(frame, HelloFrame):
                self._hello = frame.hello
            return frame

    def _read_payload(self, size: int) -> memoryview:
        """Read a payload into a buffer of the reader's; grow it only as bytes arrive."""
        if size <= len(self._ahead):
            return self._take(size, boundary=False)
        if size <= len(self._buffer):
            view = self._view[:size]
            self._read_into(view, size)
            return view
        # A new buffer rather than a resize: views of the last frame may still be held. Above
        # _GROW_START it doubles as the payload fills it, so a header that claims more than
        # the peer sends never sizes the buffer (within the limit of its type) by itself.
        received = 0
        buffer = bytearray(min(size, max(_GROW_START, len(self._buffer))))
        while True:
            view = memoryview(buffer)
            self._read_into(view[received:], len(buffer) - received, before=received,
                            total=size)
            received = len(buffer)
            if received == size:
                break
            grown = bytearray(min(size, 2 * received))
            grown[:received] = buffer
            buffer = grown
        self._buffer = buffer
        self._view = memoryview(buffer)
        return self._view[:size]

    def _take(self, count: int, *, boundary: bool) -> memoryview:
        """
        Consume the next ``count`` bytes (at most READ_AHEAD_BYTES) as a view of the read-ahead.

        One ``recv_into`` takes whatever the socket holds, so the small frames that arrive
        together (a step's clock and INS) cost one system call, not two each.
        """
        if self._head == self._tail:
            self._head = self._tail = 0
        while self._tail - self._head < count:
            if len(self._ahead) - self._head < count:
                kept = self._tail - self._head
                self._ahead[:kept] = self._ahead[self._head:self._tail]
                self._head, self._tail = 0, kept
            have = self._tail - self._head
            self._tail += self._recv(self._ahead_view[self._tail:], len(self._ahead) - self._tail,
                                     boundary=boundary and have == 0, before=have, total=count)
        start = self._head
        self._head += count
        self.bytes_read += count
        return self._ahead_view[start:start + count]

    def _read_into(self, view: memoryview, count: int, *, before: int = 0,
                   total: int | None = None) -> None:
        """Fill ``view[:count]``: first the bytes read ahead, then straight from the socket."""
        taken = min(count, self._tail - self._head)
        if taken:
            view[:taken] = self._ahead_view[self._head:self._head + taken]
            self._head += taken
            self.bytes_read += taken
        received = taken
        while received < count:
            got = self._recv(view[received:count], count - received, boundary=False,
                             before=before + received, total=total or count)
            received += got
            self.bytes_read += got

    def _skip(self, size: int) -> None:
        taken = min(size, self._tail - self._head)
        self._head += taken
        self.bytes_read += taken
        size -= taken
        if size:
            # The read-ahead is empty now: read the rest away through it, exactly.
            self._head = self._tail = 0
        while size > 0:
            got = self._recv(self._ahead_view, min(size, len(self._ahead)), boundary=False)
            size -= got
            self.bytes_read += got

    def _recv(self, view: memoryview, count: int, *, boundary: bool, before: int = 0,
              total: int | None = None) -> int:
        """
        Receive at least one and at most ``count`` bytes into ``view``; return how many.

        ``boundary``: no byte of the current frame was received yet, so a closed peer ends the
        stream cleanly; ``before`` and ``total`` place the read in its frame for the error.
        """
        while True:
            try:
                got = self._sock.recv_into(view, count)
            except TimeoutError:
                if self._stop.is_set():
                    raise TransportError('stopped') from None
                continue
            except OSError as exc:
                raise TransportError(f'receive failed: {exc}') from exc
            if got:
                return got
            if boundary:
                raise TransportError('peer closed')
            raise FrameError(f'truncated frame: the peer closed after '
                             f'{before} of {total or count} bytes')


@dataclasses.dataclass(slots=True)
class _TypeStats:
    """Counters of one frame type; ``samples`` holds (receive time, latency) pairs."""

    frames: int = 0
    bytes: int = 0
    bad: int = 0
    last_sequence: int | None = None
    last_stamp_s: float | None = None
    last_latency_s: float | None = None
    samples: deque = dataclasses.field(default_factory=lambda: deque(maxlen=_SAMPLES))


def _percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class SensorStreamClient(ReconnectingClient):
    """
    Read one agent's sensor stream on a thread, reconnecting after any failure.

    Callbacks run on the reader thread ``sensor-rx:<name>``: ``on_frame(frame)`` for each
    frame (its memoryviews are valid until the callback returns), ``on_connection(connected,
    reason)`` when the state or the reason of a failure changes, ``on_bad_frame(error)`` for
    each frame that breaks the layout. An exception in a callback is logged and counted; it
    never stops the thread. Reports go to ``log`` (see ``sockets.py``).

    :param host: the simulator host; it must resolve to a loopback address.
    :param port: the TCP port of the stream, 1 to 65535.
    :param name: names the thread and the log lines, e.g. the agent.
    :param reconnect_s: the wait before each new connection attempt.
    :param connect_timeout_s: the time-out of one connection attempt.
    :param read_timeout_s: how often a blocked read checks for ``stop()``.
    :param max_frame_bytes: a cap on any payload (see ``FrameReader``).
    :param stats_window_s: the span of the rates and latency figures of ``stats``.
    :param payload_target: where to receive a payload (see ``FrameReader``), on the reader
        thread; what it raises, or a view of the wrong size, is counted as a callback error
        and the reader's own buffer is used.
    :param log: ``log(level, text)`` for each report; None: the Python logger of this module.
    :raises TransportError: for a host that is not loopback or a port out of range.
    """

    _kind = 'sensor stream'

    def __init__(self, host: str, port: int, *, name: str,
                 on_frame: Callable[[Frame], None],
                 on_connection: Callable[[bool, str], None] | None = None,
                 on_bad_frame: Callable[[FrameError], None] | None = None,
                 reconnect_s: float = 1.0, connect_timeout_s: float = CONNECT_TIMEOUT_S,
                 read_timeout_s: float = READ_TIMEOUT_S,
                 max_frame_bytes: int = MAX_SENSOR_PAYLOAD,
                 payload_target: Callable[[FrameHeader], memoryview | None] | None = None,
                 stats_window_s: float = 5.0, log: LogHandler | None = None) -> None:
        super().__init__(host, port, name=name, thread_name=f'sensor-rx:{name}',
                         on_connection=on_connection, reconnect_s=reconnect_s,
                         connect_timeout_s=connect_timeout_s, log=log,
                         counters=('bad_frames', 'unknown_frames', 'unknown_bytes',
                                   'sequence_gaps'))
        self._on_frame = on_frame
        self._on_bad_frame = on_bad_frame
        self._payload_target = payload_target
        self._read_timeout_s = read_timeout_s
        self._max_frame_bytes = max_frame_bytes
        self._window_s = stats_window_s
        self._reader: FrameReader | None = None
        self._by_type = {int(kind): _TypeStats() for kind in FrameType}
        self._last_bad_frame = ''
        self._connected_since: float | None = None
        self._started = time.monotonic()
        self._expected_sequence: int | None = None
        self._last_frame_at: float | None = None
        self._last_frame_type = ''

    def start(self) -> None:
        """Start the reader thread (once)."""
        self._started = time.monotonic()
        super().start()

    @property
    def hello(self) -> Hello | None:
        """Return the Hello of the current connection, None without one."""
        reader = self._reader
        return reader.hello if reader is not None else None

    @property
    def stats(self) -> dict[str, Any]:
        """
        Return a snapshot of the counters, safe to take from any thread.

        Keys: ``name``, ``address``, ``port``, ``connected``, ``reason`` (of the last state
        change), ``connected_for_s``, ``connections``, ``reconnects``, ``connect_failures``,
        ``disconnects``, ``bad_frames``, ``last_bad_frame``, ``unknown_frames``,
        ``unknown_bytes``, ``sequence_gaps``, ``callback_errors``, ``frames``, ``bytes``,
        ``idle_s`` (while connected: the time since the last frame, or since the connection
        when none came yet), ``last_frame`` (its type name, empty before the first), ``window_s``
        and ``by_type``: for each of hello, clock, ins, lidar, camera and barrier
        ``frames``, ``bytes``, ``bad``, ``rate_hz``, ``latency_p50_ms``, ``latency_max_ms``
        (over the frames of the last ``window_s``, None without any), ``last_latency_ms``,
        ``last_stamp_s`` and ``last_sequence``. The latency is the receive time minus the
        frame's publish time, both CLOCK_MONOTONIC.
        """
        now = time.monotonic()
        with self._lock:
            since = self._connected_since
            snapshot = self._connection_stats()
            snapshot['connected_for_s'] = None if since is None else now - since
            last_frame_at = self._last_frame_at
            snapshot['idle_s'] = (None if since is None
                                  else now - (since if last_frame_at is None else last_frame_at))
            snapshot['last_frame'] = self._last_frame_type if since is not None else ''
            snapshot['last_bad_frame'] = self._last_bad_frame
            snapshot['window_s'] = self._window_s
            copied = {kind: (dataclasses.replace(stats, samples=None), list(stats.samples))
                      for kind, stats in self._by_type.items()}
        snapshot['frames'] = sum(stats.frames for stats, _ in copied.values())
        snapshot['bytes'] = sum(stats.bytes for stats, _ in copied.values())
        span_start = max(now - self._window_s, self._started)
        snapshot['by_type'] = {
            frame_name(kind): self._type_snapshot(stats, samples, now, span_start)
            for kind, (stats, samples) in copied.items()}
        return snapshot

    def _type_snapshot(self, stats: _TypeStats, samples: list[tuple[float, float]],
                       now: float, span_start: float) -> dict[str, Any]:
        recent = [sample for sample in samples if sample[0] >= span_start]
        rate_hz = 0.0
        if len(recent) == len(samples) == _SAMPLES and recent[-1][0] > recent[0][0]:
            rate_hz = (len(recent) - 1) / (recent[-1][0] - recent[0][0])
        elif recent and now > span_start:
            rate_hz = len(recent) / (now - span_start)
        latencies = sorted(latency for _, latency in recent)
        return {
            'frames': stats.frames, 'bytes': stats.bytes, 'bad': stats.bad,
            'rate_hz': rate_hz,
            'latency_p50_ms': _percentile(latencies, 0.5) * 1e3 if latencies else None,
            'latency_max_ms': latencies[-1] * 1e3 if latencies else None,
            'last_latency_ms': (None if stats.last_latency_s is None
                                else stats.last_latency_s * 1e3),
            'last_stamp_s': stats.last_stamp_s, 'last_sequence': stats.last_sequence,
        }

    # --- the reader thread -------------------------------------------------------------------

    def _configure(self, sock: socket.socket) -> None:
        sock.settimeout(self._read_timeout_s)

    def _serve(self, sock: socket.socket) -> str:
        reader = FrameReader(sock, stop=self._stop, max_frame_bytes=self._max_frame_bytes,
                             on_skipped=self._count_skipped,
                             payload_target=(None if self._payload_target is None
                                             else self._target))
        with self._lock:
            self._reader = reader
            self._connected_since = time.monotonic()
            self._expected_sequence = None
            self._last_frame_at = None
            self._last_frame_type = ''
        try:
            return self._read_loop(reader)
        finally:
            with self._lock:
                self._reader = None
                self._connected_since = None

    def _read_loop(self, reader: FrameReader) -> str:
        while True:
            try:
                frame = reader.read_frame()
            except FrameError as exc:
                self._count_bad(exc, reader.last_header)
                if not exc.recoverable:
                    return f'bad frame: {exc}'
                continue
            except TransportError as exc:
                return str(exc)
            self._count_frame(frame.header, isinstance(frame, HelloFrame))
            self._call('on_frame', self._on_frame, frame)

    def _target(self, header: FrameHeader) -> memoryview | None:
        target = self._call('payload_target', self._payload_target, header)
        if target is None:
            return None
        problem = payload_view_problem(target, header.payload_size)
        if problem:
            with self._lock:
                self._counts['callback_errors'] += 1
            self._warn('payload_target gave %s', problem)
            return None
        return target

    def _count_frame(self, header: FrameHeader, is_hello: bool) -> None:
        received = time.monotonic()
        latency_s = received - header.publish_s
        with self._lock:
            stats = self._by_type[header.frame_type]
            stats.frames += 1
            stats.bytes += HEADER_SIZE + header.payload_size
            stats.last_sequence = header.sequence
            stats.last_stamp_s = header.stamp_s
            stats.last_latency_s = latency_s
            stats.samples.append((received, latency_s))
            self._last_frame_at = received
            self._last_frame_type = frame_name(header.frame_type)
            expected = self._expected_sequence
            if expected is not None and header.sequence != expected and not is_hello:
                self._counts['sequence_gaps'] += 1
            # The Core server numbers its Hello 0 whatever its counter says.
            self._expected_sequence = (
                None if is_hello else (header.sequence + 1) & 0xFFFFFFFF)

    def _count_skipped(self, header: FrameHeader) -> None:
        with self._lock:
            self._counts['unknown_frames'] += 1
            self._counts['unknown_bytes'] += HEADER_SIZE + header.payload_size
            self._expected_sequence = (header.sequence + 1) & 0xFFFFFFFF
        self._log(logging.DEBUG, f'{self._label}: skipped a frame of unknown type '
                  f'{header.frame_type} ({header.payload_size} bytes)')

    def _count_bad(self, error: FrameError, header: FrameHeader | None) -> None:
        with self._lock:
            self._counts['bad_frames'] += 1
            self._last_bad_frame = str(error)
            if header is not None and header.frame_type in self._by_type:
                self._by_type[header.frame_type].bad += 1
            if header is not None:
                self._expected_sequence = (header.sequence + 1) & 0xFFFFFFFF
        action = 'skipped' if error.recoverable else 'reconnecting'
        self._warn('bad frame (%s): %s', action, error)
        self._call('on_bad_frame', self._on_bad_frame, error)
