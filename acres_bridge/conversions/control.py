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
Control channel replies <-> simulation_interfaces and acres_interfaces messages.

Pure functions: no node, no clock, no socket. The wire side is seed 004: a pose is
``{"position": [x, y, z], "orientation": [qx, qy, qz, qw]}``, a twist ``{"linear": [vx, vy,
vz], "angular": [wx, wy, wz]}``, the frame is ``world`` (default) or ``utm``, and every reply
carries ``result`` (a simulation_interfaces result code) and, when it has one, ``error``.

``simulation_interfaces`` comes in two shapes (see ``InterfaceShape``); ``detect_shape()``
reads the installed types' fields, never a distribution name.

A reply that breaks the op's schema (a missing key, a value of the wrong type or range)
raises ``ReplyError``, whose text names the key; the node answers RESULT_OPERATION_FAILED
with it.
"""

from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import importlib
import math
import re
from typing import Any

from acres_interfaces.msg import AgentInfo
from acres_interfaces.msg import Episode
from acres_interfaces.msg import FieldState
from acres_interfaces.msg import VehicleShift
from diagnostic_msgs.msg import DiagnosticStatus
from diagnostic_msgs.msg import KeyValue
from geometry_msgs.msg import Pose
from geometry_msgs.msg import Twist
from simulation_interfaces.msg import EntityFilters
from simulation_interfaces.msg import EntityState
from simulation_interfaces.msg import NamedPose
from simulation_interfaces.msg import Result
from simulation_interfaces.msg import Spawnable
from simulation_interfaces.msg import TagsFilter

from acres_bridge.conversions.clock import stamp_to_time
from acres_bridge.conversions.diagnostics import format_value

Reply = Mapping[str, Any]

WORLD_FRAME = 'world'
UTM_FRAME = 'utm'
IDENTITY_ORIENTATION = (0.0, 0.0, 0.0, 1.0)

_INT_RANGES = {
    'int8': (-(1 << 7), (1 << 7) - 1), 'uint8': (0, (1 << 8) - 1),
    'int16': (-(1 << 15), (1 << 15) - 1), 'uint16': (0, (1 << 16) - 1),
    'int32': (-(1 << 31), (1 << 31) - 1), 'uint32': (0, (1 << 32) - 1),
    'int64': (-(1 << 63), (1 << 63) - 1), 'uint64': (0, (1 << 64) - 1),
    'byte': (0, 255), 'octet': (0, 255),
}
_FLOAT_TYPES = ('double', 'float', 'long double')
_ARRAY = re.compile(r'^(?P<element>.+)\[(?P<size>\d+)\]$')
_SEQUENCE = re.compile(r'^sequence<(?P<element>[^,>]+)(?:, *(?P<bound>\d+))?>$')


class ReplyError(ValueError):
    """A reply that does not have the op's schema; the text names the key."""


# --- the shape of simulation_interfaces ------------------------------------------------------

@dataclasses.dataclass(frozen=True, slots=True)
class InterfaceShape:
    """
    Which shape of simulation_interfaces is installed.

    1.x (Humble 1.4, Jazzy 1.5.1, Kilted 1.6.1): ``SpawnEntity`` and ``Spawnable`` carry plain
    ``uri`` and ``resource_string`` strings, ``SetEntityState`` has no flags. 2.x (2.1.0 on):
    a ``Resource entity_resource`` in both, and ``SetEntityState.set_pose``/``set_twist``.
    """

    spawn_resource: bool
    spawnable_resource: bool
    set_state_flags: bool

    @property
    def major(self) -> int:
        """Return 2 when any part has the 2.x form, else 1."""
        return 2 if (self.spawn_resource or self.spawnable_resource
                     or self.set_state_flags) else 1


