# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

# Over 500 lines in one module on purpose: one proxy serves both channels; the accept loop,
# the sessions and the byte pumps are shared, and each protocol adds only where it breaks
# the bytes.

"""
A fault-injection proxy: a man in the middle between a client and one of the emulator's sockets.

``FaultProxy`` listens on 127.0.0.1 (port 0: any free port) and, for each client it accepts,
opens its own connection to the upstream socket (the emulator's sensor stream or control
channel, loopback only) and copies bytes both ways. It understands just enough of each protocol
to break it at the right place:

* ``protocol='stream'`` (seed 000): the upstream bytes are cut into frames (32-byte header and
  payload). A fault waits for the next frame after the Hello (optionally of one type) and then
  corrupts its magic, cuts it in the middle of its payload and closes, replaces its header by
  one claiming ``size`` bytes, sends random bytes or a frame of an unknown type before it,
  stalls the stream until released, or drops the connection.
* ``protocol='control'`` (seed 004): the bytes are cut into lines. The requests of the client
  are parsed to learn which op each id belongs to; a fault waits for the next reply (a line
  with an ``id`` and no ``event``, optionally of one op) and delays it, swallows it, replaces it
  (non-JSON text, another id) or drops the connection instead of sending it.

Each fault fires once; ``inject`` returns a ``Fault`` whose ``fired`` event tells when. Faults
are shared by all connections of the proxy and taken in order. ``upstream_port`` may be changed
while the proxy runs (a simulator that restarted on another port): new connections use it.

Nothing here is an emulator of the simulator; it only breaks the bytes the simulator (or the
emulator) sends, so a client sees the failures a real network, a crashed game or a future
protocol version could produce. The tests drive it in-process; users run it as
``acres_fault_proxy`` (:mod:`acres_bridge.emulator.fault_tool`) to test their own stack.
"""

from collections.abc import Callable
import dataclasses
import json
import logging
import random
import socket
import threading
import time
from typing import Any

from acres_bridge.protocol.frames import HEADER
from acres_bridge.protocol.frames import HEADER_SIZE
from acres_bridge.protocol.frames import MAGIC
from acres_bridge.protocol.lines import LineSplitter
from acres_bridge.protocol.sockets import require_loopback
from acres_bridge.protocol.sockets import shutdown_socket

logger = logging.getLogger(__name__)

STREAM_ACTIONS = frozenset(
    ('bad_magic', 'cut', 'huge_header', 'garbage', 'unknown_type', 'stall', 'drop'))
CONTROL_ACTIONS = frozenset(('delay', 'swallow', 'replace', 'rewrite_id', 'drop'))
UNKNOWN_FRAME_TYPE = 42
_POLL_S = 0.1
_CHUNK = 1 << 16


@dataclasses.dataclass(eq=False)
class Fault:
    """
    One fault to inject, once.

    :param action: what to do (``STREAM_ACTIONS`` or ``CONTROL_ACTIONS``).
    :param frame_type: stream faults: the type of the frame to wait for (None: any but Hello).
    :param op: control faults: the op whose reply to wait for (None: any reply).
    :param params: the action's options: ``size`` (huge_header: the claimed payload bytes;
        garbage and unknown_type: the bytes to send), ``seed`` (garbage), ``keep`` (cut: the
        payload bytes sent before closing), ``delay_s`` (delay), ``line`` (replace: the bytes
        sent instead of the reply, a newline added), ``id_offset`` (rewrite_id).

    A stream fault notes the sequence number of the frame it acted on (``sequence``) before
    it fires: a reader has every frame before it once its last sequence is the one before.
    """

    action: str
    frame_type: int | None = None
    op: str | None = None
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    fired: threading.Event = dataclasses.field(default_factory=threading.Event)
    release: threading.Event = dataclasses.field(default_factory=threading.Event)
    fired_at: float | None = None
    sequence: int | None = None

    def wait(self, timeout_s: float) -> bool:
        """Wait until the fault fired; return whether it did."""
        return self.fired.wait(timeout_s)


