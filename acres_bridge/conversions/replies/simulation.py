# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

# Over 500 lines in one module on purpose: it is the one mapping of the control channel's
# replies (seed 004) onto simulation_interfaces, read by control/simulation_services.py, and its
# functions share the interface shape (InterfaceShape) and the reply checks; split, each part
# would import the rest.

"""
Control channel replies <-> simulation_interfaces messages.

Pure functions: no node, no clock, no socket. The wire side is seed 004: a pose is
``{"position": [x, y, z], "orientation": [qx, qy, qz, qw]}``, a twist ``{"linear": [vx, vy,
vz], "angular": [wx, wy, wz]}``, the frame is ``world`` (default) or ``utm``, and every reply
carries ``result`` (a simulation_interfaces result code) and, when it has one, ``error``.

``simulation_interfaces`` comes in two shapes (see ``InterfaceShape``); ``detect_shape()``
reads the installed types' fields, never a distribution name. The services that no op serves
directly are composed here from the replies of the ops they are made of (get_entities_states,
spawn_entities, get_entity_info, get_current_world, get_available_worlds), and the features
list is cut to what the node serves (``served_features``).
"""

from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import re
from typing import Any

from geometry_msgs.msg import Pose
from geometry_msgs.msg import Twist
from simulation_interfaces.msg import EntityCategory
from simulation_interfaces.msg import EntityFilters
from simulation_interfaces.msg import EntityInfo
from simulation_interfaces.msg import EntityState
from simulation_interfaces.msg import NamedPose
from simulation_interfaces.msg import Result
from simulation_interfaces.msg import SimulationState
from simulation_interfaces.msg import SimulatorFeatures
from simulation_interfaces.msg import Spawnable
from simulation_interfaces.msg import SpawnResult
from simulation_interfaces.msg import TagsFilter
from simulation_interfaces.msg import WorldResource

from acres_bridge.conversions.clock import stamp_to_time
from acres_bridge.conversions.replies.responses import convert_value
from acres_bridge.conversions.replies.responses import fill_message
from acres_bridge.conversions.replies.responses import has_field
from acres_bridge.conversions.replies.responses import installed_interface
from acres_bridge.conversions.replies.responses import Reply
from acres_bridge.conversions.replies.responses import reply_objects
from acres_bridge.conversions.replies.responses import ReplyError
from acres_bridge.conversions.replies.responses import string_value
from acres_bridge.conversions.replies.responses import strings_value
from acres_bridge.protocol.lines import is_int
from acres_bridge.protocol.lines import is_number

WORLD_FRAME = 'world'
UTM_FRAME = 'utm'
IDENTITY_ORIENTATION = (0.0, 0.0, 0.0, 1.0)
PERSON_URI = 'person'
# SpawnEntities' code for "at least one spawn failed" (a constant of its response).
ENTITIES_SPAWN_FAILED = 150

