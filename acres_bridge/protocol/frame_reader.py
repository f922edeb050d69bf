# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The sensor stream's frames off a socket: read ahead, checked against their limits, decoded.

``FrameReader`` reads frames from a blocking socket with a short time-out into buffers it
reuses, with ``recv_into``. Each receive takes what the socket holds into a 32 KiB read-ahead,
so the small frames that arrive together (a step's clock and INS) cost one system call; a
larger payload is received straight into its buffer after the bytes already read ahead.
Frames are handed out as memoryviews valid until the next read. Before reading a payload the
reader checks the claimed length against the limit of its type under the current Hello
(``frames.max_payload_size``), so a header can never make it allocate more; beyond 1 MiB the
buffer grows only as fast as the payload arrives, so a claim within the limit that the peer
does not fill costs no more than the bytes it sent. Frames of unknown types are read away in
bounded chunks and counted. A caller may receive a payload into a buffer of its own
(``payload_target``), chosen once the header passed those checks.
"""

import socket
import threading
from typing import Callable

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

READ_TIMEOUT_S = 0.2
# What one recv_into may take beyond the frame being read; payloads up to this size are read
# in it, larger ones straight into their buffer.
READ_AHEAD_BYTES = 1 << 15
_GROW_START = 1 << 20
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
    :param on_bad_target: called with what is wrong with a target that cannot receive the
        payload; the payload then goes to the reader's own buffer. Without it such a target
        raises ValueError.
    """

    def __init__(self, sock: socket.socket, *, stop: threading.Event | None = None,
                 max_frame_bytes: int = MAX_SENSOR_PAYLOAD,
                 on_skipped: Callable[[FrameHeader], None] | None = None,
                 payload_target: Callable[[FrameHeader], memoryview | None] | None = None,
                 on_bad_target: Callable[[str], None] | None = None) -> None:
        self._sock = sock
        self._stop = stop if stop is not None else threading.Event()
        self._max_frame_bytes = max_frame_bytes
        self._on_skipped = on_skipped
        self._payload_target = payload_target
        self._on_bad_target = on_bad_target
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
            if target is not None:
                problem = payload_view_problem(target, size)
                if problem:
                    if self._on_bad_target is None:
                        raise ValueError(f'payload_target gave {problem}')
                    self._on_bad_target(problem)
                    target = None
            if target is None:
                payload = self._read_payload(size)
            else:
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
