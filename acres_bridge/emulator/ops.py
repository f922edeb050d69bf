# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0


"""
The operations of the emulator's control channel (seed 004): one function per op.

Each ``op_<name>(server, request, connection)`` checks its request, reads or changes the world
under its lock and returns the reply's fields (``error`` in them is a warning on a successful
reply), or raises :class:`Refusal` with the result code, the error text and any reply fields.
A function returns None when the reply comes later (a step). The state machine is the
server's: an op receives it as an :class:`OpServer`, the little of the control server that ops
use (its world and streams, the state, ``change_state`` and ``start_step``, the episode events
and the episode log), so this module does not import the server that imports it.
:func:`ops_of` gives the table of a mode (ACRES Core has no screenshot).
"""

from collections.abc import Callable
import json
import logging
import math
import os
import tempfile
import threading
from typing import Any
from typing import Protocol

from acres_bridge.emulator.agents import PHYSICS_HZ
from acres_bridge.emulator.episode_log import EpisodeLog
from acres_bridge.emulator.episode_log import EpisodeLogUnavailable
from acres_bridge.emulator.sensors.props import SPAWNABLES
from acres_bridge.emulator.stream_server import SensorStreamServer
from acres_bridge.emulator.world import World
from acres_bridge.protocol.lines import is_int
from acres_bridge.protocol.lines import is_number

logger = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
# simulation_interfaces/msg/SimulatorFeatures of the game's hello.
FEATURES = [0, 1, 2, 10, 11, 14, 20, 22, 23, 24, 25, 26, 31, 32, 33]

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

# The sky before any set_conditions (the seed does not say; a weather without a preset keeps it).
STARTING_SKY = 'clear'

Request = dict[str, Any]
Reply = dict[str, Any]


class Sender(Protocol):
    """The client connection of a request: events and late replies go out through it."""

    def send(self, message: dict[str, Any]) -> None: ...


class OpServer(Protocol):
    """What the ops use of the control server: its world and the simulation state machine."""

    world: World
    streams: list[SensorStreamServer | None]
    session_dir: str | None
    state: int
    stepping: bool

    @property
    def lockstep(self) -> bool:
        """Whether the world advances only on step requests."""

    def change_state(self, state: int, connection: Sender) -> None:
        """Move the state machine to ``state`` and send the event."""

    def start_step(self, request_id: int | None, steps: int, progress: bool,
                   connection: Sender) -> None:
        """Start stepping the world; the reply goes out when the steps are done."""

    def reset_world(self, scope: int, restore_fields: bool) -> int:
        """Start a new episode; return the number of fields restored."""

    def send_episode_event(self, connection: Sender) -> None:
        """Send the event of a new episode."""

    def log_episode(self) -> None:
        """Write the episode record to the episode log."""

    def close_log(self) -> None:
        """Close the episode log."""


class Refusal(Exception):
    """A request that fails: its result code, its error text and the reply fields."""

    def __init__(self, result: int, error: str, **fields: Any) -> None:
        super().__init__(error)
        self.result = result
        self.error = error
        self.fields = fields


def op_hello(server: OpServer, request: Request, connection: Sender) -> Reply:
    world = server.world
    with world.lock:
        agents = []
        for agent, stream in zip(world.agents, server.streams):
            agents.append({'name': agent.name, 'vehicle': agent.vehicle,
                           'index': agent.index, 'implement': agent.implement,
                           'sensor_stream': stream.port if stream is not None else 0,
                           'rl_port': 0, 'can_udp': 0})
        reply = {'protocol': PROTOCOL_VERSION, 'map': world.map_name,
                 'physics_hz': PHYSICS_HZ, 'state': server.state, 'lockstep': server.lockstep,
                 'step': world.step, 'time_s': world.time_s, 'episode': world.episode,
                 'episode_id': world.episode_id, 'seed': world.seed,
                 'headless': world.mode == 'core', 'replay': False, 'agents': agents,
                 'features': list(FEATURES)}
    if world.mode == 'core':
        reply['source'] = 'core'
    return reply


