# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The sensor stream's client: a thread that connects, reads frames, calls back and reconnects.

The game listens on 127.0.0.1 and sends frames (``frames`` gives the layout) to one client,
which sends nothing; :class:`~acres_bridge.protocol.frame_reader.FrameReader` reads them.

``SensorStreamClient`` owns one reader thread, ``sensor-rx:<name>``: it connects, reads,
calls back on that thread, and reconnects every ``reconnect_s`` after any failure (refused,
peer closed, bad magic, a length beyond the limit, a truncated frame). A frame whose payload
was read whole but breaks its layout is counted and skipped without reconnecting. A caller may
receive a payload into a buffer of its own (``payload_target``: the message it will publish);
a target that does not fit is counted as a callback error and the reader's buffer used instead.
"""

from collections import deque
import dataclasses
import logging
import socket
import time
from typing import Any, Callable

from acres_bridge.protocol.errors import FrameError
from acres_bridge.protocol.errors import TransportError
from acres_bridge.protocol.frame_reader import FrameReader
from acres_bridge.protocol.frame_reader import READ_TIMEOUT_S
from acres_bridge.protocol.frames import Frame
from acres_bridge.protocol.frames import frame_name
from acres_bridge.protocol.frames import FrameHeader
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.frames import HEADER_SIZE
from acres_bridge.protocol.frames import HelloFrame
from acres_bridge.protocol.hello import Hello
from acres_bridge.protocol.limits import MAX_SENSOR_PAYLOAD
from acres_bridge.protocol.sockets import CONNECT_TIMEOUT_S
from acres_bridge.protocol.sockets import LogHandler
from acres_bridge.protocol.sockets import ReconnectingClient

_SAMPLES = 8192


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
                                             else self._target),
                             on_bad_target=self._bad_target)
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
        return self._call('payload_target', self._payload_target, header)

    def _bad_target(self, problem: str) -> None:
        # The reader checked the target and reads this payload into its own buffer instead.
        with self._lock:
            self._counts['callback_errors'] += 1
        self._warn('payload_target gave %s', problem)

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