def detect_shape(*, spawn_request: type | None = None, spawnable: type | None = None,
                 set_state_request: type | None = None) -> InterfaceShape:
    """
    Return the shape of the installed simulation_interfaces, read from the types' fields.

    The parameters replace the installed types (for tests); a type the installation lacks
    counts as 1.x.
    """
    if spawn_request is None:
        spawn_request = _installed('srv', 'SpawnEntity', 'Request')
    if spawnable is None:
        spawnable = _installed('msg', 'Spawnable')
    if set_state_request is None:
        set_state_request = _installed('srv', 'SetEntityState', 'Request')
    return InterfaceShape(
        spawn_resource=_has_field(spawn_request, 'entity_resource'),
        spawnable_resource=_has_field(spawnable, 'entity_resource'),
        set_state_flags=_has_field(set_state_request, 'set_pose'))


def _installed(kind: str, name: str, part: str | None = None) -> type | None:
    module = importlib.import_module(f'simulation_interfaces.{kind}')
    found = getattr(module, name, None)
    if found is not None and part is not None:
        found = getattr(found, part, None)
    return found


def _has_field(message_type: type | None, name: str) -> bool:
    return message_type is not None and name in message_type.get_fields_and_field_types()


# --- results ---------------------------------------------------------------------------------

def result_from_reply(reply: Reply) -> Result:
    """
    Return the reply's result code and error text, unchanged, as a Result.

    A warning on a successful reply (``ok`` true with ``error``) stays in error_message.

    :raises ReplyError: when ``result`` is missing or not a code from 0 to 255.
    """
    code = reply.get('result')
    if not _is_int(code) or not 0 <= code <= 255:
        raise ReplyError(f'result must be a code from 0 to 255, got {code!r}')
    error = reply.get('error', '')
    if not isinstance(error, str):
        raise ReplyError(f'error must be a string, got {type(error).__name__}')
    return Result(result=code, error_message=error)


def failed_result(text: str, code: int = Result.RESULT_OPERATION_FAILED) -> Result:
    """Return a Result with a code (RESULT_OPERATION_FAILED by default) and a message."""
    return Result(result=code, error_message=text)


def add_warning(result: Result, text: str) -> None:
    """Append a text to a result's error_message, after what the simulator said."""
    result.error_message = f'{result.error_message}; {text}' if result.error_message else text


# --- time, frames, poses ---------------------------------------------------------------------

def frame_from_header(frame_id: str) -> str:
    """Return the op's frame for a header frame_id: empty means ``world``."""
    return frame_id or WORLD_FRAME


def pose_to_dict(pose: Pose) -> dict[str, list[float]]:
    """Return the wire form of a pose."""
    position, orientation = pose.position, pose.orientation
    return {'position': [position.x, position.y, position.z],
            'orientation': [orientation.x, orientation.y, orientation.z, orientation.w]}


def pose_from_dict(data: Any, *, key: str = 'pose') -> Pose:
    """
    Return the Pose of a wire pose (orientation [0, 0, 0, 1] when absent).

    :raises ReplyError: when the position is missing or a vector has the wrong length.
    """
    if not isinstance(data, Mapping):
        raise ReplyError(f'{key} must be an object')
    if 'position' not in data:
        raise ReplyError(f'{key}.position is missing')
    x, y, z = _vector(data['position'], 3, f'{key}.position')
    qx, qy, qz, qw = _vector(data.get('orientation', IDENTITY_ORIENTATION), 4,
                             f'{key}.orientation')
    pose = Pose()
    pose.position.x, pose.position.y, pose.position.z = x, y, z
    pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = (
        qx, qy, qz, qw)
    return pose


def twist_to_dict(twist: Twist) -> dict[str, list[float]]:
    """Return the wire form of a twist."""
    linear, angular = twist.linear, twist.angular
    return {'linear': [linear.x, linear.y, linear.z],
            'angular': [angular.x, angular.y, angular.z]}


def twist_from_dict(data: Any, *, key: str = 'twist') -> Twist:
    """
    Return the Twist of a wire twist (a missing vector is zero).

    :raises ReplyError: when a vector has the wrong length or type.
    """
    if not isinstance(data, Mapping):
        raise ReplyError(f'{key} must be an object')
    twist = Twist()
    twist.linear.x, twist.linear.y, twist.linear.z = _vector(
        data.get('linear', (0.0, 0.0, 0.0)), 3, f'{key}.linear')
    twist.angular.x, twist.angular.y, twist.angular.z = _vector(
        data.get('angular', (0.0, 0.0, 0.0)), 3, f'{key}.angular')
    return twist


