# Copyright 2026 The acres_bridge authors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

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
import math
import os
import socket
import tempfile
import threading
import time
from typing import Any

from acres_bridge.emulator.episode_log import EpisodeLog
from acres_bridge.emulator.sensors.props import SPAWNABLES
from acres_bridge.emulator.streams import listen
from acres_bridge.emulator.streams import SensorStreamServer
from acres_bridge.emulator.streams import serve_clients
from acres_bridge.emulator.world import PHYSICS_HZ
from acres_bridge.emulator.world import World
from acres_bridge.protocol.transport import require_loopback

logger = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
# simulation_interfaces/msg/SimulatorFeatures of the game's hello.
FEATURES = [0, 1, 2, 10, 11, 14, 20, 22, 23, 24, 25, 26, 31, 32, 33]
PROGRESS_EVERY_STEPS = 12
MAX_LINE_BYTES = 1 << 20

STOPPED, PLAYING, PAUSED, QUITTING = range(4)

RESULT_NOT_SUPPORTED = 0
RESULT_OK = 1
RESULT_NOT_FOUND = 2
RESULT_INCORRECT_STATE = 3
RESULT_FAILED = 4
RESULT_ALREADY = 101
RESULT_NAME_EMPTY = 102
RESULT_URI_INVALID = 103
RESULT_URI_EMPTY = 104
RESULT_MESH_MISSING = 107

SCOPE_TIME = 1
SCOPE_STATE = 2
SCOPE_SPAWNED = 4
SCOPE_ALL = 255
SCOPE_TIME_WARNING = ('the physics clock is not reset (SCOPE_TIME): '
                      'the episode clock restarts instead')

# "The game disconnects a client that does not read when 8 MiB of replies wait."
MAX_UNSENT_BYTES = 8 << 20
# The sky before any set_conditions (the seed does not say; a weather without a preset keeps it).
STARTING_SKY = 'clear'

_POLL_S = 0.1


