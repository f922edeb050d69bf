# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The sensor stream server of one agent, as the game serves it (seed 000).

One TCP listener on 127.0.0.1 and one thread, ``sensor-tx:<agent>``, that accepts one client at a
time (a second client waits in the listen queue), sends the Hello frame first on each connection
and then the frames of a queue, each as its 32-byte header and its payload in one ``sendmsg`` (no
copy of the payload). The stepping thread calls :meth:`queue`; frames
are numbered when they are queued, so a frame that is not queued (no client) or dropped gets no
sequence number, and the counter continues across connections.

Flow control: a LiDAR or camera frame that would take the queue above 96 MiB is dropped, and any
frame that would take it above 192 MiB. Drops are counted by type.

Log lines (logger ``acres_bridge.emulator.stream_server``, one line each)::

    ACRES_SENSOR_STREAM_LISTENING agent=<name> port=<port>
    ACRES_SENSOR_STREAM_LISTEN_FAILED agent=<name> port=<port>
    ACRES_SENSOR_STREAM_CONNECTED agent=<name> port=<port> send_buffer=<bytes>
    ACRES_SENSOR_STREAM_STATS agent=<name> queued_mb=<MiB> <counters>
    ACRES_SENSOR_STREAM_DISCONNECTED agent=<name> port=<port> reason=<reason> queued_mb=...
    ACRES_SENSOR_STREAM_STOP agent=<name> port=<port> <counters>

