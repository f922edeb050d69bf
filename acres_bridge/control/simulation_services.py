# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
sim_control's simulation_interfaces services: their rows of the service table and handlers.

Each op of seed 004 that simulation_interfaces has a service for is served by a handler here,
the services composed of ops (get_entities_states, spawn_entities, get_entity_info,
get_current_world, get_available_worlds) too, and the rest answer RESULT_FEATURE_UNSUPPORTED
at once. The ``simulate_steps`` action's execute callback is here as well. conversions/
simulation.py builds every request and answer; the handlers only send and await.
"""

from collections.abc import Awaitable
from collections.abc import Callable
import json
import re
from typing import Any

from simulation_interfaces.msg import Result

from acres_bridge.conversions.replies.responses import fill_message
from acres_bridge.conversions.replies.responses import Reply
from acres_bridge.conversions.replies.responses import ReplyError
from acres_bridge.conversions.replies.simulation import add_warning
from acres_bridge.conversions.replies.simulation import entities_states_from_replies
from acres_bridge.conversions.replies.simulation import entity_filters_unsupported
from acres_bridge.conversions.replies.simulation import entity_info
from acres_bridge.conversions.replies.simulation import entity_names_from_reply
from acres_bridge.conversions.replies.simulation import entity_state_from_reply
from acres_bridge.conversions.replies.simulation import failed_result
from acres_bridge.conversions.replies.simulation import failed_spawn_result
from acres_bridge.conversions.replies.simulation import features_from_reply
from acres_bridge.conversions.replies.simulation import filter_names
from acres_bridge.conversions.replies.simulation import InterfaceShape
from acres_bridge.conversions.replies.simulation import named_poses_from_reply
from acres_bridge.conversions.replies.simulation import resource_string_unsupported
from acres_bridge.conversions.replies.simulation import served_features
from acres_bridge.conversions.replies.simulation import set_entity_state_fields
from acres_bridge.conversions.replies.simulation import simulation_state_from_reply
from acres_bridge.conversions.replies.simulation import spawn_entity_fields
from acres_bridge.conversions.replies.simulation import spawn_resource
from acres_bridge.conversions.replies.simulation import spawn_result_from_reply
from acres_bridge.conversions.replies.simulation import spawn_results_outcome
from acres_bridge.conversions.replies.simulation import spawnables_from_reply
from acres_bridge.conversions.replies.simulation import spawned_name
from acres_bridge.conversions.replies.simulation import step_feedback
from acres_bridge.conversions.replies.simulation import tags_match
from acres_bridge.conversions.replies.simulation import UNSUPPORTED_SERVICES
from acres_bridge.conversions.replies.simulation import world_from_hello
from acres_bridge.protocol.errors import ControlError

RESULT_OK = Result.RESULT_OK
RESULT_NOT_FOUND = Result.RESULT_NOT_FOUND
RESULT_FEATURE_UNSUPPORTED = Result.RESULT_FEATURE_UNSUPPORTED
RESULT_OPERATION_FAILED = Result.RESULT_OPERATION_FAILED
# reset_simulation scope bits that remove the spawned entities (0 is the same as 255).
_SCOPE_SPAWNED = 4


class SimulationServices:
    """
    The simulation_interfaces handlers of sim_control's node (control/sim_control_node.py).

    A mixin: the node that composes it provides the control channel's calls (``_call``,
    ``_send``, ``_reply``, ``_step``), the hello cache (``hello``, ``_remember_hello``), the
    installed interface ``shape``, the names ``served``, the action type
    ``_simulate_steps_type`` and ``_spawned``, the uri of each entity spawned through it.
    """

    shape: InterfaceShape
    served: list[str]
    _spawned: dict[str, str]

    def _simulation_service_specs(self) -> list[tuple[str, str, str, str,
                                                      Callable[..., Awaitable[None]]]]:
        """Return (ROS name, package, type, op, handler) of every simulation_interfaces service."""
        simulation = 'simulation_interfaces'
        return [
            ('get_simulator_features', simulation, 'GetSimulatorFeatures', 'hello',
             self._get_simulator_features),
            ('get_simulation_state', simulation, 'GetSimulationState', 'get_state',
             self._get_simulation_state),
            ('set_simulation_state', simulation, 'SetSimulationState', 'set_state',
             self._set_simulation_state),
            ('step_simulation', simulation, 'StepSimulation', 'step', self._step_simulation),
            ('reset_simulation', simulation, 'ResetSimulation', 'reset',
             self._reset_simulation),
            ('get_entities', simulation, 'GetEntities', 'get_entities', self._get_entities),
            ('get_entity_state', simulation, 'GetEntityState', 'get_entity_state',
             self._get_entity_state),
            ('set_entity_state', simulation, 'SetEntityState', 'set_entity_state',
             self._set_entity_state),
            ('spawn_entity', simulation, 'SpawnEntity', 'spawn_entity', self._spawn_entity),
            ('delete_entity', simulation, 'DeleteEntity', 'delete_entity',
             self._delete_entity),
            ('get_spawnables', simulation, 'GetSpawnables', 'get_spawnables',
             self._get_spawnables),
            ('get_named_poses', simulation, 'GetNamedPoses', 'get_named_poses',
             self._get_named_poses),
            ('get_entities_states', simulation, 'GetEntitiesStates',
             'get_entities + get_entity_state', self._get_entities_states),
            ('spawn_entities', simulation, 'SpawnEntities', 'spawn_entity',
             self._spawn_entities),
            ('get_entity_info', simulation, 'GetEntityInfo', 'get_entities',
             self._get_entity_info),
            ('get_current_world', simulation, 'GetCurrentWorld', 'hello',
             self._get_current_world),
            ('get_available_worlds', simulation, 'GetAvailableWorlds', 'hello',
             self._get_available_worlds),
        ] + [
            (name, simulation, _type_name(name), 'none', self._unsupported(reason))
            for name, reason in UNSUPPORTED_SERVICES.items()
        ]

    async def _get_simulator_features(self, request: Any, response: Any) -> None:
        try:
            reply = await self._reply('hello')
            features = features_from_reply(reply)
        except (ControlError, ReplyError) as exc:
            # The response has no result field: custom_info carries a failed reply instead.
            response.features.custom_info = json.dumps(
                {'ok': False, 'result': RESULT_OPERATION_FAILED, 'error': str(exc)})
            return
        self._remember_hello(reply)
        response.features.features = served_features(features, self.served)
        response.features.custom_info = json.dumps(reply)

    async def _get_simulation_state(self, request: Any, response: Any) -> None:
        reply = await self._call(response, 'get_state')
        if reply is not None:
            response.state = simulation_state_from_reply(reply)

    async def _set_simulation_state(self, request: Any, response: Any) -> None:
        await self._call(response, 'set_state', state=request.state.state)

    async def _step_simulation(self, request: Any, response: Any) -> None:
        await self._step(response, request.steps)

    async def _simulate_steps(self, goal_handle: Any) -> Any:
        action_type = self._simulate_steps_type
        steps = goal_handle.request.steps

        def on_progress(event: Reply) -> None:
            # On the control reader thread, in the order of the socket: all feedback goes out
            # before the reply completes the goal.
            goal_handle.publish_feedback(step_feedback(action_type.Feedback, event))

        result = action_type.Result()
        try:
            await self._step(result, steps, on_progress=on_progress, progress=True)
        except ReplyError as exc:
            result.result = failed_result(f'malformed step reply: {exc}')
        if result.result.result == RESULT_OK:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        return result

    async def _reset_simulation(self, request: Any, response: Any) -> None:
        reply = await self._call(response, 'reset', scope=request.scope)
        if (reply is not None and response.result.result == RESULT_OK
                and (request.scope == 0 or request.scope & _SCOPE_SPAWNED)):
            self._spawned.clear()

    async def _get_entities(self, request: Any, response: Any) -> list[str] | None:
        """Answer get_entities (or the names of get_entities_states); the names, or None."""
        filters = request.filters
        unsupported = entity_filters_unsupported(filters)
        if unsupported is not None:
            response.result = failed_result(unsupported, RESULT_FEATURE_UNSUPPORTED)
            return None
        try:
            filter_names([], filters.filter)
        except re.error as exc:
            response.result = failed_result(
                f'filters.filter {filters.filter!r} is not a regular expression: {exc}')
            return None
        reply = await self._call(response, 'get_entities')
        if reply is None or response.result.result != RESULT_OK:
            return None
        response.entities = filter_names(entity_names_from_reply(reply), filters.filter)
        return list(response.entities)

    async def _get_entity_state(self, request: Any, response: Any) -> None:
        reply = await self._call(response, 'get_entity_state', entity=request.entity)
        if reply is not None and response.result.result == RESULT_OK:
            response.state = entity_state_from_reply(reply)

    async def _set_entity_state(self, request: Any, response: Any) -> None:
        # 1.x has no flags: both parts apply. 2.x: a part not set is kept, which the op
        # cannot do by itself (it always applies a pose and a twist), so it is read first.
        set_pose = getattr(request, 'set_pose', True)
        set_twist = getattr(request, 'set_twist', True)
        current = None
        if not (set_pose and set_twist):
            current = await self._call(response, 'get_entity_state', entity=request.entity)
            if current is None or response.result.result != RESULT_OK:
                return
            if not (set_pose or set_twist):
                return       # nothing to change; the entity exists
        fields = set_entity_state_fields(request.entity, request.state, set_pose=set_pose,
                                         set_twist=set_twist, current=current)
        await self._call(response, 'set_entity_state', **fields)

    async def _spawn_entity(self, request: Any, response: Any) -> None:
        refused = resource_string_unsupported(*spawn_resource(request, self.shape))
        if refused is not None:
            response.result = failed_result(refused, RESULT_FEATURE_UNSUPPORTED)
            return
        fields = spawn_entity_fields(request, self.shape)
        reply = await self._call(response, 'spawn_entity', **fields)
        if reply is not None and 'entity' in reply:
            fill_message(response, {'entity_name': reply['entity']}, key='entity')
        self._remember_spawn(reply, fields['uri'])

    def _remember_spawn(self, reply: Reply | None, uri: str) -> None:
        name = spawned_name(reply) if reply is not None else None
        if name is not None:
            self._spawned[name] = uri

    async def _delete_entity(self, request: Any, response: Any) -> None:
        reply = await self._call(response, 'delete_entity', entity=request.entity)
        if reply is not None and response.result.result in (RESULT_OK, RESULT_NOT_FOUND):
            self._spawned.pop(request.entity, None)

    async def _get_spawnables(self, request: Any, response: Any) -> None:
        reply = await self._call(response, 'get_spawnables')
        if reply is None or response.result.result != RESULT_OK:
            return
        response.spawnables = spawnables_from_reply(reply, self.shape)
        sources = [source for source in request.sources if source]
        if sources:
            add_warning(response.result, 'the simulator has no other sources; not searched: '
                        + ', '.join(sources))

    async def _get_named_poses(self, request: Any, response: Any) -> None:
        try:
            tags_match([], request.tags)
        except ValueError as exc:
            response.result = failed_result(str(exc))
            return
        reply = await self._call(response, 'get_named_poses')
        if reply is not None and response.result.result == RESULT_OK:
            response.poses = [pose for pose in named_poses_from_reply(reply)
                              if tags_match(pose.tags, request.tags)]

    # --- simulation_interfaces services composed of ops --------------------------------------

    async def _get_entities_states(self, request: Any, response: Any) -> None:
        # The names as get_entities gives them, then every state requested at once (the
        # replies come in the order of the requests).
        names = await self._get_entities(request, response)
        response.entities = []
        if names is None:
            return
        waiting = [(name, self._send('get_entity_state', entity=name)) for name in names]
        replies = []
        for name, reply in waiting:
            try:
                replies.append((name, await reply))
            except ControlError as exc:
                response.result = failed_result(f'get_entity_state of {name!r}: {exc}')
                return
        response.entities, response.states, response.result = (
            entities_states_from_replies(replies))

    async def _spawn_entities(self, request: Any, response: Any) -> None:
        # Every spawn is sent at once, in the order of the requests, so renaming and name
        # clashes within the call come out as if they were sent one by one.
        pending = []
        for spawn in request.spawn_requests:
            refused = resource_string_unsupported(*spawn_resource(spawn))
            if refused is not None:
                pending.append((None, None, refused))
                continue
            fields = spawn_entity_fields(spawn)
            pending.append((fields['uri'], self._send('spawn_entity', **fields), None))
        results = []
        for uri, waiting_reply, refused in pending:
            if refused is not None:
                results.append(failed_spawn_result(refused, RESULT_FEATURE_UNSUPPORTED))
                continue
            try:
                reply = await waiting_reply
            except ControlError as exc:
                results.append(failed_spawn_result(str(exc)))
                continue
            try:
                results.append(spawn_result_from_reply(reply))
            except ReplyError as exc:
                results.append(failed_spawn_result(f'malformed spawn_entity reply: {exc}'))
                continue
            self._remember_spawn(reply, uri)
        response.results = results
        response.result = spawn_results_outcome(results)

    async def _get_entity_info(self, request: Any, response: Any) -> None:
        reply = await self._call(response, 'get_entities')
        if reply is None or response.result.result != RESULT_OK:
            return
        if request.entity not in entity_names_from_reply(reply):
            response.result = failed_result(f'no entity {request.entity!r}', RESULT_NOT_FOUND)
            return
        hello = self.hello
        if hello is None:
            hello = await self._call(response, 'hello')
            if hello is None or response.result.result != RESULT_OK:
                return
        response.info = entity_info(request.entity, hello, self._spawned)

    async def _get_current_world(self, request: Any, response: Any) -> None:
        world = await self._hello_world(response)
        if world is not None:
            response.world = world

    async def _get_available_worlds(self, request: Any, response: Any) -> None:
        if list(request.filter.tags):
            response.result = failed_result('worlds have no tags to filter by (feature '
                                            'WORLD_TAGS)', RESULT_FEATURE_UNSUPPORTED)
            return
        world = await self._hello_world(response)
        if world is None:
            return
        response.worlds = [world]
        sources = [source for source in request.additional_sources if source]
        if sources:
            add_warning(response.result, 'the simulator has only the map it runs; not '
                        'searched: ' + ', '.join(sources))

    async def _hello_world(self, response: Any) -> Any:
        """Return the world of a fresh hello (None with the result set when there is none)."""
        reply = await self._call(response, 'hello')
        if reply is None or response.result.result != RESULT_OK:
            return None
        self._remember_hello(reply)
        world = world_from_hello(reply)
        if world is None:
            response.result = failed_result('the simulator names no map',
                                            type(response).NO_WORLD_LOADED)
        return world

    def _unsupported(self, reason: str) -> Callable[..., Awaitable[None]]:
        """Return a handler that answers RESULT_FEATURE_UNSUPPORTED at once, sending nothing."""
        async def handler(request: Any, response: Any) -> None:
            response.result = failed_result(reason, RESULT_FEATURE_UNSUPPORTED)
        return handler


def _type_name(name: str) -> str:
    """Return the service type of a conventional name (GetEntityBounds: get_entity_bounds)."""
    return ''.join(part.capitalize() for part in name.split('_'))
