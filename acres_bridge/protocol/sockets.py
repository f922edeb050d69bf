# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Loopback sockets: the address checks and the reconnecting client thread of both channels.

The simulator's sockets listen on 127.0.0.1 only, so ``require_loopback`` refuses any host that
resolves elsewhere. ``ReconnectingClient`` owns one thread that connects, hands the socket to
its subclass and reconnects every ``reconnect_s`` after any failure; the sensor stream
(``stream_client.py``) and the control channel (``control_client.py``) stand on it. Repeated
reports go out at most once per interval (:mod:`acres_bridge.protocol.throttle`).

The clients log nothing themselves: each report (connected, disconnected, a bad frame, a
callback that raised) goes once to the ``log(level, text)`` handler the caller gives, with
``level`` a ``logging`` level; without one it goes to the Python logger of the client's
module. The nodes give a handler that writes to their ROS logger.
"""

import ipaddress
import logging
import socket
import threading
import traceback
from typing import Any, Callable

from acres_bridge.protocol.errors import TransportError
from acres_bridge.protocol.threads import name_native_thread
from acres_bridge.protocol.throttle import held_text
from acres_bridge.protocol.throttle import LOG_INTERVAL_S
from acres_bridge.protocol.throttle import LogThrottle

CONNECT_TIMEOUT_S = 2.0

LogHandler = Callable[[int, str], None]


def require_loopback(host: str) -> str:
    """
    Resolve a simulator host and refuse anything but a loopback address.

    The simulator's sockets listen on 127.0.0.1 only; a client must never reach an address
    another machine could own. Every address the name resolves to must be in 127.0.0.0/8 or
    be ::1.

    :param host: a host name or a numeric address ('127.0.0.1', 'localhost', '::1').
    :return: the address to connect to, IPv4 dotted when the name has one ('127.0.0.1').
    :raises TransportError: for an empty or unresolvable host, or one that resolves to any
        address that is not loopback (including 0.0.0.0).
    """
    name = host.strip() if isinstance(host, str) else ''
    if name.startswith('[') and name.endswith(']'):
        name = name[1:-1]
    if not name:
        raise TransportError(f'host {host!r} is empty: the simulator listens on 127.0.0.1')
    try:
        infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise TransportError(
            f'host {host!r} does not resolve ({exc}): the simulator listens on 127.0.0.1'
        ) from exc
    addresses: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for _, _, _, _, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split('%', 1)[0])
        if address not in addresses:
            addresses.append(address)
    for address in addresses:
        mapped = address.version == 6 and address.ipv4_mapped is not None
        if mapped or not address.is_loopback:
            why = ' (any address, not a host)' if address.is_unspecified else ''
            raise TransportError(
                f'host {host!r} resolves to {address}{why}, which is not a loopback address: '
                'the simulator listens on 127.0.0.1 only')
    if not addresses:
        raise TransportError(f'host {host!r} resolves to no address')
    addresses.sort(key=lambda address: address.version)
    return str(addresses[0])


def require_port(port: int) -> int:
    """
    Return a TCP port to connect to.

    :raises TransportError: unless the port is an integer from 1 to 65535.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise TransportError(f'port {port!r} is not from 1 to 65535')
    return port


def describe_socket_error(exc: OSError) -> str:
    """Return a short text for a failed connect or receive ('connection refused')."""
    if isinstance(exc, ConnectionRefusedError):
        return 'connection refused'
    if isinstance(exc, TimeoutError):
        return 'timed out'
    return exc.strerror or str(exc)


