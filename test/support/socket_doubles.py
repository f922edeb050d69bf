# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Socket doubles: bytes served in awkward chunks, and loopback servers the tests script.

:class:`ChunkedSocket` stands in for a socket in the frame reader's tests.
:class:`LoopbackServer` is a real server on 127.0.0.1:0 that a test's subclass scripts (a
sensor stream that sends chosen bytes, a control channel that answers as told).
"""

import socket
import threading


class ChunkedSocket:
    """A socket double that serves bytes in chunks of given sizes, then end of stream."""

    def __init__(self, data: bytes, chunks: list[int] | int = 1 << 30) -> None:
        self._data = memoryview(data)
        self._chunks = chunks if isinstance(chunks, list) else [chunks]
        self._calls = 0
        self.position = 0

    @property
    def calls(self) -> int:
        """The recv_into calls so far."""
        return self._calls

    def recv_into(self, view: memoryview, count: int) -> int:
        size = self._chunks[self._calls % len(self._chunks)]
        self._calls += 1
        size = max(0, min(size, count, len(self._data) - self.position))
        view[:size] = self._data[self.position:self.position + size]
        self.position += size
        return size


class LoopbackServer:
    """
    A server on 127.0.0.1:0 whose subclass serves the connections it accepts, on its thread.

    A subclass sets its own attributes, then calls ``super().__init__()``, which starts the
    thread that runs its :meth:`serve`. An exception there is kept, and :meth:`close` fails
    the test with it; ``release`` lets a connection the server holds open go.
    """

    def __init__(self, wait_s: float = 5.0) -> None:
        self._server = socket.create_server(('127.0.0.1', 0))
        self._server.settimeout(wait_s)
        self._wait_s = wait_s
        self.port = self._server.getsockname()[1]
        self.release = threading.Event()
        self.errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def accept(self) -> socket.socket:
        """Return the next client connection (socket.timeout after ``wait_s``)."""
        return self._server.accept()[0]

    def serve(self) -> None:
        """Serve the connections the test expects (the subclass's script)."""
        raise NotImplementedError

    def _run(self) -> None:
        try:
            self.serve()
        except BaseException as exc:  # noqa: B902 - reported by close()
            self.errors.append(exc)

    def close(self) -> None:
        """Release held connections, stop, and fail with any error of the server's thread."""
        self.release.set()
        self._thread.join(self._wait_s)
        self._server.close()
        assert not self.errors
