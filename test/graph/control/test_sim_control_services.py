# SPDX-FileCopyrightText: 2026 The acres_bridge authors
# SPDX-License-Identifier: Apache-2.0

"""
Every service type of the installed simulation_interfaces answers, found by type.

The types come from the package's srv module, so a service a new release adds fails here until
the node serves it. Each is called on the running node against the emulator and must answer
within its time-out with a result code; the composed services (get_entities_states,
spawn_entities, get_entity_info, get_current_world, get_available_worlds) must give the same
data as the ops they are made of, and the refused ones must answer at once without sending
anything. Runs with either shape of simulation_interfaces.
"""

import importlib
import json
import re
import time

from acres_interfaces.srv import Hello
import pytest
from simulation_interfaces.msg import EntityCategory
from simulation_interfaces.msg import EntityFilters
from simulation_interfaces.msg import Result
from simulation_interfaces.msg import SpawnEntity as SpawnEntityMessage
from simulation_interfaces.msg import TagsFilter
from simulation_interfaces.srv import GetAvailableWorlds
from simulation_interfaces.srv import GetCurrentWorld
from simulation_interfaces.srv import GetEntities
from simulation_interfaces.srv import GetEntitiesStates
from simulation_interfaces.srv import GetEntityInfo
from simulation_interfaces.srv import GetEntityState
from simulation_interfaces.srv import SpawnEntities
from simulation_interfaces.srv import SpawnEntity
from support.sim_control_graph import ControlGraph
from support.sim_control_graph import graph_fixtures
from support.sim_control_graph import Requests

from acres_bridge.conversions.replies.simulation import detect_shape
from acres_devkit.ports import free_port

pytestmark = pytest.mark.ros

SHAPE = detect_shape()
OK = Result.RESULT_OK
UNSUPPORTED = Result.RESULT_FEATURE_UNSUPPORTED
FAILED = Result.RESULT_OPERATION_FAILED
TIMEOUT_S = 3.0
SRV = importlib.import_module('simulation_interfaces.srv')
# Every service type of the installed package: the classes with a Request and a Response (the
# module also holds their _Request, _Response and _Event parts).
SERVICE_TYPES = sorted(name for name in dir(SRV)
                       if re.fullmatch(r'[A-Z][A-Za-z]+', name)
                       and hasattr(getattr(SRV, name), 'Request'))
REFUSED = ('GetEntityBounds', 'GetNamedPoseBounds', 'SetEntityInfo', 'LoadWorld', 'UnloadWorld')


def ros_name(type_name: str) -> str:
    """Return the conventional name of a service type: GetEntitiesStates, get_entities_states."""
    return re.sub(r'(?<!^)(?=[A-Z])', '_', type_name).lower()


def codes_of(response_type: type) -> set[int]:
    """Return the result codes a response may carry: the common ones and its own constants."""
    own = [getattr(response_type, name) for name in dir(response_type)
           if re.fullmatch(r'[A-Z][A-Z_]+', name)]
    return {Result.RESULT_FEATURE_UNSUPPORTED, Result.RESULT_OK, Result.RESULT_NOT_FOUND,
            Result.RESULT_INCORRECT_STATE, Result.RESULT_OPERATION_FAILED} | {
        code for code in own if isinstance(code, int)}


graph, emulator = graph_fixtures({'timeout_s': TIMEOUT_S})


def _spawn(name: str, uri: str, x: float, y: float, *, resource_string: str = '',
           allow_renaming: bool = False) -> SpawnEntityMessage:
    spawn = SpawnEntityMessage(name=name, allow_renaming=allow_renaming)
    spawn.entity_resource.uri = uri
    spawn.entity_resource.resource_string = resource_string
    spawn.initial_pose.pose.position.x = x
    spawn.initial_pose.pose.position.y = y
    return spawn


def _spawn_request(name: str, uri: str, x: float, y: float) -> SpawnEntity.Request:
    request = SpawnEntity.Request(name=name)
    holder = request.entity_resource if SHAPE.spawn_resource else request
    holder.uri = uri
    request.initial_pose.pose.position.x = x
    request.initial_pose.pose.position.y = y
    return request


# --- every type ------------------------------------------------------------------------------

def test_the_package_has_the_services_of_its_release():
    assert len(SERVICE_TYPES) == 22
    assert {'GetEntitiesStates', 'SpawnEntities', 'LoadWorld', 'StepSimulation'} <= set(
        SERVICE_TYPES)