def _vector(value: Any, size: int, key: str) -> list[float]:
    if not isinstance(value, (list, tuple)) or len(value) != size or not all(
            map(_is_number, value)):
        raise ReplyError(f'{key} must be a list of {size} numbers')
    return [float(item) for item in value]


# --- entities --------------------------------------------------------------------------------

def entity_state_from_reply(reply: Reply) -> EntityState:
    """
    Return the EntityState of a get_entity_state reply.

    header.frame_id is the reply's ``frame`` (``world``), header.stamp its ``time_s``; pose
    and twist as sent; acceleration zero (the op has none).
    """
    frame = reply.get('frame', WORLD_FRAME)
    if not isinstance(frame, str):
        raise ReplyError('frame must be a string')
    state = EntityState()
    state.header.frame_id = frame
    time_s = reply.get('time_s')
    if not _is_number(time_s) or time_s < 0:
        raise ReplyError(f'time_s must be a number, 0 or more, got {time_s!r}')
    try:
        state.header.stamp = stamp_to_time(time_s)
    except ValueError as exc:
        raise ReplyError(f'time_s: {exc}') from exc
    state.pose = pose_from_dict(reply.get('pose'))
    state.twist = twist_from_dict(reply.get('twist', {}))
    return state


def set_entity_state_fields(entity: str, state: EntityState, *, set_pose: bool = True,
                            set_twist: bool = True,
                            current: Reply | None = None) -> dict[str, Any]:
    """
    Return the fields of a set_entity_state request.

    The frame is the header's frame_id (empty: ``world``). A part that is not set comes from
    ``current`` (a get_entity_state reply, world frame), because the op always applies a
    pose and a twist; with ``set_pose`` false the request's frame is ``world``.

    :raises ValueError: when a part is not set and ``current`` is None.
    """
    if not (set_pose and set_twist) and current is None:
        raise ValueError('the current state is needed to keep a part')
    if set_pose:
        pose = pose_to_dict(state.pose)
        frame = frame_from_header(state.header.frame_id)
    else:
        pose = pose_to_dict(pose_from_dict(current.get('pose')))
        frame = WORLD_FRAME
    if set_twist:
        twist = twist_to_dict(state.twist)
    else:
        twist = twist_to_dict(twist_from_dict(current.get('twist', {})))
    return {'entity': entity, 'frame': frame, 'pose': pose, 'twist': twist}


def entity_filters_unsupported(filters: EntityFilters) -> str | None:
    """
    Return why the filters cannot be served (None when they can).

    The control channel lists names only: categories (ENTITY_CATEGORIES), tags (ENTITY_TAGS)
    and bounds (ENTITY_BOUNDS_*) are not features of the simulator.
    """
    reasons = []
    if list(getattr(filters, 'categories', ())):
        reasons.append('categories (feature ENTITY_CATEGORIES)')
    tags = getattr(filters, 'tags', None)
    if tags is not None and list(tags.tags):
        reasons.append('tags (feature ENTITY_TAGS)')
    bounds = getattr(filters, 'bounds', None)
    if bounds is not None and bounds.type != bounds.TYPE_EMPTY:
        reasons.append('bounds (feature ENTITY_BOUNDS)')
    if not reasons:
        return None
    return 'the simulator cannot filter entities by ' + ' or '.join(reasons)


def entity_names_from_reply(reply: Reply) -> list[str]:
    """Return the ``entities`` of a get_entities reply."""
    return _strings(reply.get('entities'), 'entities')


def filter_names(names: Iterable[str], pattern: str) -> list[str]:
    """
    Return the names that the regular expression matches (anywhere, as POSIX regexec does).

    :raises re.error: for a pattern that does not compile.
    """
    if not pattern:
        return list(names)
    compiled = re.compile(pattern)
    return [name for name in names if compiled.search(name)]


