# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
The client of the simulator control channel (``-SimControl=<port>``, the Core server's 5600).

The channel is TCP on 127.0.0.1, one JSON object per line of UTF-8 text, ended by a newline.
A request is ``{"id": <int >= 0>, "op": <name>, <fields>}``; the simulator answers each with
one reply carrying the same ``id`` and ``ok`` (true when ``result`` is 1), ``result`` (the
simulation_interfaces result codes) and, when it has one, ``error`` (a warning when ``ok``).
Lines with the key ``event`` come without a request: ``episode`` on connection, after each
reset and each change of state; ``progress`` (``id``, ``completed``, ``remaining``) for a
step request with ``progress`` true. The simulator sends an episode event first on each
connection and reads requests once a frame, so replies come a frame later or more.

``ControlClient`` owns one thread (``control-rx``): it connects and reconnects, matches
replies to futures by id, routes progress events to the request's callback and other events
to ``on_event``, and resolves requests that got no reply in time with ``ControlTimeout``.
Requests never block their caller: the socket is non-blocking, a line the kernel does not
take at once waits in a bounded queue that the thread writes out, a request that finds the
queue full fails at once, and a simulator that reads nothing for ``send_timeout_s`` while
lines wait loses its connection.
"""

import collections
import concurrent.futures
import dataclasses
import heapq
import itertools
import json
import logging
import math
import selectors
import socket
import time
from typing import Any, Callable

from acres_bridge.protocol.errors import ControlError
from acres_bridge.protocol.errors import ControlTimeout
from acres_bridge.protocol.errors import ControlUnavailable
from acres_bridge.protocol.lines import LineSplitter
from acres_bridge.protocol.sockets import describe_socket_error
from acres_bridge.protocol.sockets import LogHandler
from acres_bridge.protocol.sockets import ReconnectingClient
from acres_bridge.protocol.sockets import shutdown_socket

DEFAULT_PORT = 5600
MAX_LINE_BYTES = 16 << 20
_RECV_BYTES = 1 << 16
_REMEMBERED_TIMEOUTS = 4096
_ROUND_TRIPS = 256

Message = dict[str, Any]


@dataclasses.dataclass(slots=True)
class _Pending:
    """A request waiting for its reply."""

    op: str
    future: concurrent.futures.Future
    timeout_s: float
    sent_at: float
    on_progress: Callable[[Message], None] | None


class ControlClient(ReconnectingClient):
    """
    Send requests to the simulator control channel from any thread and get futures back.

    Callbacks run on the reader thread: ``on_event(message)`` for each event other than
    progress (the episode events), ``on_connection(connected, reason)`` when the state or the
    reason of a failure changes, and the ``on_progress(message)`` of a request for each of
    its progress events. An exception in a callback is logged and counted. Reports go to
    ``log`` (see ``sockets.py``); a time-out is the future's error, not a log line.

    :param host: the simulator host; it must resolve to a loopback address.
    :param port: the TCP port of the channel, 1 to 65535.
    :param timeout_s: the default time-out of a request, s.
    :param reconnect_s: the wait before each new connection attempt, s.
    :param name: names the log lines; a name other than 'control' also names the thread.
    :param connect_timeout_s: the time-out of one connection attempt, s.
    :param send_timeout_s: the longest the simulator may read nothing while requests wait
        to be written; then the connection closes and they fail.
    :param max_queued_bytes: the most bytes of requests that may wait to be written; a
        request that would pass it fails at once (one request alone always queues).
    :param log: ``log(level, text)`` for each report; None: the Python logger of this module.
    :raises TransportError: for a host that is not loopback or a port out of range.
    """

    _kind = 'control channel'

    def __init__(self, host: str = '127.0.0.1', port: int = DEFAULT_PORT, *,
                 timeout_s: float = 10.0, reconnect_s: float = 1.0,
                 on_event: Callable[[Message], None] | None = None,
                 on_connection: Callable[[bool, str], None] | None = None,
                 name: str = 'control', connect_timeout_s: float = 2.0,
                 send_timeout_s: float = 5.0, max_queued_bytes: int = 1 << 20,
                 log: LogHandler | None = None) -> None:
        _check_timeout(timeout_s)
        super().__init__(
            host, port, name=name,
            thread_name='control-rx' if name == 'control' else f'control-rx:{name}',
            on_connection=on_connection, reconnect_s=reconnect_s,
            connect_timeout_s=connect_timeout_s, log=log,
            counters=('requests', 'replies', 'timeouts', 'late_replies', 'unknown_replies',
                      'replies_without_id', 'bad_lines', 'events', 'progress_events',
                      'orphan_progress', 'failed_on_close', 'refused_disconnected',
                      'send_failures', 'queue_full', 'unsent_timeouts'))
        self.timeout_s = timeout_s
        self._send_timeout_s = send_timeout_s
        self._max_queued_bytes = max_queued_bytes
        self._on_event = on_event
        self._ids = itertools.count(1)
        # The lines not yet written, in id order, and the rest of the one being written; all
        # under self._lock, which is held across the non-blocking send() that writes them.
        self._outbox: collections.deque[tuple[int, bytes]] = collections.deque()
        self._outbox_bytes = 0
        self._writing: memoryview | None = None
        self._written_at = 0.0
        self._wake_rx, self._wake_tx = socket.socketpair()
        self._wake_rx.setblocking(False)
        self._wake_tx.setblocking(False)
        self._pending: dict[int, _Pending] = {}
        self._deadlines: list[tuple[float, int]] = []
        self._timed_out: collections.OrderedDict[int, str] = collections.OrderedDict()
        self._round_trips: collections.deque[float] = collections.deque(maxlen=_ROUND_TRIPS)

    @property
    def _label(self) -> str:
        return 'control channel' if self.name == 'control' else f'control channel {self.name}'

    # --- control -----------------------------------------------------------------------------

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the thread, fail every pending request with ControlUnavailable and join."""
        super().stop(timeout_s)
        thread = self._thread
        if thread is None or not thread.is_alive():
            self._closed('client stopped')
            self._wake_rx.close()
            self._wake_tx.close()

    @property
    def stats(self) -> dict[str, Any]:
        """
        Return a snapshot of the counters, safe to take from any thread.

        Keys: ``name``, ``address``, ``port``, ``connected``, ``reason`` (of the last state
        change), ``pending``, ``connections``, ``reconnects``, ``connect_failures``,
        ``disconnects``, ``requests`` (sent), ``replies`` (matched to a waiting request),
        ``timeouts``, ``late_replies`` (after their time-out, dropped), ``unknown_replies``
        (an id never sent or already answered), ``replies_without_id``, ``bad_lines`` (not a
        JSON object), ``events`` (other than progress), ``progress_events``,
        ``orphan_progress`` (for no waiting request), ``failed_on_close`` (pending when the
        channel closed), ``refused_disconnected`` (requests made without a connection),
        ``send_failures``, ``queue_full`` (requests refused because the send queue was full),
        ``unsent_timeouts`` (timed out before they were written, never sent),
        ``queued_bytes`` (waiting to be written), ``callback_errors``, ``round_trip_p50_ms``
        and ``round_trip_max_ms`` (over the last 256 replies, None before one).
        """
        with self._lock:
            snapshot = self._connection_stats()
            snapshot['pending'] = len(self._pending)
            snapshot['queued_bytes'] = self._outbox_bytes + (
                len(self._writing) if self._writing is not None else 0)
            round_trips = sorted(self._round_trips)
        snapshot['round_trip_p50_ms'] = (
            round_trips[len(round_trips) // 2] * 1e3 if round_trips else None)
        snapshot['round_trip_max_ms'] = round_trips[-1] * 1e3 if round_trips else None
        return snapshot

    # --- requests ----------------------------------------------------------------------------

    def request_async(self, op: str, *, timeout_s: float | None = None,
                      on_progress: Callable[[Message], None] | None = None,
                      **fields: Any) -> concurrent.futures.Future:
        """
        Send one request and return the future of its reply.

        The future's result is the reply object as the simulator sent it, ``ok`` false
        included. It fails with ``ControlTimeout`` when no reply comes within ``timeout_s``
        (the client's default when None; ``math.inf`` waits forever), with
        ``ControlUnavailable`` when the channel is not connected, closes first or has
        ``max_queued_bytes`` waiting already, and with ``ControlError`` when the fields cannot
        be written as JSON. It never blocks: what the socket does not take at once is written
        by the client's thread.

        :param op: the operation, e.g. 'step'.
        :param on_progress: called on the reader thread with each progress event of this
            request.
        :param fields: the fields of the operation (not ``id``).
        """
        future: concurrent.futures.Future = concurrent.futures.Future()
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        _check_timeout(timeout_s)
        if 'id' in fields:
            raise ValueError('the client chooses the id of a request')
        # One lock from the id to the queue, so that lines go out in the order of their ids.
        with self._lock:
            sock = self._sock
            if sock is None:
                self._counts['refused_disconnected'] += 1
                error: ControlError | None = ControlUnavailable(
                    f'control channel not connected ({self._reason}): {op} not sent', op=op)
            else:
                pending = _Pending(op, future, timeout_s, time.monotonic(), on_progress)
                error, wake = self._queue(sock, next(self._ids), pending, fields)
        if error is not None:
            future.set_exception(error)
            return future
        if wake:
            self._wake()
        return future

    def request(self, op: str, *, timeout_s: float | None = None,
                on_progress: Callable[[Message], None] | None = None,
                **fields: Any) -> Message:
        """
        Send one request and wait for its reply (see ``request_async``).

        :raises ControlTimeout: when no reply came in time.
        :raises ControlUnavailable: when the channel is not connected or closed first.
        """
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        future = self.request_async(op, timeout_s=timeout_s, on_progress=on_progress,
                                    **fields)
        # The reader resolves the future at its time-out; the margin covers a dead reader.
        try:
            return future.result(timeout=timeout_s + 5.0 if math.isfinite(timeout_s) else None)
        except concurrent.futures.TimeoutError:
            raise ControlTimeout(f'no reply to {op} within {timeout_s:g} s', op=op) from None

    def _queue(self, sock: socket.socket, request_id: int, pending: _Pending,
               fields: dict[str, Any]) -> tuple[ControlError | None, bool]:
        """
        Queue a request and write what the socket takes; call with the lock held.

        :return: the error to fail the request with, or None, and whether the thread must
            wake (to write the rest, or for an earlier deadline).
        """
        op = pending.op
        try:
            line = json.dumps({'id': request_id, 'op': op, **fields},
                              separators=(',', ':'), allow_nan=False).encode() + b'\n'
        except (TypeError, ValueError) as exc:
            return ControlError(f'{op} request cannot be written as JSON: {exc}',
                                request_id=request_id, op=op), False
        if self._outbox_bytes and self._outbox_bytes + len(line) > self._max_queued_bytes:
            self._counts['queue_full'] += 1
            return ControlUnavailable(
                f'control channel send queue full ({self._outbox_bytes} bytes the simulator '
                f'has not read): {op} not sent', request_id=request_id, op=op), False
        self._pending[request_id] = pending
        wake = False
        if math.isfinite(pending.timeout_s):
            deadline = pending.sent_at + pending.timeout_s
            wake = not self._deadlines or deadline < self._deadlines[0][0]
            heapq.heappush(self._deadlines, (deadline, request_id))
        if self._writing is None and not self._outbox:
            self._written_at = pending.sent_at   # the stall clock starts with the first line
        self._outbox.append((request_id, line))
        self._outbox_bytes += len(line)
        try:
            wake = not self._flush(sock) or wake
        except OSError as exc:
            self._counts['send_failures'] += 1
            shutdown_socket(sock)   # the thread sees it and fails what waits
            self._log(logging.WARNING,
                      f'{self._label}: sending {op} failed: {describe_socket_error(exc)}')
        return None, wake

    def _flush(self, sock: socket.socket) -> bool:
        """
        Write what the socket takes without blocking; call with the lock held.

        Lines whose request timed out before their first byte went are dropped unsent.

        :return: whether nothing is left to write.
        :raises OSError: when the send fails.
        """
        while True:
            if self._writing is None:
                if not self._outbox:
                    return True
                request_id, line = self._outbox.popleft()
                self._outbox_bytes -= len(line)
                if request_id not in self._pending:
                    self._counts['unsent_timeouts'] += 1
                    continue
                self._writing = memoryview(line)
                self._counts['requests'] += 1
            try:
                sent = sock.send(self._writing)
            except (BlockingIOError, InterruptedError):
                return False
            self._written_at = time.monotonic()
            self._writing = self._writing[sent:] if sent < len(self._writing) else None

    # --- the reader thread -------------------------------------------------------------------

    def _configure(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _interrupt(self) -> None:
        self._wake()

    def _close_socket(self, sock: socket.socket) -> None:
        with self._lock:           # no request is inside send() when the fd closes
            sock.close()

    def _serve(self, sock: socket.socket) -> str:
        lines = LineSplitter()
        with selectors.DefaultSelector() as selector:
            selector.register(sock, selectors.EVENT_READ)
            selector.register(self._wake_rx, selectors.EVENT_READ)
            watching = selectors.EVENT_READ
            while not self._stop.is_set():
                wait_s = self._expire()
                with self._lock:
                    try:
                        flushed = self._flush(sock)
                    except OSError as exc:
                        return f'send failed: {describe_socket_error(exc)}'
                    stalled_s = time.monotonic() - self._written_at
                if not flushed:
                    if stalled_s >= self._send_timeout_s:
                        return (f'the simulator read no request for {self._send_timeout_s:g} '
                                's')
                    left_s = self._send_timeout_s - stalled_s
                    wait_s = left_s if wait_s is None else min(wait_s, left_s)
                wanted = selectors.EVENT_READ | (0 if flushed else selectors.EVENT_WRITE)
                if wanted != watching:
                    selector.modify(sock, wanted)
                    watching = wanted
                for key, events in selector.select(wait_s):
                    if key.fileobj is self._wake_rx:
                        _drain(self._wake_rx)
                        continue
                    if not events & selectors.EVENT_READ:
                        continue      # writable: the loop's flush writes on
                    try:
                        data = sock.recv(_RECV_BYTES)
                    except (BlockingIOError, InterruptedError, TimeoutError):
                        continue
                    except OSError as exc:
                        return f'receive failed: {describe_socket_error(exc)}'
                    if not data:
                        return 'peer closed'
                    for line in lines.feed(data):
                        self._handle_line(line)
                    if lines.pending > MAX_LINE_BYTES:
                        return f'a line longer than {MAX_LINE_BYTES} bytes'
        return 'stopped'

    def _expire(self) -> float | None:
        """Fail the requests past their deadline; return the time to the next one."""
        expired: list[tuple[int, _Pending]] = []
        now = time.monotonic()
        with self._lock:
            while self._deadlines:
                deadline, request_id = self._deadlines[0]
                if request_id not in self._pending:
                    heapq.heappop(self._deadlines)
                    continue
                if deadline > now:
                    break
                heapq.heappop(self._deadlines)
                pending = self._pending.pop(request_id)
                expired.append((request_id, pending))
                self._timed_out[request_id] = pending.op
                if len(self._timed_out) > _REMEMBERED_TIMEOUTS:
                    self._timed_out.popitem(last=False)
                self._counts['timeouts'] += 1
            wait_s = self._deadlines[0][0] - now if self._deadlines else None
        for request_id, pending in expired:
            self._log(logging.DEBUG, f'{self._label}: no reply to {pending.op} (id '
                      f'{request_id}) within {pending.timeout_s:g} s')
            _fail(pending.future, ControlTimeout(
                f'no reply to {pending.op} within {pending.timeout_s:g} s',
                request_id=request_id, op=pending.op))
        return wait_s

    def _handle_line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):   # RecursionError: nesting deeper than the stack
            message = None
        if not isinstance(message, dict):
            if line.strip():
                self._count('bad_lines')
                self._warn('skipped a line that is not a JSON object: %.120r', line)
            return
        request_id = message.get('id')
        if 'event' in message:
            if message['event'] == 'progress':
                self._handle_progress(request_id, message)
                return
            self._count('events')
            self._call('on_event', self._on_event, message)
            return
        if type(request_id) is not int:
            self._count('replies_without_id')
            self._warn('reply without an id: result %s, error %r', message.get('result'),
                       message.get('error'))
            return
        with self._lock:
            pending = self._pending.pop(request_id, None)
            late_op = self._timed_out.pop(request_id, None) if pending is None else None
            if pending is not None:
                self._counts['replies'] += 1
                self._round_trips.append(time.monotonic() - pending.sent_at)
            elif late_op is not None:
                self._counts['late_replies'] += 1
            else:
                self._counts['unknown_replies'] += 1
        if pending is not None:
            if not pending.future.cancelled():
                try:
                    pending.future.set_result(message)
                except concurrent.futures.InvalidStateError:
                    pass  # cancelled by its caller meanwhile
        elif late_op is not None:
            self._log(logging.INFO,
                      f'{self._label}: dropped the late reply to {late_op} (id {request_id})')
        else:
            self._warn('dropped a reply to unknown id %d', request_id)

    def _handle_progress(self, request_id: Any, message: Message) -> None:
        with self._lock:
            pending = self._pending.get(request_id) if type(request_id) is int else None
            self._counts['progress_events' if pending is not None else 'orphan_progress'] += 1
        if pending is not None and pending.on_progress is not None:
            self._call('on_progress', pending.on_progress, message)

    def _count(self, key: str) -> None:
        with self._lock:
            self._counts[key] += 1

    def _closed(self, reason: str) -> None:
        with self._lock:
            pending = list(self._pending.items())
            self._pending.clear()
            self._deadlines.clear()
            self._outbox.clear()
            self._outbox_bytes = 0
            self._writing = None
            self._counts['failed_on_close'] += len(pending)
        for request_id, waiting in pending:
            _fail(waiting.future, ControlUnavailable(
                f'control channel closed before the reply to {waiting.op} (id {request_id}): '
                f'{reason}', request_id=request_id, op=waiting.op))

    def _wake(self) -> None:
        try:
            self._wake_tx.send(b'\0')
        except OSError:
            pass  # full (a wake-up is pending anyway) or closed (stopped)


def _check_timeout(timeout_s: float) -> None:
    if not timeout_s > 0:
        raise ValueError(f'a time-out must be more than 0 s, got {timeout_s!r}')


def _fail(future: concurrent.futures.Future, error: Exception) -> None:
    if not future.done():
        try:
            future.set_exception(error)
        except concurrent.futures.InvalidStateError:
            pass  # resolved or cancelled meanwhile


def _drain(sock: socket.socket) -> None:
    try:
        while sock.recv(4096):
            pass
    except OSError:
        pass