_F = SimulatorFeatures
# Each feature the simulator may list, and the services (or action) that serve it: the
# feature is kept when the simulator lists it and every one of them is served.
FEATURE_SERVICES: dict[int, tuple[str, ...]] = {
    _F.SPAWNING: ('spawn_entity',), _F.DELETING: ('delete_entity',),
    _F.NAMED_POSES: ('get_named_poses',),
    _F.ENTITY_STATE_GETTING: ('get_entity_state', 'get_entities_states'),
    _F.ENTITY_STATE_SETTING: ('set_entity_state',), _F.SPAWNABLES: ('get_spawnables',),
    _F.SIMULATION_RESET: ('reset_simulation',), _F.SIMULATION_RESET_TIME: ('reset_simulation',),
    _F.SIMULATION_RESET_STATE: ('reset_simulation',),
    _F.SIMULATION_RESET_SPAWNED: ('reset_simulation',),
    _F.SIMULATION_STATE_GETTING: ('get_simulation_state',),
    _F.SIMULATION_STATE_SETTING: ('set_simulation_state',),
    _F.SIMULATION_STATE_PAUSE: ('set_simulation_state',),
    _F.STEP_SIMULATION_SINGLE: ('step_simulation',),
    _F.STEP_SIMULATION_MULTIPLE: ('step_simulation',),
    _F.STEP_SIMULATION_ACTION: ('simulate_steps',),
}
# The features the node brings by composing ops: the simulator features they are made of
# (all listed by the simulator) and the services that serve them.
COMPOSED_FEATURES: dict[int, tuple[tuple[int, ...], tuple[str, ...]]] = {
    _F.ENTITY_INFO_GETTING: ((), ('get_entity_info',)),
    _F.WORLD_INFO_GETTING: ((), ('get_current_world',)),
    _F.AVAILABLE_WORLDS: ((), ('get_available_worlds',)),
    _F.SPAWNING_ENTITIES: ((_F.SPAWNING,), ('spawn_entities',)),
}
# The services that answer RESULT_FEATURE_UNSUPPORTED at once, and why. Their features (and
# the other refused ones: ENTITY_TAGS, ENTITY_BOUNDS_*, ENTITY_CATEGORIES,
# SPAWNING_RESOURCE_STRING, WORLD_RESOURCE_STRING, WORLD_TAGS) are never listed.
UNSUPPORTED_SERVICES: dict[str, str] = {
    'get_entity_bounds': 'the control channel gives no volume of an entity (feature '
                         'ENTITY_BOUNDS)',
    'get_named_pose_bounds': 'the named places of the tile are points without a free volume '
                             '(feature POSE_BOUNDS)',
    'set_entity_info': 'the category of an entity follows from what it is (agents are '
                       'robots, props objects, workers people) and cannot be set (feature '
                       'ENTITY_INFO_SETTING)',
    'load_world': 'ACRES runs the one tile it started with; the control channel has no op to '
                  'load a world (feature WORLD_LOADING)',
    'unload_world': 'ACRES runs the one tile it started with; the control channel has no op '
                    'to unload it (feature WORLD_UNLOADING)',
}


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
        spawn_request = installed_interface('simulation_interfaces', 'srv', 'SpawnEntity',
                                            'Request')
    if spawnable is None:
        spawnable = installed_interface('simulation_interfaces', 'msg', 'Spawnable')
    if set_state_request is None:
        set_state_request = installed_interface('simulation_interfaces', 'srv',
                                                'SetEntityState', 'Request')
    return InterfaceShape(
        spawn_resource=has_field(spawn_request, 'entity_resource'),
        spawnable_resource=has_field(spawnable, 'entity_resource'),
        set_state_flags=has_field(set_state_request, 'set_pose'))


# --- results ---------------------------------------------------------------------------------

def result_from_reply(reply: Reply) -> Result:
    """
    Return the reply's result code and error text, unchanged, as a Result.

    A warning on a successful reply (``ok`` true with ``error``) stays in error_message.

    :raises ReplyError: when ``result`` is missing or not a code from 0 to 255.
    """
    code = reply.get('result')
    if not is_int(code) or not 0 <= code <= 255:
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


# --- features, state, steps ------------------------------------------------------------------

def features_from_reply(reply: Reply) -> list[int]:
    """Return the ``features`` of a hello reply (SimulatorFeatures identifiers)."""
    return convert_value(reply.get('features', []), 'sequence<uint16>', 'features')


def served_features(simulator_features: Iterable[int], served: Collection[str]) -> list[int]:
    """
    Return the features to advertise: exactly those whose services are served and serve them.

    A feature of the simulator stays when it has an entry in ``FEATURE_SERVICES`` and all its
    services are in ``served``; any other identifier (one the node refuses, such as tag or
    category filtering, or one it does not know) is dropped. The composed features follow,
    when their services are served and the simulator lists the features they are made of.
    Sorted, without repeats.
    """
    listed = set(simulator_features)
    features = {feature for feature in listed
                if all(name in served for name in FEATURE_SERVICES.get(feature, ('',)))}
    for feature, (needed, services) in COMPOSED_FEATURES.items():
        if set(needed) <= listed and all(name in served for name in services):
            features.add(feature)
    return sorted(features)