def shutdown_socket(sock: socket.socket) -> None:
    """Shut both directions of a socket down, so that a blocked reader wakes; never raise."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class ReconnectingClient:
    """
    The thread, the connection loop and the connection counters of a socket client.

    The thread connects to ``address:port``, hands the socket to ``_serve`` until it returns
    the reason the connection ended, and tries again every ``reconnect_s`` until ``stop()``.
    ``on_connection(connected, reason)`` runs on that thread when the state or the reason of
    a failure changes, so a port that keeps refusing is reported once; the change is logged
    once through ``log`` (disconnections at most once in 5 s).
    """

    _kind = 'socket'

    def __init__(self, host: str, port: int, *, name: str, thread_name: str,
                 on_connection: Callable[[bool, str], None] | None, reconnect_s: float,
                 connect_timeout_s: float, counters: tuple[str, ...],
                 log: LogHandler | None = None) -> None:
        self.port = require_port(port)
        self.address = require_loopback(host)
        self.name = name
        self._thread_name = thread_name
        self._on_connection = on_connection
        self._reconnect_s = reconnect_s
        self._connect_timeout_s = connect_timeout_s
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self._connected = False
        self._reason = 'not started'
        self._reported: tuple[bool, str] | None = None
        self._callback_log = LogThrottle(LOG_INTERVAL_S)
        self._problem_log = LogThrottle(LOG_INTERVAL_S)
        self._disconnect_log = LogThrottle(LOG_INTERVAL_S)
        self._log = log if log is not None else python_log(type(self).__module__)
        self._counts = dict.fromkeys(
            ('connections', 'reconnects', 'connect_failures', 'disconnects', 'callback_errors',
             *counters), 0)

    def start(self) -> None:
        """Start the thread (once); it connects and keeps reconnecting until ``stop()``."""
        if self._thread is not None:
            raise RuntimeError(f'{self._kind} client {self.name!r} already started')
        self._thread = threading.Thread(target=self._run, name=self._thread_name, daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the thread: set the stop event, shut the socket down and join."""
        self._stop.set()
        self._interrupt()
        with self._lock:
            sock = self._sock
        if sock is not None:
            shutdown_socket(sock)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)

    @property
    def connected(self) -> bool:
        """Return whether a connection is open."""
        return self._connected

    @property
    def running(self) -> bool:
        """Return whether the thread is alive (started and not yet joined by ``stop()``)."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def _label(self) -> str:
        """Return what the log lines start with ('sensor stream polaris')."""
        return f'{self._kind} {self.name}'

    def _connection_stats(self) -> dict[str, Any]:
        """Return the connection keys of ``stats``; call with the lock held."""
        return {'name': self.name, 'address': self.address, 'port': self.port,
                'connected': self._connected, 'reason': self._reason, **self._counts}

    # --- hooks of the subclasses -------------------------------------------------------------

    def _configure(self, sock: socket.socket) -> None:
        """Set the options of a new connection before anyone else sees it."""

    def _serve(self, sock: socket.socket) -> str:
        """Use the connection until it ends; return why."""
        raise NotImplementedError

    def _closed(self, reason: str) -> None:
        """Clean up after a connection ended (or at stop)."""

    def _interrupt(self) -> None:
        """Wake the thread when ``stop()`` is called."""

    def _close_socket(self, sock: socket.socket) -> None:
        sock.close()

    # --- the thread --------------------------------------------------------------------------

    def _run(self) -> None:
        name_native_thread(self._thread_name)
        try:
            while not self._stop.is_set():
                reason = self._connect_and_serve()
                if self._stop.is_set():
                    break
                self._closed(reason)
                self._report(False, reason)
                self._stop.wait(self._reconnect_s)
        except Exception:
            self._log(logging.ERROR, f'{self._label}: the thread failed\n'
                      f'{traceback.format_exc().rstrip()}')
            raise
        finally:
            self._closed('client stopped')
            self._report(False, 'stopped')

    def _connect_and_serve(self) -> str:
        try:
            sock = socket.create_connection((self.address, self.port),
                                            timeout=self._connect_timeout_s)
        except OSError as exc:
            with self._lock:
                self._counts['connect_failures'] += 1
            return f'cannot connect to {self.address}:{self.port}: {describe_socket_error(exc)}'
        try:
            self._configure(sock)
            with self._lock:
                self._sock = sock
                self._counts['connections'] += 1
                self._counts['reconnects'] = self._counts['connections'] - 1
            if self._stop.is_set():
                return 'stopped'
            self._report(True, f'connected to {self.address}:{self.port}')
            return self._serve(sock)
        finally:
            with self._lock:
                self._sock = None
            shutdown_socket(sock)
            self._close_socket(sock)

    def _report(self, connected: bool, reason: str) -> None:
        with self._lock:
            if self._connected and not connected:
                self._counts['disconnects'] += 1
            self._connected = connected
            self._reason = reason
            if (connected, reason) == self._reported:
                return
            self._reported = (connected, reason)
        if connected or reason == 'stopped':
            self._log(logging.INFO, f'{self._label}: {reason}')
        elif (held := self._disconnect_log.ready()) is not None:
            self._log(logging.WARNING, f'{self._label}: disconnected: {reason}; reconnecting '
                      f'every {self._reconnect_s:g} s{held_text(held)}')
        self._call('on_connection', self._on_connection, connected, reason)

    def _warn(self, text: str, *args: Any) -> None:
        """Log ``text % args`` about the data at most once in 5 s, with the count held back."""
        held = self._problem_log.ready()
        if held is not None:
            self._log(logging.WARNING, f'{self._label}: {text % args}{held_text(held)}')

    def _call(self, which: str, callback: Callable[..., Any] | None, *args: Any) -> Any:
        """
        Call back and return what it returns.

        An exception is counted and logged (at most once in 5 s) instead of raised; the call
        then returns None.
        """
        if callback is None:
            return None
        try:
            return callback(*args)
        except Exception:
            with self._lock:
                self._counts['callback_errors'] += 1
            held = self._callback_log.ready()
            if held is not None:
                self._log(logging.ERROR, f'{self._label}: {which} raised{held_text(held)}\n'
                          f'{traceback.format_exc().rstrip()}')


def python_log(name: str) -> LogHandler:
    """Return a log handler that writes to the Python logger ``name``."""
    logger = logging.getLogger(name)

    def log(level: int, text: str) -> None:
        logger.log(level, '%s', text)

    return log