def op_get_state(server: OpServer, request: Request, connection: Sender) -> Reply:
    return {'state': server.state, 'lockstep': server.lockstep, 'step': server.world.step,
            'time_s': server.world.time_s}


def op_set_state(server: OpServer, request: Request, connection: Sender) -> Reply:
    state = request.get('state')
    if not is_int(state) or not STOPPED <= state <= QUITTING:
        raise Refusal(RESULT_FAILED, 'state must be 0, 1, 2 or 3', state=server.state)
    server.change_state(state, connection)
    return {'state': state}


def op_step(server: OpServer, request: Request, connection: Sender) -> None:
    steps = request.get('steps', 1)
    progress = request.get('progress', False)
    if not is_int(steps) or steps < 1:
        raise Refusal(RESULT_FAILED, 'steps must be an integer, 1 or more')
    if not isinstance(progress, bool):
        raise Refusal(RESULT_FAILED, 'progress must be true or false')
    server.start_step(request.get('id'), steps, progress, connection)
    return None


def op_reset(server: OpServer, request: Request, connection: Sender) -> Reply:
    scope = request.get('scope', SCOPE_ALL)
    if not is_int(scope) or not 0 <= scope <= SCOPE_ALL:
        raise Refusal(RESULT_FAILED, 'scope must be an integer from 0 to 255')
    scope = scope or SCOPE_ALL
    restore = request.get('restore_fields', scope == SCOPE_ALL)
    if not isinstance(restore, bool):
        raise Refusal(RESULT_FAILED, 'restore_fields must be true or false')
    if server.world.mode == 'core' and server.stepping:
        raise Refusal(RESULT_INCORRECT_STATE, 'a step request is in progress')
    with server.world.lock:
        restored = server.reset_world(scope, restore)
        server.send_episode_event(connection)
        reply = {'episode': server.world.episode, 'episode_id': server.world.episode_id,
                 'reset_epoch': server.world.reset_epoch, 'restored_fields': restored}
    if scope & SCOPE_TIME:
        reply['error'] = SCOPE_TIME_WARNING
    return reply


def op_get_entities(server: OpServer, request: Request, connection: Sender) -> Reply:
    with server.world.lock:
        return {'entities': server.world.entity_names()}


def op_get_entity_state(server: OpServer, request: Request, connection: Sender) -> Reply:
    name = _entity_name(request)
    with server.world.lock:
        state = server.world.entity_state(name)
        if state is None:
            raise Refusal(RESULT_NOT_FOUND, f'no entity {json.dumps(name)}')
        return state


def op_set_entity_state(server: OpServer, request: Request, connection: Sender) -> Reply:
    name = _entity_name(request)
    frame = _frame(request)
    position, orientation = _pose(request.get('pose'), required=True)
    twist = request.get('twist') or {}
    linear = twist.get('linear', [0.0, 0.0, 0.0]) if isinstance(twist, dict) else None
    if not _is_vector(linear, 3):
        raise Refusal(RESULT_FAILED, 'twist.linear must be a list of 3 numbers')
    with server.world.lock:
        if not server.world.has_entity(name):
            raise Refusal(RESULT_NOT_FOUND, f'no entity {json.dumps(name)}')
        server.world.set_entity_state(name, position, orientation, frame=frame,
                                      speed_mps=math.hypot(linear[0], linear[1]))
    return {}


def op_spawn_entity(server: OpServer, request: Request, connection: Sender) -> Reply:
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
    with server.world.lock:
        if server.world.has_entity(name) and not allow_renaming:
            raise Refusal(RESULT_ALREADY, f'{json.dumps(name)} exists')
        entity = server.world.spawn(name, uri, position, orientation, frame=frame)
    return {'entity': entity}