class Refusal(Exception):
    """A request that fails: its result code, its error text and the reply fields."""

    def __init__(self, result: int, error: str, **fields: Any) -> None:
        super().__init__(error)
        self.result = result
        self.error = error
        self.fields = fields


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
                else:
                    self._queue[0] = data[sent:]

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
        self.requests: list[dict[str, Any]] = []
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
        self._ops: dict[str, Callable[[dict[str, Any], _Connection], dict[str, Any] | None]] = {
            'hello': self._op_hello,
            'get_state': self._op_get_state,
            'set_state': self._op_set_state,
            'step': self._op_step,
            'reset': self._op_reset,
            'get_entities': self._op_get_entities,
            'get_entity_state': self._op_get_entity_state,
            'set_entity_state': self._op_set_entity_state,
            'spawn_entity': self._op_spawn_entity,
            'delete_entity': self._op_delete_entity,
            'get_spawnables': self._op_get_spawnables,
            'get_named_poses': self._op_get_named_poses,
            'set_conditions': self._op_set_conditions,
            'set_vehicle_shift': self._op_set_vehicle_shift,
            'get_vehicle_shifts': self._op_get_vehicle_shifts,
            'record': self._op_record,
            'farm_state': self._op_farm_state,
            'field_query': self._op_field_query,
            'screenshot': self._op_screenshot,
        }
        if world.mode == 'core':
            del self._ops['screenshot']

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
            self._close_log()

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
        buffer = b''
        while not self._stop.is_set():
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            while True:
                line, newline, rest = buffer.partition(b'\n')
                if not newline:
                    break
                buffer = rest
                self._handle_line(line, connection)
            if len(buffer) > MAX_LINE_BYTES:
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
            fields = handler(request, connection)
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

    def _send_episode_event(self, connection: _Connection) -> None:
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

    # --- ops: session and state ---------------------------------------------------------------

    def _op_hello(self, request: dict[str, Any], connection: _Connection) -> dict[str, Any]:
        world = self.world
        with world.lock:
            agents = []
            for agent, stream in zip(world.agents, self.streams):
                agents.append({'name': agent.name, 'vehicle': agent.vehicle,
                               'index': agent.index, 'implement': agent.implement,
                               'sensor_stream': stream.port if stream is not None else 0,
                               'rl_port': 0, 'can_udp': 0})
            reply = {'protocol': PROTOCOL_VERSION, 'map': world.map_name,
                     'physics_hz': PHYSICS_HZ, 'state': self.state, 'lockstep': self.lockstep,
                     'step': world.step, 'time_s': world.time_s, 'episode': world.episode,
                     'episode_id': world.episode_id, 'seed': world.seed,
                     'headless': world.mode == 'core', 'replay': False, 'agents': agents,
                     'features': list(FEATURES)}
        if world.mode == 'core':
            reply['source'] = 'core'
        return reply

    def _op_get_state(self, request: dict[str, Any], connection: _Connection) -> dict[str, Any]:
        return {'state': self.state, 'lockstep': self.lockstep, 'step': self.world.step,
                'time_s': self.world.time_s}

    def _op_set_state(self, request: dict[str, Any], connection: _Connection) -> dict[str, Any]:
        state = request.get('state')
        if not _is_int(state) or not STOPPED <= state <= QUITTING:
            raise Refusal(RESULT_FAILED, 'state must be 0, 1, 2 or 3', state=self.state)
        with self._state_lock:
            if self.stepping:
                raise Refusal(RESULT_INCORRECT_STATE, 'a step request is in progress',
                              state=self.state)
            if state == self.state:
                raise Refusal(RESULT_ALREADY, 'already in that state', state=self.state)
            with self.world.lock:
                if state == STOPPED:
                    self._reset(SCOPE_ALL, True)
                if state == QUITTING:
                    self._close_log()
                self.state = state
                self._send_episode_event(connection)
        self._wake.set()
        return {'state': state}

    def _quit(self) -> None:
        self.quitting.set()
        if self.on_quit is not None:
            threading.Thread(target=self.on_quit, name='sim-quit', daemon=True).start()

    # --- ops: stepping ------------------------------------------------------------------------

    def _op_step(self, request: dict[str, Any], connection: _Connection) -> None:
        steps = request.get('steps', 1)
        progress = request.get('progress', False)
        if not _is_int(steps) or steps < 1:
            raise Refusal(RESULT_FAILED, 'steps must be an integer, 1 or more')
        if not isinstance(progress, bool):
            raise Refusal(RESULT_FAILED, 'progress must be true or false')
        with self._state_lock:
            if self.stepping:
                raise Refusal(RESULT_INCORRECT_STATE, 'a step request is in progress')
            if self.state != PAUSED:
                raise Refusal(RESULT_INCORRECT_STATE,
                              'step needs the paused state (2), the state is '
                              f'{self.state}')
            self.stepping = True
        thread = threading.Thread(target=self._run_step, name='sim-step', daemon=True,
                                  args=(request.get('id'), steps, progress, connection))
        self._step_thread = thread
        thread.start()
        return None

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

    # --- ops: episodes ------------------------------------------------------------------------

    def _op_reset(self, request: dict[str, Any], connection: _Connection) -> dict[str, Any]:
        scope = request.get('scope', SCOPE_ALL)
        if not _is_int(scope) or not 0 <= scope <= SCOPE_ALL:
            raise Refusal(RESULT_FAILED, 'scope must be an integer from 0 to 255')
        scope = scope or SCOPE_ALL
        restore = request.get('restore_fields', scope == SCOPE_ALL)
        if not isinstance(restore, bool):
            raise Refusal(RESULT_FAILED, 'restore_fields must be true or false')
        if self.world.mode == 'core' and self.stepping:
            raise Refusal(RESULT_INCORRECT_STATE, 'a step request is in progress')
        with self.world.lock:
            restored = self._reset(scope, restore)
            self._send_episode_event(connection)
            reply = {'episode': self.world.episode, 'episode_id': self.world.episode_id,
                     'reset_epoch': self.world.reset_epoch, 'restored_fields': restored}
        if scope & SCOPE_TIME:
            reply['error'] = SCOPE_TIME_WARNING
        return reply

    def _reset(self, scope: int, restore_fields: bool) -> int:
        restored = self.world.reset(scope=scope, restore_fields=restore_fields)
        self._log_episode()
        return restored

    # --- ops: entities ------------------------------------------------------------------------

    def _op_get_entities(self, request: dict[str, Any],
                         connection: _Connection) -> dict[str, Any]:
        with self.world.lock:
            return {'entities': self.world.entity_names()}

    def _op_get_entity_state(self, request: dict[str, Any],
                             connection: _Connection) -> dict[str, Any]:
        name = _entity_name(request)
        with self.world.lock:
            state = self.world.entity_state(name)
            if state is None:
                raise Refusal(RESULT_NOT_FOUND, f'no entity {json.dumps(name)}')
            return state

    def _op_set_entity_state(self, request: dict[str, Any],
                             connection: _Connection) -> dict[str, Any]:
        name = _entity_name(request)
        frame = _frame(request)
        position, orientation = _pose(request.get('pose'), required=True)
        twist = request.get('twist') or {}
        linear = twist.get('linear', [0.0, 0.0, 0.0]) if isinstance(twist, dict) else None
        if not _is_vector(linear, 3):
            raise Refusal(RESULT_FAILED, 'twist.linear must be a list of 3 numbers')
        with self.world.lock:
            if not self.world.has_entity(name):
                raise Refusal(RESULT_NOT_FOUND, f'no entity {json.dumps(name)}')
            self.world.set_entity_state(name, position, orientation, frame=frame,
                                        speed_mps=math.hypot(linear[0], linear[1]))
        return {}

    def _op_spawn_entity(self, request: dict[str, Any],
                         connection: _Connection) -> dict[str, Any]:
        name = request.get('name', '')
        uri = request.get('uri', '')
        allow_renaming = request.get('allow_renaming', False)
        if not isinstance(name, str) or not isinstance(uri, str):
            raise Refusal(RESULT_FAILED, 'name and uri must be strings')
        if not isinstance(allow_renaming, bool):
            raise Refusal(RESULT_FAILED, 'allow_renaming must be true or false')
        frame = _frame(request)
        position, orientation = _pose(request.get('pose'), required=False)
        if not uri:
            raise Refusal(RESULT_URI_EMPTY, 'the uri is empty')
        if uri not in {item['uri'] for item in SPAWNABLES}:
            raise Refusal(RESULT_URI_INVALID,
                          f'unknown uri {json.dumps(uri)}: see get_spawnables')
        if not name and not allow_renaming:
            raise Refusal(RESULT_NAME_EMPTY, 'the name is empty and allow_renaming is false')
        with self.world.lock:
            if self.world.has_entity(name) and not allow_renaming:
                raise Refusal(RESULT_ALREADY, f'{json.dumps(name)} exists')
            entity = self.world.spawn(name, uri, position, orientation, frame=frame)
        return {'entity': entity}

    def _op_delete_entity(self, request: dict[str, Any],
                          connection: _Connection) -> dict[str, Any]:
        name = _entity_name(request)
        with self.world.lock:
            if self.world.agent(name) is not None:
                if self.world.mode == 'game':
                    raise Refusal(RESULT_FAILED, 'agents cannot be deleted at run time')
                raise Refusal(RESULT_NOT_FOUND, f'no spawned entity {json.dumps(name)}')
            if name not in self.world.props:
                raise Refusal(RESULT_NOT_FOUND, f'no entity {json.dumps(name)}')
            self.world.delete(name)
        return {}

    def _op_get_spawnables(self, request: dict[str, Any],
                           connection: _Connection) -> dict[str, Any]:
        return {'spawnables': [{'uri': item['uri'], 'description': item['description']}
                               for item in SPAWNABLES]}

    def _op_get_named_poses(self, request: dict[str, Any],
                            connection: _Connection) -> dict[str, Any]:
        return {'poses': self.world.named_poses()}

    # --- ops: conditions and shifts -----------------------------------------------------------

    def _op_set_conditions(self, request: dict[str, Any],
                           connection: _Connection) -> dict[str, Any]:
        with self.world.lock:
            weather = request.get('weather')
            if isinstance(weather, dict) and weather.get('preset') is None:
                # "keep the sky" is the preset's default: the current preset, and its rain
                # rate unless the request gives one.
                sky = self.world.conditions.get('weather', {}).get('preset', STARTING_SKY)
                request = {**request, 'weather': {**weather, 'preset': sky}}
            applied, errors = self.world.set_conditions(request)
            if self.world.episode_log is not None:
                self.world.episode_log.write('/acres/conditions', self.world.time_s,
                                             dict(self.world.conditions))
        if not applied and errors:
            raise Refusal(RESULT_FAILED, '; '.join(errors), message='')
        reply = {'message': '; '.join(applied)}
        if errors:
            reply['error'] = '; '.join(errors)
        return reply

    def _op_set_vehicle_shift(self, request: dict[str, Any],
                              connection: _Connection) -> dict[str, Any]:
        shift = request.get('shift', {})
        if not isinstance(shift, dict):
            raise Refusal(RESULT_FAILED, 'shift must be an object')
        with self.world.lock:
            agent_name = shift.get('agent') or self.world.agents[0].name
            if not isinstance(agent_name, str) or self.world.agent(agent_name) is None:
                raise Refusal(RESULT_NOT_FOUND, f'no agent {json.dumps(agent_name)}')
            try:
                normal = self.world.set_vehicle_shift(agent_name, shift)
            except ValueError as exc:
                raise Refusal(RESULT_FAILED, str(exc)) from exc
            if self.world.episode_log is not None:
                self.world.episode_log.write('/acres/vehicle_shifts', self.world.time_s,
                                             {'shifts': list(self.world.shifts.values())})
        logger.info('ACRES_VEHICLE_SHIFT agent=%s label=%s steer=%.3f deg ulc=%.3f m/s '
                    'throttle=%.2f %% brake=%.2f bar', agent_name, json.dumps(normal['label']),
                    normal['steering_offset_deg'], normal['ulc_speed_bias_mps'],
                    normal['throttle_bias_pct'], normal['brake_bias_bar'])
        return {}

    def _op_get_vehicle_shifts(self, request: dict[str, Any],
                               connection: _Connection) -> dict[str, Any]:
        with self.world.lock:
            return {'shifts': [dict(shift) for shift in self.world.shifts.values()]}

    # --- ops: the episode log -----------------------------------------------------------------

    def _op_record(self, request: dict[str, Any], connection: _Connection) -> dict[str, Any]:
        action = request.get('action')
        path = request.get('path')
        if action not in ('start', 'stop'):
            raise Refusal(RESULT_FAILED, 'action must be start or stop')
        if path is not None and (not isinstance(path, str) or (action == 'start' and not path)):
            raise Refusal(RESULT_FAILED, 'path must be a file path')
        world = self.world
        with world.lock:
            log = world.episode_log
            if action == 'stop':
                if log is None:
                    raise Refusal(RESULT_INCORRECT_STATE, 'no recording')
                self._close_log()
                return {'messages': log.messages, 'duration_s': log.duration_s,
                        'path': log.path}
            if log is not None:
                raise Refusal(RESULT_INCORRECT_STATE, f'recording to {log.path}')
            path = os.path.abspath(path or self._default_log_path())
            try:
                log = EpisodeLog(path)
            except OSError as exc:
                raise Refusal(RESULT_FAILED, f'cannot write {path}: {exc.strerror}') from exc
            world.episode_log = log
            log.write('/acres/session', world.time_s, self._op_hello({}, connection))
            self._log_episode()
            log.write('/acres/conditions', world.time_s, dict(world.conditions))
            log.write('/acres/vehicle_shifts', world.time_s,
                      {'shifts': list(world.shifts.values())})
            logger.info('ACRES_EPISODE_LOG_START %s', path)
            return {'path': path, 'messages': log.messages}

    def _default_log_path(self) -> str:
        if self.session_dir is None:
            self.session_dir = tempfile.mkdtemp(prefix='acres_sim_emulator-')
        if self.world.mode == 'core':
            return os.path.join(self.session_dir, 'core_sim',
                                f'episode-{self.world.session_id}-{self.world.episode:04d}.mcap')
        return os.path.join(self.session_dir, f'episode-{self.world.episode:04d}.mcap')

    def _log_episode(self) -> None:
        log = self.world.episode_log
        if log is not None:
            event = self._episode_event()
            del event['event']
            log.write('/acres/episode', self.world.time_s, event)

    def _close_log(self) -> None:
        log = self.world.episode_log
        if log is not None:
            self.world.episode_log = None
            log.close()
            logger.info('ACRES_EPISODE_LOG_STOP %s messages=%d', log.path, log.messages)

    # --- ops: the farm ------------------------------------------------------------------------

    def _op_farm_state(self, request: dict[str, Any], connection: _Connection) -> dict[str, Any]:
        fields = request.get('fields')
        edge_band_m = request.get('edge_band_m', 0.0)
        if fields is not None and not (isinstance(fields, list) and all(
                _is_int(number) for number in fields)):
            raise Refusal(RESULT_FAILED, 'fields must be a list of field numbers')
        if not _is_number(edge_band_m) or edge_band_m < 0:
            raise Refusal(RESULT_FAILED, 'edge_band_m must be a number, 0 or more')
        with self.world.lock:
            try:
                return self.world.farm_state(fields, float(edge_band_m))
            except KeyError as exc:
                raise Refusal(RESULT_NOT_FOUND, f'no field {exc.args[0]}') from exc

    def _op_field_query(self, request: dict[str, Any],
                        connection: _Connection) -> dict[str, Any]:
        x = request.get('x', 0.0)
        y = request.get('y', 0.0)
        if not _is_number(x) or not _is_number(y):
            raise Refusal(RESULT_FAILED, 'x and y must be numbers')
        frame = _frame(request)
        with self.world.lock:
            return self.world.field_query(float(x), float(y), frame=frame)

    def _op_screenshot(self, request: dict[str, Any],
                       connection: _Connection) -> dict[str, Any]:
        path = request.get('path')
        if not isinstance(path, str) or not os.path.isabs(path) or not path.endswith('.png'):
            raise Refusal(RESULT_FAILED, 'path must be an absolute path that ends with .png')
        with self.world.lock:
            render = self.world.view_renderer()
        threading.Thread(target=_write_png, args=(path, render), name='sim-screenshot',
                         daemon=True).start()
        return {'path': path}


