# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

# Over 500 lines in one module on purpose: the control channel's state machine (play, step,
# set_state) answers on the client's bounded connection from its own threads (a step's, the
# play loop's), in order with the episode events, so the two are one piece; the ops themselves
# are apart (emulator/ops.py).

"""
The simulator control channel of the emulator (seed 004).

A TCP listener on 127.0.0.1 and a thread, ``sim-control``, that serves one client at a time (a
second client waits in the listen queue). Each line is one JSON object; each request gets one
reply ``{<fields>, "id", "ok", "result", "error"?}``; a line that is not a JSON object gets result
4 without an id. When a client connects it first gets an episode event; the world sends another
after each reset and each change of the simulation state (before the reply of the request).

States: 0 stopped (a full reset, then the world holds), 1 playing (a thread, ``sim-play``, runs
the physics at real time x ``rate``), 2 paused (lockstep: the world advances on step requests
only), 3 quitting (the reply goes out, then ``on_quit`` is called). A step request runs on its
own thread, ``sim-step``, as fast as the world can go: the reading of other requests goes on
(step and set_state get result 3 meanwhile, and in core mode reset too). After its last physics
step the step queues a Barrier frame on each sensor stream, then replies.

Replies and events go out through a writer thread per client, ``sim-control-tx``, so that no
sender waits for the client: a client that does not read is disconnected when more than 8 MiB
of lines wait for it (the game's rule). Port None opens no channel (ACRES Core's
``--control-port 0``); the world then plays, or holds, with no client.
"""

import collections
from collections.abc import Callable
from collections.abc import Sequence
import json
import logging
import socket
import threading
import time
from typing import Any

from acres_bridge.emulator.agents import PHYSICS_HZ
from acres_bridge.emulator.ops import FEATURES
from acres_bridge.emulator.ops import ops_of
from acres_bridge.emulator.ops import PAUSED
from acres_bridge.emulator.ops import PLAYING
from acres_bridge.emulator.ops import QUITTING
from acres_bridge.emulator.ops import Refusal
from acres_bridge.emulator.ops import RESULT_ALREADY
from acres_bridge.emulator.ops import RESULT_FAILED
from acres_bridge.emulator.ops import RESULT_INCORRECT_STATE
from acres_bridge.emulator.ops import RESULT_NOT_SUPPORTED
from acres_bridge.emulator.ops import RESULT_OK
from acres_bridge.emulator.ops import SCOPE_ALL
from acres_bridge.emulator.ops import SCOPE_TIME_WARNING
from acres_bridge.emulator.ops import STOPPED
from acres_bridge.emulator.stream_server import listen
from acres_bridge.emulator.stream_server import SensorStreamServer
from acres_bridge.emulator.stream_server import serve_clients
from acres_bridge.emulator.world import World
from acres_bridge.protocol.lines import LineSplitter
from acres_bridge.protocol.sockets import require_loopback

# FEATURES and SCOPE_TIME_WARNING stay importable from here (emulator/ops.py defines them).
__all__ = ['ControlServer', 'FEATURES', 'KEPT_REQUESTS', 'MAX_UNSENT_BYTES', 'reply_line',
           'RequestLog', 'SCOPE_TIME_WARNING']

# The requests a RequestLog keeps: the recent ones a check looks back on, never a soak's all.
KEPT_REQUESTS = 4096

logger = logging.getLogger(__name__)

PROGRESS_EVERY_STEPS = 12
MAX_LINE_BYTES = 1 << 20

# "The game disconnects a client that does not read when 8 MiB of replies wait."
MAX_UNSENT_BYTES = 8 << 20

_POLL_S = 0.1
FLUSH_ON_STOP_S = 1.0


def reply_line(fields: dict[str, Any], request_id: Any, result: int,
               error: str | None = None) -> dict[str, Any]:
    """Return a reply object: its fields, then id (when the request had one), ok, result, error."""
    reply = dict(fields)
    if request_id is not None:
        reply['id'] = request_id
    reply['ok'] = result == RESULT_OK
    reply['result'] = result
    if error:
        reply['error'] = error
    return reply