@pytest.mark.parametrize('type_name', SERVICE_TYPES)
def test_every_service_type_is_served_and_answers_in_time_with_a_result_code(graph, type_name):
    srv_type = getattr(SRV, type_name)
    name = ros_name(type_name)
    assert name in graph.node.served
    started = time.monotonic()
    # A default request: for most services one the simulator refuses with a code of its own
    # (no entity, no steps); the node's time-out is TIMEOUT_S.
    response = graph.call(srv_type, name, timeout_s=TIMEOUT_S + 2.0)
    assert time.monotonic() - started < TIMEOUT_S + 2.0
    if type_name == 'GetSimulatorFeatures':      # the one response without a result
        assert json.loads(response.features.custom_info)['result'] == OK
        assert list(response.features.features)
        return
    result = response.result
    assert result.result in codes_of(srv_type.Response), result
    if result.result != OK:
        assert result.error_message, f'{name} answered {result.result} without a reason'


@pytest.fixture(scope='module')
def unconnected():
    graph = ControlGraph(free_port(), parameters={'timeout_s': TIMEOUT_S, 'reconnect_s': 0.05})
    yield graph
    graph.close()


@pytest.mark.parametrize('type_name', SERVICE_TYPES)
def test_with_the_channel_down_every_service_still_answers_at_once(unconnected, type_name):
    srv_type = getattr(SRV, type_name)
    request = srv_type.Request()
    if type_name == 'SpawnEntities':     # one spawn, so that one request meets the channel
        request.spawn_requests = [_spawn('down_cone', 'prop:cone', 0.0, 0.0)]
    started = time.monotonic()
    response = unconnected.call(srv_type, ros_name(type_name), request)
    # At once: the node does not wait for the time-out of a request it could not send.
    assert time.monotonic() - started < TIMEOUT_S
    if type_name == 'GetSimulatorFeatures':
        assert list(response.features.features) == []
        assert json.loads(response.features.custom_info)['result'] == FAILED
        return
    expected = UNSUPPORTED if type_name in REFUSED else FAILED
    if type_name == 'SpawnEntities':
        expected = SpawnEntities.Response.ENTITIES_SPAWN_FAILED
        assert response.results[0].result.result == FAILED
        assert 'not connected' in response.results[0].result.error_message
    assert response.result.result == expected, response.result
    assert response.result.error_message


@pytest.mark.parametrize('type_name', REFUSED)
def test_the_services_no_op_serves_refuse_at_once_saying_why_and_send_nothing(
        graph, emulator, type_name):
    requests = Requests(emulator)
    response = graph.call(getattr(SRV, type_name), ros_name(type_name))
    assert response.result.result == UNSUPPORTED
    assert 'feature' in response.result.error_message
    assert requests() == []


# --- composed services -----------------------------------------------------------------------

def test_get_entities_states_is_get_entities_then_each_state(graph, emulator):
    spawned = graph.call(SpawnEntities, 'spawn_entities', SpawnEntities.Request(spawn_requests=[
        _spawn('states_cone', 'prop:cone', 3.0, 4.0), _spawn('states_box', 'prop:box', 5.0, 6.0)]))
    assert spawned.result.result == OK, spawned.result
    filters = EntityFilters(filter='^states_|^polaris$')
    requests = Requests(emulator)
    composed = graph.call(GetEntitiesStates, 'get_entities_states',
                          GetEntitiesStates.Request(filters=filters))
    assert composed.result.result == OK, composed.result
    assert requests() == [{'op': 'get_entities'}] + [
        {'op': 'get_entity_state', 'entity': name}
        for name in ('polaris', 'states_cone', 'states_box')]
    names = graph.call(GetEntities, 'get_entities', GetEntities.Request(filters=filters))
    assert list(composed.entities) == list(names.entities) == [
        'polaris', 'states_cone', 'states_box']
    for name, state in zip(composed.entities, composed.states):
        single = graph.call(GetEntityState, 'get_entity_state', GetEntityState.Request(
            entity=name))
        assert single.result.result == OK
        assert state == single.state        # a paused world: the same pose, twist and stamp
    assert (composed.states[1].pose.position.x, composed.states[1].pose.position.y) == (3.0, 4.0)


def test_get_entities_states_refuses_the_filters_get_entities_refuses(graph, emulator):
    requests = Requests(emulator)
    filters = EntityFilters(categories=[EntityCategory(category=EntityCategory.CATEGORY_ROBOT)])
    response = graph.call(GetEntitiesStates, 'get_entities_states',
                          GetEntitiesStates.Request(filters=filters))
    assert response.result.result == UNSUPPORTED
    assert 'ENTITY_CATEGORIES' in response.result.error_message
    bad = graph.call(GetEntitiesStates, 'get_entities_states',
                     GetEntitiesStates.Request(filters=EntityFilters(filter='(')))
    assert bad.result.result == Result.RESULT_OPERATION_FAILED
    assert requests() == []