class _Session:
    """One client connection and its upstream connection."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self.client_lock = threading.Lock()
        self.closed = threading.Event()
        self.ops: dict[int, str] = {}
        self._pumps = 2
        self._pumps_lock = threading.Lock()

    def send_to_client(self, data: bytes) -> bool:
        # The socket polls with a short time-out (the pumps' recv), so a client that is slow to
        # drain must not look like a broken one: only a real error or close() ends the send.
        view = memoryview(data)
        with self.client_lock:
            while view:
                if self.closed.is_set():
                    return False
                try:
                    view = view[self.client.send(view):]
                except TimeoutError:
                    continue
                except OSError:
                    self.close()
                    return False
        return True

    def close(self) -> None:
        if not self.closed.is_set():
            self.closed.set()
            shutdown_socket(self.client)
            shutdown_socket(self.upstream)

    def pump_done(self) -> None:
        """Close both sockets after the second of the two pumps ended."""
        self.close()
        with self._pumps_lock:
            self._pumps -= 1
            last = self._pumps == 0
        if last:
            with self.client_lock:
                self.client.close()
            self.upstream.close()


class FaultProxy:
    """
    Forward one socket of the emulator through 127.0.0.1 and break it on demand.

    :param upstream_port: the port of the emulator's socket.
    :param protocol: ``stream`` (sensor stream frames) or ``control`` (JSON lines).
    :param port: the port to listen on; 0 binds any free port (see ``port``).
    :param host: the address to listen on and to connect to; loopback only.
    :param name: names the threads and the log lines.
    """

    def __init__(self, upstream_port: int, *, protocol: str = 'stream', port: int = 0,
                 host: str = '127.0.0.1', name: str = 'faults') -> None:
        if protocol not in ('stream', 'control'):
            raise ValueError(f'protocol must be stream or control, got {protocol!r}')
        self.host = require_loopback(host)
        self.upstream_port = upstream_port
        self.protocol = protocol
        self.name = name
        self._requested_port = port
        self.port = 0
        self._listener: socket.socket | None = None
        self._stop = threading.Event()
        self._lock = threading.Condition()
        self._faults: list[Fault] = []
        self._taken: list[Fault] = []     # stalls and delays may still wait on their release
        self._sessions: list[_Session] = []
        self._threads: list[threading.Thread] = []
        self.connections = 0
        self.frames = 0
        self.lines = 0

    # --- life cycle ---------------------------------------------------------------------------

    def start(self) -> 'FaultProxy':
        """Listen and start accepting clients."""
        family = socket.AF_INET6 if ':' in self.host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self._requested_port))
        listener.listen(8)
        listener.settimeout(_POLL_S)
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._spawn(self._accept_loop, f'fault-accept:{self.name}')
        return self

    def stop(self) -> None:
        """Close every connection and the listener and join the threads."""
        self._stop.set()
        with self._lock:
            sessions = list(self._sessions)
            faults = self._faults + self._taken
            self._lock.notify_all()
        for fault in faults:
            fault.release.set()
        for session in sessions:
            session.close()
        for thread in list(self._threads):
            if thread is not threading.current_thread():
                thread.join(5.0)
        if self._listener is not None:
            self._listener.close()

    def __enter__(self) -> 'FaultProxy':
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- faults -------------------------------------------------------------------------------

    def inject(self, action: str, *, frame_type: int | None = None, op: str | None = None,
               **params: Any) -> Fault:
        """
        Queue a fault for the next frame (stream) or reply (control) that matches.

        :return: the fault; ``fault.fired`` is set once it happened, ``fault.release`` ends
            a stall.
        :raises ValueError: for an action the protocol does not have.
        """
        actions = STREAM_ACTIONS if self.protocol == 'stream' else CONTROL_ACTIONS
        if action not in actions:
            raise ValueError(f'{self.protocol} faults are {sorted(actions)}, not {action!r}')
        fault = Fault(action, frame_type=frame_type, op=op, params=params)
        with self._lock:
            self._faults.append(fault)
        return fault

    def drop_all(self) -> int:
        """Close every open connection now (both sides); return how many."""
        with self._lock:
            sessions = [session for session in self._sessions if not session.closed.is_set()]
        for session in sessions:
            session.close()
        return len(sessions)

    def send_to_clients(self, data: bytes) -> int:
        """Write raw bytes to every connected client (an unsolicited line, garbage)."""
        with self._lock:
            sessions = [session for session in self._sessions if not session.closed.is_set()]
        return sum(session.send_to_client(data) for session in sessions)

    def wait_connections(self, count: int, timeout_s: float) -> bool:
        """Wait until the proxy has accepted ``count`` clients in all; return whether it has."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while self.connections < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(remaining)
        return True

    @property
    def open_connections(self) -> int:
        """The client connections open now."""
        with self._lock:
            return sum(not session.closed.is_set() for session in self._sessions)

    def _take(self, match: Callable[[Fault], bool]) -> Fault | None:
        with self._lock:
            for index, fault in enumerate(self._faults):
                if match(fault):
                    self._taken.append(fault)
                    return self._faults.pop(index)
        return None

    @staticmethod
    def _fired(fault: Fault) -> None:
        fault.fired_at = time.monotonic()
        fault.fired.set()

    # --- threads ------------------------------------------------------------------------------

    def _spawn(self, target: Callable[..., None], name: str, *args: Any) -> None:
        thread = threading.Thread(target=self._guarded, args=(target, *args), name=name,
                                  daemon=True)
        with self._lock:
            self._threads = [alive for alive in self._threads if alive.is_alive()]
            self._threads.append(thread)
        thread.start()

    def _guarded(self, target: Callable[..., None], *args: Any) -> None:
        try:
            target(*args)
        except Exception:
            logger.exception('fault proxy %s: %s failed', self.name,
                             threading.current_thread().name)

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stop.is_set():
                    return
                raise
            try:
                upstream = socket.create_connection((self.host, self.upstream_port),
                                                    timeout=2.0)
            except OSError as exc:
                logger.info('fault proxy %s: upstream %d refused a client: %s', self.name,
                            self.upstream_port, exc)
                client.close()
                continue
            for sock in (client, upstream):
                sock.settimeout(_POLL_S)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            session = _Session(client, upstream)
            with self._lock:
                self._sessions = [old for old in self._sessions if not old.closed.is_set()]
                self._sessions.append(session)
                self.connections += 1
                index = self.connections
                self._lock.notify_all()
            down = self._stream_down if self.protocol == 'stream' else self._control_down
            up = self._raw_up if self.protocol == 'stream' else self._control_up
            self._spawn(self._pump, f'fault-down:{self.name}:{index}', session, down)
            self._spawn(self._pump, f'fault-up:{self.name}:{index}', session, up)

    def _pump(self, session: _Session, work: Callable[[_Session], None]) -> None:
        try:
            work(session)
        finally:
            session.pump_done()
            with self._lock:
                self._lock.notify_all()

    def _recv(self, session: _Session, sock: socket.socket, count: int) -> bytes:
        """Return up to ``count`` bytes, b'' at the end (closed, stopped)."""
        while not self._stop.is_set() and not session.closed.is_set():
            try:
                return sock.recv(count)
            except TimeoutError:
                continue
            except OSError:
                return b''
        return b''

    def _recv_exact(self, session: _Session, sock: socket.socket, count: int) -> bytes | None:
        parts = []
        while count > 0:
            data = self._recv(session, sock, min(count, _CHUNK))
            if not data:
                return None
            parts.append(data)
            count -= len(data)
        return b''.join(parts)

    def _raw_up(self, session: _Session) -> None:
        while data := self._recv(session, session.client, _CHUNK):
            try:
                session.upstream.sendall(data)
            except OSError:
                return

    # --- the sensor stream --------------------------------------------------------------------

    def _stream_down(self, session: _Session) -> None:
        first = True
        while True:
            header = self._recv_exact(session, session.upstream, HEADER_SIZE)
            if header is None:
                return
            magic, kind, flags, sequence, size, stamp_s, publish_s = HEADER.unpack(header)
            if magic != MAGIC:
                # Not ours to judge: pass the rest through untouched.
                session.send_to_client(header)
                while data := self._recv(session, session.upstream, _CHUNK):
                    if not session.send_to_client(data):
                        return
                return
            payload = self._recv_exact(session, session.upstream, size)
            if payload is None:
                return
            with self._lock:
                self.frames += 1
            fault = None if first else self._take(
                lambda fault: fault.frame_type is None or fault.frame_type == kind)
            first = False
            if fault is None:
                if not session.send_to_client(header + payload):
                    return
                continue
            fault.sequence = sequence
            logger.info('fault proxy %s: %s at frame %d (type %d, %d bytes)', self.name,
                        fault.action, sequence, kind, size)
            if not self._stream_fault(session, fault, header, payload):
                return

    def _stream_fault(self, session: _Session, fault: Fault, header: bytes,
                      payload: bytes) -> bool:
        """Apply a fault to one frame; return whether the session goes on."""
        action = fault.action
        _, kind, flags, sequence, size, stamp_s, publish_s = HEADER.unpack(header)
        if action == 'drop':
            self._fired(fault)
            session.close()
            return False
        if action == 'cut':
            keep = fault.params.get('keep', size // 2)
            session.send_to_client(header + payload[:keep])
            self._fired(fault)
            session.close()
            return False
        if action == 'bad_magic':
            self._fired(fault)
            return session.send_to_client(b'XXXX' + header[4:] + payload)
        if action == 'huge_header':
            claimed = fault.params.get('size', 0xFFFFFFFF)
            lying = HEADER.pack(MAGIC, kind, flags, sequence, claimed, stamp_s, publish_s)
            self._fired(fault)
            return session.send_to_client(lying + payload)
        if action == 'garbage':
            rng = random.Random(fault.params.get('seed', 0))
            junk = rng.randbytes(fault.params.get('size', 4096))
            self._fired(fault)
            return session.send_to_client(junk + header + payload)
        if action == 'unknown_type':
            extra = bytes(fault.params.get('size', 1000))
            # Numbered just before the frame it precedes, so the counter shows no gap.
            unknown = HEADER.pack(MAGIC, fault.params.get('kind', UNKNOWN_FRAME_TYPE), 0,
                                  (sequence - 1) & 0xFFFFFFFF, len(extra), stamp_s, publish_s)
            self._fired(fault)
            return session.send_to_client(unknown + extra + header + payload)
        if action == 'stall':
            self._fired(fault)
            duration_s = fault.params.get('duration_s')
            fault.release.wait(duration_s)
            return session.send_to_client(header + payload)
        raise ValueError(f'unknown stream fault {action!r}')

    # --- the control channel ------------------------------------------------------------------

    def _lines(self, session: _Session, sock: socket.socket):
        lines = LineSplitter()
        while data := self._recv(session, sock, _CHUNK):
            for line in lines.feed(data):
                yield line + b'\n'

    def _control_up(self, session: _Session) -> None:
        for line in self._lines(session, session.client):
            try:
                request = json.loads(line)
            except (ValueError, RecursionError):
                request = None
            if isinstance(request, dict) and type(request.get('id')) is int:
                with self._lock:
                    session.ops[request['id']] = str(request.get('op'))
            try:
                session.upstream.sendall(line)
            except OSError:
                return

    def _control_down(self, session: _Session) -> None:
        for line in self._lines(session, session.upstream):
            with self._lock:
                self.lines += 1
            message = _parse(line)
            fault = None
            if message is not None and 'event' not in message and type(
                    message.get('id')) is int:
                with self._lock:
                    op = session.ops.pop(message['id'], None)
                fault = self._take(lambda fault: fault.op is None or fault.op == op)
            if fault is None:
                if not session.send_to_client(line):
                    return
                continue
            logger.info('fault proxy %s: %s on the reply to id %s', self.name, fault.action,
                        message.get('id'))
            if not self._control_fault(session, fault, line, message):
                return

    def _control_fault(self, session: _Session, fault: Fault, line: bytes,
                       message: dict[str, Any]) -> bool:
        action = fault.action
        if action == 'drop':
            self._fired(fault)
            session.close()
            return False
        if action == 'swallow':
            self._fired(fault)
            return True
        if action == 'replace':
            self._fired(fault)
            return session.send_to_client(fault.params.get('line', b'not json') + b'\n')
        if action == 'rewrite_id':
            message = {**message, 'id': message['id'] + fault.params.get('id_offset', 1000000)}
            self._fired(fault)
            return session.send_to_client(json.dumps(message).encode() + b'\n')
        if action == 'delay':
            def late() -> None:
                fault.release.wait(fault.params.get('delay_s', 1.0))
                session.send_to_client(line)
                self._fired(fault)
            self._spawn(late, f'fault-late:{self.name}')
            return True
        raise ValueError(f'unknown control fault {action!r}')


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return message if isinstance(message, dict) else None