def simulation_state_from_reply(reply: Reply) -> SimulationState:
    """Return the SimulationState of a get_state (or hello) reply."""
    return fill_message(SimulationState(), reply)


def step_feedback(feedback_type: type, event: Reply) -> Any:
    """Return the SimulateSteps feedback of a progress event (``completed``, ``remaining``)."""
    return fill_message(feedback_type(), {'completed_steps': event.get('completed'),
                                          'remaining_steps': event.get('remaining')},
                        key='progress.')


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
            map(is_number, value)):
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
    if not is_number(time_s) or time_s < 0:
        raise ReplyError(f'time_s must be a number, 0 or more, got {time_s!r}')
    try:
        state.header.stamp = stamp_to_time(time_s)
    except ValueError as exc:
        raise ReplyError(f'time_s: {exc}') from exc
    state.pose = pose_from_dict(reply.get('pose'))
    state.twist = twist_from_dict(reply.get('twist', {}))
    return state


def entities_states_from_replies(replies: Sequence[tuple[str, Reply]]
                                 ) -> tuple[list[str], list[EntityState], Result]:
    """
    Compose get_entities_states from the get_entity_state reply of each listed name.

    An entity the simulator no longer finds (result 2: deleted since get_entities) is left
    out. Any other failure fails the whole answer with its code, the entity named.

    :return: the names, their states (``states[i]`` belongs to ``names[i]``), the result.
    :raises ReplyError: when a reply breaks the op's schema.
    """
    names: list[str] = []
    states: list[EntityState] = []
    for name, reply in replies:
        result = result_from_reply(reply)
        if result.result == Result.RESULT_NOT_FOUND:
            continue
        if result.result != Result.RESULT_OK:
            return [], [], failed_result(
                f'get_entity_state of {name!r}: {result.error_message or "failed"}',
                result.result)
        names.append(name)
        states.append(entity_state_from_reply(reply))
    return names, states, Result(result=Result.RESULT_OK)


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
    return strings_value(reply.get('entities'), 'entities')


def filter_names(names: Iterable[str], pattern: str) -> list[str]:
    """
    Return the names that the regular expression matches (anywhere, as POSIX regexec does).

    :raises re.error: for a pattern that does not compile.
    """
    if not pattern:
        return list(names)
    compiled = re.compile(pattern)
    return [name for name in names if compiled.search(name)]


def entity_info(name: str, hello: Reply | None, spawned: Mapping[str, str]) -> EntityInfo:
    """
    Return what the session knows of an entity that get_entities lists.

    An agent of ``hello`` is CATEGORY_ROBOT (described by its vehicle and index), an entity
    spawned through the bridge is CATEGORY_HUMAN for the ``person`` uri (a worker) and
    CATEGORY_OBJECT for a prop; any other entity (spawned before the bridge connected) is
    CATEGORY_OBJECT, the category of "unknown", and its description says so.

    :param spawned: the uri of each entity the bridge spawned (name: uri).
    """
    for agent in (hello or {}).get('agents', []):
        if isinstance(agent, Mapping) and agent.get('name') == name:
            text = f'agent {agent.get("index", "?")}: a {agent.get("vehicle") or "vehicle"}'
            if agent.get('implement'):
                text += f' with a {agent["implement"]}'
            return EntityInfo(category=EntityCategory(category=EntityCategory.CATEGORY_ROBOT),
                              description=text)
    uri = spawned.get(name)
    if uri is None:
        return EntityInfo(category=EntityCategory(category=EntityCategory.CATEGORY_OBJECT),
                          description='spawned before this bridge connected: its type is '
                                      'unknown')
    category = (EntityCategory.CATEGORY_HUMAN if uri == PERSON_URI
                else EntityCategory.CATEGORY_OBJECT)
    return EntityInfo(category=EntityCategory(category=category), description=uri)


# --- spawning --------------------------------------------------------------------------------

