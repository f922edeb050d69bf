# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
A loopback proxy in front of a sensor stream that decodes a copy of every frame it passes on.

A bridge under test connects to the tap's ``port`` instead of the stream's; the tap forwards
the simulator's bytes unchanged and decodes its copy with the protocol layer's FrameReader, as
any client of the stream could. The tests compare what reached the topics with these frames,
so they see the bridge from outside, through the same sockets and topics as a user would.

A frame is recorded as the bridge is sent it, before the bridge has published it: wait on the
topics (or the bridge's public state) for what the bridge did, then read the frames here.
"""

import dataclasses
import select
import socket
import threading
from typing import Any, Callable

from acres_bridge.protocol.errors import FrameError
from acres_bridge.protocol.errors import TransportError
from acres_bridge.protocol.frame_reader import FrameReader
from acres_bridge.protocol.frames import BarrierFrame
from acres_bridge.protocol.frames import CameraFrame
from acres_bridge.protocol.frames import Frame
from acres_bridge.protocol.frames import HelloFrame
from acres_bridge.protocol.frames import LidarFrame

TIMEOUT_S = 15.0
_POLL_S = 0.05
_CHUNK = 1 << 16


def copy_frame(frame: Frame) -> Frame:
    """Return a frame whose memoryviews own their bytes (the reader reuses its buffer)."""
    if isinstance(frame, LidarFrame):
        return dataclasses.replace(frame, points=memoryview(bytes(frame.points)))
    if isinstance(frame, CameraFrame):
        return dataclasses.replace(frame, pixels=memoryview(bytes(frame.pixels)))
    return frame


class WireTap:
    """
    Forward one sensor stream to one client at a time and keep the frames it carried.

    Like the simulator, the tap serves one client at a time; a second waits in its listen
    queue. Each client gets a connection of its own to ``upstream_port``.
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.frames: list[Frame] = []
        self._condition = threading.Condition()
        self._closing = threading.Event()
        self._listener = socket.create_server(('127.0.0.1', 0))
        self._listener.settimeout(_POLL_S)
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, name='wire-tap', daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop forwarding and close every socket."""
        self._closing.set()
        self._thread.join(TIMEOUT_S)
        self._listener.close()

    def __enter__(self) -> 'WireTap':
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def of(self, kind: type) -> list[Any]:
        """Return the frames of one type, in order."""
        with self._condition:
            return [frame for frame in self.frames if isinstance(frame, kind)]

    def wait(self, predicate: Callable[['WireTap'], Any], timeout_s: float = TIMEOUT_S,
             what: str = 'frames') -> None:
        """Wait until ``predicate(tap)`` holds."""
        with self._condition:
            if not self._condition.wait_for(lambda: predicate(self), timeout_s):
                raise AssertionError(f'timed out waiting for {what} on the wire')

    def wait_hello(self) -> None:
        """Wait until the stream's Hello went by (a client may have it before the tap)."""
        self.wait(lambda tap: tap.of(HelloFrame), what='the Hello')

    def wait_barrier(self, step: int) -> None:
        """Wait until the Barrier of ``step``, the last frame of a step request, went by."""
        self.wait(lambda tap: any(frame.step == step for frame in tap.of(BarrierFrame)),
                  what=f'the barrier of step {step}')

    def _serve(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            try:
                upstream = socket.create_connection(('127.0.0.1', self.upstream_port))
            except OSError:
                client.close()
                continue
            with client, upstream:
                self._forward(client, upstream)

    def _forward(self, client: socket.socket, upstream: socket.socket) -> None:
        """Copy the stream's bytes to the client and to the decoder until either side ends."""
        copy_in, copy_out = socket.socketpair()
        decoder = threading.Thread(target=self._decode, args=(copy_out,), name='wire-decode',
                                   daemon=True)
        decoder.start()
        try:
            with copy_in:
                while not self._closing.is_set():
                    readable, _, _ = select.select([upstream, client], [], [], _POLL_S)
                    if client in readable and not client.recv(_CHUNK):
                        return          # the client left (it never sends)
                    if upstream in readable:
                        data = upstream.recv(_CHUNK)
                        if not data:
                            return
                        client.sendall(data)
                        self._copy(copy_in, data, decoder)
        except OSError:
            return
        finally:
            decoder.join(TIMEOUT_S)

    @staticmethod
    def _copy(sock: socket.socket, data: bytes, decoder: threading.Thread) -> None:
        """Give the decoder its copy while it reads; a decoder that ended needs none."""
        if decoder.is_alive():
            try:
                sock.sendall(data)
            except OSError:
                pass            # it ended in the meantime: the client's bytes go on

    def _decode(self, sock: socket.socket) -> None:
        with sock:
            sock.settimeout(_POLL_S)
            reader = FrameReader(sock)
            while True:
                try:
                    frame = reader.read_frame()
                except FrameError as exc:
                    if exc.recoverable:
                        continue    # skipped, as the bridge skips it
                    return          # broken: the bridge reports it and reconnects
                except TransportError:
                    return          # the copy ended
                with self._condition:
                    self.frames.append(copy_frame(frame))
                    self._condition.notify_all()