def op_delete_entity(server: OpServer, request: Request, connection: Sender) -> Reply:
    name = _entity_name(request)
    with server.world.lock:
        if server.world.agent(name) is not None:
            if server.world.mode == 'game':
                raise Refusal(RESULT_FAILED, 'agents cannot be deleted at run time')
            raise Refusal(RESULT_NOT_FOUND, f'no spawned entity {json.dumps(name)}')
        if name not in server.world.props:
            raise Refusal(RESULT_NOT_FOUND, f'no entity {json.dumps(name)}')
        server.world.delete(name)
    return {}


def op_get_spawnables(server: OpServer, request: Request, connection: Sender) -> Reply:
    return {'spawnables': [{'uri': item['uri'], 'description': item['description']}
                           for item in SPAWNABLES]}


def op_get_named_poses(server: OpServer, request: Request, connection: Sender) -> Reply:
    return {'poses': server.world.named_poses()}


def op_set_conditions(server: OpServer, request: Request, connection: Sender) -> Reply:
    with server.world.lock:
        weather = request.get('weather')
        if isinstance(weather, dict) and weather.get('preset') is None:
            # "keep the sky" is the preset's default: the current preset, and its rain
            # rate unless the request gives one.
            sky = server.world.conditions.get('weather', {}).get('preset', STARTING_SKY)
            request = {**request, 'weather': {**weather, 'preset': sky}}
        applied, errors = server.world.set_conditions(request)
        if server.world.episode_log is not None:
            server.world.episode_log.write('/acres/conditions', server.world.time_s,
                                           dict(server.world.conditions))
    if not applied and errors:
        raise Refusal(RESULT_FAILED, '; '.join(errors), message='')
    reply = {'message': '; '.join(applied)}
    if errors:
        reply['error'] = '; '.join(errors)
    return reply


def op_set_vehicle_shift(server: OpServer, request: Request, connection: Sender) -> Reply:
    shift = request.get('shift', {})
    if not isinstance(shift, dict):
        raise Refusal(RESULT_FAILED, 'shift must be an object')
    with server.world.lock:
        agent_name = shift.get('agent') or server.world.agents[0].name
        if not isinstance(agent_name, str) or server.world.agent(agent_name) is None:
            raise Refusal(RESULT_NOT_FOUND, f'no agent {json.dumps(agent_name)}')
        try:
            normal = server.world.set_vehicle_shift(agent_name, shift)
        except ValueError as exc:
            raise Refusal(RESULT_FAILED, str(exc)) from exc
        if server.world.episode_log is not None:
            server.world.episode_log.write('/acres/vehicle_shifts', server.world.time_s,
                                           {'shifts': list(server.world.shifts.values())})
    logger.info('ACRES_VEHICLE_SHIFT agent=%s label=%s steer=%.3f deg ulc=%.3f m/s '
                'throttle=%.2f %% brake=%.2f bar', agent_name, json.dumps(normal['label']),
                normal['steering_offset_deg'], normal['ulc_speed_bias_mps'],
                normal['throttle_bias_pct'], normal['brake_bias_bar'])
    return {}


def op_get_vehicle_shifts(server: OpServer, request: Request, connection: Sender) -> Reply:
    with server.world.lock:
        return {'shifts': [dict(shift) for shift in server.world.shifts.values()]}


def op_record(server: OpServer, request: Request, connection: Sender) -> Reply:
    action = request.get('action')
    path = request.get('path')
    if action not in ('start', 'stop'):
        raise Refusal(RESULT_FAILED, 'action must be start or stop')
    if path is not None and (not isinstance(path, str) or (action == 'start' and not path)):
        raise Refusal(RESULT_FAILED, 'path must be a file path')
    world = server.world
    with world.lock:
        log = world.episode_log
        if action == 'stop':
            if log is None:
                raise Refusal(RESULT_INCORRECT_STATE, 'no recording')
            server.close_log()
            return {'messages': log.messages, 'duration_s': log.duration_s,
                    'path': log.path}
        if log is not None:
            raise Refusal(RESULT_INCORRECT_STATE, f'recording to {log.path}')
        path = os.path.abspath(path or _default_log_path(server))
        try:
            log = EpisodeLog(path)
        except OSError as exc:
            raise Refusal(RESULT_FAILED, f'cannot write {path}: {exc.strerror}') from exc
        except EpisodeLogUnavailable as exc:
            raise Refusal(RESULT_FAILED, str(exc)) from exc
        world.episode_log = log
        log.write('/acres/session', world.time_s, op_hello(server, {}, connection))
        server.log_episode()
        log.write('/acres/conditions', world.time_s, dict(world.conditions))
        log.write('/acres/vehicle_shifts', world.time_s,
                  {'shifts': list(world.shifts.values())})
        logger.info('ACRES_EPISODE_LOG_START %s', path)
        return {'path': path, 'messages': log.messages}