where ``<counters>`` is ``hello=N/xMB/dropN clock=... ins=... lidar=... camera=...`` (no barriers).
"""

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
import logging
import select
import socket
import threading
import time
from typing import Any

from acres_bridge.protocol.frames import encode_barrier_payload
from acres_bridge.protocol.frames import encode_header
from acres_bridge.protocol.frames import FrameType
from acres_bridge.protocol.hello import encode_hello_payload
from acres_bridge.protocol.sockets import require_loopback

logger = logging.getLogger(__name__)

MIB = 1 << 20
DROP_SENSOR_BYTES = 96 * MIB
DROP_ALL_BYTES = 192 * MIB
SEND_BUFFER_BYTES = 16 * MIB
STATS_INTERVAL_S = 30.0

_SENSOR_TYPES = frozenset((FrameType.LIDAR, FrameType.CAMERA))
_STATS_TYPES = (FrameType.HELLO, FrameType.CLOCK, FrameType.INS, FrameType.LIDAR,
                FrameType.CAMERA)
_POLL_S = 0.1
# The frames of one sendmsg: far below the IOV_MAX of 1024 buffers (two per frame).
_FRAMES_PER_SEND = 256


@dataclass(slots=True)
class TypeCounters:
    """The frames, bytes and drops of one frame type."""

    frames: int = 0
    bytes: int = 0
    drops: int = 0


class SensorStreamServer:
    """
    Serve the sensor stream of one agent.

    :param agent: the agent name, for the thread and the log lines.
    :param hello: the Hello object of the agent (sent on each connection).
    :param time_s: returns the world time, the stamp of a Hello in core mode.
    :param mode: ``game`` (Hello numbered by the counter, stamp 0) or ``core`` (Hello sequence 0,
        stamp at the world time).
    :param port: the TCP port; 0 binds any free port (see :attr:`port`).
    """

    def __init__(self, *, agent: str, hello: dict[str, Any], time_s: Callable[[], float],
                 mode: str = 'game', port: int = 0, host: str = '127.0.0.1',
                 drop_sensor_bytes: int = DROP_SENSOR_BYTES,
                 drop_all_bytes: int = DROP_ALL_BYTES,
                 stats_interval_s: float = STATS_INTERVAL_S) -> None:
        self.agent = agent
        self.host = require_loopback(host)
        self.requested_port = port
        self.port = 0
        self._hello_payload = encode_hello_payload(hello)
        self._time_s = time_s
        self._mode = mode
        self._drop_sensor_bytes = drop_sensor_bytes
        self._drop_all_bytes = drop_all_bytes
        self._stats_interval_s = stats_interval_s
        self._lock = threading.Condition()
        self._queue: deque[tuple[bytes, bytes]] = deque()
        self._queued_bytes = 0
        self._in_flight = False     # the sender thread is sending frames it took from the queue
        # Core numbers its Hello 0 outside the counter, so its data frames start at 1 too.
        self._sequence = 0 if mode == 'game' else 1
        self._client: socket.socket | None = None
        self._connected = False
        self.counters = {frame_type: TypeCounters() for frame_type in FrameType}
        self.connections = 0
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    # --- life cycle ---------------------------------------------------------------------------

    def start(self) -> int:
        """Bind and start serving; return the bound port (0 when the port cannot be opened)."""
        try:
            self._listener = listen(self.host, self.requested_port)
        except OSError as exc:
            logger.warning('ACRES_SENSOR_STREAM_LISTEN_FAILED agent=%s port=%d (%s)',
                           self.agent, self.requested_port, exc.strerror or exc)
            return 0
        self.port = self._listener.getsockname()[1]
        logger.info('ACRES_SENSOR_STREAM_LISTENING agent=%s port=%d', self.agent, self.port)
        self._thread = threading.Thread(target=self._run, name=f'sensor-tx:{self.agent}',
                                        daemon=True)
        self._thread.start()
        return self.port

    def stop(self) -> None:
        """Close the client and the listener, join the thread and log the STOP line."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._listener is not None:
            _shutdown(self._listener)   # wakes accept()
        with self._lock:
            client = self._client
            self._lock.notify_all()
        if client is not None:
            _shutdown(client)
        if self._thread is not None:
            self._thread.join()
        if self._listener is not None:
            self._listener.close()
            logger.info('ACRES_SENSOR_STREAM_STOP agent=%s port=%d %s', self.agent, self.port,
                        self._counter_text())

    # --- producer side ------------------------------------------------------------------------

    @property
    def has_client(self) -> bool:
        """Whether a client is connected: frames are queued only then."""
        return self._connected

    @property
    def queued_bytes(self) -> int:
        """The bytes waiting in the queue."""
        return self._queued_bytes

    def queue(self, frame_type: int, payload: bytes, stamp_s: float) -> bool:
        """
        Give one frame its sequence number and queue it for the client.

        :return: True when queued; False without a client or when the drop rules drop it.
        """
        with self._lock:
            if not self._connected:
                return False
            return self._queue_locked(frame_type, payload, stamp_s)

    def queue_barrier(self, step: int, stamp_s: float) -> bool:
        """Queue a Barrier frame for ``step``."""
        return self.queue(FrameType.BARRIER, encode_barrier_payload(step), stamp_s)

    def wait_drained(self, timeout_s: float) -> bool:
        """Wait until every queued frame is in the socket (or no client); return whether so."""
        # An empty queue is not enough: the sender may still be writing what it took from it.
        return self._wait(lambda: (not self._queue and not self._in_flight)
                          or not self._connected, timeout_s)

    def wait_disconnected(self, timeout_s: float) -> bool:
        """Wait until no client is connected; return whether none is."""
        return self._wait(lambda: not self._connected, timeout_s)

    def _wait(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(min(remaining, _POLL_S))
        return True

    def _queue_locked(self, frame_type: int, payload: bytes, stamp_s: float,
                      *, sequence: int | None = None) -> bool:
        counters = self.counters[frame_type]
        size = len(payload) + 32
        total = self._queued_bytes + size
        if total > self._drop_all_bytes or (
                total > self._drop_sensor_bytes and frame_type in _SENSOR_TYPES):
            counters.drops += 1
            return False
        if sequence is None:
            sequence = self._sequence
            self._sequence = (self._sequence + 1) & 0xFFFFFFFF
        header = encode_header(frame_type, sequence=sequence, payload_size=len(payload),
                               stamp_s=stamp_s, publish_s=time.monotonic())
        counters.frames += 1
        counters.bytes += size
        if (frame_type != FrameType.HELLO and not self._queue and not self._in_flight
                and self._client is not None):
            # Nothing waits or is in flight: the frame goes into the socket now if the socket
            # takes it, without waking the sender thread (on one core each wake-up is two
            # context switches). The rest of a partial send waits in the queue as usual.
            sent = _send_now(self._client, header, payload)
            if sent == size:
                return True
            header, payload = _unsent(header, payload, sent)
        self._queue.append((header, payload))
        self._queued_bytes += len(header) + len(payload)
        if len(self._queue) == 1:
            self._lock.notify_all()   # the sender waits only on an empty queue
        return True

    # --- sender thread ------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            serve_clients(self._listener, self._stop, self._serve)
        except Exception:
            logger.exception('sensor stream of %s failed', self.agent)

    def _serve(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
        send_buffer = conn.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        conn.settimeout(None)
        with self._lock:
            self._client = conn
            self._connected = True
            self.connections += 1
            if self._mode == 'game':
                self._queue_locked(FrameType.HELLO, self._hello_payload, 0.0)
            else:
                self._queue_locked(FrameType.HELLO, self._hello_payload, self._time_s(),
                                   sequence=0)
        if self._stop.is_set():
            # stop() may have looked for the client before it was set.
            _shutdown(conn)
        reason = self._send_loop(conn, send_buffer)
        with self._lock:
            self._connected = False
            self._client = None
            self._queue.clear()
            self._queued_bytes = 0
            self._lock.notify_all()
        conn.close()
        if reason != 'stopped':
            logger.info('ACRES_SENSOR_STREAM_DISCONNECTED agent=%s port=%d reason=%s %s',
                        self.agent, self.port, reason, self._stats_text())

    def _send_loop(self, conn: socket.socket, send_buffer: int) -> str:
        """Send queued frames until the connection ends; return the reason."""
        hello_sent = False
        next_stats = time.monotonic() + self._stats_interval_s
        while True:
            with self._lock:
                while not self._queue and not self._stop.is_set():
                    if not self._lock.wait(_POLL_S):
                        break
                if self._stop.is_set():
                    return 'stopped'
                # Every frame that waits goes out in one system call: a step's clock, INS and
                # sensor frames cost one wake-up of this thread, not one each.
                items = [self._queue.popleft()
                         for _ in range(min(len(self._queue), _FRAMES_PER_SEND))]
                self._in_flight = bool(items)
            if not items:
                if _peer_closed(conn):
                    return 'peer closed'
            else:
                try:
                    _send_frames(conn, [part for item in items for part in item])
                except (BrokenPipeError, ConnectionResetError):
                    return 'peer closed' if hello_sent else 'hello failed'
                except OSError:
                    if self._stop.is_set():
                        return 'stopped'
                    return 'send failed' if hello_sent else 'hello failed'
                with self._lock:
                    self._in_flight = False
                    self._queued_bytes -= sum(len(header) + len(payload)
                                              for header, payload in items)
                    if not self._queue:
                        self._lock.notify_all()
                if not hello_sent:
                    hello_sent = True
                    logger.info('ACRES_SENSOR_STREAM_CONNECTED agent=%s port=%d send_buffer=%d',
                                self.agent, self.port, send_buffer)
            now = time.monotonic()
            if now >= next_stats:
                next_stats = now + self._stats_interval_s
                logger.info('ACRES_SENSOR_STREAM_STATS agent=%s %s', self.agent,
                            self._stats_text())

    # --- log text -----------------------------------------------------------------------------

    def _counter_text(self) -> str:
        parts = []
        for frame_type in _STATS_TYPES:
            counters = self.counters[frame_type]
            parts.append(f'{frame_type.name.lower()}={counters.frames}/'
                         f'{counters.bytes / MIB:.1f}MB/drop{counters.drops}')
        return ' '.join(parts)

    def _stats_text(self) -> str:
        return f'queued_mb={self._queued_bytes / MIB:.1f} {self._counter_text()}'


def listen(host: str, port: int) -> socket.socket:
    """Return a listening socket on a loopback address, one client in its queue."""
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
        listener.listen(1)
    except OSError:
        listener.close()
        raise
    listener.settimeout(_POLL_S)
    return listener


def serve_clients(listener: socket.socket, stop: threading.Event,
                  serve: Callable[[socket.socket], None]) -> None:
    """Accept one client at a time and serve it until ``stop`` is set."""
    while not stop.is_set():
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        except OSError:
            if stop.is_set():
                return
            raise
        serve(conn)


def _send_frames(conn: socket.socket, parts: list[bytes]) -> None:
    """Send headers and payloads in order, with one system call when the socket takes all."""
    views = [memoryview(part) for part in parts]
    while views:
        sent = conn.sendmsg(views)
        while views and sent >= len(views[0]):
            sent -= len(views[0])
            views.pop(0)
        if views and sent:
            views[0] = views[0][sent:]


def _send_now(conn: socket.socket, header: bytes, payload: bytes) -> int:
    """Send what the socket takes without blocking; return the bytes sent (0 on an error)."""
    try:
        return conn.sendmsg((header, payload), (), socket.MSG_DONTWAIT)
    except OSError:
        # Full, or broken: the sender thread sends it or finds the error itself.
        return 0


def _unsent(header: bytes, payload: bytes, sent: int) -> tuple[bytes, bytes]:
    """Return the parts of a frame that a send of ``sent`` bytes left."""
    if sent < len(header):
        return memoryview(header)[sent:], payload
    return b'', memoryview(payload)[sent - len(header):]


def _peer_closed(conn: socket.socket) -> bool:
    """Return whether the client closed its end (the client sends nothing otherwise)."""
    try:
        readable, _, _ = select.select([conn], [], [], 0)
        if not readable:
            return False
        return conn.recv(4096, socket.MSG_DONTWAIT) == b''
    except BlockingIOError:
        return False
    except OSError:
        return True


def _shutdown(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
