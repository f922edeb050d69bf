# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
How a process of acres_bridge takes SIGINT and SIGTERM: they only ask its main loop to stop.

Standard library only, no rclpy: the nodes' process (:mod:`acres_bridge.runtime.process`), the
emulator and the fault proxy stop the same way.
"""

from collections.abc import Callable
import os
import signal
import sys
import threading
from types import FrameType
from typing import Protocol
from typing import TypeVar

from acres_bridge.protocol.errors import TransportError


class StopRequest:
    """
    SIGINT and SIGTERM handlers that only ask the main loop to stop.

    The first SIGINT or SIGTERM asks for the stop. Later SIGINTs are ignored: Ctrl-C under
    ``ros2 launch`` brings the terminal's and then launch's own. They are ignored by the
    kernel (``SIG_IGN``), because Python puts its own handlers back to the default when the
    interpreter finalises, and a SIGINT there would end the process with -2. Once the stop
    has begun, however it began (a signal, or a sensor child's channel closing), SIGTERM is
    the kernel's default again: a later SIGTERM ends the process at once, even while the main
    thread is inside native code that never returns to Python (a Fast DDS teardown that
    hangs), where a Python handler would never run. launch, and a session ending its sensor
    processes, send SIGTERM when SIGINT or the channel's end was not enough.

    Python runs a handler only once the main thread is back in Python code, not while it
    waits in rcl. With ``wake`` (which gives the executor a task), a thread ``signal-wake``
    reads each signal's byte from Python's wakeup file descriptor and calls it: ``spin_once``
    returns, the handler runs and the main loop sees the request, however long its period.
    """

    def __init__(self) -> None:
        self._requested = threading.Event()
        self._write_fd: int | None = None
        self._previous_fd = -1
        self._thread: threading.Thread | None = None

    def install(self, wake: Callable[[], None] | None = None) -> None:
        """Take SIGINT and SIGTERM (only the main thread can); call ``wake`` on each signal."""
        if threading.current_thread() is not threading.main_thread():
            return
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        if wake is not None and self._write_fd is None:
            read_fd, write_fd = os.pipe()
            os.set_blocking(write_fd, False)
            self._previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
            self._write_fd = write_fd
            self._thread = threading.Thread(target=_wake_on_signal, args=(read_fd, wake),
                                            name='signal-wake', daemon=True)
            self._thread.start()

    def uninstall(self, timeout_s: float = 5.0) -> None:
        """Stop waking the executor (the handlers stay): call before the executor goes."""
        if self._write_fd is None or threading.current_thread() is not threading.main_thread():
            return
        signal.set_wakeup_fd(self._previous_fd)
        os.close(self._write_fd)    # the signal-wake thread reads to the end and closes its side
        self._write_fd = None
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    @property
    def requested(self) -> bool:
        """Whether the stop was asked for (a signal) or has begun (:meth:`stopping`)."""
        return self._requested.is_set()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait until the stop is requested or ``timeout_s`` passed; return whether it is."""
        return self._requested.wait(timeout_s)

    def stopping(self) -> None:
        """Mark the stop as begun: later SIGINTs are ignored, a SIGTERM ends the process."""
        self._requested.set()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopping()


class Server(Protocol):
    """A loopback server of a command line: the emulator, the fault proxy."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


ServerT = TypeVar('ServerT', bound=Server)


def serve_until_stopped(program: str, build: Callable[[], ServerT], listening: str,
                        run: Callable[[ServerT, StopRequest], None]) -> int:
    """
    Run a loopback server's command line from its arguments to its exit status.

    ``build`` makes the server; a refused argument (ValueError, TransportError) is one line on
    stderr and exit 2. From then on SIGINT and SIGTERM only ask for the stop. A server that
    cannot listen (an OSError from ``start``) is one line naming ``listening`` and exit 1.
    ``run`` serves until the stop is asked for or it returns; the server stops in every case.
    """
    try:
        server = build()
    except (TransportError, ValueError) as exc:
        print(f'{program}: {exc}', file=sys.stderr)
        return 2
    stop = StopRequest()
    stop.install()
    try:
        try:
            server.start()
        except OSError as exc:
            print(f'{program}: cannot listen on {listening}: {exc.strerror or exc}',
                  file=sys.stderr)
            return 1
        run(server, stop)
    finally:
        stop.stopping()
        server.stop()
    return 0


def _wake_on_signal(read_fd: int, wake: Callable[[], None]) -> None:
    """Call ``wake`` for each signal byte written to the pipe, until its writer is closed."""
    try:
        while os.read(read_fd, 64):
            wake()
    finally:
        os.close(read_fd)