class _Connection:
    """
    One client socket and its queue of unsent lines, written by its own thread.

    :meth:`send` never blocks: it queues the line for the writer thread ``sim-control-tx``,
    which hands it to the socket as the client reads. The bytes not yet handed over are
    counted; a line that would make more than ``limit`` of them wait disconnects the client,
    which does not read (the game's rule), instead of holding up the reader or the world.
    """

    def __init__(self, sock: socket.socket, *, limit: int = MAX_UNSENT_BYTES) -> None:
        self.sock = sock
        self.limit = limit
        self.open = True
        self._queue: collections.deque[memoryview] = collections.deque()
        self._unsent = 0
        self._condition = threading.Condition()
        self._writer = threading.Thread(target=self._write, name='sim-control-tx', daemon=True)
        self._writer.start()

    @property
    def unsent_bytes(self) -> int:
        """The bytes of the queued lines not yet handed to the socket."""
        with self._condition:
            return self._unsent

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(',', ':')) + '\n').encode('utf-8')
        with self._condition:
            if not self.open:
                return
            if self._unsent + len(data) > self.limit:
                logger.warning('the control client does not read (%d bytes of replies wait): '
                               'disconnecting it', self._unsent)
                self._close_locked()
                return
            self._queue.append(memoryview(data))
            self._unsent += len(data)
            self._condition.notify()

    def _write(self) -> None:
        while True:
            with self._condition:
                self._condition.wait_for(lambda: self._queue or not self.open)
                if not self.open:
                    return
                data = self._queue[0]
            try:
                sent = self.sock.send(data)
            except TimeoutError:
                continue     # the client reads slowly, or not at all: the count tells
            except OSError:
                self.close()
                return
            with self._condition:
                if not self.open:
                    return      # closed meanwhile: the queue is gone
                self._unsent -= sent
                if sent == len(data):
                    self._queue.popleft()
                    if not self._queue:
                        self._condition.notify_all()     # flush() waits for this
                else:
                    self._queue[0] = data[sent:]

    def flush(self, timeout_s: float) -> bool:
        """Wait until every queued line went to the socket; False after ``timeout_s``."""
        with self._condition:
            return self._condition.wait_for(lambda: not self._queue or not self.open,
                                            timeout_s)

    def close(self) -> None:
        with self._condition:
            self._close_locked()

    def _close_locked(self) -> None:
        self.open = False
        self._queue.clear()
        self._unsent = 0
        self._condition.notify_all()
        _shutdown(self.sock)

    def join(self, timeout_s: float = 5.0) -> None:
        """Wait for the writer thread (after :meth:`close`)."""
        if self._writer is not threading.current_thread():
            self._writer.join(timeout_s)


class RequestLog:
    """
    The JSON requests the control channel received: how many, and the most recent ones.

    A soak sends requests without end, so only the last ``keep`` are kept. A reader marks a
    point with :attr:`count` and reads what came after it with :meth:`since`, which refuses
    (LookupError) when requests after the mark have already been dropped: a check never sees
    part of what it asked for. Appended by the channel's reader thread, read by any thread.
    """

    def __init__(self, keep: int = KEPT_REQUESTS) -> None:
        if keep < 1:
            raise ValueError(f'keep must be 1 or more, got {keep}')
        self._kept: collections.deque[dict[str, Any]] = collections.deque(maxlen=keep)
        self._count = 0
        self._arrived = threading.Condition()

    @property
    def count(self) -> int:
        """How many requests came since the channel opened, the dropped ones included."""
        with self._arrived:
            return self._count

    def append(self, request: dict[str, Any]) -> None:
        """Record a request, dropping the oldest kept one when the log is full."""
        with self._arrived:
            self._kept.append(request)
            self._count += 1
            self._arrived.notify_all()

    def since(self, mark: int = 0) -> list[dict[str, Any]]:
        """Return copies of the requests that came after the first ``mark``, in order."""
        with self._arrived:
            first_kept = self._count - len(self._kept)
            if mark < first_kept:
                raise LookupError(f'requests {mark} to {first_kept - 1} were dropped: only the '
                                  f'last {self._kept.maxlen} are kept')
            return [dict(request) for request in list(self._kept)[mark - first_kept:]]

    def last(self) -> dict[str, Any]:
        """Return a copy of the newest request (IndexError when none came)."""
        with self._arrived:
            return dict(self._kept[-1])

    def wait_for_count(self, count: int, timeout_s: float) -> bool:
        """Wait until ``count`` requests came in all; False when ``timeout_s`` passed first."""
        with self._arrived:
            return self._arrived.wait_for(lambda: self._count >= count, timeout_s)