def _default_log_path(server: OpServer) -> str:
    if server.session_dir is None:
        server.session_dir = tempfile.mkdtemp(prefix='acres_sim_emulator-')
    if server.world.mode == 'core':
        return os.path.join(server.session_dir, 'core_sim',
                            f'episode-{server.world.session_id}-{server.world.episode:04d}.mcap')
    return os.path.join(server.session_dir, f'episode-{server.world.episode:04d}.mcap')


def op_farm_state(server: OpServer, request: Request, connection: Sender) -> Reply:
    fields = request.get('fields')
    edge_band_m = request.get('edge_band_m', 0.0)
    if fields is not None and not (isinstance(fields, list) and all(
            is_int(number) for number in fields)):
        raise Refusal(RESULT_FAILED, 'fields must be a list of field numbers')
    if not is_number(edge_band_m) or edge_band_m < 0:
        raise Refusal(RESULT_FAILED, 'edge_band_m must be a number, 0 or more')
    with server.world.lock:
        try:
            return server.world.farm.farm_state(fields, float(edge_band_m),
                                                time_s=server.world.time_s)
        except KeyError as exc:
            raise Refusal(RESULT_NOT_FOUND, f'no field {exc.args[0]}') from exc


def op_field_query(server: OpServer, request: Request, connection: Sender) -> Reply:
    x = request.get('x', 0.0)
    y = request.get('y', 0.0)
    if not is_number(x) or not is_number(y):
        raise Refusal(RESULT_FAILED, 'x and y must be numbers')
    frame = _frame(request)
    with server.world.lock:
        return server.world.farm.field_query(float(x), float(y), frame=frame)


def op_screenshot(server: OpServer, request: Request, connection: Sender) -> Reply:
    path = request.get('path')
    if not isinstance(path, str) or not os.path.isabs(path) or not path.endswith('.png'):
        raise Refusal(RESULT_FAILED, 'path must be an absolute path that ends with .png')
    with server.world.lock:
        render = server.world.view_renderer()
    threading.Thread(target=_write_png, args=(path, render), name='sim-screenshot',
                     daemon=True).start()
    return {'path': path}


Op = Callable[[OpServer, Request, Sender], Reply | None]
OPS: dict[str, Op] = {
    'hello': op_hello,
    'get_state': op_get_state,
    'set_state': op_set_state,
    'step': op_step,
    'reset': op_reset,
    'get_entities': op_get_entities,
    'get_entity_state': op_get_entity_state,
    'set_entity_state': op_set_entity_state,
    'spawn_entity': op_spawn_entity,
    'delete_entity': op_delete_entity,
    'get_spawnables': op_get_spawnables,
    'get_named_poses': op_get_named_poses,
    'set_conditions': op_set_conditions,
    'set_vehicle_shift': op_set_vehicle_shift,
    'get_vehicle_shifts': op_get_vehicle_shifts,
    'record': op_record,
    'farm_state': op_farm_state,
    'field_query': op_field_query,
    'screenshot': op_screenshot,
}


def ops_of(mode: str) -> dict[str, Op]:
    """Return the ops of a mode: ``game`` has all 19, ``core`` no screenshot (result 0)."""
    ops = dict(OPS)
    if mode == 'core':
        del ops['screenshot']
    return ops


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


def _is_vector(value: Any, size: int) -> bool:
    return isinstance(value, list) and len(value) == size and all(map(is_number, value))


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