def spawn_resource(request: Any, shape: InterfaceShape) -> tuple[str, str]:
    """Return the uri and the resource_string of a SpawnEntity request of either shape."""
    holder = request.entity_resource if shape.spawn_resource else request
    return holder.uri, holder.resource_string


def spawn_entity_fields(request: Any, shape: InterfaceShape) -> dict[str, Any]:
    """
    Return the fields of a spawn_entity request: name, uri, allow_renaming, pose, frame.

    The uri is the request's (1.x ``uri``, 2.x ``entity_resource.uri``); the frame is the
    initial pose's frame_id (empty: ``world``). entity_namespace has no meaning here: ACRES
    entities have no ROS interfaces of their own.
    """
    uri, _ = spawn_resource(request, shape)
    return {'name': request.name, 'uri': uri, 'allow_renaming': bool(request.allow_renaming),
            'pose': pose_to_dict(request.initial_pose.pose),
            'frame': frame_from_header(request.initial_pose.header.frame_id)}


def spawnables_from_reply(reply: Reply, shape: InterfaceShape) -> list[Spawnable]:
    """Return the Spawnable list of a get_spawnables reply (uri where the shape keeps it)."""
    spawnables = []
    for key, item in _objects(reply, 'spawnables'):
        spawnable = Spawnable()
        holder = spawnable.entity_resource if shape.spawnable_resource else spawnable
        holder.uri = _string(item.get('uri'), f'{key}.uri')
        spawnable.description = _string(item.get('description', ''), f'{key}.description')
        spawnables.append(spawnable)
    return spawnables


def named_poses_from_reply(reply: Reply) -> list[NamedPose]:
    """Return the NamedPose list of a get_named_poses reply."""
    poses = []
    for key, item in _objects(reply, 'poses'):
        poses.append(NamedPose(
            name=_string(item.get('name'), f'{key}.name'),
            description=_string(item.get('description', ''), f'{key}.description'),
            tags=_strings(item.get('tags', []), f'{key}.tags'),
            pose=pose_from_dict(item.get('pose'), key=f'{key}.pose')))
    return poses


def tags_match(tags: Sequence[str], tags_filter: TagsFilter) -> bool:
    """
    Return whether tags pass a TagsFilter (no filter tags: every entry passes).

    :raises ValueError: for an unknown filter_mode.
    """
    wanted = list(tags_filter.tags)
    if not wanted:
        return True
    if tags_filter.filter_mode == TagsFilter.FILTER_MODE_ANY:
        return any(tag in tags for tag in wanted)
    if tags_filter.filter_mode == TagsFilter.FILTER_MODE_ALL:
        return all(tag in tags for tag in wanted)
    raise ValueError(f'unknown tags.filter_mode {tags_filter.filter_mode}: '
                     f'{TagsFilter.FILTER_MODE_ANY} (any) or {TagsFilter.FILTER_MODE_ALL} (all)')


# --- acres messages --------------------------------------------------------------------------

def fill_message(message: Any, data: Reply, *, nested: Mapping[str, type] | None = None,
                 skip: Iterable[str] = (), key: str = '') -> Any:
    """
    Set each field of a message from the key of the same name, converting by field type.

    Keys the message lacks are ignored, fields the data lacks keep their defaults. Numbers
    must be JSON numbers in range (an integral float is taken for an integer field), strings
    strings, booleans booleans; a nested message field needs its class in ``nested``.

    :param key: the prefix of the key names in error texts.
    :return: the message.
    :raises ReplyError: naming the first key whose value does not fit.
    """
    nested = nested or {}
    skip = set(skip)
    for name, type_name in message.get_fields_and_field_types().items():
        if name in skip or name not in data:
            continue
        setattr(message, name, _convert(data[name], type_name, f'{key}{name}',
                                        nested.get(name)))
    return message


def message_fields(message: Any) -> dict[str, Any]:
    """Return a message as JSON-ready fields: nested messages as objects, arrays as lists."""
    return {name: _to_json(getattr(message, name))
            for name in message.get_fields_and_field_types()}