class ControlServer:
    """
    Serve the simulator control channel of a world.

    :param world: the world.
    :param streams: the sensor stream of each agent (None for an agent without one).
    :param lockstep: start paused (True) or playing.
    :param rate: the real-time factor of the playing state.
    :param session_dir: the folder of the default episode log paths.
    :param on_quit: called on its own thread after the reply of set_state 3.
    :param port: the port of the channel; 0 binds any free port; None opens no channel (Core's
        ``--control-port 0``): the world still plays, or holds in lockstep, with no client.
    """

    def __init__(self, world: World, streams: Sequence[SensorStreamServer | None], *,
                 port: int | None = 0, host: str = '127.0.0.1', lockstep: bool = False,
                 rate: float = 1.0, session_dir: str | None = None,
                 on_quit: Callable[[], None] | None = None) -> None:
        if not rate > 0:
            raise ValueError(f'rate must be above 0, got {rate}')
        self.world = world
        self.streams = list(streams)
        self.host = require_loopback(host)
        self.requested_port = port
        self.port = 0
        self.rate = rate
        self.start_lockstep = lockstep
        self.session_dir = session_dir
        self.on_quit = on_quit
        self.requests = RequestLog()
        self.state = PAUSED if lockstep else PLAYING
        self.stepping = False
        self.quitting = threading.Event()
        self._state_lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._listener: socket.socket | None = None
        self._connection: _Connection | None = None
        self._threads: list[threading.Thread] = []
        self._step_thread: threading.Thread | None = None
        self._ops = ops_of(world.mode)

    # --- life cycle ---------------------------------------------------------------------------

    def start(self) -> int:
        """Bind, start the threads and return the bound port (0 without a channel)."""
        threads = [('sim-play', self._play_loop)]
        if self.requested_port is not None:
            self._listener = listen(self.host, self.requested_port)
            self.port = self._listener.getsockname()[1]
            logger.info('ACRES_SIM_CONTROL_LISTENING port=%d', self.port)
            threads.append(('sim-control', self._serve))
        else:
            logger.info('ACRES_SIM_CONTROL_CLOSED (control port 0: no channel)')
        for name, target in threads:
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        logger.info('ACRES_SIM_CONTROL_READY port=%d lockstep=%d replay=0 log=', self.port,
                    int(self.start_lockstep))
        return self.port

    def stop(self) -> None:
        """Stop the threads, close the sockets and the episode log."""
        connection = self._connection
        if connection is not None:
            # What was sent goes out first (the reply of set_state 3 comes before the stop),
            # for a client that reads; one that does not is not waited for long.
            connection.flush(FLUSH_ON_STOP_S)
        self._stop.set()
        self._wake.set()
        if self._listener is not None:
            _shutdown(self._listener)   # wakes accept()
        connection = self._connection
        if connection is not None:
            _shutdown(connection.sock)
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join()
        step_thread = self._step_thread
        if step_thread is not None and step_thread is not threading.current_thread():
            step_thread.join()
        if self._listener is not None:
            self._listener.close()
        with self.world.lock:
            self.close_log()

    # --- socket -------------------------------------------------------------------------------

    def _serve(self) -> None:
        try:
            serve_clients(self._listener, self._stop, self._serve_client)
        except Exception:
            logger.exception('the control channel failed')

    def _serve_client(self, sock: socket.socket) -> None:
        connection = _Connection(sock)
        self._connection = connection
        try:
            self._read(connection)
        finally:
            connection.close()
            connection.join()
            self._connection = None
            sock.close()

    def _read(self, connection: _Connection) -> None:
        sock = connection.sock
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(_POLL_S)
        with self.world.lock:
            connection.send(self._episode_event())
        lines = LineSplitter()
        while not self._stop.is_set():
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not chunk:
                return
            for line in lines.feed(chunk):
                self._handle_line(line, connection)
            if lines.pending > MAX_LINE_BYTES:
                connection.send(reply_line({}, None, RESULT_FAILED, 'line too long'))
                return

    def _handle_line(self, line: bytes, connection: _Connection) -> None:
        if not line.strip():
            return
        try:
            request = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            connection.send(reply_line({}, None, RESULT_FAILED, f'not a JSON object: {exc}'))
            return
        if not isinstance(request, dict):
            connection.send(reply_line({}, None, RESULT_FAILED, 'not a JSON object'))
            return
        self.requests.append(request)
        request_id = request.get('id')
        if request_id is not None and (
                not isinstance(request_id, int) or isinstance(request_id, bool)
                or request_id < 0):
            connection.send(reply_line({}, None, RESULT_FAILED,
                                       'id must be an integer, 0 or larger'))
            return
        op = request.get('op')
        handler = self._ops.get(op) if isinstance(op, str) else None
        if handler is None:
            connection.send(reply_line({}, request_id, RESULT_NOT_SUPPORTED,
                                       f'unknown op {json.dumps(op)}'))
            return
        try:
            fields = handler(self, request, connection)
        except Refusal as refusal:
            connection.send(reply_line(refusal.fields, request_id, refusal.result,
                                       refusal.error))
            return
        except Exception as exc:
            logger.exception('op %s failed', op)
            connection.send(reply_line({}, request_id, RESULT_FAILED, f'{op} failed: {exc}'))
            return
        if fields is None:
            return   # the op replies later
        warning = fields.pop('error', None)
        connection.send(reply_line(fields, request_id, RESULT_OK, warning))
        if op == 'set_state' and fields['state'] == QUITTING:
            self._quit()

    # --- events -------------------------------------------------------------------------------

    @property
    def lockstep(self) -> bool:
        """Whether the world advances only on step requests."""
        return self.state == PAUSED or self.stepping

    def _episode_event(self) -> dict[str, Any]:
        world = self.world
        return {
            'event': 'episode', 'episode_id': world.episode_id, 'episode': world.episode,
            'reset_epoch': world.reset_epoch, 'step': world.step, 'time_s': world.time_s,
            'episode_time_s': world.episode_time_s, 'state': self.state,
            'lockstep': self.lockstep, 'seed': world.seed,
            'source': 'unreal' if world.mode == 'game' else 'core', 'map': world.map_name,
            'agents': [agent.name for agent in world.agents],
        }

    def send_episode_event(self, connection: _Connection) -> None:
        """Send an episode event to the client (after a reset or a change of state)."""
        connection.send(self._episode_event())

    # --- playing ------------------------------------------------------------------------------

    def _play_loop(self) -> None:
        try:
            while not self._stop.is_set():
                if self.state != PLAYING:
                    self._wake.wait(_POLL_S)
                    self._wake.clear()
                    continue
                self._play()
        except Exception:
            logger.exception('the playing world failed')

    def _play(self) -> None:
        """Run the world at real time x rate while the state is playing."""
        steps_per_s = PHYSICS_HZ * self.rate
        anchor_wall = time.monotonic()
        anchor_step = self.world.step
        while not self._stop.is_set():
            target = anchor_step + int((time.monotonic() - anchor_wall) * steps_per_s)
            if self.world.step >= target:
                due = anchor_wall + (self.world.step + 1 - anchor_step) / steps_per_s
                self._wake.wait(max(0.0, due - time.monotonic()))
                self._wake.clear()
                if self.state != PLAYING:
                    return
                continue
            if target - self.world.step > steps_per_s:
                # More than a second behind: the world runs as fast as it can, not in bursts.
                anchor_wall = time.monotonic()
                anchor_step = self.world.step
            with self.world.lock:
                if self.state != PLAYING:
                    return
                self.world.step_once()

    # --- the state machine (emulator/ops.py checks the requests, then calls it) -------------

    def change_state(self, state: int, connection: _Connection) -> None:
        """
        Go to a simulation state (set_state): stopped resets everything, quitting closes the log.

        :raises Refusal: during a step (3), or when already in the state (101).
        """
        with self._state_lock:
            if self.stepping:
                raise Refusal(RESULT_INCORRECT_STATE, 'a step request is in progress',
                              state=self.state)
            if state == self.state:
                raise Refusal(RESULT_ALREADY, 'already in that state', state=self.state)
            with self.world.lock:
                if state == STOPPED:
                    self.reset_world(SCOPE_ALL, True)
                if state == QUITTING:
                    self.close_log()
                self.state = state
                self.send_episode_event(connection)
        self._wake.set()

    def start_step(self, request_id: int | None, steps: int, progress: bool,
                   connection: _Connection) -> None:
        """
        Start a step request on its own thread, which replies when the steps are done.

        :raises Refusal: (3) during another step or outside the paused state.
        """
        with self._state_lock:
            if self.stepping:
                raise Refusal(RESULT_INCORRECT_STATE, 'a step request is in progress')
            if self.state != PAUSED:
                raise Refusal(RESULT_INCORRECT_STATE,
                              'step needs the paused state (2), the state is '
                              f'{self.state}')
            self.stepping = True
        thread = threading.Thread(target=self._run_step, name='sim-step', daemon=True,
                                  args=(request_id, steps, progress, connection))
        self._step_thread = thread
        thread.start()

    def _quit(self) -> None:
        self.quitting.set()
        if self.on_quit is not None:
            threading.Thread(target=self.on_quit, name='sim-quit', daemon=True).start()

    def _run_step(self, request_id: int | None, steps: int, progress: bool,
                  connection: _Connection) -> None:
        started = time.perf_counter()

        def on_step(done: int) -> bool:
            if progress and done % PROGRESS_EVERY_STEPS == 0 and done < steps:
                event = {'event': 'progress', 'id': request_id, 'completed': done,
                         'remaining': steps - done}
                if request_id is None:
                    del event['id']
                connection.send(event)
            return not self._stop.is_set()

        try:
            self.world.advance(steps, on_step=on_step)
            if self._stop.is_set():
                # The simulator is going away mid-step: like the game quitting, it answers
                # nothing (an early "ok" would claim steps that never ran).
                with self._state_lock:
                    self.stepping = False
                return
            with self.world.lock:
                step = self.world.step
                time_s = self.world.time_s
                for stream in self.streams:
                    if stream is not None:
                        stream.queue_barrier(step, time_s)
            fields = {'step': step, 'time_s': time_s, 'barrier': step,
                      'wall_s': time.perf_counter() - started}
            result, error = RESULT_OK, None
        except Exception as exc:
            logger.exception('step failed')
            fields, result, error = {}, RESULT_FAILED, f'step failed: {exc}'
        with self._state_lock:
            self.stepping = False
        connection.send(reply_line(fields, request_id, result, error))

    def reset_world(self, scope: int, restore_fields: bool) -> int:
        """Reset the world and record the new episode in the episode log."""
        restored = self.world.reset(scope=scope, restore_fields=restore_fields)
        self.log_episode()
        return restored

    def log_episode(self) -> None:
        """Write the episode record to the episode log, when one records."""
        log = self.world.episode_log
        if log is not None:
            event = self._episode_event()
            del event['event']
            log.write('/acres/episode', self.world.time_s, event)

    def close_log(self) -> None:
        """Close the episode log, when one records."""
        log = self.world.episode_log
        if log is not None:
            self.world.episode_log = None
            log.close()
            logger.info('ACRES_EPISODE_LOG_STOP %s messages=%d', log.path, log.messages)


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