def test_spawn_entities_sends_one_spawn_per_entity_and_gives_a_result_each(graph, emulator):
    requests = Requests(emulator)
    response = graph.call(SpawnEntities, 'spawn_entities', SpawnEntities.Request(spawn_requests=[
        _spawn('many_cone', 'prop:cone', 10.0, 11.0),
        _spawn('many_cone', 'prop:cone', 12.0, 13.0),
        _spawn('many_cone', 'prop:cone', 14.0, 15.0, allow_renaming=True),
        _spawn('many_sdf', '', 0.0, 0.0, resource_string='<sdf/>'),
        _spawn('many_worker', 'person', 16.0, 17.0)]))
    assert response.result.result == SpawnEntities.Response.ENTITIES_SPAWN_FAILED == 150
    assert response.result.error_message.startswith('2 of 5 spawns failed: 1: ')
    codes = [(result.result.result, result.entity_name) for result in response.results]
    assert codes == [(OK, 'many_cone'), (101, ''), (OK, 'many_cone_1'), (UNSUPPORTED, ''),
                     (OK, 'many_worker')]
    assert 'SPAWNING_RESOURCE_STRING' in response.results[3].result.error_message
    sent = requests()
    assert [request['name'] for request in sent] == ['many_cone'] * 3 + ['many_worker']
    # Each is the request spawn_entity sends for the same entity.
    single = Requests(emulator)
    alone = graph.call(SpawnEntity, 'spawn_entity',
                       _spawn_request('alone_cone', 'prop:cone', 10.0, 11.0))
    assert alone.result.result == OK
    [request] = single()
    assert {**request, 'name': 'many_cone'} == sent[0]
    state = graph.call(GetEntityState, 'get_entity_state',
                       GetEntityState.Request(entity='many_cone_1')).state
    assert (state.pose.position.x, state.pose.position.y) == (14.0, 15.0)


def test_an_empty_spawn_entities_succeeds_with_no_results(graph, emulator):
    requests = Requests(emulator)
    response = graph.call(SpawnEntities, 'spawn_entities')
    assert (response.result.result, list(response.results)) == (OK, [])
    assert requests() == []


def test_entity_info_gives_agents_as_robots_props_as_objects_and_workers_as_people(graph):
    spawned = graph.call(SpawnEntities, 'spawn_entities', SpawnEntities.Request(spawn_requests=[
        _spawn('info_bale', 'prop:bale_round', 20.0, 21.0),
        _spawn('info_worker', 'person', 22.0, 23.0)]))
    assert spawned.result.result == OK, spawned.result
    hello = graph.call(Hello, 'acres/hello')
    agent = hello.agents[0]

    def info(name: str):
        response = graph.call(GetEntityInfo, 'get_entity_info', GetEntityInfo.Request(
            entity=name))
        assert response.result.result == OK, response.result
        return response.info.category.category, response.info.description

    assert info(agent.name) == (EntityCategory.CATEGORY_ROBOT,
                                f'agent {agent.index}: a {agent.vehicle}')
    assert info('info_bale') == (EntityCategory.CATEGORY_OBJECT, 'prop:bale_round')
    assert info('info_worker') == (EntityCategory.CATEGORY_HUMAN, 'person')
    missing = graph.call(GetEntityInfo, 'get_entity_info', GetEntityInfo.Request(
        entity='nobody'))
    assert missing.result.result == Result.RESULT_NOT_FOUND
    assert missing.result.error_message == "no entity 'nobody'"


def test_the_current_and_the_available_worlds_are_the_map_of_hello(graph, emulator):
    requests = Requests(emulator)
    hello = graph.call(Hello, 'acres/hello')
    current = graph.call(GetCurrentWorld, 'get_current_world')
    available = graph.call(GetAvailableWorlds, 'get_available_worlds')
    assert requests() == [{'op': 'hello'}] * 3
    assert current.result.result == available.result.result == OK
    assert current.world.name == current.world.world_resource.uri == hello.map == 'V03ACRE'
    assert list(available.worlds) == [current.world]
    searched = graph.call(GetAvailableWorlds, 'get_available_worlds', GetAvailableWorlds.Request(
        additional_sources=['file:///worlds']))
    assert searched.result.result == OK
    assert searched.result.error_message.endswith('not searched: file:///worlds')
    tagged = graph.call(GetAvailableWorlds, 'get_available_worlds', GetAvailableWorlds.Request(
        filter=TagsFilter(tags=['outdoor'])))
    assert tagged.result.result == UNSUPPORTED
    assert 'WORLD_TAGS' in tagged.result.error_message