def _to_json(value: Any) -> Any:
    if hasattr(value, 'get_fields_and_field_types'):
        return message_fields(value)
    if hasattr(value, 'tolist'):           # array.array and numpy arrays
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_to_json(item) for item in value]
    return value


def _convert(value: Any, type_name: str, key: str, nested: type | None) -> Any:
    match = _SEQUENCE.match(type_name) or _ARRAY.match(type_name)
    if match is not None:
        if not isinstance(value, list):
            raise ReplyError(f'{key} must be a list')
        size = match.groupdict().get('size')
        if size is not None and len(value) != int(size):
            raise ReplyError(f'{key} must have {size} items, got {len(value)}')
        bound = match.groupdict().get('bound')
        if bound is not None and len(value) > int(bound):
            raise ReplyError(f'{key} must have at most {bound} items, got {len(value)}')
        element = match.group('element')
        return [_convert(item, element, f'{key}[{index}]', nested)
                for index, item in enumerate(value)]
    if type_name in _FLOAT_TYPES:
        if not _is_number(value):
            raise ReplyError(f'{key} must be a finite number, got {value!r}')
        return float(value)
    if type_name in _INT_RANGES:
        low, high = _INT_RANGES[type_name]
        if _is_number(value) and float(value).is_integer():
            value = int(value)
        if not _is_int(value) or not low <= value <= high:
            raise ReplyError(f'{key} must be an integer from {low} to {high}, got {value!r}')
        return value
    if type_name == 'boolean':
        if not isinstance(value, bool):
            raise ReplyError(f'{key} must be true or false, got {value!r}')
        return value
    if type_name.startswith(('string', 'wstring')):
        return _string(value, key)
    if nested is None:
        raise ReplyError(f'{key}: no conversion for {type_name}')
    if not isinstance(value, Mapping):
        raise ReplyError(f'{key} must be an object')
    return fill_message(nested(), value, key=f'{key}.')


def episode_from_event(event: Reply) -> Episode:
    """Return the Episode message of an episode event (its keys are the message's fields)."""
    return fill_message(Episode(), event)


def hello_response(reply: Reply, response: Any) -> Any:
    """
    Fill an acres_interfaces Hello response from a hello reply (not its ``result``).

    ``source`` is ``unreal`` when the reply has no such key: only ACRES Core sends it.
    """
    fill_message(response, reply, nested={'agents': AgentInfo}, skip=('result',))
    if 'source' not in reply:
        response.source = response.SOURCE_UNREAL
    return response


def features_from_reply(reply: Reply) -> list[int]:
    """Return the ``features`` of a hello reply (SimulatorFeatures identifiers)."""
    return _convert(reply.get('features', []), 'sequence<uint16>', 'features', None)


def farm_state_response(reply: Reply, response: Any) -> Any:
    """Fill an acres_interfaces FarmState response from a farm_state reply."""
    return fill_message(response, reply, nested={'fields': FieldState}, skip=('result',))


def vehicle_shifts_response(reply: Reply, response: Any) -> Any:
    """Fill an acres_interfaces GetVehicleShifts response from a get_vehicle_shifts reply."""
    return fill_message(response, reply, nested={'shifts': VehicleShift}, skip=('result',))


def vehicle_shift_fields(shift: VehicleShift) -> dict[str, Any]:
    """Return the ``shift`` object of a set_vehicle_shift request (no agent: agent 0)."""
    fields = message_fields(shift)
    if not fields['agent']:
        del fields['agent']
    return fields