def spawn_resource(request: Any, shape: InterfaceShape | None = None) -> tuple[str, str]:
    """
    Return the uri and the resource_string of a spawn request.

    :param shape: the shape of a SpawnEntity service request; None for a request that shows
        its own form (SpawnEntities' SpawnEntity messages carry a Resource in both shapes).
    """
    uses_resource = (shape.spawn_resource if shape is not None
                     else hasattr(request, 'entity_resource'))
    holder = request.entity_resource if uses_resource else request
    return holder.uri, holder.resource_string


def spawn_entity_fields(request: Any, shape: InterfaceShape | None = None) -> dict[str, Any]:
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


def resource_string_unsupported(uri: str, resource_string: str) -> str | None:
    """Return why a spawn from a resource_string is refused (None for a uri)."""
    if uri or not resource_string:
        return None
    return ('the simulator spawns only the uris of get_spawnables, not a resource_string '
            '(feature SPAWNING_RESOURCE_STRING)')


def spawned_name(reply: Reply) -> str | None:
    """Return the ``entity`` of a successful spawn_entity reply (the name the simulator used)."""
    if reply.get('result') != Result.RESULT_OK or 'entity' not in reply:
        return None
    return string_value(reply['entity'], 'entity')


def spawn_result_from_reply(reply: Reply) -> SpawnResult:
    """Return the SpawnResult of a spawn_entity reply: its result and the name it used."""
    return SpawnResult(result=result_from_reply(reply), entity_name=spawned_name(reply) or '')


def failed_spawn_result(text: str, code: int = Result.RESULT_OPERATION_FAILED) -> SpawnResult:
    """Return the SpawnResult of a spawn that got no reply or was not sent."""
    return SpawnResult(result=failed_result(text, code))


def spawn_results_outcome(results: Sequence[SpawnResult]) -> Result:
    """Return SpawnEntities' result: RESULT_OK, or ENTITIES_SPAWN_FAILED naming each failure."""
    failed = [f'{index}: {result.result.error_message or f"code {result.result.result}"}'
              for index, result in enumerate(results)
              if result.result.result != Result.RESULT_OK]
    if not failed:
        return Result(result=Result.RESULT_OK)
    return failed_result(f'{len(failed)} of {len(results)} spawns failed: ' + '; '.join(failed),
                         ENTITIES_SPAWN_FAILED)


def spawnables_from_reply(reply: Reply, shape: InterfaceShape) -> list[Spawnable]:
    """Return the Spawnable list of a get_spawnables reply (uri where the shape keeps it)."""
    spawnables = []
    for key, item in reply_objects(reply, 'spawnables'):
        spawnable = Spawnable()
        holder = spawnable.entity_resource if shape.spawnable_resource else spawnable
        holder.uri = string_value(item.get('uri'), f'{key}.uri')
        spawnable.description = string_value(item.get('description', ''), f'{key}.description')
        spawnables.append(spawnable)
    return spawnables


# --- places and worlds -----------------------------------------------------------------------

def named_poses_from_reply(reply: Reply) -> list[NamedPose]:
    """Return the NamedPose list of a get_named_poses reply."""
    poses = []
    for key, item in reply_objects(reply, 'poses'):
        poses.append(NamedPose(
            name=string_value(item.get('name'), f'{key}.name'),
            description=string_value(item.get('description', ''), f'{key}.description'),
            tags=strings_value(item.get('tags', []), f'{key}.tags'),
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


def world_from_hello(reply: Reply) -> WorldResource | None:
    """
    Return the world of a hello reply: its ``map`` (None when the reply names none).

    The map's name is both the world's name and its uri (the name the simulator knows it
    by); the description says where it comes from. No tags (feature WORLD_TAGS).
    """
    name = string_value(reply.get('map', ''), 'map')
    if not name:
        return None
    source = string_value(reply.get('source', 'unreal'), 'source')
    world = WorldResource(name=name, description=f'the ACRES map {name} ({source})')
    world.world_resource.uri = name
    return world