def _write_png(path: str, render: Callable[[], bytes]) -> None:
    try:
        data = render()
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        with open(path + '.part', 'wb') as stream:
            stream.write(data)
        os.replace(path + '.part', path)
    except Exception:
        logger.exception('screenshot %s failed', path)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _is_vector(value: Any, size: int) -> bool:
    return isinstance(value, list) and len(value) == size and all(map(_is_number, value))


def _entity_name(request: dict[str, Any]) -> str:
    name = request.get('entity', '')
    if not isinstance(name, str):
        raise Refusal(RESULT_FAILED, 'entity must be a string')
    return name


def _frame(request: dict[str, Any]) -> str:
    frame = request.get('frame', 'world')
    if frame not in ('world', 'utm'):
        raise Refusal(RESULT_FAILED, f'unknown frame {json.dumps(frame)}: world or utm')
    return frame


def _pose(pose: Any, *, required: bool) -> tuple[list[float], list[float]]:
    """Return the position and the orientation of a pose object."""
    if pose is None and not required:
        return [0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]
    if not isinstance(pose, dict) or (required and 'position' not in pose):
        raise Refusal(RESULT_FAILED, 'the pose has no position')
    position = pose.get('position', [0.0, 0.0, 0.0])
    orientation = pose.get('orientation', [0.0, 0.0, 0.0, 1.0])
    if not _is_vector(position, 3):
        raise Refusal(RESULT_FAILED, 'pose.position must be a list of 3 numbers')
    if not _is_vector(orientation, 4) or not any(orientation):
        raise Refusal(RESULT_FAILED, 'pose.orientation must be a quaternion of 4 numbers')
    return [float(value) for value in position], [float(value) for value in orientation]


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