def set_conditions_fields(request: Any) -> dict[str, Any]:
    """
    Return the fields of a set_conditions request: one object per part whose flag is set.

    Empty texts and lists are left out, so the simulator's defaults apply (keep the sky, all
    fields); a date must be given for the clock part.
    """
    fields: dict[str, Any] = {}
    if request.set_clock:
        clock: dict[str, Any] = {'hour': request.clock_hour}
        if request.clock_date:
            clock['date'] = request.clock_date
        fields['clock'] = clock
    if request.set_weather:
        weather: dict[str, Any] = {'rain_mm_h': request.weather_rain_mm_h}
        if request.weather_preset:
            weather['preset'] = request.weather_preset
        fields['weather'] = weather
    if request.set_soil_water:
        soil: dict[str, Any] = {'wetness': request.soil_water_wetness}
        if len(request.soil_water_fields):
            soil['fields'] = list(request.soil_water_fields)
        fields['soil_water'] = soil
    if request.restore_fields:
        restore: dict[str, Any] = {}
        if len(request.restore_fields_fields):
            restore['fields'] = list(request.restore_fields_fields)
        fields['restore_fields'] = restore
    return fields


def farm_state_fields(request: Any) -> dict[str, Any]:
    """Return the fields of a farm_state request (no field numbers: the simulator's choice)."""
    fields: dict[str, Any] = {'edge_band_m': request.edge_band_m}
    if len(request.fields):
        fields['fields'] = list(request.fields)
    return fields


def field_query_fields(request: Any) -> dict[str, Any]:
    """Return the fields of a field_query request."""
    fields: dict[str, Any] = {'x': request.x, 'y': request.y}
    if request.frame:
        fields['frame'] = request.frame
    return fields


def record_fields(request: Any) -> dict[str, Any]:
    """Return the fields of a record request (no path: the simulator's default)."""
    fields: dict[str, Any] = {'action': request.action}
    if request.path:
        fields['path'] = request.path
    return fields


# --- diagnostics ---------------------------------------------------------------------------

CONTROL_KEYS = ('connected', 'reason', 'connected_for_s', 'connections', 'reconnects',
                'connect_failures', 'disconnects', 'pending', 'requests', 'replies',
                'timeouts', 'late_replies', 'unknown_replies', 'replies_without_id',
                'bad_lines', 'events', 'progress_events', 'orphan_progress', 'failed_on_close',
                'refused_disconnected', 'send_failures', 'callback_errors',
                'round_trip_p50_ms', 'round_trip_max_ms')
_CONTROL_PROBLEMS = ('timeouts', 'late_replies', 'bad_lines', 'unknown_replies',
                     'send_failures', 'callback_errors')


def control_stats_to_status(stats: Mapping[str, Any], *, name: str, hardware_id: str = '',
                            previous: Mapping[str, Any] | None = None) -> DiagnosticStatus:
    """
    Return the diagnostic status of the control channel from ``ControlClient.stats``.

    Level: ERROR while disconnected (the message is the reason); WARN when time-outs, late or
    unknown replies, lines that were not JSON, send failures or callback errors grew since the
    ``previous`` snapshot; OK otherwise. Values: ``CONTROL_KEYS``, ``n/a`` without data.
    """
    values = [KeyValue(key=key, value=format_value(stats.get(key))) for key in CONTROL_KEYS]
    if not stats.get('connected'):
        level = DiagnosticStatus.ERROR
        message = f'disconnected: {stats.get("reason") or "not connected"}'
    else:
        grown = [key for key in _CONTROL_PROBLEMS
                 if (stats.get(key) or 0) > ((previous or {}).get(key) or 0)]
        level = DiagnosticStatus.WARN if grown else DiagnosticStatus.OK
        message = ('connected with new ' + ', '.join(key.replace('_', ' ') for key in grown)
                   if grown else 'connected')
    return DiagnosticStatus(level=level, name=name, message=message, hardware_id=hardware_id,
                            values=values)


# --- values ----------------------------------------------------------------------------------

def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _string(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise ReplyError(f'{key} must be a string, got {value!r}')
    return value


def _objects(reply: Reply, key: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Yield the key text and the object of each item of a reply's list of objects."""
    items = reply.get(key)
    if not isinstance(items, list):
        raise ReplyError(f'{key} must be a list')
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ReplyError(f'{key}[{index}] must be an object')
        yield f'{key}[{index}]', item


def _strings(value: Any, key: str) -> list[str]:
    if not isinstance(value, list):
        raise ReplyError(f'{key} must be a list of strings')
    return [_string(item, f'{key}[{index}]') for index, item in enumerate(value)]
