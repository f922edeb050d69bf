# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""Raw clients of the emulator's sockets for its tests: every read has a deadline."""

import json
import socket
import struct
from typing import Any

HEADER = struct.Struct('<4sHHIIdd')
TIMEOUT_S = 10.0


class JsonChannel:
    """A JSON-lines client of the control channel that keeps every line it reads."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(('127.0.0.1', port), timeout=TIMEOUT_S)
        self.file = self.sock.makefile('rb')
        self.events: list[dict[str, Any]] = []
        self._next_id = 100

    def send_line(self, line: bytes) -> None:
        self.sock.sendall(line + b'\n')

    def send(self, op: str, **fields: Any) -> int:
        """Send one request with a new id; return the id."""
        self._next_id += 1
        self.send_line(json.dumps({'id': self._next_id, 'op': op, **fields}).encode())
        return self._next_id

    def read(self) -> dict[str, Any]:
        """Return the next line (an event or a reply)."""
        line = self.file.readline()
        if not line:
            raise ConnectionError('the control channel closed')
        return json.loads(line)

    def reply(self) -> dict[str, Any]:
        """Return the next reply; the events before it go to :attr:`events`."""
        while True:
            message = self.read()
            if 'event' not in message:
                return message
            self.events.append(message)

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send a request and return its reply."""
        request_id = self.send(op, **fields)
        message = self.reply()
        assert message.get('id') == request_id, message
        return message

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def connect_stream(port: int) -> socket.socket:
    """Connect to a sensor stream."""
    return socket.create_connection(('127.0.0.1', port), timeout=TIMEOUT_S)


def read_exact(sock: socket.socket, count: int) -> bytes:
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError('the stream closed')
        data += chunk
    return bytes(data)


def read_frame(sock: socket.socket) -> tuple[int, int, float, bytes]:
    """Return (type, sequence, stamp, payload) of the next frame."""
    magic, kind, flags, sequence, size, stamp_s, _ = HEADER.unpack(read_exact(sock, 32))
    assert magic == b'TSS1' and flags == 0
    return kind, sequence, stamp_s, read_exact(sock, size)


def read_until_barrier(sock: socket.socket) -> list[tuple[int, int, float, bytes]]:
    """Return the frames up to and including the next Barrier frame."""
    frames = []
    while True:
        frame = read_frame(sock)
        frames.append(frame)
        if frame[0] == 6:
            return frames
